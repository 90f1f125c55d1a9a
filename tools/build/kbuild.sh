#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the kernel's build system on rrxe (out of tree) with the toolchain variables,
# building the test kernel first if the cache lacks it:
#   kbuild.sh modules            build rrxe.ko
#   kbuild.sh CLIPPY=1 modules   the same through clippy
#   kbuild.sh clean
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/env.sh"
top=$(cd "$here/../.." && pwd)
"$here/deps.sh"
kdir=$("$here/kernel.sh")
exec make -C "$kdir" M="$top" "${KMAKE_VARS[@]}" "$@"
