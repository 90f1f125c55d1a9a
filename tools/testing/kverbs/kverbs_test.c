// SPDX-License-Identifier: GPL-2.0
/*
 * kverbs_test: a kernel verbs consumer, like a ULP, that creates and destroys verbs
 * objects on one RDMA device, to test the device's kernel verbs (not a driver; it only
 * uses the RDMA core's exported API).
 *
 * Module parameters:
 *   dev=NAME    the device to test (default rrxe0)
 *   count=N     objects of each type per run (default 1000)
 *   batch=B     objects alive at a time (default 8)
 *
 * It registers an ib_client with no_kverbs_req set, so that it also sees devices that
 * lack some of the kernel verbs the core calls mandatory (kverbs_provider=0), which every
 * other ULP skips.
 *
 * debugfs, /sys/kernel/debug/kverbs_test/:
 *   run      write "TYPES [COUNT]" to run (synchronously, in the writer's context);
 *            TYPES is a comma-separated list of pd, dma_mr, cq, qp, mr, ah, srq, or all,
 *            and traffic or traffic:NAME (below).
 *            The write fails with ENODEV if the client does not know the device.
 *   results  the last run's report: "device DEV ..." then one line per type,
 *            "TYPE RESULT DONE DETAIL" with RESULT ok, partial (some variants
 *            unsupported), unsupported or error, then "summary: N ok N unsupported
 *            N error". The lines also go to the kernel log.
 *   devices  the devices the client knows: name, kverbs_provider, and the missing ops
 *            among those the tested verbs reach.
 *
 * traffic: the data path. "traffic" in TYPES (not part of "all") runs every traffic
 * variant, "traffic:NAME" one of them; COUNT is then the number of rounds per variant.
 * Each variant makes its own PD (pd->local_dma_lkey for local SGEs), send and receive
 * CQs (ib_alloc_cq; IB_POLL_DIRECT polled with ib_poll_cq, or a workqueue/softirq
 * context with wr_cqe done callbacks and a completion), two QPs connected to each other
 * through the port's RoCE v2 IPv4-mapped GID (AV from rdma_ah_attr, dmac from the GID's
 * netdev; the RC PSN of one side wraps), and two 128 KiB kmalloc buffers mapped with
 * ib_dma_map_single. It fills sources with random bytes, poisons destinations, and
 * checks every destination byte plus 16 bytes before and 64 after, and every completion
 * (status, opcode, QP, wr_id, byte_len, wc_flags, imm_data / invalidate_rkey; for UD
 * src_qp, IB_WC_GRH and the IPv4 header in the 40 GRH bytes). Variants:
 *   send, send_imm, send_sge   SEND (with immediate; 4 send / 4 receive SGEs split
 *                              differently) of 1 B..64 KiB, around 1x/2x the path MTU
 *   send_burst, burst_wq       32 SENDs in one posted chain, every 8th signaled, into
 *                              32 chained receives; receive completions in order
 *   send_wq, send_softirq      the sweep with IB_POLL_WORKQUEUE / IB_POLL_SOFTIRQ CQs
 *   write_frmr, write_imm_frmr, read_frmr, atomic_frmr
 *                              RDMA WRITE (with immediate: 0-SGE receive), READ (also
 *                              with several local SGEs), FETCH_AND_ADD and CMP_AND_SWP
 *                              (matching and not) on 8-byte aligned targets, checking the
 *                              returned originals; the remote buffer is an MR from
 *                              ib_alloc_mr + ib_map_mr_sg + IB_WR_REG_MR with a key from
 *                              ib_update_fast_reg_key, every other time with the upper
 *                              32 bits of mr->iova changed before REG_MR (as NFS/RDMA
 *                              does)
 *   write_global, write_imm_global, read_global
 *                              the same through pd->unsafe_global_rkey
 *                              (IB_PD_UNSAFE_GLOBAL_RKEY)
 *   atomic_global_denied       that rkey has no atomic access: a FETCH_AND_ADD through it
 *                              (once, after the rounds) must fail with
 *                              IB_WC_REM_ACCESS_ERR and leave the target alone
 *   send_inv, local_inv        per round REG_MR, a WRITE, then SEND_WITH_INV (receiver
 *                              sees IB_WC_WITH_INVALIDATE) or LOCAL_INV; at the end a
 *                              WRITE with the invalidated rkey must fail with
 *                              IB_WC_REM_ACCESS_ERR and change nothing
 *   local_inv_chain            per round two fast-reg MRs registered, a WRITE, then one
 *                              post of two signaled LOCAL_INVs, one per MR (NFS/RDMA's
 *                              frwr_unmap_sync): the second waits until the first
 *                              completed (IBA 10.6.5.1), and both must complete without
 *                              anything else being posted
 *   inv_mid, dereg_mid         (after one REG_MR and WRITE round) a WRITE_WITH_IMM of 3
 *                              MTUs to side 1, which posts no receive: First and Middle
 *                              land, Last is answered with RNR NAKs; side 1 then
 *                              invalidates the MR (LOCAL_INV) or deregisters it, and
 *                              posts the receive: the retried Last must be refused
 *                              (IB_WC_REM_ACCESS_ERR) and the last MTU stay unchanged
 *   remap_valid                (after the REG_MR and WRITE rounds) ib_map_mr_sg maps the
 *                              still valid MR again, as iSER does before it posts LOCAL_INV
 *                              and REG_MR: a WRITE with the registered rkey must now fail
 *                              (IB_WC_REM_ACCESS_ERR) and change nothing, rather than
 *                              reach the pages being mapped for the next registration
 *   remap_iser                 the same, then iSER's chain (iser_fast_reg_mr): one post of
 *                              LOCAL_INV with the old key and REG_MR with a new one, both
 *                              completing; a WRITE with the new key lands, with the old
 *                              one fails
 *   ud, ud_imm, ud_wq          UD SENDs of 1 B..MTU through rdma_create_ah
 *   srq_drain                  the send sweep into receives posted to an SRQ both RC QPs
 *                              share; then, with receives left on the SRQ, ib_drain_qp
 *                              of the receiving QP must return within 1 s (it waits for
 *                              IB_EVENT_QP_LAST_WQE_REACHED, up to 60 s) and leave
 *                              the QP in the error state
 * A variant whose verbs the device lacks (ops, IB_DEVICE_MEM_MGT_EXTENSIONS for the
 * frmr ones, atomic_cap) is unsupported; so is one whose verb returns EOPNOTSUPP.
 * Results: one line per variant, "traffic:NAME RESULT ROUNDS MS ms DETAIL", RESULT
 * ok, unsupported or error; DETAIL says what failed first (also in the kernel log).
 *
 * A verb the device does not have is reported unsupported. Where the core would call a
 * NULL op (e.g. ib_alloc_pd needs get_dma_mr unless the device sets IBK_LOCAL_DMA_LKEY;
 * ib_create_srq_user does not check create_srq), the op is checked here first.
 * dma_mr (ib_alloc_pd with IB_PD_UNSAFE_GLOBAL_RKEY, i.e. the DMA MR a ULP gets
 * through the PD flags) runs at most 16 times per run: the core logs a warning each time.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/debugfs.h>
#include <linux/slab.h>
#include <linux/mutex.h>
#include <linux/list.h>
#include <linux/ktime.h>
#include <linux/scatterlist.h>
#include <linux/etherdevice.h>
#include <linux/ip.h>
#include <linux/random.h>
#include <linux/delay.h>
#include <linux/completion.h>
#include <linux/mm.h>
#include <net/ipv6.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_cache.h>

static char *dev = "rrxe0";
module_param(dev, charp, 0644);
MODULE_PARM_DESC(dev, "RDMA device to test (default rrxe0)");
static uint count = 1000;
module_param(count, uint, 0644);
MODULE_PARM_DESC(count, "objects of each type per run (default 1000)");
static uint batch = 8;
module_param(batch, uint, 0644);
MODULE_PARM_DESC(batch, "objects alive at a time (default 8, at most 64)");

#define MAX_BATCH 64
#define MAX_VARIANTS 40
#define RESULTS_SIZE 16384
#define PORT 1

/* Devices the client was given. */
struct kvt_dev {
	struct list_head list;
	struct ib_device *ibdev;
};
static LIST_HEAD(devices);
/* Serialises runs, and device add/remove against a run. */
static DEFINE_MUTEX(kvt_lock);

static char *results;
static size_t results_len;

static __printf(1, 2) void report(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vscnprintf(results + results_len, RESULTS_SIZE - results_len, fmt, ap);
	va_end(ap);
	pr_info("%s", results + results_len);
	results_len += n;
}

enum vstate { V_ACTIVE, V_UNSUPPORTED, V_FAILED };

struct variant {
	char name[48];
	int arg[4];
	enum vstate state;
	int err;
	const char *what;
	long made;
};

/* Shared objects of a run. */
struct run {
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *scq, *rcq;
	struct ib_srq *srq;
	void *page;
	int gid_index;
	union ib_gid gid;
	u8 dmac[ETH_ALEN];
};

struct type {
	const char *name;
	/* 0, or an error with *what saying what failed. */
	int (*setup)(struct run *r, struct type *t, const char **what);
	int (*create)(struct run *r, struct variant *v, long i, void **p, const char **what);
	int (*destroy)(struct run *r, struct variant *v, void *p, const char **what);
	long max_count;
	struct variant v[MAX_VARIANTS];
	int nv;
};

static __printf(6, 7) void add_variant(struct type *t, int a0, int a1, int a2, int a3,
				       const char *fmt, ...)
{
	struct variant *v;
	va_list ap;

	if (WARN_ON(t->nv == MAX_VARIANTS))
		return;
	v = &t->v[t->nv++];
	memset(v, 0, sizeof(*v));
	v->arg[0] = a0;
	v->arg[1] = a1;
	v->arg[2] = a2;
	v->arg[3] = a3;
	va_start(ap, fmt);
	vsnprintf(v->name, sizeof(v->name), fmt, ap);
	va_end(ap);
}

static void unsupported_variant(struct type *t, const char *what)
{
	struct variant *v = &t->v[t->nv - 1];

	v->state = V_UNSUPPORTED;
	v->err = -EOPNOTSUPP;
	v->what = what;
}

static bool is_unsupported(int err)
{
	return err == -EOPNOTSUPP || err == -ENOSYS;
}

/* What ib_alloc_pd needs from the device, or NULL. */
static const char *pd_missing(struct ib_device *d)
{
	bool lkey = d->attrs.kernel_cap_flags & IBK_LOCAL_DMA_LKEY;

	if (!d->ops.alloc_pd || !d->ops.size_ib_pd)
		return "ops.alloc_pd missing";
	if (!d->ops.dealloc_pd)
		return "ops.dealloc_pd missing";
	if (!lkey && !d->ops.get_dma_mr)
		return "ops.get_dma_mr missing (no IBK_LOCAL_DMA_LKEY: ib_alloc_pd calls it)";
	if (!lkey && !d->ops.dereg_mr)
		return "ops.dereg_mr missing (no IBK_LOCAL_DMA_LKEY)";
	return NULL;
}

static int need_pd(struct run *r, const char **what)
{
	struct ib_pd *pd;

	if (r->pd)
		return 0;
	*what = pd_missing(r->dev);
	if (*what)
		return -EOPNOTSUPP;
	*what = "ib_alloc_pd (prerequisite)";
	pd = ib_alloc_pd(r->dev, 0);
	if (IS_ERR(pd))
		return PTR_ERR(pd);
	r->pd = pd;
	return 0;
}

static void kvt_comp(struct ib_cq *cq, void *ctx)
{
}

static void kvt_event(struct ib_event *ev, void *ctx)
{
	pr_info("async event %d\n", ev->event);
}

static const char *cq_missing(struct ib_device *d)
{
	if (!d->ops.create_cq || !d->ops.size_ib_cq)
		return "ops.create_cq missing";
	if (!d->ops.destroy_cq)
		return "ops.destroy_cq missing";
	return NULL;
}

static int need_cqs(struct run *r, const char **what)
{
	struct ib_cq *cq;

	*what = cq_missing(r->dev);
	if (*what)
		return -EOPNOTSUPP;
	*what = "ib_alloc_cq (prerequisite)";
	if (!r->scq) {
		cq = ib_alloc_cq(r->dev, NULL, 64, 0, IB_POLL_DIRECT);
		if (IS_ERR(cq))
			return PTR_ERR(cq);
		r->scq = cq;
	}
	if (!r->rcq) {
		cq = ib_alloc_cq(r->dev, NULL, 64, 0, IB_POLL_DIRECT);
		if (IS_ERR(cq))
			return PTR_ERR(cq);
		r->rcq = cq;
	}
	return 0;
}

static const char *srq_missing(struct ib_device *d)
{
	if (!d->ops.create_srq || !d->ops.size_ib_srq)
		return "ops.create_srq missing";
	if (!d->ops.destroy_srq)
		return "ops.destroy_srq missing";
	return NULL;
}

