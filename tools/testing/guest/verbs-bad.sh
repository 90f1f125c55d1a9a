#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Malformed input from userspace (vm-run [--provider rrxe] --append kmemleak=on): runs
# /usr/libexec/rrxe/verbs-bad against $RRXE_DEV with ARGS (see verbs-bad -h: bad CQ sizes
# and vectors, EBUSY destroys, garbage in the shared queue headers and work requests, raw
# commands, mmap abuse, killed processes), or with --storm verbs-storm (see its header:
# processes with live traffic from several threads, bad work requests, scribbled queues,
# resizes, state changes and destroys, killed in every phase). The device must refuse
# with errors and keep working (vm-run fails the run on any kernel splat), and kmemleak
# must find no new unreferenced object afterwards.
#
#   verbs-bad.sh [--storm] [ARGS...]
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
bin=/usr/libexec/rrxe/verbs-bad
if [ "${1:-}" = --storm ]; then
	bin=/usr/libexec/rrxe/verbs-storm
	shift
fi
prog=${bin##*/}
dev=${RRXE_DEV:?}

[ -x "$bin" ] || die "$bin is missing from the image"
leakcheck=1
if ! kmemleak_on; then
	echo "# kmemleak is off (boot with --append kmemleak=on): no leak check"
	leakcheck=0
fi

if [ $leakcheck = 1 ]; then
	# Warm-up, so that lasting core state is not counted.
	/usr/libexec/rrxe/verbs-bad -d "$dev" -t cq-size,busy -r 5 >/dev/null 2>&1
	kmemleak_new >/dev/null
	echo clear >/sys/kernel/debug/kmemleak
fi
slab_snapshot /tmp/slab.before
mark=$(kmsg_mark)
start=$(date +%s)
"$bin" -d "$dev" "$@" 2>&1 | sed 's/^/    /'
st=${PIPESTATUS[0]}
echo "# $prog took $(($(date +%s) - start)) s"
check "$prog $*" test "$st" = 0
dmesg_since "$mark" | head -n 60 | sed 's/^/# kernel: /'
slab_snapshot /tmp/slab.after
slab_report /tmp/slab.before /tmp/slab.after
if [ $leakcheck = 1 ]; then
	kmemleak_new >/tmp/leaks
	sed 's/^/# /' /tmp/leaks | head -n 80
	check "kmemleak: no new unreferenced object" test ! -s /tmp/leaks
fi
tap_done
