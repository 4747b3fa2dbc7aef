/*
 * health.c: GET /health, for load balancers and operators.  No token is
 * needed.  200 with the database's time and the supervisors that have not
 * stopped (alive: a heartbeat younger than lease_seconds) when the
 * database answers; 503 with "status": "unavailable" when it does not.
 * Times are the database's, formatted by cronvisor_time() like every
 * other time the API returns.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "api.h"

/* The 503 document: health's shape plus the usual error object. */
static int
health_unavailable(struct response *rs)
{
	char now[48];

	if (timefmt_utc((int64_t)time(NULL), now, sizeof(now)) == -1)
		now[0] = '\0';
	return api_json(rs, 503,
	    json_pack("{s:s, s:s, s:s, s:[], s:{s:s, s:s, s:n}}", "status",
	        "unavailable", "database", "unavailable", "time", now,
	        "supervisors", "error", "code", "unavailable", "message",
	        "the database cannot be reached; retry later", "field"));
}

/* One supervisors row (see health_get's query) as its JSON object. */
static json_t *
health_supervisor(const struct db_rows *rows, int i)
{
	const char *pid = db_rows_value(rows, i, 4);

	return json_pack("{s:s?, s:s?, s:I, s:s?, s:s?, s:s?, s:b}", "name",
	    db_rows_value(rows, i, 1), "host", db_rows_value(rows, i, 2), "pid",
	    (json_int_t)(pid != NULL ? strtoll(pid, NULL, 10) : 0), "version",
	    db_rows_value(rows, i, 3), "started_at", db_rows_value(rows, i, 5),
	    "heartbeat", db_rows_value(rows, i, 6), "alive",
	    (db_rows_value(rows, i, 7) != NULL &&
	        strcmp(db_rows_value(rows, i, 7), "t") == 0));
}

/*
 * GET /health.  rq->db may be NULL (the server could not connect): then,
 * and when the query fails for a lost connection, the answer is the 503.
 * Any other database failure is API_DB_FAILED (a 500, logged).
 */
int
health_get(struct request *rq, struct response *rs, char *err, size_t errlen)
{
	static const char *const none[] = {NULL};
	char lease[24];
	const char *params[1] = {lease};
	struct db_rows *rows;
	json_t *list, *sup;
	int n;

	if (query_check(rq->query, none, rs) == -1)
		return 0;
	if (rq->db == NULL) {
		log_warnx("503: the database is unavailable");
		return health_unavailable(rs);
	}
	snprintf(
	    lease, sizeof(lease), "%lld", (long long)rq->cf->lease_seconds);
	/* One row even without supervisors, for the time (LEFT JOIN). */
	rows = db_query(rq->db, SQL_api_health, 1, params, err, errlen);
	if (rows == NULL)
		return api_db_lost(rq->db)
		    ? (log_warnx("health: %s", err), health_unavailable(rs))
		    : API_DB_FAILED;
	if ((list = json_array()) == NULL)
		goto oom;
	n = db_rows_count(rows);
	for (int i = 0; i < n; i++) {
		if (db_rows_value(rows, i, 1) == NULL)
			continue; /* the LEFT JOIN's row without supervisors */
		if ((sup = health_supervisor(rows, i)) == NULL ||
		    json_array_append_new(list, sup) == -1) {
			json_decref(list);
			goto oom;
		}
	}
	n = api_json(rs, 200,
	    json_pack("{s:s, s:s, s:s?, s:o}", "status", "ok", "database", "ok",
	        "time", n > 0 ? db_rows_value(rows, 0, 0) : NULL, "supervisors",
	        list));
	db_rows_free(rows);
	return n;
oom:
	db_rows_free(rows);
	return -1;
}

/*
 * GET /openapi.json: the OpenAPI 3.1 description of this API
 * (api/openapi.json, embedded at build time; installed too as
 * /usr/share/cronvisor/openapi.json).  No token: it describes the API,
 * not anyone's data.
 */
int
health_openapi(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	if (query_check(rq->query, (const char *const[]){NULL}, rs) == -1)
		return 0;
	return api_raw(rs, 200, strdup(api_openapi_json));
}
