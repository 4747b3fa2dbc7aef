/*
 * batch.c: one runner for many HTTP runs.  A fan-out or a pipeline sends
 * hundreds of agent requests at once, and a runner forked per request
 * cost, for each, a fork of the supervisor's address space, a libcurl
 * handle set up from nothing and a connection (bench/README.md, "Fan-out
 * and pipelines").  The supervisor (supervisor/job.c) gives the agent
 * jobs of one execution that run as one user and were claimed together to
 * one runner, which makes every request on one curl multi handle and
 * writes each run's result frame to that run's own result pipe the moment
 * its request ends, then closes the pipe: for the supervisor each run
 * ends at its pipe's end, as before, without waiting for the others.
 *
 * What stays each run's own: its start (its request goes on the multi
 * handle at its not_before_us, never before), its timeout (libcurl's
 * CURLOPT_TIMEOUT_MS, from that start), its host checks, its output, its
 * error and its duration.  What is shared: the process (its pid is every
 * run's), the isolation steps, the user it runs as (one per batch, by
 * construction), the connections libcurl keeps alive between requests to
 * one host, and the CPU, of which each run reports a share: the runner's
 * CPU since the previous results, divided among the runs that ended then.
 *
 * SIGTERM (a shutdown, a fence, the supervisor's death) ends every run
 * still open as interrupted; SIGALRM, a backstop armed past the latest
 * run's start and timeout, ends them as timed out.  A runner that dies
 * leaves its open runs' pipes without a frame: the supervisor decides
 * them from its wait status (crashed), as for any runner.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "http.h"

enum batch_state {
	BATCH_WAIT, /* its start time has not come */
	BATCH_RUN,  /* its request is on the multi handle */
	BATCH_DONE, /* its frame is written, its pipe closed */
};

/* The runs of one batch runner. */
struct batch {
	const struct run_spec *const *specs; /* each run */
	int *fds;                            /* its result pipe */
	int n;                               /* how many */
	enum batch_state *st;                /* where each is */
	struct http_call **calls;            /* its request, or NULL */
	struct result *res;                  /* its result */
	int open;                            /* runs not DONE */
	int64_t cpu_user_us, cpu_sys_us;     /* CPU shared out so far */
	int ended[RUNNER_BATCH_MAX];         /* the runs ending this turn */
	int nended;                          /* how many */
};

/* Notes that run i ended this turn; its result is complete. */
static void
batch_ended(struct batch *b, int i)
{
	b->calls[i] = NULL;
	b->ended[b->nended++] = i;
}

/*
 * Sends the results of the runs that ended this turn, each with its share
 * of the CPU used since the last ones, and closes their pipes.
 */
static void
batch_send(struct batch *b)
{
	int64_t user, sys, rss;

	if (b->nended == 0)
		return;
	http_cpu(&user, &sys, &rss);
	for (int k = 0; k < b->nended; k++) {
		int i = b->ended[k];

		b->res[i].cpu_user_us = (user - b->cpu_user_us) / b->nended;
		b->res[i].cpu_sys_us = (sys - b->cpu_sys_us) / b->nended;
		b->res[i].max_rss_kb = rss;
		(void)child_write(b->specs[i], b->fds[i], &b->res[i]);
		close(b->fds[i]);
		result_clear(&b->res[i]);
		b->st[i] = BATCH_DONE;
		b->open--;
	}
	b->cpu_user_us = user;
	b->cpu_sys_us = sys;
	b->nended = 0;
}

/* Sets res to an error of the runner's own (retryable or not). */
static void
batch_error(struct result *res, int retryable, const char *msg)
{
	res->status = RESULT_ERROR;
	res->retryable = retryable;
	free(res->error);
	res->error = strdup(msg);
}

/*
 * Ends every run still open: how is HTTP_TIMED_OUT or HTTP_STOPPED, or
 * HTTP_DONE with msg the runner's own error (a failing multi handle).
 */
static void
batch_stop(struct batch *b, enum http_how how, const char *msg)
{
	for (int i = 0; i < b->n; i++) {
		if (b->st[i] == BATCH_DONE || b->calls[i] == NULL)
			continue;
		http_end(b->calls[i], b->specs[i], CURLE_FAILED_INIT, how,
		    &b->res[i]);
		if (msg != NULL)
			batch_error(&b->res[i], 1, msg);
		batch_ended(b, i);
	}
	batch_send(b);
}

/*
 * Puts on the multi handle the requests whose start time has come.
 * Returns the earliest start time still to come, or INT64_MAX.
 */
static int64_t
batch_start(struct batch *b)
{
	int64_t now = child_now_us(), next = INT64_MAX;

	for (int i = 0; i < b->n; i++) {
		int64_t at = b->specs[i]->not_before_us;

		if (b->st[i] != BATCH_WAIT)
			continue;
		if (at > now) {
			next = at < next ? at : next;
		} else if (http_begin(b->calls[i]) == 0) {
			b->st[i] = BATCH_RUN;
		} else {
			http_end(b->calls[i], b->specs[i], CURLE_FAILED_INIT,
			    HTTP_DONE, &b->res[i]);
			batch_error(
			    &b->res[i], 1, "cannot start the HTTP request");
			batch_ended(b, i);
		}
	}
	return next;
}

