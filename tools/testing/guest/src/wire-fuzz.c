// SPDX-License-Identifier: GPL-2.0
/*
 * A hostile wire: malformed and forged RoCEv2 packets at devices with live traffic.
 *
 *   wire-fuzz -a DEV_A [-b DEV_B] -n NETNS [-x IF_A] [-y IF_B] [-c COUNT] [-s SEED]
 *             [-t SECONDS] [-k CLASS,...]
 *
 * DEV_A's net device IF_A (default veth0) is in this network namespace, the other end of
 * its veth pair IF_B (default veth1) in NETNS, and DEV_B, if given, on IF_B. Each device
 * has an IPv4 address and an IPv6 one that is not link-local (RoCE v2 GIDs). Four QP
 * pairs, requester on DEV_A and responder on DEV_B (both on DEV_A without -b: loopback
 * QPs), move data that is checked, all the time, from a second thread:
 *   rc   RC over the IPv4 GIDs: SEND (3 packets), RDMA WRITE (4), RDMA READ (2 responses),
 *        fetch-and-add;
 *   rc6  the same over the IPv6 GIDs;
 *   uc   UC: SEND (3 packets), RDMA WRITE with immediate (2);
 *   ud   UD: SEND of 512 bytes; its responder QP is also attached to the multicast
 *        groups 239.1.1.1 and ff0e::1:1 (and to 64 groups nobody sends to, around them).
 * A message is checked against the pattern it was sent with; UC and UD messages carry
 * their sequence number and a CRC, and a completion whose content is not the message sent
 * counts as "foreign" (a forged packet's data, which UC and UD cannot tell from the
 * peer's), a message that does not arrive within 2 s as lost.
 *
 * The main thread sends COUNT (default 100000) frames from packet sockets at the two
 * devices (frames for DEV_A leave IF_B inside NETNS, frames for DEV_B leave IF_A), drawn
 * from SEED (default 1), for at most SECONDS (default 540). Twelve classes (or those -k
 * names), an equal share of COUNT each, one after the other; each class's name also goes
 * to the kernel log as it starts, so that a crash says during which:
 *   icrc        well-formed packets of every kind the QPs use (SEND first/middle/last/
 *               only, with immediate, RDMA WRITE, READ request and responses, ACK, NAK,
 *               RNR NAK, atomics and their acknowledge, UD SEND), half with a good ICRC,
 *               half with one bit of it flipped;
 *   mutate      those and frames captured from the live traffic (over the link, not in
 *               loopback) with 1 to 8 random bits or bytes changed after the UDP header,
 *               the ICRC recomputed for half;
 *   mutate_net  the same in the IP and UDP headers, IPv4 and IPv6;
 *   opcode      every opcode 0..255 in turn with random header bytes, lengths and pads;
 *   truncate    packets cut at every header boundary (inside the IP header, after it,
 *               inside and after UDP, BTH, the extension headers, the payload, the ICRC)
 *               and at random lengths, the IP and UDP lengths adjusted (or not), the ICRC
 *               recomputed over what is left for half;
 *   qpn         QPNs 0, 1, 2, 0xffffff (multicast), 0xfffffe, the live ones and their
 *               neighbours, random;
 *   psn         the expected PSN -1, +0, +1, +-2^23, 2^23 +-1, +-4096;
 *   rkey        RDMA WRITE, READ and atomic requests with the right rkeys and wrong ones
 *               (flipped bits, 0, ~0, another QP's), addresses in and out of range and
 *               misaligned;
 *   length      DMA lengths 0, 1, MTU, MTU + 1, 2^31, 0xffffffff, payloads 0 to MTU + 64,
 *               pad counts 0..3 that do not match;
 *   response    ACK and NAK with every syndrome 0..255, READ responses, atomic
 *               acknowledges, at both ends of every pair;
 *   mcast       datagrams to 239.1.1.1 and ff0e::1:1 (joined and attached), 239.1.1.2
 *               (joined, no QP attached), 239.1.1.3 (not joined), to the multicast QPN
 *               and to unicast ones, and unicast datagrams to the multicast QPN;
 *   random      random bytes after the UDP header.
 * In every class about a third of the frames are IPv6, and the fields not under test are
 * drawn as an attacker would: the right or a wrong source address, the right or a wrong
 * P_Key, a PSN near the live one or anywhere.
 *
 * What may never happen: an RC QP accepting a forged packet. A packet a live RC QP would
 * accept (from its peer's address, with a matching P_Key, a good ICRC, at a PSN it
 * expects) is the peer's as far as RoCE can tell, so the fuzzer never sends one: such a
 * packet whose PSN is within 4096 of a live one of that QP gets a PSN far from both
 * (every RC packet near the live PSNs thus carries at least one defect: a wrong source,
 * a wrong P_Key, a bad ICRC, or a wrong QPN or transport). UC and UD QPs get
 * everything, so they may receive forged data, lose messages, or fail (then the pair is
 * created again, and the output says after which class).
 *
 * Between classes the program waits 300 ms and reads, for each device, its hw_counters,
 * the IPv4, IPv6, UDP and UDPv6 statistics of its namespace and its net device's receive
 * drops, and prints a table: frames sent at the device, dropped by the stack (the sum of
 * the IP, IPv6, UDP, UDPv6 error counters, the reassembly requests, the datagrams
 * delivered to ICMP and TCP, the net device's drops), datagrams that reached the driver
 * (UDP InDatagrams minus the packets the other device sent), dropped by the driver (the
 * sum of its drop counters: rcvd_bad_*, rcvd_queue_full, rcvd_req_dropped,
 * duplicate_request, out_of_seq_request), taken by UC and UD QPs (foreign completions),
 * sent to a multicast group not joined (the IP stack drops those without a counter), and
 * what is left unaccounted; and the datagrams the UDP sockets handed to the driver that
 * show neither in rcvd_pkts nor in a counter of the refusals where a datagram arrives
 * (rcvd_bad_pkt, rcvd_bad_type_state, rcvd_bad_addr, rcvd_bad_pkey, rcvd_bad_qkey:
 * "vanished"). A class's figures are off by a few packets of live traffic in flight at
 * the snapshots; the totals, from a snapshot before the first message to one after the
 * last, are exact. Checks: nothing vanished, and at most 1% of the frames sent at each
 * device unaccounted besides the vanished and those to the group not joined.
 *
 * After the last class the live traffic must go on: each pair completes 20 more messages
 * with correct data, and every QP is in RTS. Then, with the QPs idle, probes: 200 frames
 * at a time of one kind of invalid packet (a UC RDMA WRITE with a bad rkey and a UC SEND
 * middle without a first, from the peer; a UD SEND at a QP without receives; datagrams to
 * a group no QP is attached to and to the multicast QPN at a unicast address; an RC SEND
 * from a wrong source as the control), each of which the driver must count as a drop:
 * they tell which kinds of drops the table's unaccounted and vanished frames are.
 *
 * Output: "# ..." comments and "check ok TEXT" or "check fail TEXT" lines for
 * wire-fuzz.sh; exit status 1 if a check failed.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "roce-raw.h"
#include "rrxe-test.h"

#define MTU 1024
#define FRAME_MAX 1600
#define BATCH 64
#define BUF (64 * 1024)
#define SLOT 4096
#define NRECV 8
#define UD_QKEY 0x11111111u
#define MAGIC 0x57495245u
#define ZONE 4096
#define FINAL 20
#define GRH 40

/* Offsets in a responder's buffer: receive slots, WRITE target, READ source, atomic. */
#define R_WRITE (NRECV * SLOT)
#define R_READ (R_WRITE + 8192)
#define R_ATOMIC (R_READ + 8192)

struct dev {
	const char *name;
	struct ibv_context *ctx;
	int gid4, gid6;
	union ibv_gid g4, g6;
	uint32_t ip4;
	const char *ifname; /* its net device */
	int in_ns;	    /* which is in NETNS */
	uint8_t mac[6];	    /* its net device's MAC */
	uint8_t src_mac[6]; /* the MAC of the interface that frames to it leave */
	int tx;		    /* packet socket on that interface */
	int mc4, mc6;	    /* UDP sockets holding its IP multicast memberships */
};

enum kind { RC, UC, UD };

struct end {
	struct dev *d;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	uint32_t qpn; /* for the fuzzer */
};

struct pair {
	const char *name;
	enum kind kind;
	int v6;
	struct end s, r;
	struct ibv_ah *ah;
	uint32_t psn_r; /* r's send PSN (r never sends requests) */
	uint32_t next;	/* s's next PSN */
	/* The message in flight. */
	int busy, op, want_s, want_r;
	uint32_t seq, msg_len;
	double t0;
	uint64_t fa_expect;
	/* Results. */
	unsigned long ok, foreign, lost, errors, resets, corrupt, final_ok;
};

static struct dev devs[2];
static int ndevs;
static struct pair pairs[4] = {
	{ .name = "rc", .kind = RC }, { .name = "rc6", .kind = RC, .v6 = 1 },
	{ .name = "uc", .kind = UC }, { .name = "ud", .kind = UD },
};
#define NPAIRS 4

static const char *const class_names[] = { "icrc", "mutate", "mutate_net", "opcode",
					   "truncate", "qpn", "psn", "rkey", "length",
					   "response", "mcast", "random" };
#define NCLASS 12
static volatile int cur_class = -1; /* the class being sent, for the traffic thread */
static volatile int fuzz_over;
static unsigned long foreign_by_class[NCLASS + 1];
static int failed;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static void say(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&out_lock);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
	pthread_mutex_unlock(&out_lock);
}

static void check(int ok, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&out_lock);
	printf("check %s ", ok ? "ok" : "fail");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	pthread_mutex_unlock(&out_lock);
	if (!ok)
		failed = 1;
}

static void die(const char *what)
{
	say("check fail %s: %s\n", what, strerror(errno));
	exit(1);
}

static const char *class_now(void)
{
	int c = cur_class;

	return c < 0 ? "(none yet)" : c >= NCLASS ? "(after the fuzz)" : class_names[c];
}

