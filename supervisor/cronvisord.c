/*
 * cronvisord.c: the supervisor's process: options, configuration, and the
 * one event loop.  The loop waits in epoll on a signalfd (SIGCHLD, SIGTERM,
 * SIGINT, SIGHUP), a timerfd armed for the earliest next_run_at in the
 * database (absolute, on the real-time clock, so a slot fires within a
 * millisecond or two of its time, not on a polling tick), the database
 * connection (LISTEN cronvisor_wake: a schedule changed) and one result
 * pipe per live runner.  Each turn it claims what is due while there is
 * capacity, forks runners, writes finished results, heartbeats and
 * declares the runs of dead supervisors lost.  Nothing in the loop sleeps
 * or waits on the network: the database work runs as tasks (task.c) whose
 * statements wait in this loop's epoll, with a time limit, so that the
 * loop goes on reaping runners, reading their results and enforcing
 * their deadlines while the database is slow, silent or away; and a
 * supervisor that cannot renew its lease stops its runs before a peer may
 * take them over (fence()).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cronvisord.h"

#define DB_BACKOFF_MIN   500         /* ms before the first reconnect */
#define DB_BACKOFF_MAX   30000       /* ms between reconnects at most */
#define DB_REDO_MAX      5000        /* ms after a failed statement at most */
#define FENCE_SLACK_MS   1000        /* the runner's kill and reap, in ms */
#define GATHER_MS        5           /* results gathered into one write, ms */
#define GATHER_MAX_MS    20          /* and at most that long */
#define GATHER_BUSY_MS   100         /* with a backlog, at most that long */
#define GATHER_BUSY_RUNS 16          /* or until that many wait (busy_runs) */
#define POLL_MS          30000       /* claim at least this often, in ms */
#define PROBE_POLL_MS    30000       /* look for due probes this often, ms */
#define PROBE_BUSY_MS    1000        /* or that soon when more are due */
#define PROBES_MAX       8           /* health probes in flight at most */
#define TRIGGER_POLL_MS  250         /* while a trigger request waits, in ms */
#define IDLE_POLL_MS     100         /* due, but the last claim took none */
#define REPORT_GATHER_MS 10          /* agents' reports gathered that long */
#define TAG_SIGNAL       ((void *)1) /* epoll data of the signalfd */
#define TAG_TIMER        ((void *)2) /* of the timerfd */
#define TAG_HELPER       ((void *)4) /* of the runner helper's socket */

struct supervisor sv;

static void
usage(FILE *fp)
{
	fprintf(fp,
	    "usage: cronvisord [-dn] [-f FILE]\n"
	    "  -f FILE  configuration file (default %s)\n"
	    "  -n       check the configuration, print it and exit\n"
	    "  -d       log debug messages\n",
	    CONFIG_PATH);
}

/* Runs still ours, in any state but DONE. */
static int
jobs_live(void)
{
	int n = 0;

	for (struct job *j = sv.jobs; j; j = j->next)
		n += j->state != JOB_DONE;
	return n + sv.nfresh;
}

/*
 * How many results make a batch under a backlog: GATHER_BUSY_RUNS, and at
 * most a quarter of max_concurrent_runs (with 4 runs at most, each is
 * written as it ends: a batch of 16 would never come).
 */
static int
busy_runs(void)
{
	int64_t q = sv.cf.max_concurrent_runs / 4;

	return q < 1 ? 1 : q < GATHER_BUSY_RUNS ? (int)q : GATHER_BUSY_RUNS;
}

/*
 * When the results that wait are to be written (CLOCK_MONOTONIC ms), or
 * INT64_MAX if none waits: once no other run has ended for GATHER_MS, or
 * GATHER_MAX_MS after the first of them ended, or at once when no other
 * run is in flight (nothing more could join them).  The runs of a burst end
 * within milliseconds of each other, and their results are written in one
 * transaction rather than one by one as they trickle in (the write no
 * longer holds the loop while the others end).  A run's finished_at is
 * when it ended, whenever its result is written.
 */
static int64_t
jobs_ended(void)
{
	int64_t first = INT64_MAX, last = 0;
	int n = 0, open = 0;

	for (struct job *j = sv.jobs; j; j = j->next) {
		open += j->state == JOB_RUNNING || j->state == JOB_STARTING;
		if (j->state != JOB_ENDED)
			continue;
		n++;
		if (j->ended_ms < first)
			first = j->ended_ms;
		if (j->ended_ms > last)
			last = j->ended_ms;
	}
	if (first == INT64_MAX)
		return INT64_MAX;
	/* Nothing else runs (a batch runner's runs ended together): now. */
	if (open == 0)
		return first;
	/*
	 * With a backlog (the last claim took all it could: more is due than
	 * there is room for), the runs of a burst end one by one, a few ms
	 * apart, and written as they end each would cost a transaction of
	 * its own and a claim of one row.  They are gathered into batches
	 * instead, up to GATHER_BUSY_RUNS or GATHER_BUSY_MS: the slots wait
	 * in the queue either way, and the database's and this loop's CPU
	 * goes to the runs.
	 */
	if (sv.backlog)
		return n >= busy_runs() ? first : first + GATHER_BUSY_MS;
	return last + GATHER_MS < first + GATHER_MAX_MS ? last + GATHER_MS
	                                                : first + GATHER_MAX_MS;
}

