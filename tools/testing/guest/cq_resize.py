# SPDX-License-Identifier: GPL-2.0
"""CQ sizes and resizing through the rxe provider (run by pyverbs.sh): capacities are
powers of two minus one, resize keeps working in both directions, bad sizes fail with
EINVAL, and the device's max_cqe is honoured."""
import errno
import sys

from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.pyverbs_error import PyverbsRDMAError

failed = 0


def check(desc, cond):
    global failed
    print(("ok - " if cond else "not ok - ") + desc)
    failed += not cond


def fails_with(desc, err, fn):
    try:
        fn()
    except PyverbsRDMAError as e:
        check(f"{desc}: {e.error_code} == {err}", e.error_code == err)
        return
    check(f"{desc}: did not fail", False)


ctx = Context(name=sys.argv[1])
max_cqe = ctx.query_device().max_cqe
check(f"max_cqe is 32767 (got {max_cqe})", max_cqe == 32767)
cq = CQ(ctx, 100)
check(f"100 requested -> capacity 127 (got {cq.cqe})", cq.cqe == 127)
cq.resize(200)
check(f"resize 200 -> 255 (got {cq.cqe})", cq.cqe == 255)
cq.resize(10)
check(f"resize 10 -> 15 (got {cq.cqe})", cq.cqe == 15)
fails_with("resize to max_cqe + 1", errno.EINVAL, lambda: cq.resize(max_cqe + 1))
check(f"a failed resize keeps the CQ (capacity {cq.cqe})", cq.cqe == 15)
fails_with("create with 0 entries", errno.EINVAL, lambda: CQ(ctx, 0))
fails_with("create with max_cqe + 1", errno.EINVAL, lambda: CQ(ctx, max_cqe + 1))
big = CQ(ctx, max_cqe)
check(f"create with max_cqe -> {big.cqe}", big.cqe >= max_cqe)
for i in range(200):
    CQ(ctx, 1 + i * 37 % 4000).close()
check("200 CQs of assorted sizes created and destroyed", True)
big.close()
cq.close()
ctx.close()
sys.exit(1 if failed else 0)