static int need_srq(struct run *r, const char **what)
{
	struct ib_srq_init_attr a = {
		.event_handler = kvt_event,
		.attr = { .max_wr = 64, .max_sge = 1 },
		.srq_type = IB_SRQT_BASIC,
	};
	struct ib_srq *srq;
	int err = need_pd(r, what);

	if (err || r->srq)
		return err;
	*what = srq_missing(r->dev);
	if (*what)
		return -EOPNOTSUPP;
	*what = "ib_create_srq (prerequisite)";
	srq = ib_create_srq(r->pd, &a);
	if (IS_ERR(srq))
		return PTR_ERR(srq);
	r->srq = srq;
	return 0;
}

/* pd */

static int pd_setup(struct run *r, struct type *t, const char **what)
{
	add_variant(t, 0, 0, 0, 0, "pd");
	*what = pd_missing(r->dev);
	if (*what)
		unsupported_variant(t, *what);
	return 0;
}

static int pd_create(struct run *r, struct variant *v, long i, void **p, const char **what)
{
	struct ib_pd *pd = ib_alloc_pd(r->dev, 0);

	*what = "ib_alloc_pd";
	if (IS_ERR(pd))
		return PTR_ERR(pd);
	*p = pd;
	return 0;
}

static int pd_destroy(struct run *r, struct variant *v, void *p, const char **what)
{
	*what = "ib_dealloc_pd_user";
	return ib_dealloc_pd_user(p, NULL);
}

/* dma_mr: a PD with an unsafe global rkey, i.e. a DMA MR with remote access. */

static int dma_mr_setup(struct run *r, struct type *t, const char **what)
{
	add_variant(t, 0, 0, 0, 0, "IB_PD_UNSAFE_GLOBAL_RKEY");
	*what = pd_missing(r->dev);
	if (!*what && !r->dev->ops.get_dma_mr)
		*what = "ops.get_dma_mr missing";
	if (!*what && !r->dev->ops.dereg_mr)
		*what = "ops.dereg_mr missing";
	if (*what)
		unsupported_variant(t, *what);
	return 0;
}

static int dma_mr_create(struct run *r, struct variant *v, long i, void **p, const char **what)
{
	struct ib_pd *pd = ib_alloc_pd(r->dev, IB_PD_UNSAFE_GLOBAL_RKEY);

	*what = "ib_alloc_pd(IB_PD_UNSAFE_GLOBAL_RKEY)";
	if (IS_ERR(pd))
		return PTR_ERR(pd);
	if (!pd->__internal_mr) {
		*what = "ib_alloc_pd(IB_PD_UNSAFE_GLOBAL_RKEY) made no DMA MR";
		ib_dealloc_pd_user(pd, NULL);
		return -EINVAL;
	}
	*p = pd;
	return 0;
}

/* cq: ib_alloc_cq with each poll context, and ib_create_cq; several sizes. */

enum { CQ_CREATE = -1 };

static int cq_setup(struct run *r, struct type *t, const char **what)
{
	static const struct {
		int ctx;
		const char *name;
	} kinds[] = {
		{ IB_POLL_DIRECT, "ib_alloc_cq direct" },
		{ IB_POLL_SOFTIRQ, "ib_alloc_cq softirq" },
		{ IB_POLL_WORKQUEUE, "ib_alloc_cq workqueue" },
		{ IB_POLL_UNBOUND_WORKQUEUE, "ib_alloc_cq unbound wq" },
		{ CQ_CREATE, "ib_create_cq" },
	};
	int sizes[] = { 1, 64, 4096, r->dev->attrs.max_cqe };
	const char *missing = cq_missing(r->dev);
	int k, s;

	for (k = 0; k < ARRAY_SIZE(kinds); k++)
		for (s = 0; s < ARRAY_SIZE(sizes); s++) {
			add_variant(t, kinds[k].ctx, sizes[s], 0, 0, "%s cqe=%d", kinds[k].name,
				    sizes[s]);
			if (missing)
				unsupported_variant(t, missing);
			else if (kinds[k].ctx != IB_POLL_DIRECT && kinds[k].ctx != CQ_CREATE &&
				 (!r->dev->ops.poll_cq || !r->dev->ops.req_notify_cq))
				unsupported_variant(t, "ops.poll_cq or ops.req_notify_cq missing");
		}
	return 0;
}

static int cq_create(struct run *r, struct variant *v, long i, void **p, const char **what)
{
	int vec = r->dev->num_comp_vectors ? i % r->dev->num_comp_vectors : 0;
	struct ib_cq *cq;

	if (v->arg[0] == CQ_CREATE) {
		struct ib_cq_init_attr a = { .cqe = v->arg[1], .comp_vector = vec };

		*what = "ib_create_cq";
		cq = ib_create_cq(r->dev, kvt_comp, kvt_event, NULL, &a);
	} else {
		*what = "ib_alloc_cq";
		cq = ib_alloc_cq(r->dev, NULL, v->arg[1], vec, v->arg[0]);
	}
	if (IS_ERR(cq))
		return PTR_ERR(cq);
	if (cq->cqe < v->arg[1]) {
		pr_err("%s: cqe %d < %d asked\n", *what, cq->cqe, v->arg[1]);
		if (v->arg[0] == CQ_CREATE)
			ib_destroy_cq_user(cq, NULL);
		else
			ib_free_cq(cq);
		return -EINVAL;
	}
	*p = cq;
	return 0;
}

static int cq_destroy(struct run *r, struct variant *v, void *p, const char **what)
{
	if (v->arg[0] == CQ_CREATE) {
		*what = "ib_destroy_cq_user";
		return ib_destroy_cq_user(p, NULL);
	}
	/* ib_free_cq has no status; it warns if the driver fails, which fails the run. */
	*what = "ib_free_cq";
	ib_free_cq(p);
	return 0;
}

/* qp: {RC, UC, UD} x {own RQ, SRQ} x capabilities, one RC with rdma_rw contexts. */

static const struct {
	u32 send_wr, recv_wr, send_sge, recv_sge, inline_data, rdma_ctxs;
} qp_caps[] = {
	{ 1, 1, 1, 1, 0, 0 },
	{ 64, 32, 4, 2, 64, 0 },
	{ 1024, 512, 16, 8, 256, 0 },
	{ 128, 128, 2, 1, 0, 8 },
};

static int qp_setup(struct run *r, struct type *t, const char **what)
{
	static const struct {
		enum ib_qp_type type;
		const char *name;
	} types[] = { { IB_QPT_RC, "RC" }, { IB_QPT_UC, "UC" }, { IB_QPT_UD, "UD" } };
	const char *missing = NULL;
	int err = need_pd(r, what);
	int ty, c, s;

	if (!err)
		err = need_cqs(r, what);
	if (err)
		return err;
	if (!r->dev->ops.create_qp || !r->dev->ops.size_ib_qp)
		missing = "ops.create_qp missing";
	else if (!r->dev->ops.destroy_qp)
		missing = "ops.destroy_qp missing";
	for (s = 0; s < 2; s++) {
		const char *srq_err = NULL;

		if (s && !missing) {
			err = need_srq(r, what);
			if (err && !is_unsupported(err))
				return err;
			if (err)
				srq_err = *what;
		}
		for (ty = 0; ty < ARRAY_SIZE(types); ty++)
			for (c = 0; c < ARRAY_SIZE(qp_caps); c++) {
				/* rdma_rw contexts are for connected QPs. */
				if (qp_caps[c].rdma_ctxs && types[ty].type != IB_QPT_RC)
					continue;
				add_variant(t, types[ty].type, s, c, 0, "%s%s send_wr=%u%s",
					    types[ty].name, s ? " srq" : "", qp_caps[c].send_wr,
					    qp_caps[c].rdma_ctxs ? " rdma_ctxs" : "");
				if (missing)
					unsupported_variant(t, missing);
				else if (srq_err)
					unsupported_variant(t, srq_err);
			}
	}
	return 0;
}

static int qp_create(struct run *r, struct variant *v, long i, void **p, const char **what)
{
	struct ib_device *d = r->dev;
	int c = v->arg[2];
	struct ib_qp_init_attr a = {
		.event_handler = kvt_event,
		.send_cq = r->scq,
		.recv_cq = (i & 1) ? r->rcq : r->scq,
		.srq = v->arg[1] ? r->srq : NULL,
		.sq_sig_type = (i & 1) ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR,
		.qp_type = v->arg[0],
		.port_num = PORT,
		.cap = {
			.max_send_wr = min_t(u32, qp_caps[c].send_wr, d->attrs.max_qp_wr),
			.max_recv_wr = v->arg[1] ? 0 :
				min_t(u32, qp_caps[c].recv_wr, d->attrs.max_qp_wr),
			.max_send_sge = min_t(u32, qp_caps[c].send_sge, d->attrs.max_send_sge),
			.max_recv_sge = v->arg[1] ? 0 :
				min_t(u32, qp_caps[c].recv_sge, d->attrs.max_recv_sge),
			.max_inline_data = qp_caps[c].inline_data,
			.max_rdma_ctxs = qp_caps[c].rdma_ctxs,
		},
	};
	struct ib_qp *qp;

	*what = "ib_create_qp";
	qp = ib_create_qp(r->pd, &a);
	if (IS_ERR(qp))
		return PTR_ERR(qp);
	*p = qp;
	return 0;
}

static int qp_destroy(struct run *r, struct variant *v, void *p, const char **what)
{
	*what = "ib_destroy_qp";
	return ib_destroy_qp(p);
}

/* mr: fast-registration MRs, some mapped to a page with ib_map_mr_sg. */

static int mr_setup(struct run *r, struct type *t, const char **what)
{
	struct ib_device *d = r->dev;
	u32 most = min_t(u32, d->attrs.max_fast_reg_page_list_len, 256);
	const char *missing = NULL;
	int err = need_pd(r, what);

	if (err)
		return err;
	r->page = kzalloc(PAGE_SIZE, GFP_KERNEL);
	*what = "kzalloc";
	if (!r->page)
		return -ENOMEM;
	if (!d->ops.alloc_mr)
		missing = "ops.alloc_mr missing";
	else if (!d->ops.dereg_mr)
		missing = "ops.dereg_mr missing";
	if (!most && !missing)
		missing = "max_fast_reg_page_list_len is 0";
	add_variant(t, 1, 0, 0, 0, "MEM_REG sg=1");
	if (missing)
		unsupported_variant(t, missing);
	add_variant(t, 16, 0, 0, 0, "MEM_REG sg=16");
	if (missing)
		unsupported_variant(t, missing);
	add_variant(t, most, 0, 0, 0, "MEM_REG sg=%u", most);
	if (missing)
		unsupported_variant(t, missing);
	add_variant(t, 16, 1, 0, 0, "MEM_REG sg=16 + ib_map_mr_sg");
	if (missing)
		unsupported_variant(t, missing);
	else if (!d->ops.map_mr_sg)
		unsupported_variant(t, "ops.map_mr_sg missing");
	return 0;
}

static int mr_create(struct run *r, struct variant *v, long i, void **p, const char **what)
{
	struct ib_mr *mr;
	struct scatterlist sg;
	int n;

	*what = "ib_alloc_mr";
	mr = ib_alloc_mr(r->pd, IB_MR_TYPE_MEM_REG, v->arg[0]);
	if (IS_ERR(mr))
		return PTR_ERR(mr);
	if (v->arg[1]) {
		sg_init_one(&sg, r->page, PAGE_SIZE);
		*what = "ib_dma_map_sg";
		if (ib_dma_map_sg(r->dev, &sg, 1, DMA_BIDIRECTIONAL) != 1) {
			ib_dereg_mr(mr);
			return -EIO;
		}
		*what = "ib_map_mr_sg";
		n = ib_map_mr_sg(mr, &sg, 1, NULL, PAGE_SIZE);
		ib_dma_unmap_sg(r->dev, &sg, 1, DMA_BIDIRECTIONAL);
		if (n != 1) {
			ib_dereg_mr(mr);
			return n < 0 ? n : -EIO;
		}
	}
	*p = mr;
	return 0;
}

static int mr_destroy(struct run *r, struct variant *v, void *p, const char **what)
{
	*what = "ib_dereg_mr";
	return ib_dereg_mr(p);
}

/* ah: RoCE address handles to this port's own GIDs. */

static int find_gid(struct run *r)
{
	const struct ib_port_immutable *imm = ib_port_immutable_read(r->dev, PORT);
	int i;

	for (i = 0; i < imm->gid_tbl_len; i++) {
		const struct ib_gid_attr *attr = rdma_get_gid_attr(r->dev, PORT, i);
		bool ok;

		if (IS_ERR(attr))
			continue;
		ok = attr->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP &&
		     ipv6_addr_v4mapped((const struct in6_addr *)attr->gid.raw) &&
		     !rdma_read_gid_l2_fields(attr, NULL, r->dmac);
		if (ok)
			r->gid = attr->gid;
		rdma_put_gid_attr(attr);
		if (ok)
			return i;
	}
	return -1;
}

