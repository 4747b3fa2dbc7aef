/*
 * agents.c: the agent registry (docs/agents.md): agents, their versions,
 * deployments per environment (deploy, promote, rollback) and health.  An
 * agent belongs to an owner and is named by a slug unique within it: the
 * caller's owner, or the one an admin names with ?owner= (a non-admin that
 * names another owner is told 404, as for a schedule it may not see).
 * The documents are checked by common/agent.c; the statements are those
 * of sql/queries/agents.sql, and the answers come out of PostgreSQL
 * already shaped (cronvisor_agent_json(), which never shows a secret).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

#define SLUG_MAX 64

static const char *const environments[] = {
    "production", "staging", "development", NULL};

/* An agent's address: its owner and slug. */
struct addr {
	char owner[API_OWNER_MAX * 4 + 1];
	char slug[SLUG_MAX + 1];
};

static int
no_agent(struct response *rs)
{
	return api_error(rs, 404, "not_found", NULL, "no such agent");
}

/*
 * The owner a request addresses: ?owner= (an admin's; a non-admin may
 * name only its own) or the caller's.  A non-admin naming another owner
 * is told 404 with the message hidden (the thing addressed does not
 * exist for it), or 403 when hidden is NULL (a list or a create).  0, or
 * 1 after answering.
 */
int
api_req_owner(struct request *rq, struct response *rs, char *buf, size_t len,
    const char *hidden)
{
	int r = query_get(rq->query, "owner", buf, len);

	if (r == 0) {
		snprintf(buf, len, "%s", rq->who.owner);
		return 0;
	}
	if (r == -1 || buf[0] == '\0' || utf8_chars(buf) > API_OWNER_MAX) {
		api_error(rs, 400, "invalid_query", "owner",
		    "an owner is 1 to 200 characters");
		return 1;
	}
	if (rq->who.role != ROLE_ADMIN && strcmp(buf, rq->who.owner) != 0) {
		if (hidden)
			api_error(rs, 404, "not_found", NULL, "%s", hidden);
		else
			api_error(rs, 403, "forbidden", "owner",
			    "only an admin may name another owner");
		return 1;
	}
	return 0;
}

/*
 * The agent of /agents/{id}...: its owner and slug, the query checked
 * against allowed ("owner" is always allowed).  0, or 1 after answering.
 */
static int
req_addr(struct request *rq, struct response *rs, const char *const *allowed,
    struct addr *a)
{
	const char *all[8] = {"owner", NULL};
	int n = 1;

	for (int i = 0; allowed && allowed[i] && n < 7; i++)
		all[n++] = allowed[i];
	all[n] = NULL;
	if (query_check(rq->query, all, rs) == -1 ||
	    api_req_owner(rq, rs, a->owner, sizeof(a->owner), "no such agent"))
		return 1;
	if (rq->nsegs < 2 || strlen(rq->segs[1]) > SLUG_MAX ||
	    !agent_slug_ok(rq->segs[1]))
		return no_agent(rs), 1;
	snprintf(a->slug, sizeof(a->slug), "%s", rq->segs[1]);
	return 0;
}

/* Who did it, for the deploy log: "owner (token N)". */
void
api_whom(const struct request *rq, char *buf, size_t len)
{
	snprintf(buf, len, "%s (token %lld)", rq->who.owner,
	    (long long)rq->who.token_id);
}

/* Answers with the JSON text of row 0 column 0, status. */
int
api_reply_text(struct response *rs, int status, struct db_rows *rows)
{
	json_t *o = json_loads(db_rows_value(rows, 0, 0), 0, NULL);

	db_rows_free(rows);
	return o ? api_json(rs, status, o) : -1;
}

/* A one-row query of the agent a, answered; 404 without its row. */
static int
agent_query(struct request *rq, struct response *rs, const char *sql,
    const struct addr *a, char *err, size_t errlen)
{
	const char *p[2] = {a->owner, a->slug};
	struct db_rows *rows = db_query(rq->db, sql, 2, p, err, errlen);

	if (rows == NULL)
		return API_DB_FAILED;
	if (db_rows_count(rows) == 0) {
		db_rows_free(rows);
		return no_agent(rs);
	}
	return api_reply_text(rs, 200, rows);
}

