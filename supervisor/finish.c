/*
 * finish.c: writing a run's result and moving its schedule on, in one
 * transaction.  The run row is updated only while it is still `running`
 * under the lease given (the fencing token): a supervisor that lost its
 * lease, whose runs another one already declared lost, changes nothing.
 * The same statement locks the schedule's row; decide_finish() (decide.c)
 * says its next state, and a failure with retries left adds a retries row
 * for its slot; a schedule paused, finished or deleted meanwhile only has
 * its counters updated.  A triggered run (run
 * now, outside the slots) leaves the state machine and the counters alone:
 * it only ends one run in flight.  A schedule deleted while runs were in
 * flight (deleted_at set) is deleted, with its history, by the transaction
 * that records the last of them.  The statements are those of
 * sql/queries/finish.sql.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cronvisord.h"

static const char *
num(char *buf, size_t len, int64_t v)
{
	snprintf(buf, len, "%lld", (long long)v);
	return buf;
}

/*
 * Makes text what PostgreSQL takes, in place: valid UTF-8 without NULs
 * (what a command prints may be neither, an error text cut at a byte limit
 * may end inside a character, and one bad byte must not cost a result).
 * Every byte that does not start a valid sequence becomes '?'.
 */
void
finish_text(char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, n;

	while (i < len) {
		if ((n = utf8_len(u + i, len - i)) == 0)
			s[i++] = '?';
		else
			i += n;
	}
}

/* A copy of len bytes of s made PostgreSQL text; the caller frees it. */
static char *
output_text(const char *s, size_t len)
{
	char *out = malloc(len + 1);

	if (out == NULL)
		return NULL;
	memcpy(out, s, len);
	out[len] = '\0';
	finish_text(out, len);
	return out;
}

/* A result's columns, the numbers of a finish_runs row. */
enum {
	COL_DURATION,
	COL_EXIT,
	COL_SIGNAL,
	COL_HTTP,
	COL_CPU_USER,
	COL_CPU_SYS,
	COL_RSS,
	COL_PID,
	COL_ENDED,
	NCOLS
};
static const char *const col_names[NCOLS] = {"duration", "exit_code", "signal",
    "http_status", "cpu_user", "cpu_sys", "rss", "pid", "ended"};

struct run_cols {
	const char *status; /* the run's status */
	int64_t v[NCOLS];   /* the numbers */
	int set[NCOLS];     /* 0: NULL */
	char *output;       /* made PostgreSQL text */
	char *error;        /* the same; "" is NULL */
};

/*
 * The columns of job j's result; bare leaves out the output and the error
 * text (the retry after the database refused them: nothing else in a
 * result can be refused).  0, or -1 out of memory.
 */
static int
run_cols(struct run_cols *c, const struct job *j, int bare)
{
	const struct result *r = &j->res;
	int ok = j->fs == FRAME_OK;
	const char *msg =
	    bare ? "the result's text could not be stored" : j->verdict.error;
	const int64_t v[NCOLS] = {r->duration_us / 1000, r->exit_code,
	    r->signal, r->http_status, r->cpu_user_us / 1000,
	    r->cpu_sys_us / 1000, r->max_rss_kb, j->pid, j->ended_us};
	const int set[NCOLS] = {ok, ok && r->exit_code >= 0,
	    ok && r->signal > 0, ok && r->http_status >= 100, ok, ok, ok,
	    j->pid > 0, j->ended_us > 0};

	c->status = run_status_name(j->verdict.status);
	memcpy(c->v, v, sizeof(v));
	memcpy(c->set, set, sizeof(set));
	c->output = output_text(ok && !bare && r->output ? r->output : "",
	    ok && !bare ? r->output_len : 0);
	c->error = output_text(msg, strlen(msg));
	return c->output && c->error ? 0 : -1;
}

static void
run_cols_clear(struct run_cols *c)
{
	free(c->output);
	free(c->error);
}

/*
 * Job j's result as a finish_runs row (bare as for run_cols()); NULL out
 * of memory.
 */
