#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of `make bench` (tools/bench/bench, vm-run --provider rxe, one VM): the
# perftest matrix in loopback (server and client on one device), for C rdma_rxe and then
# rrxe in the same boot, and with BASE_KO a third provider, base: rrxe built from another
# git revision (BENCH_BASE), for A/B runs. Odd repetitions run the providers in the order
# rxe rrxe [base], even ones in the reverse order, so that drifting host load hits them
# alike.
#
# With two VMs (`make bench-2vm`: vm-run --vms 2, both VMs run this script) the servers
# run in the server VM and the clients in the client VM, over the link between them: both
# VMs switch providers at the same points and run the same sequence of runs, which stay
# in step because each client waits for its servers (see pair); the client VM writes the
# records. Without the 4,096-QP row and the memcpy limit (figures of one host), and without
# skipping a provider that hangs (each VM sees only its own side).
#
# Usage: perf-matrix.sh REPS QUICK BUDGET_SECS [ONLY [BASE_KO]]
#   QUICK=1: the 64 KiB points only (with their scaling rows). BUDGET_SECS: tests that
#   could not finish within it (from the script's start) are skipped, so the results
#   always reach the host. ONLY: an extended regular expression; only the points whose
#   "TEST SIZE" (e.g. "ib_write_bw 65536") it matches are run, for short runs while
#   working on the bench itself. BASE_KO: base's rrxe.ko, a guest path (/host/...).
#
# Results go to the kernel log (/dev/kmsg: printk lines are never split by other console
# output), one record a line, read by the host from the serial log:
#   BENCH <provider> <test> <size> <rep> <metric> <value>
#     metric status: ok | fail | timeout | skipped; error: text; side: client|server;
#     numbers: bw_avg bw_peak (MB/s = MiB/s), msgrate (Mpps), t_min t_typical t_avg
#     t_p99 t_max (usec), iters, tries, secs (wall time of the run), msgs (messages or
#     exchanges moved), cpu_kern cpu_user cpu_idle (CPU seconds of the whole guest while
#     the run lasted, from /proc/stat: system+irq+softirq, user+nice, idle+iowait),
#     hw_<counter> (the change of a device port counter during the run, if any),
#     kmem_kb_before kmem_kb_peak (rows of 1024 QPs or more: the kernel's memory in
#     Slab, Percpu, VmallocUsed and PageTables of /proc/meminfo before the run and at
#     its peak, sampled every 0.2 s while the clients run)
#   BENCH-META <key> <value...>   BENCH-NOTE <provider> <text>   BENCH-DONE <secs>
#   BENCH-META providers <rxe rrxe [base]>   BENCH-META datapath <provider> <yes|no>
#   BENCH-META kernel <release>   BENCH-META kernel_flavour <test|debug|bench>
#   BENCH-ORDER <rep> <provider>  a provider's matrix of repetition rep starts
#   BENCH-META memcpy_mibs|memcpy_cached_mibs <MiB/s>, memcpy_pinned <cpu|no>: the
#     single-core memcpy bandwidth (the "TEST SIZE" of ONLY is "memcpy 0")
# Lines starting with "bench " are progress for humans.
set -euo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"

reps=${1:-5}
quick=${2:-0}
budget=${3:-3600}
only=${4:-}
base_ko=${5:-}
vms=${RRXE_VMS:-1}
start=$(date +%s)
deadline=$((start + budget))
test_to=${BENCH_TEST_TIMEOUT:-60} # seconds per perftest run (server and client)
probe_to=30

