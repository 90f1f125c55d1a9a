#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Teardown under traffic (vm-run --provider rrxe --no-device): two rrxe devices, rrxe8 on
# veth0 (10.9.0.1) and rrxe9 on veth1 (10.9.0.2, network namespace tdn), move data with
# ib_write_bw, ib_read_bw or rping -V (in turn), and each scenario tears something down
# while they do, ROUNDS times (default 3):
#
#   link-delete    rdma link delete rrxe8; the device goes, the programs end (or are
#                  killed), the device comes back with rdma link add
#   netdev-down    ip link set veth0 down, then up: the device stays, the port follows
#   netdev-delete  ip link delete veth0 (and its peer): both devices go
#   netns-delete   the server is killed and namespace tdn deleted while the client
#                  sends: rrxe9 goes with veth1, and rrxe8 with its peer veth0
#   rmmod          rmmod rrxe fails while the programs hold the device (EBUSY), then
#                  succeeds once they are killed, and the module loads again
#   kill9          kill -9 of both sides at once
#   mtu            the MTU of both ends changes (1280, 9000, 1500) while data moves
#
# After a scenario the programs are killed if still running (ending with an error, or
# waiting for ever, is their right: what they used went away) and every device must be
# where the scenario says. At the end: both devices deleted, rrxe unloads (no leaked module reference), no
# UDP socket on port 4791 is left in either namespace, and with kmemleak=on nothing new
# leaked. Kernel reports (KASAN, lockdep, WARN, soft lockup) fail the run in vm-run;
# `make check-debug` runs 100 rounds on the debug kernel. The destroy of a receiving QP
# and then its CQ by a kernel consumer is destroy-race.sh.
#
#   teardown.sh [ROUNDS [SCENARIO,...]]
#
#   tools/testing/vm-run --provider rrxe --no-device --append kmemleak=on --timeout 1800 \
#       tools/testing/guest/teardown.sh 10
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
# shellcheck source=tools/testing/guest/traffic-lib.sh
. "${RRXE_GUEST_DIR:-/usr/share/rrxe/guest}/traffic-lib.sh"

rounds=${1:-3}
scenarios=${2:-link-delete,netdev-down,netdev-delete,netns-delete,rmmod,kill9,mtu}
NS=tdn
TR_SX=(ip netns exec "$NS")
progs=(ib_write_bw ib_read_bw rping)
leak=0
kmemleak_on && leak=1 && echo clear >/sys/kernel/debug/kmemleak

# Both devices and the veth pair, from whatever is left.
setup() {
	ip netns del $NS 2>/dev/null
	ip link del veth0 2>/dev/null
	for _ in $(seq 50); do
		[ -e /sys/class/infiniband/rrxe8 ] || [ -e /sys/class/infiniband/rrxe9 ] || break
		sleep 0.1
	done
	netns_pair $NS rrxe
}

# devs_present WANT8 WANT9: whether rrxe8 and rrxe9 exist (1) or not (0), within 10 s
# (unregistration may be queued).
devs_present() {
	local i a b
	for i in $(seq 100); do
		a=0 b=0
		[ -e /sys/class/infiniband/rrxe8 ] && a=1
		[ -e /sys/class/infiniband/rrxe9 ] && b=1
		[ "$a$b" = "$1$2" ] && return 0
		[ "$i" = 100 ] || sleep 0.1
	done
	echo "# rrxe8 present $a (want $1), rrxe9 present $b (want $2)"
	return 1
}

# start PROG: the server in the namespace, the client here, data moving.
start() {
	local prog=$1 g8 g9
	PORT=$((20000 + RANDOM % 20000))
	g8=$(gid_index rrxe8) && g9=$(gid_index rrxe9) || { echo "# no GID"; return 1; }
	if [ "$prog" = rping ]; then
		"${TR_SX[@]}" rping -s -a 10.9.0.2 -p $PORT -C 1000000 -S 4096 -V >/tmp/td-s 2>&1 &
		SP=$!
		tr_wait_listen $PORT $SP
		rping -c -a 10.9.0.2 -p $PORT -C 1000000 -S 4096 -V >/tmp/td-c 2>&1 &
		CP=$!
	else
		"${TR_SX[@]}" "$prog" -d rrxe9 -x "$g9" -p $PORT -F -D 60 -s 65536 >/tmp/td-s 2>&1 &
		SP=$!
		tr_wait_listen $PORT $SP
		"$prog" -d rrxe8 -x "$g8" -p $PORT -F -D 60 -s 65536 10.9.0.2 >/tmp/td-c 2>&1 &
		CP=$!
	fi
	# Connected and moving data (perftest's and rping's setup takes about a second).
	sleep 2
	kill -0 $CP 2>/dev/null || { echo "# $prog client ended early:"; tail -3 /tmp/td-c | sed 's/^/#   /'; return 1; }
}

