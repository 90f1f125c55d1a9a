// SPDX-License-Identifier: GPL-2.0
/*
 * kverbs_race: a kernel verbs consumer that tears objects down while the device still
 * works on them, as ULPs do: destroy a QP that is receiving, then at once its CQ.
 *
 * Module parameters:
 *   dev=NAME     the device (default rrxe0)
 *   rounds=N     rounds per run (default 1000)
 *
 * debugfs, /sys/kernel/debug/kverbs_race/:
 *   run      write "destroy_qp_cq [ROUNDS]" to run synchronously in the writer's context;
 *            the write fails with the first error (and the kernel log says which).
 *   results  the last run's report, one line: "destroy_qp_cq ok|error ROUNDS DETAIL".
 *
 * destroy_qp_cq: per round, two RC QPs A and B on one PD, connected to each other through
 * the port's IPv4-mapped RoCE v2 GID. B's send and receive CQs are old-style CQs
 * (ib_create_cq) whose completion handlers re-arm them, as ULPs that poll from their
 * handlers do; the send CQ's handler takes 20 ms, as one doing real work may. Both QPs
 * post 32 receives and 32 SENDs of 64 B to each other, so that B's engine completes sends
 * and receives in the same pass. While B's send CQ handler runs (and a random 0-15 us
 * later), the module destroys B's QP and, right after, B's receive CQ: an engine that
 * calls the receive CQ's handler after the send CQ's, without destroy_qp waiting for it,
 * calls freed memory. Then it destroys A and A's CQ. A driver whose
 * engine can still call the CQ's handler after destroy_qp returned calls freed memory:
 * KASAN reports it, and with slub_debug=P the call jumps to the poison and oopses.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/debugfs.h>
#include <linux/slab.h>
#include <linux/mutex.h>
#include <linux/delay.h>
#include <linux/random.h>
#include <linux/etherdevice.h>
#include <net/ipv6.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_cache.h>

static char *dev = "rrxe0";
module_param(dev, charp, 0644);
MODULE_PARM_DESC(dev, "RDMA device to test (default rrxe0)");
static uint rounds = 1000;
module_param(rounds, uint, 0644);
MODULE_PARM_DESC(rounds, "rounds per run (default 1000)");

#define PORT 1
#define NWR 32
#define MSG 64

static struct ib_device *ibdev;
static DEFINE_MUTEX(race_lock);
static char result[256];
static atomic_t handler_calls;

struct race {
	struct ib_device *dev;
	struct ib_pd *pd;
	union ib_gid gid;
	int gid_index;
	u8 dmac[ETH_ALEN];
	void *buf;
	u64 dma;
};

static int find_gid(struct race *r)
{
	const struct ib_port_immutable *imm = ib_port_immutable_read(r->dev, PORT);
	int i;

	for (i = 0; i < imm->gid_tbl_len; i++) {
		const struct ib_gid_attr *attr = rdma_get_gid_attr(r->dev, PORT, i);
		bool ok;

		if (IS_ERR(attr))
			continue;
		ok = attr->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP &&
		     ipv6_addr_v4mapped((const struct in6_addr *)attr->gid.raw) &&
		     !rdma_read_gid_l2_fields(attr, NULL, r->dmac);
		if (ok)
			r->gid = attr->gid;
		rdma_put_gid_attr(attr);
		if (ok)
			return i;
	}
	return -1;
}

/* B's receive CQ handler: counts and re-arms (the CQ is destroyed without polling). */
static void race_comp(struct ib_cq *cq, void *ctx)
{
	atomic_inc(&handler_calls);
	ib_req_notify_cq(cq, IB_CQ_NEXT_COMP);
}

/*
 * B's send CQ handler: slow, as a handler that does real work is. A driver that calls the
 * send CQ's handler and then the receive CQ's after one pass calls the second 20 ms later.
 */
static atomic_t in_slow;
static void slow_comp(struct ib_cq *cq, void *ctx)
{
	atomic_inc(&in_slow);
	mdelay(20);
	atomic_dec(&in_slow);
	ib_req_notify_cq(cq, IB_CQ_NEXT_COMP);
}

static void race_event(struct ib_event *ev, void *ctx)
{
}