# Write to the kernel log. Colons are dropped from free text, so that nothing looks like
# a kernel problem report ("BUG:", "WARNING:") to vm-run.
klog() {
	local s=${*//:/}
	echo "${s:0:900}" >/dev/kmsg
}
note() { klog "BENCH-NOTE $1 ${*:2}"; }
meta() { klog "BENCH-META $*"; }
say() { klog "bench $*"; }

# --- Providers: C rdma_rxe (rxe0), rrxe (rrxe0) and base (rrxe0 of module rrxe from
# BASE_KO) on eth0, one loaded at a time (all need UDP 4791 in init_net: rxe binds it when
# it loads, rrxe with its first device).
provs=(rxe rrxe)
[ -z "$base_ko" ] || provs+=(base)
declare -A dev_of=([rxe]=rxe0 [rrxe]=rrxe0 [base]=rrxe0)
declare -A type_of=([rxe]=rxe [rrxe]=rrxe [base]=rrxe) # of rdma link add
declare -A usable=([rxe]=1 [rrxe]=1 [base]=1) hangs=([rxe]=0 [rrxe]=0 [base]=0)
cur=rxe dev=rxe0 gid=${RRXE_GID_INDEX:-}

# rrxe_load P: before rrxe or base, which are both module rrxe, the one loaded goes (with
# its device); for base, BASE_KO is loaded (its dependencies by name first), so that
# dev_add finds module rrxe loaded. Nothing for rxe (dev_add unloads rrxe). Sets DEV_ERR
# on failure.
rrxe_load() {
	local deps m
	[ "$1" != rxe ] || return 0
	if [ -e /sys/module/rrxe ]; then
		[ ! -e /sys/class/infiniband/rrxe0 ] || rdma link delete rrxe0 ||
			{ DEV_ERR="rdma link delete rrxe0"; return 1; }
		rmmod rrxe || { DEV_ERR="rmmod rrxe"; return 1; }
	fi
	[ "$1" = base ] || return 0
	deps=$(tr '\0' '\n' <"$base_ko" | sed -n 's/^depends=//p') ||
		{ DEV_ERR="cannot read $base_ko"; return 1; }
	for m in ${deps//,/ }; do
		modprobe "$m" || { DEV_ERR="modprobe $m"; return 1; }
	done
	insmod "$base_ko" || { DEV_ERR="insmod $base_ko"; return 1; }
}

# use_provider P: unload the other driver, load P, create its device.
use_provider() {
	local p=$1
	[ "$cur" != "$p" ] || return 0
	cur=none
	if ! rrxe_load "$p" || ! dev_add "${type_of[$p]}" "${dev_of[$p]}" eth0; then
		note "$p" "device setup failed ($DEV_ERR)"
		return 1
	fi
	cur=$p dev=${dev_of[$p]}
	gid=$(gid_index "$dev")
}

# --- One perftest run.
port=18515

TEST= # the perftest binary of the current run

# cpu_ticks: the aggregate "cpu" line of /proc/stat as C_KERN (system+irq+softirq),
# C_USER (user+nice) and C_IDLE (idle+iowait), in USER_HZ ticks. perftest busy-polls its
# completion queues, so its user time says little; the kernel time is the driver's work
# (and the syscalls perftest makes into it). Global variables: no subshell per reading.
cpu_ticks() {
	local _cpu user nice system idle iowait irq softirq _rest
	read -r _cpu user nice system idle iowait irq softirq _rest </proc/stat
	C_KERN=$((system + irq + softirq)) C_USER=$((user + nice)) C_IDLE=$((idle + iowait))
}

# hw_counters: "name value" lines of the device's port counters (rxe and rrxe both have
# them: retransmissions, RNR NAKs, sequence errors, drops), for the deltas of a run.
hw_counters() {
	local f
	for f in /sys/class/infiniband/"$dev"/ports/1/hw_counters/*; do
		[ -f "$f" ] && echo "${f##*/} $(cat "$f" 2>/dev/null || echo 0)"
	done
}

# tick_secs TICKS: USER_HZ ticks as seconds (USER_HZ is 100 on x86, fixed by the ABI).
tick_secs() {
	printf '%d.%02d' $(($1 / 100)) $(($1 % 100))
}

# kmem_kb: the kernel's memory that QPs take (queues in vmalloc, objects in slab and
# per-CPU areas, and page tables, perftest's buffers' included), in KiB; it starts no
# program, as it is sampled while a run lasts.
kmem_kb() {
	local k v _u sum=0
	while read -r k v _u; do
		case $k in
		Slab: | Percpu: | VmallocUsed: | PageTables:) sum=$((sum + v)) ;;
		esac
	done </proc/meminfo
	echo "$sum"
}

