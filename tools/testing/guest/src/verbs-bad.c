// SPDX-License-Identifier: GPL-2.0
/*
 * verbs-bad: malformed input from userspace. The device must refuse it with an error,
 * never crash, hang or leak (the caller checks the kernel log and kmemleak), and must
 * keep working afterwards.
 *
 *   verbs-bad [-d DEV] [-g GID_INDEX] [-r ROUNDS] [-s SEED] [-t TESTS] [-H] [-T] [-v]
 *
 * TESTS (comma-separated, default all):
 *   cq-size      CQ sizes 0, negative, above max_cqe; unsupported create flags
 *   comp-vector  completion vectors out of range
 *   resize       resizes to bad sizes; a resize below the queued completions must fail
 *                or keep them all (with working loopback traffic)
 *   busy         destroying a PD, CQ, SRQ or completion channel still in use: EBUSY
 *   scribble-cq  random values in the shared CQ header (producer_index, consumer_index,
 *                index_mask, log2_elem_size: struct rxe_queue_buf), then notify, resize,
 *                destroy
 *   scribble-qp  the same for the SQ, RQ and SRQ headers, plus garbage work requests, while
 *                the QP goes through its states and the doorbell rings; a thread keeps
 *                scribbling while the kernel works
 *   crafted      (with working loopback traffic) hand-written send WQEs naming another
 *                PD's AH or MR, or with impossible num_sge, length, opcode, and an SRQ
 *                receive WQE with num_sge 1000: each must complete, in error
 *   raw          raw uverbs commands with a response buffer too short for the driver's
 *                part, modify_srq with bad mmap_info_addr pointers
 *   mmap         mmap of the command fd at unknown offsets, too long, twice, mremap, a
 *                queue mapping that outlives its object
 *   kill         children holding objects with scribbled queues, killed at random times
 *   flush-spin   a thread keeps every queue of an RC QP (SQ and RQ, or SRQ) and of its CQ
 *                "full" (producer_index = consumer_index - 1) while the QP goes to ERR, to
 *                RESET and is destroyed: a kernel loop that re-reads the producer index
 *                until the queue is empty never ends. Each verb must return within 10 s
 *                (the thread gives up after 30 s; the soft lockup detector fires at 20)
 *   rewrite-wqe  an RC QP retransmits SENDs (the peer answers RNR) while the test rewrites
 *                posted WQEs' opcode and lengths in the SQ mapping: each WQE completes
 *                once, in order, as posted or in a local error followed by flushes
 *   rnr-forever  an RC QP with rnr_retry 7 (for ever) sends to a QP that never posts a
 *                receive, at the shortest RNR timer, for 22 s (past the soft lockup
 *                detector's 20 s): nothing completes, the process keeps running, the QP
 *                stays in RTS and keeps retrying; then modify to ERR flushes every WQE
 *                within 1 s, and destroy (also while retrying) returns within 1 s
 * -H (headers only): scribble only the queue headers, never the work requests themselves
 * (C rdma_rxe in 6.12 indexes a table with a user WQE's opcode and oopses on garbage
 * WQEs; -H lets the reference driver run the rest). -T: no thread scribbling while the
 * kernel works (it keeps 6.12 rdma_rxe's requester and completer busy until soft lockup).
 * Every test ends by checking that the device still works (PD, CQ and, if loopback UD
 * traffic worked at the start, traffic). A test whose verbs the device lacks is skipped
 * with the reason.
 *
 * The queues are found in /proc/self/maps (mappings of /dev/infiniband/uverbsN made by
 * the provider when the object was created); the header layout comes from
 * <rdma/rdma_user_rxe.h>. Scribbled queues are never used through the provider again
 * (librxe trusts the header), only through the kernel: modify, doorbell, resize, destroy.
 *
 * Output is TAP; exit status 1 if a check failed.
 */
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_rxe.h>
#include "rrxe-test.h"

#define PORT 1
#define MAX_MAPS 256

static struct ibv_context *ctx;
static struct ibv_device_attr dattr;
static const char *devname;
static int gid_index = -1;
static union ibv_gid gid;
static int rounds = 200, verbose, headers_only, no_thread;
static int have_qp, have_srq, have_ah, have_mr, have_mw1, have_mw2, loopback_ok;
static volatile const char *step = "start";

static void on_alarm(int sig)
{
	char buf[256];
	int n = snprintf(buf, sizeof(buf), "not ok - verbs-bad: stuck for 120 s in: %s\n",
			 (const char *)step);

	if (write(1, buf, n) < 0)
		_exit(4);
	_exit(3);
}

/* Sets the step shown if the watchdog fires, and rearms it. */
static void at(const char *s)
{
	step = s;
	alarm(120);
}

static const char *err_str(int err)
{
	return err ? strerror(err) : "success";
}

/* maps_mark() remembers the uverbs mappings; maps_new() gives those made since. */
static struct uverbs_map mb[MAX_MAPS], ma[MAX_MAPS];
static int nmb;

static void maps_mark(void)
{
	nmb = uverbs_maps(mb, MAX_MAPS);
	if (nmb < 0)
		nmb = 0;
}

static int maps_new(struct uverbs_map *new)
{
	int na = uverbs_maps(ma, MAX_MAPS);

	return na < 0 ? 0 : uverbs_maps_new(mb, nmb, ma, na, new);
}

/* Scribbling */

static const size_t hdr_off[] = {
	offsetof(struct rxe_queue_buf, producer_index),
	offsetof(struct rxe_queue_buf, consumer_index),
	offsetof(struct rxe_queue_buf, index_mask),
	offsetof(struct rxe_queue_buf, log2_elem_size),
};

/* Writes nasty values into a random non-empty subset of the header fields of Q. */
static void scribble_header(struct rxe_queue_buf *q)
{
	unsigned int which = 1 + rng32() % 15, k;

	for (k = 0; k < ARRAY_SIZE(hdr_off); k++)
		if (which & (1u << k))
			__atomic_store_n((uint32_t *)((char *)q + hdr_off[k]), rng_nasty32(),
					 __ATOMIC_RELEASE);
}

/*
 * Fills the element area of queue Q (mapping of LEN bytes, elements 2^LOG2 bytes, the
 * values before scribbling) with garbage send WQEs: random bytes, often with fields set to
 * plausible or edge values, so that the kernel gets past its first checks.
 */
static void garbage_send_wqes(struct rxe_queue_buf *q, size_t len, unsigned int log2)
{
	size_t esz = (size_t)1 << log2, off;

	if (log2 > 16 || esz < sizeof(struct rxe_send_wqe))
		return;
	for (off = offsetof(struct rxe_queue_buf, data); off + esz <= len; off += esz) {
		struct rxe_send_wqe *w = (void *)((char *)q + off);
		uint32_t *p = (uint32_t *)w;
		size_t k;

		for (k = 0; k < esz / 4; k++)
			p[k] = rng32();
		if (rng32() % 2)
			continue;
		w->wr.opcode = rng32() % 3 ? rng32() % 16 : rng_nasty32();
		w->wr.send_flags = rng32() % 2 ? 0 : rng_nasty32();
		w->dma.num_sge = rng32() % 2 ? rng32() % 4 : rng_nasty32();
		w->dma.cur_sge = rng32() % 2 ? 0 : rng_nasty32();
		w->dma.length = rng32() % 2 ? rng32() % 8192 : rng_nasty32();
		w->dma.resid = rng32() % 2 ? w->dma.length : rng_nasty32();
		w->dma.sge_offset = rng32() % 2 ? 0 : rng_nasty32();
		w->wr.wr.ud.ah_num = rng32() % 2 ? rng32() % 8 : rng_nasty32();
		w->state = rng32() % 2 ? 0 : rng_nasty32();
	}
}

/* Fills the element area with garbage receive WQEs. */
static void garbage_recv_wqes(struct rxe_queue_buf *q, size_t len, unsigned int log2)
{
	size_t esz = (size_t)1 << log2, off;

	if (log2 > 16 || esz < sizeof(struct rxe_recv_wqe))
		return;
	for (off = offsetof(struct rxe_queue_buf, data); off + esz <= len; off += esz) {
		struct rxe_recv_wqe *w = (void *)((char *)q + off);
		uint32_t *p = (uint32_t *)w;
		size_t k;

		for (k = 0; k < esz / 4; k++)
			p[k] = rng32();
		if (rng32() % 2)
			continue;
		w->dma.num_sge = rng32() % 2 ? rng32() % 4 : rng_nasty32();
		w->dma.length = rng32() % 2 ? rng32() % 8192 : rng_nasty32();
		w->dma.resid = w->dma.length;
		w->dma.cur_sge = 0;
	}
}

/*
 * Producer index of a user-produced queue Q: often "a few ahead of the consumer" (the
 * kernel then reads that many WQEs), sometimes anything.
 */
static void advance_user_producer(struct rxe_queue_buf *q, uint32_t mask)
{
	uint32_t cons = __atomic_load_n(&q->consumer_index, __ATOMIC_ACQUIRE);

	if (rng32() % 4)
		__atomic_store_n(&q->producer_index, (cons + 1 + rng32() % 8) & mask,
				 __ATOMIC_RELEASE);
	else
		__atomic_store_n(&q->producer_index, rng_nasty32(), __ATOMIC_RELEASE);
}

/* Raw uverbs commands on the command fd (rrxe-test.h's uverbs_write). */

static int raw_destroy_cq(uint32_t handle)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_destroy_cq cmd;
	} c = {};
	struct ib_uverbs_destroy_cq_resp resp;

	c.hdr.command = IB_USER_VERBS_CMD_DESTROY_CQ;
	c.hdr.in_words = sizeof(c) / 4;
	c.hdr.out_words = sizeof(resp) / 4;
	c.cmd.response = (uintptr_t)&resp;
	c.cmd.cq_handle = handle;
	return uverbs_write(ctx, &c, sizeof(c));
}

/* QP state changes */

static int qp_to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = PORT,
		.qkey = 0x11111111,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
	};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	mask |= qp->qp_type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;
	return ibv_modify_qp(qp, &a, mask);
}

