#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# RNR for ever (issue 14): /usr/libexec/rrxe/rnr-forever (src/rnr-forever.c) connects two
# RC QPs on $RRXE_DEV; the requester (rnr_retry 7: no limit) sends to a responder that never
# posts a receive, so it gets an RNR NAK after every RNR wait (40.96 ms), for SECS (default
# 60) seconds: no completion, both QPs in RTS, the RNR NAK counters growing no faster than
# the timer allows (not a busy loop), userspace responsive. Then the requester goes to ERR
# (its SENDs flushed with IBV_WC_WR_FLUSH_ERR within 10 s) and both QPs are destroyed
# within 10 s each. Two shorter runs end differently: the requester destroyed while it
# waits for its RNR timer, and the process killed (kill -9) while it retries: it must be
# gone within 10 s with its QPs, and the RNR NAKs must stop. One more run (SECS/2 s)
# waits 655 ms per RNR NAK with an ACK timeout of 16.8 ms and a retry count of 6: the
# transport timer's expiries in an RNR wait are no retries. A second process probes
# liveness twice a second throughout; soft lockups and RCU stalls fail the run in vm-run.
#   vm-run [--provider rxe|rrxe] --timeout 400 tools/testing/guest/rnr-forever.sh [SECS]
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
bin=/usr/libexec/rrxe/rnr-forever
secs=${1:-60}

[ -x "$bin" ] || die "$bin is missing from the image"
[ -n "${RRXE_GID_INDEX:-}" ] || die "no device: do not use --no-device"
dev=$RRXE_DEV

# counter NAME: the port's counter NAME as `rdma statistic` shows it.
counter() {
	rdma statistic show link "$dev/1" | tr ' ' '\n' | awk -v n="$1" 'p { print; exit } $0 == n { p = 1 }'
}

# The liveness probe: the uptime every 0.5 s; the longest gap is checked at the end.
probe() {
	while :; do
		cut -d' ' -f1 /proc/uptime
		sleep 0.5
	done >/tmp/probe
}
probe &
probe_pid=$!

# run NAME ARGS...: rnr-forever with ARGS, its TAP lines as comments, one line of ours.
run() {
	local name=$1 st=0
	shift
	run_to $((secs + 120)) "$bin" -d "$dev" -g "$RRXE_GID_INDEX" "$@" >"/tmp/$name.out" 2>&1 ||
		st=$?
	sed 's/^/# /' "/tmp/$name.out"
	check "rnr-forever $*: every check passed" [ $st = 0 ]
}

r0=$(counter rcvd_rnr_err)
run flush -t "$secs" -e flush
r1=$(counter rcvd_rnr_err)
check "rdma statistic: rcvd_rnr_err grew ($r0 -> $r1)" [ "${r1:-0}" -gt "${r0:-0}" ]
run destroy -t 10 -e destroy
# An RNR wait far longer than the ACK timeout (RNR timer code 0, 655.36 ms; timeout 12,
# 16.8 ms) with a finite retry count (6, as SMB Direct sets it): the requester is silent at
# the responder's request, so the transport timer must not count retries meanwhile. It
# did (rxe does too): the seventh expiry in the first wait failed the SENDs with
# RETRY_EXC_ERR.
if [ "${RRXE_PROVIDER:-rrxe}" = rrxe ]; then
	run long-wait -t $((secs / 2)) -r 0 -a 12 -c 6 -e flush
else
	tap_skip "rnr-forever -r 0 -a 12 -c 6: $RRXE_PROVIDER counts the retries (RETRY_EXC_ERR)"
fi

# Killed while retrying: the process, its QPs and the retries end promptly.
"$bin" -d "$dev" -g "$RRXE_GID_INDEX" -t 10 -e kill >/tmp/kill.out 2>&1 &
pid=$!
for _ in $(seq 600); do
	grep -q 'waiting to be killed' /tmp/kill.out && break
	kill -0 $pid 2>/dev/null || break
	sleep 0.1
done
sed 's/^/# /' /tmp/kill.out
# It waits only if every check passed.
if ! grep -q 'waiting to be killed' /tmp/kill.out; then
	tap_fail "rnr-forever -t 10 -e kill: failed before the kill"
else
	tap_ok "rnr-forever -t 10 -e kill: every check passed before the kill"
	rdma res show qp | grep -c "pid $pid " | sed 's/^/# QPs of the process before kill -9: /'
	start=$(cut -d' ' -f1 /proc/uptime)
	kill -9 $pid
	for _ in $(seq 100); do
		kill -0 $pid 2>/dev/null || break
		# A zombie is gone as far as the kernel's cleanup goes.
		grep -q '^State:.*Z' /proc/$pid/status 2>/dev/null && break
		sleep 0.1
	done
	took=$(awk -v a="$start" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { print b - a }')
	check "killed process gone within 10 s (${took} s)" awk -v t="$took" 'BEGIN { exit !(t < 10) }'
	wait $pid 2>/dev/null
	check "no QP of the killed process left" sh -c "! rdma res show qp | grep -q 'pid $pid '"
	a=$(counter rcvd_rnr_err)
	sleep 2
	b=$(counter rcvd_rnr_err)
	check "no RNR NAK retries after the kill (rcvd_rnr_err $a -> $b in 2 s)" [ $((b - a)) -le 1 ]
fi

kill $probe_pid
wait $probe_pid 2>/dev/null
gap=$(awk 'NR > 1 && $1 - p > g { g = $1 - p } { p = $1 } END { printf "%.2f", g }' /tmp/probe)
check "liveness probe: at most ${gap} s between two 0.5 s ticks" \
	awk -v g="$gap" 'BEGIN { exit !(g < 5) }'
rdma statistic show link "$dev/1" | sed 's/^/# /'
tap_done
