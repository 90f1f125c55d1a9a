#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The peer goes away in the middle of RC traffic (issue 14), two VMs (vm-run --vms 2): VM1
# serves, VM2 is the client and, once data moves, asks the host (lib.sh's peer_ctl) to
#   stop   stop VM1 (QEMU `stop`) for 30 s and resume it (`cont`), or to
#   reset  power VM1 off and boot it again (it runs this script again with RRXE_BOOT=2).
# The traffic, started on both sides before (phase 1; /usr/libexec/rrxe/rc-stream is
# src/rc-stream.c: SENDs with every byte checked by the server and RDMA READs checked by
# the client, over one RC QP):
#   rc-fin-long   rc-stream -u 21 -r 6: ACK timeout 21 (8.6 s), retry_cnt 6: 60 s of
#                 retries span the stop (20, 4.3 s, would leave no margin over 30 s)
#   rc-fin-short  rc-stream -u 14 -r 6: ACK timeout 14 (67 ms): 0.5 s of retries
#   rc-inf        rc-stream -u 14 (retry_cnt 7)
#   write, send   ib_write_bw -D and ib_send_bw -D (timeout 14, retry_cnt 7)
#   rping         rping -V (the RDMA CM's timeout 18, retry_cnt 7)
# retry_cnt 7 means "retry for ever" on rxe and on rrxe (Documentation/infiniband/rrxe.rst,
# Reliability: the IBTA gives that meaning to rnr_retry only), and it is what perftest,
# rping and the RDMA CM ask for. So:
#   stop   rc-fin-short must end with IBV_WC_RETRY_EXC_ERR (status 12) and destroy its QP
#          within 10 s; every other program must recover and finish, every byte right
#          (rc-fin-long must show that the stop hit it: a wait of 20 s or more);
#   reset  rc-fin-short and rc-fin-long must end with status 12 and destroy their QP
#          within 10 s; perftest leaves at the end of its -D time; rc-inf and rping must
#          still be retrying (for ever), and after kill -9 each must be gone within 10 s,
#          and no RC QP may be left.
# Then (phase 2) new connections between the two (the rebooted peer's new device) must
# work: rc-stream, rping -V and ib_write_bw. The client also sees the peer go (ping fails)
# and come back. Soft lockups and other kernel reports on either VM fail the run in vm-run.
#   vm-run [--provider rrxe|rxe,rrxe|...] --vms 2 --timeout 1500 \
#       tools/testing/guest/peer-down.sh stop|reset
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
# shellcheck source=tools/testing/guest/traffic-lib.sh
. "${RRXE_GUEST_DIR:-/usr/share/rrxe/guest}/traffic-lib.sh"

mode=${1:-}
case $mode in stop | reset) ;; *) die "usage: peer-down.sh stop|reset" ;; esac
tr_two_vms
boot=${RRXE_BOOT:-1}
stream=/usr/libexec/rrxe/rc-stream
[ -x "$stream" ] || die "$stream is missing from the image"
echo "# $mode: $RRXE_ROLE $RRXE_MY_IP ($RRXE_PROVIDER, boot $boot), peer $RRXE_PEER_IP"
# Phase 1 runs this long; every program gets its time plus a margin for the stop.
secs=90
limit=$((secs + 150))
D=/tmp/pd
mkdir -p $D

# The tests, PHASE:NAME in names, with their port and the server's and the client's command
# (@S@: the server's address).
names=()
declare -A port scmd ccmd
# add PHASE NAME PORT SERVER_CMD -- CLIENT_CMD (words, no quoting needed)
add() {
	local n=$1:$2 a s='' c='' side=s
	port[$n]=$3
	shift 3
	for a in "$@"; do
		if [ "$a" = -- ]; then side=c; continue; fi
		if [ $side = s ]; then s="$s $a"; else c="$c $a"; fi
	done
	names+=("$n")
	scmd[$n]=$s ccmd[$n]=$c
}
add 1 rc-fin-long 18701 $stream -p 18701 -u 21 -r 6 -D $secs -- \
	$stream -p 18701 -u 21 -r 6 -D $secs @S@
add 1 rc-fin-short 18702 $stream -p 18702 -u 14 -r 6 -D $secs -- \
	$stream -p 18702 -u 14 -r 6 -D $secs @S@
