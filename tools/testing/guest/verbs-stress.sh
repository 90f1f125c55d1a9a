#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Verbs object churn from userspace (vm-run [--provider rrxe] --append kmemleak=on):
# runs /usr/libexec/rrxe/verbs-stress against $RRXE_DEV with ARGS (see verbs-stress -h;
# e.g. `-t pd,cq -n 10000`, `--allow-unsupported`), then kmemleak must find no new
# unreferenced object. A short warm-up run of the same types comes first, so that state
# the core keeps for good (caches, xarrays) is not counted. Slab object totals before and
# after, and the caches that grew most, are printed for information.
#
#   verbs-stress.sh [VERBS-STRESS ARGS...]
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
bin=/usr/libexec/rrxe/verbs-stress
leaks=/sys/kernel/debug/kmemleak
dev=${RRXE_DEV:?}

[ -x "$bin" ] || die "$bin is missing from the image"
kmemleak_on || die "kmemleak is off: boot with --append kmemleak=on"

# The -t/--types argument, for the warm-up.
types=all
prev=
for a in "$@"; do
	case $prev in -t | --types) types=$a ;; esac
	case $a in --types=*) types=${a#--types=} ;; esac
	prev=$a
done

check "warm-up ($types, 20 each)" "$bin" -d "$dev" -t "$types" -n 20 --allow-unsupported
kmemleak_new >/dev/null
echo clear >"$leaks"
slab_snapshot /tmp/slab.before
mark=$(kmsg_mark)
start=$(date +%s)
"$bin" -d "$dev" "$@"
st=$?
echo "# verbs-stress took $(($(date +%s) - start)) s"
check "verbs-stress $*" test $st = 0
slab_snapshot /tmp/slab.after
slab_report /tmp/slab.before /tmp/slab.after
dmesg_since "$mark" | head -n 40 | sed 's/^/# kernel: /'
kmemleak_new >/tmp/leaks
sed 's/^/# /' /tmp/leaks | head -n 80
check "kmemleak: no new unreferenced object" test ! -s /tmp/leaks
tap_done
