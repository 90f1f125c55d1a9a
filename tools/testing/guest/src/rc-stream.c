// SPDX-License-Identifier: GPL-2.0
/*
 * A stream of verified RC traffic between two hosts, for tests that disturb the peer
 * (issue 14: the peer VM stopped for 30 s, or rebooted):
 *
 *   rc-stream [-d DEV] [-g GID_INDEX] [-p PORT] [-u TIMEOUT] [-r RETRY_CNT] [-D SECS]
 *             [-s SIZE] [-W SECS] [SERVER]
 *
 * Without SERVER it serves: it listens on TCP PORT (default 18515) for one client. The two
 * exchange QP number, PSN, GID and the address and rkey of a pattern buffer over that
 * connection, and connect an RC QP each (ACK timeout TIMEOUT, default 14 (67 ms), retry_cnt
 * RETRY_CNT, default 7 (which, unlike rnr_retry 7, is not infinite), rnr_retry 7). For
 * SECS (default 60) the client keeps 8 SENDs of SIZE bytes (default 4096) in flight,
 * message N holding N and then bytes from a PRNG seeded with N, and every 16th message
 * also RDMA READs SIZE bytes of the server's pattern buffer (a PRNG too); the server checks
 * every message's number (in order, none missing) and contents, the client every READ.
 * Then the client sends its count over TCP and the server answers with its own; they must
 * agree. Prints the longest time the client waited for a completion.
 *
 * Exit status: 0 done and every byte right; 3 the QP failed with an error completion (its
 * status printed as "# ended: wc status N (NAME)"), or, on the server, the client went
 * away (TCP closed) before the end, and the QP was then destroyed within 10 s; 1 anything
 * else (wrong data, a destroy slower than 10 s, setup). The server gives up after -W SECS
 * (default SECS + 300) without the client's end.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rrxe-test.h"

#define DEPTH 8
#define READ_EVERY 16
#define DESTROY_LIMIT_S 10.0
#define EXIT_QP_ERROR 3

struct peer_info {
	uint32_t qpn, psn, rkey, pad;
	uint64_t addr;
	uint8_t gid[16];
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static struct ibv_mr *mr;
static uint8_t *buf; /* DEPTH message slots, the pattern (server) or READ target (client) */
static uint32_t size = 4096;
static int sock = -1;

__attribute__((format(printf, 1, 2))) static void fail(const char *fmt, ...)
{
	va_list ap;

	printf("# FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

static void fill(uint8_t *p, uint32_t len, uint64_t seed)
{
	rng_seed(seed + 1);
	fill_random(p, len);
}

/* Message N: SIZE bytes (LEN arrived), N, then PRNG(N) bytes. */
static int check_msg(const uint8_t *p, uint32_t len, uint64_t n, uint8_t *tmp)
{
	uint64_t got;

	if (len != size) {
		printf("# message %llu: %u bytes arrived, not %u\n", (unsigned long long)n, len,
		       size);
		return 1;
	}
	memcpy(&got, p, 8);
	if (got != n) {
		printf("# message %llu carries number %llu\n", (unsigned long long)n,
		       (unsigned long long)got);
		return 1;
	}
	fill(tmp, size - 8, n);
	if (memcmp(p + 8, tmp, size - 8)) {
		printf("# message %llu: contents differ\n", (unsigned long long)n);
		return 1;
	}
	return 0;
}

/* Destroys the QP, timed, and exits: EXIT_QP_ERROR if that took less than 10 s. */
static void end_destroy(void)
{
	double t = now_s();
	int err = ibv_destroy_qp(qp);

	t = now_s() - t;
	printf("# destroy QP: %s in %.3f s\n", err ? strerror(err) : "done", t);
	exit(!err && t < DESTROY_LIMIT_S ? EXIT_QP_ERROR : 1);
}

/* LEN bytes to or from the peer over TCP; if it went away, the QP goes too. */
static void xfer(void *p, size_t len, int out)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = out ? write(sock, (char *)p + done, len - done) :
			  read(sock, (char *)p + done, len - done);
		if (n <= 0) {
			printf("# the peer closed the TCP connection\n");
			end_destroy();
		}
		done += n;
	}
}

static void tcp_setup(const char *server, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1, l;

	if (server) {
		if (inet_pton(AF_INET, server, &a.sin_addr) != 1)
			fail("bad server address %s", server);
		sock = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(sock, (struct sockaddr *)&a, sizeof(a))) {
			/* traffic-lib's wording, which makes a client try again. */
			printf("Couldn't connect to %s:%d: %s\n", server, port, strerror(errno));
			exit(1);
		}
		return;
	}
	l = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1))
		fail("listen on port %d: %s", port, strerror(errno));
	sock = accept(l, NULL, NULL);
	close(l);
	if (sock < 0)
		fail("accept: %s", strerror(errno));
}

