// SPDX-License-Identifier: GPL-2.0
/*
 * verbs-stress: create and destroy every verbs object type N times through libibverbs
 * (and the device's provider, e.g. librxe), in batches, cycling through variants of each
 * type (sizes, flags, QP types, ...).
 *
 *   verbs-stress [-d DEV] [-n N] [-b BATCH] [-g GID_INDEX] [-t TYPES]
 *                [--allow-unsupported] [-v]
 *
 * TYPES is a comma-separated list of pd, cq, ah, srq, qp, mr, mw, or "all" (default).
 * Each type is created N times (default 10000) in total, BATCH (default 8) objects alive
 * at a time, destroyed alternately oldest-first and newest-first.
 *
 * A variant whose first create fails with EOPNOTSUPP/ENOSYS is "unsupported" and is not
 * tried again; a type whose variants are all unsupported (or whose prerequisite, e.g. the
 * PD of an MR, is) is reported unsupported. Unsupported types and variants make the exit
 * status 1 unless --allow-unsupported is given. Any other failure (a create that fails
 * after succeeding before, any destroy failure, ...) is an error: the type stops there and
 * the exit status is 1.
 */
#include <getopt.h>
#include <unistd.h>
#include "rrxe-test.h"

#define PORT 1
#define MAX_VARIANTS 48
#define MAX_BATCH 1024

enum vstate { V_ACTIVE, V_UNSUPPORTED, V_FAILED };

struct variant {
	char name[48];
	int arg[4];
	enum vstate state;
	int err;
	char what[64];
	long made;
};

struct type;

struct obj {
	struct variant *v;
	void *p;
};

struct type {
	const char *name;
	/* Creates the shared objects the type needs; returns 0 or an errno, what in *what. */
	int (*setup)(struct type *t, const char **what);
	void (*teardown)(struct type *t);
	/* Creates object number I of variant V; returns 0 or an errno, the verb in *what. */
	int (*create)(struct type *t, struct variant *v, long i, void **p, const char **what);
	int (*destroy)(struct type *t, struct variant *v, void *p, const char **what);
	struct variant v[MAX_VARIANTS];
	int nv;
	/* Results. */
	int selected;
	long done;
	double secs;
	char msg[512];
	enum { RES_OK, RES_PARTIAL, RES_UNSUPPORTED, RES_ERROR } result;
};

static struct ibv_context *ctx;
static struct ibv_device_attr dattr;
static struct ibv_pd *pd;
static struct ibv_cq *scq, *rcq;
static struct ibv_srq *srq;
static struct ibv_comp_channel *chan;
static int gid_index = -1;
static union ibv_gid gid;
static int verbose;

