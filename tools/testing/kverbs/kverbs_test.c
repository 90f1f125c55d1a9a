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
 *            TYPES is a comma-separated list of pd, dma_mr, cq, qp, mr, ah, srq, or all.
 *            The write fails with ENODEV if the client does not know the device.
 *   results  the last run's report: "device DEV ..." then one line per type,
 *            "TYPE RESULT DONE DETAIL" with RESULT ok, partial (some variants
 *            unsupported), unsupported or error, then "summary: N ok N unsupported
 *            N error". The lines also go to the kernel log.
 *   devices  the devices the client knows: name, kverbs_provider, and the missing ops
 *            among those the tested verbs reach.
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
	bool sel[ARRAY_SIZE(types)] = {};
	char *tok;

	while ((tok = strsep(&list, ","))) {
		bool found = false;

		if (!*tok)
			continue;
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
