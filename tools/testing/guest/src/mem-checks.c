// SPDX-License-Identifier: GPL-2.0
/*
 * mem-checks: memory region and window rules a responder must keep, checked from
 * userspace with two RC QPs of one device connected to each other (a fresh pair for each
 * check, since the failing accesses break them). One TAP line per check.
 *
 *   dereg_busy_t2   ibv_dereg_mr fails while a type 2 window is bound to the MR, and
 *                   succeeds once the window is invalidated (IBA 10.6.7.2.6)
 *   dereg_busy_t1   the same with a type 1 window, until it is deallocated
 *   rereg_busy_t2,  the same for re-registration (REREG_MR changing the access): it would
 *   rereg_busy_t1   take from the window rights checked when it was bound (the MR's
 *                   MW_BIND, LOCAL_WRITE, PD); ibv_rereg_mr is a deregistration followed
 *                   by a registration
 *   zero_based      a zero-based type 2 window bound at an offset inside the MR: offset 0
 *                   of the window is the bound address; a WRITE and a READ through it
 *                   reach exactly the bound bytes, one byte beyond is refused
 *                   (IBV_WC_REM_ACCESS_ERR) and left alone
 *   zero_based_out  binding a zero-based window that does not lie inside the MR fails
 *   mw_inv_mid      a WRITE_WITH_IMM of 3 MTUs through a type 2 window to a QP without a
 *                   receive: First and Middle land, Last is answered with RNR NAKs; the
 *                   target invalidates the window, then posts the receive: the retried
 *                   Last must be refused and the last MTU stay unchanged
 *   dereg_mid       the same through the MR's rkey, the target deregistering the MR
 *   flush           FLUSH (global placement) of an MR with IBV_ACCESS_FLUSH_GLOBAL
 *                   completes: of 4 KiB (also with IBV_SEND_INLINE set, which means
 *                   nothing to a FLUSH), of 0 bytes, and of the whole MR (selectivity MR,
 *                   whatever range the WQE names); of 4 KiB or 0 bytes of an MR without
 *                   it, with persistent placement, or of 4 KiB running past the MR's
 *                   end, fails with IBV_WC_REM_ACCESS_ERR (rxe checks the key of a 0-byte
 *                   FLUSH too, and the range unless it flushes the whole MR).
 *                   Debian's libibverbs (rdma-core 44) has no ibv_wr_flush: the FLUSH WQE
 *                   is written into the send queue by hand (struct rxe_send_wqe, the
 *                   provider's ABI), from a WRITE posted through librxe as template, and
 *                   the doorbell rung as librxe rings it
 *   dereg_unpins    deregistering an MR unpins its memory at once, while the QPs that
 *                   used it live on: a WRITE and a READ between two MRs (the requester's
 *                   QP then keeps the source MR, the target's the destination MR), then
 *                   each ibv_dereg_mr must lower the process's pinned memory (VmPin in
 *                   /proc/self/status) by the MR's size (rrxe's QPs keep the MRs they
 *                   used last, not their memory)
 *   stale_rkey      a QP that wrote through an rkey: the MR is deregistered and its
 *                   buffer registered again; a WRITE with the old rkey must fail
 *                   (IBV_WC_REM_ACCESS_ERR) and leave the buffer alone, one with the new
 *                   rkey (on a fresh pair) land
 *   stale_lkey      the same for an lkey: the old one fails (IBV_WC_LOC_PROT_ERR; rxe
 *                   completes it with IBV_WC_WR_FLUSH_ERR, accepted on an rxe device)
 *   stale_pd        a QP that wrote through an rkey: the MR is moved to another PD
 *                   (REREG_MR changing the PD); a WRITE with the same rkey must fail
 *                   (IBV_WC_REM_ACCESS_ERR) and leave the buffer alone; moved back, a
 *                   WRITE on a fresh pair lands (rrxe's QP kept the MR: each use checks
 *                   its PD again)
 *
 *   mem-checks [-d DEV] [-t CHECK,...]
 */
#include <getopt.h>
#include <unistd.h>
#include <rdma/rdma_user_rxe.h>
#include "rrxe-test.h"

#define PORT 1
#define BUF (64 * 1024)
#define POISON 0xa5
#define TIMEOUT_S 20.0
#define MAX_MAPS 64
/* Newer than Debian's headers (<rdma/ib_user_verbs.h> of Linux 6.2). */
#define WR_FLUSH 14
#define ACCESS_FLUSH_GLOBAL (1 << 8)
#define ACCESS_FLUSH_PERSISTENT (1 << 9)
#define FLUSH_GLOBAL 1
#define FLUSH_PERSISTENT 2
#define FLUSH_RANGE 0
#define FLUSH_MR 1

