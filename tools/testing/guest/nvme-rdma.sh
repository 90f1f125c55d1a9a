#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# NVMe over RDMA on the device, data verified:
#   vm-run [--provider P1[,P2]] [--vms 2] --timeout 900 tools/testing/guest/nvme-rdma.sh \
#       [MIB [VARIANT]]
# The target (nvmet-rdma, a brd RAM disk as namespace 1 of one subsystem, port 4420 on
# the server's IPv4 address) runs on VM1, the host (nvme-rdma: `nvme discover`, `nvme
# connect`) on VM2; with one VM, both on it, through the device's loopback. fio from the
# host root writes MIB MiB (default 32) in random blocks of 4 KiB to 1 MiB at queue depth
# 16 with crc32c verification (--verify_fatal), then reads everything back and verifies
# it again. VM2 tells VM1 on TCP port 4500 when it is done. VARIANT: srq (the target's
# queues share an SRQ: nvmet-rdma use_srq=1), noreg (the host registers no memory for
# small contiguous I/O: nvme-rdma register_always=N), reconnect (20 connect/disconnect
# cycles, each reading the namespace, before the I/O), loss (netem drops 1 % of the host
# VM's packets during the I/O), linkdown (the host VM's link goes down for 10 s during
# the writes; the host reconnects and the I/O completes). For rdma_rw through memory
# registration on the target, boot with `--append ib_core.force_mr=1`. The target stays up until the
# VM powers off: removing its port (configfs unlink under nvmet_config_sem, then
# rdma_destroy_id, which takes the CM ID's handler_mutex) after a connect handled I/O queue
# setup in the CM handler (handler_mutex, then nvmet_config_sem) makes 6.12's lockdep
# report a possible circular locking dependency in nvmet and the RDMA CM (no driver code
# on either chain; seen with rrxe and with rxe as the target).
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"

[ -n "${RRXE_GID_INDEX:-}" ] || die "no device: do not use --no-device"
mib=${1:-32}
variant=${2:-}
case $variant in
'' | srq | noreg | reconnect | loss | linkdown) ;;
*) die "unknown variant $variant" ;;
esac
nqn=nqn.2024-11.dev.rrxe:test
port=4420
done_port=4500
role=${RRXE_ROLE:-single}
case $role in
server | single) target=${RRXE_MY_IP:-10.0.0.1} ;;
client) target=$RRXE_PEER_IP ;;
*) die "unknown role $role" ;;
esac
echo "# NVMe over RDMA: role $role, target $target:$port, $mib MiB, $RRXE_DEV"

nvmet_up() {
	local s=/sys/kernel/config/nvmet/subsystems/$nqn p=/sys/kernel/config/nvmet/ports/1
	modprobe brd rd_nr=1 rd_size=$(((mib + 64) * 1024)) || return 1
	if [ "$variant" = srq ]; then
		modprobe nvmet-rdma use_srq=1 || return 1
	else
		modprobe nvmet-rdma || return 1
	fi
	configfs_up || return 1
	mkdir "$s" && echo 1 >"$s/attr_allow_any_host" && mkdir "$s/namespaces/1" &&
		echo /dev/ram0 >"$s/namespaces/1/device_path" &&
		echo 1 >"$s/namespaces/1/enable" && mkdir "$p" &&
		echo rdma >"$p/addr_trtype" && echo ipv4 >"$p/addr_adrfam" &&
		echo "$target" >"$p/addr_traddr" && echo $port >"$p/addr_trsvcid" &&
		ln -s "$s" "$p/subsystems/$nqn"
}

# The block device of the connected subsystem, once it shows up.
nvme_dev() {
	local c i
	for i in $(seq 1 50); do
		for c in /sys/class/nvme/nvme*; do
			[ -e "$c/subsysnqn" ] && [ "$(cat "$c/subsysnqn")" = "$nqn" ] || continue
			for n in "$c"/nvme*n1; do
				[ -e "$n" ] && echo "/dev/${n##*/}" && return 0
			done
		done
		sleep 0.2
	done
	return 1
}

