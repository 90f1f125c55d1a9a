#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the guest's `perf script` output of `make bench-profile` into folded stacks,
flame graphs, text reports and a summary.

    profile-report.py RAW_DIR OUT_DIR --providers "rxe rrxe" --points "ib_write_bw:2 ..."

RAW_DIR holds, per provider P and point TEST:SIZE, written by tools/bench/guest/profile.sh:
  P-TEST-SIZE.script  `perf script -F comm,pid,tid,cpu,time,ip,sym,dso` of the run
  P-TEST-SIZE.env     key=value lines about it (written last: a run without it is missing)
For each run with both, OUT_DIR gets P-TEST-SIZE.folded (stacks, see flamegraph.py),
P-TEST-SIZE.svg (the flame graph) and P-TEST-SIZE.txt (samples and idle share, samples per
process and per code location, the top 25 symbols by self and by inclusive samples); the
.script file is removed once folded (it is tens of MB; the .folded file has everything
the pictures and reports use). A side-by-side summary of the top 10 self symbols goes to
standard output. Exit status 1 if no run could be read.

Folding: a stack is the process name (a kernel thread's without its "/CPU" suffix), then
the first user-space frame, then the kernel frames from the outermost to the sampled one.
The first user frame comes from the registers saved at kernel entry (or is the sampled
instruction) and is exact; perf finds further user frames by following frame pointers,
which Debian's binaries do not keep, so they are noise and are left out. Kernel frames
come from the ORC unwinder and are exact. Module functions carry " [module]", user ones
" (library)"; stripped user code is "[unknown] (library)". Rust symbols (v0 mangling,
which perf 6.1 does not decode) are demangled with binutils' c++filt, without the crate
hashes.

Idle: a sample of the idle task (pid 0, "swapper") whose innermost frame is a halt or
idle routine. Interrupts and softirqs that run on an idle CPU are work and count as busy.
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flamegraph  # noqa: E402 (this directory)
from benchenv import read_env  # noqa: E402 (this directory)

HOT = ("rrxe", "rdma_rxe")  # the drivers compared: red in the flame graphs
TOP_REPORT = 25
TOP_SUMMARY = 10
IDLE_LEAF = re.compile(r"halt|idle")
HEADER = re.compile(r"^(?P<comm>.*?)\s+(?P<pid>-?\d+)/(?P<tid>-?\d+)\s+\[(?P<cpu>\d+)\]"
                    r"(?:\s+(?P<time>\d+\.\d+):)?\s*$")
FRAME = re.compile(r"^\s+(?P<addr>[0-9a-f]+) (?P<sym>.*) \((?P<dso>[^()]*)\)$")
KERNEL_BASE = 0xffff800000000000  # x86-64: kernel addresses are at and above this


def samples(path):
    """(comm, time, frames) per sample; frames innermost first, each (addr, sym, dso). The
    idle task's comm is "swapper" (perf's name for pid 0)."""
    comm = when = None
    frames = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                if comm is not None:
                    yield comm, when, frames
                comm, frames = None, []
                continue
            m = HEADER.match(line)
            if m and not line.startswith(("\t", " ")):
                if comm is not None:
                    yield comm, when, frames
                # Kernel threads' per-CPU and per-work names become one:
                # kworker/u8:1-rx, kworker/0:2 -> kworker.
                comm = "swapper" if m.group("pid") == "0" else m.group("comm").split("/")[0]
                when = float(m.group("time")) if m.group("time") else None
                frames = []
                continue
            m = FRAME.match(line)
            if m and comm is not None:
                frames.append((int(m.group("addr"), 16), m.group("sym"), m.group("dso")))
    if comm is not None:
        yield comm, when, frames


def demangler(names):
    """A function mapping raw symbol names to readable ones (Rust via c++filt)."""
    mangled = sorted(n for n in names if n.startswith(("_R", "_ZN")))
    table = {}
    cxxfilt = shutil.which("c++filt")
    if mangled and cxxfilt:
        r = subprocess.run([cxxfilt], input="\n".join(mangled) + "\n", text=True,
                           capture_output=True, check=False)
        out = r.stdout.split("\n")
        if r.returncode == 0 and len(out) >= len(mangled):
            table = dict(zip(mangled, out))

    def clean(name):
        s = table.get(name, name)
        s = re.sub(r"\[[0-9a-f]{6,16}\]", "", s)  # v0 crate disambiguators
        return re.sub(r"::h[0-9a-f]{16}$", "", s)  # legacy mangling's hash
    return clean


def is_kernel(addr):
    return addr >= KERNEL_BASE


def frame_name(addr, sym, dso, demangle):
    """The folded name of a frame: see the module documentation. perf names the kernel's
    DSO [kernel.kallsyms] and a module's [MODULE]; user DSOs are paths or [vdso]."""
    name = demangle(sym)
    if not is_kernel(addr):
        return f"{name} ({os.path.basename(dso) or '?'})"
    if dso.startswith("[kernel") or dso == "[unknown]":
        return name
    return f"{name} {dso}"


def location(name):
    """Where a folded frame's code lives: kernel, a module or a user DSO."""
    m = re.search(r" \[([^\]]+)\]$", name)
    if m:
        return m.group(1)
    m = re.search(r" \(([^)]*)\)$", name)
    if m:
        return "user " + m.group(1)
    return "kernel"


def fold(script_path):
    """Folded stacks of a run, {stack tuple: samples}, and the seconds from its first
    sample to its last (None without timestamps)."""
    raw = list(samples(script_path))
    demangle = demangler({sym for _, _, fr in raw for _, sym, _ in fr})
    times = [t for _, t, _ in raw if t is not None]
    span = max(times) - min(times) if len(times) > 1 else None
    stacks = collections.Counter()
    for comm, _, frames in raw:
        kernel = [f for f in frames if is_kernel(f[0])]
        user = [f for f in frames if not is_kernel(f[0])][:1]
        stack = [comm] + [frame_name(*f, demangle) for f in user + kernel[::-1]]
        stacks[tuple(stack)] += 1
    return stacks, span


def is_idle(stack):
    return stack[0] == "swapper" and len(stack) > 1 and IDLE_LEAF.search(stack[-1]) is not None


def pct(n, total):
    return 100.0 * n / total if total else 0.0


def human(size):
    for unit, n in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= n and size % n == 0:
            return f"{size // n} {unit}"
    return f"{size} B"


def perftest_result(env):
    """perftest's outcome in words."""
    st = env.get("perftest", "?")
    if st != "ok":
        return f"perftest {st}: {env.get('perftest_err', '')}".rstrip(": ")
    return f"perftest ok: {result(env)} (its own {env.get('perftest_secs', '?')} s run)"


def result(env):
    """perftest's figures: a latency test's average and rate, or a bandwidth test's."""
    if "lat_avg" in env:
        return f"{env['lat_avg']} us average, {env.get('tps', '?')} round trips/s"
    return f"{env.get('bw_avg', '?')} MB/s, {env.get('msgrate', '?')} Mmsg/s"


def analyse(stacks):
    """Sample counts per process, code location, self and inclusive symbol: for each a
    counter over all samples and one over the busy (non-idle) samples."""
    tables = {k: (collections.Counter(), collections.Counter())
              for k in ("proc", "loc", "self", "incl")}
    for stack, n in stacks.items():
        frames = stack[1:]
        names = {"proc": [stack[0]],
                 "loc": [location(frames[-1]) if frames else "no frames"],
                 "self": [frames[-1] if frames else "[no frames] " + stack[0]],
                 "incl": set(frames)}
        busy = not is_idle(stack)
        for k, keys in names.items():
            all_c, busy_c = tables[k]
            for key in keys:
                all_c[key] += n
                if busy:
                    busy_c[key] += n
    return tables


def rate_line(env, total, idle):
    secs = float(env.get("span") or env.get("secs") or 0)
    ncpus = int(env.get("ncpus", "0") or 0)
    per_s = total / secs if secs else 0.0
    per_cpu = per_s / ncpus if ncpus else 0.0
    return (f"{total} samples in {secs:.1f} s: {per_s:.0f}/s, {per_cpu:.0f}/s per vCPU "
            f"({ncpus} vCPUs); idle {idle} ({pct(idle, total):.1f}%), "
            f"busy {total - idle} ({pct(total - idle, total):.1f}%)")


def kernel_of(env):
    return f"kernel {env.get('kernel', '?')} ({env.get('kernel_flavour', '?')} kernel)"


def write_report(path, env, title, stacks, total, idle):
    tables = analyse(stacks)
    busy = total - idle
    lines = [title, "=" * len(title), "",
             f"command: {env.get('perf_cmd', '?')}",
             rate_line(env, total, idle),
             perftest_result(env),
             f"{kernel_of(env)}; symbols from the guest's /proc/kallsyms "
             "(modules included)",
             "idle: samples of the idle task in a halt or idle routine; interrupts and "
             "softirqs on an idle CPU are busy.",
             "%all: share of all samples; %busy: share of the busy (non-idle) samples.", ""]

    def table(heading, key, n=None):
        all_c, busy_c = tables[key]
        lines.append(heading)
        lines.append(f"  {'samples':>8} {'%all':>6} {'%busy':>6}  name")
        for name, c in all_c.most_common(n):
            b = f"{pct(busy_c[name], busy):6.2f}" if busy_c[name] else f"{'-':>6}"
            lines.append(f"  {c:>8} {pct(c, total):>6.2f} {b}  {name}")
        lines.append("")

    table("Samples per process (swapper: the idle task, and interrupts on idle CPUs)", "proc")
    table("Self samples per code location (kernel, module, user library)", "loc")
    table(f"Top {TOP_REPORT} symbols by self samples (the sampled function)", "self",
          TOP_REPORT)
    table(f"Top {TOP_REPORT} symbols by inclusive samples (on the stack)", "incl",
          TOP_REPORT)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    return tables["self"][0]


def shorten(name, width):
    """name for a narrow column: generic arguments dropped, the tail kept."""
    s = flamegraph.strip_generics(name)
    return s if len(s) <= width else ".." + s[-(width - 2):]


def process(raw, out, p, test, size):
    """Fold, report and draw one run: (env, total, idle, self counts), or (env, None,
    None, None) if it has no perf script output, or None if it did not finish."""
    name = f"{p}-{test}-{size}"
    env_path = os.path.join(raw, name + ".env")
    script = os.path.join(raw, name + ".script")
    if not os.path.exists(env_path):
        return None
    env = read_env(env_path)
    if not os.path.exists(script):
        return env, None, None, None
    stacks, span = fold(script)
    if span:
        env["span"] = f"{span:.2f}"
    total = sum(stacks.values())
    idle = sum(n for s, n in stacks.items() if is_idle(s))
    with open(os.path.join(out, name + ".folded"), "w", encoding="utf-8") as f:
        for stack, n in sorted(stacks.items()):
            f.write(";".join(stack) + f" {n}\n")
    os.remove(script)
    title = f"{p} {test} {human(size)}"
    self_c = write_report(os.path.join(out, name + ".txt"), env, title, stacks, total, idle)
    sub = f"{rate_line(env, total, idle)}. {perftest_result(env)}."
    with open(os.path.join(out, name + ".svg"), "w", encoding="utf-8") as f:
        f.write(flamegraph.render((";".join(s) + f" {n}" for s, n in stacks.items()),
                                  f"{title}: perf record -e cpu-clock -a -g, QEMU TCG guest, "
                                  f"{env.get('kernel_flavour', '?')} kernel",
                                  sub, HOT))
    return env, total, idle, self_c


def summary(providers, points, runs):
    """Per point, the providers' top self symbols side by side."""
    col_w = max(40, 130 // len(providers) - 1)
    print()
    print("; ".join(sorted({kernel_of(r[0]) for r in runs.values()})) or "kernel ?")
    print("Top self symbols, % of all samples (idle: the CPUs halted; the .txt reports have"
          " inclusive samples too)")
    for test, size in points:
        print()
        print(f"{test} {human(size)}")
        heads, bodies = [], []
        for p in providers:
            r = runs.get((p, test, size))
            bodies.append([])
            if r is None:
                heads.append((f"{p}: no profile (the run did not finish)", ""))
                continue
            env, total, idle, self_c = r
            if total is None:
                heads.append((f"{p}: no profile", "  " + env.get("error", "")))
                continue
            secs = float(env.get("span") or env.get("secs") or 0)
            rate = f"{total / secs:.0f}/s" if secs else "?/s"
            res = (result(env) if env.get("perftest") == "ok"
                   else f"perftest {env.get('perftest', '?')}")
            if env.get("covered") != "yes":
                res += "; perftest ended before perf did"
            heads.append((f"{p}: {total} samples, {rate}, idle {pct(idle, total):.0f}%",
                           "  " + res))
            bodies[-1] = [f"{pct(c, total):5.1f} {shorten(n, col_w - 6)}"
                          for n, c in self_c.most_common(TOP_SUMMARY)]
        for i in range(2):
            print(" ".join(f"{h[i]:<{col_w}}"[:col_w] for h in heads).rstrip())
        for i in range(max(map(len, bodies))):
            print(" ".join(f"{(b[i] if i < len(b) else ''):<{col_w}}" for b in bodies).rstrip())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("raw")
    ap.add_argument("out")
    ap.add_argument("--providers", required=True)
    ap.add_argument("--points", required=True)
    a = ap.parse_args()
    providers = a.providers.split()
    points = [(t, int(s)) for t, _, s in (p.partition(":") for p in a.points.split())]
    runs = {}
    for p in providers:
        for test, size in points:
            r = process(a.raw, a.out, p, test, size)
            if r is not None:
                runs[(p, test, size)] = r
    summary(providers, points, runs)
    return 0 if any(r[1] for r in runs.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
