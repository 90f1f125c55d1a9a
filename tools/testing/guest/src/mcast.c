// SPDX-License-Identifier: GPL-2.0
/*
 * Multicast attach/detach on DEVICE (mcast DEVICE): a UD QP joins a group, the net
 * device's multicast filter holds the group's MAC while the group has QPs, detaching twice
 * fails, RC QPs cannot attach, and a group takes at most 56 QPs. TAP output; exit 1 on any
 * failure.
 */
#include <arpa/inet.h>

#include "rrxe-test.h"

static int failed, n;

static void check(int ok, const char *desc)
{
	printf("%s %d - %s\n", ok ? "ok" : "not ok", ++n, desc);
	failed += !ok;
}

/* Whether eth0's multicast filter holds MAC (12 hex digits). */
static int in_filter(const char *mac)
{
	char line[256], dev[64], addr[64];
	FILE *f = fopen("/proc/net/dev_mcast", "r");
	int found = 0, idx, users, global;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%d %63s %d %d %63s", &idx, dev, &users, &global, addr) == 5 &&
		    !strcmp(dev, "eth0") && !strcmp(addr, mac))
			found = 1;
	fclose(f);
	return found;
}

static struct ibv_qp *new_qp(struct ibv_pd *pd, struct ibv_cq *cq, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = cq, .recv_cq = cq, .qp_type = type,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(pd, &attr);
}

int main(int argc, char **argv)
{
	const char *mac = "333312345678";
	struct ibv_context *ctx = open_device(argc > 1 ? argv[1] : NULL);
	struct ibv_qp *qps[57], *a, *b, *rc;
	union ibv_gid mgid;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	int i, ok;

	if (!ctx)
		return 1;
	inet_pton(AF_INET6, "ff0e::1234:5678", mgid.raw);
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	a = cq ? new_qp(pd, cq, IBV_QPT_UD) : NULL;
	b = cq ? new_qp(pd, cq, IBV_QPT_UD) : NULL;
	rc = cq ? new_qp(pd, cq, IBV_QPT_RC) : NULL;
	if (!a || !b || !rc) {
		printf("not ok 1 - setup: %s\n", strerror(errno));
		return 1;
	}
	check(in_filter(mac) == 0, "the group MAC is not in eth0's filter before");
	check(!ibv_attach_mcast(a, &mgid, 0), "a UD QP attaches");
	check(in_filter(mac) == 1, "the first attach adds the group MAC");
	check(!ibv_attach_mcast(b, &mgid, 0), "a second UD QP attaches");
	check(!ibv_detach_mcast(a, &mgid, 0), "the first detaches");
	check(in_filter(mac) == 1, "the MAC stays while a QP is attached");
	check(!ibv_detach_mcast(b, &mgid, 0), "the second detaches");
	check(in_filter(mac) == 0, "the last detach removes the MAC");
	check(ibv_detach_mcast(b, &mgid, 0) == EINVAL, "detaching again fails with EINVAL");
	check(ibv_attach_mcast(rc, &mgid, 0) != 0, "an RC QP cannot attach");
	for (i = 0; i < 57; i++)
		qps[i] = new_qp(pd, cq, IBV_QPT_UD);
	for (i = 0, ok = 1; i < 56; i++)
		ok &= qps[i] && !ibv_attach_mcast(qps[i], &mgid, 0);
	check(ok, "56 QPs attach to one group");
	check(qps[56] && ibv_attach_mcast(qps[56], &mgid, 0) == ENOMEM, "a 57th gets ENOMEM");
	for (i = 0, ok = 1; i < 56; i++)
		ok &= !ibv_detach_mcast(qps[i], &mgid, 0);
	check(ok && in_filter(mac) == 0, "all detach and the filter is clean");
	for (i = 0; i < 57; i++)
		if (qps[i])
			ibv_destroy_qp(qps[i]);
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_qp(rc);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	printf("1..%d\n", n);
	return failed ? 1 : 0;
}
