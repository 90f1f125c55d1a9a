#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Forged packets (issue 13 item 3): /usr/libexec/rrxe/forge (src/forge.c) connects an RC QP
# on PROV8 (veth0, this namespace) to one on PROV9 (veth1, namespace ns1), moves verified
# data between them, and sends forged ACK/NAK/RNR NAK/READ response/atomic acknowledge and
# SEND/RDMA WRITE packets at them from raw sockets: from a wrong source address, from the
# right source with a wrong P_Key, and from the right source with PSNs outside the window;
# and datagrams with wrong Q_Keys at a UD QP. Nothing forged may complete, fail or corrupt
# anything, and each must be counted: the hw_counters rcvd_bad_addr, rcvd_bad_pkey,
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

# counters DEV: NAME VALUE lines of the device's hw_counters
counters() {
	local f d=/sys/class/infiniband/$1/ports/1/hw_counters
	for f in "$d"/*; do
		[ -f "$f" ] && [ "${f##*/}" != lifespan ] && echo "${f##*/} $(cat "$f")"
	done
}
counters "$a" >/tmp/ca.0
counters "$b" >/tmp/cb.0
run_to 120 "$bin" -a "$a" -b "$b" -n ns1 >/tmp/forge.out
st=$?
sed "s/^/# /" /tmp/forge.out
counters "$a" >/tmp/ca.1
counters "$b" >/tmp/cb.1
[ "$st" = 0 ] && tap_ok "forge: traffic intact" || tap_fail "forge: exit status $st"

# grown DEV NAME...: how much the sum of the counters grew during the run
grown() {
	local dev=$1 n0=0 n1=0 c v f0 f1
	shift
	if [ "$dev" = "$a" ]; then f0=/tmp/ca.0 f1=/tmp/ca.1; else f0=/tmp/cb.0 f1=/tmp/cb.1; fi
	for c in "$@"; do
		v=$(awk -v c="$c" '$1 == c { print $2 }' "$f0")
		[ -n "$v" ] || { echo -1; return; }
		n0=$((n0 + v))
		v=$(awk -v c="$c" '$1 == c { print $2 }' "$f1")
		n1=$((n1 + v))
	done
	echo $((n1 - n0))
}
while read -r _ _ class dev n; do
	case $class in
	bad_req_psn) names=(duplicate_request out_of_seq_request) ;;
	*) names=("rcvd_$class") ;;
	esac
	g=$(grown "$dev" "${names[@]}")
	if [ "$g" -ge "$n" ]; then
		tap_ok "$dev: ${names[*]} grew by $g, $n sent"
	elif [ "$g" -lt 0 ]; then
		tap_fail "$dev: no counter ${names[*]} ($n sent)"
	else
		tap_fail "$dev: ${names[*]} grew by $g, $n sent"
	fi
done < <(grep "^# sent " /tmp/forge.out)
echo "# $a counters after the run:"
sed 's/^/#   /' /tmp/ca.1
tap_done
