/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the guest test programs (the C files next to this one): TAP output,
 * opening a device by name, classifying errors, finding the RoCE v2 IPv4-mapped GID,
 * reading a hw_counter, connecting an RC or a UC QP, listing the uverbs mappings of this
 * process and writing raw uverbs commands (a QP's doorbell, re-registering an MR), a
 * small PRNG.
 */
#ifndef RRXE_TEST_H
#define RRXE_TEST_H

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*
 * TAP: ok() and skip() print the numbered test lines, note() a comment, tap_done() the
 * plan and the summary at the end. Every line is flushed at once: a program killed at
 * its time limit keeps what it printed.
 */
static int tap_n, tap_failed;

/*
 * bail_out() ends with a "Bail out!" line if set: for a program whose output is its
 * test's TAP stream as it stands, not quoted as comments by its script.
 */
static int tap_bail_out_line;

static inline void tap_vresult(int pass, const char *fmt, va_list ap)
{
	tap_n++;
	if (!pass)
		tap_failed++;
	printf("%s %d - ", pass ? "ok" : "not ok", tap_n);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
}

/* A test line: "ok N - MESSAGE" if PASS, else "not ok N - MESSAGE". */
__attribute__((format(printf, 2, 3))) static inline void ok(int pass, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vresult(pass, fmt, ap);
	va_end(ap);
}

/* A skipped test: "ok N - # SKIP WHY". */
__attribute__((format(printf, 1, 2))) static inline void skip(const char *fmt, ...)
{
	va_list ap;

	printf("ok %d - # SKIP ", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

/* A comment line: "# ", INDENT, the message. */
static inline void tap_vnote(const char *indent, const char *fmt, va_list ap)
{
	printf("# %s", indent);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
}

__attribute__((format(printf, 1, 2))) static inline void note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vnote("", fmt, ap);
	va_end(ap);
}

/* An indented comment line saying what went wrong; returns 1 (an error count). */
__attribute__((format(printf, 1, 2))) static inline int tap_diag(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vnote("  ", fmt, ap);
	va_end(ap);
	return 1;
}

/* The plan and a summary line; returns the exit status: 1 if a test failed. */
static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	if (tap_failed)
		printf("# FAILED: %d of %d\n", tap_failed, tap_n);
	else
		printf("# all %d passed\n", tap_n);
	return tap_failed ? 1 : 0;
}

/* A failed test line saying why, tap_done(), and exit 1: the program cannot go on. */
__attribute__((format(printf, 1, 2), noreturn))
static inline void bail_out(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vresult(0, fmt, ap);
	va_end(ap);
	tap_done();
	if (tap_bail_out_line)
		printf("Bail out! see the line above\n");
	exit(1);
}

/* The verb is not implemented by the device (or the provider). */
static inline int is_unsupported(int err)
{
	return err == EOPNOTSUPP || err == ENOSYS || err == EPROTONOSUPPORT;
}

/* The factor of the time limits that catch hangs (never of speed goals): 8 on the debug
 * kernel, which runs a test's work about 6.4 times slower (vm-run --debug exports
 * RRXE_KERNEL=debug to the guest), else 1. */
static inline double time_scale(void)
{
	const char *k = getenv("RRXE_KERNEL");

	return k && !strcmp(k, "debug") ? 8 : 1;
}

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Opens device NAME (NULL or "": the first one). Prints why not and returns NULL. */
static inline struct ibv_context *open_device(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int n, i;

	list = ibv_get_device_list(&n);
	if (!list) {
		fprintf(stderr, "ibv_get_device_list: %s\n", strerror(errno));
		return NULL;
	}
	for (i = 0; i < n; i++) {
		if (name && *name && strcmp(ibv_get_device_name(list[i]), name))
			continue;
		ctx = ibv_open_device(list[i]);
		if (!ctx)
			fprintf(stderr, "ibv_open_device(%s): %s\n",
				ibv_get_device_name(list[i]), strerror(errno));
		break;
	}
	if (i == n) {
		fprintf(stderr, "device %s not found among %d device(s):", name ? name : "(any)", n);
		for (i = 0; i < n; i++)
			fprintf(stderr, " %s", ibv_get_device_name(list[i]));
		fprintf(stderr, "\n");
	}
	ibv_free_device_list(list);
	return ctx;
}

/*
 * The GID index to use: WANT if >= 0, else $RRXE_GID_INDEX, else the first RoCE v2 GID
 * holding an IPv4-mapped address. Fills *gid. Returns -1 if there is none.
 */
static inline int find_gid(struct ibv_context *ctx, uint8_t port, int want, union ibv_gid *gid)
{
	struct ibv_port_attr pa;
	const char *env = getenv("RRXE_GID_INDEX");
	int i;

	if (want < 0 && env && *env)
		want = atoi(env);
	if (want >= 0)
		return ibv_query_gid(ctx, port, want, gid) ? -1 : want;
	if (ibv_query_port(ctx, port, &pa))
		return -1;
	for (i = 0; i < pa.gid_tbl_len; i++) {
		struct ibv_gid_entry e;
		static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

		if (ibv_query_gid_ex(ctx, port, i, &e, 0) || e.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		if (!memcmp(e.gid.raw, v4mapped, sizeof(v4mapped))) {
			*gid = e.gid;
			return i;
		}
	}
	return -1;
}

/* The hw_counter NAME of port PORT of device DEV, or -1 if it cannot be read. */
static inline long long hw_counter(const char *dev, int port, const char *name)
{
	char path[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%d/hw_counters/%s", dev,
		 port, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* What connect_rc_qp() sets: the peer and the attributes the tests choose. */
struct rc_conn {
	uint8_t port;
	int sgid_index;
	union ibv_gid dgid;
	enum ibv_mtu mtu;
	uint32_t dest_qpn, rq_psn, sq_psn;
	unsigned int access;	/* qp_access_flags */
	uint8_t rd_atomic;	/* max_rd_atomic and max_dest_rd_atomic */
	uint8_t min_rnr_timer;	/* the RNR NAK timer this QP answers with */
	uint8_t timeout, retry_cnt, rnr_retry;
};

/*
 * Moves RC QP from RESET through INIT and RTR to RTS, connected as C says. Returns 0, or
 * the error of the first transition that failed and, if STEP, its state in *STEP ("INIT",
 * "RTR" or "RTS").
 */
static inline int connect_rc_qp(struct ibv_qp *qp, const struct rc_conn *c, const char **step)
{
	struct ibv_qp_attr init = {
		.qp_state = IBV_QPS_INIT, .port_num = c->port, .qp_access_flags = c->access,
	};
	struct ibv_qp_attr rtr = {
		.qp_state = IBV_QPS_RTR, .path_mtu = c->mtu, .dest_qp_num = c->dest_qpn,
		.rq_psn = c->rq_psn, .max_dest_rd_atomic = c->rd_atomic,
		.min_rnr_timer = c->min_rnr_timer,
		.ah_attr = { .is_global = 1, .port_num = c->port,
			     .grh = { .dgid = c->dgid, .sgid_index = c->sgid_index,
				      .hop_limit = 64 } },
	};
	struct ibv_qp_attr rts = {
		.qp_state = IBV_QPS_RTS, .timeout = c->timeout, .retry_cnt = c->retry_cnt,
		.rnr_retry = c->rnr_retry, .sq_psn = c->sq_psn, .max_rd_atomic = c->rd_atomic,
	};
	const char *at = "INIT";
	int err;

	err = ibv_modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS);
	if (!err) {
		at = "RTR";
		err = ibv_modify_qp(qp, &rtr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	}
	if (!err) {
		at = "RTS";
		err = ibv_modify_qp(qp, &rts, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					      IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					      IBV_QP_MAX_QP_RD_ATOMIC);
	}
	if (err && step)
		*step = at;
	return err;
}

/*
 * Moves UC QP from RESET through INIT and RTR to RTS on PORT, connected to DEST_QPN at the
 * GID GID (index GID_INDEX of this side) with path MTU MTU and QP access ACCESS, PSNs 0.
 * Returns 0, or the error of the first transition that failed.
 */
static inline int connect_uc_qp(struct ibv_qp *qp, uint8_t port, int gid_index,
				const union ibv_gid *gid, enum ibv_mtu mtu, uint32_t dest_qpn,
				unsigned int access)
{
	struct ibv_qp_attr init = {
		.qp_state = IBV_QPS_INIT, .port_num = port, .qp_access_flags = access,
	};
	struct ibv_qp_attr rtr = {
		.qp_state = IBV_QPS_RTR, .path_mtu = mtu, .dest_qp_num = dest_qpn,
		.ah_attr = { .is_global = 1, .port_num = port,
			     .grh = { .dgid = *gid, .sgid_index = gid_index, .hop_limit = 64 } },
	};
	struct ibv_qp_attr rts = { .qp_state = IBV_QPS_RTS };
	int err;

	err = ibv_modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS);
	if (!err)
		err = ibv_modify_qp(qp, &rtr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN);
	if (!err)
		err = ibv_modify_qp(qp, &rts, IBV_QP_STATE | IBV_QP_SQ_PSN);
	return err;
}

/* One mapping of a /dev/infiniband/uverbsN file in this process. */
struct uverbs_map {
	uintptr_t start, end;
	unsigned long long offset;
};

/*
 * Fills MAPS (at most MAX) with this process's mappings of uverbs character devices, in
 * address order; returns how many, or -1.
 */
static inline int uverbs_maps(struct uverbs_map *maps, int max)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end;
		unsigned long long off;
		char perms[8], path[256] = "";

		if (sscanf(line, "%lx-%lx %7s %llx %*s %*s %255s", &start, &end, perms, &off,
			   path) < 4)
			continue;
		if (!strstr(path, "/dev/infiniband/uverbs"))
			continue;
		if (n < max) {
			maps[n].start = start;
			maps[n].end = end;
			maps[n].offset = off;
		}
		n++;
	}
	fclose(f);
	return n < max ? n : max;
}

/*
 * The mappings in AFTER (NA entries) that are not in BEFORE (NB): written to NEW, count
 * returned.
 */
static inline int uverbs_maps_new(const struct uverbs_map *before, int nb,
				  const struct uverbs_map *after, int na, struct uverbs_map *new)
{
	int i, j, n = 0;

	for (i = 0; i < na; i++) {
		for (j = 0; j < nb; j++)
			if (before[j].start == after[i].start && before[j].offset == after[i].offset)
				break;
		if (j == nb)
			new[n++] = after[i];
	}
	return n;
}

/*
 * Writes the uverbs command CMD (LEN bytes, header included) on CONTEXT's command fd: the
 * legacy write ABI librxe also uses. Returns 0 or an errno.
 */
static inline int uverbs_write(struct ibv_context *context, const void *cmd, size_t len)
{
	ssize_t n = write(context->cmd_fd, cmd, len);

	if (n == (ssize_t)len)
		return 0;
	return n < 0 ? errno : EIO;
}

/*
 * Rings the doorbell of the QP with HANDLE on CONTEXT: the uverbs command POST_SEND with no
 * work requests, as librxe's post_send_db (HANDLE may be stale: the kernel must refuse
 * it). Returns 0 or an errno.
 */
static inline int doorbell_raw(struct ibv_context *context, uint32_t handle)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_send cmd;
	} c = {};
	struct ib_uverbs_post_send_resp resp;

	c.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	c.hdr.in_words = sizeof(c) / 4;
	c.hdr.out_words = sizeof(resp) / 4;
	c.cmd.response = (uintptr_t)&resp;
	c.cmd.qp_handle = handle;
	c.cmd.wqe_size = sizeof(struct ibv_send_wr);
	return uverbs_write(context, &c, sizeof(c));
}

