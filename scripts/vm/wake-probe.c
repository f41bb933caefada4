/* wake-probe: a task that sleeps and wakes, and says where each wake-up ran, for vm-check's
 * task-value check (scripts/vm/guest-checks-policies.sh).
 *
 *   wake-probe N GAP_US PMASK
 *
 * Sleeps GAP_US microseconds N times; after each wake-up notes the CPU it runs on
 * (sched_getcpu) as P (a PMASK CPU) or E. Prints one line: `pid=PID seq=EEEPPP...`. Built
 * static by vm-check.sh: the guest has no libc of its own.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: wake-probe N GAP_US PMASK\n");
		return 2;
	}
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
	}
	printf("pid=%d seq=%s\n", (int)getpid(), seq);
	return 0;
}
