# SPDX-License-Identifier: GPL-2.0
#
# rrxe: user-facing entry points. The kernel's build system reads Kbuild, not this file.
#
#   make            build rrxe.ko (installs dependencies and builds the test kernel first
#                   if they are missing)
#   make run        boot the test kernel, create a device, show it and run perftest
#                   (PROVIDER=rrxe by default, PROVIDER=rxe for the C reference)
#   make check      every test: host checks and guest tests; ends with "N passed, N failed"
#   make check-debug  the guest tests on the debug kernel (KASAN, UBSAN, KFENCE, kmemleak):
#                   hours, not for CI
#   make conformance  pyverbs rxe vs rrxe, teardown under traffic on rrxe and rxe, the
#                   two-VM interoperability matrix with rxe (also over lossy links) and
#                   the real RDMA clients across two VMs; several hours (about 3 without
#                   the clients), not for CI
#   make soak       100 back-to-back two-VM traffic runs, rrxe-rrxe and rxe-rrxe, counting
#                   kernel crashes per provider and side (SOAK_RUNS=N); hours, not for CI
#   make bench      perftest matrix, rxe and rrxe in the same boot; BENCH_BASE=REV adds rrxe
#                   of git revision REV to that boot (A/B against the code before a change).
#                   On the bench kernel (the test kernel without lockdep, lock and leak
#                   debugging), built first if missing; BENCH_KERNEL=test: the test kernel
#   make bench-2vm  the same matrix between two VMs of 2 vCPUs each (servers in VM1, clients
#                   in VM2), rxe with rxe and rrxe with rrxe in the same boots
#   make bench-profile  where the time goes: perf samples the guest while perftest runs
#                   (ib_write_bw and ib_send_bw 2 B, ib_write_bw and ib_read_bw 64 KiB) on
#                   rxe and rrxe in one boot, about 12 minutes; a flame graph (.svg) and a
#                   report (.txt) per driver and point in out/bench/profile-<timestamp>/;
#                   on the bench kernel too
#   make bench-count  where every instruction goes, counted: a QEMU plugin counts each
#                   translation block the guest runs (instruction time, one vCPU) while
#                   perftest runs (8 B READ latency, 2 B message rate of WRITE, READ and
#                   SEND) on rxe and rrxe; the instructions per iteration,
#                   total and by symbol, in out/bench/count-<timestamp>/; about five minutes
#   make bench-count-2vm  the same between two VMs of one vCPU each, in host time: each
#                   VM's side of 2 B and 64 KiB WRITE, READ and SEND (the wire path), in
#                   out/bench/count-2vm-<timestamp>/vm1/ and vm2/
#   make clippy     build through clippy (the kernel's CLIPPY=1)
#   make fmt        rustfmt the sources; make fmtcheck checks them
#   make clean

SHELL := /bin/bash
PROVIDER ?= rrxe

.PHONY: modules deps kernel clippy fmt fmtcheck run check check-debug conformance soak bench \
	bench-2vm bench-profile bench-count bench-count-2vm clean

modules:
	tools/build/kbuild.sh modules

deps:
	tools/build/deps.sh

kernel: deps
	tools/build/kernel.sh

clippy:
	tools/build/kbuild.sh CLIPPY=1 modules

fmt:
	tools/build/rustfmt.sh

fmtcheck:
	tools/build/rustfmt.sh --check

run: modules
	tools/testing/run --provider $(PROVIDER)

check:
	tools/testing/check

check-debug:
	tools/testing/check --debug

conformance:
	tools/testing/conformance

SOAK_RUNS ?= 100
soak: modules
	tools/testing/soak --runs $(SOAK_RUNS)

# The bench scripts build rrxe.ko for the kernel they run on.
bench:
	tools/bench/bench

bench-2vm:
	BENCH_VMS=2 tools/bench/bench

bench-profile:
	tools/bench/profile

bench-count:
	tools/bench/count

bench-count-2vm:
	COUNT_VMS=2 tools/bench/count

clean:
	tools/build/kbuild.sh clean