/* ---- Devices and QPs ---- */

/* The first RoCE v2 GID of port 1 that is IPv4-mapped (V6 0) or a non-link-local IPv6. */
static int gid_of(struct ibv_context *ctx, int v6, union ibv_gid *gid)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	struct ibv_port_attr pa;

	if (ibv_query_port(ctx, 1, &pa))
		return -1;
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		struct ibv_gid_entry e;
		int mapped;

		if (ibv_query_gid_ex(ctx, 1, i, &e, 0) || e.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		mapped = !memcmp(e.gid.raw, v4mapped, sizeof(v4mapped));
		if (v6 ? !mapped && e.gid.raw[0] != 0xfe && e.gid.raw[0] : mapped) {
			*gid = e.gid;
			return i;
		}
	}
	return -1;
}

/* The index and MAC of interface IF in this thread's namespace. */
static int if_info(const char *ifname, uint8_t *mac)
{
	struct ifreq ifr = { 0 };
	int s = socket(AF_INET, SOCK_DGRAM, 0), idx;

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (s < 0 || ioctl(s, SIOCGIFHWADDR, &ifr))
		die(ifname);
	memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	if (ioctl(s, SIOCGIFINDEX, &ifr))
		die(ifname);
	idx = ifr.ifr_ifindex;
	close(s);
	return idx;
}

/*
 * A packet socket bound to interface IF of this thread's namespace, receiving every frame
 * if RX, else none; fills the interface's MAC.
 */
static int packet_socket(const char *ifname, uint8_t *mac, int rx)
{
	uint16_t proto = rx ? htons(ETH_P_ALL) : 0;
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = proto };
	int s = socket(AF_PACKET, SOCK_RAW, proto);

	if (s < 0)
		die("packet socket");
	sll.sll_ifindex = if_info(ifname, mac);
	if (bind(s, (struct sockaddr *)&sll, sizeof(sll)))
		die("bind packet socket");
	return s;
}

/*
 * Joins 239.1.1.1, 239.1.1.2 and ff0e::1:1 on interface IF of this thread's namespace, for
 * as long as D's sockets stay open: without an IP membership the stack drops datagrams to
 * a group before any UDP socket sees them.
 */
static void join_groups(struct dev *d, const char *ifname)
{
	struct ip_mreqn m4 = { .imr_ifindex = (int)if_nametoindex(ifname) };
	struct ipv6_mreq m6 = { .ipv6mr_interface = if_nametoindex(ifname) };

	d->mc4 = socket(AF_INET, SOCK_DGRAM, 0);
	d->mc6 = socket(AF_INET6, SOCK_DGRAM, 0);
	if (d->mc4 < 0 || d->mc6 < 0)
		die("UDP socket");
	inet_pton(AF_INET, "239.1.1.1", &m4.imr_multiaddr);
	if (setsockopt(d->mc4, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m4, sizeof(m4)))
		die("IP_ADD_MEMBERSHIP");
	inet_pton(AF_INET, "239.1.1.2", &m4.imr_multiaddr);
	if (setsockopt(d->mc4, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m4, sizeof(m4)))
		die("IP_ADD_MEMBERSHIP");
	inet_pton(AF_INET6, "ff0e::1:1", &m6.ipv6mr_multiaddr);
	if (setsockopt(d->mc6, IPPROTO_IPV6, IPV6_ADD_MEMBERSHIP, &m6, sizeof(m6)))
		die("IPV6_ADD_MEMBERSHIP");
}

static void open_dev(struct dev *d)
{
	d->ctx = open_device(d->name);
	if (!d->ctx)
		die(d->name);
	d->gid4 = gid_of(d->ctx, 0, &d->g4);
	d->gid6 = gid_of(d->ctx, 1, &d->g6);
	if (d->gid4 < 0 || d->gid6 < 0) {
		errno = ENOENT;
		die("no IPv4-mapped or no IPv6 RoCE v2 GID");
	}
	memcpy(&d->ip4, d->g4.raw + 12, 4);
}

static void end_setup(struct end *e, struct dev *d)
{
	e->d = d;
	e->pd = ibv_alloc_pd(d->ctx);
	e->cq = ibv_create_cq(d->ctx, 64, NULL, NULL, 0);
	e->buf = aligned_alloc(4096, BUF);
	if (!e->pd || !e->cq || !e->buf)
		die("pd/cq/buf");
	memset(e->buf, 0, BUF);
	e->mr = ibv_reg_mr(e->pd, e->buf, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	if (!e->mr)
		die("reg_mr");
}

static uint32_t tr_rand(void)
{
	static uint64_t x = 0x2545f4914f6cdd1dull;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return x >> 16;
}

static void qp_create(struct pair *p, struct end *e)
{
	static const enum ibv_qp_type types[] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };
	struct ibv_qp_init_attr ia = { .send_cq = e->cq, .recv_cq = e->cq,
				       .qp_type = types[p->kind] };

	ia.cap.max_send_wr = ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	e->qp = ibv_create_qp(e->pd, &ia);
	if (!e->qp)
		die("create_qp");
	__atomic_store_n(&e->qpn, e->qp->qp_num, __ATOMIC_RELAXED);
}

static void qp_modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, const char *what)
{
	if (ibv_modify_qp(qp, a, mask))
		die(what);
}

static void ah_attr(struct ibv_ah_attr *ah, const struct pair *p, const struct end *from,
		    const struct end *to)
{
	ah->is_global = 1;
	ah->grh.dgid = p->v6 ? to->d->g6 : to->d->g4;
	ah->grh.sgid_index = p->v6 ? from->d->gid6 : from->d->gid4;
	ah->grh.hop_limit = 64;
	ah->port_num = 1;
}

/* Connects end E of P (send PSN SPSN) to the other end (send PSN RPSN). */
static void qp_connect(struct pair *p, struct end *e, struct end *peer, uint32_t spsn,
		       uint32_t rpsn)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

	if (p->kind == UD) {
		a.qkey = UD_QKEY;
		qp_modify(e->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
			  "UD INIT");
		a.qp_state = IBV_QPS_RTR;
		qp_modify(e->qp, &a, IBV_QP_STATE, "UD RTR");
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = spsn;
		qp_modify(e->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, "UD RTS");
		return;
	}
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
			    (p->kind == RC ? IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC : 0);
	qp_modify(e->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
		  "INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer->qp->qp_num;
	a.rq_psn = rpsn;
	ah_attr(&a.ah_attr, p, e, peer);
	if (p->kind == RC) {
		a.max_dest_rd_atomic = 4;
		a.min_rnr_timer = 1;
		qp_modify(e->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					     IBV_QP_MIN_RNR_TIMER, "RTR");
	} else {
		qp_modify(e->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					     IBV_QP_RQ_PSN, "RTR");
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = spsn;
	if (p->kind == RC) {
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 4;
		qp_modify(e->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					     IBV_QP_MAX_QP_RD_ATOMIC, "RTS");
	} else {
		qp_modify(e->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, "RTS");
	}
}

static void post_recv(struct end *e, int slot)
{
	struct ibv_sge sge = { (uintptr_t)(e->buf + slot * SLOT), SLOT, e->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_recv(e->qp, &wr, &bad))
		die("post_recv");
}

/* Attaches P's responder to the groups 239.1.1.1 and ff0e::1:1, among DECOYS groups
 * nobody sends to on each side of each in GID order (the device finds a group's QPs by
 * binary search). */
#define DECOYS 16
static void attach_groups(struct pair *p)
{
	union ibv_gid g = { 0 };
	char a[64];

	/* 239.1.0.i and 239.1.9.i; ff0d::1:i and ff0e::9:i. */
	for (int k = 0; k < 4; k++) {
		for (int i = 1; i <= DECOYS; i++) {
			memset(&g, 0, sizeof(g));
			if (k < 2) {
				snprintf(a, sizeof(a), "239.1.%d.%d", k ? 9 : 0, i);
				g.raw[10] = g.raw[11] = 0xff;
				inet_pton(AF_INET, a, g.raw + 12);
			} else {
				snprintf(a, sizeof(a), "ff0%c::%d:%d", k == 2 ? 'd' : 'e',
					 k == 2 ? 1 : 9, i);
				inet_pton(AF_INET6, a, g.raw);
			}
			if (ibv_attach_mcast(p->r.qp, &g, 0))
				die("attach_mcast (a decoy)");
		}
	}
	memset(&g, 0, sizeof(g));
	g.raw[10] = g.raw[11] = 0xff;
	inet_pton(AF_INET, "239.1.1.1", g.raw + 12);
	if (ibv_attach_mcast(p->r.qp, &g, 0))
		die("attach_mcast 239.1.1.1");
	inet_pton(AF_INET6, "ff0e::1:1", g.raw);
	if (ibv_attach_mcast(p->r.qp, &g, 0))
		die("attach_mcast ff0e::1:1");
}

/* Creates (again) both QPs of P and connects them, with fresh PSNs. */
static void pair_start(struct pair *p)
{
	uint32_t spsn = tr_rand() & PSN_MASK;

	p->psn_r = tr_rand() & PSN_MASK;
	qp_create(p, &p->s);
	qp_create(p, &p->r);
	qp_connect(p, &p->s, &p->r, spsn, p->psn_r);
	qp_connect(p, &p->r, &p->s, p->psn_r, spsn);
	__atomic_store_n(&p->next, spsn, __ATOMIC_RELAXED);
	if (p->kind == UD) {
		struct ibv_ah_attr ah = { 0 };

		ah_attr(&ah, p, &p->s, &p->r);
		p->ah = ibv_create_ah(p->s.pd, &ah);
		if (!p->ah)
			die("create_ah");
	}
	if (p->kind != RC)
		for (int i = 0; i < NRECV; i++)
			post_recv(&p->r, i);
	if (p->kind == UD)
		attach_groups(p);
	p->busy = 0;
}

static void pair_stop(struct pair *p)
{
	struct ibv_wc wc[16];

	if (p->ah)
		ibv_destroy_ah(p->ah);
	p->ah = NULL;
	if (ibv_destroy_qp(p->s.qp) || ibv_destroy_qp(p->r.qp))
		die("destroy_qp");
	while (ibv_poll_cq(p->s.cq, 16, wc) > 0 || ibv_poll_cq(p->r.cq, 16, wc) > 0)
		;
}

static void pair_reset(struct pair *p, const char *why)
{
	say("# %s: %s (last class sent: %s); creating the pair again\n", p->name, why,
	    class_now());
	p->resets++;
	pair_stop(p);
	pair_start(p);
	memcpy(&p->fa_expect, p->r.buf + R_ATOMIC, 8);
}

static int qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	return ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) ? -1 : (int)a.qp_state;
}

