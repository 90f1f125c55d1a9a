#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# SMB Direct (SMB 3 over RDMA) on the device, data verified:
#   vm-run [--provider P1[,P2]] [--vms 2] --timeout 900 tools/testing/guest/smb-direct.sh [MIB]
# VM1 runs ksmbd (ksmbd.mountd from the host root) sharing a tmpfs directory; VM2 mounts
# it with cifs and the `rdma` option, shows in /proc/fs/cifs/DebugData that the session
# runs over SMB Direct, copies a file of MIB MiB (default 16) of random data there and
# back and compares SHA-256 sums, and runs fio with crc32c verification on the mount. With
# one VM, both sides are on it. VM2 tells VM1 on TCP port 4502 when it is done.
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"

[ -n "${RRXE_GID_INDEX:-}" ] || die "no device: do not use --no-device"
mib=${1:-16}
done_port=4502
pass=rrxe-test
role=${RRXE_ROLE:-single}
case $role in
server | single) server=${RRXE_MY_IP:-10.0.0.1} ;;
client) server=$RRXE_PEER_IP ;;
*) die "unknown role $role" ;;
esac
echo "# SMB Direct: role $role, server $server, $mib MiB, $RRXE_DEV"
hostroot_setup || die "host root"

ksmbd_up() {
	local d=$HOSTROOT/run/ksmbd
	modprobe ksmbd || return 1
	# ksmbd opens the share in the kernel, from the guest's root, ksmbd.mountd in the
	# chroot: the same directory on the same path in both.
	mkdir -p "$d" /run/share "$HOSTROOT/run/share" &&
		mount -t tmpfs -o size=$((mib * 3 + 64))m tmpfs /run/share &&
		mount --bind /run/share "$HOSTROOT/run/share" || return 1
	cat >"$d/ksmbd.conf" <<-EOF
		[global]
		server min protocol = SMB3
		[share]
		path = /run/share
		read only = no
		force user = root
	EOF
	hostroot_run "ksmbd.adduser -c /run/ksmbd/ksmbd.conf -i /run/ksmbd/pwd.db \
		-a root -p $pass && ksmbd.mountd -c /run/ksmbd/ksmbd.conf -u /run/ksmbd/pwd.db"
}

ksmbd_down() {
	hostroot_run "ksmbd.control -s" >/dev/null 2>&1
	sleep 1
	umount "$HOSTROOT/run/share" 2>/dev/null
	umount /run/share 2>/dev/null
	modprobe -r ksmbd 2>/dev/null
}

client_run() {
	local m=/run/smb st opts
	modprobe cifs || { tap_fail "modprobe cifs"; return; }
	opts=rdma,vers=3.1.1,username=root,password=$pass
	mkdir -p "$HOSTROOT$m"
	check "mount -t cifs //$server/share -o $opts" peer_retry -n 60 \
		hostroot_run "mount -t cifs //$server/share $m -o $opts"
	if ! grep -q " $HOSTROOT$m cifs" /proc/mounts; then
		tap_fail "nothing mounted on $m"
		return
	fi
	grep " $HOSTROOT$m " /proc/mounts | sed 's/^/#   /'
	grep -iE 'rdma|smbd|direct' /proc/fs/cifs/DebugData | head -n 5 | sed 's/^/#   /'
	check "DebugData shows an SMB Direct transport" grep -qi 'SMBDirect' /proc/fs/cifs/DebugData
	head -c $((mib << 20)) /dev/urandom >/tmp/smb-src
	check "cp $mib MiB to the server" cp /tmp/smb-src "$HOSTROOT$m/file"
	check "cp it back" cp "$HOSTROOT$m/file" /tmp/smb-back
	check "sha256 of the copy back" [ "$(sha256sum </tmp/smb-src)" = "$(sha256sum </tmp/smb-back)" ]
	rm -f /tmp/smb-src /tmp/smb-back "$HOSTROOT$m/file"
	st=0
	hostroot_run -t 600 "fio --thread --eta=never --name=smb --directory=$m --ioengine=psync --direct=1 \
		--rw=randwrite --bsrange=4k-256k --size=${mib}m --numjobs=2 \
		--verify=crc32c --verify_fatal=1 --do_verify=1 --output=/tmp/fio.log" || st=$?
	sed -n '/WRITE:/p;/READ:/p;/err=/p' "$HOSTROOT/tmp/fio.log" 2>/dev/null | sed 's/^/#   /'
	check "fio random write ${mib} MiB x 2 jobs, crc32c verified" [ $st = 0 ]
	check "umount" hostroot_run "umount $m"
}

case $role in
single)
	check "ksmbd with SMB Direct" ksmbd_up
	client_run
	ksmbd_down
	;;
server)
	check "ksmbd with SMB Direct" ksmbd_up
	run_to 900 busybox nc -l -p $done_port </dev/null >/dev/null
	check "client VM finished" [ $? = 0 ]
	ksmbd_down
	;;
client)
	client_run
	peer_retry -n 30 busybox nc "$server" $done_port </dev/null >/dev/null ||
		echo "# could not tell the server VM"
	;;
esac
hostroot_teardown
tap_done
