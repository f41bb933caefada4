/* turns-busy: workers that wake lightly, then turn CPU-bound, and say where they spun, for
 * vm-check's turns-busy check (scripts/vm/guest-checks-placement.sh).
 *
 *   turns-busy THREADS LIGHT GAP_US SPIN_MS PMASK [READY [TOGETHER]]
 *
 * Starts THREADS workers (threads of this process; with 1, the process itself, its leader).
 * Each runs 100 us and sleeps GAP_US microseconds LIGHT times (light wake-ups, which the fast
 * path places when a CPU is free), then spins SPIN_MS milliseconds, noting its CPU
 * (sched_getcpu) about every 100 us, then wakes 20 times more, each after 1 ms of work and a
 * 1 ms sleep (busy still: wake-ups placed with the class the core gave it while it spun). For
 * each worker one line: `worker N tid=TID p=P of=T`, P of the T looks in the second half of
 * its spin on a PMASK CPU. With READY, each worker appends a line to that file when its light
 * wake-ups are over; with TOGETHER, it then waits (1 ms sleeps, at most 10 s) until the file
 * has that many lines, so that workers of several processes turn busy at the same moment.
 * Built static by vm-check.sh: the guest has no libc of its own.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static int light, spin_ms;
static useconds_t gap_us;
static unsigned long long pmask;
static const char *ready;
static int together;

/* The lines in @path, or -1 when it cannot be read. */
static int lines_in(const char *path)
{
	FILE *f = fopen(path, "r");
	int n = 0, c;

	if (!f)
		return -1;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void busy(double us)
{
	double end = now_us() + us;
	while (now_us() < end)
		;
}

struct worker {
	int n;
	long tid;
	long p, of;
};

static void *run(void *arg)
{
	struct worker *w = arg;
	w->tid = syscall(SYS_gettid);
	for (int i = 0; i < light; i++) {
		busy(100);
		usleep(gap_us);
	}
	if (ready) {
		FILE *f = fopen(ready, "a");
		if (f) {
			fprintf(f, "%d\n", w->n);
			fclose(f);
		}
		for (int i = 0; together > 0 && i < 10000 && lines_in(ready) < together; i++)
			usleep(1000);
	}
	double start = now_us(), half = start + spin_ms * 500.0, end = start + spin_ms * 1000.0;
	for (double t = start; t < end; t = now_us()) {
		busy(100);
		if (t >= half) {
			int cpu = sched_getcpu();
			w->of++;
			if (cpu >= 0 && cpu < 64 && (pmask >> cpu) & 1)
				w->p++;
		}
	}
	for (int i = 0; i < 20; i++) {
		busy(1000);
		usleep(1000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 6 || argc > 8) {
		fprintf(stderr, "usage: turns-busy THREADS LIGHT GAP_US SPIN_MS PMASK [READY [TOGETHER]]\n");
		return 2;
	}
	int threads = atoi(argv[1]);
	light = atoi(argv[2]);
	gap_us = (useconds_t)strtoul(argv[3], NULL, 10);
	spin_ms = atoi(argv[4]);
	pmask = strtoull(argv[5], NULL, 16);
	ready = argc >= 7 ? argv[6] : NULL;
	together = argc == 8 ? atoi(argv[7]) : 0;
	if (threads < 1 || threads > 16 || light < 0 || spin_ms < 2 || pmask == 0) {
		fprintf(stderr, "turns-busy: THREADS 1..16, LIGHT >= 0, SPIN_MS >= 2, PMASK non-zero\n");
		return 2;
	}
	struct worker w[16] = { 0 };
	pthread_t th[16];
	if (threads == 1) {
		run(&w[0]);
	} else {
		for (int i = 0; i < threads; i++) {
			w[i].n = i;
			if (pthread_create(&th[i], NULL, run, &w[i]) != 0) {
				fprintf(stderr, "turns-busy: pthread_create failed\n");
				return 1;
			}
		}
		for (int i = 0; i < threads; i++)
			pthread_join(th[i], NULL);
	}
	for (int i = 0; i < threads; i++)
		printf("worker %d tid=%ld p=%ld of=%ld\n", i, w[i].tid, w[i].p, w[i].of);
	return 0;
}
