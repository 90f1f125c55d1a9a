#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# rrxe on a single CPU: there a work item can only run instead of the client, so every
# userspace doorbell runs the engine in the caller, streams too (QpShared::ring). Checks
# that the guest has one CPU online, then moves verified data (data-check: every opcode,
# 0 B .. 8 MiB, pipelines of several messages in flight) and perftest streams that post
# ahead of their completions (WRITE, READ, SEND at 2 B and 4 KiB, atomics), and that
# their doorbells all ran the engine in the caller (the counters doorbell_inline and
# doorbell_kick; on two CPUs the streams' doorbells leave it to the work item).
#   vm-run --provider rrxe --smp 1 --timeout 900 tools/testing/guest/one-cpu.sh
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
# shellcheck source=tools/testing/guest/traffic-lib.sh
. "${RRXE_GUEST_DIR:-/usr/share/rrxe/guest}/traffic-lib.sh"

[ -n "${RRXE_GID_INDEX:-}" ] || die "no device: do not use --no-device"
dev=$RRXE_DEV
gid=$RRXE_GID_INDEX
server=$RRXE_PEER_IP
c=/sys/class/infiniband/$dev/ports/1/hw_counters
[ -e "$c/doorbell_kick" ] || die "$dev has no doorbell counters (not rrxe?)"
online=$(cat /sys/devices/system/cpu/online)
[ "$online" = 0 ] || die "CPUs $online online: run with vm-run --smp 1"
tap_ok "one CPU online (CPU $online)"
TR_SUMMARY=sum_perftest

inline0=$(cat "$c/doorbell_inline") kick0=$(cat "$c/doorbell_kick")

out=/tmp/data-check.out
st=0
# data-check's own limit, scaled as run_to's (the debug kernel is slower).
run_to 300 /usr/libexec/rrxe/data-check -d "$dev" -g "$gid" -T "$(scaled 240)" \
	>"$out" 2>&1 || st=$?
oks=$(grep -c '^ok ' "$out")
bad=$(grep -c '^not ok ' "$out")
if [ "$st" = 0 ] && [ "$bad" = 0 ] && [ "$oks" -gt 0 ]; then
	tap_ok "data-check: $oks checks passed"
else
	tap_fail "data-check: status $st, $oks passed, $bad failed"
	grep -E '^not ok |^# |^Bail out|TIMEOUT' "$out" | head -n 20 | sed 's/^/#   | /'
fi

# pt ARGS...: one perftest run that must complete (its client's result row).
pt() {
	TR_ROWS=1 TR_LAST_SIZE=''
	tr_perftest 120 "$dev" "$dev" "$gid" "$server" "$@"
}
for prog in ib_write_bw ib_read_bw ib_send_bw; do
	pt "$prog" -s 2 -n 2000
	pt "$prog" -s 4096 -n 1000
done
pt ib_atomic_bw -A FETCH_AND_ADD -n 1000

inline=$(($(cat "$c/doorbell_inline") - inline0))
kick=$(($(cat "$c/doorbell_kick") - kick0))
if [ "$inline" -gt 0 ] && [ "$kick" = 0 ]; then
	tap_ok "doorbells run in the caller: $inline, left to the work item: $kick"
else
	tap_fail "doorbells run in the caller: $inline, left to the work item: $kick (want 0)"
fi
tr_counters
tap_done