/*
 * Whether agent a exists: 1 yes, 0 after answering 404, API_DB_FAILED.
 * A viewer that can see it is told 403 when the route writes (!rq->may).
 */
static int
exists_by(struct request *rq, struct response *rs, const struct addr *a,
    const char *sql, char *err, size_t errlen)
{
	const char *p[2] = {a->owner, a->slug};
	struct db_rows *rows = db_query(rq->db, sql, 2, p, err, errlen);
	int n;

	if (rows == NULL)
		return API_DB_FAILED;
	n = db_rows_count(rows);
	db_rows_free(rows);
	if (n == 0)
		return no_agent(rs);
	if (!rq->may)
		return api_error(rs, 403, "forbidden", NULL,
		           "a viewer token may read agents, not change them"),
		       0;
	return 1;
}

static int
exists(struct request *rq, struct response *rs, const struct addr *a, char *err,
    size_t errlen)
{
	return exists_by(rq, rs, a, SQL_agents_get, err, errlen);
}

/* A non-empty JSON body, or 1 after answering 400. */
int
api_no_body(const struct request *rq, struct response *rs)
{
	if (rq->body_len > 0)
		return 0;
	api_error(rs, 400, "invalid_json", NULL, "a JSON body is required");
	return 1;
}

/*
 * The agent's URLs against the host lists, as an http target's are: 1
 * after answering 400 naming the field.
 */
static int
urls_denied(
    const struct request *rq, const struct agent_doc *d, struct response *rs)
{
	return api_url_denied(rq, d->endpoint, "endpoint", rs) ||
	    api_url_denied(rq, d->health_url, "health.url", rs);
}

/* --- the agents ----------------------------------------------------------- */

/*
 * A list of things named by owner and slug (agents, pipelines), paged by
 * owner and slug: ?owner= (an admin without it lists every owner's),
 * ?enabled=, and ?EXTRA= (a slug, when extra is not NULL) filter.  sql
 * takes the owner (NULL: all), enabled (NULL: both), the extra slug if
 * any (NULL: none), the cursor's owner and slug (NULL: from the start)
 * and the rows at most; key names the answer's array.
 */
int
api_slug_list(struct request *rq, struct response *rs, const char *sql,
    const char *key, const char *extra, char *err, size_t errlen)
{
	const char *allowed[] = {
	    "owner", "enabled", "limit", "cursor", extra, NULL};
	char owner[API_OWNER_MAX * 4 + 1], en[8], x[80],
	    cur[API_OWNER_MAX * 4 + 80], lim[24], *sep = NULL;
	const char *p[6];
	struct db_rows *rows;
	int64_t limit;
	int r, n = 0, has_owner, has_en, has_x = 0;

	if (query_check(rq->query, allowed, rs) == -1 ||
	    api_list_limit(rq->query, &limit, rs))
		return 0;
	has_owner = query_get(rq->query, "owner", owner, sizeof(owner)) != 0;
	if (api_req_owner(rq, rs, owner, sizeof(owner), NULL))
		return 0;
	if ((has_en = query_get(rq->query, "enabled", en, sizeof(en))) != 0 &&
	    (has_en == -1 || (strcmp(en, "true") && strcmp(en, "false"))))
		return api_error(rs, 400, "invalid_query", "enabled",
		    "expected true or false");
	if (extra && (has_x = query_get(rq->query, extra, x, sizeof(x))) != 0 &&
	    (has_x == -1 || !agent_slug_ok(x)))
		return api_error(rs, 400, "invalid_query", extra,
		    "expected an id: 1 to 64 of a-z, 0-9 and '-'");
	/* The cursor is the last one's "owner_slug": slugs have no '_'. */
	if ((r = query_get(rq->query, "cursor", cur, sizeof(cur))) != 0 &&
	    (r == -1 || (sep = strrchr(cur, '_')) == NULL || sep == cur ||
	        !agent_slug_ok(sep + 1)))
		return api_error(rs, 400, "invalid_query", "cursor",
		    "not a cursor this API gave out");
	if (sep)
		*sep = '\0';
	snprintf(lim, sizeof(lim), "%lld", (long long)limit + 1);
	p[n++] = rq->who.role == ROLE_ADMIN && !has_owner ? NULL : owner;
	p[n++] = has_en == 1 ? en : NULL;
	if (extra)
		p[n++] = has_x == 1 ? x : NULL;
	p[n++] = sep ? cur : NULL;
	p[n++] = sep ? sep + 1 : NULL;
	p[n++] = lim;
	if ((rows = db_query(rq->db, sql, n, p, err, errlen)) == NULL)
		return API_DB_FAILED;
	r = api_page(rs, rows, limit, key, api_row_item);
	db_rows_free(rows);
	return r;
}

