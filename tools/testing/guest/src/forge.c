// SPDX-License-Identifier: GPL-2.0
/*
 * Forged RoCEv2 packets against RC QPs with live, data-verified traffic:
 *
 *   forge -a DEV_A -b DEV_B -n NETNS_OF_B -o OTHER_ADDR_OF_B
 *
 * One process holds an RC QP on DEV_A (its netdev in this network namespace) and one on
 * DEV_B (its netdev in network namespace NETNS_OF_B, a name under /run/netns), connected
 * to each other across the link between the namespaces. It knows every QPN, PSN, address
 * and rkey, as an attacker who watches or guesses them would, and sends forged packets
 * from raw IPv4 sockets (UDP to port 4791, the ICRC computed as the IBTA prescribes, so
 * that nothing but the checks under test can drop them): packets for A are sent from
 * NETNS_OF_B, packets for B from this namespace.
 *
 * Phase "ack" (A's send side): B has no receive posted, so A's SEND waits for B's RNR
 * NAKs, at a known PSN P. Forged at A: ACK, NAK (remote access error), RNR NAK, READ
 * response and atomic acknowledge at PSN P from a wrong source address; the same from the
 * right source with PSNs outside [P, P] (ahead and behind); the same from the right source
 * at P with a wrong P_Key. The SEND must not complete and A must stay in RTS; then B posts
 * its receive, and the SEND must complete with B receiving exactly A's data.
 *
 * Phase "req" (B's receive side): B posts a receive and expects PSN Q. Forged at B: an RDMA
 * WRITE (into B's memory, with its rkey) at PSN Q and a SEND at Q + 1 from a wrong source;
 * the same from the right source with a wrong P_Key; the same from the right source with
 * PSNs outside the window (ahead: a sequence error, behind: a duplicate). Then A sends and
 * writes for real: B must receive A's data, and the bytes the forged WRITEs aimed at must
 * keep their canary. Then A reads B's memory back (RDMA READ) and checks it.
 *
 * Phase "flood": FLOOD forged RDMA WRITEs from a wrong source at B, as fast as they go,
 * with no other traffic: each must be refused where it arrives, before it is queued, as
 * rxe's rxe_rcv does. B's rcvd_pkts, which (as rxe's) counts the packets a QP admitted,
 * must not grow, nor its rcvd_queue_full: no forged packet takes a place in B's queue.
 *
 * Phase "ud": datagrams at a UD QP on DEV_B with wrong Q_Keys and a wrong P_Key must not
 * be received, nor one with the right keys sent to OTHER_ADDR_OF_B, an IPv4 address of
 * B's namespace that is none of DEV_B's GIDs (rxe's rxe_chk_dgid), nor one to the all-hosts
 * group 224.0.0.1 with the QP's number instead of the multicast QPN; one with the right keys
 * to DEV_B's address must be (which also shows that the forged packets are well-formed,
 * ICRC included).
 *
 * Phase "msn": both QPs are reset and connected again; B's acknowledge of A's first SEND
 * after that, read off the link (an AF_PACKET socket in this namespace), must carry MSN 1:
 * a reset starts the responder's message count again (as rxe_qp_reset does).
 *
 * At the end both QPs must be in RTS. Each forged packet's class is counted and printed
 * as "# sent CLASS DEV N", for the caller to compare with the device's drop counters.
 * TAP output; exit 1 on any failure.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "roce-raw.h"
#include "rrxe-test.h"

#define MSG 512
#define BUF 8192
#define CANARY 0x5a
#define FORGED 0xee
#define FLOOD 2000

enum { OP_SEND_ONLY = 0x04, OP_WRITE_ONLY = 0x0a, OP_READ_RESP_ONLY = 0x10, OP_ACK = 0x11,
       OP_ATOMIC_ACK = 0x12, OP_UD_SEND_ONLY = 0x64 };
#define UD_QKEY 0x11111111u
#define GRH 40
/* AETH syndromes: ACK (credits invalid), RNR NAK (timer 1), NAK remote access error. */
enum { SYN_ACK = 0x1f, SYN_RNR = 0x21, SYN_NAK_ACCESS = 0x62 };

