/*
 * claim.c: turning due schedules into runs, in one transaction per batch.
 * The batch is read with FOR UPDATE SKIP LOCKED, so that any number of
 * supervisors can claim side by side and each schedule goes to one of them;
 * every run row is inserted with this supervisor's id as its lease, and the
 * unique (schedule, slot, attempt) makes a second claim of a slot a no-op.
 * Slots that will not run get their rows here too: skipped (overlap),
 * missed (dropped by the catch-up policy, one row saying how many) and
 * expired (past the starting deadline).  The runners are forked only after
 * the commit, by the caller, from the jobs this file returns.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cronvisord.h"

#define CLAIM_SQL                                                              \
	"SELECT " SCHED_COLUMNS " FROM schedules WHERE status = 'active' "     \
	"AND next_run_at <= to_timestamp($2) ORDER BY next_run_at LIMIT $1 "   \
	"FOR UPDATE SKIP LOCKED"

#define INSERT_RUN_SQL                                                         \
	"INSERT INTO runs (id, schedule_id, repeat_number, attempt, slot_at, " \
	"status, supervisor_id, started_at, finished_at, note) "               \
	"VALUES ($1, $2, $3, $4, to_timestamp($5), $6, "                       \
	"CASE WHEN $6 = 'running' THEN $7::bigint END, "                       \
	"CASE WHEN $6 = 'running' THEN now() END, "                            \
	"CASE WHEN $6 <> 'running' THEN now() END, $8) "                       \
	"ON CONFLICT DO NOTHING RETURNING id"

#define UPDATE_SQL                                                             \
	"UPDATE schedules SET next_run_at = to_timestamp($2), "                \
	"next_slot_at = to_timestamp($3), slot_seq = $4, "                     \
	"running = running + $5, retry_pending = false, "                      \
	"last_run_at = CASE WHEN $5 > 0 THEN now() ELSE last_run_at END, "     \
	"updated_at = now() WHERE id = $1"

static const char *const catch_up_names[] = {"latest", "all", "none"};

/* One claim: where it is, and the jobs it made so far. */
struct claim {
	struct db *db;           /* the transaction's connection */
	const struct config *cf; /* defaults for run specs */
	int64_t sv_id;           /* our lease: the fencing token */
	int64_t now;             /* when the claim began */
	struct job *jobs;        /* runs to start, newest first */
	int njobs;               /* entries in jobs */
	char *err;               /* the caller's message buffer */
	size_t errlen;           /* its size */
};

/* Epoch seconds as a parameter; NULL for CV_NEVER. */
static const char *
param_time(int64_t t, char *buf, size_t len)
{
	if (t == CV_NEVER)
		return NULL;
	snprintf(buf, len, "%lld", (long long)t);
	return buf;
}

/*
 * Inserts one runs row.  Returns 1 if it was inserted, 0 if the row was
 * there already (the slot was claimed before), -1 on a database error.
 */
static int
insert_run(struct claim *cl, const struct sched *s, const char *id,
    int64_t repeat, int64_t attempt, int64_t slot, const char *status,
    const char *note)
{
	char rep[24], att[24], at[24], lease[24];
	const char *p[8] = {id, s->id, rep, att, at, status, lease, note};
	struct db_rows *rows;
	int n;

	snprintf(rep, sizeof(rep), "%lld", (long long)repeat);
	snprintf(att, sizeof(att), "%lld", (long long)attempt);
	snprintf(at, sizeof(at), "%lld", (long long)slot);
	snprintf(lease, sizeof(lease), "%lld", (long long)cl->sv_id);
	rows = db_query(cl->db, INSERT_RUN_SQL, 8, p, cl->err, cl->errlen);
	if (rows == NULL)
		return -1;
	n = db_rows_count(rows);
	db_rows_free(rows);
	return n;
}

/* Records a slot that did not run, with why. */
static int
record_not_run(struct claim *cl, const struct sched *s, const char *what,
    int64_t slot, const char *note)
{
	char id[RUN_ID_MAX + 32];

	snprintf(
	    id, sizeof(id), "sched-%s-%s-%lld", s->id8, what, (long long)slot);
	return insert_run(cl, s, id, s->slot_seq, 0, slot, what, note) < 0 ? -1
	                                                                   : 0;
}

