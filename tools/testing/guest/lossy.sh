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
# Two test programs end with a message nobody retransmits once its sender's peer has
# left. ibv_rc_pingpong: the server leaves once its last message is acknowledged, and if
# the acknowledge of the client's last message was lost, the client retransmits to nobody
# for ever (retry_cnt 7); the client leaves once it has the server's last message, and if
# its acknowledge is lost, the server does. rping: the client leaves after sending the
# CM's DREQ, and if that is lost the server never learns of the disconnect. These races
# are the programs' (rxe has them too), so the link is lossy in three steps:
#   - pingpongs: both sides lose (or reorder) every packet but RC acknowledges (BTH opcode
#     0x11, also NAKs), which a prio qdisc with a u32 filter sends past netem;
#   - rpings: only the server's side, every packet (its data, READ requests, WRITEs and
#     acknowledges to the client);
#   - perftest (which meets over TCP before it tears down): both sides, every packet.
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
NETEM=("$@")
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
	netns_pair ns1 || die "$sdev and $cdev on a veth pair into ns1"
	RRXE_DEV=$cdev
	echo "# one VM: server in ns1 ($sdev, $server), client $cdev, netem: $*"
	tap_ok "ping $server"
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

# here SIDE: SIDE's end of the link is in this VM.
here() {
	[ "${RRXE_VMS:-1}" != 2 ] || [ "$RRXE_ROLE" = "$1" ]
}

# on SIDE ARGS...: tc ARGS for SIDE's end of the link, with its interface for @DEV@; nothing
# if that end is not in this VM.
on() {
	local side=$1 dev
	local -a x=()
	shift
	here "$side" || return 0
	if [ "${RRXE_VMS:-1}" = 2 ]; then
		dev=eth0
	elif [ "$side" = server ]; then
		dev=veth1 x=(ip netns exec ns1)
	else
		dev=veth0
	fi
	"${x[@]}" tc "${@//@DEV@/$dev}"
}

# netem SIDE MODE: SIDE's end of the link gets a netem qdisc with the script's arguments
# for every packet (MODE all), for all but RC acknowledges (acks-spared), or none (off),
# replacing what it had. After ping answered: ARP and setup are clean.
netem() {
	local side=$1 mode=$2 st=0
	on "$side" qdisc del dev @DEV@ root 2>/dev/null
	case $mode in
	off) ;;
	all) on "$side" qdisc add dev @DEV@ root netem "${NETEM[@]}" || st=$? ;;
	acks-spared) netem_spare_acks "$side" || st=$? ;;
	*) die "netem: unknown mode $mode" ;;
	esac
	[ $st = 0 ] || die "netem ${NETEM[*]} on the $side side ($mode) failed"
	here "$side" || return 0
	if [ "$mode" = off ]; then
		tap_ok "no netem on the $side side"
	else
		tap_ok "netem ${NETEM[*]} on the $side side ($mode)"
	fi
}

# netem_spare_acks SIDE: a prio qdisc whose band 1 has netem, and filters that send RoCE v2
# RC acknowledges (UDP port 4791, BTH opcode 0x11 right after the UDP header; NAKs too) to
# band 2, without it.
netem_spare_acks() {
	# shellcheck disable=SC2046
	on "$1" qdisc add dev @DEV@ root handle 1: prio bands 2 priomap $(printf '0 %.0s' {1..16}) &&
		on "$1" qdisc add dev @DEV@ parent 1:1 handle 10: netem "${NETEM[@]}" &&
		on "$1" filter add dev @DEV@ parent 1: protocol ip prio 1 u32 \
			match ip dport 4791 0xffff match u8 0x11 0xff at 28 flowid 1:2 &&
		on "$1" filter add dev @DEV@ parent 1: protocol ipv6 prio 2 u32 \
			match ip6 dport 4791 0xffff match u8 0x11 0xff at 48 flowid 1:2
}

# spared SIDE: how many packets SIDE's prio qdisc sent past netem (its acknowledges).
spared() {
	on "$1" -s class show dev @DEV@ 2>/dev/null |
		awk '/^class prio 1:2 / { f = 1 } f && /Sent/ { print $4; exit }'
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
	TR_SUMMARY=sum_iters
	tr_pingpong $secs "$sdev" "$cdev" "$gid" "$server" "$@"
}

pt() {
	TR_ROWS=1 TR_LAST_SIZE='' TR_SUMMARY=sum_perftest
	tr_perftest $secs "$sdev" "$cdev" "$gid" "$server" "$@"
}

netem server acks-spared
netem client acks-spared
pp ibv_rc_pingpong -s 4096 -n 100
pp ibv_rc_pingpong -s 65536 -n 20
for side in server client; do
	here $side || continue
	n=$(spared $side)
	check "$side: RC acknowledges went past netem (${n:-no} packets)" [ "${n:-0}" -gt 0 ]
done
netem client off
netem server all
tr_rping $secs "$cm_server" 100 64
tr_rping $secs "$cm_server" 20 65000
netem client all
for prog in ib_write_bw ib_read_bw ib_send_bw; do
	pt $prog -s 65536 -n 50
	pt $prog -s 1048576 -n 5
done
pt ib_atomic_bw -A FETCH_AND_ADD -n 100
stats
tap_done