add 1 rc-inf 18703 $stream -p 18703 -u 14 -D $secs -- $stream -p 18703 -u 14 -D $secs @S@
add 1 write 18704 ib_write_bw -d "$dev" -x "$gid" -p 18704 -F -D $secs -s 65536 -- \
	ib_write_bw -d "$dev" -x "$gid" -p 18704 -F -D $secs -s 65536 @S@
add 1 send 18705 ib_send_bw -d "$dev" -x "$gid" -p 18705 -F -D $secs -s 65536 -- \
	ib_send_bw -d "$dev" -x "$gid" -p 18705 -F -D $secs -s 65536 @S@
add 1 rping 18706 rping -s -a @S@ -p 18706 -C 400 -S 4096 -V -- \
	rping -c -a @S@ -p 18706 -C 400 -S 4096 -V -v
add 2 rc 18711 $stream -p 18711 -D 10 -- $stream -p 18711 -D 10 @S@
add 2 rping 18712 rping -s -a @S@ -p 18712 -C 50 -S 4096 -V -- \
	rping -c -a @S@ -p 18712 -C 50 -S 4096 -V -v
add 2 write 18713 ib_write_bw -d "$dev" -x "$gid" -p 18713 -F -s 65536 -n 200 -- \
	ib_write_bw -d "$dev" -x "$gid" -p 18713 -F -s 65536 -n 200 @S@

# start PHASE: this side's programs of PHASE in the background (their PIDs in pid[]). The
# server VM then says that its servers listen by accepting a connection on port
# 18790 + PHASE; the client VM waits for that (the server VM may still be booting)
# before it starts its clients.
declare -A pid st
start() {
	local t cmd
	if [ "$RRXE_ROLE" = client ]; then
		for _ in $(seq 300); do
			timeout 2 bash -c "exec 3<>/dev/tcp/$server/$((18790 + $1))" 2>/dev/null && break
			sleep 1
		done
	fi
	for t in "${names[@]}"; do
		[ "${t%%:*}" = "$1" ] || continue
		if [ "$RRXE_ROLE" = server ]; then cmd=${scmd[$t]}; else cmd=${ccmd[$t]}; fi
		cmd=${cmd//@S@/$server}
		rm -f "$D/$t".*
		# shellcheck disable=SC2086 # words
		$cmd >"$D/$t.out" 2>&1 &
		pid[$t]=$!
	done
	[ "$RRXE_ROLE" = server ] || return 0
	for t in "${names[@]}"; do
		[ "${t%%:*}" != "$1" ] || tr_wait_listen "${port[$t]}" "${pid[$t]}"
	done
	busybox nc -l -p $((18790 + $1)) </dev/null >/dev/null 2>&1 &
}

# finish PHASE [REGEX]: waits for them (those whose name matches REGEX), each within what
# is left of the phase's limit.
finish() {
	local t end=$(($(date +%s) + limit)) s
	for t in "${names[@]}"; do
		[[ ${t%%:*} == "$1" && $t =~ ${2:-.} ]] || continue
		s=0
		tr_wait_pid "${pid[$t]}" $((end - $(date +%s) > 1 ? end - $(date +%s) : 1)) || s=$?
		st[$t]=$s
		echo "# $t: exit status $s; its output (last lines):"
		tail -n 6 "$D/$t.out" | cut -c1-160 | sed 's/^/#   | /'
	done
}

# judge NAME WANT: the side's result of test NAME: WANT ok (exit 0), retry-exc (status 12
# and exit 3: rc-stream destroyed the QP within 10 s) or ended (anything but a time limit).
judge() {
	local t=$1 want=$2 s=${st[$1]} why=''
	case $want in
	ok) [ "$s" = 0 ] || why="exit status $s" ;;
	retry-exc)
		if [ "$s" = 124 ]; then
			why="still running after $limit s"
		elif [ "$s" = 0 ]; then
			why="it succeeded"
		elif ! grep -qE 'status 12\b' "$D/$t.out"; then
			why="no 'status 12' (IBV_WC_RETRY_EXC_ERR) in its output"
		elif [ "$s" != 3 ]; then
			why="exit status $s, not 3 (destroy within 10 s)"
		fi
		;;
	ended) [ "$s" != 124 ] || why="still running after $limit s" ;;
	esac
	if [ -z "$why" ]; then
		tap_ok "$RRXE_ROLE: $t: $want (exit status $s)"
	else
		tap_fail "$RRXE_ROLE: $t: want $want: $why"
		tr_counters
	fi
}


