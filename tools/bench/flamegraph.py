#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Render folded stacks as a flame graph SVG (standard library only).

Input is the "folded" format of Brendan Gregg's stackcollapse scripts: one line per
distinct stack, frames from the root to the leaf joined by ';', then a space and the
sample count:

    ib_write_bw;entry_SYSCALL_64;do_syscall_64;__x64_sys_write;ib_uverbs_write [ib_uverbs] 12

Each frame is a box as wide as the samples that passed through it; the root is at the
bottom and children sit on their parents, sorted by name, so two graphs of the same code
line up. Hovering over a box shows its name, samples and share (an SVG <title>). The
picture is static: no script, so any viewer shows it the same way. Labels leave generic
arguments out (Rust names are long); the hover text has the whole name.

Frame colours say where the code lives, from the suffix the folding step put on the name:
  " [MOD]"  a kernel module: MOD in --hot (the drivers being compared) red, others yellow
  " (DSO)"  user space (a library or program): green
  anything else is the core kernel: orange; the process name at the root: grey.
Within a colour the shade comes from a hash of the name, so a function has the same
colour in every graph.

Debian bookworm does not package Gregg's FlameGraph scripts, hence this renderer. Used by
tools/bench/profile-report.py (import) and from the command line:

    flamegraph.py [--title T] [--subtitle S] [--hot rrxe,rdma_rxe] FOLDED >OUT.svg
