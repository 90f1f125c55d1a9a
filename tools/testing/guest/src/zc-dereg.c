// SPDX-License-Identifier: GPL-2.0
/*
 * Zero-copy transmit against a source buffer deregistered and unmapped while its packets
 * wait in a queue (tools/testing/guest/zero-copy.sh delays the way with netem):
 *
 *   zc-dereg -d DEV_A -D DEV_B [-s SIZE] [-u TIMEOUT] [-r ROUNDS]
 *
 * An RC QP on DEV_A and one on DEV_B (two devices, e.g. on the ends of a veth pair) are
 * connected (ACK timeout TIMEOUT, default 21: 8.6 s, longer than the delay, so that
 * nothing is sent again). Each round, A RDMA WRITEs SIZE bytes (default 64 KiB: few
 * enough packets that the requester sends them all at once) of a fresh pattern from an
 * mmap'ed buffer registered for that WRITE into B's memory, waits until DEV_A's
 * sent_zero_copy counter has grown by the WRITE's packets (all sent by reference and
 * queued), checks that the WRITE has not completed yet (its packets still wait), then
 * deregisters the source MR, unmaps the buffer and fills newly mapped memory of four
 * times its size with another byte (so that freed pages are reused at once), and only
 * then waits for the WRITE's completion. The packets carry references to the pages
 * they send: the WRITE must complete successfully and B's memory must hold the pattern.
 * Had the pages gone
 * with the mapping, the packets would carry other bytes (dropped for their ICRC, and the
 * retry fails: local protection error) or, on the debug kernel, KASAN would report their
 * read. DEV_A's sent_zero_copy counter must grow (the test is about packets sent by
 * reference), which needs the module parameter zero_copy on.
 *
 * TAP output, one line per round; exit 1 on any failure.
 */
#include <getopt.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rrxe-test.h"

struct end {
	const char *name;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	union ibv_gid gid;
	int gid_index;
	enum ibv_mtu mtu;
	uint32_t psn;
};

static uint32_t mtu_bytes;

static int open_end(struct end *e)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_port_attr pa;

	e->ctx = open_device(e->name);
	if (!e->ctx)
		return -1;
	e->gid_index = find_gid(e->ctx, 1, -1, &e->gid);
	if (e->gid_index < 0 || ibv_query_port(e->ctx, 1, &pa)) {
		fprintf(stderr, "%s: no RoCE v2 IPv4-mapped GID\n", e->name);
		return -1;
	}
	e->mtu = pa.active_mtu;
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = e->pd ? ibv_create_cq(e->ctx, 16, NULL, NULL, 0) : NULL;
	qa.send_cq = qa.recv_cq = e->cq;
	e->qp = e->cq ? ibv_create_qp(e->pd, &qa) : NULL;
	if (!e->qp) {
		fprintf(stderr, "%s: PD, CQ or QP: %s\n", e->name, strerror(errno));
		return -1;
	}
	e->psn = rng32() & 0xffffff;
	return 0;
}

static int connect_end(struct end *s, const struct end *d, uint8_t timeout)
{
	struct rc_conn c = {
		.port = 1, .sgid_index = s->gid_index, .dgid = d->gid,
		.mtu = s->mtu < d->mtu ? s->mtu : d->mtu,
		.dest_qpn = d->qp->qp_num, .rq_psn = d->psn, .sq_psn = s->psn,
		.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, .rd_atomic = 1,
		.min_rnr_timer = 12, .timeout = timeout, .retry_cnt = 7, .rnr_retry = 7,
	};
	const char *step;
	int err = connect_rc_qp(s->qp, &c, &step);

	if (err)
		fprintf(stderr, "%s: modify to %s: %s\n", s->name, step, strerror(err));
	return err;
}

/* Waits until A's sent_zero_copy reaches WANT; 0 if it did. */
static int wait_zero_copy(const struct end *a, long long want, int n)
{
	double end = now_s() + 30 * time_scale();
	long long v;

	while ((v = hw_counter(a->name, 1, "sent_zero_copy")) < want && now_s() < end)
		usleep(1000);
	if (v >= want)
		return 0;
	return tap_diag("round %d: sent_zero_copy %lld, %lld expected: not sent by reference", n,
			v, want);
}