/* The flush member of struct rxe_send_wr's wr union (<rdma/rdma_user_rxe.h>, Linux 6.2). */
struct rxe_flush_wr {
	uint64_t remote_addr;
	uint32_t length;
	uint32_t rkey;
	uint8_t type;
	uint8_t level;
};

static const char *devname;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static union ibv_gid gid;
static int gid_index;
static enum ibv_mtu path_mtu;
static uint32_t mtu;
static int ntest, nfail;

/* Two connected RC QPs: 0 the requester, 1 the target. */
struct pair {
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2];
};

static void tap(int ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	ntest++;
	if (!ok)
		nfail++;
	printf("%s %d - %s", ok ? "ok" : "not ok", ntest, name);
	if (fmt && *fmt) {
		printf(": ");
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
	}
	printf("\n");
	fflush(stdout);
}

/* QP access flags of the pairs made next. */
static unsigned int qp_access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				IBV_ACCESS_REMOTE_ATOMIC;

static int connect_qp(struct pair *p, int i)
{
	struct rc_conn c = {
		.port = PORT, .sgid_index = gid_index, .dgid = gid, .mtu = path_mtu,
		.dest_qpn = p->qp[!i]->qp_num, .rq_psn = 100 * !i, .sq_psn = 100 * i,
		.access = qp_access, .rd_atomic = 1, .min_rnr_timer = 1, .timeout = 14,
		.retry_cnt = 7, .rnr_retry = 7,
	};

	return connect_rc_qp(p->qp[i], &c, NULL);
}

static void pair_free(struct pair *p)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (p->qp[i])
			ibv_destroy_qp(p->qp[i]);
		if (p->cq[i])
			ibv_destroy_cq(p->cq[i]);
	}
	memset(p, 0, sizeof(*p));
}

static int pair_new(struct pair *p)
{
	int i, err;

	memset(p, 0, sizeof(*p));
	for (i = 0; i < 2; i++) {
		struct ibv_qp_init_attr a = {
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
				 .max_recv_sge = 1 },
		};

		p->cq[i] = ibv_create_cq(ctx, 32, NULL, NULL, 0);
		if (!p->cq[i])
			goto fail;
		a.send_cq = a.recv_cq = p->cq[i];
		p->qp[i] = ibv_create_qp(pd, &a);
		if (!p->qp[i])
			goto fail;
	}
	for (i = 0; i < 2; i++) {
		err = connect_qp(p, i);
		if (err) {
			errno = err;
			goto fail;
		}
	}
	return 0;
fail:
	fprintf(stderr, "# QP pair setup: %s\n", strerror(errno));
	pair_free(p);
	return -1;
}

/* Waits for one completion on side I's CQ; 0, or -1 on timeout. */
static int wait_wc(struct pair *p, int i, struct ibv_wc *wc)
{
	double end = now_s() + TIMEOUT_S;
	int n;

	while ((n = ibv_poll_cq(p->cq[i], 1, wc)) == 0 && now_s() < end)
		usleep(100);
	return n == 1 ? 0 : -1;
}

/* Posts WR on side I and waits for its completion; returns its status, or -1. */
static int post_wait(struct pair *p, int i, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	wr->send_flags |= IBV_SEND_SIGNALED;
	if (ibv_post_send(p->qp[i], wr, &bad)) {
		fprintf(stderr, "# ibv_post_send: %s\n", strerror(errno));
		return -1;
	}
	if (wait_wc(p, i, &wc)) {
		fprintf(stderr, "# no completion after %.0f s\n", TIMEOUT_S);
		return -1;
	}
	return wc.status;
}

/* Binds type 2 window MW on side I to [addr, addr + len) of MR; returns the status. */
static int bind2(struct pair *p, int i, struct ibv_mw *mw, uint32_t *rkey, struct ibv_mr *mr,
		 uint64_t addr, uint64_t len, unsigned int access)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_BIND_MW };

	*rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = *rkey;
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = addr;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = access;
	return post_wait(p, i, &wr);
}

static int local_inv(struct pair *p, int i, uint32_t rkey)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_LOCAL_INV };

	wr.invalidate_rkey = rkey;
	return post_wait(p, i, &wr);
}

