/*
 * job.c: one run's life in the supervisor, from the claim to the moment its
 * result is in the database.  A job is STARTING until its runner is forked,
 * RUNNING while the runner's pipe is open or the runner is not yet reaped,
 * ENDED once both happened (its verdict decided by outcome.c, its result
 * waiting to be written) and DONE once finish.c wrote it; DONE jobs are
 * freed by the loop at the end of its turn.  job_state() is the only place
 * that moves a job, and it aborts on a move that cannot happen.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "cronvisord.h"

#define JOB_READ 65536 /* bytes read from a result pipe per call */

/*
 * The jobs whose runner was asked of the helper, oldest first, and when
 * its last answer came (CLOCK_MONOTONIC ms).
 */
static struct job *asking, **asking_tail = &asking;
static int64_t asked_ms;

/* Moves j to state `to`; a move the life cycle does not have is fatal. */
void
job_state(struct job *j, enum job_state to)
{
	static const char allowed[4][4] = {
	    /* to: STARTING RUNNING ENDED DONE */
	    [JOB_STARTING] = {0, 1, 1, 0},
	    [JOB_RUNNING] = {0, 0, 1, 0},
	    [JOB_ENDED] = {0, 0, 0, 1},
	    [JOB_DONE] = {0, 0, 0, 0},
	};

	if (!allowed[j->state][to])
		fatalx("run %s: job moved from state %d to %d", j->run_id,
		    j->state, to);
	j->state = to;
}

/* Frees a job and everything it holds; NULL is fine. */
void
job_free(struct job *j)
{
	if (j == NULL)
		return;
	if (j->fd >= 0)
		close(j->fd);
	sched_spec_clear(&j->sb);
	result_reader_clear(&j->rd);
	result_clear(&j->res);
	free(j->name);
	free(j->result);
	free(j->owner);
	free(j->probe_url);
	free(j->fan_target);
	free(j);
}

/* Frees a list of jobs linked by next. */
void
job_free_list(struct job *j)
{
	while (j != NULL) {
		struct job *next = j->next;

		job_free(j);
		j = next;
	}
}

/*
 * Moves j to ENDED and notes when, on the real-time clock: the run's
 * finished_at, which may be written much later (the database away).
 */
static void
job_ended(struct job *j)
{
	j->ended_us = clock_real_us();
	j->ended_ms = clock_ms();
	job_state(j, JOB_ENDED);
	log_debug("run %s schedule \"%s\": ended, its result to be written",
	    j->run_id, j->name);
}

/* Ends j without a runner: a verdict of its own. */
static void
job_fail(
    struct job *j, enum run_status status, int retryable, const char *error)
{
	memset(&j->verdict, 0, sizeof(j->verdict));
	j->verdict.status = status;
	j->verdict.retryable = retryable;
	snprintf(j->verdict.error, sizeof(j->verdict.error), "%s", error);
	finish_text(j->verdict.error, strlen(j->verdict.error));
	job_ended(j);
}

/*
 * Job j's runner started as pid (err: the errno of a -1), its result
 * pipe fd: watched with epfd from now on.  One that could not be forked
 * ends as crashed.
 */
static void
job_started(
    struct job *j, pid_t pid, int fd, int err, int epfd, int64_t kill_grace)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = j};
	char msg[CV_ERRLEN];

	if ((j->pid = pid) == -1) {
		snprintf(msg, sizeof(msg), "cannot fork the runner: %s",
		    strerror(err));
		job_fail(j, RUN_CRASHED, 1, msg);
		return;
	}
	j->fd = fd;
	/* The child has its own copy of what the spec pointed to. */
	sched_spec_clear(&j->sb);
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, j->fd, &ev) == -1)
		fatal("epoll_ctl");
	j->deadline_ms =
	    clock_ms() + (j->spec.timeout + kill_grace + 10) * 1000;
	j->cause = REAP_EXITED;
	job_state(j, JOB_RUNNING);
	log_debug("run %s schedule \"%s\": runner %d started", j->run_id,
	    j->name, (int)j->pid);
}

