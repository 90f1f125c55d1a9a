#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Zero-copy transmit and payloads in fragments (issue 17): with the module parameter
# zero_copy on (the default), the payload of a userspace client's RC request in its
# registered memory goes by reference to its pages, in packets of 1 KiB or more to the
# device itself and of 2 KiB or more through a device that does scatter-gather: the skb
# holds the headers, the pages and a trailer with the pad and ICRC; the receiver copies
# the payload from the fragments. Between rrxe8 (veth0) and rrxe9 (veth1, in ns1), a
# veth pair (scatter-gather), and on rrxe8 alone (loopback), each with the data checked
# by the receiver and sent_zero_copy (and rcvd_paged) checked at each step:
#   default     zero_copy is on; turned off: ibv_rc_pingpong -s 65536 copied
#   fragments   frag-rx: UD SENDs of 0 to 1024 bytes whose BTH, DETH, payload and ICRC
#               arrive in skb fragments (MSG_ZEROCOPY from a UDP socket in this namespace
#               to rrxe9): each delivered as sent (rcvd_paged counts those whose payload
#               stayed in fragments); with a bit flipped in the payload, the ICRC or the
#               DETH dropped and counted; with the unchecked FECN/BECN byte changed
#               delivered; then zero_copy on again
#   IB MTU 1024 (veth MTU 1500): ibv_rc_pingpong -s 65536 between the devices copied
#               (1 KiB packets through a device); in loopback (both ends on rrxe8, whose
#               path leads back to itself) ibv_rc_pingpong -s 65536, rc-stream -s 70001
#               and data-check on one device (every RC operation, 1 to 16 SGEs at odd
#               offsets) by reference, the receive path copying from the sender's pages
#               straight to the target (data moved once: rcvd_paged counts every packet);
#               UD copied
#   IB MTU 4096 (veth MTU 9000), between the devices:
#     pingpongs ibv_rc_pingpong -s 65536 -m 4096 by reference (and rrxe9 copies the payload
#               from the sender's pages: rcvd_paged); ibv_uc_pingpong -s 65536 and
#               ibv_ud_pingpong -s 1024 copied (a UC or UD send completes when handed to the
#               stack: its client may write the buffer before the device reads it);
#               ibv_rc_pingpong -s 512 copied (below 2 KiB)
#     rc-stream rc-stream -s 70001 for 8 s (SENDs of 18 packets by reference, the 369-byte
#               last one copied); the READs it checks are answered by copy: sent_zero_copy
#               grows on the client only (a READ response never goes by reference: the
#               memory a remote key names must not be read once invalidated)
#     loss      rc-stream over 5 % loss each way: retransmissions go by reference too
#     data-check data-check between rrxe8 and rrxe9 (every RC operation, 1 to 16 SGEs at
#               odd offsets, which may need more fragments than an skb has: then copied;
#               UD); rc-stream -s 7003 (a last packet of 2907 bytes by reference: pad bytes
#               in the trailer, pages crossed)
#     dereg     zc-dereg: an RDMA WRITE's source MR deregistered and its memory unmapped
#               and reused while its packets wait 300 ms in netem: the WRITE completes with
#               the data sent (the packets hold their pages); the debug kernel's KASAN would
#               report a read of a freed page
#     killed    ib_write_bw's client killed while its packets wait in netem (its QP's
#               destroy waits for them, before its MR goes); the devices work after
#     vm-run --provider rrxe --no-device --timeout 900 tools/testing/guest/zero-copy.sh
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
# shellcheck source=tools/testing/guest/traffic-lib.sh
. "${RRXE_GUEST_DIR:-/usr/share/rrxe/guest}/traffic-lib.sh"

stream=/usr/libexec/rrxe/rc-stream
[ -x "$stream" ] || die "$stream is missing from the image"
[ -z "${RRXE_GID_INDEX:-}" ] || die "run with --no-device"
netns_pair ns1 || die "rrxe9 and rrxe8 on a veth pair into ns1"
gid=$(gid_index rrxe8) || die "no RoCE v2 GID on rrxe8"
TR_SX=(ip netns exec ns1)

# zc DEV: DEV's sent_zero_copy (-1 if it has none).
zc() {
	cat /sys/class/infiniband/"$1"/ports/1/hw_counters/sent_zero_copy 2>/dev/null || echo -1
}

# paged DEV: DEV's rcvd_paged (-1 if it has none).
paged() {
	cat /sys/class/infiniband/"$1"/ports/1/hw_counters/rcvd_paged 2>/dev/null || echo -1
}

# The server's device and the address the client connects to (rrxe9 in ns1 unless a
# caller sets them, see loopback).
PP_SERVER=rrxe9 PP_ADDR=10.9.0.2

