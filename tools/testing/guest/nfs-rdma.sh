#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# NFS over RDMA on the device (proto=rdma, port 20049), data verified:
#   vm-run [--provider P1[,P2]] [--vms 2] --timeout 900 tools/testing/guest/nfs-rdma.sh \
#       [VERS [MIB]]
# VM1 serves a tmpfs directory (knfsd, with rpcbind and rpc.mountd from the host root);
# VM2 mounts it with NFS version VERS (default 4.2; 3 too) over RDMA, checks that the
# mount uses the RDMA transport, copies a file of MIB MiB (default 16) of random data to
# the server and back and compares SHA-256 sums, and runs fio with crc32c verification on
# the mount. With one VM, both sides are on it (loopback through the device). VM2 tells
# VM1 on TCP port 4501 when it is done.
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
# shellcheck source=tools/testing/guest/traffic-lib.sh
. "${RRXE_GUEST_DIR:-/usr/share/rrxe/guest}/traffic-lib.sh"

[ -n "${RRXE_GID_INDEX:-}" ] || die "no device: do not use --no-device"
vers=${1:-4.2}
mib=${2:-16}
done_port=4501
role=${RRXE_ROLE:-single}
case $role in
server | single) server=${RRXE_MY_IP:-10.0.0.1} ;;
client) server=$RRXE_PEER_IP ;;
*) die "unknown role $role" ;;
esac
echo "# NFS over RDMA: role $role, server $server:20049, NFS $vers, $mib MiB, $RRXE_DEV"
hostroot_setup || die "host root"

nfsd_up() {
	modprobe nfsd && modprobe rpcrdma || return 1
	# In the chroot's /proc, where rpc.nfsd and rpc.mountd look.
	nfsd_fs=$HOSTROOT/proc/fs/nfsd
	mounted "$nfsd_fs" || mount -t nfsd nfsd "$nfsd_fs" || return 1
	# knfsd resolves the export in the guest's root, rpc.mountd in the chroot: the same
	# directory on the same path in both.
	mkdir -p /run/export "$HOSTROOT/run/export" &&
		mount -t tmpfs -o size=$((mib * 3 + 64))m tmpfs /run/export &&
		mount --bind /run/export "$HOSTROOT/run/export" || return 1
	# NFSv4 refuses OPENs for a grace period after nfsd starts (90 s by default): the
	# shortest there is, 10 s.
	echo 10 >"$nfsd_fs/nfsv4leasetime" && echo 10 >"$nfsd_fs/nfsv4gracetime" || return 1
	hostroot_run "rpcbind -w && rpc.mountd && \
		exportfs -o rw,no_root_squash,insecure,fsid=0 '*:/run/export' && \
		rpc.nfsd 4" || return 1
	echo "rdma 20049" >"$nfsd_fs/portlist" || return 1
	grep -q 'rdma 20049' "$nfsd_fs/portlist"
}

nfsd_down() {
	hostroot_run "rpc.nfsd 0; exportfs -ua; pkill rpc.mountd; pkill rpcbind" >/dev/null 2>&1
	umount "$HOSTROOT/proc/fs/nfsd" 2>/dev/null
	umount "$HOSTROOT/run/export" 2>/dev/null
	umount /run/export 2>/dev/null
}

client_run() {
	local m=/run/nfs st opts path
	modprobe nfs && modprobe rpcrdma || { tap_fail "modprobe nfs rpcrdma"; return; }
	# NFSv4 mounts paths below the export with fsid=0, its pseudo-root; v3 the export's
	# own path.
	case $vers in
	3) modprobe nfsv3; opts=vers=3,nolock path=/run/export ;;
	*) modprobe nfsv4; opts=vers=$vers path=/ ;;
	esac
	mkdir -p "$HOSTROOT$m"
	check "mount -t nfs -o $opts,proto=rdma,port=20049 $server:$path" peer_retry -n 60 \
		hostroot_run "mount -t nfs -o $opts,proto=rdma,port=20049 $server:$path $m"
	if ! grep -q " $HOSTROOT$m nfs" /proc/mounts; then
		tap_fail "nothing mounted on $m"
		return
	fi
	grep " $HOSTROOT$m " /proc/mounts | sed 's/^/#   /'
	check "the mount uses proto=rdma" grep -q " $HOSTROOT$m nfs.*proto=rdma" /proc/mounts
	# A file there and back, compared.
	head -c $((mib << 20)) /dev/urandom >/tmp/nfs-src
	check "cp $mib MiB to the server" cp /tmp/nfs-src "$HOSTROOT$m/file"
	check "cp it back" cp "$HOSTROOT$m/file" /tmp/nfs-back
	# A fresh mount reads what the server has, not this client's page cache.
	hostroot_run "umount $m && mount -t nfs -o $opts,proto=rdma,port=20049 $server:$path $m"
	check "sha256 of the copy read after a new mount" [ "$(sha256sum </tmp/nfs-src)" = \
		"$(sha256sum <"$HOSTROOT$m/file")" ]
	check "sha256 of the copy back" [ "$(sha256sum </tmp/nfs-src)" = "$(sha256sum </tmp/nfs-back)" ]
	rm -f /tmp/nfs-src /tmp/nfs-back "$HOSTROOT$m/file"
	st=0
	hostroot_run -t 600 "fio --thread --eta=never --name=nfs --directory=$m --ioengine=psync --direct=1 \
		--rw=randwrite --bsrange=4k-256k --size=${mib}m --numjobs=2 \
		--verify=crc32c --verify_fatal=1 --do_verify=1 --output=/tmp/fio.log" || st=$?
	sed -n '/WRITE:/p;/READ:/p;/err=/p' "$HOSTROOT/tmp/fio.log" 2>/dev/null | sed 's/^/#   /'
	check "fio random write ${mib} MiB x 2 jobs, crc32c verified" [ $st = 0 ]
	check "umount" hostroot_run "umount $m"
}

case $role in
single)
	check "knfsd with RDMA on port 20049" nfsd_up
	client_run
	nfsd_down
	;;
server)
	check "knfsd with RDMA on port 20049" nfsd_up
	run_to 900 busybox nc -l -p $done_port </dev/null >/dev/null
	check "client VM finished" [ $? = 0 ]
	nfsd_down
	;;
client)
	client_run
	peer_retry -n 30 busybox nc "$server" $done_port </dev/null >/dev/null ||
		echo "# could not tell the server VM"
	;;
esac
# Retransmissions and drops on this side, for the throughput figures.
tr_counters
hostroot_teardown
tap_done
