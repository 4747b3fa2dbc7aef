/*
 * overview.c: GET /overview, the web console's first view (issue 22):
 * the caller's schedules counted by status, the supervisors alive, the
 * runs and executions that ended in the last hour and day by status (and
 * the day hour by hour, for a chart), the schedule that waits longest
 * past its time, and the last failures.  One statement builds it all
 * (sql/queries/overview.sql); the counts of runs come from the
 * sequencer's rollup, never from counting runs, so the answer costs the
 * same with millions of runs a day.  A viewer sees its owner's only, an
 * admin everyone's or one owner's (?owner=, as GET /schedules); only an
 * admin is shown the supervisors' hosts.
 */
#include <stdio.h>

#include "api.h"

/*
 * GET /overview.  ?owner= is an admin's only (403 for anyone else, as
 * GET /schedules answers), and names one owner: 1 to 200 characters.
 */
int
overview_get(struct request *rq, struct response *rs, char *err, size_t errlen)
{
	static const char *const allowed[] = {"owner", NULL};
	char owner[1024], lease[24];
	const char *p[3];
	struct db_rows *rows;
	int r;

	if (query_check(rq->query, allowed, rs) == -1)
		return 0;
	if ((r = query_get(rq->query, "owner", owner, sizeof(owner))) == -1 ||
	    (r == 1 && (owner[0] == '\0' || utf8_chars(owner) > API_OWNER_MAX)))
		return api_error(rs, 400, "invalid_query", "owner",
		    "an owner is 1 to 200 characters");
	if (r == 1 && rq->who.role != ROLE_ADMIN)
		return api_error(rs, 403, "forbidden", "owner",
		    "only an admin may name an owner");
	snprintf(
	    lease, sizeof(lease), "%lld", (long long)rq->cf->lease_seconds);
	/* An admin without ?owner= sees every owner's (NULL). */
	p[0] = r == 1 ? owner : api_scope(rq);
	p[1] = lease;
	p[2] = rq->who.role == ROLE_ADMIN ? "true" : "false";
	/* planned for its values (LIST_ONCE) */
	if ((rows = db_query_once(
	         rq->db, SQL_overview_get, 3, p, err, errlen)) == NULL)
		return API_DB_FAILED;
	return api_reply_text(rs, 200, rows);
}
