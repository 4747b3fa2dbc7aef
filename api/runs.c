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

/* The owner a query is limited to: the caller's, or NULL for an admin. */
static const char *
run_scope(const struct request *rq)
{
	return rq->who.role == ROLE_ADMIN ? NULL : rq->who.owner;
}

/* One run's JSON text as an object of a list. */
static json_t *
run_item(const char *text)
{
	return json_loads(text, 0, NULL);
}

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
	char sid[API_ID_LEN + 1], status[32], us[24], id[RUN_ID_MAX + 16],
	    lim[24], limbuf[24];
	const char *p[6];
	struct db_rows *rows;
	int64_t limit = API_LIST_DEF;
	int r, i;

	if (query_check(rq->query, allowed, rs) == -1 ||
	    api_read_cursor(rq->query, us, sizeof(us), id, sizeof(id), 0, rs))
		return 0;
	if ((r = query_get(rq->query, "limit", limbuf, sizeof(limbuf))) != 0) {
		char *end;

		limit = r == 1 ? strtoll(limbuf, &end, 10) : 0;
		if (r == -1 || end == limbuf || *end || limit < 1 ||
		    limit > API_LIST_MAX)
			return api_error(rs, 400, "invalid_query", "limit",
			    "must be a number from 1 to %d", API_LIST_MAX);
	}
	if ((r = query_get(rq->query, "status", status, sizeof(status))) == -1)
		return api_error(rs, 400, "invalid_query", "status",
		    "bad encoding or too long");
	for (i = 0; r == 1 && statuses[i] && strcmp(statuses[i], status); i++)
		;
	if (r == 1 && statuses[i] == NULL)
		return api_error(rs, 400, "invalid_query", "status",
		    "\"%s\" is not a run status", status);
	if (rq->nsegs < 2 || api_parse_id(rq->segs[1], sid) == -1)
		return api_error(
		    rs, 404, "not_found", NULL, "no such schedule");
	snprintf(lim, sizeof(lim), "%lld", (long long)limit + 1);
	p[0] = sid;
	p[1] = run_scope(rq);
	p[2] = r == 1 ? status : NULL;
	p[3] = us[0] ? us : NULL;
	p[4] = id[0] ? id : NULL;
	p[5] = lim;
	/* No row at all, not even the schedule's, is a 404. */
	rows = db_query(rq->db, SQL_api_runs_list, 6, p, err, errlen);
	if (rows == NULL)
		return API_DB_FAILED;
	if (db_rows_count(rows) == 0) {
		db_rows_free(rows);
		return api_error(
		    rs, 404, "not_found", NULL, "no such schedule");
	}
	if (db_rows_value(rows, 0, 2) == NULL) {
		/* The schedule exists and has no run (that matches). */
		db_rows_free(rows);
		return api_json(
		    rs, 200, json_pack("{s:[], s:n}", "runs", "next_cursor"));
	}
	r = api_page(rs, rows, limit, "runs", run_item);
	db_rows_free(rows);
	return r;
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
	p[1] = run_scope(rq);
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