/* The run whose request call is, or -1. */
static int
batch_index(const struct batch *b, const struct http_call *call)
{
	for (int i = 0; i < b->n; i++)
		if (b->calls[i] == call && b->st[i] == BATCH_RUN)
			return i;
	return -1;
}

/* Ends the runs whose transfers libcurl says are over. */
static void
batch_collect(struct batch *b, CURLM *multi)
{
	struct CURLMsg *msg;
	int left, i;

	while ((msg = curl_multi_info_read(multi, &left)) != NULL) {
		if (msg->msg != CURLMSG_DONE ||
		    (i = batch_index(b, http_of(msg->easy_handle))) == -1)
			continue;
		http_end(b->calls[i], b->specs[i], msg->data.result, HTTP_DONE,
		    &b->res[i]);
		batch_ended(b, i);
	}
}

/*
 * Drives every request until all have ended, or SIGALRM or SIGTERM on
 * sfd ends the rest.
 */
static void
batch_loop(struct batch *b, CURLM *multi, int sfd)
{
	int alarm_seen = 0, term = 0, chld = 0, running;
	struct curl_waitfd wfd;
	int64_t next, ms;

	(void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	while (b->open > 0) {
		next = batch_start(b);
		batch_send(b);
		if (curl_multi_perform(multi, &running) != CURLM_OK) {
			batch_stop(
			    b, HTTP_DONE, "libcurl's multi interface failed");
			return;
		}
		batch_collect(b, multi);
		batch_send(b);
		if (b->open == 0)
			return;
		ms = 1000;
		if (next != INT64_MAX) {
			ms = (next - child_now_us() + 999) / 1000;
			ms = ms < 0 ? 0 : ms > 1000 ? 1000 : ms;
		}
		wfd = (struct curl_waitfd){sfd, CURL_WAIT_POLLIN, 0};
		if (curl_multi_poll(multi, &wfd, 1, (int)ms, NULL) !=
		    CURLM_OK) {
			batch_stop(
			    b, HTTP_DONE, "libcurl's multi interface failed");
			return;
		}
		if (wfd.revents != 0 &&
		    child_signals(sfd, &alarm_seen, &term, &chld) == -1)
			term = 1;
		if (alarm_seen || term) {
			batch_stop(b,
			    alarm_seen ? HTTP_TIMED_OUT : HTTP_STOPPED, NULL);
			return;
		}
	}
}

/*
 * Arms the backstop: SIGALRM a second past the latest run's start and
 * timeout, when libcurl should have ended every request.
 */
static void
batch_alarm(const struct batch *b)
{
	int64_t now = child_now_us(), s = 1;

	for (int i = 0; i < b->n; i++) {
		int64_t wait = b->specs[i]->not_before_us - now;
		int64_t t = (wait > 0 ? wait / 1000000 + 1 : 0) +
		    b->specs[i]->timeout + 1;

		s = t > s ? t : s;
	}
	alarm(s < UINT_MAX ? (unsigned)s : UINT_MAX);
}

/* Writes res as every run's result and exits: nothing could start. */
static _Noreturn void
batch_fail(
    const struct run_spec *const *specs, int *fds, int n, struct result *res)
{
	for (int i = 0; i < n; i++)
		(void)child_write(specs[i], fds[i], res);
	_exit(0);
}

/*
 * The batch runner: called right after fork() with the n runs' specs (n
 * at most RUNNER_BATCH_MAX, every one an HTTP run of the same user), the
 * write ends of their result pipes and the supervisor's pid.  Never
 * returns; writes exactly one result frame to each pipe and _exit()s 0.
 */
void
batch_main(const struct run_spec *const *specs, int *fds, int n, pid_t parent)
{
	struct batch b = {.specs = specs, .fds = fds, .n = n, .open = n};
	struct result first;
	const char *bad;
	CURLM *multi;
	int sfd;
	int64_t rss;

	log_prefix("runs %s and %d more", specs[0]->run_id, n - 1);
	result_init(&first);
	if ((sfd = child_isolate(fds, n, parent, &first)) == -1 ||
	    child_drop(specs[0], parent, &first) == -1)
		batch_fail(specs, fds, n, &first);
	b.st = calloc((size_t)n, sizeof(*b.st));
	b.calls = calloc((size_t)n, sizeof(*b.calls));
	b.res = calloc((size_t)n, sizeof(*b.res));
	if (b.st == NULL || b.calls == NULL || b.res == NULL ||
	    (multi = curl_multi_init()) == NULL) {
		batch_error(&first, 1, "cannot set up the HTTP requests");
		batch_fail(specs, fds, n, &first);
	}
	http_cpu(&b.cpu_user_us, &b.cpu_sys_us, &rss);
	for (int i = 0; i < n; i++) {
		result_init(&b.res[i]);
		if ((bad = child_check(specs[i])) != NULL)
			batch_error(&b.res[i], 0, bad);
		else if ((b.calls[i] = http_open(specs[i], multi, &b.res[i])) !=
		    NULL)
			continue;
		batch_ended(&b, i);
	}
	batch_send(&b);
	batch_alarm(&b);
	batch_loop(&b, multi, sfd);
	_exit(0);
}