/* The batch runners not reaped yet (their jobs may all be done). */
static pid_t *batch_pids;
static size_t nbatch_pids, batch_pids_cap;

/*
 * Whether pid, just reaped, was a batch runner's (forgotten now).  Its
 * jobs whose pipes had not ended are reaped by the caller.
 */
int
job_batch_reaped(pid_t pid)
{
	for (size_t i = 0; i < nbatch_pids; i++) {
		if (batch_pids[i] == pid) {
			batch_pids[i] = batch_pids[--nbatch_pids];
			return 1;
		}
	}
	return 0;
}

/*
 * Whether j's request goes to a batch runner: an attempt of an agent job
 * of a fan-out or a pipeline (runner/batch.c).
 */
static int
job_batchable(const struct job *j)
{
	return j->kind == KIND_JOB && !j->adopted && !j->probe &&
	    !j->spawn_error[0] && j->spec.target == RUN_TARGET_HTTP;
}

/* Whether a and b may share a runner: one execution, one user. */
static int
job_same_batch(const struct job *a, const struct job *b)
{
	return strcmp(a->schedule_id, b->schedule_id) == 0 &&
	    a->slot == b->slot && a->repeat == b->repeat &&
	    a->spec.run_as == b->spec.run_as && a->spec.uid == b->spec.uid &&
	    a->spec.gid == b->spec.gid;
}

/*
 * Starts one batch runner for the n jobs of g (at most RUNNER_BATCH_MAX):
 * each job watches its own pipe; all have the runner's pid and the
 * latest of their backstop deadlines (a kill at one would stop them
 * all).
 */
static void
job_start_batch(struct job **g, int n, int epfd, int64_t kill_grace)
{
	const struct run_spec *specs[RUNNER_BATCH_MAX];
	int fds[RUNNER_BATCH_MAX], err;
	int64_t deadline = 0;
	pid_t pid;

	for (int i = 0; i < n; i++)
		specs[i] = &g[i]->spec;
	pid = spawn_batch(specs, n, fds);
	err = errno;
	if (pid > 0) {
		if (nbatch_pids == batch_pids_cap) {
			size_t cap = batch_pids_cap ? batch_pids_cap * 2 : 16;
			pid_t *p = realloc(batch_pids, cap * sizeof(*p));

			if (p == NULL)
				fatal("realloc");
			batch_pids = p;
			batch_pids_cap = cap;
		}
		batch_pids[nbatch_pids++] = pid;
		log_debug("runner %d: a batch of %d runs", (int)pid, n);
	}
	for (int i = 0; i < n; i++) {
		g[i]->batch = 1;
		job_started(
		    g[i], pid, pid > 0 ? fds[i] : -1, err, epfd, kill_grace);
		if (g[i]->deadline_ms > deadline)
			deadline = g[i]->deadline_ms;
	}
	for (int i = 0; i < n && pid > 0; i++)
		g[i]->deadline_ms = deadline;
}

/* Forks here the runners of the n jobs of go, whose specs are specs. */
static void
job_fork(const struct run_spec **specs, struct job **go, int n, int epfd,
    int64_t kill_grace)
{
	int fds[SPAWN_MAX], errs[SPAWN_MAX];
	pid_t pids[SPAWN_MAX];

	if (n == 0)
		return;
	spawn_runners(specs, n, pids, fds, errs);
	for (int t = 0; t < n; t++)
		job_started(go[t], pids[t], fds[t], errs[t], epfd, kill_grace);
}

/*
 * Starts the runners of the n jobs of v together and watches their result
 * pipes with epfd: the agent jobs of an execution that run as one user in
 * batch runners (job_start_batch()), the others each in its own
 * (spawn_ask(), else spawn_runners(), SPAWN_MAX at a time).  A run that
 * cannot be prepared (a bad target) ends at once as failed and not
 * retryable; one whose runner cannot be forked ends as crashed.
 */