static json_t *
run_row(const struct job *j, int bare)
{
	struct run_cols c;
	json_t *o = NULL;

	json_t *result =
	    j->result && !bare ? json_loads(j->result, 0, NULL) : NULL;

	if (run_cols(&c, j, bare) == 0 &&
	    (o = json_pack("{s:s, s:s, s:s, s:s*, s:o}", "id", j->run_id,
	         "status", c.status, "output", c.output, "error",
	         c.error[0] ? c.error : NULL, "result",
	         result ? result : json_null())) != NULL) {
		for (int i = 0; i < NCOLS; i++)
			if (json_object_set_new(o, col_names[i],
			        c.set[i] ? json_integer(c.v[i])
			                 : json_null()) == -1) {
				json_decref(o);
				o = NULL;
				break;
			}
	}
	run_cols_clear(&c);
	return o;
}

/*
 * The run row, and for a slot run the schedule's row into *sched (locked):
 * finish_runs with this one result.  Returns 1 updated, 0 fenced out, -1
 * on error.  bare as for run_cols().
 */
static int
write_run(struct db *db, int64_t lease, const struct job *j, int bare,
    struct db_rows **sched, char *err, size_t errlen)
{
	char b[24];
	json_t *arr = json_array();
	struct db_rows *rows;
	int n;

	if (arr == NULL || json_array_append_new(arr, run_row(j, bare)) == -1) {
		json_decref(arr);
		return log_errbuf(err, errlen, "out of memory");
	}
	rows = batch_query(
	    db, SQL_finish_runs, num(b, sizeof(b), lease), arr, err, errlen);
	if (rows == NULL)
		return -1;
	n = db_rows_count(rows) > 0;
	if (n == 1 && !j->triggered)
		*sched = rows;
	else
		db_rows_free(rows);
	return n;
}

/* Run j's error as PostgreSQL text, in buf (CV_ERRLEN bytes). */
static const char *
error_text(const struct job *j, char *buf)
{
	snprintf(buf, CV_ERRLEN, "%s", j->verdict.error);
	finish_text(buf, strlen(buf));
	return buf;
}

/*
 * What decide_finish() needs to know of the end of a retry (attempt > 0)
 * of schedule id: the latest slot with a row (a run of any attempt, or a
 * slot that did not run), and how many retries of other slots wait or
 * run.  0, or -1 with err set.
 */
static int
read_view(struct db *db, const char *id, struct finish_view *v, char *err,
    size_t errlen)
{
	const char *p[1] = {id};
	struct db_rows *rows;
	const char *last;

	rows = db_query(db, SQL_finish_chain, 1, p, err, errlen);
	if (rows == NULL)
		return -1;
	last = db_rows_value(rows, 0, 0);
	v->last = last != NULL ? strtoll(last, NULL, 10) : CV_NEVER;
	v->others = strtoll(db_rows_value(rows, 0, 1), NULL, 10);
	db_rows_free(rows);
	return 0;
}

/*
 * The schedule's new state as a finish_states row, appended to states; 0,
 * or -1 out of memory.  The error text was made PostgreSQL text.
 */
static int
state_row(json_t *states, const struct sched *s, const struct next_state *ns)
{
	json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:b, s:o, s:o, s:I, s:I, "
	                      "s:s*, s:o, s:b, s:b, s:o, s:I, s:I, s:b}",
	    "id", s->id, "status", ns->status, "repeat", (json_int_t)ns->repeat,
	    "retry", (json_int_t)ns->retry, "retry_pending", ns->retry_pending,
	    "next_slot",
	    batch_int(
	        slot_ms(&s->tm, ns->next_slot), ns->next_slot == CV_NEVER),
	    "next_run",
	    batch_int(slot_ms(&s->tm, ns->next_run), ns->next_run == CV_NEVER),
	    "counts_run", (json_int_t)ns->counts_run, "counts_error",
	    (json_int_t)ns->counts_error, "error", ns->error, "delay",
	    batch_int(ns->delay, ns->delay < 0), "slot_too", ns->slot_too,
	    "queue", ns->queue, "retry_slot",
	    batch_int(
	        slot_ms(&s->tm, ns->retry_slot), ns->retry_slot == CV_NEVER),
	    "retry_repeat", (json_int_t)ns->retry_repeat, "retry_delay",
	    (json_int_t)ns->retry_delay, "from_retries", ns->from_retries);

	return o == NULL ? -1 : json_array_append_new(states, o);
}

