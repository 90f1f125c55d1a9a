#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Multicast attach/detach on the device (vm-run --provider rrxe): runs the compiled
# /usr/libexec/rrxe/mcast (tools/testing/guest/src/mcast.c).
set -uo pipefail
exec /usr/libexec/rrxe/mcast "${RRXE_DEV:?}"
