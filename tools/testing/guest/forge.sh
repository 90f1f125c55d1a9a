#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Forged packets (issue 13 item 3): /usr/libexec/rrxe/forge (src/forge.c) connects an RC QP
# on PROV8 (veth0, this namespace) to one on PROV9 (veth1, namespace ns1), moves verified
# data between them, and sends forged ACK/NAK/RNR NAK/READ response/atomic acknowledge and
# SEND/RDMA WRITE packets at them from raw sockets: from a wrong source address, from the
# right source with a wrong P_Key, and from the right source with PSNs outside the window;
# then a flood of RDMA WRITEs from a wrong source, which must be refused before they are
# queued (PROV9's rcvd_pkts and rcvd_queue_full must not grow); and datagrams at a UD QP
# with wrong Q_Keys, or with the right ones but sent to an address of ns1 that is none of
# PROV9's GIDs (on ns1's loopback device) or to the all-hosts group with the QP's own
# number (not the multicast QPN). Nothing forged may complete, fail or corrupt anything,
# and each must be counted: the hw_counters rcvd_bad_addr, rcvd_bad_pkey,
# rcvd_bad_resp_psn, rcvd_bad_qkey, and for requests outside the window
# duplicate_request + out_of_seq_request, grow by at least what was sent.
#   vm-run [--provider rxe|rrxe] --no-device tools/testing/guest/forge.sh
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
bin=/usr/libexec/rrxe/forge
prov=${RRXE_PROVIDER:-rrxe}
a=${prov}8
b=${prov}9

[ -x "$bin" ] || die "$bin is missing from the image"
[ -z "${RRXE_GID_INDEX:-}" ] || die "run with --no-device"
netns_pair ns1 "$prov" || die "$b and $a on a veth pair into ns1"
# An address of ns1 that is none of $b's GIDs, reached over veth0; multicast over veth0.
other=10.9.1.2
{ ip netns exec ns1 ip addr add $other/32 dev lo && ip route add $other/32 dev veth0 &&
	ip route add 224.0.0.0/4 dev veth0; } || die "$other on ns1's lo, multicast routes"

hw_snapshot /tmp/c.0 "$a" "$b"
run_to 120 "$bin" -a "$a" -b "$b" -n ns1 -o $other >/tmp/forge.out
st=$?
sed "s/^/# /" /tmp/forge.out
hw_snapshot /tmp/c.1 "$a" "$b"
[ "$st" = 0 ] && tap_ok "forge: traffic intact" || tap_fail "forge: exit status $st"

while read -r _ _ class dev n; do
	case $class in
	bad_req_psn) names=(duplicate_request out_of_seq_request) ;;
	*) names=("rcvd_$class") ;;
	esac
	if ! g=$(hw_grown /tmp/c.0 /tmp/c.1 "$dev" "${names[@]}"); then
		tap_fail "$dev: no counter ${names[*]} ($n sent)"
	elif [ "$g" -ge "$n" ]; then
		tap_ok "$dev: ${names[*]} grew by $g, $n sent"
	else
		tap_fail "$dev: ${names[*]} grew by $g, $n sent"
	fi
done < <(grep "^# sent " /tmp/forge.out)
echo "# $a counters after the run:"
awk -v d="$a" '$1 == d { print "#   " $2, $3 }' /tmp/c.1
tap_done