/*
 * The claim time ms (CLOCK_REALTIME ms), moved 2 ms past the start time of
 * a run of ours that is within a millisecond of it: a claim costs both
 * cores a moment (a transaction, a fork), and a command waiting for its
 * instant (claimed claim_ahead_ms before) starts late when they are busy.
 * Slots a multiple of claim_ahead_ms apart would otherwise meet that way
 * every time.  The next claim is claim_ahead_ms ahead, 2 ms less is
 * still ahead.
 */
static int64_t
away_from_starts(int64_t ms)
{
	int moved = 1;

	for (int round = 0; moved && round < 16; round++) {
		moved = 0;
		for (struct job *j = sv.jobs; j; j = j->next) {
			int64_t at = j->spec.not_before_us / 1000;

			if (j->state == JOB_RUNNING && at > 0 && ms >= at - 1 &&
			    ms <= at + 1) {
				ms = at + 2;
				moved = 1;
			}
		}
	}
	return ms;
}

/*
 * Arms the timerfd for the earliest due schedule (rounded up to the
 * millisecond: a timer that fired a fraction of a millisecond before it
 * would find nothing due, and be armed again in the past, round after
 * round until it was), or disarms it: when
 * there is none, and when every run slot is taken (a due schedule would
 * fire the timer again and again; a run that ends asks for a claim).
 * A trigger-now request still pending after a claim with room to spare
 * was skipped because another transaction held it or its schedule (a
 * peer's claim or finish, the API): its NOTIFY is spent, so the timer
 * looks again TRIGGER_POLL_MS later rather than at the 30 s safety net.
 */
static void
arm_timer(void)
{
	struct itimerspec its = {{0, 0}, {0, 0}};
	struct db_rows *rows = NULL;
	struct timespec now;
	const char *v, *p[3];
	char err[CV_ERRLEN], ahead[24], maxreq[24], omax[24];
	int64_t ms, soon;

	if (jobs_live() >= sv.cf.max_concurrent_runs)
		goto set;

	/*
	 * The earliest next_run_at, claim_ahead_ms earlier when nothing of
	 * that schedule is in flight (claim.c claims it ahead only then).
	 */
	snprintf(ahead, sizeof(ahead), "%lld", (long long)sv.cf.claim_ahead_ms);
	snprintf(maxreq, sizeof(maxreq), "%lld",
	    (long long)sv.cf.max_concurrent_requests);
	snprintf(omax, sizeof(omax), "%lld", (long long)owner_max(&sv.cf));
	p[0] = ahead;
	p[1] = maxreq;
	p[2] = omax;
	rows = db_query(sv.db, SQL_cronvisord_next_due, 3, p, err, sizeof(err));
	if (rows == NULL) {
		db_failed(err);
		return;
	}
	ms = (v = db_rows_value(rows, 0, 0)) != NULL ? strtoll(v, NULL, 10)
	                                             : INT64_MAX;
	if (strcmp(db_rows_value(rows, 0, 1), "t") == 0) {
		clock_gettime(CLOCK_REALTIME, &now);
		soon = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 +
		    TRIGGER_POLL_MS;
		if (soon < ms)
			ms = soon;
	}
	if (ms != INT64_MAX) {
		/*
		 * Due, yet the last claim took nothing: what is due waits for
		 * a limit (an owner's runs in flight) whose end asks for a
		 * claim anyway; look again a little later, not at once.
		 */
		clock_gettime(CLOCK_REALTIME, &now);
		soon = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
		if (sv.idle_claim && ms <= soon)
			ms = soon + IDLE_POLL_MS;
		ms = away_from_starts(ms);
		its.it_value.tv_sec = ms / 1000;
		its.it_value.tv_nsec = (long)(ms % 1000) * 1000000 + 1;
	}
	db_rows_free(rows);
set:
	if (timerfd_settime(sv.timerfd, TFD_TIMER_ABSTIME, &its, NULL) == -1)
		fatal("timerfd_settime");
}

/*
 * Moves the jobs the last claims left in sv.fresh to ours and starts their
 * runners: in the loop, on its own stack, never in a task.
 */
static void
start_fresh(void)
{
	struct job **v, *j, *jobs = sv.fresh;
	int n = 0;

	for (j = jobs; j != NULL; j = j->next)
		n++;
	if (n == 0)
		return;
	if ((v = calloc((size_t)n, sizeof(*v))) == NULL)
		fatal("calloc");
	sv.fresh = NULL;
	sv.nfresh = 0;
	for (n = 0; (j = jobs) != NULL; n++) {
		jobs = j->next;
		j->next = sv.jobs;
		sv.jobs = j;
		v[n] = j;
	}
	job_start(v, n, sv.epfd, sv.cf.kill_grace_seconds);
	free(v);
}

static void heartbeat(int64_t now_ms);

/*
 * Before each fan-out expansion of a claim: the heartbeat when due.  -1
 * when the database went away or the lease is fenced: no more of them.
 */
static int
expand_between(void)
{
	if (clock_ms() >= sv.heartbeat_ms)
		heartbeat(clock_ms());
	return sv.db_down || sv.fenced ? -1 : 0;
}

