#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# iSCSI over RDMA (iSER) on the device, data verified:
#   vm-run [--provider P1[,P2]] [--vms 2] --timeout 900 tools/testing/guest/iser.sh [MIB]
# VM1 runs the LIO target (configfs: an iblock backstore on a brd RAM disk, one iSCSI
# target with its portal on port 3260 switched to iSER); VM2 runs open-iscsi from the
# host root (iscsid; iscsiadm discovery and login through the `iser` interface), checks
# that the session's transport is iser, and runs fio with crc32c verification on the
# disk it gets, writing MIB MiB (default 32). With one VM, both sides are on it. VM2
# tells VM1 on TCP port 4503 when it is done.
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"

[ -n "${RRXE_GID_INDEX:-}" ] || die "no device: do not use --no-device"
mib=${1:-32}
done_port=4503
iqn=iqn.2024-11.dev.rrxe:target
role=${RRXE_ROLE:-single}
case $role in
server | single) target=${RRXE_MY_IP:-10.0.0.1} ;;
client) target=$RRXE_PEER_IP ;;
*) die "unknown role $role" ;;
esac
echo "# iSER: role $role, target $target:3260, $mib MiB, $RRXE_DEV"
hostroot_setup || die "host root"

lio=/sys/kernel/config/target
tpg=$lio/iscsi/$iqn/tpgt_1

lio_up() {
	modprobe brd rd_nr=1 rd_size=$(((mib + 64) * 1024)) &&
		modprobe target_core_iblock && modprobe iscsi_target_mod && modprobe ib_isert ||
		return 1
	mkdir -p $lio/core/iblock_0/disk0 &&
		echo udev_path=/dev/ram0 >$lio/core/iblock_0/disk0/control &&
		echo 1 >$lio/core/iblock_0/disk0/enable &&
		mkdir -p "$tpg/lun/lun_0" &&
		ln -s $lio/core/iblock_0/disk0 "$tpg/lun/lun_0/disk0" &&
		mkdir "$tpg/np/$target:3260" &&
		echo 1 >"$tpg/np/$target:3260/iser" &&
		echo 0 >"$tpg/attrib/authentication" &&
		echo 1 >"$tpg/attrib/generate_node_acls" &&
		echo 0 >"$tpg/attrib/demo_mode_write_protect" &&
		echo 1 >"$tpg/enable"
}

lio_down() {
	echo 0 >"$tpg/enable" 2>/dev/null
	rmdir "$tpg/np/$target:3260" 2>/dev/null
	rm -f "$tpg/lun/lun_0/disk0"
	rmdir "$tpg/lun/lun_0" "$tpg" "$lio/iscsi/$iqn" 2>/dev/null
	rmdir $lio/core/iblock_0/disk0 $lio/core/iblock_0 2>/dev/null
	modprobe -r ib_isert iscsi_target_mod target_core_iblock 2>/dev/null
	modprobe -r brd 2>/dev/null
}

# The SCSI disk of the iSER session, once it shows up.
iser_disk() {
	local i d
	for i in $(seq 1 50); do
		for d in /sys/class/iscsi_session/session*/device/target*/*/block/*; do
			[ -e "$d" ] && echo "/dev/${d##*/}" && return 0
		done
		sleep 0.2
	done
	return 1
}

client_run() {
	local dev st
	modprobe ib_iser && modprobe sd_mod || { tap_fail "modprobe ib_iser sd_mod"; return; }
	mkdir -p "$HOSTROOT/run/lock/iscsi" "$HOSTROOT/var/lib/iscsi"
	# iscsiadm keeps its discovery and node records in /etc/iscsi: a writable copy.
	rm -rf /tmp/etc-iscsi && cp -r "$HOSTROOT/etc/iscsi" /tmp/etc-iscsi &&
		mount --bind /tmp/etc-iscsi "$HOSTROOT/etc/iscsi" || { tap_fail "/etc/iscsi"; return; }
	# In a session of its own: when it stops (iscsiadm -k), iscsid signals its process
	# group, which would otherwise be this script's.
	check "iscsid" hostroot_run "{ setsid iscsid -f >/tmp/iscsid.log 2>&1 & } && sleep 2 &&
		pgrep -x iscsid >/dev/null || { cat /tmp/iscsid.log; exit 1; }"
	check "discovery through iser finds $iqn" peer_retry -n 60 hostroot_run \
		"iscsiadm -m discovery -t sendtargets -p $target:3260 -I iser | grep -q '$iqn'"
	check "login through iser" hostroot_run \
		"iscsiadm -m node -T $iqn -p $target:3260 -I iser --login"
	check "the session's transport is iser" hostroot_run \
		"iscsiadm -m session -P 1 | grep -q 'Iface Transport: iser'"
	if dev=$(iser_disk); then
		tap_ok "disk $dev"
		st=0
		hostroot_run -t 600 "fio --thread --eta=never --name=w --filename=$dev --direct=1 --ioengine=libaio \
			--iodepth=16 --rw=randwrite --bsrange=4k-1m --size=${mib}m \
			--verify=crc32c --verify_fatal=1 --do_verify=1 --randrepeat=1 \
			--output=/tmp/fio.log" || st=$?
		sed -n '/WRITE:/p;/READ:/p;/err=/p' "$HOSTROOT/tmp/fio.log" 2>/dev/null | sed 's/^/#   /'
		check "fio random write $mib MiB, 4k-1m, depth 16, crc32c verified" [ $st = 0 ]
	else
		tap_fail "no disk appeared"
	fi
	check "logout" hostroot_run "iscsiadm -m node -T $iqn -p $target:3260 -I iser --logout"
	hostroot_run "iscsiadm -k 0" >/dev/null 2>&1
	umount "$HOSTROOT/etc/iscsi"
	modprobe -r ib_iser 2>/dev/null
}

case $role in
single)
	check "LIO iSER target on $target:3260" lio_up
	client_run
	lio_down
	;;
server)
	check "LIO iSER target on $target:3260" lio_up
	run_to 900 busybox nc -l -p $done_port </dev/null >/dev/null
	check "initiator VM finished" [ $? = 0 ]
	lio_down
	;;
client)
	client_run
	peer_retry -n 30 busybox nc "$target" $done_port </dev/null >/dev/null ||
		echo "# could not tell the target VM"
	;;
esac
hostroot_teardown
tap_done
