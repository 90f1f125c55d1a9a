// SPDX-License-Identifier: GPL-2.0
/*
 * RNR NAKs for ever (issue 14): a requester that may retry an RNR NAK without limit
 * (rnr_retry 7) sends to a responder that never posts a receive.
 *
 *   rnr-forever [-d DEV] [-g GID_INDEX] [-t SECS] [-r TIMER] [-n SENDS] [-a TIMEOUT]
 *               [-c RETRY_CNT] [-e flush|destroy|kill]
 *
 * Two RC QPs on one device, connected to each other over its GID (default $RRXE_GID_INDEX
 * or the first IPv4-mapped RoCE v2 GID): A posts SENDS (default 4) signaled SENDs, B has
 * no receive. B answers each with an RNR NAK carrying its min_rnr_timer code TIMER
 * (default 24: 40.96 ms); A waits that long and sends again, for ever. For SECS (default
 * 60) it checks, about once a second:
 *   - no completion at all, on either QP (not RNR_RETRY_EXC_ERR, not RETRY_EXC_ERR from
 *     A's transport timer (ACK timeout TIMEOUT, default 14: 67 ms; retry count RETRY_CNT,
 *     default 7), even when the RNR wait is longer than the timeout);
 *   - both QPs stay in RTS;
 *   - the device's rcvd_rnr_err and send_rnr_err grow, with never 10 s without growth
 *     (the retries go on), and no faster than 3 times the rate the RNR timer allows plus
 *     10 per second, in any one-second window (not a busy loop); sent_pkts (all of A's
 *     outstanding SENDs and B's NAKs may go out each round) no faster than 2 * SENDS + 4
 *     times that bound;
 *   - this process is scheduled: a 200 ms sleep never takes 5 s longer (the kernel is
 *     responsive; soft lockups and RCU stalls are vm-run's to catch).
 * Then, by -e (default flush):
 *   flush    A to ERR: every SEND completes with IBV_WC_WR_FLUSH_ERR, in order, within
 *            10 s; then both QPs are destroyed, each within 10 s;
 *   destroy  A is destroyed while it waits for its RNR timer, then B, each within 10 s;
 *   kill     if every check passed, prints "# all N passed; waiting to be killed" and
 *            sleeps, the retries going on, until the caller kills it (and times the
 *            kernel's cleanup); else exits 1.
 * After flush and destroy the counters must stop: rcvd_rnr_err grows by at most one in the
 * 2 s after (a NAK already in flight).
 * TAP output; exit 1 on any failure.
 */
#include <getopt.h>
#include <unistd.h>

#include "rrxe-test.h"

#define LIMIT_S 10.0 /* for any teardown step */
#define STALL_S 10.0 /* without a new RNR NAK */
#define LAG_S 5.0    /* extra time a 200 ms sleep may take */

/* Microseconds of each RNR timer code (IBA table 45; code 0 is the longest). */
static const unsigned int rnr_us[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560,
	3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880, 163840,
	245760, 327680, 491520,
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qa, *qb;
static struct ibv_mr *mr;
static union ibv_gid gid;
static int gid_index = -1;
static const uint8_t port = 1;
static const char *devname;

/* The device's hw_counter NAME (port 1), or -1. */
static long long counter(const char *name)
{
	return hw_counter(ibv_get_device_name(ctx->device), port, name);
}

static struct ibv_qp *new_qp(void)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};

	return ibv_create_qp(pd, &a);
}

/*
 * S to RTS, connected to D; RNR_TIMER is what S answers with, TIMEOUT its ACK timeout and
 * RETRY_CNT its retry count.
 */
static int connect_qp(struct ibv_qp *s, struct ibv_qp *d, enum ibv_mtu mtu, uint8_t rnr_timer,
		      uint8_t timeout, uint8_t retry_cnt)
{
	struct rc_conn c = {
		.port = port, .sgid_index = gid_index, .dgid = gid, .mtu = mtu,
		.dest_qpn = d->qp_num, .rq_psn = d->qp_num & 0xffffff,
		.sq_psn = s->qp_num & 0xffffff, .access = IBV_ACCESS_LOCAL_WRITE, .rd_atomic = 1,
		.min_rnr_timer = rnr_timer, .timeout = timeout, .retry_cnt = retry_cnt,
		.rnr_retry = 7, /* infinite */
	};

	return connect_rc_qp(s, &c, NULL);
}

static int qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	return ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) ? -1 : (int)a.qp_state;
}

