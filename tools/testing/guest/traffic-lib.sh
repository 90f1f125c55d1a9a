# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Helpers for the traffic tests (pingpong.sh, rping.sh, perftest.sh, two-vm-traffic.sh,
# soak.sh, peer-down.sh): sourced after lib.sh, not a test itself. A test is a server
# command and a client command (ibv_*_pingpong, perftest, rping, ...):
#   one VM (role single): the server runs in the background, the client next to it;
#   two VMs: the VM with role "server" runs the server command, "client" the client one,
#   once the server listens (the server VM accepts a TCP connection on a port of its own
#   then).
# A client that cannot reach its server yet (still starting, or on the other VM still busy
# with the previous test) is started again, 1 s apart, up to TR_CLIENT_TRIES times; any
# other failure is final. Every test gets its own TCP / RDMA CM port (@PORT@ in the
# commands), the same sequence on both VMs, so a client never talks to a stale server.
#
#   tr_run DESC CHECK NAME SECS SERVER_CMD... -- CLIENT_CMD...
#        (a program killed at its time limit loses what it buffered: perftest prints
#        nothing then; the device's hw_counters are printed with every failure)
#        one TAP line: ok if the side(s) run here exit 0 within SECS (scaled on the debug
#        kernel, see run_to) and `CHECK SIDE LOG` accepts each side's output (SIDE
#        server|client; CHECK prints why not). After
#        TR_MAX_HANGS tests in a row that hit their time limit, later tests are not run but
#        reported as failed, so a device that moves no data fails in minutes, not hours.
#   chk_none, chk_iters (ibv_*_pingpong), chk_perftest (TR_ROWS result rows wanted on the
#        client, the last one for TR_LAST_SIZE if set), chk_status0 (librdmacm examples)
#   tr_perftest, tr_pingpong SECS SERVER_DEV CLIENT_DEV GID SERVER PROGRAM ARGS...
#        perftest (-F, chk_perftest) or ibv_*_pingpong (-c, chk_iters) PROGRAM ARGS
#   tr_rping SECS ADDRESS COUNT SIZE
#        rping -V (data verified) with the RDMA CM on ADDRESS; the client prints (-v) and
#        must show COUNT distinct pings
#   TR_EXPECT_FAIL=WHY tr_run ...
#        a test that must fail (the C driver's known defects): ok if it fails, saying WHY
#   TR_EXCUSE=FUNC tr_run ...
#        `FUNC SIDE LOG STATUS` prints why a side's nonzero exit STATUS is a known defect
#        of the program, not of the device, and then the status counts as 0 (the ok line
#        says so); FUNC checks that the side's output is complete (exc_rping)
#   TR_RERUNS=N tr_run ...
#        a test whose client crashes in librdmacm runs again up to N times (default 1;
#        both VMs must use the same N)
#   tr_active_mtu DEV    the port's active MTU in bytes
#   tr_two_vms           for a test of two VMs over the device: dies unless run with
#                        --vms 2 and a device; sets dev and gid (RRXE_DEV and its GID
#                        index) and server (the server VM's address, on either VM)
#   TR_SX                a command prefix for the server side in tr_rping, tr_perftest and
#                        tr_pingpong (e.g. ip netns exec ns1; default none); scripts may
#                        use it for their own tests
#   TR_DESC              a prefix of tr_perftest's and tr_pingpong's descriptions
#   TR_DEVS, TR_SNAPSHOTS  the devices whose counters a hang shows (default RRXE_DEV), and
#                        how many snapshots it takes, 10 s apart (default 1)

TR_DIR=/tmp/traffic
TR_PORT=${TR_PORT:-18600}
TR_HANGS=0
TR_MAX_HANGS=${TR_MAX_HANGS:-2}
TR_CLIENT_TRIES=${TR_CLIENT_TRIES:-60}
TR_RERUNS=${TR_RERUNS:-1}
TR_SX=()
# Two VMs: the server VM signals that its server listens on this port above the test's,
# and the client VM asks the server VM to run a test again on this one.
TR_READY_OFFSET=10000
TR_AGAIN_OFFSET=20000
# What a client prints when its server is not listening (yet): pingpong and perftest's TCP
# exchange, the RDMA CM's REJECT (the peer's CM answered: no listener on that port).
TR_CONNECT_RE="Couldn't connect to|Unable to init the socket connection|Connection refused|RDMA_CM_EVENT_REJECTED|REJECTED"
mkdir -p "$TR_DIR"