/*
 * Claims trigger-now requests and due schedules while there is capacity,
 * and leaves their runs in sv.fresh for the loop to start (it starts them
 * while the next claim runs); a claim that takes fewer rows than it may
 * means nothing more is pending.  A heartbeat that comes due meanwhile
 * goes first.
 */
static void
claim(void)
{
	char err[CV_ERRLEN];
	struct job *jobs, **tail;
	int room, limit, n;

	sv.want_claim = 0;
	while ((room = (int)sv.cf.max_concurrent_runs - jobs_live()) > 0) {
		limit =
		    room < sv.cf.claim_batch ? room : (int)sv.cf.claim_batch;
		if ((n = claim_due(sv.db, &sv.cf, sv.id, limit, &jobs, err,
		         sizeof(err))) == -1) {
			db_failed(err);
			return;
		}
		sv.idle_claim = n == 0;
		/*
		 * Fan-out slots expand now (their runs then wait, off the
		 * list).  The loop may start sv.fresh meanwhile (the task
		 * waits on the database): the claim's runs stay in
		 * sv.expanding, where a heartbeat between two expansions
		 * finds them ours.
		 */
		sv.expanding = jobs;
		if (fanout_expand(sv.db, &sv.cf, sv.id, &sv.expanding,
		        expand_between, err, sizeof(err)) == -1)
			db_failed(err);
		jobs = sv.expanding;
		sv.expanding = NULL;
		for (tail = &jobs; *tail != NULL; tail = &(*tail)->next)
			sv.nfresh++;
		*tail = sv.fresh;
		sv.fresh = jobs;
		sv.backlog = n >= limit;
		if (n < limit || sv.stopping || sv.fenced)
			break;
		if (clock_ms() >= sv.heartbeat_ms) {
			heartbeat(clock_ms());
			if (sv.db_down || sv.fenced)
				return;
		}
	}
	arm_timer();
}

/* A result written (or fenced out): logged, and the job is done. */
static void
finished(struct job *j)
{
	log_info("run %s schedule \"%s\": %s%s%s", j->run_id, j->name,
	    run_status_name(j->verdict.status), j->verdict.error[0] ? ": " : "",
	    j->verdict.error);
	prune_note(j->schedule_id);
	job_state(j, JOB_DONE);
	sv.want_claim = 1;
}

/* Orders jobs by schedule id, the order rows of schedules are locked in. */
static int
by_schedule(const void *a, const void *b)
{
	return strcmp((*(struct job *const *)a)->schedule_id,
	    (*(struct job *const *)b)->schedule_id);
}

/*
 * Writes the results of all ended jobs in one transaction: one WAL flush
 * for all of them, and none is acknowledged (done) before that commit.
 * They are written in schedule id order, the order in which the API's
 * batch delete locks schedules too, so that two transactions that lock
 * several of them never wait for each other in a circle.  Returns 1 when
 * they are written, 0 when there were fewer than two (or a database error
 * other than a lost connection: the caller writes them one by one, to
 * learn which one is refused), -1 when the connection is lost.
 */
static int
finish_batch(void)
{
	char err[CV_ERRLEN];
	struct job *j, **v;
	size_t n = 0, i;

	for (j = sv.jobs; j; j = j->next)
		n += j->state == JOB_ENDED && !j->probe;
	if (n < 2 || (v = calloc(n, sizeof(*v))) == NULL)
		return 0;
	for (i = 0, j = sv.jobs; j; j = j->next)
		if (j->state == JOB_ENDED && !j->probe)
			v[i++] = j;
	qsort(v, n, sizeof(*v), by_schedule);
	if (db_begin(sv.db, err, sizeof(err)) == -1)
		goto fail;
	if (finish_runs_in(sv.db, sv.id, v, n, err, sizeof(err)) == -1) {
		db_rollback(sv.db);
		goto fail;
	}
	if (db_commit(sv.db, err, sizeof(err)) == -1)
		goto fail;
	for (i = 0; i < n; i++)
		finished(v[i]);
	free(v);
	return 1;
fail:
	free(v);
	if (db_error(sv.db) == DB_ERR_CONNECTION) {
		db_failed(err); /* they wait for the database */
		return -1;
	}
	log_warnx("database: %s; writing these results one by one", err);
	return 0;
}

/*
 * Writes the health probes that ended, in one statement; on a database
 * error they wait.  0, or -1 when the connection is lost.
 */
static int
probes_ended(void)
{
	struct job *v[PROBES_MAX], *j;
	char err[CV_ERRLEN];
	size_t n = 0;

	for (j = sv.jobs; j && n < PROBES_MAX; j = j->next)
		if (j->state == JOB_ENDED && j->probe)
			v[n++] = j;
	if (n == 0 || health_write(sv.db, v, n, err, sizeof(err)) == 0)
		return 0;
	db_failed(err);
	return db_error(sv.db) == DB_ERR_CONNECTION ? -1 : 0;
}

