// SPDX-License-Identifier: GPL-2.0
/*
 * burst-check: the rules a loopback burst (several packets of one SEND or RDMA WRITE, or
 * responses of one RDMA READ, between two QPs of one device as one datagram, see rrxe.rst)
 * must keep, which per-packet sending keeps by itself. Two RC QPs of one device, connected
 * to each other. One TAP line per check; the same outcome is required with the module
 * parameter bursts on and off (packets), which burst-check.sh sets.
 *
 *   data      SENDs, RDMA WRITEs and RDMA READs of 1 MTU + 1, 2 MTUs, 28 KiB + 1, 60 KiB,
 *             64 KiB and 1 MiB + 3 bytes, a WRITE with immediate data of 3 MTUs: every
 *             byte, byte_len and the immediate checked
 *   mtu256    the same at path MTU 256 (bursts of 64 packets, the most one carries)
 *   mtu       the sender's path MTU 1024 and the target's 256, then 256 and 1024: a 64
 *             KiB WRITE and a 64 KiB SEND fail with IBV_WC_REM_INV_REQ_ERR (their first
 *             packet's length is wrong for the target), a 64 KiB READ with a retry
 *             count of 6 with IBV_WC_RETRY_EXC_ERR (its responses' lengths are wrong
 *             for the requester: dropped, which is no progress); nothing lands
 *   single    60 KiB WRITEs, SENDs and READs posted one at a time, each waited for, with
 *             a retransmission timeout of about 1 s: each completes within 0.5 s (a burst
 *             acknowledged or taken short of its last PSN would wait for the timeout)
 *   counters  an 8 MiB WRITE and an 8 MiB READ: sent_pkts and rcvd_pkts grow alike, by
 *             at least their 8,192 packets at MTU 1024; with -b, sent_bursts grows by
 *             each
 *
 *   burst-check [-d DEV] [-t CHECK,...] [-b]
 */
#include <getopt.h>

#include "rrxe-test.h"

#define PORT 1
#define BIG (8u << 20)
#define TIMEOUT_S 20.0

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static const char *devname;
static union ibv_gid gid;
static int gid_index;
static int want_bursts;
static uint8_t *src, *dst;
static struct ibv_mr *smr, *dmr;

/* Two connected RC QPs: 0 sends, 1 receives. */
struct pair {
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2];
};

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

/*
 * A pair with path MTUs MTU0 (sender) and MTU1, retransmission timeout code TIMEOUT and
 * retry count RETRY (7: for ever).
 */
static int pair_new(struct pair *p, enum ibv_mtu mtu0, enum ibv_mtu mtu1, uint8_t timeout,
		    uint8_t retry)
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
		struct rc_conn c = {
			.port = PORT, .sgid_index = gid_index, .dgid = gid,
			.mtu = i ? mtu1 : mtu0, .dest_qpn = p->qp[!i]->qp_num,
			.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, .rd_atomic = 1,
			.min_rnr_timer = 1,
			.timeout = timeout, .retry_cnt = retry, .rnr_retry = 7,
		};

		err = connect_rc_qp(p->qp[i], &c, NULL);
		if (err) {
			errno = err;
			goto fail;
		}
	}
	return 0;
fail:
	note("QP pair setup: %s", strerror(errno));
	pair_free(p);
	return -1;
}

/* Waits for one completion on side I for at most SECS; 1 if one came. */
static int wait_wc(struct pair *p, int i, struct ibv_wc *wc, double secs)
{
	double end = now_s() + secs * time_scale();
	int n;

	while ((n = ibv_poll_cq(p->cq[i], 1, wc)) == 0 && now_s() < end)
		;
	return n == 1;
}