# tr_snapshot: this VM's QPs (state, PSNs) and device counters as TAP comments, taken when
# a program hangs and before it is killed: its QPs go with it, and the PSNs on both sides
# say who waits for what.
tr_snapshot() {
	echo "#   QPs at the timeout (pid $1):"
	rdma res show qp 2>/dev/null | grep -vE 'type (GSI|SMI)' | sed 's/^/#   | /'
	tr_counters
}

# tr_wait_pid PID SECS [ABORT]: PID's status, or 124 after killing it when SECS pass (with
# a tr_snapshot first, and TR_SNAPSHOTS - 1 more 10 s apart while PID still runs: moving or
# stuck), or 125 after killing it when process ABORT ended first.
tr_wait_pid() {
	local pid=$1 end=$(($(date +%s) + $2)) st=0 n
	while kill -0 "$pid" 2>/dev/null; do
		if [ -n "${3:-}" ] && ! kill -0 "$3" 2>/dev/null; then
			st=125
		elif [ "$(date +%s)" -ge $end ]; then
			st=124
			tr_snapshot "$pid"
			for ((n = 1; n < ${TR_SNAPSHOTS:-1}; n++)); do
				sleep 10
				kill -0 "$pid" 2>/dev/null || break
				tr_snapshot "$pid"
			done
		fi
		if [ $st != 0 ]; then
			kill -TERM "$pid" 2>/dev/null
			sleep 2
			kill -KILL "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
			return $st
		fi
		sleep 0.2
	done
	wait "$pid" || st=$?
	return $st
}

# tr_client SECS LOG CMD...
tr_client() {
	local secs=$1 log=$2 i=1 st
	shift 2
	while :; do
		st=0
		"$@" >"$log" 2>&1 &
		tr_wait_pid $! "$secs" || st=$?
		[ $st != 0 ] || return 0
		if [ $st = 124 ]; then
			echo "TIMEOUT: still running after $secs s: $*" >>"$log"
			return 124
		fi
		# Killed by a signal (a crash): not a server that is not there yet.
		[ $st -lt 128 ] || return $st
		grep -qE "$TR_CONNECT_RE" "$log" || return $st
		# Kept for the report, if the test fails in the end.
		{
			echo "attempt $i: status $st"
			tail -n 8 "$log"
		} >>"$log.tries"
		if [ "$i" -ge "$TR_CLIENT_TRIES" ]; then
			# Counts as a hang: the server side is stuck or gone.
			echo "tr_client: no server after $i attempts" >>"$log"
			return 124
		fi
		if [ -n "${TR_WATCH:-}" ] && ! kill -0 "$TR_WATCH" 2>/dev/null; then
			echo "tr_client: the server is gone, not retrying" >>"$log"
			return $st
		fi
		i=$((i + 1))
		sleep 1
	done
}

# tr_listening PORT: something listens on PORT here (in TR_SX's namespace): a TCP socket
# (the servers of the pingpongs and of perftest) or an RDMA CM ID (rping, perftest -R).
tr_listening() {
	tcp_listening "$1" "${TR_SX[@]}" ||
		"${TR_SX[@]}" rdma res show cm_id src-port "$1" 2>/dev/null | grep -q LISTEN
}

# tr_wait_listen PORT PID: waits (up to 10 s, while PID runs) until the server listens on
# PORT, so that its client is not rejected first: perftest -R's client may then crash in
# librdmacm (a general protection fault in its rdma_resolve_addr, with rxe as with rrxe),
# leaving its server waiting for ever.
tr_wait_listen() {
	for _ in $(seq 100); do
		tr_listening "$1" && return 0
		kill -0 "$2" 2>/dev/null || return 0
		sleep 0.1
	done
}

