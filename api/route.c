/*
 * route.c: method and path to handler.  One table lists every route of
 * docs/api.md with what it needs (a token, a least role, the database);
 * route_match() finds the route of a path, and answers 404 for a path no
 * route has and 405 (with Allow) for a method the path does not take;
 * route_serve() authenticates, checks the role and calls the handler.
 * A route's role is the least role that may really call it.  Where a
 * lesser role is told 404 for a schedule of another owner before it is
 * told 403 (hide), its handler answers both (rq->may).
 * When several patterns match a path the one with more literal segments
 * wins, so POST /schedules/batch-delete is never taken for the schedule
 * whose id is "batch-delete".
 */
#include <string.h>

#include "api.h"

#define ROUTE_PARAM "{id}" /* a pattern segment that matches any segment */

/* Every route of docs/api.md, grouped by path. */
static const struct route route_table[] = {
    /* method, pattern, handler, auth, who may call it, hide, db optional */
    {"GET", "/schedules", schedules_list, 1, ROLE_VIEWER, 0, 0},
    {"POST", "/schedules", schedules_create, 1, ROLE_EDITOR, 0, 0},
    {"POST", "/schedules/batch-delete", schedules_batch_delete, 1, ROLE_EDITOR,
        1, 0},
    {"POST", "/schedules/preview", schedules_preview, 1, ROLE_VIEWER, 0, 0},
    {"GET", "/schedules/{id}", schedules_get, 1, ROLE_VIEWER, 0, 0},
    {"POST", "/schedules/{id}/preview", schedules_preview_saved, 1, ROLE_VIEWER,
        0, 0},
    {"PATCH", "/schedules/{id}", schedules_update, 1, ROLE_EDITOR, 1, 0},
    {"DELETE", "/schedules/{id}", schedules_delete, 1, ROLE_EDITOR, 1, 0},
    {"POST", "/schedules/{id}/pause", schedules_pause, 1, ROLE_EDITOR, 1, 0},
    {"POST", "/schedules/{id}/resume", schedules_resume, 1, ROLE_EDITOR, 1, 0},
    {"POST", "/schedules/{id}/trigger", schedules_trigger, 1, ROLE_EDITOR, 1,
        0},
    {"GET", "/schedules/{id}/runs", runs_of_schedule, 1, ROLE_VIEWER, 0, 0},
    {"GET", "/runs/{id}", runs_get, 1, ROLE_VIEWER, 0, 0},
    {"GET", "/executions", executions_list, 1, ROLE_VIEWER, 0, 0},
    {"GET", "/executions/{id}", executions_get, 1, ROLE_VIEWER, 0, 0},
    {"GET", "/executions/{id}/jobs", executions_jobs, 1, ROLE_VIEWER, 0, 0},
    {"POST", "/executions/{id}/retry-failed", executions_retry_failed, 1,
        ROLE_EDITOR, 1, 0},
    {"GET", "/jobs/{id}", jobs_get, 1, ROLE_VIEWER, 0, 0},
    /* an agent's report: the attempt's callback token, not an API token */
    {"POST", "/jobs/{id}/complete", jobs_complete, 0, ROLE_VIEWER, 0, 0},
    {"POST", "/jobs/{id}/heartbeat", jobs_heartbeat, 0, ROLE_VIEWER, 0, 0},
    {"GET", "/agents", agents_list, 1, ROLE_VIEWER, 0, 0},
    {"POST", "/agents", agents_create, 1, ROLE_EDITOR, 0, 0},
    {"GET", "/agents/{id}", agents_get, 1, ROLE_VIEWER, 0, 0},
    {"PATCH", "/agents/{id}", agents_update, 1, ROLE_EDITOR, 1, 0},
    {"DELETE", "/agents/{id}", agents_delete, 1, ROLE_EDITOR, 1, 0},
    {"GET", "/agents/{id}/versions", agents_versions, 1, ROLE_VIEWER, 0, 0},
    {"POST", "/agents/{id}/versions", agents_version_create, 1, ROLE_EDITOR, 1,
        0},
    {"POST", "/agents/{id}/deploy", agents_deploy, 1, ROLE_EDITOR, 1, 0},
    {"POST", "/agents/{id}/promote", agents_promote, 1, ROLE_EDITOR, 1, 0},
    {"POST", "/agents/{id}/rollback", agents_rollback, 1, ROLE_EDITOR, 1, 0},
    {"GET", "/agents/{id}/deployments", agents_deployments, 1, ROLE_VIEWER, 0,
        0},
    {"GET", "/agents/{id}/health", agents_health, 1, ROLE_VIEWER, 0, 0},
    {"GET", "/pipelines", pipelines_list, 1, ROLE_VIEWER, 0, 0},
    {"POST", "/pipelines", pipelines_create, 1, ROLE_EDITOR, 0, 0},
    {"GET", "/pipelines/{id}", pipelines_get, 1, ROLE_VIEWER, 0, 0},
    {"PATCH", "/pipelines/{id}", pipelines_update, 1, ROLE_EDITOR, 1, 0},
    {"DELETE", "/pipelines/{id}", pipelines_delete, 1, ROLE_EDITOR, 1, 0},
    {"GET", "/data-sources", datasources_list, 1, ROLE_VIEWER, 0, 0},
    {"POST", "/data-sources", datasources_create, 1, ROLE_ADMIN, 0, 0},
    {"POST", "/data-sources/preview", datasources_preview, 1, ROLE_VIEWER, 0,
        0},
    {"GET", "/data-sources/{id}", datasources_get, 1, ROLE_VIEWER, 0, 0},
    {"DELETE", "/data-sources/{id}", datasources_delete, 1, ROLE_ADMIN, 0, 0},
    {"GET", "/notification-channels", notify_channels_list, 1, ROLE_VIEWER, 0,
        0},
    {"POST", "/notification-channels", notify_channels_create, 1, ROLE_EDITOR,
        0, 0},
    {"GET", "/notification-channels/{id}", notify_channels_get, 1, ROLE_VIEWER,
        0, 0},
    {"DELETE", "/notification-channels/{id}", notify_channels_delete, 1,
        ROLE_EDITOR, 1, 0},
    {"GET", "/notifications", notify_list, 1, ROLE_VIEWER, 0, 0},
    {"GET", "/events", events_stream, 1, ROLE_VIEWER, 0, 0},
    {"GET", "/overview", overview_get, 1, ROLE_VIEWER, 0, 0},
    {"POST", "/apply", apply_post, 1, ROLE_EDITOR, 0, 0},
    {"GET", "/me", auth_me, 1, ROLE_VIEWER, 0, 0},
    {"GET", "/health", health_get, 0, ROLE_VIEWER, 0, 1},
    {"GET", "/openapi.json", health_openapi, 0, ROLE_VIEWER, 0, 1},
};
#define ROUTE_COUNT (sizeof(route_table) / sizeof(route_table[0]))

