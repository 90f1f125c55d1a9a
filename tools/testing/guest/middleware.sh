#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Userspace RDMA middleware from Debian on the device, one VM or two (VM1 serves):
#   vm-run [--provider P1[,P2]] [--vms 2] --timeout 900 tools/testing/guest/middleware.sh
# qperf over the RDMA CM (-cm1): rc_bw, rc_lat, rc_rdma_read_bw, rc_rdma_write_bw and the
# verifying ver_rc_compare_swap and ver_rc_fetch_add (not its UD tests: qperf creates their
# address handle without a GRH, which RoCE needs, and the RDMA core refuses it with EINVAL,
# on rxe as on rrxe); libfabric's fi_pingpong
# through the verbs provider on msg endpoints and on rdm endpoints through ofi_rxm, with
# data checks (-c); rsocket's rstream and riostream with data verification (-T v).
# Programs run from the host root.
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
# shellcheck source=tools/testing/guest/traffic-lib.sh
. "${RRXE_GUEST_DIR:-/usr/share/rrxe/guest}/traffic-lib.sh"

[ -n "${RRXE_GID_INDEX:-}" ] || die "no device: do not use --no-device"
case ${RRXE_ROLE:-single} in
server) server=$RRXE_MY_IP ;;
client | single) server=$RRXE_PEER_IP ;;
*) die "unknown role $RRXE_ROLE" ;;
esac
hostroot_setup || die "host root"
hr=(chroot "$HOSTROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp LANG=C.UTF-8)
secs=120
TR_CLIENT_TRIES=120
echo "# ${RRXE_ROLE:-single}: server $server, $RRXE_DEV"

# qperf: the client runs the tests, then tells its server to quit.
chk_qperf() {
	[ "$1" = client ] || return 0
	local n
	n=$(grep -cE '^(rc_bw|rc_lat|rc_rdma_read_bw|rc_rdma_write_bw|ver_rc_compare_swap|ver_rc_fetch_add):' "$2")
	[ "$n" = 6 ] || { echo "$n of 6 tests reported"; return 1; }
	! grep -qiE 'failed|error|mismatch' "$2" || { grep -iE -m1 'failed|error|mismatch' "$2"; return 1; }
}
TR_SUMMARY=''
tr_run "qperf -cm1 rc_bw rc_lat rc_rdma_read_bw rc_rdma_write_bw ver_rc_*" chk_qperf \
	qperf $secs \
	"${hr[@]}" qperf -lp @PORT@ -- \
	"${hr[@]}" sh -c "qperf -lp @PORT@ -cm1 -t 2 $server rc_bw rc_lat rc_rdma_read_bw \
		rc_rdma_write_bw ver_rc_compare_swap ver_rc_fetch_add; st=\$?; \
		qperf -lp @PORT@ $server quit; exit \$st"
grep -hE '^(rc_|ver_| +(bw|latency|msg_rate) )' "$TR_DIR/qperf.client" 2>/dev/null | sed 's/^/#   /'

# fi_pingpong prints a results table; -c checks every message's contents. ofi_rxm sizes its
# completion queue as (TX + RX queue size) x FI_UNIVERSE_SIZE (default 256), beyond the
# 32767 entries rxe and rrxe allow ("Unable to create verbs CQ", fi_enable EINVAL on both):
# 64 peers here.
chk_fi() {
	grep -qE '^[0-9]+[kmKM]?[[:space:]]' "$2" || { echo "no results"; return 1; }
}
for ep in "msg verbs" "rdm verbs;ofi_rxm"; do
	set -- $ep
	tr_run "fi_pingpong -p '$2' -e $1 -c" chk_fi "fi_$1" $secs \
		"${hr[@]}" FI_UNIVERSE_SIZE=64 fi_pingpong -p "$2" -e "$1" -I 100 -S 4096 -c \
		-B @PORT@ -- \
		"${hr[@]}" FI_UNIVERSE_SIZE=64 fi_pingpong -p "$2" -e "$1" -I 100 -S 4096 -c \
		-P @PORT@ "$server"
done

# rsocket: rstream and riostream move data through rsockets and verify it (-T v).
for prog in rstream riostream; do
	tr_run "$prog -T v -S all" chk_none "$prog" $secs \
		"${hr[@]}" $prog -p @PORT@ -C 10 -S all -T v -- \
		"${hr[@]}" $prog -s "$server" -p @PORT@ -C 10 -S all -T v
done
hostroot_teardown
tap_done
