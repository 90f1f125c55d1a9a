#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Teardown under receive (vm-run [--provider rxe|rrxe]): kverbs_race (tools/testing/kverbs/)
# destroys a QP that is receiving and completing into an armed CQ, then at once the CQ,
# ROUNDS times (default 1000). A driver that calls the CQ's handler after destroy_qp
# returned calls freed memory: boot with --append slub_debug=P (the call then jumps to
# SLUB's poison and oopses) or on the KASAN kernel (vm-run --debug), and vm-run fails the
# run on the report.
#
#   destroy-race.sh [ROUNDS]
#
#   tools/testing/vm-run --provider rrxe --append slub_debug=P tools/testing/guest/destroy-race.sh 2000
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
dbg=/sys/kernel/debug/kverbs_race
rounds=${1:-1000}

check "modprobe kverbs_race dev=$RRXE_DEV" modprobe kverbs_race dev="$RRXE_DEV"
[ -d $dbg ] || die "no $dbg"
start=$(date +%s)
check "destroy QP then CQ during receive, $rounds rounds" \
	sh -c "echo 'destroy_qp_cq $rounds' >$dbg/run"
echo "# took $(($(date +%s) - start)) s: $(cat $dbg/results)"
check "rmmod kverbs_race" rmmod kverbs_race
tap_done