/* Writes the results of ended jobs; on a database error they wait. */
static void
finish_ended(void)
{
	char err[CV_ERRLEN];
	int r;

	if (probes_ended() == -1 || (r = finish_batch()) != 0)
		return;
	for (struct job *j = sv.jobs; j; j = j->next) {
		if (j->state != JOB_ENDED || j->probe)
			continue;
		if (finish_run(sv.db, sv.id, j, 0, err, sizeof(err)) == -1) {
			if (db_error(sv.db) == DB_ERR_CONNECTION) {
				db_failed(err); /* it waits for the database */
				return;
			}
			if (db_error(sv.db) == DB_ERR_RETRY) {
				/* A deadlock or serialization failure: later.
				 */
				log_warnx("run %s: %s; its result is written "
				          "again at the next turn",
				    j->run_id, err);
				continue;
			}
			/*
			 * Refused for what it says, not for what it is: keep
			 * the outcome without its text rather than stall.
			 */
			log_warnx("run %s: %s; recording it without its output",
			    j->run_id, err);
			if (finish_run(sv.db, sv.id, j, 1, err, sizeof(err)) ==
			    -1) {
				db_failed(err);
				if (db_error(sv.db) == DB_ERR_CONNECTION)
					return;
				log_warnx("run %s: its result cannot be "
				          "recorded; the run stays running "
				          "until declared lost",
				    j->run_id);
			}
		}
		finished(j);
	}
}

/* Frees the jobs that are DONE, at the end of a turn. */
static void
sweep(void)
{
	struct job **pp = &sv.jobs, *j;

	while ((j = *pp) != NULL) {
		if (j->state == JOB_DONE) {
			*pp = j->next;
			job_free(j);
		} else {
			pp = &j->next;
		}
	}
}

/* The waitpid() loop: every child reaped, mapped to its job. */
static void
reap(void)
{
	struct job *j;
	pid_t pid;
	int st, n;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		/* First: a helper's pid is never a job's (both unreaped). */
		if (zygote_reaped(pid, st) || events_reaped(pid, st))
			continue;
		/* A batch runner's pid is several jobs' (runner/batch.c). */
		n = 0;
		for (j = sv.jobs; j != NULL; j = j->next) {
			if (j->pid != pid || j->state != JOB_RUNNING)
				continue;
			job_reaped(j, st);
			if (!j->batch)
				cgroup_remove(j->run_id);
			n++;
		}
		if (!job_batch_reaped(pid) && n == 0)
			log_warnx("reaped unknown child %d", (int)pid);
	}
}

/*
 * Reads the configuration again on SIGHUP (between tasks: a task may hold
 * pointers into it); a bad file changes nothing.
 */
static void
reload(void)
{
	struct config cf;
	char err[CV_ERRLEN];

	config_defaults(&cf);
	if (config_load(&cf, sv.config_path, 0, err, sizeof(err)) == -1) {
		log_warnx("reload: %s; keeping the running configuration", err);
		config_clear(&cf);
		return;
	}
	if (strcmp(cf.database_url, sv.cf.database_url) != 0)
		log_warnx("reload: database_url changes need a restart");
	free(cf.database_url);
	cf.database_url = sv.cf.database_url;
	sv.cf.database_url = NULL;
	config_clear(&sv.cf);
	sv.cf = cf;
	log_setlevel(sv.cf.log_level);
	events_restart(); /* it reads the file again */
	log_info("configuration reloaded");
	sv.want_claim = 1;
}

/* Handles what the signalfd delivered. */
static void
signals(void)
{
	struct signalfd_siginfo si;

	while (read(sv.sigfd, &si, sizeof(si)) == sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGCHLD:
			reap();
			break;
		case SIGHUP:
			sv.want_reload = 1;
			break;
		case SIGTERM:
		case SIGINT:
			if (sv.stopping) {
				log_warnx("second stop signal: exiting now");
				exit(1);
			}
			sv.stopping = 1;
			sv.stop_ms =
			    clock_ms() + sv.cf.shutdown_grace_seconds * 1000;
			log_info("stopping: %d runs in flight, grace %llds",
			    jobs_live(),
			    (long long)sv.cf.shutdown_grace_seconds);
			break;
		}
	}
}

/*
 * A NOTIFY cronvisor_wake: a schedule's next_run_at moved or a trigger-now
 * request came; claim at the next turn, whatever the timer says.
 */
static void
wake(const char *channel, const char *payload, void *arg)
{
	(void)channel;
	(void)arg;
	/* An agent's health URL was set: probe it now (health.c). */
	if (payload != NULL && strcmp(payload, "health") == 0)
		sv.probe_ms = 0;
	/*
	 * An agent's report: the claim that takes it back comes
	 * REPORT_GATHER_MS later, with the reports that came meanwhile (one
	 * claim per report made the supervisor the callbacks' bottleneck).
	 */
	if (payload != NULL && strcmp(payload, "report") == 0) {
		if (sv.report_ms == 0)
			sv.report_ms = clock_ms() + REPORT_GATHER_MS;
		return;
	}
	sv.want_claim = 1;
}

/*
 * Notes a database failure, logged once (the same failure again is a
 * debug message).  A lost connection (or one given up: no answer within
 * db_timeout_ms) stops claims and result writes until the reconnect task
 * brings it back, with a doubling backoff; results wait in memory and
 * runs go on (until fence()).  Any other failure makes the loop wait a
 * moment (doubling up to DB_REDO_MAX) before its next database work.
 */
