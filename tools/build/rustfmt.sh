#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Format (or with --check, verify) every Rust source of the project with the Debian
# rustfmt that matches the kernel's rustc. rustfmt follows `mod` declarations (also
# `#[path]` ones), so it is given crate roots only: the module's and the host crates'.
# Generated bindings are not in git, hence skipped.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tools/build/env.sh
. "$here/env.sh"
cd "$here/../.."
mapfile -t files < <(git ls-files --cached --others --exclude-standard \
	drivers/infiniband/sw/rrxe/rrxe_main.rs 'tools/host/*/src/lib.rs' 'tools/host/*/tests/*.rs' \
	'tools/host/*/fuzz/fuzz_targets/*.rs' 'tools/host/*/src/bin/*.rs')
[ ${#files[@]} -gt 0 ] || exit 0
exec /usr/bin/rustfmt --config-path .rustfmt.toml ${1:+"$1"} "${files[@]}"