# first_error FILE: the line of a perftest log that says what went wrong.
first_error() {
	# perftest's "Failed status N" names the completion status; "Completion with error"
	# before it does not.
	{ grep -m 1 -E "Failed status" "$1" ||
		grep -m 1 -iE "couldn|fail|error|unable|not supported|invalid|timeout" "$1" ||
		grep -v '^[ -]*$' "$1" | tail -n 1; } | tr -s ' \t' ' ' | cut -c 1-200 || :
}

# result_row FILE: the first row under perftest's "#bytes" header.
result_row() {
	awk '/#bytes/ { h = 1; next } h && $1 ~ /^[0-9]+$/ { print; exit }' "$1"
}

# pair SECS FLOWS TEST ARGS...: FLOWS server and client pairs on $dev, each on its own
# port and under a time limit; every server listens before the clients start, and the
# clients run at the same time. One VM: the clients connect to 127.0.0.1. Two VMs: the
# server VM runs the servers, the client VM the clients, to the server VM's address, once
# the server VM says its servers listen (it accepts a TCP connection on the first flow's
# port + READY_OFFSET then, and sends the run's tag, which the client checks: see
# peer_ready); each side knows its own programs' status only. Sets P_ST
# (ok|fail|timeout), P_ERR, P_SECS, and P_KERN, P_USER, P_IDLE (CPU ticks of this guest
# from before the servers started until all ended, setup and teardown of perftest
# included); logs in /tmp/srvN.log and /tmp/cliN.log, N = 1..FLOWS. With P_KMEM=1, P_KMEM0
# and P_KMEM1 are kmem_kb before the servers start and its peak while the clients run.
pair() {
	local secs=$1 n=$2 t0 i st cst=0 sst=0 up=1 bad=1 cbad=1 k0 u0 i0 ready=''
	local -a spid cpid ports
	local role=${RRXE_ROLE:-single} to=127.0.0.1 here=1 # here: servers run in this VM
	[ "$role" != client ] || here=0
	shift 2
	hw_counters >/tmp/hw0
	[ "${P_KMEM:-0}" != 1 ] || P_KMEM0=$(kmem_kb) P_KMEM1=0
	cpu_ticks
	k0=$C_KERN u0=$C_USER i0=$C_IDLE
	t0=$EPOCHREALTIME
	for ((i = 1; i <= n; i++)); do
		port=$((port + 1)) # a fresh port: a lingering server cannot get in the way
		ports[i]=$port
		: >"/tmp/cli$i.log"
		: >"/tmp/srv$i.log"
		[ "$here" = 1 ] || continue
		timeout -k 5 "$secs" "$@" -d "$dev" -x "$gid" -F -p "$port" >"/tmp/srv$i.log" 2>&1 &
		spid[i]=$!
	done
	# Until every server listens; a server's own time limit ends the wait if it never does.
	for ((i = 1; i <= n && up && here; i++)); do
		until tcp_listening "${ports[i]}"; do
			if ! kill -0 "${spid[i]}" 2>/dev/null; then
				up=0 bad=$i
				break
			fi
			sleep 0.1
		done
	done
	if [ "$role" = server ] && [ "$up" = 1 ]; then
		printf '%s\n' "$cur ${ports[1]} $*" | busybox nc -l -p $((ports[1] + READY_OFFSET)) \
			>/dev/null 2>&1 &
		ready=$!
	elif [ "$role" = client ]; then
		# The server VM may still be finishing the run before, up to its time limit.
		peer_ready $((2 * secs + 10)) $((ports[1] + READY_OFFSET)) "$cur ${ports[1]} $*" ||
			up=0
		to=$RRXE_PEER_IP
	fi
	if [ "$up" = 1 ] && [ "$role" != server ]; then
		for ((i = 1; i <= n; i++)); do
			run_to "$secs" "$@" -d "$dev" -x "$gid" -F -p "${ports[i]}" "$to" \
				>"/tmp/cli$i.log" 2>&1 &
			cpid[i]=$!
		done
		if [ "${P_KMEM:-0}" = 1 ]; then
			local m
			while kill -0 "${cpid[@]}" 2>/dev/null; do
				m=$(kmem_kb)
				[ "$m" -le "$P_KMEM1" ] || P_KMEM1=$m
				sleep 0.2
			done
		fi
		for ((i = 1; i <= n; i++)); do
			st=0
			wait "${cpid[i]}" || st=$?
			if [ "$st" != 0 ] && [ "$cst" = 0 ]; then
				cst=$st cbad=$i
			fi
		done
	fi
	# A failed client leaves its server waiting; a server that never listened leaves the
	# others without a client.
	if [ "$role" = single ] && { [ "$cst" != 0 ] || [ "$up" = 0 ]; }; then
		for ((i = 1; i <= n; i++)); do
			[ "$i" = "$bad" ] && [ "$up" = 0 ] || kill "${spid[i]}" 2>/dev/null || :
		done
	fi
	for ((i = 1; i <= n && here; i++)); do
		st=0
		wait "${spid[i]}" || st=$?
		if [ "$up" = 0 ] && [ "$i" = "$bad" ]; then
			sst=$st
		elif [ "$up" = 1 ] && [ "$st" != 0 ] && [ "$sst" = 0 ]; then
			sst=$st bad=$i
		fi
	done
	if [ -n "$ready" ]; then
		kill "$ready" 2>/dev/null || :
		wait "$ready" 2>/dev/null || :
	fi
	cpu_ticks
	hw_counters >/tmp/hw1
	P_KERN=$((C_KERN - k0)) P_USER=$((C_USER - u0)) P_IDLE=$((C_IDLE - i0))
	P_SECS=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
	# busybox timeout exits with 143, not 124, on expiry (as run_to, judge by the clock).
	if [ "$sst" -ge 124 ] && [ "${P_SECS%.*}" -ge "$secs" ]; then
		sst=124
	fi
	P_ST=fail P_ERR=
	if [ "$up" = 0 ] && [ "$role" = client ] && [ -n "$STEP_ERR" ]; then
		P_ERR=$STEP_ERR
	elif [ "$up" = 0 ] && [ "$role" = client ]; then
		P_ST=timeout P_ERR="the server VM's servers did not listen within $((2 * secs + 10)) s"
	elif [ "$up" = 0 ] && [ "$sst" = 124 ]; then
		P_ST=timeout P_ERR="the server did not listen within $secs s"
	elif [ "$up" = 0 ]; then
		P_ERR="the server exited (rc $sst) before listening - $(first_error "/tmp/srv$bad.log")"
	elif [ "$cst" = 124 ]; then
		P_ST=timeout P_ERR="no result from the client within $secs s"
	elif [ "$cst" != 0 ]; then
		P_ERR="client rc $cst - $(first_error "/tmp/cli$cbad.log");"
		P_ERR+=" server - $(first_error "/tmp/srv$cbad.log")"
	elif [ "$sst" = 124 ]; then
		P_ST=timeout P_ERR="the server hung after the client finished"
	elif [ "$sst" != 0 ]; then
		P_ERR="server rc $sst - $(first_error "/tmp/srv$bad.log")"
	else
		P_ST=ok
	fi
	[ "$n" = 1 ] || [ -z "$P_ERR" ] || P_ERR="$P_ERR (of $n flows)"
}

