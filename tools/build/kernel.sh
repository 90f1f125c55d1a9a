#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build (or find in the cache) the Rust-enabled 6.12 test kernel that rrxe is built and
# tested against; it also builds the C rdma_rxe reference as a module.
#
#   kernel.sh           build if missing, print the kernel build directory
#   kernel.sh --path    print the directory without building
#   kernel.sh --debug [--path]
#                       the same for the debug kernel: rrxe-debug.config (KASAN, UBSAN,
#                       KFENCE, kmemleak on, object debugging) on top of rrxe-test.config
#   kernel.sh --bench [--path]
#                       the same for the bench kernel (make bench): rrxe-bench.config (no
#                       lockdep, lock or leak debugging) on top of rrxe-test.config
#
# The cache key covers everything that changes the result: kernel source version,
# config fragment, rustc, clang and bindgen versions, and KBUILD_REV below.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tools/build/env.sh
. "$here/env.sh"

KBUILD_REV=1
tarball=/usr/src/linux-source-6.12.tar.xz
# The flavour: test, or debug or bench, which add rrxe-FLAVOUR.config and "-FLAVOUR" to
# the build directory's name.
flavour=test sfx=
case ${1:-} in
--debug | --bench)
	flavour=${1#--} sfx=-${1#--}
	shift
	;;
esac

# The effective fragment: rrxe-test.config, and for the debug and bench kernels
# rrxe-FLAVOUR.config on top (its options replace the same options of the first).
fragment=$(mktemp)
trap 'rm -f "$fragment"' EXIT
if [ "$flavour" != test ]; then
	opts() { sed -nE 's/^(# )?(CONFIG_[A-Za-z0-9_]+)[= ].*/\2/p' "$1"; }
	grep -vwF -f <(opts "$here/rrxe-$flavour.config") "$here/rrxe-test.config" >"$fragment"
	cat "$here/rrxe-$flavour.config" >>"$fragment"
else
	cat "$here/rrxe-test.config" >"$fragment"
fi

key_input() {
	echo "rev $KBUILD_REV"
	dpkg-query -W -f='${Version}\n' linux-source-6.12
	/usr/bin/rustc --version
	clang-19 --version | head -n 1
	echo "bindgen $BINDGEN_VERSION"
	cat "$fragment"
}
key=$(key_input | sha256sum | cut -c1-16)
kver=$(dpkg-query -W -f='${Version}' linux-source-6.12 | cut -d- -f1)
kdir=$RRXE_CACHE/kernel/$kver$sfx-$key

if [ "${1:-}" = --path ]; then
	echo "$kdir"
	exit 0
fi

# Built already: no need to wait for a build of another key.
if [ -f "$kdir/.rrxe-built" ]; then
	echo "$kdir"
	exit 0
fi
mkdir -p "$RRXE_CACHE/kernel"
exec 9>"$RRXE_CACHE/kernel/.lock"
flock 9
if [ -f "$kdir/.rrxe-built" ]; then
	echo "$kdir"
	exit 0
fi

log=$kdir.log
echo "kernel: building $kver${sfx:+ $flavour} ($key) in $kdir; log: $log" >&2
start=$(date +%s)
{
	rm -rf "$kdir"
	mkdir -p "$kdir"
	tar xf "$tarball" -C "$kdir" --strip-components=1
	cd "$kdir"
	make "${KMAKE_VARS[@]}" rustavailable
	make "${KMAKE_VARS[@]}" tinyconfig
	scripts/kconfig/merge_config.sh -m .config "$fragment"
	make "${KMAKE_VARS[@]}" olddefconfig
} >"$log" 2>&1 || { tail -n 30 "$log" >&2; exit 1; }

# Kconfig silently drops options whose dependencies are unmet: check every line held.
bad=0
while IFS= read -r line; do
	case $line in
	CONFIG_*=*)
		grep -qxF "$line" "$kdir/.config" || { echo "kernel: config lost: $line" >&2; bad=1; }
		;;
	"# CONFIG_"*" is not set")
		opt=${line#\# }
		opt=${opt%% *}
		! grep -q "^$opt=" "$kdir/.config" || { echo "kernel: config set: $line" >&2; bad=1; }
		;;
	esac
done <"$fragment"
[ $bad = 0 ] || exit 1

(cd "$kdir" && make -j"$(nproc)" "${KMAKE_VARS[@]}" bzImage modules) >>"$log" 2>&1 ||
	{ tail -n 40 "$log" >&2; exit 1; }
touch "$kdir/.rrxe-built"
echo "kernel: built in $(($(date +%s) - start)) s" >&2
echo "$kdir"
