#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A device on a veth inside a network namespace (vm-run --provider rrxe --no-device):
# `rdma link add ... type rrxe` loads the module by its alias, the device comes up with
# its GIDs, RoCEv2 sockets open in that namespace only (6.12 rxe binds only in init_net),
# and deleting the namespace removes the device and the sockets.
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"

# 4791 = 0x12B7, as /proc/net/udp{,6} print local ports.
has_4791() { grep -q ':12B7 ' /proc/net/udp /proc/net/udp6; }

[ ! -e /sys/module/rrxe ] || die "rrxe is loaded already"
netns_veth ns1 || die "veth pair into ns1"

check "no 4791 socket in init_net before" bash -c '! grep -q ":12B7 " /proc/net/udp /proc/net/udp6'
check "rdma link add inside ns1" ip netns exec ns1 rdma link add rrxe9 type rrxe netdev veth1
check "the link type loaded rrxe (alias rdma-link-rrxe)" test -d /sys/module/rrxe
check "GIDs come up" wait_gid rrxe9 10
n=$(gid_index rrxe9)
check "the GID is ::ffff:10.9.0.2" test "$(cat /sys/class/infiniband/rrxe9/ports/1/gids/"$n")" = \
	"0000:0000:0000:0000:0000:ffff:0a09:0002"
check "ns1 has the 4791 sockets" ip netns exec ns1 bash -c 'grep -q ":12B7 " /proc/net/udp && grep -q ":12B7 " /proc/net/udp6'
check "init_net still has none" bash -c '! grep -q ":12B7 " /proc/net/udp /proc/net/udp6'
check "port ACTIVE" bash -c "ibv_devinfo -d rrxe9 | grep -q PORT_ACTIVE"
check "rdma link names veth1" bash -c "ip netns exec ns1 rdma link show rrxe9/1 | grep -q 'netdev veth1'"

# A second device in init_net gets init_net's own sockets.
check "rdma link add on veth0 (init_net)" rdma link add rrxe8 type rrxe netdev veth0
check "init_net has sockets now" has_4791
check "rdma link delete rrxe8" rdma link delete rrxe8
check "init_net sockets closed with its last device" bash -c '! grep -q ":12B7 " /proc/net/udp /proc/net/udp6'

ip netns delete ns1
gone=
for _ in $(seq 100); do
	if [ ! -e /sys/class/infiniband/rrxe9 ]; then
		gone=1
		break
	fi
	sleep 0.1
done
check "deleting the namespace removes the device" test -n "$gone"
check "rdma link show is empty" bash -c '[ -z "$(rdma link show)" ]'
check "modprobe -r rrxe" rmmod rrxe
tap_done