/* ---- Live traffic ---- */

static uint8_t pattern(uint32_t seq, uint32_t i)
{
	return (uint8_t)(seq * 131 + i * 7 + (i >> 8));
}

static void fill(uint8_t *b, uint32_t seq, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		b[i] = pattern(seq, i);
}

/* A UC or UD message: MAGIC, sequence number, length, CRC of the rest, pattern. */
static void fill_msg(uint8_t *b, uint32_t seq, uint32_t len)
{
	uint32_t h[4] = { MAGIC, seq, len, 0 };

	fill(b + 16, seq, len - 16);
	h[3] = roce_crc32(0, b + 16, len - 16);
	memcpy(b, h, 16);
}

/* 1 if B holds message SEQ of LEN bytes. */
static int msg_is(const uint8_t *b, uint32_t seq, uint32_t len)
{
	uint32_t h[4];

	memcpy(h, b, 16);
	if (h[0] != MAGIC || h[1] != seq || h[2] != len || h[3] != roce_crc32(0, b + 16, len - 16))
		return 0;
	for (uint32_t i = 16; i < len; i++)
		if (b[i] != pattern(seq, i - 16))
			return 0;
	return 1;
}

enum { OP_SEND, OP_WRITE, OP_READ, OP_FADD, RC_OPS };
enum { OP_UC_SEND, OP_UC_WRITE_IMM, UC_OPS };

static const uint32_t rc_len[] = { 3000, 4096, 2048, 8 };
static const uint32_t rc_pkts[] = { 3, 4, 2, 1 };
static const uint32_t uc_len[] = { 2500, 1500 };
static const uint32_t uc_pkts[] = { 3, 2 };

static void post_send(struct pair *p, enum ibv_wr_opcode op, uint32_t off, uint32_t len,
		      uint64_t raddr, uint32_t imm)
{
	struct ibv_sge sge = { (uintptr_t)(p->s.buf + off), len, p->s.mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.imm_data = htonl(imm);
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = p->r.mr->rkey;
		wr.wr.atomic.compare_add = 1;
	} else if (p->kind == UD) {
		wr.wr.ud.ah = p->ah;
		wr.wr.ud.remote_qpn = p->r.qp->qp_num;
		wr.wr.ud.remote_qkey = UD_QKEY;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = p->r.mr->rkey;
	}
	if (ibv_post_send(p->s.qp, &wr, &bad))
		die("post_send");
}

static void start_msg(struct pair *p)
{
	uint64_t rbase = (uintptr_t)p->r.buf;
	uint32_t pkts = 1;

	p->seq++;
	p->want_s = 1;
	p->want_r = 0;
	switch (p->kind) {
	case RC:
		p->op = p->seq % RC_OPS;
		p->msg_len = rc_len[p->op];
		pkts = rc_pkts[p->op];
		switch (p->op) {
		case OP_SEND:
			fill(p->s.buf, p->seq, p->msg_len);
			post_recv(&p->r, 0);
			p->want_r = 1;
			post_send(p, IBV_WR_SEND, 0, p->msg_len, 0, 0);
			break;
		case OP_WRITE:
			fill(p->s.buf + R_WRITE, p->seq, p->msg_len);
			post_send(p, IBV_WR_RDMA_WRITE, R_WRITE, p->msg_len, rbase + R_WRITE, 0);
			break;
		case OP_READ:
			memset(p->s.buf + R_READ, 0, p->msg_len);
			post_send(p, IBV_WR_RDMA_READ, R_READ, p->msg_len, rbase + R_READ, 0);
			break;
		default:
			post_send(p, IBV_WR_ATOMIC_FETCH_AND_ADD, R_ATOMIC, 8, rbase + R_ATOMIC, 0);
		}
		break;
	case UC:
		p->op = p->seq % UC_OPS;
		p->msg_len = uc_len[p->op];
		pkts = uc_pkts[p->op];
		p->want_r = 1;
		fill_msg(p->s.buf + R_WRITE, p->seq, p->msg_len);
		if (p->op == OP_UC_SEND)
			post_send(p, IBV_WR_SEND, R_WRITE, p->msg_len, 0, 0);
		else
			post_send(p, IBV_WR_RDMA_WRITE_WITH_IMM, R_WRITE, p->msg_len,
				  rbase + R_WRITE, p->seq);
		break;
	case UD:
		p->msg_len = 512;
		p->want_r = 1;
		fill_msg(p->s.buf + R_WRITE, p->seq, p->msg_len);
		post_send(p, IBV_WR_SEND, R_WRITE, p->msg_len, 0, 0);
	}
	__atomic_store_n(&p->next, (p->next + pkts) & PSN_MASK, __ATOMIC_RELAXED);
	p->busy = 1;
	p->t0 = now_s();
}

/* The RC message in flight completed at both ends: check its data. */
static void rc_done(struct pair *p)
{
	const uint8_t *s = p->s.buf, *r = p->r.buf;
	int good;

	switch (p->op) {
	case OP_SEND:
		good = !memcmp(s, r, p->msg_len);
		break;
	case OP_WRITE:
		good = !memcmp(s + R_WRITE, r + R_WRITE, p->msg_len);
		break;
	case OP_READ:
		good = !memcmp(s + R_READ, r + R_READ, p->msg_len);
		break;
	default: {
		uint64_t old, now;

		memcpy(&old, s + R_ATOMIC, 8);
		memcpy(&now, r + R_ATOMIC, 8);
		good = old == p->fa_expect && now == p->fa_expect + 1;
		p->fa_expect++;
	}
	}
	if (!good) {
		p->corrupt++;
		say("# %s: message %u (op %d) completed with wrong data (last class sent: %s)\n",
		    p->name, p->seq, p->op, class_now());
	}
}

static void msg_done(struct pair *p)
{
	p->busy = 0;
	p->ok++;
	if (fuzz_over)
		p->final_ok++;
}

static void wc_error(struct pair *p, const struct ibv_wc *wc, const char *side)
{
	char why[160];

	p->errors++;
	snprintf(why, sizeof(why), "%s completion %s (opcode %d, vendor error %u)", side,
		 ibv_wc_status_str(wc->status), wc->opcode, wc->vendor_err);
	pair_reset(p, why);
}

/* A receive completion at a UC or UD responder. */
static void uc_ud_recv(struct pair *p, const struct ibv_wc *wc)
{
	int slot = (int)wc->wr_id;
	const uint8_t *b = p->r.buf + slot * SLOT + (p->kind == UD ? GRH : 0);
	uint32_t len = wc->byte_len - (p->kind == UD ? GRH : 0);
	int mine;

	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM)
		mine = p->busy && p->op == OP_UC_WRITE_IMM && ntohl(wc->imm_data) == p->seq &&
		       msg_is(p->r.buf + R_WRITE, p->seq, p->msg_len);
	else
		mine = p->busy && wc->byte_len >= (p->kind == UD ? GRH : 0) &&
		       (p->kind == UD || p->op == OP_UC_SEND) && len == p->msg_len &&
		       msg_is(b, p->seq, p->msg_len);
	post_recv(&p->r, slot);
	if (mine) {
		p->want_r = 0;
		return;
	}
	p->foreign++;
	foreign_by_class[cur_class < 0 ? NCLASS : cur_class]++;
}

/* Polls end E of P; returns 0 if the pair was created again. */
static int poll_end(struct pair *p, struct end *e)
{
	struct ibv_wc wc[8];
	int n = ibv_poll_cq(e->cq, 8, wc);

	if (n < 0)
		die("poll_cq");
	for (int i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			wc_error(p, &wc[i], e == &p->s ? "requester" : "responder");
			return 0;
		}
		if (e == &p->s)
			p->want_s = 0;
		else if (p->kind == RC)
			p->want_r = 0;
		else
			uc_ud_recv(p, &wc[i]);
	}
	return 1;
}

static void step(struct pair *p)
{
	double age;

	if (!p->busy) {
		start_msg(p);
		return;
	}
	if (!poll_end(p, &p->s) || !poll_end(p, &p->r))
		return;
	if (!p->want_s && !p->want_r) {
		if (p->kind == RC)
			rc_done(p);
		msg_done(p);
		return;
	}
	age = now_s() - p->t0;
	if (p->kind != RC && !p->want_s && age > 2) {
		p->lost++;
		p->busy = 0;
	} else if (age > 60) {
		char why[96];

		p->errors++;
		snprintf(why, sizeof(why), "message %u (op %d) not complete after 60 s", p->seq,
			 p->op);
		pair_reset(p, why);
	}
}

static void *traffic(void *arg)
{
	double end = 0;

	for (;;) {
		int all = 1;

		for (int i = 0; i < NPAIRS; i++) {
			step(&pairs[i]);
			all &= pairs[i].final_ok >= FINAL;
		}
		if (fuzz_over && !end)
			end = now_s() + 120;
		if (fuzz_over && (all || now_s() > end))
			break;
		usleep(300);
	}
	return NULL;
}

/* ---- Packets ---- */

struct frame {
	uint8_t b[FRAME_MAX];
	size_t len;
	struct dev *to;
};

/* A packet to build: addresses, BTH fields, extension headers, payload. */
struct pk {
	struct dev *to;
	int v6;
	uint32_t src4, dst4;
	uint8_t src6[16], dst6[16];
	uint8_t op, se, padcnt, padbytes, ackreq;
	uint16_t pkey;
	uint32_t dqpn, psn;
	uint8_t ext[64];
	size_t extlen, paylen;
};

