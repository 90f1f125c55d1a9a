// SPDX-License-Identifier: GPL-2.0
/*
 * Single-core memcpy bandwidth, the physical limit of a soft-RoCE data path on this
 * machine (`make bench` runs it once per boot, pinned to one CPU when it can):
 *
 *   memcpy-bw [-p PASSES]
 *
 * Prints two lines, in MiB/s (perftest's "MB/sec" is MiB/s too):
 *   memcpy_mibs N         64 MiB source to 64 MiB destination: memory bound
 *   memcpy_cached_mibs N  a 64 KiB source to a 64 KiB destination, over and over: cache
 *                         resident, the copy itself
 * Each figure is the best of PASSES (default 5) passes of 64 MiB copied: the best, not
 * the mean, because other work on a shared host can only make a pass slower. Both buffers
 * are written before the first pass, so that no pass pays for page faults.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LARGE (64u << 20)
#define SMALL (64u << 10)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Best MiB/s of PASSES passes, each copying LARGE bytes in blocks of LEN. */
static double best_mibs(char *dst, const char *src, size_t len, int passes)
{
	double best = 0;

	for (int p = 0; p < passes; p++) {
		double t0 = now(), t;

		for (size_t done = 0; done < LARGE; done += len) {
			memcpy(dst, src, len);
			/* The copy must happen: the compiler cannot see who reads dst. */
			__asm__ __volatile__("" : : "r"(dst) : "memory");
		}
		t = now() - t0;
		if (t > 0 && LARGE / t / (1 << 20) > best)
			best = LARGE / t / (1 << 20);
	}
	return best;
}

int main(int argc, char **argv)
{
	int passes = 5, opt;
	char *src, *dst;

	while ((opt = getopt(argc, argv, "p:")) != -1) {
		if (opt != 'p' || (passes = atoi(optarg)) < 1) {
			fprintf(stderr, "usage: memcpy-bw [-p PASSES]\n");
			return 2;
		}
	}
	src = malloc(LARGE);
	dst = malloc(LARGE);
	if (!src || !dst) {
		perror("memcpy-bw: malloc");
		return 1;
	}
	memset(src, 0x5a, LARGE);
	memset(dst, 0, LARGE);
	printf("memcpy_mibs %.0f\n", best_mibs(dst, src, LARGE, passes));
	printf("memcpy_cached_mibs %.0f\n", best_mibs(dst, src, SMALL, passes));
	free(src);
	free(dst);
	return 0;
}
