# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Helpers for guest test scripts run by tools/testing/vm-run (sourced; guest path
# /usr/share/rrxe/lib.sh, also in $RRXE_LIB). Works in bash and busybox sh (/init uses it).
#
#   gid_index DEV [PREFIX]       index of port 1's RoCE v2 GID starting with PREFIX (sysfs
#                                spelling, e.g. fe80: or fd00:0000:...; default the
#                                IPv4-mapped prefix 0000:...:ffff:)
#   wait_gid DEV [SECS [PREFIX]] wait (default 10 s) until gid_index finds one
#   netns_veth NS                a veth pair: veth0 10.9.0.1/24 here, veth1 10.9.0.2/24 in
#                                a new network namespace NS
#   dev_add [-k] PROV DEV NETDEV [NS]  a device DEV of provider PROV (rxe|rrxe) on NETDEV
#                                (in network namespace NS), its RoCE v2 IPv4-mapped GID up
#                                within 10 s; the other driver's devices and module go
#                                first (rxe holds UDP 4791 in init_net while loaded), unless
#                                -k keeps them (the other driver's devices then live in
#                                another namespace). Sets DEV_ERR on failure
#   netns_pair NS [PROV]         netns_veth NS, with PROV9 on veth1 (in NS) and PROV8 on
#                                veth0 (PROV default rrxe), once 10.9.0.2 answers ping
#   run_to SECS CMD...           run CMD with a time limit (x8 on the debug kernel); 124
#                                and a message on expiry
#   peer_retry [-n N] [-d S] [-w PID] CMD...  retry CMD (default 60 times, 1 s apart)
#                                until it succeeds, e.g. a client whose server is still
#                                starting; -w: stop retrying once process PID (the local
#                                server) is gone
#   bg_start LOG CMD...          start CMD in the background, output to LOG; sets BG_PID
#   bg_wait PID LOG              wait for it, print LOG, return its status
#   perftest_bw FILE             the "BW average" column of a perftest bandwidth report
#   tcp_listening PORT [CMD...]  a TCP socket listens on PORT (CMD: a prefix that enters
#                                another namespace, e.g. ip netns exec ns1)
#   kmsg_mark / dmesg_since M    put a marker into the kernel log / print lines after it
#   peer_ctl stop-peer SECS | peer_ctl reset-peer
#                                ask the host (vm-run --vms 2) to stop the other VM for SECS
#                                s, or to power it off and boot it again (there RRXE_BOOT
#                                is 2); vm-run acts within about a second, without
#                                acknowledging: watch the peer (ping) to see it happen
#   tap_ok/tap_fail/tap_skip DESC, check DESC CMD..., tap_done, die MSG
#                                TAP-style results; tap_done returns 1 if anything failed
#   kmemleak_on                  kmemleak is enabled (booted with kmemleak=on)
#   kmemleak_new                 what kmemleak reports since the last `echo clear`: two scans
#                                6 s apart (an object must stay unreferenced across both);
#                                a line saying so if scanning failed
#   slab_shrink [CACHE...]       shrinks slab caches, so that their counts are of objects in use
#   slab_snapshot FILE           slab caches and their object counts, from /proc/slabinfo
#   slab_report BEFORE AFTER     total objects in both, and the caches that grew most
#   pyroot_setup / pyroot_run CMD... / pyroot_teardown
#                                a chroot of the host root (/host) with the guest's /proc,
#                                /sys, /dev and a tmpfs /tmp holding rdma-core's pyverbs
#                                tests, unpacked in /tmp/tests; pyroot_run runs CMD (sh
#                                syntax) there, in /tmp/tests, with a clean environment
#   hostroot_setup / hostroot_run [-t SECS] CMD... / hostroot_teardown
#                                the same chroot ($HOSTROOT) for Debian's client programs
#                                (nvme-cli, fio, NFS, SMB and iSCSI tools, UCX): also
#                                configfs and writable tmpfs on /tmp, /run, /var/lib,
#                                /var/log and /var/cache; CMD runs with a clean environment
#                                in /tmp
#   mounted DIR                  DIR is a mount point
#   configfs_up                  configfs mounted on /sys/kernel/config

GID_V4MAPPED=0000:0000:0000:0000:0000:ffff:

