// SPDX-License-Identifier: GPL-2.0
/*
 * uc-recv: what a UC responder does with the receive WQE of a SEND it drops for length,
 * and with one it cannot write.
 * Two UC QPs of one device; the target's receive buffer is 2 MTUs less 16 bytes, the
 * first SEND 3 MTUs, so that its first packet lands and its second overflows the buffer;
 * then a 64-byte SEND of other bytes. The IBA's responder error classes of UC (rxe keeps
 * them for a message missing its Last packet, do_class_d1e_error; a receive buffer
 * overflow it takes for a malformed WQE: IBV_WC_LOC_QP_OP_ERR and the QP in error):
 *
 *   rq    without SRQ (class D1): the broken message is dropped silently and its receive
 *         WQE is used again, from its start, by the next message: the 64-byte SEND
 *         completes that WQE alone, with byte_len 64 and its bytes at offset 0
 *   srq   with an SRQ (class E): the WQE is completed with IBV_WC_REM_INV_REQ_ERR and
 *         the rest of the message (its Last packet) dropped: the next WQE completes with
 *         the 64-byte SEND, not with a piece of the broken message
 *   bad_sge  not a length error: the receive SGE runs past the end of the MR its lkey
 *         names, and a SEND of an MTU and 64 bytes reaches beyond it (a malformed WQE,
 *         class A, as rxe): the WQE completes with IBV_WC_LOC_QP_OP_ERR, the QP in error
 *
 *   uc-recv [-d DEV] [-t CHECK,...]
 */
#include <getopt.h>

#include "rrxe-test.h"

#define PORT 1
/* Bytes of the SEND after the broken one. */
#define SMALL 64
#define TIMEOUT_S 10.0
/* How long to wait for a completion that must not come. */
#define QUIET_S 0.5

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static union ibv_gid gid;
static int gid_index;
static enum ibv_mtu path_mtu;
static uint32_t mtu;

/* A UC QP pair: 0 sends, 1 receives (from SRQ if set). */
struct pair {
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2];
	struct ibv_srq *srq;
	struct ibv_mr *mr;
	struct ibv_mr *small;	/* the first MTU of receive buffer 0 alone (bad_sge) */
	uint8_t *buf;	/* the sender's 3 MTUs, then the receive buffers */
	size_t len;
};

static void pair_free(struct pair *p)
{
	int i;

	for (i = 0; i < 2; i++)
		if (p->qp[i])
			ibv_destroy_qp(p->qp[i]);
	if (p->srq)
		ibv_destroy_srq(p->srq);
	for (i = 0; i < 2; i++)
		if (p->cq[i])
			ibv_destroy_cq(p->cq[i]);
	if (p->small)
		ibv_dereg_mr(p->small);
	if (p->mr)
		ibv_dereg_mr(p->mr);
	free(p->buf);
	memset(p, 0, sizeof(*p));
}

/* A connected pair, the target on an SRQ if WITH_SRQ; 0, or -1 (errno set). */
static int pair_new(struct pair *p, int with_srq)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	int i;

	memset(p, 0, sizeof(*p));
	p->len = 3 * mtu + 2 * (2 * mtu);
	p->buf = aligned_alloc(4096, (p->len + 4095) & ~(size_t)4095);
	if (!p->buf)
		return -1;
	p->mr = ibv_reg_mr(pd, p->buf, p->len, IBV_ACCESS_LOCAL_WRITE);
	if (!p->mr)
		goto fail;
	if (with_srq) {
		p->srq = ibv_create_srq(pd, &sa);
		if (!p->srq)
			goto fail;
	}
	for (i = 0; i < 2; i++) {
		struct ibv_qp_init_attr a = {
			.qp_type = IBV_QPT_UC,
			.srq = i ? p->srq : NULL,
			.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
				 .max_recv_sge = 1 },
		};

		p->cq[i] = ibv_create_cq(ctx, 8, NULL, NULL, 0);
		if (!p->cq[i])
			goto fail;
		a.send_cq = a.recv_cq = p->cq[i];
		p->qp[i] = ibv_create_qp(pd, &a);
		if (!p->qp[i])
			goto fail;
	}
	for (i = 0; i < 2; i++) {
		errno = connect_uc_qp(p->qp[i], PORT, gid_index, &gid, path_mtu,
				      p->qp[!i]->qp_num, 0);
		if (errno)
			goto fail;
	}
	return 0;
