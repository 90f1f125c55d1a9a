#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of `make bench-count` (tools/bench/count; vm-run --provider rxe
# --plugin tbcount.so,dir=DIR --share-out DIR): for each provider and perftest point,
# perftest twice, for ITERS/10 and for ITERS iterations, each run between two requests to
# the tbcount plugin (tools/bench/tbcount.c) for its counts of the instructions each
# translation block ran meanwhile. The host subtracts the short run from the long one:
# what perftest's setup and teardown cost (device open, QP creation, the TCP exchange,
# clock calibration) is the same in both and goes, what is left is ITERS * 9/10
# iterations. Before its first point, each provider runs that point once unmeasured: what
# the first use of a device costs once (the random-number pool's first draw, about 5
# million instructions) would otherwise land in one run only.
#
# One VM (vm-run --icount): perftest in loopback, server and client on one device, as
# `make bench`; the client's run is counted. Two VMs (vm-run --vms 2, both run this
# script, the plugin's DIR per VM): the server in the server VM, the client in the client
# VM, over the link between them; each VM counts its own side, the server VM from when
# its server listens (it then tells the client VM, which waits for that, as make
# bench-2vm's runs do) to when it exits, the client VM its client's run. Both VMs go
# through the same sequence of runs.
#
# Usage: count.sh "PROVIDER..." "TEST:SIZE[:ITERS]..." ITERS
#   TEST one of ib_write_bw, ib_read_bw, ib_send_bw or their _lat counterparts; a
#   point's own ITERS replaces the default.
#
# Results in $RRXE_OUT (vm-run --share-out; with two VMs in $RRXE_OUT/vmN/raw, N the
# VM's index), per provider P and run P-TEST-SIZE-N (N the iterations):
# tbcount.P-TEST-SIZE-N (the plugin's counts), and per provider kallsyms-P
# (/proc/kallsyms with P's module loaded) and per point P-TEST-SIZE.env (key=value: the
# iterations of both runs, perftest's status; written last).
# Lines starting with "count " in the kernel log are progress for humans.
set -euo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"

read -r -a providers <<<"$1"
read -r -a points <<<"$2"
iters=$3
out=${RRXE_OUT:?run with vm-run --share-out}
role=${RRXE_ROLE:-single}
if [ "${RRXE_VMS:-1}" = 2 ]; then
	out=$out/vm$RRXE_VM_INDEX/raw
	mkdir -p "$out"
fi