# tr_crash MARK: the kernel's report of a test program that crashed in librdmacm since
# MARK. perftest -R's client does, now and then, with rxe as with rrxe (a general
# protection fault in its rdma_resolve_addr, on a connection ID it no longer has): such a
# test runs once more. tr_wait_listen cannot prevent it: perftest 4.5-0.17 -R connects
# twice on the same port, a control connection (the one tr_wait_listen sees) and then,
# after a handshake over it, the test's own, for which the server listens again
# (rdma_cm_server_connection); a client whose REQ arrives before that second rdma_listen
# is REJECTED (reason 8, no listener), and its retry loop frees its CM nodes and then
# uses them (fixed in perftest 26.04.17). A loaded machine makes that more likely.
tr_crash() {
	dmesg_since "$1" | grep -E "(general protection fault|segfault).* in librdmacm" | head -n 1
}

# tr_wait_ready SECS: on the client VM, waits (up to SECS) until the server VM says its
# server listens: it accepts a TCP connection on TR_PORT + TR_READY_OFFSET then.
tr_wait_ready() {
	local end=$(($(date +%s) + $1))
	while [ "$(date +%s)" -lt $end ]; do
		timeout 2 bash -c "exec 3<>/dev/tcp/$RRXE_PEER_IP/$((TR_PORT + TR_READY_OFFSET))" \
			2>/dev/null && return 0
		sleep 0.2
	done
}

# The nonzero hw_counters (packets, retransmits, errors) of each device of TR_DEVS (default
# RRXE_DEV), one comment line each.
tr_counters() {
	local dev d f v out
	for dev in ${TR_DEVS:-${RRXE_DEV:-}}; do
		d=/sys/class/infiniband/$dev/ports/1/hw_counters out=''
		[ -d "$d" ] || continue
		for f in "$d"/*; do
			read -r v <"$f" 2>/dev/null || continue
			[ "$v" = 0 ] || out="$out ${f##*/}=$v"
		done
		echo "#   $dev hw_counters:${out:- all zero}"
	done
}

# What an error message looks like in a test program's output.
TR_ERRORS='error|fail|status|cannot|could ?n|unable|timed? ?out|wait for'

# Prints the last lines of LOG as TAP comments, after the first lines that look like
# errors: a program's stderr is written at once, its stdout (to a file) in blocks, so
# its error message may sit far above the last lines of what it printed.
tr_show() {
	local side=$1 log=$2 n=${3:-25}
	[ -f "$log" ] || return 0
	if [ -f "$log.tries" ]; then
		echo "#   $side: earlier attempts (the last 20 lines of their output)"
		tail -n 20 "$log.tries" | sed 's/^/#   | /'
	fi
	if grep -qiE "$TR_ERRORS" "$log"; then
		echo "#   $side: $log (the first 10 lines that look like errors)"
		grep -iE "$TR_ERRORS" "$log" | head -n 10 | sed 's/^/#   | /'
	fi
	echo "#   $side: $log (last $n lines)"
	tail -n "$n" "$log" | sed 's/^/#   | /'
}

