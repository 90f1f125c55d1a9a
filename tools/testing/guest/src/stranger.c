// SPDX-License-Identifier: GPL-2.0
/*
 * stranger: whose thread runs the engine of a local QP that a loopback packet reaches
 * (rrxe: its hw_counter work_runs counts the passes its work items run). A QP connected
 * to the sender has its pass run in the sender's system call (a message between two
 * local QPs wakes no work item); a QP that another QP merely names as its destination,
 * which any local user's QP may do, gets its own work item: no stranger's thread runs
 * (and, preempted, holds up) its engine.
 *
 *   peer      UC QPs P0 and P1 connected to each other: N 8-byte RDMA WRITEs from P0,
 *             each waited for (its completion, then its bytes in P1's memory), wake
 *             fewer than N/4 work items (P1's passes run in P0's doorbells)
 *   stranger  UC QPs V0 and V1 connected to each other, and a UC QP S connected to V0:
 *             N 8-byte RDMA WRITEs from S, each waited for until its bytes are in
 *             V0's memory (S's packets pass V0's admission: on one device S's addresses
 *             are V1's), their doorbells run in S's calls (doorbell_inline grows by N),
 *             and wake at least N/2 work items (V0's passes, about one for each WRITE,
 *             none in S's calls; N/2 leaves room for a run that takes two)
 *   refused   RC QPs V0 and V1 connected to each other, and a UC QP S connected to V0:
 *             N 8-byte RDMA WRITEs from S, each waited for until V0 has refused it
 *             where it arrived (UC at an RC QP: rcvd_bad_type_state), wake fewer than
 *             N/4 work items: a refused packet is not queued, so nothing runs for it
 *
 * The counts start once the work items that connecting the QPs scheduled have run.
 *
 *   stranger [-d DEV] [-n N]
 */
#include <getopt.h>

#include "rrxe-test.h"

#define PORT 1
#define TIMEOUT_S 10.0

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static union ibv_gid gid;
static int gid_index;
static enum ibv_mtu path_mtu;
static const char *dev_name;
/* The source of the WRITEs, then P1's target. */
static volatile uint64_t buf[2];

static struct ibv_qp *new_qp(enum ibv_qp_type type)
{
	struct ibv_qp_init_attr a = {
		.qp_type = type, .send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &a);

	if (!qp)
		bail_out("ibv_create_qp: %s", strerror(errno));
	return qp;
}

static void connect_uc(struct ibv_qp *qp, uint32_t dest_qpn)
{
	int err = connect_uc_qp(qp, PORT, gid_index, &gid, path_mtu, dest_qpn,
				IBV_ACCESS_REMOTE_WRITE);

	if (err)
		bail_out("connecting UC QP %u: %s", qp->qp_num, strerror(err));
}

static void connect_rc(struct ibv_qp *qp, uint32_t dest_qpn)
{
	struct rc_conn c = {
		.port = PORT, .sgid_index = gid_index, .dgid = gid, .mtu = path_mtu,
		.dest_qpn = dest_qpn, .access = IBV_ACCESS_REMOTE_WRITE, .rd_atomic = 1,
		.min_rnr_timer = 1, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
	};
	const char *step = "";
	int err = connect_rc_qp(qp, &c, &step);

	if (err)
		bail_out("connecting RC QP %u (%s): %s", qp->qp_num, step, strerror(err));
}

/* Writes VAL from QP to P1's target and waits for its completion; 0, or 1 (said why). */
static int write_one(struct ibv_qp *qp, uint64_t val)
{
	struct ibv_sge sge = { (uintptr_t)&buf[0], sizeof(buf[0]), mr->lkey };
	struct ibv_send_wr wr = { .wr_id = val, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { (uintptr_t)&buf[1], mr->rkey } }, *bad;
	double end = now_s() + TIMEOUT_S * time_scale();
	struct ibv_wc wc;
	int n, err;

	buf[0] = val;
	err = ibv_post_send(qp, &wr, &bad);
	if (err)
		return tap_diag("ibv_post_send: %s", strerror(err));
	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0 && now_s() < end)
		;
	if (n != 1)
		return tap_diag("no completion of WRITE %llu", (unsigned long long)val);
	if (wc.status != IBV_WC_SUCCESS)
		return tap_diag("WRITE %llu: %s", (unsigned long long)val,
				ibv_wc_status_str(wc.status));
	return 0;
}

/* Counter NAME of the device, or bails out. */
static long long counter(const char *name)
{
	long long v = hw_counter(dev_name, PORT, name);

	if (v < 0)
		bail_out("no hw_counter %s on %s", name, dev_name);
	return v;
}

/* Waits until work_runs stays put for 100 ms (at most 5 s): the QPs' connect-time runs. */
static void settle(void)
{
	double end = now_s() + 5.0 * time_scale();
	long long runs = counter("work_runs"), before;

	do {
		usleep(100000);
		before = runs;
		runs = counter("work_runs");
	} while (runs != before && now_s() < end);
}

