#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The port follows the netdev: eth0 down/up moves it to DOWN and back to ACTIVE, with
# IB async events that ibv_asyncwatch sees, and link_downed counts (vm-run --provider rrxe).
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
dev=${RRXE_DEV:?}

port_state() {
	ibv_devinfo -d "$dev" | awk '/state:/ && !/phys/ { print $2; exit }'
}
# wait_for TEXT FILE: up to 5 s.
wait_for() {
	for _ in $(seq 50); do
		grep -q "$1" "$2" && return 0
		sleep 0.1
	done
	return 1
}

downed0=$(rdma statistic show link "$dev/1" | tr ' ' '\n' | grep -A1 -x link_downed | tail -n 1)
ibv_asyncwatch -d "$dev" >/tmp/events 2>&1 &
watch=$!
sleep 1
ip link set eth0 down
check "port DOWN after eth0 down" bash -c "sleep 0.5; ibv_devinfo -d $dev | grep -q 'PORT_DOWN (1)'"
check "rdma link: DOWN DISABLED" bash -c "rdma link show $dev/1 | grep -q 'state DOWN physical_state DISABLED'"
check "ibv_asyncwatch saw IBV_EVENT_PORT_ERR" wait_for 'IBV_EVENT_PORT_ERR' /tmp/events
ip link set eth0 up
for _ in $(seq 50); do
	[ "$(port_state)" = PORT_ACTIVE ] && break
	sleep 0.1
done
check "port ACTIVE after eth0 up" test "$(port_state)" = PORT_ACTIVE
check "ibv_asyncwatch saw IBV_EVENT_PORT_ACTIVE" wait_for 'IBV_EVENT_PORT_ACTIVE' /tmp/events
downed1=$(rdma statistic show link "$dev/1" | tr ' ' '\n' | grep -A1 -x link_downed | tail -n 1)
check "link_downed counted ($downed0 -> $downed1)" test "$downed1" = $((downed0 + 1))
kill "$watch" 2>/dev/null
wait "$watch" 2>/dev/null
sed 's/^/# /' /tmp/events
check "port GIDs back after up" wait_gid "$dev" 10
tap_done
