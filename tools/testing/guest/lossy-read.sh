#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# RDMA READ retry over a lossy link, many times: ib_read_bw -s 1 MiB -n 5 (up to five
# 1024-response reads in flight) RUNS times (default 20) between two network namespaces
# of one VM whose veth pair loses 5 % of the packets each way, then RUNS/2 times with a
# short timeout (-u 8), shorter than the responder takes to answer one ask, then once 300
# reads of 64 KiB, several in flight (the responses of the reads behind one that lost
# some must be kept: at most 1.5 times the responses needed may arrive).
# Lost read requests, lost responses and requests dropped behind a lost one all happen
# here within a few runs; every run must complete (this found a livelock, an ask across
# the end of a range the responder saved, a bad-response error on a one-packet answer to
# such an ask, and a responder kept answering stale asks by a requester that asked again
# at every timeout while the answers streamed in).
# With --rxe-responder, the responder is C rdma_rxe (rxe8 on veth0, in init_net, where
# rxe binds UDP 4791) and rrxe the requester (rrxe9 on veth1, inside ns1). rxe answers
# every ask it queued, each in full, where rrxe's responder drops an ask a later one
# supersedes. The debug kernel's interop-rxe-rrxe (two VMs) found rrxe asking again at
# every timeout while rxe was silent or streamed answers to reads completed already, so
# that rxe's queue of asks grew without end (ib_read_bw of 1 MiB: about 7,400 asks and
# 200,000 stale answers in 720 s). In one VM, on the test kernel as on the debug kernel,
# rxe answers too fast for that; this mode checks the same READ retry over loss against
# rxe (`make conformance`).
#     vm-run --provider rrxe --no-device --timeout 900 tools/testing/guest/lossy-read.sh \
#         [--rxe-responder] [RUNS]
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
# shellcheck source=tools/testing/guest/traffic-lib.sh
. "${RRXE_GUEST_DIR:-/usr/share/rrxe/guest}/traffic-lib.sh"

rxe_resp=
if [ "${1:-}" = --rxe-responder ]; then
	rxe_resp=1
	shift
fi
runs=${1:-20}
[[ $runs =~ ^[0-9]+$ ]] && [ $# -le 1 ] || die "usage: lossy-read.sh [--rxe-responder] [RUNS]"
[ -z "${RRXE_GID_INDEX:-}" ] || die "run with --no-device"
if [ -z "$rxe_resp" ]; then
	netns_pair ns1 || die "rrxe9 and rrxe8 on a veth pair into ns1"
	# The server (the responder) in ns1, the client (the requester) outside.
	TR_SX=(ip netns exec ns1)
	sdev=rrxe9 cdev=rrxe8 server=10.9.0.2 cx=()
else
	netns_veth ns1 || die "veth pair into ns1"
	dev_add rrxe rrxe9 veth1 ns1 || die "rrxe9 on veth1 in ns1: $DEV_ERR"
	dev_add -k rxe rxe8 veth0 || die "rxe8 on veth0 beside rrxe9: $DEV_ERR"
	peer_retry -n 30 ip netns exec ns1 ping -c 1 -W 1 10.9.0.1 >/dev/null ||
		die "10.9.0.1 does not answer ping from ns1"
	tap_ok "rrxe9 on veth1 in ns1 (the requester), rxe8 on veth0 (the responder)"
	TR_SX=()
	sdev=rxe8 cdev=rrxe9 server=10.9.0.1 cx=(ip netns exec ns1)
fi
ip netns exec ns1 tc qdisc add dev veth1 root netem loss 5% || die "netem on veth1"
tc qdisc add dev veth0 root netem loss 5% || die "netem on veth0"
tap_ok "netem loss 5% on both ends of the veth pair"
RRXE_DEV=$cdev

# read_run I [ARGS...]: run I, ib_read_bw with the common arguments and ARGS (which may
# set -s and -n again: perftest takes the last).
read_run() {
	local i=$1 port=$((19000 + $1)) sp cp crc src row size=1048576 a prev=''
	shift
	for a in "$@"; do
		[ "$prev" != -s ] || size=$a
		prev=$a
	done
	local args=(-x 1 -F -s 1048576 -n 5 "$@")
	run_to 150 "${TR_SX[@]}" ib_read_bw -d $sdev -p $port "${args[@]}" >/tmp/read-s.$i 2>&1 &
	sp=$!
	tr_wait_listen $port $sp
	"${cx[@]}" ib_read_bw -d $cdev -p $port "${args[@]}" $server >/tmp/read-c.$i 2>&1 &
	cp=$!
	# A client still running at the limit: the QPs and both devices' counters then and
	# 10 s later (moving or stuck), before it is killed.
	TR_DEVS="$cdev $sdev" TR_SNAPSHOTS=2 tr_wait_pid $cp "$(scaled 120)"
	crc=$?
	wait $sp
	src=$?
	row=$(grep -a -E "^ *$size " /tmp/read-c.$i)
	if [ $crc = 0 ] && [ $src = 0 ] && [ -n "$row" ]; then
		tap_ok "run $i${*:+ ($*)}: $row"
	else
		tap_fail "run $i${*:+ ($*)}: client status $crc, server status $src"
		grep -a -i -E 'fail|error|cnt=|timeout' /tmp/read-c.$i /tmp/read-s.$i | sed 's/^/#   /'
	fi
}

for i in $(seq 1 "$runs"); do
	read_run "$i"
done
# A timeout shorter than the responder takes to answer one ask (-u 8: 4.096 us * 2^8, one
# jiffy): a requester that asked again at every timeout while the answers to its earlier
# asks streamed in had the responder answer stale asks, a livelock that ended by chance
# (runs of 130 s) or not; what they took is counted in responses, not time: at most 4
# times what the reads need (a run with 5 % loss needs about 1.1 times).
hw_snapshot /tmp/lr.0 $cdev
for i in $(seq $((runs + 1)) $((runs + runs / 2))); do
	read_run "$i" -u 8
done
hw_snapshot /tmp/lr.1 $cdev
got=$(hw_grown /tmp/lr.0 /tmp/lr.1 $cdev rcvd_pkts)
need=$((runs / 2 * 5 * 1048576 / $(tr_active_mtu $cdev)))
check "responses of the -u 8 runs: $got for the $need the reads need, at most 4 times" \
	[ "$got" -le $((need * 4)) ]
# Reads in flight together (300 of 64 KiB, as many at a time as the requester's window of
# PSNs lets through): the responses of the reads after one that lost some arrive
# meanwhile. Dropped, they had to be asked for again once their read was the oldest, and
# the reads posted meanwhile answered behind those asks, so that with one loss every later
# read was fetched twice (two VMs: 127,000 responses for 64,000); kept, they are taken
# when their read is the oldest.
hw_snapshot /tmp/lr.2 $cdev
read_run $((runs + runs / 2 + 1)) -s 65536 -n 300
hw_snapshot /tmp/lr.3 $cdev
got=$(hw_grown /tmp/lr.2 /tmp/lr.3 $cdev rcvd_pkts)
need=$((300 * 65536 / $(tr_active_mtu $cdev)))
check "responses of 300 reads of 64 KiB: $got for $need needed, at most 1.5 times" \
	[ "$got" -le $((need * 3 / 2)) ]
rdma statistic show link $cdev/1 | sed 's/^/# /'
if [ -n "$rxe_resp" ]; then
	check "rdma link delete rxe8" rdma link delete rxe8
	check "rmmod rdma_rxe" rmmod rdma_rxe
fi
tap_done