# peer_ready SECS PORT TAG: on the client VM, waits (up to SECS) until the server VM
# accepts a TCP connection on PORT, and checks that the server VM runs the same run: it
# sends its tag (provider, port, program and arguments), which must be TAG. The two VMs
# run the same sequence of runs, each judging its own side; should they ever disagree
# (a provider usable on one side only), the tags differ from then on: every run after
# fails (STEP_ERR says why), rather than pair one provider's server with another's client.
STEP_ERR=''
peer_ready() {
	local st=0
	[ -z "$STEP_ERR" ] || return 1
	peer_tag "$1" "$2" "$3" || st=$?
	if [ "$st" = 2 ]; then
		STEP_ERR="the VMs are out of step: the server VM runs '$PEER_GOT', this one '$3'"
		note guest "$STEP_ERR"
	fi
	[ "$st" = 0 ]
}

# dump_logs FLOWS: the last lines of both sides of every flow, for a failed run.
dump_logs() {
	local f i l
	for ((i = 1; i <= $1; i++)); do
		for f in "/tmp/cli$i.log" "/tmp/srv$i.log"; do
			{ grep -v '^[ -]*$' "$f" || :; } | tail -n 4 |
				while IFS= read -r l; do klog "bench   | ${f#/tmp/} $l"; done
		done
	done
}

