#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The rrxe device as rdma-core sees it (vm-run --provider rrxe): listed, port active on
# Ethernet, RoCE v2 GIDs for IPv4 and IPv6, active MTU following the netdev MTU, the
# netdev named by `rdma link` and by sysfs, the 15 counters.
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
dev=${RRXE_DEV:?}

check "ibv_devices lists $dev" bash -c "ibv_devices | grep -qw $dev"
ibv_devinfo -v -d "$dev" >/tmp/devinfo || die "ibv_devinfo -v -d $dev failed"
check "port state PORT_ACTIVE" grep -q 'state:.*PORT_ACTIVE (4)' /tmp/devinfo
check "link layer Ethernet" grep -q 'link_layer:.*Ethernet' /tmp/devinfo
check "active_mtu 1024 at netdev MTU 1500" grep -q 'active_mtu:.*1024 (3)' /tmp/devinfo
check "max_mtu 4096" grep -q 'max_mtu:.*4096 (5)' /tmp/devinfo
check "GID index 1 is the IPv4-mapped address" test "$(gid_index "$dev")" = 1
gid1=$(cat "/sys/class/infiniband/$dev/ports/1/gids/1")
check "GID 1 = ::ffff:$RRXE_MY_IP" test "$gid1" = "0000:0000:0000:0000:0000:ffff:0a00:000${RRXE_VM_INDEX:-1}"
check "ibv_devinfo -v shows GID 1 as RoCE v2" grep -qE 'GID\[ *1\]:.*::ffff:10\.0\.0\.[0-9]+, RoCE v2' /tmp/devinfo
check "GID 0 is the IPv6 link-local address, RoCE v2" bash -c \
	"grep -q '^fe80:' /sys/class/infiniband/$dev/ports/1/gids/0 &&
	 grep -qx 'RoCE v2' /sys/class/infiniband/$dev/ports/1/gid_attrs/types/0"
ip -6 addr add fd00::1/64 dev eth0 nodad
found=
for _ in $(seq 50); do
	if grep -qx 'fd00:0000:0000:0000:0000:0000:0000:0001' /sys/class/infiniband/"$dev"/ports/1/gids/*; then
		found=1
		break
	fi
	sleep 0.1
done
check "an added IPv6 address appears as a GID" test -n "$found"
check "rdma link show names eth0" bash -c "rdma link show $dev/1 | grep -q 'netdev eth0'"
check "rdma link show: ACTIVE LINK_UP" bash -c "rdma link show $dev/1 | grep -q 'state ACTIVE physical_state LINK_UP'"
check "sysfs device/net names eth0" test -d "/sys/class/infiniband/$dev/device/net/eth0"
check "driver id binds the rxe provider (uverbs abi 2)" bash -c \
	"grep -qx 2 /sys/class/infiniband_verbs/uverbs*/abi_version"
n=$(rdma statistic show link "$dev/1" | tr ' ' '\n' | grep -cE '^(sent_pkts|rcvd_pkts|duplicate_request|out_of_seq_request|rcvd_rnr_err|send_rnr_err|rcvd_seq_err|ack_deferred|retry_exceeded_err|retry_rnr_exceeded_err|completer_retry_err|send_err|link_downed|rdma_sends|rdma_recvs)$')
check "rdma statistic shows the 15 rxe counters" test "$n" = 15

ip link set eth0 mtu 9000
sleep 0.5
check "active_mtu 4096 at netdev MTU 9000" bash -c "ibv_devinfo -d $dev | grep -q 'active_mtu:.*4096 (5)'"
ip link set eth0 mtu 1500
sleep 0.5
check "active_mtu back to 1024 at 1500" bash -c "ibv_devinfo -d $dev | grep -q 'active_mtu:.*1024 (3)'"
check "ibv_devinfo -v port section opens through librxe" grep -q 'phys_state:.*LINK_UP (5)' /tmp/devinfo
tap_done
