// SPDX-License-Identifier: GPL-2.0
/*
 * Data integrity over one RDMA device, or between two, in one process (libibverbs only):
 *
 *   data-check [-d DEV] [-g GID_INDEX] [-D DEV_B [-G GID_INDEX_B]] [-s SEED] [-m MAX_SIZE]
 *              [-t WC_SECS] [-T TOTAL_SECS] [-X CASE]
 *
 * Two RC QPs, A and B, are connected to each other over the device's own GID (default
 * $RRXE_GID_INDEX or the first IPv4-mapped RoCE v2 GID) with a real INIT/RTR/RTS sequence
 * and an address vector built from that GID. With -D, B (and UD-B) are on DEV_B, with its
 * own PD, over its GID (default: the first IPv4-mapped RoCE v2 one), e.g. two devices on
 * the ends of a veth pair, so that the traffic crosses a net device. Pseudo-random data of
 * many sizes (0 and 1 B to 8 MiB, odd sizes around MTU multiples) moves by SEND/RECV (with
 * and without immediate, several SGEs with odd offsets and lengths on both sides), inline
 * SEND and WRITE from an unregistered buffer that is overwritten right after posting, RDMA
 * WRITE, WRITE_WITH_IMM (consuming a receive), RDMA READ (into several SGEs too), a
 * pipeline of unsignaled operations, atomics (FETCH_ADD, CMP_SWAP: every returned
 * original value and the final memory against a model), and batches of WRITE, READ and
 * FETCH_ADD posted back to back (on rrxe also its counters: requests left to the
 * responder and acknowledges, read responses and atomic acknowledges left to the
 * completer without a packet, every one taken in order). Then two UD QPs exchange
 * datagrams up to the path MTU. Every byte is compared, bytes next to the target must keep
 * their canary, and every completion's status, opcode, byte_len, imm_data, wr_id, qp_num
 * (UD: src_qp, GRH flag and the IPv4 header in the GRH area) is checked.
 *
 * TAP output, one line per case; exit 1 on any failure. After a failed case both RC QPs are
 * reset and reconnected, so the remaining cases still mean something; after 3 cases in a row
 * that saw no completion at all ("the device moves no data") or past the total time limit it
 * bails out instead of waiting WC_SECS for every remaining case.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <sched.h>
#include <unistd.h>

#include "rrxe-test.h"

#define MAX_MSG (8u << 20)
#define BUF_SIZE (MAX_MSG + (256u << 10))
#define GUARD 64
#define GRH_LEN 40
#define CANARY 0xa5
#define MAX_SGE_USED 16
#define QP_DEPTH 128
#define CQ_DEPTH 512
#define ATOM_SLOTS 64

/* An open device, its PD and the GID its QPs use. */
struct dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	union ibv_gid gid;
	int gid_index;
};

struct side {
	const char *name;
	struct dev *dev;
	struct ibv_ah *ah;	/* UD: the address handle to the other side */
	struct ibv_qp *qp;
	struct ibv_cq *scq, *rcq;
	uint8_t *buf;
	struct ibv_mr *mr;
	uint32_t psn;
};

static struct dev dev_a = { .gid_index = -1 }, dev_b = { .gid_index = -1 };
static const uint8_t port = 1;
static enum ibv_mtu path_mtu;
static uint32_t mtu_bytes, max_sge, max_inline, ud_inline, rd_atom;
static struct ibv_device_attr dattr;
static struct side A = { .name = "A" }, B = { .name = "B" };
static struct side UA = { .name = "UD-A" }, UB = { .name = "UD-B" };
static const uint32_t qkey = 0x11111111;
static uint8_t *exp_buf, *got_buf;
/* -t: how long a case waits for a completion; 0 until set: 15 s times time_scale(). */
static double wc_timeout, deadline;
static int timeouts_in_row, case_timed_out;
static uint64_t next_wr_id = 1;
static int corrupt_case; /* -X N: flip a byte of case N's result before comparing */

static void recover(void);
static int ud_connect(struct side *s);

/* Records the result of one case (ERRS: its error count). */
__attribute__((format(printf, 2, 3))) static void result(int errs, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vresult(!errs, fmt, ap);
	va_end(ap);
	if (!errs) {
		timeouts_in_row = 0;
		return;
	}
	if (case_timed_out && ++timeouts_in_row >= 3)
		bail_out("3 cases in a row got no completion within %.0f s: the device moves no data",
			 wc_timeout);
	if (!case_timed_out)
		timeouts_in_row = 0;
	recover();
}

/* Called before each case. */
static void begin_case(void)
{
	case_timed_out = 0;
	if (deadline && now_s() > deadline)
		bail_out("total time limit reached before all cases ran");
}

/* Waits for one completion on CQ (WC_SECS at most). */
static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc, const char *what)
{
	double end = now_s() + wc_timeout;
	long spins = 0;
	int n;

	for (;;) {
		n = ibv_poll_cq(cq, 1, wc);
		if (n < 0)
			return tap_diag("%s: ibv_poll_cq failed (%d)", what, n);
		if (n == 1)
			return 0;
		if (++spins < 200) {
			sched_yield();
			continue;
		}
		usleep(50);
		if (case_timed_out || now_s() > end) {
			if (case_timed_out)
				return tap_diag("%s: no completion either", what);
			case_timed_out = 1;
			return tap_diag("%s: no completion within %.0f s", what, wc_timeout);
		}
	}
}

/* Expected completion. imm: -1 do not look at IBV_WC_WITH_IMM, 0 must be clear, 1 set. */
struct exp_wc {
	uint64_t wr_id;
	enum ibv_wc_opcode opcode;
	int check_len;
	uint32_t byte_len;
	int imm;
	uint32_t imm_data; /* network order, as in the WR */
	uint32_t qp_num;
	uint32_t src_qp; /* UD: checked if nonzero, with the GRH flag */
};

static int expect_wc(struct ibv_cq *cq, const struct exp_wc *e, const char *what)
{
	struct ibv_wc wc;
	int errs = 0, has_imm;

	if (poll_one(cq, &wc, what))
		return 1;
	if (wc.status != IBV_WC_SUCCESS)
		return tap_diag("%s: status %s (%d), vendor_err %u, wr_id %llu opcode %d", what,
				ibv_wc_status_str(wc.status), wc.status, wc.vendor_err,
				(unsigned long long)wc.wr_id, wc.opcode);
	if (wc.wr_id != e->wr_id)
		errs += tap_diag("%s: wr_id %llu, expected %llu", what, (unsigned long long)wc.wr_id,
				 (unsigned long long)e->wr_id);
	if (wc.opcode != e->opcode)
		errs += tap_diag("%s: opcode %d, expected %d", what, wc.opcode, e->opcode);
	if (e->check_len && wc.byte_len != e->byte_len)
		errs += tap_diag("%s: byte_len %u, expected %u", what, wc.byte_len, e->byte_len);
	if (wc.qp_num != e->qp_num)
		errs += tap_diag("%s: qp_num %u, expected %u", what, wc.qp_num, e->qp_num);
	has_imm = !!(wc.wc_flags & IBV_WC_WITH_IMM);
	if (e->imm >= 0 && has_imm != e->imm)
		errs += tap_diag("%s: IBV_WC_WITH_IMM is %s", what, has_imm ? "set" : "clear");
	if (e->imm > 0 && has_imm && wc.imm_data != e->imm_data)
		errs += tap_diag("%s: imm_data 0x%08x, expected 0x%08x", what, ntohl(wc.imm_data),
				 ntohl(e->imm_data));
	if (e->src_qp) {
		if (wc.src_qp != e->src_qp)
			errs += tap_diag("%s: src_qp %u, expected %u", what, wc.src_qp, e->src_qp);
		if (!(wc.wc_flags & IBV_WC_GRH))
			errs += tap_diag("%s: IBV_WC_GRH is clear", what);
	}
	return errs;
}

