#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# The newest rdma-core test suite: rdma-core from the newest pyverbs source distribution
# on PyPI (it holds the whole rdma-core tree), built in place in
# $RRXE_CACHE/rdma-core/VERSION with its own libibverbs, rxe provider and pyverbs, and
# installed nowhere. Debian's cmake, ninja, cython3 and /usr/bin/python3 build it: the
# guest runs the suite in a chroot of the host root (read-only on /host), where the tree
# has the same path and /usr/bin/python3 is the interpreter pyverbs was built for.
# Prints the tree's directory (the rdma-core source, its build in build/).
#   rdma-core-new.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tools/build/env.sh
. "$here/env.sh"

# pyverbs 59.0 (2025-08) is rdma-core v59.0; its tests need a pyverbs of the same tree.
version=59.0
url=https://files.pythonhosted.org/packages/98/f5/c7f7425c53b313492f35cea6785fefe5d9b98040ce94a66a6f6354fc91ab/pyverbs-$version.tar.gz
sha256=b30d56bb620b3d3b4301876f9a04c964be1c76cc6553a451e1465f1c6ac9f20e

dir=$RRXE_CACHE/rdma-core/$version
src=$dir/pyverbs-$version/rdma-core
if [ -f "$dir/.rrxe-built" ]; then
	echo "$src"
	exit 0
fi
"$here/deps.sh" >&2
rm -rf "$dir"
mkdir -p "$dir"
log=$dir/build.log
echo "rdma-core-new: building rdma-core $version in $dir (log: $log)" >&2
{
	curl -fsSL -o "$dir/pyverbs.tar.gz" "$url"
	echo "$sha256  $dir/pyverbs.tar.gz" | sha256sum -c --quiet
	tar -C "$dir" -xzf "$dir/pyverbs.tar.gz"
	mkdir -p "$src/build"
	cd "$src/build"
	# Not a python of the build user's own (pyenv, a virtualenv): the guest's.
	PATH=/usr/sbin:/usr/bin:/sbin:/bin cmake -GNinja -DIN_PLACE=1 -DNO_MAN_PAGES=1 \
		-DENABLE_STATIC=0 -DPYTHON_EXECUTABLE=/usr/bin/python3 ..
	# cmake writes this wrapper when it finds a Cython to build pyverbs with.
	[ -x python/cython ] || { echo "no cython: pyverbs would not be built"; exit 1; }
	PATH=/usr/sbin:/usr/bin:/sbin:/bin ninja
	[ -d python/pyverbs ] || { echo "pyverbs was not built"; exit 1; }
} >"$log" 2>&1 || { tail -n 20 "$log" >&2; exit 1; }
touch "$dir/.rrxe-built"
echo "$src"
