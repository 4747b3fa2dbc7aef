/*
 * stamp.c: the command of the benchmark workloads (bench/run).  Appends one
 * line, "ID MICROSECONDS\n" (CLOCK_REALTIME), to FILE with a single
 * O_APPEND write and exits 0: the moment the command actually started,
 * measured the same way whichever scheduler started it.
 *
 * usage: stamp FILE [ID]     ID defaults to $STAMP_ID, then to
 *                            $CRONVISOR_RUN_ID, then to "-"
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	struct timespec ts;
	char line[256];
	const char *id;
	int fd, n;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (argc < 2)
		return 2;
	id = argc > 2 ? argv[2] : getenv("STAMP_ID");
	if (id == NULL)
		id = getenv("CRONVISOR_RUN_ID");
	if (id == NULL)
		id = "-";
	n = snprintf(line, sizeof(line), "%.200s %lld\n", id,
	    (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
	if ((fd = open(argv[1], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
	         0666)) == -1)
		return 1;
	if (write(fd, line, (size_t)n) != n)
		return 1;
	return close(fd) == -1;
}
