#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Memory region and window rules from userspace (vm-run [--provider rxe|rrxe]): runs
# /usr/libexec/rrxe/mem-checks against $RRXE_DEV (see the checks in mem-checks.c:
# dereg_mr refused while windows are bound, zero-based type 2 windows, invalidation or
# deregistration in the middle of an RDMA WRITE), then /usr/libexec/rrxe/mr-race (no
# WRITE lands after the rereg that revoked REMOTE_WRITE returned; see mr-race.c) for
# RACE_SECS seconds (20). TAP output; fails if a check fails.
#
#   mem-checks.sh [-t CHECK,...]
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
bin=/usr/libexec/rrxe/mem-checks
race=/usr/libexec/rrxe/mr-race
[ -x "$bin" ] && [ -x "$race" ] || die "$bin or $race is missing from the image"
run_to 300 "$bin" -d "${RRXE_DEV:?}" "$@"
st=$?
run_to 120 "$race" -d "$RRXE_DEV" -s "${RACE_SECS:-20}" || st=1
exit $st