# cycles N: N times connect, read the first MiB of the namespace, disconnect.
cycles() {
	local i dev
	for i in $(seq 1 "$1"); do
		hostroot_run "$conn" >/dev/null || { echo "connect $i failed"; return 1; }
		dev=$(nvme_dev) || { echo "no namespace after connect $i"; return 1; }
		dd if="$dev" of=/dev/null bs=1M count=1 iflag=direct 2>/dev/null ||
			{ echo "read $i failed"; return 1; }
		hostroot_run "nvme disconnect -n $nqn" | grep -q 'disconnected 1' ||
			{ echo "disconnect $i failed"; return 1; }
	done
}

reconnected() {
	dmesg | grep -qE 'nvme nvme[0-9]+: Successfully reconnected'
}

# The loss and linkdown variants' disturbance of the host VM's link during the writes.
disturb_start() {
	case $variant in
	loss) tc qdisc add dev eth0 root netem loss 1% ;;
	linkdown)
		(sleep 3 && ip link set eth0 down && sleep 10 && ip link set eth0 up) &
		DISTURB_PID=$!
		;;
	esac
}

disturb_end() {
	case $variant in
	loss) tc qdisc del dev eth0 root ;;
	linkdown)
		wait "$DISTURB_PID"
		check "the host reconnected after the link came back" reconnected
		;;
	esac
}

host_run() {
	local dev st
	local conn="nvme connect -t rdma -a $target -s $port -n $nqn --reconnect-delay=2"
	if [ "$variant" = noreg ]; then
		modprobe nvme-rdma register_always=N
	else
		modprobe nvme-rdma
	fi || { tap_fail "modprobe nvme-rdma"; return; }
	hostroot_setup || { tap_fail "host root"; return; }
	check "nvme discover finds $nqn" peer_retry -n 60 \
		hostroot_run "nvme discover -t rdma -a $target -s $port | grep -q 'subnqn: *$nqn'"
	[ "$variant" != reconnect ] || check "20 connect, read, disconnect cycles" cycles 20
	check "nvme connect" hostroot_run "$conn --ctrl-loss-tmo=300"
	if dev=$(nvme_dev); then
		tap_ok "namespace $dev"
		# Random blocks of 4 KiB..1 MiB written with a crc32c header each, then read back
		# and verified a second time by a separate verify pass.
		st=0
		disturb_start
		hostroot_run -t 600 "fio --thread --eta=never --name=w --filename=$dev --direct=1 --ioengine=libaio \
			--iodepth=16 --rw=randwrite --bsrange=4k-1m --size=${mib}m \
			--verify=crc32c --verify_fatal=1 --do_verify=1 --randrepeat=1 \
			--output=/tmp/fio-w.log" || st=$?
		disturb_end
		sed -n '/WRITE:/p;/READ:/p;/err=/p;/verify/p' "$HOSTROOT/tmp/fio-w.log" 2>/dev/null |
			sed 's/^/#   /'
		check "fio random write $mib MiB, 4k-1m, depth 16, crc32c verified" [ $st = 0 ]
		st=0
		hostroot_run -t 600 "fio --thread --eta=never --name=w --filename=$dev --direct=1 --ioengine=libaio \
			--iodepth=16 --rw=randwrite --bsrange=4k-1m --size=${mib}m \
			--verify=crc32c --verify_fatal=1 --verify_only=1 --randrepeat=1 \
			--output=/tmp/fio-r.log" || st=$?
		sed -n '/READ:/p;/err=/p' "$HOSTROOT/tmp/fio-r.log" 2>/dev/null | sed 's/^/#   /'
		check "fio read back $mib MiB, verified" [ $st = 0 ]
	else
		tap_fail "no namespace of $nqn appeared"
	fi
	check "nvme disconnect" hostroot_run "nvme disconnect -n $nqn | grep -q 'disconnected 1'"
	hostroot_teardown
	modprobe -r nvme-rdma nvme-fabrics
}

case $role in
single)
	check "nvmet-rdma target on $target:$port" nvmet_up
	host_run
	;;
server)
	check "nvmet-rdma target on $target:$port" nvmet_up
	# Until the host VM says it is done (or 15 minutes pass).
	run_to 900 busybox nc -l -p $done_port </dev/null >/dev/null
	check "host VM finished" [ $? = 0 ]
	;;
client)
	host_run
	peer_retry -n 30 busybox nc "$target" $done_port </dev/null >/dev/null ||
		echo "# could not tell the target VM"
	;;
esac
tap_done
