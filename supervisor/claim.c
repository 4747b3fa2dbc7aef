/*
 * claim.c: turning due schedules into runs, in one transaction per batch.
 * The batch is read with FOR UPDATE SKIP LOCKED, so that any number of
 * supervisors can claim side by side and each schedule goes to one of them;
 * every run row is inserted with this supervisor's id as its lease, and the
 * unique (schedule, slot, attempt) makes a second claim of a slot a no-op.
 * Slots that will not run get their rows here too: skipped (overlap),
 * missed (dropped by the catch-up policy, one row saying how many) and
 * expired (past the starting deadline).  The same transaction claims
 * trigger-now requests (the `triggers` rows the API inserts): each becomes
 * one run outside the slot sequence, sched-<id8>-t<request id>, and its
 * row is deleted.  The runners are forked only after the commit, by the
 * caller, from the jobs this file returns.  A schedule with deleted_at set
 * is never claimed: it only waits for its runs in flight (finish.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cronvisord.h"

/*
 * Due by $2, claim_ahead_ms from now ($3): a schedule with a run in flight
 * only by now, so that its overlap policy is decided at the instant, when
 * that run may have ended, and not a little before.
 */
#define DUE_WHERE                                                              \
	"status = 'active' AND deleted_at IS NULL "                            \
	"AND next_run_at <= to_timestamp($2) "                                 \
	"AND (running = 0 OR next_run_at <= to_timestamp($3))"

/*
 * The due schedules, shared fairly between their owners: the first $4 due
 * (by next_run_at, through schedules_due) are ranked within their owner,
 * and the claim takes the first of every owner, then the second of every
 * owner, and so on, each rank in next_run_at order.  An owner with a
 * thousand schedules due cannot push another's one schedule out of the
 * batch.  The owner is the last of SCHED_COLUMNS.  The
 * ranking picks twice as many as the claim may take (rows a peer holds
 * are skipped), and only those are read again, by their primary key, and
 * locked: joined to every due row instead, a claim of one row would read
 * them all.  The outer WHERE is checked again on the row locked (a peer
 * may have moved it).
 */
#define CLAIM_SQL                                                                      \
	"SELECT " SCHED_COLUMNS " FROM unnest(ARRAY(SELECT due_id "                    \
	"FROM (SELECT d.id AS due_id, d.next_run_at AS due_at, row_number() "          \
	"OVER (PARTITION BY d.owner ORDER BY d.next_run_at, d.id) AS "                 \
	"due_rank FROM (SELECT id, owner, next_run_at FROM schedules WHERE " DUE_WHERE \
	" ORDER BY next_run_at LIMIT $4) d) r ORDER BY due_rank, "                     \
	"due_at LIMIT 2 * $1::int)) WITH ORDINALITY AS k(due_id, due_pos) "            \
	"JOIN schedules ON schedules.id = k.due_id WHERE " DUE_WHERE                   \
	" ORDER BY k.due_pos LIMIT $1 FOR UPDATE OF schedules SKIP LOCKED"

/* The longest owner name in bytes: 200 characters of UTF-8, and a NUL. */
#define OWNER_BYTES (200 * 4 + 1)
/* A note naming an owner: the whole name, never cut inside a character. */
#define NOTE_BYTES (OWNER_BYTES + 100)

/*
 * How many due schedules a claim ranks: CLAIM_WINDOW per row it may take,
 * and at least CLAIM_WINDOW_MIN.  Not more: a claim of one row (a run
 * ended, one slot free) that sorted a thousand due rows would cost 10 ms
 * instead of a fraction of one, and a burst of 2,000 such claims would
 * hold the database for seconds (the heartbeats that ride on the same
 * loop came late enough for peers to take runs over).
 */
#define CLAIM_WINDOW     10
#define CLAIM_WINDOW_MIN 100

/*
 * Runs in flight per owner, on every supervisor, from the rows that say
 * so (runs_running): a supervisor killed with runs in flight holds them
 * until a peer declares them lost, and leaks nothing after.
 */
#define OWNERS_SQL                                                             \
	"SELECT s.owner, count(*) FROM runs r JOIN schedules s ON "            \
	"s.id = r.schedule_id WHERE r.status = 'running' GROUP BY s.owner"

/*
 * A retry that comes due while its owner is at its limit waits this many
 * seconds, and says so in last_error, before it is looked at again.
 */
#define OWNER_WAIT_SECONDS 5

#define OWNER_WAIT_SQL                                                         \
	"UPDATE schedules SET next_run_at = now() + make_interval(secs => "    \
	"$2::int), last_error = $3, updated_at = now() WHERE id = $1"

/*
 * Pending trigger-now requests, oldest first, each locked together with
 * its schedule and both SKIP LOCKED: a request or a schedule another
 * supervisor holds is left to it, so that two supervisors never wait on
 * each other (no deadlock) and never claim one request twice.
 */
