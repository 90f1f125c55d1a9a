# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# What counts as a kernel problem in a guest's serial console log (sourced by vm-run, which
# fails a run that has one; tools/testing/teardown-table reads problem_re and
# user_fault_re to count them). Only console lines with a printk timestamp count, so that
# test output (names, messages) cannot match; the kernel command line is echoed at boot,
# skip it.
problem_re='Oops|Kernel panic|kernel BUG at|BUG:|BUG [^ ]+ \((Not tainted|Tainted)|WARNING:'
problem_re+='|KASAN|UBSAN:|possible circular locking|inconsistent lock state'
problem_re+='|possible recursive locking|suspicious RCU usage'
problem_re+='|sleeping function called from invalid context|INFO: task .* blocked for more than'
problem_re+='|soft lockup|hard LOCKUP|hung_task|detected stalls?|self-detected stall'
problem_re+='|general protection fault|double fault|trying to register non-static key'
problem_re+='|list_(add|del) corruption|refcount_t: |kmemleak: [0-9]+ new suspected memory leak'
problem_re+='|KFENCE|ODEBUG:'
# A user program's fault, which the kernel reports too ("traps: ib_write_bw[123] general
# protection fault ip:... in librdmacm.so.1"), is the test's to judge, not a kernel problem.
user_fault_re='\] traps: [^ ]+\[[0-9]+\] general protection fault ip:'
# Taint flags that only such problems set: B bad page, D died (oops), W warning, L soft lockup.
# shellcheck disable=SC2034 # for vm-run
bad_taint=$((32 | 128 | 512 | 16384))

# problems_in LOG: LOG's lines reporting a kernel problem.
problems_in() {
	tr -d '\r' <"$1" | grep -aE '\[ *[0-9]+\.[0-9]+\] ' |
		grep -aiv 'command line' | grep -avE "$user_fault_re" | grep -aE "$problem_re" || :
}
