#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# RDMA READ retry over a lossy link, many times: ib_read_bw -s 1 MiB -n 5 (up to five
# 1024-response reads in flight) RUNS times (default 20) between two network namespaces
# of one VM whose veth pair loses 5 % of the packets each way. Lost read requests, lost
# responses and requests dropped behind a lost one all happen here within a few runs;
# every run must complete (this found a livelock, an ask across the end of a range the
# responder saved, and a bad-response error on a one-packet answer to such an ask).
#     vm-run --provider rrxe --no-device --timeout 900 tools/testing/guest/lossy-read.sh [RUNS]
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
# shellcheck source=tools/testing/guest/traffic-lib.sh
. "${RRXE_GUEST_DIR:-/usr/share/rrxe/guest}/traffic-lib.sh"

runs=${1:-20}
[ -z "${RRXE_GID_INDEX:-}" ] || die "run with --no-device"
netns_pair ns1 || die "rrxe9 and rrxe8 on a veth pair into ns1"
ip netns exec ns1 tc qdisc add dev veth1 root netem loss 5% || die "netem on veth1"
tc qdisc add dev veth0 root netem loss 5% || die "netem on veth0"
tap_ok "netem loss 5% on both ends of the veth pair"
TR_SX=(ip netns exec ns1)
RRXE_DEV=rrxe8

args=(-x 1 -F -s 1048576 -n 5)
for i in $(seq 1 "$runs"); do
	port=$((19000 + i))
	run_to 150 ip netns exec ns1 ib_read_bw -d rrxe9 -p $port "${args[@]}" >/tmp/read-s.$i 2>&1 &
	sp=$!
	tr_wait_listen $port $sp
	ib_read_bw -d rrxe8 -p $port "${args[@]}" 10.9.0.2 >/tmp/read-c.$i 2>&1 &
	cp=$!
	# A client still running at the limit: the QPs and both devices' counters then and
	# 10 s later (moving or stuck), before it is killed.
	end=$(($(date +%s) + $(scaled 120)))
	while kill -0 $cp 2>/dev/null && [ "$(date +%s)" -lt $end ]; do
		sleep 0.2
	done
	for _ in 1 2; do
		kill -0 $cp 2>/dev/null || break
		tr_snapshot $cp
		rdma statistic show link rrxe9/1 | sed 's/^/#   | /'
		sleep 10
	done
	tr_wait_pid $cp 1
	crc=$?
	wait $sp
	src=$?
	row=$(grep -a -E '^ *1048576 ' /tmp/read-c.$i)
	if [ $crc = 0 ] && [ $src = 0 ] && [ -n "$row" ]; then
		tap_ok "run $i: $row"
	else
		tap_fail "run $i: client status $crc, server status $src"
		grep -a -i -E 'fail|error|cnt=|timeout' /tmp/read-c.$i /tmp/read-s.$i | sed 's/^/#   /'
	fi
done
rdma statistic show link rrxe8/1 | sed 's/^/# /'
tap_done
