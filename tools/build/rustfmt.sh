#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Format (or with --check, verify) every Rust source of the project with the Debian
# rustfmt that matches the kernel's rustc. Generated bindings are skipped.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/env.sh"
cd "$here/../.."
mapfile -t files < <(git ls-files '*.rs')
[ ${#files[@]} -gt 0 ] || exit 0
exec /usr/bin/rustfmt --config-path .rustfmt.toml ${1:+"$1"} "${files[@]}"