# usable_row FILE: the result row of FILE if it holds numbers and perftest calibrated its
# clock (a failed calibration gives a message rate of 0 or inf usec). MB/s has two
# decimals, 0.00 for tiny messages, and the message rate six, 0.000000 for a few large
# messages a second (two VMs): one of them must be above 0.
usable_row() {
	local row c
	row=$(result_row "$1")
	read -r -a c <<<"$row"
	case $TEST in
	*_bw)
		[ "${#c[@]}" -ge 5 ] && [[ $row != *inf* && $row != *nan* ]] &&
			! grep -qs "Correlation coefficient" "$1" &&
			[ "$(awk -v b="${c[3]}" -v r="${c[4]}" 'BEGIN { print (b > 0 || r > 0) }')" = 1 ]
		;;
	*) [ "${#c[@]}" -ge 8 ] && [[ $row != *inf* && $row != *nan* ]] ;;
	esac || return 1
	echo "$row"
}

# parse_run FLOWS: after pair, the result of $TEST: P_ST (ok|calib|fail|timeout), P_ERR,
# P_SIDE and P_ROWS (one row per flow, from 1). The ib_send_lat/ib_write_lat client
# sometimes prints inf: then the server's row counts (ib_read_lat prints on the client
# only; latency runs have one flow).
parse_run() {
	local i
	P_SIDE=client P_ROWS=()
	[ "$P_ST" = ok ] || return 0
	for ((i = 1; i <= $1; i++)); do
		P_ROWS[i]=$(usable_row "/tmp/cli$i.log") && continue
		if [[ $TEST == *_lat ]]; then
			P_SIDE=server
			P_ROWS[i]=$(usable_row "/tmp/srv$i.log") && continue
		fi
		if grep -qs "Correlation coefficient" "/tmp/cli$i.log" "/tmp/srv$i.log"; then
			# perftest could not calibrate its cycle counter (a busy vCPU): not the driver.
			P_ST=calib P_ERR="perftest clock calibration failed (r^2 < 0.9)"
		else
			P_ST=fail
			P_ERR="no usable result row ($(result_row "/tmp/cli$i.log" | tr -s ' \t' ' '))"
		fi
		return 0
	done
}

