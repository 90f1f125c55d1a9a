#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# pyverbs parity (vm-run --provider rxe [--timeout 1200] pyverbs-compare.sh [TESTS...]):
# runs rdma-core 44's pyverbs tests (Debian python3-pyverbs, from the host root on /host,
# in a chroot as pyverbs.sh does), or with --rdma-core DIR those of the rdma-core tree DIR
# on the host built in place by tools/build/rdma-core-new.sh (its own pyverbs, libibverbs
# and rxe provider), on the C rxe0, then in the same boot deletes rxe0,
# unloads rdma_rxe, loads rrxe, creates rrxe0 on eth0 and runs the same tests there.
# Prints the table "test | rxe | rrxe" (pass, fail, error, skip, xfail, xpass, missing)
# with totals, and fails if a test that passes on rxe does not pass on rrxe, unless it is
# listed in the known list (default pyverbs-known.txt next to this script; lines
# "TEST-ID-OR-FNMATCH-PATTERN REASON"). Known entries that pass on rrxe are reported, to
# be removed; an entry whose REASON starts with "timing:" (a test whose outcome depends
# on timing on either driver) is instead run again alone on rrxe0, 20 times, and
# excused only if it passes there once. TESTS are unittest names (test_pd
# test_cq.CQAPITest ...); default: the whole suite.
#
#   pyverbs-compare.sh [--rdma-core DIR] [--known FILE] [--per-run-timeout SECS] [TESTS...]
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
guest=${RRXE_GUEST_DIR:-/usr/share/rrxe/guest}
known=$guest/pyverbs-known.txt
per_run=
rdma_core=
while [ $# -gt 0 ]; do
	case $1 in
	--rdma-core) rdma_core=$2; shift 2 ;;
	--known) known=$2; shift 2 ;;
	--per-run-timeout) per_run=$2; shift 2 ;;
	*) break ;;
	esac
done
tests=$*

[ "${RRXE_PROVIDER:-}" = rxe ] || die "run with vm-run --provider rxe (rxe first, then rrxe)"
# Each suite run gets half of what is left of the script's time, less a margin for the
# switch and the table.
if [ -z "$per_run" ]; then
	per_run=$(((${RRXE_SCRIPT_TIMEOUT:-900} - 60) / 2))
	[ "$per_run" -ge 60 ] || per_run=60
fi

if [ -n "$rdma_core" ]; then
	# The chroot's /tmp is a tmpfs of its own.
	case $rdma_core in /tmp/*) die "$rdma_core: the chroot cannot see the host's /tmp" ;; esac
	pyroot_setup "/host$rdma_core/tests" || die "pyverbs chroot"
	py_env=(PYTHONPATH="$rdma_core/build/python" LD_LIBRARY_PATH="$rdma_core/build/lib")
else
	pyroot_setup || die "pyverbs chroot"
	py_env=()
fi
trap pyroot_teardown EXIT
cp "$guest/pyverbs_compare.py" "$PYROOT/tmp/tests/"
[ ! -f "$known" ] || cp "$known" "$PYROOT/tmp/known.txt"

# suite DEV GID OUT [TESTS]: runs the tests (default: the script's), output to the
# console, one result line per test in the chroot's OUT.
suite() {
	local start st which=${4:-$tests}
	start=$(date +%s)
	echo "### pyverbs on $1 (GID index $2): $which"
	run_to "$per_run" chroot "$PYROOT" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/tmp \
		LANG=C.UTF-8 "${py_env[@]}" /bin/sh -c "cd /tmp/tests && python3 pyverbs_compare.py run $3 \
		--dev $1 --gid $2 -v $which" 2>&1
	st=$?
	echo "### pyverbs on $1: status $st after $(($(date +%s) - start)) s"
	return $st
}

suite rxe0 "${RRXE_GID_INDEX:?}" /tmp/rxe.txt
rxe_st=$?
check "suite on rxe0 ran (status $rxe_st: 0 all passed, 1 some failed)" test $rxe_st -le 1

# Switch drivers in the same boot.
switched=0
if dev_add rrxe rrxe0 eth0; then
	switched=1
else
	echo "# switching to rrxe0 failed: $DEV_ERR"
fi
check "switched to rrxe0 (link delete rxe0, rmmod rdma_rxe, modprobe rrxe, link add rrxe0)" \
	test $switched = 1
if [ $switched = 1 ]; then
	suite rrxe0 "$(gid_index rrxe0)" /tmp/rrxe.txt
	rrxe_st=$?
	check "suite on rrxe0 ran (status $rrxe_st)" test $rrxe_st -le 1
fi

# A test whose outcome depends on timing on either driver (a known entry "timing: ...")
# that passed on rxe0 and not on rrxe0 runs again on rrxe0, alone and $reruns times in
# one process: if it passes once, its failure was the timing's; if it never does, it is
# a regression (pyverbs_compare.py table).
reruns=20
if [ $switched = 1 ]; then
	for tid in $(pyroot_run "python3 pyverbs_compare.py rerun /tmp/rxe.txt /tmp/rrxe.txt \
		/tmp/known.txt"); do
		suite rrxe0 "$(gid_index rrxe0)" /tmp/rrxe-again.txt \
			"$(for _ in $(seq $reruns); do printf '%s ' "$tid"; done)"
	done
fi

echo "### table (known list: $( [ -f "$known" ] && echo "$known" || echo none))"
pyroot_run "python3 pyverbs_compare.py table rxe /tmp/rxe.txt rrxe /tmp/rrxe.txt /tmp/known.txt \
	/tmp/rrxe-again.txt"
check "every test passing on rxe passes on rrxe or is known not to" test $? = 0
tap_done