say() {
	local s=${*//:/}
	echo "count ${s:0:900}" >/dev/kmsg
}

# A descriptor that never has data: `read -t` on it waits without a process (a forked
# sleep's instructions would land in the counts).
mkfifo /tmp/count.quiet
exec {quiet}<>/tmp/count.quiet

# request LABEL: asks the plugin for the counts since the last request, as
# tbcount.LABEL ("reset": none), and waits up to 20 s until it took the request (and,
# but for a reset, wrote the counts).
request() {
	local i
	rm -f "$out/tbcount.$1"
	echo "$1" >"$out/tbcount.req.tmp"
	mv "$out/tbcount.req.tmp" "$out/tbcount.req"
	for ((i = 0; i < 1000; i++)); do
		if [ ! -e "$out/tbcount.req" ]; then
			[ "$1" = reset ] || [ -e "$out/tbcount.$1" ] || break
			return 0
		fi
		read -r -t 0.02 -u "$quiet" || :
	done
	say "the plugin did not take request $1 or wrote no counts: is vm-run running it" \
		"(--plugin), and can it write $out?"
	return 1
}

# Switched by lib.sh's use_provider.
cur=rxe dev=rxe0 gid=${RRXE_GID_INDEX:-} port=18515

# Two VMs run the same sequence of runs, each judging its own side. The server VM sends
# each run's tag with its server's state (up or down); once the tags differ (the VMs are
# out of step) or none comes, every later run of the client VM fails at once and says
# why, rather than pair runs that do not belong together; the server VM's runs then end
# at their time limits.
STEP_ERR=
# The time limit of the run before, which the server VM may still be in.
last_to=0

# run TEST SIZE N LABEL: perftest's server and client for N iterations, the client (on the
# client VM of two) or the server (on the server VM) between a reset of the counts and
# the request for LABEL ("reset": counted for nothing); fails if a side of this VM fails,
# RUN_ERR saying why. The time limits are the guest's seconds: with vm-run --icount they
# count instructions (a billion a second), about 100 us an iteration, twice the slowest
# seen; between two VMs they are host time, and a message of SIZE bytes may move at 2
# MB/s.
run() {
	local t=$1 size=$2 n=$3 spid= rpid= st=0 to tag peer=127.0.0.1 up=1 wait_to
	to=$((60 + n / 10000))
	[ "$role" = single ] || to=$((60 + n / 1000 + n * size / 2000000))
	wait_to=$((last_to + to + 10))
	last_to=$to
	port=$((port + 1))
	tag="$cur $port $t $size $n"
	RUN_ERR=
	: >/tmp/srv.log
	: >/tmp/cli.log
	if [ "$role" != client ]; then
		timeout -k 5 "$to" "$t" -d "$dev" -x "$gid" -F -p "$port" -s "$size" -n "$n" \
			>/tmp/srv.log 2>&1 &
		spid=$!
		# Until it listens; its own time limit ends the wait if it never does.
		until tcp_listening "$port"; do
			if ! kill -0 "$spid" 2>/dev/null; then
				up=0 RUN_ERR="the server exited before it listened"
				break
			fi
			sleep 0.1
		done
		if [ "$up" = 1 ] && ! request reset; then
			up=0 RUN_ERR="the plugin took no reset"
		fi
		[ "$up" = 1 ] || st=1
	fi
	if [ "$role" = server ]; then
		# The client VM's cue (peer_tag): the run's tag and whether this side is up; kept
		# up until the client VM took it or could have, so that it learns this run's fate.
		printf '%s %s\n' "$tag" "$([ "$up" = 1 ] && echo up || echo down)" |
			timeout "$wait_to" busybox nc -l -p $((port + READY_OFFSET)) >/dev/null 2>&1 &
		rpid=$!
	elif [ "$role" = client ]; then
		peer=$RRXE_PEER_IP
		local pst=0
		if [ -n "$STEP_ERR" ]; then
			pst=3
		else
			peer_tag "$wait_to" $((port + READY_OFFSET)) "$tag up" || pst=$?
		fi
		case $pst in
		0) request reset || { st=1 RUN_ERR="the plugin took no reset"; } ;;
		3) st=1 RUN_ERR=$STEP_ERR ;;
		*)
			st=1
			if [ "$pst" = 2 ] && [ "$PEER_GOT" = "$tag down" ]; then
				RUN_ERR="the server VM's side failed"
			else
				STEP_ERR="the VMs are out of step: the server VM sent '${PEER_GOT:-nothing}' for '$tag'"
				RUN_ERR=$STEP_ERR
				say "$STEP_ERR"
			fi
			;;
		esac
	fi
	if [ "$st" = 0 ] && [ "$role" != server ]; then
		timeout -k 5 "$to" "$t" -d "$dev" -x "$gid" -F -p "$port" -s "$size" -n "$n" \
			"$peer" >/tmp/cli.log 2>&1 || { st=$? RUN_ERR="perftest's client failed"; }
	fi
	if [ -n "$spid" ]; then
		# A server whose client failed here would wait for it until its time limit.
		[ "$st" = 0 ] || [ "$role" = server ] || kill "$spid" 2>/dev/null || :
		if ! wait "$spid" && [ "$up" = 1 ]; then
			st=1 RUN_ERR=${RUN_ERR:-"perftest's server failed"}
		fi
	fi
	if [ -n "$rpid" ]; then
		wait "$rpid" 2>/dev/null || :
	fi
	if ! request "$4"; then
		st=1 RUN_ERR=${RUN_ERR:-"the plugin wrote no counts"}
	fi
	return $st
}

echo 0 >/proc/sys/kernel/kptr_restrict
rc=0
for p in "${providers[@]}"; do
	if ! use_provider "$p"; then
		say "$p no device - $DEV_ERR"
		rc=1
		continue
	fi
	cat /proc/kallsyms >"$out/kallsyms-$p"
	IFS=: read -r t size n <<<"${points[0]}"
	n=${n:-$iters}
	say "$p warm-up - $t $size, $((n / 10)) iterations"
	run "$t" "$size" $((n / 10)) reset || say "$p warm-up failed - $RUN_ERR"
	for pt in "${points[@]}"; do
		IFS=: read -r t size n <<<"$pt"
		n=${n:-$iters} name=$p-$t-$size
		env=("provider=$p" "test=$t" "size=$size" "iters_long=$n"
			"iters_short=$((n / 10))" "kernel=$(uname -r)" "role=$role")
		say "$name, $((n / 10)) and $n iterations"
		# Both runs whatever the first gave, so that two VMs stay in step.
		err=
		run "$t" "$size" $((n / 10)) "$name-$((n / 10))" ||
			err="$RUN_ERR - $(tail -n 1 /tmp/cli.log) / $(tail -n 1 /tmp/srv.log)"
		run "$t" "$size" "$n" "$name-$n" ||
			err=${err:-"$RUN_ERR - $(tail -n 1 /tmp/cli.log) / $(tail -n 1 /tmp/srv.log)"}
		if [ -z "$err" ]; then
			env+=("perftest=ok")
		else
			env+=("perftest=fail" "error=$err")
			say "$name failed - $err"
		fi
		printf '%s\n' "${env[@]}" >"$out/$name.env"
	done
done
say "done"
exit $rc