/* RTR and RTS; RC and UC QPs are connected to themselves. */
static int qp_to_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };
	int mask = IBV_QP_STATE, err;

	if (qp->qp_type != IBV_QPT_UD) {
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = qp->qp_num;
		a.rq_psn = 0;
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = PORT;
		a.ah_attr.grh.dgid = gid;
		a.ah_attr.grh.sgid_index = gid_index;
		a.ah_attr.grh.hop_limit = 64;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (qp->qp_type == IBV_QPT_RC) {
			a.max_dest_rd_atomic = 1;
			a.min_rnr_timer = 1;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
	}
	err = ibv_modify_qp(qp, &a, mask);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (qp->qp_type == IBV_QPT_RC) {
		a.timeout = 8;
		a.retry_cnt = 1;
		a.rnr_retry = 1;
		a.max_rd_atomic = 1;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	return ibv_modify_qp(qp, &a, mask);
}

static int qp_to(struct ibv_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr a = { .qp_state = s };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

/* Loopback UD traffic through librxe on clean queues. */

struct lb {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	int own_cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	char *buf;
	const char *what;
};

static void lb_free(struct lb *l)
{
	if (l->qp)
		ibv_destroy_qp(l->qp);
	if (l->ah)
		ibv_destroy_ah(l->ah);
	if (l->mr)
		ibv_dereg_mr(l->mr);
	if (l->cq && l->own_cq)
		ibv_destroy_cq(l->cq);
	if (l->pd)
		ibv_dealloc_pd(l->pd);
	free(l->buf);
	memset(l, 0, sizeof(*l));
}

/* A UD QP sending to itself, on CQ (or its own). 0 or an errno, l->what. */
static int lb_setup(struct lb *l, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_ah_attr aa = {
		.is_global = 1,
		.port_num = PORT,
		.grh = { .dgid = gid, .sgid_index = gid_index, .hop_limit = 64 },
	};
	int err;

	memset(l, 0, sizeof(*l));
	l->what = "ibv_alloc_pd";
	if (!(l->pd = ibv_alloc_pd(ctx)))
		return errno;
	l->what = "ibv_create_cq";
	l->cq = cq;
	if (!cq) {
		l->own_cq = 1;
		if (!(l->cq = ibv_create_cq(ctx, 64, NULL, NULL, 0)))
			return errno;
	}
	l->what = "malloc";
	if (!(l->buf = calloc(1, 8192)))
		return ENOMEM;
	l->what = "ibv_reg_mr";
	if (!(l->mr = ibv_reg_mr(l->pd, l->buf, 8192, IBV_ACCESS_LOCAL_WRITE)))
		return errno;
	l->what = "ibv_create_ah";
	if (!(l->ah = ibv_create_ah(l->pd, &aa)))
		return errno;
	qa.send_cq = qa.recv_cq = l->cq;
	l->what = "ibv_create_qp";
	if (!(l->qp = ibv_create_qp(l->pd, &qa)))
		return errno;
	l->what = "ibv_modify_qp INIT";
	if ((err = qp_to_init(l->qp)))
		return err;
	l->what = "ibv_modify_qp RTR/RTS";
	return qp_to_rts(l->qp);
}

/*
 * Posts N receives and N sends of 64 bytes (without signalling the sends if !SIGNAL);
 * returns 0 or an errno, l->what.
 */
static int lb_post(struct lb *l, int n, int signal)
{
	struct ibv_sge rs = { .length = 64 + 40, .lkey = l->mr->lkey };
	struct ibv_sge ss = { .length = 64, .lkey = l->mr->lkey };
	struct ibv_recv_wr rw = { .sg_list = &rs, .num_sge = 1 }, *brw;
	struct ibv_send_wr sw = {
		.sg_list = &ss,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = signal ? IBV_SEND_SIGNALED : 0,
		.wr = { .ud = { .ah = l->ah, .remote_qpn = l->qp->qp_num,
				.remote_qkey = 0x11111111 } },
	}, *bsw;
	int i, err;

	for (i = 0; i < n; i++) {
		rs.addr = (uintptr_t)l->buf + 4096 + (i % 16) * 128;
		rw.wr_id = 1000 + i;
		l->what = "ibv_post_recv";
		if ((err = ibv_post_recv(l->qp, &rw, &brw)))
			return err;
	}
	for (i = 0; i < n; i++) {
		ss.addr = (uintptr_t)l->buf + (i % 16) * 64;
		sw.wr_id = i;
		l->what = "ibv_post_send";
		if ((err = ibv_post_send(l->qp, &sw, &bsw)))
			return err;
	}
	return 0;
}

/* Polls CQ until N completions, for at most 3 s; counts those in error in *bad. */
static int poll_n(struct ibv_cq *cq, int n, int *bad)
{
	double end = now_s() + 3;
	struct ibv_wc wc[16];
	int got = 0, k, r;

	*bad = 0;
	while (got < n && now_s() < end) {
		r = ibv_poll_cq(cq, 16, wc);
		if (r < 0)
			return got;
		for (k = 0; k < r; k++)
			if (wc[k].status != IBV_WC_SUCCESS) {
				if (verbose || *bad == 0)
					note("completion wr_id %llu: %s (vendor_err %u)",
					     (unsigned long long)wc[k].wr_id,
					     ibv_wc_status_str(wc[k].status), wc[k].vendor_err);
				(*bad)++;
			}
		got += r;
		if (!r)
			usleep(1000);
	}
	return got;
}

/* One UD exchange of N messages on a fresh loopback; 0, or an errno and *what. */
static int loopback(int n, const char **what)
{
	struct lb l;
	int err = lb_setup(&l, NULL), bad, got;

	if (!err)
		err = lb_post(&l, n, 1);
	*what = l.what;
	if (!err) {
		got = poll_n(l.cq, 2 * n, &bad);
		if (got != 2 * n || bad) {
			*what = got != 2 * n ? "completions missing" : "completions in error";
			note("loopback: %d of %d completions, %d in error", got, 2 * n, bad);
			err = EIO;
		}
	}
	lb_free(&l);
	return err;
}

/* The device still works: PD, CQ (create, resize, notify, poll), and traffic if it did. */
static void still_works(const char *after)
{
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_wc wc;
	const char *what = "ibv_alloc_pd";
	int err = 0;

	at("still_works");
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		err = errno;
	if (!err) {
		what = "ibv_create_cq";
		cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
		if (!cq)
			err = errno;
		if (!err) {
			what = "ibv_resize_cq";
			err = ibv_resize_cq(cq, 100);
			what = "ibv_req_notify_cq";
			if (!err)
				err = ibv_req_notify_cq(cq, 0);
			what = "ibv_poll_cq";
			if (!err && ibv_poll_cq(cq, 1, &wc) != 0)
				err = EIO;
			if (!err)
				what = "ibv_destroy_cq";
			if (ibv_destroy_cq(cq) && !err)
				err = errno ? errno : EIO;
		}
		if (ibv_dealloc_pd(pd) && !err) {
			what = "ibv_dealloc_pd";
			err = EIO;
		}
	}
	ok(!err, "after %s: PD and CQ verbs work (%s: %s)", after, what, err_str(err));
	if (loopback_ok) {
		err = loopback(4, &what);
		ok(!err, "after %s: loopback UD traffic works (%s: %s)", after, what,
		   err_str(err));
	}
}

/* cq-size */

static void test_cq_size(void)
{
	int bad[] = { 0, -1, INT_MIN, dattr.max_cqe + 1, INT_MAX };
	struct ibv_cq_init_attr_ex ax = {
		.cqe = 16,
		.wc_flags = IBV_WC_EX_WITH_BYTE_LEN,
		.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS,
		.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN,
	};
	struct ibv_cq_ex *cqx;
	struct ibv_cq *cq;
	unsigned int i;

	at("cq-size");
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		errno = 0;
		cq = ibv_create_cq(ctx, bad[i], NULL, NULL, 0);
		ok(!cq, "create_cq cqe=%d refused (%s)", bad[i], cq ? "created" : strerror(errno));
		if (cq)
			ibv_destroy_cq(cq);
	}
	cq = ibv_create_cq(ctx, dattr.max_cqe, NULL, NULL, 0);
	ok(cq && cq->cqe >= dattr.max_cqe, "create_cq cqe=max_cqe=%d works (%s)", dattr.max_cqe,
	   cq ? "created" : strerror(errno));
	if (cq)
		ok(!ibv_destroy_cq(cq), "destroy it");
	errno = 0;
	cqx = ibv_create_cq_ex(ctx, &ax);
	ok(!cqx, "create_cq_ex with IGNORE_OVERRUN (not supported by rxe) refused (%s)",
	   cqx ? "created" : strerror(errno));
	if (cqx)
		ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));
	ax.flags = 0;
	ax.cqe = 0;
	cqx = ibv_create_cq_ex(ctx, &ax);
	ok(!cqx, "create_cq_ex cqe=0 refused (%s)", cqx ? "created" : strerror(errno));
	if (cqx)
		ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));
	still_works("cq-size");
}

/* comp-vector */

static void test_comp_vector(void)
{
	int bad[] = { ctx->num_comp_vectors, ctx->num_comp_vectors + 1, -1, INT_MAX, INT_MIN };
	struct ibv_cq *cq;
	unsigned int i;

	at("comp-vector");
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		errno = 0;
		cq = ibv_create_cq(ctx, 16, NULL, NULL, bad[i]);
		ok(!cq, "create_cq comp_vector=%d (device has %d) refused (%s)", bad[i],
		   ctx->num_comp_vectors, cq ? "created" : strerror(errno));
		if (cq)
			ibv_destroy_cq(cq);
	}
	if (ctx->num_comp_vectors > 0) {
		cq = ibv_create_cq(ctx, 16, NULL, NULL, ctx->num_comp_vectors - 1);
		ok(cq != NULL, "create_cq comp_vector=%d works (%s)", ctx->num_comp_vectors - 1,
		   cq ? "created" : strerror(errno));
		if (cq)
			ibv_destroy_cq(cq);
	}
	still_works("comp-vector");
}

/* resize */

static void test_resize(void)
{
	int bad[] = { 0, -1, INT_MIN, dattr.max_cqe + 1, INT_MAX };
	struct ibv_cq *cq;
	unsigned int i;
	int err;

	at("resize");
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!cq) {
		ok(0, "create_cq 16: %s", strerror(errno));
		return;
	}
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		err = ibv_resize_cq(cq, bad[i]);
		ok(err != 0, "resize_cq to %d refused (%s)", bad[i], err_str(err));
	}
	err = ibv_resize_cq(cq, 1000);
	ok(!err && cq->cqe >= 1000, "resize_cq to 1000 works (%s, cqe %d)", err_str(err), cq->cqe);
	err = ibv_resize_cq(cq, 1);
	ok(!err && cq->cqe >= 1, "resize_cq down to 1 works (%s, cqe %d)", err_str(err), cq->cqe);
	ok(!ibv_destroy_cq(cq), "destroy it");

	/* Shrinking below the queued completions: refused, or nothing lost. */
	if (!loopback_ok) {
		skip("resize below queued completions: no loopback traffic on this device");
	} else {
		struct lb l;
		int bad_wc, got, n = 6;

		err = lb_setup(&l, NULL);
		if (!err)
			err = ibv_resize_cq(l.cq, 16);
		if (!err)
			err = lb_post(&l, n / 2, 1);
		if (err) {
			ok(0, "loopback setup for the resize test: %s: %s", l.what, strerror(err));
		} else {
			usleep(200000);
			err = ibv_resize_cq(l.cq, 2);
			note("resize to 2 with %d completions queued: %s (cqe %d)", n, err_str(err),
			     l.cq->cqe);
			got = poll_n(l.cq, n, &bad_wc);
			ok(got == n && !bad_wc,
			   "resize below the queued completions %s, and all %d are still there "
			   "(%d polled, %d in error)", err ? "refused" : "accepted", n, got, bad_wc);
		}
		lb_free(&l);
	}
	still_works("resize");
}

