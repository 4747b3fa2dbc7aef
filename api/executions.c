/*
 * executions.c: executions and their jobs (docs/executions.md).  Rows
 * come out of PostgreSQL already shaped (cronvisor_execution_json() and
 * cronvisor_job_json() in sql/functions.sql); an execution or a job is
 * visible exactly when its schedule is.  Also the pieces every list
 * shares: ?limit= and a ?status= out of a fixed set.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

/* The owner a query is limited to: the caller's, or NULL for an admin. */
const char *
api_scope(const struct request *rq)
{
	return rq->who.role == ROLE_ADMIN ? NULL : rq->who.owner;
}

/*
 * ?limit= into *limit (API_LIST_DEF without one).  0, or 1 with rs
 * holding the 400.
 */
int
api_list_limit(const char *query, int64_t *limit, struct response *rs)
{
	char buf[24], *end;
	int r = query_get(query, "limit", buf, sizeof(buf));

	*limit = API_LIST_DEF;
	if (r == 0)
		return 0;
	*limit = r == 1 ? strtoll(buf, &end, 10) : 0;
	if (r == -1 || end == buf || *end || *limit < 1 ||
	    *limit > API_LIST_MAX) {
		api_error(rs, 400, "invalid_query", "limit",
		    "must be a number from 1 to %d", API_LIST_MAX);
		return 1;
	}
	return 0;
}

/*
 * Query parameter name, one of the NULL-terminated set, into buf (len
 * bytes; "" without one); what names the set in a message ("a run
 * status").  0, or 1 with rs holding the 400.
 */
int
api_query_enum(const char *query, const char *name, const char *const *set,
    const char *what, char *buf, size_t len, struct response *rs)
{
	int r = query_get(query, name, buf, len), i;

	if (r == 0) {
		buf[0] = '\0';
		return 0;
	}
	if (r == -1) {
		api_error(
		    rs, 400, "invalid_query", name, "bad encoding or too long");
		return 1;
	}
	for (i = 0; set[i] && strcmp(set[i], buf); i++)
		;
	if (set[i] == NULL) {
		api_error(rs, 400, "invalid_query", name, "\"%s\" is not %s",
		    buf, what);
		return 1;
	}
	return 0;
}

/* One row's JSON text as an object of a list. */
json_t *
api_row_item(const char *text)
{
	return json_loads(text, 0, NULL);
}

/*
 * The list of a parent's children (the runs of a schedule, the jobs of an
 * execution): sql with $1 the parent's id, $2 the scope, $3 status ("":
 * any), $4 and $5 the cursor ("": none), $6 limit + 1.  No row at all is
 * a 404 saying "no such " what; the parent's one row with NULLs, an empty
 * list under key.
 */
int
api_sub_list(struct request *rq, struct response *rs, const char *sql,
    const char *parent, const char *status, const char *us, const char *id,
    int64_t limit, const char *key, const char *what, char *err, size_t errlen)
{
	char lim[24];
	const char *p[6] = {parent, api_scope(rq), status[0] ? status : NULL,
	    us[0] ? us : NULL, id[0] ? id : NULL, lim};
	struct db_rows *rows;
	int r;

	snprintf(lim, sizeof(lim), "%lld", (long long)limit + 1);
	/* planned for its values (LIST_ONCE) */
	if ((rows = db_query_once(rq->db, sql, 6, p, err, errlen)) == NULL)
		return API_DB_FAILED;
	if (db_rows_count(rows) == 0) {
		db_rows_free(rows);
		return api_error(
		    rs, 404, "not_found", NULL, "no such %s", what);
	}
	if (db_rows_value(rows, 0, 2) == NULL) {
		db_rows_free(rows);
		return api_json(
		    rs, 200, json_pack("{s:[], s:n}", key, "next_cursor"));
	}
	r = api_page(rs, rows, limit, key, api_row_item);
	db_rows_free(rows);
	return r;
}

/* The object of a one-row query, or a 404 saying "no such " what. */
static int
one_row(struct request *rq, struct response *rs, const char *sql,
    const char *what, char *err, size_t errlen)
{
	char id[API_ID_LEN + 1];
	const char *p[2] = {id, api_scope(rq)};
	struct db_rows *rows;
	json_t *o;

	if (query_check(rq->query, (const char *const[]){NULL}, rs) == -1)
		return 0;
	if (rq->nsegs < 2 || api_parse_id(rq->segs[1], id) == -1)
		return api_error(
		    rs, 404, "not_found", NULL, "no such %s", what);
	if ((rows = db_query(rq->db, sql, 2, p, err, errlen)) == NULL)
		return API_DB_FAILED;
	if (db_rows_count(rows) == 0) {
		db_rows_free(rows);
		return api_error(
		    rs, 404, "not_found", NULL, "no such %s", what);
	}
	o = json_loads(db_rows_value(rows, 0, 0), 0, NULL);
	db_rows_free(rows);
	return o ? api_json(rs, 200, o) : -1;
}

static const char *const exec_statuses[] = {
    "running", "success", "partial", "failed", NULL};
static const char *const job_statuses[] = {
    "pending", "running", "completed", "failed", "skipped", NULL};

