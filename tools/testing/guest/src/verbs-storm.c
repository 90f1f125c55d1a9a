// SPDX-License-Identifier: GPL-2.0
/*
 * verbs-storm: a hostile process with live traffic, killed in every phase of its work.
 *
 *   verbs-storm [-d DEV] [-g GID_INDEX] [-r ROUNDS] [-s SEED] [-v]
 *
 * Each round forks a child that opens the device, creates a PD, a CQ, an MR, an RC QP
 * connected to itself and a UD QP sending to itself, and runs three threads beside its
 * main thread:
 *   two posters  post through the provider (librxe): SENDs, SENDs with immediate, RDMA
 *                WRITEs, RDMA READs and fetch-and-adds within the MR and receives, one in
 *                four with a bad lkey, rkey, address, length, opcode, SGE count,
 *                remote QPN or Q_Key; and
 *                ring the QPs' doorbells with raw commands, also with handles of objects
 *                just destroyed;
 *   a poller     polls the CQ and arms it;
 *   a scribbler  (hostile rounds only: every other round; from the phase the child is
 *                killed in, which it would not reach otherwise: librxe trusts the queue
 *                headers) writes targeted values (producer one to eight ahead of the
 *                consumer, consumer past the producer; index masks and element sizes of
 *                0, all ones or one off, put back at once) and random ones into every
 *                header field of every queue mapping (CQ, SQs, RQs), and into the fields
 *                of the WQEs there (opcode, flags, SGE count, lengths, lkeys, addresses,
 *                AH number).
 * The main thread steps through the phases, over and over:
 *   traffic       the threads work
 *   resize        the CQ resized (larger and smaller) while completions arrive
 *   error         both QPs modified to ERR, their doorbells rung
 *   reset         both QPs modified to RESET, then back to RTS
 *   busy          destroying the CQ and the PD while in use (must fail)
 *   destroy       QPs, AH, MR, CQ and PD destroyed while the threads ring doorbells
 *   recreate      everything created again
 * ROUNDS children (default 70); the parent kills child number R with SIGKILL in phase
 * (R / 2) mod 7, 0 to 3 ms after the child reported reaching it (a hostile one 2 to 20
 * ms after, while it scribbles); the child stays in that phase until killed. Checks:
 * every child is reaped within 10 s of the kill (no process stuck in the kernel); every
 * clean round's child reached the phase it was to be killed in and died of the kill in
 * it (its verbs failing is not a failure: errors are expected, but it must not crash);
 * destroying the CQ or PD in use always failed; traffic completed in the clean rounds;
 * afterwards the device still works (loopback UD traffic in this process). A hostile
 * round's child may crash on its own (librxe trusts the headers the scribbler wrote):
 * counted, not a failure. The caller checks the kernel log and kmemleak.
 *
 * Output is TAP; exit status 1 if a check failed.
 */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_rxe.h>
#include "rrxe-test.h"

#define PORT 1
#define QKEY 0x11111111
#define BUF_LEN 65536
#define MAX_MAPS 64
#define CRASHED 42 /* exit status of a child that faulted in userspace */

enum phase { P_TRAFFIC, P_RESIZE, P_ERROR, P_RESET, P_BUSY, P_DESTROY, P_RECREATE, NPHASES };

static const char *const phase_name[NPHASES] = {
	"traffic", "resize", "error", "reset", "busy", "destroy", "recreate",
};

/* Shared between the parent and a child (an anonymous shared mapping). */
struct shared {
	atomic_int phase;	/* the phase the child is in, -1 before its first */
	atomic_long posted;	/* work requests the provider accepted */
	atomic_long refused;	/* posts and doorbells refused */
	atomic_long completed;	/* completions, successful ones */
	atomic_long failed;	/* completions in error */
	atomic_long written;	/* scribbler writes */
	atomic_long busy_gone;	/* destroys of objects in use that succeeded */
	int target;		/* the phase the child is killed in */
};