#define POOL 8192
static uint8_t pool[POOL]; /* random bytes for payloads */
static uint16_t ip_id = 1;

static uint32_t rnd(uint32_t n)
{
	return rng32() % n;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = v >> (24 - 8 * i);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, v >> 32);
	put32(p + 4, (uint32_t)v);
}

static void ext_add(struct pk *k, const uint8_t *p, size_t n)
{
	memcpy(k->ext + k->extlen, p, n);
	k->extlen += n;
}

static void ext_reth(struct pk *k, uint64_t va, uint32_t rkey, uint32_t len)
{
	uint8_t h[16];

	put64(h, va);
	put32(h + 8, rkey);
	put32(h + 12, len);
	ext_add(k, h, 16);
}

static void ext_word(struct pk *k, uint32_t v)
{
	uint8_t h[4];

	put32(h, v);
	ext_add(k, h, 4);
}

static void ext_atomic(struct pk *k, uint64_t va, uint32_t rkey)
{
	uint8_t h[28];

	put64(h, va);
	put32(h + 8, rkey);
	put64(h + 12, rng64());
	put64(h + 20, rng64());
	ext_add(k, h, 28);
}

/* Extension header bytes of opcode OP, as the IBTA lays them out; -1 if none defined. */
static int ext_bytes(uint8_t op)
{
	static const int8_t rc[32] = {
		0, 0, 0, 4, 0, 4, 16, 0, 0, 4, 16, 20, 16, 4, 0, 4, 4, 4, 12, 28, 28, -1, 4, 4,
		-1, -1, -1, -1, 20, 16, -1, -1,
	};
	int x = rc[op & 31];

	switch (op >> 5) {
	case 0:
		return x;
	case 1: /* UC: SEND and RDMA WRITE */
		return (op & 31) <= 0x0b ? x : -1;
	case 3: /* UD: SEND only, with immediate */
		return (op & 31) == 4 ? 8 : (op & 31) == 5 ? 12 : -1;
	default:
		return -1;
	}
}

/* The live PSN at end E of P for a request (REQ) or a response. */
static uint32_t live_psn(const struct pair *p, const struct end *e, int req)
{
	uint32_t next = __atomic_load_n(&p->next, __ATOMIC_RELAXED);

	if (e == &p->r)
		return req ? next : (p->psn_r - 1) & PSN_MASK;
	return req ? p->psn_r : (next - 1) & PSN_MASK;
}

static const uint16_t bad_pkeys[] = { 0x0000, 0x8000, 0x1234, 0x7ffe, 0xfffe, 0x8001 };

/* A wrong source: another host of the subnet, a distant one, or (IPv6) link-local. */
static void wrong_src(struct pk *k)
{
	static const char *const v6[] = { "fd00:9::77", "fe80::1", "2001:db8::1" };
	static const char *const v4[] = { "10.9.0.77", "10.9.0.200", "192.0.2.1", "10.9.1.1" };

	inet_pton(AF_INET6, v6[rnd(3)], k->src6);
	inet_pton(AF_INET, v4[rnd(4)], &k->src4);
}

static void right_src(struct pk *k, const struct dev *d)
{
	memcpy(k->src6, d->g6.raw, 16);
	k->src4 = d->ip4;
}

/*
 * Aims K at end E of pair P (whose other end is PEER), as a request (REQ) or response,
 * with the fields an attacker would draw: the pair's IP version (or the other one, 1 in
 * 8; either for UD), the right source (1 in 2), the default P_Key (7 in 8), a PSN next to
 * the live one (1 in 2) or anywhere, a random payload of up to the MTU.
 */
static void aim(struct pk *k, struct pair *p, struct end *e, struct end *peer, int req)
{
	memset(k, 0, sizeof(*k));
	k->to = e->d;
	k->v6 = p->kind == UD ? !rnd(3) : p->v6 ^ !rnd(8);
	if (rnd(2))
		right_src(k, peer->d);
	else
		wrong_src(k);
	memcpy(k->dst6, e->d->g6.raw, 16);
	k->dst4 = e->d->ip4;
	k->pkey = rnd(8) ? 0xffff : bad_pkeys[rnd(ARRAY_SIZE(bad_pkeys))];
	k->dqpn = __atomic_load_n(&e->qpn, __ATOMIC_RELAXED);
	k->psn = rnd(2) ? (live_psn(p, e, req) + rnd(3) - 1) & PSN_MASK : rng32() & PSN_MASK;
	k->ackreq = rnd(2);
	k->paylen = rnd(MTU + 1);
}

/* Sets the payload length and the pad that goes with it. */
static void payload(struct pk *k, size_t n)
{
	k->paylen = n;
	k->padcnt = k->padbytes = (-n) & 3;
}

enum tpl {
	T_SEND_FIRST, T_SEND_MIDDLE, T_SEND_LAST, T_SEND_ONLY, T_SEND_IMM, T_SEND_INV,
	T_WRITE_FIRST, T_WRITE_ONLY, T_WRITE_IMM, T_READ_REQ, T_CMP_SWAP, T_FETCH_ADD,
	T_RESP_FIRST, T_RESP_MIDDLE, T_RESP_LAST, T_RESP_ONLY, T_ACK, T_NAK, T_RNR,
	T_ATOMIC_ACK, T_UC_SEND, T_UC_WRITE_IMM, T_UD_SEND, T_UD_SEND_IMM, NTPL
};

/*
 * A well-formed packet of kind T for a random pair of the right transport, at its
 * responder (requests) or requester (responses) mostly, at the other end sometimes.
 */
static void tpl(struct pk *k, int t)
{
	static const uint8_t ops[NTPL] = { 0x00, 0x01, 0x02, 0x04, 0x05, 0x17, 0x06, 0x0a, 0x0b,
					   0x0c, 0x13, 0x14, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x11,
					   0x11, 0x12, 0x24, 0x2b, 0x64, 0x65 };
	int req = t < T_RESP_FIRST || t >= T_UC_SEND;
	struct pair *p = t >= T_UD_SEND ? &pairs[3] : t >= T_UC_SEND ? &pairs[2] : &pairs[rnd(2)];
	int at_r = req ^ !rnd(7);
	struct end *e = at_r ? &p->r : &p->s, *peer = at_r ? &p->s : &p->r;
	uint64_t va = (uintptr_t)e->buf;
	uint32_t rkey = e->mr->rkey;

	aim(k, p, e, peer, req);
	k->op = ops[t];
	switch (t) {
	case T_SEND_FIRST:
	case T_SEND_MIDDLE:
	case T_RESP_MIDDLE:
		payload(k, MTU);
		break;
	case T_SEND_IMM:
		ext_word(k, rng32());
		break;
	case T_SEND_INV:
		ext_word(k, rng32());
		break;
	case T_WRITE_FIRST:
		ext_reth(k, va + R_WRITE, rkey, 3 * MTU);
		payload(k, MTU);
		break;
	case T_WRITE_ONLY:
	case T_WRITE_IMM:
	case T_UC_WRITE_IMM:
		k->paylen &= ~3u;
		ext_reth(k, va + R_WRITE, rkey, k->paylen);
		if (t != T_WRITE_ONLY)
			ext_word(k, rng32());
		break;
	case T_READ_REQ:
		ext_reth(k, va + R_READ, rkey, 1 + rnd(8192));
		k->paylen = 0;
		break;
	case T_CMP_SWAP:
	case T_FETCH_ADD:
		ext_atomic(k, va + R_ATOMIC, rkey);
		k->paylen = 0;
		break;
	case T_RESP_FIRST:
		ext_word(k, 0x1f000000 | rnd(1 << 24));
		payload(k, MTU);
		break;
	case T_RESP_LAST:
	case T_RESP_ONLY:
		ext_word(k, 0x1f000000 | rnd(1 << 24));
		break;
	case T_ACK:
	case T_NAK:
	case T_RNR:
		ext_word(k, (t == T_ACK	  ? 0x1f
			     : t == T_NAK ? 0x60 + rnd(5)
					  : 0x20 + rnd(32)) << 24 | rnd(1 << 24));
		k->paylen = 0;
		break;
	case T_ATOMIC_ACK:
		ext_word(k, 0x1f000000 | rnd(1 << 24));
		ext_word(k, rng32());
		ext_word(k, rng32());
		k->paylen = 0;
		break;
	case T_UD_SEND:
	case T_UD_SEND_IMM:
		ext_word(k, rnd(4) ? UD_QKEY : rng_nasty32());
		ext_word(k, __atomic_load_n(&peer->qpn, __ATOMIC_RELAXED));
		if (t == T_UD_SEND_IMM)
			ext_word(k, rng32());
		k->paylen = rnd(MTU - 16) & ~3u;
		break;
	default:
		break;
	}
	payload(k, k->paylen);
}

static const uint8_t *mac_for(const struct pk *k, uint8_t *m)
{
	if (k->v6 && k->dst6[0] == 0xff) {
		m[0] = m[1] = 0x33;
		memcpy(m + 2, k->dst6 + 12, 4);
		return m;
	}
	if (!k->v6 && (ntohl(k->dst4) >> 28) == 0xe) {
		uint32_t a = ntohl(k->dst4);

		m[0] = 0x01;
		m[1] = 0x00;
		m[2] = 0x5e;
		m[3] = (a >> 16) & 0x7f;
		m[4] = a >> 8;
		m[5] = a;
		return m;
	}
	return k->to->mac;
}

