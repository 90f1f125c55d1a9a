#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# RC traffic over a lossy link: each side puts a netem qdisc with NETEM_ARGS (e.g.
# "loss 1%", "loss 5%", "delay 2ms reorder 25% 50%") on its interface, so each direction
# drops or reorders, then RC tests that check their data run: ibv_rc_pingpong -c
# (contents checked), rping -V (data verified), perftest write, read and send at 64 KiB
# and 1 MiB and ib_atomic_bw, printing the figures. Retransmission (NAK, timeout) must
# recover every loss; UD does not retransmit and is not run.
#   Two VMs (vm-run --vms 2): server and client on VM1 and VM2, netem on each eth0.
#   One VM (vm-run --no-device): the server in network namespace ns1 on a veth
#   (10.9.0.2, device rrxe9), the client on its peer (10.9.0.1, rrxe8), netem on both.
#     vm-run [--provider rxe|rrxe|rxe,rrxe|rrxe,rxe] --vms 2 --timeout 1200 \
#         tools/testing/guest/lossy.sh loss 5%
#     vm-run --provider rrxe --no-device --timeout 900 tools/testing/guest/lossy.sh loss 5%
# With -6 first, the tests use IPv6 GIDs (fd00::1 server, fd00::2 client) instead of IPv4.
#
# Two test programs end with a message the client sends and nobody retransmits once it
# exits: ibv_rc_pingpong's client leaves as soon as it has the server's last message, so
# if its acknowledge is lost the server retransmits to nobody and waits for ever
# (retry_cnt 7); rping's client leaves after sending the CM's DREQ, and if that is lost
# the server never learns of the disconnect. These races are the programs', so during
# the pingpongs and rpings only the server's side of the link is lossy (its data, READ
# requests and WRITEs to the client); the client's side gets its qdisc after them, and
# perftest (which meets over TCP before it tears down) runs with both sides lossy.
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
# shellcheck source=tools/testing/guest/traffic-lib.sh
. "${RRXE_GUEST_DIR:-/usr/share/rrxe/guest}/traffic-lib.sh"

ip=4
if [ "${1:-}" = -6 ]; then
	ip=6
	shift
fi
[ $# -ge 1 ] || die "usage: lossy.sh [-6] NETEM_ARGS..."
secs=240
TR_CLIENT_TRIES=200
if [ "${RRXE_VMS:-1}" = 2 ]; then
	[ -n "${RRXE_GID_INDEX:-}" ] || die "no device: do not use --no-device"
	sdev=$RRXE_DEV cdev=$RRXE_DEV gid=$RRXE_GID_INDEX
	case $RRXE_ROLE in
	server) server=$RRXE_MY_IP ;;
	client) server=$RRXE_PEER_IP ;;
	*) die "unknown role $RRXE_ROLE" ;;
	esac
	echo "# $RRXE_ROLE $RRXE_MY_IP ($RRXE_PROVIDER), peer $RRXE_PEER_IP, netem: $*"
	if peer_retry -n 60 ping -c 1 -W 1 "$RRXE_PEER_IP" >/dev/null; then
		tap_ok "ping $RRXE_PEER_IP"
	else
		die "peer $RRXE_PEER_IP does not answer ping"
	fi
else
	[ -z "${RRXE_GID_INDEX:-}" ] || die "one VM: run with --no-device"
	sdev=rrxe9 cdev=rrxe8 gid=1 server=10.9.0.2
	TR_SX=(ip netns exec ns1)
	netns_veth ns1 || die "veth pair into ns1"
	ip netns exec ns1 rdma link add $sdev type rrxe netdev veth1 || die "rdma link add $sdev"
	rdma link add $cdev type rrxe netdev veth0 || die "rdma link add $cdev"
	RRXE_DEV=$cdev
	echo "# one VM: server in ns1 ($sdev, $server), client $cdev, netem: $*"
	if peer_retry -n 30 ping -c 1 -W 1 $server >/dev/null; then
		tap_ok "ping $server"
	else
		die "$server does not answer ping"
	fi
fi

