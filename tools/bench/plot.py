#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The rrxe/rxe plot of `make bench`: an SVG of the ratio of the medians per message size.

Usage: plot.py JSON SVG...

Reads the JSON that tools/bench/report.py wrote and writes the same SVG to every SVG path
(tools/bench/bench: out/bench/bench-<stamp>-ratio.svg and out/bench/latest-ratio.svg).
One line per test of the size sweep (ib_write_bw, ib_read_bw, ib_send_bw): rrxe's median
over rxe's, of the message rate below 4 KiB (perftest's MB/s has two decimals, too few
for small messages) and of the bandwidth from 4 KiB, as in the table. The x axis is log2
of the size; a line at 1 (parity) and a dashed one at 2 (the goal for the message rate).
An A/B run (BENCH_BASE) adds rrxe/base as a dotted line per test, hollow points.
Python's standard library only: the host needs nothing else to plot."""
import json
import math
import sys
from xml.sax.saxutils import escape

TESTS = (("ib_write_bw", "#1f77b4"), ("ib_read_bw", "#d62728"), ("ib_send_bw", "#2ca02c"))
W, H = 720, 420
LEFT, RIGHT, TOP, BOTTOM = 60, 150, 40, 50  # margins around the plot area


def human(size):
    for unit, n in (("M", 1 << 20), ("K", 1 << 10)):
        if size >= n and size % n == 0:
            return f"{size // n}{unit}"
    return str(size)


def series(doc, key):
    """{test: [(size, ratio)]} of the sweep, where both providers of ratio KEY (ratio:
    rrxe/rxe, ratio_base: rrxe/base) have a median."""
    out = {}
    for r in doc.get("results", []):
        want = "msgrate" if r["size"] < 4096 else "bw_avg"
        if r["test"] in dict(TESTS) and r["metric"] == want and r.get(key):
            out.setdefault(r["test"], []).append((r["size"], r[key]))
    return {t: sorted(v) for t, v in out.items()}


def clock(doc):
    """How the run kept time, for the title: host time or instruction time, vCPUs."""
    harness = doc.get("harness") or {}
    kind = "instruction time" if str(harness.get("clock", "")).startswith("instructions") \
        else "host time"
    return f"{kind}, {harness.get('vcpus', '?')} vCPU"


def svg(doc):
    data, base = series(doc, "ratio"), series(doc, "ratio_base")
    where = "two VMs" if (doc.get("harness") or {}).get("vms") == 2 else "loopback"
    title = (f"rrxe/rxe, medians of {doc.get('reps')}, perftest {where}, TCG {clock(doc)} "
             f"({doc.get('timestamp')})")
    if base:
        title = (f"rrxe/rxe and rrxe/base (base: {doc['base'].get('rev') or '?'}), medians of "
                 f"{doc.get('reps')}, {where}, TCG {clock(doc)} ({doc.get('timestamp')})")
    e = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
         f'font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="14">{escape(title)}</text>']
    points = [p for d in (data, base) for v in d.values() for p in v]
    if not points:
        e.append(f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle">no rrxe/rxe ratio in '
                 'this run (rrxe not measured, or no sweep)</text>')
        return "\n".join(e + ["</svg>", ""])
    x0 = math.log2(min(s for s, _ in points))
    x1 = max(math.log2(max(s for s, _ in points)), x0 + 1)
    y1 = max(2.5, math.ceil(max(r for _, r in points) * 2 + 0.5) / 2)
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def px(size):
        return LEFT + (math.log2(size) - x0) / (x1 - x0) * pw

    def py(ratio):
        return TOP + ph - ratio / y1 * ph

    e.append(f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" '
             'stroke="black"/>')
    # y grid every 0.5, x ticks at the sweep's sizes (powers of 2).
    for i in range(int(y1 * 2) + 1):
        y = py(i / 2)
        e.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + pw}" y2="{y:.1f}" '
                 'stroke="#eee"/>')
        e.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{i / 2:g}</text>')
    last = -W
    for size in sorted({s for s, _ in points}):
        x = px(size)
        e.append(f'<line x1="{x:.1f}" y1="{TOP + ph}" x2="{x:.1f}" y2="{TOP + ph + 4}" '
                 'stroke="black"/>')
        if x - last >= 30:  # 64K sits between the sweep's 32K and 128K: no label on top
            e.append(f'<text x="{x:.1f}" y="{TOP + ph + 18}" text-anchor="middle">'
                     f'{human(size)}</text>')
            last = x
    e.append(f'<text x="{LEFT + pw / 2}" y="{H - 10}" text-anchor="middle">message size '
             '(bytes, log2)</text>')
    e.append(f'<text x="16" y="{TOP + ph / 2}" text-anchor="middle" '
             f'transform="rotate(-90 16 {TOP + ph / 2})">rrxe / rxe'
             f'{", rrxe / base" * bool(base)} (above 1: rrxe better)</text>')
    for ratio, style, label in ((1, "", "parity"),
                                (2, ' stroke-dasharray="6 4"', "goal (message rate)")):
        y = py(ratio)
        e.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + pw}" y2="{y:.1f}" '
                 f'stroke="#555"{style}/>')
        e.append(f'<text x="{LEFT + pw + 6}" y="{y + 4:.1f}">{label}</text>')
    # Bottom right: below the labels at 1 and 2.
    legend_y = TOP + ph - 18 * (len(TESTS) + 2 * bool(base)) - 40
    for test, color in TESTS:
        for d, dash, dot, what in ((data, "", f'fill="{color}"', ""),
                                   (base, ' stroke-dasharray="2 3"',
                                    f'fill="white" stroke="{color}"', " rrxe/base")):
            pts = d.get(test)
            if not pts:
                continue
            path = " ".join(f"{px(s):.1f},{py(r):.1f}" for s, r in pts)
            e.append(f'<polyline points="{path}" fill="none" stroke="{color}" '
                     f'stroke-width="2"{dash}/>')
            e += [f'<circle cx="{px(s):.1f}" cy="{py(r):.1f}" r="3" {dot}>'
                  f'<title>{test} {human(s)}:{what} {r:.2f}</title></circle>' for s, r in pts]
        if test not in data and test not in base:
            continue
        e.append(f'<line x1="{LEFT + pw + 6}" y1="{legend_y + 40}" x2="{LEFT + pw + 26}" '
                 f'y2="{legend_y + 40}" stroke="{color}" stroke-width="2"/>')
        e.append(f'<text x="{LEFT + pw + 30}" y="{legend_y + 44}">{test}</text>')
        legend_y += 18
    if base:
        for dash, label in (("", "rrxe/rxe"), (' stroke-dasharray="2 3"', "rrxe/base")):
            e.append(f'<line x1="{LEFT + pw + 6}" y1="{legend_y + 40}" x2="{LEFT + pw + 26}" '
                     f'y2="{legend_y + 40}" stroke="black" stroke-width="2"{dash}/>')
            e.append(f'<text x="{LEFT + pw + 30}" y="{legend_y + 44}">{label}</text>')
            legend_y += 18
    return "\n".join(e + ["</svg>", ""])


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        text = svg(json.load(f))
    for path in sys.argv[2:]:
        with open(path, "w") as f:
            f.write(text)
    print(f"plot: {' and '.join(sys.argv[2:])}")


main()
