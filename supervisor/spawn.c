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

#include "spawn.h"

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
	child_redis_open = redis_target_open;
	child_redis_run = redis_target_run;
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
 * specs[i].  Every runner is forked here; the supervisor asks the helper
 * for exec runs first (spawn_ask()).
 */
void
spawn_runners(const struct run_spec *const *specs, int n, pid_t *pids,
    int *result_fds, int *errs)
{
	pid_t parent = getpid();
	int p[2];

	for (int i = 0; i < n; i++) {
		pids[i] = -1;
		if (i >= SPAWN_MAX) {
			errs[i] = EINVAL;
			continue;
		}
		if (pipe2(p, O_CLOEXEC) == -1) {
			errs[i] = errno;
			continue;
		}
		pids[i] = spawn_finish(specs[i], p, -1, parent, &result_fds[i]);
		errs[i] = pids[i] == -1 ? errno : 0;
	}
}

/*
 * Starts one runner for the n HTTP runs of specs (n at most
 * RUNNER_BATCH_MAX; runner/batch.c), each with a result pipe of its own:
 * result_fds[i] is specs[i]'s read end, as spawn_runner() sets it.
 * Returns the runner's pid, every run's, or -1 with errno set and nothing
 * left open.
 */
pid_t
spawn_batch(const struct run_spec *const *specs, int n, int *result_fds)
{
	int w[RUNNER_BATCH_MAX], p[2], made = 0, saved;
	pid_t parent = getpid(), pid = -1;

	if (n < 1 || n > RUNNER_BATCH_MAX) {
		errno = EINVAL;
		return -1;
	}
	for (; made < n; made++) {
		if (pipe2(p, O_CLOEXEC) == -1)
			break;
		result_fds[made] = p[0];
		w[made] = p[1];
	}
	if (made == n && (pid = fork()) == 0) {
		for (int i = 0; i < n; i++)
			close(result_fds[i]);
		batch_main(specs, w, n, parent);
	}
	saved = errno;
	for (int i = 0; i < made; i++) {
		close(w[i]);
		if (pid == -1)
			close(result_fds[i]);
		else if (fcntl(result_fds[i], F_SETFL, O_NONBLOCK) == -1)
			log_warn(
			    "result pipe of runner %d: O_NONBLOCK", (int)pid);
	}
	errno = saved;
	return pid;
}

/*
 * Asks the runner helper to fork the runner of spec (an exec run) and
 * returns 0 without waiting for its answer: the caller watches the
 * helper's socket (zygote_watch()) and calls spawn_answer() for its asks
 * in the order it made them.  Returns -1 (nothing left open) when the
 * helper cannot be asked: the caller forks the runner at once
 * (spawn_runners()).
 */
int
spawn_ask(const struct run_spec *spec, struct spawn_ask *a)
{
#ifdef CV_TESTING /* the test build's faults are in this file's child */
	(void)spec;
	(void)a;
	return -1;
#else
	if (pipe2(a->p, O_CLOEXEC) == -1)
		return -1;
	if (zygote_send(spec, a->p[1], &a->z) == -1) {
		close(a->p[0]);
		close(a->p[1]);
		return -1;
	}
	a->parent = getpid();
	a->sent_ms = clock_ms();
	return 0;
#endif
}

/*
 * The answer to spawn_ask() a, without waiting: 0 while it has not come
 * (and give_up is 0); else 1 with *pid (-1: *err says why), *result_fd as
 * spawn_runner() sets them.  Without an answer from the helper (it is
 * gone, it refused, or give_up: it took more than SPAWN_REPLY_MS and is
 * dropped as wedged) the runner is forked here.
 */
int
spawn_answer(const struct run_spec *spec, struct spawn_ask *a, int give_up,
    pid_t *pid, int *result_fd, int *err)
{
	int pending;
	pid_t got = zygote_collect(&a->z, give_up, &pending);

	if (pending)
		return 0;
	*pid = spawn_finish(spec, a->p, got, a->parent, result_fd);
	*err = *pid == -1 ? errno : 0;
	return 1;
}
