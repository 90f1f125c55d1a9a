#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A UC responder's receive WQE after a SEND it drops for length, or cannot write (vm-run
# --provider rrxe; rxe fails it, rrxe.rst difference 23): runs /usr/libexec/rrxe/uc-recv
# against $RRXE_DEV (see uc-recv.c: without an SRQ the WQE serves the next message from
# its start; with one it completes in error and the rest of the broken message is
# dropped; an SGE beyond its MR fails the WQE as malformed). TAP output; fails if a check
# fails.
#
#   uc-recv.sh [-t CHECK,...]
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
bin=/usr/libexec/rrxe/uc-recv
[ -x "$bin" ] || die "$bin is missing from the image"
run_to 120 "$bin" -d "${RRXE_DEV:?}" "$@"