# measure PROVIDER REP ID SIZE ITERS [ARGS...]: one sample, as BENCH records. ID is the
# perftest program, with a variant for the scaling rows: ID-qN (N QPs: -q N, ITERS per
# QP) or ID-Nflows (N server and client pairs at once, ITERS each, their figures summed).
# A failed clock calibration is retried (up to 3 runs in all; with two VMs not at all: the
# server VM could not tell). With two VMs the client VM records; the server VM runs its
# side of the same sequence of runs.
measure() {
	local p=$1 rep=$2 id=$3 size=$4 iters=$5 try=1 summary c qps=1 flows=1 i bw rate tries=3
	TEST=${id%%-*}
	shift 5
	[[ -z $only || "$id $size" =~ $only ]] || return 0
	rec() { klog "BENCH $p $id $size $rep $*"; }
	if [ "${usable[$p]}" != 1 ] || [ "$cur" != "$p" ]; then
		rec status skipped
		rec error "$p not usable"
		return 0
	fi
	local args=("$TEST" -n "$iters" "$@")
	case $id in
	*-q*) qps=${id##*-q} args+=(-q "$qps") ;;
	*flows) flows=${id##*-} flows=${flows%flows} ;;
	esac
	[ "$TEST" = ib_atomic_bw ] || args+=(-s "$size")
	# Thousands of QPs: their setup and teardown under TCG take longer than the traffic.
	local to=$test_to
	P_KMEM=0
	[ "$qps" -lt 1024 ] || P_KMEM=1 to=$((test_to * 4))
	while :; do
		# Two VMs: the client may wait for the server VM as long again.
		if [ $(($(date +%s) + to * vms)) -gt "$deadline" ]; then
			rec status skipped
			rec error "time budget of $budget s used up"
			return 0
		fi
		pair "$to" "$flows" "${args[@]}"
		[ "${RRXE_ROLE:-single}" != server ] || return 0
		[ "$vms" = 1 ] || tries=1
		parse_run "$flows"
		if [ "$P_ST" != calib ] || [ $try -ge $tries ]; then
			break
		fi
		say "$p rep $rep $id $size -> perftest clock calibration failed, again"
		try=$((try + 1))
	done
	rec secs "$P_SECS"
	rec iters "$iters"
	rec msgs $((iters * qps * flows))
	rec tries "$try"
	rec cpu_kern "$(tick_secs "$P_KERN")"
	rec cpu_user "$(tick_secs "$P_USER")"
	rec cpu_idle "$(tick_secs "$P_IDLE")"
	if [ "$P_KMEM" = 1 ]; then
		rec kmem_kb_before "$P_KMEM0"
		rec kmem_kb_peak "$P_KMEM1"
	fi
	# The device counters that moved during the run, as hw_<counter> <delta>.
	awk 'NR == FNR { a[$1] = $2; next } $2 - a[$1] != 0 { print $1, $2 - a[$1] }' \
		/tmp/hw0 /tmp/hw1 | while read -r c v; do rec "hw_$c" "$v"; done
	if [ "$P_ST" = ok ] && [ "$flows" -gt 1 ]; then
		# Every flow's average, and the sums (perftest's peak is per flow: not summed).
		for ((i = 1; i <= flows; i++)); do
			read -r -a c <<<"${P_ROWS[i]}"
			rec "bw_flow$i" "${c[3]}"
		done
		read -r bw rate < <(printf '%s\n' "${P_ROWS[@]}" |
			awk '{ bw += $4; rate += $5 } END { printf "%.2f %.6f\n", bw, rate }')
		rec bw_avg "$bw"
		rec msgrate "$rate"
		summary="$bw MB/s, $rate Mpps in $flows flows"
	elif [ "$P_ST" = ok ] && [[ $TEST == *_bw ]]; then
		read -r -a c <<<"${P_ROWS[1]}"
		# bytes iterations peak average msgrate
		rec bw_peak "${c[2]}"
		rec bw_avg "${c[3]}"
		rec msgrate "${c[4]}"
		summary="${c[3]} MB/s, ${c[4]} Mpps"
	elif [ "$P_ST" = ok ]; then
		read -r -a c <<<"${P_ROWS[1]}"
		# bytes iterations min max typical avg stdev 99% 99.9%
		rec side "$P_SIDE"
		rec t_min "${c[2]}"
		rec t_max "${c[3]}"
		rec t_typical "${c[4]}"
		rec t_avg "${c[5]}"
		rec t_p99 "${c[7]}"
		summary="typical ${c[4]} us, min ${c[2]} us ($P_SIDE)"
	fi
	[ "$P_ST" != calib ] || P_ST=fail
	rec status "$P_ST"
	if [ "$P_ST" = ok ]; then
		hangs[$p]=0
		say "$p rep $rep $id $size -> $summary, ${P_SECS} s"
		return 0
	fi
	rec error "$P_ERR"
	say "$p rep $rep $id $size -> ${P_ST^^} ($P_ERR)"
	dump_logs "$flows"
	# Two VMs: each would count its own side's hangs, and the two must run the same tests.
	if [ "$P_ST" = timeout ] && [ "$vms" = 1 ]; then
		hangs[$p]=$((hangs[$p] + 1))
		if [ "${hangs[$p]}" -ge 3 ]; then
			usable[$p]=0
			note "$p" "3 runs in a row hung; the rest of $p's matrix is skipped"
		fi
	fi
}

