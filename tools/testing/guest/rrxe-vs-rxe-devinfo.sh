#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Field-by-field comparison of `ibv_devinfo -v` between C rxe and rrxe in one boot
# (vm-run --provider rxe): rxe0 first, then rdma_rxe out, rrxe in, rrxe0. Every
# difference must be one of the explained ones below (Documentation/infiniband/rrxe.rst,
# "Differences from rxe"); any other difference fails.
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
[ "$RRXE_PROVIDER" = rxe ] || die "run with --provider rxe"

# gids_settled DEV: the GID table holds one entry per address of eth0 (IPv6 addresses
# from router advertisements arrive a while after boot).
gids_settled() {
	local want have
	for _ in $(seq 100); do
		want=$(ip addr show dev eth0 | grep -cE '^ +inet6? ')
		have=$(cat /sys/class/infiniband/"$1"/ports/1/gids/* 2>/dev/null | grep -cv "^0000:0000:0000:0000:0000:0000:0000:0000$")
		[ "$want" = "$have" ] && return 0
		sleep 0.1
	done
	echo "# $1: $have GIDs for $want addresses"
	return 1
}
# Let SLAAC finish first, so that both drivers see the same addresses.
for _ in $(seq 30); do
	ip -6 addr show dev eth0 scope global | grep -q inet6 && break
	sleep 0.1
done
gids_settled rxe0 || die "rxe0 GIDs did not settle"
ibv_devinfo -v -d rxe0 >/tmp/rxe.txt || die "ibv_devinfo rxe0"
dev_add rrxe rrxe0 eth0 || die "$DEV_ERR"
gids_settled rrxe0 || die "rrxe0 GIDs did not settle"
ibv_devinfo -v -d rrxe0 >/tmp/rrxe.txt || die "ibv_devinfo rrxe0"

# Explained differences, as "rxe line|rrxe line" after whitespace squeezing.
expected=(
	"hca_id: rxe0|hca_id: rrxe0"
)
norm() { tr -s ' \t' ' ' <"$1" | sed 's/^ //'; }
norm /tmp/rxe.txt >/tmp/a
norm /tmp/rrxe.txt >/tmp/b
check "same number of lines ($(wc -l </tmp/a) vs $(wc -l </tmp/b))" test "$(wc -l </tmp/a)" = "$(wc -l </tmp/b)"
awk 'NR == FNR { a[FNR] = $0; next } a[FNR] != $0 { print a[FNR] "|" $0 }' /tmp/a /tmp/b >/tmp/diffs ||
	die "comparing the outputs failed"
unexplained=0
while IFS='|' read -r a b; do
	pair="$a|$b"
	ok=
	for e in "${expected[@]}"; do
		[ "$pair" = "$e" ] && ok=1
	done
	if [ -n "$ok" ]; then
		echo "# explained: rxe '$a' / rrxe '$b'"
	else
		echo "# UNEXPLAINED: rxe '$a' / rrxe '$b'"
		unexplained=$((unexplained + 1))
	fi
done </tmp/diffs
check "the rxe and rrxe outputs differ where expected" test -s /tmp/diffs
check "no unexplained difference" test "$unexplained" = 0
rdma link delete rrxe0
tap_done
