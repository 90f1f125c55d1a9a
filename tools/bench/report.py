#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The report of `make bench`: reads the guest's BENCH records (tools/bench/guest/
perf-matrix.sh) from a serial log, prints the table and writes the JSON.

Usage: report.py LOG JSON [KEY=VALUE...]

tools/bench/bench passes the host's facts of the run as KEY=VALUE (latest: a copy of the
JSON; stamp, reps, quick, icount, vms, timeout, vm_status, wall, load_start, load_end,
host_nproc, perftest_pkg, qemu_version, git_rev, git_dirty, run_dir; with BENCH_BASE
base_rev, base_commit, base_tree, base_ko). A separate file, so that a saved log can be reported
again (`tools/bench/report.py out/bench/bench-*/vm1.log /tmp/b.json`; a two-VM run's
records are in vm2.log, the client VM's): facts not given are reported as unknown.

With a third provider, base (rrxe built from BENCH_BASE), the table adds base's columns
and the ratio rrxe/base, and every result in the JSON a ratio_base."""
import datetime, json, re, shutil, statistics, sys

if len(sys.argv) < 3 or not all("=" in a for a in sys.argv[3:]):
    sys.exit(__doc__)
log, json_path = sys.argv[1:3]
facts = dict(a.split("=", 1) for a in sys.argv[3:])
latest = facts.get("latest")
stamp = facts.get("stamp", "unknown")
reps, quick = facts.get("reps", "?"), facts.get("quick", "0")
icount = facts.get("icount", "0") == "1"
vms = facts.get("vms", "1")
timeout, vm_status, wall = (int(facts.get(k, 0)) for k in ("timeout", "vm_status", "wall"))
load_start, load_end = facts.get("load_start", "?"), facts.get("load_end", "?")
host_nproc = int(facts.get("host_nproc", 0))
perftest_pkg = facts.get("perftest_pkg", "unknown")
qemu_version = facts.get("qemu_version", "unknown")
git_rev, git_dirty = facts.get("git_rev", "unknown"), int(facts.get("git_dirty") or 0)
run_dir = facts.get("run_dir")
base_facts = {k[5:]: v for k, v in facts.items() if k.startswith("base_")}
PROVIDERS = ("rxe", "rrxe", "base")
# Test ids: the perftest program, or for the scaling rows the program with a variant:
# -qN (N QPs in one process) or -Nflows (N server and client pairs at once, summed).
TESTS = ("ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_atomic_bw",
         "ib_write_bw-q8", "ib_write_bw-q64", "ib_write_bw-q4096", "ib_write_bw-2flows",
         "ib_send_lat", "ib_write_lat", "ib_read_lat")
NUMERIC = ("bw_avg", "bw_peak", "msgrate", "t_min", "t_max", "t_typical", "t_avg",
           "t_p99", "iters", "tries", "secs", "msgs", "cpu_kern", "cpu_user", "cpu_idle",
           "kmem_kb_before", "kmem_kb_peak")
TEXT = ("status", "error", "side")
# printk timestamp, then the record: kmsg records are whole lines even when some other
# output was cut short before them.
rec_re = re.compile(r"\[\s*\d+\.\d+\] (BENCH(?:-[A-Z]+)?)(?: (.*))?$")

meta, notes, datapath = {}, [], {}
order = []  # (rep, provider) in the order the guest ran them
samples = {}
malformed, done = 0, None
with open(log, "rb") as f:
    for raw in f:
        m = rec_re.search(raw.decode("utf-8", "replace").rstrip("\r\n"))
        if not m:
            continue
        kind, rest = m.group(1), m.group(2) or ""
        if kind == "BENCH-META":
            key, _, val = rest.partition(" ")
            if key == "datapath":
                p, _, v = val.partition(" ")
                datapath[p] = v == "yes"
            else:
                meta[key] = val
        elif kind == "BENCH-NOTE":
            p, _, text = rest.partition(" ")
            notes.append({"provider": p, "note": text})
        elif kind == "BENCH-DONE":
            done = rest
        elif kind == "BENCH-ORDER":
            r, _, p = rest.partition(" ")
            if r.isdigit() and p in PROVIDERS:
                order.append((int(r), p))
            else:
                malformed += 1
        elif kind == "BENCH":
            parts = rest.split(" ", 5)
            try:
                p, test, size, rep, metric, value = parts
                size, rep = int(size), int(rep)
                numeric = metric in NUMERIC or re.fullmatch(r"bw_flow\d+|hw_\w+", metric)
                if p not in PROVIDERS or test not in TESTS or not (numeric or metric in TEXT):
                    raise ValueError
                if numeric:
                    value = float(value)
            except ValueError:
                malformed += 1
                continue
            s = samples.setdefault((p, test, size, rep), {
                "provider": p, "test": test, "size": size, "rep": rep, "metrics": {}})
            if numeric:
                s["metrics"][metric] = value
            else:
                s[metric] = value
        else:
            malformed += 1

if not samples:
    print(f"bench: no results in {log}; nothing written")
    sys.exit(1)
if reps == "?":  # a saved log: the guest said it
    reps = meta.get("reps", "?")
# The providers of the run: base only in A/B runs (BENCH_BASE).
has_base = "base" in meta.get("providers", "").split() or any(
    s["provider"] == "base" for s in samples.values())
provs = PROVIDERS if has_base else PROVIDERS[:2]
# The ratios: rrxe over each reference (inverted for lower-better metrics): > 1, rrxe better.
RATIOS = (("ratio", "rxe"), ("ratio_base", "base"))
ratios = RATIOS if has_base else RATIOS[:1]

# CPU cost of a bandwidth or message-rate run: the guest's kernel (system+irq+softirq) and
# user CPU seconds while it lasted, per message and per GiB moved. perftest busy-polls, so
# the user time is mostly polling and the kernel time is the driver's cost. The window
# holds perftest's setup and teardown too, which weigh most in short runs.
# A TCG guest whose vCPU threads wait for a host CPU loses ticks: ticks_accounted_pct, the
# ticks counted against wall time x vCPUs, says how much of the run the figures cover.
GIB = 1 << 30
vcpus = int(meta["vcpus"]) if meta.get("vcpus", "").isdigit() else None
for s in samples.values():
    m = s["metrics"]
    if vcpus and m.get("secs") and "cpu_kern" in m:
        m["ticks_accounted_pct"] = 100 * (m["cpu_kern"] + m["cpu_user"] + m["cpu_idle"]) / (
            m["secs"] * vcpus)
    if not s["test"].split("-")[0].endswith("_bw") or not m.get("msgs") or "cpu_kern" not in m:
        continue
    nbytes = m["msgs"] * s["size"]
    for k, src in (("kcpu", "cpu_kern"), ("ucpu", "cpu_user")):
        m[f"{k}_us_msg"] = m[src] / m["msgs"] * 1e6
        m[f"{k}_s_gib"] = m[src] / (nbytes / GIB)

# Per QP figures of the -qN rows; the kernel's memory per QP from its peak (perftest's
# server and client have N QPs each).
for s in samples.values():
    q = re.search(r"-q(\d+)$", s["test"])
    if not q:
        continue
    m, n = s["metrics"], int(q.group(1))
    for k in ("bw_avg", "msgrate"):
        if k in m:
            m[k + "_per_qp"] = m[k] / n
    if m.get("kmem_kb_peak"):
        m["kmem_b_per_qp"] = (m["kmem_kb_peak"] - m["kmem_kb_before"]) * 1024 / (2 * n)

# Repetitions must alternate the order of the providers (rxe rrxe [base], then reversed,
# ...), so that a drift of the host's load hits them alike: check what the guest really
# did, on the providers that two repetitions in a row have in common.
by_rep = {}
for r, p in order:
    by_rep.setdefault(r, []).append(p)
seqs = [by_rep[r] for r in sorted(by_rep) if len(by_rep[r]) > 1]
alternates = True if seqs else None
for a, b in zip(seqs, seqs[1:]):
    common = [p for p in a if p in b]
    if len(common) > 1 and [p for p in b if p in common] != common[::-1]:
        alternates = False

# Higher is better for bandwidth and message rate, lower for latency and CPU cost.
def lower_better(metric):
    return metric.startswith(("t_", "cpu_", "kcpu_", "ucpu_", "kmem_")) or metric == "secs"

results = []
groups = {}
for s in samples.values():
    groups.setdefault((s["test"], s["size"]), []).append(s)
for (test, size), ss in sorted(groups.items(), key=lambda kv: (TESTS.index(kv[0][0]), kv[0][1])):
    metrics = sorted({m for s in ss for m in s["metrics"]})
    for metric in metrics:
        r = {"test": test, "size": size, "metric": metric,
             "better": "lower" if lower_better(metric) else "higher"}
        for p in PROVIDERS:
            mine = [s for s in ss if s["provider"] == p]
            if not mine:
                continue
            vals = [s["metrics"][metric] for s in mine
                    if s.get("status") == "ok" and metric in s["metrics"]]
            fails = {}
            for s in mine:
                st = s.get("status", "missing")
                if st != "ok":
                    fails[st] = fails.get(st, 0) + 1
            med = statistics.median(vals) if vals else None
            r[p] = {"n": len(mine), "ok": len(vals), "failed": fails, "median": med,
                    "min": min(vals) if vals else None, "max": max(vals) if vals else None,
                    # (max - min) / median, in percent: how far to trust the median
                    "spread_pct": 100 * (max(vals) - min(vals)) / med if med else None,
                    "values": vals}
        for key, ref in ratios:
            a, b = (r.get(p, {}).get("median") for p in (ref, "rrxe"))
            r[key] = None
            if a and b:
                r[key] = a / b if lower_better(metric) else b / a
        results.append(r)

# The table: one metric per test and size (two for latency).
def shown(test, size):
    if test == "ib_atomic_bw":
        return [("msgrate", "Kops/s", 1000)]
    if test.endswith("_lat"):
        return [("t_typical", "us typ", 1), ("t_min", "us min", 1)]
    per_qp = "-q" in test
    if size < 4096:  # perftest's MB/s has two decimals: the message rate says more
        return [("msgrate", "Kmsg/s", 1000)] + per_qp * [("msgrate_per_qp", "K/s/QP", 1000)]
    return [("bw_avg", "MB/s", 1)] + per_qp * [("bw_avg_per_qp", "MB/s/QP", 1)]

def num(v):
    return f"{v:.4g}" if v < 1e5 else f"{v:.0f}"

def human(size):
    for unit, n in (("M", 1 << 20), ("K", 1 << 10)):
        if size >= n and size % n == 0:
            return f"{size // n}{unit}"
    return str(size)

def cell(c, scale):
    if not c:
        return "-"
    if c["median"] is None:
        return f"0/{c['n']} ok"
    t = f"{num(c['median'] * scale)} [{num(c['min'] * scale)}..{num(c['max'] * scale)}]"
    if c["spread_pct"] is not None:
        t += f" {c['spread_pct']:.0f}%"
    return t if c["ok"] == c["n"] else f"{t} {c['ok']}/{c['n']}"

by_key = {(r["test"], r["size"], r["metric"]): r for r in results}

# The physical limit: the guest's single-core memcpy bandwidth, and each provider's best
# loopback ib_write_bw (median) from 64 KiB to 8 MiB as a share of it.
def meta_num(key):
    try:
        return float(meta[key])
    except (KeyError, ValueError):
        return None

memcpy = {"mibs": meta_num("memcpy_mibs"), "cached_mibs": meta_num("memcpy_cached_mibs"),
          "pinned_cpu": meta.get("memcpy_pinned")}
vs_memcpy = {}
for p in PROVIDERS:
    best = max(((r[p]["median"], r["size"]) for r in results
                if r["test"] == "ib_write_bw" and r["metric"] == "bw_avg"
                and 65536 <= r["size"] <= 8 << 20 and (r.get(p) or {}).get("median")),
               default=None)
    if best:
        vs_memcpy[p] = {"best_mibs": best[0], "size": best[1],
                        "pct": 100 * best[0] / memcpy["mibs"] if memcpy["mibs"] else None}
# Two VMs: the link's TCP bandwidth between them, the limit there, and each provider's best
# ib_write_bw as a share of it.
link = meta_num("link_mibs")
vs_link = {p: {**v, "pct": 100 * v["best_mibs"] / link} for p, v in vs_memcpy.items()} \
    if link else {}
have_rrxe = datapath.get("rrxe", False)

# Scaling: each provider's median of the rows with more QPs or flows over its 1-QP row of
# the same size, which moves as many messages (issue 17: two flows >= 1.6x on 2 vCPUs).
SCALING = (("8 QPs 64 KiB", "ib_write_bw-q8", 65536, "bw_avg"),
           ("64 QPs 64 KiB", "ib_write_bw-q64", 65536, "bw_avg"),
           ("8 QPs 2 B", "ib_write_bw-q8", 2, "msgrate"),
           ("4096 QPs 512 B", "ib_write_bw-q4096", 512, "msgrate"),
           ("2 flows 64 KiB", "ib_write_bw-2flows", 65536, "bw_avg"))
scaling = {}
for label, test, size, metric in SCALING:
    for p in PROVIDERS:
        a, b = ((by_key.get((t, size, metric)) or {}).get(p, {}).get("median")
                for t in (test, "ib_write_bw"))
        if a and b:
            scaling.setdefault(p, {})[label] = a / b
vms = meta.get("vms", vms)
if vms == "2":
    harness_kind = ("QEMU TCG, two VMs, servers in VM1 and clients in VM2 (the records), "
                    "over QEMU's UDP socket link")
else:
    harness_kind = "QEMU TCG, one VM, loopback (server and client on one device)"
print()
print("perftest,", "two QEMU TCG VMs (servers in VM1, clients in VM2, over QEMU's UDP socket"
      " link)," if vms == "2" else "loopback (server and client on one device), one QEMU TCG VM,",
      f"{meta.get('vcpus', '?')} vCPUs{' each' if vms == '2' else ''},",
      f"kernel {meta.get('kernel', '?')}",
      f"({meta.get('kernel_flavour', '?')} kernel),",
      f"perftest {meta.get('perftest', '?')}")
print("QEMU TCG on a shared host: compare the columns with each other, never quote the",
      "figures as hardware performance.")
if icount:
    print("instruction time (BENCH_ICOUNT=1): the guest's clock advanced 1 ns per instruction",
          "executed, so every time below counts instructions (1 us = 1000); perftest's polling",
          "shares the one vCPU with the driver")
print(f"median of {reps} runs [min..max] and spread (max-min)/median in % (k/n: only k of n",
      "runs gave a result); ratio of the medians > 1: rrxe better (bandwidth, rates: rrxe/rxe;",
      "latency: rxe/rrxe)")
if has_base:
    b = base_facts
    print(f"A/B: rrxe/base likewise, base being rrxe.ko of BENCH_BASE={b.get('rev', '?')}",
          f"(commit {b.get('commit', '?')}, tree {b.get('tree', '?')}) and rrxe that of commit",
          f"{git_rev} with {git_dirty} files changed")
print("kernel CPU: the guest's system+irq+softirq CPU time while the run lasted (setup and",
      "teardown included), median per message (us) and per GiB (s); perftest busy-polls, so its",
      "user time is polling (in the JSON) and the kernel time is the driver's cost",
      *(["(two VMs: the client VM's only)"] if vms == "2" else []))
if icount:
    print("the kernel samples its CPU time at its tick (250 a second): in instruction",
          "time it varies more than the rates (about 20 %)")
if order:
    print("order of the matrices by repetition:",
          " | ".join(" ".join(p for r2, p in order if r2 == r)
                     for r in sorted({r for r, _ in order})),
          *(["- WARNING: the order did not alternate"] if alternates is False else []))
print(f"host load average {load_start} at the start, {load_end} at the end "
      f"({host_nproc} host CPUs)")
for n in notes:
    print(f"note ({n['provider']}): {n['note']}")
if memcpy["mibs"]:
    pin = memcpy["pinned_cpu"]
    pin = f"pinned to CPU {pin}" if pin not in (None, "no") else "not pinned"
    print(f"memcpy, one core ({pin}):",
          f"{memcpy['mibs']:.0f} MiB/s with 64 MiB buffers, {memcpy['cached_mibs'] or 0:.0f}",
          "MiB/s cache-resident (64 KiB)")
    print("best loopback ib_write_bw from 64 KiB to 8 MiB (median) against it (goal >= 50 %):",
          "; ".join(f"{p} {v['best_mibs']:.4g} MB/s at {human(v['size'])} = {v['pct']:.2f} %"
                    for p, v in vs_memcpy.items()) or "no write results")
if link:
    print(f"link between the VMs: {link:.1f} MiB/s of TCP (one connection, MTU-sized segments);",
          "best two-VM ib_write_bw from 64 KiB to 8 MiB (median) against it:",
          "; ".join(f"{p} {v['best_mibs']:.4g} MB/s at {human(v['size'])} = {v['pct']:.0f} %"
                    for p, v in vs_link.items()) or "no write results")
if "rrxe" not in datapath:
    print("rrxe was not probed (the run ended before): only rxe was measured.")
elif not have_rrxe:
    print("rrxe failed the data path probe: only rxe was measured, there is no comparison.")
if has_base and "base" not in datapath:
    print("base was not probed (the run ended before): there is no rrxe/base comparison.")
elif has_base and not datapath["base"]:
    print("base failed its data path probe (see its note): there is no rrxe/base comparison.")
print()
# Columns: a median per provider, the ratios, kernel CPU per message and per GiB per provider.
ratio_heads = ["rrxe/rxe", "rrxe/base"] if has_base else ["ratio"]
fmt = " ".join(["{:<18} {:>5} {:<7}"] + ["{:<34}"] * len(provs)
               + [f"{{:>{max(6, len(h))}}}" for h in ratio_heads] + ["{:>8}"] * (2 * len(provs)))
fmt += "  {}"
blank = [""] * (len(provs) - 1)
print(fmt.format("", "", "", *[""] * (len(provs) + len(ratio_heads)), "kernel CPU us/msg",
                 *blank, "s/GiB", *blank, "").rstrip())
print(fmt.format("test", "size", "unit", *provs, *ratio_heads, *provs, *provs, "failures"))

def cpu_cells(test, size):
    out = []
    for metric in ("kcpu_us_msg", "kcpu_s_gib"):
        r = by_key.get((test, size, metric), {})
        for p in provs:
            v = r.get(p, {}).get("median")
            out.append("" if v is None else f"{v:.0f}" if v >= 100 else f"{v:.3g}")
    return out

for (test, size), ss in sorted(groups.items(), key=lambda kv: (TESTS.index(kv[0][0]), kv[0][1])):
    for metric, unit, scale in shown(test, size):
        r = by_key.get((test, size, metric))
        if r is None:  # every run failed: take the status from any metric row
            r = {"test": test, "size": size}
            for p in provs:
                mine = [s for s in ss if s["provider"] == p]
                if mine:
                    fails = {}
                    for s in mine:
                        st = s.get("status", "missing")
                        fails[st] = fails.get(st, 0) + (st != "ok")
                    r[p] = {"n": len(mine), "ok": 0, "failed": fails, "median": None}
        failed = "; ".join(f"{p} " + ", ".join(f"{k} {v}" for k, v in r[p]["failed"].items() if v)
                           for p in provs if r.get(p) and any(r[p]["failed"].values()))
        ratio = [f"{r[k]:.2f}" if r.get(k) else "-" for k, _ in ratios]
        cpu = [""] * 2 * len(provs)
        if metric in ("bw_avg", "msgrate"):
            cpu = cpu_cells(test, size)
        print(fmt.format(test, human(size), unit, *(cell(r.get(p), scale) for p in provs),
                         *ratio, *cpu, failed).rstrip())
print()
if scaling:
    print("scaling, ib_write_bw: median over the 1-QP, one-flow median with as many messages",
          "(goal: 2 flows >= 1.6x one flow on 2 vCPUs)")
    for p, v in scaling.items():
        print(f"  {p:<5} " + "; ".join(f"{k} {x:.2f}x" for k, x in v.items()))
    print()
kmem = {p: c["median"] for p in PROVIDERS
        if (c := (by_key.get(("ib_write_bw-q4096", 512, "kmem_b_per_qp")) or {}).get(p))
        and c.get("median") is not None}
if kmem:
    print("kernel memory per QP with 4096 QPs in each of server and client (the peak of",
          "Slab, Percpu, VmallocUsed and PageTables over the run; perftest's page tables",
          "included): " + ", ".join(f"{p} {v / 1024:.1f} KiB" for p, v in kmem.items()))
    print()
nsamples = {p: sum(1 for s in samples.values() if s["provider"] == p) for p in PROVIDERS}
nok = {p: sum(1 for s in samples.values() if s["provider"] == p and s.get("status") == "ok")
       for p in PROVIDERS}
print("runs: " + ", ".join(f"{p} {nok[p]}/{nsamples[p]} ok" for p in provs) + ";",
      f"wall time {wall // 60} min {wall % 60} s;",
      "guest " + (f"finished the matrix in {done} s" if done else "did NOT finish the matrix"))
if malformed:
    print(f"warning: {malformed} BENCH records in the serial log could not be read")

doc = {
    "schema": 2,
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "timestamp": stamp,
    "harness": {"kind": harness_kind, "vms": int(vms) if vms.isdigit() else None,
                "vcpus": int(meta["vcpus"]) if meta.get("vcpus", "").isdigit() else None,
                "mem_mb": int(meta["mem_mb"]) if meta.get("mem_mb", "").isdigit() else None,
                "qemu": qemu_version, "host_cpus": host_nproc,
                "host_loadavg_start": load_start, "host_loadavg_end": load_end,
                "clock": "instructions: -icount shift=0,sleep=off, 1 ns per instruction"
                if icount else "host time",
                "caveat": "TCG figures: compare rxe and rrxe, never quote"},
    "kernel": meta.get("kernel"),
    "kernel_flavour": meta.get("kernel_flavour"),
    "perftest": {"version": meta.get("perftest"), "package": perftest_pkg},
    "git": {"commit": git_rev, "dirty_files": git_dirty},
    **({"base": {k: base_facts.get(k) for k in ("rev", "commit", "tree", "ko")}}
       if has_base else {}),
    "reps": int(reps) if reps.isdigit() else None, "quick": quick == "1",
    "vm_run": {"status": vm_status, "wall_s": wall, "timeout_s": timeout,
               "log_dir": run_dir},
    "complete": done is not None,
    "datapath": datapath, "notes": notes, "malformed_records": malformed,
    "order": [{"rep": r, "provider": p} for r, p in order], "order_alternates": alternates,
    "memcpy": memcpy,
    "write_vs_memcpy": vs_memcpy,
    **({"link_mibs": link, "write_vs_link": vs_link} if link else {}),
    "scaling": scaling,
    "guest_meta": meta,
    "ratio_note": "higher-better metrics: rrxe/rxe; lower-better (latency): rxe/rrxe; >1: rrxe better"
    + ("; ratio_base: the same against base (rrxe.ko of BENCH_BASE)" if has_base else ""),
    "units": {"bw_avg": "MiB/s (perftest MB/sec)", "bw_peak": "MiB/s", "msgrate": "Mpps",
              "t_*": "usec", "secs": "wall seconds of the run, setup included",
              "msgs": "messages (bandwidth tests) or exchanges (latency tests) of the run",
              "cpu_kern, cpu_user, cpu_idle": "CPU seconds of the guest (all vCPUs) while the "
              "run lasted, setup and teardown included: system+irq+softirq, user+nice, "
              "idle+iowait (/proc/stat)",
              "ticks_accounted_pct": "CPU ticks counted (kernel+user+idle) over wall time x "
              "vCPUs: below 100 when the host starved the guest's vCPUs of time",
              "kcpu_us_msg, ucpu_us_msg": "kernel, user CPU microseconds per message",
              "kcpu_s_gib, ucpu_s_gib": "kernel, user CPU seconds per GiB moved",
              "memcpy": "MiB/s, single core, best of 5 passes of 64 MiB",
              "bw_flowN": "MiB/s of flow N of a -Nflows row (bw_avg, msgrate: their sums)",
              "bw_avg_per_qp, msgrate_per_qp": "of a -qN row: bw_avg, msgrate over N",
              "kmem_kb_before, kmem_kb_peak": "KiB of Slab+Percpu+VmallocUsed+PageTables "
              "(/proc/meminfo) before a run of 1024 QPs or more and at its peak",
              "kmem_b_per_qp": "bytes: (kmem_kb_peak - kmem_kb_before) over the 2N QPs of "
              "a -qN row (server and client)",
              "scaling": "per provider: median of the row over the median of ib_write_bw at "
              "the same size (1 QP, one flow, as many messages)",
              "write_vs_memcpy": "best median ib_write_bw bw_avg from 64 KiB to 8 MiB; pct: "
              "of memcpy.mibs",
              "link_mibs": "two VMs: MiB/s of one TCP connection from the client VM to the "
              "server VM (128 MiB)",
              "write_vs_link": "write_vs_memcpy's best against link_mibs",
              "tries": "runs needed (perftest clock calibration failures are retried)"},
    "samples": sorted(samples.values(), key=lambda s: (s["provider"], TESTS.index(s["test"]),
                                                        s["size"], s["rep"])),
    "results": results,
}
with open(json_path, "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
if latest:
    shutil.copyfile(json_path, latest)
print(f"JSON: {json_path}" + (f" (and {latest})" if latest else ""))
sys.exit(0 if nok["rxe"] else 1)