/* Writes the schedule's new state: finish_states with one row. */
static int
write_state(struct db *db, const struct sched *s, const struct next_state *ns,
    char *err, size_t errlen)
{
	json_t *states = json_array();
	struct db_rows *rows;

	if (states == NULL || state_row(states, s, ns) == -1) {
		json_decref(states);
		return log_errbuf(err, errlen, "out of memory");
	}
	/* The schedules_wake trigger tells the supervisors. */
	rows = batch_query(db, SQL_finish_states, NULL, states, err, errlen);
	if (rows == NULL)
		return -1;
	db_rows_free(rows);
	return 0;
}

/*
 * Updates schedule id, no longer active or with a row that cannot be read,
 * for the end of run j: counters only.
 */
static int
write_counts(struct db *db, const char *id, const struct job *j, char *err,
    size_t errlen)
{
	enum outcome o = run_status_outcome(j->verdict.status);
	int ok = o == OUTCOME_SUCCESS;
	int bad =
	    o == OUTCOME_FAILURE || o == OUTCOME_TIMEOUT || o == OUTCOME_LOST;
	char error[CV_ERRLEN];
	const char *p[4] = {id, ok ? "1" : "0", bad ? "1" : "0",
	    bad ? error_text(j, error) : NULL};

	return db_exec(db, SQL_finish_counts, 4, p, err, errlen) == -1 ? -1 : 0;
}

/*
 * Deletes schedule id if it was deleted by the API (deleted_at set) and
 * the run just recorded was its last in flight; its runs and pending
 * requests go by ON DELETE CASCADE.  0, or -1 with err set.
 */
static int
drop_if_idle(struct db *db, const char *id, const struct job *j, char *err,
    size_t errlen)
{
	const char *p[1] = {id};
	int n = db_exec(db, SQL_finish_drop, 1, p, err, errlen);

	if (n > 0)
		log_info(
		    "run %s: the last run in flight of deleted schedule "
		    "%s is recorded; the schedule and its history are gone",
		    j->run_id, id);
	return n == -1 ? -1 : 0;
}

/*
 * The schedule half of finish_run() for a triggered run: one run in
 * flight fewer, and nothing else (no retry, no done or dead, counters
 * unchanged; last_run_at was set at the claim).  0, or -1 with err set.
 */
static int
end_triggered(struct db *db, const char *schedule_id, const struct job *j,
    char *err, size_t errlen)
{
	const char *p[1] = {schedule_id};
	struct db_rows *rows =
	    db_query(db, SQL_finish_triggered, 1, p, err, errlen);
	int deleted;

	if (rows == NULL)
		return -1;
	/* No row: the schedule was deleted meanwhile. */
	deleted = db_rows_count(rows) > 0 &&
	    strcmp(db_rows_value(rows, 0, 0), "t") == 0;
	db_rows_free(rows);
	return deleted ? drop_if_idle(db, schedule_id, j, err, errlen) : 0;
}

/*
 * The schedule half of finish_run() for a slot run, inside its
 * transaction; row `row` of rows is its row, locked.  With states, the
 * common case (an active schedule, a first attempt) is appended there as
 * a finish_states row instead of written.
 */
static int
move_schedule(struct db *db, const char *schedule_id, const struct job *j,
    const struct db_rows *rows, int row, json_t *states, char *err,
    size_t errlen)
{
	struct next_state ns;
	struct sched s;
	char why[CV_ERRLEN];
	int r = 0;

	if (sched_load(rows, row, &s, why, sizeof(why)) == -1) {
		/* Still one run in flight fewer, or it could never go. */
		log_warnx(
		    "run %s: schedule %s: %s", j->run_id, schedule_id, why);
		if (write_counts(db, schedule_id, j, err, errlen) == -1)
			return -1;
		return drop_if_idle(db, schedule_id, j, err, errlen);
	}
	if (!s.active) {
		r = write_counts(db, s.id, j, err, errlen);
		if (r == 0 && s.deleted)
			r = drop_if_idle(db, schedule_id, j, err, errlen);
	} else {
		struct finish_view v = {CV_NEVER, 0};
		char error[CV_ERRLEN];
		const struct run_end e = {j->slot, j->repeat, j->attempt,
		    j->verdict.status, j->verdict.retryable,
		    error_text(j, error),
		    j->fs == FRAME_OK ? j->res.retry_after : 0};

		if (j->attempt == 0 ||
		    (r = read_view(db, s.id, &v, err, errlen)) == 0) {
			decide_finish(&s, &e, &v, &ns);
			if (states == NULL || j->attempt > 0)
				r = write_state(db, &s, &ns, err, errlen);
			else if (state_row(states, &s, &ns) == -1)
				r = log_errbuf(err, errlen, "out of memory");
		}
	}
	sched_clear(&s);
	return r;
}

