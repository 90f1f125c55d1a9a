#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The ibv_*_pingpong examples of libibverbs, server and client in one VM on the device's
# own IPv4-mapped RoCE v2 GID ($RRXE_GID_INDEX), every one with -c (the receiver checks
# the buffer contents): RC, UC and SRQ at 1 B, 4 KiB and 64 KiB (RC also with -e, CQ
# events, and with a 256-byte path MTU); UD at 1 B, half the MTU and the full active MTU
# (also with -e). One TAP line per run, with its time; each side has a time limit, and
# after two runs in a row that hit it the rest are reported as failed without running.
# rrxe only (its counters): the doorbells ran the engine in the caller, an RC ping-pong's
# ACKs reached the peer without a packet, 64 KiB RC messages at path MTU 1024 woke next to
# no work item, and only a QP's peer runs its engine in the peer's system call.
#   vm-run [--provider rxe|rrxe] tools/testing/guest/pingpong.sh
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
# shellcheck source=tools/testing/guest/traffic-lib.sh
. "${RRXE_GUEST_DIR:-/usr/share/rrxe/guest}/traffic-lib.sh"

[ -n "${RRXE_GID_INDEX:-}" ] || die "no device: do not use --no-device"
dev=$RRXE_DEV
gid=$RRXE_GID_INDEX
server=$RRXE_PEER_IP
mtu=$(tr_active_mtu "$dev")
[ -n "$mtu" ] || die "ibv_devinfo -d $dev shows no active_mtu"
echo "# $dev, GID index $gid (${RRXE_GID:-?}), server address $server, active MTU $mtu"
TR_SUMMARY=sum_iters

# pp PROGRAM SECS ARGS...: PROGRAM ARGS as the server, PROGRAM ARGS SERVER as the client.
pp() {
	local prog=$1 secs=$2
	shift 2
	tr_pingpong "$secs" "$dev" "$dev" "$gid" "$server" "$prog" "$@"
}

for s in 1 4096 65536; do
	if [ $s = 65536 ]; then n=50; else n=200; fi
	pp ibv_rc_pingpong 90 -s $s -n $n
	pp ibv_rc_pingpong 90 -s $s -n $n -e
	pp ibv_uc_pingpong 90 -s $s -n $n
	pp ibv_srq_pingpong 90 -s $s -n $((n / 4))
done
pp ibv_rc_pingpong 90 -s 4096 -n 100 -m 256
# rrxe: a ping-pong's ACKs go to the connected peer's completer without a packet
# (respbox.rs): 200 iterations send 400 messages, each signalled, each acknowledged.
c=/sys/class/infiniband/$dev/ports/1/hw_counters
if [ -e "$c/work_runs" ]; then
	acks0=$(cat "$c/ack_direct" 2>/dev/null)
	sent0=$(cat "$c/sent_pkts") rcvd0=$(cat "$c/rcvd_pkts")
	pp ibv_rc_pingpong 90 -s 1 -n 200
	if [ -z "$acks0" ]; then
		tap_fail "RC 1 B, 200 iterations: $dev has no counter ack_direct"
	else
		acks=$(($(cat "$c/ack_direct") - acks0)) sent=$(($(cat "$c/sent_pkts") - sent0))
		rcvd=$(($(cat "$c/rcvd_pkts") - rcvd0))
		what="$acks of $sent packets sent ($rcvd received) were ACKs left to the peer"
		if [ "$acks" -ge 200 ] && [ "$sent" -ge 800 ] && [ "$rcvd" = "$sent" ]; then
			tap_ok "RC 1 B, 200 iterations: $what"
		else
			tap_fail "RC 1 B, 200 iterations: $what (want >= 200 of >= 800," \
				"as many received)"
		fi
	fi
fi
# rrxe: messages of 64 packets (64 KiB at path MTU 1024), each carried through in its
# doorbell's system call, wake no work item: a pass that spent its budget of 64 packets
# asked for another that found nothing (2026-11-30: 276 work item runs, 6 since; each
# iteration took 18 % longer). The retransmission timer, left to expire, runs a few.
runs0=$(cat "$c/work_runs" 2>/dev/null)
pp ibv_rc_pingpong 90 -s 65536 -n 200 -m 1024
if [ -n "$runs0" ]; then
	runs=$(($(cat "$c/work_runs") - runs0))
	if [ "$runs" -lt 120 ]; then
		tap_ok "64 KiB at MTU 1024, 200 iterations: $runs work item runs"
	else
		tap_fail "64 KiB at MTU 1024, 200 iterations: $runs work item runs (want < 120)"
	fi
fi
for s in 1 $((mtu / 2)) "$mtu"; do
	pp ibv_ud_pingpong 90 -s "$s" -n 200
done
pp ibv_ud_pingpong 90 -s "$mtu" -n 200 -e
# rrxe: the ping-pongs' doorbells ran the engine in the caller, not in a work item (its
# counters; rxe has none such).
if [ -e "$c/doorbell_inline" ]; then
	inline=$(cat "$c/doorbell_inline") kick=$(cat "$c/doorbell_kick")
	if [ "$inline" -gt "$kick" ]; then
		tap_ok "doorbells run in the caller: $inline, left to the work item: $kick"
	else
		tap_fail "doorbells run in the caller: $inline, left to the work item: $kick"
	fi
fi
# rrxe: a loopback packet has its QP's pass run in the sender's system call only if that QP
# is connected to the sender; a QP that another user's QP names as its destination gets
# its work item (stranger.c; 2026-11-30: the sender's call ran it), and a packet that it
# refuses where the packet arrives wakes nothing (2026-12-01: its work item ran).
stranger() {
	run_to 120 /usr/libexec/rrxe/stranger -d "$dev" | sed "s/^/# /"
	return "${PIPESTATUS[0]}"
}
[ -z "$runs0" ] || check "stranger: who runs the pass of a QP a local packet reaches" stranger
tap_done
