/* wake-probe: a task that sleeps and wakes, and says where each wake-up ran, for vm-check's
 * task-value and fast-wake checks (scripts/vm/guest-checks-author.sh, guest-checks.sh).
 *
 *   wake-probe N GAP_US PMASK [BUSY_US]
 *
 * Sleeps GAP_US microseconds N times; after each wake-up notes the CPU it runs on
 * (sched_getcpu) as P (a PMASK CPU) or E. With BUSY_US, the second half of the wake-ups each
 * spin that long on the CPU before the next sleep: a task whose utilisation, and so its class
 * for the fast path, moves up halfway. Prints one line: `pid=PID seq=EEEPPP...`. Built static
 * by vm-check.sh: the guest has no libc of its own.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: wake-probe N GAP_US PMASK [BUSY_US]\n");
		return 2;
	}
	double busy = argc == 5 ? strtod(argv[4], NULL) : 0;
	int n = atoi(argv[1]);
	useconds_t gap = (useconds_t)strtoul(argv[2], NULL, 10);
	unsigned long long pmask = strtoull(argv[3], NULL, 16);
	if (n <= 0 || n > 4096) {
		fprintf(stderr, "wake-probe: N must be 1..4096\n");
		return 2;
	}
	char *seq = calloc((size_t)n + 1, 1);
	if (!seq)
		return 1;
	for (int i = 0; i < n; i++) {
		usleep(gap);
		int cpu = sched_getcpu();
		seq[i] = (cpu >= 0 && cpu < 64 && ((pmask >> cpu) & 1)) ? 'P' : 'E';
		if (busy > 0 && i >= n / 2) {
			double until = now_us() + busy;

			while (now_us() < until)
				;
		}
	}
	printf("pid=%d seq=%s\n", (int)getpid(), seq);
	return 0;
}