struct side {
	const char *dev;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	union ibv_gid gid;
	int gid_index;
	uint32_t psn;
	uint32_t ip; /* network order */
	int raw;     /* raw socket that reaches this side */
};

static struct side A = { .psn = 0x123456 }, B = { .psn = 0xfffff0 };
/* An address of B's namespace that is none of B's GIDs (network order). */
static uint32_t other_b;
/* A UD QP on B's device, its CQ and its receive buffer (in B's MR). */
static struct ibv_qp *ud;
static struct ibv_cq *ud_cq;
static void die(const char *what)
{
	printf("Bail out! %s: %s\n", what, strerror(errno));
	exit(1);
}

struct forged {
	uint8_t opcode, syndrome;
	uint16_t pkey;
	uint32_t src_ip, psn;
	const struct side *to;
	uint32_t dqpn;
	uint64_t va;
	uint32_t rkey;
	uint32_t qkey;
	uint32_t dst_ip; /* network order; 0: the side's own address */
};

/* Sends one forged packet; payloads are MSG bytes of FORGED. */
static void forge(const struct forged *f)
{
	static uint16_t ip_id = 1;
	uint8_t pkt[20 + 8 + 12 + 16 + 8 + MSG + 4] = { 0 };
	uint8_t *ip = pkt, *udp = pkt + 20, *bth = pkt + 28, *p = bth + 12;
	size_t plen = 0;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	uint32_t v;
	size_t len;

	switch (f->opcode) {
	case OP_ACK:
	case OP_READ_RESP_ONLY:
	case OP_ATOMIC_ACK:
		v = htonl((uint32_t)f->syndrome << 24 | 1);
		memcpy(p, &v, 4);
		p += 4;
		if (f->opcode == OP_ATOMIC_ACK) {
			memset(p, FORGED, 8);
			p += 8;
		} else if (f->opcode == OP_READ_RESP_ONLY) {
			plen = MSG;
		}
		break;
	case OP_UD_SEND_ONLY:
		v = htonl(f->qkey);
		memcpy(p, &v, 4);
		v = htonl(1);
		memcpy(p + 4, &v, 4);
		p += 8;
		plen = MSG;
		break;
	case OP_WRITE_ONLY: {
		uint64_t va = htobe64(f->va);

		memcpy(p, &va, 8);
		v = htonl(f->rkey);
		memcpy(p + 8, &v, 4);
		v = htonl(MSG);
		memcpy(p + 12, &v, 4);
		p += 16;
		plen = MSG;
		break;
	}
	default:
		plen = MSG;
	}
	memset(p, FORGED, plen);
	p += plen;
	len = (size_t)(p - pkt) + 4;

	bth[0] = f->opcode;
	bth[2] = f->pkey >> 8;
	bth[3] = f->pkey & 0xff;
	bth[5] = f->dqpn >> 16;
	bth[6] = f->dqpn >> 8;
	bth[7] = f->dqpn;
	bth[8] = 0x80; /* AckReq */
	bth[9] = f->psn >> 16;
	bth[10] = f->psn >> 8;
	bth[11] = f->psn;

	roce_udp_hdr(udp, 0xc042, len - IP4_HLEN);
	sin.sin_addr.s_addr = f->dst_ip ? f->dst_ip : f->to->ip;
	roce_ip4_hdr(ip, len, f->src_ip, sin.sin_addr.s_addr, ip_id);
	ip_id = ip_id + 1 ? ip_id + 1 : 1;
	/* The kernel rewrites the IP checksum, which the ICRC masks. */
	roce_put_icrc(pkt, len);

	if (sendto(f->to->raw, pkt, len, 0, (struct sockaddr *)&sin, sizeof(sin)) != (ssize_t)len)
		die("sendto");
}