/* Makes the job of a run just inserted and puts it on the claim's list. */
static int
add_job(struct claim *cl, const struct sched *s, const char *id, int64_t slot,
    int64_t repeat, int64_t attempt)
{
	struct job *j = calloc(1, sizeof(*j));

	if (j == NULL || (j->name = strdup(s->name)) == NULL) {
		free(j);
		return log_errbuf(cl->err, cl->errlen, "out of memory");
	}
	snprintf(j->run_id, sizeof(j->run_id), "%s", id);
	snprintf(j->schedule_id, sizeof(j->schedule_id), "%s", s->id);
	j->slot = slot;
	j->repeat = repeat;
	j->attempt = attempt;
	j->fd = -1;
	if (sched_spec(s, j, cl->cf, &j->sb, &j->spec, j->spawn_error,
	        sizeof(j->spawn_error)) == -1 &&
	    j->spawn_error[0] == '\0')
		snprintf(j->spawn_error, sizeof(j->spawn_error),
		    "the run could not be prepared");
	/* The spec must not point into s, which dies with the claim. */
	j->spec.schedule = j->name;
	j->next = cl->jobs;
	cl->jobs = j;
	cl->njobs++;
	return 0;
}

/* Inserts a run of slot and makes its job; 1 made, 0 claimed before. */
static int
fire(struct claim *cl, const struct sched *s, int64_t slot, int64_t repeat,
    int64_t attempt)
{
	char id[RUN_ID_MAX];
	int r;

	if (run_id(id, sizeof(id), s->id, repeat, attempt) == -1)
		return log_errbuf(
		    cl->err, cl->errlen, "schedule %s: bad id", s->id);
	if ((r = insert_run(
	         cl, s, id, repeat, attempt, slot, "running", NULL)) <= 0)
		return r;
	return add_job(cl, s, id, slot, repeat, attempt) == -1 ? -1 : 1;
}

/* The schedule's pending item after the claim. */
static int
update(struct claim *cl, const struct sched *s, int64_t next_run,
    int64_t next_slot, int64_t fired)
{
	char a[24], b[24], seq[24], f[24];
	const char *p[5] = {s->id, param_time(next_run, a, sizeof(a)),
	    param_time(next_slot, b, sizeof(b)), seq, f};

	snprintf(seq, sizeof(seq), "%lld", (long long)s->slot_seq);
	snprintf(f, sizeof(f), "%lld", (long long)fired);
	return db_exec(cl->db, UPDATE_SQL, 5, p, cl->err, cl->errlen);
}

/* A pending retry: one run of the same slot, then nothing until it ends. */
static int
claim_retry(struct claim *cl, struct sched *s)
{
	int r = fire(cl, s, s->next_slot_at, s->retry_repeat, s->retry);

	if (r < 0)
		return -1;
	return update(cl, s, CV_NEVER, s->next_slot_at, r);
}

/* Writes the rows of the slots a plan drops. */
static int
record_plan(struct claim *cl, const struct sched *s, const struct slot_plan *p)
{
	char note[256], a[40], b[40];

	if (p->missed > 0) {
		timefmt_utc(p->missed_first, a, sizeof(a));
		timefmt_utc(p->missed_last, b, sizeof(b));
		snprintf(note, sizeof(note),
		    "%s%lld slot%s from %s to %s "
		    "not run (catch_up: %s)",
		    p->exact ? "" : "at least ", (long long)p->missed,
		    p->missed == 1 ? "" : "s", a, b,
		    catch_up_names[s->cu.mode]);
		if (record_not_run(cl, s, "missed", p->missed_first, note))
			return -1;
	}
	if (p->expired > 0) {
		timefmt_utc(p->expired_first, a, sizeof(a));
		snprintf(note, sizeof(note),
		    "%lld slot%s from %s past "
		    "starting_deadline_seconds %lld",
		    (long long)p->expired, p->expired == 1 ? "" : "s", a,
		    (long long)s->cu.deadline);
		if (record_not_run(cl, s, "expired", p->expired_first, note))
			return -1;
	}
	return 0;
}

/* When the slot after `slot` should start, jitter included. */
static int64_t
start_time(const struct sched *s, int64_t slot)
{
	struct slot nx;

	if (slot == CV_NEVER || s->jitter <= 0)
		return slot;
	return slot +
	    slot_jitter(s->id, slot,
	        slot_next(&s->tm, slot, &nx) ? nx.at : CV_NEVER, s->jitter);
}

