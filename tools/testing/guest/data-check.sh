#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Data integrity on the device: runs /usr/libexec/rrxe/data-check (src/data-check.c) on
# $RRXE_DEV and its IPv4-mapped RoCE v2 GID: RC SEND/RECV (with immediate, several SGEs),
# inline, RDMA WRITE (with immediate), RDMA READ, pipelines, atomics, WRITE/READ/atomic
# batches (on rrxe with its counters), UD, 0 B .. 8 MiB, every byte and every completion
# checked. Its time budget is the script's.
#   vm-run [--provider rxe|rrxe] --timeout 600 tools/testing/guest/data-check.sh [ARGS]
# ARGS go to data-check (e.g. -s SEED to repeat a run, -m MAX_SIZE).
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
bin=/usr/libexec/rrxe/data-check

[ -x "$bin" ] || die "$bin is missing from the image"
[ -n "${RRXE_GID_INDEX:-}" ] || die "no device: do not use --no-device"
budget=$((${RRXE_SCRIPT_TIMEOUT:-480} - 30))
[ $budget -ge 60 ] || budget=60
run_to $((budget + 20)) "$bin" -d "$RRXE_DEV" -g "$RRXE_GID_INDEX" -T "$budget" "$@"