# Messages for a message-rate point. Under TCG a 2 B stream runs at 10 to 20 thousand
# messages a second on the bench kernel (a few thousand on the test kernel): 1000 took
# 50-100 ms, mostly the ramp up and down of a window of 128, and scattered by the
# scheduler; 50000 take a few seconds.
rate_msgs=50000

# Iterations for SIZE in the sweep: about 16 MiB of data, 5 (perftest's minimum) to
# $rate_msgs messages.
sweep_iters() {
	local n=$((16 * 1024 * 1024 / $1))
	[ $n -le $rate_msgs ] || n=$rate_msgs
	[ $n -ge 5 ] || n=5
	echo $n
}

# matrix PROVIDER REP: every test once.
matrix() {
	local p=$1 rep=$2 t s
	say "$p rep $rep/$reps ($dev, gid index $gid)"
	for t in ib_write_bw ib_read_bw ib_send_bw; do
		measure "$p" "$rep" "$t" 65536 1000
	done
	# Scaling, against the 1-QP rows with (about) the same total of messages (64 KiB above,
	# 2 B in the sweep): 8 and 64 QPs in one process, and two independent flows
	# (processes) at once, which two vCPUs can run in parallel.
	measure "$p" "$rep" ib_write_bw-q8 65536 125
	measure "$p" "$rep" ib_write_bw-q64 65536 16
	measure "$p" "$rep" ib_write_bw-2flows 65536 500
	[ "$quick" != 1 ] || return 0
	# With -q 8 and 6,250 iterations per QP (50,000 / 8) perftest waited for ever, on rxe
	# and rrxe alike; 6,200 and 6,300, multiples of its CQ moderation (100), complete.
	measure "$p" "$rep" ib_write_bw-q8 2 $((rate_msgs / 8 / 100 * 100))
	measure "$p" "$rep" ib_atomic_bw 8 $rate_msgs -A FETCH_AND_ADD
	# 4,096 QPs with traffic, 8 messages each (-t 4: perftest's CQ has a slot per
	# outstanding message of every QP, and the largest CQ is 32,767), as many as the 512 B
	# row of the sweep; the kernel's memory per QP from the peak (one VM only: a figure of
	# one host).
	[ "$vms" != 1 ] || measure "$p" "$rep" ib_write_bw-q4096 512 8 -t 4
	for t in ib_write_bw ib_read_bw ib_send_bw; do
		for ((s = 2; s <= 8 * 1024 * 1024; s *= 4)); do
			measure "$p" "$rep" "$t" "$s" "$(sweep_iters "$s")"
		done
	done
	for t in ib_send_lat ib_write_lat ib_read_lat; do
		measure "$p" "$rep" "$t" 8 1000
	done
}

# memcpy_limit: single-core memcpy bandwidth in the guest (guest/src/memcpy-bw.c), the
# physical limit that the loopback bandwidth is set against: a soft-RoCE write copies the
# data at least once. Pinned to CPU 1 when taskset can (CPU 0 takes most interrupts),
# else run plain; measured once per boot, before the matrix, on an idle guest.
memcpy_limit() {
	local pin=() cpu=no k v
	[[ -z $only || "memcpy 0" =~ $only ]] || return 0
	# Two VMs: the limit of loopback only.
	[ "$vms" = 1 ] || return 0
	if taskset -c 1 true 2>/dev/null; then
		pin=(taskset -c 1)
		cpu=1
	fi
	if ! run_to 120 "${pin[@]}" /usr/libexec/rrxe/memcpy-bw >/tmp/memcpy.log 2>&1; then
		note guest "memcpy-bw failed - $(tail -n 1 /tmp/memcpy.log)"
		return 0
	fi
	while read -r k v; do
		meta "$k" "$v"
	done </tmp/memcpy.log
	meta memcpy_pinned "$cpu"
	say "memcpy one core (pinned $cpu) $(tr '\n' ' ' </tmp/memcpy.log)MiB/s"
}