/* A result refused by the fencing token. */
static void
lease_lost(const struct job *j)
{
	log_warnx("run %s: no longer ours (lease lost); its result (%s) "
	          "changes nothing",
	    j->run_id, run_status_name(j->verdict.status));
}

/* The index of run id's job in v, or n. */
static size_t
batch_job(const struct job *const *v, size_t n, const char *id)
{
	size_t i = 0;

	while (i < n && strcmp(v[i]->run_id, id) != 0)
		i++;
	return i;
}

/*
 * The attempts of v (n of them) that their agents accepted (202): each
 * waits for its agent's report without a lease (finish_waiting, one
 * statement for them all); its schedule keeps it in flight and does not
 * move.  Marks one[i] 2 for each written, 1 for each no longer ours, and
 * leaves the others.  0, or -1 with err set.
 */
static int
write_waiting(struct db *db, int64_t lease, const struct job *const *v,
    size_t n, char *one, char *err, size_t errlen)
{
	char l[24];
	json_t *arr = json_array(), *o;
	struct db_rows *rows;
	size_t k, nw = 0;
	char *out;

	for (size_t i = 0; arr != NULL && i < n; i++) {
		if (v[i]->verdict.status != RUN_WAITING)
			continue;
		out = output_text(v[i]->res.output ? v[i]->res.output : "",
		    v[i]->res.output ? v[i]->res.output_len : 0);
		o = out ? json_pack("{s:s, s:I, s:I, s:s}", "id", v[i]->run_id,
		              "st", (json_int_t)v[i]->res.http_status, "ms",
		              (json_int_t)(v[i]->res.duration_us / 1000), "out",
		              out)
		        : NULL;
		free(out);
		if (o == NULL || json_array_append_new(arr, o) == -1) {
			json_decref(arr);
			arr = NULL;
		}
		one[i] = 1;
		nw++;
	}
	if (arr == NULL)
		return log_errbuf(err, errlen, "out of memory");
	if (nw == 0) {
		json_decref(arr);
		return 0;
	}
	if ((rows = batch_query(db, SQL_finish_waiting,
	         num(l, sizeof(l), lease), arr, err, errlen)) == NULL)
		return -1;
	for (int r = 0; r < db_rows_count(rows); r++)
		if ((k = batch_job(v, n, db_rows_value(rows, r, 0))) < n)
			one[k] = 2;
	db_rows_free(rows);
	return 0;
}

/* 1 if v is the end of a fan-out job's attempt (not a 202: it waits). */
static int
job_end(const struct job *v)
{
	return v->kind == KIND_JOB && v->verdict.status != RUN_WAITING;
}

/*
 * The ends of the fan-out jobs' attempts of v (n of them; bare as for
 * run_cols()), inside the caller's transaction: the runs in one
 * finish_runs (which locks their schedules in id order and returns their
 * rows: the retry policy of each), what follows for each job in one
 * finish_jobs, and their executions in one fanout_settle.  Marks one[i]
 * 2 for each written, 1 for each no longer ours.  0, or -1 with err set.
 */
