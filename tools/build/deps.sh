#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Install what rrxe's build and tests need on Debian 12, idempotently:
# the Debian Rust toolchain (its packages pinned to one version; cargo-web too when
# the machine has no rustup cargo), clang/lld/llvm 19,
# the kernel source, QEMU and the guest userspace, and bindgen-cli from crates.io
# into the cache. Prints nothing when everything is already present.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tools/build/env.sh
. "$here/env.sh"

# Preferred toolchain and kernel source; the fallback is taken when the archive has
# dropped the preferred version (bookworm-security keeps only its newest rustc-web).
RUST_VERSIONS=("1.96.0+dfsg1-1~deb12u2" "1.85.0+dfsg3-1~deb12u3")
KSRC_VERSION="6.12.117-1~deb12u1"

base_pkgs=(
	build-essential flex bison bc libelf-dev libssl-dev cpio kmod rsync dwarves
	xz-utils zstd python3 git ca-certificates curl
	clang-19 lld-19 llvm-19 libclang-19-dev
	busybox-static qemu-system-x86 qemu-system-data seabios iproute2
	rdma-core ibverbs-utils ibverbs-providers rdmacm-utils perftest python3-pyverbs
	libibverbs-dev jq
	# `make bench-profile`: perf samples the guest from the host root (6.1 reads 6.12's
	# perf events and /proc/kallsyms); binutils' c++filt (build-essential) demangles Rust.
	linux-perf
	# The clients people run on soft-RoCE, used in the guest through the host root:
	# NVMe over RDMA, NFS over RDMA, SMB Direct, iSER, UCX, libfabric, qperf.
	nvme-cli fio nfs-kernel-server nfs-common rpcbind cifs-utils ksmbd-tools open-iscsi
	ucx-utils libfabric-bin qperf
	# The newest rdma-core, built in place for its test suite (rdma-core-new.sh).
	cmake ninja-build cython3 python3-dev libnl-3-dev libnl-route-3-dev libudev-dev pkg-config
)
rust_pkgs=(rustc-web rust-web-src libstd-rust-web-dev rustfmt-web rust-web-clippy)
# Without a rustup cargo, Debian's cargo-web of the same version builds the host crates
# and bindgen-cli (README).
[ -x "$HOME/.cargo/bin/cargo" ] || rust_pkgs+=(cargo-web)

sudo=
[ "$(id -u)" = 0 ] || sudo=sudo
apt_get() {
	DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 "$@"
}

installed_version() {
	dpkg-query -W -f='${db:Status-Status} ${Version}\n' "$1" 2>/dev/null |
		awk '$1 == "installed" { print $2 }'
}

# The archive offers version $2 of package $1.
has_version() {
	local versions
	versions=$(apt-cache madison "$1" | awk -F' [|] ' '{ print $2 }')
	grep -qxF "$2" <<<"$versions"
}

missing=()
for p in "${base_pkgs[@]}"; do
	[ -n "$(installed_version "$p")" ] || missing+=("$p")
done

# All the Rust packages at the same version, and that version is one we know.
rust_ok=
for v in "${RUST_VERSIONS[@]}"; do
	ok=1
	for p in "${rust_pkgs[@]}"; do
		[ "$(installed_version "$p")" = "$v" ] || ok=
	done
	[ -n "$ok" ] && rust_ok=$v && break
done

[ -n "$(installed_version linux-source-6.12)" ] || missing+=(ksrc)

if [ ${#missing[@]} -gt 0 ] || [ -z "$rust_ok" ]; then
	echo "deps: installing: ${missing[*]}$([ -n "$rust_ok" ] || echo " rust-toolchain") (log: $RRXE_CACHE/deps.log)"
	mkdir -p "$RRXE_CACHE"
	apt_get update -q >"$RRXE_CACHE/deps.log" 2>&1
	want=()
	for p in "${missing[@]}"; do
		[ "$p" = ksrc ] || want+=("$p")
	done
	if [[ " ${missing[*]} " == *" ksrc "* ]]; then
		if has_version linux-source-6.12 "$KSRC_VERSION"; then
			want+=("linux-source-6.12=$KSRC_VERSION")
		else
			echo "deps: warning: linux-source-6.12 $KSRC_VERSION is gone; taking the archive's" >&2
			want+=(linux-source-6.12)
		fi
	fi
	if [ -z "$rust_ok" ]; then
		for v in "${RUST_VERSIONS[@]}"; do
			if has_version rustc-web "$v"; then
				rust_ok=$v
				break
			fi
		done
		[ -n "$rust_ok" ] || { echo "deps: no known rustc-web version in the archive" >&2; exit 1; }
		for p in "${rust_pkgs[@]}"; do
			want+=("$p=$rust_ok")
		done
		# 1.85 splits its runtime into its own package; it must match as well.
		case $rust_ok in 1.85*) want+=("libstd-rust-web-1.85=$rust_ok") ;; esac
	fi
	# The client packages' services run in the guest, never on the host: without a
	# policy-rc.d of the host's own, one that forbids starting them while installing.
	policy=/usr/sbin/policy-rc.d
	if [ ! -e $policy ]; then
		printf '#!/bin/sh\n# rrxe deps.sh: no service starts while installing.\nexit 101\n' |
			$sudo tee $policy >/dev/null
		$sudo chmod 755 $policy
		trap '$sudo rm -f '"$policy" EXIT
	fi
	apt_get install -y -q --no-install-recommends --allow-downgrades "${want[@]}" \
		>>"$RRXE_CACHE/deps.log" 2>&1 || { tail -n 20 "$RRXE_CACHE/deps.log" >&2; exit 1; }
fi

# bindgen-cli from crates.io, into the cache (rustup's cargo or Debian's cargo-web).
if ! [ -x "$RRXE_TOOLS/bin/bindgen" ] ||
	! "$RRXE_TOOLS/bin/bindgen" --version 2>/dev/null | grep -qF "$BINDGEN_VERSION"; then
	echo "deps: installing bindgen-cli $BINDGEN_VERSION into $RRXE_TOOLS"
	rrxe_find_cargo
	cargo=$RRXE_CARGO
	[ -n "$cargo" ] || { echo "deps: cargo is needed to build bindgen-cli" >&2; exit 1; }
	env -u RUSTUP_TOOLCHAIN LIBCLANG_PATH=/usr/lib/llvm-19/lib \
		PATH="$(dirname "$cargo"):$PATH" \
		"$cargo" install bindgen-cli --version "$BINDGEN_VERSION" --locked --root "$RRXE_TOOLS" -q
fi
