#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Teardown under traffic (vm-run --provider rrxe|rxe --no-device; the provider is
# RRXE_PROVIDER, rrxe if unset): programs move data with ib_write_bw, ib_read_bw or
# rping -V (in turn), and each scenario tears something down while they do, ROUNDS times
# (default 3). Two topologies:
#
#   rrxe  two devices: rrxe8 on veth0 (10.9.0.1) and rrxe9 on veth1 (10.9.0.2, network
#         namespace tdn); the server runs on rrxe9 in tdn, the client on rrxe8.
#   rxe   the C rdma_rxe, the reference, for comparison (Documentation/infiniband/rrxe.rst,
#         Testing): one device, rxe8 on veth0 (its peer veth1 in tdn), server and client
#         both on it, in loopback through 10.9.0.1 (as make bench does on rxe0). 6.12's
#         rxe opens its UDP sockets and routes in init_net only, so a device of its in
#         another namespace could not work; and two rxe devices in one namespace do not
#         reach each other: rxe routes with its net device as the output interface, so
#         a packet for veth1's address leaves through veth0, and veth1 drops it, and the
#         ARP request before it, as coming from a local address (martian; unless
#         accept_local).
#
#   link-delete    rdma link delete rrxe8 (rxe8); the device goes, the programs end (or are
#                  killed), the device comes back with rdma link add
#   netdev-down    ip link set veth0 down, then up: the device stays, the port follows
#   netdev-delete  ip link delete veth0 (and its peer): the devices go
#   netns-delete   the server is killed and namespace tdn deleted while the client
#                  sends: rrxe9 goes with veth1, and rrxe8 with its peer veth0. Skipped on
#                  rxe, which has no device in a namespace (it would be netdev-delete)
#   rmmod          rmmod rrxe (rdma_rxe) fails while the programs hold the device (EBUSY),
#                  then succeeds once they are killed, and the module loads again
#   kill9          kill -9 of both sides at once
#   mtu            the MTU of both ends changes (1280, 9000, 1500) while data moves
#
# After a scenario the programs are killed if still running (ending with an error, or
# waiting for ever, is their right: what they used went away) and every device must be
# where the scenario says. At the end: the devices deleted, the module unloads (no leaked
# module reference), no UDP socket on port 4791 is left in either namespace, and with
# kmemleak=on nothing new leaked (on failure: how many objects, and the tasks that
# allocated them). Kernel reports (KASAN, lockdep, WARN, soft lockup) fail the run in
# vm-run. Each round of a scenario starts with a kernel log line "teardown: round R/N
# SCENARIO under PROGRAM (PROVIDER)", so that tools/testing/teardown-table can tell in
# which scenario and round a report came; it builds the table of rounds, failures,
# reports and leaks, rxe beside rrxe. `make check` runs one round (rrxe only); `make
# conformance` 20 and `make check-debug` 2 on the debug kernel, on rrxe and on rxe.
# The destroy of a receiving QP and then its CQ by a kernel consumer is destroy-race.sh.
#
#   teardown.sh [ROUNDS [SCENARIO,...]]
#
#   tools/testing/vm-run --provider rrxe|rxe --no-device --append kmemleak=on \
#       --timeout 1800 tools/testing/guest/teardown.sh 10
set -uo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"
# shellcheck source=tools/testing/guest/traffic-lib.sh
. "${RRXE_GUEST_DIR:-/usr/share/rrxe/guest}/traffic-lib.sh"

prov=${RRXE_PROVIDER:-rrxe}
rounds=${1:-3}
scenarios=${2:-link-delete,netdev-down,netdev-delete,netns-delete,rmmod,kill9,mtu}
NS=tdn
NSX=(ip netns exec "$NS")
progs=(ib_write_bw ib_read_bw rping)
# Per provider: its module, its devices (the client's first, the server's last: one
# device on rxe), the server's address (the RDMA CM's, and perftest's TCP exchange), the
# prefix that starts the server (TR_SX), and the scenarios that make no sense for it.
declare -A skip=()
case $prov in
rrxe)
	mod=rrxe devs=(rrxe8 rrxe9) addr=10.9.0.2 TR_SX=("${NSX[@]}")
	what="two devices on a veth pair" gone="both devices gone"
	;;