static int race_connect(struct race *r, struct ib_qp *qp, u32 dest, u32 psn, u32 dpsn)
{
	struct ib_qp_attr a = {};
	int err;

	a.qp_state = IB_QPS_INIT;
	a.port_num = PORT;
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX | IB_QP_PORT |
				   IB_QP_ACCESS_FLAGS);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	a.path_mtu = IB_MTU_1024;
	a.dest_qp_num = dest;
	a.rq_psn = dpsn;
	a.min_rnr_timer = 1;
	a.ah_attr.type = rdma_ah_find_type(r->dev, PORT);
	rdma_ah_set_port_num(&a.ah_attr, PORT);
	rdma_ah_set_grh(&a.ah_attr, &r->gid, 0, r->gid_index, 64, 0);
	memcpy(a.ah_attr.roce.dmac, r->dmac, ETH_ALEN);
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
				   IB_QP_DEST_QPN | IB_QP_RQ_PSN |
				   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.sq_psn = psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	return ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
				    IB_QP_RNR_RETRY | IB_QP_SQ_PSN | IB_QP_MAX_QP_RD_ATOMIC);
}

static struct ib_qp *make_qp(struct race *r, struct ib_cq *scq, struct ib_cq *rcq)
{
	struct ib_qp_init_attr init = {
		.send_cq = scq,
		.recv_cq = rcq,
		.cap = { .max_send_wr = NWR, .max_recv_wr = NWR,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = IB_QPT_RC,
		.event_handler = race_event,
	};