static int
end_job_runs(struct db *db, int64_t lease, const struct job *const *v, size_t n,
    int bare, char *one, char *err, size_t errlen)
{
	json_t *arr = json_array(), *next = json_array(), *o;
	struct db_rows *rows = NULL, *ends = NULL;
	char l[24], why[CV_ERRLEN];
	size_t k, nj = 0;
	int r = -1;

	for (size_t i = 0; arr != NULL && i < n; i++) {
		if (!job_end(v[i]))
			continue;
		one[i] = 1;
		nj++;
		if ((o = run_row(v[i], bare)) == NULL ||
		    json_array_append_new(arr, o) == -1) {
			json_decref(arr);
			arr = NULL;
		}
	}
	if (arr == NULL || next == NULL) {
		log_errbuf(err, errlen, "out of memory");
		goto out;
	}
	if (nj == 0) {
		r = 0;
		goto out;
	}
	rows = batch_query(
	    db, SQL_finish_runs, num(l, sizeof(l), lease), arr, err, errlen);
	arr = NULL;
	if (rows == NULL)
		goto out;
	for (int i = 0; i < db_rows_count(rows); i++) {
		struct sched s;
		int loaded;

		k = batch_job(v, n, db_rows_value(rows, i, SCHED_COL_COUNT));
		if (k == n)
			continue;
		one[k] = 2;
		loaded = sched_load(rows, i, &s, why, sizeof(why)) == 0;
		o = fanout_next(v[k], loaded ? &s.pol : NULL);
		if (loaded)
			sched_clear(&s);
		if (o == NULL || json_array_append_new(next, o) == -1) {
			log_errbuf(err, errlen, "out of memory");
			goto out;
		}
	}
	if (json_array_size(next) > 0) {
		ends =
		    batch_query(db, SQL_finish_jobs, NULL, next, err, errlen);
		next = NULL;
		if (ends == NULL ||
		    pipeline_advance_rows(db, ends, err, errlen) == -1 ||
		    fanout_settle_rows(db, ends, err, errlen) == -1)
			goto out;
	}
	r = 0;
out:
	json_decref(arr);
	json_decref(next);
	db_rows_free(rows);
	db_rows_free(ends);
	return r;
}

/*
 * Records the end of run j (its verdict decided) and moves its schedule
 * on, inside the caller's transaction, under the lease `lease` (the
 * supervisor id that claimed it); bare leaves out the output and error
 * text (see write_run).  Returns 1 when written, 0 when the lease was lost
 * (the result then changes nothing and is logged), or -1 with err set on
 * a database error: the caller rolls back.
 */
int
finish_run_in(struct db *db, int64_t lease, const struct job *j, int bare,
    char *err, size_t errlen)
{
	struct db_rows *rows = NULL;
	char sid[40];
	int r;

	if (j->verdict.status == RUN_WAITING || j->kind == KIND_JOB) {
		char one = 0;

		/* A job's 202 waits as any agent attempt's does. */
		if ((job_end(j) ? end_job_runs(
		                      db, lease, &j, 1, bare, &one, err, errlen)
		                : write_waiting(db, lease, &j, 1, &one, err,
		                      errlen)) == -1)
			return -1;
		if (one != 2)
			lease_lost(j);
		return one == 2;
	}
	if ((r = write_run(db, lease, j, bare, &rows, err, errlen)) <= 0) {
		if (r == 0)
			lease_lost(j);
		return r;
	}
	snprintf(sid, sizeof(sid), "%s", j->schedule_id);
	r = j->triggered
	    ? end_triggered(db, sid, j, err, errlen)
	    : move_schedule(db, sid, j, rows, 0, NULL, err, errlen);
	db_rows_free(rows);
	return r == -1 ? -1 : 1;
}

/*
 * The fanout attempts of v that ended without their jobs (their
 * expansion failed, or they were lost, interrupted or crashed before
 * writing their plan): their executions fail with the error
 * (fanout_ended), unless jobs of theirs are open.  0, or -1 with err set.
 */
