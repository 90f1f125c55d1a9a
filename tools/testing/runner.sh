# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The test runner of `make check` and `make conformance` (sourced): each test's output
# goes to a log under $out; `t NAME COMMAND...` runs one test, `summary` prints every
# result and ends with "N passed, N failed" (status 1 on any failure).
# RRXE_CHECK_ONLY=REGEX runs the matching tests only.

passed=0
failed=0
failures=()
start_all=$(date +%s)

# t NAME COMMAND...: run one test, log it, record the result.
t() {
	local name=$1 start rc
	shift
	if [ -n "${RRXE_CHECK_ONLY:-}" ] && ! [[ $name =~ $RRXE_CHECK_ONLY ]]; then
		return 0
	fi
	start=$(date +%s)
	printf '%-40s ' "$name"
	"$@" >"$out/$name.log" 2>&1
	rc=$?
	if [ $rc = 0 ]; then
		passed=$((passed + 1))
		echo "PASS ($(($(date +%s) - start)) s)"
	else
		failed=$((failed + 1))
		failures+=("$name")
		echo "FAIL ($(($(date +%s) - start)) s, rc $rc): $out/$name.log"
		tail -n 15 "$out/$name.log" | sed 's/^/    | /'
	fi
}

# digest LOG: what failed in a test's log: its "not ok" lines with the detail lines
# after them, and kernel splats; at most 40 lines.
digest() {
	grep -a -E -A 6 '^(not ok|# FAILED)|(WARNING|BUG|Oops|INFO: task|lockdep|KASAN|kmemleak):' "$1" |
		grep -a -v -E '^ok ' | head -n 40 | sed 's/^/    : /'
}

# summary NAME: the closing lines, with a digest of each failure (CI shows the end of the
# output); status 1 on any failure.
summary() {
	local f
	echo
	for f in "${failures[@]}"; do
		echo "digest of $f ($out/$f.log):"
		digest "$out/$f.log"
	done
	echo "$1: $(($(date +%s) - start_all)) s; logs in $out"
	[ ${#failures[@]} = 0 ] || echo "failed: ${failures[*]}"
	echo "$passed passed, $failed failed"
	[ "$failed" = 0 ]
}