rxe)
	mod=rdma_rxe devs=(rxe8) addr=10.9.0.1 TR_SX=()
	what="rxe8 on veth0 of a veth pair" gone="rxe8 gone"
	skip[netns-delete]="rdma_rxe has no network namespace support in 6.12 (its UDP sockets"
	skip[netns-delete]+=" and routes are init_net's), so it has no device in $NS to lose;"
	skip[netns-delete]+=" deleting $NS deletes veth0 through its peer, which is netdev-delete"
	;;
*) die "unknown provider '$prov' (rrxe or rxe)" ;;
esac
cdev=${devs[0]} sdev=${devs[-1]}
# What devs_present wants: every device there, none, all but the client's.
on=() off=()
for _ in "${devs[@]}"; do
	on+=(1) off+=(0)
done
first_off=(0 "${on[@]:1}")
leak=0
kmemleak_on && leak=1 && echo clear >/sys/kernel/debug/kmemleak

# mark TEXT: a kernel log line, for tools/testing/teardown-table: the kernel's reports
# after it came during TEXT.
mark() {
	echo "teardown: $* ($prov)" >/dev/kmsg 2>/dev/null || :
}

# any_dev: one of the devices exists.
any_dev() {
	local d
	for d in "${devs[@]}"; do
		[ ! -e "/sys/class/infiniband/$d" ] || return 0
	done
	return 1
}

# The devices and the veth pair, from whatever is left.
setup() {
	ip netns del $NS 2>/dev/null
	ip link del veth0 2>/dev/null
	for _ in $(seq 50); do
		any_dev || break
		sleep 0.1
	done
	if [ "$prov" = rrxe ]; then
		netns_pair $NS rrxe
	else
		netns_veth $NS || return 1
		dev_add rxe rxe8 veth0 || { echo "setup: $DEV_ERR" >&2; return 1; }
	fi
}

# devs_present WANT...: whether each device (in the order of devs) exists (1) or not
# (0), within 10 s (unregistration may be queued).
devs_present() {
	local i d have=() want=("$@") msg=''
	for i in $(seq 100); do
		have=()
		for d in "${devs[@]}"; do
			if [ -e "/sys/class/infiniband/$d" ]; then have+=(1); else have+=(0); fi
		done
		[ "${have[*]}" = "${want[*]}" ] && return 0
		[ "$i" = 100 ] || sleep 0.1
	done
	for i in "${!devs[@]}"; do
		msg+="${msg:+, }${devs[i]} present ${have[i]} (want ${want[i]:-?})"
	done
	echo "# $msg"
	return 1
}