static int ah_setup(struct run *r, struct type *t, const char **what)
{
	const char *missing = NULL;
	int err = need_pd(r, what), k;

	if (err)
		return err;
	if (!rdma_protocol_roce(r->dev, PORT)) {
		*what = "port 1 is not RoCE";
		return -EINVAL;
	}
	r->gid_index = find_gid(r);
	*what = "no RoCE v2 IPv4-mapped GID on port 1";
	if (r->gid_index < 0)
		return -ENOENT;
	if (!r->dev->ops.create_ah || !r->dev->ops.size_ib_ah)
		missing = "ops.create_ah missing";
	else if (!r->dev->ops.destroy_ah)
		missing = "ops.destroy_ah missing";
	add_variant(t, 64, 0, 0, RDMA_CREATE_AH_SLEEPABLE, "gid %d sleepable", r->gid_index);
	add_variant(t, 1, 0x20, 3, RDMA_CREATE_AH_SLEEPABLE, "gid %d tclass 0x20 hop 1 sl 3",
		    r->gid_index);
	add_variant(t, 64, 0, 0, 0, "gid %d atomic", r->gid_index);
	for (k = 0; missing && k < t->nv; k++) {
		t->v[k].state = V_UNSUPPORTED;
		t->v[k].err = -EOPNOTSUPP;
		t->v[k].what = missing;
	}
	return 0;
}

static int ah_create(struct run *r, struct variant *v, long i, void **p, const char **what)
{
	struct rdma_ah_attr a = {};
	struct ib_ah *ah;

	a.type = rdma_ah_find_type(r->dev, PORT);
	rdma_ah_set_port_num(&a, PORT);
	rdma_ah_set_sl(&a, v->arg[2]);
	rdma_ah_set_grh(&a, &r->gid, i & 0xfffff, r->gid_index, v->arg[0], v->arg[1]);
	memcpy(a.roce.dmac, r->dmac, ETH_ALEN);
	*what = "rdma_create_ah";
	ah = rdma_create_ah(r->pd, &a, v->arg[3]);
	if (IS_ERR(ah))
		return PTR_ERR(ah);
	*p = ah;
	return 0;
}

static int ah_destroy(struct run *r, struct variant *v, void *p, const char **what)
{
	*what = "rdma_destroy_ah_user";
	return rdma_destroy_ah_user(p, v->arg[3] ? RDMA_DESTROY_AH_SLEEPABLE : 0, NULL);
}

/* srq */

static int srq_setup(struct run *r, struct type *t, const char **what)
{
	u32 sge = r->dev->attrs.max_srq_sge;
	u32 big = min_t(u32, r->dev->attrs.max_srq_wr, 4096);
	const char *missing = srq_missing(r->dev);
	int err = need_pd(r, what), k;

	if (err)
		return err;
	add_variant(t, 1, 1, 0, 0, "wr=1 sge=1");
	add_variant(t, 16, 2, 8, 0, "wr=16 sge=2 limit=8");
	add_variant(t, 256, sge, 0, 0, "wr=256 sge=%u", sge);
	add_variant(t, big, 1, big / 2, 0, "wr=%u sge=1 limit=%u", big, big / 2);
	for (k = 0; missing && k < t->nv; k++) {
		t->v[k].state = V_UNSUPPORTED;
		t->v[k].err = -EOPNOTSUPP;
		t->v[k].what = missing;
	}
	return 0;
}

static int srq_create(struct run *r, struct variant *v, long i, void **p, const char **what)
{
	struct ib_srq_init_attr a = {
		.event_handler = kvt_event,
		.attr = { .max_wr = v->arg[0], .max_sge = v->arg[1], .srq_limit = v->arg[2] },
		.srq_type = IB_SRQT_BASIC,
	};
	struct ib_srq *srq;

	*what = "ib_create_srq";
	srq = ib_create_srq(r->pd, &a);
	if (IS_ERR(srq))
		return PTR_ERR(srq);
	*p = srq;
	return 0;
}

static int srq_destroy(struct run *r, struct variant *v, void *p, const char **what)
{
	*what = "ib_destroy_srq_user";
	return ib_destroy_srq_user(p, NULL);
}

static struct type types[] = {
	{ .name = "pd", .setup = pd_setup, .create = pd_create, .destroy = pd_destroy },
	{ .name = "dma_mr", .setup = dma_mr_setup, .create = dma_mr_create,
	  .destroy = pd_destroy, .max_count = 16 },
	{ .name = "cq", .setup = cq_setup, .create = cq_create, .destroy = cq_destroy },
	{ .name = "qp", .setup = qp_setup, .create = qp_create, .destroy = qp_destroy },
	{ .name = "mr", .setup = mr_setup, .create = mr_create, .destroy = mr_destroy },
	{ .name = "ah", .setup = ah_setup, .create = ah_create, .destroy = ah_destroy },
	{ .name = "srq", .setup = srq_setup, .create = srq_create, .destroy = srq_destroy },
};

static struct variant *next_variant(struct type *t, int *cursor)
{
	int k;

	for (k = 0; k < t->nv; k++) {
		struct variant *v = &t->v[(*cursor + k) % t->nv];

		if (v->state == V_ACTIVE) {
			*cursor = (*cursor + k + 1) % t->nv;
			return v;
		}
	}
	return NULL;
}

enum result { RES_OK, RES_PARTIAL, RES_UNSUPPORTED, RES_ERROR };
static const char *const result_name[] = { "ok", "partial", "unsupported", "error" };

/*
 * traffic: the data path, as a ULP drives it. Each variant builds its own objects (PD,
 * send and receive CQs from ib_alloc_cq, two QPs of one type connected to each other
 * through the port's RoCE v2 IPv4 GID, 128 KiB kmalloc buffers mapped with
 * ib_dma_map_single), moves pseudo-random data COUNT rounds, checks every byte (and
 * that nothing around the target changed) and every completion, and tears down.
 */

#define T_BUF (128 * 1024)
#define T_MAX_MSG (64 * 1024)
#define T_NWR 256
#define T_SGE 4
#define T_BURST 32
#define T_SLOT 2048
#define T_POISON 0xa5
#define T_SLACK 64
#define T_GRH 40
#define T_QKEY 0x1a2b3c4d
#define T_TIMEOUT (20 * HZ)
#define T_ACCESS (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ | \
		  IB_ACCESS_REMOTE_ATOMIC)

enum tkind {
	TK_SEND, TK_BURST, TK_WRITE, TK_READ, TK_ATOMIC, TK_ATOMIC_DENIED, TK_SEND_INV,
	TK_LOCAL_INV, TK_MID, TK_REMAP, TK_UD, TK_SRQ_DRAIN
};
enum {
	TF_IMM = 1, TF_SGE = 2, TF_FRMR = 4, TF_GLOBAL = 8, TF_DEREG = 16, TF_CHAIN = 32,
	TF_ISER = 64
};

static const struct tvariant {
	const char *name;
	enum tkind kind;
	int flags;
	enum ib_poll_context pctx;
} tvariants[] = {
	{ "send", TK_SEND, 0, IB_POLL_DIRECT },
	{ "send_imm", TK_SEND, TF_IMM, IB_POLL_DIRECT },
	{ "send_sge", TK_SEND, TF_SGE, IB_POLL_DIRECT },
	{ "send_burst", TK_BURST, 0, IB_POLL_DIRECT },
	{ "send_wq", TK_SEND, TF_IMM | TF_SGE, IB_POLL_WORKQUEUE },
	{ "send_softirq", TK_SEND, 0, IB_POLL_SOFTIRQ },
	{ "burst_wq", TK_BURST, 0, IB_POLL_WORKQUEUE },
	{ "write_frmr", TK_WRITE, TF_FRMR, IB_POLL_DIRECT },
	{ "write_imm_frmr", TK_WRITE, TF_FRMR | TF_IMM, IB_POLL_DIRECT },
	{ "read_frmr", TK_READ, TF_FRMR, IB_POLL_DIRECT },
	{ "atomic_frmr", TK_ATOMIC, TF_FRMR, IB_POLL_DIRECT },
	{ "write_global", TK_WRITE, TF_GLOBAL, IB_POLL_DIRECT },
	{ "write_imm_global", TK_WRITE, TF_GLOBAL | TF_IMM, IB_POLL_DIRECT },
	{ "read_global", TK_READ, TF_GLOBAL, IB_POLL_DIRECT },
	{ "atomic_global_denied", TK_ATOMIC_DENIED, TF_GLOBAL, IB_POLL_DIRECT },
	{ "send_inv", TK_SEND_INV, TF_FRMR, IB_POLL_DIRECT },
	{ "local_inv", TK_LOCAL_INV, TF_FRMR, IB_POLL_DIRECT },
	{ "local_inv_chain", TK_LOCAL_INV, TF_FRMR | TF_CHAIN, IB_POLL_DIRECT },
	{ "inv_mid", TK_MID, TF_FRMR, IB_POLL_DIRECT },
	{ "dereg_mid", TK_MID, TF_FRMR | TF_DEREG, IB_POLL_DIRECT },
	{ "remap_valid", TK_REMAP, TF_FRMR, IB_POLL_DIRECT },
	{ "remap_iser", TK_REMAP, TF_FRMR | TF_ISER, IB_POLL_DIRECT },
	{ "ud", TK_UD, 0, IB_POLL_DIRECT },
	{ "ud_imm", TK_UD, TF_IMM, IB_POLL_DIRECT },
	{ "ud_wq", TK_UD, TF_IMM, IB_POLL_WORKQUEUE },
	{ "srq_drain", TK_SRQ_DRAIN, 0, IB_POLL_DIRECT },
};
static bool tsel[ARRAY_SIZE(tvariants)];

struct tctx;

/* One posted work request; cqe comes first, so wr_id and wr_cqe carry the same value. */
struct twr {
	struct ib_cqe cqe;
	struct tctx *c;
	struct ib_wc wc;
	int seq;
	bool done;
};

struct tside {
	struct ib_qp *qp;
	u8 *buf;
	u64 dma;
	u32 psn;
};

struct tseg {
	u32 off, len;
};

struct tctx {
	struct ib_device *dev;
	const struct tvariant *tv;
	struct run r;
	struct ib_pd *pd;
	struct ib_cq *scq, *rcq;
	struct ib_srq *srq;
	struct tside s[2];
	u8 *exp;
	struct ib_mr *mr, *mr2;
	struct scatterlist sg;
	bool sg_mapped;
	struct ib_ah *ah;
	enum ib_mtu path_mtu;
	u32 mtu, max_msg, send_sge, recv_sge, rd_sge, rd_atom, rd_atom_dest;
	u8 key, key2;
	atomic_t seq;
	struct completion comp;
	int next;
	struct twr wr[T_NWR];
	struct ib_wc wcs[8];
	struct ib_recv_wr rwr[T_BURST];
	struct ib_send_wr swr[T_BURST];
	struct ib_sge rsge[T_BURST], ssge[T_BURST];
	struct twr *bw[2 * T_BURST];
	char msg[256];
};

static __printf(3, 4) int terr(struct tctx *c, int err, const char *fmt, ...)
{
	va_list ap;

	if (!c->msg[0]) {
		va_start(ap, fmt);
		vsnprintf(c->msg, sizeof(c->msg), fmt, ap);
		va_end(ap);
		if (!is_unsupported(err))
			pr_err("traffic:%s: %s\n", c->tv->name, c->msg);
	}
	return err;
}

static void tdone(struct ib_cq *cq, struct ib_wc *wc)
{
	struct twr *w = container_of(wc->wr_cqe, struct twr, cqe);

	w->wc = *wc;
	w->seq = atomic_inc_return(&w->c->seq);
	smp_store_release(&w->done, true);
	complete(&w->c->comp);
}

static struct twr *twr_get(struct tctx *c)
{
	struct twr *w = &c->wr[c->next++ % T_NWR];

	memset(w, 0, sizeof(*w));
	w->c = c;
	w->cqe.done = tdone;
	return w;
}

/* Polls a direct CQ; the number of completions, or an error. */
static int tpoll(struct tctx *c, struct ib_cq *cq)
{
	int n, i, got = 0;

	while ((n = ib_poll_cq(cq, ARRAY_SIZE(c->wcs), c->wcs)) > 0) {
		for (i = 0; i < n; i++) {
			uintptr_t id = c->wcs[i].wr_id, base = (uintptr_t)c->wr;
			struct twr *w;

			if (id < base || id >= base + sizeof(c->wr) ||
			    (id - base) % sizeof(c->wr[0]))
				return terr(c, -EIO,
					    "completion with unknown wr_id %#llx (status %d opcode %d)",
					    c->wcs[i].wr_id, c->wcs[i].status, c->wcs[i].opcode);
			w = (struct twr *)id;
			w->wc = c->wcs[i];
			w->seq = atomic_inc_return(&c->seq);
			w->done = true;
		}
		got += n;
	}
	if (n < 0)
		return terr(c, n, "ib_poll_cq: %d", n);
	return got;
}

/* Waits until the N work requests in WS have completed. */
static int twait(struct tctx *c, struct twr **ws, int n, const char *what)
{
	unsigned long deadline = jiffies + T_TIMEOUT;
	int i, got;

	for (;;) {
		for (i = 0; i < n; i++)
			if (!smp_load_acquire(&ws[i]->done))
				break;
		if (i == n)
			return 0;
		if (time_after(jiffies, deadline))
			return terr(c, -ETIMEDOUT, "%s: no completion after %d s (work request %d of %d)",
				    what, T_TIMEOUT / HZ, i + 1, n);
		if (c->tv->pctx == IB_POLL_DIRECT) {
			got = tpoll(c, c->scq);
			if (got >= 0) {
				int more = tpoll(c, c->rcq);

				got = more < 0 ? more : got + more;
			}
			if (got < 0)
				return got;
			if (!got)
				usleep_range(20, 100);
		} else {
			wait_for_completion_timeout(&c->comp, msecs_to_jiffies(100));
		}
	}
}