static const char *devname;
static int gid_index = -1, verbose;
static union ibv_gid gid;
static struct shared *sh;

/* --- The child's objects, replaced in P_DESTROY/P_RECREATE under the write lock. */

struct objs {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	struct ibv_qp *rc, *ud;
	struct uverbs_map maps[MAX_MAPS];
	int nmaps;
};

static struct ibv_context *ctx;
static char *buf;
static struct objs o;
static pthread_rwlock_t lock;
static int hostile;
/* The last handles the threads saw: their raw doorbells may outlive the objects. */
static atomic_uint rc_handle, ud_handle;

/* A per-thread xorshift64*. */
static uint64_t next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

/* An edge value, as rng_nasty32() (whose state is not per thread): 0, ~0, 2^k and +-1. */
static uint32_t nasty(uint64_t *s)
{
	uint64_t r = next(s);
	uint32_t b = 1u << ((r >> 8) % 32);

	return (uint32_t[]){ 0, ~0u, b, b - 1, b + 1, 0x80000000u | (uint32_t)(r >> 32),
			     (uint32_t)(r >> 32), (uint32_t)(r >> 16) }[r % 8];
}

static int to_rts(struct ibv_qp *qp)
{
	if (qp->qp_type == IBV_QPT_RC) {
		struct rc_conn c = {
			.port = PORT, .sgid_index = gid_index, .dgid = gid, .mtu = IBV_MTU_1024,
			.dest_qpn = qp->qp_num,
			.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
			.rd_atomic = 4, .min_rnr_timer = 1, .timeout = 8, .retry_cnt = 1,
			.rnr_retry = 1,
		};

		return connect_rc_qp(qp, &c, NULL);
	}
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = PORT, .qkey = QKEY };
	int err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					       IBV_QP_QKEY);

	a.qp_state = IBV_QPS_RTR;
	if (!err)
		err = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	a.qp_state = IBV_QPS_RTS;
	if (!err)
		err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	return err;
}

static int to_state(struct ibv_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr a = { .qp_state = s };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

/* Creates every object; what failed goes to stderr. Called with the write lock held. */
static void create_all(void)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 2,
			 .max_recv_sge = 2, .max_inline_data = 64 },
	};
	struct ibv_ah_attr aa = {
		.is_global = 1, .port_num = PORT,
		.grh = { .dgid = gid, .sgid_index = gid_index, .hop_limit = 64 },
	};
	struct uverbs_map before[MAX_MAPS], after[MAX_MAPS];
	int nb = uverbs_maps(before, MAX_MAPS), na;

	memset(&o, 0, sizeof(o));
	o.pd = ibv_alloc_pd(ctx);
	o.cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	if (o.pd)
		o.mr = ibv_reg_mr(o.pd, buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE |
				  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				  IBV_ACCESS_REMOTE_ATOMIC);
	if (o.pd)
		o.ah = ibv_create_ah(o.pd, &aa);
	qa.send_cq = qa.recv_cq = o.cq;
	if (o.pd && o.cq) {
		qa.qp_type = IBV_QPT_RC;
		o.rc = ibv_create_qp(o.pd, &qa);
		qa.qp_type = IBV_QPT_UD;
		o.ud = ibv_create_qp(o.pd, &qa);
	}
	if (o.rc && to_rts(o.rc))
		fprintf(stderr, "verbs-storm: RC QP to RTS: %s\n", strerror(errno));
	if (o.ud && to_rts(o.ud))
		fprintf(stderr, "verbs-storm: UD QP to RTS: %s\n", strerror(errno));
	if (o.rc)
		atomic_store(&rc_handle, o.rc->handle);
	if (o.ud)
		atomic_store(&ud_handle, o.ud->handle);
	na = uverbs_maps(after, MAX_MAPS);
	o.nmaps = nb < 0 || na < 0 ? 0 : uverbs_maps_new(before, nb, after, na, o.maps);
}