/* A raw IPv4 socket (IP_HDRINCL) in network namespace `ns` (NULL: this one). */
static int raw_socket(const char *ns)
{
	int self = -1, s;

	if (ns) {
		self = netns_enter(ns);
		if (self < 0)
			die("setns");
	}
	s = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (s < 0)
		die("raw socket");
	if (ns && netns_leave(self))
		die("setns back");
	return s;
}

static void setup(struct side *s)
{
	struct ibv_qp_init_attr ia = { 0 };

	s->ctx = open_device(s->dev);
	if (!s->ctx)
		die(s->dev);
	s->gid_index = find_gid(s->ctx, 1, -1, &s->gid);
	if (s->gid_index < 0)
		die("no IPv4-mapped RoCE v2 GID");
	memcpy(&s->ip, s->gid.raw + 12, 4);
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, 64, NULL, NULL, 0);
	s->buf = aligned_alloc(4096, BUF);
	if (!s->pd || !s->cq || !s->buf)
		die("pd/cq/buf");
	memset(s->buf, CANARY, BUF);
	s->mr = ibv_reg_mr(s->pd, s->buf, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					    IBV_ACCESS_REMOTE_READ);
	ia.send_cq = ia.recv_cq = s->cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	s->qp = ibv_create_qp(s->pd, &ia);
	if (!s->mr || !s->qp)
		die("mr/qp");
}

static void connect_to(struct side *s, const struct side *peer)
{
	struct rc_conn c = {
		.port = 1, .sgid_index = s->gid_index, .dgid = peer->gid, .mtu = IBV_MTU_1024,
		.dest_qpn = peer->qp->qp_num, .rq_psn = peer->psn, .sq_psn = s->psn,
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, .rd_atomic = 1,
		.min_rnr_timer = 20, /* 10 ms */
		.timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7, /* forever */
	};
	const char *step;

	if (connect_rc_qp(s->qp, &c, &step))
		die(step);
}

static int post(struct side *s, enum ibv_wr_opcode op, size_t off, const struct side *peer,
		size_t roff)
{
	struct ibv_sge sge = { (uintptr_t)(s->buf + off), MSG, s->mr->lkey };
	struct ibv_send_wr wr = { 0 }, *bad;

	wr.wr_id = op;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (peer) {
		wr.wr.rdma.remote_addr = (uintptr_t)(peer->buf + roff);
		wr.wr.rdma.rkey = peer->mr->rkey;
	}
	s->psn = (s->psn + 1) & PSN_MASK; /* every message here is one packet */
	return ibv_post_send(s->qp, &wr, &bad);
}

