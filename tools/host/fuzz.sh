#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# tools/host/fuzz.sh [SECONDS]: fuzz the protocol core for SECONDS (default 60) with
# libFuzzer through cargo-fuzz, on the stable toolchain (RUSTC_BOOTSTRAP=1 lets cargo-fuzz
# pass its -Z flags). Installs cargo-fuzz into $RRXE_CACHE/tools if missing. Builds with
# debug assertions and overflow checks and without a sanitizer: the core is safe Rust, so a
# bug shows as a panic. Exits 1 when the target crashes or cannot be built.
#
# Every run starts from the committed corpus, tools/host/rrxe-proto/fuzz/corpus/packet/
# (small and minimised; inputs that once crashed stay in it as regression cases), plus
# what earlier runs on this machine found (target/fuzz/corpus/, where new inputs go).
# Crashes land in tools/host/rrxe-proto/fuzz/artifacts/.
#
# tools/host/fuzz.sh --merge: minimise the committed corpus together with the local one
# into the committed directory (libFuzzer -merge=1), for a commit after a long run.
set -euo pipefail
merge=
if [ "${1:-}" = --merge ]; then
	merge=1
	shift
fi
secs=${1:-60}
case $secs in '' | *[!0-9]*) echo "usage: $0 [--merge] [SECONDS]" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=tools/build/env.sh
. "$top/tools/build/env.sh"

# cargo as for the host tests (env.sh: rustup's, else Debian's cargo-web), after the
# cache's tools (cargo-fuzz).
tools=$RRXE_TOOLS
[ -n "$RRXE_CARGO" ] || { echo "fuzz: no cargo (tools/build/deps.sh)" >&2; exit 1; }
PATH="$tools/bin:$(dirname "$RRXE_CARGO"):$PATH"
export PATH
unset RUSTC
cargo_fuzz_version=0.13.2

if ! cargo fuzz --version 2>/dev/null | grep -qx "cargo-fuzz $cargo_fuzz_version"; then
	echo "fuzz: installing cargo-fuzz $cargo_fuzz_version into $tools"
	cargo install --locked --root "$tools" cargo-fuzz --version "$cargo_fuzz_version"
fi

export RUSTC_BOOTSTRAP=1
target=packet
work=$top/target/fuzz
corpus=$work/corpus/$target
seeds=$top/tools/host/rrxe-proto/fuzz/corpus/$target
mkdir -p "$corpus" "$seeds"
log=$work/$target.log
cd "$top/tools/host/rrxe-proto/fuzz"

echo "fuzz: building $target"
cargo fuzz build --sanitizer none --target-dir "$work/build" "$target"

if [ -n "$merge" ]; then
	merged=$work/merged-$target
	rm -rf "$merged"
	mkdir -p "$merged"
	before=$(find "$seeds" -type f | wc -l)
	cargo fuzz run --sanitizer none --target-dir "$work/build" "$target" "$merged" \
		"$seeds" "$corpus" -- -merge=1 >"$log" 2>&1 || { tail -n 20 "$log"; exit 1; }
	rm -rf "$seeds"
	mv "$merged" "$seeds"
	echo "fuzz: $target: committed corpus $before -> $(find "$seeds" -type f | wc -l) inputs," \
		"$(find "$seeds" -type f -printf '%s\n' | awk '{ n += $1 } END { print n }') bytes ($seeds)"
	exit 0
fi

echo "fuzz: running $target for $secs s (corpus $corpus, seeds $seeds)"
set +e
cargo fuzz run --sanitizer none --target-dir "$work/build" "$target" "$corpus" "$seeds" -- \
	-max_total_time="$secs" -timeout=10 -print_final_stats=1 >"$log" 2>&1
rc=$?
set -e
grep -aE '^(#[0-9]+[[:space:]]+(INITED|DONE)|Done [0-9]+ runs|stat::number_of_executed_units|stat::average_exec_per_sec|==[0-9]+== ERROR|thread .* panicked|SUMMARY)' "$log" || true
runs=$(sed -nE 's/^Done ([0-9]+) runs in ([0-9]+) second.*/\1 \2/p' "$log" | tail -n 1)
if [ $rc = 0 ] && [ -n "$runs" ]; then
	set -- $runs
	echo "fuzz: $target: $1 runs in $2 s ($(($1 / ($2 > 0 ? $2 : 1))) exec/s), no crash: PASS"
	echo "1 passed, 0 failed"
else
	tail -n 40 "$log"
	echo "fuzz: $target: FAIL (rc $rc); log $log, artifacts in $PWD/artifacts/$target"
	echo "0 passed, 1 failed"
	exit 1
fi