/* Compares LEN bytes; reports the first difference and how many bytes differ. */
static int compare(uint8_t *got, const uint8_t *want, size_t len, const char *what)
{
	size_t i, first = 0, n = 0;

	if (corrupt_case == tap_n + 1 && len) {
		printf("#   -X: flipping bit 0 of byte %zu of the %s\n", len / 2, what);
		((uint8_t *)got)[len / 2] ^= 1;
	}
	if (!memcmp(got, want, len))
		return 0;
	for (i = 0; i < len; i++)
		if (got[i] != want[i] && !n++)
			first = i;
	return tap_diag("%s: %zu of %zu bytes differ, the first at offset %zu (0x%02x, expected 0x%02x)",
			what, n, len, first, got[first], want[first]);
}

/* Bytes in [FROM, TO) of BUF must still be CANARY. */
static int check_canary(const uint8_t *buf, size_t from, size_t to, const char *what)
{
	size_t i;

	for (i = from; i < to; i++)
		if (buf[i] != CANARY)
			return tap_diag("%s: byte at buffer offset %zu outside the target was overwritten "
					"(0x%02x)", what, i, buf[i]);
	return 0;
}

/*
 * Lays out LEN bytes (plus EXTRA in the last piece) as at most N pieces in the registered
 * buffer of S from offset BASE on: odd start offsets, odd gaps between the pieces. Returns
 * the number of SGEs and sets *END to the offset after the last one.
 */
static int make_sgl(struct ibv_sge *sge, int n, struct side *s, size_t base, uint32_t len,
		    uint32_t extra, size_t *end)
{
	size_t pos = base + (rng32() % 31) * 2 + 1;
	uint32_t left = len, size, max, avg;
	int i;

	if ((uint32_t)n > len)
		n = len ? (int)len : 1;
	for (i = 0; i < n; i++) {
		if (i == n - 1) {
			size = left;
		} else {
			max = left - (n - 1 - i);
			avg = left / (n - i);
			size = 1 + rng32() % (2 * avg < max ? 2 * avg : max);
		}
		left -= size;
		if (i == n - 1)
			size += extra;
		sge[i].addr = (uintptr_t)(s->buf + pos);
		sge[i].length = size;
		sge[i].lkey = s->mr->lkey;
		pos += size + (rng32() % 31) * 2 + 1;
	}
	*end = pos;
	return n;
}

/* Copies the first LEN bytes that SGE[0..N) describe to OUT. */
static void gather(uint8_t *out, const struct ibv_sge *sge, int n, uint32_t len)
{
	uint32_t l;
	int i;

	for (i = 0; i < n && len; i++) {
		l = sge[i].length < len ? sge[i].length : len;
		memcpy(out, (void *)(uintptr_t)sge[i].addr, l);
		out += l;
		len -= l;
	}
}

static void fill_sgl(const struct ibv_sge *sge, int n)
{
	int i;

	for (i = 0; i < n; i++)
		fill_random((uint8_t *)(uintptr_t)sge[i].addr, sge[i].length);
}

/* The canary around and between SGE[0..N) (in the buffer of S, region [FROM, TO)). */
static int check_sgl_canary(struct side *s, const struct ibv_sge *sge, int n, size_t from,
			    size_t to, const char *what)
{
	size_t prev = from, off;
	int i;

	for (i = 0; i < n; i++) {
		off = (uint8_t *)(uintptr_t)sge[i].addr - s->buf;
		if (check_canary(s->buf, prev, off, what))
			return 1;
		prev = off + sge[i].length;
	}
	return check_canary(s->buf, prev, to, what);
}

static int post_send(struct side *s, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *badwr;
	int err = ibv_post_send(s->qp, wr, &badwr);

	return err ? tap_diag("ibv_post_send on %s: %s", s->name, strerror(err)) : 0;
}

static int post_recv(struct ibv_qp *qp, uint64_t wr_id, struct ibv_sge *sge, int n)
{
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = sge, .num_sge = n }, *badwr;
	int err = ibv_post_recv(qp, &wr, &badwr);

	return err ? tap_diag("ibv_post_recv: %s", strerror(err)) : 0;
}

static uint32_t rand_imm(void)
{
	return htonl(rng_nasty32());
}

/*
 * Points WR at LEN bytes of new random data, a copy in exp_buf: at most NS SGEs (in SGE)
 * of S's buffer or, if INL, one SGE of a new unregistered buffer, returned in *IBUF for
 * the caller to overwrite once posted and to free. Returns an error count.
 */
static int set_source(struct side *s, struct ibv_send_wr *wr, struct ibv_sge *sge, int ns,
		      uint32_t len, int inl, uint8_t **ibuf)
{
	size_t end;

	*ibuf = NULL;
	if (!inl) {
		ns = make_sgl(sge, ns, s, GUARD, len, 0, &end);
		fill_sgl(sge, ns);
		gather(exp_buf, sge, ns, len);
		wr->sg_list = sge;
		wr->num_sge = ns;
		return 0;
	}
	*ibuf = malloc(len + 1);
	if (!*ibuf)
		return tap_diag("out of memory");
	fill_random(*ibuf, len);
	memcpy(exp_buf, *ibuf, len);
	sge->addr = (uintptr_t)*ibuf;
	sge->length = len;
	sge->lkey = 0;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->send_flags = IBV_SEND_INLINE;
	return 0;
}

/*
 * SEND of LEN bytes from S to D: NS SGEs on the sending side, NR on the receiving one
 * (with some spare room), with immediate data if IMM. INLINE: from an unregistered buffer
 * that is overwritten as soon as ibv_post_send returns.
 */
static int do_send(struct side *s, struct side *d, uint32_t len, int ns, int nr, int imm,
		   int inl)
{
	struct ibv_sge ssge[MAX_SGE_USED], rsge[MAX_SGE_USED];
	struct ibv_send_wr wr = { 0 };
	uint32_t extra = len < MAX_MSG - 4096 ? rng32() % 128 : 0, imm_data = rand_imm();
	uint64_t rid = next_wr_id++, sid = next_wr_id++;
	size_t recv_end;
	uint8_t *ibuf;
	int errs = 0;

	nr = make_sgl(rsge, nr, d, GUARD, len, extra, &recv_end);
	memset(d->buf, CANARY, recv_end + GUARD);
	if (set_source(s, &wr, ssge, ns, len, inl, &ibuf))
		return 1;
	if (post_recv(d->qp, rid, rsge, nr)) {
		free(ibuf);
		return 1;
	}
	wr.wr_id = sid;
	wr.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
	wr.imm_data = imm_data;
	wr.send_flags |= IBV_SEND_SIGNALED;
	if (post_send(s, &wr)) {
		free(ibuf);
		return 1;
	}
	if (ibuf)
		memset(ibuf, 0x5a, len);
	errs += expect_wc(d->rcq, &(struct exp_wc){ .wr_id = rid, .opcode = IBV_WC_RECV,
						    .check_len = 1, .byte_len = len, .imm = imm,
						    .imm_data = imm_data, .qp_num = d->qp->qp_num },
			  "receive completion");
	errs += expect_wc(s->scq, &(struct exp_wc){ .wr_id = sid, .opcode = IBV_WC_SEND,
						    .check_len = 1, .byte_len = len, .imm = -1,
						    .qp_num = s->qp->qp_num },
			  "send completion");
	free(ibuf);
	if (case_timed_out)
		return errs;
	gather(got_buf, rsge, nr, len);
	errs += compare(got_buf, exp_buf, len, "received data");
	/* Room in the receive SGEs past LEN is undefined; the rest must be untouched. */
	errs += check_sgl_canary(d, rsge, nr, 0, recv_end + GUARD, "receive buffer");
	return errs;
}

/*
 * RDMA WRITE of LEN bytes from NS SGEs of S to an odd offset in D's buffer; with IMM it is a
 * WRITE_WITH_IMM that consumes a receive (without SGEs) on D. INLINE as in do_send.
 */