fail:
	note("pair setup: %s", strerror(errno));
	pair_free(p);
	return -1;
}

/* Receive buffer I (0 or 1): 2 MTUs less 16 bytes, after the sender's 3 MTUs. */
static uint8_t *recv_buf(struct pair *p, int i)
{
	return p->buf + 3 * mtu + (size_t)i * 2 * mtu;
}

/*
 * Posts receive buffer I with wr_id I + 1, to the SRQ or to the target QP, with the lkey
 * of MR (whole buffer or not); 0 or errno.
 */
static int post_recv_mr(struct pair *p, int i, struct ibv_mr *mr)
{
	struct ibv_sge sge = { (uintptr_t)recv_buf(p, i), 2 * mtu - 16, mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = i + 1, .sg_list = &sge, .num_sge = 1 }, *bad;

	memset(recv_buf(p, i), 0, 2 * mtu);
	return p->srq ? ibv_post_srq_recv(p->srq, &wr, &bad) : ibv_post_recv(p->qp[1], &wr, &bad);
}

/* Posts receive buffer I with the whole buffer's lkey. */
static int post_recv(struct pair *p, int i)
{
	return post_recv_mr(p, i, p->mr);
}

/* Waits for one completion on side I's CQ for at most SECS; 1 if one came, else 0. */
static int wait_wc(struct pair *p, int i, struct ibv_wc *wc, double secs)
{
	double end = now_s() + secs * time_scale();
	int n;

	while ((n = ibv_poll_cq(p->cq[i], 1, wc)) == 0 && now_s() < end)
		usleep(100);
	return n == 1;
}

