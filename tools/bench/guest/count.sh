#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of `make bench-count` (tools/bench/count; vm-run --provider rxe --icount
# --plugin tbcount.so,dir=DIR --share-out DIR): for each provider and perftest point,
# perftest in loopback (server and client on one device, as `make bench`) twice, for
# ITERS/10 and for ITERS iterations, each run's client between two requests to the
# tbcount plugin (tools/bench/tbcount.c): its counts of the instructions each translation
# block ran meanwhile. The host subtracts the short run from the long one: what
# perftest's setup and teardown cost (device open, QP creation, the TCP exchange, clock
# calibration) is the same in both and goes, what is left is ITERS * 9/10 iterations.
# Before its first point, each provider runs that point once unmeasured: what the first
# use of a device costs once (the random-number pool's first draw, about 5 million
# instructions) would otherwise land in one run only.
#
# Usage: count.sh "PROVIDER..." "TEST:SIZE..." ITERS
#   TEST one of ib_write_bw, ib_read_bw, ib_send_bw or their _lat counterparts.
#
# Results in $RRXE_OUT (vm-run --share-out), per provider P and run P-TEST-SIZE-N (N the
# iterations): tbcount.P-TEST-SIZE-N (the plugin's counts), and per provider
# kallsyms-P (/proc/kallsyms with P's module loaded) and per point P-TEST-SIZE.env
# (key=value: the iterations of both runs, perftest's status; written last).
# Lines starting with "count " in the kernel log are progress for humans.
set -euo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"

read -r -a providers <<<"$1"
read -r -a points <<<"$2"
iters=$3
out=${RRXE_OUT:?run with vm-run --share-out}

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

# run TEST SIZE N LABEL: perftest's server and client for N iterations, the client
# between a reset of the counts and the request for LABEL ("reset": counted for
# nothing); fails if either side fails. The time limits are the guest's seconds, which
# here count instructions (a billion a second): about 100 us an iteration, twice the
# slowest seen.
run() {
	local t=$1 size=$2 n=$3 spid i st=0 to=$((60 + $3 / 10000))
	port=$((port + 1))
	timeout -k 5 "$to" "$t" -d "$dev" -x "$gid" -F -p "$port" -s "$size" -n "$n" \
		>/tmp/srv.log 2>&1 &
	spid=$!
	for ((i = 0; i < 300; i++)); do
		tcp_listening "$port" && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	if request reset; then
		timeout -k 5 "$to" "$t" -d "$dev" -x "$gid" -F -p "$port" -s "$size" -n "$n" \
			127.0.0.1 >/tmp/cli.log 2>&1 || st=$?
	else
		st=1
	fi
	# A server whose client failed would wait for it until its time limit.
	[ "$st" = 0 ] || kill "$spid" 2>/dev/null || :
	wait "$spid" || st=$?
	request "$4" || st=1
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
	pt=${points[0]}
	say "$p warm-up - ${pt%%:*} ${pt#*:}, $((iters / 10)) iterations"
	run "${pt%%:*}" "${pt#*:}" $((iters / 10)) reset || say "$p warm-up failed"
	for pt in "${points[@]}"; do
		t=${pt%%:*} size=${pt#*:} name=$p-${pt%%:*}-${pt#*:}
		env=("provider=$p" "test=$t" "size=$size" "iters_long=$iters"
			"iters_short=$((iters / 10))" "kernel=$(uname -r)")
		say "$name, $((iters / 10)) and $iters iterations"
		if run "$t" "$size" $((iters / 10)) "$name-$((iters / 10))" &&
			run "$t" "$size" "$iters" "$name-$iters"; then
			env+=("perftest=ok")
		else
			env+=("perftest=fail" "error=$(tail -n 1 /tmp/cli.log) / $(tail -n 1 /tmp/srv.log)")
			say "$name failed - $(tail -n 1 /tmp/cli.log)"
		fi
		printf '%s\n' "${env[@]}" >"$out/$name.env"
	done
done
say "done"
exit $rc