#define TRIGGERS_SQL                                                           \
	"SELECT t.id, t.schedule_id, t.payload::text, "                        \
	"floor(extract(epoch FROM t.created_at))::bigint "                     \
	"FROM triggers t JOIN schedules s ON s.id = t.schedule_id "            \
	"ORDER BY t.id LIMIT $1 FOR UPDATE OF t, s SKIP LOCKED"

#define TRIGGER_SCHED_SQL                                                      \
	"SELECT " SCHED_COLUMNS " FROM schedules WHERE id = $1"

/*
 * Records the run of request $1: slot_at is the request's created_at as
 * PostgreSQL has it (microseconds kept, no round trip through the client),
 * attempt 0, triggered.  Requests of one transaction share their time;
 * triggered runs are left out of the uniqueness of (schedule, slot,
 * attempt) for that (sql/002_api.sql), their id is what makes them unique.
 */
#define TRIGGER_RUN_SQL                                                        \
	"INSERT INTO runs (id, schedule_id, repeat_number, attempt, slot_at, " \
	"status, supervisor_id, started_at, finished_at, note, error, "        \
	"triggered) SELECT $2::text, t.schedule_id, $3::bigint, 0, "           \
	"t.created_at, $4::text, "                                             \
	"CASE WHEN $4::text = 'running' THEN $5::bigint END, "                 \
	"CASE WHEN $4::text = 'running' THEN now() END, "                      \
	"CASE WHEN $4::text <> 'running' THEN now() END, $6::text, $7::text, " \
	"true FROM triggers t WHERE t.id = $1 ON CONFLICT DO NOTHING "         \
	"RETURNING id"

#define TRIGGER_START_SQL                                                      \
	"UPDATE schedules SET running = running + 1, last_run_at = now(), "    \
	"updated_at = now() WHERE id = $1"

/*
 * A run claimed ahead of its instant ($9, µs; NULL: now) starts at the
 * instant: its runner waits for it.  The slot ($5) is in epoch ms, as are
 * the times of UPDATE_SQL and FIRES_SQL: slots keep the milliseconds of
 * the instant the user gave (slot_ms()).
 */
#define INSERT_RUN_SQL                                                         \
	"INSERT INTO runs (id, schedule_id, repeat_number, attempt, slot_at, " \
	"status, supervisor_id, started_at, finished_at, note) "               \
	"VALUES ($1, $2, $3, $4, to_timestamp($5::float8 / 1e3), $6, "         \
	"CASE WHEN $6 = 'running' THEN $7::bigint END, "                       \
	"CASE WHEN $6 = 'running' THEN greatest(now(), "                       \
	"to_timestamp($9::float8 / 1e6)) END, "                                \
	"CASE WHEN $6 <> 'running' THEN now() END, $8) "                       \
	"ON CONFLICT DO NOTHING RETURNING id"

#define UPDATE_SQL                                                             \
	"UPDATE schedules SET next_run_at = to_timestamp($2::float8 / 1e3), "  \
	"next_slot_at = to_timestamp($3::float8 / 1e3), slot_seq = $4, "       \
	"running = running + $5, retry_pending = false, "                      \
	"last_run_at = CASE WHEN $5 > 0 THEN now() ELSE last_run_at END, "     \
	"updated_at = now() WHERE id = $1"

/*
 * INSERT_RUN_SQL of a slot run and UPDATE_SQL of its schedule, for the
 * common claim of one slot (fire_one()), for every such schedule of the
 * claim in one statement: $1 the lease, $2 a JSON array of rows: the run
 * id, the schedule, the repeat (= slot_seq before), the slot, the start
 * (µs, null: now), the next_run_at and next_slot_at after it, anchor:
 * completion (both NULL once the run is in flight).  The counters move by
 * the rows inserted (none: the slot was claimed before).  Returns the
 * ids of the runs inserted.
 */
#define FIRES_SQL                                                                \
	"WITH v AS (SELECT * FROM json_to_recordset($2::json) AS v(id text, "    \
	"sid uuid, rep bigint, slot bigint, start bigint, next_run bigint, "     \
	"next_slot bigint, anchor boolean)), ins AS (INSERT INTO runs (id, "     \
	"schedule_id, repeat_number, attempt, slot_at, status, supervisor_id, "  \
	"started_at) SELECT id, sid, rep, 0, to_timestamp(slot::float8 / 1e3), " \
	"'running', "                                                            \
	"$1::bigint, greatest(now(), to_timestamp(start::float8 / 1e6)) "        \
	"FROM v ON CONFLICT DO NOTHING RETURNING id, schedule_id), "             \
	"up AS (UPDATE schedules SET next_run_at = CASE WHEN ins.id IS NOT "     \
	"NULL AND v.anchor THEN NULL ELSE to_timestamp(v.next_run::float8 / "    \
	"1e3) END, "                                                             \
	"next_slot_at = CASE WHEN ins.id IS NOT NULL AND v.anchor THEN NULL "    \
	"ELSE to_timestamp(v.next_slot::float8 / 1e3) END, slot_seq = v.rep + "  \
	"(ins.id IS NOT NULL)::int, running = running + "                        \
	"(ins.id IS NOT NULL)::int, retry_pending = false, last_run_at = "       \
	"CASE WHEN ins.id IS NOT NULL THEN now() ELSE last_run_at END, "         \
	"updated_at = now() FROM v LEFT JOIN ins ON ins.schedule_id = v.sid "    \
	"WHERE schedules.id = v.sid) SELECT id FROM ins"

