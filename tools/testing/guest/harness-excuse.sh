#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Harness self-test (selftest-harness): traffic-lib's TR_EXCUSE. rping's exit race (exit
# status 255 and "rdma_get_cm_event: Bad file descriptor" after a complete run,
# traffic-lib.sh, exc_rping) passes, saying so, also when that line cut into the last
# ping's line (rping's stdout is written in blocks); the same status after an incomplete
# run, or another status, still fails.
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
# shellcheck source=tools/testing/guest/traffic-lib.sh
. "${RRXE_GUEST_DIR:-/usr/share/rrxe/guest}/traffic-lib.sh"
[ -n "${RRXE_GID_INDEX:-}" ] || die "no device: do not use --no-device"
server=$RRXE_PEER_IP

# racing STATUS CMD...: runs CMD, then ends as rping's cm_thread does when it loses the
# race, with STATUS.
racing() {
	local st=$1
	shift
	"$@"
	echo "rdma_get_cm_event: Bad file descriptor" >&2
	return "$st"
}

# cutting STATUS CMD...: as racing, but the line lands inside the last "rdma-ping-N: ",
# where a block of rping's stdout may end.
cutting() {
	local st=$1 out=$TR_DIR/cutting.out n
	shift
	"$@" >"$out" 2>&1
	n=$(grep -n 'rdma-ping-' "$out" | tail -n 1 | cut -d: -f1)
	awk -v n="${n:-0}" 'NR == n {
		sub(/rdma-ping-/, "rdma-pi\nrdma_get_cm_event: Bad file descriptor\nng-")
	} { print }' "$out"
	return "$st"
}

# excused DESC HOW STATUS COUNT PINGS: rping -C PINGS, checked for COUNT pings, its client
# ending as HOW (racing or cutting) with STATUS; prints the TAP line.
excused() {
	TR_COUNT=$4 TR_SUMMARY=''
	TR_EXCUSE=exc_rping tr_run "$1" chk_rping "excuse$3_$5" 60 \
		rping -s -a "$server" -p @PORT@ -C "$5" -V -- \
		"$2" "$3" rping -c -a "$server" -p @PORT@ -C "$5" -v -V
}

for how in racing cutting; do
	excused "the race after 10 of 10 pings ($how)" $how 255 10 10 >"$TR_DIR/excuse.tap"
	cat "$TR_DIR/excuse.tap"
	grep -qE "^ok .*client status 255: rping's exit race" "$TR_DIR/excuse.tap" ||
		tap_fail "a complete run that lost rping's exit race was not excused ($how)"
done
TR_EXPECT_FAIL="the race after 5 of 10 pings" excused "an incomplete run" racing 255 10 5
TR_EXPECT_FAIL="status 1 is not the race" excused "another status" racing 1 10 10
tap_done
