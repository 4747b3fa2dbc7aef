/*
 * child.c: the runner child from fork() to _exit().  It first cuts itself
 * off from the supervisor it is a copy of: default signal dispositions and
 * an empty mask, a session of its own, no descriptor but the result pipe
 * and stderr, no core dumps.  It never touches the supervisor's libpq or
 * hiredis handles (their sockets are simply closed; a PQfinish() here
 * would end the parent's session) and never calls exit(), which would run
 * the supervisor's atexit handlers and flush its stdio buffers a second
 * time.  Then it becomes a child subreaper, so that nothing the target
 * starts escapes it, reads SIGALRM, SIGCHLD and SIGTERM through a
 * signalfd, arms alarm(timeout), runs the target, and writes one result.
 *
 * The runner asks for SIGTERM when the supervisor dies (PR_SET_PDEATHSIG)
 * and treats it as an interruption: the target's tree is stopped as at a
 * timeout.  A run that outlived its supervisor could never be recorded
 * (nobody reads its result pipe any more), and the supervisor that takes
 * over declares it lost and retries the slot, so letting it go on would
 * run the same slot twice, side by side, with one result thrown away.
 * The signal is sent when the forking thread exits; the supervisor has a
 * single thread, which is what makes that the same as the process.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "runner.h"

/*
 * 1 when every disposition is SIG_DFL already: in the runner helper, which
 * set them so once at its start (zygote.c), and in the runners it forks,
 * which spares each runner sixty-odd system calls.
 */
int child_signals_default;

/* Sets every catchable signal's disposition back to SIG_DFL. */
void
child_signals_defaults(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	for (int sig = 1; sig < NSIG; sig++)
		(void)sigaction(sig, &sa, NULL); /* fails for KILL, STOP */
}

/*
 * Sets every catchable signal back to SIG_DFL (handlers and SIG_IGN of the
 * supervisor must not survive: an ignored signal stays ignored across
 * execve) and makes the mask exactly the signals the runner reads through
 * its signalfd, plus SIGPIPE, so that writing to a result pipe whose
 * reader is gone fails with EPIPE instead of killing the runner.  Signals
 * sent from now on wait in the mask until the signalfd exists.
 */
static int
child_signals_reset(sigset_t *fdset)
{
	sigset_t mask;

	if (!child_signals_default)
		child_signals_defaults();
	sigemptyset(fdset);
	sigaddset(fdset, SIGALRM);
	sigaddset(fdset, SIGCHLD);
	sigaddset(fdset, SIGTERM);
	mask = *fdset;
	sigaddset(&mask, SIGPIPE);
	return sigprocmask(SIG_SETMASK, &mask, NULL);
}

/*
 * Closes every descriptor but the n of keep and stderr (the supervisor's
 * log, where log.c writes); stdin and stdout go to /dev/null so that
 * nothing opened later lands on them.  A descriptor of keep below 3 is
 * first moved above 2, and keep[] updated.  Returns 0, or -1.
 */
static int
child_close_fds(int *keep, int n)
{
	int sorted[RUNNER_BATCH_MAX], fd, k, t, was_err = 0;
	unsigned lo = STDERR_FILENO + 1;

	if (n < 1 || n > RUNNER_BATCH_MAX)
		return -1;
	for (k = 0; k < n; k++) {
		if (keep[k] > STDERR_FILENO)
			continue;
		if ((t = fcntl(keep[k], F_DUPFD_CLOEXEC, STDERR_FILENO + 1)) ==
		    -1)
			return -1; /* keep[k] still names the pipe */
		was_err |= keep[k] == STDERR_FILENO;
		keep[k] = t;
	}
	if ((fd = open("/dev/null", O_RDWR | O_CLOEXEC)) == -1)
		return -1;
	if (dup2(fd, STDIN_FILENO) == -1 || dup2(fd, STDOUT_FILENO) == -1 ||
	    (was_err && dup2(fd, STDERR_FILENO) == -1))
		return -1;
	if (fd > STDERR_FILENO)
		close(fd);
	for (k = 0; k < n; k++) { /* sorted: the gaps between them go */
		for (t = k; t > 0 && sorted[t - 1] > keep[k]; t--)
			sorted[t] = sorted[t - 1];
		sorted[t] = keep[k];
	}
	for (k = 0; k < n; k++) {
		if ((unsigned)sorted[k] > lo &&
		    close_range(lo, (unsigned)sorted[k] - 1, 0) == -1)
			break;
		lo = (unsigned)sorted[k] + 1;
	}
	if (k == n && close_range(lo, ~0U, 0) == 0)
		return 0;
	/* No close_range() (Linux < 5.9): close them one by one. */
	long max = sysconf(_SC_OPEN_MAX);
	for (fd = 3, k = 0; fd < (max > 0 && max < INT_MAX ? max : 65536);
	     fd++) {
		while (k < n && sorted[k] < fd)
			k++;
		if (k == n || sorted[k] != fd)
			(void)close(fd);
	}
	return 0;
}

