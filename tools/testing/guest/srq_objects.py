# SPDX-License-Identifier: GPL-2.0
"""SRQ verbs through the rxe provider (run by pyverbs.sh): create with capacities written
back, query, resize keeping the queue usable, limit, bad values, and QPs on an SRQ."""
import errno
import sys

from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.qp import QP, QPCap, QPInitAttr
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr
import pyverbs.enums as e

from tap import check, done, fails_with

ctx = Context(name=sys.argv[1])
dev_attr = ctx.query_device()
pd = PD(ctx)
srq = SRQ(pd, SrqInitAttr(SrqAttr(max_wr=10, max_sge=2)))
a = srq.query()
check(f"max_wr 10 -> capacity 15 (got {a.max_wr})", a.max_wr == 15)
check(f"max_sge 2 (got {a.max_sge})", a.max_sge == 2)
srq.modify(SrqAttr(max_wr=100), e.IBV_SRQ_MAX_WR)
a = srq.query()
check(f"resize to 100 -> 127 (got {a.max_wr})", a.max_wr == 127)
srq.modify(SrqAttr(srq_limit=5), e.IBV_SRQ_LIMIT)
check(f"limit 5 (got {srq.query().srq_limit})", srq.query().srq_limit == 5)
fails_with("limit above capacity", errno.EINVAL, lambda: srq.modify(SrqAttr(srq_limit=1000), e.IBV_SRQ_LIMIT))
fails_with("resize to max_srq_wr + 1", errno.EINVAL,
           lambda: srq.modify(SrqAttr(max_wr=dev_attr.max_srq_wr + 1), e.IBV_SRQ_MAX_WR))
fails_with("max_sge above max_srq_sge", errno.EINVAL,
           lambda: SRQ(pd, SrqInitAttr(SrqAttr(max_wr=10, max_sge=dev_attr.max_srq_sge + 1))))
fails_with("0 WRs", errno.EINVAL, lambda: SRQ(pd, SrqInitAttr(SrqAttr(max_wr=0, max_sge=1))))
cq = CQ(ctx, 16)
qps = [QP(pd, QPInitAttr(qp_type=t, scq=cq, rcq=cq, srq=srq, cap=QPCap(max_send_wr=4, max_recv_wr=0)))
       for t in (e.IBV_QPT_RC, e.IBV_QPT_UC, e.IBV_QPT_UD)]
check("RC, UC and UD QPs on the SRQ", len(qps) == 3)
for qp in qps:
    qp.close()
srq.close()
for i in range(200):
    SRQ(pd, SrqInitAttr(SrqAttr(max_wr=1 + i * 13 % 500, max_sge=1 + i % 27))).close()
check("200 SRQs of assorted sizes", True)
cq.close()
pd.close()
ctx.close()
done()