# start PROG: the server (in the namespace on rrxe), the client here, data moving.
start() {
	local prog=$1 gc gs
	PORT=$((20000 + RANDOM % 20000))
	if ! { gc=$(gid_index "$cdev") && gs=$(gid_index "$sdev"); }; then
		echo "# no GID"
		return 1
	fi
	if [ "$prog" = rping ]; then
		"${TR_SX[@]}" rping -s -a $addr -p $PORT -C 1000000 -S 4096 -V >/tmp/td-s 2>&1 &
		SP=$!
		tr_wait_listen $PORT $SP
		rping -c -a $addr -p $PORT -C 1000000 -S 4096 -V >/tmp/td-c 2>&1 &
		CP=$!
	else
		"${TR_SX[@]}" "$prog" -d "$sdev" -x "$gs" -p $PORT -F -D 60 -s 65536 >/tmp/td-s 2>&1 &
		SP=$!
		tr_wait_listen $PORT $SP
		"$prog" -d "$cdev" -x "$gc" -p $PORT -F -D 60 -s 65536 $addr >/tmp/td-c 2>&1 &
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
	kill -9 "$SP" "$CP" 2>/dev/null
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

# On rxe the client's device is the server's too: it goes, and nothing stays.
sc_link_delete() {
	act rdma link delete "$cdev"
	stop
	done_ok && devs_present "${first_off[@]}" || return 1
	dev_add "$prov" "$cdev" veth0 || { echo "# $DEV_ERR"; return 1; }
}

sc_netdev_down() {
	ip link set veth0 down || return 1
	sleep 1
	ip link set veth0 up || return 1
	stop
	devs_present "${on[@]}" && wait_gid "$cdev" 10
}

# Deleting either end of a veth pair deletes both, and the devices with them.
sc_netdev_delete() {
	act ip link del veth0
	stop
	done_ok && devs_present "${off[@]}" && setup
}

sc_netns_delete() {
	kill -9 "$SP"
	act ip netns del $NS
	stop
	done_ok && devs_present "${off[@]}" && setup
}

sc_rmmod() {
	local st=0
	if rmmod $mod 2>/dev/null; then
		echo "# rmmod $mod succeeded while the device was in use"
		st=1
	fi
	stop
	rmmod $mod || { echo "# rmmod $mod failed once the programs ended"; return 1; }
	[ ! -e /sys/module/$mod ] || { echo "# $mod still loaded"; return 1; }
	setup || return 1
	return $st
}

sc_kill9() {
	kill -9 "$SP" "$CP"
	stop
	devs_present "${on[@]}"
}

sc_mtu() {
	local m
	for m in 1280 9000 1500; do
		ip link set veth0 mtu $m && "${NSX[@]}" ip link set veth1 mtu $m || return 1
		sleep 0.5
	done
	stop
	devs_present "${on[@]}"
}

mark setup
setup || die "$what"
declare -A fails runs
n=0
for r in $(seq 1 "$rounds"); do
	for s in ${scenarios//,/ }; do
		# A skipped scenario takes its turn too: each scenario and round gets the same
		# program on both providers.
		prog=${progs[$((n % ${#progs[@]}))]}
		n=$((n + 1))
		[ -z "${skip[$s]:-}" ] || continue
		runs[$s]=$((${runs[$s]:-0} + 1))
		mark "round $r/$rounds $s under $prog"
		if ! { start "$prog" && "sc_${s//-/_}"; }; then
			fails[$s]=$((${fails[$s]:-0} + 1))
			echo "# round $r: $s under $prog failed"
			stop
			setup || die "round $r: cannot set the devices up again after $s"
		fi
	done
done
for s in ${scenarios//,/ }; do
	if [ -n "${skip[$s]:-}" ]; then
		tap_skip "$s on $prov: ${skip[$s]}"
	elif [ "${fails[$s]:-0}" = 0 ]; then
		tap_ok "$s under traffic: ${runs[$s]:-0} of ${runs[$s]:-0} rounds"
	else
		tap_fail "$s under traffic: ${fails[$s]} of ${runs[$s]} rounds failed"
	fi
done

# Everything goes: no device, module or socket may stay behind.
mark "final checks"
ip netns del $NS
ip link del veth0 2>/dev/null
check "$gone" devs_present "${off[@]}"
check "rmmod $mod (no reference left)" rmmod $mod
udp4791() {
	# Local port 4791 (0x12B7) in the UDP tables of this namespace.
	awk '$2 ~ /:12B7$/ { n++ } END { exit n > 0 }' /proc/net/udp /proc/net/udp6
}
check "no UDP socket on port 4791 left" udp4791
# leaks REPORT: how many objects kmemleak's REPORT lists, and which tasks allocated them
# (digits in their names as N: kworker/uN:N).
leaks() {
	local n by
	n=$(grep -c '^unreferenced object' <<<"$1")
	[ "$n" -gt 0 ] || return 0
	by=$(sed -n 's/^ *comm "\(.*\)", pid .*/\1/p' <<<"$1" | sed 's/[0-9][0-9]*/N/g' |
		sort | uniq -c | sort -rn |
		awk '{ c = $1; sub(/^ *[0-9]+ /, ""); printf "%s%s %s", (NR > 1 ? ", " : ""), $0, c }')
	echo "# kmemleak: $n unreferenced objects (allocated by: $by)"
}
if [ $leak = 1 ]; then
	new=$(kmemleak_new)
	if [ -z "$new" ]; then
		tap_ok "kmemleak: nothing new"
	else
		tap_fail "kmemleak: new unreferenced objects"
		leaks "$new"
		echo "$new" | head -40 | sed 's/^/#   /'
	fi
fi
tap_done
