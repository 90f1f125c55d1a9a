// SPDX-License-Identifier: GPL-2.0
/*
 * Datagrams whose RoCE headers arrive in skb fragments: the receive path pulls only a
 * datagram's headers into the linear part and reads the rest (payload, pad, ICRC) where
 * it lies.
 *
 *   frag-rx -d DEV -s SRC_IP -a DEV_IP [-r ROUNDS]
 *
 * A UD QP on DEV (whose IPv4 address is DEV_IP, in another network namespace behind a
 * veth pair) receives UD SEND Only packets built here, ICRC and all, and sent from a UDP
 * socket bound to SRC_IP with MSG_ZEROCOPY: the kernel puts such a datagram's UDP payload
 * (BTH, DETH, payload, pad, ICRC) in page fragments, only the IP and UDP headers in the
 * linear part, and the veth pair keeps it so (the receiver pulls the first 48 bytes of
 * the UDP datagram; a packet of more keeps the rest in fragments). For payloads of 0 to
 * 1024 bytes (pads 0 to 3), ROUNDS times (default 2):
 *   good     delivered: byte count, source QPN and every byte as sent;
 *   masked   the same with the BTH's reserved byte (FECN, BECN) changed, which the ICRC
 *            does not cover: delivered too;
 *   payload, icrc, deth
 *            one bit flipped in the payload (if any), the ICRC or the DETH (in the
 *            headers the driver pulls from the fragments): counted in rcvd_bad_pkt at
 *            once and not delivered; the good packet sent next is.
 * At the end rcvd_paged must have grown by nine in ten of the packets delivered whose
 * payload stays in fragments: that the packets did arrive in fragments.
 * The IPv4 header the ICRC covers is the one the kernel writes: DF (IP_PMTUDISC_DO) and
 * an unconnected socket give it the identification 0; TTL, TOS and checksum are masked.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "roce-raw.h"
#include "rrxe-test.h"

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif

#define QKEY 0x11111111u
#define SRC_QPN 0x123456u
/* Outside the ephemeral port range. */
#define SPORT 4792
#define MAX_PAYLOAD 1024
#define GRH_LEN 40
#define DETH_LEN 8
#define RECV_LEN (GRH_LEN + MAX_PAYLOAD)
#define RECVS 16
#define OP_UD_SEND_ONLY 0x64

static struct ibv_cq *cq;
static struct ibv_qp *qp;
static struct ibv_mr *mr;
static uint8_t *rbuf;
static int sock;
static uint32_t src_ip, dst_ip;
static const char *dev;

/* Posts receive buffer I. */
static int post_recv(int i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(rbuf + i * RECV_LEN), .length = RECV_LEN, .lkey = mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

/* The UD QP, ready to receive, its buffers posted. */
static int setup(struct ibv_context *ctx, const char **step)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 1, .max_recv_wr = RECVS, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY };

	*step = "pd, cq, mr";
	cq = pd ? ibv_create_cq(ctx, RECVS, NULL, NULL, 0) : NULL;
	rbuf = calloc(RECVS, RECV_LEN);
	mr = cq && rbuf ? ibv_reg_mr(pd, rbuf, RECVS * RECV_LEN, IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!mr)
		return -1;
	*step = "create_qp";
	ia.send_cq = ia.recv_cq = cq;
	qp = ibv_create_qp(pd, &ia);
	if (!qp)
		return -1;
	*step = "INIT";
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return -1;
	*step = "RTR";
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return -1;
	*step = "RTS";
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		return -1;
	*step = "post_recv";
	for (int i = 0; i < RECVS; i++)
		if (post_recv(i))
			return -1;
	return 0;
}

/*
 * Builds in BUF the whole IPv4 datagram of a UD SEND Only of LEN payload bytes to the
 * QP, the payload a pattern from SEED; returns its length.
 */