static void build(struct frame *f, const struct pk *k)
{
	uint8_t *ip = f->b + ETHER_HDR_LEN, mc[6];
	size_t ihl = k->v6 ? IP6_HLEN : IP4_HLEN, len;
	uint8_t *udp = ip + ihl, *bth = udp + UDP_HLEN, *q = bth + BTH_LEN;

	memcpy(q, k->ext, k->extlen);
	q += k->extlen;
	memcpy(q, pool + rnd(POOL - MTU - 128), k->paylen);
	q += k->paylen;
	memset(q, 0, k->padbytes);
	q += k->padbytes + ICRC_LEN;
	len = (size_t)(q - ip);
	bth[0] = k->op;
	bth[1] = (k->se ? 0x80 : 0) | (k->padcnt & 3) << 4;
	bth[2] = k->pkey >> 8;
	bth[3] = k->pkey & 0xff;
	bth[4] = 0;
	bth[5] = k->dqpn >> 16;
	bth[6] = k->dqpn >> 8;
	bth[7] = k->dqpn;
	bth[8] = k->ackreq ? 0x80 : 0;
	bth[9] = k->psn >> 16;
	bth[10] = k->psn >> 8;
	bth[11] = k->psn;
	roce_udp_hdr(udp, 0xc000 | rnd(0x4000), len - ihl);
	if (k->v6)
		roce_ip6_hdr(ip, len, k->src6, k->dst6);
	else
		roce_ip4_hdr(ip, len, k->src4, k->dst4, ip_id++);
	memcpy(f->b, mac_for(k, mc), 6);
	memcpy(f->b + 6, k->to->src_mac, 6);
	f->b[12] = k->v6 ? 0x86 : 0x08;
	f->b[13] = k->v6 ? 0xdd : 0x00;
	f->len = ETHER_HDR_LEN + len;
	f->to = k->to;
}

/* The IPv4 header checksum or the IPv6 UDP checksum, when there is enough to compute. */
static void outer(struct frame *f)
{
	uint8_t *ip = f->b + ETHER_HDR_LEN;
	size_t len = f->len - ETHER_HDR_LEN;

	if (ip[0] >> 4 == 4 && len >= (size_t)(ip[0] & 0xf) * 4 && (ip[0] & 0xf) >= 5)
		roce_ip4_csum(ip);
	else if (ip[0] >> 4 == 6 && len >= IP6_HLEN + UDP_HLEN)
		roce_udp6_csum(ip, len);
}

static int near(uint32_t a, uint32_t b)
{
	uint32_t d = (a - b) & PSN_MASK;

	return d < ZONE || d > PSN_MASK + 1 - ZONE;
}

static unsigned long guarded;

/*
 * If the frame is one a live RC QP would take as its peer's (see the top), moves its PSN
 * far from the QP's live ones.
 */
static void guard(struct frame *f)
{
	uint8_t *ip = f->b + ETHER_HDR_LEN, *bth;
	size_t len = f->len - ETHER_HDR_LEN;
	int v6 = ip[0] >> 4 == 6;
	size_t ihl = v6 ? IP6_HLEN : (size_t)(ip[0] & 0xf) * 4;
	uint32_t dqpn, psn;

	if ((!v6 && ihl != IP4_HLEN) || len < ihl + UDP_HLEN + BTH_LEN + ICRC_LEN ||
	    ip[v6 ? 6 : 9] != IPPROTO_UDP || (ip[ihl + 2] << 8 | ip[ihl + 3]) != ROCE_PORT)
		return;
	bth = ip + ihl + UDP_HLEN;
	if (bth[0] >> 5 || ((bth[2] << 8 | bth[3]) & 0x7fff) != 0x7fff)
		return;
	dqpn = (uint32_t)bth[5] << 16 | bth[6] << 8 | bth[7];
	psn = (uint32_t)bth[9] << 16 | bth[10] << 8 | bth[11];
	for (int i = 0; i < 2; i++) {
		struct pair *p = &pairs[i];

		for (int j = 0; j < 2; j++) {
			struct end *e = j ? &p->r : &p->s, *peer = j ? &p->s : &p->r;
			uint32_t next = __atomic_load_n(&p->next, __ATOMIC_RELAXED);

			const uint8_t *src = v6 ? peer->d->g6.raw : (uint8_t *)&peer->d->ip4;

			if (e->d != f->to || dqpn != __atomic_load_n(&e->qpn, __ATOMIC_RELAXED) ||
			    v6 != p->v6 || memcmp(ip + (v6 ? 8 : 12), src, v6 ? 16 : 4))
				continue;
			if (!near(psn, next) && !near(psn, p->psn_r))
				return;
			do
				psn = rng32() & PSN_MASK;
			while (near(psn, next) || near(psn, p->psn_r));
			bth[9] = psn >> 16;
			bth[10] = psn >> 8;
			bth[11] = psn;
			guarded++;
			return;
		}
	}
}

/* Guard, ICRC (GOOD, or with one bit flipped), outer checksums. */
static void finish(struct frame *f, int good)
{
	uint8_t *ip = f->b + ETHER_HDR_LEN;
	size_t len = f->len - ETHER_HDR_LEN;

	if (len >= roce_ip_hlen(ip) + ICRC_LEN) {
		if (good)
			guard(f);
		roce_put_icrc(ip, len);
		if (!good)
			ip[len - 1 - rnd(4)] ^= 1 << rnd(8);
	}
	outer(f);
}

/* Frames captured from the live traffic (normalised: IPv4 UDP checksum 0). */
#define NCAP 256
static struct frame cap[NCAP];
static int ncap;

static void capture(int s, double secs)
{
	double end = now_s() + secs;

	while (ncap < NCAP && now_s() < end) {
		struct frame *f = &cap[ncap];
		ssize_t n = recv(s, f->b, FRAME_MAX, MSG_DONTWAIT);
		uint8_t *ip = f->b + ETHER_HDR_LEN;
		size_t ihl;

		if (n < 0) {
			usleep(1000);
			continue;
		}
		f->len = n;
		ihl = ip[0] >> 4 == 6 ? IP6_HLEN : IP4_HLEN;
		if (n < (ssize_t)(ETHER_HDR_LEN + ihl + UDP_HLEN + BTH_LEN + ICRC_LEN) ||
		    !((f->b[12] == 0x08 && f->b[13] == 0) ||
		      (f->b[12] == 0x86 && f->b[13] == 0xdd)) ||
		    ip[ihl + 2] << 8 != (ROCE_PORT & 0xff00) || ip[ihl + 3] != (ROCE_PORT & 0xff))
			continue;
		f->to = NULL;
		for (int i = 0; i < ndevs; i++)
			if (!memcmp(f->b, devs[i].mac, 6))
				f->to = &devs[i];
		if (!f->to)
			continue;
		if (ihl == IP4_HLEN)
			ip[ihl + 6] = ip[ihl + 7] = 0;
		memcpy(f->b + 6, f->to->src_mac, 6);
		ncap++;
	}
}

/* A template packet, or (1 in 2, if any) a captured frame; *K gets the template. */
static void base(struct frame *f, struct pk *k)
{
	if (ncap && rnd(2)) {
		*f = cap[rnd(ncap)];
		k->extlen = 0;
		return;
	}
	tpl(k, rnd(NTPL));
	build(f, k);
	finish(f, 1);
}

/* Where the UDP payload starts. */
static size_t roce_off(const struct frame *f)
{
	return ETHER_HDR_LEN + roce_ip_hlen(f->b + ETHER_HDR_LEN) + UDP_HLEN;
}

/* Changes N random bits or bytes of F in [FROM, TO). */
static void mutate(struct frame *f, size_t from, size_t to, int n)
{
	static const uint8_t vals[] = { 0x00, 0xff, 0x7f, 0x80, 0x01 };

	for (int i = 0; i < n && to > from; i++) {
		size_t at = from + rnd(to - from);

		if (rnd(2))
			f->b[at] ^= 1 << rnd(8);
		else
			f->b[at] = rnd(2) ? vals[rnd(ARRAY_SIZE(vals))] : rng32();
	}
}

/* Sets the IP and UDP length fields of F to its length. */
static void fix_lengths(struct frame *f)
{
	uint8_t *ip = f->b + ETHER_HDR_LEN;
	size_t len = f->len - ETHER_HDR_LEN, ihl = roce_ip_hlen(ip);

	if (ihl == IP6_HLEN && len >= IP6_HLEN) {
		ip[4] = (len - IP6_HLEN) >> 8;
		ip[5] = (len - IP6_HLEN) & 0xff;
	} else if (ihl == IP4_HLEN && len >= 4) {
		ip[2] = len >> 8;
		ip[3] = len & 0xff;
	}
	if (len >= ihl + 6) {
		ip[ihl + 4] = (len - ihl) >> 8;
		ip[ihl + 5] = (len - ihl) & 0xff;
	}
}

/*
 * After a change to F: the ICRC recomputed (GOOD) or left as it was, the guard whenever
 * the ICRC is then good, and the outer checksums if OUTER.
 */
static void refinish(struct frame *f, int good, int outer_too)
{
	uint8_t *ip = f->b + ETHER_HDR_LEN;
	size_t l = f->len - ETHER_HDR_LEN;

	if (l >= roce_ip_hlen(ip) + ICRC_LEN) {
		uint32_t have = ip[l - 4] | ip[l - 3] << 8 | ip[l - 2] << 16 |
				(uint32_t)ip[l - 1] << 24;

		if (good || have == roce_icrc(ip, l)) {
			guard(f);
			roce_put_icrc(ip, l);
		}
	}
	if (outer_too)
		outer(f);
}

enum { C_ICRC, C_MUTATE, C_MUTATE_NET, C_OPCODE, C_TRUNCATE, C_QPN, C_PSN, C_RKEY, C_LENGTH,
       C_RESPONSE, C_MCAST, C_RANDOM };

