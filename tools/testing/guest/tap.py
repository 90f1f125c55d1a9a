# SPDX-License-Identifier: GPL-2.0
"""TAP-style checks for the guest's Python tests (run by pyverbs.sh)."""
import sys

from pyverbs.pyverbs_error import PyverbsRDMAError

failed = 0


def check(desc, cond):
    """Records one result."""
    global failed
    print(("ok - " if cond else "not ok - ") + desc)
    failed += not cond


def fails_with(desc, err, fn):
    """Checks that fn() raises a verbs error with errno err."""
    try:
        fn()
    except PyverbsRDMAError as ex:
        check(f"{desc}: errno {ex.error_code} == {err}", ex.error_code == err)
        return
    check(f"{desc}: did not fail", False)


def done():
    """Exits with the overall status."""
    sys.exit(1 if failed else 0)