/* Sets res to an error that happened before the target could start. */
static void
child_error(struct result *res, int retryable, const char *what)
{
	char msg[RESULT_ERROR_MAX];

	if (errno != 0)
		snprintf(msg, sizeof(msg), "%s: %s", what, strerror(errno));
	else
		snprintf(msg, sizeof(msg), "%s", what);
	res->status = RESULT_ERROR;
	res->retryable = retryable;
	free(res->error);
	res->error = strdup(msg);
}

/*
 * Whether the supervisor (parent) is gone: then res says so (retryable)
 * and 1 is returned.  Checked after each setting of the parent-death
 * signal, which a supervisor that died just before would never send.
 */
static int
child_orphaned(pid_t parent, struct result *res)
{
	if (getppid() == parent)
		return 0;
	errno = 0;
	child_error(res, 1, "the supervisor exited before the run began");
	return 1;
}

/*
 * The isolation steps, in order, for a runner whose result pipes are the
 * n of fds (which may move, see child_close_fds).  Returns the signalfd,
 * or -1 with res describing what failed.
 */
int
child_isolate(int *fds, int n, pid_t parent, struct result *res)
{
	struct rlimit core = {0, 0};
	sigset_t fdset;
	int sfd;

	errno = 0;
	if (child_signals_reset(&fdset) == -1 || setsid() == -1 ||
	    child_close_fds(fds, n) == -1 ||
	    setrlimit(RLIMIT_CORE, &core) == -1 ||
	    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == -1 ||
	    prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) == -1) {
		child_error(res, 1, "cannot isolate the runner");
		return -1;
	}
	/* Opened after the descriptors were closed, which it survives. */
	if ((sfd = signalfd(-1, &fdset, SFD_NONBLOCK | SFD_CLOEXEC)) == -1) {
		child_error(res, 1, "cannot read the runner's signals");
		return -1;
	}
	/* The supervisor may have died before PDEATHSIG was set. */
	if (child_orphaned(parent, res))
		return -1;
	return sfd;
}

/* Microseconds on CLOCK_REALTIME, the clock slots are kept on. */
int64_t
child_now_us(void)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
}

/*
 * Waits for spec->not_before_us (the supervisor claims a slot a little
 * ahead of its instant, so that the claim's commit and this process's
 * fork are done when it comes) on CLOCK_REALTIME, with a timer slack of
 * 1 ns, until margin µs before it.  For an exec run the margin is
 * RUNNER_SPIN_US: the target process, forked then,
 * watches the clock for the rest and calls execve() at the instant,
 * never before (target.c).  A process woken from sleep takes 0.1-0.3 ms
 * to run again on these machines, and the fork and the target's set-up
 * take their share: both are done before the instant this way.  A
 * SIGTERM while the runner sleeps (the supervisor stops, or died) ends
 * the wait with res saying so: the run did not start and is retried.
 * Returns 0 when the target may be forked, -1 when res is the result.
 */
