#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Harness self-test (tools/testing/selftest-harness): exits 1, so vm-run must fail.
echo "harness-fail: exiting with status 1 on purpose"
exit 1
