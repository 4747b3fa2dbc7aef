/*
 * peer.c: this supervisor among the others sharing the database.  It
 * registers a row in `supervisors` (whose id is the lease, the fencing
 * token of every run it claims), heartbeats it, marks it stopped on a
 * clean exit, and declares `lost` the runs of supervisors that stopped or
 * whose heartbeat is older than lease_seconds: those runs go through the
 * same finish path as any result, under the dead supervisor's lease, so
 * that two live supervisors declaring the same run lost write it once.  A
 * lost triggered run is not retried (finish.c leaves its schedule alone).
 * The statements are those of sql/queries/peer.sql.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cronvisord.h"

static const char *
num(char *buf, size_t len, int64_t v)
{
	snprintf(buf, len, "%lld", (long long)v);
	return buf;
}

/*
 * Registers this supervisor as `name` (host/pid when name is empty) and
 * retires an earlier incarnation of the same name on this host.  Returns
 * the new id, or -1 with err set.
 */
int64_t
peer_register(struct db *db, const char *name, char *err, size_t errlen)
{
	char host[256], me[320], pid[24], id[24];
	const char *p[4] = {
	    me, host, num(pid, sizeof(pid), getpid()), CV_VERSION};
	struct db_rows *rows;
	int64_t sid;

	if (gethostname(host, sizeof(host)) == -1)
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';
	if (name[0])
		snprintf(me, sizeof(me), "%s", name);
	else
		snprintf(me, sizeof(me), "%s/%d", host, (int)getpid());
	if ((rows = db_query(db, SQL_peer_register, 4, p, err, errlen)) == NULL)
		return -1;
	sid = strtoll(db_rows_value(rows, 0, 0), NULL, 10);
	db_rows_free(rows);
	if (name[0]) {
		const char *q[3] = {me, host, num(id, sizeof(id), sid)};

		if (db_exec(db, SQL_peer_retire, 3, q, err, errlen) == -1)
			return -1;
	}
	return sid;
}

/* Runs one statement about this supervisor's row ($1 = id). */
static int
update_self(
    struct db *db, int64_t id, const char *sql, char *err, size_t errlen)
{
	char b[24];
	const char *p[1] = {num(b, sizeof(b), id)};

	return db_exec(db, sql, 1, p, err, errlen) == -1 ? -1 : 0;
}

/*
 * Renews this supervisor's heartbeat.  Returns 1, 0 when its row says it
 * was retired (stopped_at set: a restart of the same name took over, and
 * its runs are declared lost by anyone), or -1 with err set.
 */
int
peer_heartbeat(struct db *db, int64_t id, char *err, size_t errlen)
{
	char b[24];
	const char *p[1] = {num(b, sizeof(b), id)};
	int n = db_exec(db, SQL_peer_heartbeat, 1, p, err, errlen);

	return n == -1 ? -1 : n > 0;
}

/* Marks this supervisor stopped on a clean exit; 0, or -1 with err. */
int
peer_stop(struct db *db, int64_t id, char *err, size_t errlen)
{
	return update_self(db, id, SQL_peer_stop, err, errlen);
}

/* Finishes one lost run of row i: "its supervisor <name> <why>". */
static int
lose(struct db *db, const struct db_rows *rows, int i, const char *why,
    char *err, size_t errlen)
{
	struct job j;

	memset(&j, 0, sizeof(j));
	snprintf(j.run_id, sizeof(j.run_id), "%s",
	    db_rows_value(rows, i, PEER_RUN_COL_ID));
	snprintf(j.schedule_id, sizeof(j.schedule_id), "%s",
	    db_rows_value(rows, i, PEER_RUN_COL_SCHEDULE));
	j.repeat =
	    strtoll(db_rows_value(rows, i, PEER_RUN_COL_REPEAT), NULL, 10);
	j.attempt =
	    strtoll(db_rows_value(rows, i, PEER_RUN_COL_ATTEMPT), NULL, 10);
	j.slot = strtoll(db_rows_value(rows, i, PEER_RUN_COL_SLOT), NULL, 10);
	j.triggered =
	    strcmp(db_rows_value(rows, i, PEER_RUN_COL_TRIGGERED), "t") == 0;
	j.kind = run_kind_parse(db_rows_value(rows, i, PEER_RUN_COL_KIND));
	j.spent = strtoll(db_rows_value(rows, i, PEER_RUN_COL_SPENT), NULL, 10);
	/* A pipeline step's own retry decides whether it goes again. */
	job_retry(&j, db_rows_value(rows, i, PEER_RUN_COL_RETRY));
	j.fs = FRAME_NONE;
	j.verdict.status = RUN_LOST;
	j.verdict.retryable = 1;
	snprintf(j.verdict.error, sizeof(j.verdict.error),
	    "its supervisor %s %s",
	    db_rows_value(rows, i, PEER_RUN_COL_SUPERVISOR), why);
	log_info("run %s: declared lost (%s)", j.run_id, j.verdict.error);
	return finish_run(db,
	    strtoll(db_rows_value(rows, i, PEER_RUN_COL_LEASE), NULL, 10), &j,
	    0, err, errlen);
}

/*
 * Declares lost the runs of supervisors other than `self` that stopped or
 * whose heartbeat is older than lease seconds; those whose agent reported
 * already wait for a claim to take the report instead.  Returns how many
 * were lost, or -1 with err set.
 */
int
peer_reap_lost(
    struct db *db, int64_t self, int64_t lease, char *err, size_t errlen)
{
	char a[24], b[24];
	const char *p[2] = {num(a, sizeof(a), self), num(b, sizeof(b), lease)};
	struct db_rows *rows =
	    db_query(db, SQL_peer_reported, 2, p, err, errlen);
	int n;

	if (rows == NULL)
		return -1;
	for (int i = 0; i < db_rows_count(rows); i++)
		log_info("run %s: its supervisor stopped after its agent "
		         "reported; the report is taken",
		    db_rows_value(rows, i, 0));
	db_rows_free(rows);
	if ((rows = db_query(db, SQL_peer_lost, 2, p, err, errlen)) == NULL)
		return -1;
	n = db_rows_count(rows);
	for (int i = 0; i < n; i++)
		if (lose(db, rows, i, "stopped or stopped heartbeating", err,
		        errlen) == -1) {
			db_rows_free(rows);
			return -1;
		}
	db_rows_free(rows);
	return n;
}

/*
 * Squares the runs this supervisor (`self`) holds in the database with the
 * jobs it has: ours(run id, arg) says whether a job of that id lives.
 * A `running` row without a job is declared lost (retried like any lost
 * run): its claim committed although the supervisor saw the connection
 * fail at the COMMIT, or its result's commit was lost with the server.
 * Returns how many, or -1 with err set.
 */
int
peer_reap_orphans(struct db *db, int64_t self,
    int (*ours)(const char *, void *), void *arg, char *err, size_t errlen)
{
	char a[24];
	const char *p[1] = {num(a, sizeof(a), self)};
	struct db_rows *rows = db_query(db, SQL_peer_own, 1, p, err, errlen);
	int n, lost = 0;

	if (rows == NULL)
		return -1;
	n = db_rows_count(rows);
	for (int i = 0; i < n; i++) {
		if (ours(db_rows_value(rows, i, PEER_RUN_COL_ID), arg))
			continue;
		if (lose(db, rows, i,
		        "lost track of it (the database went away at "
		        "its commit)",
		        err, errlen) == -1) {
			db_rows_free(rows);
			return -1;
		}
		lost++;
	}
	db_rows_free(rows);
	return lost;
}
