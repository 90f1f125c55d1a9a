#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Harness self-test (tools/testing/selftest-harness) of vm-run's peer requests (--vms 2).
# The server's first boot provokes a kernel WARNING through lkdtm and waits; the client
# then asks vm-run to stop it for 5 s (ping must fail, then answer again) and to reset it;
# the server's second boot (RRXE_BOOT=2) exits 0 once the client reached it, and so does
# the client. vm-run must carry both requests out, need no RRXE-EXIT from the first boot,
# and still fail the run (240) for the WARNING in that boot's log.
set -euo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"

# ready PORT: the peer accepts a TCP connection on PORT (within 300 s).
ready() {
	for _ in $(seq 300); do
		timeout 2 bash -c "exec 3<>/dev/tcp/$RRXE_PEER_IP/$1" 2>/dev/null && return 0
		sleep 1
	done
	echo "harness-peer: nothing listens on $RRXE_PEER_IP port $1"
	return 1
}

case $RRXE_ROLE:${RRXE_BOOT:-1} in
server:1)
	modprobe lkdtm
	echo WARNING >/sys/kernel/debug/provoke-crash/DIRECT
	busybox nc -l -p 18801 </dev/null >/dev/null
	echo "harness-peer: WARN provoked, waiting for the reset"
	sleep 600
	;;
server:2)
	busybox nc -l -p 18802 </dev/null >/dev/null
	echo "harness-peer: second boot reached by the client"
	;;
client:*)
	ready 18801
	peer_ctl stop-peer 5
	gone=''
	# vm-run acts within a second or two.
	for _ in $(seq 20); do
		ping -c 1 -W 1 "$RRXE_PEER_IP" >/dev/null 2>&1 || { gone=1; break; }
		sleep 0.5
	done
	[ -n "$gone" ] || { echo "harness-peer: the peer still answers ping after stop-peer"; exit 1; }
	peer_retry -n 30 ping -c 1 -W 1 "$RRXE_PEER_IP" >/dev/null
	peer_ctl reset-peer
	ready 18802
	echo "harness-peer: stop and reset seen"
	;;
esac