# gid_index DEV [PREFIX]
gid_index() {
	local d="/sys/class/infiniband/$1/ports/1" p="${2:-$GID_V4MAPPED}" g n v t
	for g in "$d"/gids/*; do
		v=
		read -r v <"$g" 2>/dev/null || continue
		case $v in
		"$p"*) ;;
		*) continue ;;
		esac
		n=${g##*/}
		t=
		read -r t <"$d/gid_attrs/types/$n" 2>/dev/null || continue
		[ "$t" = "RoCE v2" ] || continue
		echo "$n"
		return 0
	done
	return 1
}

# wait_gid DEV [SECS [PREFIX]]
wait_gid() {
	local i=0 n=$((${2:-10} * 10))
	while ! gid_index "$1" "${3:-}" >/dev/null; do
		i=$((i + 1))
		[ $i -le $n ] || return 1
		sleep 0.1
	done
}

# netns_veth NS
netns_veth() {
	if ! { ip netns add "$1" && ip link add veth0 type veth peer name veth1 &&
		ip link set veth1 netns "$1" && ip addr add 10.9.0.1/24 dev veth0 && ip link set veth0 up &&
		ip netns exec "$1" ip link set lo up &&
		ip netns exec "$1" ip addr add 10.9.0.2/24 dev veth1 &&
		ip netns exec "$1" ip link set veth1 up; }; then
		echo "netns_veth $1 failed" >&2
		return 1
	fi
}

# dev_add [-k] PROV DEV NETDEV [NS]: the device preamble of a test. If the other soft-RoCE
# driver is loaded, its devices (named rxe* or rrxe*) are deleted and it is unloaded (not
# with -k: both drivers then serve, in different namespaces); then PROV's module is
# loaded (explicitly: /init blacklists the provider not asked for), DEV is added on
# NETDEV (inside NS if given) and must get its RoCE v2 IPv4-mapped GID within 10 s. On
# failure DEV_ERR says which step failed and the status is 1.
dev_add() {
	local keep= prov dev netdev ns mod omod opfx d
	if [ "${1:-}" = -k ]; then
		keep=1
		shift
	fi
	prov=$1 dev=$2 netdev=$3 ns=${4:-}
	DEV_ERR=
	case $prov in
	rxe) mod=rdma_rxe omod=rrxe opfx=rrxe ;;
	rrxe) mod=rrxe omod=rdma_rxe opfx=rxe ;;
	*) DEV_ERR="unknown provider '$prov'"; return 1 ;;
	esac
	if [ -z "$keep" ] && [ -e "/sys/module/$omod" ]; then
		for d in /sys/class/infiniband/"$opfx"[0-9]*; do
			[ -e "$d" ] || continue
			rdma link delete "${d##*/}" || { DEV_ERR="rdma link delete ${d##*/}"; return 1; }
		done
		rmmod "$omod" || { DEV_ERR="rmmod $omod"; return 1; }
	fi
	modprobe "$mod" || { DEV_ERR="modprobe $mod"; return 1; }
	if [ -n "$ns" ]; then
		ip netns exec "$ns" rdma link add "$dev" type "$prov" netdev "$netdev"
	else
		rdma link add "$dev" type "$prov" netdev "$netdev"
	fi || { DEV_ERR="rdma link add $dev type $prov netdev $netdev${ns:+ (in $ns)}"; return 1; }
	wait_gid "$dev" 10 || { DEV_ERR="no RoCE v2 IPv4-mapped GID on $dev after 10 s"; return 1; }
}

# use_provider P: for a script that switches drivers in one boot, started with rxe0
# (vm-run --provider rxe) and cur=rxe dev=rxe0 gid=$RRXE_GID_INDEX: unless P is $cur,
# dev_add deletes the other driver's devices, unloads it, loads P and creates its device
# (rxe0 or rrxe0 on eth0); then cur, dev and gid (its GID index) are P's.
use_provider() {
	local p=$1
	[ "$cur" != "$p" ] || return 0
	cur=none
	dev_add "$p" "${p}0" eth0 || return 1
	cur=$p dev=${p}0
	gid=$(gid_index "$dev")
}

# netns_pair NS [PROV]
netns_pair() {
	local p=${2:-rrxe}
	netns_veth "$1" || return 1
	if ! { dev_add "$p" "${p}9" veth1 "$1" && dev_add "$p" "${p}8" veth0; }; then
		echo "netns_pair $1: $DEV_ERR" >&2
		return 1
	fi
	if ! peer_retry -n 30 ping -c 1 -W 1 10.9.0.2 >/dev/null; then
		echo "netns_pair $1: 10.9.0.2 does not answer ping" >&2
		return 1
	fi
}