static const char *const catch_up_names[] = {"latest", "all", "none"};

/* Runs in flight of one owner, as the claim goes. */
struct owner_count {
	char *owner;     /* schedules.owner */
	int64_t running; /* its runs in flight, with the claim's own */
};

/* One claim: where it is, and the jobs it made so far. */
struct claim {
	struct db *db;              /* the transaction's connection */
	const struct config *cf;    /* defaults for run specs */
	int64_t sv_id;              /* our lease: the fencing token */
	int64_t now_us;             /* when the claim began, µs */
	int64_t ahead_us;           /* the same plus claim_ahead_ms */
	int limit;                  /* runs this claim may start at most */
	struct job *jobs;           /* runs to start, newest first */
	int njobs;                  /* entries in jobs */
	json_t *fires;              /* FIRES_SQL rows not yet written */
	struct job **fired;         /* their jobs, in jobs already */
	int nfired;                 /* entries in fires and fired */
	char *err;                  /* the caller's message buffer */
	size_t errlen;              /* its size */
	struct owner_count *owners; /* OWNERS_SQL, and the runs started */
	int nowners;                /* entries in owners */
	int owners_read;            /* OWNERS_SQL was read */
	const char *owner;          /* owner of the schedule being claimed */
	int64_t owner_max;          /* runs in flight an owner may have */
};

/* The limit of runs in flight per owner: owner_max_running or its default. */
static int64_t
owner_max(const struct config *cf)
{
	if (cf->owner_max_running > 0)
		return cf->owner_max_running;
	return cf->max_concurrent_runs / 2 > 0 ? cf->max_concurrent_runs / 2
	                                       : 1;
}

/* Adds an owner with n runs in flight to the claim's list; -1 on OOM. */
static int
owner_add(struct claim *cl, const char *owner, int64_t n)
{
	struct owner_count *v;

	v = realloc(cl->owners, (size_t)(cl->nowners + 1) * sizeof(*v));
	if (v == NULL)
		return -1;
	cl->owners = v;
	if ((v[cl->nowners].owner = strdup(owner)) == NULL)
		return -1;
	v[cl->nowners++].running = n;
	return 0;
}

/*
 * The runs in flight of cl->owner, reading OWNERS_SQL first if need be:
 * *count points into the claim's list (an owner with none so far is
 * added).  -1 with err set on a database error or out of memory.
 */
static int
owner_slot(struct claim *cl, int64_t **count)
{
	struct db_rows *rows;
	int n;

	if (!cl->owners_read) {
		if ((rows = db_query(cl->db, OWNERS_SQL, 0, NULL, cl->err,
		         cl->errlen)) == NULL)
			return -1;
		cl->owners_read = 1;
		n = db_rows_count(rows);
		for (int i = 0; i < n; i++)
			if (owner_add(cl, db_rows_value(rows, i, 0),
			        strtoll(db_rows_value(rows, i, 1), NULL, 10)) ==
			    -1) {
				db_rows_free(rows);
				return log_errbuf(
				    cl->err, cl->errlen, "out of memory");
			}
		db_rows_free(rows);
	}
	for (int i = 0; i < cl->nowners; i++)
		if (strcmp(cl->owners[i].owner, cl->owner) == 0) {
			*count = &cl->owners[i].running;
			return 0;
		}
	if (owner_add(cl, cl->owner, 0) == -1)
		return log_errbuf(cl->err, cl->errlen, "out of memory");
	*count = &cl->owners[cl->nowners - 1].running;
	return 0;
}

/*
 * Whether cl->owner is at its limit of runs in flight: 1 yes (note, of
 * len bytes, then says so), 0 no, -1 on a database error.
 */
static int
owner_full(struct claim *cl, char *note, size_t len)
{
	int64_t *count;

	if (owner_slot(cl, &count) == -1)
		return -1;
	if (*count < cl->owner_max)
		return 0;
	snprintf(note, len,
	    "owner %s at its limit of %lld runs in flight "
	    "(owner_max_running)",
	    cl->owner, (long long)cl->owner_max);
	return 1;
}

/* Counts n more runs in flight for cl->owner; -1 as owner_slot(). */
static int
owner_took(struct claim *cl, int64_t n)
{
	int64_t *count;

	if (owner_slot(cl, &count) == -1)
		return -1;
	*count += n;
	return 0;
}

/* Frees the claim's list of owners. */
static void
owners_free(struct claim *cl)
{
	for (int i = 0; i < cl->nowners; i++)
		free(cl->owners[i].owner);
	free(cl->owners);
}