# stream NAME SECS [ARGS...]: rc-stream ARGS for SECS, its server on PP_SERVER, checked
#   (status 0 on both sides: every byte right, the counts agree).
stream() {
	local name=$1 secs=$2 port=$((TR_PORT + 1)) sp cp sst cst
	shift 2
	TR_PORT=$port
	"${TR_SX[@]}" "$stream" -d $PP_SERVER -g "$gid" -p $port -D "$secs" "$@" \
		>/tmp/zc-s.$name 2>&1 &
	sp=$!
	for _ in $(seq 100); do
		tcp_listening $port "${TR_SX[@]}" && break
		sleep 0.1
	done
	run_to $((secs + 60)) "$stream" -d rrxe8 -g "$gid" -p $port -D "$secs" "$@" \
		$PP_ADDR >/tmp/zc-c.$name 2>&1
	cst=$?
	tr_wait_pid $sp 60
	sst=$?
	if [ $sst = 0 ] && [ $cst = 0 ]; then
		return 0
	fi
	echo "# $name: server $sst, client $cst"
	sed 's/^/#   server: /' /tmp/zc-s.$name | tail -n 5
	sed 's/^/#   client: /' /tmp/zc-c.$name | tail -n 5
	return 1
}

# pp WANT PROG ARGS...: the pingpong, then whether sent_zero_copy of both devices grew
#   (WANT "by reference") or not ("copied").
pp() {
	local want=$1 before after
	shift
	before=$(($(zc rrxe8) + $(zc rrxe9)))
	TR_DESC=$want tr_pingpong 120 $PP_SERVER rrxe8 "$gid" $PP_ADDR "$@"
	after=$(($(zc rrxe8) + $(zc rrxe9)))
	if [ "$want" = "by reference" ]; then
		check "$1 $2 $3: sent_zero_copy +$((after - before))" test $after -gt $before
	else
		check "$1 $2 $3: sent_zero_copy unchanged" test $after -eq $before
	fi
}
# loopback CMD ARGS...: CMD (pp or stream) with both ends on rrxe8, whose path to itself
#   loops back.
loopback() {
	local -a TR_SX=()
	local PP_SERVER=rrxe8 PP_ADDR=10.9.0.1
	"$@"
}
param=/sys/module/rrxe/parameters/zero_copy
check "zero_copy is on by default" test "$(cat $param)" = Y
echo 0 >$param || die "zero_copy off"
pp copied ibv_rc_pingpong -s 65536 -n 100
run_to 120 /usr/libexec/rrxe/frag-rx -d rrxe9 -s 10.9.0.1 -a 10.9.0.2 >/tmp/zc-frag-rx 2>&1
st=$?
sed 's/^/#   /' /tmp/zc-frag-rx | grep -E '^#   (not ok|#)' | head -n 40
check "frag-rx: RoCE headers and payload in skb fragments (exit $st)" test $st = 0
echo 1 >$param || die "zero_copy on"

# IB MTU 1024: packets of 1 KiB through a device are copied; to the device itself they go
# by reference, and the receive path copies the payload from the sender's pages.
pp copied ibv_rc_pingpong -s 65536 -n 100
p0=$(paged rrxe8)
loopback pp "by reference" ibv_rc_pingpong -s 65536 -n 100
p1=$(paged rrxe8)
check "loopback: the payloads moved once, from pages to target (rcvd_paged +$((p1 - p0)))" \
	test $p0 -ge 0 -a $((p1 - p0)) -ge 12800
c0=$(zc rrxe8)
check "loopback rc-stream -s 70001, every byte checked" loopback stream lo 8 -s 70001
c1=$(zc rrxe8)
check "its SENDs went by reference" test $((c1 - c0)) -gt 0
run_to 400 /usr/libexec/rrxe/data-check -d rrxe8 -m 1048576 -T "$(scaled 240)" \
	>/tmp/zc-data-check-lo 2>&1
st=$?
sed 's/^/#   /' /tmp/zc-data-check-lo | grep -E '^#   (not ok|#)' | head -n 40
c2=$(zc rrxe8)
check "data-check on rrxe8 alone (exit $st, sent_zero_copy +$((c2 - c1)))" \
	test $st = 0 -a $c2 -gt $c1
loopback pp copied ibv_ud_pingpong -s 1024 -n 200

# IB MTU 4096 from here on.
mtu4096() {
	ibv_devinfo -d rrxe8 | grep -q 'active_mtu:.*4096' &&
		ibv_devinfo -d rrxe9 | grep -q 'active_mtu:.*4096'
}
ip link set veth0 mtu 9000 && ip netns exec ns1 ip link set veth1 mtu 9000 ||
	die "veth MTU 9000"
for _ in $(seq 50); do
	mtu4096 && break
	sleep 0.2
done
check "IB MTU 4096 on both devices" mtu4096
p0=$(paged rrxe9)
pp "by reference" ibv_rc_pingpong -s 65536 -n 100 -m 4096
p1=$(paged rrxe9)
check "rrxe9 copied the payloads from the sender's pages (rcvd_paged +$((p1 - p0)))" \
	test $p0 -ge 0 -a $((p1 - p0)) -ge 1600
