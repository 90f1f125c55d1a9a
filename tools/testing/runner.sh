# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The test runner of `make check` and `make conformance` (sourced): each test's output
# goes to a log under $out; `t NAME COMMAND...` runs one test, `tref NAME COMMAND...` one
# run of the C reference driver kept for comparison, `summary` prints every result and
# ends with "N passed, N failed" (status 1 on any failure). RRXE_CHECK_ONLY=REGEX runs the
# matching tests only.

passed=0
failed=0
failures=()
ref_passed=0
ref_failures=()
start_all=$(date +%s)

# t NAME COMMAND...: run one test, log it, record the result.
t() {
	run_one test "$@"
}

# tref NAME COMMAND...: a run of the C reference driver, rdma_rxe, whose record is set
# beside rrxe's (teardown under traffic, issue 14). It is run, logged and reported as a
# test, FAIL included, but its failure is rxe's record, not a defect of rrxe: it counts
# neither in "N passed, N failed" nor in the exit status; summary names it apart.
tref() {
	run_one ref "$@"
}

# run_one test|ref NAME COMMAND...
run_one() {
	local kind=$1 name=$2 start rc
	shift 2
	if [ -n "${RRXE_CHECK_ONLY:-}" ] && ! [[ $name =~ $RRXE_CHECK_ONLY ]]; then
		return 0
	fi
	start=$(date +%s)
	printf '%-40s ' "$name"
	"$@" >"$out/$name.log" 2>&1
	rc=$?
	if [ $rc = 0 ]; then
		if [ "$kind" = ref ]; then
			ref_passed=$((ref_passed + 1))
		else
			passed=$((passed + 1))
		fi
		echo "PASS ($(($(date +%s) - start)) s)"
		return 0
	fi
	if [ "$kind" = ref ]; then
		ref_failures+=("$name")
		echo "FAIL, rxe's record, not counted ($(($(date +%s) - start)) s, rc $rc): $out/$name.log"
	else
		failed=$((failed + 1))
		failures+=("$name")
		echo "FAIL ($(($(date +%s) - start)) s, rc $rc): $out/$name.log"
	fi
	tail -n 15 "$out/$name.log" | sed 's/^/    | /'
}

# digest LOG: what failed in a test's log: its "not ok" lines with the detail lines
# after them, and kernel splats; at most 40 lines.
digest() {
	grep -a -E -A 6 '^(not ok|# FAILED)|(WARNING|BUG|Oops|INFO: task|lockdep|KASAN|kmemleak):' "$1" |
		grep -a -v -E '^ok ' | head -n 40 | sed 's/^/    : /'
}

# teardown_table: issue 14's table (tools/testing/teardown-table), rxe beside rrxe, from
# the teardown runs of this make target, if it ran any.
teardown_table() {
	compgen -G "$out/*teardown.log" >/dev/null || return 0
	echo
	"$(dirname "${BASH_SOURCE[0]}")/teardown-table" "$out" || :
}

# summary NAME: the closing lines, with a digest of each failure (CI shows the end of the
# output); status 1 on any failure. The reference's failures (tref) are digested and
# named, but not counted.
summary() {
	local f
	echo
	for f in "${failures[@]}"; do
		echo "digest of $f ($out/$f.log):"
		digest "$out/$f.log"
	done
	for f in "${ref_failures[@]}"; do
		echo "digest of $f, rxe's record ($out/$f.log):"
		digest "$out/$f.log"
	done
	echo "$1: $(($(date +%s) - start_all)) s; logs in $out"
	if [ $((ref_passed + ${#ref_failures[@]})) -gt 0 ]; then
		echo "the C reference rdma_rxe, not counted: $ref_passed passed," \
			"${#ref_failures[@]} failed${ref_failures[*]:+ (${ref_failures[*]})}"
	fi
	[ ${#failures[@]} = 0 ] || echo "failed: ${failures[*]}"
	echo "$passed passed, $failed failed"
	[ "$failed" = 0 ]
}
