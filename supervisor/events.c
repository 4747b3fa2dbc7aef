/*
 * events.c: the events worker (docs/events.md), a process of its own that
 * every supervisor keeps beside it, so that nothing here ever waits in
 * the supervisor's loop.
 *
 * The supervisor's side (events_start(), events_reaped(), events_stop())
 * forks and executes its own binary as `cronvisord --events-worker -f
 * CONFIG`, starts it again a second after it died, and stops it with
 * itself.  The worker (events_main()) has its own database connection.
 * One worker of the cluster leads, the one whose session holds the leader
 * lock (events_lead); the others try again every second.  The leader
 * numbers the events the triggers wrote (cronvisor_events_sequence(), in
 * transactions of up to EV_NUMBER), looking for them every EV_POLL_MS (a
 * NOTIFY from the triggers would cost every busy transaction a lock at its
 * commit, and make as many numbering transactions), and publishes the
 * numbered ones to the Redis
 * stream events_stream when one is configured: XADD with the seq as the
 * entry's id (SEQ-0) and MAXLEN ~ events_stream_maxlen.  Where it
 * resumes is the stream's own last id, read at each connection: after a
 * Redis restart that lost the stream, it publishes again the last
 * events_stream_maxlen events the database keeps; an id Redis already
 * has is refused by Redis itself, so no entry is ever there twice.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "cronvisord.h"

#define EV_NUMBER     5000  /* events numbered per transaction */
#define EV_PUBLISH    1000  /* events per XADD pipeline */
#define EV_IDLE_MS    1000  /* a standby tries for the lead this often */
#define EV_POLL_MS    50    /* the leader looks for new events this often */
#define EV_RETRY_MS   1000  /* database or Redis again after, at first */
#define EV_RETRY_MAX  10000 /* and at most */
#define EV_REDIS_MS   2000  /* a Redis connect or command, at most */
#define EV_RESTART_MS 1000  /* a dead worker is started again after */
#define EV_STOP_MS    3000  /* SIGTERM to SIGKILL at the supervisor's stop */
#define EV_PRUNE_MS   60000 /* the leader deletes old events this often */
#define EV_PRUNE_MAX  10000 /* and at most so many at a time */

/* ------------------------------------------------------------------ */
/* The supervisor's side. */

static struct {
	pid_t pid;          /* the worker, 0 if none */
	int64_t restart_ms; /* CLOCK_MONOTONIC ms before which no restart */
	char exe[PATH_MAX]; /* this binary, read at the first start */
} ew;

/*
 * Starts the worker if none runs and its restart time came: `cronvisord
 * --events-worker -f config_path [-d]`, this binary (its path as the
 * kernel knew it at the first start: under valgrind, /proc/self/exe itself
 * would be valgrind's).
 */
void
events_start(const char *config_path, int debug, int64_t now_ms)
{
	sigset_t none;
	ssize_t n;
	pid_t pid;

	if (ew.pid != 0 || now_ms < ew.restart_ms)
		return;
	ew.restart_ms = now_ms + EV_RESTART_MS;
	if (ew.exe[0] == '\0') {
		if ((n = readlink(
		         "/proc/self/exe", ew.exe, sizeof(ew.exe) - 1)) <= 0) {
			log_warn("events worker: /proc/self/exe");
			return;
		}
		ew.exe[n] = '\0';
	}
	if ((pid = fork()) == -1) {
		log_warn("events worker: fork");
		return;
	}
	if (pid == 0) {
		char *argv[] = {"cronvisord", "--events-worker", "-f",
		    (char *)config_path, debug ? "-d" : NULL, NULL};

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		syscall(SYS_close_range, 3U, ~0U, 0U);
		execv(ew.exe, argv);
		_exit(127);
	}
	ew.pid = pid;
	log_debug("events worker %d started", (int)pid);
}

/* When the worker may be started again (for the loop's wait), or INT64_MAX. */
int64_t
events_due(void)
{
	return ew.pid != 0 ? INT64_MAX : ew.restart_ms;
}