/* Slot t of s as a parameter, epoch ms (slot_ms()); NULL for CV_NEVER. */
static const char *
param_time(const struct sched *s, int64_t t, char *buf, size_t len)
{
	if (t == CV_NEVER)
		return NULL;
	snprintf(buf, len, "%lld", (long long)slot_ms(&s->tm, t));
	return buf;
}

/*
 * Inserts one runs row.  Returns 1 if it was inserted, 0 if the row was
 * there already (the slot was claimed before), -1 on a database error.
 */
static int
insert_run(struct claim *cl, const struct sched *s, const char *id,
    int64_t repeat, int64_t attempt, int64_t slot, const char *status,
    const char *note, int64_t start_us)
{
	char rep[24], att[24], at[24], lease[24], start[24];
	const char *p[9] = {id, s->id, rep, att, at, status, lease, note,
	    start_us > 0 ? start : NULL};
	struct db_rows *rows;
	int n;

	snprintf(rep, sizeof(rep), "%lld", (long long)repeat);
	snprintf(att, sizeof(att), "%lld", (long long)attempt);
	snprintf(at, sizeof(at), "%lld", (long long)slot_ms(&s->tm, slot));
	snprintf(lease, sizeof(lease), "%lld", (long long)cl->sv_id);
	snprintf(start, sizeof(start), "%lld", (long long)start_us);
	rows = db_query(cl->db, INSERT_RUN_SQL, 9, p, cl->err, cl->errlen);
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
	return insert_run(cl, s, id, s->slot_seq, 0, slot, what, note, 0) < 0
	    ? -1
	    : 0;
}

/*
 * Makes the job of a run just inserted and puts it on the claim's list;
 * triggered marks a trigger-now run (its environment says so, its end
 * leaves the schedule's state machine alone); start_us is when it may
 * start (0: at once).
 */
static int
add_job(struct claim *cl, const struct sched *s, const char *id, int64_t slot,
    int64_t repeat, int64_t attempt, int triggered, int64_t start_us)
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
	j->triggered = triggered;
	j->fd = -1;
	if (sched_spec(s, j, cl->cf, &j->sb, &j->spec, j->spawn_error,
	        sizeof(j->spawn_error)) == -1 &&
	    j->spawn_error[0] == '\0')
		snprintf(j->spawn_error, sizeof(j->spawn_error),
		    "the run could not be prepared");
	/* The spec must not point into s, which dies with the claim. */
	j->spec.schedule = j->name;
	j->spec.not_before_us = start_us;
	j->next = cl->jobs;
	cl->jobs = j;
	cl->njobs++;
	return 0;
}

/*
 * Inserts a run of slot and makes its job; 1 made, 0 claimed before.  It
 * starts at start_us (µs), which may be up to claim_ahead_ms ahead.
 */
static int
fire(struct claim *cl, const struct sched *s, int64_t slot, int64_t repeat,
    int64_t attempt, int64_t start_us)
{
	char id[RUN_ID_MAX];
	int r;

	if (run_id(id, sizeof(id), s->id, repeat, attempt) == -1)
		return log_errbuf(
		    cl->err, cl->errlen, "schedule %s: bad id", s->id);
	if ((r = insert_run(cl, s, id, repeat, attempt, slot, "running", NULL,
	         start_us)) <= 0)
		return r;
	return add_job(cl, s, id, slot, repeat, attempt, 0, start_us) == -1 ? -1
	                                                                    : 1;
}

/* The schedule's pending item after the claim. */
static int
update(struct claim *cl, const struct sched *s, int64_t next_run,
    int64_t next_slot, int64_t fired)
{
	char a[24], b[24], seq[24], f[24];
	const char *p[5] = {s->id, param_time(s, next_run, a, sizeof(a)),
	    param_time(s, next_slot, b, sizeof(b)), seq, f};

	snprintf(seq, sizeof(seq), "%lld", (long long)s->slot_seq);
	snprintf(f, sizeof(f), "%lld", (long long)fired);
	return db_exec(cl->db, UPDATE_SQL, 5, p, cl->err, cl->errlen);
}

/*
 * A run that may not be skipped (a retry, a once schedule's only slot)
 * while its owner is at its limit: it stays pending, due again
 * OWNER_WAIT_SECONDS later, and last_error says why it waits.  A once
 * schedule past its starting deadline by then expires as usual.
 */
static int
owner_wait(struct claim *cl, const struct sched *s, const char *note)
{
	char secs[24], why[NOTE_BYTES + 16];
	const char *p[3] = {s->id, secs, why};

	snprintf(secs, sizeof(secs), "%d", OWNER_WAIT_SECONDS);
	snprintf(why, sizeof(why), "waiting: %s", note);
	return db_exec(cl->db, OWNER_WAIT_SQL, 3, p, cl->err, cl->errlen);
}

