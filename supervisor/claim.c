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
 * is never claimed: it only waits for its runs in flight (finish.c).  The
 * statements are those of sql/queries/claim.sql.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cronvisord.h"

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
 * A retry that comes due while its owner is at its limit waits this many
 * seconds, and says so in last_error, before it is looked at again.
 */
#define OWNER_WAIT_SECONDS 5

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
	json_t *fires;              /* claim_fires rows not yet written */
	struct job **fired;         /* their jobs, in jobs already */
	int nfired;                 /* entries in fires and fired */
	char *err;                  /* the caller's message buffer */
	size_t errlen;              /* its size */
	struct owner_count *owners; /* claim_owners, and the runs started */
	int nowners;                /* entries in owners */
	int owners_read;            /* claim_owners was read */
	const char *owner;          /* owner of the schedule being claimed */
	int64_t owner_max;          /* runs in flight an owner may have */
	struct agent_count *agents; /* agent requests in flight, by agent */
	int nagents;                /* entries in agents */
	int agents_read;            /* claim_agent_load was read */
	int64_t requests;           /* agent requests in flight, in all */
	const char *agent;          /* the claimed schedule's agent, or NULL */
};

/* Agent requests in flight of one agent (owner and slug), as the claim goes. */
struct agent_count {
	char *owner;     /* its owner */
	char *agent;     /* its agent_id */
	int64_t running; /* its requests in flight, with the claim's own */
	int64_t max;     /* its max_concurrent_requests, 0: none */
	char *unhealthy; /* why its jobs wait for its health, or NULL */
};

/* The limit of runs in flight per owner: owner_max_running or its default. */
int64_t
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
 * The runs in flight of cl->owner, reading claim_owners first if need be:
 * *count points into the claim's list (an owner with none so far is
 * added).  -1 with err set on a database error or out of memory.
 */
