#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Loopback bursts keep the per-packet rules (vm-run --provider rrxe): runs
# /usr/libexec/rrxe/burst-check (see burst-check.c: data, at path MTU 256 too, path MTU
# mismatch, one message at a time, counters) against $RRXE_DEV with the module parameter
# bursts on (bursts required) and then off (packets only), which must give the same
# outcomes. TAP output; fails if a check fails.
#
#   burst-check.sh [-t CHECK,...]
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
bin=/usr/libexec/rrxe/burst-check
param=/sys/module/rrxe/parameters/bursts
[ -x "$bin" ] || die "$bin is missing from the image"
st=0
echo 1 >$param || die "bursts on"
echo "# bursts on"
run_to 300 "$bin" -d "${RRXE_DEV:?}" -b "$@" || st=1
echo 0 >$param || die "bursts off"
echo "# bursts off: packets"
run_to 300 "$bin" -d "$RRXE_DEV" "$@" || st=1
echo 1 >$param
exit $st
