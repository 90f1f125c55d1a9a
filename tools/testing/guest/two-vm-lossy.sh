#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# RC traffic between two VMs over a lossy link (vm-run --vms 2): both VMs put a netem
# qdisc with NETEM_ARGS (e.g. "loss 1%", "loss 5%", "delay 2ms reorder 25% 50%") on eth0,
# so each direction drops or reorders, then run RC tests that check their data:
# ibv_rc_pingpong -c (contents checked), rping -V (data verified), perftest write, read
# and send at 64 KiB and 1 MiB and ib_atomic_bw, printing the figures. Retransmission
# (NAK, timeout) must recover every loss; UD does not retransmit and is not run.
#
# ibv_rc_pingpong ends with the server's last message: the client exits as soon as it
# has it, so if the acknowledge of that message is lost, nothing is left to answer the
# server's retransmissions and it waits for ever (retry_cnt 7). That race is the test
# program's, so during the pingpongs only the server's side of the link is lossy (its
# data to the client); the client adds its qdisc after them, for everything else.
#   vm-run [--provider rxe|rrxe|rxe,rrxe|rrxe,rxe] --vms 2 --timeout 1200 \
#       tools/testing/guest/two-vm-lossy.sh loss 5%
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
# shellcheck source=tools/testing/guest/traffic-lib.sh
. "${RRXE_GUEST_DIR:-/usr/share/rrxe/guest}/traffic-lib.sh"

[ "${RRXE_VMS:-1}" = 2 ] || die "run with --vms 2"
[ -n "${RRXE_GID_INDEX:-}" ] || die "no device: do not use --no-device"
[ $# -ge 1 ] || die "usage: two-vm-lossy.sh NETEM_ARGS..."
dev=$RRXE_DEV
gid=$RRXE_GID_INDEX
case $RRXE_ROLE in
server) server=$RRXE_MY_IP ;;
client) server=$RRXE_PEER_IP ;;
*) die "unknown role $RRXE_ROLE" ;;
esac
echo "# $RRXE_ROLE $RRXE_MY_IP ($RRXE_PROVIDER), peer $RRXE_PEER_IP, netem: $*"
secs=240
TR_CLIENT_TRIES=200

if peer_retry -n 60 ping -c 1 -W 1 "$RRXE_PEER_IP" >/dev/null; then
	tap_ok "ping $RRXE_PEER_IP"
else
	die "peer $RRXE_PEER_IP does not answer ping"
fi
# The qdisc only after the peer answered: setup traffic (ARP, the first ping) is clean.
lossy() {
	if tc qdisc add dev eth0 root netem "$@"; then
		tap_ok "netem $* on eth0"
	else
		die "tc qdisc add dev eth0 root netem $* failed"
	fi
}
[ "$RRXE_ROLE" = client ] || lossy "$@"

pp() {
	local prog=$1
	shift
	TR_SUMMARY=sum_iters
	tr_run "$prog $*" chk_iters "$prog$(echo "$*" | tr -c 'a-z0-9' _)" $secs \
		"$prog" -d "$dev" -g "$gid" -p @PORT@ -c "$@" -- \
		"$prog" -d "$dev" -g "$gid" -p @PORT@ -c "$@" "$server"
}

pt() {
	local prog=$1
	shift
	TR_ROWS=1 TR_LAST_SIZE='' TR_SUMMARY=sum_perftest
	tr_run "$prog $*" chk_perftest "$prog$(echo "$*" | tr -c 'a-zA-Z0-9' _)" $secs \
		"$prog" -d "$dev" -x "$gid" -p @PORT@ -F "$@" -- \
		"$prog" -d "$dev" -x "$gid" -p @PORT@ -F "$@" "$server"
}

chk_rping() {
	local n
	[ "$1" = client ] || return 0
	n=$(grep -o 'rdma-ping-[0-9]*: ' "$2" | sort -u | wc -l)
	[ "$n" = "$TR_COUNT" ] || { echo "$n pings printed, want $TR_COUNT"; return 1; }
}

rp() {
	TR_COUNT=$1 TR_SUMMARY=''
	tr_run "rping -C $1 -S $2 -V" chk_rping "rping$1_$2" $secs \
		rping -s -a "$server" -p @PORT@ -C "$1" -S "$2" -V -- \
		rping -c -a "$server" -p @PORT@ -C "$1" -S "$2" -v -V
}

pp ibv_rc_pingpong -s 4096 -n 100
pp ibv_rc_pingpong -s 65536 -n 20
[ "$RRXE_ROLE" = server ] || lossy "$@"
rp 100 64
rp 20 65000
for prog in ib_write_bw ib_read_bw ib_send_bw; do
	pt $prog -s 65536 -n 50
	pt $prog -s 1048576 -n 5
done
pt ib_atomic_bw -A FETCH_AND_ADD -n 100
tc -s qdisc show dev eth0 | sed 's/^/# /'
rdma statistic show link "$dev/1" 2>/dev/null | sed 's/^/# /'
tap_done
