#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of `make bench-profile` (tools/bench/profile; vm-run --provider rxe
# --share-out DIR): for each provider and perftest point, perftest while Debian's perf
# samples the whole guest: `perf record -e cpu-clock -a -g`, then `perf script` while the
# provider's module is still loaded, so that its symbols resolve from /proc/kallsyms.
# One VM (role single): perftest in loopback, server and client on one device, as `make
# bench`. Two VMs (vm-run --vms 2, PROFILE_VMS=2): the server VM runs perftest's server,
# the client VM its client to the server VM's address, and each VM samples itself.
#
# Usage: profile.sh SECS "PROVIDER..." "TEST:SIZE..."
#   SECS: how long perf samples each run; TEST one of ib_write_bw, ib_read_bw, ib_send_bw
#   or their _lat counterparts.
#
# perf (package linux-perf, on the host) runs in a chroot of the host root (lib.sh's
# hostroot_setup: the guest's /proc, /sys and /dev, tmpfs /tmp), which sees every guest
# process, perftest's included. perftest is the guest image's copy of the host's binary,
# at the same path, so perf resolves its symbols from the host's file.
#
# Results, per run P-TEST-SIZE in $RRXE_OUT (the host's directory, vm-run --share-out;
# with two VMs in its subdirectory of the VM's role, server/ or client/):
#   P-TEST-SIZE.script  perf script -F comm,pid,tid,cpu,time,ip,sym,dso
#   P-TEST-SIZE.log     perf's messages
#   P-TEST-SIZE.env     key=value lines (perftest's result, perf's command, failures),
#                       written last: a run without it did not finish
# Lines starting with "profile " in the kernel log are progress for humans.
set -euo pipefail
# shellcheck source=tools/testing/guest/lib.sh
. "${RRXE_LIB:-/usr/share/rrxe/lib.sh}"

secs=$1
read -r -a providers <<<"$2"
read -r -a points <<<"$3"
out=${RRXE_OUT:?run with vm-run --share-out}
role=${RRXE_ROLE:-single}
[ "$role" = single ] || out=$out/$role
mkdir -p "$out"
own_log=/tmp/cli.log # the log of the perftest side that says what went wrong here
[ "$role" != server ] || own_log=/tmp/srv.log