static void add_variant(struct type *t, int a0, int a1, int a2, int a3, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
static void add_variant(struct type *t, int a0, int a1, int a2, int a3, const char *fmt, ...)
{
	struct variant *v;
	va_list ap;

	if (t->nv == MAX_VARIANTS)
		abort();
	v = &t->v[t->nv++];
	memset(v, 0, sizeof(*v));
	v->arg[0] = a0;
	v->arg[1] = a1;
	v->arg[2] = a2;
	v->arg[3] = a3;
	va_start(ap, fmt);
	vsnprintf(v->name, sizeof(v->name), fmt, ap);
	va_end(ap);
}

static int min_int(long a, long b)
{
	return a < b ? a : b;
}

/* Shared prerequisites, created on first use by a type's setup. */
static int need_pd(const char **what)
{
	if (pd)
		return 0;
	pd = ibv_alloc_pd(ctx);
	*what = "ibv_alloc_pd (prerequisite)";
	return pd ? 0 : errno;
}

static int need_cqs(const char **what)
{
	*what = "ibv_create_cq (prerequisite)";
	if (!scq && !(scq = ibv_create_cq(ctx, 64, NULL, NULL, 0)))
		return errno;
	if (!rcq && !(rcq = ibv_create_cq(ctx, 64, NULL, NULL, 0)))
		return errno;
	return 0;
}

static int need_srq(const char **what)
{
	struct ibv_srq_init_attr a = { .attr = { .max_wr = 64, .max_sge = 1 } };
	int err = need_pd(what);

	if (err || srq)
		return err;
	srq = ibv_create_srq(pd, &a);
	*what = "ibv_create_srq (prerequisite)";
	return srq ? 0 : errno;
}

/* PD */

static int pd_create(struct type *t, struct variant *v, long i, void **p, const char **what)
{
	*what = "ibv_alloc_pd";
	*p = ibv_alloc_pd(ctx);
	return *p ? 0 : errno;
}

static int pd_destroy(struct type *t, struct variant *v, void *p, const char **what)
{
	*what = "ibv_dealloc_pd";
	return ibv_dealloc_pd(p);
}

static int pd_setup(struct type *t, const char **what)
{
	add_variant(t, 0, 0, 0, 0, "pd");
	return 0;
}

/* CQ: sizes x {plain, completion channel, ibv_create_cq_ex}. */

enum { CQ_PLAIN, CQ_CHANNEL, CQ_EX };

static int cq_setup(struct type *t, const char **what)
{
	static const char *const kind[] = { "plain", "channel", "cq_ex" };
	int sizes[] = { 1, 2, 16, 255, 1024, dattr.max_cqe };
	unsigned int s, k;

	chan = ibv_create_comp_channel(ctx);
	*what = "ibv_create_comp_channel";
	if (!chan)
		return errno;
	for (k = 0; k < ARRAY_SIZE(kind); k++)
		for (s = 0; s < ARRAY_SIZE(sizes); s++)
			add_variant(t, sizes[s], k, 0, 0, "cqe=%d %s", sizes[s], kind[k]);
	return 0;
}

static int cq_create(struct type *t, struct variant *v, long i, void **p, const char **what)
{
	int vec = ctx->num_comp_vectors > 0 ? i % ctx->num_comp_vectors : 0;
	struct ibv_cq_init_attr_ex a = {
		.cqe = v->arg[0],
		.comp_vector = vec,
		.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM,
	};
	struct ibv_cq_ex *cqx;

	switch (v->arg[1]) {
	case CQ_PLAIN:
		*what = "ibv_create_cq";
		*p = ibv_create_cq(ctx, v->arg[0], NULL, NULL, vec);
		break;
	case CQ_CHANNEL:
		*what = "ibv_create_cq (channel)";
		*p = ibv_create_cq(ctx, v->arg[0], NULL, chan, vec);
		break;
	default:
		*what = "ibv_create_cq_ex";
		cqx = ibv_create_cq_ex(ctx, &a);
		*p = cqx ? ibv_cq_ex_to_cq(cqx) : NULL;
		break;
	}
	if (*p && ((struct ibv_cq *)*p)->cqe < v->arg[0]) {
		fprintf(stderr, "verbs-stress: %s: cqe %d < %d asked\n", *what,
			((struct ibv_cq *)*p)->cqe, v->arg[0]);
		ibv_destroy_cq(*p);
		*p = NULL;
		return EINVAL;
	}
	return *p ? 0 : errno;
}

static int cq_destroy(struct type *t, struct variant *v, void *p, const char **what)
{
	*what = "ibv_destroy_cq";
	return ibv_destroy_cq(p);
}

static void cq_teardown(struct type *t)
{
	if (chan && ibv_destroy_comp_channel(chan))
		fprintf(stderr, "verbs-stress: ibv_destroy_comp_channel: %s\n", strerror(errno));
	chan = NULL;
}

/* AH: to this port's own GIDs, several address vectors. */

static int ah_setup(struct type *t, const char **what)
{
	union ibv_gid g0;
	int err = need_pd(what);

	if (err)
		return err;
	gid_index = find_gid(ctx, PORT, gid_index, &gid);
	*what = "no RoCE v2 IPv4-mapped GID (give -g)";
	if (gid_index < 0)
		return ENOENT;
	add_variant(t, gid_index, 0, 64, 0, "gid %d", gid_index);
	add_variant(t, gid_index, 0x20, 1, 3, "gid %d tclass 0x20 hop 1 sl 3", gid_index);
	if (!ibv_query_gid(ctx, PORT, 0, &g0) && g0.raw[0] == 0xfe && g0.raw[1] == 0x80 &&
	    gid_index != 0)
		add_variant(t, 0, 0, 255, 0, "gid 0 (link-local)");
	return 0;
}

static int ah_create(struct type *t, struct variant *v, long i, void **p, const char **what)
{
	struct ibv_ah_attr a = {
		.is_global = 1,
		.port_num = PORT,
		.sl = v->arg[3],
		.grh = {
			.sgid_index = v->arg[0],
			.traffic_class = v->arg[1],
			.hop_limit = v->arg[2],
			.flow_label = i & 0xfffff,
		},
	};

	if (ibv_query_gid(ctx, PORT, v->arg[0], &a.grh.dgid)) {
		*what = "ibv_query_gid";
		return errno ? errno : EIO;
	}
	*what = "ibv_create_ah";
	*p = ibv_create_ah(pd, &a);
	return *p ? 0 : errno;
}

static int ah_destroy(struct type *t, struct variant *v, void *p, const char **what)
{
	*what = "ibv_destroy_ah";
	return ibv_destroy_ah(p);
}

/* SRQ: (max_wr, max_sge, srq_limit). */

static int srq_setup(struct type *t, const char **what)
{
	int err = need_pd(what);
	int big = min_int(dattr.max_srq_wr, 4096);
	int sge = dattr.max_srq_sge;

	if (err)
		return err;
	add_variant(t, 1, 1, 0, 0, "wr=1 sge=1");
	add_variant(t, 16, 2, 8, 0, "wr=16 sge=2 limit=8");
	add_variant(t, 256, sge, 0, 0, "wr=256 sge=%d", sge);
	add_variant(t, big, 1, big / 2, 0, "wr=%d sge=1 limit=%d", big, big / 2);
	return 0;
}

static int srq_create(struct type *t, struct variant *v, long i, void **p, const char **what)
{
	struct ibv_srq_init_attr a = {
		.attr = { .max_wr = v->arg[0], .max_sge = v->arg[1], .srq_limit = v->arg[2] },
	};

	*what = "ibv_create_srq";
	*p = ibv_create_srq(pd, &a);
	return *p ? 0 : errno;
}

static int srq_destroy(struct type *t, struct variant *v, void *p, const char **what)
{
	*what = "ibv_destroy_srq";
	return ibv_destroy_srq(p);
}

/* QP: {RC, UC, UD} x {own RQ, SRQ} x capability sets. */

static const struct {
	int send_wr, recv_wr, send_sge, recv_sge, inline_data;
} qp_caps[] = {
	{ 1, 1, 1, 1, 0 },
	{ 64, 32, 4, 2, 64 },
	{ 1024, 512, 16, 8, 256 },
};

static int qp_setup(struct type *t, const char **what)
{
	static const struct {
		enum ibv_qp_type type;
		const char *name;
	} types[] = { { IBV_QPT_RC, "RC" }, { IBV_QPT_UC, "UC" }, { IBV_QPT_UD, "UD" } };
	int err = need_pd(what);
	unsigned int ty, c;
	int s;

	if (!err)
		err = need_cqs(what);
	if (err)
		return err;
	for (s = 0; s < 2; s++) {
		/* Without SRQs, the SRQ variants are unsupported, the others still run. */
		if (s && (err = need_srq(what)) && !is_unsupported(err))
			return err;
		for (ty = 0; ty < ARRAY_SIZE(types); ty++)
			for (c = 0; c < ARRAY_SIZE(qp_caps); c++) {
				add_variant(t, types[ty].type, s, c, 0, "%s%s send_wr=%d",
					    types[ty].name, s ? " srq" : "", qp_caps[c].send_wr);
				if (s && err) {
					struct variant *v = &t->v[t->nv - 1];

					v->state = V_UNSUPPORTED;
					v->err = err;
					snprintf(v->what, sizeof(v->what), "%s", *what);
				}
			}
	}
	return 0;
}

static int qp_create(struct type *t, struct variant *v, long i, void **p, const char **what)
{
	int c = v->arg[2];
	struct ibv_qp_init_attr a = {
		.send_cq = scq,
		.recv_cq = (i & 1) ? rcq : scq,
		.srq = v->arg[1] ? srq : NULL,
		.qp_type = v->arg[0],
		.sq_sig_all = i & 1,
		.cap = {
			.max_send_wr = min_int(qp_caps[c].send_wr, dattr.max_qp_wr),
			.max_recv_wr = v->arg[1] ? 0 : min_int(qp_caps[c].recv_wr, dattr.max_qp_wr),
			.max_send_sge = min_int(qp_caps[c].send_sge, dattr.max_sge),
			.max_recv_sge = v->arg[1] ? 0 : min_int(qp_caps[c].recv_sge, dattr.max_sge),
			.max_inline_data = qp_caps[c].inline_data,
		},
	};

	*what = "ibv_create_qp";
	*p = ibv_create_qp(pd, &a);
	return *p ? 0 : errno;
}

static int qp_destroy(struct type *t, struct variant *v, void *p, const char **what)
{
	*what = "ibv_destroy_qp";
	return ibv_destroy_qp(p);
}

/* MR: malloc'ed buffers of several sizes (some not page-aligned), access flag sets. */

static const size_t mr_sizes[] = { 1, 100, 4096, 3 * 4096 + 17, 65536, 1 << 20, 4 << 20 };
static char *mr_buf[ARRAY_SIZE(mr_sizes)];
static const int mr_access[] = {
	0,
	IBV_ACCESS_LOCAL_WRITE,
	IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	IBV_ACCESS_REMOTE_READ,
	IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC,
	IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND,
};

static int mr_setup(struct type *t, const char **what)
{
	unsigned int s, a;
	int err = need_pd(what);

	if (err)
		return err;
	for (s = 0; s < ARRAY_SIZE(mr_sizes); s++) {
		/* +1: the odd-sized ones start one byte in, off a page boundary. */
		mr_buf[s] = malloc(mr_sizes[s] + 1);
		*what = "malloc";
		if (!mr_buf[s])
			return ENOMEM;
		memset(mr_buf[s], 0x5a, mr_sizes[s] + 1);
	}
	for (a = 0; a < ARRAY_SIZE(mr_access); a++)
		for (s = 0; s < ARRAY_SIZE(mr_sizes); s++)
			add_variant(t, s, mr_access[a], s == 3 || s == 1, 0, "%zu bytes%s access 0x%x",
				    mr_sizes[s], (s == 3 || s == 1) ? " +1" : "", mr_access[a]);
	/* ibv_reg_mr_iova2: an IOVA other than the address. */
	add_variant(t, 5, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, 0, 1,
		    "%zu bytes iova 0x10000+", mr_sizes[5]);
	return 0;
}

static int mr_create(struct type *t, struct variant *v, long i, void **p, const char **what)
{
	char *addr = mr_buf[v->arg[0]] + v->arg[2];
	size_t len = mr_sizes[v->arg[0]];

	if (v->arg[3]) {
		/* The IOVA's offset in its page must be the address's (uverbs checks). */
		*what = "ibv_reg_mr_iova2";
		*p = ibv_reg_mr_iova2(pd, addr, len, 0x10000 + ((uintptr_t)addr & 0xfff),
				      v->arg[1]);
	} else {
		*what = "ibv_reg_mr";
		*p = ibv_reg_mr(pd, addr, len, v->arg[1]);
	}
	return *p ? 0 : errno;
}

static int mr_destroy(struct type *t, struct variant *v, void *p, const char **what)
{
	*what = "ibv_dereg_mr";
	return ibv_dereg_mr(p);
}

static void mr_teardown(struct type *t)
{
	unsigned int s;

	for (s = 0; s < ARRAY_SIZE(mr_buf); s++) {
		free(mr_buf[s]);
		mr_buf[s] = NULL;
	}
}

/* MW: type 1 and type 2. */

static int mw_setup(struct type *t, const char **what)
{
	int err = need_pd(what);

	if (err)
		return err;
	add_variant(t, IBV_MW_TYPE_1, 0, 0, 0, "type 1");
	add_variant(t, IBV_MW_TYPE_2, 0, 0, 0, "type 2");
	return 0;
}

static int mw_create(struct type *t, struct variant *v, long i, void **p, const char **what)
{
	*what = "ibv_alloc_mw";
	*p = ibv_alloc_mw(pd, v->arg[0]);
	return *p ? 0 : errno;
}

static int mw_destroy(struct type *t, struct variant *v, void *p, const char **what)
{
	*what = "ibv_dealloc_mw";
	return ibv_dealloc_mw(p);
}

static struct type types[] = {
	{ .name = "pd", .setup = pd_setup, .create = pd_create, .destroy = pd_destroy },
	{ .name = "cq", .setup = cq_setup, .teardown = cq_teardown, .create = cq_create,
	  .destroy = cq_destroy },
	{ .name = "ah", .setup = ah_setup, .create = ah_create, .destroy = ah_destroy },
	{ .name = "srq", .setup = srq_setup, .create = srq_create, .destroy = srq_destroy },
	{ .name = "qp", .setup = qp_setup, .create = qp_create, .destroy = qp_destroy },
	{ .name = "mr", .setup = mr_setup, .teardown = mr_teardown, .create = mr_create,
	  .destroy = mr_destroy },
	{ .name = "mw", .setup = mw_setup, .create = mw_create, .destroy = mw_destroy },
};

static void appendf(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void appendf(char *buf, size_t size, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;

	if (len + 1 >= size)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + len, size - len, fmt, ap);
	va_end(ap);
}

/* The next active variant after *cursor, or NULL. */
static struct variant *next_variant(struct type *t, int *cursor)
{
	int k;

	for (k = 0; k < t->nv; k++) {
		struct variant *v = &t->v[(*cursor + k) % t->nv];

		if (v->state == V_ACTIVE) {
			*cursor = (*cursor + k + 1) % t->nv;
			return v;
		}
	}
	return NULL;
}

static void run_type(struct type *t, long n, int batch)
{
	static struct obj objs[MAX_BATCH];
	const char *what = "";
	double start = now_s();
	int cursor = 0, round = 0, stop = 0, err, k, made, nunsup = 0;

	err = t->setup(t, &what);
	if (err) {
		t->result = is_unsupported(err) ? RES_UNSUPPORTED : RES_ERROR;
		snprintf(t->msg, sizeof(t->msg), "%s: %s", what, strerror(err));
		goto out;
	}
	while (t->done < n && !stop) {
		int want = min_int(batch, n - t->done);
		struct variant *v = NULL;

		made = 0;
		while (made < want && (v = next_variant(t, &cursor))) {
			void *p = NULL;

			err = t->create(t, v, t->done + made, &p, &what);
			if (!err) {
				v->made++;
				objs[made].v = v;
				objs[made].p = p;
				made++;
				continue;
			}
			snprintf(v->what, sizeof(v->what), "%s", what);
			v->err = err;
			if (is_unsupported(err) && !v->made) {
				v->state = V_UNSUPPORTED;
			} else {
				v->state = V_FAILED;
				stop = 1;
				appendf(t->msg, sizeof(t->msg), "%s [%s] failed after %ld: %s; ",
					what, v->name, v->made, strerror(err));
				break;
			}
		}
		/* Destroy alternately oldest first and newest first. */
		for (k = 0; k < made; k++) {
			struct obj *o = &objs[(round & 1) ? made - 1 - k : k];

			err = t->destroy(t, o->v, o->p, &what);
			if (err) {
				/* A failed destroy leaves the object; count it as an error. */
				o->v->state = V_FAILED;
				if (!stop)
					appendf(t->msg, sizeof(t->msg), "%s [%s]: %s; ", what,
						o->v->name, strerror(err));
				stop = 1;
			}
		}
		t->done += made;
		round++;
		if (!v && made < want)
			break; /* no active variant left */
	}
	for (k = 0; k < t->nv; k++) {
		struct variant *v = &t->v[k];

		if (v->state == V_UNSUPPORTED) {
			nunsup++;
			if (nunsup <= 3)
				appendf(t->msg, sizeof(t->msg), "[%s] %s: %s; ", v->name, v->what,
					strerror(v->err));
		}
	}
	if (nunsup > 3)
		appendf(t->msg, sizeof(t->msg), "(%d unsupported variants in all); ", nunsup);
	if (stop)
		t->result = RES_ERROR;
	else if (nunsup == t->nv)
		t->result = RES_UNSUPPORTED;
	else if (nunsup)
		t->result = RES_PARTIAL;
	else if (t->done < n)
		t->result = RES_ERROR;
	else
		t->result = RES_OK;
out:
	t->secs = now_s() - start;
	if (t->teardown)
		t->teardown(t);
	if (verbose)
		for (k = 0; k < t->nv; k++) {
			struct variant *v = &t->v[k];

			printf("  %-4s %-40s %8ld %s%s%s%s\n", t->name, v->name, v->made,
			       v->state == V_ACTIVE ? "ok" :
			       v->state == V_UNSUPPORTED ? "unsupported: " : "FAILED: ",
			       v->state == V_ACTIVE ? "" : v->what,
			       v->state == V_ACTIVE ? "" : ": ",
			       v->state == V_ACTIVE ? "" : strerror(v->err));
		}
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: verbs-stress [-d DEV] [-n N] [-b BATCH] [-g GID_INDEX] [-t TYPES]\n"
		"                    [--allow-unsupported] [-v]\n"
		"  -d, --dev DEV           device (default $RRXE_DEV, else the first)\n"
		"  -n, --count N           objects of each type to create and destroy (10000)\n"
		"  -b, --batch B           objects alive at a time (8, at most %d)\n"
		"  -g, --gid INDEX         GID index for AHs (default $RRXE_GID_INDEX or lookup)\n"
		"  -t, --types LIST        pd,cq,ah,srq,qp,mr,mw or all (default all)\n"
		"  -u, --allow-unsupported an unsupported type or variant is not a failure\n"
		"  -v, --verbose           per-variant counts\n",
		MAX_BATCH);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dev", required_argument, NULL, 'd' },
		{ "count", required_argument, NULL, 'n' },
		{ "batch", required_argument, NULL, 'b' },
		{ "gid", required_argument, NULL, 'g' },
		{ "types", required_argument, NULL, 't' },
		{ "allow-unsupported", no_argument, NULL, 'u' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *dev = getenv("RRXE_DEV"), *list = "all";
	long n = 10000;
	int batch = 8, allow_unsup = 0, c, nok = 0, nunsup = 0, nerr = 0;
	unsigned int i;
	char *copy, *tok, *save;

	while ((c = getopt_long(argc, argv, "d:n:b:g:t:uvh", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'n': n = atol(optarg); break;
		case 'b': batch = atoi(optarg); break;
		case 'g': gid_index = atoi(optarg); break;
		case 't': list = optarg; break;
		case 'u': allow_unsup = 1; break;
		case 'v': verbose = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || n < 0 || batch < 1 || batch > MAX_BATCH) {
		usage(stderr);
		return 2;
	}
	copy = strdup(list);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int found = 0;

		for (i = 0; i < ARRAY_SIZE(types); i++)
			if (!strcmp(tok, "all") || !strcmp(tok, types[i].name))
				types[i].selected = found = 1;
		if (!found) {
			fprintf(stderr, "verbs-stress: unknown type '%s'\n", tok);
			usage(stderr);
			return 2;
		}
	}
	free(copy);

	ctx = open_device(dev);
	if (!ctx)
		return 1;
	if (ibv_query_device(ctx, &dattr)) {
		fprintf(stderr, "verbs-stress: ibv_query_device: %s\n", strerror(errno));
		return 1;
	}
	printf("verbs-stress: %s, %ld of each type, batch %d; max_cqe %d max_qp_wr %d max_sge %d "
	       "max_srq_wr %d max_srq_sge %d comp vectors %d\n",
	       ibv_get_device_name(ctx->device), n, batch, dattr.max_cqe, dattr.max_qp_wr,
	       dattr.max_sge, dattr.max_srq_wr, dattr.max_srq_sge, ctx->num_comp_vectors);
	fflush(stdout);
	for (i = 0; i < ARRAY_SIZE(types); i++) {
		struct type *t = &types[i];
		static const char *const rname[] = { "ok", "partial", "unsupported", "FAILED" };

		if (!t->selected)
			continue;
		run_type(t, n, batch);
		printf("%-4s %-12s %7ld %7.2f s %8.0f/s  %s\n", t->name, rname[t->result], t->done,
		       t->secs, t->secs > 0 ? t->done / t->secs : 0.0, t->msg);
		fflush(stdout);
		switch (t->result) {
		case RES_OK: nok++; break;
		case RES_PARTIAL:
		case RES_UNSUPPORTED: nunsup++; break;
		default: nerr++; break;
		}
	}

	/* The shared prerequisites, newest first. */
	if (srq && ibv_destroy_srq(srq)) {
		printf("verbs-stress: destroying the shared SRQ: %s\n", strerror(errno));
		nerr++;
	}
	if (scq && ibv_destroy_cq(scq)) {
		printf("verbs-stress: destroying the shared send CQ: %s\n", strerror(errno));
		nerr++;
	}
	if (rcq && ibv_destroy_cq(rcq)) {
		printf("verbs-stress: destroying the shared recv CQ: %s\n", strerror(errno));
		nerr++;
	}
	if (pd && ibv_dealloc_pd(pd)) {
		printf("verbs-stress: deallocating the shared PD: %s\n", strerror(errno));
		nerr++;
	}
	if (ibv_close_device(ctx)) {
		printf("verbs-stress: ibv_close_device: %s\n", strerror(errno));
		nerr++;
	}
	printf("verbs-stress: %d ok, %d unsupported or partly, %d failed%s\n", nok, nunsup, nerr,
	       nunsup && allow_unsup ? " (unsupported allowed)" : "");
	return nerr || (nunsup && !allow_unsup) ? 1 : 0;
}
