#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Report of `make bench-count` (tools/bench/count): exact instructions per iteration.

count-report.py DIR [TOP]

DIR holds what tools/bench/guest/count.sh and the tbcount plugin wrote (its raw/): per
provider P and point TEST:SIZE, the plugin's counts of the runs of ITERS and ITERS/10
iterations (tbcount.P-TEST-SIZE-N: "vaddr instructions count" per translation block) and
P-TEST-SIZE.env, and per provider the guest's kallsyms-P. The short run is subtracted from
the long one block by block, which leaves ITERS * 9/10 iterations of the test without
perftest's setup and teardown; a block's instructions go to the kernel symbol it starts
in, or to user space.

Writes DIR/../P-TEST-SIZE.txt (the totals per iteration, user, kernel and the driver's
module, and the TOP symbols, 40 by default, with their instructions and entries per
iteration) and prints,
per point, the totals of each provider and the rrxe/rxe ratio, and the top 12 symbols of
each provider side by side.
"""
import bisect
import glob
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchenv import read_env  # noqa: E402 (this directory)

USER = "[user space]"
MODULE = {"rxe": "[rdma_rxe]", "rrxe": "[rrxe]"}
UNKNOWN = "[unknown kernel address]"
KERNEL_START = 0xFFFF800000000000


def read_counts(path):
    """{(vaddr, instructions): count} of a tbcount file."""
    counts = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            v, n, c = line.split()
            counts[(int(v, 16), int(n))] = int(c)
    return counts


class Symbols:
    """The kernel's and modules' text symbols from a /proc/kallsyms copy."""

    def __init__(self, path):
        syms = []
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                p = line.split()
                if len(p) < 3 or p[1] not in "tTwW":
                    continue
                addr = int(p[0], 16)
                if addr:
                    syms.append((addr, p[2] + (" " + p[3] if len(p) > 3 else "")))
        syms.sort()
        self.addrs = [a for a, _ in syms]
        self.names = [n for _, n in syms]

    def find(self, addr):
        """(name, whether addr is the symbol's first byte)."""
        i = bisect.bisect_right(self.addrs, addr) - 1
        if i < 0:
            return UNKNOWN, False
        return self.names[i], self.addrs[i] == addr


def demangle(names):
    """Rust (v0) and C++ names demangled by c++filt if the host has it, hashes dropped."""
    names = list(names)
    tool = shutil.which("c++filt")
    if not tool or not names:
        return {n: n for n in names}
    bare = [n.split(" ")[0] for n in names]
    out = subprocess.run([tool], input="\n".join(bare), capture_output=True, text=True,
                         check=False).stdout.split("\n")
    result = {}
    for i, n in enumerate(names):
        d = out[i] if i < len(out) and out[i] else bare[i]
        d = re.sub(r"\[[0-9a-f]{1,16}\]", "", d)
        d = re.sub(r"::h[0-9a-f]{16}$", "", d)
        result[n] = d + n[len(bare[i]):]
    return result


def profile(raw, env, syms):
    """Instructions and entries per iteration by symbol, and the totals."""
    p, t, s = env["provider"], env["test"], env["size"]
    n_long, n_short = int(env["iters_long"]), int(env["iters_short"])
    long_c = read_counts(os.path.join(raw, f"tbcount.{p}-{t}-{s}-{n_long}"))
    short_c = read_counts(os.path.join(raw, f"tbcount.{p}-{t}-{s}-{n_short}"))
    iters = n_long - n_short
    instr, entries = {}, {}
    user = kernel = 0
    for key in set(long_c) | set(short_c):
        d = long_c.get(key, 0) - short_c.get(key, 0)
        vaddr, n = key
        if vaddr < KERNEL_START:
            user += d * n
            instr[USER] = instr.get(USER, 0) + d * n
            continue
        kernel += d * n
        name, first = syms.find(vaddr)
        instr[name] = instr.get(name, 0) + d * n
        if first:
            entries[name] = entries.get(name, 0) + d
    per = {k: v / iters for k, v in instr.items()}
    ent = {k: v / iters for k, v in entries.items()}
    return per, ent, user / iters, kernel / iters


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    raw = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    outdir = os.path.dirname(os.path.abspath(raw.rstrip("/")))
    results = {}
    for path in sorted(glob.glob(os.path.join(raw, "*.env"))):
        env = read_env(path)
        p, t, s = env.get("provider"), env.get("test"), env.get("size")
        if env.get("perftest") != "ok":
            print(f"{p} {t} {s}: no figures ({env.get('error', 'perftest failed')})")
            continue
        try:
            syms = Symbols(os.path.join(raw, f"kallsyms-{p}"))
            per, ent, user, kernel = profile(raw, env, syms)
        except (OSError, ValueError) as e:
            print(f"{p} {t} {s}: no figures ({e})")
            continue
        module = sum(v for k, v in per.items() if k.endswith(" " + MODULE[p]))
        names = demangle(per)
        rows = sorted(per, key=lambda k: -per[k])
        lines = [f"{p} {t} {s} B: exact instructions per iteration (the run of "
                 f"{env['iters_long']} iterations less the one of {env['iters_short']})",
                 f"total {user + kernel:.0f}, user space {user:.0f}, kernel {kernel:.0f}, "
                 f"of which in {MODULE[p]} {module:.0f}",
                 "", f"{'instr':>9} {'entries':>8}  symbol"]
        for k in rows[:top]:
            lines.append(f"{per[k]:9.1f} {ent.get(k, 0):8.2f}  {names[k]}")
        with open(os.path.join(outdir, f"{p}-{t}-{s}.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        results[(t, s, p)] = (user + kernel, user, kernel, module,
                              [(per[k], names[k]) for k in rows[:12]])
    points = sorted({(t, s) for t, s, _ in results}, key=lambda x: (x[0], int(x[1])))
    for t, s in points:
        print(f"\n{t} {s} B: instructions per iteration (total / user / kernel / the "
              "driver's module)")
        got = {p: results[(t, s, p)] for p in ("rxe", "rrxe") if (t, s, p) in results}
        for p, (tot, user, kernel, module, _) in got.items():
            print(f"  {p:5s} {tot:10.0f} {user:10.0f} {kernel:10.0f} {module:10.0f}")
        if len(got) == 2:
            print(f"  rrxe/rxe {got['rrxe'][0] / got['rxe'][0]:.3f}")
        tops = [got[p][4] for p in got]
        print("  top symbols: " + " | ".join(got))
        for i in range(12):
            cells = []
            for rows in tops:
                if i < len(rows):
                    v, n = rows[i]
                    cells.append(f"{v:8.1f} {n[:60]:60s}")
                else:
                    cells.append(" " * 69)
            print("  " + " | ".join(cells))
    return 0 if results else 1


if __name__ == "__main__":
    sys.exit(main())