static int
child_wait(
    const struct run_spec *spec, int sfd, int64_t margin, struct result *res)
{
	struct pollfd pfd = {.fd = sfd, .events = POLLIN};
	struct timespec left;
	int alarm_seen = 0, term = 0, chld = 0;
	int64_t us;

	(void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	for (;;) {
		us = spec->not_before_us - child_now_us() - margin;
		if (us <= 0) {
			/* Back to the inherited slack, for the target. */
			(void)prctl(PR_SET_TIMERSLACK, 0UL, 0, 0, 0);
			return 0;
		}
		/*
		 * poll() may wake 0.1 % of its timeout late, whatever the
		 * slack: a long wait stops short of it, and the loop waits
		 * the rest.
		 */
		if (us > 2000)
			us -= us / 500;
		left.tv_sec = (time_t)(us / 1000000);
		left.tv_nsec = (long)(us % 1000000) * 1000;
		if (ppoll(&pfd, 1, &left, NULL) == -1 && errno != EINTR) {
			child_error(res, 1, "waiting for the run's start time");
			return -1;
		}
		if (child_signals(sfd, &alarm_seen, &term, &chld) == -1) {
			child_error(res, 1, "reading the runner's signals");
			return -1;
		}
		if (term) {
			errno = 0;
			child_error(res, 1,
			    "interrupted: the runner was told to stop before "
			    "the run's start time");
			return -1;
		}
	}
}

/*
 * The start of the target: waits for spec->not_before_us, if the run has
 * one, and arms the run's timeout.  The exec target calls it when its
 * pipes are made, just before the fork.  Returns 0 when the target may
 * start, -1 when res is the result (see child_wait()).
 */
int
child_start(const struct run_spec *spec, int sfd, struct result *res)
{
	/* An exec target watches the clock itself for the last moments. */
	int64_t margin = spec->target == RUN_TARGET_EXEC ? RUNNER_SPIN_US : 0;

	if (spec->not_before_us > 0 && child_wait(spec, sfd, margin, res) == -1)
		return -1;
	alarm(spec->timeout < UINT_MAX ? (unsigned)spec->timeout : UINT_MAX);
	return 0;
}

/*
 * The HTTP target, set by spawn_init(): the runner helper (zygote.c) runs
 * exec targets only and is built without libcurl.
 */
void (*child_http)(const struct run_spec *, int, struct result *);

/*
 * The redis target (redis.c), set by spawn_init() too: the connection is
 * made before the runner gives up its privileges (the configured server
 * may be a unix socket only the supervisor's user may open), the command
 * sent after, at the run's start time.
 */
void *(*child_redis_open)(const struct run_spec *, struct result *);
void (*child_redis_run)(void *conn, const struct run_spec *, struct result *);

/* Returns NULL if spec can be run, else what is wrong with it. */
const char *
child_check(const struct run_spec *spec)
{
	if (spec->timeout < 1)
		return "invalid run: timeout must be at least 1 second";
	if (spec->kill_grace < 0)
		return "invalid run: negative kill grace";
	if (spec->target == RUN_TARGET_EXEC &&
	    (spec->argv == NULL || spec->argv[0] == NULL ||
	        spec->argv[0][0] == '\0'))
		return "invalid run: no command";
	if (spec->target == RUN_TARGET_HTTP && spec->url == NULL)
		return "invalid run: no URL";
	if (spec->target == RUN_TARGET_HTTP && child_http == NULL)
		return "invalid run: this runner has no HTTP client";
	if (spec->target == RUN_TARGET_REDIS &&
	    (spec->url == NULL || spec->redis_command == NULL ||
	        spec->redis_key == NULL))
		return "invalid run: no Redis URL, command or key";
	if (spec->target == RUN_TARGET_REDIS && child_redis_run == NULL)
		return "invalid run: this runner has no Redis client";
	if (spec->target != RUN_TARGET_EXEC &&
	    spec->target != RUN_TARGET_HTTP && spec->target != RUN_TARGET_REDIS)
		return "invalid run: unknown target type";
	return NULL;
}

#ifdef CV_TESTING
/*
 * Test builds only: tests/CMakeLists.txt compiles this file with
 * CV_TESTING into cronvisord-faults, a supervisor that is never installed;
 * the cronvisord that is built and packaged has no such code.  A run of a
 * schedule named "cv-test-fault-MODE" runs its target as usual and then,
 * instead of its one good frame, closes the pipe without a byte (close),
 * writes bytes that are no frame at all (garbage), a frame of the right
 * length whose payload is not msgpack (badpack), or the first half of the
 * real frame (truncate) — and exits 0, as a runner that lied would.  What
 * the supervisor makes of each is tests/hostile.sh's to check.
 */
static void
child_fault(const struct run_spec *spec, int result_fd,
    const unsigned char *buf, size_t len)
{
	static const char prefix[] = "cv-test-fault-";
	static const unsigned char badpack[] = {
	    0, 0, 0, 8, 0xc1, 0xc1, 0xc1, 0xc1, 0xc1, 0xc1, 0xc1, 0xc1};
	static const char garbage[] = "this is not a result frame\n";
	const char *mode;

	if (spec->schedule == NULL ||
	    strncmp(spec->schedule, prefix, sizeof(prefix) - 1) != 0)
		return;
	mode = spec->schedule + sizeof(prefix) - 1;
	log_warnx("test build: result fault \"%s\"", mode);
	if (strcmp(mode, "garbage") == 0)
		(void)io_write_all(result_fd, garbage, sizeof(garbage) - 1);
	else if (strcmp(mode, "badpack") == 0)
		(void)io_write_all(result_fd, badpack, sizeof(badpack));
	else if (strcmp(mode, "truncate") == 0)
		(void)io_write_all(result_fd, buf, len / 2);
	else if (strcmp(mode, "close") != 0)
		return;
	_exit(0);
}
#endif

/*
 * An HTTP run gives up root before its request (it never needs it): the
 * user the supervisor chose (spec->run_as), so no capability, and
 * no_new_privs.  Not dumpable first: a runner forked by the supervisor is
 * a copy of its memory, database_url included, which no process of the
 * same user may read through /proc or ptrace.  A change of credentials
 * clears the parent-death signal: it is set again, and the supervisor
 * checked once more.  Returns 0, or -1 with res the (permanent) error.
 */
int
child_drop(const struct run_spec *spec, pid_t parent, struct result *res)
{
	if (!spec->run_as)
		return 0;
	errno = 0;
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1 ||
	    target_switch(spec) == -1 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
	    prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) == -1) {
		char what[80];

		snprintf(what, sizeof(what), "cannot run as uid %u gid %u",
		    (unsigned)spec->uid, (unsigned)spec->gid);
		child_error(res, 0, what);
		return -1;
	}
	if (child_orphaned(parent, res))
		return -1;
	return 0;
}

