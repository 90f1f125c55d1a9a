#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Traffic between two VMs (vm-run --vms 2 --timeout 900): VM1 runs the servers, VM2 the
# clients, across the UDP-socket link between the QEMUs. Over the IPv4-mapped RoCE v2 GID:
# ibv_rc_pingpong and ibv_ud_pingpong (-c: contents checked), rping -V, ucmatose, perftest
# ib_write_bw / ib_read_bw / ib_send_bw at 8 B, 4 KiB, 64 KiB and 1 MiB, ib_write_bw at
# 8 MiB, ib_atomic_bw with FETCH_AND_ADD and CMP_AND_SWAP, ib_write_lat / ib_read_lat /
# ib_send_lat, and ib_write_bw -R. Over IPv6: with fd00::1 and fd00::2 added to eth0, their
# RoCE v2 GIDs carry ibv_rc_pingpong, ibv_ud_pingpong, ib_write_bw, ib_read_bw and rping
# (RDMA CM on the IPv6 address); the link-local GID carries ibv_rc_pingpong.
# Each VM prints the TAP lines of its own side; vm-run passes only if both pass.
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
# shellcheck source=tools/testing/guest/traffic-lib.sh
. "${RRXE_GUEST_DIR:-/usr/share/rrxe/guest}/traffic-lib.sh"

tr_two_vms
mtu=$(tr_active_mtu "$dev")
echo "# $RRXE_ROLE $RRXE_MY_IP, peer $RRXE_PEER_IP, $dev GID index $gid, active MTU ${mtu:-?}"
[ -n "$mtu" ] || die "ibv_devinfo -d $dev shows no active_mtu"
# A server waits at most this long for its client; a client retries for longer than that,
# in case its server is still stuck in the previous test.
secs=90
TR_CLIENT_TRIES=200

if peer_retry -n 60 ping -c 1 -W 1 "$RRXE_PEER_IP" >/dev/null; then
	tap_ok "ping $RRXE_PEER_IP"
else
	die "peer $RRXE_PEER_IP does not answer ping"
fi

# pp PROGRAM GID_INDEX ARGS...
pp() {
	local prog=$1 g=$2
	shift 2
	TR_SUMMARY=sum_iters
	tr_pingpong $secs "$dev" "$dev" "$g" "$server" "$prog" "$@"
}

# pt ROWS GID_INDEX PROGRAM ARGS...; time limit $secs, or $PT_SECS if set
pt() {
	local rows=$1 g=$2 prog=$3
	shift 3
	TR_ROWS=$rows TR_LAST_SIZE='' TR_SUMMARY=sum_perftest
	tr_perftest "${PT_SECS:-$secs}" "$dev" "$dev" "$g" "$server" "$prog" "$@"
}

echo "# IPv4 GID $gid"
pp ibv_rc_pingpong "$gid" -s 4096 -n 100
pp ibv_rc_pingpong "$gid" -s 65536 -n 20
pp ibv_rc_pingpong "$gid" -s 1 -n 100 -e
pp ibv_ud_pingpong "$gid" -s "$mtu" -n 100
tr_rping $secs "$server" 200 64
tr_rping $secs "$server" 20 65000
TR_SUMMARY=''
tr_run "ucmatose -c 2 -C 20 -S 2000" chk_status0 ucmatose $secs \
	ucmatose -p @PORT@ -c 2 -C 20 -S 2000 -- \
	ucmatose -s "$server" -p @PORT@ -c 2 -C 20 -S 2000
for prog in ib_write_bw ib_read_bw ib_send_bw; do
	for s in 8 4096 65536 1048576; do
		pt 1 "$gid" $prog -s $s -n 20
	done
done
# rxe: about 25 s. The client's retries outlast a server stuck here (TR_CLIENT_TRIES).
PT_SECS=180 pt 1 "$gid" ib_write_bw -s 8388608 -n 5
pt 1 "$gid" ib_atomic_bw -A FETCH_AND_ADD -n 200
pt 1 "$gid" ib_atomic_bw -A CMP_AND_SWAP -n 200
pt 1 "$gid" ib_write_lat -s 4096 -n 50
pt 1 "$gid" ib_read_lat -s 4096 -n 50
pt 1 "$gid" ib_send_lat -s 4096 -n 50
pt 1 "$gid" ib_write_bw -R -s 65536 -n 20

echo "# IPv6"
my6=fd00::$RRXE_VM_INDEX
if [ "$RRXE_ROLE" = server ]; then server6=$my6; else server6=fd00::1; fi
ip -6 addr add "$my6/64" dev eth0 nodad
p6=fd00:0000:0000:0000:0000:0000:0000:000$RRXE_VM_INDEX
g6=''
! wait_gid "$dev" 10 "$p6" || g6=$(gid_index "$dev" "$p6")
ll=$(gid_index "$dev" fe80:) || ll=''
if [ -z "$g6" ]; then
	tap_fail "no RoCE v2 GID for $my6 after 10 s"
else
	tap_ok "RoCE v2 GID index $g6 for $my6; link-local GID index ${ll:-none}"
	peer_retry -n 30 ping -c 1 -W 1 "fd00::$((3 - RRXE_VM_INDEX))" >/dev/null ||
		echo "# the peer's IPv6 address does not answer ping (yet)"
	pp ibv_rc_pingpong "$g6" -s 4096 -n 100
	pp ibv_ud_pingpong "$g6" -s "$mtu" -n 100
	pt 1 "$g6" ib_write_bw -s 65536 -n 20
	pt 1 "$g6" ib_read_bw -s 65536 -n 20
	tr_rping $secs "$server6" 100 64
fi
if [ -n "$ll" ]; then
	pp ibv_rc_pingpong "$ll" -s 4096 -n 100
else
	tap_fail "no link-local RoCE v2 GID"
fi
tap_done