/* Posts a receive of the whole target buffer; 0 or an error. */
static int post_recv(struct pair *p)
{
	struct ibv_sge sge = { (uintptr_t)dst, BIG, dmr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(p->qp[1], &wr, &bad);
}

/*
 * Sends LEN bytes of src (a SEND, or an RDMA WRITE to dst, with immediate IMM if OP says
 * so) and waits for the send completion; its status, or -1 if none came.
 */
static int xfer(struct pair *p, enum ibv_wr_opcode op, uint32_t len, uint32_t imm)
{
	struct ibv_sge sge = { (uintptr_t)src, len, smr->lkey };
	struct ibv_send_wr wr = { .opcode = op, .sg_list = &sge, .num_sge = 1,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	int err;

	wr.imm_data = htobe32(imm);
	wr.wr.rdma.remote_addr = (uintptr_t)dst;
	wr.wr.rdma.rkey = dmr->rkey;
	err = ibv_post_send(p->qp[0], &wr, &bad);
	if (err) {
		note("ibv_post_send: %s", strerror(err));
		return -1;
	}
	return wait_wc(p, 0, &wc, TIMEOUT_S) ? (int)wc.status : -1;
}

/*
 * Fills the buffer the data comes from (src; dst for an RDMA READ, OP) with fresh bytes
 * and poisons the other, for LEN bytes.
 */
static void fresh(enum ibv_wr_opcode op, uint32_t len)
{
	int read = op == IBV_WR_RDMA_READ;

	fill_random(read ? dst : src, len);
	memset(read ? src : dst, 0xa5, len);
}

/* One message of LEN bytes with OP: completion, receive and every byte. */
static int one(struct pair *p, enum ibv_wr_opcode op, uint32_t len)
{
	int recv = op != IBV_WR_RDMA_WRITE && op != IBV_WR_RDMA_READ;
	struct ibv_wc wc;
	int st;

	fresh(op, len);
	if (recv && post_recv(p))
		return tap_diag("ibv_post_recv failed");
	st = xfer(p, op, len, len ^ 0x5a5a);
	if (st != IBV_WC_SUCCESS)
		return tap_diag("%u bytes: send completion %d", len, st);
	if (recv) {
		if (!wait_wc(p, 1, &wc, TIMEOUT_S))
			return tap_diag("%u bytes: no receive completion", len);
		if (wc.status != IBV_WC_SUCCESS || wc.byte_len != len)
			return tap_diag("%u bytes: receive %s, byte_len %u", len,
					ibv_wc_status_str(wc.status), wc.byte_len);
		if (op == IBV_WR_RDMA_WRITE_WITH_IMM &&
		    (!(wc.wc_flags & IBV_WC_WITH_IMM) || be32toh(wc.imm_data) != (len ^ 0x5a5a)))
			return tap_diag("%u bytes: immediate data missing or wrong", len);
	}
	if (memcmp(src, dst, len))
		return tap_diag("%u bytes: the data differ", len);
	return 0;
}

/* Every size and operation of the data check at path MTU MTU_CODE; the failures. */
static int data_at(enum ibv_mtu mtu_code)
{
	const uint32_t mtu = 128u << mtu_code;
	const uint32_t sizes[] = { mtu + 1, 2 * mtu, (28 << 10) + 1, 60 << 10, 64 << 10,
				   (1 << 20) + 3 };
	const enum ibv_wr_opcode ops[] = { IBV_WR_SEND, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ };
	struct pair p;
	int bad = 0;
	size_t i, j;

	if (pair_new(&p, mtu_code, mtu_code, 14, 7))
		return tap_diag("setup at MTU %u failed", mtu);
	for (i = 0; i < ARRAY_SIZE(ops); i++)
		for (j = 0; j < ARRAY_SIZE(sizes); j++)
			bad += one(&p, ops[i], sizes[j]);
	bad += one(&p, IBV_WR_RDMA_WRITE_WITH_IMM, 3 * mtu);
	pair_free(&p);
	return bad;
}

static void check_data(enum ibv_mtu mtu_code, uint32_t mtu)
{
	ok(!data_at(mtu_code), "data: SENDs, WRITEs and READs of 1 MTU + 1 to 1 MiB + 3 "
	   "bytes, a WRITE with immediate of 3 MTUs, every byte (MTU %u)", mtu);
}

static void check_mtu256(enum ibv_mtu mtu_code, uint32_t mtu)
{
	(void)mtu_code;
	(void)mtu;
	ok(!data_at(IBV_MTU_256), "mtu256: the data check at path MTU 256");
}

/*
 * A 64 KiB WRITE, SEND and READ between QPs of path MTUs A and B: the WRITE and the SEND
 * fail with IBV_WC_REM_INV_REQ_ERR, the READ with IBV_WC_RETRY_EXC_ERR; nothing lands.
 */
static int mismatch(enum ibv_mtu a, enum ibv_mtu b)
{
	const enum ibv_wr_opcode ops[] = { IBV_WR_RDMA_WRITE, IBV_WR_SEND, IBV_WR_RDMA_READ };
	const char *names[] = { "WRITE", "SEND", "READ" };
	const uint32_t len = 64 << 10;
	int bad = 0;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		int read = ops[i] == IBV_WR_RDMA_READ;
		uint8_t *target = read ? src : dst;
		struct pair p;
		uint32_t j;
		int st;

		/* Six retries: a READ whose responses are all dropped must fail. */
		if (pair_new(&p, a, b, 14, 6))
			return 1;
		fresh(ops[i], len);
		if (ops[i] == IBV_WR_SEND && post_recv(&p))
			bad += tap_diag("ibv_post_recv failed");
		st = xfer(&p, ops[i], len, 0);
		if (st != (read ? IBV_WC_RETRY_EXC_ERR : IBV_WC_REM_INV_REQ_ERR))
			bad += tap_diag("MTU %d to %d, %s: send completion %d", a, b, names[i],
					st);
		else
			note("MTU %d to %d, %s: %s", a, b, names[i],
			     ibv_wc_status_str((enum ibv_wc_status)st));
		for (j = 0; j < len && target[j] == 0xa5; j++)
			;
		if (j < len)
			bad += tap_diag("MTU %d to %d, %s: byte %u landed", a, b, names[i], j);
		pair_free(&p);
	}
	return bad;
}

static void check_mtu(enum ibv_mtu mtu_code, uint32_t mtu)
{
	int bad;

	if (mtu_code < IBV_MTU_1024) {
		skip("mtu: the port's MTU is below 1024");
		return;
	}
	bad = mismatch(IBV_MTU_1024, IBV_MTU_256) + mismatch(IBV_MTU_256, IBV_MTU_1024);
	ok(!bad, "mtu: 64 KiB WRITEs and SENDs between path MTUs 1024 and 256 fail with "
		 "IBV_WC_REM_INV_REQ_ERR, READs with IBV_WC_RETRY_EXC_ERR; nothing lands");
}

static void check_single(enum ibv_mtu mtu_code, uint32_t mtu)
{
	const enum ibv_wr_opcode ops[] = { IBV_WR_RDMA_WRITE, IBV_WR_SEND, IBV_WR_RDMA_READ };
	double worst = 0;
	struct pair p;
	int bad = 0, i, n;

	/* Timeout code 18: 4.096 us * 2^18, about 1.07 s. */
	if (pair_new(&p, mtu_code, mtu_code, 18, 7)) {
		ok(0, "single: setup");
		return;
	}
	for (n = 0; n < 20 && !bad; n++)
		for (i = 0; i < (int)ARRAY_SIZE(ops) && !bad; i++) {
			double t = now_s(), took;

			bad += one(&p, ops[i], 60 << 10);
			took = now_s() - t;
			if (took > worst)
				worst = took;
		}
	ok(!bad && worst < 0.5 * time_scale(),
	   "single: 60 KiB WRITEs, SENDs and READs one at a time each complete within %.1f s "
	   "(slowest %.3f s)", 0.5 * time_scale(), worst);
	pair_free(&p);
}

/* An 8 MiB OP: its packets counted sent and received alike, in bursts if -b. */
static int counted(struct pair *p, enum ibv_wr_opcode op, uint32_t mtu)
{
	long long s0, r0, b0, s1, r1, b1;
	int bad;

	s0 = hw_counter(devname, PORT, "sent_pkts");
	r0 = hw_counter(devname, PORT, "rcvd_pkts");
	b0 = hw_counter(devname, PORT, "sent_bursts");
	bad = one(p, op, BIG);
	s1 = hw_counter(devname, PORT, "sent_pkts");
	r1 = hw_counter(devname, PORT, "rcvd_pkts");
	b1 = hw_counter(devname, PORT, "sent_bursts");
	note("8 MiB %s at MTU %u: sent_pkts +%lld, rcvd_pkts +%lld, sent_bursts +%lld",
	     op == IBV_WR_RDMA_READ ? "READ" : "WRITE", mtu, s1 - s0, r1 - r0, b1 - b0);
	return bad || s1 - s0 != r1 - r0 || s1 - s0 < BIG / mtu || (want_bursts && b1 == b0) ||
	       (!want_bursts && b1 != b0);
}

static void check_counters(enum ibv_mtu mtu_code, uint32_t mtu)
{
	struct pair p;
	int bad;

	if (pair_new(&p, mtu_code, mtu_code, 14, 7)) {
		ok(0, "counters: setup");
		return;
	}
	bad = counted(&p, IBV_WR_RDMA_WRITE, mtu) + counted(&p, IBV_WR_RDMA_READ, mtu);
	ok(!bad, "counters: an 8 MiB WRITE and an 8 MiB READ count their %u packets (and "
	   "ACKs) sent and received%s", BIG / mtu, want_bursts ? ", in bursts" : ", no burst");
	pair_free(&p);
}

static const struct {
	const char *name;
	void (*run)(enum ibv_mtu mtu_code, uint32_t mtu);
} checks[] = {
	{ "data", check_data },
	{ "mtu256", check_mtu256 },
	{ "mtu", check_mtu },
	{ "single", check_single },
	{ "counters", check_counters },
};

int main(int argc, char **argv)
{
	const char *only = NULL;
	struct ibv_port_attr pa;
	char list[256];
	unsigned int i;
	int c;

	while ((c = getopt(argc, argv, "d:t:b")) != -1) {
		if (c == 'd')
			devname = optarg;
		else if (c == 't')
			only = optarg;
		else if (c == 'b')
			want_bursts = 1;
		else
			bail_out("usage: burst-check [-d DEV] [-t CHECK,...] [-b]");
	}
	ctx = open_device(devname);
	if (!ctx)
		bail_out("cannot open the device");
	pd = ibv_alloc_pd(ctx);
	gid_index = find_gid(ctx, PORT, -1, &gid);
	src = aligned_alloc(4096, BIG);
	dst = aligned_alloc(4096, BIG);
	if (!pd || gid_index < 0 || !src || !dst || ibv_query_port(ctx, PORT, &pa))
		bail_out("setup: %s", strerror(errno));
	smr = ibv_reg_mr(pd, src, BIG, IBV_ACCESS_LOCAL_WRITE);
	dmr = ibv_reg_mr(pd, dst, BIG,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!smr || !dmr)
		bail_out("ibv_reg_mr: %s", strerror(errno));
	rng_seed(getpid());
	note("path MTU %u bytes", 128u << pa.active_mtu);
	snprintf(list, sizeof(list), ",%s,", only ? only : "");
	for (i = 0; i < ARRAY_SIZE(checks); i++) {
		char want[64];

		snprintf(want, sizeof(want), ",%s,", checks[i].name);
		if (!only || strstr(list, want))
			checks[i].run(pa.active_mtu, 128u << pa.active_mtu);
	}
	ibv_dereg_mr(smr);
	ibv_dereg_mr(dmr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return tap_done();
}