/* One round: the WRITE, the source gone while its packets wait, the completion, the data. */
static int round_trip(struct end *a, uint8_t *dst, struct ibv_mr *dst_mr, uint8_t *exp,
		      size_t size, int n)
{
	long long zc = hw_counter(a->name, 1, "sent_zero_copy");
	uint8_t *src, *hog;
	struct ibv_mr *mr;
	struct ibv_sge sge;
	struct ibv_send_wr wr = {
		.wr_id = (uint64_t)n, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)dst, .rkey = dst_mr->rkey },
	}, *bad;
	struct ibv_wc wc;
	double end;
	int got = 0;
	size_t i;

	src = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (src == MAP_FAILED)
		return tap_diag("round %d: mmap: %s", n, strerror(errno));
	fill_random(exp, size);
	memcpy(src, exp, size);
	memset(dst, 0, size);
	mr = ibv_reg_mr(a->pd, src, size, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		return tap_diag("round %d: ibv_reg_mr: %s", n, strerror(errno));
	sge = (struct ibv_sge){ .addr = (uintptr_t)src, .length = (uint32_t)size,
				.lkey = mr->lkey };
	if (ibv_post_send(a->qp, &wr, &bad))
		return tap_diag("round %d: ibv_post_send: %s", n, strerror(errno));
	if (wait_zero_copy(a, zc + (long long)((size + mtu_bytes - 1) / mtu_bytes), n))
		return 1;
	if (ibv_poll_cq(a->cq, 1, &wc))
		return tap_diag("round %d: the WRITE completed before its source went", n);
	if (ibv_dereg_mr(mr))
		return tap_diag("round %d: ibv_dereg_mr: %s", n, strerror(errno));
	munmap(src, size);
	hog = mmap(NULL, 4 * size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (hog != MAP_FAILED)
		memset(hog, 0x5a, 4 * size);
	end = now_s() + 30 * time_scale();
	while (!got && now_s() < end) {
		got = ibv_poll_cq(a->cq, 1, &wc);
		if (got < 0)
			return tap_diag("round %d: ibv_poll_cq failed", n);
		if (!got)
			usleep(1000);
	}
	if (hog != MAP_FAILED)
		munmap(hog, 4 * size);
	if (!got)
		return tap_diag("round %d: no completion within %.0f s", n, 30 * time_scale());
	if (wc.status != IBV_WC_SUCCESS)
		return tap_diag("round %d: WRITE completed with status %d (%s)", n, wc.status,
				ibv_wc_status_str(wc.status));
	for (i = 0; i < size && dst[i] == exp[i]; i++)
		;
	if (i < size)
		return tap_diag("round %d: byte %zu is 0x%02x, not 0x%02x", n, i, dst[i], exp[i]);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: zc-dereg -d DEV_A -D DEV_B [-s SIZE] [-u TIMEOUT] [-r ROUNDS]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct end a = { 0 }, b = { 0 };
	size_t size = 64 << 10;
	int rounds = 5, timeout = 21, opt, i;
	long long zc0, zc1;
	struct ibv_mr *dst_mr;
	uint8_t *dst, *exp;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "d:D:s:u:r:h")) != -1) {
		switch (opt) {
		case 'd': a.name = optarg; break;
		case 'D': b.name = optarg; break;
		case 's': size = strtoul(optarg, NULL, 0); break;
		case 'u': timeout = atoi(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		default: usage();
		}
	}
	if (!a.name || !b.name || !size || size > (64u << 20) || rounds < 1)
		usage();
	rng_seed((uint64_t)time(NULL));
	if (open_end(&a) || open_end(&b))
		bail_out("setup of %s and %s", a.name, b.name);
	mtu_bytes = 128u << (a.mtu < b.mtu ? a.mtu : b.mtu);
	dst = aligned_alloc(4096, size);
	exp = malloc(size);
	dst_mr = dst ? ibv_reg_mr(b.pd, dst, size,
				  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) : NULL;
	if (!exp || !dst_mr)
		bail_out("the target buffer and MR: %s", strerror(errno));
	if (connect_end(&a, &b, (uint8_t)timeout) || connect_end(&b, &a, (uint8_t)timeout))
		bail_out("connect the RC QPs");
	zc0 = hw_counter(a.name, 1, "sent_zero_copy");
	for (i = 1; i <= rounds; i++)
		ok(!round_trip(&a, dst, dst_mr, exp, size, i),
		   "round %d: %zu B WRITE %s->%s, source deregistered and unmapped in flight", i,
		   size, a.name, b.name);
	zc1 = hw_counter(a.name, 1, "sent_zero_copy");
	note("sent_zero_copy on %s: %lld -> %lld", a.name, zc0, zc1);
	ok(zc0 >= 0 && zc1 > zc0, "the WRITEs went by reference");
	return tap_done();
}
