#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs rdma-core's pyverbs tests (Debian python3-pyverbs 44, from the host root mounted on
# /host) against the device: pyverbs.sh [TEST...] (unittest names, e.g. test_pd
# test_cq.CQAPITest; default: the whole suite), or pyverbs.sh FILE.py: a script of ours
# from the guest directory, run with the device name as its argument. Prints the report;
# the status is the suite's or the script's.
set -uo pipefail
dev=${RRXE_DEV:?}
root=/host
[ -x "$root/usr/bin/python3" ] || { echo "no host root with python3 on /host"; exit 1; }
[ -d "$root/usr/share/doc/rdma-core/tests" ] || { echo "no pyverbs tests on the host"; exit 1; }

# A writable scratch root: the host root read-only, with the guest's /proc, /sys, /dev,
# and a tmpfs for the unpacked tests.
mkdir -p /tmp/pyroot
mount --bind "$root" /tmp/pyroot
for d in proc sys dev dev/pts dev/shm; do
	mount --bind "/$d" "/tmp/pyroot/$d"
done
mount -t tmpfs tmpfs /tmp/pyroot/tmp
mkdir -p /tmp/pyroot/tmp/tests
cp -r "$root"/usr/share/doc/rdma-core/tests/. /tmp/pyroot/tmp/tests/
gunzip -f /tmp/pyroot/tmp/tests/*.gz
gid=${RRXE_GID_INDEX:-1}
case ${1:-} in
*.py)
	cp "${RRXE_GUEST_DIR:-/usr/share/rrxe/guest}"/*.py /tmp/pyroot/tmp/tests/
	cmd="python3 $1 $dev"
	;;
*) cmd="python3 run_tests.py --dev $dev --gid $gid -v $*" ;;
esac
chroot /tmp/pyroot /usr/bin/env -i PATH=/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 \
	/bin/sh -c "cd /tmp/tests && $cmd" 2>&1
st=$?
for d in tmp dev/shm dev/pts dev sys proc; do
	umount "/tmp/pyroot/$d"
done
umount /tmp/pyroot
exit $st