/* Destroys every object, in an order the device must accept. Write lock held. */
static void destroy_all(void)
{
	if (o.rc)
		ibv_destroy_qp(o.rc);
	if (o.ud)
		ibv_destroy_qp(o.ud);
	if (o.ah)
		ibv_destroy_ah(o.ah);
	if (o.mr)
		ibv_dereg_mr(o.mr);
	if (o.cq)
		ibv_destroy_cq(o.cq);
	if (o.pd)
		ibv_dealloc_pd(o.pd);
	memset(&o, 0, sizeof(o));
}

/* One work request, good or (one in four) bad in one field, on the RC or UD QP. */
static void post_one(uint64_t *s)
{
	uint64_t r = next(s);
	struct ibv_qp *qp = r & 1 ? o.rc : o.ud;
	int bad = (r >> 1) % 4 == 0 ? 1 + (r >> 3) % 7 : 0, err;
	uint32_t off = (r >> 8) % (BUF_LEN / 2 - 4096) & ~7u, len = (r >> 24) % 4096;
	/* The second and third SGEs are garbage: used when case 7 raises num_sge. */
	struct ibv_sge sg[3] = { { .addr = (uintptr_t)buf + off, .length = len },
				 { .addr = next(s), .length = next(s), .lkey = next(s) },
				 { .addr = (uintptr_t)buf, .length = 16, .lkey = next(s) } };
	struct ibv_sge *sge = sg;
	struct ibv_send_wr wr = { .sg_list = sg, .num_sge = 1 }, *bwr;
	struct ibv_recv_wr rw = { .sg_list = sg, .num_sge = 1 }, *brw;

	if (!qp || !o.mr)
		return;
	sge->lkey = o.mr->lkey;
	switch (bad) {
	case 1: sge->lkey = next(s); break;
	case 2: sge->addr = (uintptr_t)buf - 4096 + (next(s) % 8192); break;
	case 3: sge->length = nasty(s); break;
	case 7: rw.num_sge = 1 + next(s) % 3; break;
	default: break;
	}
	if ((r >> 40) % 3 == 0) {
		err = ibv_post_recv(qp, &rw, &brw);
	} else {
		static const enum ibv_wr_opcode ops[] = {
			IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
			IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ, IBV_WR_ATOMIC_FETCH_AND_ADD,
		};

		wr.opcode = qp == o.ud ? IBV_WR_SEND : ops[(r >> 44) % ARRAY_SIZE(ops)];
		wr.send_flags = IBV_SEND_SIGNALED;
		/* Inline data is read by the provider here: from good SGEs only. */
		if ((r >> 48) % 8 == 0 && len <= 64 && (bad == 0 || bad >= 4) && bad != 7)
			wr.send_flags |= IBV_SEND_INLINE;
		wr.wr.rdma.remote_addr = (uintptr_t)buf + BUF_LEN / 2 + off;
		wr.wr.rdma.rkey = o.mr->rkey;
		if (wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			sge->length = 8;
			wr.wr.atomic.remote_addr = (uintptr_t)buf + BUF_LEN / 2 + off;
			wr.wr.atomic.rkey = o.mr->rkey;
			wr.wr.atomic.compare_add = 1;
		}
		if (qp == o.ud) {
			wr.wr.ud.ah = o.ah;
			wr.wr.ud.remote_qpn = qp->qp_num;
			wr.wr.ud.remote_qkey = QKEY;
			if (!o.ah)
				return;
		}
		switch (bad) {
		case 4:
			if (qp == o.ud)
				wr.wr.ud.remote_qkey = next(s);
			else
				wr.wr.rdma.rkey = next(s);
			break;
		case 5:
			if (qp == o.ud)
				wr.wr.ud.remote_qpn = next(s) & 0xffffff;
			else
				wr.wr.rdma.remote_addr = next(s);
			break;
		case 6: wr.opcode = (enum ibv_wr_opcode)(next(s) % 32); break;
		case 7: wr.num_sge = rw.num_sge; break;
		default: break;
		}
		err = ibv_post_send(qp, &wr, &bwr);
	}
	if (err)
		atomic_fetch_add(&sh->refused, 1);
	else
		atomic_fetch_add(&sh->posted, 1);
}