/*
 * Whether pattern matches the path segments; returns the number of literal
 * segments it matched (its specificity, + 1 so that a match is never 0),
 * or 0 when it does not match.
 */
static int
route_fits(const char *pattern, char *const *segs, int nsegs)
{
	const char *p = pattern;
	int i = 0, literal = 1;

	while (*p == '/') {
		size_t n;

		p++;
		n = strcspn(p, "/");
		if (i >= nsegs)
			return 0;
		if (n == strlen(ROUTE_PARAM) &&
		    strncmp(p, ROUTE_PARAM, n) == 0) {
			/* any segment */
		} else if (strlen(segs[i]) != n || strncmp(p, segs[i], n) != 0)
			return 0;
		else
			literal++;
		p += n;
		i++;
	}
	return i == nsegs ? literal : 0;
}

/*
 * Finds the route of method and path segments.  Returns it; or NULL with
 * rs holding the 404 not_found (no route has this path) or the 405
 * method_not_allowed whose Allow lists the methods the path takes.
 */
const struct route *
route_match(
    const char *method, char *const *segs, int nsegs, struct response *rs)
{
	int fit[ROUTE_COUNT], best = 0;
	char allow[sizeof(rs->allow)] = "";

	for (size_t i = 0; i < ROUTE_COUNT; i++) {
		fit[i] = route_fits(route_table[i].pattern, segs, nsegs);
		if (fit[i] > best)
			best = fit[i];
	}
	if (best == 0) {
		api_error(rs, 404, "not_found", NULL, "no such route");
		return NULL;
	}
	for (size_t i = 0; i < ROUTE_COUNT; i++) {
		if (fit[i] != best)
			continue;
		if (strcmp(route_table[i].method, method) == 0)
			return &route_table[i];
		if (strlen(allow) + strlen(route_table[i].method) + 3 <
		    sizeof(allow)) {
			if (allow[0] != '\0')
				strcat(allow, ", ");
			strcat(allow, route_table[i].method);
		}
	}
	api_error(rs, 405, "method_not_allowed", NULL,
	    "%s is not allowed here; allowed: %s", method, allow);
	memcpy(rs->allow, allow, sizeof(allow));
	return NULL;
}

/*
 * Serves rq with route r (from route_match()).  A route that needs a token
 * authenticates authorization (the header's value, "" when there was
 * none) into rq->who; authorization NULL means rq->who is already
 * established (token_id != 0) or nobody.  No or an unknown token is a 401,
 * a role below the route's a 403.  Returns what the handler returns (see
 * api_handler), or API_DB_FAILED with err filled when the token lookup
 * failed.
 */
int
route_serve(const struct route *r, struct request *rq,
    const char *authorization, struct response *rs, char *err, size_t errlen)
{
	if (r->auth) {
		if (authorization != NULL) {
			memset(&rq->who, 0, sizeof(rq->who));
			if (rq->db == NULL)
				return api_error(rs, 503, "unavailable", NULL,
				    "the database cannot be reached; retry "
				    "later");
			switch (auth_principal(
			    rq->db, authorization, &rq->who, err, errlen)) {
			case -1:
				return API_DB_FAILED;
			case 0:
				memset(&rq->who, 0, sizeof(rq->who));
				break;
			}
		}
		if (rq->who.token_id == 0)
			return api_error(rs, 401, "unauthorized", NULL,
			    "a valid bearer token is needed: Authorization: "
			    "Bearer <token>");
		rq->may = rq->who.role >= r->min_role;
		if (!rq->may && !r->hide)
			return api_error(rs, 403, "forbidden", NULL,
			    "a token of role %s may not do this",
			    auth_role_name(rq->who.role));
	}
	return r->handler(rq, rs, err, errlen);
}

/*
 * Routes rq whose caller, if any, is already in rq->who (token_id != 0):
 * 404/405 for an unknown route, then as route_serve().  The server uses
 * route_match() and route_serve() itself, so that it connects to the
 * database only for a route that exists.
 */
int
route_dispatch(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	const struct route *r =
	    route_match(rq->method, rq->segs, rq->nsegs, rs);

	if (r == NULL)
		return 0;
	return route_serve(r, rq, NULL, rs, err, errlen);
}