"""
import argparse
import hashlib
import re
import sys
from xml.sax.saxutils import escape

WIDTH = 1200  # pixels, the whole picture
PAD = 10  # left and right margins
FRAME_H = 16  # one stack level
FONT = 11  # pixels; character width estimated below
CHAR_W = FONT * 0.59  # Verdana-like average width, as FlameGraph's estimate
MIN_W = 0.3  # frames narrower than this (pixels) are left out, with their children
TOP = 58  # title, subtitle, legend
BOTTOM = 20

_MODULE = re.compile(r" \[([^\]]+)\]$")
_USER = re.compile(r" \(([^)]*)\)$")

PALETTES = {
    # kind: (base RGB, per-name variation of each channel)
    "hot": ((215, 45, 60), (40, 40, 40)),
    "module": ((200, 185, 55), (40, 40, 30)),
    "kernel": ((235, 145, 40), (20, 50, 20)),
    "user": ((75, 175, 75), (40, 50, 40)),
    "root": ((170, 170, 170), (20, 20, 20)),
}


def kind(name, depth, hot):
    """The palette of a frame at depth (0 "all", 1 the process): see the module
    documentation."""
    if depth <= 1:
        return "root"
    m = _MODULE.search(name)
    if m:
        return "hot" if m.group(1) in hot else "module"
    if _USER.search(name):
        return "user"
    return "kernel"


def colour(name, depth, hot):
    base, var = PALETTES[kind(name, depth, hot)]
    h = hashlib.md5(name.encode()).digest()
    return "rgb({},{},{})".format(*(min(255, b + h[i] * v // 255 - v // 2)
                                    for i, (b, v) in enumerate(zip(base, var))))


class Node:
    __slots__ = ("name", "value", "children")

    def __init__(self, name):
        self.name = name
        self.value = 0
        self.children = {}


def parse(lines):
    """The stack tree of folded lines; malformed lines are counted, not fatal."""
    root = Node("all")
    bad = 0
    for line in lines:
        line = line.rstrip("\n")
        if not line:
            continue
        stack, _, count = line.rpartition(" ")
        try:
            n = int(count)
        except ValueError:
            bad += 1
            continue
        if not stack or n <= 0:
            bad += 1
            continue
        node = root
        node.value += n
        for frame in stack.split(";"):
            node = node.children.setdefault(frame, Node(frame))
            node.value += n
    return root, bad


def depth_of(node, scale):
    """Levels below node that are wide enough to draw."""
    d = 0
    for c in node.children.values():
        if c.value * scale >= MIN_W:
            d = max(d, 1 + depth_of(c, scale))
    return d


def strip_generics(name):
    """name without generic arguments ("<Lock<T, B>>::lock" -> "<Lock>::lock"), for labels:
    Rust's are long. A '<' opens arguments after a name character; a leading one (a
    qualified path such as <T as Trait>) is kept."""
    out, depth = [], 0
    for i, ch in enumerate(name):
        if ch == "<" and (depth or (i and (name[i - 1].isalnum() or name[i - 1] in "_:"))):
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif not depth:
            out.append(ch)
    return re.sub(r"::(?=::|\s|$)", "", "".join(out))  # what a turbofish ::<..> leaves


def fit(text, width):
    """text cut to what fits in width pixels, with '..' when cut; '' if nothing fits."""
    n = int((width - 6) / CHAR_W)
    if n < 3:
        return ""
    return text if len(text) <= n else text[:n - 2] + ".."


def render(folded_lines, title, subtitle="", hot=()):
    """The SVG text of a flame graph of folded_lines."""
    root, bad = parse(folded_lines)
    hot = set(hot)
    total = root.value
    scale = (WIDTH - 2 * PAD) / total if total else 0.0
    levels = depth_of(root, scale) + 1 if total else 1
    height = TOP + levels * FRAME_H + BOTTOM
    out = [
        '<?xml version="1.0" standalone="no"?>',
        f'<svg version="1.1" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" xmlns="http://www.w3.org/2000/svg">',
        "<style>text { font-family: Verdana, 'DejaVu Sans', sans-serif; fill: #000; } "
        f".f {{ font-size: {FONT}px; }} rect.b {{ stroke: #fff; stroke-width: 0.5; }}</style>",
        f'<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#f8f8f0"/>',
        f'<text x="{WIDTH / 2}" y="20" font-size="16" text-anchor="middle">{escape(title)}</text>',
    ]
    if subtitle:
        out.append(f'<text x="{WIDTH / 2}" y="36" font-size="11" text-anchor="middle" '
                   f'fill="#555">{escape(subtitle)}</text>')
    x = PAD
    legend = [("module", "other kernel modules"), ("kernel", "kernel"), ("user", "user space")]
    if hot:
        legend.insert(0, ("hot", "modules " + ", ".join(sorted(hot))))
    for k, label in legend:
        out.append(f'<rect x="{x}" y="44" width="10" height="10" fill="{_swatch(k)}"/>')
        out.append(f'<text x="{x + 14}" y="53" font-size="10">{escape(label)}</text>')
        x += 24 + len(label) * 6
    out.append(f'<text x="{WIDTH - PAD}" y="53" font-size="10" text-anchor="end">'
               f'{total} samples; width = share of samples; hover for details</text>')
    if not total:
        out.append(f'<text x="{WIDTH / 2}" y="{TOP + 12}" font-size="12" '
                   'text-anchor="middle">no samples</text>')
    else:
        _frames(out, root, 0, PAD, scale, total, height - BOTTOM, hot)
    if bad:
        out.append(f'<text x="{PAD}" y="{height - 5}" font-size="10" fill="#a00">'
                   f'{bad} malformed input lines were skipped</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _swatch(k):
    base, _ = PALETTES[k]
    return "rgb({},{},{})".format(*base)


def _frames(out, node, depth, x, scale, total, base_y, hot):
    """Draw node at level depth and left edge x, then its children, iteratively."""
    stack = [(node, depth, x)]
    while stack:
        n, d, x0 = stack.pop()
        w = n.value * scale
        y = base_y - (d + 1) * FRAME_H
        pct = 100.0 * n.value / total
        tip = f"{n.name} ({n.value} samples, {pct:.2f}%)"
        fill = colour(n.name, d, hot)
        out.append(f'<g><title>{escape(tip)}</title>'
                   f'<rect class="b" x="{x0:.2f}" y="{y}" width="{w:.2f}" '
                   f'height="{FRAME_H - 1}" fill="{fill}" rx="1"/>')
        label = fit(strip_generics(n.name) if d else f"all ({total} samples)", w)
        if label:
            out.append(f'<text class="f" x="{x0 + 3:.2f}" y="{y + FRAME_H - 4}">'
                       f'{escape(label)}</text>')
        out.append("</g>")
        cx = x0
        kids = []
        for name in sorted(n.children):
            c = n.children[name]
            if c.value * scale >= MIN_W:
                kids.append((c, d + 1, cx))
            cx += c.value * scale
        stack.extend(reversed(kids))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folded", help="folded stacks file ('-': standard input)")
    ap.add_argument("--title", default="Flame graph")
    ap.add_argument("--subtitle", default="")
    ap.add_argument("--hot", default="", help="comma-separated modules to colour red")
    a = ap.parse_args()
    f = sys.stdin if a.folded == "-" else open(a.folded, encoding="utf-8")
    with f:
        svg = render(f, a.title, a.subtitle, [h for h in a.hot.split(",") if h])
    sys.stdout.write(svg)


if __name__ == "__main__":
    main()
