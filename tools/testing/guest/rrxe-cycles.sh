#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Lifetime stress (vm-run --provider rrxe --no-device): 100 rdma link add/delete cycles
# and 20 module load/unload cycles with a device present, then slab object counts
# compared with before: a leak of one object per cycle shows as >= 100 (or 20) objects.
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
cycles=${1:-100}
loads=${2:-20}

# slab_total: active objects of every slab cache.
slab_total() {
	# Let RCU-deferred frees (the core frees devices with kfree_rcu) finish.
	sleep 2
	sync
	echo 3 >/proc/sys/vm/drop_caches
	awk 'NR > 2 { n += $2 } END { print n }' /proc/slabinfo
}
# slab_report BEFORE_FILE: caches that grew.
slab_snapshot() { awk 'NR > 2 { print $1, $2 }' /proc/slabinfo | sort; }
slab_grown() {
	slab_snapshot | awk 'NR == FNR { b[$1] = $2; next } $2 - b[$1] > 5 { print "#   " $1 ": " b[$1] " -> " $2 }' "$1" -
}

add() { rdma link add rrxe0 type rrxe netdev eth0; }
del() { rdma link delete rrxe0; }

modprobe rrxe || die "modprobe rrxe"
# Warm up: the first devices allocate lasting core state (caches, workqueues, ...).
for _ in 1 2 3 4 5; do add && del || die "warm-up cycle failed"; done
slab_snapshot >/tmp/slab0
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
after=$(slab_total)
echo "# slab objects: $before before, $after after $cycles cycles"
slab_grown /tmp/slab0
check "slab objects grew by fewer than $cycles" test $((after - before)) -lt "$cycles"

rmmod rrxe || die "rmmod rrxe"
modprobe rrxe && add && rmmod rrxe || die "warm-up load cycle failed"
slab_snapshot >/tmp/slab1
before=$(slab_total)
failed=0
for i in $(seq "$loads"); do
	if ! modprobe rrxe || ! add || ! wait_gid rrxe0 5 || ! rmmod rrxe; then
		failed=$i
		break
	fi
	if [ -e /sys/class/infiniband/rrxe0 ] || [ -e /sys/module/rrxe ]; then
		failed=$i
		break
	fi
done
check "$loads load/add/unload cycles with the device present" test "$failed" = 0
after=$(slab_total)
echo "# slab objects: $before before, $after after $loads load cycles"
slab_grown /tmp/slab1
check "slab objects grew by fewer than $loads" test $((after - before)) -lt "$loads"
tap_done
