#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Host tests of the protocol core (drivers/infiniband/sw/rrxe/proto/):
#   1. cargo test of the workspace (unit, integration and property tests);
#   2. the proto module built alone as a no_std rlib with the kernel's rustc and lint flags,
#      warnings denied (what Kbuild would report when the driver compiles it in);
#   3. the same through clippy-driver, and cargo clippy of the host crates.
# Prints one PASS/FAIL line per step and "N passed, N failed"; exits 1 on any failure.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cd "$top"
# shellcheck source=tools/build/env.sh
. tools/build/env.sh

# The host crates build with the machine's rustup cargo, else Debian's cargo-web (env.sh:
# RRXE_CARGO); its directory goes first, for its own rustc.
if [ -z "$RRXE_CARGO" ]; then
	echo "host tests: no cargo: install rustup's or Debian's cargo-web (tools/build/deps.sh)"
	exit 1
fi
PATH="$(dirname "$RRXE_CARGO"):$PATH"
export PATH
unset RUSTC

# The kernel's compiler and its lint flags (Linux 6.12 rust_common_flags, plus clippy's).
krustc=${RRXE_KERNEL_RUSTC:-/usr/bin/rustc}
kclippy=${RRXE_KERNEL_CLIPPY:-/usr/bin/clippy-driver}
kflags=(--edition=2021 -Dnon_ascii_idents -Dunsafe_op_in_unsafe_fn -Wmissing_docs
	-Wrust_2018_idioms -Wunreachable_pub -Wclippy::all -Wclippy::undocumented_unsafe_blocks
	-Wclippy::ignored_unit_patterns -Wclippy::mut_mut -Wclippy::needless_bitwise_bool
	-Wclippy::no_mangle_with_rust_abi -Dwarnings)

passed=0
failed=0
step() {
	local name=$1 start rc
	shift
	start=$(date +%s)
	echo "=== $name: $*"
	"$@"
	rc=$?
	if [ $rc = 0 ]; then
		passed=$((passed + 1))
		echo "=== $name: PASS ($(($(date +%s) - start)) s)"
	else
		failed=$((failed + 1))
		echo "=== $name: FAIL (rc $rc)"
	fi
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/kcheck.rs" <<EOT
//! The protocol core built alone, as the kernel builds it.
#![no_std]
#[path = "$top/drivers/infiniband/sw/rrxe/proto/mod.rs"]
pub mod proto;
EOT

kernel_flags_build() {
	local compiler=$1
	if ! [ -x "$compiler" ]; then
		echo "$compiler not found; install the kernel toolchain (make deps)"
		return 1
	fi
	"$compiler" --version
	"$compiler" --crate-type rlib --crate-name rrxe_proto "${kflags[@]}" -O \
		--emit=metadata,link --out-dir "$tmp" "$tmp/kcheck.rs"
}

step cargo-test cargo test --workspace --locked
step kernel-rustc kernel_flags_build "$krustc"
step kernel-clippy kernel_flags_build "$kclippy"
step cargo-clippy cargo clippy --workspace --all-targets --locked -- -D warnings

echo "host tests: $passed passed, $failed failed"
[ $failed = 0 ]