/* A pending retry: one run of the same slot, then nothing until it ends. */
static int
claim_retry(struct claim *cl, struct sched *s)
{
	char note[NOTE_BYTES];
	int r;

	if ((r = owner_full(cl, note, sizeof(note))) != 0)
		return r == -1 ? -1 : owner_wait(cl, s, note);
	r = fire(
	    cl, s, s->next_slot_at, s->retry_repeat, s->retry, s->next_run_us);
	if (r < 0 || owner_took(cl, r) == -1)
		return -1;
	return update(cl, s, CV_NEVER, s->next_slot_at, r);
}

/* Writes the rows of the slots a plan drops. */
static int
record_plan(struct claim *cl, const struct sched *s, const struct slot_plan *p)
{
	char note[256], a[40], b[40];

	if (p->missed > 0) {
		timefmt_utc_ms(slot_ms(&s->tm, p->missed_first), a, sizeof(a));
		timefmt_utc_ms(slot_ms(&s->tm, p->missed_last), b, sizeof(b));
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
		timefmt_utc_ms(slot_ms(&s->tm, p->expired_first), a, sizeof(a));
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

/*
 * When the run of slot, claimed now, starts (µs): at the row's
 * next_run_at, to the µs, which is when the claim was due, and never
 * before the slot itself, to its millisecond (a plan's slot may lie up to
 * claim_ahead_ms ahead).  Not at the slot's jittered time: next_run_at already
 * has the jitter when there is one, and where it has none (a first run, the
 * slot after a retry chain, a held slot) the run starts as it always did, at
 * once, instead of its runner waiting out the jitter.
 */
static int64_t
start_us(const struct sched *s, int64_t slot)
{
	int64_t us = slot_ms(&s->tm, slot) * 1000;

	return us > s->next_run_us ? us : s->next_run_us;
}

/*
 * The common claim, one slot to fire and nothing in the way (no run in
 * flight, room left): its run and the schedule's next slot, the same as
 * fire() then update() below, as a FIRES_SQL row written with the others
 * by fire_all().  Its job is made now and dropped there if the slot was
 * claimed before.
 */
static int
fire_one(struct claim *cl, struct sched *s, int64_t slot, int64_t start_us,
    int64_t next_run, int64_t next_slot)
{
	char id[RUN_ID_MAX];
	struct job **v;
	json_t *o;

	if (run_id(id, sizeof(id), s->id, s->slot_seq, 0) == -1)
		return log_errbuf(
		    cl->err, cl->errlen, "schedule %s: bad id", s->id);
	if ((cl->fires == NULL && (cl->fires = json_array()) == NULL) ||
	    (v = realloc(cl->fired, (size_t)(cl->nfired + 1) * sizeof(*v))) ==
	        NULL)
		return log_errbuf(cl->err, cl->errlen, "out of memory");
	cl->fired = v;
	o = json_pack("{s:s, s:s, s:I, s:I, s:o, s:o, s:o, s:b}", "id", id,
	    "sid", s->id, "rep", (json_int_t)s->slot_seq, "slot",
	    (json_int_t)slot_ms(&s->tm, slot), "start",
	    batch_int(start_us, start_us <= 0), "next_run",
	    batch_int(slot_ms(&s->tm, next_run), next_run == CV_NEVER),
	    "next_slot",
	    batch_int(slot_ms(&s->tm, next_slot), next_slot == CV_NEVER),
	    "anchor", s->anchor_completion);
	if (o == NULL || json_array_append_new(cl->fires, o) == -1 ||
	    add_job(cl, s, id, slot, s->slot_seq, 0, 0, start_us) == -1)
		return log_errbuf(cl->err, cl->errlen, "out of memory");
	cl->fired[cl->nfired++] = cl->jobs;
	s->slot_seq++;
	return 0;
}

/* Removes job j, made by this claim, from its list. */
static void
drop_job(struct claim *cl, struct job *j)
{
	struct job **pp = &cl->jobs;

	while (*pp != NULL && *pp != j)
		pp = &(*pp)->next;
	if (*pp == NULL)
		return;
	*pp = j->next;
	j->next = NULL;
	job_free(j);
	cl->njobs--;
}

/*
 * Writes the claim's FIRES_SQL rows, and drops the jobs of the slots that
 * were claimed before (no row inserted).  0, or -1 with err set.
 */
static int
fire_all(struct claim *cl)
{
	char lease[24];
	struct db_rows *rows;
	int n;

	if (cl->nfired == 0)
		return 0;
	snprintf(lease, sizeof(lease), "%lld", (long long)cl->sv_id);
	rows = batch_query(
	    cl->db, FIRES_SQL, lease, cl->fires, cl->err, cl->errlen);
	cl->fires = NULL;
	if (rows == NULL)
		return -1;
	n = db_rows_count(rows);
	log_debug("%d runs claimed in one statement", n);
	for (int i = 0; i < cl->nfired; i++) {
		int k = 0;

		while (k < n &&
		    strcmp(db_rows_value(rows, k, 0), cl->fired[i]->run_id) !=
		        0)
			k++;
		if (k == n)
			drop_job(cl, cl->fired[i]);
	}
	db_rows_free(rows);
	cl->nfired = 0;
	return 0;
}

/* Due slots: the catch-up plan, the overlap policy, the next slot. */
static int
claim_slots(struct claim *cl, struct sched *s)
{
	static _Thread_local struct slot_plan plan;
	int64_t fired = 0, buffered = CV_NEVER, held = CV_NEVER;
	char note[NOTE_BYTES];
	int64_t now, ahead;
	int r;

	/*
	 * The plan is made at the real time, so that lateness (catch-up,
	 * starting deadline) is what it is; only a slot that falls due
	 * within claim_ahead_ms is planned as if its instant had come.  The
	 * plan counts whole seconds, and every slot of s lies tm.ms after
	 * its second: taking that off the clock first makes "slot <= now"
	 * mean that the slot's instant, to the millisecond, has come.
	 */
	now = civil_fdiv(cl->now_us - s->tm.ms * 1000, 1000000);
	ahead = civil_fdiv(cl->ahead_us - s->tm.ms * 1000, 1000000);
	slot_plan(&s->tm, &s->cu, s->next_slot_at,
	    s->next_slot_at > now && s->next_slot_at <= ahead ? s->next_slot_at
	                                                      : now,
	    &plan);
	if (record_plan(cl, s, &plan) == -1)
		return -1;
	if (plan.nfire == 1 && s->running == 0 && cl->njobs < cl->limit) {
		if ((r = owner_full(cl, note, sizeof(note))) == -1)
			return -1;
		if (r == 0)
			return owner_took(cl, 1) == -1
			    ? -1
			    : fire_one(cl, s, plan.fire[0],
			          start_us(s, plan.fire[0]),
			          start_time(s, plan.next), plan.next);
	}
	/*
	 * skip looks only at runs of earlier claims: the slots of one plan
	 * are what the catch-up policy chose to run (catch_up: all), and
	 * skipping them for a sibling fired a moment ago would make `all`
	 * mean `latest` under the default overlap policy.
	 */
	for (int i = 0; i < plan.nfire; i++) {
		/*
		 * total_repeats successful runs end a schedule.  With as many
		 * runs in flight as it still needs, it starts no more (overlap
		 * allow, or catch_up all, would run past the count) and skips
		 * no slot: the slots after them exist only should one of them
		 * fail, and then its retry comes first and the catch-up policy
		 * deals with them after, from here.
		 */
		if (s->pol.total_repeats > 0 && s->tm.kind != SCHED_KIND_ONCE &&
		    s->running + fired > 0 &&
		    s->repeat + s->running + fired >= s->pol.total_repeats) {
			held = plan.fire[i];
			break;
		}
		/*
		 * A once schedule's only slot can meet a run in flight only
		 * when that run was triggered; skipping it would leave the
		 * schedule active with nothing due, forever: it waits instead.
		 */
		if (s->running > 0 && s->overlap == SCHEDULE_OVERLAP_SKIP &&
		    s->tm.kind != SCHED_KIND_ONCE) {
			if (record_not_run(cl, s, "skipped", plan.fire[i],
			        "the previous run was still running"))
				return -1;
		} else if (s->running + fired > 0 &&
		    (s->overlap == SCHEDULE_OVERLAP_BUFFER_ONE ||
		        s->tm.kind == SCHED_KIND_ONCE)) {
			buffered = plan.fire[i];
		} else if ((fired > 0 &&
		               s->overlap != SCHEDULE_OVERLAP_ALLOW) ||
		    cl->njobs >= cl->limit) {
			/*
			 * The slots a plan has left run one after the other
			 * (catch_up: all): a schedule holds one pending item,
			 * so two of its runs in flight that both failed would
			 * keep one retry and lose the other.  Nor may a claim
			 * start more runs than it has room for.  The first
			 * slot not fired stays pending; the next plan, when
			 * the run ends or at the next claim, starts from it.
			 */
			held = plan.fire[i];
			break;
		} else if ((r = owner_full(cl, note, sizeof(note))) != 0) {
			/*
			 * The owner has as many runs in flight as it may: the
			 * slot is skipped, as overlap skips it, with why; a
			 * once schedule's only slot waits instead (see
			 * above).
			 */
			if (r == -1)
				return -1;
			if (s->tm.kind == SCHED_KIND_ONCE)
				return owner_wait(cl, s, note);
			if (record_not_run(
			        cl, s, "skipped", plan.fire[i], note))
				return -1;
		} else {
			if ((r = fire(cl, s, plan.fire[i], s->slot_seq, 0,
			         start_us(s, plan.fire[i]))) < 0 ||
			    owner_took(cl, r) == -1)
				return -1;
			s->slot_seq += r;
			fired += r;
		}
	}
	if (buffered != CV_NEVER)
		return update(cl, s, CV_NEVER, buffered, fired);
	if (held != CV_NEVER) /* due again when the run ends, or now */
		return update(cl, s,
		    fired > 0 || s->running > 0 ? CV_NEVER : held, held, fired);
	if (s->anchor_completion && fired > 0)
		return update(cl, s, CV_NEVER, CV_NEVER, fired);
	return update(cl, s, start_time(s, plan.next), plan.next, fired);
}

/*
 * Records the run of trigger request tid with the given status, note and
 * error (see TRIGGER_RUN_SQL for its time), and deletes the request.
 * Returns 1 if the run row was inserted, 0 if it could not be (a run of
 * that id or time exists: the request is dropped, with a warning), -1 on
 * a database error.
 */
static int
trigger_run(struct claim *cl, const char *tid, const char *run, int64_t repeat,
    const char *status, const char *note, const char *error)
{
	char rep[24], lease[24];
	const char *p[7] = {tid, run, rep, status, lease, note, error};
	struct db_rows *rows;
	int n;

	snprintf(rep, sizeof(rep), "%lld", (long long)repeat);
	snprintf(lease, sizeof(lease), "%lld", (long long)cl->sv_id);
	rows = db_query(cl->db, TRIGGER_RUN_SQL, 7, p, cl->err, cl->errlen);
	if (rows == NULL)
		return -1;
	if ((n = db_rows_count(rows)) == 0)
		log_warnx("run %s: a run of that id or time exists; the "
		          "request is dropped",
		    run);
	db_rows_free(rows);
	if (db_exec(cl->db, "DELETE FROM triggers WHERE id = $1", 1, p, cl->err,
	        cl->errlen) == -1)
		return -1;
	return n;
}

/*
 * Starts the run of request tid of schedule s, which slot (the request's
 * time, in seconds) and payload (its JSON, NULL: the schedule's) describe:
 * the run row, the job, and one more run in flight for the schedule.
 */
static int
trigger_start(struct claim *cl, struct sched *s, const char *tid,
    const char *run, int64_t slot, const char *payload)
{
	const char *p[1] = {s->id};
	int r;

	if (payload != NULL && sched_set_payload(s, payload) == -1)
		return log_errbuf(cl->err, cl->errlen, "out of memory");
	r = trigger_run(cl, tid, run, s->slot_seq, "running", NULL, NULL);
	if (r <= 0)
		return r;
	if (add_job(cl, s, run, slot, s->slot_seq, 0, 1, 0) == -1 ||
	    db_exec(cl->db, TRIGGER_START_SQL, 1, p, cl->err, cl->errlen) == -1)
		return -1;
	return 0;
}

/*
 * One trigger-now request, row i of TRIGGERS_SQL, its schedule locked: the
 * schedule is read again here (an earlier request of the same batch may
 * have started a run of it).  A deleted schedule's request is dropped; with
 * `overlap: skip` and a run in flight the run is recorded skipped; else it
 * starts, whatever the schedule's status.  A schedule row that cannot be
 * run gets a failed run saying why.
 */
static int
claim_trigger(struct claim *cl, const struct db_rows *trig, int i)
{
	const char *tid = db_rows_value(trig, i, 0);
	const char *p[1] = {db_rows_value(trig, i, 1)};
	struct db_rows *rows;
	struct sched s;
	char run[RUN_ID_MAX], why[CV_ERRLEN], owner[OWNER_BYTES];
	char note[NOTE_BYTES];
	int r;

	if ((rows = db_query(
	         cl->db, TRIGGER_SCHED_SQL, 1, p, cl->err, cl->errlen)) == NULL)
		return -1;
	if (db_rows_count(rows) == 0) { /* cannot be: we hold its lock */
		db_rows_free(rows);
		return 0;
	}
	snprintf(run, sizeof(run), "sched-%.8s-t%s", p[0], tid);
	snprintf(owner, sizeof(owner), "%s",
	    db_rows_value(rows, 0, db_rows_columns(rows) - 1));
	cl->owner = owner;
	if (sched_load(rows, 0, &s, why, sizeof(why)) == -1) {
		db_rows_free(rows);
		log_warnx("run %s: schedule %s: %s", run, p[0], why);
		return trigger_run(cl, tid, run, 0, "failed", NULL, why) < 0
		    ? -1
		    : 0;
	}
	db_rows_free(rows);
	if (s.deleted) {
		log_info(
		    "run %s: dropped: schedule %s is being deleted", run, s.id);
		r = db_exec(cl->db, "DELETE FROM triggers WHERE id = $1", 1,
		    &tid, cl->err, cl->errlen);
	} else if (s.overlap == SCHEDULE_OVERLAP_SKIP && s.running > 0) {
		r = trigger_run(cl, tid, run, s.slot_seq, "skipped",
		    "triggered while a run was in flight (overlap: skip)",
		    NULL);
	} else if ((r = owner_full(cl, note, sizeof(note))) != 0) {
		if (r == 1)
			r = trigger_run(
			    cl, tid, run, s.slot_seq, "skipped", note, NULL);
	} else if ((r = owner_took(cl, 1)) == 0) {
		r = trigger_start(cl, &s, tid, run,
		    strtoll(db_rows_value(trig, i, 3), NULL, 10),
		    db_rows_value(trig, i, 2));
	}
	sched_clear(&s);
	return r < 0 ? -1 : 0;
}

/*
 * Claims up to limit trigger-now requests; returns how many rows it took
 * (each is consumed, whether it started a run or not), or -1.
 */
static int
claim_triggers(struct claim *cl, int limit)
{
	char lim[24];
	const char *p[1] = {lim};
	struct db_rows *rows;
	int n;

	snprintf(lim, sizeof(lim), "%d", limit);
	if ((rows = db_query(
	         cl->db, TRIGGERS_SQL, 1, p, cl->err, cl->errlen)) == NULL)
		return -1;
	n = db_rows_count(rows);
	for (int i = 0; i < n; i++)
		if (claim_trigger(cl, rows, i) == -1) {
			db_rows_free(rows);
			return -1;
		}
	db_rows_free(rows);
	return n;
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
 * Claims up to limit due schedules of the open transaction; returns how
 * many rows it took, or -1.
 */
static int
claim_schedules(struct claim *cl, int limit, const char *ahead, const char *now)
{
	char lim[24], win[24], why[CV_ERRLEN];
	const char *p[4] = {lim, ahead, now, win};
	struct db_rows *rows;
	struct sched s;
	int n, r = 0;

	snprintf(lim, sizeof(lim), "%d", limit);
	snprintf(win, sizeof(win), "%d",
	    limit * CLAIM_WINDOW > CLAIM_WINDOW_MIN ? limit * CLAIM_WINDOW
	                                            : CLAIM_WINDOW_MIN);
	if ((rows = db_query(cl->db, CLAIM_SQL, 4, p, cl->err, cl->errlen)) ==
	    NULL)
		return -1;
	n = db_rows_count(rows);
	for (int i = 0; i < n && r != -1; i++) {
		if (sched_load(rows, i, &s, why, sizeof(why)) == -1) {
			r = shelve(cl, db_rows_value(rows, i, 0), why);
			continue;
		}
		cl->owner = db_rows_value(rows, i, db_rows_columns(rows) - 1);
		r = s.retry_pending ? claim_retry(cl, &s) : claim_slots(cl, &s);
		sched_clear(&s);
	}
	db_rows_free(rows);
	if (r != -1)
		r = fire_all(cl);
	return r == -1 ? -1 : n;
}

/*
 * Claims, in one transaction, up to `limit` rows: pending trigger-now
 * requests first (they were asked for now), then due schedules.  The runs
 * to start are returned in *jobs (the caller forks them and frees them).
 * Returns the number of rows taken, which is below limit when nothing more
 * is pending now (one row may make no run or several); or -1 with err
 * set on a database error, after rolling back: nothing was claimed.  A
 * schedule whose row cannot be run is made dead with the reason (see
 * shelve()).
 */
int
claim_due(struct db *db, const struct config *cf, int64_t sv_id, int limit,
    struct job **jobs, char *err, size_t errlen)
{
	struct claim cl = {.db = db,
	    .cf = cf,
	    .sv_id = sv_id,
	    .limit = limit,
	    .err = err,
	    .errlen = errlen,
	    .owner_max = owner_max(cf)};
	char now[32], ahead[32];
	struct timespec ts;
	int64_t us;
	int ntrig = 0, nsched = 0;

	/*
	 * "Due" is decided by this machine's clock, the one the timer runs
	 * on, to the microsecond; not by the database's, which may be another
	 * machine's, nor by time(), which glibc reads from a clock that lags
	 * by up to a tick and would make a slot look not yet due.
	 */
	clock_gettime(CLOCK_REALTIME, &ts);
	/*
	 * And claim_ahead_ms ahead: the runs of slots due by then are
	 * claimed now, their runners wait for the instant (child.c), and the
	 * commit and the fork are out of the way when it comes.
	 */
	us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 +
	    cf->claim_ahead_ms * 1000;
	cl.now_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
	cl.ahead_us = us;
	snprintf(ahead, sizeof(ahead), "%lld.%06lld", (long long)(us / 1000000),
	    (long long)(us % 1000000));
	snprintf(now, sizeof(now), "%lld.%06ld", (long long)ts.tv_sec,
	    ts.tv_nsec / 1000);
	if (db_begin(db, err, errlen) == -1 ||
	    (ntrig = claim_triggers(&cl, limit)) == -1 ||
	    (ntrig < limit &&
	        (nsched = claim_schedules(&cl, limit - ntrig, ahead, now)) ==
	            -1))
		goto fail;
	if (db_commit(db, err, errlen) == -1)
		goto fail_nocommit;
	*jobs = cl.jobs;
	json_decref(cl.fires);
	free(cl.fired);
	owners_free(&cl);
	return ntrig + nsched;
fail:
	db_rollback(db);
fail_nocommit:
	job_free_list(cl.jobs);
	json_decref(cl.fires);
	free(cl.fired);
	owners_free(&cl);
	return -1;
}