void
db_failed(const char *err)
{
	int64_t now = clock_ms(), cap;

	if (strcmp(err, sv.db_last) != 0) {
		log_warnx("database: %s%s", err,
		    db_error(sv.db) == DB_ERR_CONNECTION && !sv.db_down
		        ? "; reconnecting (runs go on, their results wait)"
		        : "");
		snprintf(sv.db_last, sizeof(sv.db_last), "%s", err);
	} else {
		log_debug("database: %s (again)", err);
	}
	cap =
	    db_error(sv.db) == DB_ERR_CONNECTION ? DB_BACKOFF_MAX : DB_REDO_MAX;
	if (!sv.db_failing)
		sv.db_backoff_ms = DB_BACKOFF_MIN;
	else if ((sv.db_backoff_ms *= 2) > cap)
		sv.db_backoff_ms = cap;
	if (!sv.db_failing && sv.db_lost_ms == 0)
		sv.db_lost_ms = now;
	sv.db_failing = 1;
	sv.task_failed = 1;
	sv.db_retry_ms = now + sv.db_backoff_ms;
	if (db_error(sv.db) == DB_ERR_CONNECTION)
		sv.db_down = 1;
}

/* A task without failures: the database answers again. */
static void
db_answered(void)
{
	if (!sv.db_failing)
		return;
	log_info("database is back after %lld ms",
	    (long long)(clock_ms() - sv.db_lost_ms));
	sv.db_failing = 0;
	sv.db_lost_ms = 0;
	sv.db_last[0] = '\0';
}

/* The task that reconnects (db_reset(), through the loop's epoll). */
static void
reconnect(void *arg)
{
	char err[CV_ERRLEN];

	(void)arg;
	if (db_reset(sv.db, err, sizeof(err)) == -1) {
		db_failed(err);
		return;
	}
	log_debug("database connection restored");
	sv.db_down = 0;
	sv.heartbeat_ms = 0; /* and reconcile() at once */
	sv.want_claim = 1;
}

/*
 * peer_reap_orphans()'s question: is run id one of our live jobs, or one
 * a claim left for the loop to start or is expanding (a heartbeat may come
 * between a claim and the loop's turn: claim(), fanout_expand())?
 */
static int
job_ours(const char *id, void *arg)
{
	for (struct job *j = sv.jobs; j; j = j->next)
		if (j->state != JOB_DONE && strcmp(j->run_id, id) == 0) {
			j->seen = *(int64_t *)arg;
			return 1;
		}
	/* Seen too: the loop may start it before reconcile() looks again. */
	for (struct job *j = sv.fresh; j; j = j->next)
		if (strcmp(j->run_id, id) == 0) {
			j->seen = *(int64_t *)arg;
			return 1;
		}
	for (struct job *j = sv.expanding; j; j = j->next)
		if (strcmp(j->run_id, id) == 0) {
			j->seen = *(int64_t *)arg;
			return 1;
		}
	return 0;
}

/*
 * Squares our runs in the database with our jobs.  A row `running` under
 * our lease without a job is declared lost (its claim's COMMIT went
 * through although the connection failed under it, or a result's commit
 * was lost with the server).  A runner whose row is no longer ours (a
 * peer declared it lost while we were cut off or frozen) is stopped: its
 * slot is retried elsewhere, and its result would be refused anyway.
 */
static int
reconcile(int64_t now_ms, char *err, size_t errlen)
{
	static int64_t round;
	int n;

	round++;
	if ((n = peer_reap_orphans(
	         sv.db, sv.id, job_ours, &round, err, errlen)) == -1)
		return -1;
	if (n > 0)
		log_warnx("%d runs of this supervisor had no runner; "
		          "declared lost",
		    n);
	for (struct job *j = sv.jobs; j; j = j->next)
		if (j->state == JOB_RUNNING && j->seen != round &&
		    j->cause == REAP_EXITED && !j->probe) {
			log_warnx("run %s: no longer ours in the database (a "
			          "peer declared it lost); stopping its runner",
			    j->run_id);
			job_interrupt(
			    j, REAP_LOST, now_ms, sv.cf.kill_grace_seconds);
		}
	return 0;
}

/*
 * A supervisor whose row was retired (stopped_at set by a restart of the
 * same name) is no longer one: its runs are declared lost by the others.
 * It claims nothing more, stops its runners at once and exits non-zero.
 */
static void
retire(int64_t now_ms)
{
	if (sv.retired)
		return;
	log_warnx("this supervisor (id %lld) was retired by another; "
	          "stopping its runs and exiting",
	    (long long)sv.id);
	sv.retired = 1;
	sv.stopping = 1;
	sv.stop_ms = now_ms;
}

/*
 * Heartbeat, our runs squared with our jobs, lost runs, history, deleted
 * schedules left behind and expired trigger keys, every heartbeat_seconds.
 */
