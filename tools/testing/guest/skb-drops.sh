#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Delivered packets are consumed, dropped ones dropped. The kernel's drop tracepoint
# (skb:kfree_skb, what dropwatch and drop_monitor report) must see from the driver only
# the packets that its drop counters count, and skb:consume_skb the packets it delivered.
# PROV8 (veth0) and PROV9 (veth1, namespace ns1) run clean perftest streams with both
# events traced: RC WRITE, READ, SEND, FETCH_AND_ADD and UD SEND between the namespaces
# (the wire path: ICRC, UDP tunnel), and an RC WRITE from PROV8 to itself (the loopback
# shortcut). The driver's kfree_skb events (location in the module) must not exceed the
# rise of its drop counters, and its consume_skb events must account for the packets it
# received (rcvd_pkts) in skbs (not those left in a loopback peer's box: ack_direct,
# resp_direct, req_direct) and did not drop, all but 1 % (a few acknowledges are still
# queued when perftest destroys its QPs). Then 200 datagrams with a bad ICRC, sent from ns1 to
# PROV8's address and port 4791, must each be counted as a drop and traced as kfree_skb.
# The C rdma_rxe frees every packet it receives with kfree_skb and counts no drop (the 200
# bad datagrams: 200 kfree_skb, no counter); its UDP socket is in the initial namespace
# only, so its clean streams here do not connect.
#   vm-run --provider rrxe --no-device tools/testing/guest/skb-drops.sh
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
# shellcheck source=tools/testing/guest/traffic-lib.sh
. "${RRXE_GUEST_DIR:-/usr/share/rrxe/guest}/traffic-lib.sh"

[ -z "${RRXE_GID_INDEX:-}" ] || die "run with --no-device"
prov=${RRXE_PROVIDER:-rrxe}
a=${prov}8
b=${prov}9
module=$([ "$prov" = rxe ] && echo rdma_rxe || echo rrxe)
netns_pair ns1 "$prov" || die "$b and $a on a veth pair into ns1"
# The counters of packets the driver drops (rrxe's; rxe has none of them).
drop_counters="duplicate_request out_of_seq_request send_rnr_err rcvd_bad_type_state
rcvd_bad_addr rcvd_bad_pkey rcvd_bad_qkey rcvd_bad_resp_psn rcvd_bad_pkt rcvd_queue_full
rcvd_req_dropped"

# grown NAME...: how much the sum of both devices' counters NAME grew from /tmp/sd.0 to
# /tmp/sd.1 (hw_snapshot; a counter the provider lacks counts 0).
grown() {
	hw_grown /tmp/sd.0 /tmp/sd.1 "$a $b" "$@"
}

t=/sys/kernel/tracing
mounted $t || mount -t tracefs tracefs $t || die "cannot mount tracefs on $t"
[ -d $t/events/skb/kfree_skb ] || die "no skb:kfree_skb event in this kernel"
echo 0 >$t/tracing_on
echo 8192 >$t/buffer_size_kb
: >$t/trace
echo 1 >$t/events/skb/kfree_skb/enable
echo 1 >$t/events/skb/consume_skb/enable

# events EVENT: how many EVENT (kfree_skb or consume_skb) events came from the module.
events() {
	grep -c " $1: .*\[$module\]" $t/trace
}

# pt SERVER_DEV SERVER_ADDRESS PROGRAM ARGS...: one perftest run, the client on $a.
pt() {
	local sdev=$1 server=$2 prog=$3
	shift 3
	TR_SX=()
	[ "$sdev" = "$a" ] || TR_SX=(ip netns exec ns1)
	TR_ROWS=1 TR_DESC="$a to $sdev"
	tr_perftest 120 "$sdev" "$a" 1 "$server" "$prog" "$@"
}

hw_snapshot /tmp/sd.0 $a $b
echo 1 >$t/tracing_on
pt $b 10.9.0.2 ib_write_bw -s 64 -n 2000
pt $b 10.9.0.2 ib_read_bw -s 64 -n 2000
pt $b 10.9.0.2 ib_send_bw -s 64 -n 2000
pt $b 10.9.0.2 ib_atomic_bw -A FETCH_AND_ADD -n 500
# UD has no flow control: a client that outruns its server fills the QP's queue of
# received packets, whose excess is dropped (RX_QUEUE_MAX, 512), and perftest's server
# then waits for the lost messages until it times out (2026-12-02, CI beside a conformance
# run: 995 of 2,000 dropped). 500 messages fit in that queue.
pt $b 10.9.0.2 ib_send_bw -c UD -s 64 -n 500
pt $a 10.9.0.1 ib_write_bw -s 64 -n 2000
echo 0 >$t/tracing_on
hw_snapshot /tmp/sd.1 $a $b
drops=$(grown $drop_counters)
rcvd=$(grown rcvd_pkts)
# Packets between two QPs of one device that went without an skb (rrxe's boxes).
direct=$(grown ack_direct resp_direct req_direct)
lost=$(awk '/^overrun:/ { s += $2 } END { print s + 0 }' $t/per_cpu/cpu*/stats)
freed=$(events kfree_skb)
consumed=$(events consume_skb)
echo "# rcvd_pkts +$rcvd (+$direct without an skb), drop counters +$drops; events from" \
	"$module: kfree_skb $freed, consume_skb $consumed"
# Where the driver dropped packets, the 5 places that dropped most.
grep " kfree_skb: .*\[$module\]" $t/trace | sed -n 's/.*location=//p' |
	sort | uniq -c | sort -rn | head -n 5 | sed 's/^ *\([0-9]*\) /#   \1 dropped at /'
check "the trace lost no event (overruns: $lost)" [ "$lost" -eq 0 ]
check "packets received: $rcvd (at least 10,000)" [ "$rcvd" -ge 10000 ]
check "kfree_skb from $module ($freed) only for the packets its drop counters count (+$drops)" \
	[ "$freed" -le "$drops" ]
skbs=$((rcvd - direct - drops))
check "consume_skb from $module ($consumed) for the $skbs packets received in skbs and not dropped, all but 1 %" \
	[ $((consumed * 100)) -ge $((skbs * 99)) ]

# Packets it must drop: 64 bytes of "0" characters (a bad ICRC) from ns1 to $a.
: >$t/trace
hw_snapshot /tmp/sd.0 $a $b
echo 1 >$t/tracing_on
ip netns exec ns1 bash -c 'for _ in $(seq 200); do printf "%064d" 0 >/dev/udp/10.9.0.1/4791; done'
sleep 1
echo 0 >$t/tracing_on
hw_snapshot /tmp/sd.1 $a $b
drops=$(grown $drop_counters)
freed=$(events kfree_skb)
consumed=$(events consume_skb)
echo "# 200 bad datagrams: drop counters +$drops; events from $module: kfree_skb $freed, consume_skb $consumed"
check "200 bad datagrams counted as drops (+$drops)" [ "$drops" -ge 200 ]
check "each traced as kfree_skb from $module ($freed)" [ "$freed" -eq "$drops" ]
check "none as consume_skb ($consumed)" [ "$consumed" -eq 0 ]
echo 0 >$t/events/skb/kfree_skb/enable
echo 0 >$t/events/skb/consume_skb/enable
: >$t/trace
tap_done
