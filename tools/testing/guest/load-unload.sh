#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Load and unload rrxe N times (default 20):
#   vm-run --provider rrxe --no-device tools/testing/guest/load-unload.sh [N]
# With --no-device no RDMA module is loaded at the start, so modprobe rrxe brings in its
# dependencies (ib_core, udp_tunnel, ...) and modprobe -r removes them again.
# Each round: modprobe rrxe; /sys/module/rrxe appears; the kernel log has a new line from
# rrxe (other than the out-of-tree taint notice; set RRXE_LOAD_MSG to an ERE to demand a
# particular one); rdma_rxe is not loaded; modprobe -r rrxe; /sys/module/rrxe is gone.
# (busybox modprobe -r fails when a dependency stays in use, even if rrxe itself went.)
set -euo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"

rounds=${1:-20}
msg_re=${RRXE_LOAD_MSG:-.}
[ "$RRXE_PROVIDER" = rrxe ] || die "run with --provider rrxe"
[ ! -e /sys/module/rrxe ] || die "rrxe is already loaded (run with --no-device)"
[ ! -e /sys/module/rdma_rxe ] || die "rdma_rxe is loaded"

for i in $(seq 1 "$rounds"); do
	mark=$(kmsg_mark)
	run_to 60 modprobe rrxe || die "round $i: modprobe rrxe failed"
	[ -d /sys/module/rrxe ] || die "round $i: /sys/module/rrxe missing after modprobe"
	msgs=$(dmesg_since "$mark" | grep -E '\] rrxe: ' | grep -v 'taints kernel' || :)
	if ! grep -qE "$msg_re" <<<"$msgs"; then
		dmesg_since "$mark"
		die "round $i: no load message from rrxe in the kernel log"
	fi
	[ "$i" != 1 ] || echo "# load message: $(head -n 1 <<<"$msgs")"
	[ ! -e /sys/module/rdma_rxe ] || die "round $i: rdma_rxe got loaded"
	run_to 60 modprobe -r rrxe || die "round $i: modprobe -r rrxe failed"
	[ ! -e /sys/module/rrxe ] || die "round $i: /sys/module/rrxe still there after modprobe -r"
	[ ! -e /sys/module/rdma_rxe ] || die "round $i: rdma_rxe got loaded"
done
tap_ok "$rounds rounds of modprobe rrxe / modprobe -r rrxe"
tap_ok "/sys/module/rrxe appeared and disappeared every round"
tap_ok "rrxe logged a load message every round"
tap_ok "rdma_rxe never loaded"
tap_done