/* Any completion is unexpected while the retries go on: prints them, returns how many. */
static int unexpected_wcs(void)
{
	struct ibv_wc wc;
	int n = 0;

	while (ibv_poll_cq(cq, 1, &wc) == 1) {
		printf("#   completion: QP %u wr_id %llu status %s (%d) opcode %d\n", wc.qp_num,
		       (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status), wc.status,
		       wc.opcode);
		n++;
	}
	return n;
}

/* Destroys QP, timed; a TAP line. */
static void destroy_timed(struct ibv_qp **qp, const char *what)
{
	double t = now_s();
	int err = ibv_destroy_qp(*qp);

	t = now_s() - t;
	*qp = NULL;
	ok(!err && t < LIMIT_S * time_scale(), "destroy %s: %s in %.3f s (limit %.0f s)", what,
	   err ? strerror(err) : "done", t, LIMIT_S * time_scale());
}

/* rcvd_rnr_err must stop growing once A is in ERR or gone. */
static void counters_stop(void)
{
	long long r0 = counter("rcvd_rnr_err"), r1;

	sleep(2);
	r1 = counter("rcvd_rnr_err");
	ok(r1 - r0 <= 1, "no RNR NAK retries after the requester's end (rcvd_rnr_err +%lld in 2 s)",
	   r1 - r0);
}

/* A to ERR: every SEND flushed, in order, within LIMIT_S. */
static void flush(int sends)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	double t0 = now_s(), t;
	struct ibv_wc wc;
	int err, got = 0, bad = 0, n;

	err = ibv_modify_qp(qa, &a, IBV_QP_STATE);
	t = now_s() - t0;
	ok(!err && t < LIMIT_S * time_scale(), "requester to ERR: %s in %.3f s",
	   err ? strerror(err) : "done", t);
	while (got < sends && now_s() - t0 < LIMIT_S * time_scale()) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			break;
		if (!n) {
			usleep(1000);
			continue;
		}
		got++;
		if (wc.qp_num != qa->qp_num || wc.status != IBV_WC_WR_FLUSH_ERR ||
		    wc.wr_id != (uint64_t)got) {
			printf("#   completion %d: QP %u wr_id %llu status %s (%d)\n", got, wc.qp_num,
			       (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
			       wc.status);
			bad++;
		}
	}
	t = now_s() - t0;
	ok(got == sends && !bad,
	   "%d of %d SENDs completed with IBV_WC_WR_FLUSH_ERR in order within %.3f s (%d other)",
	   got - bad, sends, t, bad);
	counters_stop();
	ok(!unexpected_wcs(), "no further completion");
}