static int do_write(struct side *s, struct side *d, uint32_t len, int ns, int imm, int inl)
{
	struct ibv_sge ssge[MAX_SGE_USED];
	struct ibv_send_wr wr = { 0 };
	size_t doff = GUARD + (rng32() % 31) * 2 + 1;
	uint64_t rid = next_wr_id++, sid = next_wr_id++;
	uint32_t imm_data = rand_imm();
	uint8_t *ibuf;
	int errs = 0;

	memset(d->buf, CANARY, doff + len + GUARD);
	if (set_source(s, &wr, ssge, ns, len, inl, &ibuf))
		return 1;
	if (imm && post_recv(d->qp, rid, NULL, 0)) {
		free(ibuf);
		return 1;
	}
	wr.wr_id = sid;
	wr.opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
	wr.imm_data = imm_data;
	wr.send_flags |= IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)(d->buf + doff);
	wr.wr.rdma.rkey = d->mr->rkey;
	if (post_send(s, &wr)) {
		free(ibuf);
		return 1;
	}
	if (ibuf)
		memset(ibuf, 0x5a, len);
	errs += expect_wc(s->scq, &(struct exp_wc){ .wr_id = sid, .opcode = IBV_WC_RDMA_WRITE,
						    .check_len = 1, .byte_len = len, .imm = -1,
						    .qp_num = s->qp->qp_num },
			  "write completion");
	if (imm)
		errs += expect_wc(d->rcq,
				  &(struct exp_wc){ .wr_id = rid, .opcode = IBV_WC_RECV_RDMA_WITH_IMM,
						    .check_len = 1, .byte_len = len, .imm = 1,
						    .imm_data = imm_data, .qp_num = d->qp->qp_num },
				  "receive completion of the WRITE_WITH_IMM");
	free(ibuf);
	if (case_timed_out)
		return errs;
	errs += compare(d->buf + doff, exp_buf, len, "written data");
	errs += check_canary(d->buf, 0, doff, "target buffer");
	errs += check_canary(d->buf, doff + len, doff + len + GUARD, "target buffer");
	return errs;
}

/* RDMA READ by S of LEN bytes at an odd offset of D's buffer, into NL SGEs of S. */
static int do_read(struct side *s, struct side *d, uint32_t len, int nl)
{
	struct ibv_sge lsge[MAX_SGE_USED];
	struct ibv_send_wr wr = { 0 };
	size_t roff = GUARD + (rng32() % 31) * 2 + 1, local_end;
	uint64_t sid = next_wr_id++;
	int errs = 0;

	fill_random(d->buf + roff, len);
	nl = make_sgl(lsge, nl, s, GUARD, len, 0, &local_end);
	memset(s->buf, CANARY, local_end + GUARD);
	wr.wr_id = sid;
	wr.sg_list = lsge;
	wr.num_sge = nl;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)(d->buf + roff);
	wr.wr.rdma.rkey = d->mr->rkey;
	if (post_send(s, &wr))
		return 1;
	errs += expect_wc(s->scq, &(struct exp_wc){ .wr_id = sid, .opcode = IBV_WC_RDMA_READ,
						    .check_len = 1, .byte_len = len, .imm = -1,
						    .qp_num = s->qp->qp_num },
			  "read completion");
	if (case_timed_out)
		return errs;
	gather(got_buf, lsge, nl, len);
	errs += compare(got_buf, d->buf + roff, len, "read data");
	errs += check_sgl_canary(s, lsge, nl, 0, local_end + GUARD, "read buffer");
	return errs;
}

