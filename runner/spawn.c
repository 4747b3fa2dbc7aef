/*
 * spawn.c: the supervisor's side of a run.  spawn_runner() creates the
 * result pipe and forks; the parent gets the child's pid and the pipe's
 * read end, non-blocking, for its event loop, and the child goes into
 * child_main() and never comes back.  There is no exec of a runner binary:
 * a fork costs a fraction of a millisecond, an exec of a program linked
 * against libcurl several (see ARCHITECTURE.md).  What that costs is
 * discipline in the child, which child.c keeps.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <curl/curl.h>

#include "runner.h"

/*
 * Prepares what every runner inherits: libcurl's global state, which is
 * not safe to set up in many children at once and would be done again in
 * every one of them.  Call it once, before any thread or runner exists.
 * Returns 0, or -1 if libcurl could not be initialised.
 */
int
spawn_init(void)
{
	child_http = http_run;
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

/*
 * Forks a runner for spec.  In the parent, returns the runner's pid and
 * sets *result_fd to the read end of its result pipe (close-on-exec and
 * non-blocking; the caller polls it, feeds a result_reader until end of
 * file, closes it and reaps the pid).  Returns -1 with errno set if the
 * pipe or the fork failed; nothing is left open then.  The child never
 * returns from here.  The caller must not hold a lock another thread
 * could need (the child has only the calling thread), and its stdio
 * buffers should be flushed, though the child never flushes them.
 */
pid_t
spawn_runner(const struct run_spec *spec, int *result_fd)
{
	pid_t parent = getpid(), pid;
	int p[2], saved;

	if (pipe2(p, O_CLOEXEC) == -1)
		return -1;
#ifdef CV_TESTING /* the test build's faults are in this file's child */
	pid = -1;
#else
	pid = zygote_spawn(spec, p[1]); /* -1: fork here */
#endif
	if (pid == -1 && (pid = fork()) == -1) {
		saved = errno;
		close(p[0]);
		close(p[1]);
		errno = saved;
		return -1;
	}
	if (pid == 0) {
		close(p[0]);
		child_main(spec, p[1], parent);
	}
	close(p[1]);
	if (fcntl(p[0], F_SETFL, O_NONBLOCK) == -1)
		log_warn("result pipe of runner %d: O_NONBLOCK", (int)pid);
	*result_fd = p[0];
	return pid;
}