/* busy */

static void test_busy(void)
{
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_comp_channel *ch;
	char *buf = malloc(4096);
	int err;

	at("busy");
	pd = ibv_alloc_pd(ctx);
	if (!pd || !buf) {
		ok(0, "alloc_pd: %s", strerror(errno));
		free(buf);
		return;
	}

	/* Each kind of PD user in turn. */
	if (have_mr) {
		struct ibv_mr *mr = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);

		if (!mr) {
			ok(0, "reg_mr: %s", strerror(errno));
		} else {
			err = ibv_dealloc_pd(pd);
			ok(err == EBUSY, "dealloc_pd with an MR: EBUSY (%s)", err_str(err));
			ok(!ibv_dereg_mr(mr), "dereg_mr");
		}
	} else {
		skip("PD busy with an MR: no MRs");
	}
	if (have_mw1 || have_mw2) {
		struct ibv_mw *mw = ibv_alloc_mw(pd, have_mw1 ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2);

		if (!mw) {
			ok(0, "alloc_mw: %s", strerror(errno));
		} else {
			err = ibv_dealloc_pd(pd);
			ok(err == EBUSY, "dealloc_pd with an MW: EBUSY (%s)", err_str(err));
			ok(!ibv_dealloc_mw(mw), "dealloc_mw");
		}
	} else {
		skip("PD busy with an MW: no MWs");
	}
	if (have_ah) {
		struct ibv_ah_attr aa = {
			.is_global = 1,
			.port_num = PORT,
			.grh = { .dgid = gid, .sgid_index = gid_index, .hop_limit = 64 },
		};
		struct ibv_ah *ah = ibv_create_ah(pd, &aa);

		if (!ah) {
			ok(0, "create_ah: %s", strerror(errno));
		} else {
			err = ibv_dealloc_pd(pd);
			ok(err == EBUSY, "dealloc_pd with an AH: EBUSY (%s)", err_str(err));
			ok(!ibv_destroy_ah(ah), "destroy_ah");
		}
	} else {
		skip("PD busy with an AH: no AHs");
	}
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!cq) {
		ok(0, "create_cq: %s", strerror(errno));
	} else if (have_qp) {
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
		struct ibv_srq *srq = have_srq ? ibv_create_srq(pd, &sa) : NULL;
		struct ibv_qp_init_attr qa = {
			.send_cq = cq,
			.recv_cq = cq,
			.srq = srq,
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 4, .max_recv_wr = srq ? 0 : 4, .max_send_sge = 1,
				 .max_recv_sge = srq ? 0 : 1 },
		};
		struct ibv_qp *qp;

		if (have_srq && !srq)
			ok(0, "create_srq: %s", strerror(errno));
		qp = ibv_create_qp(pd, &qa);
		if (!qp) {
			ok(0, "create_qp: %s", strerror(errno));
		} else {
			err = ibv_dealloc_pd(pd);
			ok(err == EBUSY, "dealloc_pd with a QP: EBUSY (%s)", err_str(err));
			err = ibv_destroy_cq(cq);
			ok(err == EBUSY, "destroy_cq used by a QP: EBUSY (%s)", err_str(err));
			if (srq) {
				err = ibv_destroy_srq(srq);
				ok(err == EBUSY, "destroy_srq used by a QP: EBUSY (%s)",
				   err_str(err));
			}
			ok(!ibv_destroy_qp(qp), "destroy_qp");
		}
		if (srq) {
			err = ibv_dealloc_pd(pd);
			ok(err == EBUSY, "dealloc_pd with an SRQ: EBUSY (%s)", err_str(err));
			ok(!ibv_destroy_srq(srq), "destroy_srq");
		} else {
			skip("PD busy with an SRQ: no SRQs");
		}
	} else {
		skip("PD and CQ busy with a QP, SRQ busy: no QPs");
	}
	if (cq)
		ok(!ibv_destroy_cq(cq), "destroy_cq once unused");
	err = ibv_dealloc_pd(pd);
	ok(!err, "dealloc_pd once unused (%s)", err_str(err));

	/* A completion channel with a CQ on it (libibverbs refuses it). */
	ch = ibv_create_comp_channel(ctx);
	if (ch && (cq = ibv_create_cq(ctx, 4, NULL, ch, 0))) {
		err = ibv_destroy_comp_channel(ch);
		ok(err != 0, "destroy_comp_channel with a CQ: refused (%s)", err_str(err ? errno : 0));
		ok(!ibv_destroy_cq(cq), "destroy_cq on the channel");
	}
	if (ch)
		ok(!ibv_destroy_comp_channel(ch), "destroy_comp_channel once unused");
	free(buf);
	still_works("busy");
}

/* scribble-cq */

static void test_scribble_cq(void)
{
	static const int sizes[] = { 1, 8, 100, 4096 };
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct uverbs_map nm[MAX_MAPS];
	int r, n, errors = 0, nomap = 0, refused = 0, resized = 0;

	for (r = 0; r < rounds; r++) {
		struct ibv_cq *cq;
		int k, acts, err;

		at("scribble-cq: create_cq");
		maps_mark();
		cq = ibv_create_cq(ctx, sizes[rng32() % ARRAY_SIZE(sizes)], NULL,
				   rng32() % 2 ? ch : NULL, rng32() % ctx->num_comp_vectors);
		if (!cq) {
			note("round %d: create_cq: %s", r, strerror(errno));
			errors++;
			continue;
		}
		acts = 1 + rng32() % 5;
		for (k = 0; k < acts; k++) {
			/* The CQ's current mapping: new since before it was created. */
			n = maps_new(nm);
			if (n != 1) {
				nomap++;
				break;
			}
			scribble_header((struct rxe_queue_buf *)nm[0].start);
			switch (rng32() % 3) {
			case 0:
				at("scribble-cq: req_notify_cq");
				err = ibv_req_notify_cq(cq, rng32() % 2);
				if (err)
					refused++;
				break;
			case 1: {
				int sz = rng32() % 4 ? sizes[rng32() % ARRAY_SIZE(sizes)] :
					 (int)rng_nasty32();

				at("scribble-cq: resize_cq");
				err = ibv_resize_cq(cq, sz);
				if (err)
					refused++;
				else
					resized++;
				if (verbose)
					note("round %d: resize to %d: %s", r, sz, err_str(err));
				break;
			}
			default:
				break;
			}
		}
		at("scribble-cq: destroy_cq");
		err = ibv_destroy_cq(cq);
		if (err) {
			note("round %d: destroy_cq: %s", r, strerror(err));
			errors++;
		}
	}
	if (ch)
		ibv_destroy_comp_channel(ch);
	note("scribble-cq: %d rounds, %d resizes accepted, %d calls refused, %d without a "
	     "single new mapping", rounds, resized, refused, nomap);
	ok(nomap < rounds, "scribble-cq: the CQ queue mapping was found");
	ok(!errors, "scribble-cq: %d rounds, every CQ created and destroyed (%d failures)", rounds,
	   errors);
	still_works("scribble-cq");
}

/* scribble-qp */

struct scribbler {
	pthread_t thread;
	atomic_int stop;
	struct uverbs_map maps[8];
	int n;
	unsigned int log2[8];
	int headers_only;
};

static void *scribble_thread(void *arg)
{
	struct scribbler *s = arg;
	uint64_t seed = rng64();

	while (!atomic_load(&s->stop)) {
		int k = seed % s->n;
		struct rxe_queue_buf *q = (void *)s->maps[k].start;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		switch ((seed >> 33) % 4) {
		case 0:
			__atomic_store_n((uint32_t *)((char *)q + hdr_off[(seed >> 40) % 4]),
					 (uint32_t)(seed >> 11), __ATOMIC_RELEASE);
			break;
		case 1:
			__atomic_store_n(&q->producer_index,
					 __atomic_load_n(&q->consumer_index, __ATOMIC_RELAXED) +
						 1 + (seed >> 60),
					 __ATOMIC_RELEASE);
			break;
		default: {
			/* A byte of some element. */
			if (s->headers_only)
				break;
			size_t len = s->maps[k].end - s->maps[k].start;
			size_t off = offsetof(struct rxe_queue_buf, data);

			if (len > off)
				((volatile uint8_t *)q)[off + (seed >> 20) % (len - off)] = seed >> 3;
			break;
		}
		}
		if ((seed >> 50) % 64 == 0)
			usleep(100);
	}
	return NULL;
}

/*
 * Crafted send WQEs on a clean UD loopback in RTS: a valid send through librxe gives a
 * template WQE (read back from the SQ), then one field is changed to name an object of
 * another PD, or to an impossible value, and the WQE is queued by hand and the doorbell
 * rung. The send must complete, in error. Returns 1 if the case passed.
 */
enum crafted {
	C_CONTROL, C_OTHER_AH, C_BAD_AH, C_OTHER_LKEY, C_NUM_SGE, C_LENGTH, C_OPCODE, C_NCASES
};
static const char *const crafted_name[] = {
	"the template itself (control)",
	"ah_num of the next AH (created in another PD)",
	"ah_num 0xffffffff",
	"sge lkey of an MR in another PD",
	"num_sge 1000",
	"dma.length 0x7fffffff over a 64-byte sge",
	"opcode 0x7f",
};