static void
heartbeat(int64_t now_ms)
{
	char err[CV_ERRLEN];
	int r;

	sv.heartbeat_ms = now_ms + sv.cf.heartbeat_seconds * 1000;
	if ((r = peer_heartbeat(sv.db, sv.id, err, sizeof(err))) == 0) {
		retire(now_ms);
		return;
	}
	if (r == 1) {
		/* The row's heartbeat is no earlier than when it was sent. */
		sv.lease_ok_ms = now_ms;
		if (sv.fenced) {
			log_info("lease renewed; claiming again");
			sv.fenced = 0;
		}
	}
	if (r == -1 || reconcile(now_ms, err, sizeof(err)) == -1 ||
	    peer_reap_lost(
	        sv.db, sv.id, sv.cf.lease_seconds, err, sizeof(err)) == -1 ||
	    prune_run(sv.db, err, sizeof(err)) == -1 ||
	    prune_deleted(sv.db, err, sizeof(err)) == -1 ||
	    prune_keys(sv.db, err, sizeof(err)) == -1)
		db_failed(err);
	/*
	 * Runs declared lost above were moved on to their retries, whose
	 * NOTIFY came from this connection: db_notifies() does not deliver
	 * that one to us.
	 */
	sv.want_claim = 1;
}

/*
 * When this supervisor stops its runs if its lease is not renewed by then:
 * kill_grace_seconds (the runner's SIGTERM to SIGKILL of its target's
 * tree) and a second before lease_seconds have passed since the last
 * renewed heartbeat was sent (a peer's takeover may come from then on),
 * and no earlier than two heartbeats after it (a heartbeat that is only
 * late costs no run; configurations too tight for both are warned about).
 */
static int64_t
fence_ms(void)
{
	int64_t at = sv.lease_ok_ms + sv.cf.lease_seconds * 1000 -
	    sv.cf.kill_grace_seconds * 1000 - FENCE_SLACK_MS;
	int64_t floor = sv.lease_ok_ms + 2 * sv.cf.heartbeat_seconds * 1000;

	return at > floor ? at : floor;
}

/*
 * Self-fencing: past fence_ms() without a renewed lease (the database
 * away, silent or too slow), every run in flight is stopped and recorded
 * interrupted once its result can be written; nothing is claimed until a
 * heartbeat renews the lease.
 */
static void
fence(int64_t now_ms)
{
	int n = 0;

	if (now_ms < fence_ms())
		return;
	for (struct job *j = sv.jobs; j; j = j->next)
		if (j->state == JOB_RUNNING && !j->reaped &&
		    j->cause == REAP_EXITED && !j->probe) {
			job_interrupt(
			    j, REAP_FENCED, now_ms, sv.cf.kill_grace_seconds);
			n++;
		}
	if (!sv.fenced || n > 0)
		log_warnx("lease not renewed for %lld ms (lease_seconds %lld): "
		          "stopping %d runs before another supervisor may "
		          "take them over",
		    (long long)(now_ms - sv.lease_ok_ms),
		    (long long)sv.cf.lease_seconds, n);
	sv.fenced = 1;
}

/*
 * Takes the agents whose health probe is due, as many as there is room
 * for (PROBES_MAX in flight, and they count among the runs), and leaves
 * their probes in sv.fresh for the loop to start; looks again when the
 * next is due, PROBE_POLL_MS at the latest (an agent created meanwhile
 * wakes it at once).
 */
static void
probe_agents(int64_t now_ms)
{
	char err[CV_ERRLEN];
	struct job *jobs, **tail;
	int64_t next, at;
	int limit = PROBES_MAX, n, room;

	sv.probe_ms = now_ms + PROBE_POLL_MS;
	for (struct job *j = sv.jobs; j; j = j->next)
		limit -= j->probe && j->state != JOB_DONE;
	if ((room = (int)sv.cf.max_concurrent_runs - jobs_live()) < limit)
		limit = room;
	if ((n = health_claim(sv.db, &sv.cf, sv.id, limit < 0 ? 0 : limit,
	         &jobs, &next, err, sizeof(err))) == -1) {
		db_failed(err);
		return;
	}
	for (tail = &jobs; *tail != NULL; tail = &(*tail)->next)
		sv.nfresh++;
	*tail = sv.fresh;
	sv.fresh = jobs;
	if (next != INT64_MAX) {
		at = now_ms + (next - clock_real_us() / 1000);
		if (at < now_ms + PROBE_BUSY_MS)
			at = now_ms + PROBE_BUSY_MS;
		if (at < sv.probe_ms)
			sv.probe_ms = at;
	}
}

/* Is there database work for a task now? */
static int
db_work_due(int64_t now_ms)
{
	if (sv.db_down)
		return 0;
	/* Input waits on the socket: read it (level-triggered epoll). */
	if (sv.want_db)
		return 1;
	if (sv.db_failing && now_ms < sv.db_retry_ms)
		return 0;
	return ((sv.want_claim || now_ms >= sv.probe_ms ||
	            (sv.report_ms != 0 && now_ms >= sv.report_ms)) &&
	           !sv.stopping && !sv.fenced) ||
	    now_ms >= sv.heartbeat_ms || now_ms >= sv.poll_ms ||
	    now_ms >= jobs_ended();
}

/*
 * The task of a turn with the database up: notifications, the heartbeat
 * when due (first: the lease matters most), the results that wait, and a
 * claim when one is wanted.
 */