/*
 * Checks a completion: wr_id, status, opcode, QP, byte_len (if >= 0), and for receives
 * the immediate / invalidate flags and values.
 */
static int tcheck(struct tctx *c, struct twr *w, const char *what, enum ib_wc_opcode op,
		  struct ib_qp *qp, int byte_len, int flags, __be32 imm, u32 inv)
{
	const struct ib_wc *wc = &w->wc;
	int mask = IB_WC_WITH_IMM | IB_WC_WITH_INVALIDATE;

	if (c->tv->pctx == IB_POLL_DIRECT && wc->wr_id != (uintptr_t)w)
		return terr(c, -EIO, "%s: wr_id %#llx, expected %p", what, wc->wr_id, w);
	if (wc->status != IB_WC_SUCCESS)
		return terr(c, -EIO, "%s: status %d (%s), vendor_err %#x", what, wc->status,
			    ib_wc_status_msg(wc->status), wc->vendor_err);
	if (wc->opcode != op)
		return terr(c, -EIO, "%s: opcode %d, expected %d", what, wc->opcode, op);
	if (wc->qp != qp)
		return terr(c, -EIO, "%s: completion for QP %#x, expected %#x", what,
			    wc->qp ? wc->qp->qp_num : 0, qp->qp_num);
	if (byte_len >= 0 && wc->byte_len != byte_len)
		return terr(c, -EIO, "%s: byte_len %u, expected %d", what, wc->byte_len, byte_len);
	/* wc_flags are defined for receive completions only (rxe sets WITH_IMM on sends). */
	if ((op & IB_WC_RECV) && (wc->wc_flags & mask) != flags)
		return terr(c, -EIO, "%s: wc_flags %#x, expected %#x in %#x", what, wc->wc_flags,
			    flags, mask);
	if ((flags & IB_WC_WITH_IMM) && wc->ex.imm_data != imm)
		return terr(c, -EIO, "%s: imm_data %#x, expected %#x", what,
			    be32_to_cpu(wc->ex.imm_data), be32_to_cpu(imm));
	if ((flags & IB_WC_WITH_INVALIDATE) && wc->ex.invalidate_rkey != inv)
		return terr(c, -EIO, "%s: invalidate_rkey %#x, expected %#x", what,
			    wc->ex.invalidate_rkey, inv);
	return 0;
}

/* An error completion with STATUS (the opcode of an error completion is undefined). */
static int tcheck_status(struct tctx *c, struct twr *w, const char *what,
			 enum ib_wc_status status)
{
	if (w->wc.status != status)
		return terr(c, -EIO, "%s: status %d (%s), expected %d (%s)", what, w->wc.status,
			    ib_wc_status_msg(w->wc.status), status, ib_wc_status_msg(status));
	return 0;
}

static int tpost_send(struct tctx *c, int side, struct ib_send_wr *wr, struct twr **wp,
		      const char *what)
{
	const struct ib_send_wr *bad;
	struct twr *w = twr_get(c);
	int err;

	wr->wr_cqe = &w->cqe;
	wr->send_flags |= IB_SEND_SIGNALED;
	err = ib_post_send(c->s[side].qp, wr, &bad);
	if (err)
		return terr(c, err, "ib_post_send %s: %d", what, err);
	*wp = w;
	return 0;
}

static int tpost_recv(struct tctx *c, int side, struct ib_sge *sge, int n, struct twr **wp)
{
	struct ib_recv_wr wr = { .sg_list = sge, .num_sge = n };
	const struct ib_recv_wr *bad;
	struct twr *w = twr_get(c);
	int err;

	wr.wr_cqe = &w->cqe;
	if (c->srq)
		err = ib_post_srq_recv(c->srq, &wr, &bad);
	else
		err = ib_post_recv(c->s[side].qp, &wr, &bad);
	if (err)
		return terr(c, err, "ib_post_recv: %d", err);
	*wp = w;
	return 0;
}

/* Splits LEN into up to N segments from BASE with GAP bytes between; SALT varies the cut. */
static int tsplit(struct tseg *s, int n, u32 base, u32 len, u32 gap, int salt)
{
	int m = min_t(u32, n, len), k;
	u32 left = len, off = base;

	for (k = 0; k < m; k++) {
		u32 avg = left / (m - k), l = left;

		if (k < m - 1) {
			l = ((k + salt) & 1) ? avg + avg / 3 : avg - avg / 3;
			l = clamp_t(u32, l, 1, left - (m - 1 - k));
		}
		s[k].off = off;
		s[k].len = l;
		off += l + gap;
		left -= l;
	}
	return m;
}

static void tsges(struct tctx *c, int side, const struct tseg *s, int n, struct ib_sge *sge)
{
	int k;

	for (k = 0; k < n; k++) {
		sge[k].addr = c->s[side].dma + s[k].off;
		sge[k].length = s[k].len;
		sge[k].lkey = c->pd->local_dma_lkey;
	}
}

static void tsync_dev(struct tctx *c)
{
	ib_dma_sync_single_for_device(c->dev, c->s[0].dma, T_BUF, DMA_BIDIRECTIONAL);
	ib_dma_sync_single_for_device(c->dev, c->s[1].dma, T_BUF, DMA_BIDIRECTIONAL);
}

static void tsync_cpu(struct tctx *c)
{
	ib_dma_sync_single_for_cpu(c->dev, c->s[0].dma, T_BUF, DMA_BIDIRECTIONAL);
	ib_dma_sync_single_for_cpu(c->dev, c->s[1].dma, T_BUF, DMA_BIDIRECTIONAL);
}

/*
 * Fills the source segments with random bytes, poisons the destination area [*lo, *hi)
 * (the segments, the gaps, 16 bytes before and T_SLACK after) and builds its expected
 * image in c->exp: the first LEN message bytes scattered over the destination segments
 * (none if !deliver).
 */
static void tprep(struct tctx *c, int sside, const struct tseg *ss, int ns, int dside,
		  const struct tseg *ds, int nd, u32 len, bool deliver, u32 *lo, u32 *hi)
{
	u8 *src = c->s[sside].buf, *dst = c->s[dside].buf;
	u32 si = 0, so = 0, di = 0, dof = 0, done = 0;
	int k;

	*lo = ds[0].off >= 16 ? ds[0].off - 16 : 0;
	*hi = min_t(u32, ds[nd - 1].off + ds[nd - 1].len + T_SLACK, T_BUF);
	memset(dst + *lo, T_POISON, *hi - *lo);
	memset(c->exp + *lo, T_POISON, *hi - *lo);
	for (k = 0; k < ns; k++)
		get_random_bytes(src + ss[k].off, ss[k].len);
	while (deliver && done < len && si < ns && di < nd) {
		u32 n = min3(ss[si].len - so, ds[di].len - dof, len - done);

		memcpy(c->exp + ds[di].off + dof, src + ss[si].off + so, n);
		done += n;
		so += n;
		dof += n;
		if (so == ss[si].len) {
			si++;
			so = 0;
		}
		if (dof == ds[di].len) {
			di++;
			dof = 0;
		}
	}
	tsync_dev(c);
}

/* Compares [lo, hi) of side SIDE's buffer with the expected image. */
static int tcmp(struct tctx *c, int side, u32 lo, u32 hi, const char *what)
{
	const u8 *b = c->s[side].buf;
	u32 i;

	tsync_cpu(c);
	if (!memcmp(b + lo, c->exp + lo, hi - lo))
		return 0;
	for (i = lo; i < hi && b[i] == c->exp[i]; i++)
		;
	return terr(c, -EIO, "%s: data: byte at offset %u is %#04x, expected %#04x (checked %u..%u)",
		    what, i, b[i], c->exp[i], lo, hi);
}

static u32 tpsn(int side)
{
	/* Side 0 wraps its PSN during the first round. */
	return side ? get_random_u32() & 0xffffff : 0xffffff - 10;
}

static int tconnect_rc(struct tctx *c)
{
	struct ib_qp_attr a;
	int i, err;

	for (i = 0; i < 2; i++) {
		struct ib_qp *qp = c->s[i].qp;

		memset(&a, 0, sizeof(a));
		a.qp_state = IB_QPS_INIT;
		a.port_num = PORT;
		a.qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ |
				    IB_ACCESS_REMOTE_ATOMIC;
		err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
					   IB_QP_ACCESS_FLAGS);
		if (err)
			return terr(c, err, "ib_modify_qp RC INIT: %d", err);
		memset(&a, 0, sizeof(a));
		a.qp_state = IB_QPS_RTR;
		a.path_mtu = c->path_mtu;
		a.dest_qp_num = c->s[!i].qp->qp_num;
		a.rq_psn = c->s[!i].psn;
		a.max_dest_rd_atomic = c->rd_atom_dest;
		a.min_rnr_timer = 12;
		a.ah_attr.type = rdma_ah_find_type(c->dev, PORT);
		rdma_ah_set_port_num(&a.ah_attr, PORT);
		rdma_ah_set_grh(&a.ah_attr, &c->r.gid, 0, c->r.gid_index, 64, 0);
		memcpy(a.ah_attr.roce.dmac, c->r.dmac, ETH_ALEN);
		err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
					   IB_QP_DEST_QPN | IB_QP_RQ_PSN |
					   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
		if (err)
			return terr(c, err, "ib_modify_qp RC RTR: %d", err);
		memset(&a, 0, sizeof(a));
		a.qp_state = IB_QPS_RTS;
		a.sq_psn = c->s[i].psn;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = c->rd_atom;
		err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
					   IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
					   IB_QP_MAX_QP_RD_ATOMIC);
		if (err)
			return terr(c, err, "ib_modify_qp RC RTS: %d", err);
	}
	return 0;
}

static int tconnect_ud(struct tctx *c)
{
	struct ib_qp_attr a;
	struct rdma_ah_attr ah = {};
	int i, err;

	for (i = 0; i < 2; i++) {
		struct ib_qp *qp = c->s[i].qp;

		memset(&a, 0, sizeof(a));
		a.qp_state = IB_QPS_INIT;
		a.port_num = PORT;
		a.qkey = T_QKEY;
		err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
					   IB_QP_QKEY);
		if (err)
			return terr(c, err, "ib_modify_qp UD INIT: %d", err);
		a.qp_state = IB_QPS_RTR;
		err = ib_modify_qp(qp, &a, IB_QP_STATE);
		if (err)
			return terr(c, err, "ib_modify_qp UD RTR: %d", err);
		a.qp_state = IB_QPS_RTS;
		a.sq_psn = c->s[i].psn;
		err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_SQ_PSN);
		if (err)
			return terr(c, err, "ib_modify_qp UD RTS: %d", err);
	}
	if (!c->dev->ops.create_ah || !c->dev->ops.destroy_ah)
		return terr(c, -EOPNOTSUPP, "ops.create_ah missing");
	ah.type = rdma_ah_find_type(c->dev, PORT);
	rdma_ah_set_port_num(&ah, PORT);
	rdma_ah_set_grh(&ah, &c->r.gid, 0, c->r.gid_index, 64, 0);
	memcpy(ah.roce.dmac, c->r.dmac, ETH_ALEN);
	c->ah = rdma_create_ah(c->pd, &ah, RDMA_CREATE_AH_SLEEPABLE);
	if (IS_ERR(c->ah)) {
		err = PTR_ERR(c->ah);
		c->ah = NULL;
		return terr(c, err, "rdma_create_ah: %d", err);
	}
	return 0;
}

/* Why the device cannot run variant TV, or NULL. */
static const char *tmissing(struct ib_device *d, const struct tvariant *tv)
{
	const char *m = pd_missing(d);

	if (!m)
		m = cq_missing(d);
	if (m)
		return m;
	if (!d->ops.create_qp || !d->ops.size_ib_qp || !d->ops.destroy_qp || !d->ops.modify_qp)
		return "ops.create_qp/modify_qp/destroy_qp missing";
	if (!d->ops.post_send || !d->ops.post_recv || !d->ops.poll_cq)
		return "ops.post_send/post_recv/poll_cq missing";
	if (tv->pctx != IB_POLL_DIRECT && !d->ops.req_notify_cq)
		return "ops.req_notify_cq missing";
	if ((tv->flags & TF_GLOBAL) && !d->ops.get_dma_mr)
		return "ops.get_dma_mr missing (IB_PD_UNSAFE_GLOBAL_RKEY)";
	if ((tv->flags & TF_FRMR) && (!d->ops.alloc_mr || !d->ops.map_mr_sg || !d->ops.dereg_mr))
		return "ops.alloc_mr/map_mr_sg/dereg_mr missing (fast registration)";
	if ((tv->flags & TF_FRMR) && !(d->attrs.device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS))
		return "no IB_DEVICE_MEM_MGT_EXTENSIONS";
	if ((tv->flags & TF_FRMR) && d->attrs.max_fast_reg_page_list_len < T_BUF / PAGE_SIZE + 1)
		return "max_fast_reg_page_list_len too small";
	if ((tv->kind == TK_READ || tv->kind == TK_ATOMIC || tv->kind == TK_ATOMIC_DENIED) &&
	    (!d->attrs.max_qp_rd_atom || !d->attrs.max_qp_init_rd_atom))
		return "max_qp_rd_atom is 0";
	if ((tv->kind == TK_ATOMIC || tv->kind == TK_ATOMIC_DENIED) &&
	    d->attrs.atomic_cap == IB_ATOMIC_NONE)
		return "atomic_cap is IB_ATOMIC_NONE";
	if (tv->kind == TK_UD && (!d->ops.create_ah || !d->ops.destroy_ah))
		return "ops.create_ah/destroy_ah missing";
	if (tv->kind == TK_SRQ_DRAIN)
		return srq_missing(d);
	return NULL;
}