static void crafted_case(enum crafted c)
{
	struct lb l;
	struct ibv_pd *pd2 = NULL;
	struct ibv_ah *ah2 = NULL;
	struct ibv_mr *mr2 = NULL;
	struct uverbs_map nm[MAX_MAPS];
	struct rxe_queue_buf *sq = NULL;
	struct rxe_send_wqe *w;
	struct ibv_wc wc;
	char *buf2 = calloc(1, 4096);
	struct ibv_ah_attr aa = {
		.is_global = 1,
		.port_num = PORT,
		.grh = { .dgid = gid, .sgid_index = gid_index, .hop_limit = 64 },
	};
	int err, n, k, got, bad;
	uint32_t prod, mask, log2 = 0, template_ah;
	double end;

	at("scribble-qp: crafted WQE");
	maps_mark();
	err = lb_setup(&l, NULL);
	n = err ? 0 : maps_new(nm);
	/* The SQ: of this QP's queues (CQ, RQ, SQ), the one with the largest elements. */
	for (k = 0; k < n; k++) {
		struct rxe_queue_buf *q = (void *)nm[k].start;

		if (q->log2_elem_size > log2) {
			log2 = q->log2_elem_size;
			sq = q;
		}
	}
	if (!err && !(pd2 = ibv_alloc_pd(ctx)))
		err = errno;
	if (!err && !(ah2 = ibv_create_ah(pd2, &aa)))
		err = errno;
	if (!err && !(mr2 = ibv_reg_mr(pd2, buf2, 4096, IBV_ACCESS_LOCAL_WRITE)))
		err = errno;
	if (!err && (n != 3 || !sq)) {
		note("crafted: %d new mappings", n);
		err = ENOENT;
	}
	/* The template: one valid send (and its receive), which must work. */
	if (!err)
		err = lb_post(&l, 1, 1);
	if (!err && (poll_n(l.cq, 2, &bad) != 2 || bad))
		err = EIO;
	if (err) {
		ok(0, "crafted WQE (%s): setup: %s: %s", crafted_name[c], l.what, strerror(err));
		goto out;
	}
	mask = sq->index_mask;
	prod = __atomic_load_n(&sq->producer_index, __ATOMIC_ACQUIRE);
	w = (void *)(sq->data + ((size_t)(prod & mask) << log2));
	memcpy(w, sq->data + ((size_t)((prod - 1) & mask) << log2), (size_t)1 << log2);
	template_ah = w->wr.wr.ud.ah_num;
	/* The kernel updated the template's progress fields: reset them as librxe sets them. */
	w->wr.wr_id = 4242;
	w->dma.resid = w->dma.length;
	w->dma.cur_sge = 0;
	w->dma.sge_offset = 0;
	w->state = 0;
	w->status = 0;
	w->ssn++;
	switch (c) {
	case C_CONTROL: break;
	case C_OTHER_AH: w->wr.wr.ud.ah_num = template_ah + 1; break;
	case C_BAD_AH: w->wr.wr.ud.ah_num = 0xffffffff; break;
	case C_OTHER_LKEY: w->dma.sge[0].lkey = mr2->lkey; break;
	case C_NUM_SGE: w->dma.num_sge = 1000; break;
	case C_LENGTH: w->dma.length = w->dma.resid = 0x7fffffff; break;
	default: w->wr.opcode = 0x7f; break;
	}
	__atomic_store_n(&sq->producer_index, (prod + 1) & mask, __ATOMIC_RELEASE);
	err = doorbell(l.qp);
	/* Poll for the crafted WQE's completion. */
	got = 0;
	end = now_s() + 3;
	while (now_s() < end && !got) {
		int r = ibv_poll_cq(l.cq, 1, &wc);

		if (r > 0 && wc.wr_id == 4242)
			got = 1;
		else if (r > 0)
			note("crafted: another completion, wr_id %llu status %s",
			     (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
		else
			usleep(1000);
	}
	if (!got)
		ok(0, "crafted WQE, %s: no completion in 3 s (doorbell: %s; template ah_num %u)",
		   crafted_name[c], err_str(err), template_ah);
	else if (c == C_CONTROL)
		ok(wc.status == IBV_WC_SUCCESS, "crafted WQE, %s: completes successfully (%s)",
		   crafted_name[c], ibv_wc_status_str(wc.status));
	else
		ok(wc.status != IBV_WC_SUCCESS, "crafted WQE, %s: completes in error (%s)",
		   crafted_name[c], ibv_wc_status_str(wc.status));
out:
	if (mr2)
		ibv_dereg_mr(mr2);
	if (ah2)
		ibv_destroy_ah(ah2);
	if (pd2)
		ibv_dealloc_pd(pd2);
	lb_free(&l);
	free(buf2);
}

/*
 * A malformed SRQ receive WQE (num_sge 1000, queued by hand after a valid one from
 * librxe) taken by a datagram on a UD QP in loopback: it must complete, in error, not
 * vanish. Returns nothing; one TAP line.
 */
static void crafted_srq_case(void)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 16, .max_send_sge = 1 },
	};
	struct ibv_ah_attr aa = {
		.is_global = 1,
		.port_num = PORT,
		.grh = { .dgid = gid, .sgid_index = gid_index, .hop_limit = 64 },
	};
	struct uverbs_map nm[MAX_MAPS];
	struct rxe_queue_buf *q = NULL;
	struct rxe_recv_wqe *w;
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_srq *srq = NULL;
	struct ibv_qp *qp = NULL;
	struct ibv_mr *mr = NULL;
	struct ibv_ah *ah = NULL;
	char *buf = calloc(1, 8192);
	struct ibv_sge rs = { .length = 64 + 40 }, ss = { .length = 64 };
	struct ibv_recv_wr rw = { .wr_id = 4242, .sg_list = &rs, .num_sge = 1 }, *brw;
	struct ibv_send_wr sw = { .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND }, *bsw;
	struct ibv_wc wc;
	const char *what = "setup";
	uint32_t prod, log2;
	int n, got = 0;
	double end;

	at("scribble-qp: crafted SRQ WQE");
	if (!buf || !(pd = ibv_alloc_pd(ctx)) || !(cq = ibv_create_cq(ctx, 16, NULL, NULL, 0)) ||
	    !(mr = ibv_reg_mr(pd, buf, 8192, IBV_ACCESS_LOCAL_WRITE)) ||
	    !(ah = ibv_create_ah(pd, &aa)))
		goto fail;
	what = "create_srq";
	maps_mark();
	if (!(srq = ibv_create_srq(pd, &sa)))
		goto fail;
	/* The SRQ's queue: the one new mapping. */
	n = maps_new(nm);
	what = "the SRQ's mapping";
	if (n != 1)
		goto fail;
	q = (void *)nm[0].start;
	log2 = q->log2_elem_size;
	qa.send_cq = qa.recv_cq = cq;
	qa.srq = srq;
	what = "UD QP";
	if (!(qp = ibv_create_qp(pd, &qa)) || qp_to_init(qp) || qp_to_rts(qp))
		goto fail;
	rs.lkey = ss.lkey = mr->lkey;
	rs.addr = (uintptr_t)buf + 4096;
	ss.addr = (uintptr_t)buf;
	sw.send_flags = IBV_SEND_SIGNALED;
	sw.wr.ud.ah = ah;
	sw.wr.ud.remote_qpn = qp->qp_num;
	sw.wr.ud.remote_qkey = 0x11111111;
	/* The template: one valid receive and send, which must work. */
	what = "template receive and send";
	if (ibv_post_srq_recv(srq, &rw, &brw) || ibv_post_send(qp, &sw, &bsw))
		goto fail;
	if (poll_n(cq, 2, &n) != 2 || n)
		goto fail;
	prod = __atomic_load_n(&q->producer_index, __ATOMIC_ACQUIRE);
	w = (void *)(q->data + ((size_t)(prod & q->index_mask) << log2));
	memcpy(w, q->data + ((size_t)((prod - 1) & q->index_mask) << log2), (size_t)1 << log2);
	w->wr_id = 4243;
	w->dma.num_sge = 1000;
	__atomic_store_n(&q->producer_index, (prod + 1) & q->index_mask, __ATOMIC_RELEASE);
	what = "post_send";
	if (ibv_post_send(qp, &sw, &bsw))
		goto fail;
	end = now_s() + 3;
	while (now_s() < end && !got) {
		int r = ibv_poll_cq(cq, 1, &wc);

		if (r > 0 && wc.wr_id == 4243)
			got = 1;
		else if (r == 0)
			usleep(1000);
	}
	if (got)
		ok(wc.status != IBV_WC_SUCCESS, "crafted SRQ WQE, num_sge 1000: completes in error (%s)",
		   ibv_wc_status_str(wc.status));
	else
		ok(0, "crafted SRQ WQE, num_sge 1000: no completion in 3 s");
	goto out;
fail:
	ok(0, "crafted SRQ WQE: %s: %s", what, strerror(errno));
out:
	if (qp)
		ibv_destroy_qp(qp);
	if (srq)
		ibv_destroy_srq(srq);
	if (ah)
		ibv_destroy_ah(ah);
	if (mr)
		ibv_dereg_mr(mr);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	free(buf);
}

static void test_crafted(void)
{
	int c;

	if (!loopback_ok) {
		skip("crafted WQEs naming another PD's AH or MR, or impossible: no loopback traffic");
		return;
	}
	/* -H: only the WQEs naming other objects, which are well-formed. */
	for (c = 0; c < C_NCASES; c++)
		if (!headers_only || c <= C_OTHER_LKEY)
			crafted_case(c);
	if (!headers_only && have_srq)
		crafted_srq_case();
	still_works("crafted");
}

static void test_scribble_qp(void)
{
	static const enum ibv_qp_type types[] = { IBV_QPT_UD, IBV_QPT_RC, IBV_QPT_UC };
	struct uverbs_map nm[MAX_MAPS];
	struct ibv_pd *pd;
	struct ibv_srq *srq = NULL;
	int r, errors = 0, nomap = 0, refused = 0, rts = 0, threaded = 0;

	if (!have_qp) {
		skip("scribble-qp: the device has no QPs");
		return;
	}
	at("scribble-qp: setup");
	pd = ibv_alloc_pd(ctx);
	if (!pd) {
		ok(0, "alloc_pd: %s", strerror(errno));
		return;
	}
	for (r = 0; r < rounds; r++) {
		struct ibv_cq *cq;
		struct ibv_qp *qp;
		struct scribbler s = {};
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 2 } };
		int use_srq = have_srq && rng32() % 3 == 0, k, n, err, thread = 0;
		struct ibv_qp_init_attr qa = {
			.qp_type = types[rng32() % ARRAY_SIZE(types)],
			.sq_sig_all = rng32() % 2,
			.cap = { .max_send_wr = 1 + rng32() % 64, .max_send_sge = 1 + rng32() % 4,
				 .max_inline_data = rng32() % 2 ? 64 : 0 },
		};

		at("scribble-qp: create_cq");
		maps_mark();
		cq = ibv_create_cq(ctx, 1 + rng32() % 64, NULL, NULL, 0);
		if (!cq) {
			note("round %d: create_cq: %s", r, strerror(errno));
			errors++;
			continue;
		}
		if (use_srq) {
			at("scribble-qp: create_srq");
			srq = ibv_create_srq(pd, &sa);
			if (!srq) {
				note("round %d: create_srq: %s", r, strerror(errno));
				errors++;
				use_srq = 0;
			}
		}
		qa.send_cq = qa.recv_cq = cq;
		qa.srq = use_srq ? srq : NULL;
		if (!use_srq) {
			qa.cap.max_recv_wr = 1 + rng32() % 64;
			qa.cap.max_recv_sge = 1 + rng32() % 4;
		}
		at("scribble-qp: create_qp");
		qp = ibv_create_qp(pd, &qa);
		if (!qp) {
			note("round %d: create_qp type %d: %s", r, qa.qp_type, strerror(errno));
			errors++;
			goto destroy_cq;
		}
		/* Every queue of this round: CQ, SRQ, SQ, RQ. */
		n = maps_new(nm);
		if (n < 2 || n > 8) {
			nomap++;
			n = 0;
		}
		s.n = n;
		s.headers_only = headers_only;
		for (k = 0; k < n; k++) {
			struct rxe_queue_buf *q = (void *)nm[k].start;

			s.maps[k] = nm[k];
			s.log2[k] = q->log2_elem_size;
		}
		for (k = 0; k < n; k++) {
			struct rxe_queue_buf *q = (void *)nm[k].start;
			size_t len = nm[k].end - nm[k].start;
			uint32_t mask = q->index_mask;

			/* Which queue is which does not matter: each gets both kinds. */
			if (headers_only)
				;
			else if (rng32() % 2)
				garbage_send_wqes(q, len, s.log2[k]);
			else
				garbage_recv_wqes(q, len, s.log2[k]);
			advance_user_producer(q, mask);
			if (rng32() % 2)
				scribble_header(q);
		}
		at("scribble-qp: modify_qp");
		err = qp_to_init(qp);
		if (!err && rng32() % 4)
			err = qp_to_rts(qp);
		if (err)
			refused++;
		else
			rts++;
		if (n && !no_thread && rng32() % 2) {
			at("scribble-qp: pthread_create");
			thread = !pthread_create(&s.thread, NULL, scribble_thread, &s);
			threaded += thread;
		}
		for (k = 0; k < 1 + (int)(rng32() % 4); k++) {
			at("scribble-qp: doorbell");
			if (doorbell(qp))
				refused++;
			if (rng32() % 2)
				usleep(rng32() % 3000);
		}
		at("scribble-qp: modify_qp to ERR");
		if (qp_to(qp, rng32() % 2 ? IBV_QPS_ERR : IBV_QPS_SQD))
			refused++;
		if (doorbell(qp))
			refused++;
		if (rng32() % 2)
			usleep(rng32() % 3000);
		if (thread) {
			atomic_store(&s.stop, 1);
			pthread_join(s.thread, NULL);
		}
		/* After the thread: the resize unmaps the old queue. */
		if (rng32() % 4 == 0) {
			at("scribble-qp: resize the scribbled CQ");
			if (ibv_resize_cq(cq, 1 + rng32() % 128))
				refused++;
		}
		at("scribble-qp: destroy_qp");
		err = ibv_destroy_qp(qp);
		if (err) {
			note("round %d: destroy_qp: %s", r, strerror(err));
			errors++;
		}