static void
db_work(void *arg)
{
	int64_t now_ms = clock_ms();
	char err[CV_ERRLEN];

	(void)arg;
	sv.want_db = 0;
	sv.task_failed = 0;
	if (db_notifies(sv.db, wake, NULL, err, sizeof(err)) == -1)
		db_failed(err);
	/* Backing off after a failure: that input was all there was to do. */
	if (sv.db_failing && now_ms < sv.db_retry_ms)
		return;
	if (!sv.db_down && now_ms >= sv.heartbeat_ms)
		heartbeat(now_ms);
	/* Results gathered for a moment (jobs_ended()), unless stopping. */
	if (!sv.db_down && (now_ms >= jobs_ended() || sv.stopping))
		finish_ended();
	/* Pipeline steps made ready by those ends: claimed this turn. */
	if (pipeline_started())
		sv.want_claim = 1;
	/* A deleted plan's jobs, failed 1,000 a claim: the next ones soon. */
	if (claim_drops_more() && sv.poll_ms > now_ms + IDLE_POLL_MS)
		sv.poll_ms = now_ms + IDLE_POLL_MS;
	/* The reports gathered since the first one's wake. */
	if (sv.report_ms != 0 && now_ms >= sv.report_ms) {
		sv.report_ms = 0;
		sv.want_claim = 1;
	}
	/* A safety net under the timer and the notifications. */
	if (now_ms >= sv.poll_ms) {
		sv.poll_ms = now_ms + POLL_MS;
		sv.want_claim = 1;
	}
	if (now_ms >= sv.probe_ms && !sv.stopping && !sv.fenced && !sv.db_down)
		probe_agents(now_ms);
	if (sv.want_claim && !sv.stopping && !sv.fenced && !sv.db_down)
		claim();
	/*
	 * A notification that arrived while this task's statements ran was
	 * read by libpq together with their results: it waits in libpq's
	 * queue, the socket no longer shows it and epoll would not wake for
	 * it.  Take it now, so that a wake with nothing due (a trigger-now
	 * request) claims within milliseconds, not at the next event.
	 */
	if (!sv.db_down &&
	    db_notifies(sv.db, wake, NULL, err, sizeof(err)) == -1)
		db_failed(err);
	if (!sv.task_failed)
		db_answered();
}

/* How long epoll may wait: until the nearest deadline, in ms. */
static int
wait_ms(int64_t now_ms)
{
	int64_t next = task_deadline(), t;

	if ((t = job_asking_due()) < next)
		next = t;
	if (!sv.stopping && (t = events_due()) < next)
		next = t;
	if (!task_busy()) {
		if (sv.db_down || (sv.db_failing && now_ms < sv.db_retry_ms)) {
			if (sv.db_retry_ms < next)
				next = sv.db_retry_ms;
		} else {
			if (sv.heartbeat_ms < next)
				next = sv.heartbeat_ms;
			if (sv.poll_ms < next)
				next = sv.poll_ms;
			if (!sv.stopping && !sv.fenced && sv.probe_ms < next)
				next = sv.probe_ms;
			if (sv.report_ms != 0 && sv.report_ms < next)
				next = sv.report_ms;
			if ((t = jobs_ended()) < next)
				next = t;
		}
		if (sv.want_reload || sv.nfresh > 0 || db_work_due(now_ms))
			return 0;
	}
	for (struct job *j = sv.jobs; j; j = j->next)
		if (j->state == JOB_RUNNING && j->deadline_ms < next)
			next = j->deadline_ms;
	if (!sv.fenced && jobs_live() > 0 && (t = fence_ms()) < next)
		next = t;
	/* Until the runs were told to stop; after that stop_ms is past. */
	if (sv.stopping && !sv.told && sv.stop_ms < next)
		next = sv.stop_ms;
	if (next <= now_ms)
		return 0;
	return next - now_ms > 60000 ? 60000 : (int)(next - now_ms);
}

/* One turn's work before waiting. */
static void
turn(int64_t now_ms)
{
	if (sv.want_reload && !task_busy()) {
		sv.want_reload = 0;
		reload();
	}
	task_expired(now_ms);
	if (!sv.stopping)
		events_start(sv.config_path, sv.debug, now_ms);
	start_fresh();
	job_answers(sv.epfd, now_ms, sv.cf.kill_grace_seconds);
	for (struct job *j = sv.jobs; j; j = j->next)
		job_deadline(j, now_ms, sv.cf.kill_grace_seconds);
	if (jobs_live() > 0)
		fence(now_ms);
	if (sv.stopping && now_ms >= sv.stop_ms) {
		for (struct job *j = sv.jobs; j; j = j->next)
			job_interrupt(
			    j, REAP_SHUTDOWN, now_ms, sv.cf.kill_grace_seconds);
		sv.told = 1;
	}
	if (!task_busy()) {
		if (sv.db_down && now_ms >= sv.db_retry_ms)
			task_run(reconnect, NULL);
		else if (db_work_due(now_ms))
			task_run(db_work, NULL);
	}
	start_fresh();
}