	return ib_create_qp(r->pd, &init);
}

static int post(struct race *r, struct ib_qp *qp, struct ib_sge *sge, bool signaled,
		const char **what)
{
	int i, err;

	for (i = 0; i < NWR; i++) {
		struct ib_recv_wr wr = { .wr_id = i, .sg_list = sge, .num_sge = 1 };

		err = ib_post_recv(qp, &wr, NULL);
		if (err) {
			*what = "ib_post_recv";
			return err;
		}
	}
	for (i = 0; i < NWR; i++) {
		struct ib_send_wr wr = {
			.wr_id = i,
			.sg_list = sge,
			.num_sge = 1,
			.opcode = IB_WR_SEND,
			.send_flags = signaled || i == NWR - 1 ? IB_SEND_SIGNALED : 0,
		};

		err = ib_post_send(qp, &wr, NULL);
		if (err) {
			*what = "ib_post_send";
			return err;
		}
	}
	return 0;
}

/* Frees *cq with ib_destroy_cq_user (ib_destroy_cq hides the error) and clears it. */
static int destroy_cq(struct ib_cq **cq)
{
	int err = *cq ? ib_destroy_cq_user(*cq, NULL) : 0;

	*cq = NULL;
	return err;
}

static int round_one(struct race *r, const char **what)
{
	struct ib_cq_init_attr cqa = { .cqe = 2 * NWR + 2 };
	struct ib_cq *acq = NULL, *scq = NULL, *rcq = NULL;
	struct ib_qp *qpa = NULL, *qpb = NULL;
	struct ib_sge sge = { .addr = r->dma, .length = MSG, .lkey = r->pd->local_dma_lkey };
	u32 psna = get_random_u32() & 0xffffff, psnb = get_random_u32() & 0xffffff;
	unsigned long start;
	int err;

	acq = ib_alloc_cq(r->dev, NULL, 2 * NWR + 2, 0, IB_POLL_DIRECT);
	if (IS_ERR(acq)) {
		*what = "ib_alloc_cq";
		return PTR_ERR(acq);
	}
	scq = ib_create_cq(r->dev, slow_comp, race_event, NULL, &cqa);
	rcq = IS_ERR(scq) ? scq : ib_create_cq(r->dev, race_comp, race_event, NULL, &cqa);
	if (IS_ERR(rcq)) {
		err = PTR_ERR(rcq);
		if (!IS_ERR(scq))
			destroy_cq(&scq);
		scq = rcq = NULL;
		*what = "ib_create_cq";
		goto out;
	}
	qpa = make_qp(r, acq, acq);
	if (IS_ERR(qpa)) {
		err = PTR_ERR(qpa);
		qpa = NULL;
		*what = "ib_create_qp A";
		goto out;
	}
	qpb = make_qp(r, scq, rcq);
	if (IS_ERR(qpb)) {
		err = PTR_ERR(qpb);
		qpb = NULL;
		*what = "ib_create_qp B";
		goto out;
	}
	err = race_connect(r, qpa, qpb->qp_num, psna, psnb);
	if (!err)
		err = race_connect(r, qpb, qpa->qp_num, psnb, psna);
	if (err) {
		*what = "ib_modify_qp";
		goto out;
	}
	ib_req_notify_cq(scq, IB_CQ_NEXT_COMP);
	ib_req_notify_cq(rcq, IB_CQ_NEXT_COMP);
	/* Both ways at once: B's passes complete sends and receives together. */
	err = post(r, qpb, &sge, true, what);
	if (!err)
		err = post(r, qpa, &sge, false, what);
	if (err)
		goto out;
	/* While B's send CQ handler runs, after a random 0-15 us. */
	start = jiffies;
	while (!atomic_read(&in_slow) && time_before(jiffies, start + HZ / 5))
		cpu_relax();
	udelay(get_random_u32_below(16));
	/* The race: B may be about to call rcq's handler right now. */
	err = ib_destroy_qp(qpb);
	qpb = NULL;
	if (err) {
		*what = "ib_destroy_qp B";
		goto out;
	}
	err = destroy_cq(&rcq);
	if (err)
		*what = "ib_destroy_cq B receive";
out:
	if (qpb)
		ib_destroy_qp(qpb);
	destroy_cq(&rcq);
	/* scq's handler may still be running in an engine that does not wait for it. */
	while (atomic_read(&in_slow))
		msleep(1);
	destroy_cq(&scq);
	if (qpa)
		ib_destroy_qp(qpa);
	ib_free_cq(acq);
	return err;
}

static int run_destroy_qp_cq(long n)
{
	struct race r = { .dev = ibdev };
	const char *what = "";
	long i = 0;
	int err;

	atomic_set(&handler_calls, 0);
	r.gid_index = find_gid(&r);
	if (r.gid_index < 0) {
		what = "no IPv4 RoCE v2 GID";
		err = -ENODEV;
		goto report;
	}
	r.pd = ib_alloc_pd(r.dev, 0);
	if (IS_ERR(r.pd)) {
		err = PTR_ERR(r.pd);
		what = "ib_alloc_pd";
		goto report;
	}
	r.buf = kzalloc(MSG, GFP_KERNEL);
	err = -ENOMEM;
	if (!r.buf)
		goto pd;
	r.dma = ib_dma_map_single(r.dev, r.buf, MSG, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(r.dev, r.dma)) {
		what = "ib_dma_map_single";
		goto buf;
	}
	for (i = 0; i < n; i++) {
		err = round_one(&r, &what);
		if (err)
			break;
		cond_resched();
	}
	ib_dma_unmap_single(r.dev, r.dma, MSG, DMA_BIDIRECTIONAL);
buf:
	kfree(r.buf);
pd:
	ib_dealloc_pd(r.pd);
report:
	snprintf(result, sizeof(result), "destroy_qp_cq %s %ld %s%s(%d) handler_calls=%d\n",
		 err ? "error" : "ok", i, what, err ? " " : "", err,
		 atomic_read(&handler_calls));
	pr_info("%s", result);
	return err;
}

static ssize_t run_write(struct file *file, const char __user *ubuf, size_t len,
			 loff_t *ppos)
{
	char buf[64], name[32];
	long n = rounds;
	int err, got;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = 0;
	got = sscanf(buf, "%31s %ld", name, &n);
	if (got < 1 || n < 1 || strcmp(name, "destroy_qp_cq"))
		return -EINVAL;
	mutex_lock(&race_lock);
	if (!ibdev)
		err = -ENODEV;
	else
		err = run_destroy_qp_cq(n);
	mutex_unlock(&race_lock);
	return err ? err : len;
}

static ssize_t results_read(struct file *file, char __user *ubuf, size_t len, loff_t *ppos)
{
	return simple_read_from_buffer(ubuf, len, ppos, result, strlen(result));
}

static const struct file_operations run_fops = {
	.owner = THIS_MODULE,
	.write = run_write,
	.llseek = default_llseek,
};

static const struct file_operations results_fops = {
	.owner = THIS_MODULE,
	.read = results_read,
	.llseek = default_llseek,
};

static int race_add(struct ib_device *d)
{
	mutex_lock(&race_lock);
	if (!ibdev && !strcmp(dev_name(&d->dev), dev))
		ibdev = d;
	mutex_unlock(&race_lock);
	return 0;
}

static void race_remove(struct ib_device *d, void *client_data)
{
	mutex_lock(&race_lock);
	if (ibdev == d)
		ibdev = NULL;
	mutex_unlock(&race_lock);
}

static struct ib_client race_client = {
	.name = "kverbs_race",
	.add = race_add,
	.remove = race_remove,
};

static struct dentry *dir;

static int __init race_init(void)
{
	int err = ib_register_client(&race_client);

	if (err)
		return err;
	dir = debugfs_create_dir("kverbs_race", NULL);
	debugfs_create_file("run", 0200, dir, NULL, &run_fops);
	debugfs_create_file("results", 0400, dir, NULL, &results_fops);
	return 0;
}

static void __exit race_exit(void)
{
	debugfs_remove_recursive(dir);
	ib_unregister_client(&race_client);
}

module_init(race_init);
module_exit(race_exit);
MODULE_DESCRIPTION("Kernel verbs consumer that destroys objects under traffic");
MODULE_LICENSE("GPL");