# Progress to the kernel log (printk lines are never split by other console output);
# colons dropped, so that nothing looks like a kernel problem report to vm-run.
say() {
	local s=${*//:/}
	echo "profile ${s:0:900}" >/dev/kmsg
}

# perftest starts this long before perf samples, so that perf sees the steady state
# (perftest connects, exchanges its parameters and warms up for 2 s first).
lead=3
# perftest (-D) runs this much longer than lead + SECS, for perf's control round trips.
slack=5
dur=$((lead + secs + slack))

# cpu-clock is an hrtimer, and the test kernel has no high-resolution timers: hrtimers
# expire at the next tick (HZ=250). A period shorter than a tick (1 ms) makes it fire at
# every tick the vCPU gets, at most 250 a second (one of exactly 4 ms could miss every
# other tick); the reports count samples, so the period perf records does not matter.
# -N -B: no build-id cache and no build-id pass over the data, both slow under TCG.
perf_rec="perf record -e cpu-clock -c 1000000 -a -g -N -B"
# perf takes a quarter of a minute to start under TCG (it reads /proc/kallsyms and every
# process's maps), so it starts first with sampling off (-D -1) and perftest follows once
# it is ready; commands on its control FIFO (--control) switch sampling on for SECS, then
# stop it. Its tracking of new processes (names, mappings) is on from the start, so
# perftest's symbols resolve.
ctl=/tmp/perf.ctl ack=/tmp/perf.ack # in the chroot
perf_run="$perf_rec -D -1 --control fifo:$ctl,$ack -o /tmp/run.data"

# Switched by lib.sh's use_provider.
cur=rxe dev=rxe0 gid=${RRXE_GID_INDEX:-}

# start_traffic TEST SIZE: perftest's server and client (one VM: both, to 127.0.0.1; two
# VMs: the server VM's server, the client VM's client to it) on $dev for $dur s, each
# bounded; sets SPID and CPID (the ones this VM runs). Fails if the server does not listen
# within 30 s or the client has exited after $lead s (perftest could not calibrate its
# cycle counter on a busy vCPU, or the driver failed): retried twice, as a calibration
# failure is chance. The port is the run's and the try's (RUN, counted by both VMs alike).
# Two VMs: the server VM says its server listens by accepting a TCP connection on the port
# + READY_OFFSET and sending the run's tag, which the client VM checks (up to a minute:
# the server VM may still be finishing the run before); both then wait $lead s. (A client
# that dies after the tag leaves the server VM to profile an idle server: its report
# says "covered", the client VM's that perftest failed.)
# Once the tags differ the VMs are out of step, and every run after fails (STEP_ERR).
RUN=0 STEP_ERR=''
start_traffic() {
	local t=$1 size=$2 try i tag
	SPID='' CPID=''
	[ -z "$STEP_ERR" ] || return 1
	for try in 1 2 3; do
		port=$((18515 + 3 * RUN + try)) # a fresh port: a lingering server cannot get in the way
		tag="$cur $t $size $port"
		if [ "$role" != client ]; then
			timeout -k 5 $((dur + 30)) "$t" -d "$dev" -x "$gid" -F -p "$port" -s "$size" \
				-D "$dur" >/tmp/srv.log 2>&1 &
			SPID=$!
			for ((i = 0; i < 300; i++)); do
				tcp_listening "$port" && break
				kill -0 "$SPID" 2>/dev/null || break
				sleep 0.1
			done
		fi
		if [ "$role" = server ]; then
			tcp_listening "$port" && printf '%s\n' "$tag" |
				timeout 60 busybox nc -l -p $((port + READY_OFFSET)) >/dev/null 2>&1 &&
				sleep "$lead" && kill -0 "$SPID" 2>/dev/null && return 0
		else
			local to=127.0.0.1
			if [ "$role" = client ]; then
				to=$RRXE_PEER_IP
				if ! peer_tag 60 $((port + READY_OFFSET)) "$tag"; then
					if [ -n "$PEER_GOT" ]; then
						STEP_ERR="the server VM runs '$PEER_GOT', this one '$tag'"
						say "the VMs are out of step - $STEP_ERR"
						return 1
					fi
					say "$t $size try $try - the server VM did not answer"
					continue
				fi
			fi
			timeout -k 5 $((dur + 30)) "$t" -d "$dev" -x "$gid" -F -p "$port" -s "$size" \
				-D "$dur" "$to" >/tmp/cli.log 2>&1 &
			CPID=$!
			sleep "$lead"
			if kill -0 "$CPID" 2>/dev/null; then
				return 0
			fi
		fi
		[ -z "$SPID" ] || kill "$SPID" 2>/dev/null || :
		[ -z "$CPID$SPID" ] || wait $CPID $SPID 2>/dev/null || :
		say "$t $size try $try failed -" \
			"$(tail -n 1 /tmp/cli.log /tmp/srv.log 2>/dev/null | tr '\n' ' ')"
	done
	return 1
}

# first_error FILE: the line of a perftest log that says what went wrong.
first_error() {
	{ grep -m 1 -iE "couldn|fail|error|unable|not supported|invalid|timeout" "$1" ||
		grep -v '^[ -]*$' "$1" | tail -n 1; } | tr -s ' \t=' ' ' | cut -c 1-200 || :
}

# perf_ctl CMD: send CMD (ping, enable, disable, stop) to perf and wait for its answer;
# perf answers once it has set up its events, so the first call waits for that. ("disable"
# would also stop the tracking of new processes: before perftest starts, "ping" it is.)
perf_ctl() {
	# shellcheck disable=SC2016 # for the inner sh
	run_to 120 sh -c 'echo "$1" >"$2" && head -n 1 "$3"' sh "$1" "$HOSTROOT$ctl" \
		"$HOSTROOT$ack" >/dev/null
}

# profile P TEST SIZE: one run; its .env is written even when it fails.
profile() {
	local p=$1 t=$2 size=$3 name=$1-$2-$3 st=0 row c t0 ppid env=()
	local covered=no cst=0 sst=0 log=$out/$1-$2-$3.log
	env=("provider=$p" "test=$t" "size=$size" "secs=$secs" "ncpus=$(nproc)"
		"kernel=$(uname -r)" "kernel_flavour=${RRXE_KERNEL:-unknown}" "perf_cmd=$perf_rec"
		"perftest_secs=$dur")
	rm -f "$out/$name.env" "$out/$name.script" "$log"
	: >/tmp/cli.log
	: >/tmp/srv.log
	if ! use_provider "$p"; then
		say "$name no device - $DEV_ERR"
		printf '%s\n' "${env[@]}" "perftest=skipped" "error=no $p device ($DEV_ERR)" \
			>"$out/$name.env"
		return 0
	fi
	rm -f "$HOSTROOT$ctl" "$HOSTROOT$ack"
	mkfifo "$HOSTROOT$ctl" "$HOSTROOT$ack"
	t0=$SECONDS
	hostroot_run -t $((dur + 300)) "$perf_run" >"$log" 2>&1 &
	ppid=$!
	if ! perf_ctl ping; then
		kill "$ppid" 2>/dev/null || :
		wait "$ppid" || :
		printf '%s\n' "${env[@]}" "perftest=skipped" \
			"error=perf did not start - $(tail -n 1 "$log")" >"$out/$name.env"
		return 0
	fi
	say "$name perf ready after $((SECONDS - t0)) s"
	if ! start_traffic "$t" "$size"; then
		perf_ctl stop || kill "$ppid" 2>/dev/null || :
		wait "$ppid" || :
		printf '%s\n' "${env[@]}" "perftest=fail" \
			"error=perftest did not start - $(first_error "$own_log")" >"$out/$name.env"
		return 0
	fi
	if ! { perf_ctl enable && sleep "$secs" && perf_ctl disable; }; then
		st=1
		echo "profile: perf did not answer its control FIFO" >>"$log"
	fi
	# Did perftest run through the whole sampling window (the side this VM runs)?
	! kill -0 "${CPID:-$SPID}" 2>/dev/null || covered=yes
	perf_ctl stop || { kill "$ppid" 2>/dev/null || :; st=1; }
	wait "$ppid" || st=$?
	say "$name perf record status $st ($(grep -o 'wrote [0-9.]* MB' "$log" || :))," \
		"perftest still running at the end $covered"
	[ -z "$CPID" ] || wait "$CPID" || cst=$?
	[ -z "$SPID" ] || wait "$SPID" || sst=$?
	env+=("perf_status=$st" "covered=$covered" "role=$role")
	row=$(awk '/#bytes/ { h = 1; next } h && $1 ~ /^[0-9]+$/ { print; exit }' /tmp/cli.log)
	read -r -a c <<<"$row"
	if [ "$role" = server ]; then
		# perftest's figures are the client's (the client VM's profile of this run).
		env+=("perftest=served" "perftest_err=server rc $sst; the client VM has the figures")
	elif [ "$cst" = 0 ] && [ "$sst" = 0 ] && [[ $t == *_bw ]] && [ "${#c[@]}" -ge 5 ]; then
		# bytes iterations peak average msgrate
		env+=("perftest=ok" "bw_avg=${c[3]}" "msgrate=${c[4]}")
	elif [ "$cst" = 0 ] && [ "$sst" = 0 ] && [[ $t == *_lat ]] && [ "${#c[@]}" -ge 4 ]; then
		# A latency test run for a duration: bytes iterations t_avg[usec] tps
		env+=("perftest=ok" "lat_avg=${c[2]}" "tps=${c[3]}")
	else
		env+=("perftest=fail" "perftest_err=client rc $cst, server rc $sst - $(first_error /tmp/cli.log)")
	fi
	if [ "$st" = 0 ]; then
		t0=$SECONDS
		hostroot_run -t 600 "perf script -i /tmp/run.data -F comm,pid,tid,cpu,time,ip,sym,dso \
			>/tmp/out/$name.script" 2>>"$log" || st=$?
		say "$name perf script status $st after $((SECONDS - t0)) s," \
			"$(wc -c <"$out/$name.script") bytes"
		[ "$st" = 0 ] || env+=("error=perf script failed (rc $st) - $(tail -n 1 "$log")")
	else
		env+=("error=perf record failed (rc $st) - $(tail -n 1 "$log")")
	fi
	rm -f "$HOSTROOT/tmp/run.data"
	printf '%s\n' "${env[@]}" >"$out/$name.env"
}

if [ "$RRXE_PROVIDER" != rxe ] || [ -z "$gid" ]; then
	echo "profile: run with vm-run --provider rxe" >&2
	exit 2
fi
# Kernel addresses for perf: /proc/kallsyms shows them, and perf may sample the kernel.
echo 0 >/proc/sys/kernel/kptr_restrict
echo -1 >/proc/sys/kernel/perf_event_paranoid
hostroot_setup
trap hostroot_teardown EXIT
mkdir -p "$HOSTROOT/tmp/out"
mount --bind "$out" "$HOSTROOT/tmp/out"
say "perf $(hostroot_run perf --version), kernel $(uname -r) (${RRXE_KERNEL:-unknown})," \
	"$(nproc) vCPUs," \
	"$(grep -c '\[rdma_rxe\]' /proc/kallsyms) rdma_rxe symbols in /proc/kallsyms"
for p in "${providers[@]}"; do
	for pt in "${points[@]}"; do
		say "$p ${pt%%:*} ${pt#*:} for $secs s"
		profile "$p" "${pt%%:*}" "${pt#*:}"
		RUN=$((RUN + 1))
	done
done
say "done"