static void *poster(void *arg)
{
	uint64_t s = (uintptr_t)arg;

	for (;;) {
		int k;

		pthread_rwlock_rdlock(&lock);
		for (k = 0; k < 8; k++)
			post_one(&s);
		pthread_rwlock_unlock(&lock);
		/* Outside the lock: the handle may be of a QP destroyed meanwhile. */
		if (doorbell_raw(ctx, next(&s) & 1 ? atomic_load(&rc_handle) :
						     atomic_load(&ud_handle)))
			atomic_fetch_add(&sh->refused, 1);
		if (next(&s) % 16 == 0)
			usleep(100);
	}
	return NULL; /* not reached: the child is killed */
}

static void *poller(void *arg)
{
	struct ibv_wc wc[16];
	uint64_t s = (uintptr_t)arg;

	for (;;) {
		int n = 0, k;

		pthread_rwlock_rdlock(&lock);
		if (o.cq) {
			n = ibv_poll_cq(o.cq, 16, wc);
			if (next(&s) % 8 == 0)
				ibv_req_notify_cq(o.cq, next(&s) & 1);
		}
		pthread_rwlock_unlock(&lock);
		for (k = 0; k < n; k++)
			atomic_fetch_add(wc[k].status == IBV_WC_SUCCESS ? &sh->completed :
									  &sh->failed, 1);
		if (n <= 0)
			usleep(50);
	}
	return NULL; /* not reached: the child is killed */
}

/* A value for a header field: mostly one that passes a first look, sometimes anything. */
static uint32_t header_value(uint64_t *s, struct rxe_queue_buf *q, size_t field)
{
	uint32_t prod = __atomic_load_n(&q->producer_index, __ATOMIC_RELAXED);
	uint32_t cons = __atomic_load_n(&q->consumer_index, __ATOMIC_RELAXED);
	uint64_t r = next(s);

	if (r % 4 == 0)
		return nasty(s) ^ (uint32_t)(r >> 32);
	switch (field) {
	case offsetof(struct rxe_queue_buf, producer_index):
		return cons + 1 + (r >> 8) % 8;
	case offsetof(struct rxe_queue_buf, consumer_index):
		return r & 0x100 ? prod + 1 + (r >> 16) % 8 : prod;
	case offsetof(struct rxe_queue_buf, index_mask):
		return (uint32_t[]){ 0, ~0u, (1u << ((r >> 8) % 32)) - 1,
				     (1u << ((r >> 8) % 32)) }[(r >> 16) % 4];
	default: /* log2_elem_size */
		return (uint32_t[]){ 0, 31, 32, 4, 12, (uint32_t)(r >> 40) }[(r >> 16) % 6];
	}
}

static const size_t hdr_field[] = {
	offsetof(struct rxe_queue_buf, producer_index),
	offsetof(struct rxe_queue_buf, consumer_index),
	offsetof(struct rxe_queue_buf, index_mask),
	offsetof(struct rxe_queue_buf, log2_elem_size),
};