/* 1 if pid was the worker (then reaped: started again later), else 0. */
int
events_reaped(pid_t pid, int st)
{
	if (pid == 0 || pid != ew.pid)
		return 0;
	ew.pid = 0;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		log_debug("events worker %d stopped", (int)pid);
	else
		log_warnx("events worker %d %s %d; starting another", (int)pid,
		    WIFSIGNALED(st) ? "killed by signal" : "exited",
		    WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	return 1;
}

/* Asks the worker to stop (it is started again: a new configuration). */
void
events_restart(void)
{
	if (ew.pid != 0)
		kill(ew.pid, SIGTERM);
	ew.restart_ms = 0;
}

/* Stops the worker and waits for it (EV_STOP_MS, then SIGKILL). */
void
events_stop(void)
{
	int st;

	if (ew.pid == 0)
		return;
	kill(ew.pid, SIGTERM);
	for (int i = 0; i < EV_STOP_MS / 10; i++) {
		if (waitpid(ew.pid, &st, WNOHANG) == ew.pid) {
			ew.pid = 0;
			return;
		}
		usleep(10000);
	}
	kill(ew.pid, SIGKILL);
	waitpid(ew.pid, &st, 0);
	ew.pid = 0;
}

/* ------------------------------------------------------------------ */
/* The worker. */

static volatile sig_atomic_t ev_stopping;

static void
ev_signal(int sig)
{
	(void)sig;
	ev_stopping = 1;
}

struct ev {
	struct config cf;       /* as loaded at the worker's start */
	struct db *db;          /* NULL while down */
	int leader;             /* 1: this session holds the leader lock */
	int64_t db_retry_ms;    /* no reconnect before (monotonic) */
	int64_t db_backoff_ms;  /* the next wait after a failure */
	int db_said;            /* 1: the outage was logged */
	redisContext *rc;       /* NULL while down or not configured */
	int64_t cursor;         /* the last seq the stream has */
	int64_t redis_retry_ms; /* no reconnect before (monotonic) */
	int64_t redis_backoff_ms;
	int redis_said;   /* 1: the outage was logged */
	int foreign_said; /* 1: a foreign entry was logged */
	int64_t prune_ms; /* the next prune (monotonic) */
};

/* The database went away (or was never there): close, wait, retry. */
static void
ev_db_down(struct ev *e, const char *err)
{
	if (!e->db_said)
		log_warnx("database: %s; retrying", err);
	e->db_said = 1;
	db_close(e->db);
	e->db = NULL;
	e->leader = 0;
	e->db_retry_ms = clock_ms() + e->db_backoff_ms;
	e->db_backoff_ms = e->db_backoff_ms * 2 > EV_RETRY_MAX
	    ? EV_RETRY_MAX
	    : e->db_backoff_ms * 2;
}

static int
ev_db_up(struct ev *e)
{
	char err[CV_ERRLEN];

	if (e->db != NULL)
		return 0;
	if (clock_ms() < e->db_retry_ms)
		return -1;
	/* The supervisor's session: indexes, nested loops, generic plans
	 * (cronvisord_session says why). */
	if ((e->db = db_open(e->cf.database_url, err, sizeof(err))) == NULL ||
	    db_session(e->db, SQL_cronvisord_session, err, sizeof(err)) == -1) {
		ev_db_down(e, err);
		return -1;
	}
	if (e->db_said)
		log_info("database connection restored");
	e->db_said = 0;
	e->db_backoff_ms = EV_RETRY_MS;
	return 0;
}

/* One value of a one-row statement into *v; 0, or -1 (the database is down). */
static int
ev_int(struct ev *e, const char *sql, int n, const char *const *p, int64_t *v)
{
	char err[CV_ERRLEN];
	struct db_rows *rows = db_query(e->db, sql, n, p, err, sizeof(err));
	const char *s;

	if (rows == NULL) {
		ev_db_down(e, err);
		return -1;
	}
	s = db_rows_count(rows) > 0 ? db_rows_value(rows, 0, 0) : NULL;
	*v = s == NULL ? 0 : (strcmp(s, "t") == 0 ? 1 : strtoll(s, NULL, 10));
	db_rows_free(rows);
	return 0;
}

static void
ev_redis_down(struct ev *e, const char *err)
{
	if (!e->redis_said)
		log_warnx("events stream: %s; retrying", err);
	e->redis_said = 1;
	if (e->rc != NULL)
		redisFree(e->rc);
	e->rc = NULL;
	e->redis_retry_ms = clock_ms() + e->redis_backoff_ms;
	e->redis_backoff_ms = e->redis_backoff_ms * 2 > EV_RETRY_MAX
	    ? EV_RETRY_MAX
	    : e->redis_backoff_ms * 2;
}

/*
 * Where the stream is: the seq of its last entry, read at connection (0 if
 * it has none: the last events_stream_maxlen events go again).  0, or -1.
 */
static int
ev_redis_cursor(struct ev *e)
{
	const char *argv[] = {
	    "XREVRANGE", e->cf.events_stream, "+", "-", "COUNT", "1"};
	redisReply *r = redisCommandArgv(e->rc, 6, argv, NULL);
	int64_t last;

	if (r == NULL) {
		ev_redis_down(e, e->rc->errstr);
		return -1;
	}
	e->cursor = 0;
	if (r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
	    r->element[0]->type == REDIS_REPLY_ARRAY &&
	    r->element[0]->elements > 0 &&
	    r->element[0]->element[0]->type == REDIS_REPLY_STRING)
		e->cursor = strtoll(r->element[0]->element[0]->str, NULL, 10);
	else if (r->type == REDIS_REPLY_ERROR) {
		char err[CV_ERRLEN];

		snprintf(err, sizeof(err), "XREVRANGE %s: %.200s",
		    e->cf.events_stream, r->str);
		freeReplyObject(r);
		ev_redis_down(e, err);
		return -1;
	}
	freeReplyObject(r);
	if (e->cursor == 0) {
		if (ev_int(e, SQL_events_last, 0, NULL, &last) == -1)
			return -1;
		e->cursor = last > e->cf.events_stream_maxlen
		    ? last - e->cf.events_stream_maxlen
		    : 0;
	}
	return 0;
}

static int
ev_redis_up(struct ev *e)
{
	char err[CV_ERRLEN];

	if (e->rc != NULL)
		return 0;
	if (clock_ms() < e->redis_retry_ms)
		return -1;
	if ((e->rc = redis_open(
	         e->cf.redis_url, EV_REDIS_MS, err, sizeof(err))) == NULL) {
		ev_redis_down(e, err);
		return -1;
	}
	if (ev_redis_cursor(e) == -1)
		return -1;
	if (e->redis_said)
		log_info("events stream: Redis answers again; resuming "
		         "after seq %lld",
		    (long long)e->cursor);
	e->redis_said = 0;
	e->redis_backoff_ms = EV_RETRY_MS;
	return 0;
}

/*
 * Publishes one pipeline of numbered events after the cursor.  Returns
 * how many went (0: none waits), or -1 (Redis or the database failed).
 */
static int
ev_publish_some(struct ev *e)
{
	char after[24], lim[16], id[32], maxlen[24], err[CV_ERRLEN];
	const char *p[2] = {after, lim};
	struct db_rows *rows;
	int n, rc = 0;

	snprintf(after, sizeof(after), "%lld", (long long)e->cursor);
	snprintf(lim, sizeof(lim), "%d", EV_PUBLISH);
	snprintf(maxlen, sizeof(maxlen), "%lld",
	    (long long)e->cf.events_stream_maxlen);
	if ((rows = db_query(
	         e->db, SQL_events_after, 2, p, err, sizeof(err))) == NULL) {
		ev_db_down(e, err);
		return -1;
	}
	n = db_rows_count(rows);
	for (int i = 0; i < n; i++) {
		const char *seq = db_rows_value(rows, i, EVENTS_ROW_COL_SEQ);
		const char *argv[] = {"XADD", e->cf.events_stream, "MAXLEN",
		    "~", maxlen, id, "seq", seq, "type",
		    db_rows_value(rows, i, EVENTS_ROW_COL_TYPE), "event",
		    db_rows_value(rows, i, EVENTS_ROW_COL_JSON)};

		snprintf(id, sizeof(id), "%s-0", seq);
		redisAppendCommandArgv(e->rc, 12, argv, NULL);
	}
	for (int i = 0; i < n; i++) {
		redisReply *r = NULL;

		if (redisGetReply(e->rc, (void **)&r) != REDIS_OK ||
		    r == NULL) {
			ev_redis_down(e, e->rc->errstr);
			rc = -1;
			break;
		}
		if (r->type == REDIS_REPLY_ERROR &&
		    strstr(r->str, "equal or smaller") != NULL &&
		    !e->foreign_said) {
			/* There already, or an entry not ours above it. */
			const char *top[] = {"XREVRANGE", e->cf.events_stream,
			    "+", "-", "COUNT", "1"};
			redisReply *t = redisCommandArgv(e->rc, 6, top, NULL);
			const char *top_id = t != NULL &&
			        t->type == REDIS_REPLY_ARRAY &&
			        t->elements > 0 &&
			        t->element[0]->type == REDIS_REPLY_ARRAY &&
			        t->element[0]->elements > 0
			    ? t->element[0]->element[0]->str
			    : "";
			const char *dash = strchr(top_id, '-');

			if (dash != NULL && strcmp(dash, "-0") != 0) {
				log_warnx(
				    "events stream %s: its last entry %s is "
				    "not one cronvisor wrote: publishing "
				    "stops there; delete it (XDEL) or name "
				    "another events_stream",
				    e->cf.events_stream, top_id);
				e->foreign_said = 1;
			}
			if (t != NULL)
				freeReplyObject(t);
		}
		if (r->type == REDIS_REPLY_ERROR &&
		    strstr(r->str, "equal or smaller") == NULL) {
			snprintf(err, sizeof(err), "XADD %s: %.200s",
			    e->cf.events_stream, r->str);
			freeReplyObject(r);
			ev_redis_down(e, err);
			rc = -1;
			break;
		}
		/* Published, or there already (refused as not newer). */
		e->cursor = strtoll(
		    db_rows_value(rows, i, EVENTS_ROW_COL_SEQ), NULL, 10);
		freeReplyObject(r);
	}
	db_rows_free(rows);
	return rc == -1 ? -1 : n;
}

/* Numbers what waits, then publishes it; 1 if more may wait, else 0. */
static int
ev_work(struct ev *e)
{
	char max[16], err[CV_ERRLEN];
	const char *p[1] = {max};
	int64_t n;
	int m, k;

	if (!e->leader) {
		if (ev_int(e, SQL_events_lead, 0, NULL, &n) == -1 || n != 1)
			return 0;
		e->leader = 1;
		log_info("leading the events of the cluster");
	}
	if (clock_ms() >= e->prune_ms) {
		snprintf(max, sizeof(max), "%lld",
		    (long long)e->cf.events_retention_hours);
		if (ev_int(e, SQL_events_prune, 1, p, &n) == -1)
			return 0;
		e->prune_ms = n == EV_PRUNE_MAX ? 0 : clock_ms() + EV_PRUNE_MS;
	}
	snprintf(max, sizeof(max), "%d", EV_NUMBER);
	if (ev_int(e, SQL_events_number, 1, p, &n) == -1)
		return 0;
	/* the notifications the numbering queued (notify.c) */
	if ((k = notify_round(e->db, &e->cf, err, sizeof(err))) == -1) {
		ev_db_down(e, err);
		return 0;
	}
	if (e->cf.events_stream[0] == '\0' || ev_redis_up(e) == -1)
		return n == EV_NUMBER || k == 20 || e->prune_ms == 0;
	if ((m = ev_publish_some(e)) == -1)
		return 0;
	return n == EV_NUMBER || m == EV_PUBLISH || k == 20 || e->prune_ms == 0;
}

/*
 * Waits for the leader's next look (EV_POLL_MS), a standby's next try
 * (EV_IDLE_MS), the next retry of the database or Redis, or a signal.
 */
static void
ev_wait(struct ev *e)
{
	int64_t now = clock_ms(),
	        until = now + (e->leader ? EV_POLL_MS : EV_IDLE_MS);

	if (e->db == NULL && e->db_retry_ms < until)
		until = e->db_retry_ms;
	if (e->leader && e->cf.events_stream[0] != '\0' && e->rc == NULL &&
	    e->redis_retry_ms < until)
		until = e->redis_retry_ms;
	if (until > now && poll(NULL, 0, (int)(until - now)) == -1 &&
	    errno != EINTR)
		log_warn("poll");
}

/*
 * The worker: `cronvisord --events-worker [-d] [-f FILE]`.  Runs until
 * SIGTERM or until its supervisor is gone; returns the exit status.
 */
int
events_main(int argc, char **argv, void (*usage)(FILE *))
{
	struct ev e = {
	    .db_backoff_ms = EV_RETRY_MS, .redis_backoff_ms = EV_RETRY_MS};
	const char *path = CONFIG_PATH;
	struct sigaction sa;
	pid_t parent = getppid();
	int debug = 0, rc;

	log_init("cronvisord-events", LOG_LEVEL_INFO);
	prctl(PR_SET_NAME, "cronvisord-ev"); /* ps, top: not "cronvisord" */
	if ((rc = config_daemon(argc, argv, usage, &e.cf, &path, &debug)) != -1)
		return rc;
	log_setlevel(debug ? LOG_LEVEL_DEBUG : e.cf.log_level);
	/* PREFIX OWNER:KEY is an owner's (supervisor/sched.c, redis_key()):
	 * a stream of that form could be written by one. */
	if (e.cf.events_stream[0] != '\0' &&
	    strncmp(e.cf.events_stream, e.cf.redis_key_prefix,
	        strlen(e.cf.redis_key_prefix)) == 0 &&
	    strchr(e.cf.events_stream + strlen(e.cf.redis_key_prefix), ':') !=
	        NULL) {
		log_warnx("events_stream %s has the form redis_key_prefix (%s) "
		          "OWNER:KEY of an owner's redis target key: not "
		          "publishing; name another stream",
		    e.cf.events_stream, e.cf.redis_key_prefix);
		e.cf.events_stream[0] = '\0';
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = ev_signal; /* no SA_RESTART: poll() returns */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		return 0; /* the supervisor died before the line above */
	db_configure(e.cf.db_timeout_ms);
	while (!ev_stopping) {
		if (ev_db_up(&e) == 0 && ev_work(&e))
			continue; /* more waits */
		if (!ev_stopping)
			ev_wait(&e);
	}
	if (e.rc != NULL)
		redisFree(e.rc);
	db_close(e.db);
	config_clear(&e.cf);
	return 0;
}