destroy_cq:
		if (srq) {
			at("scribble-qp: destroy_srq");
			err = ibv_destroy_srq(srq);
			if (err) {
				note("round %d: destroy_srq: %s", r, strerror(err));
				errors++;
			}
			srq = NULL;
		}
		at("scribble-qp: destroy_cq");
		err = ibv_destroy_cq(cq);
		if (err) {
			note("round %d: destroy_cq: %s", r, strerror(err));
			errors++;
		}
	}
	ok(!ibv_dealloc_pd(pd), "scribble-qp: dealloc_pd");
	note("scribble-qp: %d rounds, %d reached RTS or INIT, %d with a scribbling thread, "
	     "%d calls refused, %d without the expected mappings", rounds, rts, threaded,
	     refused, nomap);
	ok(nomap < rounds, "scribble-qp: the queue mappings were found");
	ok(!errors, "scribble-qp: every CQ, SRQ and QP created and destroyed (%d failures)",
	   errors);
	still_works("scribble-qp");
}

/* flush-spin */

struct spinner {
	pthread_t thread;
	atomic_int stop;
	struct uverbs_map maps[8];
	int n;
};

/* Keeps every queue full from the kernel's point of view, for at most 30 s. */
static void *spin_thread(void *arg)
{
	struct spinner *s = arg;
	double end = now_s() + 30;
	unsigned long i = 0;

	while (!atomic_load(&s->stop) && (++i % 4096 || now_s() < end)) {
		int k;

		for (k = 0; k < s->n; k++) {
			struct rxe_queue_buf *q = (void *)s->maps[k].start;
			uint32_t cons = __atomic_load_n(&q->consumer_index, __ATOMIC_ACQUIRE);

			__atomic_store_n(&q->producer_index, cons - 1, __ATOMIC_RELEASE);
		}
	}
	return NULL;
}

/* Runs one verb step of flush-spin and checks how long it took. */
static int timed(const char *what, int use_srq, int (*fn)(struct ibv_qp *, int), struct ibv_qp *qp,
		 int arg)
{
	double t = now_s();
	int err;

	at(what);
	err = fn(qp, arg);
	t = now_s() - t;
	ok(t < 10 * time_scale(), "flush-spin (%s): %s returns in %.3f s (%s)",
	   use_srq ? "SRQ" : "RQ", what, t, err_str(err));
	return err;
}

static int spin_modify(struct ibv_qp *qp, int state)
{
	return qp_to(qp, state);
}

static int spin_init(struct ibv_qp *qp, int unused)
{
	return qp_to_init(qp);
}

static int spin_destroy(struct ibv_qp *qp, int unused)
{
	return ibv_destroy_qp(qp);
}

static void test_flush_spin(void)
{
	struct uverbs_map nm[MAX_MAPS];
	struct ibv_pd *pd;
	int r;

	if (!have_qp || no_thread) {
		skip("flush-spin: %s", no_thread ? "-T: no scribbling thread" : "the device has no QPs");
		return;
	}
	pd = ibv_alloc_pd(ctx);
	if (!pd) {
		ok(0, "flush-spin: alloc_pd: %s", strerror(errno));
		return;
	}
	for (r = 0; r < 2 + have_srq; r++) {
		int use_srq = r == 2, k, err;
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16384, .max_sge = 1 } };
		/* Large queues: a lap of the kernel's loop takes longer than the thread's. */
		struct ibv_qp_init_attr qa = {
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 16384, .max_send_sge = 1, .max_recv_wr = 16384,
				 .max_recv_sge = 1 },
		};
		struct spinner s = {};
		struct ibv_srq *srq = NULL;
		struct ibv_cq *cq;
		struct ibv_qp *qp;

		at("flush-spin: setup");
		maps_mark();
		cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
		if (!cq) {
			ok(0, "flush-spin: create_cq: %s", strerror(errno));
			break;
		}
		if (use_srq && !(srq = ibv_create_srq(pd, &sa))) {
			ok(0, "flush-spin: create_srq: %s", strerror(errno));
			ibv_destroy_cq(cq);
			break;
		}
		qa.send_cq = qa.recv_cq = cq;
		qa.srq = srq;
		qp = ibv_create_qp(pd, &qa);
		if (!qp) {
			ok(0, "flush-spin: create_qp: %s", strerror(errno));
			if (srq)
				ibv_destroy_srq(srq);
			ibv_destroy_cq(cq);
			break;
		}
		s.n = maps_new(nm);
		if (s.n > 8)
			s.n = 8;
		/*
		 * The thread writes through mappings of its own (the same pages), which stay
		 * valid when destroying the QP makes the provider unmap its own.
		 */
		for (k = 0; k < s.n; k++) {
			size_t len = nm[k].end - nm[k].start;
			void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
				       ctx->cmd_fd, nm[k].offset);

			s.maps[k] = nm[k];
			if (p == MAP_FAILED) {
				ok(0, "flush-spin: second mapping of a queue: %s", strerror(errno));
				s.n = k;
				break;
			}
			s.maps[k].start = (uintptr_t)p;
			s.maps[k].end = (uintptr_t)p + len;
		}
		ok(s.n == 3, "flush-spin: the CQ's and QP's queues are mapped (%d)", s.n);
		err = qp_to_init(qp);
		if (!err)
			err = qp_to_rts(qp);
		ok(!err, "flush-spin: QP to RTS: %s", err_str(err));
		if (pthread_create(&s.thread, NULL, spin_thread, &s)) {
			ok(0, "flush-spin: pthread_create");
			s.n = 0;
		}
		/* r 0: ERR then RESET; r 1: straight to RESET; then INIT, ERR and destroy. */
		usleep(1000);
		if (r != 1)
			timed("modify_qp to ERR", use_srq, spin_modify, qp, IBV_QPS_ERR);
		timed("modify_qp to RESET", use_srq, spin_modify, qp, IBV_QPS_RESET);
		timed("modify_qp to INIT", use_srq, spin_init, qp, 0);
		timed("modify_qp to ERR again", use_srq, spin_modify, qp, IBV_QPS_ERR);
		err = timed("destroy_qp", use_srq, spin_destroy, qp, 0);
		if (err)
			ibv_destroy_qp(qp);
		atomic_store(&s.stop, 1);
		if (s.n)
			pthread_join(s.thread, NULL);
		for (k = 0; k < s.n; k++)
			munmap((void *)s.maps[k].start, s.maps[k].end - s.maps[k].start);
		at("flush-spin: teardown");
		if (srq)
			ok(!ibv_destroy_srq(srq), "flush-spin: destroy_srq");
		ok(!ibv_destroy_cq(cq), "flush-spin: destroy_cq");
	}
	ok(!ibv_dealloc_pd(pd), "flush-spin: dealloc_pd");
	still_works("flush-spin");
}

/* rewrite-wqe */

#define RW_N 6
#define RW_LEN 3000

/* QP through INIT and RTR to RTS, connected to DEST; the responder side waits little on RNR. */
static int rw_connect(struct ibv_qp *qp, uint32_t dest)
{
	struct rc_conn c = {
		.port = PORT, .sgid_index = gid_index, .dgid = gid, .mtu = IBV_MTU_1024,
		.dest_qpn = dest,
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC,
		.rd_atomic = 1, .min_rnr_timer = 1, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7, /* for ever */
	};

	return connect_rc_qp(qp, &c, NULL);
}

/* The send WQE at ring position I of the SQ mapping Q. */
static struct rxe_send_wqe *rw_wqe(struct rxe_queue_buf *q, uint32_t i)
{
	return (void *)((char *)q->data + ((size_t)(i & q->index_mask) << q->log2_elem_size));
}

/*
 * RC QP A sends RW_N SENDs of RW_LEN bytes to RC QP B, which has no receive posted: A
 * retransmits after every RNR NAK. Meanwhile the test rewrites posted WQEs in A's SQ
 * mapping: WQE 1 shrinks (SGE and dma lengths, consistently), WQE 3 becomes an RDMA WRITE
 * to a valid buffer of B. Then B posts receives. Each WQE must complete once, in order,
 * either as the SEND of RW_LEN bytes it was posted as, or in a local error followed by
 * flushes; B must receive only whole RW_LEN messages.
 */