/* Fields of a send WQE (the receive WQE's dma comes first in its own layout). */
static const size_t wqe_field[] = {
	offsetof(struct rxe_send_wqe, wr.opcode),
	offsetof(struct rxe_send_wqe, wr.send_flags),
	offsetof(struct rxe_send_wqe, wr.wr.ud.ah_num),
	offsetof(struct rxe_send_wqe, dma.length),
	offsetof(struct rxe_send_wqe, dma.resid),
	offsetof(struct rxe_send_wqe, dma.num_sge),
	offsetof(struct rxe_send_wqe, dma.cur_sge),
	offsetof(struct rxe_send_wqe, dma.sge_offset),
	offsetof(struct rxe_send_wqe, dma.sge[0].lkey),
	offsetof(struct rxe_send_wqe, dma.sge[0].length),
	offsetof(struct rxe_send_wqe, dma.sge[0].addr),
	offsetof(struct rxe_recv_wqe, dma.length),
	offsetof(struct rxe_recv_wqe, dma.num_sge),
	offsetof(struct rxe_recv_wqe, dma.sge[0].lkey),
	offsetof(struct rxe_recv_wqe, dma.sge[0].length),
};

static void *scribbler(void *arg)
{
	uint64_t s = (uintptr_t)arg;

	/*
	 * From the phase the child is killed in (for destroy, the one before, as destroying
	 * unmaps the queues): earlier, librxe, which trusts the queue headers, would crash
	 * the child before it got there.
	 */
	int from = sh->target == P_DESTROY ? P_BUSY : sh->target; /* destroy unmaps them */

	while (atomic_load(&sh->phase) != from)
		usleep(100);
	for (;;) {
		uint64_t r = next(&s);

		pthread_rwlock_rdlock(&lock);
		if (o.nmaps) {
			struct uverbs_map *m = &o.maps[r % o.nmaps];
			struct rxe_queue_buf *q = (void *)m->start;
			size_t len = m->end - m->start, data = offsetof(struct rxe_queue_buf, data);

			if ((r >> 8) % 4 == 0) {
				/*
				 * The indices; one write in 64 the mask or the element size, put
				 * back at once: librxe addresses its queue with them and would
				 * write outside it (the kernel keeps its own copies).
				 */
				int shape = (r >> 12) % 16 == 0;
				size_t f = hdr_field[(shape ? 2 : 0) + (r >> 16) % 2];
				uint32_t *at = (uint32_t *)((char *)q + f);
				uint32_t was = __atomic_load_n(at, __ATOMIC_RELAXED);

				__atomic_store_n(at, header_value(&s, q, f), __ATOMIC_RELEASE);
				if (shape)
					__atomic_store_n(at, was, __ATOMIC_RELEASE);
			} else if (len > data + 256) {
				/* A field of an element: slots of 2^7 .. 2^10 bytes, 0 .. 15. */
				size_t slot = (size_t)1 << (7 + (r >> 16) % 4);
				size_t at = data + slot * ((r >> 20) % 16) +
					    wqe_field[(r >> 24) % ARRAY_SIZE(wqe_field)];

				if (at + 8 <= len)
					__atomic_store_n((uint32_t *)((char *)q + (at & ~3ul)),
							 (r >> 28) % 2 ? nasty(&s) :
									 (uint32_t)(r >> 32) % 8,
							 __ATOMIC_RELAXED);
			}
			atomic_fetch_add(&sh->written, 1);
		}
		pthread_rwlock_unlock(&lock);
		if (r % 32 == 0)
			usleep(50);
	}
	return NULL; /* not reached: the child is killed */
}

static void on_fault(int sig)
{
	(void)sig;
	_exit(CRASHED);
}

/* Says the child is in phase P. */
static void enter(enum phase p)
{
	atomic_store(&sh->phase, p);
}

/*
 * Spends the rest of a phase: 20 ms, or, in the phase the child is to be killed in, until
 * the kill. A parent scheduled late (a debug kernel on a loaded host) then still kills it
 * in that phase, not in the next.
 */
static void dwell(void)
{
	do
		usleep(20000);
	while (atomic_load(&sh->phase) == sh->target);
}