/*
 * For a PATCH of a thing named by owner and slug (p: both; what: "agent"
 * or "pipeline"): opens a transaction and reads the row sql returns
 * (locked) as JSON.  Returns it with the transaction open, or NULL with
 * the transaction rolled back and *r what the handler returns: 0 after
 * answering 404 (no such thing) or 403 (a viewer that sees it),
 * API_DB_FAILED, or -1.
 */
json_t *
api_slug_load(struct request *rq, struct response *rs, const char *sql,
    const char *const *p, const char *what, int *r, char *err, size_t errlen)
{
	struct db_rows *rows;
	json_t *row;
	int n;

	*r = API_DB_FAILED;
	if (db_begin(rq->db, err, errlen) == -1)
		return NULL;
	if ((rows = db_query(rq->db, sql, 2, p, err, errlen)) == NULL) {
		db_rollback(rq->db);
		return NULL;
	}
	if ((n = db_rows_count(rows)) == 0 || !rq->may) {
		db_rows_free(rows);
		db_rollback(rq->db);
		*r = n == 0
		    ? api_error(rs, 404, "not_found", NULL, "no such %s", what)
		    : api_error(rs, 403, "forbidden", NULL,
		          "a viewer token may read %ss, not change "
		          "them",
		          what);
		return NULL;
	}
	row = json_loads(db_rows_value(rows, 0, 0), 0, NULL);
	db_rows_free(rows);
	if (row == NULL) {
		db_rollback(rq->db);
		*r = -1;
	}
	return row;
}

/*
 * The last statement of a PATCH's open transaction (sql, its n params
 * p), which returns the thing as JSON: commits, and answers 200 with it.
 * API_DB_FAILED (rolled back) when either fails.
 */
int
api_write_reply(struct request *rq, struct response *rs, const char *sql, int n,
    const char *const *p, char *err, size_t errlen)
{
	struct db_rows *rows = db_query(rq->db, sql, n, p, err, errlen);

	if (rows == NULL || db_commit(rq->db, err, errlen) == -1) {
		db_rows_free(rows);
		db_rollback(rq->db);
		return API_DB_FAILED;
	}
	return api_reply_text(rs, 200, rows);
}

/* GET /agents: by owner and id, paged; ?owner= and ?enabled= filter. */
int
agents_list(struct request *rq, struct response *rs, char *err, size_t errlen)
{
	return api_slug_list(
	    rq, rs, SQL_agents_list, "agents", NULL, err, errlen);
}

/*
 * Wakes the supervisors to probe an agent whose health URL is set (a new
 * agent, or a new URL or interval: agents.sql probes it at once), in the
 * caller's transaction if one is open.  A lost wake only delays the
 * probe to the supervisors' next look (HEALTH_POLL_MS).
 */
static void
wake_probes(struct request *rq, const struct agent_doc *d)
{
	char err[CV_ERRLEN];

	if (d->health_url != NULL && d->enabled &&
	    db_notify(rq->db, "cronvisor_wake", "health", err, sizeof(err)) ==
	        -1)
		log_warnx("database: %s", err);
}