/* Up to MAX_SGE_USED, at least 2, random. */
static int rand_nsge(void)
{
	uint32_t m = max_sge < MAX_SGE_USED ? max_sge : MAX_SGE_USED;

	return m < 2 ? 1 : 2 + (int)(rng32() % (m - 1));
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The RC sizes: fixed odd and even edges plus k * MTU - 1, k * MTU, k * MTU + 1. */
static int rc_sizes(uint32_t *out, uint32_t max)
{
	static const uint32_t fixed[] = {
		0, 1, 2, 3, 7, 8, 15, 16, 63, 64, 65, 255, 256, 257, 511, 512, 513,
		1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096, 4097, 8191, 8192, 8193,
		12289, 65535, 65536, 65537, 262147, 1048575, 1048577, 4194305,
		8388607, 8388608,
	};
	static const uint32_t k[] = { 1, 2, 3, 16 };
	uint32_t all[ARRAY_SIZE(fixed) + 3 * ARRAY_SIZE(k)];
	int n = 0, m = 0, i, j;

	for (i = 0; i < (int)ARRAY_SIZE(fixed); i++)
		all[n++] = fixed[i];
	for (i = 0; i < (int)ARRAY_SIZE(k); i++)
		for (j = -1; j <= 1; j++)
			all[n++] = k[i] * mtu_bytes + j;
	qsort(all, n, sizeof(all[0]), cmp_u32);
	for (i = 0; i < n; i++)
		if (all[i] <= max && (!m || out[m - 1] != all[i]))
			out[m++] = all[i];
	return m;
}

static void rc_case(struct side *s, struct side *d, uint32_t len)
{
	char dir[8];
	int ns, nr;

	snprintf(dir, sizeof(dir), "%s->%s", s->name, d->name);
	begin_case();
	result(do_send(s, d, len, 1, 1, 0, 0), "SEND %u B %s", len, dir);
	begin_case();
	result(do_send(s, d, len, 1, 1, 1, 0), "SEND_WITH_IMM %u B %s", len, dir);
	if (len >= 2) {
		ns = rand_nsge();
		nr = rand_nsge();
		begin_case();
		result(do_send(s, d, len, ns, nr, len & 1, 0), "SEND%s %u B %s, %d -> %d SGEs",
		       len & 1 ? "_WITH_IMM" : "", len, dir, ns < (int)len ? ns : (int)len,
		       nr < (int)len ? nr : (int)len);
	}
	begin_case();
	result(do_write(s, d, len, 1, 0, 0), "RDMA_WRITE %u B %s", len, dir);
	if (len >= 2) {
		ns = rand_nsge();
		begin_case();
		result(do_write(s, d, len, ns, 0, 0), "RDMA_WRITE %u B %s from %d SGEs", len, dir,
		       ns < (int)len ? ns : (int)len);
	}
	begin_case();
	result(do_write(s, d, len, 1, 1, 0), "RDMA_WRITE_WITH_IMM %u B %s", len, dir);
	begin_case();
	result(do_read(s, d, len, 1), "RDMA_READ %u B by %s from %s", len, s->name, d->name);
	if (len >= 2) {
		nr = rand_nsge();
		begin_case();
		result(do_read(s, d, len, nr), "RDMA_READ %u B by %s from %s into %d SGEs", len,
		       s->name, d->name, nr < (int)len ? nr : (int)len);
	}
}

/*
 * A pipeline on the RC pair: N operations of random kinds and sizes (up to 3 MTUs) posted
 * at once, only every 8th (and the last) signaled; receives complete in order and the data
 * of each is right.
 */
static int pipeline(struct side *s, struct side *d, int n)
{
	struct op {
		int kind; /* 0 SEND, 1 SEND_WITH_IMM, 2 WRITE, 3 WRITE_WITH_IMM */
		uint32_t len, imm;
		size_t src, dst;
		uint64_t rid, sid;
		int signaled;
	} ops[64];
	struct ibv_send_wr wr;
	struct ibv_sge sge, rsge;
	size_t soff = GUARD, doff = GUARD;
	uint32_t maxlen = 3 * mtu_bytes + 1;
	int i, errs = 0, nrecv = 0;

	if (n > (int)ARRAY_SIZE(ops))
		n = ARRAY_SIZE(ops);
	memset(d->buf, CANARY, (size_t)n * (maxlen + 2 * GUARD) + 2 * GUARD);
	for (i = 0; i < n; i++) {
		struct op *o = &ops[i];

		o->kind = rng32() % 4;
		o->len = rng32() % maxlen;
		o->imm = rand_imm();
		o->src = soff + (rng32() % 31) * 2 + 1;
		o->dst = doff + (rng32() % 31) * 2 + 1;
		soff = o->src + o->len + GUARD;
		doff = o->dst + o->len + GUARD;
		o->sid = next_wr_id++;
		o->rid = next_wr_id++;
		o->signaled = i % 8 == 7 || i == n - 1;
		fill_random(s->buf + o->src, o->len);
		if (o->kind != 2) {
			rsge.addr = (uintptr_t)(d->buf + o->dst);
			rsge.length = o->len;
			rsge.lkey = d->mr->lkey;
			if (post_recv(d->qp, o->rid, &rsge, o->kind == 3 ? 0 : 1))
				return 1;
			nrecv++;
		}
	}
	for (i = 0; i < n; i++) {
		struct op *o = &ops[i];
		static const enum ibv_wr_opcode opc[] = { IBV_WR_SEND, IBV_WR_SEND_WITH_IMM,
							  IBV_WR_RDMA_WRITE,
							  IBV_WR_RDMA_WRITE_WITH_IMM };

		memset(&wr, 0, sizeof(wr));
		sge.addr = (uintptr_t)(s->buf + o->src);
		sge.length = o->len;
		sge.lkey = s->mr->lkey;
		wr.wr_id = o->sid;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = opc[o->kind];
		wr.imm_data = o->imm;
		wr.send_flags = o->signaled ? IBV_SEND_SIGNALED : 0;
		wr.wr.rdma.remote_addr = (uintptr_t)(d->buf + o->dst);
		wr.wr.rdma.rkey = d->mr->rkey;
		if (post_send(s, &wr))
			return 1;
	}
	for (i = 0; i < n; i++) {
		struct op *o = &ops[i];
		static const enum ibv_wc_opcode sop[] = { IBV_WC_SEND, IBV_WC_SEND, IBV_WC_RDMA_WRITE,
							  IBV_WC_RDMA_WRITE };
		char what[64];

		if (!o->signaled)
			continue;
		snprintf(what, sizeof(what), "send completion of op %d", i);
		errs += expect_wc(s->scq, &(struct exp_wc){ .wr_id = o->sid, .opcode = sop[o->kind],
							    .check_len = 1, .byte_len = o->len,
							    .imm = -1, .qp_num = s->qp->qp_num },
				  what);
		if (case_timed_out)
			return errs;
	}
	for (i = 0; i < n; i++) {
		struct op *o = &ops[i];
		char what[64];

		if (o->kind == 2)
			continue;
		snprintf(what, sizeof(what), "receive completion of op %d", i);
		errs += expect_wc(d->rcq,
				  &(struct exp_wc){ .wr_id = o->rid,
						    .opcode = o->kind == 3 ? IBV_WC_RECV_RDMA_WITH_IMM
									   : IBV_WC_RECV,
						    .check_len = 1, .byte_len = o->len,
						    .imm = o->kind & 1, .imm_data = o->imm,
						    .qp_num = d->qp->qp_num },
				  what);
		if (case_timed_out)
			return errs;
	}
	for (i = 0; i < n; i++) {
		char what[64];

		snprintf(what, sizeof(what), "data of op %d (%u B)", i, ops[i].len);
		errs += compare(d->buf + ops[i].dst, s->buf + ops[i].src, ops[i].len, what);
		errs += check_canary(d->buf, i ? ops[i - 1].dst + ops[i - 1].len : 0, ops[i].dst,
				     "pipeline target");
	}
	errs += check_canary(d->buf, ops[n - 1].dst + ops[n - 1].len,
			     ops[n - 1].dst + ops[n - 1].len + GUARD, "pipeline target");
	return errs;
}

static uint64_t nasty64(void)
{
	return (uint64_t)rng_nasty32() << 32 | rng_nasty32();
}

/*
 * BATCHES batches of 16 atomics from S on an 8-byte aligned array in D's buffer: KIND 0
 * FETCH_ADD, 1 CMP_SWAP (the compare value right half of the time), 2 mixed. Every returned
 * original value and, at the end, the whole array are compared with a model.
 */
static int atomics(struct side *s, struct side *d, int kind, int batches)
{
	uint64_t model[ATOM_SLOTS], *target = (uint64_t *)(d->buf + 4096);
	uint64_t *res = (uint64_t *)(s->buf + 8192), expect[16], got;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	uint64_t sids[16];
	int b, i, errs = 0, slot, cs, is_cs[16];

	for (i = 0; i < ATOM_SLOTS; i++)
		model[i] = target[i] = nasty64();
	for (b = 0; b < batches && !errs; b++) {
		memset(res, CANARY, 16 * 8 + GUARD);
		for (i = 0; i < 16; i++) {
			memset(&wr, 0, sizeof(wr));
			slot = rng32() % ATOM_SLOTS;
			cs = kind == 2 ? (int)(rng32() & 1) : kind;
			sge.addr = (uintptr_t)&res[i];
			sge.length = 8;
			sge.lkey = s->mr->lkey;
			sids[i] = next_wr_id++;
			wr.wr_id = sids[i];
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.send_flags = IBV_SEND_SIGNALED;
			wr.wr.atomic.remote_addr = (uintptr_t)&target[slot];
			wr.wr.atomic.rkey = d->mr->rkey;
			expect[i] = model[slot];
			if (cs) {
				wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
				wr.wr.atomic.compare_add = rng32() & 1 ? model[slot] : nasty64();
				wr.wr.atomic.swap = nasty64();
				if (model[slot] == wr.wr.atomic.compare_add)
					model[slot] = wr.wr.atomic.swap;
			} else {
				wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
				wr.wr.atomic.compare_add = nasty64();
				model[slot] += wr.wr.atomic.compare_add;
			}
			is_cs[i] = cs;
			if (post_send(s, &wr))
				return 1;
		}
		for (i = 0; i < 16; i++) {
			errs += expect_wc(s->scq,
					  &(struct exp_wc){ .wr_id = sids[i],
							    .opcode = is_cs[i] ? IBV_WC_COMP_SWAP
									       : IBV_WC_FETCH_ADD,
							    .check_len = 1, .byte_len = 8, .imm = -1,
							    .qp_num = s->qp->qp_num },
					  is_cs[i] ? "CMP_SWAP completion" : "FETCH_ADD completion");
			if (case_timed_out)
				return errs;
		}
		for (i = 0; i < 16; i++) {
			memcpy(&got, &res[i], 8);
			if (got != expect[i])
				errs += tap_diag("batch %d op %d: returned original 0x%016llx, expected "
						 "0x%016llx", b, i, (unsigned long long)got,
						 (unsigned long long)expect[i]);
		}
		errs += check_canary((uint8_t *)res, 16 * 8, 16 * 8 + GUARD, "atomic result buffer");
	}
	for (i = 0; i < ATOM_SLOTS && !errs; i++)
		if (target[i] != model[i])
			errs += tap_diag("final memory: slot %d is 0x%016llx, expected 0x%016llx", i,
					 (unsigned long long)target[i], (unsigned long long)model[i]);
	return errs;
}

/*
 * BATCHES batches of MIX_OPS signaled operations from S to D posted back to back: RDMA
 * WRITE, RDMA READ and FETCH_ADD in turn, 1 to 64 bytes (8 for the atomic). The responder
 * answers a batch in a few passes, a WRITE's acknowledge before each read response and
 * atomic acknowledge: every completion comes in order, every byte read and written and
 * every original value are checked.
 */
#define MIX_OPS 48
#define MIX_SLOT 128

/*
 * The counters mixed_check() compares: MIX_DIRECT of rrxe's that must grow (ack_direct
 * first), then those that must not.
 */
#define MIX_DIRECT 3
static const char *const mix_counters[] = { "ack_direct", "resp_direct", "req_direct",
					     "rcvd_bad_resp_psn", "rcvd_seq_err",
					     "completer_retry_err" };

/* Reads them into V (-1 each on a device without them). */
static void mixed_counters(struct side *s, long long *v)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(mix_counters); i++)
		v[i] = hw_counter(ibv_get_device_name(s->qp->context->device), port,
				  mix_counters[i]);
}

