#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Harness self-test (tools/testing/selftest-harness): provokes a kernel WARNING through
# lkdtm, then exits 0; vm-run must fail anyway because the console shows the WARNING.
set -euo pipefail
modprobe lkdtm
echo WARNING >/sys/kernel/debug/provoke-crash/DIRECT
echo "harness-warn: WARN provoked, exiting 0"
exit 0