/* POST /agents: a new agent (201), 409 if the owner has one of its id. */
int
agents_create(struct request *rq, struct response *rs, char *err, size_t errlen)
{
	static const char *const allowed[] = {"owner", NULL};
	char owner[API_OWNER_MAX * 4 + 1], by[API_OWNER_MAX * 4 + 40], *cols;
	const char *p[3];
	struct schedule_error e;
	struct agent_doc d;
	struct db_rows *rows;
	json_t *c;

	if (query_check(rq->query, allowed, rs) == -1 ||
	    api_req_owner(rq, rs, owner, sizeof(owner), NULL) ||
	    api_no_body(rq, rs))
		return 0;
	if (agent_parse(rq->body, rq->body_len, &d, &e) == -1)
		return api_doc_error(rs, &e);
	if (urls_denied(rq, &d, rs)) {
		agent_clear(&d);
		return 0;
	}
	c = agent_columns(&d);
	cols = c ? json_dumps(c, JSON_COMPACT) : NULL;
	json_decref(c);
	if (cols == NULL) {
		agent_clear(&d);
		return -1;
	}
	api_whom(rq, by, sizeof(by));
	p[0] = owner;
	p[1] = by;
	p[2] = cols;
	rows = db_query(rq->db, SQL_agents_insert, 3, p, err, errlen);
	free(cols);
	if (rows == NULL) {
		agent_clear(&d);
		return API_DB_FAILED;
	}
	if (db_rows_count(rows) == 0) {
		db_rows_free(rows);
		api_error(rs, 409, "conflict", "agent_id",
		    "this owner has an agent \"%s\" already", d.agent_id);
		agent_clear(&d);
		return 0;
	}
	wake_probes(rq, &d);
	agent_clear(&d);
	return api_reply_text(rs, 201, rows);
}

/* GET /agents/{id} */
int
agents_get(struct request *rq, struct response *rs, char *err, size_t errlen)
{
	struct addr a;

	if (req_addr(rq, rs, NULL, &a))
		return 0;
	return agent_query(rq, rs, SQL_agents_get, &a, err, errlen);
}

/*
 * PATCH /agents/{id}: the members the body names replace the agent's,
 * checked as a whole; a secret not sent is kept.
 */
int
agents_update(struct request *rq, struct response *rs, char *err, size_t errlen)
{
	const char *p[3];
	struct schedule_error e;
	struct agent_doc d;
	struct addr a;
	char *cols = NULL;
	json_t *row, *c;
	int r;

	if (req_addr(rq, rs, NULL, &a) || api_no_body(rq, rs))
		return 0;
	p[0] = a.owner;
	p[1] = a.slug;
	if ((row = api_slug_load(
	         rq, rs, SQL_agents_load, p, "agent", &r, err, errlen)) == NULL)
		return r;
	r = agent_from_row(row, &d, &e);
	json_decref(row);
	if (r == -1) {
		db_rollback(rq->db);
		return api_doc_error(rs, &e);
	}
	if ((rq->replace ? agent_replace : agent_patch)(
	        &d, rq->body, rq->body_len, &e) == -1 ||
	    urls_denied(rq, &d, rs)) {
		agent_clear(&d);
		db_rollback(rq->db);
		return rs->status ? 0 : api_doc_error(rs, &e);
	}
	c = agent_columns(&d);
	wake_probes(rq, &d);
	agent_clear(&d);
	if (c == NULL || (cols = json_dumps(c, JSON_COMPACT)) == NULL) {
		json_decref(c);
		db_rollback(rq->db);
		return -1;
	}
	json_decref(c);
	p[2] = cols;
	r = api_write_reply(rq, rs, SQL_agents_update, 3, p, err, errlen);
	free(cols);
	return r;
}

