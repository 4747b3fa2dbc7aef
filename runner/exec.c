/*
 * exec.c: an exec target, watched from the runner.  The runner starts the
 * target with vfork() (target.c does the rest of its setup: it allocates
 * nothing and changes nothing the runner keeps, so sharing the runner's
 * memory until execve() is safe), then runs one poll loop
 * over two descriptors: the output pipe, drained into a fixed-size tail
 * however much comes, and the signalfd, which brings SIGCHLD (reap),
 * SIGALRM (the run's timeout) and SIGTERM (the supervisor's stop).  The
 * state of the run moves in one direction only:
 *
 *   RUNNING ──timeout, stop, or target exited leaving processes──▶ STOPPING
 *   STOPPING ──kill grace over──▶ KILLING (RUNNING too, if poll fails)
 *   any ──no child left──▶ DONE
 *
 * STOPPING has sent SIGTERM to the whole tree (the target's process group,
 * then every descendant /proc shows, which includes the ones that called
 * setsid() or double-forked: the runner is their subreaper); KILLING sends
 * SIGKILL to whatever is found, again and again, until waitpid() says the
 * runner has no child, which for a subreaper means no descendant at all.
 *
 * Processes the target leaves behind after it exited are killed too, so a
 * run never leaves a process behind, but they do not change the outcome:
 * the target's own exit status is what the job said about itself, and a
 * script that started a stray background process did finish.  They are
 * logged as a warning.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runner.h"

#define EXEC_CHUNK      65536         /* bytes read from the output at once */
#define EXEC_READS      16            /* reads per wakeup, then signals again */
#define EXEC_PIPE_SIZE  (1024 * 1024) /* output pipe buffer asked for */
#define EXEC_KILL_RETRY 10            /* ms between SIGKILL rounds */

enum exec_state {
	EXEC_STATE_RUNNING,  /* the target runs, its output is drained */
	EXEC_STATE_STOPPING, /* SIGTERM sent to the tree, grace running */
	EXEC_STATE_KILLING,  /* SIGKILL until no child is left */
	EXEC_STATE_DONE,     /* no child left, output read to the end */
};

/* One exec run, from the runner's side. */
struct exec_watch {
	enum exec_state state;       /* see the diagram above */
	const struct run_spec *spec; /* the run */
	int sfd;                     /* the runner's signalfd */
	int outfd;                   /* output pipe read end, -1 at EOF */
	int statusfd;                /* status pipe read end */
	pid_t pid;                   /* the target */
	int reaped;                  /* 1: the target was waited for */
	int wstatus;                 /* its wait status, once reaped */
	int no_children;             /* 1: waitpid() said ECHILD */
	int timed_out;               /* 1: SIGALRM came first */
	int interrupted;             /* 1: SIGTERM came first */
	int64_t start;               /* monotonic µs when it called execve() */
	int64_t end;                 /* monotonic µs when it was reaped */
	int64_t grace_end;           /* STOPPING: monotonic µs to SIGKILL */
	struct tail tail;            /* the output's tail */
};

/*
 * The target's process group, to signal in one call, while the target is
 * not reaped: after that its pid, and so the group's id, could belong to
 * a stranger, and /proc finds the group's members anyway.
 */
static pid_t
exec_pgid(const struct exec_watch *w)
{
	return w->reaped ? 0 : w->pid;
}

/*
 * Moves w to state next, signalling the tree as the new state requires.
 * A move against the diagram is a bug in this file: abort rather than
 * report a made-up outcome.
 */
static void
exec_set_state(struct exec_watch *w, enum exec_state next)
{
	int ok = next == EXEC_STATE_DONE ||
	    (w->state == EXEC_STATE_RUNNING && next == EXEC_STATE_STOPPING) ||
	    (w->state != EXEC_STATE_KILLING && next == EXEC_STATE_KILLING);

	if (!ok || w->state == EXEC_STATE_DONE) {
		log_warnx("exec: bad state change %d -> %d", w->state, next);
		abort();
	}
	w->state = next;
	if (next == EXEC_STATE_STOPPING) {
		w->grace_end = clock_us() + w->spec->kill_grace * 1000000;
		tree_signal(exec_pgid(w), SIGTERM);
	} else if (next == EXEC_STATE_KILLING) {
		tree_signal(exec_pgid(w), SIGKILL);
	}
}

