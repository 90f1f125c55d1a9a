#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# RC streams whose responder is slow next to the retransmission timeout: in one VM, on the
# device's own GID, ib_send_bw and ib_write_bw of COUNT messages of 1 MiB each with
# perftest's timeout (-u 14, 67 ms). Every run must complete, and the requests the
# responder saw twice (duplicate_request) must stay under a quarter of the packets the
# messages need. On the debug kernel, whose stalls outlast that timeout, a responder that
# held back the acknowledge a packet in the middle of a message asked for, and a
# completer that took an expiry for the responder's silence although responses had come
# since, made the requester send its window again for nothing: 46-53 % of the packets
# twice, and 17 times rxe's timeouts (424 against 25 for the SENDs). The test kernel sees
# few.
#   vm-run [--provider rxe|rrxe] [--debug] --timeout 900 \
#       tools/testing/guest/slow-responder.sh [COUNT]
# COUNT: messages per run (default 20).
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
# shellcheck source=tools/testing/guest/traffic-lib.sh
. "${RRXE_GUEST_DIR:-/usr/share/rrxe/guest}/traffic-lib.sh"

[ -n "${RRXE_GID_INDEX:-}" ] || die "no device: do not use --no-device"
dev=$RRXE_DEV
count=${1:-20}
size=1048576
need=$((count * size / $(tr_active_mtu "$dev")))
TR_SUMMARY=sum_perftest TR_ROWS=1 TR_LAST_SIZE=$size

for prog in ib_send_bw ib_write_bw; do
	hw_snapshot /tmp/st.0 "$dev"
	tr_perftest 120 "$dev" "$dev" "$RRXE_GID_INDEX" "$RRXE_PEER_IP" $prog -s $size -n "$count"
	hw_snapshot /tmp/st.1 "$dev"
	dup=$(hw_grown /tmp/st.0 /tmp/st.1 "$dev" duplicate_request)
	# Every retry the completer started: after a timeout, or a PSN sequence NAK sent or
	# implied.
	retries=$(hw_grown /tmp/st.0 /tmp/st.1 "$dev" completer_retry_err)
	check "$prog: $dup requests seen twice ($retries retries) for $need, at most a quarter" \
		[ "$dup" -le $((need / 4)) ]
done
rdma statistic show link "$dev/1" | sed 's/^/# /'
tap_done