static void connect_qp(const struct peer_info *r, uint32_t psn, int gid_index,
		       enum ibv_mtu mtu, uint8_t timeout, uint8_t retry_cnt)
{
	struct rc_conn c = {
		.port = 1, .sgid_index = gid_index, .mtu = mtu, .dest_qpn = r->qpn,
		.rq_psn = r->psn, .sq_psn = psn,
		.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, .rd_atomic = 1,
		.min_rnr_timer = 12, .timeout = timeout, .retry_cnt = retry_cnt, .rnr_retry = 7,
	};
	int err;

	memcpy(c.dgid.raw, r->gid, 16);
	err = connect_rc_qp(qp, &c, NULL);
	if (err)
		fail("connect the QP: %s", strerror(err));
}

/* An error completion ends the run. */
static void qp_failed(const struct ibv_wc *wc)
{
	printf("# ended: wc status %d (%s), wr_id %llu\n", wc->status,
	       ibv_wc_status_str(wc->status), (unsigned long long)wc->wr_id);
	end_destroy();
}

static void post_recv(int slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(buf + slot * size), .length = size,
			       .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;
	int err = ibv_post_recv(qp, &wr, &bad);

	if (err)
		fail("ibv_post_recv: %s", strerror(err));
}

/* The server: checks each message as it comes, until the client's TCP message. */
static int serve(double limit)
{
	uint64_t next = 0, total;
	uint8_t *tmp = malloc(size);
	struct pollfd pfd = { .fd = sock, .events = POLLIN };
	double end = now_s() + limit, t;
	struct ibv_wc wc;
	int i, n;

	for (i = 0; i < 2 * DEPTH; i++)
		post_recv(i);
	for (;;) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			fail("ibv_poll_cq");
		if (n == 1) {
			if (wc.status != IBV_WC_SUCCESS)
				qp_failed(&wc);
			if (check_msg(buf + wc.wr_id * size, wc.byte_len, next, tmp))
				fail("wrong data in message %llu", (unsigned long long)next);
			next++;
			post_recv(wc.wr_id);
			continue;
		}
		if (poll(&pfd, 1, 1) == 1)
			break;
		if (now_s() > end) {
			printf("# no end from the client after %.0f s\n", limit);
			return 1;
		}
	}
	/* The client sends its count once all its SENDs completed: all arrived before. */
	xfer(&total, 8, 0);
	while (ibv_poll_cq(cq, 1, &wc) == 1) {
		if (wc.status != IBV_WC_SUCCESS)
			qp_failed(&wc);
		if (check_msg(buf + wc.wr_id * size, wc.byte_len, next, tmp))
			fail("wrong data in message %llu", (unsigned long long)next);
		next++;
	}
	xfer(&next, 8, 1);
	printf("# server: %llu messages of %u B checked, the client sent %llu\n",
	       (unsigned long long)next, size, (unsigned long long)total);
	t = now_s();
	n = ibv_destroy_qp(qp);
	printf("# destroy QP: %s in %.3f s\n", n ? strerror(n) : "done", now_s() - t);
	return next != total || n;
}

/* The client: SENDs and READs for SECS, then the count over TCP. */
static int stream(double secs, const struct peer_info *r)
{
	uint8_t *pattern = malloc(size), *rd = buf + DEPTH * size;
	double start = now_s(), last = start, gap = 0, t;
	uint64_t sent = 0, done = 0, reads = 0, peer;
	int outstanding = 0, read_out = 0, n, err;
	struct ibv_wc wc;

	fill(pattern, size, ~0ull);
	for (;;) {
		int more = now_s() < start + secs;

		while (more && outstanding < DEPTH) {
			struct ibv_sge sge = { .addr = (uintptr_t)(buf + (sent % DEPTH) * size),
					       .length = size, .lkey = mr->lkey };
			struct ibv_send_wr wr = { .wr_id = sent, .sg_list = &sge, .num_sge = 1,
						  .opcode = IBV_WR_SEND,
						  .send_flags = IBV_SEND_SIGNALED },
					   *bad;

			memcpy(buf + (sent % DEPTH) * size, &sent, 8);
			fill(buf + (sent % DEPTH) * size + 8, size - 8, sent);
			if (!read_out && sent % READ_EVERY == 0) {
				struct ibv_sge rs = { .addr = (uintptr_t)rd, .length = size,
						      .lkey = mr->lkey };
				struct ibv_send_wr rw = { .wr_id = ~0ull, .sg_list = &rs,
							  .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
							  .send_flags = IBV_SEND_SIGNALED,
							  .wr.rdma = { .remote_addr = r->addr,
								       .rkey = r->rkey } };

				memset(rd, 0, size);
				err = ibv_post_send(qp, &rw, &bad);
				if (err)
					fail("post RDMA READ: %s", strerror(err));
				read_out = 1;
			}
			err = ibv_post_send(qp, &wr, &bad);
			if (err)
				fail("post SEND: %s", strerror(err));
			sent++;
			outstanding++;
		}
		if (!more && !outstanding && !read_out)
			break;
		n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			fail("ibv_poll_cq");
		t = now_s();
		if (!n) {
			usleep(1000);
			continue;
		}
		if (t - last > gap)
			gap = t - last;
		last = t;
		if (wc.status != IBV_WC_SUCCESS)
			qp_failed(&wc);
		if (wc.wr_id == ~0ull) {
			if (memcmp(rd, pattern, size))
				fail("RDMA READ %llu: contents differ", (unsigned long long)reads);
			reads++;
			read_out = 0;
		} else {
			if (wc.wr_id != done)
				fail("SEND completion %llu for wr_id %llu",
				     (unsigned long long)done, (unsigned long long)wc.wr_id);
			done++;
			outstanding--;
		}
	}
	xfer(&done, 8, 1);
	xfer(&peer, 8, 0);
	printf("# client: %llu SENDs of %u B and %llu READs in %.1f s, all checked; the server "
	       "checked %llu; longest wait for a completion %.1f s\n",
	       (unsigned long long)done, size, (unsigned long long)reads, now_s() - start,
	       (unsigned long long)peer, gap);
	t = now_s();
	n = ibv_destroy_qp(qp);
	printf("# destroy QP: %s in %.3f s\n", n ? strerror(n) : "done", now_s() - t);
	return peer != done || n;
}

