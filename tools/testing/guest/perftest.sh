#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# perftest in one VM on the device's own IPv4-mapped RoCE v2 GID: ib_write_bw, ib_read_bw,
# ib_send_bw, ib_send_lat, ib_write_lat and ib_read_lat over every size perftest's -a
# sweeps (2 B .. 8 MiB) with a few iterations each; the bandwidth tests again with 1000
# messages of 4 KiB (deep queues); ib_atomic_bw with FETCH_AND_ADD and
# CMP_AND_SWAP, ib_atomic_lat; then each of them once more connected through the RDMA CM
# (-R) at one size. A run passes if both sides exit 0 within the time limit and the client
# printed its result rows (a sweep: 23, the last for 8388608 bytes). Numbers are printed,
# never judged: speed belongs to `make bench`.
#   vm-run [--provider rxe|rrxe] --timeout 600 tools/testing/guest/perftest.sh [ITERS]
# With --vms 2 the servers run in VM1 and the clients in VM2 (as in `make conformance`).
# ITERS: iterations per size of the sweeps (default 5).
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
# shellcheck source=tools/testing/guest/traffic-lib.sh
. "${RRXE_GUEST_DIR:-/usr/share/rrxe/guest}/traffic-lib.sh"

[ -n "${RRXE_GID_INDEX:-}" ] || die "no device: do not use --no-device"
dev=$RRXE_DEV
gid=$RRXE_GID_INDEX
server=$RRXE_PEER_IP
iters=${1:-5}
echo "# $dev, GID index $gid (${RRXE_GID:-?}), server address $server"
TR_SUMMARY=sum_perftest

# pt ROWS LAST_SIZE SECS PROGRAM ARGS...
pt() {
	local rows=$1 last=$2 secs=$3 prog=$4
	shift 4
	TR_ROWS=$rows TR_LAST_SIZE=$last
	tr_perftest "$secs" "$dev" "$dev" "$gid" "$server" "$prog" "$@"
}

# Size sweeps, 2 B .. 8 MiB.
for prog in ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_read_lat ib_send_lat; do
	pt 23 8388608 300 $prog -a -n "$iters"
done
# Deep queues: 1000 messages of 4 KiB, up to 128 in flight (perftest's default TX depth).
for prog in ib_write_bw ib_read_bw ib_send_bw; do
	pt 1 4096 90 $prog -s 4096 -n 1000
done
pt 1 '' 90 ib_atomic_bw -A FETCH_AND_ADD -n 200
pt 1 '' 90 ib_atomic_bw -A CMP_AND_SWAP -n 200
pt 1 '' 90 ib_atomic_lat -A FETCH_AND_ADD -n 100
pt 1 '' 90 ib_atomic_lat -A CMP_AND_SWAP -n 100

# Connected through the RDMA CM.
for prog in ib_write_bw ib_read_bw ib_send_bw; do
	pt 1 65536 90 $prog -R -s 65536 -n 50
done
pt 1 1048576 90 ib_write_bw -R -s 1048576 -n 10
for prog in ib_write_lat ib_read_lat ib_send_lat; do
	pt 1 4096 90 $prog -R -s 4096 -n 50
done
pt 1 '' 90 ib_atomic_bw -R -A FETCH_AND_ADD -n 100
pt 1 '' 90 ib_atomic_bw -R -A CMP_AND_SWAP -n 100
tap_done