static void test_rewrite_wqe(void)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct uverbs_map nm[MAX_MAPS];
	struct rxe_queue_buf *sq = NULL;
	struct ibv_cq *cqa = NULL, *cqb = NULL;
	struct ibv_qp *qpa = NULL, *qpb = NULL;
	struct ibv_mr *mra = NULL, *mrb = NULL;
	struct ibv_pd *pd;
	char *bufa = NULL, *bufb = NULL;
	int i, k, n, err, got = 0, gotb = 0, errored = 0, bad = 0;
	struct ibv_wc wc[16];
	double end;

	if (!have_qp || !have_mr || gid_index < 0) {
		skip("rewrite-wqe: the device has no QPs, MRs or GID");
		return;
	}
	at("rewrite-wqe: setup");
	pd = ibv_alloc_pd(ctx);
	bufa = calloc(1, RW_N * 4096);
	bufb = calloc(1, RW_N * 4096 + 4096);
	if (!pd || !bufa || !bufb) {
		ok(0, "rewrite-wqe: alloc_pd, buffers");
		goto out;
	}
	memset(bufa, 0x5a, RW_N * 4096);
	mra = ibv_reg_mr(pd, bufa, RW_N * 4096, IBV_ACCESS_LOCAL_WRITE);
	mrb = ibv_reg_mr(pd, bufb, RW_N * 4096 + 4096,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	cqa = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	cqb = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!mra || !mrb || !cqa || !cqb) {
		ok(0, "rewrite-wqe: reg_mr, create_cq: %s", strerror(errno));
		goto out;
	}
	qa.send_cq = qa.recv_cq = cqb;
	qpb = ibv_create_qp(pd, &qa);
	maps_mark();
	qa.send_cq = qa.recv_cq = cqa;
	qpa = ibv_create_qp(pd, &qa);
	if (!qpa || !qpb) {
		ok(0, "rewrite-wqe: create_qp: %s", strerror(errno));
		goto out;
	}
	n = maps_new(nm);
	err = rw_connect(qpa, qpb->qp_num);
	if (!err)
		err = rw_connect(qpb, qpa->qp_num);
	ok(!err, "rewrite-wqe: QPs to RTS: %s", err_str(err));
	if (err)
		goto out;
	at("rewrite-wqe: post");
	for (i = 0; i < RW_N; i++) {
		struct ibv_sge s = { .addr = (uintptr_t)bufa + i * 4096, .length = RW_LEN,
				     .lkey = mra->lkey };
		struct ibv_send_wr w = { .wr_id = i, .sg_list = &s, .num_sge = 1,
					 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *bw;

		if ((err = ibv_post_send(qpa, &w, &bw)))
			break;
	}
	ok(!err, "rewrite-wqe: post %d SENDs: %s", RW_N, err_str(err));
	/* A's SQ: the new mapping whose producer index counts the sends. */
	for (k = 0; k < n; k++) {
		struct rxe_queue_buf *q = (void *)nm[k].start;

		if (__atomic_load_n(&q->producer_index, __ATOMIC_ACQUIRE) == RW_N &&
		    ((size_t)1 << q->log2_elem_size) >= sizeof(struct rxe_send_wqe) &&
		    offsetof(struct rxe_queue_buf, data) +
				    ((size_t)(q->index_mask + 1) << q->log2_elem_size) <=
			    nm[k].end - nm[k].start)
			sq = q;
	}
	ok(sq != NULL, "rewrite-wqe: A's SQ mapping found (%d new mappings)", n);
	if (err || !sq)
		goto out;
	usleep(200000); /* the first sends and their RNR retries */
	at("rewrite-wqe: rewrite");
	{
		struct rxe_send_wqe *w1 = rw_wqe(sq, 1), *w3 = rw_wqe(sq, 3);

		w1->dma.sge[0].length = 100;
		w1->dma.length = 100;
		w1->dma.resid = 100;
		w3->wr.wr.rdma.remote_addr = (uintptr_t)bufb + RW_N * 4096;
		w3->wr.wr.rdma.rkey = mrb->rkey;
		__atomic_store_n(&w3->wr.opcode, IBV_WR_RDMA_WRITE, __ATOMIC_RELEASE);
	}
	usleep(200000); /* retries of the rewritten WQEs */
	at("rewrite-wqe: receive");
	for (i = 0; i < RW_N && !err; i++) {
		struct ibv_sge s = { .addr = (uintptr_t)bufb + i * 4096, .length = 4096,
				     .lkey = mrb->lkey };
		struct ibv_recv_wr r = { .wr_id = 100 + i, .sg_list = &s, .num_sge = 1 }, *br;

		err = ibv_post_recv(qpb, &r, &br);
	}
	ok(!err, "rewrite-wqe: B posts %d receives: %s", RW_N, err_str(err));
	at("rewrite-wqe: poll");
	end = now_s() + 20;
	while (now_s() < end && got < RW_N + 1) {
		int r = ibv_poll_cq(cqa, 16, wc);

		for (k = 0; k < r; k++, got++) {
			const struct ibv_wc *c = &wc[k];
			int good;

			note("A completion %d: wr_id %llu %s opcode %d byte_len %u", got,
			     (unsigned long long)c->wr_id, ibv_wc_status_str(c->status),
			     c->opcode, c->byte_len);
			if (c->wr_id != (uint64_t)got)
				good = 0;
			else if (errored)
				good = c->status == IBV_WC_WR_FLUSH_ERR;
			else if (c->status == IBV_WC_SUCCESS)
				good = c->opcode == IBV_WC_SEND && c->byte_len == RW_LEN;
			else
				good = c->status == IBV_WC_LOC_QP_OP_ERR ||
				       c->status == IBV_WC_LOC_LEN_ERR;
			errored |= c->status != IBV_WC_SUCCESS;
			bad += !good;
		}
		if (got == RW_N && end > now_s() + 0.5)
			end = now_s() + 0.5; /* anything more is too much */
		if (r <= 0)
			usleep(1000);
	}
	ok(got == RW_N, "rewrite-wqe: each of the %d WQEs completes once (%d completions)", RW_N,
	   got);
	ok(!bad, "rewrite-wqe: in order, as posted (SEND of %d bytes) or a local error then "
		 "flushes (%d wrong)", RW_LEN, bad);
	bad = 0;
	while ((k = ibv_poll_cq(cqb, 1, wc)) > 0) {
		if (wc[0].status == IBV_WC_SUCCESS) {
			note("B receive: wr_id %llu byte_len %u", (unsigned long long)wc[0].wr_id,
			     wc[0].byte_len);
			bad += wc[0].byte_len != RW_LEN;
		}
		gotb++;
	}
	ok(!bad, "rewrite-wqe: B receives only whole messages (%d completions, %d wrong)", gotb,
	   bad);
out:
	at("rewrite-wqe: teardown");
	if (qpa)
		ibv_destroy_qp(qpa);
	if (qpb)
		ibv_destroy_qp(qpb);
	if (cqa)
		ibv_destroy_cq(cqa);
	if (cqb)
		ibv_destroy_cq(cqb);
	if (mra)
		ibv_dereg_mr(mra);
	if (mrb)
		ibv_dereg_mr(mrb);
	if (pd)
		ibv_dealloc_pd(pd);
	free(bufa);
	free(bufb);
	still_works("rewrite-wqe");
}

/* rnr-forever */

#define RNR_N 8
#define RNR_SECS 22

/*
 * One round of rnr-forever: RC QP A sends RNR_N SENDs to RC QP B, which never posts a
 * receive. A has rnr_retry 7 (retry for ever) and B asks for the shortest RNR timer
 * (0.01 ms), so A retransmits as fast as its timer allows for SECS seconds, longer than
 * the soft lockup detector's 20 s when SECS is RNR_SECS. Nothing may complete, the
 * process must keep running (no gap of a second between its 100 ms naps) and A must
 * still be in RTS. Then, if VIA_ERR, A goes to ERR and every WQE must flush within 1 s;
 * destroying A and B must each return within 1 s.
 */
static void rnr_round(int secs, int via_err)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	const char *how = via_err ? "to ERR" : "destroyed";
	struct ibv_cq *cqa = NULL, *cqb = NULL;
	struct ibv_qp *qpa = NULL, *qpb = NULL;
	struct ibv_mr *mr = NULL;
	struct ibv_pd *pd;
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr ia;
	struct ibv_wc wc[16];
	long long rnr0, rnr1;
	double t, end, last, gap = 0;
	int i, k, err, got = 0, flushed = 0;
	char *buf;

	at("rnr-forever: setup");
	pd = ibv_alloc_pd(ctx);
	buf = calloc(1, RNR_N * 4096);
	if (!pd || !buf) {
		ok(0, "rnr-forever (%s): alloc_pd, buffer", how);
		goto out;
	}
	mr = ibv_reg_mr(pd, buf, RNR_N * 4096, IBV_ACCESS_LOCAL_WRITE);
	cqa = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	cqb = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!mr || !cqa || !cqb) {
		ok(0, "rnr-forever (%s): reg_mr, create_cq: %s", how, strerror(errno));
		goto out;
	}
	qa.send_cq = qa.recv_cq = cqa;
	qpa = ibv_create_qp(pd, &qa);
	qa.send_cq = qa.recv_cq = cqb;
	qpb = ibv_create_qp(pd, &qa);
	if (!qpa || !qpb) {
		ok(0, "rnr-forever (%s): create_qp: %s", how, strerror(errno));
		goto out;
	}
	err = rw_connect(qpa, qpb->qp_num);
	if (!err)
		err = rw_connect(qpb, qpa->qp_num);
	for (i = 0; i < RNR_N && !err; i++) {
		struct ibv_sge s = { .addr = (uintptr_t)buf + i * 4096, .length = 3000,
				     .lkey = mr->lkey };
		struct ibv_send_wr w = { .wr_id = i, .sg_list = &s, .num_sge = 1,
					 .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *bw;

		err = ibv_post_send(qpa, &w, &bw);
	}
	ok(!err, "rnr-forever (%s): QPs to RTS, %d SENDs posted: %s", how, RNR_N, err_str(err));
	if (err)
		goto out;
	at("rnr-forever: retrying");
	rnr0 = hw_counter(devname, PORT, "rcvd_rnr_err");
	last = now_s();
	end = last + secs;
	while ((t = now_s()) < end) {
		if (t - last > gap)
			gap = t - last;
		last = t;
		k = ibv_poll_cq(cqa, 16, wc);
		got += k > 0 ? k : 0;
		usleep(100000);
	}
	rnr1 = hw_counter(devname, PORT, "rcvd_rnr_err");
	ok(!got, "rnr-forever (%s): nothing completes in %d s of RNR retries (%d completions)",
	   how, secs, got);
	ok(gap < time_scale(), "rnr-forever (%s): the process ran every 100 ms (longest gap %.3f s)",
	   how, gap);
	ok(rnr0 < 0 || rnr1 - rnr0 >= secs,
	   "rnr-forever (%s): A kept retrying (rcvd_rnr_err grew by %lld)", how, rnr1 - rnr0);
	err = ibv_query_qp(qpa, &attr, IBV_QP_STATE, &ia);
	ok(!err && attr.qp_state == IBV_QPS_RTS, "rnr-forever (%s): A is still in RTS (%s, state %d)",
	   how, err_str(err), err ? -1 : (int)attr.qp_state);
	if (via_err) {
		at("rnr-forever: to ERR");
		t = now_s();
		err = qp_to(qpa, IBV_QPS_ERR);
		t = now_s() - t;
		ok(!err && t < time_scale(), "rnr-forever (%s): modify_qp to ERR returns in %.3f s (%s)",
		   how, t, err_str(err));
		end = now_s() + time_scale();
		got = 0;
		while (got < RNR_N && now_s() < end) {
			k = ibv_poll_cq(cqa, 16, wc);
			for (i = 0; i < k; i++, got++)
				flushed += wc[i].status == IBV_WC_WR_FLUSH_ERR &&
					   wc[i].wr_id == (uint64_t)got;
			if (k <= 0)
				usleep(1000);
		}
		ok(got == RNR_N && flushed == RNR_N,
		   "rnr-forever (%s): every SEND flushes in order within 1 s (%d completions, %d "
		   "flushed)", how, got, flushed);
	}
	at("rnr-forever: destroy");
	t = now_s();
	err = ibv_destroy_qp(qpa);
	t = now_s() - t;
	qpa = NULL;
	ok(!err && t < time_scale(), "rnr-forever (%s): destroying A returns in %.3f s (%s)", how, t,
	   err_str(err));
	t = now_s();
	err = ibv_destroy_qp(qpb);
	t = now_s() - t;
	qpb = NULL;
	ok(!err && t < time_scale(), "rnr-forever (%s): destroying B returns in %.3f s (%s)", how, t,
	   err_str(err));
out:
	at("rnr-forever: teardown");
	if (qpa)
		ibv_destroy_qp(qpa);
	if (qpb)
		ibv_destroy_qp(qpb);
	if (cqa)
		ibv_destroy_cq(cqa);
	if (cqb)
		ibv_destroy_cq(cqb);
	if (mr)
		ibv_dereg_mr(mr);
	if (pd)
		ibv_dealloc_pd(pd);
	free(buf);
}