static void gen_truncate(struct frame *f, unsigned long i)
{
	struct pk k;
	size_t ihl, ext, pay, cuts[12], n, at;

	base(f, &k);
	ihl = roce_ip_hlen(f->b + ETHER_HDR_LEN);
	ext = ext_bytes(f->b[roce_off(f)]) < 0 ? 0 : (size_t)ext_bytes(f->b[roce_off(f)]);
	pay = ETHER_HDR_LEN + ihl + UDP_HLEN + BTH_LEN + ext;
	n = 0;
	cuts[n++] = ETHER_HDR_LEN + 10;
	cuts[n++] = ETHER_HDR_LEN + ihl;
	cuts[n++] = ETHER_HDR_LEN + ihl + 4;
	cuts[n++] = ETHER_HDR_LEN + ihl + UDP_HLEN;
	cuts[n++] = ETHER_HDR_LEN + ihl + UDP_HLEN + 6;
	cuts[n++] = ETHER_HDR_LEN + ihl + UDP_HLEN + BTH_LEN;
	cuts[n++] = pay - ext / 2;
	cuts[n++] = pay;
	cuts[n++] = pay + (f->len - ICRC_LEN - pay) / 2;
	cuts[n++] = f->len - ICRC_LEN;
	cuts[n++] = f->len - 2;
	cuts[n++] = ETHER_HDR_LEN + 1 + rnd(f->len - ETHER_HDR_LEN - 1);
	at = cuts[i % n];
	if (at >= f->len)
		at = f->len - 1;
	f->len = at;
	if (rnd(4))
		fix_lengths(f);
	refinish(f, rnd(2), 1);
}

/* Frame I of class C. */
static void gen(int c, unsigned long i, struct frame *f)
{
	static const uint32_t qpns[] = { 0, 1, 2, 0xffffff, 0xfffffe, 0x800000, 17 };
	static const int32_t deltas[] = { -1, 0, 1, 1 << 23, -(1 << 23), (1 << 23) + 1,
					  (1 << 23) - 1, ZONE, -ZONE, 2 };
	static const uint32_t dmalens[] = { 0, 1, MTU, MTU + 1, 1u << 31, 0xffffffff, 4096, 3 };
	static const uint32_t paylens[] = { 0, 1, 2, 3, MTU - 1, MTU, MTU + 1, MTU + 4, MTU + 64 };
	static const char *const groups[] = { "239.1.1.1", "239.1.1.2", "239.1.1.3", "ff0e::1:1",
					      NULL };
	struct pk k;
	struct pair *p;

	switch (c) {
	case C_ICRC:
		tpl(&k, i % NTPL);
		build(f, &k);
		finish(f, rnd(2));
		break;
	case C_MUTATE:
	case C_MUTATE_NET:
		base(f, &k);
		if (c == C_MUTATE)
			mutate(f, roce_off(f), f->len, 1 + rnd(8));
		else
			mutate(f, ETHER_HDR_LEN, roce_off(f), 1 + rnd(3));
		refinish(f, rnd(2), c == C_MUTATE || rnd(2));
		break;
	case C_OPCODE:
		p = &pairs[rnd(NPAIRS)];
		if (rnd(2))
			aim(&k, p, &p->r, &p->s, 1);
		else
			aim(&k, p, &p->s, &p->r, 0);
		k.op = i & 0xff;
		k.se = rnd(2);
		k.extlen = rnd(49);
		memcpy(k.ext, pool + rnd(POOL - 64), k.extlen);
		payload(&k, rnd(MTU + 9));
		k.padcnt = rnd(4);
		build(f, &k);
		finish(f, rnd(4));
		break;
	case C_TRUNCATE:
		gen_truncate(f, i);
		break;
	case C_QPN:
		tpl(&k, rnd(NTPL));
		if (rnd(3)) {
			k.dqpn = qpns[rnd(ARRAY_SIZE(qpns))];
		} else {
			struct end *e = rnd(2) ? &pairs[rnd(NPAIRS)].s : &pairs[rnd(NPAIRS)].r;

			k.dqpn = __atomic_load_n(&e->qpn, __ATOMIC_RELAXED) + rnd(3) - 1;
			k.dqpn &= 0xffffff;
		}
		build(f, &k);
		finish(f, rnd(8));
		break;
	case C_PSN:
		tpl(&k, rnd(NTPL));
		k.psn = (k.psn + deltas[i % ARRAY_SIZE(deltas)]) & PSN_MASK;
		build(f, &k);
		finish(f, rnd(4));
		break;
	case C_RKEY: {
		static const int t[] = { T_WRITE_ONLY, T_WRITE_FIRST, T_READ_REQ, T_CMP_SWAP,
					 T_FETCH_ADD, T_UC_WRITE_IMM };
		uint32_t rkey;
		uint64_t va;

		tpl(&k, t[rnd(ARRAY_SIZE(t))]);
		rkey = (uint32_t)k.ext[8] << 24 | k.ext[9] << 16 | k.ext[10] << 8 | k.ext[11];
		memcpy(&va, k.ext, 8);
		va = be64toh(va);
		switch (rnd(8)) {
		case 0: rkey ^= 1u << rnd(32); break;
		case 1: rkey = 0; break;
		case 2: rkey = ~0u; break;
		case 3: rkey = pairs[rnd(NPAIRS)].r.mr->rkey; break;
		case 4: rkey = rng32(); break;
		default: break;
		}
		switch (rnd(6)) {
		case 0: va -= 1 + rnd(64); break;
		case 1: va += BUF - rnd(64); break;
		case 2: va = rnd(2) ? 0 : ~0ull; break;
		case 3: va += 1 + rnd(7); break;
		default: break;
		}
		put64(k.ext, va);
		put32(k.ext + 8, rkey);
		build(f, &k);
		finish(f, 1);
		break;
	}
	case C_LENGTH: {
		static const int t[] = { T_SEND_ONLY, T_WRITE_ONLY, T_WRITE_FIRST, T_READ_REQ,
					 T_RESP_ONLY, T_UD_SEND, T_UC_SEND, T_SEND_MIDDLE };

		tpl(&k, t[rnd(ARRAY_SIZE(t))]);
		if (k.op == 0x0a || k.op == 0x06 || k.op == 0x0c)
			put32(k.ext + 12, dmalens[rnd(ARRAY_SIZE(dmalens))]);
		if (k.op != 0x0c)
			payload(&k, rnd(2) ? paylens[rnd(ARRAY_SIZE(paylens))] : rnd(MTU + 65));
		if (rnd(2)) {
			k.padcnt = rnd(4);
			k.padbytes = rnd(4);
		}
		build(f, &k);
		finish(f, rnd(8));
		break;
	}
	case C_RESPONSE:
		p = &pairs[rnd(NPAIRS)];
		if (rnd(4))
			aim(&k, p, &p->s, &p->r, 0);
		else
			aim(&k, p, &p->r, &p->s, 0);
		k.op = (p->kind == UC ? 0x20 : 0) | (uint8_t[]){ 0x11, 0x11, 0x0d, 0x0e, 0x0f, 0x10,
								 0x12 }[rnd(7)];
		if (k.op == 0x0e) {
			payload(&k, MTU);
		} else {
			ext_word(&k, (i & 0xff) << 24 | rnd(1 << 24));
			if (k.op == 0x12)
				ext_add(&k, pool + rnd(64), 8);
			if (k.op == 0x11 || k.op == 0x12)
				payload(&k, 0);
			else
				payload(&k, k.op == 0x0d ? MTU : k.paylen);
		}
		build(f, &k);
		finish(f, rnd(8));
		break;
	case C_MCAST: {
		const char *g = groups[rnd(ARRAY_SIZE(groups))];

		tpl(&k, T_UD_SEND + rnd(2));
		k.to = &devs[rnd(ndevs)];
		/* From the other device (or itself, in loopback), or from a wrong source. */
		if (rnd(2))
			right_src(&k, &devs[k.to == devs ? ndevs - 1 : 0]);
		else
			wrong_src(&k);
		if (g && strchr(g, ':')) {
			k.v6 = 1;
			inet_pton(AF_INET6, g, k.dst6);
		} else if (g) {
			k.v6 = 0;
			inet_pton(AF_INET, g, &k.dst4);
		} else {
			memcpy(k.dst6, k.to->g6.raw, 16);
			k.dst4 = k.to->ip4;
		}
		if (rnd(4))
			k.dqpn = 0xffffff;
		build(f, &k);
		finish(f, rnd(8));
		break;
	}
	default: /* C_RANDOM */
		p = &pairs[rnd(NPAIRS)];
		if (rnd(2))
			aim(&k, p, &p->r, &p->s, 1);
		else
			aim(&k, p, &p->s, &p->r, 0);
		payload(&k, rnd(MTU + 64));
		build(f, &k);
		memcpy(f->b + roce_off(f), pool + rnd(POOL - 64), BTH_LEN);
		finish(f, rnd(2));
	}
}

/* ---- Counters ---- */

static const char *const hw_names[] = {
	"sent_pkts", "rcvd_pkts", "rcvd_bad_pkt", "rcvd_bad_type_state", "rcvd_bad_addr",
	"rcvd_bad_pkey", "rcvd_bad_qkey", "rcvd_bad_resp_psn", "rcvd_queue_full",
	"rcvd_req_dropped", "duplicate_request", "out_of_seq_request", "rcvd_rnr_err",
	"rcvd_seq_err",
};
#define NHW ARRAY_SIZE(hw_names)
/* hw_names[1...HW_ADMIT_END] count each datagram the driver got once: received, or
 * refused where it arrived (bad packet, state or transport, address, P_Key, Q_Key). */
#define HW_ADMIT_END 6
/* hw_names[HW_DROPS...HW_DROPS_END) are the driver's drop counters. */
#define HW_DROPS 2
#define HW_DROPS_END 12

/* The stack's: "Ip:" and the like from snmp and netstat, snmp6 names, "dev:" net device. */
static const char *const stk_names[] = {
	"Udp:InDatagrams", "Udp6InDatagrams",
	"Ip:InHdrErrors", "Ip:InAddrErrors", "Ip:InUnknownProtos", "Ip:InDiscards",
	"Ip:ReasmReqds", "IpExt:InNoRoutes", "IpExt:InTruncatedPkts", "Icmp:InMsgs",
	"Tcp:InSegs", "Udp:NoPorts", "Udp:InErrors", "Udp:IgnoredMulti", "Udp6IgnoredMulti",
	"Ip6InHdrErrors", "Ip6InAddrErrors",
	"Ip6InUnknownProtos", "Ip6InTruncatedPkts", "Ip6InDiscards", "Ip6InNoRoutes",
	"Ip6ReasmReqds", "Icmp6InMsgs", "Udp6NoPorts", "Udp6InErrors", "dev:rx_drop",
};
#define NSTK ARRAY_SIZE(stk_names)
/* stk_names[STK_DROPS...] are drops or deliveries elsewhere. */
#define STK_DROPS 2

