#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Harness self-test (selftest-harness, one VM or two): a test whose client crashes in
# librdmacm (as perftest -R's does now and then; here a fake kernel report and a SIGSEGV)
# runs once more and passes, saying so; the next test still finds its server (two VMs:
# both VMs ran it again, their ports stay in step).
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
# shellcheck source=tools/testing/guest/traffic-lib.sh
. "${RRXE_GUEST_DIR:-/usr/share/rrxe/guest}/traffic-lib.sh"
[ -n "${RRXE_GID_INDEX:-}" ] || die "no device: do not use --no-device"
dev=$RRXE_DEV gid=$RRXE_GID_INDEX server=$RRXE_PEER_IP

# crash_once CMD...: the first time, crashes as perftest does; then runs CMD.
crash_once() {
	if [ ! -e "$TR_DIR/crashed" ]; then
		touch "$TR_DIR/crashed"
		echo "traps: fake[1] general protection fault ip:0 in librdmacm.so.1 (harness test)" \
			>/dev/kmsg
		kill -SEGV "$BASHPID"
	fi
	"$@"
}

TR_ROWS=1 TR_LAST_SIZE=''
rm -f "$TR_DIR/crashed"
tr_run "a client crashing once" chk_perftest crash 60 \
	ib_write_bw -d "$dev" -x "$gid" -p @PORT@ -F -R -s 4096 -n 20 -- \
	crash_once ib_write_bw -d "$dev" -x "$gid" -p @PORT@ -F -R -s 4096 -n 20 "$server" \
	>"$TR_DIR/rerun.tap"
cat "$TR_DIR/rerun.tap"
grep -q '^ok .*run twice: a known crash' "$TR_DIR/rerun.tap" ||
	tap_fail "the test did not run twice and pass"
tr_run "the next test" chk_perftest next 60 \
	ib_write_bw -d "$dev" -x "$gid" -p @PORT@ -F -s 4096 -n 20 -- \
	ib_write_bw -d "$dev" -x "$gid" -p @PORT@ -F -s 4096 -n 20 "$server"
tap_done
