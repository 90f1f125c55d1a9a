#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the kernel's build system on rrxe (out of tree) with the toolchain variables,
# building the test kernel first if the cache lacks it:
#   kbuild.sh modules            build rrxe.ko
#   kbuild.sh CLIPPY=1 modules   the same through clippy
#   kbuild.sh clean
#   kbuild.sh --debug modules    build rrxe.ko for the debug kernel (kernel.sh --debug), in
#                                out/debug/ (a copy of the sources, so that both builds
#                                keep their objects): out/debug/rrxe.ko
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tools/build/env.sh
. "$here/env.sh"
top=$(cd "$here/../.." && pwd)
"$here/deps.sh"
if [ "${1:-}" = --debug ]; then
	shift
	kdir=$("$here/kernel.sh" --debug)
	out=$top/out/debug
	mkdir -p "$out"
	# Only changed files are copied, so make rebuilds only what changed.
	rsync -a --delete --exclude='*.o' --exclude='*.ko' --exclude='.*.cmd' --exclude='*.mod*' \
		--exclude='/rust/bindings/rrxe_bindings_generated.rs' \
		--include='/Kbuild' --include='/drivers/***' --include='/rust/***' --exclude='*' \
		"$top/" "$out/"
	exec make -C "$kdir" M="$out" "${KMAKE_VARS[@]}" "$@"
fi
kdir=$("$here/kernel.sh")
exec make -C "$kdir" M="$top" "${KMAKE_VARS[@]}" "$@"
