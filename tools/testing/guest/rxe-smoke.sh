#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Smoke test of a soft-RoCE device in one VM (server and client on the same device):
# ibv_devices, ibv_devinfo, ibv_rc_pingpong, ib_write_bw. Written for the C driver
# (vm-run --provider rxe tools/testing/guest/rxe-smoke.sh) and usable for rrxe as is.
set -euo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"

dev=$RRXE_DEV
[ -n "${RRXE_GID_INDEX:-}" ] || die "no device: do not use --no-device"
gid=$RRXE_GID_INDEX
server=$RRXE_PEER_IP
echo "# $dev, GID index $gid (${RRXE_GID:-?}), server address $server"

out=$(run_to 30 ibv_devices 2>&1) || die "ibv_devices failed: $out"
echo "$out"
if grep -qw "$dev" <<<"$out"; then tap_ok "ibv_devices lists $dev"; else die "ibv_devices does not list $dev"; fi

out=$(run_to 30 ibv_devinfo -d "$dev" 2>&1) || die "ibv_devinfo -d $dev failed: $out"
echo "$out"
if grep -q 'state:.*PORT_ACTIVE' <<<"$out"; then
	tap_ok "ibv_devinfo: port 1 is PORT_ACTIVE"
else
	tap_fail "ibv_devinfo: port 1 is not PORT_ACTIVE"
fi

# SERVER_CMD... -- CLIENT_CMD...: server in the background, client after it (retried while
# the server is not listening yet); both must exit 0. Logs: /tmp/$name.{server,client}.
pair() {
	local name=$1 sst=0 cst=0 spid
	shift
	local -a scmd=() ccmd=()
	while [ "$1" != -- ]; do scmd+=("$1"); shift; done
	shift
	ccmd=("$@")
	bg_start "/tmp/$name.server" run_to 120 "${scmd[@]}"
	spid=$BG_PID
	sleep 1
	peer_retry -n 20 -w "$spid" run_to 120 "${ccmd[@]}" >"/tmp/$name.client" 2>&1 || cst=$?
	bg_wait "$spid" "/tmp/$name.server" || sst=$?
	echo "  client:"
	sed 's/^/    | /' "/tmp/$name.client"
	[ $sst = 0 ] || echo "# $name server exited with status $sst"
	[ $cst = 0 ] || echo "# $name client exited with status $cst"
	[ $sst = 0 ] && [ $cst = 0 ]
}

echo "# ibv_rc_pingpong"
if pair rc ibv_rc_pingpong -d "$dev" -g "$gid" -n 100 -- \
	ibv_rc_pingpong -d "$dev" -g "$gid" -n 100 "$server"; then
	tap_ok "ibv_rc_pingpong server and client exit 0"
	if grep -q 'iters in' /tmp/rc.server && grep -q 'iters in' /tmp/rc.client; then
		tap_ok "ibv_rc_pingpong reports its iterations on both sides"
	else
		tap_fail "ibv_rc_pingpong printed no 'iters in' line"
	fi
else
	tap_fail "ibv_rc_pingpong"
fi

echo "# ib_write_bw"
if pair write_bw ib_write_bw -d "$dev" -x "$gid" -n 200 -F -- \
	ib_write_bw -d "$dev" -x "$gid" -n 200 -F "$server"; then
	tap_ok "ib_write_bw server and client exit 0"
	bw=$(perftest_bw /tmp/write_bw.client)
	if [ -n "$bw" ] && awk -v b="$bw" 'BEGIN { exit !(b > 0) }'; then
		tap_ok "ib_write_bw average bandwidth $bw MB/sec > 0"
	else
		tap_fail "ib_write_bw bandwidth '${bw}' is not > 0"
	fi
else
	tap_fail "ib_write_bw"
fi

tap_done
