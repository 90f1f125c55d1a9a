#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Traffic through the RDMA CM in one VM (server and client on the device, addressed by the
# eth0 IPv4 address): rping with data validation on both sides (-V) and every ping printed
# and counted on the client (-v), with 64 B (its default) and with 65000 B (many MTUs,
# RDMA READ and WRITE of the ping buffer); librdmacm's ucmatose (RC, several connections)
# and udaddy (UD).
#   vm-run [--provider rxe|rrxe] tools/testing/guest/rping.sh
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
# shellcheck source=tools/testing/guest/traffic-lib.sh
. "${RRXE_GUEST_DIR:-/usr/share/rrxe/guest}/traffic-lib.sh"

[ -n "${RRXE_GID_INDEX:-}" ] || die "no device: do not use --no-device"
server=$RRXE_PEER_IP
echo "# $RRXE_DEV, server address $server"

tr_rping 120 "$server" 1000 64
tr_rping 120 "$server" 50 65000
tr_run "ucmatose (1 connection, 10 x 100 B)" chk_status0 ucmatose 90 \
	ucmatose -p @PORT@ -- \
	ucmatose -s "$server" -p @PORT@
tr_run "ucmatose -c 4 -C 50 -S 4000" chk_status0 ucmatose4 90 \
	ucmatose -p @PORT@ -c 4 -C 50 -S 4000 -- \
	ucmatose -s "$server" -p @PORT@ -c 4 -C 50 -S 4000
# udaddy has a fixed port (its -p is the port space).
tr_run "udaddy -c 2 -C 50 -S 1000" chk_status0 udaddy 90 \
	udaddy -c 2 -C 50 -S 1000 -- \
	udaddy -s "$server" -c 2 -C 50 -S 1000
tap_done