static void usage(void)
{
	fprintf(stderr, "usage: rc-stream [-d DEV] [-g GID_INDEX] [-p PORT] [-u TIMEOUT] "
			"[-r RETRY_CNT] [-D SECS] [-s SIZE] [-W SECS] [SERVER]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *devname = getenv("RRXE_DEV"), *server = NULL;
	int opt, port = 18515, gid_index = -1, err;
	unsigned int timeout = 14, retry_cnt = 7;
	double secs = 60, wait = -1;
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 2 * DEPTH, .max_recv_wr = 2 * DEPTH, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct peer_info me = { 0 }, peer;
	struct ibv_port_attr pattr;
	union ibv_gid gid;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "d:g:p:u:r:D:s:W:h")) != -1) {
		switch (opt) {
		case 'd': devname = optarg; break;
		case 'g': gid_index = atoi(optarg); break;
		case 'p': port = atoi(optarg); break;
		case 'u': timeout = strtoul(optarg, NULL, 0); break;
		case 'r': retry_cnt = strtoul(optarg, NULL, 0); break;
		case 'D': secs = atof(optarg); break;
		case 's': size = strtoul(optarg, NULL, 0); break;
		case 'W': wait = atof(optarg); break;
		default: usage();
		}
	}
	if (optind < argc)
		server = argv[optind];
	if (timeout > 31 || retry_cnt > 7 || size < 8 || size > (1u << 20))
		usage();
	if (wait < 0)
		wait = secs + 300;

	ctx = open_device(devname);
	if (!ctx)
		fail("open device %s", devname ? devname : "(any)");
	if (ibv_query_port(ctx, 1, &pattr))
		fail("ibv_query_port: %s", strerror(errno));
	gid_index = find_gid(ctx, 1, gid_index, &gid);
	if (gid_index < 0)
		fail("no usable GID");
	buf = aligned_alloc(4096, (DEPTH + 1) * size * 2);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 4 * DEPTH, NULL, NULL, 0);
	mr = pd && buf ? ibv_reg_mr(pd, buf, (DEPTH + 1) * size * 2,
				    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ) :
			 NULL;
	qa.send_cq = qa.recv_cq = cq;
	qp = mr && cq ? ibv_create_qp(pd, &qa) : NULL;
	if (!qp)
		fail("PD, CQ, MR and QP: %s", strerror(errno));
	if (!server) /* The pattern the client READs, past the receive slots. */
		fill(buf + 2 * DEPTH * size, size, ~0ull);

	tcp_setup(server, port);
	rng_seed(time(NULL) ^ getpid());
	me.qpn = qp->qp_num;
	me.psn = rng32() & 0xffffff;
	me.rkey = mr->rkey;
	me.addr = (uintptr_t)(buf + 2 * DEPTH * size);
	memcpy(me.gid, gid.raw, 16);
	xfer(&me, sizeof(me), 1);
	xfer(&peer, sizeof(peer), 0);
	connect_qp(&peer, me.psn, gid_index, pattr.active_mtu, timeout, retry_cnt);
	printf("# %s: QP %u -> %u, ACK timeout %u, retry_cnt %u, %u B messages\n",
	       server ? "client" : "server", qp->qp_num, peer.qpn, timeout, retry_cnt, size);
	/* Both QPs in RTR before the first SEND. */
	err = 0;
	xfer(&err, sizeof(err), 1);
	xfer(&err, sizeof(err), 0);
	return server ? stream(secs, &peer) : serve(wait);
}