static size_t build(uint8_t *buf, size_t len, uint32_t seed, uint32_t psn)
{
	size_t pad = -len & 3, hdr = IP4_HLEN + UDP_HLEN + BTH_LEN + DETH_LEN;
	size_t total = hdr + len + pad + ICRC_LEN;
	uint8_t *bth = buf + IP4_HLEN + UDP_HLEN, *deth = bth + BTH_LEN;

	roce_ip4_hdr(buf, total, src_ip, dst_ip, 0);
	roce_udp_hdr(buf + IP4_HLEN, SPORT, total - IP4_HLEN);
	memset(bth, 0, BTH_LEN + DETH_LEN);
	bth[0] = OP_UD_SEND_ONLY;
	bth[1] = pad << 4;
	bth[2] = bth[3] = 0xff;
	bth[5] = (uint8_t)(qp->qp_num >> 16);
	bth[6] = (uint8_t)(qp->qp_num >> 8);
	bth[7] = (uint8_t)(qp->qp_num);
	bth[9] = (uint8_t)(psn >> 16);
	bth[10] = (uint8_t)(psn >> 8);
	bth[11] = (uint8_t)(psn);
	deth[0] = (uint8_t)(QKEY >> 24);
	deth[1] = (uint8_t)(QKEY >> 16);
	deth[2] = (uint8_t)(QKEY >> 8);
	deth[3] = (uint8_t)(QKEY);
	deth[5] = (uint8_t)(SRC_QPN >> 16);
	deth[6] = (uint8_t)(SRC_QPN >> 8);
	deth[7] = (uint8_t)(SRC_QPN);
	for (size_t i = 0; i < len; i++)
		buf[hdr + i] = (uint8_t)(seed * 31 + i * 7 + (i >> 8));
	memset(buf + hdr + len, 0, pad + ICRC_LEN);
	roce_put_icrc(buf, total);
	return total;
}

/*
 * Sends the UDP payload of the datagram BUF (TOTAL bytes) by MSG_ZEROCOPY and waits for
 * the kernel to be done with it (its completion notification), so that BUF may change
 * and the socket's option memory, which a zero-copy send needs, is free again (else the
 * kernel copies the payload into the linear part).
 */
static int send_zc(const uint8_t *buf, size_t total)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(ROCE_PORT) };
	struct pollfd pfd = { .fd = sock, .events = POLLERR };
	char ctl[256];
	struct msghdr m = { .msg_control = ctl, .msg_controllen = sizeof(ctl) };

	to.sin_addr.s_addr = dst_ip;
	if (sendto(sock, buf + IP4_HLEN + UDP_HLEN, total - IP4_HLEN - UDP_HLEN, MSG_ZEROCOPY,
		   (struct sockaddr *)&to, sizeof(to)) < 0)
		return tap_diag("sendto: %s", strerror(errno));
	if (poll(&pfd, 1, 5000 * time_scale()) != 1 ||
	    recvmsg(sock, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
		return tap_diag("no zero-copy completion for a datagram of %zu bytes", total);
	return 0;
}

/* Polls for one completion for up to SECS: 1 if one came (in *WC), 0 if none, -1 on error. */
static int poll_one(struct ibv_wc *wc, double secs)
{
	double end = now_s() + secs * time_scale();

	do {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n)
			return n > 0 ? 1 : -1;
		usleep(1000);
	} while (now_s() < end);
	return 0;
}

/*
 * Sends the bad packet BUF (TOTAL bytes): it must be counted in rcvd_bad_pkt within 5 s
 * and not delivered.
 */
static int dropped(const char *what, size_t len, const uint8_t *buf, size_t total)
{
	long long before = hw_counter(dev, 1, "rcvd_bad_pkt"), now = before;
	double end = now_s() + 5 * time_scale();
	struct ibv_wc wc;

	if (send_zc(buf, total))
		return 0;
	while (now == before && now_s() < end) {
		usleep(1000);
		now = hw_counter(dev, 1, "rcvd_bad_pkt");
	}
	if (now != before + 1)
		return !tap_diag("%s, %zu bytes: rcvd_bad_pkt +%lld", what, len, now - before);
	if (poll_one(&wc, 0)) {
		tap_diag("%s, %zu bytes: delivered (status %d, %u bytes)", what, len, wc.status,
			 wc.byte_len);
		post_recv(wc.wr_id);
		return 0;
	}
	return 1;
}

/*
 * Whether the good packet of LEN bytes from SEED is the next one delivered, as sent (a
 * note says what came instead); reposts its buffer.
 */
