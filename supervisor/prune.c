/*
 * prune.c: history retention.  A schedule keeps its newest history_limit
 * runs; older finished ones are deleted.  Pruning is kept off the path that
 * claims and finishes runs: finishing a run only notes its schedule here,
 * and the heartbeat prunes the noted schedules, a bounded batch of rows
 * each, so that a schedule whose limit was lowered a lot is trimmed over
 * several heartbeats instead of in one long statement.  The heartbeat
 * also deletes the schedules the API deleted while runs were in flight,
 * should the transaction recording their last run not have done it, and
 * the trigger Idempotency-Keys older than a day.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisord.h"

#define PRUNE_MAX   1024 /* schedules remembered between two prunes */
#define PRUNE_BATCH 1000 /* rows deleted per schedule per prune */
#define CV_STR2(x)  #x
#define CV_STR(x)   CV_STR2(x)

/*
 * Every noted schedule ($1, a JSON array of ids) in one statement: up to
 * PRUNE_BATCH finished runs of each, older than its newest history_limit
 * runs.  Returns the schedules that had that many to delete (more may be
 * left for the next heartbeat).
 */
#define PRUNE_SQL                                                              \
	"WITH n AS (SELECT DISTINCT value::uuid AS sid FROM "                  \
	"json_array_elements_text($1::json)), gone AS (DELETE FROM runs "      \
	"WHERE id IN (SELECT x.id FROM n JOIN schedules s ON s.id = n.sid "    \
	"CROSS JOIN LATERAL (SELECT created_at, id FROM runs "                 \
	"WHERE schedule_id = n.sid ORDER BY created_at DESC, id DESC "         \
	"OFFSET s.history_limit LIMIT 1) e CROSS JOIN LATERAL (SELECT r.id "   \
	"FROM runs r WHERE r.schedule_id = n.sid AND r.status <> 'running' "   \
	"AND (r.created_at, r.id) <= (e.created_at, e.id) "                    \
	"LIMIT " CV_STR(                                                       \
	    PRUNE_BATCH) ") x) RETURNING schedule_id) "                        \
	                 "SELECT schedule_id FROM gone GROUP BY schedule_id "  \
	                 "HAVING count(*) >= " CV_STR(PRUNE_BATCH)
/*
 * READ COMMITTED re-checks the condition on a row a concurrent transaction
 * changed, so a schedule whose run a claim just started is not deleted.
 */
#define PRUNE_DELETED_SQL                                                      \
	"DELETE FROM schedules WHERE deleted_at IS NOT NULL AND running = 0"
/*
 * Trigger Idempotency-Keys are answered for a day (api/schedules.c): the
 * API does not answer with older ones (a request sending one again takes
 * its row over), and this removes the rest, the oldest PRUNE_BATCH per
 * heartbeat through the index on created_at.  It skips the rows an API
 * request holds (taking one over, deleting a schedule's keys): it never
 * waits for one, so the two can never deadlock.
 */
#define PRUNE_KEYS_SQL                                                         \
	"DELETE FROM trigger_keys WHERE (requested_by, key) IN "               \
	"(SELECT requested_by, key FROM trigger_keys "                         \
	"WHERE created_at <= now() - interval '1 day' ORDER BY created_at "    \
	"FOR UPDATE SKIP LOCKED LIMIT " CV_STR(PRUNE_BATCH) ")"

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
 * Deletes, for each noted schedule, up to PRUNE_BATCH of its finished runs
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
		rows =
		    db_query(db, PRUNE_SQL, 1, (const char **)p, err, errlen);
	json_decref(ids);
	free(p[0]);
	if (rows == NULL)
		return -1;
	/* What had PRUNE_BATCH rows to delete may have more: kept. */
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
	int n = db_exec(db, PRUNE_DELETED_SQL, 0, NULL, err, errlen);

	if (n > 0)
		log_info("removed %d deleted schedule%s whose runs in flight "
		         "had ended",
		    n, n == 1 ? "" : "s");
	return n == -1 ? -1 : 0;
}

/*
 * Deletes up to PRUNE_BATCH trigger Idempotency-Keys older than a day (a
 * backlog, after the supervisors were down for days, goes over several
 * heartbeats).  Returns 0, or -1 with err set.
 */
int
prune_keys(struct db *db, char *err, size_t errlen)
{
	int n = db_exec(db, PRUNE_KEYS_SQL, 0, NULL, err, errlen);

	if (n > 0)
		log_debug("removed %d trigger key%s older than a day", n,
		    n == 1 ? "" : "s");
	return n == -1 ? -1 : 0;
}