/*
 * On rrxe (its counter ack_direct) between two QPs of one device, the requests of a mixed
 * batch go to the responder without a packet (req_direct), and the acknowledges, read
 * responses and atomic acknowledges to the completer (ack_direct, resp_direct), each
 * after the packets sent before it and before those sent after: none of them may be
 * taken for a stale response (rcvd_bad_resp_psn), a sequence error or a retry. BEFORE:
 * mixed_counters() before the batches.
 */
static int mixed_check(struct side *s, struct side *d, const long long *before)
{
	long long after[ARRAY_SIZE(mix_counters)];
	int errs = 0;
	size_t i;

	if (before[0] < 0 || s->dev != d->dev)
		return 0;
	mixed_counters(s, after);
	for (i = 0; i < MIX_DIRECT; i++)
		if (after[i] < 0 || after[i] - before[i] <= 0)
			errs += tap_diag("mixed: nothing went without a packet (%s %lld)",
					 mix_counters[i], after[i] - before[i]);
	for (i = MIX_DIRECT; i < ARRAY_SIZE(mix_counters); i++)
		if (after[i] != before[i])
			errs += tap_diag("mixed: %s grew by %lld (ack_direct by %lld)",
					 mix_counters[i], after[i] - before[i],
					 after[0] - before[0]);
	return errs;
}

static int mixed(struct side *s, struct side *d, int batches)
{
	long long before[ARRAY_SIZE(mix_counters)];
	uint8_t *wsrc = s->buf + (64u << 10), *wdst = d->buf + (64u << 10);
	uint8_t *rsrc = d->buf + (128u << 10), *rdst = s->buf + (128u << 10);
	uint64_t *target = (uint64_t *)(d->buf + 4096), *res = (uint64_t *)(s->buf + 8192);
	static const enum ibv_wc_opcode wco[] = { IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ,
						  IBV_WC_FETCH_ADD };
	uint64_t model = nasty64(), expect[MIX_OPS], sids[MIX_OPS], got;
	uint32_t lens[MIX_OPS];
	int b, i, errs = 0;

	mixed_counters(s, before);
	memcpy(target, &model, 8);
	for (b = 0; b < batches && !errs; b++) {
		fill_random(wsrc, MIX_OPS * MIX_SLOT);
		fill_random(rsrc, MIX_OPS * MIX_SLOT);
		memset(wdst, CANARY, MIX_OPS * MIX_SLOT);
		memset(rdst, CANARY, MIX_OPS * MIX_SLOT);
		memset(res, CANARY, MIX_OPS * 8);
		for (i = 0; i < MIX_OPS; i++) {
			struct ibv_send_wr wr = { 0 };
			struct ibv_sge sge;

			lens[i] = i % 3 == 2 ? 8 : 1 + rng32() % 64;
			sids[i] = next_wr_id++;
			sge.length = lens[i];
			sge.lkey = s->mr->lkey;
			wr.wr_id = sids[i];
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.send_flags = IBV_SEND_SIGNALED;
			if (i % 3 == 0) {
				sge.addr = (uintptr_t)(wsrc + i * MIX_SLOT);
				wr.opcode = IBV_WR_RDMA_WRITE;
				wr.wr.rdma.remote_addr = (uintptr_t)(wdst + i * MIX_SLOT);
				wr.wr.rdma.rkey = d->mr->rkey;
			} else if (i % 3 == 1) {
				sge.addr = (uintptr_t)(rdst + i * MIX_SLOT);
				wr.opcode = IBV_WR_RDMA_READ;
				wr.wr.rdma.remote_addr = (uintptr_t)(rsrc + i * MIX_SLOT);
				wr.wr.rdma.rkey = d->mr->rkey;
			} else {
				sge.addr = (uintptr_t)&res[i];
				wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
				wr.wr.atomic.remote_addr = (uintptr_t)target;
				wr.wr.atomic.rkey = d->mr->rkey;
				wr.wr.atomic.compare_add = nasty64();
				expect[i] = model;
				model += wr.wr.atomic.compare_add;
			}
			if (post_send(s, &wr))
				return errs + 1;
		}
		for (i = 0; i < MIX_OPS; i++) {
			errs += expect_wc(s->scq,
					  &(struct exp_wc){ .wr_id = sids[i], .opcode = wco[i % 3],
							    .check_len = i % 3 != 0,
							    .byte_len = lens[i], .imm = -1,
							    .qp_num = s->qp->qp_num },
					  "completion in a mixed batch");
			if (case_timed_out)
				return errs;
		}
		for (i = 0; i < MIX_OPS; i++) {
			size_t at = (size_t)i * MIX_SLOT;

			if (i % 3 == 0) {
				errs += compare(wdst + at, wsrc + at, lens[i], "mixed: written data");
				errs += check_canary(wdst, at + lens[i], at + MIX_SLOT,
						     "mixed: write target");
			} else if (i % 3 == 1) {
				errs += compare(rdst + at, rsrc + at, lens[i], "mixed: read data");
				errs += check_canary(rdst, at + lens[i], at + MIX_SLOT,
						     "mixed: read buffer");
			} else {
				memcpy(&got, &res[i], 8);
				if (got != expect[i])
					errs += tap_diag("batch %d op %d: returned original 0x%016llx, "
							 "expected 0x%016llx", b, i,
							 (unsigned long long)got,
							 (unsigned long long)expect[i]);
			}
		}
	}
	memcpy(&got, target, 8);
	if (!errs && got != model)
		errs += tap_diag("mixed: final memory 0x%016llx, expected 0x%016llx",
				 (unsigned long long)got, (unsigned long long)model);
	return errs + mixed_check(s, d, before);
}

/* ---- UD ---- */

/*
 * A datagram of LEN bytes from S to D (NS SGEs on the sending side; receive: a 40-byte
 * GRH SGE then NR - 1 SGEs if NR > 1, else one SGE for GRH and data), with immediate if
 * IMM, inline if INL.
 */
