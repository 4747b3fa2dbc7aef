/*
 * prune.c: history retention.  A schedule keeps its newest history_limit
 * runs; older finished ones are deleted.  Pruning is kept off the path that
 * claims and finishes runs: finishing a run only notes its schedule here,
 * and the heartbeat prunes the noted schedules, a bounded batch of rows
 * each, so that a schedule whose limit was lowered a lot is trimmed over
 * several heartbeats instead of in one long statement.  The heartbeat
 * also deletes the schedules the API deleted while runs were in flight,
 * should the transaction recording their last run not have done it.
 */
#include <stdio.h>
#include <string.h>

#include "cronvisord.h"

#define PRUNE_MAX   1024 /* schedules remembered between two prunes */
#define PRUNE_BATCH 1000 /* rows deleted per schedule per prune */

#define PRUNE_SQL                                                              \
	"DELETE FROM runs WHERE id IN (SELECT id FROM runs "                   \
	"WHERE schedule_id = $1 AND status <> 'running' AND "                  \
	"(created_at, id) <= (SELECT created_at, id FROM runs "                \
	"WHERE schedule_id = $1 ORDER BY created_at DESC, id DESC "            \
	"OFFSET (SELECT history_limit FROM schedules WHERE id = $1) LIMIT 1) " \
	"LIMIT " CV_STR(PRUNE_BATCH) ")"
/*
 * READ COMMITTED re-checks the condition on a row a concurrent transaction
 * changed, so a schedule whose run a claim just started is not deleted.
 */
#define PRUNE_DELETED_SQL                                                      \
	"DELETE FROM schedules WHERE deleted_at IS NOT NULL AND running = 0"
#define CV_STR2(x) #x
#define CV_STR(x)  CV_STR2(x)

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
 * beyond its history_limit, and forgets the schedule once it is within
 * its limit.  Returns 0, or -1 with err set (the rest stays noted).
 */
int
prune_run(struct db *db, char *err, size_t errlen)
{
	int kept = 0, n;

	for (int i = 0; i < nnoted; i++) {
		const char *p[1] = {noted[i]};

		if ((n = db_exec(db, PRUNE_SQL, 1, p, err, errlen)) == -1) {
			memmove(noted[kept], noted[i],
			    (size_t)(nnoted - i) * sizeof(noted[0]));
			nnoted = kept + nnoted - i;
			return -1;
		}
		if (n == PRUNE_BATCH) /* more to do next time */
			memmove(noted[kept++], noted[i], sizeof(noted[0]));
	}
	nnoted = kept;
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