/* Rings QP's doorbell (doorbell_raw). Returns 0 or an errno. */
static inline int doorbell(struct ibv_qp *qp)
{
	return doorbell_raw(qp->context, qp->handle);
}

/*
 * Re-registers MR with FLAGS (IBV_REREG_MR_CHANGE_ACCESS and/or _PD; not a new
 * translation) and ACCESS, PD: the uverbs command REREG_MR written on the command fd, since
 * Debian's librxe (rdma-core 44) has no rereg_mr and ibv_rereg_mr() fails there with
 * EOPNOTSUPP. Returns 0 or an errno.
 */
static inline int rereg_mr_cmd(struct ibv_mr *mr, int flags, struct ibv_pd *pd, int access)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_rereg_mr cmd;
	} c = {};
	struct ib_uverbs_rereg_mr_resp resp;

	c.hdr.command = IB_USER_VERBS_CMD_REREG_MR;
	c.hdr.in_words = sizeof(c) / 4;
	c.hdr.out_words = sizeof(resp) / 4;
	c.cmd.response = (uintptr_t)&resp;
	c.cmd.mr_handle = mr->handle;
	c.cmd.flags = flags;
	c.cmd.pd_handle = pd ? pd->handle : 0;
	c.cmd.access_flags = access;
	return uverbs_write(mr->context, &c, sizeof(c));
}

/* xorshift64*: reproducible from a seed. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static inline void rng_seed(uint64_t seed)
{
	rng_state = seed ? seed : 0x9e3779b97f4a7c15ull;
}

static inline uint64_t rng64(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static inline uint32_t rng32(void)
{
	return rng64() >> 32;
}

/* LEN bytes of the PRNG's output at P. */
static inline void fill_random(uint8_t *p, size_t len)
{
	uint64_t v;

	while (len >= 8) {
		v = rng64();
		memcpy(p, &v, 8);
		p += 8;
		len -= 8;
	}
	v = rng64();
	memcpy(p, &v, len);
}

/* A 32-bit value that is often an edge case: 0, ~0, powers of two and neighbours, random. */
static inline uint32_t rng_nasty32(void)
{
	uint32_t b = 1u << (rng32() % 32);

	switch (rng32() % 8) {
	case 0: return 0;
	case 1: return ~0u;
	case 2: return b;
	case 3: return b - 1;
	case 4: return b + 1;
	case 5: return 0x80000000u | rng32();
	default: return rng32();
	}
}

#endif
