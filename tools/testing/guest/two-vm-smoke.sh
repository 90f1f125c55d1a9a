#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Two-VM smoke test: vm-run --vms 2 tools/testing/guest/two-vm-smoke.sh
# Both VMs ping each other; then ibv_rc_pingpong with the server on VM1 and the client on
# VM2, across the UDP-socket link between the QEMUs.
set -euo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"

[ "${RRXE_VMS:-1}" = 2 ] || die "run with --vms 2"
[ -n "${RRXE_GID_INDEX:-}" ] || die "no device: do not use --no-device"
dev=$RRXE_DEV
gid=$RRXE_GID_INDEX
echo "# $RRXE_ROLE $RRXE_MY_IP, peer $RRXE_PEER_IP, $dev GID index $gid"

# The peer may still be booting.
if peer_retry -n 60 ping -c 1 -W 1 "$RRXE_PEER_IP" >/dev/null; then
	out=$(ping -c 3 -W 2 "$RRXE_PEER_IP" 2>&1) || :
	echo "$out" | tail -n 2
	if grep -q ' 0% packet loss' <<<"$out"; then
		tap_ok "ping $RRXE_PEER_IP"
	else
		tap_fail "ping $RRXE_PEER_IP lost packets"
	fi
else
	die "peer $RRXE_PEER_IP does not answer ping"
fi

case $RRXE_ROLE in
server)
	if out=$(run_to 150 ibv_rc_pingpong -d "$dev" -g "$gid" -n 100 2>&1); then st=0; else st=$?; fi
	;;
client)
	if out=$(peer_retry -n 60 run_to 60 ibv_rc_pingpong -d "$dev" -g "$gid" -n 100 \
		"$RRXE_PEER_IP" 2>&1); then st=0; else st=$?; fi
	;;
*) die "unknown role $RRXE_ROLE" ;;
esac
# shellcheck disable=SC2001 # indent every line
sed 's/^/    | /' <<<"$out"
if [ "$st" = 0 ] && grep -q 'iters in' <<<"$out"; then
	tap_ok "ibv_rc_pingpong $RRXE_ROLE across the VMs"
else
	tap_fail "ibv_rc_pingpong $RRXE_ROLE across the VMs (status $st)"
fi
tap_done
