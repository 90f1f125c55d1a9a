#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of `make run`: show the device as rdma-core sees it and a short perftest
# summary (single VM, server and client on the same device). Reports what does not
# work rather than hiding it.
dev=${RRXE_DEV:?}
gid=${RRXE_GID_INDEX:-}

echo "== rdma link show"
rdma link show
echo "== ibv_devices"
ibv_devices
if ! ibv_devices | grep -qw "$dev"; then
	echo "run: $RRXE_PROVIDER has no device $dev yet: nothing more to show."
	exit 0
fi
echo "== ibv_devinfo -d $dev"
ibv_devinfo -d "$dev"
if [ -z "$gid" ]; then
	echo "run: $dev has no RoCE v2 IPv4 GID: perftest skipped."
	exit 0
fi

# reason LOG: the line of a perftest log that says what went wrong.
reason() {
	grep -iE "couldn|fail|error|unable|not supported" "$1" | head -n 1 || tail -n 1 "$1"
}

# perf NAME ARGS...: run server and client of one perftest binary, print one table row.
perf() {
	name=$1
	shift
	timeout 60 "$name" -d "$dev" -x "$gid" -F "$@" >/tmp/srv.log 2>&1 &
	sleep 1
	if timeout 60 "$name" -d "$dev" -x "$gid" -F "$@" 127.0.0.1 >/tmp/cli.log 2>&1; then
		# The result row: first line after the header that starts with a number.
		row=$(awk '/^[ ]*[0-9]/ { r = $0 } END { print r }' /tmp/cli.log)
		case $name in
		*_lat) val=$(echo "$row" | awk '{ print $5 " us typical" }') ;;
		ib_atomic_bw) val=$(echo "$row" | awk '{ print $4 " MB/s, " $5 " Mpps" }') ;;
		*) val=$(echo "$row" | awk '{ print $4 " MB/s" }') ;;
		esac
		printf '%-14s %-24s %s\n' "$name" "$*" "$val"
	else
		printf '%-14s %-24s %s\n' "$name" "$*" "FAILED (rc $?)"
		reason /tmp/cli.log | sed 's/^/    | /'
	fi
	wait
}

# Can the device move data at all? Say so plainly if not.
timeout 30 ib_write_bw -d "$dev" -x "$gid" -F -s 4096 -n 10 >/tmp/srv.log 2>&1 &
sleep 1
if ! timeout 30 ib_write_bw -d "$dev" -x "$gid" -F -s 4096 -n 10 127.0.0.1 >/tmp/cli.log 2>&1; then
	wait
	echo "== perftest on $RRXE_PROVIDER failed: $(reason /tmp/cli.log)"
	echo "run: no perftest figures for $dev."
	exit 0
fi
wait
echo "== perftest ($RRXE_PROVIDER, loopback in one VM, QEMU TCG: compare, do not quote)"
printf '%-14s %-24s %s\n' test args result
perf ib_write_bw -s 65536 -n 500
perf ib_read_bw -s 65536 -n 500
perf ib_send_bw -s 65536 -n 500
perf ib_atomic_bw -n 500
perf ib_send_lat -s 8 -n 200
perf ib_write_lat -s 8 -n 200
perf ib_read_lat -s 8 -n 200
exit 0
