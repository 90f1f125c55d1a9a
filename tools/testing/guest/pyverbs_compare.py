#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Helper of pyverbs-compare.sh, run in the pyverbs chroot (the host's python3 and
rdma-core 44 tests, unpacked in /tmp/tests).

  pyverbs_compare.py run OUT --dev DEV --gid N [-v] [TESTS...]
      runs the pyverbs tests like run_tests.py and appends one line per test to OUT as it
      finishes: "ID<TAB>STATUS<TAB>SECONDS<TAB>DETAIL", STATUS one of pass, fail, error,
      skip, xfail, xpass; ID without the leading "tests.".
  pyverbs_compare.py rerun OUT_REF OUT_NEW KNOWN
      prints the tests to run again on NEW, one per line: those that pass on REF, not on
      NEW, and whose KNOWN entry is a timing one (below).
  pyverbs_compare.py table REF OUT_REF NEW OUT_NEW [KNOWN [RERUNS]]
      prints the per-test table "test | REF | NEW" (status and seconds), the totals, and
      the regressions: tests that pass on REF but not on NEW and are not listed in KNOWN
      (lines "PATTERN REASON", PATTERN a test id or an fnmatch pattern, # comments).
      Known entries that pass on NEW are reported so they can be removed. An entry whose
      REASON starts with "timing:" is a test whose outcome depends on timing on either
      driver: it fails on NEW without regressing only if it passed on NEW in one of the
      runs again recorded in RERUNS (an OUT file), and is never to be removed for
      passing. Exit status 1 if there is a regression.
"""
import fnmatch
import os
import sys
import time
import unittest


def run(argv):
    out = argv[0]
    sys.argv = [sys.argv[0]] + argv[1:]
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    from importlib.machinery import SourceFileLoader
    from args_parser import parser

    tests = SourceFileLoader('tests', os.path.join(here, '__init__.py')).load_module()
    parser.parse_args()
    log = open(out, 'a', buffering=1)

    def tid(test):
        i = test.id()
        return i[len('tests.'):] if i.startswith('tests.') else i

    def one_line(s):
        s = ' '.join(str(s).split())
        return s[:300]

    class Result(unittest.TextTestResult):
        def startTest(self, test):
            self._t0 = time.monotonic()
            super().startTest(test)

        def _rec(self, test, status, detail=''):
            dt = time.monotonic() - getattr(self, '_t0', time.monotonic())
            log.write('%s\t%s\t%.2f\t%s\n' % (tid(test), status, dt, one_line(detail)))

        def addSuccess(self, test):
            super().addSuccess(test)
            self._rec(test, 'pass')

        def addFailure(self, test, err):
            super().addFailure(test, err)
            self._rec(test, 'fail', '%s: %s' % (err[0].__name__, err[1]))

        def addError(self, test, err):
            super().addError(test, err)
            self._rec(test, 'error', '%s: %s' % (err[0].__name__, err[1]))

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            self._rec(test, 'skip', reason)

        def addExpectedFailure(self, test, err):
            super().addExpectedFailure(test, err)
            self._rec(test, 'xfail')

        def addUnexpectedSuccess(self, test):
            super().addUnexpectedSuccess(test)
            self._rec(test, 'xpass')

        def addSubTest(self, test, subtest, err):
            super().addSubTest(test, subtest, err)
            if err is not None:
                status = 'fail' if issubclass(err[0], test.failureException) else 'error'
                self._rec(test, status, '%s: %s: %s' % (subtest, err[0].__name__, err[1]))

    runner = unittest.TextTestRunner(resultclass=Result, verbosity=2, stream=sys.stdout)
    prog = unittest.main(module=tests, testRunner=runner, exit=False)
    return 0 if prog.result.wasSuccessful() else 1


def records(path):
    """The (test, status, seconds, detail) records of an OUT file, in order; none if
    there is no such file."""
    try:
        with open(path) as f:
            for line in f:
                parts = line.rstrip('\n').split('\t')
                if len(parts) < 2:
                    continue
                secs = float(parts[2]) if len(parts) > 2 else 0.0
                yield parts[0], parts[1], secs, parts[3] if len(parts) > 3 else ''
    except FileNotFoundError:
        return


def load(path):
    res = {}
    for tid, status, secs, detail in records(path):
        # A test with a failing subtest is recorded more than once; the worst wins.
        prev = res.get(tid)
        if prev is None or RANK[status] > RANK[prev[0]]:
            res[tid] = (status, detail, secs)
    return res


RANK = {'pass': 0, 'xfail': 0, 'skip': 1, 'xpass': 2, 'fail': 3, 'error': 4, 'missing': 5}


TIMING = 'timing:'


def load_known(path):
    """The known list's (pattern, reason) pairs; none if there is no such file."""
    known = []
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line or line.startswith('#'):
                    continue
                pat, _, reason = line.partition(' ')
                known.append((pat, reason.strip()))
    return known


def known_reason(known, tid):
    """The reason of the first known entry matching test `tid`, else None."""
    for pat, reason in known:
        if tid == pat or fnmatch.fnmatchcase(tid, pat):
            return reason or '(no reason given)'
    return None


def ok(status):
    return status in ('pass', 'xfail')


def rerun(argv):
    ref_path, new_path, known_path = argv[:3]
    known = load_known(known_path)
    ref, new = load(ref_path), load(new_path)
    for tid in sorted(ref):
        reason = known_reason(known, tid) or ''
        n = new.get(tid, ('missing', '', 0))[0]
        if ok(ref[tid][0]) and not ok(n) and reason.startswith(TIMING):
            print(tid)
    return 0


def rerun_passes(path):
    """Per test of an OUT file of runs again: (runs, passes)."""
    res = {}
    for tid, status, _, _ in records(path):
        runs, passes = res.get(tid, (0, 0))
        res[tid] = (runs + 1, passes + ok(status))
    return res


def table(argv):
    ref_name, ref_path, new_name, new_path = argv[:4]
    known = load_known(argv[4] if len(argv) > 4 else None)
    again = rerun_passes(argv[5]) if len(argv) > 5 else {}
    ref = load(ref_path)
    new = load(new_path)

    ids = sorted(set(ref) | set(new))
    w = max([len(i) for i in ids] + [4])
    print('%-*s | %-13s | %-13s | note' % (w, 'test', ref_name, new_name))
    print('-' * (w + 42))
    regressions, now_pass, known_hits, better = [], [], 0, []
    for tid in ids:
        r, _, rsecs = ref.get(tid, ('missing', '', 0))
        n, ndetail, nsecs = new.get(tid, ('missing', '', 0))
        note = ''
        reason = known_reason(known, tid)
        timing = reason is not None and reason.startswith(TIMING)
        runs, passes = again.get(tid, (0, 0))
        r_ok, n_ok = ok(r), ok(n)
        if r_ok and not n_ok:
            if timing and passes:
                note = 'known: passed when run again (%d of %d runs): %s' % (
                    passes, runs, reason)
                known_hits += 1
            elif reason and not timing:
                note = 'known: ' + reason
                known_hits += 1
            else:
                if timing:
                    ndetail = 'no pass in %d runs again: %s' % (runs, ndetail)
                note = 'REGRESSION: ' + ndetail
                regressions.append((tid, ndetail))
        elif reason and n_ok and not timing:
            note = 'passes now: remove from the known list'
            now_pass.append(tid)
        elif n_ok and not r_ok:
            note = 'passes only on %s' % new_name
            better.append(tid)
        print('%-*s | %-7s %5.1f | %-7s %5.1f | %s' % (w, tid, r, rsecs, n, nsecs, note[:160]))
    print()
    for name, res in ((ref_name, ref), (new_name, new)):
        counts = {}
        for status, _, _ in res.values():
            counts[status] = counts.get(status, 0) + 1
        print('%-7s %4d tests in %.0f s: %s' % (name, len(res), sum(
            v[2] for v in res.values()), ', '.join(
            '%d %s' % (counts[s], s) for s in sorted(counts, key=lambda s: RANK[s]))))
        slow = sorted(res.items(), key=lambda kv: -kv[1][2])[:5]
        print('        slowest: %s' % ', '.join(
            '%s %.1f s (%s)' % (tid, v[2], v[0]) for tid, v in slow))
    print('passing on %s and not on %s: %d (%d known, %d regressions); known entries now '
          'passing: %d; passing only on %s: %d' % (
              ref_name, new_name, known_hits + len(regressions), known_hits,
              len(regressions), len(now_pass), new_name, len(better)))
    for tid, detail in regressions:
        print('REGRESSION: %s: %s' % (tid, detail[:200]))
    for tid in now_pass:
        print('NOW PASSES (remove from the known list): %s' % tid)
    return 1 if regressions else 0


if __name__ == '__main__':
    if len(sys.argv) >= 3 and sys.argv[1] == 'run':
        sys.exit(run(sys.argv[2:]))
    if len(sys.argv) >= 5 and sys.argv[1] == 'rerun':
        sys.exit(rerun(sys.argv[2:]))
    if len(sys.argv) >= 6 and sys.argv[1] == 'table':
        sys.exit(table(sys.argv[2:]))
    print(__doc__)
    sys.exit(2)