/* Sends LEN bytes of the sender's buffer, filled with FILL, and waits for its completion. */
static int send_msg(struct pair *p, uint32_t len, uint8_t fill)
{
	struct ibv_sge sge = { (uintptr_t)p->buf, len, p->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = fill, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	int err;

	memset(p->buf, fill, len);
	err = ibv_post_send(p->qp[0], &wr, &bad);
	if (err)
		return tap_diag("ibv_post_send: %s", strerror(err));
	if (!wait_wc(p, 0, &wc, TIMEOUT_S))
		return tap_diag("no send completion");
	if (wc.status != IBV_WC_SUCCESS)
		return tap_diag("send completion: %s", ibv_wc_status_str(wc.status));
	return 0;
}

/* Whether receive WC is wr_id WR_ID with STATUS and, if a success, BYTES of FILL at 0. */
static int recv_is(struct pair *p, const struct ibv_wc *wc, uint64_t wr_id,
		   enum ibv_wc_status status, uint8_t fill)
{
	const uint8_t *b = recv_buf(p, (int)wr_id - 1);
	uint32_t i;

	if (wc->wr_id != wr_id || wc->status != status)
		return !tap_diag("receive wr_id %llu %s, expected wr_id %llu %s",
				 (unsigned long long)wc->wr_id, ibv_wc_status_str(wc->status),
				 (unsigned long long)wr_id, ibv_wc_status_str(status));
	if (status != IBV_WC_SUCCESS)
		return 1;
	if (wc->byte_len != SMALL)
		return !tap_diag("receive wr_id %llu: byte_len %u, expected %d",
				 (unsigned long long)wr_id, wc->byte_len, SMALL);
	for (i = 0; i < SMALL; i++)
		if (b[i] != fill)
			return !tap_diag("receive wr_id %llu: byte %u is 0x%02x, expected 0x%02x",
					 (unsigned long long)wr_id, i, b[i], fill);
	return 1;
}

/* The broken 3-MTU SEND, then the 64-byte one; checks what the target completes. */
static void check(const char *name, int with_srq)
{
	struct pair p;
	struct ibv_wc wc;
	int good = 1, err;

	if (pair_new(&p, with_srq)) {
		ok(0, "%s: setup", name);
		return;
	}
	err = post_recv(&p, 0);
	if (!err && with_srq)
		err = post_recv(&p, 1);
	if (err) {
		ok(0, "%s: posting the receives: %s", name, strerror(err));
		pair_free(&p);
		return;
	}
	if (send_msg(&p, 3 * mtu, 0xa5) || send_msg(&p, SMALL, 0x5c)) {
		ok(0, "%s: sending", name);
		pair_free(&p);
		return;
	}
	if (with_srq) {
		/* The broken message's WQE in error, then the next one with the small SEND. */
		good = wait_wc(&p, 1, &wc, TIMEOUT_S) ?
			       recv_is(&p, &wc, 1, IBV_WC_REM_INV_REQ_ERR, 0) :
			       !tap_diag("no completion of the broken message's receive");
		if (good)
			good = wait_wc(&p, 1, &wc, TIMEOUT_S) ?
				       recv_is(&p, &wc, 2, IBV_WC_SUCCESS, 0x5c) :
				       !tap_diag("no completion of the small SEND's receive");
	} else {
		/* The broken message dropped; its WQE, from its start, for the small SEND. */
		good = wait_wc(&p, 1, &wc, TIMEOUT_S) ?
			       recv_is(&p, &wc, 1, IBV_WC_SUCCESS, 0x5c) :
			       !tap_diag("no receive completion");
	}
	if (good && wait_wc(&p, 1, &wc, QUIET_S))
		good = !tap_diag("one more receive completion: wr_id %llu %s byte_len %u",
				 (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
				 wc.byte_len);
	ok(good, "%s: a UC SEND dropped for length %s; the next SEND completes its own WQE "
		 "with its %d bytes at offset 0", name,
	   with_srq ? "completes its SRQ WQE in error and its Last packet is dropped" :
		      "leaves its receive WQE unused",
	   SMALL);
	pair_free(&p);
}

/* A receive SGE past the end of its MR: the WQE fails as malformed, not for length. */
static void check_bad_sge(const char *name, int unused)
{
	struct pair p;
	struct ibv_wc wc;
	int good, err;

	if (pair_new(&p, 0)) {
		ok(0, "%s: setup", name);
		return;
	}
	p.small = ibv_reg_mr(pd, recv_buf(&p, 0), mtu, IBV_ACCESS_LOCAL_WRITE);
	err = p.small ? post_recv_mr(&p, 0, p.small) : errno;
	if (err) {
		ok(0, "%s: the small MR and the receive: %s", name, strerror(err));
		pair_free(&p);
		return;
	}
	if (send_msg(&p, mtu + SMALL, 0xa5)) {
		ok(0, "%s: sending", name);
		pair_free(&p);
		return;
	}
	good = wait_wc(&p, 1, &wc, TIMEOUT_S) ?
		       recv_is(&p, &wc, 1, IBV_WC_LOC_QP_OP_ERR, 0) :
		       !tap_diag("no receive completion");
	ok(good, "%s: a UC SEND beyond the MR of its receive SGE completes the WQE with "
		 "IBV_WC_LOC_QP_OP_ERR", name);
	pair_free(&p);
}

static const struct {
	const char *name;
	void (*run)(const char *name, int arg);
	int arg;
} checks[] = {
	{ "rq", check, 0 },
	{ "srq", check, 1 },
	{ "bad_sge", check_bad_sge, 0 },
};

int main(int argc, char **argv)
{
	const char *devname = NULL, *only = NULL;
	struct ibv_port_attr pa;
	char list[256];
	unsigned int i;
	int c;

	while ((c = getopt(argc, argv, "d:t:")) != -1) {
		if (c == 'd')
			devname = optarg;
		else if (c == 't')
			only = optarg;
		else
			bail_out("usage: uc-recv [-d DEV] [-t CHECK,...]");
	}
	ctx = open_device(devname);
	if (!ctx)
		bail_out("cannot open the device");
	pd = ibv_alloc_pd(ctx);
	gid_index = find_gid(ctx, PORT, -1, &gid);
	if (!pd || gid_index < 0 || ibv_query_port(ctx, PORT, &pa))
		bail_out("setup: %s", strerror(errno));
	path_mtu = pa.active_mtu;
	mtu = 128u << path_mtu;
	note("path MTU %u bytes", mtu);
	snprintf(list, sizeof(list), ",%s,", only ? only : "");
	for (i = 0; i < ARRAY_SIZE(checks); i++) {
		char want[64];

		snprintf(want, sizeof(want), ",%s,", checks[i].name);
		if (!only || strstr(list, want))
			checks[i].run(checks[i].name, checks[i].arg);
	}
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return tap_done();
}