static int post_recv(struct side *s, size_t off)
{
	struct ibv_sge sge = { (uintptr_t)(s->buf + off), MSG, s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 99, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(s->qp, &wr, &bad);
}

/* A UD QP on B's device with Q_Key UD_QKEY, ready to receive. */
static void setup_ud(void)
{
	struct ibv_qp_init_attr ia = { 0 };
	struct ibv_qp_attr a = { 0 };

	ud_cq = ibv_create_cq(B.ctx, 16, NULL, NULL, 0);
	if (!ud_cq)
		die("UD CQ");
	ia.send_cq = ia.recv_cq = ud_cq;
	ia.qp_type = IBV_QPT_UD;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ud = ibv_create_qp(B.pd, &ia);
	if (!ud)
		die("UD QP");
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = UD_QKEY;
	if (ibv_modify_qp(ud, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		die("UD INIT");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(ud, &a, IBV_QP_STATE))
		die("UD RTR");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(ud, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("UD RTS");
}

/* Waits up to `secs` for one completion; 1 if one came (in *wc). */
static int wait_wc(struct side *s, double secs, struct ibv_wc *wc)
{
	double end = now_s() + secs;

	do {
		int n = ibv_poll_cq(s->cq, 1, wc);

		if (n < 0)
			die("poll_cq");
		if (n == 1)
			return 1;
		usleep(1000);
	} while (now_s() < end);
	return 0;
}

static int expect_wc(struct side *s, const char *what, enum ibv_wc_opcode op)
{
	struct ibv_wc wc;

	if (!wait_wc(s, 10, &wc)) {
		ok(0, "%s: no completion in 10 s", what);
		return 0;
	}
	ok(wc.status == IBV_WC_SUCCESS && wc.opcode == op, "%s: completion %s (opcode %d)", what,
	   ibv_wc_status_str(wc.status), wc.opcode);
	return wc.status == IBV_WC_SUCCESS;
}

static int state(struct side *s)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(s->qp, &a, IBV_QP_STATE, &ia))
		return -1;
	return a.qp_state;
}

static void fill(uint8_t *p, uint8_t seed)
{
	for (int i = 0; i < MSG; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

/* Counts of forged packets sent, by class and target device. */
static unsigned sent_addr[2], sent_pkey[2], sent_resp_psn, sent_req_psn, sent_qkey;

/* The responses at A, in every class. */
static void forge_responses(void)
{
	static const uint8_t rsp[][2] = {
		{ OP_ACK, SYN_ACK }, { OP_ACK, SYN_NAK_ACCESS }, { OP_ACK, SYN_RNR },
		{ OP_READ_RESP_ONLY, SYN_ACK }, { OP_ATOMIC_ACK, SYN_ACK },
	};
	/* The SEND waiting is at PSN P = A.psn - 1; offsets outside [P, P]. */
	static const int32_t outside[] = { 1, 2, 100, 1 << 22, -1, -100, -(1 << 22) };
	uint32_t p = (A.psn - 1) & PSN_MASK, wrong_src = B.ip ^ htonl(0x61);
	struct forged f = { .to = &A, .dqpn = A.qp->qp_num, .pkey = 0xffff };

	for (size_t i = 0; i < ARRAY_SIZE(rsp); i++) {
		f.opcode = rsp[i][0];
		f.syndrome = rsp[i][1];
		f.psn = p;
		f.src_ip = wrong_src;
		forge(&f);
		sent_addr[0]++;
		f.src_ip = B.ip;
		f.pkey = 0x1234;
		forge(&f);
		f.pkey = 0x0000;
		forge(&f);
		sent_pkey[0] += 2;
		f.pkey = 0xffff;
		for (size_t k = 0; k < ARRAY_SIZE(outside); k++) {
			f.psn = (p + outside[k]) & PSN_MASK;
			forge(&f);
			sent_resp_psn++;
		}
	}
}

/* The requests at B, which expects PSN Q = A's next: a WRITE at Q and a SEND at Q + 1. */
static void forge_requests(void)
{
	static const int32_t outside[] = { 100, 1 << 22, -100, -(1 << 22) };
	static const uint8_t ops[] = { OP_WRITE_ONLY, OP_SEND_ONLY };
	static const uint16_t bad_pkeys[] = { 0x1234, 0x0000 };
	uint32_t q = A.psn, wrong_src = A.ip ^ htonl(0x62);
	struct forged f = { .to = &B, .dqpn = B.qp->qp_num, .pkey = 0xffff,
			    .va = (uintptr_t)(B.buf + 4096), .rkey = B.mr->rkey };

	for (size_t i = 0; i < ARRAY_SIZE(ops); i++) {
		f.opcode = ops[i];
		f.psn = (q + i) & PSN_MASK;
		f.src_ip = wrong_src;
		forge(&f);
		sent_addr[1]++;
		f.src_ip = A.ip;
		for (size_t k = 0; k < ARRAY_SIZE(bad_pkeys); k++) {
			f.pkey = bad_pkeys[k];
			forge(&f);
			sent_pkey[1]++;
		}
		f.pkey = 0xffff;
	}
	for (size_t i = 0; i < ARRAY_SIZE(ops); i++) {
		f.opcode = ops[i];
		for (size_t k = 0; k < ARRAY_SIZE(outside); k++) {
			f.psn = (q + outside[k]) & PSN_MASK;
			forge(&f);
			sent_req_psn++;
		}
	}
}

/* Datagrams at B's UD QP: wrong Q_Keys (also with the high bit, which means "the QP's
 * Q_Key" on the sending side only), a wrong P_Key and the right keys at another address of
 * B's host must not be received; then one with the right keys must be, with its payload
 * (the forger's packets are well-formed). */
static void forge_datagrams(void)
{
	static const uint32_t bad_qkeys[] = { UD_QKEY + 1, UD_QKEY | 0x80000000u, 0x80010000u, 0 };
	struct forged f = { .opcode = OP_UD_SEND_ONLY, .to = &B, .dqpn = ud->qp_num,
			    .pkey = 0xffff, .src_ip = A.ip ^ htonl(0x63) };
	struct ibv_sge sge = { (uintptr_t)(B.buf + 6144), GRH + MSG, B.mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_wc wc;
	int got;

	if (ibv_post_recv(ud, &wr, &bad))
		die("UD post_recv");
	for (size_t k = 0; k < ARRAY_SIZE(bad_qkeys); k++) {
		f.qkey = bad_qkeys[k];
		forge(&f);
		sent_qkey++;
	}
	f.qkey = UD_QKEY;
	f.pkey = 0x1234;
	forge(&f);
	sent_pkey[1]++;
	f.pkey = 0xffff;
	f.dst_ip = other_b;
	forge(&f);
	sent_addr[1]++;
	/* To all hosts, but to the QP by its number rather than to the multicast QPN. */
	f.dst_ip = htonl(0xe0000001);
	forge(&f);
	sent_addr[1]++;
	f.dst_ip = 0;
	got = 0;
	for (int i = 0; i < 300 && !got; i++) {
		got = ibv_poll_cq(ud_cq, 1, &wc);
		usleep(1000);
	}
	ok(!got, "datagrams with a wrong Q_Key, P_Key or destination are not received");
	forge(&f);
	got = 0;
	for (int i = 0; i < 5000 && !got; i++) {
		got = ibv_poll_cq(ud_cq, 1, &wc);
		usleep(1000);
	}
	ok(got == 1 && wc.status == IBV_WC_SUCCESS && wc.byte_len == GRH + MSG &&
		   B.buf[6144 + GRH] == FORGED && B.buf[6144 + GRH + MSG - 1] == FORGED,
	   "a datagram with the right keys is received (the forger's packets are valid)");
}

static int canary_intact(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != CANARY)
			return 0;
	return 1;
}

/* FLOOD RDMA WRITEs at B from a wrong source: none may count as received or fill a queue. */
static void forge_flood(void)
{
	struct forged f = { .opcode = OP_WRITE_ONLY, .to = &B, .dqpn = B.qp->qp_num,
			    .pkey = 0xffff, .psn = A.psn, .src_ip = A.ip ^ htonl(0x64),
			    .va = (uintptr_t)(B.buf + 4096), .rkey = B.mr->rkey };
	long long pkts = hw_counter(B.dev, 1, "rcvd_pkts");
	long long full = hw_counter(B.dev, 1, "rcvd_queue_full");
	long long pkts_after, full_after;

	for (int i = 0; i < FLOOD; i++)
		forge(&f);
	sent_addr[1] += FLOOD;
	usleep(300000);
	pkts_after = hw_counter(B.dev, 1, "rcvd_pkts");
	full_after = hw_counter(B.dev, 1, "rcvd_queue_full");
	ok(pkts >= 0 && pkts_after == pkts,
	   "%d forged packets from a wrong source are refused before they are queued: "
	   "rcvd_pkts %lld, then %lld",
	   FLOOD, pkts, pkts_after);
	ok(full_after == full, "none filled B's queue: rcvd_queue_full %lld, then %lld", full,
	   full_after);
	ok(canary_intact(B.buf + 4096, MSG), "the flood wrote nothing");
}

/* A socket that sees the IPv4 packets of this namespace's interfaces, both ways. */
static int capture_socket(void)
{
	int c = socket(AF_PACKET, SOCK_DGRAM, htons(ETH_P_IP));

	if (c < 0)
		die("AF_PACKET socket");
	return c;
}

/*
 * The MSN of the first RC ACK from B to A's QP that capture socket `c` saw (its queue
 * holds what came since it was made), waiting up to `secs`; -1 if none.
 */
static int captured_ack_msn(int c, double secs)
{
	double end = now_s() + secs;
	uint8_t pkt[2048];

	while (now_s() < end) {
		struct pollfd pfd = { .fd = c, .events = POLLIN };
		const uint8_t *bth;
		ssize_t n;
		uint32_t src, dst;

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		n = recv(c, pkt, sizeof(pkt), 0);
		if (n < IP4_HLEN + UDP_HLEN + BTH_LEN + 4 || pkt[0] != 0x45 || pkt[9] != IPPROTO_UDP)
			continue;
		memcpy(&src, pkt + 12, 4);
		memcpy(&dst, pkt + 16, 4);
		bth = pkt + IP4_HLEN + UDP_HLEN;
		if (src != B.ip || dst != A.ip ||
		    (pkt[IP4_HLEN + 2] << 8 | pkt[IP4_HLEN + 3]) != ROCE_PORT)
			continue;
		/* RC ACKNOWLEDGE (opcode 0x11) to A's QP; the AETH follows the BTH. */
		if (bth[0] != 0x11 || (uint32_t)(bth[5] << 16 | bth[6] << 8 | bth[7]) != A.qp->qp_num)
			continue;
		return bth[BTH_LEN + 1] << 16 | bth[BTH_LEN + 2] << 8 | bth[BTH_LEN + 3];
	}
	return -1;
}

/* Phase msn: B's first acknowledge after both QPs were reset and connected again. */
static void msn_after_reset(void)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	int c, msn;

	if (ibv_modify_qp(A.qp, &a, IBV_QP_STATE) || ibv_modify_qp(B.qp, &a, IBV_QP_STATE))
		die("reset");
	connect_to(&A, &B);
	connect_to(&B, &A);
	c = capture_socket();
	fill(A.buf, 5);
	if (post_recv(&B, 0) || post(&A, IBV_WR_SEND, 0, NULL, 0))
		die("post");
	expect_wc(&A, "SEND after the reset", IBV_WC_SEND);
	expect_wc(&B, "RECV after the reset", IBV_WC_RECV);
	ok(!memcmp(A.buf, B.buf, MSG), "data after the reset");
	msn = captured_ack_msn(c, 5);
	ok(msn == 1, "B's first acknowledge after the reset carries MSN 1 (%d)", msn);
	close(c);
}

int main(int argc, char **argv)
{
	const char *ns = NULL;
	struct ibv_wc wc;
	int opt, got;

	while ((opt = getopt(argc, argv, "a:b:n:o:")) != -1) {
		switch (opt) {
		case 'a': A.dev = optarg; break;
		case 'b': B.dev = optarg; break;
		case 'n': ns = optarg; break;
		case 'o':
			if (inet_pton(AF_INET, optarg, &other_b) != 1)
				other_b = 0;
			break;
		default:
			fprintf(stderr, "usage: forge -a DEV_A -b DEV_B -n NETNS_OF_B "
					"-o OTHER_ADDR_OF_B\n");
			return 2;
		}
	}
	if (!A.dev || !B.dev || !ns || !other_b) {
		fprintf(stderr,
			"usage: forge -a DEV_A -b DEV_B -n NETNS_OF_B -o OTHER_ADDR_OF_B\n");
		return 2;
	}
	setup(&A);
	setup(&B);
	setup_ud();
	A.raw = raw_socket(ns);   /* reaches A from B's namespace */
	B.raw = raw_socket(NULL); /* reaches B from A's namespace */
	connect_to(&A, &B);
	connect_to(&B, &A);
	printf("# A %s qpn %u psn %#x, B %s qpn %u psn %#x\n", A.dev, A.qp->qp_num, A.psn, B.dev,
	       B.qp->qp_num, B.psn);

	/* Warm-up: one verified SEND. */
	fill(A.buf, 1);
	if (post_recv(&B, 0) || post(&A, IBV_WR_SEND, 0, NULL, 0))
		die("post");
	expect_wc(&A, "warm-up SEND", IBV_WC_SEND);
	expect_wc(&B, "warm-up RECV", IBV_WC_RECV);
	ok(!memcmp(A.buf, B.buf, MSG), "warm-up data");

	/* Phase ack: A's SEND waits for B's receive. */
	fill(A.buf, 2);
	if (post(&A, IBV_WR_SEND, 0, NULL, 0))
		die("post");
	usleep(200000);
	forge_responses();
	got = wait_wc(&A, 1, &wc);
	ok(!got, "forged responses complete nothing%s%s", got ? ": SEND completed with " : "",
	   got ? ibv_wc_status_str(wc.status) : "");
	ok(state(&A) == IBV_QPS_RTS, "A in RTS after forged responses (state %d)", state(&A));
	if (post_recv(&B, 512))
		die("post_recv");
	if (!got)
		expect_wc(&A, "SEND after B's receive", IBV_WC_SEND);
	expect_wc(&B, "RECV of the waiting SEND", IBV_WC_RECV);
	ok(!memcmp(A.buf, B.buf + 512, MSG), "B received A's data");

	/* Phase req: forged requests at B, then the real ones. */
	if (post_recv(&B, 1024))
		die("post_recv");
	forge_requests();
	usleep(300000);
	fill(A.buf, 3);
	fill(A.buf + 1024, 4);
	if (post(&A, IBV_WR_SEND, 0, NULL, 0) || post(&A, IBV_WR_RDMA_WRITE, 1024, &B, 2048))
		die("post");
	expect_wc(&A, "SEND", IBV_WC_SEND);
	expect_wc(&A, "RDMA WRITE", IBV_WC_RDMA_WRITE);
	expect_wc(&B, "RECV", IBV_WC_RECV);
	ok(!memcmp(A.buf, B.buf + 1024, MSG), "B received A's data, not the forged SEND's");
	ok(!memcmp(A.buf + 1024, B.buf + 2048, MSG), "B's memory holds A's RDMA WRITE");
	ok(canary_intact(B.buf + 4096, MSG), "the forged RDMA WRITEs wrote nothing");
	if (post(&A, IBV_WR_RDMA_READ, 3072, &B, 2048))
		die("post");
	expect_wc(&A, "RDMA READ", IBV_WC_RDMA_READ);
	ok(!memcmp(A.buf + 1024, A.buf + 3072, MSG), "RDMA READ data");
	forge_flood();
	forge_datagrams();
	ok(state(&A) == IBV_QPS_RTS && state(&B) == IBV_QPS_RTS, "both QPs in RTS (%d, %d)",
	   state(&A), state(&B));
	{
		struct ibv_port_attr pa;

		if (ibv_query_port(B.ctx, 1, &pa))
			die("query_port");
		ok(pa.bad_pkey_cntr >= sent_pkey[1] && pa.qkey_viol_cntr >= sent_qkey,
		   "%s port counters: bad_pkey_cntr %u (%u sent), qkey_viol_cntr %u (%u sent)",
		   B.dev, pa.bad_pkey_cntr, sent_pkey[1], pa.qkey_viol_cntr, sent_qkey);
	}
	msn_after_reset();
	ok(state(&A) == IBV_QPS_RTS && state(&B) == IBV_QPS_RTS,
	   "both QPs in RTS after the reset (%d, %d)", state(&A), state(&B));
	printf("# sent bad_addr %s %u\n# sent bad_addr %s %u\n", A.dev, sent_addr[0], B.dev,
	       sent_addr[1]);
	printf("# sent bad_pkey %s %u\n# sent bad_pkey %s %u\n", A.dev, sent_pkey[0], B.dev,
	       sent_pkey[1]);
	printf("# sent bad_resp_psn %s %u\n# sent bad_req_psn %s %u\n", A.dev, sent_resp_psn, B.dev,
	       sent_req_psn);
	printf("# sent bad_qkey %s %u\n", B.dev, sent_qkey);
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}
