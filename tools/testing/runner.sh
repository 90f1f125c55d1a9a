# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# The test runner of `make check` and `make conformance` (sourced): each test's output
# goes to a log under $out; `t NAME COMMAND...` runs one test, `tref NAME COMMAND...` one
# run of the C reference driver kept for comparison, `summary` prints every result and
# ends with "N passed, N failed" (status 1 on any failure). RRXE_CHECK_ONLY=REGEX runs the
# matching tests only.
#
# Sittings: with RRXE_CHECK_RESUME=1 the caller keeps $out, and a run may stop (killed)
# and start again: a test that passed in an earlier sitting on the same code, kernel and
# command is not run again but counted, with its time then. The record is $out/ledger,
# one line per result: "pass|fail|void test|ref NAME SECONDS KEY EPOCH", and "sitting KEY
# EPOCH" per start. A result's key is the commit, with a hash of uncommitted changes to
# tracked files if any, what the caller names with `sitting` (the kernel), and a hash of
# the test's command line; results under another key are ignored, and a test during
# which the code changed is recorded void. `make check-debug` (about 6.5 hours) is run
# that way on machines whose sessions are shorter.

passed=0
failed=0
failures=()
test_secs=0
ref_passed=0
ref_failures=()
start_all=$(date +%s)

# code_key: the commit checked out in the caller's directory, with a hash of uncommitted
# changes to tracked files if there are any; for ledger_key.
code_key() {
	local c
	c=$(git rev-parse --short=12 HEAD 2>/dev/null) || { echo unknown; return; }
	git diff --quiet HEAD 2>/dev/null || c=$c-dirty-$(git diff HEAD | sha256sum | cut -c1-12)
	echo "$c"
}

# resuming: whether this run continues an earlier sitting's (RRXE_CHECK_RESUME, not 0).
resuming() {
	[ "${RRXE_CHECK_RESUME:-0}" != 0 ]
}

ledger=$out/ledger
ledger_code=$(code_key)
ledger_key=$ledger_code
resuming || rm -f "$ledger"

# sitting KEY...: start a sitting; KEY is what the results depend on besides the code
# and the tests' commands (the kernel, for one). Called once, before the first test.
sitting() {
	ledger_key=$ledger_code${1:+/$(IFS=/; echo "$*")}
	echo "sitting $ledger_key $start_all" >>"$ledger"
}

# earlier_pass KIND NAME KEY: the "SECONDS EPOCH" of a pass of the test under KEY in an
# earlier sitting, if resuming and there is one.
earlier_pass() {
	resuming || return 1
	awk -v k="$1" -v n="$2" -v key="$3" \
		'$1 == "pass" && $2 == k && $3 == n && $5 == key { r = $4 " " $6 } END { if (r == "") exit 1; print r }' \
		"$ledger"
}

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
	local kind=$1 name=$2 start rc secs earlier key status
	shift 2
	if [ -n "${RRXE_CHECK_ONLY:-}" ] && ! [[ $name =~ $RRXE_CHECK_ONLY ]]; then
		return 0
	fi
	printf '%-40s ' "$name"
	key=$ledger_key/$(printf '%q ' "$@" | sha256sum | cut -c1-12)
	if earlier=$(earlier_pass "$kind" "$name" "$key"); then
		secs=${earlier% *}
		test_secs=$((test_secs + secs))
		if [ "$kind" = ref ]; then
			ref_passed=$((ref_passed + 1))
		else
			passed=$((passed + 1))
		fi
		echo "PASS ($secs s, started $(date -u -d "@${earlier#* }" '+%F %H:%M') UTC, an earlier sitting)"
		return 0
	fi
	start=$(date +%s)
	"$@" >"$out/$name.log" 2>&1
	rc=$?
	secs=$(($(date +%s) - start))
	test_secs=$((test_secs + secs))
	secs="$secs s"
	status=$([ $rc = 0 ] && echo pass || echo fail)
	# Not the code the sitting is for any more: a later sitting runs it again.
	[ "$(code_key)" = "$ledger_code" ] || { status=void; secs="$secs, void: the code changed"; }
	echo "$status $kind $name ${secs%% *} $key $start" >>"$ledger"
	if [ $rc = 0 ]; then
		if [ "$kind" = ref ]; then
			ref_passed=$((ref_passed + 1))
		else
			passed=$((passed + 1))
		fi
		echo "PASS ($secs)"
		return 0
	fi
	if [ "$kind" = ref ]; then
		ref_failures+=("$name")
		echo "FAIL, rxe's record, not counted ($secs, rc $rc): $out/$name.log"
	else
		failed=$((failed + 1))
		failures+=("$name")
		echo "FAIL ($secs, rc $rc): $out/$name.log"
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
	if resuming; then
		echo "$1 in sittings on $ledger_key: $(grep -c "^sitting $ledger_key " "$ledger")" \
			"sittings, the tests' time $test_secs s"
	fi
	if [ $((ref_passed + ${#ref_failures[@]})) -gt 0 ]; then
		echo "the C reference rdma_rxe, not counted: $ref_passed passed," \
			"${#ref_failures[@]} failed${ref_failures[*]:+ (${ref_failures[*]})}"
	fi
	[ ${#failures[@]} = 0 ] || echo "failed: ${failures[*]}"
	echo "$passed passed, $failed failed"
	[ "$failed" = 0 ]
}
