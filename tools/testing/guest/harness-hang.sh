#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Harness self-test (tools/testing/selftest-harness --slow): blocks in the kernel for good
# (lkdtm HUNG_TASK, uninterruptible sleep), so the guest timeout cannot kill it. vm-run must
# report the hung task (after 60-120 s), and /init's watchdog powers the VM off.
set -euo pipefail
modprobe lkdtm
echo "harness-hang: blocking in the kernel now"
echo HUNG_TASK >/sys/kernel/debug/provoke-crash/DIRECT
echo "harness-hang: still running?"
exit 0