# stop: the programs end within a second, or are killed (what they used may have gone
# away under them: perftest then waits for completions for ever, as with rxe).
stop() {
	local p
	for _ in $(seq 10); do
		kill -0 "$SP" 2>/dev/null || kill -0 "$CP" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 $SP $CP 2>/dev/null
	for p in $SP $CP; do
		wait "$p" 2>/dev/null
	done
	return 0
}

# act CMD...: a teardown step in the background (unregistration waits for the programs
# that hold the device to close it); done_ok: it ended, successfully, within 30 s of
# the programs' end.
act() {
	"$@" &
	AP=$!
}
done_ok() {
	local st
	for _ in $(seq 300); do
		kill -0 "$AP" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$AP" 2>/dev/null; then
		echo "# teardown step still running 30 s after the programs ended"
		return 1
	fi
	wait "$AP"
	st=$?
	[ $st = 0 ] || echo "# teardown step failed: status $st"
	return $st
}

sc_link_delete() {
	act rdma link delete rrxe8
	stop
	done_ok && devs_present 0 1 || return 1
	dev_add rrxe rrxe8 veth0 || { echo "# $DEV_ERR"; return 1; }
}

sc_netdev_down() {
	ip link set veth0 down || return 1
	sleep 1
	ip link set veth0 up || return 1
	stop
	devs_present 1 1 && wait_gid rrxe8 10
}

# Deleting either end of a veth pair deletes both, and both devices with them.
sc_netdev_delete() {
	act ip link del veth0
	stop
	done_ok && devs_present 0 0 && setup
}

sc_netns_delete() {
	kill -9 $SP
	act ip netns del $NS
	stop
	done_ok && devs_present 0 0 && setup
}

sc_rmmod() {
	local st=0
	if rmmod rrxe 2>/dev/null; then
		echo "# rmmod rrxe succeeded while the device was in use"
		st=1
	fi
	stop
	rmmod rrxe || { echo "# rmmod rrxe failed once the programs ended"; return 1; }
	[ ! -e /sys/module/rrxe ] || { echo "# rrxe still loaded"; return 1; }
	setup || return 1
	return $st
}

sc_kill9() {
	kill -9 $SP $CP
	stop
	devs_present 1 1
}

sc_mtu() {
	local m
	for m in 1280 9000 1500; do
		ip link set veth0 mtu $m && "${TR_SX[@]}" ip link set veth1 mtu $m || return 1
		sleep 0.5
	done
	stop
	devs_present 1 1
}

setup || die "two devices on a veth pair"
declare -A fails runs
n=0
for r in $(seq 1 "$rounds"); do
	for s in ${scenarios//,/ }; do
		prog=${progs[$((n % ${#progs[@]}))]}
		n=$((n + 1))
		runs[$s]=$((${runs[$s]:-0} + 1))
		if ! { start "$prog" && "sc_${s//-/_}"; }; then
			fails[$s]=$((${fails[$s]:-0} + 1))
			echo "# round $r: $s under $prog failed"
			stop
			setup || die "round $r: cannot set the devices up again after $s"
		fi
	done
done
for s in ${scenarios//,/ }; do
	if [ "${fails[$s]:-0}" = 0 ]; then
		tap_ok "$s under traffic: ${runs[$s]} of ${runs[$s]} rounds"
	else
		tap_fail "$s under traffic: ${fails[$s]} of ${runs[$s]} rounds failed"
	fi
done

# Everything goes: no device, module or socket may stay behind.
ip netns del $NS
ip link del veth0 2>/dev/null
check "both devices gone" devs_present 0 0
check "rmmod rrxe (no reference left)" rmmod rrxe
udp4791() {
	# Local port 4791 (0x12B7) in the UDP tables of this namespace.
	awk '$2 ~ /:12B7$/ { n++ } END { exit n > 0 }' /proc/net/udp /proc/net/udp6
}
check "no UDP socket on port 4791 left" udp4791
if [ $leak = 1 ]; then
	new=$(kmemleak_new)
	if [ -z "$new" ]; then
		tap_ok "kmemleak: nothing new"
	else
		tap_fail "kmemleak: new unreferenced objects"
		echo "$new" | head -40 | sed 's/^/#   /'
	fi
fi
tap_done
