/*
 * runs.c: the run history (docs/api.md, "Runs").  Rows come out of
 * PostgreSQL already shaped (cronvisor_run_json() in sql/functions.sql); a
 * run is visible exactly when its schedule is.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

/* GET /schedules/{id}/runs: newest first, by status, paged. */
int
runs_of_schedule(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	static const char *const allowed[] = {
	    "status", "limit", "cursor", NULL};
	static const char *const statuses[] = {"running", "succeeded", "failed",
	    "timed_out", "lost", "interrupted", "crashed", "protocol_error",
	    "skipped", "missed", "expired", NULL};
	char sid[API_ID_LEN + 1], status[32], us[24], id[RUN_ID_MAX + 16];
	int64_t limit;

	if (query_check(rq->query, allowed, rs) == -1 ||
	    api_read_cursor(rq->query, us, sizeof(us), id, sizeof(id), 0, rs) ||
	    api_list_limit(rq->query, &limit, rs) ||
	    api_query_enum(rq->query, "status", statuses, "a run status",
	        status, sizeof(status), rs))
		return 0;
	if (rq->nsegs < 2 || api_parse_id(rq->segs[1], sid) == -1)
		return api_error(
		    rs, 404, "not_found", NULL, "no such schedule");
	return api_sub_list(rq, rs, SQL_api_runs_list, sid, status, us, id,
	    limit, "runs", "schedule", err, errlen);
}

/* GET /runs/{id}: one run of a schedule the caller can see. */
int
runs_get(struct request *rq, struct response *rs, char *err, size_t errlen)
{
	const char *p[2];
	struct db_rows *rows;
	json_t *o;

	if (query_check(rq->query, (const char *const[]){NULL}, rs) == -1)
		return 0;
	if (rq->nsegs < 2)
		return api_error(rs, 404, "not_found", NULL, "no such run");
	p[0] = rq->segs[1];
	p[1] = api_scope(rq);
	rows = db_query(rq->db, SQL_api_runs_get, 2, p, err, errlen);
	if (rows == NULL)
		return API_DB_FAILED;
	if (db_rows_count(rows) == 0) {
		db_rows_free(rows);
		return api_error(rs, 404, "not_found", NULL, "no such run");
	}
	o = json_loads(db_rows_value(rows, 0, 0), 0, NULL);
	db_rows_free(rows);
	return o ? api_json(rs, 200, o) : -1;
}
