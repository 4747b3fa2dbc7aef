/*
 * forkcost.c: what one fork() and _exit() of a child cost, in CPU time of
 * the parent (the copy of its mappings) and of the child (their teardown),
 * for a process that has a given set of shared libraries mapped.  Built
 * twice (bench/CMakeLists.txt): forkcost_bare links only libc, and
 * forkcost_libs links what cronvisord links (libpq, libcurl, jansson,
 * msgpack-c, and through them about 35 libraries).  The difference is
 * what each run's runner costs cronvisord before it does anything: its
 * fork from the supervisor and its exit.
 *
 * usage: forkcost_bare|forkcost_libs [N]
 * prints: N, wall µs per fork, parent CPU µs per fork, child CPU µs per
 * fork, and the process's mappings (lines of /proc/self/maps)
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

#ifdef FORKCOST_LIBS
#include <curl/curl.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <msgpack.h>
#endif

static int
maps(void)
{
	FILE *fp = fopen("/proc/self/maps", "r");
	int c, n = 0;

	if (fp == NULL)
		return -1;
	while ((c = getc(fp)) != EOF)
		n += c == '\n';
	fclose(fp);
	return n;
}

int
main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000;
	struct timespec a, b;
	double self0, child0;

#ifdef FORKCOST_LIBS
	/* Touch each library, as cronvisord does, so none is left out. */
	(void)PQlibVersion();
	(void)curl_version();
	(void)jansson_version_str();
	(void)msgpack_version();
#endif
	if (n < 1) {
		fprintf(stderr, "usage: %s [N]\n", argv[0]);
		return 2;
	}
	self0 = cpu_us(RUSAGE_SELF);
	child0 = cpu_us(RUSAGE_CHILDREN);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(0);
		if (pid == -1 || waitpid(pid, NULL, 0) != pid) {
			perror("fork");
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%d %.1f %.1f %.1f %d\n", n,
	    ((double)(b.tv_sec - a.tv_sec) * 1e9 +
	        (double)(b.tv_nsec - a.tv_nsec)) /
	        1e3 / n,
	    (cpu_us(RUSAGE_SELF) - self0) / n,
	    (cpu_us(RUSAGE_CHILDREN) - child0) / n, maps());
	return 0;
}
