#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Lifetime stress (vm-run --provider rrxe --no-device --append kmemleak=on):
# N rdma link add/delete cycles (default 100) and M module load/add/unload cycles with
# the device present (default 20), then kmemleak must report no new leak. Slab object
# counts before and after are printed for information (they move with unrelated
# activity too).
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
cycles=${1:-100}
loads=${2:-20}
leaks=/sys/kernel/debug/kmemleak

[ -w "$leaks" ] || die "kmemleak is off: boot with --append kmemleak=on"

slab_total() { awk 'NR > 2 { n += $2 } END { print n }' /proc/slabinfo; }
add() { rdma link add rrxe0 type rrxe netdev eth0; }
del() { rdma link delete rrxe0; }
# new_leaks: what kmemleak finds since the last `clear` (two scans: an object must stay
# unreferenced across scans to be reported).
new_leaks() {
	echo scan >"$leaks"
	sleep 6
	echo scan >"$leaks"
	cat "$leaks"
}

modprobe rrxe || die "modprobe rrxe"
# Warm up: the first devices allocate lasting core state (caches, workqueues, ...).
for _ in 1 2 3; do add && del || die "warm-up cycle failed"; done
new_leaks >/dev/null
echo clear >"$leaks"
before=$(slab_total)
failed=0
for i in $(seq "$cycles"); do
	if ! add || ! wait_gid rrxe0 5 || ! del; then
		failed=$i
		break
	fi
done
check "$cycles create/delete cycles" test "$failed" = 0
check "no device left" bash -c '[ -z "$(ls /sys/class/infiniband)" ]'
echo "# slab objects: $before before, $(slab_total) after $cycles cycles"

failed=0
for i in $(seq "$loads"); do
	if ! rmmod rrxe || ! modprobe rrxe || ! add || ! wait_gid rrxe0 5; then
		failed=$i
		break
	fi
done
check "$loads unload/load/add cycles with the device present" test "$failed" = 0
check "rmmod with the device present" rmmod rrxe
check "the device went with the module" test ! -e /sys/class/infiniband/rrxe0
echo "# slab objects: $(slab_total) after $loads load cycles"
new_leaks >/tmp/leaks
sed 's/^/# /' /tmp/leaks | head -n 60
check "kmemleak: no new unreferenced object" test ! -s /tmp/leaks
tap_done