/* Reads what the output pipe has, at most EXEC_READS chunks. */
static void
exec_drain(struct exec_watch *w, int reads)
{
	char buf[EXEC_CHUNK];
	ssize_t n;

	while (w->outfd != -1 && reads-- > 0) {
		n = read(w->outfd, buf, sizeof(buf));
		if (n > 0) {
			tail_add(&w->tail, buf, (size_t)n);
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return;
		if (n == -1)
			log_warn("exec: reading the output");
		close(w->outfd);
		w->outfd = -1;
	}
}

/*
 * Reaps every child that has exited: the target (its status is kept) and
 * the orphans of the tree that were reparented to the runner.
 */
static void
exec_reap(struct exec_watch *w)
{
	pid_t pid;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) != 0) {
		if (pid == -1) {
			if (errno == EINTR)
				continue;
			if (errno != ECHILD)
				log_warn("exec: waitpid");
			w->no_children = 1;
			return;
		}
		if (pid == w->pid) {
			w->reaped = 1;
			w->wstatus = st;
			w->end = clock_us();
		} else {
			log_debug(
			    "exec: reaped process %d of the tree", (int)pid);
		}
	}
}

/*
 * Acts on the signals the signalfd brought.  Should the signalfd fail, the
 * run cannot be watched any more: it is stopped, and KILLING reaps on
 * every round without waiting for SIGCHLD.
 */
static void
exec_signals(struct exec_watch *w)
{
	int alarm_seen = 0, term = 0, chld = 0;

	if (child_signals(w->sfd, &alarm_seen, &term, &chld) == -1) {
		log_warn("exec: reading signals");
		w->interrupted = !w->reaped && !w->timed_out;
		if (w->state != EXEC_STATE_KILLING)
			exec_set_state(w, EXEC_STATE_KILLING);
	}
	if (chld || w->state == EXEC_STATE_KILLING)
		exec_reap(w);
	/* Once the target has exited, its deadline no longer matters. */
	if ((alarm_seen || term) && !w->reaped &&
	    w->state == EXEC_STATE_RUNNING) {
		w->timed_out = alarm_seen;
		w->interrupted = !alarm_seen;
		exec_set_state(w, EXEC_STATE_STOPPING);
	}
}

/* Moves w on as time and the reaped children say. */
static void
exec_step(struct exec_watch *w)
{
	int left;

	if (w->no_children) {
		exec_drain(w, INT32_MAX); /* every writer is gone: no wait */
		exec_set_state(w, EXEC_STATE_DONE);
		return;
	}
	switch (w->state) {
	case EXEC_STATE_RUNNING:
		if (!w->reaped)
			break;
		if ((left = tree_count()) != 0)
			log_warnx("the command exited and left %d process(es) "
			          "behind: stopping them",
			    left);
		exec_set_state(w, EXEC_STATE_STOPPING);
		break;
	case EXEC_STATE_STOPPING:
		if (clock_us() >= w->grace_end)
			exec_set_state(w, EXEC_STATE_KILLING);
		break;
	case EXEC_STATE_KILLING:
		tree_signal(exec_pgid(w), SIGKILL); /* what forked meanwhile */
		break;
	case EXEC_STATE_DONE:
		break;
	}
}

/* The poll timeout that wakes the loop for the next deadline. */
static int
exec_timeout(const struct exec_watch *w)
{
	int64_t left;

	if (w->state == EXEC_STATE_KILLING)
		return EXEC_KILL_RETRY;
	if (w->state != EXEC_STATE_STOPPING)
		return -1;
	left = (w->grace_end - clock_us() + 999) / 1000;
	return left < 0 ? 0 : left > 60000 ? 60000 : (int)left;
}

/* The loop: until no process of the run is left. */
static void
exec_loop(struct exec_watch *w)
{
	struct pollfd pfd[2];
	nfds_t n;

	while (w->state != EXEC_STATE_DONE) {
		pfd[0] = (struct pollfd){.fd = w->sfd, .events = POLLIN};
		pfd[1] = (struct pollfd){.fd = w->outfd, .events = POLLIN};
		n = w->outfd != -1 ? 2 : 1;
		if (poll(pfd, n, exec_timeout(w)) == -1 && errno != EINTR) {
			log_warn("exec: poll");
			if (w->state != EXEC_STATE_KILLING)
				exec_set_state(w, EXEC_STATE_KILLING);
		}
		if (n == 2 && pfd[1].revents != 0)
			exec_drain(w, EXEC_READS);
		exec_signals(w);
		exec_step(w);
	}
}

/*
 * Forks the target with its output pipe and status pipe.  Returns 0, or -1
 * with res describing the failure.
 */
