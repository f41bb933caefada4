/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * thread-storm SECS: creates and joins short-lived threads as fast as it can for SECS seconds,
 * as an unprivileged user (it drops to nobody, 65534, when started as root). Any local user
 * can run this; with a large kernel.pid_max every thread has a new id, so a scheduler that
 * keeps per-task state by id sees a new task each time. Prints the number of threads made.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define WAVE 16

static void *nothing(void *arg)
{
	return arg;
}

int main(int argc, char **argv)
{
	long secs = argc > 1 ? atol(argv[1]) : 90;
	unsigned long made = 0, failed = 0;
	pthread_t t[WAVE];
	time_t end;

	if (getuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) {
		perror("thread-storm: dropping to nobody");
		return 1;
	}
	end = time(NULL) + secs;
	while (time(NULL) < end) {
		int n = 0;

		for (int i = 0; i < WAVE; i++) {
			if (pthread_create(&t[n], NULL, nothing, NULL) == 0)
				n++;
			else
				failed++;
		}
		for (int i = 0; i < n; i++)
			pthread_join(t[i], NULL);
		made += n;
	}
	printf("thread-storm: %lu threads in %ld s as uid %d (%lu creations failed)\n", made, secs,
	       (int)getuid(), failed);
	return 0;
}
