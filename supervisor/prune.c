/*
 * prune.c: history retention.  A schedule keeps its newest history_limit
 * runs; older finished ones are deleted.  Pruning is kept off the path that
 * claims and finishes runs: finishing a run only notes its schedule here,
 * and the heartbeat prunes the noted schedules, a bounded batch of rows
 * each, so that a schedule whose limit was lowered a lot is trimmed over
 * several heartbeats instead of in one long statement.  The heartbeat
 * also deletes the schedules the API deleted while runs were in flight,
 * should the transaction recording their last run not have done it, and
 * the trigger Idempotency-Keys older than a day.  The statements, and the
 * batch of 1000 rows each deletes at most, are those of
 * sql/queries/prune.sql.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisord.h"

#define PRUNE_MAX 1024 /* schedules remembered between two prunes */

static char noted[PRUNE_MAX][40];
static int nnoted;

/* Remembers that schedule id has a new run; its history is pruned later. */
void
prune_note(const char *id)
{
	for (int i = 0; i < nnoted; i++)
		if (strcmp(noted[i], id) == 0)
			return;
	if (nnoted < PRUNE_MAX)
		snprintf(noted[nnoted++], sizeof(noted[0]), "%s", id);
}

/*
 * Deletes, for each noted schedule, up to 1000 of its finished runs
 * beyond its history_limit, all in one statement (a burst notes hundreds
 * of schedules, and a statement each would hold the loop up), and
 * forgets the schedules now within their limit.  Returns 0, or -1 with
 * err set (they all stay noted).
 */
int
prune_run(struct db *db, char *err, size_t errlen)
{
	json_t *ids;
	struct db_rows *rows = NULL;
	char *p[1] = {NULL};
	int n;

	if (nnoted == 0)
		return 0;
	if ((ids = json_array()) == NULL)
		return log_errbuf(err, errlen, "out of memory");
	for (int i = 0; i < nnoted; i++)
		json_array_append_new(ids, json_string(noted[i]));
	if ((p[0] = json_dumps(ids, JSON_COMPACT)) == NULL)
		log_errbuf(err, errlen, "out of memory");
	else
		rows = db_query(
		    db, SQL_prune_runs, 1, (const char **)p, err, errlen);
	json_decref(ids);
	free(p[0]);
	if (rows == NULL)
		return -1;
	/* What had 1000 rows to delete may have more: kept. */
	nnoted = 0;
	n = db_rows_count(rows);
	for (int i = 0; i < n && nnoted < PRUNE_MAX; i++)
		snprintf(noted[nnoted++], sizeof(noted[0]), "%s",
		    db_rows_value(rows, i, 0));
	db_rows_free(rows);
	return 0;
}

/*
 * The safety net under finish.c's deletion of a deleted schedule's row:
 * deletes every schedule with deleted_at set and no run in flight (a run
 * lost while no supervisor ran, a row soft-deleted just as its last run
 * ended).  Their runs and requests go by ON DELETE CASCADE.  Returns 0, or
 * -1 with err set.
 */
int
prune_deleted(struct db *db, char *err, size_t errlen)
{
	int n = db_exec(db, SQL_prune_deleted, 0, NULL, err, errlen);

	if (n > 0)
		log_info("removed %d deleted schedule%s whose runs in flight "
		         "had ended",
		    n, n == 1 ? "" : "s");
	return n == -1 ? -1 : 0;
}

/*
 * Deletes up to 1000 trigger Idempotency-Keys older than a day (a
 * backlog, after the supervisors were down for days, goes over several
 * heartbeats).  Returns 0, or -1 with err set.
 */
int
prune_keys(struct db *db, char *err, size_t errlen)
{
	int n = db_exec(db, SQL_prune_keys, 0, NULL, err, errlen);

	if (n > 0)
		log_debug("removed %d trigger key%s older than a day", n,
		    n == 1 ? "" : "s");
	return n == -1 ? -1 : 0;
}