/* The child: never returns; the parent kills it. */
static void child(uint64_t seed)
{
	pthread_t th;
	int k;

	signal(SIGSEGV, on_fault);
	signal(SIGBUS, on_fault);
	rng_seed(seed);
	ctx = open_device(devname);
	buf = aligned_alloc(4096, BUF_LEN);
	if (!ctx || !buf)
		_exit(1);
	memset(buf, 0, BUF_LEN);
	/* Writers first: four threads read-lock in loops, the main thread must get in. */
	pthread_rwlockattr_t la;

	pthread_rwlockattr_init(&la);
	pthread_rwlockattr_setkind_np(&la, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&lock, &la);
	pthread_rwlock_wrlock(&lock);
	create_all();
	pthread_rwlock_unlock(&lock);
	for (k = 0; k < 2; k++)
		pthread_create(&th, NULL, poster, (void *)(uintptr_t)(seed + k + 1));
	pthread_create(&th, NULL, poller, (void *)(uintptr_t)(seed + 3));
	if (hostile)
		pthread_create(&th, NULL, scribbler, (void *)(uintptr_t)(seed + 4));
	for (;;) {
		enter(P_TRAFFIC);
		dwell();

		enter(P_RESIZE);
		pthread_rwlock_wrlock(&lock);
		if (o.cq) {
			ibv_resize_cq(o.cq, 1 + rng32() % 1024);
			ibv_resize_cq(o.cq, 1 + rng32() % 32);
			/* The CQ's queue moved: the mappings are listed again. */
			k = uverbs_maps(o.maps, MAX_MAPS);
			o.nmaps = k > 0 ? k : 0;
		}
		pthread_rwlock_unlock(&lock);
		dwell();

		pthread_rwlock_rdlock(&lock);
		enter(P_ERROR);
		if (o.rc)
			to_state(o.rc, IBV_QPS_ERR);
		if (o.ud)
			to_state(o.ud, IBV_QPS_ERR);
		doorbell_raw(ctx, atomic_load(&rc_handle));
		doorbell_raw(ctx, atomic_load(&ud_handle));
		dwell();

		enter(P_RESET);
		if (o.rc && !to_state(o.rc, IBV_QPS_RESET))
			to_rts(o.rc);
		if (o.ud && !to_state(o.ud, IBV_QPS_RESET))
			to_rts(o.ud);
		pthread_rwlock_unlock(&lock);
		dwell();

		pthread_rwlock_wrlock(&lock);
		enter(P_BUSY);
		/* In use by the QPs, the MR and the AH: both must fail. */
		if (o.cq && !ibv_destroy_cq(o.cq)) {
			atomic_fetch_add(&sh->busy_gone, 1);
			o.cq = NULL;
		}
		if (o.pd && !ibv_dealloc_pd(o.pd)) {
			atomic_fetch_add(&sh->busy_gone, 1);
			o.pd = NULL;
		}
		pthread_rwlock_unlock(&lock);
		dwell();

		pthread_rwlock_wrlock(&lock);
		enter(P_DESTROY);
		destroy_all();
		pthread_rwlock_unlock(&lock);
		dwell();

		pthread_rwlock_wrlock(&lock);
		enter(P_RECREATE);
		create_all();
		pthread_rwlock_unlock(&lock);
		dwell();
	}
}

/* --- The parent. */