# tr_once: one run of tr_run's test (its variables); sets sst, cst and again (the test is
# to run once more: a known crash).
tr_once() {
	local spid a
	case ${RRXE_ROLE:-single} in
	single)
		"${scmd[@]}" >"$TR_DIR/$name.server" 2>&1 &
		spid=$!
		tr_wait_listen "$TR_PORT" "$spid"
		TR_WATCH=$spid tr_client "$secs" "$TR_DIR/$name.client" "${ccmd[@]}" || cst=$?
		# Without its client the server cannot finish: a short grace, then it goes.
		if [ $cst = 0 ]; then
			tr_wait_pid "$spid" "$secs" || sst=$?
		else
			tr_wait_pid "$spid" 5 || sst=$?
			if [ $sst = 124 ]; then
				sst=killed
				echo "(stopped 5 s after its client failed)" >>"$TR_DIR/$name.server"
			fi
		fi
		[ $cst -lt 128 ] || [ $cst = 124 ] || again=$(tr_crash "$mark")
		;;
	server)
		"${scmd[@]}" >"$TR_DIR/$name.server" 2>&1 &
		spid=$!
		busybox nc -l -p $((TR_PORT + TR_AGAIN_OFFSET)) </dev/null >/dev/null 2>&1 &
		again=$!
		tr_wait_listen "$TR_PORT" "$spid"
		busybox nc -l -p $((TR_PORT + TR_READY_OFFSET)) </dev/null >/dev/null 2>&1 &
		a=$!
		tr_wait_pid "$spid" "$secs" "$again" || sst=$?
		kill "$a" 2>/dev/null
		wait "$a" 2>/dev/null
		# The client VM asked (its listener took a connection and ended), or not.
		if kill "$again" 2>/dev/null; then
			wait "$again" 2>/dev/null
			again=''
		else
			again="the client VM's program crashed"
		fi
		;;
	client)
		tr_wait_ready "$secs"
		tr_client "$secs" "$TR_DIR/$name.client" "${ccmd[@]}" || cst=$?
		if [ $cst -ge 128 ] && [ $cst != 124 ]; then
			again=$(tr_crash "$mark")
			# Only if the server VM heard it (it runs the test again too).
			[ -z "$again" ] || timeout 2 bash -c \
				"exec 3<>/dev/tcp/$RRXE_PEER_IP/$((TR_PORT + TR_AGAIN_OFFSET))" 2>/dev/null ||
				again=''
		fi
		;;
	*) die "unknown role $RRXE_ROLE" ;;
	esac
}

# tr_excuse: TR_EXCUSE's verdict on tr_run's statuses sst and cst (the harness's own are
# never excused: 124 for the time limit, 125 for a rerun the client VM asked for, and
# "killed"); sets excused, the ok line's note.
tr_excuse() {
	local why
	[ -n "${TR_EXCUSE:-}" ] || return 0
	case $sst in 0 | 124 | 125 | killed) ;; *)
		if why=$($TR_EXCUSE server "$TR_DIR/$name.server" "$sst"); then
			excused="$excused; server status $sst: $why"
			sst=0
		fi
		;;
	esac
	case $cst in 0 | 124 | 125) ;; *)
		if why=$($TR_EXCUSE client "$TR_DIR/$name.client" "$cst"); then
			excused="$excused; client status $cst: $why"
			cst=0
		fi
		;;
	esac
}