static int tsetup(struct tctx *c)
{
	const struct tvariant *tv = c->tv;
	struct ib_device *d = c->dev;
	enum ib_qp_type type = tv->kind == TK_UD ? IB_QPT_UD : IB_QPT_RC;
	const char *m = tmissing(d, tv);
	struct ib_port_attr pa;
	int i, err;

	if (m)
		return terr(c, -EOPNOTSUPP, "%s", m);
	c->r.dev = d;
	c->r.gid_index = find_gid(&c->r);
	if (c->r.gid_index < 0)
		return terr(c, -ENOENT, "no RoCE v2 IPv4-mapped GID on port 1");
	err = ib_query_port(d, PORT, &pa);
	if (err)
		return terr(c, err, "ib_query_port: %d", err);
	c->path_mtu = pa.active_mtu;
	c->mtu = ib_mtu_enum_to_int(pa.active_mtu);
	c->max_msg = min_t(u32, pa.max_msg_sz, T_MAX_MSG);
	c->send_sge = min_t(u32, T_SGE, d->attrs.max_send_sge);
	c->recv_sge = min_t(u32, T_SGE, d->attrs.max_recv_sge);
	c->rd_sge = min_t(u32, c->send_sge, d->attrs.max_sge_rd);
	c->rd_atom = min_t(u32, 4, d->attrs.max_qp_init_rd_atom);
	c->rd_atom_dest = min_t(u32, 4, d->attrs.max_qp_rd_atom);
	if (!c->send_sge || !c->recv_sge)
		return terr(c, -EINVAL, "max_send_sge %d max_recv_sge %d", d->attrs.max_send_sge,
			    d->attrs.max_recv_sge);

	c->pd = ib_alloc_pd(d, (tv->flags & TF_GLOBAL) ? IB_PD_UNSAFE_GLOBAL_RKEY : 0);
	if (IS_ERR(c->pd)) {
		err = PTR_ERR(c->pd);
		c->pd = NULL;
		return terr(c, err, "ib_alloc_pd: %d", err);
	}
	c->scq = ib_alloc_cq(d, c, 128, 0, tv->pctx);
	if (IS_ERR(c->scq)) {
		err = PTR_ERR(c->scq);
		c->scq = NULL;
		return terr(c, err, "ib_alloc_cq (send): %d", err);
	}
	c->rcq = ib_alloc_cq(d, c, 128, 0, tv->pctx);
	if (IS_ERR(c->rcq)) {
		err = PTR_ERR(c->rcq);
		c->rcq = NULL;
		return terr(c, err, "ib_alloc_cq (recv): %d", err);
	}
	if (tv->kind == TK_SRQ_DRAIN) {
		struct ib_srq_init_attr sa = {
			.attr = { .max_wr = 2 * T_BURST, .max_sge = c->recv_sge },
			.srq_type = IB_SRQT_BASIC,
		};

		c->srq = ib_create_srq(c->pd, &sa);
		if (IS_ERR(c->srq)) {
			err = PTR_ERR(c->srq);
			c->srq = NULL;
			return terr(c, err, "ib_create_srq: %d", err);
		}
	}
	for (i = 0; i < 2; i++) {
		struct ib_qp_init_attr a = {
			.event_handler = kvt_event,
			.send_cq = c->scq,
			.recv_cq = c->rcq,
			.srq = c->srq,
			.sq_sig_type = IB_SIGNAL_REQ_WR,
			.qp_type = type,
			.port_num = PORT,
			.cap = {
				.max_send_wr = 2 * T_BURST,
				.max_recv_wr = 2 * T_BURST,
				.max_send_sge = c->send_sge,
				.max_recv_sge = c->recv_sge,
			},
		};
		struct ib_qp *qp = ib_create_qp(c->pd, &a);

		if (IS_ERR(qp))
			return terr(c, PTR_ERR(qp), "ib_create_qp: %ld", PTR_ERR(qp));
		c->s[i].qp = qp;
		c->s[i].psn = tpsn(i);
		c->s[i].buf = kmalloc(T_BUF, GFP_KERNEL);
		if (!c->s[i].buf)
			return terr(c, -ENOMEM, "kmalloc");
		c->s[i].dma = ib_dma_map_single(d, c->s[i].buf, T_BUF, DMA_BIDIRECTIONAL);
		if (ib_dma_mapping_error(d, c->s[i].dma)) {
			kfree(c->s[i].buf);
			c->s[i].buf = NULL;
			return terr(c, -EIO, "ib_dma_map_single failed");
		}
	}
	c->exp = kmalloc(T_BUF, GFP_KERNEL);
	if (!c->exp)
		return terr(c, -ENOMEM, "kmalloc");
	err = type == IB_QPT_UD ? tconnect_ud(c) : tconnect_rc(c);
	if (err)
		return err;
	if (tv->flags & TF_FRMR) {
		c->mr = ib_alloc_mr(c->pd, IB_MR_TYPE_MEM_REG, T_BUF / PAGE_SIZE + 1);
		if (IS_ERR(c->mr)) {
			err = PTR_ERR(c->mr);
			c->mr = NULL;
			return terr(c, err, "ib_alloc_mr: %d", err);
		}
		c->key = c->mr->rkey & 0xff;
		if (tv->flags & TF_CHAIN) {
			c->mr2 = ib_alloc_mr(c->pd, IB_MR_TYPE_MEM_REG, T_BUF / PAGE_SIZE + 1);
			if (IS_ERR(c->mr2)) {
				err = PTR_ERR(c->mr2);
				c->mr2 = NULL;
				return terr(c, err, "ib_alloc_mr: %d", err);
			}
			c->key2 = c->mr2->rkey & 0xff;
		}
		sg_init_one(&c->sg, c->s[1].buf, T_BUF);
		if (ib_dma_map_sg(d, &c->sg, 1, DMA_BIDIRECTIONAL) != 1)
			return terr(c, -EIO, "ib_dma_map_sg failed");
		c->sg_mapped = true;
	}
	return 0;
}

static void tteardown(struct tctx *c)
{
	int i;

	for (i = 0; i < 2; i++)
		if (c->s[i].qp)
			WARN_ON(ib_destroy_qp(c->s[i].qp));
	if (c->srq)
		ib_destroy_srq(c->srq);
	if (c->ah)
		rdma_destroy_ah(c->ah, RDMA_DESTROY_AH_SLEEPABLE);
	if (c->sg_mapped)
		ib_dma_unmap_sg(c->dev, &c->sg, 1, DMA_BIDIRECTIONAL);
	if (c->mr)
		WARN_ON(ib_dereg_mr(c->mr));
	if (c->mr2)
		WARN_ON(ib_dereg_mr(c->mr2));
	if (c->scq)
		ib_free_cq(c->scq);
	if (c->rcq)
		ib_free_cq(c->rcq);
	for (i = 0; i < 2; i++)
		if (c->s[i].buf) {
			ib_dma_unmap_single(c->dev, c->s[i].dma, T_BUF, DMA_BIDIRECTIONAL);
			kfree(c->s[i].buf);
		}
	kfree(c->exp);
	if (c->pd)
		WARN_ON(ib_dealloc_pd_user(c->pd, NULL));
}

/* Registers side 1's buffer through fast-reg MR MR with a new key, counted in KEY
 * (REG_MR on side 1). */
static int treg_mr(struct tctx *c, struct ib_mr *mr, u8 *key)
{
	struct ib_reg_wr wr = {};
	struct twr *w;
	int n, err;

	ib_update_fast_reg_key(mr, ++*key);
	n = ib_map_mr_sg(mr, &c->sg, 1, NULL, PAGE_SIZE);
	if (n != 1)
		return terr(c, n < 0 ? n : -EIO, "ib_map_mr_sg: %d", n);
	if (mr->iova != c->s[1].dma || mr->length != T_BUF)
		return terr(c, -EIO, "ib_map_mr_sg: iova %#llx length %llu, expected %#llx %u",
			    mr->iova, mr->length, c->s[1].dma, T_BUF);
	/* Every other registration gets an iova of its own choosing, as NFS/RDMA's
	 * frwr_map puts the RPC's XID in the upper 32 bits: REG_MR takes mr->iova as it
	 * is when posted. */
	if (*key & 1)
		mr->iova = (mr->iova & 0xffffffffULL) | (u64)(0x5a5a0000u | *key) << 32;
	wr.wr.opcode = IB_WR_REG_MR;
	wr.mr = mr;
	wr.key = mr->rkey;
	wr.access = T_ACCESS;
	err = tpost_send(c, 1, &wr.wr, &w, "REG_MR");
	if (!err)
		err = twait(c, &w, 1, "REG_MR");
	if (!err)
		err = tcheck(c, w, "REG_MR", IB_WC_REG_MR, c->s[1].qp, -1, 0, 0, 0);
	return err;
}

/* Registers side 1's buffer through the fast-reg MR with a new key. */
static int treg(struct tctx *c)
{
	return treg_mr(c, c->mr, &c->key);
}

static void tremote(struct tctx *c, u32 off, u64 *addr, u32 *rkey)
{
	if (c->mr) {
		*addr = c->mr->iova + off;
		*rkey = c->mr->rkey;
	} else {
		*addr = c->s[1].dma + off;
		*rkey = c->pd->unsafe_global_rkey;
	}
}

static int tsizes(struct tctx *c, u32 *sz)
{
	u32 m = c->mtu;
	const u32 list[] = { 1, 2, 3, 7, 8, 63, 64, 65, 255, 256, 1000, m - 1, m, m + 1,
			     2 * m - 1, 2 * m, 2 * m + 1, 4095, 4096, 4097, 8192, 12345,
			     32768, 65535, 65536 };
	int k, n = 0;

	for (k = 0; k < ARRAY_SIZE(list); k++)
		if (list[k] && list[k] <= c->max_msg)
			sz[n++] = list[k];
	return n;
}

/* SEND (with immediate, several SGEs) of LEN bytes from side 0 to side 1. */
static noinline_for_stack int tsend_one(struct tctx *c, u32 len, int idx)
{
	bool imm = c->tv->flags & TF_IMM, sge = c->tv->flags & TF_SGE;
	u32 sbase = (idx * 13) % 61, dbase = 16 + (idx * 29) % 57, lo, hi;
	__be32 immv = cpu_to_be32(get_random_u32());
	struct tseg ss[T_SGE], ds[T_SGE];
	struct ib_sge sg[T_SGE], rg[T_SGE];
	struct ib_send_wr wr = {};
	struct twr *ws[2];
	char what[48];
	int ns = 1, nd = 1, err;

	if (sge) {
		ns = tsplit(ss, c->send_sge, sbase, len, 24, 0);
		nd = tsplit(ds, c->recv_sge, dbase, len + T_SLACK, 40, 1);
	} else {
		ss[0] = (struct tseg){ sbase, len };
		ds[0] = (struct tseg){ dbase, len + T_SLACK };
	}
	snprintf(what, sizeof(what), "SEND%s len %u sge %d/%d", imm ? "_IMM" : "", len, ns, nd);
	tprep(c, 0, ss, ns, 1, ds, nd, len, true, &lo, &hi);
	tsges(c, 0, ss, ns, sg);
	tsges(c, 1, ds, nd, rg);
	err = tpost_recv(c, 1, rg, nd, &ws[1]);
	if (err)
		return err;
	wr.opcode = imm ? IB_WR_SEND_WITH_IMM : IB_WR_SEND;
	wr.ex.imm_data = immv;
	wr.sg_list = sg;
	wr.num_sge = ns;
	err = tpost_send(c, 0, &wr, &ws[0], what);
	if (!err)
		err = twait(c, ws, 2, what);
	if (!err)
		err = tcheck(c, ws[0], what, IB_WC_SEND, c->s[0].qp, -1, 0, 0, 0);
	if (!err)
		err = tcheck(c, ws[1], what, IB_WC_RECV, c->s[1].qp, len,
			     imm ? IB_WC_WITH_IMM : 0, immv, 0);
	if (!err)
		err = tcmp(c, 1, lo, hi, what);
	return err;
}