struct snap {
	uint64_t hw[NHW];
	uint64_t stk[NSTK];
};

static const char *netns_name;

static void stk_set(struct snap *s, const char *name, uint64_t v)
{
	for (size_t i = 0; i < NSTK; i++)
		if (!strcmp(stk_names[i], name))
			s->stk[i] = v;
}

/* Reads a "Prefix: Name Name..." / "Prefix: value value..." file. */
static void read_table(struct snap *s, const char *path)
{
	static char hdr[16384], val[16384];
	FILE *f = fopen(path, "r");

	if (!f)
		return;
	while (fgets(hdr, sizeof(hdr), f) && fgets(val, sizeof(val), f)) {
		char *hs, *vs, *h = strtok_r(hdr, " \n", &hs), *v = strtok_r(val, " \n", &vs);
		char name[128];

		if (!h || !v || strcmp(h, v))
			break;
		while ((h = strtok_r(NULL, " \n", &hs)) && (v = strtok_r(NULL, " \n", &vs))) {
			snprintf(name, sizeof(name), "%.31s%.63s", hdr, h);
			stk_set(s, name, strtoull(v, NULL, 10));
		}
	}
	fclose(f);
}

static void read_stack(struct snap *s, const struct dev *d)
{
	char line[512], name[64];
	unsigned long long v, rx[4];
	FILE *f;

	read_table(s, "/proc/thread-self/net/snmp");
	read_table(s, "/proc/thread-self/net/netstat");
	f = fopen("/proc/thread-self/net/snmp6", "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %llu", name, &v) == 2)
			stk_set(s, name, v);
	if (f)
		fclose(f);
	f = fopen("/proc/thread-self/net/dev", "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *c = strchr(line, ':');

		if (!c)
			continue;
		*c = 0;
		if (sscanf(line, "%63s", name) == 1 && !strcmp(name, d->ifname) &&
		    sscanf(c + 1, "%llu %llu %llu %llu", &rx[0], &rx[1], &rx[2], &rx[3]) == 4)
			stk_set(s, "dev:rx_drop", rx[3]);
	}
	if (f)
		fclose(f);
}

static void snapshot(struct snap *s, const struct dev *d)
{
	char path[256];
	int self = -1;

	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < NHW; i++) {
		FILE *f;
		unsigned long long v;

		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/hw_counters/%s",
			 d->name, hw_names[i]);
		f = fopen(path, "r");
		if (f && fscanf(f, "%llu", &v) == 1)
			s->hw[i] = v;
		if (f)
			fclose(f);
	}
	if (d->in_ns) {
		self = netns_enter(netns_name);
		if (self < 0)
			die("setns");
	}
	read_stack(s, d);
	if (d->in_ns && netns_leave(self))
		die("setns back");
}

/* What a class (or the whole run) did to one device. */
struct tally {
	unsigned long sent, v6, blind, stack, drv_in, drv_drop, taken, vanished;
	unsigned long hw[NHW];
};

static struct tally tally[NCLASS][2], total[2];
static int has_bad_pkt;

static int dev_idx(const struct dev *d)
{
	return (int)(d - devs);
}

/* The counters' growth at device I from snapshots A to B (of every device). */
static void delta(struct tally *t, const struct snap *a, const struct snap *b, int i)
{
	unsigned long live = 0, udp_in;

	for (size_t j = 0; j < NHW; j++)
		t->hw[j] = b[i].hw[j] - a[i].hw[j];
	t->stack = 0;
	for (size_t j = STK_DROPS; j < NSTK; j++)
		t->stack += b[i].stk[j] - a[i].stk[j];
	if (ndevs == 2)
		live = b[!i].hw[0] - a[!i].hw[0];
	udp_in = b[i].stk[0] - a[i].stk[0] + b[i].stk[1] - a[i].stk[1];
	t->drv_in = udp_in - live;
	t->drv_drop = 0;
	for (int j = HW_DROPS; j < HW_DROPS_END; j++)
		t->drv_drop += t->hw[j];
	/* Each datagram is received (rcvd_pkts) or refused once, before it is queued. */
	t->vanished = 0;
	if (has_bad_pkt) {
		t->vanished = udp_in;
		for (int j = 1; j <= HW_ADMIT_END; j++)
			t->vanished -= t->hw[j];
	}
}

/* Frames neither the stack's counters nor the driver's account for. */
static long unaccounted(const struct tally *t)
{
	return (long)t->sent - (long)t->stack - (long)t->drv_drop - (long)t->taken;
}

static void print_tally(const char *name, const struct dev *d, const struct tally *t)
{
	say("# %-10s %-7s sent %7lu (v6 %6lu) stack %6lu driver-in %7ld driver-drops %7lu "
	    "taken %4lu unaccounted %6ld (vanished %ld, to a group not joined %lu)\n", name,
	    d->name, t->sent, t->v6, t->stack, (long)t->drv_in, t->drv_drop, t->taken,
	    unaccounted(t), (long)t->vanished, t->blind);
	say("#            %-7s", "");
	for (size_t j = HW_DROPS; j < NHW; j++)
		if (t->hw[j])
			say(" %s %lu", hw_names[j] + (strncmp(hw_names[j], "rcvd_", 5) ? 0 : 5),
			    t->hw[j]);
	say("\n");
}

/* ---- Sending ---- */

struct batch {
	struct frame f[BATCH];
	struct mmsghdr m[BATCH];
	struct iovec io[BATCH];
	int n;
};

static struct batch batches[2];

static void flush(int di)
{
	struct batch *b = &batches[di];
	int done = 0;

	for (int i = 0; i < b->n; i++) {
		b->io[i].iov_base = b->f[i].b;
		b->io[i].iov_len = b->f[i].len;
		memset(&b->m[i], 0, sizeof(b->m[i]));
		b->m[i].msg_hdr.msg_iov = &b->io[i];
		b->m[i].msg_hdr.msg_iovlen = 1;
	}
	while (done < b->n) {
		int r = sendmmsg(devs[di].tx, b->m + done, b->n - done, 0);

		if (r < 0 && (errno == ENOBUFS || errno == EAGAIN)) {
			usleep(1000);
			continue;
		}
		if (r < 0)
			die("sendmmsg");
		done += r;
	}
	b->n = 0;
}

/* Sends N frames of class C; returns how many (fewer if the time ran out at END). */
static unsigned long send_class(int c, unsigned long n, double end)
{
	unsigned long i;

	for (i = 0; i < n; i++) {
		struct frame f;
		int di;

		if (!(i & 1023) && now_s() > end)
			break;
		gen(c, i, &f);
		di = dev_idx(f.to);
		tally[c][di].sent++;
		tally[c][di].v6 += f.b[12] == 0x86;
		tally[c][di].blind += f.b[12] == 0x08 &&
				      !memcmp(f.b + ETHER_HDR_LEN + 16, "\xef\x01\x01\x03", 4);
		batches[di].f[batches[di].n++] = f;
		if (batches[di].n == BATCH)
			flush(di);
	}
	for (int d = 0; d < ndevs; d++)
		if (batches[d].n)
			flush(d);
	return i;
}

/* ---- Probes: one kind of invalid packet at a time, at QPs without traffic ---- */

enum { PR_UC_RKEY, PR_UC_MIDDLE, PR_UD_NO_RECV, PR_MCAST_EMPTY, PR_MCAST_QPN, PR_BAD_ADDR,
       NPROBE };
static const char *const probe_names[] = {
	"UC RDMA WRITE with an invalid rkey, from the peer",
	"UC SEND middle without a first, from the peer",
	"UD SEND at a QP without receives",
	"UD SEND to 239.1.1.2 (joined, no QP attached)",
	"SEND to the multicast QPN at a unicast address",
	"RC SEND from a wrong source (control)",
};
#define PROBES 200

/* A frame of probe KIND: IPv4, default P_Key, good ICRC. */
static void probe_frame(int kind, struct frame *f)
{
	struct pair *rc = &pairs[0], *uc = &pairs[2], *ud = &pairs[3];
	struct pk k;

	switch (kind) {
	case PR_UC_RKEY:
	case PR_UC_MIDDLE:
		aim(&k, uc, &uc->r, &uc->s, 1);
		right_src(&k, uc->s.d);
		k.psn = live_psn(uc, &uc->r, 1);
		k.op = kind == PR_UC_RKEY ? 0x2a : 0x21;
		if (kind == PR_UC_RKEY)
			ext_reth(&k, (uintptr_t)uc->r.buf + R_WRITE, uc->r.mr->rkey ^ 0x80, 64);
		payload(&k, kind == PR_UC_RKEY ? 64 : MTU);
		break;
	case PR_UD_NO_RECV:
	case PR_MCAST_EMPTY:
		if (kind == PR_UD_NO_RECV) {
			aim(&k, ud, &ud->s, &ud->r, 1);
			right_src(&k, ud->r.d);
		} else {
			aim(&k, ud, &ud->r, &ud->s, 1);
			right_src(&k, ud->s.d);
			inet_pton(AF_INET, "239.1.1.2", &k.dst4);
			k.dqpn = 0xffffff;
		}
		k.op = 0x64;
		ext_word(&k, UD_QKEY);
		ext_word(&k, 1);
		payload(&k, 64);
		break;
	default:
		aim(&k, rc, &rc->r, &rc->s, 1);
		if (kind == PR_MCAST_QPN) {
			right_src(&k, rc->s.d);
			k.dqpn = 0xffffff;
		} else {
			wrong_src(&k);
		}
		k.op = 0x04;
		payload(&k, 64);
	}
	k.v6 = 0;
	k.pkey = 0xffff;
	build(f, &k);
	finish(f, 1);
}