/* DELETE /agents/{id}: 204; 409 while a schedule targets it. */
int
agents_delete(struct request *rq, struct response *rs, char *err, size_t errlen)
{
	const char *p[2];
	struct db_rows *rows;
	struct addr a;
	int r;

	if (req_addr(rq, rs, NULL, &a))
		return 0;
	/*
	 * The agent's row is locked first, and the schedules and pipelines
	 * that use it are counted after, in a statement of their own: a
	 * pipeline saved meanwhile (it locks the rows of its agents, FOR
	 * SHARE) is then seen, not missed by an older snapshot.
	 */
	if (db_begin(rq->db, err, errlen) == -1)
		return API_DB_FAILED;
	if ((r = exists_by(rq, rs, &a, SQL_agents_lock, err, errlen)) != 1) {
		db_rollback(rq->db);
		return r;
	}
	p[0] = a.owner;
	p[1] = a.slug;
	if ((rows = db_query(rq->db, SQL_agents_delete, 2, p, err, errlen)) ==
	        NULL ||
	    db_commit(rq->db, err, errlen) == -1) {
		db_rows_free(rows);
		db_rollback(rq->db);
		return API_DB_FAILED;
	}
	r = 0;
	if (strcmp(db_rows_value(rows, 0, 0), "1") == 0)
		rs->status = 204;
	else if (strcmp(db_rows_value(rows, 0, 2), "t") == 0)
		r = api_error(rs, 409, "agent_in_use", NULL,
		    "%s schedule(s) or pipeline(s) use this agent: change or "
		    "delete them first",
		    db_rows_value(rows, 0, 1));
	else
		r = no_agent(rs);
	db_rows_free(rows);
	return r;
}

/* --- versions and deployments ------------------------------------------- */

/* GET /agents/{id}/versions: the newest first. */
int
agents_versions(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	const char *p[2];
	struct db_rows *rows;
	struct addr a;
	json_t *list;
	int n, r;

	if (req_addr(rq, rs, NULL, &a))
		return 0;
	p[0] = a.owner;
	p[1] = a.slug;
	if ((r = agent_query(rq, rs, SQL_agents_get, &a, err, errlen)) != 0 ||
	    rs->status != 200)
		return r;
	http_response_clear(rs);
	if ((rows = db_query(rq->db, SQL_agents_versions, 2, p, err, errlen)) ==
	    NULL)
		return API_DB_FAILED;
	if ((list = json_array()) == NULL) {
		db_rows_free(rows);
		return -1;
	}
	n = db_rows_count(rows);
	for (int i = 0; i < n; i++)
		json_array_append_new(
		    list, json_loads(db_rows_value(rows, i, 0), 0, NULL));
	db_rows_free(rows);
	return api_json(rs, 200, json_pack("{s:o}", "versions", list));
}

/* POST /agents/{id}/versions: a new version (201); 409 if it exists. */
int
agents_version_create(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	char by[API_OWNER_MAX * 4 + 40], *schema = NULL;
	struct schedule_error e;
	struct agent_version v;
	struct db_rows *rows;
	struct addr a;
	const char *p[7];
	int r;

	if (req_addr(rq, rs, NULL, &a) || api_no_body(rq, rs))
		return 0;
	if ((r = exists(rq, rs, &a, err, errlen)) != 1)
		return r;
	if (agent_version_parse(rq->body, rq->body_len, &v, &e) == -1)
		return api_doc_error(rs, &e);
	if (api_url_denied(rq, v.endpoint, "endpoint", rs)) {
		agent_version_clear(&v);
		return 0;
	}
	if (v.input_schema &&
	    (schema = json_dumps(v.input_schema, JSON_COMPACT)) == NULL) {
		agent_version_clear(&v);
		return -1;
	}
	api_whom(rq, by, sizeof(by));
	p[0] = a.owner;
	p[1] = a.slug;
	p[2] = v.version;
	p[3] = v.endpoint;
	p[4] = schema;
	p[5] = v.description;
	p[6] = by;
	rows = db_query(rq->db, SQL_agents_version_insert, 7, p, err, errlen);
	free(schema);
	if (rows == NULL)
		r = API_DB_FAILED;
	else if (db_rows_count(rows) == 0) {
		db_rows_free(rows);
		r = api_error(rs, 409, "conflict", "version",
		    "version %s exists; versions cannot change", v.version);
	} else
		r = api_reply_text(rs, 201, rows);
	agent_version_clear(&v);
	return r;
}