void
job_start(struct job *const *v, int n, int epfd, int64_t kill_grace)
{
	const struct run_spec *specs[SPAWN_MAX];
	struct job *go[SPAWN_MAX], *g[RUNNER_BATCH_MAX];
	int k = 0, m;
	char *taken;

	if ((taken = calloc((size_t)n + 1, 1)) == NULL)
		fatal("calloc");
	for (int i = 0; i < n; i++) {
		result_reader_init(&v[i]->rd);
		if (!v[i]->adopted)
			result_init(&v[i]->res);
	}
	for (int i = 0; i < n; i++) {
		if (taken[i] || !job_batchable(v[i]))
			continue;
		m = 0;
		for (int t = i; t < n && m < RUNNER_BATCH_MAX; t++) {
			if (!taken[t] && job_batchable(v[t]) &&
			    job_same_batch(v[i], v[t])) {
				taken[t] = 1;
				g[m++] = v[t];
			}
		}
		job_start_batch(g, m, epfd, kill_grace);
	}
	for (int i = 0; i < n; i++) {
		if (taken[i])
			continue;
		if (v[i]->adopted) {
			/* an agent's report: its verdict was made at the claim
			 */
			job_ended(v[i]);
		} else if (v[i]->spawn_error[0]) {
			job_fail(v[i], RUN_FAILED, 0, v[i]->spawn_error);
		} else if (spawn_ask(&v[i]->spec, &v[i]->ask) == 0) {
			/* The helper forks it; its answer comes to the loop. */
			v[i]->asking = 1;
			*asking_tail = v[i];
			asking_tail = &v[i]->ask_next;
		} else {
			specs[k] = &v[i]->spec;
			go[k++] = v[i];
		}
		if (k == SPAWN_MAX) {
			job_fork(specs, go, k, epfd, kill_grace);
			k = 0;
		}
	}
	job_fork(specs, go, k, epfd, kill_grace);
	free(taken);
}

/*
 * Reads the runner helper's answers that have come, in the order the runs
 * were asked, and starts watching each runner they name (or forks it here
 * when the helper could not).  An answer that has not come SPAWN_REPLY_MS
 * after its request or the answer before it (the helper forks them one
 * after the other) gives the helper up as wedged: the runs that wait on it are
 * forked here.  Returns when an answer is next overdue (CLOCK_MONOTONIC
 * ms), or INT64_MAX when none is awaited.
 */
int64_t
job_answers(int epfd, int64_t now_ms, int64_t kill_grace)
{
	struct job *j;
	pid_t pid;
	int fd = -1, err;

	while ((j = asking) != NULL) {
		if (!spawn_answer(&j->spec, &j->ask, now_ms >= job_asking_due(),
		        &pid, &fd, &err))
			return job_asking_due();
		if ((asking = j->ask_next) == NULL)
			asking_tail = &asking;
		asked_ms = now_ms;
		j->asking = 0;
		j->ask_next = NULL;
		job_started(j, pid, fd, err, epfd, kill_grace);
	}
	return INT64_MAX;
}

/* When the oldest answer awaited from the helper is overdue, or INT64_MAX. */
int64_t
job_asking_due(void)
{
	int64_t from;

	if (asking == NULL)
		return INT64_MAX;
	/* The helper answers in order: from its last answer, if later. */
	from = asking->ask.sent_ms > asked_ms ? asking->ask.sent_ms : asked_ms;
	return from + SPAWN_REPLY_MS;
}

/* Decides the verdict once the runner is reaped and its pipe closed. */
static void
job_check_end(struct job *j)
{
	if (j->fd >= 0)
		return;
	/*
	 * A batch runner writes each run's frame and closes its pipe as the
	 * run's request ends, and exits after the last: a whole frame at the
	 * pipe's end is the run's end, as if its runner had exited 0, even
	 * when the runner died later and was reaped before the pipe's end
	 * was read.
	 */
	if (j->batch && j->fs == FRAME_OK)
		j->wstatus = 0;
	else if (!j->reaped)
		return;
	outcome_decide(
	    j->wstatus, j->cause, j->fs, &j->res, j->frame_err, &j->verdict);
	if (j->agent)
		agent_outcome(j);
	/* Cut at a byte limit, the text may end inside a character. */
	finish_text(j->verdict.error, strlen(j->verdict.error));
	job_ended(j);
}