/* T_BURST SENDs in one chain (every 8th and the last signaled) into T_BURST receives. */
static noinline_for_stack int tburst(struct tctx *c, int round)
{
	u8 *src = c->s[0].buf, *dst = c->s[1].buf;
	u32 span = T_BURST * T_SLOT, len[T_BURST];
	const struct ib_recv_wr *rbad;
	const struct ib_send_wr *sbad;
	int i, n = 0, err;

	memset(dst, T_POISON, span + T_SLACK);
	memset(c->exp, T_POISON, span + T_SLACK);
	get_random_bytes(src, span);
	for (i = 0; i < T_BURST; i++) {
		struct twr *w = twr_get(c);

		len[i] = 1 + (i * 997 + round * 61) % T_SLOT;
		memcpy(c->exp + i * T_SLOT, src + i * T_SLOT, len[i]);
		c->rsge[i] = (struct ib_sge){ c->s[1].dma + i * T_SLOT, T_SLOT,
					      c->pd->local_dma_lkey };
		c->rwr[i] = (struct ib_recv_wr){ .next = i + 1 < T_BURST ? &c->rwr[i + 1] : NULL,
						 .sg_list = &c->rsge[i], .num_sge = 1 };
		c->rwr[i].wr_cqe = &w->cqe;
		c->bw[n++] = w;
	}
	tsync_dev(c);
	err = ib_post_recv(c->s[1].qp, c->rwr, &rbad);
	if (err)
		return terr(c, err, "ib_post_recv (chain of %d): %d", T_BURST, err);
	for (i = 0; i < T_BURST; i++) {
		struct twr *w = twr_get(c);
		bool sig = (i % 8) == 7 || i == T_BURST - 1;

		c->ssge[i] = (struct ib_sge){ c->s[0].dma + i * T_SLOT, len[i],
					      c->pd->local_dma_lkey };
		c->swr[i] = (struct ib_send_wr){ .next = i + 1 < T_BURST ? &c->swr[i + 1] : NULL,
						 .sg_list = &c->ssge[i], .num_sge = 1,
						 .opcode = (i & 1) ? IB_WR_SEND_WITH_IMM : IB_WR_SEND,
						 .send_flags = sig ? IB_SEND_SIGNALED : 0 };
		c->swr[i].ex.imm_data = cpu_to_be32(i | round << 8);
		c->swr[i].wr_cqe = &w->cqe;
		if (sig)
			c->bw[n++] = w;
	}
	err = ib_post_send(c->s[0].qp, c->swr, &sbad);
	if (err)
		return terr(c, err, "ib_post_send (chain of %d): %d", T_BURST, err);
	err = twait(c, c->bw, n, "burst");
	for (i = 0; !err && i < T_BURST; i++) {
		char what[40];

		snprintf(what, sizeof(what), "burst recv %d len %u", i, len[i]);
		err = tcheck(c, c->bw[i], what, IB_WC_RECV, c->s[1].qp, len[i],
			     (i & 1) ? IB_WC_WITH_IMM : 0, cpu_to_be32(i | round << 8), 0);
		if (!err && i && c->bw[i]->seq < c->bw[i - 1]->seq)
			err = terr(c, -EIO, "%s: completed before receive %d", what, i - 1);
	}
	for (i = T_BURST; !err && i < n; i++)
		err = tcheck(c, c->bw[i], "burst send", IB_WC_SEND, c->s[0].qp, -1, 0, 0, 0);
	if (!err)
		err = tcmp(c, 1, 0, span + T_SLACK, "burst");
	return err;
}

/*
 * RDMA WRITE (with immediate) of LEN bytes from side 0 at side 1's buffer, through the
 * variant's rkey (RKEY if nonzero); !ok: expects a remote access error and no data.
 */
static noinline_for_stack int twrite_one(struct tctx *c, u32 len, int idx, bool imm, u32 rkey_over, bool ok)
{
	u32 sbase = (idx * 13) % 61, dbase = 16 + (idx * 29) % 57, lo, hi;
	__be32 immv = cpu_to_be32(get_random_u32());
	struct ib_rdma_wr wr = {};
	struct tseg ss[T_SGE], ds;
	struct ib_sge sg[T_SGE];
	struct twr *ws[2];
	char what[64];
	int ns = 1, err;

	if (idx & 1)
		ns = tsplit(ss, c->send_sge, sbase, len, 24, 0);
	else
		ss[0] = (struct tseg){ sbase, len };
	ds = (struct tseg){ dbase, len };
	tremote(c, dbase, &wr.remote_addr, &wr.rkey);
	if (rkey_over)
		wr.rkey = rkey_over;
	snprintf(what, sizeof(what), "RDMA_WRITE%s len %u sge %d rkey %#x", imm ? "_IMM" : "",
		 len, ns, wr.rkey);
	tprep(c, 0, ss, ns, 1, &ds, 1, len, ok, &lo, &hi);
	tsges(c, 0, ss, ns, sg);
	if (imm) {
		err = tpost_recv(c, 1, NULL, 0, &ws[1]);
		if (err)
			return err;
	}
	wr.wr.opcode = imm ? IB_WR_RDMA_WRITE_WITH_IMM : IB_WR_RDMA_WRITE;
	wr.wr.ex.imm_data = immv;
	wr.wr.sg_list = sg;
	wr.wr.num_sge = ns;
	err = tpost_send(c, 0, &wr.wr, &ws[0], what);
	if (!err)
		err = twait(c, ws, ok && imm ? 2 : 1, what);
	if (!err && !ok)
		return tcheck_status(c, ws[0], what, IB_WC_REM_ACCESS_ERR) ?: tcmp(c, 1, lo, hi, what);
	if (!err)
		err = tcheck(c, ws[0], what, IB_WC_RDMA_WRITE, c->s[0].qp, -1, 0, 0, 0);
	if (!err && imm)
		err = tcheck(c, ws[1], what, IB_WC_RECV_RDMA_WITH_IMM, c->s[1].qp, len,
			     IB_WC_WITH_IMM, immv, 0);
	if (!err)
		err = tcmp(c, 1, lo, hi, what);
	return err;
}

/* RDMA READ of LEN bytes of side 1's buffer into side 0's. */
static noinline_for_stack int tread_one(struct tctx *c, u32 len, int idx)
{
	u32 sbase = (idx * 13) % 61, dbase = 16 + (idx * 29) % 57, lo, hi;
	struct ib_rdma_wr wr = {};
	struct tseg ss, ds[T_SGE];
	struct ib_sge sg[T_SGE];
	struct twr *w;
	char what[48];
	int nd = 1, err;

	ss = (struct tseg){ sbase, len };
	if (idx & 1)
		nd = tsplit(ds, c->rd_sge, dbase, len, 24, 1);
	else
		ds[0] = (struct tseg){ dbase, len };
	snprintf(what, sizeof(what), "RDMA_READ len %u sge %d", len, nd);
	tprep(c, 1, &ss, 1, 0, ds, nd, len, true, &lo, &hi);
	tsges(c, 0, ds, nd, sg);
	tremote(c, sbase, &wr.remote_addr, &wr.rkey);
	wr.wr.opcode = IB_WR_RDMA_READ;
	wr.wr.sg_list = sg;
	wr.wr.num_sge = nd;
	err = tpost_send(c, 0, &wr.wr, &w, what);
	if (!err)
		err = twait(c, &w, 1, what);
	if (!err)
		err = tcheck(c, w, what, IB_WC_RDMA_READ, c->s[0].qp, len, 0, 0, 0);
	if (!err)
		err = tcmp(c, 0, lo, hi, what);
	return err;
}

/* One atomic at side 1's ROFF (8-aligned), the original lands at side 0's LOFF. */
static noinline_for_stack int tatomic_one(struct tctx *c, enum ib_wr_opcode op, u32 roff,
					  u32 loff, u64 add_cmp, u64 swap, u64 orig, u64 after,
					  bool ok)
{
	u64 *rv = (u64 *)(c->s[1].buf + roff), *lv = (u64 *)(c->s[0].buf + loff);
	struct ib_sge sg = { c->s[0].dma + loff, 8, c->pd->local_dma_lkey };
	bool fa = op == IB_WR_ATOMIC_FETCH_AND_ADD;
	struct ib_atomic_wr wr = {};
	struct twr *w;
	char what[64];
	int err;

	snprintf(what, sizeof(what), "%s at +%u", fa ? "FETCH_ADD" : "CMP_SWP", roff);
	memset(c->s[0].buf + loff - 8, T_POISON, 24);
	tsync_dev(c);
	wr.wr.opcode = op;
	wr.wr.sg_list = &sg;
	wr.wr.num_sge = 1;
	wr.compare_add = add_cmp;
	wr.swap = swap;
	tremote(c, roff, &wr.remote_addr, &wr.rkey);
	err = tpost_send(c, 0, &wr.wr, &w, what);
	if (!err)
		err = twait(c, &w, 1, what);
	if (!err && !ok)
		err = tcheck_status(c, w, what, IB_WC_REM_ACCESS_ERR);
	else if (!err)
		err = tcheck(c, w, what, fa ? IB_WC_FETCH_ADD : IB_WC_COMP_SWAP, c->s[0].qp, 8, 0,
			     0, 0);
	if (err)
		return err;
	tsync_cpu(c);
	if (ok && *lv != orig)
		return terr(c, -EIO, "%s: returned %#llx, expected %#llx", what, *lv, orig);
	if (*rv != after)
		return terr(c, -EIO, "%s: target %#llx, expected %#llx", what, *rv, after);
	if (memchr_inv(c->s[0].buf + loff - 8, T_POISON, 8) ||
	    memchr_inv(c->s[0].buf + loff + 8, T_POISON, 8))
		return terr(c, -EIO, "%s: bytes next to the local 8 changed", what);
	if (memchr_inv(c->s[1].buf + roff - 8, T_POISON, 8) ||
	    memchr_inv(c->s[1].buf + roff + 8, T_POISON, 8))
		return terr(c, -EIO, "%s: bytes next to the target changed", what);
	return 0;
}

static int tatomics(struct tctx *c, int round)
{
	int k, err = 0;

	for (k = 0; !err && k < 4; k++) {
		u32 roff = 8 + k * 4096 + 8 * ((round * 5 + k) % 64), loff = 64 + 32 * k;
		u64 v = get_random_u64(), a = get_random_u64(), s = get_random_u64();

		memset(c->s[1].buf + roff - 8, T_POISON, 24);
		*(u64 *)(c->s[1].buf + roff) = v;
		err = tatomic_one(c, IB_WR_ATOMIC_FETCH_AND_ADD, roff, loff, a, 0, v, v + a, true);
		if (!err)	/* matches: swaps */
			err = tatomic_one(c, IB_WR_ATOMIC_CMP_AND_SWP, roff, loff, v + a, s, v + a, s,
					  true);
		if (!err)	/* does not match: leaves the target */
			err = tatomic_one(c, IB_WR_ATOMIC_CMP_AND_SWP, roff, loff, ~s, v, s, s, true);
	}
	return err;
}

/* SEND_WITH_INV of the fast-reg MR's rkey from side 0 to side 1. */
static noinline_for_stack int tsend_inv(struct tctx *c)
{
	struct tseg ss = { 8, 32 }, ds = { 4096, 32 + T_SLACK };
	struct ib_sge sg, rg;
	struct ib_send_wr wr = {};
	struct twr *ws[2];
	u32 lo, hi, rkey = c->mr->rkey;
	int err;

	tprep(c, 0, &ss, 1, 1, &ds, 1, 32, true, &lo, &hi);
	tsges(c, 0, &ss, 1, &sg);
	tsges(c, 1, &ds, 1, &rg);
	err = tpost_recv(c, 1, &rg, 1, &ws[1]);
	if (err)
		return err;
	wr.opcode = IB_WR_SEND_WITH_INV;
	wr.ex.invalidate_rkey = rkey;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	err = tpost_send(c, 0, &wr, &ws[0], "SEND_WITH_INV");
	if (!err)
		err = twait(c, ws, 2, "SEND_WITH_INV");
	if (!err)
		err = tcheck(c, ws[0], "SEND_WITH_INV", IB_WC_SEND, c->s[0].qp, -1, 0, 0, 0);
	if (!err)
		err = tcheck(c, ws[1], "SEND_WITH_INV recv", IB_WC_RECV, c->s[1].qp, 32,
			     IB_WC_WITH_INVALIDATE, 0, rkey);
	if (!err)
		err = tcmp(c, 1, lo, hi, "SEND_WITH_INV");
	return err;
}

static int tlocal_inv(struct tctx *c)
{
	struct ib_send_wr wr = { .opcode = IB_WR_LOCAL_INV };
	struct twr *w;
	int err;

	wr.ex.invalidate_rkey = c->mr->rkey;
	err = tpost_send(c, 1, &wr, &w, "LOCAL_INV");
	if (!err)
		err = twait(c, &w, 1, "LOCAL_INV");
	if (!err)
		err = tcheck(c, w, "LOCAL_INV", IB_WC_LOCAL_INV, c->s[1].qp, -1, 0, 0, 0);
	return err;
}

/*
 * One post of a signaled LOCAL_INV for each of the two MRs, as NFS/RDMA's frwr_unmap_sync
 * posts them when a reply leaves MRs registered: a LOCAL_INV starts only once every
 * earlier WQE has completed, and the second must then run without another post.
 */
