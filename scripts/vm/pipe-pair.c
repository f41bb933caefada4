/* pipe-pair: two processes that hand a byte back and forth through two pipes, for vm-check's
 * fast-wake check (scripts/vm/guest-checks.sh).
 *
 *   pipe-pair N
 *
 * Each of the N round trips is two wake-ups, and each is synchronous: the writer wakes the
 * reader with the kernel's sync flag (a pipe write) and then blocks in its own read, so the
 * woken task can take the writer's CPU. Prints `round trips=N`. Built static by vm-check.sh:
 * the guest has no libc of its own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char *what)
{
	perror(what);
	exit(1);
}

int main(int argc, char **argv)
{
	int there[2], back[2];
	long n, i;
	char c = 0;
	pid_t child;

	if (argc != 2 || (n = atol(argv[1])) <= 0) {
		fprintf(stderr, "usage: pipe-pair N (N > 0)\n");
		return 2;
	}
	if (pipe(there) || pipe(back))
		die("pipe");
	child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		for (i = 0; i < n; i++) {
			if (read(there[0], &c, 1) != 1)
				die("child read");
			if (write(back[1], &c, 1) != 1)
				die("child write");
		}
		return 0;
	}
	for (i = 0; i < n; i++) {
		if (write(there[1], &c, 1) != 1)
			die("write");
		if (read(back[0], &c, 1) != 1)
			die("read");
	}
	if (waitpid(child, NULL, 0) != child)
		die("waitpid");
	printf("round trips=%ld\n", n);
	return 0;
}
