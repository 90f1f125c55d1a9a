#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Harness self-test (tools/testing/selftest-harness): test output that merely looks like a
# kernel report must not fail the run; exits 0, so vm-run must pass.
set -euo pipefail
cat <<'TXT'
test_warning_paths: WARNING: this line comes from a test, not from the kernel
BUG: this one too; Oops; Kernel panic; soft lockup; hung_task; possible circular locking
INFO: task test blocked for more than 1 seconds (not really)
TXT
echo "rrxe-test: a benign line in the kernel log" >/dev/kmsg
exit 0