/* The event loop; returns when a stop is complete. */
static void
loop(void)
{
	struct epoll_event evs[64];
	uint64_t ticks;
	int n;

	sv.want_claim = 1;
	sv.lease_ok_ms = clock_ms();
	for (;;) {
		turn(clock_ms());
		if (!task_busy())
			sweep();
		if (sv.stopping && jobs_live() == 0 && !task_busy())
			return;
		n = epoll_wait(sv.epfd, evs, 64, wait_ms(clock_ms()));
		if (n == -1 && errno != EINTR)
			fatal("epoll_wait");
		for (int i = 0; i < n; i++) {
			void *tag = evs[i].data.ptr;

			if (tag == TAG_SIGNAL)
				signals();
			else if (tag == TAG_TIMER) {
				if (read(sv.timerfd, &ticks, sizeof(ticks)) ==
				        -1 &&
				    errno != EAGAIN)
					fatal("timerfd");
				sv.want_claim = 1;
			} else if (tag == TASK_TAG) {
				if (!task_ready())
					sv.want_db = 1;
			} else if (tag == TAG_HELPER)
				job_answers(sv.epfd, clock_ms(),
				    sv.cf.kill_grace_seconds);
			else
				job_readable(tag, sv.epfd);
		}
	}
}

/* The database socket now, or -1 (task.c watches it). */
static int
db_sock(void)
{
	return sv.db_down ? -1 : db_fd(sv.db);
}

/* The descriptors of the loop: signals, timer, database. */
static void
setup_loop(void)
{
	struct epoll_event ev = {.events = EPOLLIN};
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) == -1 ||
	    (sv.sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) == -1 ||
	    (sv.timerfd = timerfd_create(
	         CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC)) == -1 ||
	    (sv.epfd = epoll_create1(EPOLL_CLOEXEC)) == -1)
		fatal("setting up the event loop");
	signal(SIGPIPE, SIG_IGN);
	ev.data.ptr = TAG_SIGNAL;
	epoll_ctl(sv.epfd, EPOLL_CTL_ADD, sv.sigfd, &ev);
	ev.data.ptr = TAG_TIMER;
	epoll_ctl(sv.epfd, EPOLL_CTL_ADD, sv.timerfd, &ev);
	task_init(sv.epfd, db_sock);
	zygote_watch(sv.epfd, TAG_HELPER);
}

/* Connects, checks the schema, registers and listens. */
static void
setup_db(void)
{
	char err[CV_ERRLEN];

	db_configure(sv.cf.db_timeout_ms);
	if ((sv.db = db_open(sv.cf.database_url, err, sizeof(err))) == NULL)
		fatalx("database: %s", err);
	/* Statements wait in the loop's tasks (before it: in poll()). */
	db_set_wait(sv.db, task_wait, NULL);
	/* Every statement on its indexes (see cronvisord_session). */
	if (db_session(sv.db, SQL_cronvisord_session, err, sizeof(err)) == -1)
		fatalx("database: %s", err);
	if (migrate_check(sv.db, err, sizeof(err)) == -1)
		fatalx("database: %s", err);
	if ((sv.id = peer_register(
	         sv.db, sv.cf.supervisor_name, err, sizeof(err))) == -1 ||
	    db_listen(sv.db, "cronvisor_wake", err, sizeof(err)) == -1)
		fatalx("database: %s", err);
	log_info("supervisor %lld started (version %s, %lld runs at most)",
	    (long long)sv.id, CV_VERSION, (long long)sv.cf.max_concurrent_runs);
	if ((sv.cf.lease_seconds - sv.cf.kill_grace_seconds) * 1000 -
	        FENCE_SLACK_MS <
	    2 * sv.cf.heartbeat_seconds * 1000)
		log_warnx("lease_seconds %lld leaves no room to stop runs "
		          "(kill_grace_seconds %lld) between two missed "
		          "heartbeats (heartbeat_seconds %lld) and a takeover: "
		          "make it at least %lld",
		    (long long)sv.cf.lease_seconds,
		    (long long)sv.cf.kill_grace_seconds,
		    (long long)sv.cf.heartbeat_seconds,
		    (long long)(2 * sv.cf.heartbeat_seconds +
		        sv.cf.kill_grace_seconds + 1));
}

int
main(int argc, char **argv)
{
	int debug = 0, rc;
	char err[CV_ERRLEN];

	io_fix_stdio();
	if (argc > 1 && strcmp(argv[1], "--events-worker") == 0)
		return events_main(argc - 1, argv + 1, usage);
	log_init("cronvisord", LOG_LEVEL_INFO);
	sv.config_path = CONFIG_PATH;
	if ((rc = config_daemon(
	         argc, argv, usage, &sv.cf, &sv.config_path, &debug)) != -1)
		return rc;
	log_setlevel(debug ? LOG_LEVEL_DEBUG : sv.cf.log_level);
	sv.debug = debug;
	if (spawn_init() == -1)
		fatalx("cannot initialise libcurl");
	setup_db();
	setup_loop();
	(void)cgroup_setup(CGROUP_ROOT); /* before the helper: it inherits */
#ifndef CV_TESTING /* the test build forks every runner (spawn.c) */
	(void)zygote_start();
#endif
	loop();
	events_stop();
	zygote_stop();
	if (!sv.retired && peer_stop(sv.db, sv.id, err, sizeof(err)) == -1)
		log_warnx("database: %s", err);
	log_info("stopped");
	db_close(sv.db);
	config_clear(&sv.cf);
	tz_cache_clear();
	return sv.retired ? 1 : 0;
}