static noinline_for_stack int tlocal_inv_chain(struct tctx *c)
{
	struct ib_send_wr wr[2] = {};
	const struct ib_send_wr *bad;
	struct twr *ws[2];
	int i, err;

	for (i = 0; i < 2; i++) {
		ws[i] = twr_get(c);
		wr[i].opcode = IB_WR_LOCAL_INV;
		wr[i].send_flags = IB_SEND_SIGNALED;
		wr[i].wr_cqe = &ws[i]->cqe;
		wr[i].ex.invalidate_rkey = i ? c->mr2->rkey : c->mr->rkey;
	}
	wr[0].next = &wr[1];
	err = ib_post_send(c->s[1].qp, wr, &bad);
	if (err)
		return terr(c, err, "ib_post_send of two LOCAL_INVs: %d", err);
	err = twait(c, ws, 2, "two chained LOCAL_INVs");
	for (i = 0; !err && i < 2; i++)
		err = tcheck(c, ws[i], "chained LOCAL_INV", IB_WC_LOCAL_INV, c->s[1].qp, -1, 0,
			     0, 0);
	if (!err && ws[1]->seq < ws[0]->seq)
		err = terr(c, -EIO, "the second LOCAL_INV completed first");
	return err;
}

/*
 * After ib_map_mr_sg mapped the still valid MR again with a new key: one post of a
 * LOCAL_INV with its old key OLD and a REG_MR, as iSER's iser_fast_reg_mr chains them
 * (see remap_iser at the top). Both must complete.
 */
static noinline_for_stack int tremap_chain(struct tctx *c, u32 old)
{
	struct ib_send_wr inv = { .opcode = IB_WR_LOCAL_INV };
	struct ib_reg_wr reg = {};
	const struct ib_send_wr *bad;
	struct twr *ws[2];
	int err;

	ws[0] = twr_get(c);
	ws[1] = twr_get(c);
	inv.send_flags = IB_SEND_SIGNALED;
	inv.wr_cqe = &ws[0]->cqe;
	inv.ex.invalidate_rkey = old;
	inv.next = &reg.wr;
	reg.wr.opcode = IB_WR_REG_MR;
	reg.wr.send_flags = IB_SEND_SIGNALED;
	reg.wr.wr_cqe = &ws[1]->cqe;
	reg.mr = c->mr;
	reg.key = c->mr->rkey;
	reg.access = T_ACCESS;
	err = ib_post_send(c->s[1].qp, &inv, &bad);
	if (err)
		return terr(c, err, "ib_post_send of LOCAL_INV + REG_MR: %d", err);
	err = twait(c, ws, 2, "LOCAL_INV + REG_MR");
	if (!err)
		err = tcheck(c, ws[0], "chained LOCAL_INV", IB_WC_LOCAL_INV, c->s[1].qp, -1, 0, 0,
			     0);
	if (!err)
		err = tcheck(c, ws[1], "chained REG_MR", IB_WC_REG_MR, c->s[1].qp, -1, 0, 0, 0);
	return err;
}

/*
 * Invalidation in the middle of a message: see inv_mid and dereg_mid at the top. The
 * Last packet can only be accepted once side 1 posts a receive, which it does after the
 * invalidation completed, so the order is certain however the packets are timed.
 */
static noinline_for_stack int twrite_mid(struct tctx *c, bool dereg)
{
	u32 len = 3 * c->mtu, dbase = 64, lo, hi;
	struct tseg ss = { 0, len }, ds = { dbase, len };
	const char *what = dereg ? "WRITE_IMM, dereg_mr mid-message" :
				   "WRITE_IMM, LOCAL_INV mid-message";
	struct ib_rdma_wr wr = {};
	unsigned long deadline;
	struct ib_sge sg;
	struct twr *ws[2];
	int err;

	if (len > c->max_msg)
		return terr(c, -EOPNOTSUPP, "max_msg_sz %u < 3 MTUs", c->max_msg);
	tprep(c, 0, &ss, 1, 1, &ds, 1, len, true, &lo, &hi);
	memset(c->exp + dbase + 2 * c->mtu, T_POISON, c->mtu);
	tsges(c, 0, &ss, 1, &sg);
	tremote(c, dbase, &wr.remote_addr, &wr.rkey);
	wr.wr.opcode = IB_WR_RDMA_WRITE_WITH_IMM;
	wr.wr.sg_list = &sg;
	wr.wr.num_sge = 1;
	err = tpost_send(c, 0, &wr.wr, &ws[0], what);
	if (err)
		return err;
	/* First and Middle have landed once the second MTU is there. */
	deadline = jiffies + T_TIMEOUT;
	for (;;) {
		tsync_cpu(c);
		if (!memcmp(c->s[1].buf + dbase + c->mtu, c->exp + dbase + c->mtu, c->mtu))
			break;
		if (time_after(jiffies, deadline))
			return terr(c, -ETIMEDOUT, "%s: First and Middle did not land", what);
		usleep_range(50, 200);
	}
	if (dereg) {
		err = ib_dereg_mr(c->mr);
		if (err)
			return terr(c, err, "%s: ib_dereg_mr: %d", what, err);
		c->mr = NULL;
	} else {
		err = tlocal_inv(c);
		if (err)
			return err;
	}
	err = tpost_recv(c, 1, NULL, 0, &ws[1]);
	if (!err)
		err = twait(c, ws, 1, what);
	if (!err)
		err = tcheck_status(c, ws[0], what, IB_WC_REM_ACCESS_ERR);
	if (!err)
		err = tcmp(c, 1, lo, hi, what);
	return err;
}

/* A UD datagram of LEN bytes from side 0 to side 1: 40 bytes of GRH, then the payload. */
static noinline_for_stack int tud_one(struct tctx *c, u32 len, int idx)
{
	bool imm = c->tv->flags & TF_IMM;
	u32 sbase = (idx * 13) % 61, dbase = 64 + (idx * 29) % 57, lo, hi;
	__be32 immv = cpu_to_be32(get_random_u32()), ip;
	struct tseg ss = { sbase, len }, ds = { dbase + T_GRH, c->mtu };
	struct ib_sge sg, rg;
	struct ib_ud_wr wr = {};
	const struct iphdr *iph;
	struct twr *ws[2];
	char what[48];
	int err;

	snprintf(what, sizeof(what), "UD SEND%s len %u", imm ? "_IMM" : "", len);
	tprep(c, 0, &ss, 1, 1, &ds, 1, len, true, &lo, &hi);
	memset(c->s[1].buf + dbase, T_POISON, T_GRH);
	tsync_dev(c);
	tsges(c, 0, &ss, 1, &sg);
	rg = (struct ib_sge){ c->s[1].dma + dbase, T_GRH + c->mtu, c->pd->local_dma_lkey };
	err = tpost_recv(c, 1, &rg, 1, &ws[1]);
	if (err)
		return err;
	wr.wr.opcode = imm ? IB_WR_SEND_WITH_IMM : IB_WR_SEND;
	wr.wr.ex.imm_data = immv;
	wr.wr.sg_list = &sg;
	wr.wr.num_sge = 1;
	wr.ah = c->ah;
	wr.remote_qpn = c->s[1].qp->qp_num;
	wr.remote_qkey = T_QKEY;
	err = tpost_send(c, 0, &wr.wr, &ws[0], what);
	if (!err)
		err = twait(c, ws, 2, what);
	if (!err)
		err = tcheck(c, ws[0], what, IB_WC_SEND, c->s[0].qp, -1, 0, 0, 0);
	if (!err)
		err = tcheck(c, ws[1], what, IB_WC_RECV, c->s[1].qp, len + T_GRH,
			     imm ? IB_WC_WITH_IMM : 0, immv, 0);
	if (err)
		return err;
	if (ws[1]->wc.src_qp != c->s[0].qp->qp_num)
		return terr(c, -EIO, "%s: src_qp %#x, expected %#x", what, ws[1]->wc.src_qp,
			    c->s[0].qp->qp_num);
	if (!(ws[1]->wc.wc_flags & IB_WC_GRH))
		return terr(c, -EIO, "%s: no IB_WC_GRH in wc_flags %#x", what,
			    ws[1]->wc.wc_flags);
	if ((ws[1]->wc.wc_flags & IB_WC_WITH_NETWORK_HDR_TYPE) &&
	    ws[1]->wc.network_hdr_type != RDMA_NETWORK_IPV4)
		return terr(c, -EIO, "%s: network_hdr_type %d, expected IPv4", what,
			    ws[1]->wc.network_hdr_type);
	/* RoCE v2 over IPv4: the IPv4 header is the second half of the 40 bytes. */
	tsync_cpu(c);
	iph = (const struct iphdr *)(c->s[1].buf + dbase + 20);
	memcpy(&ip, &c->r.gid.raw[12], 4);
	if (iph->version != 4 || iph->saddr != ip || iph->daddr != ip)
		return terr(c, -EIO, "%s: GRH space holds no IPv4 header %pI4 -> %pI4 (version %d)",
			    what, &iph->saddr, &iph->daddr, iph->version);
	return tcmp(c, 1, dbase + T_GRH, hi, what);
}

/* One round of variant c->tv. */
static int tround(struct tctx *c, int round)
{
	u32 sz[32];
	int n = tsizes(c, sz), k, err = 0;

	switch (c->tv->kind) {
	case TK_SEND:
	case TK_SRQ_DRAIN:
		for (k = 0; !err && k < n; k++)
			err = tsend_one(c, sz[k], k + round);
		break;
	case TK_BURST:
		err = tburst(c, round);
		break;
	case TK_WRITE:
		if (c->mr && !round)
			err = treg(c);
		for (k = 0; !err && k < n; k++)
			err = twrite_one(c, sz[k], k + round, c->tv->flags & TF_IMM, 0, true);
		break;
	case TK_READ:
		if (c->mr && !round)
			err = treg(c);
		for (k = 0; !err && k < n; k++)
			err = tread_one(c, sz[k], k + round);
		break;
	case TK_ATOMIC:
		if (c->mr && !round)
			err = treg(c);
		if (!err)
			err = tatomics(c, round);
		break;
	case TK_SEND_INV:
	case TK_LOCAL_INV:
		err = treg(c);
		if (!err && c->mr2)
			err = treg_mr(c, c->mr2, &c->key2);
		if (!err)
			err = twrite_one(c, 4096, round, false, 0, true);
		if (!err && c->mr2)
			err = tlocal_inv_chain(c);
		else if (!err)
			err = c->tv->kind == TK_SEND_INV ? tsend_inv(c) : tlocal_inv(c);
		break;
	case TK_MID:
	case TK_REMAP:
		if (!round)
			err = treg(c);
		if (!err)
			err = twrite_one(c, 4096, round, false, 0, true);
		break;
	case TK_ATOMIC_DENIED:	/* tfinish: the QP does not survive it */
		break;
	case TK_UD:
		for (k = 0; !err && k < n; k++)
			if (sz[k] <= c->mtu)
				err = tud_one(c, sz[k], k + round);
		break;
	}
	return err;
}

/*
 * ib_drain_qp of an SRQ-attached QP with receives left on the SRQ: it returns once the
 * QP raised IB_EVENT_QP_LAST_WQE_REACHED (after 60 s without it).
 */
static int tsrq_drain(struct tctx *c)
{
	struct ib_qp_attr a;
	struct ib_qp_init_attr ia;
	struct ib_sge sg = { .addr = c->s[1].dma, .length = 64, .lkey = c->pd->local_dma_lkey };
	struct twr *w;
	ktime_t start;
	s64 ms;
	int i, err;

	for (i = 0; i < 4; i++) {
		err = tpost_recv(c, 1, &sg, 1, &w);
		if (err)
			return err;
	}
	start = ktime_get();
	ib_drain_qp(c->s[1].qp);
	ms = ktime_ms_delta(ktime_get(), start);
	if (ms >= 1000)
		return terr(c, -ETIMEDOUT, "ib_drain_qp of an SRQ QP took %lld ms", ms);
	err = ib_query_qp(c->s[1].qp, &a, IB_QP_STATE, &ia);
	if (err)
		return terr(c, err, "ib_query_qp: %d", err);
	if (a.qp_state != IB_QPS_ERR)
		return terr(c, -EIO, "state %d after ib_drain_qp, expected IB_QPS_ERR", a.qp_state);
	return 0;
}

/* After the rounds: the invalidated rkey must no longer give access (breaks the QP). */
static int tfinish(struct tctx *c)
{
	u32 old = c->mr ? c->mr->rkey : 0;
	int err;

	switch (c->tv->kind) {
	case TK_ATOMIC_DENIED: {
		/* The global rkey has remote read and write access, not atomic. */
		u64 v = get_random_u64();

		memset(c->s[1].buf + 64 - 8, T_POISON, 24);
		*(u64 *)(c->s[1].buf + 64) = v;
		return tatomic_one(c, IB_WR_ATOMIC_FETCH_AND_ADD, 64, 64, 1, 0, 0, v, false);
	}
	case TK_SEND_INV:
		return twrite_one(c, 512, 0, false, 0, false);
	case TK_SRQ_DRAIN:
		return tsrq_drain(c);
	case TK_LOCAL_INV:
		/* A new registration must work and the old key must not. */
		err = treg(c);
		if (!err)
			err = twrite_one(c, 4096, 1, false, 0, true);
		if (!err)
			err = twrite_one(c, 512, 0, false, old, false);
		return err;
	case TK_MID:
		return twrite_mid(c, c->tv->flags & TF_DEREG);
	case TK_REMAP:
		if (c->tv->flags & TF_ISER)
			ib_update_fast_reg_key(c->mr, ++c->key);
		err = ib_map_mr_sg(c->mr, &c->sg, 1, NULL, PAGE_SIZE);
		if (err != 1)
			return terr(c, err < 0 ? err : -EIO, "ib_map_mr_sg again: %d", err);
		if (!(c->tv->flags & TF_ISER))
			return twrite_one(c, 512, 0, false, old, false);
		err = tremap_chain(c, old);
		if (!err)
			err = twrite_one(c, 4096, 1, false, 0, true);
		if (!err)
			err = twrite_one(c, 512, 0, false, old, false);
		return err;
	default:
		return 0;
	}
}

