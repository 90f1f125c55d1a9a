# SPDX-License-Identifier: GPL-2.0
"""CQ sizes and resizing through the rxe provider (run by pyverbs.sh): capacities are
powers of two minus one, resize keeps working in both directions, bad sizes fail with
EINVAL, and the device's max_cqe is honoured."""
import errno
import sys

from pyverbs.cq import CQ
from pyverbs.device import Context

from tap import check, done, fails_with

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
done()