static int
exec_start(struct exec_watch *w, struct result *res)
{
	int out[2] = {-1, -1}, st[2] = {-1, -1};
	char msg[256];

	if (pipe2(out, O_CLOEXEC) == -1 || pipe2(st, O_CLOEXEC) == -1)
		goto fail;
	/* A larger pipe means fewer wakeups for a chatty command. */
	(void)fcntl(out[0], F_SETPIPE_SZ, EXEC_PIPE_SIZE);
	if (fcntl(out[0], F_SETFL, O_NONBLOCK) == -1 ||
	    fcntl(st[0], F_SETFL, O_NONBLOCK) == -1)
		goto fail;
	/* Everything is ready: the target starts at its instant. */
	if (child_start(w->spec, w->sfd, res) == -1)
		goto fail_started;
	/*
	 * vfork(), not fork(): a fork copies the mappings of the runner,
	 * which are the supervisor's (libpq, libcurl and theirs), only for
	 * execve() to throw them away; that copy and its teardown were the
	 * largest share of the CPU a short run costs.  The runner waits
	 * until the target has called execve() or exited.  The descriptor
	 * table is the child's own, so its close() and dup2() do not touch
	 * the runner's.
	 */
	if ((w->pid = vfork()) == -1)
		goto fail;
	if (w->pid == 0) {
		close(out[0]);
		close(st[0]);
		target_main(w->spec, out[1], st[1]);
	}
	/* The target has called execve() (or failed): it starts now. */
	w->start = clock_us();
	/* Also here, so that no signal can race the child's own setpgid. */
	(void)setpgid(w->pid, w->pid);
	close(out[1]);
	close(st[1]);
	w->outfd = out[0];
	w->statusfd = st[0];
	return 0;
fail:
	snprintf(
	    msg, sizeof(msg), "cannot start the command: %s", strerror(errno));
	res->status = RESULT_ERROR;
	res->error = strdup(msg);
fail_started: /* res says why */
	for (int i = 0; i < 2; i++) {
		if (out[i] != -1)
			close(out[i]);
		if (st[i] != -1)
			close(st[i]);
	}
	return -1;
}

/* Sets status, exit code, signal and error text from the wait status. */
static void
exec_outcome(const struct exec_watch *w, struct result *res)
{
	char msg[256] = "";
	int st = w->wstatus;

	if (WIFEXITED(st))
		res->exit_code = WEXITSTATUS(st);
	else if (WIFSIGNALED(st))
		res->signal = WTERMSIG(st);
	if (w->timed_out) {
		res->status = RESULT_TIMEOUT;
		snprintf(msg, sizeof(msg), "timed out after %lld s",
		    (long long)w->spec->timeout);
	} else if (w->interrupted) {
		res->status = RESULT_ERROR;
		snprintf(msg, sizeof(msg),
		    "interrupted: the runner was "
		    "told to stop");
	} else if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		res->status = RESULT_OK;
	} else if (WIFEXITED(st)) {
		res->status = RESULT_FAILED;
		snprintf(
		    msg, sizeof(msg), "exited with status %d", WEXITSTATUS(st));
	} else {
		res->status = RESULT_FAILED;
		snprintf(msg, sizeof(msg), "killed by signal %d (%s)",
		    WTERMSIG(st), strsignal(WTERMSIG(st)));
	}
	if (msg[0] != '\0')
		res->error = strdup(msg);
}

/*
 * Fills res once no process of the run is left: the outcome (or the
 * target's own report of why it could not start), duration, resource use
 * of all the processes of the tree, and the output tail.
 */
static void
exec_finish(struct exec_watch *w, struct result *res)
{
	struct target_error te;
	struct rusage ru;

	res->retryable = 1;
	if (read(w->statusfd, &te, sizeof(te)) == (ssize_t)sizeof(te))
		target_describe(w->spec, &te, res);
	else
		exec_outcome(w, res);
	res->duration_us = (w->reaped ? w->end : clock_us()) - w->start;
	if (getrusage(RUSAGE_CHILDREN, &ru) == 0) {
		res->cpu_user_us =
		    (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec;
		res->cpu_sys_us =
		    (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
		res->max_rss_kb = ru.ru_maxrss;
	}
	if (tail_take(&w->tail, res) == -1)
		log_warn("exec: keeping the output");
}

/*
 * Runs the exec target of spec from the runner child: forks it, drains
 * its output, enforces the timeout (the runner's alarm(), read from sfd)
 * and the kill grace, kills and reaps every process of the tree, and
 * fills res (initialised by the caller).  Returns when the runner has no
 * child left.
 */
void
exec_run(const struct run_spec *spec, int sfd, struct result *res)
{
	struct exec_watch w;
	size_t cap = spec->output_tail;

	memset(&w, 0, sizeof(w));
	w.state = EXEC_STATE_RUNNING;
	w.spec = spec;
	w.sfd = sfd;
	w.outfd = w.statusfd = -1;
	if (tail_init(&w.tail,
	        cap < RESULT_OUTPUT_MAX ? cap : RESULT_OUTPUT_MAX) == -1) {
		res->error = strdup("cannot start the command: out of memory");
		return;
	}
	if (exec_start(&w, res) == 0) {
		exec_loop(&w);
		exec_finish(&w, res);
		close(w.statusfd);
	}
	tail_clear(&w.tail);
}