# scaled SECS: SECS, multiplied by 8 on the debug kernel (see run_to).
scaled() {
	if [ "${RRXE_KERNEL:-test}" = debug ]; then
		echo $(($1 * 8))
	else
		echo "$1"
	fi
}

# run_to SECS CMD...: SECS multiplied by 8 on the debug kernel, which runs work about 6.4
# times slower (vm-run --debug). CMD is run by the path bash finds: the guest's timeout
# is busybox's, which runs its own applet for a bare name it has (ip: no netns).
run_to() {
	local secs start st cmd
	secs=$(scaled "$1")
	shift
	cmd=$(type -P "$1") && set -- "$cmd" "${@:2}"
	start=$(date +%s)
	timeout -k 5 "$secs" "$@"
	st=$?
	if [ $st -ge 124 ] && [ $(($(date +%s) - start)) -ge "$secs" ]; then
		echo "TIMEOUT: still running after $secs s: $*" >&2
		return 124
	fi
	return $st
}

# peer_retry [-n TRIES] [-d DELAY] [-w PID] CMD...: the output of the last attempt goes
# to stdout.
peer_retry() {
	local tries=60 delay=1 i=1 st out watch=
	while :; do
		case $1 in
		-n) tries=$2; shift 2 ;;
		-d) delay=$2; shift 2 ;;
		-w) watch=$2; shift 2 ;;
		*) break ;;
		esac
	done
	out=$(mktemp)
	while :; do
		st=0
		"$@" >"$out" 2>&1 || st=$?
		if [ $st != 0 ] && [ -n "$watch" ] && ! kill -0 "$watch" 2>/dev/null; then
			echo "peer_retry: process $watch is gone, not retrying" >&2
			i=$tries
		fi
		if [ $st = 0 ] || [ "$i" -ge "$tries" ]; then
			cat "$out"
			rm -f "$out"
			[ $st = 0 ] || echo "peer_retry: giving up after $i attempts: $*" >&2
			return $st
		fi
		if [ "$i" = 1 ]; then
			echo "peer_retry: '$*' failed: $({ grep -iE "couldn|fail|error|refused" "$out" ||
				tail -n 1 "$out"; } | tail -n 1); retrying" >&2
		fi
		i=$((i + 1))
		sleep "$delay"
	done
}

# bg_start LOG CMD...
bg_start() {
	local log=$1
	shift
	"$@" >"$log" 2>&1 &
	# shellcheck disable=SC2034 # for the caller
	BG_PID=$!
}

# bg_wait PID LOG
bg_wait() {
	local st=0
	wait "$1" || st=$?
	sed 's/^/    | /' "$2"
	return $st
}

# perftest_bw FILE: prints the average bandwidth (MB/sec column) of the first result row.
perftest_bw() {
	awk '/BW average/ { hdr = 1; next } hdr && $1 ~ /^[0-9]+$/ { print $4; exit }' "$1"
}

# tcp_listening PORT [CMD...]: CMD (e.g. ip netns exec ns1) reads the socket tables.
tcp_listening() {
	local hex
	hex=$(printf ':%04X' "$1")
	shift
	{ "$@" cat /proc/net/tcp /proc/net/tcp6 2>/dev/null || :; } |
		awk -v p="$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }'
}

kmsg_mark() {
	local m
	m="rrxe-mark-$$-$(date +%s)-${RANDOM:-0}"
	echo "$m" >/dev/kmsg
	echo "$m"
}

# Two VMs: the server VM says its servers listen by accepting a TCP connection on the
# first one's port plus this (peer_tag).
READY_OFFSET=10000