/* GET /executions: newest first, by schedule and status, paged. */
int
executions_list(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	static const char *const allowed[] = {
	    "schedule_id", "status", "limit", "cursor", NULL};
	char sid[API_ID_LEN + 1], raw[80], status[32], us[24],
	    id[API_ID_LEN + 1], lim[24];
	const char *p[6];
	struct db_rows *rows;
	int64_t limit;
	int r;

	if (query_check(rq->query, allowed, rs) == -1 ||
	    api_read_cursor(rq->query, us, sizeof(us), id, sizeof(id), 1, rs) ||
	    api_list_limit(rq->query, &limit, rs) ||
	    api_query_enum(rq->query, "status", exec_statuses,
	        "an execution status", status, sizeof(status), rs))
		return 0;
	r = query_get(rq->query, "schedule_id", raw, sizeof(raw));
	if (r == -1 || (r == 1 && api_parse_id(raw, sid) == -1))
		return api_error(rs, 400, "invalid_query", "schedule_id",
		    "not a schedule id");
	snprintf(lim, sizeof(lim), "%lld", (long long)limit + 1);
	p[0] = api_scope(rq);
	p[1] = r == 1 ? sid : NULL;
	p[2] = status[0] ? status : NULL;
	p[3] = us[0] ? us : NULL;
	p[4] = id[0] ? id : NULL;
	p[5] = lim;
	/* planned for its values (LIST_ONCE) */
	rows =
	    db_query_once(rq->db, SQL_api_executions_list, 6, p, err, errlen);
	if (rows == NULL)
		return API_DB_FAILED;
	r = api_page(rs, rows, limit, "executions", api_row_item);
	db_rows_free(rows);
	return r;
}

/* GET /executions/{id}: one, with its jobs counted by status. */
int
executions_get(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	return one_row(
	    rq, rs, SQL_api_executions_get, "execution", err, errlen);
}

/*
 * POST /executions/{id}/retry-failed: a fan-out execution's failed jobs
 * run again (docs/orchestration.md): 200 with the execution and
 * "retried", the number of jobs.  409 for a one-job execution (its
 * schedule is triggered again instead) and for one without failed jobs.
 */
int
executions_retry_failed(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	char id[API_ID_LEN + 1];
	const char *p[2] = {id, api_scope(rq)};
	struct db_rows *rows;
	json_t *o;
	int64_t n;

	if (query_check(rq->query, (const char *const[]){NULL}, rs) == -1)
		return 0;
	if (rq->nsegs < 2 || api_parse_id(rq->segs[1], id) == -1)
		return api_error(
		    rs, 404, "not_found", NULL, "no such execution");
	if (!rq->may) {
		/* A viewer learns that it may not, of an execution it sees. */
		if ((rows = db_query(rq->db, SQL_api_executions_get, 2, p, err,
		         errlen)) == NULL)
			return API_DB_FAILED;
		n = db_rows_count(rows);
		db_rows_free(rows);
		return n == 0
		    ? api_error(rs, 404, "not_found", NULL, "no such execution")
		    : api_error(rs, 403, "forbidden", NULL,
		          "a viewer token may read executions, not "
		          "retry them");
	}
	if ((rows = db_query(
	         rq->db, SQL_api_executions_retry, 2, p, err, errlen)) == NULL)
		return API_DB_FAILED;
	if (db_rows_count(rows) == 0) {
		db_rows_free(rows);
		return api_error(
		    rs, 404, "not_found", NULL, "no such execution");
	}
	n = strtoll(db_rows_value(rows, 0, 1), NULL, 10);
	if (strcmp(db_rows_value(rows, 0, 0), "one") == 0) {
		db_rows_free(rows);
		return api_error(rs, 409, "not_fanout", NULL,
		    "execution %s has one job, whose retries are its "
		    "schedule's: trigger the schedule again "
		    "(POST /schedules/{id}/trigger)",
		    id);
	}
	db_rows_free(rows);
	if (n == 0)
		return api_error(rs, 409, "nothing_failed", NULL,
		    "execution %s has no failed job", id);
	if ((rows = db_query(
	         rq->db, SQL_api_executions_get, 2, p, err, errlen)) == NULL)
		return API_DB_FAILED;
	o = db_rows_count(rows) ? json_loads(db_rows_value(rows, 0, 0), 0, NULL)
	                        : NULL;
	db_rows_free(rows);
	if (o == NULL ||
	    json_object_set_new(o, "retried", json_integer(n)) == -1) {
		json_decref(o);
		return -1;
	}
	return api_json(rs, 200, o);
}

/* GET /executions/{id}/jobs: oldest first, by status, paged. */
int
executions_jobs(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	static const char *const allowed[] = {
	    "status", "limit", "cursor", NULL};
	char xid[API_ID_LEN + 1], status[32], us[24], id[API_ID_LEN + 1];
	int64_t limit;

	if (query_check(rq->query, allowed, rs) == -1 ||
	    api_read_cursor(rq->query, us, sizeof(us), id, sizeof(id), 1, rs) ||
	    api_list_limit(rq->query, &limit, rs) ||
	    api_query_enum(rq->query, "status", job_statuses, "a job status",
	        status, sizeof(status), rs))
		return 0;
	if (rq->nsegs < 2 || api_parse_id(rq->segs[1], xid) == -1)
		return api_error(
		    rs, 404, "not_found", NULL, "no such execution");
	return api_sub_list(rq, rs, SQL_api_jobs_list, xid, status, us, id,
	    limit, "jobs", "execution", err, errlen);
}

/* GET /jobs/{id}: one, with its attempts. */
int
jobs_get(struct request *rq, struct response *rs, char *err, size_t errlen)
{
	return one_row(rq, rs, SQL_api_jobs_get, "job", err, errlen);
}
