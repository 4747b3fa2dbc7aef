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
 * The runner of spec, whose result pipe p is open: pid, the helper's
 * runner, or -1 to fork it here.  As spawn_runner() returns; p is closed
 * on failure, its write end on success.
 */
static pid_t
spawn_finish(const struct run_spec *spec, int p[2], pid_t pid, pid_t parent,
    int *result_fd)
{
	int saved;

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

/*
 * Starts a runner for spec: forked by the runner helper for an exec run
 * (zygote.c), else here.  In the parent, returns the runner's pid and
 * sets *result_fd to the read end of its result pipe (close-on-exec and
 * non-blocking; the caller polls it, feeds a result_reader until end of
 * file, closes it and reaps the pid).  Returns -1 with errno set if the
 * pipe or the fork failed; nothing is left open then.  A child forked
 * here never returns from here.  The caller must not hold a lock another
 * thread could need (the child has only the calling thread), and its
 * stdio buffers should be flushed, though the child never flushes them.
 */
pid_t
spawn_runner(const struct run_spec *spec, int *result_fd)
{
	pid_t pid;
	int err;

	spawn_runners(&spec, 1, &pid, result_fd, &err);
	errno = err;
	return pid;
}

/*
 * spawn_runner() for n runs (at most SPAWN_MAX): pids[i], result_fds[i]
 * and errs[i] (the errno of a -1) are what it returns and sets for
 * specs[i].  The helper is asked for every runner before the first
 * answer is read: it forks them back to back, and the supervisor waits
 * once for all of them rather than once for each.
 */
void
spawn_runners(const struct run_spec *const *specs, int n, pid_t *pids,
    int *result_fds, int *errs)
{
	struct zygote_sent sent[SPAWN_MAX];
	int p[SPAWN_MAX][2], perr[SPAWN_MAX];
	pid_t parent = getpid();

	for (int i = 0; i < n && i < SPAWN_MAX; i++) {
		sent[i].go = -1;
		if (pipe2(p[i], O_CLOEXEC) == -1) {
			perr[i] = errno;
			continue;
		}
		perr[i] = 0;
#ifndef CV_TESTING /* the test build's faults are in this file's child */
		(void)zygote_send(specs[i], p[i][1], &sent[i]);
#endif
	}
	for (int i = 0; i < n; i++) {
		pids[i] = -1;
		errs[i] = i < SPAWN_MAX ? perr[i] : EINVAL;
		if (errs[i] != 0)
			continue;
		/* -1: not sent or not forked there; forked here then. */
		pids[i] = spawn_finish(specs[i], p[i], zygote_collect(&sent[i]),
		    parent, &result_fds[i]);
		errs[i] = pids[i] == -1 ? errno : 0;
	}
}