static int delivered(const char *what, size_t len, uint32_t seed)
{
	uint8_t want[IP4_HLEN + UDP_HLEN + BTH_LEN + DETH_LEN + MAX_PAYLOAD + 8];
	size_t hdr = IP4_HLEN + UDP_HLEN + BTH_LEN + DETH_LEN;
	struct ibv_wc wc;
	const uint8_t *got;
	int good;

	build(want, len, seed, 0);
	if (poll_one(&wc, 5) != 1) {
		tap_diag("%s, %zu bytes: nothing delivered", what, len);
		return 0;
	}
	got = rbuf + wc.wr_id * RECV_LEN + GRH_LEN;
	good = wc.status == IBV_WC_SUCCESS && wc.byte_len == GRH_LEN + len &&
	       wc.src_qp == SRC_QPN && !memcmp(got, want + hdr, len);
	if (!good)
		tap_diag("%s, %zu bytes: delivered status %d, %u bytes, source QPN %#x%s", what, len,
		     wc.status, wc.byte_len, wc.src_qp,
		     wc.byte_len == GRH_LEN + len ? ", other data" : "");
	return !post_recv(wc.wr_id) && good;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 0, 1, 2, 3, 4, 5, 63, 64, 255, 256, 1000, 1021, 1023,
					1024 };
	static const char *const bad[] = { "payload", "icrc", "deth" };
	struct sockaddr_in from = { .sin_family = AF_INET, .sin_port = htons(SPORT) };
	uint8_t buf[IP4_HLEN + UDP_HLEN + BTH_LEN + DETH_LEN + MAX_PAYLOAD + 8];
	int one = 1, pmtu = IP_PMTUDISC_DO, rounds = 2, c;
	const char *src = NULL, *dst = NULL, *step;
	struct ibv_context *ctx;
	long long paged0, paged1, paged_at, paged_min = 0;
	uint32_t seed = 1;

	while ((c = getopt(argc, argv, "d:s:a:r:")) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 's': src = optarg; break;
		case 'a': dst = optarg; break;
		case 'r': rounds = atoi(optarg); break;
		default: bail_out("usage: frag-rx -d DEV -s SRC_IP -a DEV_IP [-r ROUNDS]");
		}
	}
	if (!dev || !src || !dst || inet_pton(AF_INET, src, &src_ip) != 1 ||
	    inet_pton(AF_INET, dst, &dst_ip) != 1)
		bail_out("usage: frag-rx -d DEV -s SRC_IP -a DEV_IP [-r ROUNDS]");
	ctx = open_device(dev);
	if (!ctx)
		bail_out("cannot open %s", dev);
	if (setup(ctx, &step))
		bail_out("UD QP on %s: %s: %s", dev, step, strerror(errno));
	from.sin_addr.s_addr = src_ip;
	sock = socket(AF_INET, SOCK_DGRAM, 0);
	if (sock < 0 || bind(sock, (struct sockaddr *)&from, sizeof(from)) ||
	    setsockopt(sock, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)) ||
	    setsockopt(sock, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)))
		bail_out("UDP socket on %s: %s", src, strerror(errno));
	paged0 = paged_at = hw_counter(dev, 1, "rcvd_paged");
	for (int r = 0; r < rounds; r++) {
		for (size_t s = 0; s < ARRAY_SIZE(sizes); s++) {
			size_t len = sizes[s], total, hdr = IP4_HLEN + UDP_HLEN;
			int pass, n = 0;

			total = build(buf, len, ++seed, r);
			pass = !send_zc(buf, total) && delivered("good", len, seed);
			buf[hdr + 4] ^= 0xc0;
			pass &= !send_zc(buf, total) && delivered("masked", len, seed);
			buf[hdr + 4] ^= 0xc0;
			n += 2;
			for (size_t b = 0; b < ARRAY_SIZE(bad); b++) {
				size_t at = b == 0 ? hdr + BTH_LEN + DETH_LEN + len / 2 :
					    b == 1 ? total - 1 : hdr + BTH_LEN + 6;

				if (b == 0 && len == 0)
					continue;
				buf[at] ^= 1 << (seed % 8);
				pass &= dropped(bad[b], len, buf, total);
				buf[at] ^= 1 << (seed % 8);
				/* The good packet after it is the next one delivered. */
				pass &= !send_zc(buf, total) && delivered("good after it", len, seed);
				n++;
			}
			/* What the receiver's pull leaves in fragments: more than 48 bytes. */
			if (total - IP4_HLEN > 48) {
				long long now = hw_counter(dev, 1, "rcvd_paged");

				if (now - paged_at < n)
					note("  %zu bytes: rcvd_paged +%lld for %d delivered", len,
					     now - paged_at, n);
				paged_min += n;
			}
			paged_at = hw_counter(dev, 1, "rcvd_paged");
			ok(pass, "round %d, %zu bytes: good and masked delivered, payload%s, icrc and"
			   " deth flipped dropped", r + 1, len, len ? "" : " (none)");
		}
	}
	/*
	 * The kernel copies the odd MSG_ZEROCOPY datagram into the linear part after all
	 * (about 1 in 80 here, the notes above say which): nine in ten must have come in
	 * fragments.
	 */
	paged1 = hw_counter(dev, 1, "rcvd_paged");
	ok(paged_min > 0 && (paged1 - paged0) * 10 >= paged_min * 9,
	   "rcvd_paged +%lld: of the %lld packets delivered with more than 48 bytes, nine in"
	   " ten or more had their payload in fragments", paged1 - paged0, paged_min);
	return tap_done();
}
