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
#   kbuild.sh --bench modules    the same for the bench kernel (kernel.sh --bench), in
#                                out/bench-kernel/: out/bench-kernel/rrxe.ko
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tools/build/env.sh
. "$here/env.sh"
top=$(cd "$here/../.." && pwd)
"$here/deps.sh"
if [ "${1:-}" = --debug ] || [ "${1:-}" = --bench ]; then
	kdir=$("$here/kernel.sh" "$1")
	out=$(rrxe_build_dir "${1#--}")
	shift
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