/* Runs the selected traffic variants on DEV, ROUNDS rounds each; counts results. */
static noinline_for_stack void run_traffic(struct ib_device *dev, long rounds, int *nres)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(tvariants); i++) {
		ktime_t start = ktime_get();
		struct tctx *c;
		enum result res;
		long done = 0;
		int err;

		if (!tsel[i])
			continue;
		c = kvzalloc(sizeof(*c), GFP_KERNEL);
		if (!c) {
			report("traffic:%-20s error %6d %5d ms  kvzalloc\n", tvariants[i].name, 0, 0);
			nres[RES_ERROR]++;
			continue;
		}
		c->dev = dev;
		c->tv = &tvariants[i];
		atomic_set(&c->seq, 0);
		init_completion(&c->comp);
		err = tsetup(c);
		while (!err && done < rounds) {
			err = tround(c, done);
			if (!err)
				done++;
			cond_resched();
		}
		if (!err)
			err = tfinish(c);
		tteardown(c);
		res = !err ? RES_OK : is_unsupported(err) ? RES_UNSUPPORTED : RES_ERROR;
		nres[res]++;
		if (err)
			report("traffic:%-20s %-11s %6ld %5lld ms  %s: %d\n", c->tv->name,
			       result_name[res], done, ktime_ms_delta(ktime_get(), start), c->msg,
			       err);
		else
			report("traffic:%-20s %-11s %6ld %5lld ms\n", c->tv->name,
			       result_name[res], done, ktime_ms_delta(ktime_get(), start));
		kvfree(c);
	}
}

/* Runs type T N times; reports one line; returns the result. */
static enum result run_type(struct run *r, struct type *t, long n)
{
	static struct {
		struct variant *v;
		void *p;
	} objs[MAX_BATCH];
	char msg[384] = "";
	size_t ml = 0;
	const char *what = "";
	int cursor = 0, round = 0, stop = 0, err, k, made, nunsup = 0, b;
	long done = 0;
	enum result res;
	ktime_t start = ktime_get();

	b = clamp_t(int, batch, 1, MAX_BATCH);
	t->nv = 0;
	if (t->max_count && n > t->max_count)
		n = t->max_count;
	err = t->setup(r, t, &what);
	if (err) {
		res = is_unsupported(err) ? RES_UNSUPPORTED : RES_ERROR;
		ml += scnprintf(msg + ml, sizeof(msg) - ml, "%s: %d", what, err);
		goto out;
	}
	while (done < n && !stop) {
		int want = min_t(long, b, n - done);
		struct variant *v = NULL;

		made = 0;
		while (made < want && (v = next_variant(t, &cursor))) {
			void *p = NULL;

			err = t->create(r, v, done + made, &p, &what);
			if (!err) {
				v->made++;
				objs[made].v = v;
				objs[made].p = p;
				made++;
				continue;
			}
			v->err = err;
			v->what = what;
			if (is_unsupported(err) && !v->made) {
				v->state = V_UNSUPPORTED;
			} else {
				v->state = V_FAILED;
				stop = 1;
				ml += scnprintf(msg + ml, sizeof(msg) - ml,
						"%s [%s] failed after %ld: %d; ", what, v->name,
						v->made, err);
				break;
			}
		}
		for (k = 0; k < made; k++) {
			int j = (round & 1) ? made - 1 - k : k;

			err = t->destroy(r, objs[j].v, objs[j].p, &what);
			if (err) {
				objs[j].v->state = V_FAILED;
				if (!stop)
					ml += scnprintf(msg + ml, sizeof(msg) - ml,
							"%s [%s]: %d; ", what, objs[j].v->name,
							err);
				stop = 1;
			}
		}
		done += made;
		round++;
		cond_resched();
		if (!v && made < want)
			break;
	}
	for (k = 0; k < t->nv; k++) {
		if (t->v[k].state != V_UNSUPPORTED)
			continue;
		if (++nunsup <= 2)
			ml += scnprintf(msg + ml, sizeof(msg) - ml, "[%s] %s: %d; ", t->v[k].name,
					t->v[k].what, t->v[k].err);
	}
	if (nunsup > 2)
		ml += scnprintf(msg + ml, sizeof(msg) - ml, "(%d of %d variants unsupported)",
				nunsup, t->nv);
	if (stop)
		res = RES_ERROR;
	else if (t->nv && nunsup == t->nv)
		res = RES_UNSUPPORTED;
	else if (nunsup)
		res = RES_PARTIAL;
	else if (done < n)
		res = RES_ERROR;
	else
		res = RES_OK;
out:
	report("%-6s %-11s %6ld %5lld ms  %s\n", t->name, result_name[res], done,
	       ktime_ms_delta(ktime_get(), start), msg);
	return res;
}

static void run_teardown(struct run *r)
{
	if (r->srq)
		WARN_ON(ib_destroy_srq_user(r->srq, NULL));
	if (r->scq)
		ib_free_cq(r->scq);
	if (r->rcq)
		ib_free_cq(r->rcq);
	if (r->pd)
		WARN_ON(ib_dealloc_pd_user(r->pd, NULL));
	kfree(r->page);
	memset(r, 0, sizeof(*r));
}

static struct ib_device *find_dev(const char *name)
{
	struct kvt_dev *d;

	list_for_each_entry(d, &devices, list)
		if (!strcmp(dev_name(&d->ibdev->dev), name))
			return d->ibdev;
	return NULL;
}

/* Runs the types in LIST (comma-separated, or "all"), N of each. */
static int run(char *list, long n)
{
	struct run r = {};
	int nres[4] = {}, i;
	bool sel[ARRAY_SIZE(types)] = {}, traffic = false;
	char *tok;

	memset(tsel, 0, sizeof(tsel));
	while ((tok = strsep(&list, ","))) {
		bool found = false;

		if (!*tok)
			continue;
		if (!strcmp(tok, "traffic") || !strncmp(tok, "traffic:", 8)) {
			for (i = 0; i < ARRAY_SIZE(tvariants); i++)
				if (!tok[7] || !strcmp(tok + 8, tvariants[i].name))
					tsel[i] = found = true;
			if (!found) {
				pr_err("unknown traffic variant '%s'\n", tok);
				return -EINVAL;
			}
			traffic = true;
			continue;
		}
		for (i = 0; i < ARRAY_SIZE(types); i++)
			if (!strcmp(tok, "all") || !strcmp(tok, types[i].name))
				sel[i] = found = true;
		if (!found) {
			pr_err("unknown type '%s'\n", tok);
			return -EINVAL;
		}
	}
	results_len = 0;
	results[0] = 0;
	r.dev = find_dev(dev);
	if (!r.dev) {
		report("device %s unknown to the client (%zu known)\n", dev,
		       list_count_nodes(&devices));
		return -ENODEV;
	}
	report("device %s (kverbs_provider=%d), %ld of each type, batch %u\n", dev,
	       r.dev->kverbs_provider, n, batch);
	for (i = 0; i < ARRAY_SIZE(types); i++) {
		if (!sel[i])
			continue;
		nres[run_type(&r, &types[i], n)]++;
		/* Each type starts from fresh shared objects. */
		run_teardown(&r);
		r.dev = find_dev(dev);
	}
	if (traffic && r.dev)
		run_traffic(r.dev, n, nres);
	report("summary: %d ok, %d partial, %d unsupported, %d error\n", nres[RES_OK],
	       nres[RES_PARTIAL], nres[RES_UNSUPPORTED], nres[RES_ERROR]);
	return 0;
}

static ssize_t run_write(struct file *file, const char __user *ubuf, size_t len,
			 loff_t *ppos)
{
	char buf[128], *p, *list;
	long n = count;
	int err;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = 0;
	p = strim(buf);
	list = strsep(&p, " \t");
	if (p && *p) {
		err = kstrtol(skip_spaces(p), 0, &n);
		if (err || n < 0)
			return -EINVAL;
	}
	mutex_lock(&kvt_lock);
	err = run(list, n);
	mutex_unlock(&kvt_lock);
	return err ? err : len;
}

static ssize_t results_read(struct file *file, char __user *ubuf, size_t len, loff_t *ppos)
{
	ssize_t ret;

	mutex_lock(&kvt_lock);
	ret = simple_read_from_buffer(ubuf, len, ppos, results, results_len);
	mutex_unlock(&kvt_lock);
	return ret;
}

#define OPS(X)                                                                         \
	X(alloc_pd) X(dealloc_pd) X(get_dma_mr) X(create_cq) X(destroy_cq) X(poll_cq) \
	X(req_notify_cq) X(create_qp) X(modify_qp) X(destroy_qp) X(post_send)          \
	X(post_recv) X(alloc_mr) X(map_mr_sg) X(dereg_mr) X(create_ah) X(destroy_ah)  \
	X(create_srq) X(destroy_srq) X(reg_user_mr)

static ssize_t devices_read(struct file *file, char __user *ubuf, size_t len, loff_t *ppos)
{
	struct kvt_dev *d;
	size_t n = 0, size = 4096;
	char *buf = kzalloc(size, GFP_KERNEL);
	ssize_t ret;

	if (!buf)
		return -ENOMEM;
	mutex_lock(&kvt_lock);
	list_for_each_entry(d, &devices, list) {
		struct ib_device *ib = d->ibdev;

		n += scnprintf(buf + n, size - n, "%s kverbs_provider=%d local_dma_lkey=%d missing:",
			       dev_name(&ib->dev), ib->kverbs_provider,
			       !!(ib->attrs.kernel_cap_flags & IBK_LOCAL_DMA_LKEY));
#define MISSING(op)                                                   \
	if (!ib->ops.op)                                              \
		n += scnprintf(buf + n, size - n, " %s", #op);
		OPS(MISSING)
#undef MISSING
		n += scnprintf(buf + n, size - n, "\n");
	}
	mutex_unlock(&kvt_lock);
	ret = simple_read_from_buffer(ubuf, len, ppos, buf, n);
	kfree(buf);
	return ret;
}

static const struct file_operations run_fops = {
	.owner = THIS_MODULE,
	.write = run_write,
	.llseek = noop_llseek,
};

static const struct file_operations results_fops = {
	.owner = THIS_MODULE,
	.read = results_read,
	.llseek = default_llseek,
};

static const struct file_operations devices_fops = {
	.owner = THIS_MODULE,
	.read = devices_read,
	.llseek = default_llseek,
};

static int kvt_add(struct ib_device *ibdev)
{
	struct kvt_dev *d = kzalloc(sizeof(*d), GFP_KERNEL);

	if (!d)
		return -ENOMEM;
	d->ibdev = ibdev;
	mutex_lock(&kvt_lock);
	list_add_tail(&d->list, &devices);
	mutex_unlock(&kvt_lock);
	pr_info("client: added %s (kverbs_provider=%d)\n", dev_name(&ibdev->dev),
		ibdev->kverbs_provider);
	return 0;
}

static void kvt_remove(struct ib_device *ibdev, void *client_data)
{
	struct kvt_dev *d, *tmp;

	mutex_lock(&kvt_lock);
	list_for_each_entry_safe(d, tmp, &devices, list)
		if (d->ibdev == ibdev) {
			list_del(&d->list);
			kfree(d);
		}
	mutex_unlock(&kvt_lock);
	pr_info("client: removed %s\n", dev_name(&ibdev->dev));
}

static struct ib_client kvt_client = {
	.name = "kverbs_test",
	.add = kvt_add,
	.remove = kvt_remove,
	.no_kverbs_req = true,
};

static struct dentry *dir;

static int __init kvt_init(void)
{
	int err;

	results = kzalloc(RESULTS_SIZE, GFP_KERNEL);
	if (!results)
		return -ENOMEM;
	err = ib_register_client(&kvt_client);
	if (err) {
		kfree(results);
		return err;
	}
	dir = debugfs_create_dir("kverbs_test", NULL);
	debugfs_create_file("run", 0200, dir, NULL, &run_fops);
	debugfs_create_file("results", 0400, dir, NULL, &results_fops);
	debugfs_create_file("devices", 0400, dir, NULL, &devices_fops);
	return 0;
}

static void __exit kvt_exit(void)
{
	debugfs_remove_recursive(dir);
	ib_unregister_client(&kvt_client);
	kfree(results);
}

module_init(kvt_init);
module_exit(kvt_exit);
MODULE_DESCRIPTION("Kernel verbs consumer for testing RDMA devices");
MODULE_LICENSE("GPL");