/* UD loopback traffic on fresh objects: 0 or an errno, the step in *what. */
static int still_works(struct ibv_context *c, const char **what)
{
	struct ibv_wc wc[8];
	double end;
	int k, got = 0, bad = 0, err = 0, n;

	ctx = c;
	*what = "create the objects";
	create_all();
	if (!o.pd || !o.cq || !o.mr || !o.ah || !o.ud) {
		err = errno ? errno : EIO;
		goto out;
	}
	for (k = 0; k < 4 && !err; k++) {
		struct ibv_sge rs = { .addr = (uintptr_t)buf + 4096 + k * 256, .length = 256,
				      .lkey = o.mr->lkey };
		struct ibv_sge ss = { .addr = (uintptr_t)buf + k * 64, .length = 64,
				      .lkey = o.mr->lkey };
		struct ibv_recv_wr rw = { .wr_id = k, .sg_list = &rs, .num_sge = 1 }, *brw;
		struct ibv_send_wr sw = {
			.wr_id = 100 + k, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED,
			.wr = { .ud = { .ah = o.ah, .remote_qpn = o.ud->qp_num,
					.remote_qkey = QKEY } },
		}, *bsw;

		*what = "ibv_post_recv";
		err = ibv_post_recv(o.ud, &rw, &brw);
		if (!err) {
			*what = "ibv_post_send";
			err = ibv_post_send(o.ud, &sw, &bsw);
		}
	}
	*what = "completions";
	for (end = now_s() + 5 * time_scale(); !err && got < 8 && now_s() < end;) {
		n = ibv_poll_cq(o.cq, 8, wc);
		for (k = 0; k < n; k++)
			bad += wc[k].status != IBV_WC_SUCCESS;
		got += n > 0 ? n : 0;
		if (n <= 0)
			usleep(1000);
	}
	if (!err && (got != 8 || bad))
		err = EIO;
out:
	destroy_all();
	return err;
}

/* Waits up to SECS for PID to end; its status in *ST. 1 if it ended. */
static int reap(pid_t pid, double secs, int *st)
{
	double end = now_s() + secs;

	for (;;) {
		pid_t w = waitpid(pid, st, WNOHANG);

		if (w == pid)
			return 1;
		if (w < 0 || now_s() > end)
			return 0;
		usleep(500);
	}
}