/* Due slots: the catch-up plan, the overlap policy, the next slot. */
static int
claim_slots(struct claim *cl, struct sched *s)
{
	static _Thread_local struct slot_plan plan;
	int64_t fired = 0, buffered = CV_NEVER;
	int r;

	slot_plan(&s->tm, &s->cu, s->next_slot_at, cl->now, &plan);
	if (record_plan(cl, s, &plan) == -1)
		return -1;
	/*
	 * skip looks only at runs of earlier claims: the slots of one plan
	 * are what the catch-up policy chose to run (catch_up: all), and
	 * skipping them for a sibling fired a moment ago would make `all`
	 * mean `latest` under the default overlap policy.
	 */
	for (int i = 0; i < plan.nfire; i++) {
		if (s->running > 0 && s->overlap == SCHEDULE_OVERLAP_SKIP) {
			if (record_not_run(cl, s, "skipped", plan.fire[i],
			        "the previous run was still running"))
				return -1;
		} else if (s->running + fired > 0 &&
		    s->overlap == SCHEDULE_OVERLAP_BUFFER_ONE) {
			buffered = plan.fire[i];
		} else {
			if ((r = fire(cl, s, plan.fire[i], s->slot_seq, 0)) < 0)
				return -1;
			s->slot_seq += r;
			fired += r;
		}
	}
	if (buffered != CV_NEVER)
		return update(cl, s, CV_NEVER, buffered, fired);
	if (s->anchor_completion && fired > 0)
		return update(cl, s, CV_NEVER, CV_NEVER, fired);
	return update(cl, s, start_time(s, plan.next), plan.next, fired);
}

/*
 * A schedule whose row cannot be run (written by hand with, say, a zone
 * this machine does not know) is made dead with the reason, in the claim's
 * transaction: left due, it would be claimed again at once, forever.
 */
static int
shelve(struct claim *cl, const char *id, const char *why)
{
	const char *p[2] = {id, why};

	log_warnx("schedule %s: %s; it is now dead", id, why);
	return db_exec(cl->db,
	           "UPDATE schedules SET status = 'dead', next_run_at = NULL, "
	           "last_error = $2, updated_at = now() WHERE id = $1",
	           2, p, cl->err, cl->errlen) == -1
	    ? -1
	    : 0;
}

/*
 * Claims up to `limit` due schedules in one transaction and returns the
 * number of runs to start, their jobs in *jobs (the caller forks them and
 * frees them).  Returns -1 with err set on a database error, after rolling
 * back: nothing was claimed.  A schedule whose row cannot be run is
 * made dead with the reason (see shelve()).
 */
int
claim_due(struct db *db, const struct config *cf, int64_t sv_id, int limit,
    struct job **jobs, char *err, size_t errlen)
{
	struct claim cl = {db, cf, sv_id, 0, NULL, 0, err, errlen};
	struct db_rows *rows = NULL;
	char lim[24], now[32];
	const char *p[2] = {lim, now};
	struct timespec ts;
	struct sched s;
	char why[CV_ERRLEN];

	/*
	 * "Due" is decided by this machine's clock, the one the timer runs
	 * on, to the microsecond; not by the database's, which may be another
	 * machine's, nor by time(), which glibc reads from a clock that lags
	 * by up to a tick and would make a slot look not yet due.
	 */
	clock_gettime(CLOCK_REALTIME, &ts);
	cl.now = (int64_t)ts.tv_sec;
	snprintf(lim, sizeof(lim), "%d", limit);
	snprintf(now, sizeof(now), "%lld.%06ld", (long long)ts.tv_sec,
	    ts.tv_nsec / 1000);
	if (db_begin(db, err, errlen) == -1 ||
	    (rows = db_query(db, CLAIM_SQL, 2, p, err, errlen)) == NULL)
		goto fail;
	for (int i = 0; i < db_rows_count(rows); i++) {
		if (sched_load(rows, i, &s, why, sizeof(why)) == -1) {
			if (shelve(&cl, db_rows_value(rows, i, 0), why) == -1)
				goto fail;
			continue;
		}
		if ((s.retry_pending ? claim_retry(&cl, &s)
		                     : claim_slots(&cl, &s)) == -1) {
			sched_clear(&s);
			goto fail;
		}
		sched_clear(&s);
	}
	db_rows_free(rows);
	if (db_commit(db, err, errlen) == -1)
		goto fail_nocommit;
	*jobs = cl.jobs;
	return cl.njobs;
fail:
	db_rows_free(rows);
	db_rollback(db);
fail_nocommit:
	job_free_list(cl.jobs);
	return -1;
}