/*
 * The string member key of a small JSON body (deploy, promote, rollback):
 * one of set when set is given.  NULL after answering 400.
 */
static const char *
body_str(
    json_t *body, const char *key, const char *const *set, struct response *rs)
{
	json_t *v = json_object_get(body, key);
	const char *s = json_string_value(v);
	int i;

	if (v == NULL) {
		api_error(rs, 400, "missing_field", key, "required");
		return NULL;
	}
	if (s == NULL || json_string_length(v) > 100) {
		api_error(rs, 400, "invalid_field", key, "expected a string");
		return NULL;
	}
	for (i = 0; set && set[i] && strcmp(set[i], s); i++)
		;
	if (set && set[i] == NULL) {
		api_error(rs, 400, "invalid_field", key,
		    "expected \"production\", \"staging\" or \"development\"");
		return NULL;
	}
	return s;
}

/* A body of only the members named in keys, or NULL after answering. */
static json_t *
small_body(struct request *rq, struct response *rs, const char *const *keys)
{
	struct schedule_error e;
	const char *k;
	json_t *b, *v;
	int i;

	if (api_no_body(rq, rs))
		return NULL;
	if ((b = doc_load(rq->body, rq->body_len, &e)) == NULL) {
		api_doc_error(rs, &e);
		return NULL;
	}
	if (!json_is_object(b)) {
		json_decref(b);
		api_error(rs, 400, "invalid_json", NULL, "expected an object");
		return NULL;
	}
	json_object_foreach(b, k, v)
	{
		for (i = 0; keys[i] && strcmp(keys[i], k); i++)
			;
		if (keys[i] == NULL) {
			api_error(
			    rs, 400, "unknown_field", k, "not a field here");
			json_decref(b);
			return NULL;
		}
	}
	return b;
}

/*
 * A version of a in env that sql ($1 owner, $2 slug, $3 environment; one
 * column) gives: the one deployed (agents_deployed), the one a rollback
 * goes back to (agents_rollback_target).  Into buf, "" for none; 0 or -1.
 */
static int
version_in(struct request *rq, const char *sql, const struct addr *a,
    const char *env, char *buf, size_t len, char *err, size_t errlen)
{
	const char *p[3] = {a->owner, a->slug, env};
	struct db_rows *rows = db_query(rq->db, sql, 3, p, err, errlen);

	if (rows == NULL)
		return -1;
	snprintf(buf, len, "%s",
	    db_rows_count(rows) && db_rows_value(rows, 0, 0)
	        ? db_rows_value(rows, 0, 0)
	        : "");
	db_rows_free(rows);
	return 0;
}

/*
 * Deploys version of a in env as action, logged, and answers with the
 * agent's deployments.
 */
static int
deploy(struct request *rq, struct response *rs, const struct addr *a,
    const char *env, const char *version, const char *action, char *err,
    size_t errlen)
{
	char by[API_OWNER_MAX * 4 + 40];
	const char *p[6] = {a->owner, a->slug, env, version, action, by};
	const char *v[3] = {a->owner, a->slug, version};
	struct db_rows *rows;

	api_whom(rq, by, sizeof(by));
	if ((rows = db_query(
	         rq->db, SQL_agents_version_exists, 3, v, err, errlen)) == NULL)
		return API_DB_FAILED;
	if (db_rows_count(rows) == 0) {
		db_rows_free(rows);
		return api_error(rs, 404, "not_found", "version",
		    "agent %s has no version %s", a->slug, version);
	}
	db_rows_free(rows);
	if ((rows = db_query(rq->db, SQL_agents_deploy, 6, p, err, errlen)) ==
	    NULL)
		return API_DB_FAILED;
	db_rows_free(rows);
	return agent_query(rq, rs, SQL_agents_deployments, a, err, errlen);
}