/*
 * Writes res as the one result frame of spec's run to result_fd: 0, or -1
 * (logged).
 */
int
child_write(const struct run_spec *spec, int result_fd, struct result *res)
{
	unsigned char *buf;
	size_t len;
	int rc;

	(void)spec; /* read only by the test builds' child_fault() */
	if (result_encode(res, &buf, &len) == -1) {
		log_warn("cannot encode the result");
		return -1;
	}
#ifdef CV_TESTING
	child_fault(spec, result_fd, buf, len);
#endif
	if ((rc = io_write_all(result_fd, buf, len)) == -1)
		log_warn("cannot write the result");
	free(buf);
	return rc;
}

/* Writes res as the one result frame and exits: 0 if it was written. */
static _Noreturn void
child_send(const struct run_spec *spec, int result_fd, struct result *res)
{
	_exit(child_write(spec, result_fd, res) == 0 ? 0 : 2);
}

/*
 * The runner child: called right after fork() with the write end of the
 * result pipe and the supervisor's pid.  Never returns; writes exactly one
 * result frame and _exit()s with 0, or 2 if the frame could not be
 * written.
 */
void
child_main(const struct run_spec *spec, int result_fd, pid_t parent)
{
	struct result res;
	const char *bad;
	int sfd;

	log_prefix("run %s schedule \"%s\"",
	    spec->run_id != NULL ? spec->run_id : "?",
	    spec->schedule != NULL ? spec->schedule : "?");
	result_init(&res);
	if ((sfd = child_isolate(&result_fd, 1, parent, &res)) == -1)
		child_send(spec, result_fd, &res);
	if ((bad = child_check(spec)) != NULL) {
		errno = 0;
		child_error(&res, 0, bad);
		child_send(spec, result_fd, &res);
	}
	/* Where the supervisor has a delegated cgroup (cgroup.c). */
	if (spec->run_id != NULL &&
	    cgroup_enter(CGROUP_ROOT, spec->run_id, &spec->limits) == -1)
		log_warn("cannot give the run its own cgroup; rlimits only");
	if (spec->target == RUN_TARGET_EXEC)
		exec_run(spec, sfd, &res);
	else if (spec->target == RUN_TARGET_REDIS) {
		void *conn = child_redis_open(spec, &res);

		/* conn is not freed: the process ends right after */
		if (conn != NULL && child_drop(spec, parent, &res) == 0 &&
		    child_start(spec, sfd, &res) == 0)
			child_redis_run(conn, spec, &res);
	} else if (child_drop(spec, parent, &res) == 0 &&
	    child_start(spec, sfd, &res) == 0)
		child_http(spec, sfd, &res);
	child_send(spec, result_fd, &res);
}

/*
 * Reads every pending signal from the runner's signalfd and sets *alarm,
 * *term or *chld to 1 for SIGALRM, SIGTERM and SIGCHLD (the flags are not
 * cleared).  Returns 0, or -1 if the signalfd failed.
 */
int
child_signals(int sfd, int *alarm_seen, int *term, int *chld)
{
	struct signalfd_siginfo si;
	ssize_t n;

	while ((n = read(sfd, &si, sizeof(si))) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGALRM)
			*alarm_seen = 1;
		else if (si.ssi_signo == SIGTERM)
			*term = 1;
		else if (si.ssi_signo == SIGCHLD)
			*chld = 1;
	}
	if (n == -1 && errno != EAGAIN && errno != EINTR)
		return -1;
	return 0;
}
