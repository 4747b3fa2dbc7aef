/*
 * forkexec.c: the ceiling of any fork-per-run scheduler on this machine: a
 * bare loop that forks, execs and waits for /bin/true N times, with one or
 * with two children in flight.  Prints runs per second for each.
 *
 * usage: forkexec [N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

static char *true_argv[] = {"/bin/true", NULL};
static char **cmd = true_argv;

static pid_t
start(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		execv(cmd[0], cmd);
		_exit(127);
	}
	if (pid == -1) {
		perror("fork");
		exit(1);
	}
	return pid;
}

/* Runs n children with `inflight` at a time; returns runs per second. */
static double
measure(int n, int inflight)
{
	double t0 = now_s();
	int started = 0, done = 0, st;

	while (started < inflight && started < n) {
		start();
		started++;
	}
	while (done < n) {
		if (wait(&st) == -1) {
			perror("wait");
			exit(1);
		}
		done++;
		if (started < n) {
			start();
			started++;
		}
	}
	return n / (now_s() - t0);
}

int
main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3000;

	if (argc > 2)
		cmd = argv + 2;

	printf("forkexec_1 %.0f\n", measure(n, 1));
	printf("forkexec_2 %.0f\n", measure(n, 2));
	return 0;
}
