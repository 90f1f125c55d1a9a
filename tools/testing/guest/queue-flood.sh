#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Bounded receive queues: a QP serving RDMA READs (ib_read_bw, 5 of 32 MiB, one at a
# time) between two network namespaces of one VM is flooded meanwhile with RC SEND
# requests carrying a valid ICRC (roce-flood, from a raw socket, to the responder's QP).
# The responder takes no request while it sends a READ's responses, so the flood waits in
# its queue: the skbs the kernel holds (skbuff_head_cache objects, sampled every second)
# must stay within 2048 of what they were, the packets beyond the queue's limit be counted
# (rcvd_queue_full), and the READs complete. (1 GiB of READs takes minutes under TCG
# with the flood; SIZE and ITERS choose more.) PAYLOAD is the flood's payload per
# request (default 256); FRAG (default 0: none) sends each request as IPv4 fragments of
# FRAG bytes: the receiver's IP layer reassembles them into a datagram made of as many
# skbs, which must not stay queued as such (about 500 each at PAYLOAD 4000, FRAG 8).
#     vm-run --provider rrxe --no-device --mem 3072 tools/testing/guest/queue-flood.sh \
#         [SECS [SIZE ITERS [PAYLOAD FRAG]]]
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
# shellcheck source=tools/testing/guest/traffic-lib.sh
. "${RRXE_GUEST_DIR:-/usr/share/rrxe/guest}/traffic-lib.sh"

secs=${1:-60}
size=${2:-33554432}
iters=${3:-5}
payload=${4:-256}
frag=${5:-0}
limit=2048
[ -z "${RRXE_GID_INDEX:-}" ] || die "run with --no-device"
netns_pair ns1 || die "rrxe9 and rrxe8 on a veth pair into ns1"
tap_ok "rrxe9 (in ns1) and rrxe8 on a veth pair"

skbs() {
	slab_shrink skbuff_head_cache
	awk '$1 == "skbuff_head_cache" { print $2 }' /proc/slabinfo
}
stat9() { ip netns exec ns1 rdma statistic show link rrxe9/1 | grep -o "$1 [0-9]*" | cut -d' ' -f2; }

args=(-x 1 -F -s "$size" -n "$iters" -t 1)
port=19100
run_to 300 ip netns exec ns1 ib_read_bw -d rrxe9 -p $port "${args[@]}" >/tmp/qf-s 2>&1 &
sp=$!
tr_wait_listen $port $sp
slab_snapshot /tmp/slab.0
base=$(skbs)
run_to 300 ib_read_bw -d rrxe8 -p $port "${args[@]}" 10.9.0.2 >/tmp/qf-c 2>&1 &
cp=$!
# The flood starts once the responder sends read responses.
for _ in $(seq 120); do
	[ "$(stat9 rdma_sends)" -gt 0 ] 2>/dev/null && break
	kill -0 $cp 2>/dev/null || break
	sleep 1
done
echo "# reads under way: rrxe9 rdma_sends $(stat9 rdma_sends), rcvd_pkts $(stat9 rcvd_pkts)"
# The responder's QPN (QPNs are random): its one RC QP.
qpn=$(ip netns exec ns1 rdma res show qp link rrxe9/1 |
	awk '/type RC/ { for (i = 1; i < NF; i++) if ($i == "lqpn") print $(i + 1) }' | head -n 1)
[ -n "$qpn" ] || { ip netns exec ns1 rdma res show qp | sed 's/^/# /'; die "no RC QP on rrxe9"; }
echo "# flooding rrxe9's QP $qpn (payload $payload, IP fragments of $frag bytes; 0: none)"
rcvd0=$(stat9 rcvd_pkts)
/usr/libexec/rrxe/roce-flood 10.9.0.1 10.9.0.2 "$qpn" "$qpn" "$secs" "$payload" "$frag" \
	>/tmp/qf-f 2>&1 &
fp=$!
max=$base
while kill -0 $fp 2>/dev/null && kill -0 $cp 2>/dev/null; do
	v=$(skbs)
	[ "$v" -gt "$max" ] && max=$v
	echo "# skbuff_head_cache: $v objects; rrxe9: rcvd_pkts $(stat9 rcvd_pkts), rdma_sends $(stat9 rdma_sends)"
	sleep 1
done
slab_snapshot /tmp/slab.1
sed 's/^/# client so far: /' /tmp/qf-c | tail -n 8
kill $fp 2>/dev/null
wait $fp
sed 's/^/# roce-flood: /' /tmp/qf-f
wait $cp
crc=$?
wait $sp
src=$?
slab_report /tmp/slab.0 /tmp/slab.1
growth=$((max - base))
if [ $growth -le $limit ]; then
	tap_ok "skbuff_head_cache grew by at most $growth objects during the flood ($base before)"
else
	tap_fail "skbuff_head_cache grew by $growth objects during the flood ($base before, limit $limit)"
fi
dropped=$(stat9 rcvd_queue_full)
rcvd=$(($(stat9 rcvd_pkts) - ${rcvd0:-0}))
if [ "$frag" != 0 ]; then
	# Reassembly is slow under TCG: the flood reaches the QP, but fills its queue only
	# for a slow responder; what matters is what each queued datagram holds (above).
	# ns1's IP layer: datagrams reassembled (ReasmOKs in /proc/net/snmp).
	reasm=$(ip netns exec ns1 awk '$1 == "Ip:" && !c { for (i = 2; i <= NF; i++)
		if ($i == "ReasmOKs") c = i; next } $1 == "Ip:" { print $c }' /proc/net/snmp)
	if [ "$rcvd" -ge 100 ] && [ "${reasm:-0}" -ge 100 ]; then
		tap_ok "rrxe9 received $rcvd datagrams during the flood (ns1 reassembled" \
			"$reasm; rcvd_queue_full ${dropped:-absent})"
	else
		tap_fail "rrxe9 received $rcvd datagrams during the flood, ns1 reassembled" \
			"${reasm:-none}: the fragmented flood did not reach the QP"
	fi
elif [ "${dropped:-0}" -gt 0 ]; then
	tap_ok "rrxe9 dropped and counted $dropped packets (rcvd_queue_full)"
else
	tap_fail "rrxe9 counted no rcvd_queue_full drops ('${dropped:-absent}')"
fi
row=$(grep -a -E "^ *$size " /tmp/qf-c)
if [ $crc = 0 ] && [ $src = 0 ] && [ -n "$row" ]; then
	tap_ok "ib_read_bw: $row"
else
	sed 's/^/# client: /' /tmp/qf-c | tail -n 5
	tap_fail "ib_read_bw: client status $crc, server status $src"
fi
tap_done