# link_limit: two VMs: the bandwidth of the link between them, which the two-VM bandwidth
# is set against as the loopback's is against memcpy: 128 MiB over one TCP connection from
# the client VM to the server VM (bash's /dev/tcp to busybox nc), in segments of the MTU
# (QEMU's socket link offers no segmentation offload), timed on the client; once per boot,
# before the matrix.
link_limit() {
	local lport mib=128 t0 nc_pid ready_pid mibs
	[[ -z $only || "link 0" =~ $only ]] || return 0
	[ "$vms" = 2 ] || return 0
	port=$((port + 1)) lport=$port
	case $RRXE_ROLE in
	server)
		# The client's wait for the listener below and its transfer.
		timeout 190 busybox nc -l -p "$lport" >/dev/null 2>&1 &
		nc_pid=$!
		until tcp_listening "$lport"; do
			kill -0 "$nc_pid" 2>/dev/null || break
			sleep 0.1
		done
		echo link | busybox nc -l -p $((lport + READY_OFFSET)) >/dev/null 2>&1 &
		ready_pid=$!
		wait "$nc_pid" || :
		kill "$ready_pid" 2>/dev/null || :
		wait "$ready_pid" 2>/dev/null || :
		;;
	client)
		if ! peer_ready 60 $((lport + READY_OFFSET)) link; then
			note guest "link measurement - the server VM did not listen"
			return 0
		fi
		t0=$EPOCHREALTIME
		if ! timeout 120 bash -c 'dd if=/dev/zero bs=65536 count=$1 2>/dev/null \
			>"/dev/tcp/$2/$3"' - $((mib * 16)) "$RRXE_PEER_IP" "$lport"; then
			note guest "link measurement failed"
			return 0
		fi
		mibs=$(awk -v a="$t0" -v b="$EPOCHREALTIME" -v m=$mib 'BEGIN { printf "%.1f", m / (b - a) }')
		meta link_mibs "$mibs"
		say "link (TCP, client VM to server VM) $mibs MiB/s"
		;;
	esac
}

# probe P: does P (rrxe or base) move data at all? Sets usable[P].
probe() {
	local p=$1
	if ! use_provider "$p"; then
		usable[$p]=0
		meta datapath "$p" no
		note "$p" "could not create ${dev_of[$p]}; $p is not measured"
		return 0
	fi
	pair "$probe_to" 1 ib_write_bw -s 4096 -n 10
	if [ "$P_ST" = ok ]; then
		meta datapath "$p" yes
		note "$p" "data path probe (ib_write_bw -s 4096 -n 10) passed"
	else
		usable[$p]=0
		meta datapath "$p" no
		note "$p" "$p failed the data path probe ib_write_bw -s 4096 -n 10: ${P_ST} ($P_ERR); $p is not measured"
		dump_logs 1
	fi
}

if [ "$RRXE_PROVIDER" != rxe ] || [ -z "$gid" ]; then
	echo "perf-matrix: run with vm-run --provider rxe" >&2
	exit 2
fi
meta kernel "$(uname -r)"
meta kernel_flavour "${RRXE_KERNEL:-unknown}"
meta perftest "$(ib_write_bw --version 2>&1 | sed -n 's/^Version: *//p' | head -n 1)"
meta vcpus "$(nproc)"
meta vms "$vms"
meta mem_mb "$(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo)"
meta reps "$reps"
meta quick "$quick"
meta budget "$budget"
meta only "$only"
meta providers "${provs[*]}"
meta datapath rxe yes
memcpy_limit
link_limit
declare -A probed=([rxe]=1)
for ((rep = 1; rep <= reps; rep++)); do
	order=()
	for p in "${provs[@]}"; do
		if [ $((rep % 2)) = 1 ]; then order+=("$p"); else order=("$p" "${order[@]}"); fi
	done
	for p in "${order[@]}"; do
		if [ -z "${probed[$p]:-}" ]; then
			probed[$p]=1
			probe "$p"
		fi
		[ "${usable[$p]}" = 1 ] || continue
		if ! use_provider "$p"; then
			usable[$p]=0
			note "$p" "switching to $p failed; the rest of $p's matrix is skipped"
			continue
		fi
		klog "BENCH-ORDER $rep $p"
		matrix "$p" "$rep"
	done
done
klog "BENCH-DONE $(($(date +%s) - start))"
exit 0
