// SPDX-License-Identifier: GPL-2.0
/*
 * mr-race: no RDMA WRITE may land in an MR after the rereg (REREG_MR) that took its
 * IBV_ACCESS_REMOTE_WRITE away has returned. A UC QP streams 8-byte inline WRITEs of a
 * counter into the MR of a second UC QP of the same device (a dropped WRITE does not
 * break a UC QP, so the stream goes on) while the main thread toggles the MR's access:
 * it gives REMOTE_WRITE back, waits for a WRITE to land, takes REMOTE_WRITE away, reads
 * the counter the moment the rereg returns and again a few milliseconds later. A
 * change in between is a WRITE whose key the responder checked before the rereg and
 * carried out after it: the race of a responder that checks the key and records the MR's
 * state under two acquisitions of its lock. The race is narrow: a run catches it only when
 * the responder is held up between the two (an interrupt, or its vCPU descheduled by the
 * host), so it toggles for a while, and an old module fails it only sometimes.
 *
 *   mr-race [-d DEV] [-s SECONDS]
 */
#include <pthread.h>
#include <stdatomic.h>

#include "rrxe-test.h"

#define PORT 1
/* Send queue depth; every SIGNAL_EVERYth WRITE is signaled, to reclaim the queue. */
#define SQ_DEPTH 128
#define SIGNAL_EVERY 16
/*
 * How long the counter must stay unchanged after a revoking rereg: a WRITE held up between
 * its key check and its copy lands when its CPU runs again.
 */
#define QUIET_US 3000

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp[2];
static struct ibv_mr *smr, *dmr;
static volatile uint64_t *slot;
static uint64_t *src;
static atomic_int stop;
static const char *write_err;

static struct ibv_qp *uc_qp(void)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UC,
		.cap = { .max_send_wr = SQ_DEPTH, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1, .max_inline_data = sizeof(uint64_t) },
	};

	return ibv_create_qp(pd, &a);
}

/* Streams WRITEs of 1, 2, 3, ... into the slot until told to stop. */
static void *writer(void *unused)
{
	struct ibv_sge sge = { (uintptr_t)src, sizeof(*src), smr->lkey };
	struct ibv_send_wr wr = { .opcode = IBV_WR_RDMA_WRITE, .sg_list = &sge, .num_sge = 1 };
	struct ibv_send_wr *bad;
	struct ibv_wc wc[16];
	uint64_t seq = 0;
	int outstanding = 0, n, i;

	wr.wr.rdma.remote_addr = (uintptr_t)slot;
	wr.wr.rdma.rkey = dmr->rkey;
	while (!atomic_load(&stop)) {
		while (outstanding <= SQ_DEPTH - SIGNAL_EVERY) {
			*src = ++seq;
			wr.send_flags = IBV_SEND_INLINE;
			if (seq % SIGNAL_EVERY == 0)
				wr.send_flags |= IBV_SEND_SIGNALED;
			if (ibv_post_send(qp[0], &wr, &bad)) {
				write_err = "ibv_post_send failed";
				return NULL;
			}
			outstanding++;
		}
		n = ibv_poll_cq(cq, ARRAY_SIZE(wc), wc);
		if (n < 0) {
			write_err = "ibv_poll_cq failed";
			return NULL;
		}
		for (i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				write_err = "a WRITE completed with an error";
				return NULL;
			}
			outstanding -= SIGNAL_EVERY;
		}
	}
	return NULL;
}

/* Changes the access of the target MR. Returns 0 or an errno. */
static int rereg(int access)
{
	return rereg_mr_cmd(dmr, IBV_REREG_MR_CHANGE_ACCESS, NULL, access);
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, us % 1000000 * 1000 };

	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	const char *dev = NULL;
	double secs = 20, end;
	long revokes = 0, late = 0, dry = 0;
	int err = 0;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	pthread_t th;
	int gid_index, c;

	while ((c = getopt(argc, argv, "d:s:")) != -1) {
		if (c == 'd')
			dev = optarg;
		else if (c == 's')
			secs = atof(optarg);
		else
			bail_out("usage: mr-race [-d DEV] [-s SECONDS]");
	}
	ctx = open_device(dev);
	if (!ctx)
		bail_out("cannot open the device");
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, SQ_DEPTH, NULL, NULL, 0) : NULL;
	slot = aligned_alloc(4096, 4096);
	src = aligned_alloc(4096, 4096);
	if (!cq || !slot || !src)
		bail_out("setup: %s", strerror(errno));
	*slot = 0;
	smr = ibv_reg_mr(pd, src, 4096, IBV_ACCESS_LOCAL_WRITE);
	dmr = ibv_reg_mr(pd, (void *)slot, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	qp[0] = smr && dmr ? uc_qp() : NULL;
	qp[1] = qp[0] ? uc_qp() : NULL;
	gid_index = find_gid(ctx, PORT, -1, &gid);
	if (!qp[1] || gid_index < 0 || ibv_query_port(ctx, PORT, &pa))
		bail_out("setup: %s", strerror(errno));
	err = connect_uc_qp(qp[0], PORT, gid_index, &gid, pa.active_mtu, qp[1]->qp_num,
			    IBV_ACCESS_REMOTE_WRITE);
	if (!err)
		err = connect_uc_qp(qp[1], PORT, gid_index, &gid, pa.active_mtu, qp[0]->qp_num,
				    IBV_ACCESS_REMOTE_WRITE);
	if (err)
		bail_out("connecting the UC QPs: %s", strerror(err));
	if (pthread_create(&th, NULL, writer, NULL))
		bail_out("pthread_create failed");

	end = now_s() + secs;
	while (now_s() < end && !write_err) {
		double until = now_s() + time_scale();
		uint64_t before = *slot, v1, v2;

		err = rereg(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (err)
			break;
		while (*slot == before && now_s() < until)
			sleep_us(50);
		if (*slot == before)
			dry++;
		err = rereg(IBV_ACCESS_LOCAL_WRITE);
		if (err)
			break;
		v1 = *slot;
		revokes++;
		sleep_us(QUIET_US);
		v2 = *slot;
		if (v2 != v1) {
			late++;
			note("revocation %ld: the counter was %llu when the rereg returned, "
			     "%llu %d us later", revokes, (unsigned long long)v1,
			     (unsigned long long)v2, QUIET_US);
		}
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);

	ok(!write_err, "the WRITE stream ran%s%s", write_err ? ": " : "",
	   write_err ? write_err : "");
	ok(!err, "REREG_MR (IB_MR_REREG_ACCESS) succeeded every time%s%s", err ? ": " : "",
	   err ? strerror(err) : "");
	ok(revokes >= 100 && dry * 10 <= revokes,
	   "WRITEs landed after %ld of %ld grants of REMOTE_WRITE (at least 100 revocations, "
	   "90 %% with WRITEs landing before)", revokes - dry, revokes);
	ok(late == 0, "no WRITE landed after the rereg that revoked REMOTE_WRITE returned "
		      "(%ld of %ld revocations)", late, revokes);
	return tap_done();
}