tr_run() {
	local desc=$1 chk=$2 name=$3 secs start sst cst a why='' side again='' mark excused=''
	local runs=1
	secs=$(scaled "$4")
	shift 4
	local -a sargs=() cargs=() scmd=() ccmd=()
	while [ "$1" != -- ]; do sargs+=("$1"); shift; done
	shift
	cargs=("$@")
	TR_PORT=$((TR_PORT + 1))
	if [ "$TR_HANGS" -ge "$TR_MAX_HANGS" ]; then
		tap_fail "$desc: not run, the last $TR_HANGS tests hit their time limit"
		return 0
	fi
	start=$(date +%s)
	while :; do
		scmd=() ccmd=()
		for a in "${sargs[@]}"; do scmd+=("${a//@PORT@/$TR_PORT}"); done
		for a in "${cargs[@]}"; do ccmd+=("${a//@PORT@/$TR_PORT}"); done
		rm -f "$TR_DIR/$name".*
		sst=0 cst=0 again=''
		mark=$(kmsg_mark)
		tr_once
		# Both VMs count the same runs: the client VM asks for every crash (tr_once).
		[ -n "$again" ] && [ "$runs" -le "$TR_RERUNS" ] || break
		runs=$((runs + 1))
		echo "# $desc: run again after: $again"
		TR_PORT=$((TR_PORT + 1))
	done
	[ $sst != 124 ] || echo "TIMEOUT: still running after $secs s: ${scmd[*]}" >>"$TR_DIR/$name.server"
	tr_excuse
	if [ -z "${TR_EXPECT_FAIL:-}" ] && { [ $sst = 124 ] || [ $cst = 124 ]; }; then
		TR_HANGS=$((TR_HANGS + 1))
	else
		TR_HANGS=0
	fi
	[ $sst = 0 ] || why="$why server status $sst;"
	[ $cst = 0 ] || why="$why client status $cst;"
	for side in server client; do
		[ -f "$TR_DIR/$name.$side" ] || continue
		if [ $sst = 0 ] && [ $cst = 0 ] && ! a=$($chk $side "$TR_DIR/$name.$side"); then
			why="$why $side: $a;"
		fi
	done
	if [ -n "${TR_EXPECT_FAIL:-}" ]; then
		if [ -z "$why" ]; then
			tap_fail "$desc: passes, expected to fail ($TR_EXPECT_FAIL): update the test"
		else
			tap_ok "$desc: fails as expected ($TR_EXPECT_FAIL):${why%;}"
		fi
	elif [ -z "$why" ]; then
		case $runs in
		1) a='' ;;
		2) a='; run twice: a known crash' ;;
		*) a="; run $runs times: a known crash" ;;
		esac
		tap_ok "$desc ($(($(date +%s) - start)) s$a$excused)"
		for side in server client; do
			[ ! -f "$TR_DIR/$name.$side" ] || [ -z "${TR_SUMMARY:-}" ] ||
				$TR_SUMMARY $side "$TR_DIR/$name.$side"
		done
	else
		tap_fail "$desc ($(($(date +%s) - start)) s):${why%;}"
		echo "#   server: ${scmd[*]}"
		echo "#   client: ${ccmd[*]}"
		tr_show server "$TR_DIR/$name.server"
		tr_show client "$TR_DIR/$name.client"
		tr_counters
	fi
	return 0
}

chk_none() { :; }

# ibv_*_pingpong prints "N iters in S seconds = U usec/iter" on both sides when done.
chk_iters() {
	grep -qE '^[0-9]+ iters in ' "$2" || { echo "no 'iters in' line"; return 1; }
}

# perftest: on the client, TR_ROWS rows of results (a message size, then the iteration
# count); the last for TR_LAST_SIZE bytes if set. The server side prints less (bw -a: the
# last row; *_lat: none or one), so only its exit status counts.
chk_perftest() {
	local rows last
	[ "$1" = client ] || return 0
	rows=$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 4' "$2" | wc -l)
	last=$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 4 { s = $1 } END { print s }' "$2")
	if [ "$rows" -lt "${TR_ROWS:-1}" ]; then
		echo "$rows result rows, want ${TR_ROWS:-1}"
		return 1
	fi
	if [ -n "${TR_LAST_SIZE:-}" ] && [ "$last" != "$TR_LAST_SIZE" ]; then
		echo "last result row is for ${last:-no} bytes, want $TR_LAST_SIZE"
		return 1
	fi
}

# perftest summary: the client's first and last result rows.
sum_perftest() {
	[ "$1" = client ] || return 0
	awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 4 { if (!n++) f = $0; l = $0 }
		END { if (n) { print "#   " f; if (n > 1) print "#   ... " l } }' "$2" | tr -s ' \t' ' '
}

sum_iters() {
	grep -hE '^[0-9]+ iters in ' "$2" | sed "s/^/#   $1: /"
}

# rping -v prints one "ping data: rdma-ping-N: ..." line per ping; -V makes a mismatch
# fatal. Its stdout goes to the log in 4 KiB blocks, its stderr at once: a line of the
# latter ("client DISCONNECT EVENT...", the exit race's) may land inside a ping's line,
# even inside its "rdma-ping-N: ", so the pings are counted with those lines taken out
# and the rest joined.
chk_rping() {
	local n
	[ "$1" = client ] || return 0
	n=$(sed -e 's/client DISCONNECT EVENT\.\.\.$//' \
		-e 's/rdma_get_cm_event: Bad file descriptor$//' "$2" | tr -d '\n' |
		grep -o 'rdma-ping-[0-9]*: ' | sort -u | wc -l)
	[ "$n" = "$TR_COUNT" ] || { echo "$n pings printed, want $TR_COUNT"; return 1; }
	! grep -qi 'mismatch\|error' "$2" || { grep -i -m1 'mismatch\|error' "$2"; return 1; }
}