static void test_rnr_forever(void)
{
	if (!have_qp || !have_mr || gid_index < 0) {
		skip("rnr-forever: the device has no QPs, MRs or GID");
		return;
	}
	rnr_round(RNR_SECS, 1);
	rnr_round(3, 0);
	still_works("rnr-forever");
}

/* raw */

static int try_mmap(size_t len, off_t off, int prot, int flags, void **p)
{
	*p = mmap(NULL, len, prot, flags, ctx->cmd_fd, off);
	if (*p == MAP_FAILED) {
		*p = NULL;
		return errno;
	}
	return 0;
}

static void test_raw(void)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_create_cq cmd;
	} cc = {};
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_resize_cq cmd;
	} rc = {};
	struct {
		struct ib_uverbs_create_cq_resp base;
		uint64_t driver[8];
	} cresp;
	struct {
		struct ib_uverbs_resize_cq_resp base;
		uint64_t driver[8];
	} rresp;
	struct uverbs_map nm[MAX_MAPS];
	struct ibv_cq *cq;
	int err, cqe, n, again_before = 0;
	size_t len = 0;
	void *p;

	at("raw: create_cq short response");
	cc.hdr.command = IB_USER_VERBS_CMD_CREATE_CQ;
	cc.hdr.in_words = sizeof(cc) / 4;
	cc.hdr.out_words = sizeof(cresp.base) / 4; /* no room for rxe_create_cq_resp */
	cc.cmd.response = (uintptr_t)&cresp;
	cc.cmd.cqe = 16;
	cc.cmd.comp_channel = -1;
	memset(&cresp, 0, sizeof(cresp));
	err = uverbs_write(ctx, &cc, sizeof(cc));
	ok(err != 0, "CREATE_CQ with no room for the driver's response refused (%s)", err_str(err));
	if (!err)
		raw_destroy_cq(cresp.base.cq_handle);
	/* Half the driver's response. */
	cc.hdr.out_words = (sizeof(cresp.base) + sizeof(struct rxe_create_cq_resp) / 2) / 4;
	err = uverbs_write(ctx, &cc, sizeof(cc));
	ok(err != 0, "CREATE_CQ with half the room for the driver's response refused (%s)",
	   err_str(err));
	if (!err)
		raw_destroy_cq(cresp.base.cq_handle);
	/* Enough room, and a response pointer that is not writable. */
	cc.hdr.out_words = sizeof(cresp) / 4;
	cc.cmd.response = (uintptr_t)"read-only string, long enough for a response........";
	err = uverbs_write(ctx, &cc, sizeof(cc));
	ok(err != 0, "CREATE_CQ with a read-only response buffer refused (%s)", err_str(err));

	/*
	 * A failed resize leaves the CQ as it was. Seen from here: the queue's mmap offset
	 * still maps (or not) as it did before, and with traffic, completions still arrive
	 * in the queue librxe has mapped.
	 */
	at("raw: resize_cq short response");
	maps_mark();
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!cq) {
		ok(0, "create_cq: %s", strerror(errno));
		return;
	}
	cqe = cq->cqe;
	n = maps_new(nm);
	if (n == 1) {
		len = nm[0].end - nm[0].start;
		err = try_mmap(len, nm[0].offset, PROT_READ | PROT_WRITE, MAP_SHARED, &p);
		again_before = err;
		if (p)
			munmap(p, len);
	}
	rc.hdr.command = IB_USER_VERBS_CMD_RESIZE_CQ;
	rc.hdr.in_words = sizeof(rc) / 4;
	rc.hdr.out_words = sizeof(rresp.base) / 4;
	rc.cmd.response = (uintptr_t)&rresp;
	rc.cmd.cq_handle = cq->handle;
	rc.cmd.cqe = 200;
	err = uverbs_write(ctx, &rc, sizeof(rc));
	ok(err != 0, "RESIZE_CQ with no room for the driver's response refused (%s)", err_str(err));
	if (n == 1) {
		err = try_mmap(len, nm[0].offset, PROT_READ | PROT_WRITE, MAP_SHARED, &p);
		if (p)
			munmap(p, len);
		ok(!err == !again_before, "after the failed resize, mmap of the CQ queue's offset "
		   "0x%llx behaves as before (%s before, %s after)", nm[0].offset,
		   err_str(again_before), err_str(err));
	} else {
		ok(0, "the CQ's queue mapping: %d new mappings", n);
	}
	if (loopback_ok) {
		/* librxe still uses the old mapping: completions must arrive there. */
		struct lb l;
		int bad, got;

		err = lb_setup(&l, cq);
		if (!err)
			err = lb_post(&l, 3, 1);
		got = err ? 0 : poll_n(cq, 6, &bad);
		ok(!err && got == 6 && !bad,
		   "after the failed resize the CQ still delivers completions (%s%s%s, %d of 6)",
		   err ? l.what : "", err ? ": " : "", err_str(err), got);
		l.cq = NULL;
		lb_free(&l);
	} else {
		skip("the CQ still works after a failed resize: no loopback traffic");
	}
	err = ibv_resize_cq(cq, 64);
	ok(!err, "then resize_cq through the provider works (%s; cqe %d -> %d)", err_str(err), cqe,
	   cq->cqe);
	ok(!ibv_destroy_cq(cq), "destroy it");

	/* modify_srq: the driver writes the new queue's mminfo to mmap_info_addr. */
	if (have_srq) {
		struct ibv_pd *pd = ibv_alloc_pd(ctx);
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
		struct ibv_srq *srq = pd ? ibv_create_srq(pd, &sa) : NULL;
		/* 0 is not among them: rxe takes it as "do not tell me" and resizes. */
		static const uint64_t addrs[] = { 0x10, 0xffff888000000000ull, ~0ull };
		struct {
			struct ib_uverbs_cmd_hdr hdr;
			struct ib_uverbs_modify_srq cmd;
			struct rxe_modify_srq_cmd drv;
		} ms = {};
		unsigned int i;

		if (!srq) {
			ok(0, "create_srq: %s", strerror(errno));
		} else {
			at("raw: modify_srq");
			ms.hdr.command = IB_USER_VERBS_CMD_MODIFY_SRQ;
			ms.hdr.in_words = sizeof(ms) / 4;
			ms.cmd.srq_handle = srq->handle;
			ms.cmd.attr_mask = IBV_SRQ_MAX_WR;
			for (i = 0; i <= ARRAY_SIZE(addrs); i++) {
				ms.cmd.max_wr = 32 + i;
				ms.drv.mmap_info_addr = i < ARRAY_SIZE(addrs) ? addrs[i] :
					(uintptr_t)"read-only string for an mminfo";
				err = uverbs_write(ctx, &ms, sizeof(ms));
				ok(err != 0, "MODIFY_SRQ max_wr with mmap_info_addr 0x%llx refused (%s)",
				   (unsigned long long)ms.drv.mmap_info_addr, err_str(err));
			}
			/* Without room for the driver's command. */
			ms.hdr.in_words = (sizeof(ms) - sizeof(ms.drv)) / 4;
			err = uverbs_write(ctx, &ms, sizeof(ms) - sizeof(ms.drv));
			ok(err != 0, "MODIFY_SRQ max_wr without the driver's command refused (%s)",
			   err_str(err));
			sa.attr.max_wr = 64;
			err = ibv_modify_srq(srq, &sa.attr, IBV_SRQ_MAX_WR);
			ok(!err, "then modify_srq through the provider works (%s)", err_str(err));
			ok(!ibv_destroy_srq(srq), "destroy_srq");
		}
		if (pd)
			ibv_dealloc_pd(pd);
	} else {
		skip("MODIFY_SRQ with bad mmap_info_addr: no SRQs");
	}
	still_works("raw");
}

/* mmap */