/*
 * What deploy, promote and rollback start with: the agent of the path,
 * which must exist (a viewer is told 403), and a small body of keys.
 * 1 with *a and *b (the caller frees it) set; else what the handler
 * returns, the answer made.
 */
static int
deploy_request(struct request *rq, struct response *rs, const char *const *keys,
    struct addr *a, json_t **b, char *err, size_t errlen)
{
	int r;

	if (req_addr(rq, rs, NULL, a))
		return 0;
	if ((r = exists(rq, rs, a, err, errlen)) != 1)
		return r;
	return (*b = small_body(rq, rs, keys)) == NULL ? 0 : 1;
}

/* POST /agents/{id}/deploy {"version", "environment"} */
int
agents_deploy(struct request *rq, struct response *rs, char *err, size_t errlen)
{
	static const char *const keys[] = {"version", "environment", NULL};
	const char *version, *env;
	struct addr a;
	json_t *b;
	int r;

	if ((r = deploy_request(rq, rs, keys, &a, &b, err, errlen)) != 1)
		return r;
	if ((version = body_str(b, "version", NULL, rs)) == NULL ||
	    (env = body_str(b, "environment", environments, rs)) == NULL) {
		json_decref(b);
		return 0;
	}
	r = deploy(rq, rs, &a, env, version, "deploy", err, errlen);
	json_decref(b);
	return r;
}

/*
 * POST /agents/{id}/promote {"from", "to"}: the version deployed in from
 * is deployed in to.
 */
int
agents_promote(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	static const char *const keys[] = {"from", "to", NULL};
	const char *from, *to;
	char version[128];
	struct addr a;
	json_t *b;
	int r;

	if ((r = deploy_request(rq, rs, keys, &a, &b, err, errlen)) != 1)
		return r;
	if ((from = body_str(b, "from", environments, rs)) == NULL ||
	    (to = body_str(b, "to", environments, rs)) == NULL)
		r = 0;
	else if (strcmp(from, to) == 0)
		r = api_error(rs, 400, "invalid_field", "to",
		    "promote to another environment than from");
	else if (version_in(rq, SQL_agents_deployed, &a, from, version,
	             sizeof(version), err, errlen) == -1)
		r = API_DB_FAILED;
	else if (version[0] == '\0')
		r = api_error(rs, 409, "nothing_deployed", "from",
		    "no version of %s is deployed in %s", a.slug, from);
	else
		r = deploy(rq, rs, &a, to, version, "promote", err, errlen);
	json_decref(b);
	return r;
}

/*
 * POST /agents/{id}/rollback {"environment"}: back to the version the
 * current one replaced; 409 when there is none.
 */
int
agents_rollback(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	static const char *const keys[] = {"environment", NULL};
	const char *env;
	char version[128];
	struct addr a;
	json_t *b;
	int r;

	if ((r = deploy_request(rq, rs, keys, &a, &b, err, errlen)) != 1)
		return r;
	if ((env = body_str(b, "environment", environments, rs)) == NULL) {
		json_decref(b);
		return 0;
	}
	if (version_in(rq, SQL_agents_rollback_target, &a, env, version,
	        sizeof(version), err, errlen) == -1) {
		json_decref(b);
		return API_DB_FAILED;
	}
	if (version[0] == '\0')
		r = api_error(rs, 409, "nothing_to_roll_back", "environment",
		    "%s has no earlier version to go back to in %s", a.slug,
		    env);
	else
		r = deploy(rq, rs, &a, env, version, "rollback", err, errlen);
	json_decref(b);
	return r;
}

/* GET /agents/{id}/deployments: by environment, and the log. */
int
agents_deployments(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	struct addr a;
	int r;

	if (req_addr(rq, rs, NULL, &a))
		return 0;
	/* the log of an agent that does not exist would be empty: 404 */
	if ((r = agent_query(rq, rs, SQL_agents_get, &a, err, errlen)) != 0 ||
	    rs->status != 200)
		return r;
	http_response_clear(rs);
	return agent_query(rq, rs, SQL_agents_deployments, &a, err, errlen);
}