/* An RDMA WRITE or READ of LEN bytes between LOCAL (in MR) and (rkey, va). */
static int rdma(struct pair *p, enum ibv_wr_opcode op, void *local, struct ibv_mr *mr,
		uint32_t len, uint32_t rkey, uint64_t va)
{
	struct ibv_sge sge = { (uintptr_t)local, len, mr->lkey };
	struct ibv_send_wr wr = { .opcode = op, .sg_list = &sge, .num_sge = 1 };

	wr.wr.rdma.remote_addr = va;
	wr.wr.rdma.rkey = rkey;
	return post_wait(p, 0, &wr);
}

struct bufs {
	uint8_t *src, *dst;
	struct ibv_mr *smr, *dmr;
};

static void bufs_free(struct bufs *b)
{
	if (b->smr)
		ibv_dereg_mr(b->smr);
	if (b->dmr)
		ibv_dereg_mr(b->dmr);
	free(b->src);
	free(b->dst);
}

static int bufs_new(struct bufs *b)
{
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		  IBV_ACCESS_MW_BIND;
	size_t i;

	memset(b, 0, sizeof(*b));
	b->src = aligned_alloc(4096, BUF);
	b->dst = aligned_alloc(4096, BUF);
	if (!b->src || !b->dst)
		return -1;
	for (i = 0; i < BUF; i++)
		b->src[i] = rng32();
	memset(b->dst, POISON, BUF);
	b->smr = ibv_reg_mr(pd, b->src, BUF, acc);
	b->dmr = ibv_reg_mr(pd, b->dst, BUF, acc);
	if (!b->smr || !b->dmr) {
		fprintf(stderr, "# ibv_reg_mr: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* Whether [lo, hi) of P is all POISON; the first other offset in *at. */
static int poisoned(const uint8_t *p, size_t lo, size_t hi, size_t *at)
{
	for (*at = lo; *at < hi; (*at)++)
		if (p[*at] != POISON)
			return 0;
	return 1;
}

/* The buffers and the QP pair of check NAME; on failure a failed TAP line, and -1. */
static int setup(const char *name, struct bufs *b, struct pair *p)
{
	if (!bufs_new(b) && !pair_new(p))
		return 0;
	tap(0, name, "setup failed");
	bufs_free(b);
	return -1;
}

/* What setup() made, and the window MW if any. */
static void teardown(struct ibv_mw *mw, struct pair *p, struct bufs *b)
{
	/* Windows first: rxe cannot destroy a QP a type 2 window is bound to (a WARN). */
	if (mw)
		ibv_dealloc_mw(mw);
	pair_free(p);
	bufs_free(b);
}

/*
 * Deregisters (or if REREG re-registers, changing the access) the target MR of B; returns
 * 0 or an errno.
 */
static int dereg_or_rereg(struct bufs *b, int rereg)
{
	int err;

	if (rereg)
		return rereg_mr_cmd(b->dmr, IBV_REREG_MR_CHANGE_ACCESS, NULL,
				    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_MW_BIND);
	err = ibv_dereg_mr(b->dmr);
	if (!err)
		b->dmr = NULL;
	return err;
}

/* See dereg_busy_t2 at the top: ARG is the window type, plus 4 for rereg_busy. */
static void dereg_busy(int arg)
{
	static const char *const names[] = { "dereg_busy_t1", "dereg_busy_t2", "rereg_busy_t1",
					     "rereg_busy_t2" };
	int type = arg & 3, rereg = !!(arg & 4);
	const char *name = names[2 * rereg + (type == 2)];
	const char *verb = rereg ? "REREG_MR" : "ibv_dereg_mr";
	struct ibv_mw *mw = NULL;
	struct pair p;
	struct bufs b;
	uint32_t rkey;
	int st, err;

	if (setup(name, &b, &p))
		return;
	mw = ibv_alloc_mw(pd, type == 1 ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2);
	if (!mw) {
		tap(0, name, "ibv_alloc_mw: %s", strerror(errno));
		goto out;
	}
	if (type == 1) {
		struct ibv_mw_bind bind = { .send_flags = IBV_SEND_SIGNALED };
		struct ibv_wc wc;

		bind.bind_info.mr = b.dmr;
		bind.bind_info.addr = (uintptr_t)b.dst;
		bind.bind_info.length = 4096;
		bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
		st = ibv_bind_mw(p.qp[1], mw, &bind);
		if (!st)
			st = wait_wc(&p, 1, &wc) ?: (int)wc.status;
	} else {
		st = bind2(&p, 1, mw, &rkey, b.dmr, (uintptr_t)b.dst, 4096,
			   IBV_ACCESS_REMOTE_WRITE);
	}
	if (st) {
		tap(0, name, "bind failed: %d", st);
		goto out;
	}
	err = dereg_or_rereg(&b, rereg);
	if (!err) {
		tap(0, name, "%s succeeded with a window bound", verb);
		goto out;
	}
	printf("# %s with a window bound: %s\n", verb, strerror(err));
	if (type == 1) {
		st = ibv_dealloc_mw(mw);
		mw = NULL;
	} else {
		st = local_inv(&p, 1, rkey);
	}
	if (st) {
		tap(0, name, "unbinding failed: %d", st);
		goto out;
	}
	err = dereg_or_rereg(&b, rereg);
	tap(!err, name, err ? "%s after unbinding: %s" : "", verb, strerror(err));
out:
	teardown(mw, &p, &b);
}

static void zero_based(int unused)
{
	(void)unused;
	const char *name = "zero_based";
	unsigned int acc = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ZERO_BASED;
	struct ibv_mw *mw;
	struct pair p;
	struct bufs b;
	uint32_t rkey;
	size_t at = BUF;
	int st;

	if (setup(name, &b, &p))
		return;
	mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	if (!mw) {
		tap(0, name, "ibv_alloc_mw: %s", strerror(errno));
		goto out;
	}
	st = bind2(&p, 1, mw, &rkey, b.dmr, (uintptr_t)b.dst + 4096, 4096, acc);
	if (st) {
		tap(0, name, "bind at offset 4096: status %d", st);
		goto out;
	}
	st = rdma(&p, IBV_WR_RDMA_WRITE, b.src, b.smr, 4096, rkey, 0);
	if (st) {
		tap(0, name, "WRITE 4096 at window offset 0: status %d", st);
		goto out;
	}
	if (!poisoned(b.dst, 0, 4096, &at) || !poisoned(b.dst, 8192, BUF, &at) ||
	    memcmp(b.dst + 4096, b.src, 4096)) {
		tap(0, name, "WRITE at window offset 0 did not land at MR offset 4096 "
			     "(MR byte %zu changed, or the window's bytes differ)", at);
		goto out;
	}
	memset(b.src + 8192, 0, 4096);
	st = rdma(&p, IBV_WR_RDMA_READ, b.src + 8192, b.smr, 4096, rkey, 0);
	if (st || memcmp(b.src + 8192, b.dst + 4096, 4096)) {
		tap(0, name, "READ 4096 at window offset 0: status %d or wrong data", st);
		goto out;
	}
	st = rdma(&p, IBV_WR_RDMA_WRITE, b.src, b.smr, 1, rkey, 4096);
	poisoned(b.dst, 8192, BUF, &at);
	if (st != IBV_WC_REM_ACCESS_ERR || at < BUF) {
		tap(0, name, "WRITE 1 byte at window offset 4096 (beyond): status %d, MR "
			     "byte %zu %s", st, at, at < BUF ? "changed" : "unchanged");
		goto out;
	}
	tap(1, name, "");
out:
	teardown(mw, &p, &b);
}

static void zero_based_out(int unused)
{
	(void)unused;
	const char *name = "zero_based_out";
	struct ibv_mw *mw;
	struct pair p;
	struct bufs b;
	uint32_t rkey;
	int st;

	if (setup(name, &b, &p))
		return;
	mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	if (!mw) {
		tap(0, name, "ibv_alloc_mw: %s", strerror(errno));
		goto out;
	}
	/* 8 KiB from 4 KiB before the MR's end: no longer than the MR, but not inside it. */
	st = bind2(&p, 1, mw, &rkey, b.dmr, (uintptr_t)b.dst + BUF - 4096, 8192,
		   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ZERO_BASED);
	tap(st > 0, name, st > 0 ? "" : "the bind %s", st ? "did not complete" : "succeeded");
out:
	teardown(mw, &p, &b);
}

/* See mw_inv_mid and dereg_mid at the top. */
static void inv_mid(int dereg)
{
	const char *name = dereg ? "dereg_mid" : "mw_inv_mid";
	uint32_t len = 3 * mtu, rkey = 0;
	struct ibv_sge sge = { 0, 0, 0 };
	struct ibv_send_wr wr = { .opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .sg_list = &sge,
				  .num_sge = 1, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_recv_wr rwr = { .wr_id = 7 }, *rbad;
	struct ibv_send_wr *bad;
	struct ibv_mw *mw = NULL;
	struct ibv_wc wc;
	struct pair p;
	struct bufs b;
	double end;
	size_t at = BUF;
	int st;

	if (setup(name, &b, &p))
		return;
	if (dereg) {
		rkey = b.dmr->rkey;
	} else {
		mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
		st = mw ? bind2(&p, 1, mw, &rkey, b.dmr, (uintptr_t)b.dst, len,
				IBV_ACCESS_REMOTE_WRITE) : -1;
		if (st) {
			tap(0, name, "window setup failed (%d)", st);
			goto out;
		}
	}
	sge.addr = (uintptr_t)b.src;
	sge.length = len;
	sge.lkey = b.smr->lkey;
	wr.wr.rdma.remote_addr = (uintptr_t)b.dst;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(p.qp[0], &wr, &bad)) {
		tap(0, name, "ibv_post_send: %s", strerror(errno));
		goto out;
	}
	/* First and Middle have landed once the second MTU is there. */
	end = now_s() + TIMEOUT_S;
	while (memcmp((void *)(b.dst + mtu), b.src + mtu, mtu) && now_s() < end)
		usleep(50);
	if (memcmp(b.dst + mtu, b.src + mtu, mtu)) {
		tap(0, name, "First and Middle did not land");
		goto out;
	}
	if (dereg) {
		st = ibv_dereg_mr(b.dmr);
		if (!st)
			b.dmr = NULL;
	} else {
		st = local_inv(&p, 1, rkey);
	}
	if (st) {
		tap(0, name, "invalidation failed: %d", st);
		goto out;
	}
	if (ibv_post_recv(p.qp[1], &rwr, &rbad)) {
		tap(0, name, "ibv_post_recv: %s", strerror(errno));
		goto out;
	}
	if (wait_wc(&p, 0, &wc)) {
		tap(0, name, "the WRITE did not complete");
		goto out;
	}
	st = wc.status;
	poisoned(b.dst, 2 * mtu, BUF, &at);
	if (st != IBV_WC_REM_ACCESS_ERR || at < BUF) {
		tap(0, name, "WRITE status %d (%s), expected remote access error; target byte %zu "
			     "%s", st, ibv_wc_status_str(wc.status), at,
		    at < BUF ? "changed" : "unchanged");
		goto out;
	}
	tap(1, name, "");
out:
	teardown(mw, &p, &b);
}

/*
 * Queues a FLUSH of LEN bytes at VA through RKEY with placement type PLACEMENT,
 * selectivity LEVEL and send flags FLAGS besides IBV_SEND_SIGNALED on the send queue SQ
 * of side 0 (after the template WQE librxe wrote last) and waits for its completion;
 * returns its status, or -1 if none came.
 */
static int flush(struct pair *p, struct rxe_queue_buf *sq, uint32_t rkey, uint64_t va,
		 uint32_t len, uint8_t placement, uint8_t level, unsigned int flags)
{
	uint32_t mask = sq->index_mask, log2 = sq->log2_elem_size, prod;
	struct rxe_send_wqe *w;
	struct rxe_flush_wr *f;
	struct ibv_wc wc;
	double end;
	int n;

	prod = __atomic_load_n(&sq->producer_index, __ATOMIC_ACQUIRE);
	w = (void *)(sq->data + ((size_t)(prod & mask) << log2));
	memcpy(w, sq->data + ((size_t)((prod - 1) & mask) << log2), (size_t)1 << log2);
	w->wr.wr_id = 4242;
	w->wr.opcode = WR_FLUSH;
	w->wr.send_flags = IBV_SEND_SIGNALED | flags;
	f = (void *)&w->wr.wr;
	memset(&w->wr.wr, 0, sizeof(w->wr.wr));
	/*
	 * As librxe's wr_flush: type is the placement type, level the selectivity; the
	 * length goes in the DMA part, the flush member's length stays 0.
	 */
	f->remote_addr = va;
	f->rkey = rkey;
	f->type = placement;
	f->level = level;
	w->iova = va;
	w->dma.length = w->dma.resid = len;
	w->dma.num_sge = 0;
	w->dma.cur_sge = 0;
	w->dma.sge_offset = 0;
	w->state = 0;
	w->status = 0;
	w->ssn++;
	__atomic_store_n(&sq->producer_index, (prod + 1) & mask, __ATOMIC_RELEASE);
	if (doorbell(p->qp[0]))
		return -1;
	end = now_s() + 5;
	while ((n = ibv_poll_cq(p->cq[0], 1, &wc)) == 0 && now_s() < end)
		usleep(100);
	return n == 1 && wc.wr_id == 4242 ? (int)wc.status : -1;
}

/*
 * One FLUSH case on a new pair, of LEN bytes at offset OFF of an MR with MR_ACCESS, with
 * send flags FLAGS; EXPECT: the completion status it must have.
 */
static void flush_case(const char *name, int mr_access, uint64_t off, uint32_t len,
		       uint8_t placement, uint8_t level, unsigned int flags, int expect)
{
	struct uverbs_map before[MAX_MAPS], after[MAX_MAPS], nm[MAX_MAPS];
	struct rxe_queue_buf *sq = NULL;
	struct ibv_mr *mr = NULL;
	unsigned int log2 = 0;
	int nb, na, n, k, st;
	struct pair p;
	struct bufs b;

	qp_access |= ACCESS_FLUSH_GLOBAL | ACCESS_FLUSH_PERSISTENT;
	nb = uverbs_maps(before, MAX_MAPS);
	st = setup(name, &b, &p);
	qp_access &= ~(ACCESS_FLUSH_GLOBAL | ACCESS_FLUSH_PERSISTENT);
	if (st)
		return;
	mr = ibv_reg_mr(pd, b.dst, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		       mr_access);
	if (!mr) {
		tap(0, name, "ibv_reg_mr with access %#x: %s", mr_access, strerror(errno));
		goto out;
	}
	/* The template: a WRITE through librxe. */
	st = rdma(&p, IBV_WR_RDMA_WRITE, b.src, b.smr, 1, mr->rkey, (uintptr_t)b.dst);
	na = uverbs_maps(after, MAX_MAPS);
	n = nb < 0 || na < 0 ? 0 : uverbs_maps_new(before, nb, after, na, nm);
	/* Side 0's SQ: the queue with the largest elements that has one WQE posted. */
	for (k = 0; k < n; k++) {
		struct rxe_queue_buf *q = (void *)nm[k].start;

		if (q->producer_index == 1 && q->log2_elem_size > log2) {
			log2 = q->log2_elem_size;
			sq = q;
		}
	}
	if (st || !sq) {
		tap(0, name, "template WRITE: status %d, %s", st, sq ? "SQ found" : "no SQ");
		goto out;
	}
	st = flush(&p, sq, mr->rkey, (uintptr_t)b.dst + off, len, placement, level, flags);
	tap(st == expect, name, st == expect ? "" : "status %d (%s), expected %d (%s)", st,
	    st < 0 ? "no completion in 5 s" : ibv_wc_status_str(st), expect,
	    ibv_wc_status_str(expect));
out:
	pair_free(&p);
	if (mr)
		ibv_dereg_mr(mr);
	bufs_free(&b);
}

static void flush_checks(int unused)
{
	(void)unused;
	flush_case("flush 4 KiB, MR with FLUSH_GLOBAL", ACCESS_FLUSH_GLOBAL, 0, 4096,
		   FLUSH_GLOBAL, FLUSH_RANGE, 0, IBV_WC_SUCCESS);
	/* A FLUSH carries no payload: the inline flag means nothing to it (as to rxe). */
	flush_case("flush 4 KiB with IBV_SEND_INLINE", ACCESS_FLUSH_GLOBAL, 0, 4096,
		   FLUSH_GLOBAL, FLUSH_RANGE, IBV_SEND_INLINE, IBV_WC_SUCCESS);
	flush_case("flush 0 bytes, MR with FLUSH_GLOBAL", ACCESS_FLUSH_GLOBAL, 0, 0,
		   FLUSH_GLOBAL, FLUSH_RANGE, 0, IBV_WC_SUCCESS);
	flush_case("flush the whole MR, a range past its end", ACCESS_FLUSH_GLOBAL, BUF, 4096,
		   FLUSH_GLOBAL, FLUSH_MR, 0, IBV_WC_SUCCESS);
	flush_case("flush 4 KiB, MR without flush access", 0, 0, 4096, FLUSH_GLOBAL,
		   FLUSH_RANGE, 0, IBV_WC_REM_ACCESS_ERR);
	flush_case("flush 0 bytes, MR without flush access", 0, 0, 0, FLUSH_GLOBAL,
		   FLUSH_RANGE, 0, IBV_WC_REM_ACCESS_ERR);
	flush_case("flush 4 KiB persistent, MR with FLUSH_GLOBAL only", ACCESS_FLUSH_GLOBAL, 0,
		   4096, FLUSH_PERSISTENT, FLUSH_RANGE, 0, IBV_WC_REM_ACCESS_ERR);
	flush_case("flush 4 KiB past the MR's end", ACCESS_FLUSH_GLOBAL, BUF - 2048, 4096,
		   FLUSH_GLOBAL, FLUSH_RANGE, 0, IBV_WC_REM_ACCESS_ERR);
}

/* The process's pinned memory in kB (VmPin), or -1. */
static long vm_pin_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* See dereg_unpins at the top. */
static void dereg_unpins(int unused)
{
	const char *name = "dereg_unpins";
	long before, after_s, after_d;
	struct bufs b;
	struct pair p;
	int st;

	if (setup(name, &b, &p))
		return;
	st = rdma(&p, IBV_WR_RDMA_WRITE, b.src, b.smr, BUF, b.dmr->rkey, (uintptr_t)b.dst);
	if (st == IBV_WC_SUCCESS)
		st = rdma(&p, IBV_WR_RDMA_READ, b.src, b.smr, BUF, b.dmr->rkey,
			  (uintptr_t)b.dst);
	if (st != IBV_WC_SUCCESS) {
		tap(0, name, "the WRITE and READ completed with status %d", st);
		teardown(NULL, &p, &b);
		return;
	}
	before = vm_pin_kb();
	ibv_dereg_mr(b.smr);
	b.smr = NULL;
	after_s = vm_pin_kb();
	ibv_dereg_mr(b.dmr);
	b.dmr = NULL;
	after_d = vm_pin_kb();
	tap(before >= 0 && before - after_s == BUF / 1024 && after_s - after_d == BUF / 1024,
	    name, "VmPin %ld kB, %ld after the source MR's dereg, %ld after the target's "
	    "(%d kB each)", before, after_s, after_d, BUF / 1024);
	teardown(NULL, &p, &b);
}

/* See stale_rkey and stale_lkey at the top: REMOTE for the rkey. */
static void stale_key(int remote)
{
	const char *name = remote ? "stale_rkey" : "stale_lkey";
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	int want = remote ? IBV_WC_REM_ACCESS_ERR : IBV_WC_LOC_PROT_ERR;
	/* rxe flushes the WQE with the bad lkey (see the top). */
	int also = !remote && !strncmp(devname ? devname : "", "rxe", 3) ? IBV_WC_WR_FLUSH_ERR :
									  want;
	struct ibv_mr *old, *again, **mr;
	struct ibv_mr stale;
	struct bufs b;
	struct pair p;
	int st, st_new = -1, untouched;
	size_t at;

	if (setup(name, &b, &p))
		return;
	mr = remote ? &b.dmr : &b.smr;
	st = rdma(&p, IBV_WR_RDMA_WRITE, b.src, b.smr, mtu, b.dmr->rkey, (uintptr_t)b.dst);
	if (st != IBV_WC_SUCCESS) {
		tap(0, name, "the first WRITE completed with status %d", st);
		teardown(NULL, &p, &b);
		return;
	}
	memset(b.dst, POISON, BUF);
	old = *mr;
	stale = *old;
	again = ibv_reg_mr(pd, old->addr, BUF, acc);
	if (!again || ibv_dereg_mr(old)) {
		tap(0, name, "registering again: %s", strerror(errno));
		*mr = again ? again : old;
		teardown(NULL, &p, &b);
		return;
	}
	*mr = again;
	/* The old key, on the QPs that used it. */
	if (remote)
		st = rdma(&p, IBV_WR_RDMA_WRITE, b.src, b.smr, mtu, stale.rkey, (uintptr_t)b.dst);
	else
		st = rdma(&p, IBV_WR_RDMA_WRITE, b.src, &stale, mtu, b.dmr->rkey,
			  (uintptr_t)b.dst);
	untouched = poisoned(b.dst, 0, BUF, &at);
	pair_free(&p);
	if (!pair_new(&p))
		st_new = rdma(&p, IBV_WR_RDMA_WRITE, b.src, b.smr, mtu, b.dmr->rkey,
			      (uintptr_t)b.dst);
	tap((st == want || st == also) && untouched && st_new == IBV_WC_SUCCESS && !memcmp(b.dst, b.src, mtu) &&
	    poisoned(b.dst, mtu, BUF, &at),
	    name, "old key 0x%x: status %d (want %d), target %s; new key 0x%x: status %d",
	    remote ? stale.rkey : stale.lkey, st, want, untouched ? "untouched" : "written",
	    remote ? again->rkey : again->lkey, st_new);
	teardown(NULL, &p, &b);
}

/* See stale_pd at the top. */
static void stale_pd(int unused)
{
	const char *name = "stale_pd";
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	struct ibv_pd *other = ibv_alloc_pd(ctx);
	int st, st_back = -1, err, untouched;
	struct bufs b;
	struct pair p;
	size_t at;

	if (!other) {
		tap(0, name, "ibv_alloc_pd: %s", strerror(errno));
		return;
	}
	if (setup(name, &b, &p)) {
		ibv_dealloc_pd(other);
		return;
	}
	st = rdma(&p, IBV_WR_RDMA_WRITE, b.src, b.smr, mtu, b.dmr->rkey, (uintptr_t)b.dst);
	memset(b.dst, POISON, BUF);
	err = rereg_mr_cmd(b.dmr, IBV_REREG_MR_CHANGE_PD, other, acc);
	if (st != IBV_WC_SUCCESS || err) {
		tap(0, name, "first WRITE status %d, REREG_MR to another PD: %s", st,
		    err ? strerror(err) : "ok");
		goto out;
	}
	st = rdma(&p, IBV_WR_RDMA_WRITE, b.src, b.smr, mtu, b.dmr->rkey, (uintptr_t)b.dst);
	untouched = poisoned(b.dst, 0, BUF, &at);
	err = rereg_mr_cmd(b.dmr, IBV_REREG_MR_CHANGE_PD, pd, acc);
	pair_free(&p);
	if (!err && !pair_new(&p))
		st_back = rdma(&p, IBV_WR_RDMA_WRITE, b.src, b.smr, mtu, b.dmr->rkey,
			       (uintptr_t)b.dst);
	tap(st == IBV_WC_REM_ACCESS_ERR && untouched && st_back == IBV_WC_SUCCESS &&
	    !memcmp(b.dst, b.src, mtu),
	    name, "in the other PD: status %d (want %d), target %s; back: status %d", st,
	    IBV_WC_REM_ACCESS_ERR, untouched ? "untouched" : "written", st_back);
out:
	teardown(NULL, &p, &b);
	ibv_dealloc_pd(other);
}

static const struct {
	const char *name;
	void (*fn)(int);
	int arg;
} checks[] = {
	{ "dereg_busy_t2", dereg_busy, 2 },
	{ "dereg_busy_t1", dereg_busy, 1 },
	{ "rereg_busy_t2", dereg_busy, 4 | 2 },
	{ "rereg_busy_t1", dereg_busy, 4 | 1 },
	{ "zero_based", zero_based, 0 },
	{ "zero_based_out", zero_based_out, 0 },
	{ "mw_inv_mid", inv_mid, 0 },
	{ "dereg_mid", inv_mid, 1 },
	{ "flush", flush_checks, 0 },
	{ "dereg_unpins", dereg_unpins, 0 },
	{ "stale_rkey", stale_key, 1 },
	{ "stale_lkey", stale_key, 0 },
	{ "stale_pd", stale_pd, 0 },
};

int main(int argc, char **argv)
{
	const char *only = NULL;
	struct ibv_port_attr pa;
	size_t i;
	int c;

	while ((c = getopt(argc, argv, "d:t:h")) != -1) {
		switch (c) {
		case 'd':
			devname = optarg;
			break;
		case 't':
			only = optarg;
			break;
		default:
			fprintf(stderr, "usage: mem-checks [-d DEV] [-t CHECK,...]\n");
			return 2;
		}
	}
	rng_seed(time(NULL));
	ctx = open_device(devname);
	if (!ctx)
		return 1;
	pd = ibv_alloc_pd(ctx);
	if (!pd || ibv_query_port(ctx, PORT, &pa)) {
		fprintf(stderr, "ibv_alloc_pd/ibv_query_port: %s\n", strerror(errno));
		return 1;
	}
	path_mtu = pa.active_mtu;
	mtu = 128u << path_mtu;
	gid_index = find_gid(ctx, PORT, -1, &gid);
	if (gid_index < 0) {
		fprintf(stderr, "no RoCE v2 IPv4-mapped GID\n");
		return 1;
	}
	if (3 * mtu > BUF)
		return 1;
	for (i = 0; i < ARRAY_SIZE(checks); i++) {
		char pat[64];

		snprintf(pat, sizeof(pat), ",%s,", checks[i].name);
		if (only) {
			char list[256];

			snprintf(list, sizeof(list), ",%s,", only);
			if (!strstr(list, pat))
				continue;
		}
		checks[i].fn(checks[i].arg);
	}
	printf("1..%d\n", ntest);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return nfail ? 1 : 0;
}
