#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# One stretch of the two-VM soak (tools/testing/soak boots the VMs, counts crashes and
# boots them again after one): soak runs FIRST..LAST back to back over the IPv4-mapped
# RoCE v2 GID, VM1 serving, VM2 the client.
#   vm-run --provider P1,P2 --vms 2 --timeout T tools/testing/guest/soak.sh FIRST LAST
# A run is: ibv_rc_pingpong and ibv_ud_pingpong with contents checked (-c), rping -V (RDMA
# READ and WRITE, data verified), ib_write_bw, ib_read_bw and ib_send_bw at a size that
# walks 8 B, 4 KiB, 64 KiB, 1 MiB, 8 MiB from run to run, ib_atomic_bw (FETCH_AND_ADD or
# CMP_AND_SWAP, alternating) and ib_write_lat. Every run ends with a line
#   # soak: run K: done, F failed
# that the host side reads to know how far the VMs got before a crash, and how many
# tests failed. The script exits 0 when it gets to the end, failures or not: a VM that
# finished must not make vm-run stop its peer, which may still be running its last run.
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
# shellcheck source=tools/testing/guest/traffic-lib.sh
. "${RRXE_GUEST_DIR:-/usr/share/rrxe/guest}/traffic-lib.sh"

tr_two_vms
[ $# = 2 ] || die "usage: soak.sh FIRST LAST"
first=$1 last=$2
mtu=$(tr_active_mtu "$dev")
[ -n "$mtu" ] || die "ibv_devinfo -d $dev shows no active_mtu"
secs=90
TR_CLIENT_TRIES=200

peer_retry -n 60 ping -c 1 -W 1 "$RRXE_PEER_IP" >/dev/null ||
	die "peer $RRXE_PEER_IP does not answer ping"

pp() {
	TR_SUMMARY='' TR_DESC="run $run"
	tr_pingpong $secs "$dev" "$dev" "$gid" "$server" "$@"
}

pt() {
	TR_ROWS=1 TR_LAST_SIZE='' TR_SUMMARY='' TR_DESC="run $run"
	tr_perftest $secs "$dev" "$dev" "$gid" "$server" "$@"
}

sizes=(8 4096 65536 1048576 8388608)
iters=(200 200 100 10 5)
for run in $(seq "$first" "$last"); do
	# Both VMs use the same ports for the same test, whichever run a stretch starts at;
	# a run takes 9 ports, 18 if every test runs twice.
	TR_PORT=$((18600 + (run - 1) * 20))
	failed_before=$_tap_failed
	# Each run tries every test, whatever the last run's did.
	TR_HANGS=0
	i=$(((run - 1) % ${#sizes[@]}))
	pp ibv_rc_pingpong -s 4096 -n 50
	pp ibv_ud_pingpong -s "$mtu" -n 50
	echo "# run $run: rping"
	tr_rping $secs "$server" 20 4096
	for prog in ib_write_bw ib_read_bw ib_send_bw; do
		pt $prog -s "${sizes[i]}" -n "${iters[i]}"
	done
	if [ $((run % 2)) = 1 ]; then
		pt ib_atomic_bw -A FETCH_AND_ADD -n 200
	else
		pt ib_atomic_bw -A CMP_AND_SWAP -n 200
	fi
	pt ib_write_lat -s 64 -n 100
	echo "# soak: run $run: done, $((_tap_failed - failed_before)) failed"
done
tap_done || echo "# soak: runs $first..$last: $_tap_failed tests failed"
exit 0
