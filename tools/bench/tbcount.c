// SPDX-License-Identifier: GPL-2.0
/*
 * tbcount: a QEMU TCG plugin that counts how often each translation block runs, for
 * `make bench-count` (tools/bench/count). Exact, where a sampled profile estimates:
 * every block the guest executes adds one to its counter (an add that QEMU inlines in
 * the translated code), and a block's instructions are known at translation.
 *
 * The guest asks for the counts through a shared directory DIR (vm-run --share-out):
 * when the file DIR/tbcount.req appears, holding a label, the plugin writes the counts
 * since the previous request to DIR/tbcount.LABEL, one line per block that ran,
 * "vaddr instructions count" (vaddr in hex), and removes the request. The label "reset"
 * only starts a new interval.
 *
 *   qemu-system-x86_64 ... -plugin tbcount.so,dir=DIR     (vm-run --plugin)
 *
 * Built by tools/bench/count with the host's C compiler. QEMU installs no header for
 * plugins (Debian's QEMU 7.2), so the few entry points of its plugin API version 1 used
 * here are declared below, as QEMU's include/qemu/qemu-plugin.h declares them.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
					   qemu_plugin_vcpu_tb_trans_cb_t cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb,
					      enum qemu_plugin_op op, void *ptr, uint64_t imm);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/*
 * A block, by its first instruction's address and its length (a block retranslated
 * after QEMU flushed its code cache gets the same counter). `count` is added to by the
 * translated code of every vCPU thread, without a lock: a sum off by a lost add under
 * a race is good enough for a profile, and make bench-count runs one vCPU
 * (vm-run --icount) anyway.
 */
struct block {
	uint64_t vaddr;
	uint64_t insns;
	uint64_t count;
	uint64_t reported;
	struct block *next;
};

#define HASH_BITS 20
static struct block *table[1u << HASH_BITS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char dir[2048];

static unsigned int hash(uint64_t vaddr, uint64_t insns)
{
	return (unsigned int)(((vaddr ^ (insns << 40)) * 0x9e3779b97f4a7c15ull) >>
			      (64 - HASH_BITS));
}

/* Translation: finds or adds the block's counter and has the code add to it. */
static void translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t vaddr = qemu_plugin_tb_vaddr(tb), insns = qemu_plugin_tb_n_insns(tb);
	unsigned int h = hash(vaddr, insns);
	struct block *b;

	(void)id;
	pthread_mutex_lock(&lock);
	for (b = table[h]; b; b = b->next)
		if (b->vaddr == vaddr && b->insns == insns)
			break;
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (!b) {
			fprintf(stderr, "tbcount: out of memory\n");
			abort();
		}
		b->vaddr = vaddr;
		b->insns = insns;
		b->next = table[h];
		table[h] = b;
	}
	pthread_mutex_unlock(&lock);
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->count, 1);
}

/*
 * Writes the counts since the last request to DIR/tbcount.LABEL (none for "reset").
 * A file that cannot be written is left out (the guest waits for it in vain and fails
 * the run), and so is a file written only in part.
 */
static void report(const char *label)
{
	char path[2200], tmp[2300];
	FILE *f = NULL;
	struct block *b;
	uint64_t now;
	unsigned int i;
	int bad;

	if (strcmp(label, "reset")) {
		snprintf(path, sizeof(path), "%s/tbcount.%s", dir, label);
		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		f = fopen(tmp, "w");
		if (!f) {
			fprintf(stderr, "tbcount: %s: cannot write\n", tmp);
			return;
		}
	}
	pthread_mutex_lock(&lock);
	for (i = 0; i < (1u << HASH_BITS); i++)
		for (b = table[i]; b; b = b->next) {
			now = __atomic_load_n(&b->count, __ATOMIC_RELAXED);
			if (f && now != b->reported)
				fprintf(f, "%" PRIx64 " %" PRIu64 " %" PRIu64 "\n", b->vaddr,
					b->insns, now - b->reported);
			b->reported = now;
		}
	pthread_mutex_unlock(&lock);
	if (f) {
		bad = ferror(f);
		bad |= fclose(f);
		if (bad || rename(tmp, path)) {
			fprintf(stderr, "tbcount: %s: write failed\n", tmp);
			unlink(tmp);
		}
	}
}

/* Looks for a request every 20 ms. */
static void *requests(void *arg)
{
	char req[2100], label[64];
	FILE *f;

	(void)arg;
	snprintf(req, sizeof(req), "%s/tbcount.req", dir);
	for (;;) {
		usleep(20000);
		f = fopen(req, "r");
		if (!f)
			continue;
		if (fscanf(f, "%63[A-Za-z0-9_.-]", label) != 1)
			label[0] = 0;
		fclose(f);
		/* Empty: the guest is still writing it. */
		if (!label[0])
			continue;
		report(label);
		unlink(req);
	}
	return NULL;
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id,
							       const void *info, int argc,
							       char **argv)
{
	pthread_t t;
	int i;

	(void)info;
	for (i = 0; i < argc; i++)
		if (!strncmp(argv[i], "dir=", 4))
			snprintf(dir, sizeof(dir), "%s", argv[i] + 4);
	if (!dir[0]) {
		fprintf(stderr, "tbcount: usage: -plugin tbcount.so,dir=DIR\n");
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, translated);
	if (pthread_create(&t, NULL, requests, NULL))
		return -1;
	pthread_detach(t);
	return 0;
}