# rdmacm-utils 44's rping may exit 255 after a clean run: its main thread closes the RDMA
# CM event channel while its cm_thread, never joined, goes back to read it
# ("rdma_get_cm_event: Bad file descriptor", then exit(-1)). Later rping stops that thread
# first (an eventfd). On the client every ping must have been printed; on either side,
# nothing that rping prints when it fails may show (the server prints no pings; its
# client's check covers the data, on its own VM with two).
exc_rping() {
	[ "$3" = 255 ] && grep -q 'rdma_get_cm_event: Bad file descriptor' "$2" &&
		! grep -qiE 'fail|error|state 11' "$2" && chk_rping "$1" "$2" >/dev/null ||
		return 1
	echo "rping's exit race (rdma_get_cm_event on its closed event channel)"
}

tr_rping() {
	TR_COUNT=$3 TR_SUMMARY=''
	TR_EXCUSE=exc_rping tr_run "rping -a $2 -C $3 -S $4 -v -V" chk_rping "rping$3_$4" "$1" \
		"${TR_SX[@]}" rping -s -a "$2" -p @PORT@ -C "$3" -S "$4" -V -- \
		rping -c -a "$2" -p @PORT@ -C "$3" -S "$4" -v -V
}

# tr_perftest SECS SDEV CDEV GID SERVER PROG ARGS...: perftest's PROG ARGS with -F and GID
#   index GID, its server on SDEV (behind TR_SX), its client on CDEV connecting to SERVER,
#   checked by chk_perftest. The description is "[TR_DESC: ]PROG -x GID ARGS", the name
#   that in word characters.
tr_perftest() {
	tr_pair "$1" chk_perftest -x -F "${@:2}"
}

# tr_pingpong SECS SDEV CDEV GID SERVER PROG ARGS...: ibv_*_pingpong's PROG ARGS with -c
#   (contents checked) and GID index GID (-g), as tr_perftest, checked by chk_iters.
tr_pingpong() {
	tr_pair "$1" chk_iters -g -c "${@:2}"
}

# tr_pair SECS CHECK GID_OPTION FLAG SDEV CDEV GID SERVER PROG ARGS...: tr_perftest's and
#   tr_pingpong's test.
tr_pair() {
	local secs=$1 chk=$2 gopt=$3 flag=$4 sdev=$5 cdev=$6 gid=$7 server=$8 prog=$9 desc
	shift 9
	desc="${TR_DESC:+$TR_DESC: }$prog $gopt $gid $*"
	tr_run "$desc" "$chk" "$(echo "$desc" | tr -c 'a-zA-Z0-9' _)" "$secs" \
		"${TR_SX[@]}" "$prog" -d "$sdev" "$gopt" "$gid" -p @PORT@ "$flag" "$@" -- \
		"$prog" -d "$cdev" "$gopt" "$gid" -p @PORT@ "$flag" "$@" "$server"
}

# ucmatose, udaddy: "return status 0" at the end.
chk_status0() {
	grep -q 'return status 0' "$2" || { echo "no 'return status 0'"; return 1; }
}

tr_active_mtu() {
	ibv_devinfo -d "$1" 2>/dev/null | awk '/active_mtu:/ { print $2; exit }'
}

# shellcheck disable=SC2034 # dev, gid and server are for the caller
tr_two_vms() {
	[ "${RRXE_VMS:-1}" = 2 ] || die "run with --vms 2"
	[ -n "${RRXE_GID_INDEX:-}" ] || die "no device: do not use --no-device"
	dev=$RRXE_DEV gid=$RRXE_GID_INDEX
	case $RRXE_ROLE in
	server) server=$RRXE_MY_IP ;;
	client) server=$RRXE_PEER_IP ;;
	*) die "unknown role $RRXE_ROLE" ;;
	esac
}