static int
end_fanouts(struct db *db, const struct job *const *v, size_t n, char *err,
    size_t errlen)
{
	json_t *arr = json_array(), *o;
	struct db_rows *rows;
	char error[CV_ERRLEN];

	for (size_t i = 0; arr != NULL && i < n; i++) {
		if (v[i]->kind != KIND_FANOUT ||
		    v[i]->verdict.status == RUN_SUCCEEDED ||
		    v[i]->verdict.status == RUN_WAITING)
			continue;
		o = json_pack("{s:s, s:s}", "id", v[i]->run_id, "error",
		    v[i]->verdict.error[0]
		        ? error_text(v[i], error)
		        : run_status_name(v[i]->verdict.status));
		if (o == NULL || json_array_append_new(arr, o) == -1) {
			json_decref(arr);
			arr = NULL;
		}
	}
	if (arr == NULL)
		return log_errbuf(err, errlen, "out of memory");
	if (json_array_size(arr) == 0) {
		json_decref(arr);
		return 0;
	}
	if ((rows = batch_query(
	         db, SQL_fanout_ended, NULL, arr, err, errlen)) == NULL)
		return -1;
	db_rows_free(rows);
	return 0;
}

/*
 * The jobs of the n runs of v, ended by the caller's transaction, and
 * their executions: finish_jobs, once their schedules moved on (whether a
 * retry was queued says whether a failed job waits for it).  0, or -1
 * with err set.
 */
static int
end_jobs(struct db *db, const struct job *const *v, size_t n, char *err,
    size_t errlen)
{
	json_t *ids = json_array();
	struct db_rows *rows;
	int r;

	/* A fan-out job's attempt had its job written (end_job_runs()). */
	for (size_t i = 0; ids != NULL && i < n; i++)
		if (!job_end(v[i]) &&
		    json_array_append_new(
		        ids, json_pack("{s:s}", "id", v[i]->run_id)) == -1) {
			json_decref(ids);
			ids = NULL;
		}
	if (ids == NULL)
		return log_errbuf(err, errlen, "out of memory");
	if ((rows = batch_query(db, SQL_finish_jobs, NULL, ids, err, errlen)) ==
	    NULL)
		return -1;
	r = db_rows_count(rows) > 0 ? fanout_settle_rows(db, rows, err, errlen)
	                            : 0;
	db_rows_free(rows);
	return r == -1 ? -1 : end_fanouts(db, v, n, err, errlen);
}

/*
 * finish_run_in() in a transaction of its own.  Returns 0 when done or
 * fenced out, or -1 with err set on a database error: nothing was written
 * and the caller keeps the job to try again.
 */
int
finish_run(struct db *db, int64_t lease, const struct job *j, int bare,
    char *err, size_t errlen)
{
	if (db_begin(db, err, errlen) == -1)
		return -1;
	if (finish_run_in(db, lease, j, bare, err, errlen) == -1 ||
	    end_jobs(db, &j, 1, err, errlen) == -1) {
		db_rollback(db);
		return -1;
	}
	return db_commit(db, err, errlen);
}

/* 1 if v[i] is the only job of its schedule in v (sorted by schedule). */
static int
alone(struct job *const *v, size_t n, size_t i)
{
	return (i == 0 || strcmp(v[i - 1]->schedule_id, v[i]->schedule_id)) &&
	    (i + 1 == n || strcmp(v[i + 1]->schedule_id, v[i]->schedule_id));
}

/*
 * The slot runs of batch v that can go in one finish_runs and one
 * finish_states: those
 * whose schedule has no other run in v (the second run of a schedule is
 * decided from the state the first one left).  Marks them 1 in one[].
 */
static json_t *
batch_rows(struct job *const *v, size_t n, char *one)
{
	json_t *arr = json_array(), *o;

	for (size_t i = 0; arr != NULL && i < n; i++) {
		one[i] = !v[i]->triggered && v[i]->kind != KIND_JOB &&
		    v[i]->verdict.status != RUN_WAITING && alone(v, n, i) &&
		    (o = run_row(v[i], 0)) != NULL;
		if (one[i] && json_array_append_new(arr, o) == -1) {
			json_decref(arr);
			arr = NULL;
		}
	}
	return arr;
}

/* Locks the schedules of the jobs of v in id order.  0, or -1. */
static int
lock_all(
    struct db *db, struct job *const *v, size_t n, char *err, size_t errlen)
{
	json_t *ids = json_array();
	struct db_rows *rows;