static int
owner_slot(struct claim *cl, int64_t **count)
{
	struct db_rows *rows;
	int n;

	if (!cl->owners_read) {
		if ((rows = db_query(cl->db, SQL_claim_owners, 0, NULL, cl->err,
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

/* Adds an agent's count to the claim's list; NULL on OOM. */
static struct agent_count *
agent_add(struct claim *cl, const char *owner, const char *agent, int64_t n)
{
	struct agent_count *v;

	v = realloc(cl->agents, (size_t)(cl->nagents + 1) * sizeof(*v));
	if (v == NULL)
		return NULL;
	cl->agents = v;
	v += cl->nagents;
	memset(v, 0, sizeof(*v));
	if ((v->owner = strdup(owner)) == NULL ||
	    (v->agent = strdup(agent)) == NULL) {
		free(v->owner);
		return NULL;
	}
	v->running = n;
	v->max = -1; /* not read yet */
	cl->nagents++;
	return v;
}

/*
 * The count of cl->agent (of cl->owner): claim_agent_load, which also
 * gives the requests in flight in all, is read once per claim, and the
 * agent's own limit once per agent.  NULL with err set on a database
 * error or out of memory.
 */
static struct agent_count *
agent_slot(struct claim *cl)
{
	const char *p[2] = {cl->owner, cl->agent};
	struct agent_count *a = NULL;
	struct db_rows *rows;
	int n;

	if (!cl->agents_read) {
		if ((rows = db_query(cl->db, SQL_claim_agent_load, 0, NULL,
		         cl->err, cl->errlen)) == NULL)
			return NULL;
		cl->agents_read = 1;
		n = db_rows_count(rows);
		for (int i = 0; i < n; i++) {
			int64_t c =
			    strtoll(db_rows_value(rows, i, 2), NULL, 10);

			cl->requests += c;
			if (agent_add(cl, db_rows_value(rows, i, 0),
			        db_rows_value(rows, i, 1), c) == NULL) {
				db_rows_free(rows);
				log_errbuf(
				    cl->err, cl->errlen, "out of memory");
				return NULL;
			}
		}
		db_rows_free(rows);
	}
	for (int i = 0; i < cl->nagents && a == NULL; i++)
		if (strcmp(cl->agents[i].owner, cl->owner) == 0 &&
		    strcmp(cl->agents[i].agent, cl->agent) == 0)
			a = &cl->agents[i];
	if (a == NULL && (a = agent_add(cl, cl->owner, cl->agent, 0)) == NULL) {
		log_errbuf(cl->err, cl->errlen, "out of memory");
		return NULL;
	}
	if (a->max < 0) {
		if ((rows = db_query(cl->db, SQL_claim_agent_limit, 2, p,
		         cl->err, cl->errlen)) == NULL)
			return NULL;
		a->max = db_rows_count(rows)
		    ? strtoll(db_rows_value(rows, 0, 0), NULL, 10)
		    : 0;
		if (db_rows_count(rows) &&
		    strcmp(db_rows_value(rows, 0, 1), "t") == 0 &&
		    (a->unhealthy = strdup(db_rows_value(rows, 0, 2))) ==
		        NULL) {
			db_rows_free(rows);
			log_errbuf(cl->err, cl->errlen, "out of memory");
			return NULL;
		}
		db_rows_free(rows);
	}
	return a;
}

/*
 * The room left to the claim and to cl->owner, into *room (the owner's
 * runs in flight are read once per claim).  For an agent's schedule the
 * claim's room is also what max_concurrent_requests leave, the global
 * one and the agent's: a slot held there stays due, and the next claim
 * passes over it until a request ends (claim_due).  0, or -1 on a
 * database error.
 */
static int
claim_room(struct claim *cl, struct claim_room *room)
{
	struct agent_count *a;
	int64_t *count, left;

	if (owner_slot(cl, &count) == -1)
		return -1;
	room->runs = cl->limit - cl->njobs;
	room->owner = cl->owner_max - *count;
	if (cl->agent == NULL)
		return 0;
	if ((a = agent_slot(cl)) == NULL)
		return -1;
	left = cl->cf->max_concurrent_requests - cl->requests;
	if (a->max > 0 && a->max - a->running < left)
		left = a->max - a->running;
	if (a->unhealthy != NULL) /* its jobs wait until a probe succeeds */
		left = 0;
	if (left < room->runs)
		room->runs = left;
	return 0;
}

/* Why cl->owner's slot does not run, into note (len bytes). */
static const char *
owner_note(const struct claim *cl, char *note, size_t len)
{
	snprintf(note, len,
	    "owner %s at its limit of %lld runs in flight "
	    "(owner_max_running)",
	    cl->owner, (long long)cl->owner_max);
	return note;
}

/*
 * Why cl->agent's job does not go (claim_room() left it none), into note
 * (len bytes).
 */
static const char *
agent_note(struct claim *cl, char *note, size_t len)
{
	struct agent_count *a = agent_slot(cl); /* read by claim_room() */

	if (a != NULL && a->unhealthy != NULL)
		snprintf(note, len,
		    "agent %s is unhealthy (when_unhealthy: wait): %s",
		    cl->agent, a->unhealthy);
	else
		snprintf(note, len,
		    "agent requests at their limit "
		    "(max_concurrent_requests)");
	finish_text(note, strlen(note));
	return note;
}

/*
 * Counts n more runs in flight for cl->owner, and requests for cl->agent;
 * -1 as owner_slot().
 */
static int
owner_took(struct claim *cl, int64_t n)
{
	struct agent_count *a;
	int64_t *count;

	if (owner_slot(cl, &count) == -1)
		return -1;
	*count += n;
	if (cl->agent != NULL) {
		if ((a = agent_slot(cl)) == NULL)
			return -1;
		a->running += n;
		cl->requests += n;
	}
	return 0;
}

/* Frees the claim's lists of owners and agents. */
static void
owners_free(struct claim *cl)
{
	for (int i = 0; i < cl->nowners; i++)
		free(cl->owners[i].owner);
	free(cl->owners);
	for (int i = 0; i < cl->nagents; i++) {
		free(cl->agents[i].owner);
		free(cl->agents[i].agent);
		free(cl->agents[i].unhealthy);
	}
	free(cl->agents);
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
	rows =
	    db_query(cl->db, SQL_claim_insert_run, 9, p, cl->err, cl->errlen);
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
	/*
	 * A fan-out slot expands before anything is sent (fanout.c, after
	 * the claim's commit).  An agent's request needs the job that the
	 * run's insert makes: its spec is made once the claim's runs are in
	 * (prepare_agents()).
	 */
	if (sched_fanout(s->target)) {
		j->kind = KIND_FANOUT;
		if ((j->fan_target = strdup(s->target)) == NULL ||
		    (j->owner = strdup(s->owner)) == NULL) {
			job_free(j);
			return log_errbuf(cl->err, cl->errlen, "out of memory");
		}
	} else if (sched_agent_env(s, j->agent_env, sizeof(j->agent_env)))
		j->agent = 1;
	else if (sched_spec(s, j, cl->cf, &j->sb, &j->spec, j->spawn_error,
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
	return db_exec(cl->db, SQL_claim_update, 5, p, cl->err, cl->errlen);
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
	return db_exec(cl->db, SQL_claim_owner_wait, 3, p, cl->err, cl->errlen);
}

/*
 * A schedule in a retry chain: its due retries rows (one per slot whose
 * run failed with retries left), each started as its slot's next attempt
 * when decide_retry() says so and then deleted, or left due a little
 * later (owner full) or for the next claim (this one full).  next_run_at
 * becomes the earliest row left, NULL when none is (the retries in flight
 * decide what comes next when they end).
 */
static int
claim_retries(struct claim *cl, struct sched *s)
{
	char note[NOTE_BYTES], why[NOTE_BYTES + 16], ahead[24], secs[24];
	char fired_s[24];
	const char *p[2] = {s->id, ahead};
	struct db_rows *rows;
	struct claim_room room;
	int64_t fired = 0;
	int r = 0, n;

	snprintf(ahead, sizeof(ahead), "%lld", (long long)cl->ahead_us);
	if ((rows = db_query(
	         cl->db, SQL_claim_retries, 2, p, cl->err, cl->errlen)) == NULL)
		return -1;
	n = db_rows_count(rows);
	for (int i = 0; i < n && r >= 0; i++) {
		const char *q[4] = {s->id,
		    db_rows_value(rows, i, CLAIM_RETRY_COL_SLOT_US), secs, why};
		enum slot_act act;

		if (claim_room(cl, &room) == -1) {
			r = -1;
			break;
		}
		act = decide_retry(&room);
		if (act == ACT_HOLD)
			break;
		if (act == ACT_WAIT_OWNER) {
			snprintf(secs, sizeof(secs), "%d", OWNER_WAIT_SECONDS);
			snprintf(why, sizeof(why), "waiting: %s",
			    owner_note(cl, note, sizeof(note)));
			r = db_exec(cl->db, SQL_claim_retry_wait, 4, q, cl->err,
			    cl->errlen);
			continue;
		}
		r = fire(cl, s,
		    strtoll(
		        db_rows_value(rows, i, CLAIM_RETRY_COL_SLOT), NULL, 10),
		    strtoll(db_rows_value(rows, i, CLAIM_RETRY_COL_REPEAT),
		        NULL, 10),
		    strtoll(db_rows_value(rows, i, CLAIM_RETRY_COL_ATTEMPT),
		        NULL, 10),
		    strtoll(db_rows_value(rows, i, CLAIM_RETRY_COL_DUE_US),
		        NULL, 10));
		if (r < 0 || owner_took(cl, r) == -1 ||
		    db_exec(cl->db, SQL_claim_retry_taken, 2, q, cl->err,
		        cl->errlen) == -1) {
			r = -1;
			break;
		}
		fired += r;
	}
	db_rows_free(rows);
	if (r < 0)
		return -1;
	snprintf(fired_s, sizeof(fired_s), "%lld", (long long)fired);
	p[1] = fired_s;
	return db_exec(
	    cl->db, SQL_claim_retry_update, 2, p, cl->err, cl->errlen);
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
 * fire() then update() below, as a claim_fires row written with the others
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
 * Writes the claim's claim_fires rows, and drops the jobs of the slots that
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
	    cl->db, SQL_claim_fires, lease, cl->fires, cl->err, cl->errlen);
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

/*
 * Due slots: the catch-up plan, then what decide_slot() says of each of
 * its slots, then the pending item decide_claim_end() says.
 */
static int
claim_slots(struct claim *cl, struct sched *s)
{
	static _Thread_local struct slot_plan plan;
	char note[NOTE_BYTES];
	struct claim_walk w;
	struct claim_room room = {0, 0};
	struct claim_next nx;
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
	decide_walk_init(&w);
	for (int i = 0; i < plan.nfire; i++) {
		if (claim_room(cl, &room) == -1)
			return -1;
		switch (decide_slot(s, &w, plan.fire[i], &room)) {
		case ACT_FIRE:
			/*
			 * The common claim, one slot and nothing else of the
			 * schedule in flight, goes in one statement with the
			 * others (fire_one()); the pending item is the one
			 * of a slot that did not fire (the statement makes
			 * an `anchor: completion` one NULL once it fired).
			 */
			if (plan.nfire == 1 && s->running == 0) {
				decide_claim_end(s, &w, &plan, &nx);
				return owner_took(cl, 1) == -1
				    ? -1
				    : fire_one(cl, s, plan.fire[0],
				          start_us(s, plan.fire[0]),
				          nx.next_run, nx.next_slot);
			}
			if ((r = fire(cl, s, plan.fire[i], s->slot_seq, 0,
			         start_us(s, plan.fire[i]))) < 0 ||
			    owner_took(cl, r) == -1)
				return -1;
			s->slot_seq += r;
			w.fired += r;
			break;
		case ACT_SKIP:
			if (record_not_run(cl, s, "skipped", plan.fire[i],
			        "the previous run was still running"))
				return -1;
			break;
		case ACT_SKIP_OWNER:
			if (record_not_run(cl, s, "skipped", plan.fire[i],
			        owner_note(cl, note, sizeof(note))))
				return -1;
			break;
		case ACT_WAIT_OWNER:
			return owner_wait(
			    cl, s, owner_note(cl, note, sizeof(note)));
		case ACT_BUFFER:
			break;
		case ACT_HOLD:
			i = plan.nfire;
			break;
		}
	}
	decide_claim_end(s, &w, &plan, &nx);
	/*
	 * A schedule passed over with nothing changed (its agent had no
	 * request to spare when the claim came to it) keeps its row as it
	 * is: rewriting it would cost a write per passed-over row and claim.
	 */
	if (w.fired == 0 && plan.missed == 0 && plan.expired == 0 &&
	    nx.next_slot == s->next_slot_at && nx.next_run != CV_NEVER &&
	    slot_ms(&s->tm, nx.next_run) * 1000 == s->next_run_us)
		return 0;
	return update(cl, s, nx.next_run, nx.next_slot, w.fired);
}

/*
 * Records the run of trigger request tid with the given status, note and
 * error (see claim_trigger_run for its time), and deletes the request.
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
	rows =
	    db_query(cl->db, SQL_claim_trigger_run, 7, p, cl->err, cl->errlen);
	if (rows == NULL)
		return -1;
	if ((n = db_rows_count(rows)) == 0)
		log_warnx("run %s: a run of that id or time exists; the "
		          "request is dropped",
		    run);
	db_rows_free(rows);
	if (db_exec(cl->db, SQL_claim_trigger_delete, 1, p, cl->err,
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
	    db_exec(cl->db, SQL_claim_trigger_start, 1, p, cl->err,
	        cl->errlen) == -1)
		return -1;
	return 0;
}

/*
 * One trigger-now request, row i of claim_triggers, its schedule locked: the
 * schedule is read again here (an earlier request of the same batch may
 * have started a run of it).  A deleted schedule's request is dropped; with
 * `overlap: skip` and a run in flight the run is recorded skipped; else it
 * starts, whatever the schedule's status.  A schedule row that cannot be
 * run gets a failed run saying why.
 */
static int
claim_trigger(struct claim *cl, const struct db_rows *trig, int i)
{
	const char *tid = db_rows_value(trig, i, CLAIM_TRIGGER_COL_ID);
	const char *p[1] = {db_rows_value(trig, i, CLAIM_TRIGGER_COL_SCHEDULE)};
	struct db_rows *rows;
	struct sched s;
	char run[RUN_ID_MAX], why[CV_ERRLEN], owner[OWNER_BYTES];
	char note[NOTE_BYTES], agent[80];
	struct claim_room room;
	int r;

	if ((rows = db_query(cl->db, SQL_claim_trigger_sched, 1, p, cl->err,
	         cl->errlen)) == NULL)
		return -1;
	if (db_rows_count(rows) == 0) { /* cannot be: we hold its lock */
		db_rows_free(rows);
		return 0;
	}
	snprintf(run, sizeof(run), "sched-%.8s-t%s", p[0], tid);
	snprintf(owner, sizeof(owner), "%s",
	    db_rows_value(rows, 0, SCHED_COL_OWNER));
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
		r = db_exec(cl->db, SQL_claim_trigger_delete, 1, &tid, cl->err,
		    cl->errlen);
	} else if (s.overlap == SCHEDULE_OVERLAP_SKIP && s.running > 0) {
		r = trigger_run(cl, tid, run, s.slot_seq, "skipped",
		    "triggered while a run was in flight (overlap: skip)",
		    NULL);
	} else if ((cl->agent = sched_agent(&s, agent, sizeof(agent))),
	    (r = claim_room(cl, &room)) == -1) {
		/* a database error */
	} else if (room.owner <= 0) {
		r = trigger_run(cl, tid, run, s.slot_seq, "skipped",
		    owner_note(cl, note, sizeof(note)), NULL);
	} else if (cl->agent != NULL && room.runs <= 0) {
		r = trigger_run(cl, tid, run, s.slot_seq, "skipped",
		    agent_note(cl, note, sizeof(note)), NULL);
	} else if ((r = owner_took(cl, 1)) == 0) {
		r = trigger_start(cl, &s, tid, run,
		    strtoll(db_rows_value(trig, i, CLAIM_TRIGGER_COL_CREATED),
		        NULL, 10),
		    db_rows_value(trig, i, CLAIM_TRIGGER_COL_PAYLOAD));
	}
	cl->agent = NULL;
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
	if ((rows = db_query(cl->db, SQL_claim_triggers, 1, p, cl->err,
	         cl->errlen)) == NULL)
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
	return db_exec(cl->db, SQL_claim_shelve, 2, p, cl->err, cl->errlen) ==
	        -1
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
	char lim[24], win[24], why[CV_ERRLEN], agent[80], maxreq[24];
	const char *p[5] = {lim, ahead, now, win, maxreq};
	struct db_rows *rows;
	struct sched s;
	int n, r = 0;

	snprintf(lim, sizeof(lim), "%d", limit);
	snprintf(win, sizeof(win), "%d",
	    limit * CLAIM_WINDOW > CLAIM_WINDOW_MIN ? limit * CLAIM_WINDOW
	                                            : CLAIM_WINDOW_MIN);
	snprintf(maxreq, sizeof(maxreq), "%lld",
	    (long long)cl->cf->max_concurrent_requests);
	if ((rows = db_query(
	         cl->db, SQL_claim_due, 5, p, cl->err, cl->errlen)) == NULL)
		return -1;
	n = db_rows_count(rows);
	for (int i = 0; i < n && r != -1; i++) {
		if (sched_load(rows, i, &s, why, sizeof(why)) == -1) {
			r = shelve(
			    cl, db_rows_value(rows, i, SCHED_COL_ID), why);
			continue;
		}
		cl->owner = db_rows_value(rows, i, SCHED_COL_OWNER);
		cl->agent = sched_agent(&s, agent, sizeof(agent));
		r = s.retry_pending ? claim_retries(cl, &s)
		                    : claim_slots(cl, &s);
		cl->agent = NULL;
		sched_clear(&s);
	}
	db_rows_free(rows);
	if (r != -1)
		r = fire_all(cl);
	return r == -1 ? -1 : n;
}

/*
 * The retry of a pipeline step's job, from its jobs.retry (text, or NULL:
 * the schedule's): {max_retries, backoff, delay_ms}, delay_ms null for the
 * schedule's delay.
 */
void
job_retry(struct job *j, const char *text)
{
	json_t *r = text ? json_loads(text, 0, NULL) : NULL, *d;
	enum backoff b = BACKOFF_EXPONENTIAL;

	if (!json_is_object(r)) {
		json_decref(r);
		return;
	}
	j->own_retry = 1;
	j->retry.max_retries =
	    json_integer_value(json_object_get(r, "max_retries"));
	if (json_is_string(json_object_get(r, "backoff")))
		(void)retry_backoff_parse(
		    json_string_value(json_object_get(r, "backoff")), &b);
	j->retry.backoff = b;
	d = json_object_get(r, "delay_ms");
	j->retry.delay = json_is_integer(d) ? json_integer_value(d) : -1;
	json_decref(r);
}

/*
 * A job for row i of claim_jobs or claim_reports, whose first columns are
 * the same (the run's id, schedule, schedule name, slot, repeat, attempt),
 * put on the claim's list; spent_col: the column of its job's failures.
 * The job, or NULL with err set.
 */
_Static_assert((int)CLAIM_JOB_COL_ID == (int)CLAIM_REPORT_COL_ID &&
        (int)CLAIM_JOB_COL_SCHEDULE == (int)CLAIM_REPORT_COL_SCHEDULE &&
        (int)CLAIM_JOB_COL_NAME == (int)CLAIM_REPORT_COL_NAME &&
        (int)CLAIM_JOB_COL_SLOT == (int)CLAIM_REPORT_COL_SLOT &&
        (int)CLAIM_JOB_COL_REPEAT == (int)CLAIM_REPORT_COL_REPEAT &&
        (int)CLAIM_JOB_COL_ATTEMPT == (int)CLAIM_REPORT_COL_ATTEMPT &&
        (int)CLAIM_JOB_COL_RETRY == (int)CLAIM_JOB_COL_SPENT + 1 &&
        (int)CLAIM_REPORT_COL_RETRY == (int)CLAIM_REPORT_COL_SPENT + 1,
    "claim_job and claim_report begin alike");
static struct job *
job_of_row(struct claim *cl, const struct db_rows *rows, int i, int spent_col)
{
	struct job *j = calloc(1, sizeof(*j));

	if (j == NULL ||
	    (j->name = strdup(db_rows_value(rows, i, CLAIM_REPORT_COL_NAME))) ==
	        NULL) {
		free(j);
		log_errbuf(cl->err, cl->errlen, "out of memory");
		return NULL;
	}
	snprintf(j->run_id, sizeof(j->run_id), "%s",
	    db_rows_value(rows, i, CLAIM_REPORT_COL_ID));
	snprintf(j->schedule_id, sizeof(j->schedule_id), "%s",
	    db_rows_value(rows, i, CLAIM_REPORT_COL_SCHEDULE));
	j->slot =
	    strtoll(db_rows_value(rows, i, CLAIM_REPORT_COL_SLOT), NULL, 10);
	j->repeat =
	    strtoll(db_rows_value(rows, i, CLAIM_REPORT_COL_REPEAT), NULL, 10);
	j->attempt =
	    strtoll(db_rows_value(rows, i, CLAIM_REPORT_COL_ATTEMPT), NULL, 10);
	j->spent = strtoll(db_rows_value(rows, i, spent_col), NULL, 10);
	job_retry(j, db_rows_value(rows, i, spent_col + 1));
	j->fd = -1;
	j->agent = 1;
	j->next = cl->jobs;
	cl->jobs = j;
	return j;
}

/*
 * The contexts of pipelines' executions marked to be decided again (the
 * API's retry-failed made their failed steps wait): decided now, before
 * the jobs are claimed, so that the steps that may go are taken by this
 * claim.  0, or -1 with err set.
 */
static int
redecide(struct claim *cl)
{
	struct db_rows *rows;
	json_t *ctxs = json_array();
	int r;

	if ((rows = db_query(cl->db, SQL_claim_redecide, 0, NULL, cl->err,
	         cl->errlen)) == NULL) {
		json_decref(ctxs);
		return -1;
	}
	for (int i = 0; ctxs != NULL && i < db_rows_count(rows); i++)
		if (json_array_append_new(ctxs,
		        json_pack("{s:s, s:n}", "x", db_rows_value(rows, i, 0),
		            "c")) == -1) {
			json_decref(ctxs);
			ctxs = NULL;
		}
	db_rows_free(rows);
	if (ctxs == NULL)
		return log_errbuf(cl->err, cl->errlen, "out of memory");
	r = pipeline_advance(cl->db, ctxs, cl->err, cl->errlen);
	return r == -1 ? -1 : 0;
}

/* The pending jobs of deleted schedules one claim fails (claim_jobs_drop). */
#define CLAIM_DROP_MAX 1000

/* A claim failed CLAIM_DROP_MAX of them: more may wait. */
static int drops_more;

/*
 * Whether a claim since the last call left pending jobs of deleted
 * schedules to the next one: the caller claims again soon.
 */
int
claim_drops_more(void)
{
	int r = drops_more;

	drops_more = 0;
	return r;
}

/*
 * The pending jobs of schedules being deleted fail, CLAIM_DROP_MAX at most
 * (claim_jobs_drop), and their executions settle.  0, or -1 with err set.
 */
static int
drop_deleted(struct claim *cl)
{
	struct db_rows *rows;
	int r = 0;

	if ((rows = db_query(cl->db, SQL_claim_jobs_drop, 0, NULL, cl->err,
	         cl->errlen)) == NULL)
		return -1;
	if (db_rows_count(rows) >= CLAIM_DROP_MAX)
		drops_more = 1;
	if (db_rows_count(rows) > 0 &&
	    fanout_settle_rows(cl->db, rows, cl->err, cl->errlen) == -1)
		r = -1;
	db_rows_free(rows);
	return r;
}

/*
 * Fan-out jobs whose time came (claim_jobs), up to `limit`: each started
 * as an attempt, an agent request like any (prepare_agents() makes it),
 * which waits in its runner for the job's ready_at when the claim took it
 * ahead.  First the pending jobs of schedules being deleted fail
 * (claim_jobs_drop), and their executions settle.  Returns the jobs
 * started, or -1 with err set.
 */
static int
claim_fanout_jobs(struct claim *cl, int limit, const char *ahead)
{
	char lease[24], lim[24], reqs[24], omax[24];
	const char *p[5] = {lease, ahead, lim, reqs, omax};
	struct db_rows *rows;
	int n, dropping;

	if ((rows = db_query(cl->db, SQL_claim_jobs_drop_lock, 0, NULL, cl->err,
	         cl->errlen)) == NULL)
		return -1;
	/* No running execution of a schedule being deleted: nothing to drop. */
	dropping = db_rows_count(rows) > 0;
	db_rows_free(rows);
	if (redecide(cl) == -1)
		return -1;
	if (dropping && drop_deleted(cl) == -1)
		return -1;
	if (limit <= 0)
		return 0;
	if ((rows = db_query(cl->db, SQL_claim_jobs_lock, 1, &ahead, cl->err,
	         cl->errlen)) == NULL)
		return -1;
	db_rows_free(rows);
	snprintf(lease, sizeof(lease), "%lld", (long long)cl->sv_id);
	snprintf(lim, sizeof(lim), "%d", limit);
	snprintf(reqs, sizeof(reqs), "%lld",
	    (long long)cl->cf->max_concurrent_requests);
	snprintf(omax, sizeof(omax), "%lld", (long long)cl->owner_max);
	if ((rows = db_query(
	         cl->db, SQL_claim_jobs, 5, p, cl->err, cl->errlen)) == NULL)
		return -1;
	n = db_rows_count(rows);
	for (int i = 0; i < n; i++) {
		struct job *j = job_of_row(cl, rows, i, CLAIM_JOB_COL_SPENT);

		if (j == NULL) {
			db_rows_free(rows);
			return -1;
		}
		snprintf(j->agent_env, sizeof(j->agent_env), "%s",
		    db_rows_value(rows, i, CLAIM_JOB_COL_ENV));
		j->spec.not_before_us = strtoll(
		    db_rows_value(rows, i, CLAIM_JOB_COL_START_US), NULL, 10);
		j->kind = KIND_JOB;
		cl->njobs++;
	}
	if (n > 0)
		log_debug("%d fan-out jobs claimed", n);
	db_rows_free(rows);
	return n;
}

/*
 * The specs of the agent jobs this claim made, now that their runs are in
 * (the insert made or found each one's job): one claim_agents for all of
 * them records each job's agent, version and params and each run's
 * callback token (hashed) and deadline, and returns what each request
 * needs (agent.c makes it).  0, or -1 with err set.
 */
static int
prepare_agents(struct claim *cl)
{
	char(*tokens)[AGENT_TOKEN_LEN + 1] = NULL;
	struct db_rows *rows = NULL;
	json_t *arr = json_array(), *o;
	struct job *j;
	int n = 0, k, r = -1;

	for (j = cl->jobs; j != NULL; j = j->next)
		n += j->agent;
	if (n == 0 || arr == NULL) {
		json_decref(arr);
		return n == 0
		    ? 0
		    : log_errbuf(cl->err, cl->errlen, "out of memory");
	}
	if ((tokens = calloc((size_t)n, sizeof(*tokens))) == NULL)
		goto oom;
	k = 0;
	for (j = cl->jobs; j != NULL; j = j->next) {
		if (!j->agent)
			continue;
		if (agent_token(tokens[k], sizeof(tokens[k])) == -1) {
			log_errbuf(cl->err, cl->errlen,
			    "cannot make a callback token: getrandom failed");
			goto out;
		}
		o = json_pack("{s:s, s:s, s:s}", "run", j->run_id, "token",
		    tokens[k], "env", j->agent_env);
		if (o == NULL || json_array_append_new(arr, o) == -1)
			goto oom;
		k++;
	}
	rows = batch_query(
	    cl->db, SQL_claim_agents, NULL, arr, cl->err, cl->errlen);
	arr = NULL;
	if (rows == NULL)
		goto out;
	k = 0;
	for (j = cl->jobs; j != NULL; j = j->next) {
		int row, nrows = db_rows_count(rows);

		if (!j->agent)
			continue;
		for (row = 0; row < nrows &&
		     strcmp(db_rows_value(rows, row, CLAIM_AGENT_COL_RUN),
		         j->run_id) != 0;
		     row++)
			;
		if (row == nrows)
			snprintf(j->spawn_error, sizeof(j->spawn_error),
			    "the job of this run cannot be found");
		else
			agent_spec(j, rows, row, tokens[k], cl->cf);
		explicit_bzero(tokens[k], sizeof(tokens[k]));
		k++;
	}
	r = 0;
	goto out;
oom:
	log_errbuf(cl->err, cl->errlen, "out of memory");
out:
	if (tokens != NULL)
		explicit_bzero(tokens, (size_t)n * sizeof(*tokens));
	free(tokens);
	json_decref(arr);
	db_rows_free(rows);
	return r;
}

/*
 * Agent attempts whose report came, or that expired, taken back from
 * waiting (claim_reports): each becomes a job that ends without a runner
 * (agent_adopted()), its end written as any run's.  At most ADOPT_MAX per
 * claim; the rest are due again at once (cronvisord_next_due).  0, or -1.
 */
#define ADOPT_MAX 500
static int
adopt_reports(struct claim *cl)
{
	char lease[24], lim[24];
	const char *p[2] = {lease, lim};
	struct db_rows *rows;
	int n;

	snprintf(lease, sizeof(lease), "%lld", (long long)cl->sv_id);
	snprintf(lim, sizeof(lim), "%d", ADOPT_MAX);
	if ((rows = db_query(
	         cl->db, SQL_claim_reports, 2, p, cl->err, cl->errlen)) == NULL)
		return -1;
	n = db_rows_count(rows);
	for (int i = 0; i < n; i++) {
		struct job *j = job_of_row(cl, rows, i, CLAIM_REPORT_COL_SPENT);

		if (j == NULL) {
			db_rows_free(rows);
			return -1;
		}
		j->triggered =
		    strcmp(db_rows_value(rows, i, CLAIM_REPORT_COL_TRIGGERED),
		        "t") == 0;
		j->kind = run_kind_parse(
		    db_rows_value(rows, i, CLAIM_REPORT_COL_KIND));
		agent_adopted(j, rows, i, cl->cf);
	}
	if (n > 0)
		log_debug("%d agent attempts taken back from waiting", n);
	db_rows_free(rows);
	return 0;
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
	int ntrig = 0, nsched = 0, njob = 0;

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
	            -1) ||
	    (njob = claim_fanout_jobs(&cl, limit - cl.njobs, ahead)) == -1 ||
	    prepare_agents(&cl) == -1 || adopt_reports(&cl) == -1)
		goto fail;
	if (db_commit(db, err, errlen) == -1)
		goto fail_nocommit;
	*jobs = cl.jobs;
	json_decref(cl.fires);
	free(cl.fired);
	owners_free(&cl);
	return ntrig + nsched + njob;
fail:
	db_rollback(db);
fail_nocommit:
	job_free_list(cl.jobs);
	json_decref(cl.fires);
	free(cl.fired);
	owners_free(&cl);
	return -1;
}