static int ud_send(struct side *s, struct side *d, uint32_t len, int ns, int nr, int imm,
		   int inl)
{
	struct ibv_sge ssge[MAX_SGE_USED], rsge[MAX_SGE_USED + 1];
	struct ibv_send_wr wr = { 0 };
	uint64_t rid = next_wr_id++, sid = next_wr_id++;
	uint32_t imm_data = rand_imm();
	size_t send_end, recv_end;
	const uint8_t *sg, *dg;
	uint8_t *grh;
	int errs = 0;

	memset(d->buf, CANARY, 2 * mtu_bytes + 4 * GUARD + 64 * MAX_SGE_USED);
	if (nr > 1) {
		rsge[0].addr = (uintptr_t)(d->buf + GUARD);
		rsge[0].length = GRH_LEN;
		rsge[0].lkey = d->mr->lkey;
		nr = 1 + make_sgl(rsge + 1, nr - 1, d, GUARD + GRH_LEN, len, 0, &recv_end);
	} else {
		rsge[0].addr = (uintptr_t)(d->buf + GUARD);
		rsge[0].length = GRH_LEN + len;
		rsge[0].lkey = d->mr->lkey;
		recv_end = GUARD + GRH_LEN + len;
		nr = 1;
	}
	ns = make_sgl(ssge, ns, s, GUARD, len, 0, &send_end);
	fill_sgl(ssge, ns);
	gather(exp_buf, ssge, ns, len);
	if (post_recv(d->qp, rid, rsge, nr))
		return 1;
	wr.wr_id = sid;
	wr.sg_list = ssge;
	wr.num_sge = ns;
	wr.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
	wr.imm_data = imm_data;
	wr.send_flags = IBV_SEND_SIGNALED | (inl ? IBV_SEND_INLINE : 0);
	wr.wr.ud.ah = s->ah;
	wr.wr.ud.remote_qpn = d->qp->qp_num;
	wr.wr.ud.remote_qkey = qkey;
	if (post_send(s, &wr))
		return 1;
	if (inl)
		fill_sgl(ssge, ns);
	errs += expect_wc(s->scq, &(struct exp_wc){ .wr_id = sid, .opcode = IBV_WC_SEND,
						    .imm = -1, .qp_num = s->qp->qp_num },
			  "send completion");
	errs += expect_wc(d->rcq, &(struct exp_wc){ .wr_id = rid, .opcode = IBV_WC_RECV,
						    .check_len = 1, .byte_len = GRH_LEN + len,
						    .imm = imm, .imm_data = imm_data,
						    .qp_num = d->qp->qp_num,
						    .src_qp = s->qp->qp_num },
			  "receive completion");
	if (case_timed_out)
		return errs;
	/* Skip the GRH, compare the payload. */
	if (nr > 1) {
		gather(got_buf, rsge + 1, nr - 1, len);
	} else {
		memcpy(got_buf, d->buf + GUARD + GRH_LEN, len);
	}
	errs += compare(got_buf, exp_buf, len, "datagram payload");
	/* RoCE v2 over IPv4: the IPv4 header sits in the last 20 bytes of the GRH area. */
	grh = d->buf + GUARD;
	sg = s->dev->gid.raw;
	dg = d->dev->gid.raw;
	if (!memcmp(sg, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12)) {
		if (grh[20] >> 4 != 4)
			errs += tap_diag("GRH area: byte 20 is 0x%02x, not an IPv4 header", grh[20]);
		else if (memcmp(grh + 32, sg + 12, 4) || memcmp(grh + 36, dg + 12, 4))
			errs += tap_diag("GRH area: IPv4 source/destination %u.%u.%u.%u/%u.%u.%u.%u, "
					 "expected %u.%u.%u.%u/%u.%u.%u.%u",
					 grh[32], grh[33], grh[34], grh[35], grh[36], grh[37], grh[38],
					 grh[39], sg[12], sg[13], sg[14], sg[15], dg[12], dg[13], dg[14],
					 dg[15]);
	}
	errs += check_canary(d->buf, 0, GUARD, "receive buffer");
	if (nr > 1)
		errs += check_sgl_canary(d, rsge + 1, nr - 1, GUARD + GRH_LEN, recv_end + GUARD,
					 "receive buffer");
	else
		errs += check_canary(d->buf, recv_end, recv_end + GUARD, "receive buffer");
	return errs;
}

/* N datagrams of random sizes posted at once; all arrive, in order, intact. */
static int ud_burst(struct side *s, struct side *d, int n)
{
	uint32_t lens[64], imms[64];
	size_t slot = mtu_bytes + GRH_LEN + GUARD;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	uint64_t base = next_wr_id;
	int i, errs = 0;

	if (n > 64)
		n = 64;
	next_wr_id += 2 * n;
	for (i = 0; i < n; i++) {
		lens[i] = rng32() % (mtu_bytes + 1);
		imms[i] = rand_imm();
		fill_random(s->buf + i * slot, lens[i]);
		sge.addr = (uintptr_t)(d->buf + i * slot);
		sge.length = GRH_LEN + lens[i];
		sge.lkey = d->mr->lkey;
		if (post_recv(d->qp, base + 2 * i, &sge, 1))
			return 1;
	}
	for (i = 0; i < n; i++) {
		memset(&wr, 0, sizeof(wr));
		sge.addr = (uintptr_t)(s->buf + i * slot);
		sge.length = lens[i];
		sge.lkey = s->mr->lkey;
		wr.wr_id = base + 2 * i + 1;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = i & 1 ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
		wr.imm_data = imms[i];
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.ud.ah = s->ah;
		wr.wr.ud.remote_qpn = d->qp->qp_num;
		wr.wr.ud.remote_qkey = qkey;
		if (post_send(s, &wr))
			return 1;
	}
	for (i = 0; i < n; i++) {
		errs += expect_wc(s->scq, &(struct exp_wc){ .wr_id = base + 2 * i + 1,
							    .opcode = IBV_WC_SEND, .imm = -1,
							    .qp_num = s->qp->qp_num },
				  "send completion");
		if (case_timed_out)
			return errs;
	}
	for (i = 0; i < n; i++) {
		char what[64];

		snprintf(what, sizeof(what), "receive completion of datagram %d", i);
		errs += expect_wc(d->rcq, &(struct exp_wc){ .wr_id = base + 2 * i,
							    .opcode = IBV_WC_RECV, .check_len = 1,
							    .byte_len = GRH_LEN + lens[i],
							    .imm = i & 1, .imm_data = imms[i],
							    .qp_num = d->qp->qp_num,
							    .src_qp = s->qp->qp_num },
				  what);
		if (case_timed_out)
			return errs;
		snprintf(what, sizeof(what), "payload of datagram %d (%u B)", i, lens[i]);
		errs += compare(d->buf + i * slot + GRH_LEN, s->buf + i * slot, lens[i], what);
	}
	return errs;
}

/* ---- setup ---- */

static struct ibv_qp *new_qp(struct side *s, enum ibv_qp_type type, uint32_t want_inline,
			     uint32_t *got_inline)
{
	struct ibv_qp_init_attr a = {
		.send_cq = s->scq, .recv_cq = s->rcq, .qp_type = type,
		.cap = { .max_send_wr = QP_DEPTH, .max_recv_wr = QP_DEPTH,
			 .max_send_sge = max_sge, .max_recv_sge = max_sge,
			 .max_inline_data = want_inline },
	};
	struct ibv_qp *qp = ibv_create_qp(s->dev->pd, &a);

	if (qp)
		*got_inline = a.cap.max_inline_data;
	return qp;
}

/* A QP with as much inline data as the device gives (up to 256 B); *GOT_INLINE: how much. */
static struct ibv_qp *new_qp_inline(struct side *s, enum ibv_qp_type type, uint32_t *got_inline)
{
	static const uint32_t inl[] = { 256, 128, 64, 0 };
	struct ibv_qp *qp = NULL;
	int i;

	for (i = 0; i < (int)ARRAY_SIZE(inl) && !qp; i++)
		qp = new_qp(s, type, inl[i], got_inline);
	return qp;
}

static int side_init(struct side *s, uint32_t *got_inline)
{
	s->buf = aligned_alloc(4096, BUF_SIZE);
	if (!s->buf)
		return tap_diag("%s: out of memory", s->name);
	memset(s->buf, 0, BUF_SIZE);
	s->mr = ibv_reg_mr(s->dev->pd, s->buf, BUF_SIZE,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC);
	if (!s->mr)
		return tap_diag("%s: ibv_reg_mr: %s", s->name, strerror(errno));
	s->scq = ibv_create_cq(s->dev->ctx, CQ_DEPTH, NULL, NULL, 0);
	s->rcq = ibv_create_cq(s->dev->ctx, CQ_DEPTH, NULL, NULL, 0);
	if (!s->scq || !s->rcq)
		return tap_diag("%s: ibv_create_cq: %s", s->name, strerror(errno));
	s->qp = new_qp_inline(s, IBV_QPT_RC, got_inline);
	if (!s->qp)
		return tap_diag("%s: ibv_create_qp: %s", s->name, strerror(errno));
	s->psn = rng32() & 0xffffff;
	return 0;
}

/* Moves S through INIT and RTR to RTS, connected to D's QP. */
static int rc_connect(struct side *s, struct side *d)
{
	struct rc_conn c = {
		.port = port, .sgid_index = s->dev->gid_index, .dgid = d->dev->gid,
		.mtu = path_mtu,
		.dest_qpn = d->qp->qp_num, .rq_psn = d->psn, .sq_psn = s->psn,
		.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
		.rd_atomic = rd_atom, .min_rnr_timer = 12, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7,
	};
	const char *step;
	int err = connect_rc_qp(s->qp, &c, &step);

	return err ? tap_diag("%s: modify to %s: %s", s->name, step, strerror(err)) : 0;
}

