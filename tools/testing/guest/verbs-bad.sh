#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Malformed input from userspace (vm-run [--provider rrxe] --append kmemleak=on): runs
# /usr/libexec/rrxe/verbs-bad against $RRXE_DEV with ARGS (see verbs-bad -h: bad CQ sizes
# and vectors, EBUSY destroys, garbage in the shared queue headers and work requests, raw
# commands, mmap abuse, killed processes). The device must refuse with errors and keep
# working (vm-run fails the run on any kernel splat), and kmemleak must find no new
# unreferenced object afterwards.
#
#   verbs-bad.sh [VERBS-BAD ARGS...]
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
bin=/usr/libexec/rrxe/verbs-bad
dev=${RRXE_DEV:?}

[ -x "$bin" ] || die "$bin is missing from the image"
leakcheck=1
if ! kmemleak_on; then
	echo "# kmemleak is off (boot with --append kmemleak=on): no leak check"
	leakcheck=0
fi

if [ $leakcheck = 1 ]; then
	# Warm-up, so that lasting core state is not counted.
	"$bin" -d "$dev" -t cq-size,busy -r 5 >/dev/null 2>&1
	kmemleak_new >/dev/null
	echo clear >/sys/kernel/debug/kmemleak
fi
slab_snapshot /tmp/slab.before
mark=$(kmsg_mark)
start=$(date +%s)
"$bin" -d "$dev" "$@" 2>&1 | sed 's/^/    /'
st=${PIPESTATUS[0]}
echo "# verbs-bad took $(($(date +%s) - start)) s"
check "verbs-bad $*" test "$st" = 0
dmesg_since "$mark" | head -n 60 | sed 's/^/# kernel: /'
slab_snapshot /tmp/slab.after
slab_report /tmp/slab.before /tmp/slab.after
if [ $leakcheck = 1 ]; then
	kmemleak_new >/tmp/leaks
	sed 's/^/# /' /tmp/leaks | head -n 80
	check "kmemleak: no new unreferenced object" test ! -s /tmp/leaks
fi
tap_done