int main(int argc, char **argv)
{
	int rounds = 70, c, r, killed[NPHASES] = {}, stuck = 0, clean_bad = 0, crashed = 0;
	int hostile_killed[NPHASES] = {}, hostile_early = 0;
	long posted = 0, completed = 0, failed = 0, refused = 0, written = 0, busy_gone = 0;
	double worst = 0;
	uint64_t seed = 0;
	struct ibv_context *c0;
	const char *what = "open the device";

	devname = getenv("RRXE_DEV");
	while ((c = getopt(argc, argv, "d:g:r:s:vh")) != -1) {
		switch (c) {
		case 'd': devname = optarg; break;
		case 'g': gid_index = atoi(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'v': verbose = 1; break;
		default:
			fprintf(c == 'h' ? stdout : stderr,
				"Usage: verbs-storm [-d DEV] [-g GID_INDEX] [-r ROUNDS] [-s SEED]"
				" [-v]\n"
				"  -r ROUNDS  children, every other one hostile (default 70: each\n"
				"             phase killed five times, clean and hostile)\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (optind != argc || rounds < 2 * NPHASES) {
		fprintf(stderr, "verbs-storm: at least %d rounds (each phase, clean and hostile)\n",
			2 * NPHASES);
		return 2;
	}
	if (!seed)
		seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	rng_seed(seed);
	setvbuf(stdout, NULL, _IOLBF, 0);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	c0 = open_device(devname);
	if (sh == MAP_FAILED || !c0) {
		printf("Bail out! cannot open %s\n", devname ? devname : "a device");
		return 1;
	}
	devname = strdup(ibv_get_device_name(c0->device));
	gid_index = find_gid(c0, PORT, gid_index, &gid);
	ibv_close_device(c0);
	if (gid_index < 0) {
		printf("Bail out! no RoCE v2 GID on %s\n", devname);
		return 1;
	}
	note("verbs-storm on %s, seed 0x%llx (-s to repeat), %d rounds, GID index %d", devname,
	     (unsigned long long)seed, rounds, gid_index);

	for (r = 0; r < rounds; r++) {
		enum phase target = (r / 2) % NPHASES;
		uint64_t cseed = rng64();
		double t0;
		int st = 0, reached = 0;
		pid_t pid;

		hostile = r % 2;
		memset(sh, 0, sizeof(*sh));
		atomic_store(&sh->phase, -1);
		sh->target = target;
		fflush(stdout);
		pid = fork();
		if (pid < 0) {
			ok(0, "fork: %s", strerror(errno));
			break;
		}
		if (pid == 0)
			child(cseed);
		/* Until the child is in its phase (it cycles through all in about 0.2 s). */
		for (t0 = now_s(); now_s() < t0 + 30 * time_scale(); usleep(200)) {
			if (atomic_load(&sh->phase) == (int)target) {
				reached = 1;
				break;
			}
			if (waitpid(pid, &st, WNOHANG) == pid) {
				pid = 0;
				break;
			}
		}
		if (pid) {
			/* A hostile child scribbles from now on: it gets up to 20 ms. */
			usleep(hostile ? 2000 + rng32() % 18000 : rng32() % 3000);
			kill(pid, SIGKILL);
			t0 = now_s();
			if (!reap(pid, 10 * time_scale(), &st)) {
				stuck++;
				note("round %d: the child was not reaped 10 s after SIGKILL in %s",
				     r, phase_name[target]);
				kill(pid, SIGKILL);
				reap(pid, 120, &st);
			}
			if (now_s() - t0 > worst)
				worst = now_s() - t0;
		}
		/* Killed while still in the phase: the phase it says last is the target. */
		int by_kill = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL &&
			      atomic_load(&sh->phase) == (int)target;
		int fault = WIFEXITED(st) && WEXITSTATUS(st) == CRASHED;

		if (verbose || (!hostile && !(reached && by_kill)))
			note("round %d (%s, %s): %s, status 0x%x; %ld posted, %ld completed, "
			     "%ld in error", r, hostile ? "hostile" : "clean", phase_name[target],
			     reached ? "reached" : "not reached", st, atomic_load(&sh->posted),
			     atomic_load(&sh->completed), atomic_load(&sh->failed));
		busy_gone += atomic_load(&sh->busy_gone);
		if (hostile) {
			written += atomic_load(&sh->written);
			hostile_killed[target] += reached && by_kill;
			hostile_early += !reached;
			crashed += fault;
			continue;
		}
		if (reached && by_kill)
			killed[target]++;
		else
			clean_bad++;
		posted += atomic_load(&sh->posted);
		completed += atomic_load(&sh->completed);
		failed += atomic_load(&sh->failed);
		refused += atomic_load(&sh->refused);
	}

	ok(!stuck, "every child reaped within 10 s of SIGKILL (%d not; slowest %.3f s)", stuck,
	   worst);
	ok(!clean_bad, "every clean child reached its phase and died there of SIGKILL (%d did "
	   "not)", clean_bad);
	for (r = 0; r < NPHASES; r++)
		ok(killed[r] > 0, "killed in phase %s: %d clean children", phase_name[r],
		   killed[r]);
	ok(!busy_gone, "destroying a CQ or PD in use always failed (%ld succeeded)", busy_gone);
	ok(completed > 0, "clean children: %ld work requests posted, %ld refused, %ld "
	   "completions, %ld in error", posted, refused, completed, failed);
	note("hostile children: %d crashed in userspace; %d ended before their phase; %ld "
	     "scribbler writes; killed in their phase:", crashed, hostile_early, written);
	for (r = 0; r < NPHASES; r++)
		note("  %-9s %d", phase_name[r], hostile_killed[r]);
	ok(written > 0, "hostile children scribbled their queues (%ld writes)", written);

	c0 = open_device(devname);
	buf = aligned_alloc(4096, BUF_LEN);
	c = c0 && buf ? still_works(c0, &what) : ENODEV;
	ok(!c, "afterwards: UD loopback traffic on %s works (%s: %s)", devname,
	   c ? what : "all", c ? strerror(c) : "ok");
	if (c0)
		ibv_close_device(c0);
	return tap_done();
}