c0=$(zc rrxe8) s0=$(zc rrxe9)
check "rc-stream -s 70001, every byte checked" stream rc 8 -s 70001
c1=$(zc rrxe8) s1=$(zc rrxe9)
echo "# sent_zero_copy: client +$((c1 - c0)), server +$((s1 - s0))"
check "the client's SENDs went by reference" test $((c1 - c0)) -gt 0
check "the server's READ responses did not" test $((s1 - s0)) -eq 0

pp copied ibv_uc_pingpong -s 65536 -n 100 -m 4096
pp copied ibv_ud_pingpong -s 1024 -n 200
pp copied ibv_rc_pingpong -s 512 -n 200 -m 4096

ip netns exec ns1 tc qdisc add dev veth1 root netem loss 5% || die "netem on veth1"
tc qdisc add dev veth0 root netem loss 5% || die "netem on veth0"
c0=$(zc rrxe8)
r0=$(cat /sys/class/infiniband/rrxe8/ports/1/hw_counters/completer_retry_err)
check "rc-stream -s 70001 over 5 % loss each way" stream loss 8 -s 70001 -u 10
c1=$(zc rrxe8)
r1=$(cat /sys/class/infiniband/rrxe8/ports/1/hw_counters/completer_retry_err)
echo "# sent_zero_copy +$((c1 - c0)), completer_retry_err +$((r1 - r0))"
check "over loss: retransmissions, and packets by reference" \
	test $((r1 - r0)) -gt 0 -a $((c1 - c0)) -gt 0
ip netns exec ns1 tc qdisc del dev veth1 root
tc qdisc del dev veth0 root

c0=$(($(zc rrxe8) + $(zc rrxe9)))
run_to 400 /usr/libexec/rrxe/data-check -d rrxe8 -D rrxe9 -m 1048576 \
	-T "$(scaled 360)" >/tmp/zc-data-check 2>&1
st=$?
sed 's/^/#   /' /tmp/zc-data-check | grep -E '^#   (not ok|#)' | head -n 40
c1=$(($(zc rrxe8) + $(zc rrxe9)))
check "data-check rrxe8 <-> rrxe9 (exit $st, sent_zero_copy +$((c1 - c0)))" \
	test $st = 0 -a $c1 -gt $c0
c0=$(zc rrxe8)
check "rc-stream -s 7003 at IB MTU 4096" stream mtu4096 8 -s 7003
c1=$(zc rrxe8)
check "its packets went by reference" test $((c1 - c0)) -gt 0

# A WRITE's source deregistered, unmapped and reused while its packets wait in netem.
tc qdisc add dev veth0 root netem delay "$(($(scaled 300)))ms" limit 100000 ||
	die "netem delay on veth0"
mark=$(kmsg_mark)
run_to 300 /usr/libexec/rrxe/zc-dereg -d rrxe8 -D rrxe9 -r 5 >/tmp/zc-dereg 2>&1
st=$?
sed 's/^/#   /' /tmp/zc-dereg
check "zc-dereg: every WRITE completed with its data" test $st = 0
tc qdisc del dev veth0 root

# The client's packets wait 300 ms in netem; the client is killed while they do.
tc qdisc add dev veth0 root netem delay 300ms limit 100000 || die "netem delay on veth0"
port=$((TR_PORT + 1))
"${TR_SX[@]}" ib_write_bw -d rrxe9 -x "$gid" -F -p $port -s 1048576 -D 30 -u 20 \
	>/tmp/zc-s.freed 2>&1 &
sp=$!
for _ in $(seq 100); do
	tcp_listening $port "${TR_SX[@]}" && break
	sleep 0.1
done
ib_write_bw -d rrxe8 -x "$gid" -F -p $port -s 1048576 -D 30 -u 20 10.9.0.2 \
	>/tmp/zc-c.freed 2>&1 &
cp=$!
c4=$(zc rrxe8)
for _ in $(seq "$(scaled 150)"); do
	[ $(($(zc rrxe8) - c4)) -gt 2000 ] && break
	kill -0 $cp 2>/dev/null || break
	sleep 0.1
done
queued=$(tc -s qdisc show dev veth0 | awk '/backlog/ { print $3; exit }')
kill -9 $cp
wait $cp 2>/dev/null
echo "# killed the client with ${queued:-?} packets in netem," \
	"$(($(zc rrxe8) - c4)) sent by reference"
check "packets of the client were waiting in netem when it died" test "${queued%p}" -gt 0
sleep 2
kill -9 $sp 2>/dev/null
wait $sp 2>/dev/null
tc qdisc del dev veth0 root
no_report() { ! dmesg_since "$mark" | grep -qE 'BUG:|KASAN|WARNING:'; }
check "no kernel report since zc-dereg" no_report
TR_DESC=after tr_pingpong 120 rrxe9 rrxe8 "$gid" 10.9.0.2 ibv_rc_pingpong -s 65536 -n 100
tap_done