static int ud_connect(struct side *s)
{
	struct ibv_qp_attr a;
	int err;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = port;
	a.qkey = qkey;
	err = ibv_modify_qp(s->qp, &a,
			    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
	if (err)
		return tap_diag("%s: modify to INIT: %s", s->name, strerror(err));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	err = ibv_modify_qp(s->qp, &a, IBV_QP_STATE);
	if (err)
		return tap_diag("%s: modify to RTR: %s", s->name, strerror(err));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = s->psn;
	err = ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	if (err)
		return tap_diag("%s: modify to RTS: %s", s->name, strerror(err));
	return 0;
}

static void drain(struct ibv_cq *cq)
{
	struct ibv_wc wc[16];

	while (ibv_poll_cq(cq, 16, wc) > 0)
		;
}

/* After a failed case: both RC QPs back to RESET and reconnected, CQs drained. */
static void recover(void)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	int errs = 0;

	printf("# resetting and reconnecting the RC QPs\n");
	ibv_modify_qp(A.qp, &a, IBV_QP_STATE);
	ibv_modify_qp(B.qp, &a, IBV_QP_STATE);
	drain(A.scq);
	drain(A.rcq);
	drain(B.scq);
	drain(B.rcq);
	A.psn = rng32() & 0xffffff;
	B.psn = rng32() & 0xffffff;
	errs += rc_connect(&A, &B);
	errs += rc_connect(&B, &A);
	if (errs)
		bail_out("could not reconnect the RC QPs after a failure");
	if (UA.qp && UB.qp) {
		ibv_modify_qp(UA.qp, &a, IBV_QP_STATE);
		ibv_modify_qp(UB.qp, &a, IBV_QP_STATE);
		drain(UA.scq);
		drain(UA.rcq);
		drain(UB.scq);
		drain(UB.rcq);
		if (ud_connect(&UA) || ud_connect(&UB))
			bail_out("could not bring the UD QPs back to RTS after a failure");
	}
}

static int check_rts(struct side *s, struct side *d)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	int err = ibv_query_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_DEST_QPN | IBV_QP_PATH_MTU, &ia);

	if (err)
		return tap_diag("%s: ibv_query_qp: %s", s->name, strerror(err));
	if (a.qp_state != IBV_QPS_RTS)
		return tap_diag("%s: state %d after the RTS transition", s->name, a.qp_state);
	if (a.dest_qp_num != d->qp->qp_num)
		return tap_diag("%s: dest_qp_num %u, expected %u", s->name, a.dest_qp_num,
				d->qp->qp_num);
	if (a.path_mtu != path_mtu)
		return tap_diag("%s: path_mtu %d, expected %d", s->name, a.path_mtu, path_mtu);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: data-check [-d DEV] [-g GID_INDEX] [-D DEV_B [-G GID_INDEX_B]] "
			"[-s SEED] [-m MAX_SIZE] [-t WC_SECS] [-T TOTAL_SECS] [-X CASE]\n"
			"  -X CASE  self-test: corrupt one byte of case CASE's data, which must fail\n");
	exit(2);
}

/* Opens NAME (for side SIDE) into D, its GID as find_gid() picks it; bails out if it can't. */
static void dev_open(struct dev *d, const char *name, const char *side)
{
	d->ctx = open_device(name);
	if (!d->ctx)
		bail_out("open device %s (%s)", name ? name : "(any)", side);
	d->gid_index = find_gid(d->ctx, port, d->gid_index, &d->gid);
	if (d->gid_index < 0)
		bail_out("no usable GID on %s", ibv_get_device_name(d->ctx->device));
	d->pd = ibv_alloc_pd(d->ctx);
	if (!d->pd)
		bail_out("ibv_alloc_pd on %s: %s", ibv_get_device_name(d->ctx->device),
			 strerror(errno));
}

/* An address handle on S's device to D's GID. */
static struct ibv_ah *ah_to(const struct side *s, const struct side *d)
{
	struct ibv_ah_attr aa = {
		.is_global = 1, .port_num = port,
		.grh = { .dgid = d->dev->gid, .sgid_index = s->dev->gid_index, .hop_limit = 64 },
	};

	return ibv_create_ah(s->dev->pd, &aa);
}