# ipv6 IF DEV ADDR [NETNS]: ADDR on IF, and the index of DEV's RoCE v2 GID for it.
ipv6() {
	local -a x=()
	local p="fd00:0000:0000:0000:0000:0000:0000:000${3##*:}"
	[ -z "${4:-}" ] || x=(ip netns exec "$4")
	"${x[@]}" ip -6 addr add "$3/64" dev "$1" nodad || die "ip -6 addr add $3 dev $1"
	wait_gid "$2" 10 "$p" || die "no RoCE v2 GID for $3 on $2 after 10 s"
	gid_index "$2" "$p"
}
# The pingpongs and perftest meet over TCP on IPv4 and use the GID for the data; rping
# resolves its RDMA CM address, so it gets the IPv6 one.
cm_server=$server
if [ $ip = 6 ]; then
	cm_server=fd00::1
	if [ "${RRXE_VMS:-1}" = 2 ]; then
		gid=$(ipv6 eth0 "$sdev" "fd00::$RRXE_VM_INDEX") || exit 1
		peer_retry -n 30 ping -c 1 -W 1 "fd00::$((3 - RRXE_VM_INDEX))" >/dev/null ||
			die "the peer's IPv6 address does not answer ping"
	else
		gid=$(ipv6 veth1 "$sdev" fd00::1 ns1) || exit 1
		cgid=$(ipv6 veth0 "$cdev" fd00::2) || exit 1
		[ "$gid" = "$cgid" ] || die "GID indexes differ: server $gid, client $cgid"
		peer_retry -n 30 ping -c 1 -W 1 $cm_server >/dev/null || die "$cm_server does not answer ping"
	fi
	tap_ok "IPv6: server $cm_server, GID index $gid"
fi

# netem SIDE: the qdisc on SIDE's interface (after ping answered: ARP and setup are clean).
netem() {
	local side=$1
	local -a run
	if [ "${RRXE_VMS:-1}" = 2 ]; then
		[ "$RRXE_ROLE" = "$1" ] || return 0
		run=(tc qdisc add dev eth0)
	elif [ "$1" = server ]; then
		run=(ip netns exec ns1 tc qdisc add dev veth1)
	else
		run=(tc qdisc add dev veth0)
	fi
	shift
	if "${run[@]}" root netem "$@"; then
		tap_ok "netem $* on the $side side: ${run[*]}"
	else
		die "${run[*]} root netem $* failed"
	fi
}

# stats: each side's qdisc and device counters, here.
stats() {
	if [ "${RRXE_VMS:-1}" = 2 ]; then
		tc -s qdisc show dev eth0
		rdma statistic show link "$sdev/1"
	else
		ip netns exec ns1 tc -s qdisc show dev veth1
		tc -s qdisc show dev veth0
		rdma statistic show link "$sdev/1"
		rdma statistic show link "$cdev/1"
	fi 2>/dev/null | sed 's/^/# /'
}

pp() {
	local prog=$1
	shift
	TR_SUMMARY=sum_iters
	tr_run "$prog $*" chk_iters "$prog$(echo "$*" | tr -c 'a-z0-9' _)" $secs \
		"${TR_SX[@]}" "$prog" -d "$sdev" -g "$gid" -p @PORT@ -c "$@" -- \
		"$prog" -d "$cdev" -g "$gid" -p @PORT@ -c "$@" "$server"
}

pt() {
	local prog=$1
	shift
	TR_ROWS=1 TR_LAST_SIZE='' TR_SUMMARY=sum_perftest
	tr_run "$prog $*" chk_perftest "$prog$(echo "$*" | tr -c 'a-zA-Z0-9' _)" $secs \
		"${TR_SX[@]}" "$prog" -d "$sdev" -x "$gid" -p @PORT@ -F "$@" -- \
		"$prog" -d "$cdev" -x "$gid" -p @PORT@ -F "$@" "$server"
}

netem server "$@"
pp ibv_rc_pingpong -s 4096 -n 100
pp ibv_rc_pingpong -s 65536 -n 20
tr_rping $secs "$cm_server" 100 64
tr_rping $secs "$cm_server" 20 65000
netem client "$@"
for prog in ib_write_bw ib_read_bw ib_send_bw; do
	pt $prog -s 65536 -n 50
	pt $prog -s 1048576 -n 5
done
pt ib_atomic_bw -A FETCH_AND_ADD -n 100
stats
tap_done
