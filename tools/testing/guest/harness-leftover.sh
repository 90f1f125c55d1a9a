#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Harness self-test (tools/testing/selftest-harness): a script that leaves a process
# holding the device (an ibv_rc_pingpong server waiting for its client) and exits 0. The
# guest's /init must kill it, delete the device and unload rrxe, and the run must pass.
set -euo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "$RRXE_LIB"
ibv_rc_pingpong -d "$RRXE_DEV" -g "$RRXE_GID_INDEX" -p 18515 >/dev/null 2>&1 &
for _ in $(seq 50); do
	tcp_listening 18515 && break
	sleep 0.1
done
tcp_listening 18515 || { echo "harness-leftover: the server did not start"; exit 1; }
echo "harness-leftover: leaving ibv_rc_pingpong (pid $!) behind"
exit 0