/* GET /agents/{id}/health: the latest probe and the last 100. */
int
agents_health(struct request *rq, struct response *rs, char *err, size_t errlen)
{
	struct addr a;

	if (req_addr(rq, rs, NULL, &a))
		return 0;
	return agent_query(rq, rs, SQL_agents_health, &a, err, errlen);
}

/* --- an agent's report --------------------------------------------------- */

/* Answers with what cronvisor_job_report() said. */
static int
report_answer(struct response *rs, const char *said)
{
	if (strcmp(said, "ok") == 0)
		return api_json(
		    rs, 200, json_pack("{s:s}", "status", "recorded"));
	if (strcmp(said, "duplicate") == 0)
		return api_json(
		    rs, 200, json_pack("{s:s}", "status", "already recorded"));
	if (strcmp(said, "superseded") == 0)
		return api_error(rs, 409, "superseded", NULL,
		    "a later attempt of this job was made: this token's "
		    "attempt no longer counts");
	if (strcmp(said, "conflict") == 0)
		return api_error(rs, 409, "conflict", NULL,
		    "another report of this attempt was recorded");
	if (strcmp(said, "ended") == 0)
		return api_error(rs, 409, "ended", NULL,
		    "this attempt has ended (timed out, or stopped) without a "
		    "report");
	if (strcmp(said, "invalid") == 0)
		return api_error(rs, 400, "invalid_field", "status",
		    "expected \"completed\" or \"failed\"");
	return api_error(rs, 401, "unauthorized", NULL,
	    "no attempt of this job has this token");
}

/*
 * POST /jobs/{id}/complete and /heartbeat: a report of the agent that
 * runs the job, with the attempt's callback token (docs/agents.md):
 * "Authorization: Bearer <token>", else the body's "token".  The body is
 * read by agent_report_parse() (common/agent.c); the token and the report
 * go to cronvisor_job_report(), which checks and records them.
 */
static int
report(
    struct request *rq, struct response *rs, int beat, char *err, size_t errlen)
{
	char id[API_ID_LEN + 1], tok[AUTH_TOKEN_MAX + 1];
	const char *token, *p[6];
	struct schedule_error e;
	struct agent_report ar;
	struct db_rows *rows;
	int r;

	if (query_check(rq->query, (const char *const[]){NULL}, rs) == -1)
		return 0;
	if (rq->nsegs < 2 || api_parse_id(rq->segs[1], id) == -1)
		return api_error(rs, 404, "not_found", NULL, "no such job");
	if (agent_report_parse(rq->body, rq->body_len, beat, &ar, &e) == -1)
		return api_doc_error(rs, &e);
	if (auth_bearer(rq->authorization ? rq->authorization : "", tok,
	        sizeof(tok)) == 1)
		token = tok;
	else if ((token = ar.token) == NULL) {
		agent_report_clear(&ar);
		return api_error(rs, 401, "unauthorized", NULL,
		    "a report needs the attempt's callback token: "
		    "Authorization: Bearer <token>, or \"token\" in the body");
	}
	p[0] = id;
	p[1] = token;
	p[2] = beat ? "heartbeat" : "complete";
	p[3] = ar.status;
	p[4] = ar.result;
	p[5] = ar.error;
	rows = db_query(rq->db, SQL_agents_report, 6, p, err, errlen);
	explicit_bzero(tok, sizeof(tok));
	agent_report_clear(&ar);
	if (rows == NULL)
		return API_DB_FAILED;
	r = report_answer(rs, db_rows_value(rows, 0, 0));
	db_rows_free(rows);
	return r;
}

int
jobs_complete(struct request *rq, struct response *rs, char *err, size_t errlen)
{
	return report(rq, rs, 0, err, errlen);
}

int
jobs_heartbeat(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	return report(rq, rs, 1, err, errlen);
}