	for (size_t i = 0; ids != NULL && i < n; i++)
		if (json_array_append_new(
		        ids, json_string(v[i]->schedule_id)) == -1) {
			json_decref(ids);
			ids = NULL;
		}
	if (ids == NULL)
		return log_errbuf(err, errlen, "out of memory");
	if ((rows = batch_query(db, SQL_finish_lock, NULL, ids, err, errlen)) ==
	    NULL)
		return -1;
	log_debug("%d schedules locked first", db_rows_count(rows));
	db_rows_free(rows);
	return 0;
}

/*
 * finish_run_in() for every job of v (n of them, in schedule id order),
 * inside the caller's transaction: the slot runs of distinct schedules in
 * two statements whatever their number (finish_runs, then finish_states for
 * the schedules that simply move on), the rest one by one.  A burst ends
 * hundreds of runs per turn; a statement or two each made the loop, and
 * PostgreSQL, the bottleneck.  Returns 0, or -1 with err set: the caller
 * rolls back.
 */
int
finish_runs_in(struct db *db, int64_t lease, struct job *const *v, size_t n,
    char *err, size_t errlen)
{
	char *one = calloc(n ? n : 1, 1), lease_s[24];
	json_t *arr = NULL, *states = NULL;
	struct db_rows *rows = NULL;
	int r = -1, nrows;
	size_t nbatch, nwait = 0, njob = 0;
	int fan = 0;

	if (one == NULL || (arr = batch_rows(v, n, one)) == NULL ||
	    (states = json_array()) == NULL) {
		log_errbuf(err, errlen, "out of memory");
		goto out;
	}
	/*
	 * Every schedule of the batch locked first, in id order, when some
	 * are written one by one below: each would lock its own only then,
	 * after finish_runs locked the others, out of the order the API's batch
	 * delete locks them in (a deadlock, one of the two aborted).
	 */
	for (size_t i = 0; i < n; i++) {
		nwait += v[i]->verdict.status == RUN_WAITING;
		njob += job_end(v[i]);
		fan |= v[i]->kind == KIND_JOB;
	}
	/*
	 * Schedules are locked before executions, in every transaction: a
	 * batch with a fan-out job's attempt (whose execution a 202 or an
	 * end locks) locks all its schedules first, in id order, as one
	 * with results written one by one does.
	 */
	nbatch = json_array_size(arr);
	if (n > 1 && (nbatch + nwait + njob < n || fan) &&
	    lock_all(db, v, n, err, errlen) == -1)
		goto out;
	if (nbatch > 0) {
		rows = batch_query(db, SQL_finish_runs, num(lease_s, 24, lease),
		    arr, err, errlen);
		arr = NULL;
		if (rows == NULL)
			goto out;
		nrows = db_rows_count(rows);
		log_debug("%zu results in one statement", nbatch);
		for (int i = 0; i < nrows; i++) {
			size_t k = batch_job((const struct job *const *)v, n,
			    db_rows_value(rows, i, SCHED_COL_COUNT));

			if (k == n) /* cannot be: finish_runs had its id */
				continue;
			one[k] = 2; /* written */
			if (move_schedule(db, v[k]->schedule_id, v[k], rows, i,
			        states, err, errlen) == -1)
				goto out;
		}
		if (json_array_size(states) > 0) {
			struct db_rows *done = batch_query(
			    db, SQL_finish_states, NULL, states, err, errlen);

			states = NULL;
			if (done == NULL)
				goto out;
			db_rows_free(done);
		}
	}
	if (nwait > 0 &&
	    write_waiting(db, lease, (const struct job *const *)v, n, one, err,
	        errlen) == -1)
		goto out;
	if (njob > 0 &&
	    end_job_runs(db, lease, (const struct job *const *)v, n, 0, one,
	        err, errlen) == -1)
		goto out;
	for (size_t i = 0; i < n; i++) {
		if (one[i] == 1) /* in a batch, no row: not ours */
			lease_lost(v[i]);
		else if (!one[i] &&
		    finish_run_in(db, lease, v[i], 0, err, errlen) == -1)
			goto out;
	}
	r = end_jobs(db, (const struct job *const *)v, n, err, errlen);
out:
	json_decref(arr);
	json_decref(states);
	db_rows_free(rows);
	free(one);
	return r;
}