/* Sends each probe and checks that the driver counts every one it drops. */
static void run_probes(void)
{
	struct snap a[2], b[2];

	for (int kind = 0; kind < NPROBE; kind++) {
		struct tally t = { 0 };
		struct frame f;
		int di;

		probe_frame(kind, &f);
		di = dev_idx(f.to);
		for (int i = 0; i < ndevs; i++)
			snapshot(&a[i], &devs[i]);
		for (int i = 0; i < PROBES; i++) {
			probe_frame(kind, &batches[di].f[batches[di].n++]);
			if (batches[di].n == BATCH)
				flush(di);
		}
		if (batches[di].n)
			flush(di);
		usleep(300000);
		for (int i = 0; i < ndevs; i++)
			snapshot(&b[i], &devs[i]);
		delta(&t, a, b, di);
		t.sent = PROBES;
		print_tally("probe", &devs[di], &t);
		check(t.drv_drop >= t.drv_in && t.drv_in > 0,
		      "%s: %d sent to %s, %ld reached the driver, %lu counted as drops "
		      "(rcvd_pkts +%lu)", probe_names[kind], PROBES, devs[di].name, (long)t.drv_in,
		      t.drv_drop, t.hw[1]);
	}
}

/* ---- Main ---- */

static void usage(void)
{
	fprintf(stderr, "usage: wire-fuzz -a DEV_A [-b DEV_B] -n NETNS [-x IF_A] [-y IF_B] "
			"[-c COUNT] [-s SEED] [-t SECONDS] [-k CLASS,...]\n");
	exit(2);
}

/* The classes named in LIST (comma-separated), as a bit mask. */
static unsigned int pick_classes(char *list)
{
	unsigned int m = 0;

	for (char *sp, *n = strtok_r(list, ",", &sp); n; n = strtok_r(NULL, ",", &sp)) {
		int c = 0;

		while (c < NCLASS && strcmp(n, class_names[c]))
			c++;
		if (c == NCLASS)
			usage();
		m |= 1u << c;
	}
	return m ? m : (usage(), 0);
}

int main(int argc, char **argv)
{
	const char *if_a = "veth0", *if_b = "veth1";
	unsigned long count = 100000, sent = 0, per;
	uint64_t seed = 1;
	unsigned int classes = (1u << NCLASS) - 1, nsel = 0;
	double secs = 540, t0, t_end;
	struct snap first[2], before[2], after[2];
	pthread_t th;
	char path[256];
	int opt, cap_fd = -1, self, kmsg = open("/dev/kmsg", O_WRONLY);

	devs[0].name = NULL;
	while ((opt = getopt(argc, argv, "a:b:n:x:y:c:s:t:k:")) != -1) {
		switch (opt) {
		case 'a': devs[0].name = optarg; break;
		case 'b': devs[1].name = optarg; break;
		case 'n': netns_name = optarg; break;
		case 'x': if_a = optarg; break;
		case 'y': if_b = optarg; break;
		case 'c': count = strtoul(optarg, NULL, 0); break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 't': secs = strtod(optarg, NULL); break;
		case 'k': classes = pick_classes(optarg); break;
		default: usage();
		}
	}
	if (!devs[0].name || !netns_name)
		usage();
	ndevs = devs[1].name ? 2 : 1;
	rng_seed(seed);
	for (size_t i = 0; i < POOL; i++)
		pool[i] = rng32();

	/* Devices, their net devices, and the sockets that reach them. */
	devs[0].ifname = if_a;
	devs[1].ifname = if_b;
	devs[1].in_ns = 1;
	for (int i = 0; i < ndevs; i++)
		open_dev(&devs[i]);
	if_info(if_a, devs[0].mac);
	devs[1].tx = packet_socket(if_a, devs[1].src_mac, 0);
	join_groups(&devs[0], if_a);
	self = netns_enter(netns_name);
	if (self < 0)
		die("setns");
	devs[0].tx = packet_socket(if_b, devs[0].src_mac, 0);
	if_info(if_b, devs[1].mac);
	if (ndevs == 2)
		join_groups(&devs[1], if_b);
	if (netns_leave(self))
		die("setns back");
	if (ndevs == 2)
		cap_fd = packet_socket(if_a, devs[0].mac, 1);

	for (int i = 0; i < NPAIRS; i++) {
		struct pair *p = &pairs[i];

		end_setup(&p->s, &devs[0]);
		end_setup(&p->r, &devs[ndevs - 1]);
		fill(p->r.buf + R_READ, 0xabc, 8192);
		pair_start(p);
		say("# %s: %s qpn %#x -> %s qpn %#x, over %s\n", p->name, p->s.d->name, p->s.qpn,
		    p->r.d->name, p->r.qpn, p->v6 ? "IPv6" : "IPv4");
	}
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/hw_counters/rcvd_bad_pkt",
		 devs[0].name);
	has_bad_pkt = access(path, F_OK) == 0;
	/* Before any traffic, and at the end after it: the totals are exact. */
	for (int i = 0; i < ndevs; i++)
		snapshot(&first[i], &devs[i]);
	if (pthread_create(&th, NULL, traffic, NULL))
		die("pthread_create");
	if (cap_fd >= 0) {
		capture(cap_fd, 3);
		close(cap_fd);
	} else {
		sleep(1);
	}
	say("# %d frames captured from the live traffic for templates\n", ncap);

	/* The fuzz. */
	for (int c = 0; c < NCLASS; c++)
		nsel += classes >> c & 1;
	per = (count + nsel - 1) / nsel;
	t0 = now_s();
	t_end = t0 + secs;
	for (int i = 0; i < ndevs; i++)
		snapshot(&before[i], &devs[i]);
	for (int c = 0; c < NCLASS; c++) {
		unsigned long n;
		double tc = now_s();

		if (!(classes >> c & 1))
			continue;
		cur_class = c;
		/* In the kernel log too: a crash's log says during which class. */
		if (kmsg >= 0) {
			char m[64];
			int l = snprintf(m, sizeof(m), "wire-fuzz: class %s", class_names[c]);

			if (write(kmsg, m, l) != l)
				say("# /dev/kmsg: %s\n", strerror(errno));
		}
		n = send_class(c, per < count - sent ? per : count - sent, t_end);
		sent += n;
		usleep(300000);
		for (int i = 0; i < ndevs; i++)
			snapshot(&after[i], &devs[i]);
		say("# sent %s %lu in %.1f s\n", class_names[c], n, now_s() - tc);
		for (int i = 0; i < ndevs; i++) {
			tally[c][i].taken = i == ndevs - 1 ? foreign_by_class[c] : 0;
			delta(&tally[c][i], before, after, i);
			print_tally(class_names[c], &devs[i], &tally[c][i]);
		}
		memcpy(before, after, sizeof(before));
	}
	t_end = now_s();
	cur_class = NCLASS;
	fuzz_over = 1;
	say("# fuzz: %lu frames in %.1f s (%.0f/s), %lu guarded (PSN moved away from a live RC "
	    "QP's)\n", sent, t_end - t0, sent / (t_end - t0), guarded);

	/* The live traffic must go on. */
	pthread_join(th, NULL);
	usleep(300000);
	say("# the whole run, from before the first message to after the last:\n");
	for (int i = 0; i < ndevs; i++) {
		snapshot(&after[i], &devs[i]);
		for (int c = 0; c < NCLASS; c++) {
			total[i].sent += tally[c][i].sent;
			total[i].v6 += tally[c][i].v6;
			total[i].blind += tally[c][i].blind;
		}
		if (i == ndevs - 1)
			for (int c = 0; c <= NCLASS; c++)
				total[i].taken += foreign_by_class[c];
	}
	for (int i = 0; i < ndevs; i++) {
		delta(&total[i], first, after, i);
		print_tally("total", &devs[i], &total[i]);
	}
	for (int i = 0; i < NPAIRS; i++) {
		struct pair *p = &pairs[i];
		int ss = qp_state(p->s.qp), rs = qp_state(p->r.qp);

		say("# %s: %lu messages verified, %lu foreign, %lu lost, %lu errors, %lu resets, "
		    "%lu corrupt; after the fuzz %lu; states %d %d\n", p->name, p->ok, p->foreign,
		    p->lost, p->errors, p->resets, p->corrupt, p->final_ok, ss, rs);
		if (p->kind == RC)
			check(!p->errors && !p->corrupt && !p->resets,
			      "%s: %lu messages verified during the fuzz, none failed or corrupt",
			      p->name, p->ok);
		else
			check(!p->corrupt,
			      "%s: %lu messages verified, %lu foreign, %lu lost, %lu QP errors "
			      "(tolerated for %s)", p->name, p->ok, p->foreign, p->lost, p->errors,
			      p->kind == UC ? "UC" : "UD");
		check(p->final_ok >= FINAL,
		      "%s: %lu messages verified after the fuzz (%d required)", p->name,
		      p->final_ok, FINAL);
		check(ss == IBV_QPS_RTS && rs == IBV_QPS_RTS, "%s: both QPs in RTS (%d, %d)",
		      p->name, ss, rs);
	}
	check(sent == count, "%lu of %lu frames sent in %.0f s", sent, count, t_end - t0);
	say("# probes: %d frames of one kind at a time, the QPs idle\n", PROBES);
	run_probes();
	for (int i = 0; i < ndevs; i++) {
		const struct tally *t = &total[i];
		long unacc = unaccounted(t) - (long)t->vanished - (long)t->blind;

		if (!has_bad_pkt) {
			check(0, "%s: no rcvd_bad_pkt counter: drops in the driver are not counted",
			      devs[i].name);
			continue;
		}
		check(!t->vanished, "%s: every datagram the UDP sockets handed over shows in "
		      "rcvd_pkts or a refusal where it arrived (%ld missing; the table shows the "
		      "classes)",
		      devs[i].name, (long)t->vanished);
		check(unacc <= (long)t->sent / 100,
		      "%s: %lu frames sent, %lu dropped by the stack, %lu by the driver, %lu taken "
		      "by UC/UD QPs, %lu to a group not joined: %ld unaccounted besides the %ld "
		      "vanished (at most 1%% allowed)", devs[i].name, t->sent, t->stack,
		      t->drv_drop, t->taken, t->blind, unacc, (long)t->vanished);
	}
	return failed;
}
