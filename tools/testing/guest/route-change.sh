#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A route change applies at once, though the engine keeps the route of a pass's last
# packet for its next ones (vm-run --provider rrxe --no-device). The server (rrxe9, in
# ns1 on veth1, 10.9.0.2 and fd00::1) and the client (rrxe8 on veth0, 10.9.0.1 and
# fd00::2) run an RC stream with every byte checked (rc-stream: SENDs, and RDMA READs
# answered by the server). In the middle, the client's side routes the server's address
# through a gateway on veth0 (10.9.0.3, fd00::3) whose neighbour entry names a MAC address
# nobody has, so that the server's veth drops what is sent that way (a gateway that does
# not answer would not do for IPv6, which routes around a router it cannot reach): for 3 s
# after a second's grace the server must receive nothing (its rcvd_pkts stays put; a route
# kept from before would go on delivering), then the route goes, the stream resumes within
# 10 s and completes with every byte right. Once over IPv4 and once over IPv6 GIDs. (The
# waits for data to move are scaled on the debug kernel, see run_to.)
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
# shellcheck source=tools/testing/guest/traffic-lib.sh
. "${RRXE_GUEST_DIR:-/usr/share/rrxe/guest}/traffic-lib.sh"

STREAM=/usr/libexec/rrxe/rc-stream
[ -z "${RRXE_GID_INDEX:-}" ] || die "run with --no-device"
netns_pair ns1 || die "rrxe9 and rrxe8 on a veth pair into ns1"
ip netns exec ns1 ip -6 addr add fd00::1/64 dev veth1 nodad || die "fd00::1 on veth1"
ip -6 addr add fd00::2/64 dev veth0 nodad || die "fd00::2 on veth0"
p6=fd00:0000:0000:0000:0000:0000:0000:000
wait_gid rrxe9 10 "${p6}1" && wait_gid rrxe8 10 "${p6}2" || die "no IPv6 GIDs"
for gw in 10.9.0.3 fd00::3; do
	ip neigh add $gw lladdr 02:00:00:00:00:99 dev veth0 nud permanent ||
		die "neighbour $gw"
done
tap_ok "rrxe9 in ns1 and rrxe8 on a veth pair, IPv4 and IPv6 addresses"

# received: the server device's rcvd_pkts.
received() {
	cat /sys/class/infiniband/rrxe9/ports/1/hw_counters/rcvd_pkts
}

# grows_within SECS: rcvd_pkts grows within SECS (scaled).
grows_within() {
	local n0
	n0=$(received)
	for _ in $(seq $(($(scaled "$1") * 10))); do
		[ "$(received)" = "$n0" ] || return 0
		sleep 0.1
	done
	return 1
}

# detour FAMILY SERVER_ADDR GATEWAY: the stream over FAMILY's GIDs, with SERVER_ADDR
# routed through GATEWAY for a while in the middle.
detour() {
	local fam=$1 dst=$2 gw=$3 gid prefix sp cp n1 n2 cst sst
	local port=$((20000 + RANDOM % 20000))
	if [ "$fam" = 6 ]; then prefix=${p6}; else prefix=; fi
	gid=$(gid_index rrxe9 $prefix) || { tap_fail "IPv$fam: no GID"; return; }
	if [ "$gid" != "$(gid_index rrxe8 $prefix)" ]; then
		tap_fail "IPv$fam: GID indexes differ"
		return
	fi
	ip netns exec ns1 $STREAM -d rrxe9 -g "$gid" -p $port -s 4096 -D 20 \
		>/tmp/rt-s.$fam 2>&1 &
	sp=$!
	tr_wait_listen $port $sp
	$STREAM -d rrxe8 -g "$gid" -p $port -s 4096 -D 20 10.9.0.2 >/tmp/rt-c.$fam 2>&1 &
	cp=$!
	check "IPv$fam: data moves" grows_within 10
	sleep 2
	if ! ip -$fam route add "$dst" via "$gw" dev veth0; then
		tap_fail "IPv$fam: ip route add $dst via $gw"
	else
		sleep 1
		n1=$(received)
		sleep 3
		n2=$(received)
		check "IPv$fam: nothing reaches the server through $gw ($n1, then $n2)" \
			test "$n1" = "$n2"
		ip -$fam route del "$dst" via "$gw" dev veth0
		check "IPv$fam: data moves again once the route is gone" grows_within 10
	fi
	tr_wait_pid $cp "$(scaled 120)"
	cst=$?
	tr_wait_pid $sp "$(scaled 30)"
	sst=$?
	check "IPv$fam: every byte right at the end (client $cst, server $sst)" \
		test "$cst$sst" = 00
	sed 's/^/#   /' /tmp/rt-c.$fam /tmp/rt-s.$fam | tail -4
}

detour 4 10.9.0.2/32 10.9.0.3
detour 6 fd00::1/128 fd00::3
tap_done
