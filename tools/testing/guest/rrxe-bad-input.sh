#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Bad `rdma link add` input (vm-run --provider rrxe --no-device): each gets an error and
# leaves no device and no socket behind; a netdev that vanishes while a device is being
# created leaves nothing behind either. Memory is checked by kmemleak when the kernel has
# it on (boot with kmemleak=on), see rrxe-leaks.sh.
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"

no_device() { [ -z "$(ls /sys/class/infiniband)" ] && [ -z "$(rdma link show)" ]; }
no_socket() { ! grep -q ':12B7 ' /proc/net/udp /proc/net/udp6; }
# refused DESC CMD...: CMD fails, and nothing is left behind.
refused() {
	local desc=$1 out
	shift
	if out=$("$@" 2>&1); then
		tap_fail "$desc: succeeded"
		return
	fi
	echo "# $desc: $out"
	check "$desc: refused, no device left" no_device
	check "$desc: no socket left" no_socket
}

modprobe rrxe || die "modprobe rrxe"
refused "unknown netdev" rdma link add rrxe0 type rrxe netdev nosuch0
refused "non-Ethernet netdev (lo)" rdma link add rrxe0 type rrxe netdev lo
modprobe tun
check "tun0 created" ip tuntap add mode tun name tun0
ip link set tun0 up
refused "non-Ethernet netdev (tun)" rdma link add rrxe0 type rrxe netdev tun0
refused "over-long name" rdma link add "rrxe$(printf 'x%.0s' $(seq 70))" type rrxe netdev eth0
refused "name with %" rdma link add "rrxe%d" type rrxe netdev eth0

check "first device on eth0" rdma link add rrxe0 type rrxe netdev eth0
out=$(rdma link add rrxe1 type rrxe netdev eth0 2>&1)
check "second device on eth0 refused" test $? != 0
echo "# second device: $out"
check "only rrxe0 exists" bash -c '[ "$(ls /sys/class/infiniband)" = rrxe0 ]'
check "rdma link delete rrxe0" rdma link delete rrxe0
check "nothing left" no_device
check "no socket left" no_socket

# A netdev deleted while devices are being created on it: repeat with varying delays.
mark=$(kmsg_mark)
for i in $(seq 40); do
	ip link add vb0 type veth peer name vb1 || die "ip link add veth"
	ip link set vb0 up
	rdma link add "rrxe$i" type rrxe netdev vb0 >/dev/null 2>&1 &
	usleep $(((i % 8) * 1500))
	ip link delete vb0
	wait
done
gone=
for _ in $(seq 100); do
	if no_device; then
		gone=1
		break
	fi
	sleep 0.1
done
made=$(dmesg_since "$mark" | grep -c 'added on vb0')
removed=$(dmesg_since "$mark" | grep -c 'vb0 is going away')
echo "# mid-create: $made of 40 creations succeeded before their netdev went; the notifier removed $removed devices (also ones whose creation then failed)"
check "netdev vanishing mid-create (40 rounds): no device left" test -n "$gone"
check "every device created was removed with its netdev" test "$removed" -ge "$made"
check "netdev vanishing mid-create: no socket left" no_socket
check "rmmod rrxe" rmmod rrxe
tap_done
