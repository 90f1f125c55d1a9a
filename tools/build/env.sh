# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Shared environment for rrxe's build and test scripts (sourced, not run).
# Everything expensive lives in the cache outside the repository:
#   $RRXE_CACHE/tools      bindgen-cli
#   $RRXE_CACHE/kernel/K   kernel build trees, one per key K (version, config, rustc)
#   $RRXE_CACHE/guest      guest userspace images
#   $RRXE_CACHE/rdma-core/V  the newest rdma-core, built in place (rdma-core-new.sh)
: "${RRXE_CACHE:=${XDG_CACHE_HOME:-$HOME/.cache}/rrxe}"
RRXE_TOOLS=$RRXE_CACHE/tools
BINDGEN_VERSION=0.69.5
export RRXE_CACHE RRXE_TOOLS BINDGEN_VERSION

# The Debian toolchain must win over rustup's (toolchain.md, section 3).
export PATH="$RRXE_TOOLS/bin:/usr/lib/llvm-19/bin:/usr/bin:/bin:/usr/sbin:/sbin"
export LIBCLANG_PATH=/usr/lib/llvm-19/lib
unset RUSTUP_TOOLCHAIN CARGO_HOME

# cargo, for the host crates (tools/host) and bindgen-cli, as the README promises: the
# machine's rustup cargo if it has one, else Debian's cargo-web (deps.sh installs it at the
# pinned rustc-web version when there is no rustup cargo). RRXE_CARGO is its path, empty
# if there is none yet; a script that runs cargo puts its directory first in PATH, so that
# the rustc cargo runs is of the same toolchain. rrxe_find_cargo looks again.
rrxe_find_cargo() {
	RRXE_CARGO=
	if [ -x "$HOME/.cargo/bin/cargo" ]; then
		RRXE_CARGO=$HOME/.cargo/bin/cargo
	elif [ -x /usr/bin/cargo ]; then
		RRXE_CARGO=/usr/bin/cargo
	fi
	export RRXE_CARGO
}
rrxe_find_cargo

# rrxe_build_dir FLAVOUR: where tools/build/kbuild.sh builds rrxe.ko for the test, debug
# or bench kernel (kernel.sh [--debug|--bench]): the repository itself for the test
# kernel, a copy of its sources in out/ for the others, so that every build keeps its
# objects. Not out/bench/: that holds the bench results.
rrxe_build_dir() {
	local top
	top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	case $1 in
	test) echo "$top" ;;
	debug) echo "$top/out/debug" ;;
	bench) echo "$top/out/bench-kernel" ;;
	*) echo "rrxe_build_dir: no kernel flavour '$1'" >&2; return 1 ;;
	esac
}

# Variables every kernel make needs.
# shellcheck disable=SC2034 # for the scripts that source this file
KMAKE_VARS=(LLVM=-19 RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc HOSTRUSTC=/usr/bin/rustc
	"BINDGEN=$RRXE_TOOLS/bin/bindgen")