static void usage(void)
{
	fprintf(stderr, "usage: rnr-forever [-d DEV] [-g GID_INDEX] [-t SECS] [-r TIMER] "
			"[-n SENDS] [-a TIMEOUT] [-c RETRY_CNT] [-e flush|destroy|kill]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	double secs = 60, start, now, last, last_growth, max_lag = 0, bound, rate, worst = 0, el;
	int opt, i, err, sends = 4, wcs = 0, not_rts = 0, windows = 0, hot = 0, stalled = 0;
	unsigned int timer = 24, timeout = 14, retry_cnt = 7;
	long long r0, s0, p0, rp, r, s, p;
	const char *end = "flush";
	struct ibv_port_attr pattr;
	static char buf[4096];

	setvbuf(stdout, NULL, _IOLBF, 0);
	devname = getenv("RRXE_DEV");
	while ((opt = getopt(argc, argv, "d:g:t:r:n:a:c:e:h")) != -1) {
		switch (opt) {
		case 'd': devname = optarg; break;
		case 'g': gid_index = atoi(optarg); break;
		case 't': secs = atof(optarg); break;
		case 'r': timer = strtoul(optarg, NULL, 0); break;
		case 'n': sends = atoi(optarg); break;
		case 'a': timeout = strtoul(optarg, NULL, 0); break;
		case 'c': retry_cnt = strtoul(optarg, NULL, 0); break;
		case 'e': end = optarg; break;
		default: usage();
		}
	}
	if (timer > 31 || timeout > 31 || retry_cnt > 7 || sends < 1 || sends > 64 ||
	    (strcmp(end, "flush") && strcmp(end, "destroy") && strcmp(end, "kill")))
		usage();

	ctx = open_device(devname);
	if (!ctx)
		bail_out("open device %s", devname ? devname : "(any)");
	if (ibv_query_port(ctx, port, &pattr))
		bail_out("ibv_query_port: %s", strerror(errno));
	gid_index = find_gid(ctx, port, gid_index, &gid);
	if (gid_index < 0)
		bail_out("no usable GID on %s", ibv_get_device_name(ctx->device));
	pd = ibv_alloc_pd(ctx);
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	qa = new_qp();
	qb = new_qp();
	if (!pd || !mr || !cq || !qa || !qb)
		bail_out("PD, MR, CQ and two RC QPs: %s", strerror(errno));
	err = connect_qp(qa, qb, pattr.active_mtu, timer, timeout, retry_cnt);
	err = err ?: connect_qp(qb, qa, pattr.active_mtu, timer, timeout, retry_cnt);
	if (err)
		bail_out("connect the RC QPs: %s", strerror(err));
	r0 = counter("rcvd_rnr_err");
	s0 = counter("send_rnr_err");
	p0 = counter("sent_pkts");
	if (r0 < 0 || s0 < 0 || p0 < 0)
		bail_out("no rcvd_rnr_err, send_rnr_err or sent_pkts hw_counter on %s",
			 ibv_get_device_name(ctx->device));
	/* A NAK every RNR wait, 3 times that for scheduling slop, 10 more for timer ticks. */
	bound = 3 * 1e6 / rnr_us[timer] + 10;
	printf("# %s: QPs %u -> %u, RNR timer %u (%u us), ACK timeout %u, retry count %u, "
	       "%d SENDs, %.0f s; at most %.1f RNR NAKs/s\n",
	       ibv_get_device_name(ctx->device), qa->qp_num, qb->qp_num, timer,
	       rnr_us[timer], timeout, retry_cnt, sends, secs, bound);

	for (i = 0; i < sends; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey };
		struct ibv_send_wr wr = { .wr_id = i + 1, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED },
				   *badwr;

		err = ibv_post_send(qa, &wr, &badwr);
		if (err)
			bail_out("ibv_post_send %d: %s", i, strerror(err));
	}

	start = last = last_growth = now_s();
	rp = r0;
	while ((now = now_s()) < start + secs) {
		usleep(200000);
		el = now_s() - now - 0.2;
		if (el > max_lag)
			max_lag = el;
		now = now_s();
		if (now - last < 1)
			continue;
		r = counter("rcvd_rnr_err");
		wcs += unexpected_wcs();
		if (qp_state(qa) != IBV_QPS_RTS || qp_state(qb) != IBV_QPS_RTS) {
			if (!not_rts++)
				printf("#   after %.1f s: QP states %d and %d, not RTS (%d)\n",
				       now - start, qp_state(qa), qp_state(qb), IBV_QPS_RTS);
		}
		rate = (r - rp) / (now - last);
		if (rate > worst)
			worst = rate;
		if (rate > bound && !hot++)
			printf("#   after %.1f s: %.0f RNR NAKs/s\n", now - start, rate);
		if (r > rp)
			last_growth = now;
		if (now - last_growth > STALL_S && !stalled++)
			printf("#   after %.1f s: no RNR NAK for %.1f s\n", now - start,
			       now - last_growth);
		rp = r;
		last = now;
		windows++;
	}
	r = counter("rcvd_rnr_err") - r0;
	s = counter("send_rnr_err") - s0;
	p = counter("sent_pkts") - p0;
	now = now_s();
	el = now - start;
	printf("# %.1f s: rcvd_rnr_err +%lld, send_rnr_err +%lld, sent_pkts +%lld (%.1f, %.1f, "
	       "%.1f per s); busiest second %.1f RNR NAKs\n",
	       el, r, s, p, r / el, s / el, p / el, worst);
	ok(!wcs, "no completion while the responder has no receive (%d)", wcs);
	ok(!not_rts, "both QPs in RTS throughout (%d of %d checks not)", not_rts, windows);
	ok(r > 0 && s > 0 && !stalled && now - last_growth <= STALL_S,
	   "RNR NAKs sent and received throughout, never %.0f s without (the last %.1f s "
	   "before the end)", STALL_S, now - last_growth);
	ok(!hot && r / el <= bound && s / el <= bound,
	   "RNR NAK rate bounded by the RNR timer: at most %.1f per s in any second", bound);
	ok(p / el <= (2 * sends + 4) * bound, "sent_pkts rate %.1f per s, at most %.1f",
	   p / el, (2 * sends + 4) * bound);
	ok(max_lag < LAG_S, "userspace responsive: a 200 ms sleep took at most %.3f s longer",
	   max_lag);

	if (!strcmp(end, "kill")) {
		if (tap_failed)
			return tap_done();
		printf("# all %d passed; waiting to be killed\n", tap_n);
		for (;;)
			pause();
	}
	if (!strcmp(end, "flush")) {
		flush(sends);
		destroy_timed(&qa, "requester in ERR");
	} else {
		destroy_timed(&qa, "requester waiting for its RNR timer");
		counters_stop();
	}
	destroy_timed(&qb, "responder");
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return tap_done();
}
