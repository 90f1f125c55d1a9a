#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Harness self-test (selftest-harness, one VM or two): a test whose client crashes in
# librdmacm (as perftest -R's does now and then; here a fake kernel report and a SIGSEGV)
# runs once more and passes, saying so; the next test still finds its server (two VMs:
# both VMs ran it again, their ports stay in step).
# Usage: harness-rerun.sh [CRASHES]  the client crashes on purpose CRASHES times (default
#   1). The test may run twice more (TR_RERUNS=2): its fake crash spends one rerun, and the
#   real perftest -R that follows may crash too (traffic-lib.sh, tr_crash). With CRASHES 2
#   the test must run 3 times and pass; with 3 it must fail (the budget holds).
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
# shellcheck source=tools/testing/guest/traffic-lib.sh
. "${RRXE_GUEST_DIR:-/usr/share/rrxe/guest}/traffic-lib.sh"
[ -n "${RRXE_GID_INDEX:-}" ] || die "no device: do not use --no-device"
dev=$RRXE_DEV gid=$RRXE_GID_INDEX server=$RRXE_PEER_IP
crashes=${1:-1}

# crash_once CMD...: the first CRASHES times, crashes as perftest does; then runs CMD.
crash_once() {
	local n=0
	[ ! -e "$TR_DIR/crashed" ] || n=$(cat "$TR_DIR/crashed")
	if [ "$n" -lt "$crashes" ]; then
		echo $((n + 1)) >"$TR_DIR/crashed"
		echo "traps: fake[1] general protection fault ip:0 in librdmacm.so.1 (harness test)" \
			>/dev/kmsg
		kill -SEGV "$BASHPID"
	fi
	"$@"
}

TR_ROWS=1 TR_LAST_SIZE=''
rm -f "$TR_DIR/crashed"
TR_RERUNS=2 tr_run "a client crashing once" chk_perftest crash 60 \
	ib_write_bw -d "$dev" -x "$gid" -p @PORT@ -F -R -s 4096 -n 20 -- \
	crash_once ib_write_bw -d "$dev" -x "$gid" -p @PORT@ -F -R -s 4096 -n 20 "$server" \
	>"$TR_DIR/rerun.tap"
cat "$TR_DIR/rerun.tap"
grep -qE '^ok .*run (twice|[0-9]+ times): a known crash' "$TR_DIR/rerun.tap" ||
	tap_fail "the test did not run again and pass"
tr_run "the next test" chk_perftest next 60 \
	ib_write_bw -d "$dev" -x "$gid" -p @PORT@ -F -s 4096 -n 20 -- \
	ib_write_bw -d "$dev" -x "$gid" -p @PORT@ -F -s 4096 -n 20 "$server"
tap_done
