/* pid-reuse: an old task's pid handed to a new task at once, over and over, for vm-check's
 * pid-reuse check (scripts/vm/guest-checks-author.sh).
 *
 *   pid-reuse ROUNDS WAKES GAP_US
 *
 * Each round forks task A, which sleeps GAP_US microseconds WAKES times and exits with the CPU
 * its last wake-up ran on; as soon as A is reaped, the pid A had is asked for again (through
 * /proc/sys/kernel/ns_last_pid) and task B is forked, which sleeps once and exits with the CPU
 * that wake-up ran on. A's exit reaches a live scheduler only after an RCU grace period, so
 * B's first wake-ups can come before it. Prints one line per round:
 * `A_PID A_LAST_CPU B_PID B_FIRST_CPU`. Built static by vm-check.sh.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* Forks a task that sleeps @gap microseconds @wakes times and exits with its last CPU. */
static pid_t spawn(int wakes, useconds_t gap)
{
	pid_t pid = fork();

	if (pid == 0) {
		int cpu = -1;

		for (int i = 0; i < wakes; i++) {
			usleep(gap);
			cpu = sched_getcpu();
		}
		_exit(cpu < 0 || cpu > 250 ? 255 : cpu);
	}
	return pid;
}

/* Reaps @pid; its exit code (the CPU it reported), or -1. */
static int reap(pid_t pid)
{
	int status;

	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status) == 255 ? -1 : WEXITSTATUS(status);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: pid-reuse ROUNDS WAKES GAP_US\n");
		return 2;
	}
	int rounds = atoi(argv[1]), wakes = atoi(argv[2]);
	useconds_t gap = (useconds_t)strtoul(argv[3], NULL, 10);

	if (rounds <= 0 || wakes <= 0) {
		fprintf(stderr, "pid-reuse: ROUNDS and WAKES must be positive\n");
		return 2;
	}
	for (int r = 0; r < rounds; r++) {
		pid_t a = spawn(wakes, gap);
		int a_cpu = reap(a);
		FILE *f = fopen("/proc/sys/kernel/ns_last_pid", "w");

		if (!f) {
			perror("pid-reuse: /proc/sys/kernel/ns_last_pid");
			return 1;
		}
		fprintf(f, "%d", a - 1);
		fclose(f);
		pid_t b = spawn(1, gap);
		int b_cpu = reap(b);

		printf("%d %d %d %d\n", a, a_cpu, b, b_cpu);
	}
	return 0;
}
