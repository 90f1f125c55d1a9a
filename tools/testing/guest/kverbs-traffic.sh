#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Kernel data path (vm-run [--provider rxe|rrxe]): loads kverbs_test
# (tools/testing/kverbs/) for $RRXE_DEV and has it move data through the device with the
# kernel verbs API, as a ULP does (the "traffic" variants, listed in kverbs_test.c's
# header): SEND/RECV with and without immediate, several SGEs and sizes up to 64 KiB,
# chained bursts, CQs polled directly and through workqueue/softirq callbacks, RDMA
# WRITE (with immediate), RDMA READ and atomics through a fast-registration MR or the
# PD's unsafe global rkey, SEND_WITH_INV and LOCAL_INV (also in the middle of a WRITE,
# as dereg_mr), and UD datagrams. Each variant is one TAP line: "error" fails;
# "unsupported" is a SKIP unless --require-all. Booted with --append kmemleak=on,
# kmemleak must also find nothing new after a warm-up run.
#
#   kverbs-traffic.sh [--require-all] [ROUNDS [VARIANTS]]
#
# ROUNDS: rounds per variant (default 3); VARIANTS: "traffic" (all, the default) or a
# comma-separated list of traffic:NAME.
#
#   tools/testing/vm-run --provider rxe tools/testing/guest/kverbs-traffic.sh --require-all
#   tools/testing/vm-run --provider rrxe --append kmemleak=on tools/testing/guest/kverbs-traffic.sh
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
dbg=/sys/kernel/debug/kverbs_test
dev=${RRXE_DEV:?}

require_all=
if [ "${1:-}" = --require-all ]; then
	require_all=1
	shift
fi
rounds=${1:-3}
variants=${2:-traffic}

mark=$(kmsg_mark)
check "modprobe kverbs_test dev=$dev" modprobe kverbs_test dev="$dev"
[ -d $dbg ] || die "no $dbg"
grep -q "^$dev " $dbg/devices || die "the client does not see $dev"
sed 's/^/# /' $dbg/devices
leakcheck=
if kmemleak_on; then
	# Warm-up: lasting core state (workqueues, caches) is not a leak.
	echo "$variants 1" >$dbg/run || tap_fail "warm-up run failed"
	kmemleak_new >/dev/null
	echo clear >/sys/kernel/debug/kmemleak
	leakcheck=1
fi
start=$(date +%s)
check "run '$variants $rounds'" sh -c "echo '$variants $rounds' >$dbg/run"
echo "# took $(($(date +%s) - start)) s"
cat $dbg/results >/tmp/results
sed 's/^/# /' /tmp/results

# One check per variant line ("traffic:NAME RESULT ROUNDS MS ms DETAIL").
n=0
while read -r name res done _ _ detail; do
	case $name in traffic:*) ;; *) continue ;; esac
	n=$((n + 1))
	case $res in
	ok) tap_ok "$name: $done rounds" ;;
	unsupported)
		if [ -n "$require_all" ]; then
			tap_fail "$name: unsupported: $detail"
		else
			tap_skip "$name: unsupported: $detail"
		fi
		;;
	*) tap_fail "$name: $res after $done rounds: $detail" ;;
	esac
done </tmp/results
[ $n -gt 0 ] || tap_fail "no traffic lines in the results"
grep -q '^summary:' /tmp/results || tap_fail "no summary line in the results"
check "rmmod kverbs_test" rmmod kverbs_test
if [ -n "$leakcheck" ]; then
	kmemleak_new >/tmp/leaks
	sed 's/^/# /' /tmp/leaks | head -n 80
	check "kmemleak: no new unreferenced object" test ! -s /tmp/leaks
else
	tap_skip "kmemleak is off (boot with --append kmemleak=on)"
fi
# The driver's and the core's messages during the run (the result lines are above).
dmesg_since "$mark" | grep -v 'kverbs_test: \(traffic:\|summary:\|device \)' |
	grep -v 'enabling unsafe global rkey' | head -n 60 | sed 's/^/# kernel: /'
tap_done