/* Feeds bytes of the pipe to the frame reader. */
static void
job_feed(struct job *j, const unsigned char *buf, size_t len)
{
	size_t used;
	int r;

	while (len > 0 && j->fs != FRAME_BAD) {
		r = result_reader_feed(&j->rd, buf, len, &used, &j->res,
		    j->frame_err, sizeof(j->frame_err));
		if (r == -1) {
			j->fs = FRAME_BAD;
			return;
		}
		if (r == 1)
			j->fs = FRAME_OK;
		if (r == 0 || used == 0)
			return;
		buf += used;
		len -= used;
	}
}

/*
 * Reads what the runner's pipe has.  At end of file the pipe is closed
 * and the frame's state settled; the job ends if the runner was reaped.
 */
void
job_readable(struct job *j, int epfd)
{
	static unsigned char buf[JOB_READ];
	char err[CV_ERRLEN];
	ssize_t n;

	for (;;) {
		n = read(j->fd, buf, sizeof(buf));
		if (n > 0) {
			job_feed(j, buf, (size_t)n);
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return;
		break; /* end of file, or an error that ends it too */
	}
	epoll_ctl(epfd, EPOLL_CTL_DEL, j->fd, NULL);
	close(j->fd);
	j->fd = -1;
	if (j->fs != FRAME_BAD) {
		int r = result_reader_eof(&j->rd, err, sizeof(err));

		j->fs = r == 1 ? FRAME_OK : r == 0 ? FRAME_NONE : FRAME_BAD;
		if (r == -1)
			snprintf(j->frame_err, sizeof(j->frame_err), "%s", err);
	}
	job_check_end(j);
}

/* Records that waitpid() returned the runner of j with status st. */
void
job_reaped(struct job *j, int st)
{
	j->reaped = 1;
	j->wstatus = st;
	job_check_end(j);
}

/*
 * Enforces the backstop deadline of a running job at now_ms: a runner
 * that outlived its timeout and grace gets SIGTERM (it kills its target's
 * tree and still reports), and SIGKILL if it is still there a grace later.
 * Returns when the job needs looking at next, in CLOCK_MONOTONIC ms.
 */
int64_t
job_deadline(struct job *j, int64_t now_ms, int64_t kill_grace)
{
	if (j->state != JOB_RUNNING || j->reaped)
		return INT64_MAX;
	if (now_ms < j->deadline_ms)
		return j->deadline_ms;
	if (j->cause == REAP_EXITED) {
		log_warnx("run %s schedule \"%s\": runner %d is past its "
		          "deadline; stopping it",
		    j->run_id, j->name, (int)j->pid);
		j->cause = REAP_DEADLINE;
		kill(j->pid, SIGTERM);
	} else {
		kill(j->pid, SIGKILL);
	}
	j->deadline_ms = now_ms + (kill_grace + 2) * 1000;
	return j->deadline_ms;
}

/*
 * Stops a running job, why being REAP_SHUTDOWN (the supervisor shuts down),
 * REAP_LOST (the run is no longer this supervisor's) or REAP_FENCED (its
 * lease is about to run out).  A job already
 * being stopped is left to its deadline.
 */
void
job_interrupt(
    struct job *j, enum reap_cause why, int64_t now_ms, int64_t kill_grace)
{
	if (j->state != JOB_RUNNING || j->reaped || j->cause == REAP_SHUTDOWN ||
	    j->cause == REAP_LOST || j->cause == REAP_FENCED)
		return;
	j->cause = why;
	kill(j->pid, SIGTERM);
	j->deadline_ms = now_ms + (kill_grace + 2) * 1000;
	/*
	 * The runner's other runs stop with it (each says interrupted: it
	 * goes again at once, no retry spent), unless they are being stopped
	 * for a reason of their own.
	 */
	for (struct job *o = sv.jobs; j->batch && o != NULL; o = o->next) {
		if (o == j || !o->batch || o->pid != j->pid ||
		    o->state != JOB_RUNNING || o->reaped ||
		    o->cause != REAP_EXITED)
			continue;
		o->cause = REAP_BATCH;
		o->deadline_ms = j->deadline_ms;
	}
}