/* Waits until COND() holds; 0, or 1 (said why). */
static int wait_for(int (*cond)(uint64_t), uint64_t arg, const char *what)
{
	double end = now_s() + TIMEOUT_S * time_scale();

	while (!cond(arg))
		if (now_s() > end)
			return tap_diag("%s %llu: not seen in %.0f s", what, (unsigned long long)arg,
					TIMEOUT_S * time_scale());
	return 0;
}

static int written(uint64_t val)
{
	return buf[1] == val;
}

/* Whether the device's rcvd_bad_type_state has reached WANT. */
static int dropped(uint64_t want)
{
	return hw_counter(dev_name, PORT, "rcvd_bad_type_state") >= (long long)want;
}

static void peer(int n)
{
	struct ibv_qp *p0 = new_qp(IBV_QPT_UC), *p1 = new_qp(IBV_QPT_UC);
	long long runs;
	int i, bad = 0;

	connect_uc(p0, p1->qp_num);
	connect_uc(p1, p0->qp_num);
	settle();
	runs = counter("work_runs");
	for (i = 1; i <= n && !bad; i++)
		bad = write_one(p0, i) || wait_for(written, i, "WRITE");
	runs = counter("work_runs") - runs;
	ok(!bad && runs < n / 4,
	   "peer: %d WRITEs from UC QP %u to UC QP %u, its peer: %lld work item runs (want < %d)",
	   n, p0->qp_num, p1->qp_num, runs, n / 4);
	ibv_destroy_qp(p1);
	ibv_destroy_qp(p0);
}

static void stranger(int n)
{
	struct ibv_qp *v0 = new_qp(IBV_QPT_UC), *v1 = new_qp(IBV_QPT_UC);
	struct ibv_qp *s = new_qp(IBV_QPT_UC);
	long long runs, inl;
	int i, bad = 0;

	connect_uc(v0, v1->qp_num);
	connect_uc(v1, v0->qp_num);
	connect_uc(s, v0->qp_num);
	settle();
	inl = counter("doorbell_inline");
	runs = counter("work_runs");
	for (i = 1; i <= n && !bad; i++)
		bad = write_one(s, i) || wait_for(written, i, "WRITE");
	runs = counter("work_runs") - runs;
	inl = counter("doorbell_inline") - inl;
	ok(!bad && inl >= n && runs >= n / 2,
	   "stranger: %d WRITEs from UC QP %u to UC QP %u (peer %u): %lld doorbells in the "
	   "caller (want >= %d), %lld work item runs (want >= %d)",
	   n, s->qp_num, v0->qp_num, v1->qp_num, inl, n, runs, n / 2);
	ibv_destroy_qp(s);
	ibv_destroy_qp(v1);
	ibv_destroy_qp(v0);
}

static void refused(int n)
{
	struct ibv_qp *v0 = new_qp(IBV_QPT_RC), *v1 = new_qp(IBV_QPT_RC);
	struct ibv_qp *s = new_qp(IBV_QPT_UC);
	long long runs, drops;
	int i, bad = 0;

	connect_rc(v0, v1->qp_num);
	connect_rc(v1, v0->qp_num);
	connect_uc(s, v0->qp_num);
	settle();
	drops = counter("rcvd_bad_type_state");
	runs = counter("work_runs");
	for (i = 1; i <= n && !bad; i++)
		bad = write_one(s, i) || wait_for(dropped, drops + i, "drop of WRITE");
	runs = counter("work_runs") - runs;
	ok(!bad && runs < n / 4,
	   "refused: %d WRITEs from UC QP %u to RC QP %u (peer %u), each refused where it "
	   "arrived: %lld work item runs (want < %d)",
	   n, s->qp_num, v0->qp_num, v1->qp_num, runs, n / 4);
	ibv_destroy_qp(s);
	ibv_destroy_qp(v1);
	ibv_destroy_qp(v0);
}

int main(int argc, char **argv)
{
	struct ibv_port_attr pa;
	int n = 200, c;

	while ((c = getopt(argc, argv, "d:n:")) != -1) {
		switch (c) {
		case 'd':
			dev_name = optarg;
			break;
		case 'n':
			n = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: stranger [-d DEV] [-n N]\n");
			return 2;
		}
	}
	ctx = open_device(dev_name);
	if (!ctx)
		bail_out("no device");
	dev_name = ibv_get_device_name(ctx->device);
	gid_index = find_gid(ctx, PORT, -1, &gid);
	if (gid_index < 0)
		bail_out("no RoCE v2 GID");
	if (ibv_query_port(ctx, PORT, &pa))
		bail_out("ibv_query_port: %s", strerror(errno));
	path_mtu = pa.active_mtu;
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	mr = cq ? ibv_reg_mr(pd, (void *)buf, sizeof(buf),
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) : NULL;
	if (!mr)
		bail_out("PD, CQ or MR: %s", strerror(errno));
	note("%s, GID index %d, %d WRITEs each", dev_name, gid_index, n);
	peer(n);
	stranger(n);
	refused(n);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return tap_done();
}