int main(int argc, char **argv)
{
	const char *devname = getenv("RRXE_DEV"), *devname_b = NULL;
	uint64_t seed = (uint64_t)time(NULL);
	uint32_t max_size = MAX_MSG, sizes[128];
	struct ibv_port_attr pattr, pattr_b;
	double start = now_s(), total = 0;
	char gidstr[INET6_ADDRSTRLEN];
	int opt, n, i, j, errs, len;

	setvbuf(stdout, NULL, _IOLBF, 0);
	tap_bail_out_line = 1;
	while ((opt = getopt(argc, argv, "d:g:D:G:s:m:t:T:X:h")) != -1) {
		switch (opt) {
		case 'd': devname = optarg; break;
		case 'g': dev_a.gid_index = atoi(optarg); break;
		case 'D': devname_b = optarg; break;
		case 'G': dev_b.gid_index = atoi(optarg); break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'm': max_size = strtoul(optarg, NULL, 0); break;
		case 't': wc_timeout = atof(optarg); break;
		case 'T': total = atof(optarg); break;
		case 'X': corrupt_case = atoi(optarg); break;
		default: usage();
		}
	}
	if (dev_b.gid_index >= 0 && !devname_b)
		usage();
	if (max_size > MAX_MSG)
		max_size = MAX_MSG;
	if (wc_timeout <= 0)
		wc_timeout = 15 * time_scale();
	if (total > 0)
		deadline = start + total;
	rng_seed(seed);
	printf("# data-check: seed %llu (rerun with -s %llu)\n", (unsigned long long)seed,
	       (unsigned long long)seed);

	dev_open(&dev_a, devname, "A");
	A.dev = UA.dev = &dev_a;
	B.dev = UB.dev = &dev_a;
	if (ibv_query_device(dev_a.ctx, &dattr) || ibv_query_port(dev_a.ctx, port, &pattr))
		bail_out("ibv_query_device/port: %s", strerror(errno));
	path_mtu = pattr.active_mtu;
	if (devname_b) {
		/* RRXE_GID_INDEX names a GID of DEV, not of DEV_B. */
		unsetenv("RRXE_GID_INDEX");
		dev_open(&dev_b, devname_b, "B");
		B.dev = UB.dev = &dev_b;
		if (ibv_query_port(dev_b.ctx, port, &pattr_b))
			bail_out("ibv_query_port on %s: %s", devname_b, strerror(errno));
		if (pattr_b.active_mtu < path_mtu)
			path_mtu = pattr_b.active_mtu;
		printf("# B on %s, GID index %d\n", devname_b, dev_b.gid_index);
	}
	mtu_bytes = 128u << path_mtu;
	max_sge = dattr.max_sge < MAX_SGE_USED ? (uint32_t)dattr.max_sge : MAX_SGE_USED;
	rd_atom = dattr.max_qp_rd_atom < 16 ? (uint32_t)dattr.max_qp_rd_atom : 16;
	if (!rd_atom)
		rd_atom = 1;
	inet_ntop(AF_INET6, dev_a.gid.raw, gidstr, sizeof(gidstr));
	printf("# %s: GID index %d (%s), active MTU %u, max_sge %d, max_qp_rd_atom %d, "
	       "atomic_cap %d, max_msg_sz %u\n",
	       ibv_get_device_name(dev_a.ctx->device), dev_a.gid_index, gidstr, mtu_bytes,
	       dattr.max_sge,
	       dattr.max_qp_rd_atom, dattr.atomic_cap, pattr.max_msg_sz);
	exp_buf = malloc(MAX_MSG + 64);
	got_buf = malloc(MAX_MSG + 64);
	if (!exp_buf || !got_buf)
		bail_out("malloc: %s", strerror(errno));

	begin_case();
	errs = side_init(&A, &max_inline) + side_init(&B, &ud_inline);
	if (ud_inline < max_inline)
		max_inline = ud_inline;
	if (errs)
		bail_out("RC setup (PD, 2 x %u MiB MRs, CQs, QPs)", BUF_SIZE >> 20);
	/* A's PSNs wrap around 2^24 early on. */
	A.psn = 0xffffff - 20;
	errs = rc_connect(&A, &B) || rc_connect(&B, &A);
	errs = errs || check_rts(&A, &B) || check_rts(&B, &A);
	ok(!errs, "RC QPs %u and %u connected over GID index %d, path MTU %u, inline %u",
	   A.qp->qp_num, B.qp->qp_num, dev_a.gid_index, mtu_bytes, max_inline);
	if (errs)
		bail_out("cannot go on without connected RC QPs");

	/* RC: every size, the initiator alternating. */
	n = rc_sizes(sizes, max_size);
	for (i = 0; i < n; i++)
		rc_case(i & 1 ? &B : &A, i & 1 ? &A : &B, sizes[i]);

	/* Random operations, sizes (log-uniform up to 1 MiB) and SGE counts. */
	for (i = 0; i < 150; i++) {
		struct side *s = rng32() & 1 ? &B : &A, *d = s == &A ? &B : &A;
		uint32_t l = rng32() % (2u << (rng32() % 20));
		int ns = 1 + (int)(rng32() % max_sge), nr = 1 + (int)(rng32() % max_sge);
		int k = rng32() % 5;
		static const char *const kn[] = { "SEND", "SEND_WITH_IMM", "RDMA_WRITE",
						  "RDMA_WRITE_WITH_IMM", "RDMA_READ" };

		if (l > max_size)
			l = max_size;
		ns = ns > (int)l ? (l ? (int)l : 1) : ns;
		nr = nr > (int)l ? (l ? (int)l : 1) : nr;
		begin_case();
		switch (k) {
		case 0:
		case 1:
			errs = do_send(s, d, l, ns, nr, k, 0);
			break;
		case 2:
		case 3:
			errs = do_write(s, d, l, ns, k == 3, 0);
			break;
		default:
			errs = do_read(s, d, l, nr);
		}
		result(errs, "random %d: %s %u B %s->%s, %d/%d SGEs", i, kn[k], l, s->name, d->name,
		       ns, nr);
	}

	/* Inline SEND and WRITE from an unregistered buffer reused at once. */
	if (!max_inline) {
		skip("inline: the device gives no inline data");
	} else {
		const uint32_t il[] = { 0, 1, 7, 16, 63, 64, 65, max_inline / 2 + 1, max_inline };

		for (i = 0; i < (int)ARRAY_SIZE(il); i++) {
			if (il[i] > max_inline)
				continue;
			begin_case();
			result(do_send(&A, &B, il[i], 1, 1, i & 1, 1), "inline SEND%s %u B",
			       i & 1 ? "_WITH_IMM" : "", il[i]);
			begin_case();
			result(do_write(&B, &A, il[i], 1, 0, 1), "inline RDMA_WRITE %u B B->A",
			       il[i]);
		}
	}

	/* Pipelines of unsignaled work. */
	for (i = 0; i < 4; i++) {
		begin_case();
		result(pipeline(i & 1 ? &B : &A, i & 1 ? &A : &B, 64),
		       "pipeline of 64 SEND/WRITE[_WITH_IMM] (every 8th signaled) %s->%s",
		       i & 1 ? "B" : "A", i & 1 ? "A" : "B");
	}

	/* Atomics. */
	if (dattr.atomic_cap == IBV_ATOMIC_NONE) {
		ok(0, "atomics: the device reports IBV_ATOMIC_NONE");
	} else {
		static const char *const names[] = { "FETCH_ADD", "CMP_SWAP", "mixed FETCH_ADD/CMP_SWAP" };

		for (i = 0; i < 3; i++)
			for (j = 0; j < 2; j++) {
				begin_case();
				result(atomics(j ? &B : &A, j ? &A : &B, i, 16),
				       "%s: 16 x 16 atomics %s->%s, every original and the final "
				       "memory", names[i], j ? "B" : "A", j ? "A" : "B");
			}
		for (j = 0; j < 2; j++) {
			begin_case();
			result(mixed(j ? &B : &A, j ? &A : &B, 20),
			       "mixed: 20 x %d WRITE, READ, FETCH_ADD %s->%s back to back, every "
			       "completion in order, byte and original", MIX_OPS, j ? "B" : "A",
			       j ? "A" : "B");
		}
	}

	/* UD. */
	begin_case();
	UA.buf = A.buf;
	UA.mr = A.mr;
	UB.buf = B.buf;
	UB.mr = B.mr;
	errs = 0;
	UA.scq = ibv_create_cq(UA.dev->ctx, CQ_DEPTH, NULL, NULL, 0);
	UA.rcq = ibv_create_cq(UA.dev->ctx, CQ_DEPTH, NULL, NULL, 0);
	UB.scq = ibv_create_cq(UB.dev->ctx, CQ_DEPTH, NULL, NULL, 0);
	UB.rcq = ibv_create_cq(UB.dev->ctx, CQ_DEPTH, NULL, NULL, 0);
	if (!UA.scq || !UA.rcq || !UB.scq || !UB.rcq)
		bail_out("UD: ibv_create_cq: %s", strerror(errno));
	UA.qp = new_qp_inline(&UA, IBV_QPT_UD, &ud_inline);
	UB.qp = UA.qp ? new_qp(&UB, IBV_QPT_UD, ud_inline, &ud_inline) : NULL;
	if (!UA.qp || !UB.qp)
		bail_out("UD: ibv_create_qp: %s", strerror(errno));
	UA.psn = rng32() & 0xffffff;
	UB.psn = rng32() & 0xffffff;
	errs = ud_connect(&UA) || ud_connect(&UB);
	UA.ah = errs ? NULL : ah_to(&UA, &UB);
	UB.ah = UA.ah && UB.dev != UA.dev ? ah_to(&UB, &UA) : UA.ah;
	if (!UA.ah || !UB.ah)
		bail_out("UD: QPs to RTS and the AHs between their GIDs (%s)", strerror(errno));
	result(0, "UD QPs %u and %u in RTS, AH from GID index %d", UA.qp->qp_num, UB.qp->qp_num,
	       dev_a.gid_index);
	{
		const uint32_t ul[] = { 0, 1, 2, 3, 7, 8, 63, 64, 65, 255, 256, 257, 511, 512,
					513, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096 };

		for (i = 0; i < (int)ARRAY_SIZE(ul); i++) {
			struct side *s = i & 1 ? &UB : &UA, *d = i & 1 ? &UA : &UB;

			if (ul[i] > mtu_bytes)
				continue;
			begin_case();
			result(ud_send(s, d, ul[i], 1, 1, i & 1, 0), "UD SEND%s %u B %s->%s",
			       i & 1 ? "_WITH_IMM" : "", ul[i], s->name, d->name);
		}
		for (j = -1; j <= 0; j++) {
			len = (int)mtu_bytes + j;
			for (i = 0; i < 2; i++) {
				int ns = rand_nsge(), nr = rand_nsge();

				begin_case();
				result(ud_send(&UA, &UB, len, ns, nr, i, 0),
				       "UD SEND%s %d B, %d -> GRH + %d SGEs", i ? "_WITH_IMM" : "",
				       len, ns, nr - 1);
			}
		}
		if (ud_inline) {
			const uint32_t il[] = { 1, 64, ud_inline < mtu_bytes ? ud_inline : mtu_bytes };

			for (i = 0; i < (int)ARRAY_SIZE(il); i++) {
				begin_case();
				result(ud_send(&UB, &UA, il[i], 1, 1, i & 1, 1),
				       "UD inline SEND%s %u B UD-B->UD-A", i & 1 ? "_WITH_IMM" : "",
				       il[i]);
			}
		} else {
			skip("UD inline: the device gives no inline data");
		}
		for (i = 0; i < 2; i++) {
			begin_case();
			result(ud_burst(i ? &UB : &UA, i ? &UA : &UB, 48),
			       "UD burst of 48 datagrams up to %u B %s", mtu_bytes,
			       i ? "UD-B->UD-A" : "UD-A->UD-B");
		}
	}

	printf("# data-check: %.1f s, seed %llu\n", now_s() - start, (unsigned long long)seed);
	return tap_done();
}