# peer_tag SECS PORT TAG: on the client VM of two, waits up to SECS for the server VM to
# accept a TCP connection on PORT and send a line: 0 if the line is TAG, 2 if it is
# another (kept in PEER_GOT: the VMs are out of step), 1 if none came.
peer_tag() {
	local end=$(($(date +%s) + $1))
	PEER_GOT=
	while [ "$(date +%s)" -lt "$end" ]; do
		if PEER_GOT=$(timeout 5 bash -c 'exec 3<>"/dev/tcp/$1/$2" && read -r -t 4 l <&3 &&
			echo "$l"' - "$RRXE_PEER_IP" "$2" 2>/dev/null); then
			[ "$PEER_GOT" = "$3" ] && return 0
			return 2
		fi
		sleep 0.2
	done
	return 1
}

# peer_ctl REQUEST...: a kernel log line, so that it reaches the console, and vm-run, whole.
peer_ctl() {
	echo "RRXE-CTL $*" >/dev/kmsg
}

# dmesg_since MARK
dmesg_since() {
	dmesg | awk -v m="$1" 'found { print } index($0, m) { found = 1 }'
}

_tap_n=0
_tap_failed=0
tap_ok() {
	_tap_n=$((_tap_n + 1))
	echo "ok $_tap_n - $*"
}
tap_fail() {
	_tap_n=$((_tap_n + 1))
	_tap_failed=$((_tap_failed + 1))
	echo "not ok $_tap_n - $*"
}
tap_skip() {
	_tap_n=$((_tap_n + 1))
	echo "ok $_tap_n - # SKIP $*"
}

# check DESC CMD...: runs CMD, records ok/not ok.
check() {
	local desc=$1 st=0
	shift
	"$@" || st=$?
	if [ $st = 0 ]; then
		tap_ok "$desc"
	else
		tap_fail "$desc (status $st)"
	fi
	return 0
}

tap_done() {
	echo "1..$_tap_n"
	if [ $_tap_failed -gt 0 ]; then
		echo "# FAILED: $_tap_failed of $_tap_n"
		return 1
	fi
	echo "# all $_tap_n passed"
}

# die MSG: a failed step that makes the rest pointless.
die() {
	tap_fail "$*"
	tap_done || :
	exit 1
}

# The file is writable even when kmemleak is off; "stack=on" (the default) fails then.
kmemleak_on() {
	echo stack=on 2>/dev/null >/sys/kernel/debug/kmemleak
}

kmemleak_new() {
	if ! echo scan 2>/dev/null >/sys/kernel/debug/kmemleak; then
		echo "kmemleak scan failed (kmemleak off?)"
		return 1
	fi
	sleep 6
	echo scan >/sys/kernel/debug/kmemleak
	cat /sys/kernel/debug/kmemleak
}

# hw_snapshot FILE DEV...: "DEV NAME VALUE" lines in FILE, every port-1 hw_counter of each
# DEV.
hw_snapshot() {
	local file=$1 d f
	shift
	for d; do
		for f in /sys/class/infiniband/"$d"/ports/1/hw_counters/*; do
			[ -f "$f" ] && [ "${f##*/}" != lifespan ] && echo "$d ${f##*/} $(cat "$f")"
		done
	done >"$file"
}

# hw_grown BEFORE AFTER DEVS NAME...: how much the sum of the counters NAME of the devices
# DEVS (a word list) grew from the hw_snapshot BEFORE to AFTER; status 1 if a device lacks
# one of them (counted as 0 then).
hw_grown() {
	awk -v devs="$3" -v names="${*:4}" '
		BEGIN {
			split(devs, d)
			split(names, n)
			for (i in d) for (j in n) want[d[i] " " n[j]] = 1
		}
		{ k = $1 " " $2 }
		!(k in want) { next }
		FILENAME == ARGV[1] { b[k] = $3; next }
		{ a[k] = $3 }
		END {
			for (k in want) {
				if (k in b && k in a) s += a[k] - b[k]; else miss = 1
			}
			print s + 0
			exit miss
		}' "$1" "$2"
}

# slab_shrink [CACHE...]: shrinks the caches (all of them if none is named), so that
# /proc/slabinfo counts the objects in use: SLUB counts the free objects of slabs cached
# per CPU as active, and on the debug kernel KASAN's quarantine holds freed objects (many
# thousands of skbs after a busy test) until their cache is shrunk.
slab_shrink() {
	local c
	if [ $# -eq 0 ]; then
		for c in /sys/kernel/slab/*/shrink; do echo 1 >"$c"; done 2>/dev/null
	else
		for c; do echo 1 >"/sys/kernel/slab/$c/shrink"; done 2>/dev/null
	fi
	return 0
}

# slab_snapshot FILE: "cache objects" lines, after slab_shrink.
slab_snapshot() {
	slab_shrink
	awk 'NR > 2 { print $1, $2 }' /proc/slabinfo >"$1"
}

# slab_report BEFORE AFTER: prints (as TAP comments) the totals and the 8 caches whose
# object counts grew most.
slab_report() {
	awk '
		FNR == NR { before[$1] = $2; tb += $2; next }
		{ ta += $2; d = $2 - before[$1]; if (d > 0) printf "%d %s %d %d\n", d, $1, before[$1], $2 }
		END { printf "TOTAL %d %d\n", tb, ta > "/dev/stderr" }
	' "$1" "$2" 2>/tmp/.slab_total | sort -rn | head -n 8 >/tmp/.slab_grew
	read -r _ tb ta </tmp/.slab_total
	echo "# slab objects: $tb before, $ta after ($((ta - tb)))"
	while read -r d name b a; do
		echo "#   $name: $b -> $a (+$d)"
	done </tmp/.slab_grew
	rm -f /tmp/.slab_total /tmp/.slab_grew
}

PYROOT=/tmp/pyroot
# pyroot_setup [TESTS]: a chroot of the host root on $PYROOT with the pyverbs tests of
# directory TESTS (default Debian's rdma-core 44 tests from the host) in /tmp/tests; returns
# 1 (with a message) if the host root has no python3 or there are no tests.
pyroot_setup() {
	local d tests=${1:-/host/usr/share/doc/rdma-core/tests}
	[ -x /host/usr/bin/python3 ] || { echo "no host root with python3 on /host"; return 1; }
	[ -d "$tests" ] || { echo "no pyverbs tests in $tests"; return 1; }
	mkdir -p "$PYROOT"
	mount --bind /host "$PYROOT" || return 1
	for d in proc sys dev dev/pts dev/shm; do
		mount --bind "/$d" "$PYROOT/$d" || return 1
	done
	mount -t tmpfs tmpfs "$PYROOT/tmp" || return 1
	mkdir -p "$PYROOT/tmp/tests"
	cp -r "$tests/." "$PYROOT/tmp/tests/"
	# Debian ships some of them compressed.
	for d in "$PYROOT"/tmp/tests/*.gz; do
		[ ! -f "$d" ] || gunzip -f "$d" || return 1
	done
}

# pyroot_run CMD...: CMD's status.
pyroot_run() {
	chroot "$PYROOT" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 \
		/bin/sh -c "cd /tmp/tests && $*"
}

pyroot_teardown() {
	local d
	for d in tmp dev/shm dev/pts dev sys proc; do
		umount "$PYROOT/$d" 2>/dev/null
	done
	umount "$PYROOT" 2>/dev/null
	return 0
}

HOSTROOT=/tmp/hostroot
# mounted DIR: DIR is a mount point (the guest has no mountpoint(1)).
mounted() {
	grep -q "^[^ ]* $1 " /proc/mounts
}

# configfs_up: configfs mounted on /sys/kernel/config.
configfs_up() {
	mounted /sys/kernel/config || mount -t configfs configfs /sys/kernel/config
}

# hostroot_setup: returns 1 (with a message) if there is no host root.
hostroot_setup() {
	local d
	[ -x /host/usr/bin/env ] || { echo "no host root on /host"; return 1; }
	configfs_up || return 1
	mkdir -p "$HOSTROOT"
	mount --bind /host "$HOSTROOT" || return 1
	for d in proc sys dev; do
		mount -o rbind "/$d" "$HOSTROOT/$d" || return 1
	done
	# Daemons write their state and pid files here.
	for d in tmp run var/lib var/log var/cache; do
		mount -t tmpfs tmpfs "$HOSTROOT/$d" || return 1
	done
	mkdir -p "$HOSTROOT/run/lock" "$HOSTROOT/var/lib/nfs/rpc_pipefs" \
		"$HOSTROOT/var/lib/nfs/v4recovery"
	: >"$HOSTROOT/var/lib/nfs/etab"
	: >"$HOSTROOT/var/lib/nfs/rmtab"
}

# hostroot_run [-t SECS] CMD...: CMD's status (124 after SECS seconds, as run_to).
hostroot_run() {
	local secs=0
	if [ "$1" = -t ]; then
		secs=$2
		shift 2
	fi
	set -- chroot "$HOSTROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/tmp LANG=C.UTF-8 /bin/sh -c "cd /tmp && $*"
	if [ "$secs" -gt 0 ]; then
		run_to "$secs" "$@"
	else
		"$@"
	fi
}

hostroot_teardown() {
	local d
	for d in var/cache var/log var/lib run tmp dev sys proc; do
		umount -l "$HOSTROOT/$d" 2>/dev/null
	done
	umount -l "$HOSTROOT" 2>/dev/null
	return 0
}
