#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Harness self-test (tools/testing/selftest-harness): panics the kernel through lkdtm, so
# the guest never prints RRXE-EXIT; vm-run must fail (and must not wait for its timeout).
set -euo pipefail
modprobe lkdtm
echo PANIC >/sys/kernel/debug/provoke-crash/DIRECT
echo "harness-panic: still alive after PANIC?"
exit 0
