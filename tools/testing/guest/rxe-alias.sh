#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# C rdma_rxe loaded beside rrxe (vm-run --provider rrxe --no-device, booted with
# slub_debug=FZPU or on the debug kernel). rxe's netdev notifier looks up the RDMA device of
# any net device that changes state by driver id (RDMA_DRIVER_RXE, which rrxe reports too,
# for the userspace provider) and writes port state, MTU and a counter into what it takes
# for its struct rxe_dev. rrxe reserves that much room in its devices; without it the
# writes land past the object (SLUB reports the red zone overwritten when the device is
# freed or validated; KASAN at once). The two drivers cannot share a namespace (UDP 4791: rxe binds in
# init_net when it loads), so the rrxe device lives on a veth inside a namespace.
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"

netns_veth ns1 || die "veth pair into ns1"
check "rdma link add rrxe9 inside ns1" ip netns exec ns1 rdma link add rrxe9 type rrxe netdev veth1
check "GIDs come up" wait_gid rrxe9 10
check "modprobe rdma_rxe (binds UDP 4791 in init_net)" modprobe rdma_rxe
for i in 1 2 3; do
	check "round $i: veth1 down" ip netns exec ns1 ip link set veth1 down
	check "round $i: veth1 up" ip netns exec ns1 ip link set veth1 up
	check "round $i: veth1 mtu 1280" ip netns exec ns1 ip link set veth1 mtu 1280
	check "round $i: veth1 mtu 1500" ip netns exec ns1 ip link set veth1 mtu 1500
	check "round $i: veth0 carrier flap (NETDEV_CHANGE on veth1)" \
		sh -c 'ip link set veth0 down && ip link set veth0 up'
done
check "rrxe9 port comes back ACTIVE" \
	peer_retry -n 20 sh -c "ibv_devinfo -d rrxe9 | grep -q PORT_ACTIVE"
check "rrxe9's active MTU follows veth1 (1024 at 1500)" \
	sh -c "ibv_devinfo -d rrxe9 | grep -q 'active_mtu:.*1024'"
# The writes may land in a neighbouring object: have SLUB check every kmalloc object's red
# zones and every free object's poison now (slub_debug=FZPU), and the device's own when
# it is freed.
for v in /sys/kernel/slab/kmalloc-*/validate; do
	echo 1 >"$v" 2>/dev/null || :
done
check "rdma link delete rrxe9" ip netns exec ns1 rdma link delete rrxe9
check "rmmod rdma_rxe" rmmod rdma_rxe
ip netns delete ns1
tap_done
