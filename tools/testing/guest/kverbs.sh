#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Kernel verbs churn (vm-run [--provider rrxe] --append kmemleak=on): loads the test
# module kverbs_test (tools/testing/kverbs/) for $RRXE_DEV, has it create and destroy
# each object type COUNT times (PD, DMA MR through the PD flags, CQ with ib_alloc_cq and
# ib_create_cq, QP, fast-reg MR, AH, SRQ), unloads it, and kmemleak must find no new
# unreferenced object; the client must follow the device being deleted and created
# again. A type reported "error" fails; "unsupported" or "partial" (some of
# its variants unsupported) fails too, unless allowed.
#
#   kverbs.sh [--allow-unsupported | --allow TYPE,...] [TYPES [COUNT]]
#
# TYPES: comma-separated pd,dma_mr,cq,qp,mr,ah,srq or all (default); COUNT default 1000.
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
dbg=/sys/kernel/debug/kverbs_test
dev=${RRXE_DEV:?}

allow=
while [ $# -gt 0 ]; do
	case $1 in
	--allow-unsupported) allow=all; shift ;;
	--allow) allow=$2; shift 2 ;;
	*) break ;;
	esac
done
types=${1:-all}
count=${2:-1000}
allowed() { [ "$allow" = all ] || [[ ,$allow, == *,$1,* ]]; }

kmemleak_on || die "kmemleak is off: boot with --append kmemleak=on"

mark=$(kmsg_mark)
check "modprobe kverbs_test dev=$dev" modprobe kverbs_test dev="$dev"
[ -d $dbg ] || die "no $dbg"
echo "# devices the client sees:"
sed 's/^/#   /' $dbg/devices
grep -q "^$dev " $dbg/devices || die "the client does not see $dev"

# Warm-up: lasting core state (workqueues, caches) is not a leak.
echo "$types 10" >$dbg/run || die "warm-up run failed"
kmemleak_new >/dev/null
echo clear >/sys/kernel/debug/kmemleak
slab_snapshot /tmp/slab.before
start=$(date +%s)
check "run $types $count" sh -c "echo '$types $count' >$dbg/run"
echo "# took $(($(date +%s) - start)) s"
cat $dbg/results >/tmp/results
sed 's/^/# /' /tmp/results

# One check per type line ("TYPE RESULT DONE MS ms DETAIL").
while read -r type res made _ _ detail; do
	case $type in device | summary:) continue ;; esac
	case $res in
	ok) tap_ok "$type: $made created and destroyed" ;;
	unsupported | partial)
		if allowed "$type"; then
			tap_ok "$type: $res (allowed): $detail"
		else
			tap_fail "$type: $res: $detail"
		fi
		;;
	*) tap_fail "$type: $res after $made: $detail" ;;
	esac
done </tmp/results
grep -q '^summary:' /tmp/results || tap_fail "no summary line in the results"

# The client follows the device going and coming back.
if rdma link delete "$dev"; then
	check "the client dropped $dev" sh -c "! grep -q '^$dev ' $dbg/devices"
	check "$dev created again" rdma link add "$dev" type "${RRXE_PROVIDER:-rrxe}" netdev eth0
	check "the client sees $dev again" grep -q "^$dev " $dbg/devices
	check "a short run on the new $dev" sh -c "echo 'pd,cq 10' >$dbg/run"
else
	tap_fail "rdma link delete $dev"
fi
check "rmmod kverbs_test" rmmod kverbs_test
slab_snapshot /tmp/slab.after
slab_report /tmp/slab.before /tmp/slab.after
dmesg_since "$mark" | grep -v 'kverbs_test: \(pd\|dma_mr\|cq\|qp\|mr\|ah\|srq\|summary:\|device\) ' |
	grep -v 'enabling unsafe global rkey' |
	head -n 40 | sed 's/^/# kernel: /'
kmemleak_new >/tmp/leaks
sed 's/^/# /' /tmp/leaks | head -n 80
check "kmemleak: no new unreferenced object" test ! -s /tmp/leaks
tap_done