# second_round: both sides' second programs (new connections after the stop or reset)
# must pass; then the TAP summary.
second_round() {
	start 2
	finish 2
	for t in "${names[@]}"; do
		[ "${t%%:*}" = 2 ] && judge "$t" ok
	done
	tap_done
}
if [ "$RRXE_ROLE" = server ]; then
	if [ "$boot" = 1 ]; then
		start 1
		finish 1
		# (With reset, this boot ends here.) rc-fin-short lost its client, the others
		# must have finished well.
		for t in "${names[@]}"; do
			case $t in
			1:rc-fin-short) judge "$t" ended ;;
			1:*) judge "$t" ok ;;
			esac
		done
	fi
	second_round
	exit
fi

# The client.
peer_retry -n 120 ping -c 1 -W 1 "$server" >/dev/null || die "peer $server does not answer ping"
start 1
# Every program connected (one RC QP each in RTS: their output is buffered), then data
# moves a little longer.
want=$(printf '%s\n' "${names[@]}" | grep -c '^1:')
for _ in $(seq 240); do
	n=$(rdma res show qp | grep -c 'type RC state RTS')
	[ "$n" -lt "$want" ] || break
	sleep 0.5
done
check "phase 1: $n of $want programs connected" [ "$n" = "$want" ]
sleep 5
if [ "$mode" = stop ]; then
	peer_ctl stop-peer 30
else
	peer_ctl reset-peer
fi
gone=$(date +%s)
ok=''
# vm-run acts within a second or two (a reply within one is no proof of anything).
for _ in $(seq 30); do
	ping -c 1 -W 1 "$server" >/dev/null 2>&1 || { ok=1; break; }
	sleep 0.5
done
check "the peer went silent after '$mode' was asked ($(($(date +%s) - gone)) s)" [ -n "$ok" ]
gone=$(date +%s)
if peer_retry -n 300 ping -c 1 -W 1 "$server" >/dev/null; then
	tap_ok "the peer answers ping again after $(($(date +%s) - gone)) s"
else
	tap_fail "the peer does not answer ping 300 s after $mode"
fi
if [ "$mode" = stop ]; then
	finish 1
	for t in "${names[@]}"; do
		case $t in
		1:rc-fin-short) judge "$t" retry-exc ;;
		1:*) judge "$t" ok ;;
		esac
	done
	# The stop must have fallen in the middle of the stream.
	w=$(sed -n 's/.*longest wait for a completion \([0-9]*\)\..*/\1/p' "$D/1:rc-fin-long.out")
	check "rc-fin-long waited ${w:-?} s for a completion: the stop hit it (>= 20 s)" \
		[ "${w:-0}" -ge 20 ]
else
	# perftest -D leaves at the end of its time whatever its QP does.
	finish 1 'rc-fin|write|send'
	for t in "${names[@]}"; do
		case $t in
		1:rc-fin-*) judge "$t" retry-exc ;;
		1:write | 1:send) judge "$t" ended ;;
		1:*)
			if ! kill -0 "${pid[$t]}" 2>/dev/null; then
				wait "${pid[$t]}"
				tap_fail "$t: ended (status $?), but retry_cnt 7 retries for ever"
				continue
			fi
			tap_ok "$t: still retrying (retry_cnt 7: for ever)"
			kill -9 "${pid[$t]}"
			a=$(date +%s)
			# Gone, or a zombie: the kernel's cleanup is over.
			for _ in $(seq 100); do
				kill -0 "${pid[$t]}" 2>/dev/null || break
				grep -q '^State:.*Z' "/proc/${pid[$t]}/status" 2>/dev/null && break
				sleep 0.1
			done
			{ wait "${pid[$t]}"; } 2>/dev/null
			check "$t: gone $(($(date +%s) - a)) s after kill -9 (within 10 s)" \
				[ $(($(date +%s) - a)) -le 10 ]
			;;
		esac
	done
	check "no RC QP left" sh -c "! rdma res show qp | grep -q 'type RC'"
fi
second_round