static void test_mmap(void)
{
	struct uverbs_map nm[MAX_MAPS];
	struct ibv_cq *cq;
	size_t len;
	off_t off;
	void *p;
	int err, n, k;
	long page = sysconf(_SC_PAGESIZE);

	at("mmap");
	for (k = 0; k < 8; k++) {
		off_t o = k == 0 ? 0 : k == 1 ? (off_t)page * 1000000 :
			  (off_t)(rng32() % 100000) * page;

		err = try_mmap(page, o, PROT_READ | PROT_WRITE, MAP_SHARED, &p);
		ok(err != 0, "mmap at unknown offset 0x%llx refused (%s)", (unsigned long long)o,
		   err_str(err));
		if (p)
			munmap(p, page);
	}
	maps_mark();
	cq = ibv_create_cq(ctx, 100, NULL, NULL, 0);
	if (!cq) {
		ok(0, "create_cq: %s", strerror(errno));
		return;
	}
	n = maps_new(nm);
	if (n != 1) {
		ok(0, "the CQ's mapping: %d new mappings", n);
		ibv_destroy_cq(cq);
		return;
	}
	len = nm[0].end - nm[0].start;
	off = nm[0].offset;
	note("CQ queue: %zu bytes at offset 0x%llx", len, (unsigned long long)off);

	err = try_mmap(len + page, off, PROT_READ | PROT_WRITE, MAP_SHARED, &p);
	ok(err != 0, "mmap of the CQ queue one page too long refused (%s)", err_str(err));
	if (p)
		munmap(p, len + page);
	err = try_mmap(len * 16, off, PROT_READ | PROT_WRITE, MAP_SHARED, &p);
	ok(err != 0, "mmap of the CQ queue 16 times too long refused (%s)", err_str(err));
	if (p)
		munmap(p, len * 16);
	if (len > (size_t)page) {
		err = try_mmap(len - page, off + page, PROT_READ | PROT_WRITE, MAP_SHARED, &p);
		note("mmap of the CQ queue from its second page: %s", err_str(err));
		if (p)
			munmap(p, len - page);
	}
	err = try_mmap(len, off, PROT_READ | PROT_WRITE, MAP_PRIVATE, &p);
	note("MAP_PRIVATE mmap of the CQ queue: %s", err_str(err));
	if (p)
		munmap(p, len);
	err = try_mmap(len, off, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_SHARED, &p);
	note("PROT_EXEC mmap of the CQ queue: %s", err_str(err));
	if (p)
		munmap(p, len);

	/* A second mapping (rxe refuses it, rdma_user_mmap_entry allows it). */
	err = try_mmap(len, off, PROT_READ | PROT_WRITE, MAP_SHARED, &p);
	note("second mapping of the CQ queue: %s", err_str(err));
	if (p) {
		void *q = mremap(p, len, len + page, MREMAP_MAYMOVE);

		ok(q == MAP_FAILED, "mremap of the queue mapping to a larger size refused (%s)",
		   q == MAP_FAILED ? strerror(errno) : "grown");
		if (q != MAP_FAILED)
			p = q, len += page;
		/* Keep it past the CQ: the pages must stay valid, the kernel must not care. */
		at("mmap: destroy_cq with a second mapping");
		ok(!ibv_destroy_cq(cq), "destroy_cq with a second mapping of its queue alive");
		cq = NULL;
		memset(p, 0xa5, len);
		for (k = 0; k < 100; k++)
			scribble_header(p);
		ok(1, "writing the mapping of a destroyed CQ's queue did not fault");
		munmap(p, len);
	}
	if (cq)
		ok(!ibv_destroy_cq(cq), "destroy_cq");
	/* The offset of a destroyed CQ. */
	err = try_mmap(len, off, PROT_READ | PROT_WRITE, MAP_SHARED, &p);
	ok(err != 0, "mmap of a destroyed CQ's queue refused (%s)", err_str(err));
	if (p)
		munmap(p, len);

	/* fork with a queue mapped: the child writes into it and exits. */
	maps_mark();
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (cq && maps_new(nm) == 1) {
		pid_t pid = fork();

		if (pid == 0) {
			/* The mapping may not exist in the child (VM_DONTCOPY); do not touch it
			 * unless it does. */
			struct uverbs_map cm[MAX_MAPS];
			int cn = uverbs_maps(cm, MAX_MAPS), j;

			for (j = 0; j < cn; j++)
				if (cm[j].start == nm[0].start)
					scribble_header((void *)cm[j].start);
			_exit(0);
		}
		if (pid > 0) {
			int st;

			waitpid(pid, &st, 0);
			ok(WIFEXITED(st) && !WEXITSTATUS(st), "a forked child with the queue mapped "
			   "exits normally (status 0x%x)", st);
		}
	}
	if (cq)
		ok(!ibv_destroy_cq(cq), "destroy_cq after fork");
	still_works("mmap");
}

/* kill */

static void child_work(void)
{
	struct ibv_context *c = open_device(devname);
	struct uverbs_map cm[MAX_MAPS];
	struct ibv_pd *pd;
	struct ibv_cq *cqs[4];
	struct ibv_qp *qps[4] = {};
	int k, n;

	if (!c)
		_exit(1);
	ctx = c;
	pd = ibv_alloc_pd(c);
	for (k = 0; k < 4; k++)
		cqs[k] = ibv_create_cq(c, 1 + rng32() % 256, NULL, NULL, 0);
	if (have_qp && pd)
		for (k = 0; k < 4; k++) {
			struct ibv_qp_init_attr qa = {
				.send_cq = cqs[k],
				.recv_cq = cqs[(k + 1) % 4],
				.qp_type = k % 2 ? IBV_QPT_UD : IBV_QPT_RC,
				.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
					 .max_recv_sge = 1 },
			};

			if (cqs[k] && cqs[(k + 1) % 4])
				qps[k] = ibv_create_qp(pd, &qa);
			if (qps[k] && !qp_to_init(qps[k]))
				qp_to_rts(qps[k]);
		}
	n = uverbs_maps(cm, MAX_MAPS);
	for (;;) {
		for (k = 0; k < n; k++) {
			struct rxe_queue_buf *q = (void *)cm[k].start;

			if (!headers_only && rng32() % 2)
				garbage_send_wqes(q, cm[k].end - cm[k].start, q->log2_elem_size);
			scribble_header(q);
		}
		for (k = 0; k < 4; k++) {
			if (qps[k])
				doorbell(qps[k]);
			if (cqs[k])
				ibv_req_notify_cq(cqs[k], 0);
		}
		/* A resize moves the CQ's queue: list the mappings again. */
		if (cqs[0] && rng32() % 8 == 0) {
			ibv_resize_cq(cqs[0], 1 + rng32() % 300);
			n = uverbs_maps(cm, MAX_MAPS);
		}
	}
}

static void test_kill(void)
{
	int r, good = 0, n = rounds / 10 > 5 ? rounds / 10 : 5;

	for (r = 0; r < n; r++) {
		pid_t pid;
		int st;

		at("kill: fork");
		fflush(stdout);
		rng64();
		pid = fork();
		if (pid < 0) {
			ok(0, "fork: %s", strerror(errno));
			return;
		}
		if (pid == 0) {
			alarm(0);
			child_work();
		}
		usleep(rng32() % 200000);
		kill(pid, SIGKILL);
		at("kill: waitpid (the child is stuck in the kernel?)");
		if (waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
			good++;
		else
			note("child %d: status 0x%x", r, st);
	}
	ok(good == n, "kill: %d children with scribbled queues killed and reaped (%d of %d)", n,
	   good, n);
	still_works("kill");
}

/* Probes */

static void probe(void)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	char *buf = malloc(4096);
	const char *what;
	int err;

	if (!pd || !cq) {
		printf("Bail out! PD or CQ creation fails: %s\n", strerror(errno));
		exit(1);
	}
	{
		struct ibv_mr *mr = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
		struct ibv_mw *mw;

		have_mr = mr != NULL;
		if (mr)
			ibv_dereg_mr(mr);
		mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
		have_mw1 = mw != NULL;
		if (mw)
			ibv_dealloc_mw(mw);
		mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
		have_mw2 = mw != NULL;
		if (mw)
			ibv_dealloc_mw(mw);
	}
	if (gid_index >= 0) {
		struct ibv_ah_attr aa = {
			.is_global = 1,
			.port_num = PORT,
			.grh = { .dgid = gid, .sgid_index = gid_index, .hop_limit = 64 },
		};
		struct ibv_ah *ah = ibv_create_ah(pd, &aa);

		have_ah = ah != NULL;
		if (ah)
			ibv_destroy_ah(ah);
	}
	{
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
		struct ibv_srq *srq = ibv_create_srq(pd, &sa);
		struct ibv_qp_init_attr qa = {
			.send_cq = cq,
			.recv_cq = cq,
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
				 .max_recv_sge = 1 },
		};
		struct ibv_qp *qp;

		have_srq = srq != NULL;
		if (srq)
			ibv_destroy_srq(srq);
		qp = ibv_create_qp(pd, &qa);
		have_qp = qp != NULL;
		if (qp)
			ibv_destroy_qp(qp);
	}
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	free(buf);
	err = have_qp && have_ah && have_mr && gid_index >= 0 ? loopback(4, &what) : EOPNOTSUPP;
	loopback_ok = !err;
	note("device %s: MR %s, MW1 %s, MW2 %s, AH %s, SRQ %s, QP %s, loopback UD traffic %s%s%s",
	     devname, have_mr ? "yes" : "no", have_mw1 ? "yes" : "no", have_mw2 ? "yes" : "no",
	     have_ah ? "yes" : "no", have_srq ? "yes" : "no", have_qp ? "yes" : "no",
	     loopback_ok ? "works" : "does not work (", loopback_ok ? "" : err_str(err),
	     loopback_ok ? "" : ")");
}

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
	{ "cq-size", test_cq_size },
	{ "comp-vector", test_comp_vector },
	{ "resize", test_resize },
	{ "busy", test_busy },
	{ "scribble-cq", test_scribble_cq },
	{ "scribble-qp", test_scribble_qp },
	{ "crafted", test_crafted },
	{ "raw", test_raw },
	{ "mmap", test_mmap },
	{ "kill", test_kill },
	{ "flush-spin", test_flush_spin },
	{ "rewrite-wqe", test_rewrite_wqe },
	{ "rnr-forever", test_rnr_forever },
};

static void usage(FILE *f)
{
	unsigned int i;

	fprintf(f, "Usage: verbs-bad [-d DEV] [-g GID_INDEX] [-r ROUNDS] [-s SEED] [-t TESTS] [-H] "
		   "[-T] [-v]\n"
		   "  -r ROUNDS  rounds of the scribble tests (default 200; kill: ROUNDS/10)\n"
		   "  -s SEED    random seed (default: time and pid; printed)\n"
		   "  -H         scribble queue headers only, not work requests\n"
		   "  -T         no scribbling thread racing the kernel in scribble-qp\n"
		   "  -t TESTS   comma-separated, default all:");
	for (i = 0; i < ARRAY_SIZE(tests); i++)
		fprintf(f, " %s", tests[i].name);
	fprintf(f, "\n");
}

int main(int argc, char **argv)
{
	const char *list = "all";
	uint64_t seed = 0;
	unsigned int i;
	int c;

	devname = getenv("RRXE_DEV");
	while ((c = getopt(argc, argv, "d:g:r:s:t:HTvh")) != -1) {
		switch (c) {
		case 'd': devname = optarg; break;
		case 'g': gid_index = atoi(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 't': list = optarg; break;
		case 'H': headers_only = 1; break;
		case 'T': no_thread = 1; break;
		case 'v': verbose = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || rounds < 1) {
		usage(stderr);
		return 2;
	}
	if (!seed)
		seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	rng_seed(seed);
	signal(SIGALRM, on_alarm);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);

	ctx = open_device(devname);
	if (!ctx) {
		printf("Bail out! cannot open %s\n", devname ? devname : "a device");
		return 1;
	}
	devname = ibv_get_device_name(ctx->device);
	if (ibv_query_device(ctx, &dattr)) {
		printf("Bail out! ibv_query_device: %s\n", strerror(errno));
		return 1;
	}
	gid_index = find_gid(ctx, PORT, gid_index, &gid);
	note("verbs-bad on %s, seed 0x%llx (-s to repeat), %d rounds, GID index %d%s", devname,
	     (unsigned long long)seed, rounds, gid_index, headers_only ? ", headers only" : "");
	probe();
	for (i = 0; i < ARRAY_SIZE(tests); i++) {
		char *copy = strdup(list), *tok, *save;
		int sel = 0;

		for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
			if (!strcmp(tok, "all") || !strcmp(tok, tests[i].name))
				sel = 1;
		free(copy);
		if (!sel)
			continue;
		note("--- %s", tests[i].name);
		tests[i].fn();
	}
	alarm(0);
	ok(!ibv_close_device(ctx), "close the device");
	return tap_done();
}
