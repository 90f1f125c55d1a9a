# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Helpers for guest test scripts run by tools/testing/vm-run (sourced; guest path
# /usr/share/rrxe/lib.sh, also in $RRXE_LIB). Works in bash and busybox sh (/init uses it).
#
#   gid_index DEV [PORT]         index of the RoCE v2 GID holding an IPv4-mapped address
#   wait_gid DEV [SECS]          wait (default 10 s) until gid_index finds one
#   run_to SECS CMD...           run CMD with a time limit; 124 and a message on expiry
#   peer_retry [-n N] [-d S] [-w PID] CMD...  retry CMD (default 60 times, 1 s apart)
#                                until it succeeds, e.g. a client whose server is still
#                                starting; -w: stop retrying once process PID (the local
#                                server) is gone
#   bg_start LOG CMD...          start CMD in the background, output to LOG; sets BG_PID
#   bg_wait PID LOG              wait for it, print LOG, return its status
#   perftest_bw FILE             the "BW average" column of a perftest bandwidth report
#   kmsg_mark / dmesg_since M    put a marker into the kernel log / print lines after it
#   tap_ok/tap_fail/tap_skip DESC, check DESC CMD..., tap_done, die MSG
#                                TAP-style results; tap_done returns 1 if anything failed

# gid_index DEV [PORT]
gid_index() {
	local d="/sys/class/infiniband/$1/ports/${2:-1}" g n v t
	for g in "$d"/gids/*; do
		v=
		read -r v <"$g" 2>/dev/null || continue
		case $v in
		0000:0000:0000:0000:0000:ffff:*) ;;
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

# wait_gid DEV [SECS]
wait_gid() {
	local i=0 n=$((${2:-10} * 10))
	while ! gid_index "$1" >/dev/null; do
		i=$((i + 1))
		[ $i -le $n ] || return 1
		sleep 0.1
	done
}

# run_to SECS CMD...
run_to() {
	local secs=$1 start st
	shift
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

kmsg_mark() {
	local m
	m="rrxe-mark-$$-$(date +%s)-${RANDOM:-0}"
	echo "$m" >/dev/kmsg
	echo "$m"
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
