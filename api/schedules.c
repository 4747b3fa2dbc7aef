/*
 * schedules.c: the handlers of /schedules (docs/api.md).  A body is read
 * by common/schedule.c, the code the supervisor's rows are checked
 * against, so the API accepts exactly what the supervisor can run.  Every
 * write is one transaction; the schedules_wake trigger of sql/001_init.sql
 * NOTIFYs the supervisors in it whenever next_run_at or status moves.  A
 * schedule of another owner is not found, for anyone but an admin.
 */
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"

#define INSERT_TRIES 4   /* id8 collisions survived by a create */
#define IDEM_KEY_MAX 255 /* bytes of an Idempotency-Key */
#define BATCH_MAX    500
#define SECRET_MASK  "***" /* target.headers and env values, for viewers */

/* The fields an editor's write may not raise past the configuration. */
static const char *const limit_keys[] = {
    "cpu_seconds", "memory_mb", "nofile", "nproc", "fsize_mb"};

/* The order of the state fields the API adds to the document. */
static const char *const state_keys[] = {"status", "current_repeat",
    "current_retry", "run_count", "error_count", "last_error", "last_run_at",
    "next_run_at", "runs_in_flight", "apply_set", "created_at", "updated_at"};

/*
 * Copies the path segment seg into out (API_ID_LEN + 1 bytes) if it is a
 * UUID, lower-cased; 0 if it is, -1 if not (such an id names nothing).
 */
int
api_parse_id(const char *seg, char *out)
{
	for (int i = 0; i < API_ID_LEN; i++) {
		int dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? seg[i] != '-' : !isxdigit((unsigned char)seg[i]))
			return -1;
		out[i] = (char)tolower((unsigned char)seg[i]);
	}
	out[API_ID_LEN] = '\0';
	return seg[API_ID_LEN] == '\0' ? 0 : -1;
}

/* The owner a query is limited to: the caller's, or NULL for an admin. */
static const char *
scope(const struct request *rq)
{
	return rq->who.role == ROLE_ADMIN ? NULL : rq->who.owner;
}

/* The 404 of a schedule that does not exist for this caller. */
static int
not_found(struct response *rs)
{
	return api_error(rs, 404, "not_found", NULL, "no such schedule");
}

/* A schedule_error as the response: 400, or 500 for an internal one. */
int
api_doc_error(struct response *rs, const struct schedule_error *e)
{
	if (strcmp(e->code, "internal") == 0)
		return api_error(rs, 500, "internal", NULL, "%s", e->message);
	return api_error(
	    rs, 400, e->code, e->field[0] ? e->field : NULL, "%s", e->message);
}

/*
 * Renames the field of the error in rs as the body of d spelled it (a
 * seed's startAt for at, agentId for target.agent: spelling.c), for the
 * checks below that name the document's fields natively.
 */
static void
respell(struct response *rs, const struct schedule_doc *d)
{
	json_t *err = json_object_get(rs->body, "error");
	const char *f = json_string_value(json_object_get(err, "field"));
	char buf[256];

	if (f != NULL && d->nspelled > 0)
		json_object_set_new(err, "field",
		    json_string(spelling_field(d, f, buf, sizeof(buf))));
}

/*
 * The string member key of the jsonb text of a schedules row, as JSON (a
 * new reference), or JSON null.  jsonb writes `"key": "value"` with the
 * quotes of keys and values bare and those inside strings escaped, so the
 * first `"key": "` is the member, whatever the row holds elsewhere.
 */
static json_t *
row_string(const char *row_text, const char *key)
{
	char needle[32];
	const char *p, *q;
	json_t *v;

	snprintf(needle, sizeof(needle), "\"%s\": \"", key);
	if ((p = strstr(row_text, needle)) == NULL)
		return json_null();
	p += strlen(needle) - 1;
	for (q = p + 1; *q != '\0' && *q != '"'; q++)
		if (*q == '\\' && q[1] != '\0')
			q++;
	v = *q == '"'
	    ? json_loadb(p, (size_t)(q - p + 1), JSON_DECODE_ANY, NULL)
	    : NULL;
	return v ? v : json_null();
}

/*
 * A row jansson cannot read (a number of jsonb that no int64 or double
 * holds, written by hand or by a version that did not refuse it): its id,
 * owner and name, and "unreadable" saying why, so that one such row does
 * not take its whole page down.  NULL on OOM.
 */
static json_t *
schedule_unreadable(const char *row_text, const char *why)
{
	return json_pack("{s:o, s:o, s:o, s:s+}", "id",
	    row_string(row_text, "id"), "owner", row_string(row_text, "owner"),
	    "name", row_string(row_text, "name"), "unreadable",
	    "the stored schedule cannot be read: ", why);
}

/*
 * Shows the values of target.headers and target.env of the schedule o as
 * SECRET_MASK: they carry credentials, and a viewer reads schedules
 * it may not change (docs/api.md, "Secrets in targets").
 */
static void
mask_secrets(json_t *o)
{
	static const char *const maps[] = {"headers", "env"};
	json_t *t = json_object_get(o, "target"), *m, *v;
	const char *k, *url = json_string_value(json_object_get(t, "url"));
	const char *h, *at, *colon;

	for (size_t i = 0; i < sizeof(maps) / sizeof(*maps); i++) {
		m = json_object_get(t, maps[i]);
		json_object_foreach(m, k, v)
		    json_object_set_new(m, k, json_string(SECRET_MASK));
	}
	/* A redis target's password: redis://USER:***@HOST */
	if (url != NULL && strncmp(url, "redis://", 8) == 0 &&
	    (at = memchr(h = url + 8, '@', strcspn(url + 8, "/"))) != NULL &&
	    (colon = memchr(h, ':', (size_t)(at - h))) != NULL)
		json_object_set_new(t, "url",
		    json_sprintf("%.*s%s%s", (int)(colon + 1 - url), url,
		        SECRET_MASK, at));
}

/*
 * The schedule as the API returns it, from the JSON text of its row: id
 * and owner, the document (through common/schedule.c, so that output and
 * input are one format), then the state; with mask, its secrets masked.
 * A row the document code refuses (written by hand) is returned as the
 * database has it, one jansson cannot read as schedule_unreadable() says.
 * NULL on OOM.
 */
json_t *
schedule_out_as(const char *row_text, int mask)
{
	json_error_t jerr;
	json_t *row = json_loads(row_text, 0, &jerr), *out, *doc;
	struct schedule_doc d;
	struct schedule_error e;

	if (row == NULL)
		return schedule_unreadable(row_text, jerr.text);
	if (schedule_from_row(row, &d, &e) == -1) {
		if (mask)
			mask_secrets(row);
		return row;
	}
	doc = schedule_to_json(&d);
	schedule_clear(&d);
	out = json_pack("{s:O?, s:O?}", "id", json_object_get(row, "id"),
	    "owner", json_object_get(row, "owner"));
	if (out == NULL || doc == NULL || json_object_update(out, doc) == -1) {
		json_decref(out);
		out = NULL;
		goto done;
	}
	for (size_t i = 0; i < sizeof(state_keys) / sizeof(*state_keys); i++) {
		json_t *v = json_object_get(row, state_keys[i]);

		if (json_object_set(out, state_keys[i], v ? v : json_null())) {
			json_decref(out);
			out = NULL;
			goto done;
		}
	}
	if (mask)
		mask_secrets(out);
done:
	json_decref(doc);
	json_decref(row);
	return out;
}

/* The schedule of row_text as a writer sees it. */
static json_t *
schedule_out(const char *row_text)
{
	return schedule_out_as(row_text, 0);
}

/* Answers with the schedule of row_text and status. */
static int
reply_schedule(struct response *rs, int status, const char *row_text)
{
	json_t *o = schedule_out(row_text);

	return o ? api_json(rs, status, o) : -1;
}

/*
 * Reads schedule id (visible to the caller, not deleted), locking it when
 * lock is set (inside the caller's transaction).  Returns the rows (the
 * columns {{api_schedule}} of sql/queries/api.sql, enum api_schedule_col)
 * or NULL: then *found says whether it was a database failure (-1) or no
 * row (0).
 */
static struct db_rows *
load(struct request *rq, const char *id, int lock, int *found, char *err,
    size_t errlen)
{
	const char *p[2] = {id, scope(rq)};
	struct db_rows *rows;

	rows = db_query(rq->db,
	    lock ? SQL_api_schedule_lock : SQL_api_schedule_load, 2, p, err,
	    errlen);
	*found = rows ? db_rows_count(rows) > 0 : -1;
	if (rows && *found == 0) {
		db_rows_free(rows);
		return NULL;
	}
	return rows;
}

/* The id of a /schedules/{id}... request, or NULL after answering 404. */
static const char *
path_id(struct request *rq, struct response *rs, char *buf)
{
	if (rq->nsegs < 2 || api_parse_id(rq->segs[1], buf) == -1) {
		not_found(rs);
		return NULL;
	}
	return buf;
}

/*
 * A viewer sees its owner's schedules and changes none of them: 1 after
 * answering 403.  Handlers ask only once the schedule proved visible, so
 * that another owner's id is a 404 for every role, as if it did not exist.
 */
static int
read_only(const struct request *rq, struct response *rs)
{
	if (rq->may)
		return 0;
	api_error(rs, 403, "forbidden", NULL,
	    "a viewer token may read schedules, not change them");
	return 1;
}

/* Now, in whole seconds of the real-time clock. */
static int64_t
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec;
}

/*
 * What an editor may not set: run_as and limits above the configured
 * defaults (fields: the bits of the body to look at).  0 if allowed, else
 * answers 403 naming the field and returns 1.
 */
static int
forbidden_fields(const struct request *rq, const struct schedule_doc *d,
    uint32_t fields, struct response *rs)
{
	const int64_t asked[] = {d->limits.cpu_seconds, d->limits.memory_mb,
	    d->limits.nofile, d->limits.nproc, d->limits.fsize_mb};
	const int64_t max[] = {rq->cf->limit_cpu_seconds,
	    rq->cf->limit_memory_mb, rq->cf->limit_nofile, rq->cf->limit_nproc,
	    rq->cf->limit_fsize_mb};
	json_t *run_as = json_object_get(d->target, "run_as");
	char field[64];

	if (rq->who.role == ROLE_ADMIN)
		return 0;
	if ((fields & (1u << SCHEDULE_F_TIMEOUT)) &&
	    rq->cf->max_timeout_seconds > 0 &&
	    d->timeout_seconds > rq->cf->max_timeout_seconds) {
		api_error(rs, 400, "invalid_field", "timeout_seconds",
		    "at most %lld seconds (max_timeout_seconds) without an "
		    "admin token",
		    (long long)rq->cf->max_timeout_seconds);
		return 1;
	}
	if ((fields & (1u << SCHEDULE_F_TARGET)) && run_as &&
	    !json_is_null(run_as)) {
		api_error(rs, 403, "forbidden", "target.run_as",
		    "only an admin may choose the user a command runs as");
		return 1;
	}
	if (!(fields & (1u << SCHEDULE_F_LIMITS)))
		return 0;
	for (int i = 0; i < 5; i++)
		if (max[i] > 0 && asked[i] > max[i]) {
			snprintf(
			    field, sizeof(field), "limits.%s", limit_keys[i]);
			api_error(rs, 403, "forbidden", field,
			    "only an admin may set a limit above the default "
			    "%lld",
			    (long long)max[i]);
			return 1;
		}
	return 0;
}

/*
 * An exec target without run_as runs as its owner's user (runuser.c): an
 * owner the configuration gives none may not have one, whoever asks; 1
 * after answering 403 naming target.  The supervisor fails the runs of
 * such a schedule written before (or by hand) with the same rule.
 */
static int
no_run_user(const struct request *rq, const struct schedule_doc *d,
    const char *owner, struct response *rs)
{
	json_t *run_as = json_object_get(d->target, "run_as");
	char buf[RUNUSER_NAME_MAX + 1];

	if (d->target_type != SCHEDULE_TARGET_EXEC ||
	    (run_as && !json_is_null(run_as)) ||
	    runuser_for(rq->cf->run_users, rq->cf->run_user_default, owner, buf,
	        sizeof(buf)) != NULL)
		return 0;
	api_error(rs, 403, "forbidden", "target",
	    "the owner has no user to run commands as (run_users names "
	    "none and run_user_default is empty): no exec target");
	return 1;
}

/* A schedule without a target needs a receiver; 1 after answering 400. */
static int
no_receiver(
    const struct request *rq, const struct schedule_doc *d, struct response *rs)
{
	if (d->target_type != SCHEDULE_TARGET_RECEIVER ||
	    (rq->cf->receiver_url && rq->cf->receiver_url[0]))
		return 0;
	api_error(rs, 400, "invalid_field", "target",
	    "no target given and no receiver_url is configured");
	return 1;
}

/*
 * A host (of field's URL) that the configured host lists refuse
 * (http_deny_hosts, or outside http_allow_hosts) as it is written; 1
 * after answering 400 naming the field.
 */
static int
host_denied(const struct request *rq, const char *host, const char *field,
    struct response *rs)
{
	const char *allow = rq->cf->http_allow_hosts;
	const char *deny = rq->cf->http_deny_hosts;
	struct hostlist al, dl;
	enum hostlist_verdict v = HOSTLIST_OK;
	char err[CV_ERRLEN];
	int printable = 1;

	if (hostlist_parse(&al, allow ? allow : "", err, sizeof(err)) == 0 &&
	    hostlist_parse(&dl, deny ? deny : "", err, sizeof(err)) == 0)
		v = hostlist_check(&al, &dl, host, NULL);
	hostlist_clear(&al);
	hostlist_clear(&dl);
	if (v == HOSTLIST_OK)
		return 0;
	for (const char *p = host; *p != '\0'; p++)
		printable &= *p > 0x20 && *p < 0x7f && *p != '"';
	api_error(rs, 400, "invalid_field", field, "host \"%s\" %s",
	    printable ? host : "?", hostlist_verdict_text(v));
	return 1;
}

/*
 * A URL (of field) that names a host the configured host lists refuse
 * (http_deny_hosts, or outside http_allow_hosts) as it is written, or
 * that leads to the receiver; 1 after answering 400 naming the field.
 * Only the literal host is known here: the runner checks it again, with
 * the addresses it resolves to and every redirect, and has the last word.
 */
int
api_url_denied(const struct request *rq, const char *url, const char *field,
    struct response *rs)
{
	char host[512];

	if (url == NULL)
		return 0;
	/* Events at the receiver come from schedules without a target only. */
	if (receiver_reaches(rq->cf->receiver_url, url)) {
		api_error(rs, 400, "invalid_field", field,
		    "the URL leads to the receiver (receiver_url), which "
		    "takes events of schedules without a target only");
		return 1;
	}
	if (hostlist_url_host(url, host, sizeof(host)) == -1)
		return 0;
	return host_denied(rq, host, field, rs);
}

/*
 * What a redis target of a non-admin may not do (docs/schedules.md,
 * "Redis targets"): write a key outside its owner's namespace of the
 * configured server (raw_key), name a unix socket, a host the host lists
 * refuse, or the configured server itself by its URL.  1 after the 403
 * or 400 naming the field; 0 when it may be saved.
 */
static int
denied_redis(
    const struct request *rq, const struct schedule_doc *d, struct response *rs)
{
	const char *url = json_string_value(json_object_get(d->target, "url"));
	struct redis_url u, mine;
	char err[CV_ERRLEN];
	int same;

	if (rq->who.role == ROLE_ADMIN)
		return 0;
	if (json_is_true(json_object_get(d->target, "raw_key")))
		return api_error(rs, 403, "forbidden", "target.raw_key",
		           "only an admin may write a key outside the owner's "
		           "namespace"),
		       1;
	if (json_integer_value(json_object_get(d->target, "maxlen")) >
	    REDIS_MAXLEN_TENANT)
		return api_error(rs, 400, "invalid_field", "target.maxlen",
		           "at most %d entries without an admin token",
		           REDIS_MAXLEN_TENANT),
		       1;
	if (url == NULL || redis_url_parse(url, &u, err, sizeof(err)) == -1)
		return 0;
	explicit_bzero(u.password, sizeof(u.password));
	if (u.is_unix)
		return api_error(rs, 403, "forbidden", "target.url",
		           "only an admin may name a unix socket"),
		       1;
	/* The configured server as written, or its loopback in any
	 * spelling (the runner checks again, by address and run_id). */
	same = rq->cf->redis_url != NULL &&
	    redis_url_parse(rq->cf->redis_url, &mine, err, sizeof(err)) == 0 &&
	    !mine.is_unix && mine.port == u.port &&
	    (strcasecmp(mine.host, u.host) == 0 ||
	        (redis_host_local(mine.host) && redis_host_local(u.host)));
	explicit_bzero(&mine, sizeof(mine));
	if (same)
		return api_error(rs, 400, "invalid_field", "target.url",
		           "the URL leads to the configured Redis server "
		           "(redis_url), whose keys are kept apart by owner: "
		           "leave target.url out to write there"),
		       1;
	return host_denied(rq, u.host, "target.url", rs);
}

/* An http target whose URL api_url_denied() refuses: 1 after the 400. */
static int
denied_url(
    const struct request *rq, const struct schedule_doc *d, struct response *rs)
{
	if (d->target_type == SCHEDULE_TARGET_REDIS)
		return denied_redis(rq, d, rs);
	if (d->target_type != SCHEDULE_TARGET_HTTP)
		return 0;
	return api_url_denied(rq,
	    json_string_value(json_object_get(d->target, "url")), "target.url",
	    rs);
}

/*
 * A pipeline target (d's) that owner has no pipeline of, or a disabled
 * one: 1 after answering 400 naming target.pipeline; 0 when it may be
 * saved (the pipeline is locked until the save's transaction ends, so
 * that it is not deleted under the schedule); API_DB_FAILED.
 */
static int
pipeline_refused(struct request *rq, const struct schedule_doc *d,
    const char *owner, struct response *rs, char *err, size_t errlen)
{
	const char *p[2] = {
	    owner, json_string_value(json_object_get(d->target, "pipeline"))};
	struct db_rows *rows;
	int r = 0;

	if ((rows = db_query(
	         rq->db, SQL_pipelines_target, 2, p, err, errlen)) == NULL)
		return API_DB_FAILED;
	/* api_error() answers (0) or fails (-1): 1 says it answered. */
	if (db_rows_count(rows) == 0)
		r = api_error(rs, 400, "invalid_field", "target.pipeline",
		        "owner %s has no pipeline \"%s\"", owner, p[1]) == -1
		    ? -1
		    : 1;
	else if (strcmp(db_rows_value(rows, 0, 0), "t") != 0)
		r = api_error(rs, 400, "invalid_field", "target.pipeline",
		        "pipeline \"%s\" is disabled", p[1]) == -1
		    ? -1
		    : 1;
	db_rows_free(rows);
	return r;
}

/*
 * An agent target (docs/agents.md) names an agent of the schedule's owner
 * that is enabled, and its params satisfy the input schema of the version
 * deployed in its environment (or the agent's own).  0, 1 after answering
 * 400 naming the field, or API_DB_FAILED.
 */
static int
agent_refused(struct request *rq, const struct schedule_doc *d,
    const char *owner, struct response *rs, char *err, size_t errlen)
{
	const char *agent, *env;
	const char *p[3];
	struct jschema_error je;
	struct db_rows *rows;
	json_t *params, *schema = NULL;
	int r = 0;

	if (d->target_type == SCHEDULE_TARGET_PIPELINE)
		return pipeline_refused(rq, d, owner, rs, err, errlen);
	if (d->target_type != SCHEDULE_TARGET_AGENT)
		return 0;
	agent = json_string_value(json_object_get(d->target, "agent"));
	env = json_string_value(json_object_get(d->target, "environment"));
	p[0] = owner;
	p[1] = agent;
	p[2] = env ? env : "production";
	if ((rows = db_query(rq->db, SQL_agents_target, 3, p, err, errlen)) ==
	    NULL)
		return API_DB_FAILED;
	if (db_rows_count(rows) == 0)
		r = api_error(rs, 400, "invalid_field", "target.agent",
		        "owner %s has no agent \"%s\"", owner, agent) == -1
		    ? -1
		    : 1;
	else if (strcmp(db_rows_value(rows, 0, 0), "t") != 0)
		r = api_error(rs, 400, "invalid_field", "target.agent",
		        "agent \"%s\" is disabled", agent) == -1
		    ? -1
		    : 1;
	else if (db_rows_value(rows, 0, 1) != NULL &&
	    (schema = json_loads(db_rows_value(rows, 0, 1), 0, NULL)) != NULL) {
		params = json_object_get(d->target, "params");
		if (params == NULL)
			params = json_object();
		else
			json_incref(params);
		if (jschema_validate(schema, params, &je) == -1) {
			char field[sizeof(je.path) + 32];

			snprintf(field, sizeof(field), "target.params%s%s",
			    je.path[0] && je.path[0] != '[' ? "." : "",
			    je.path);
			r = api_error(rs, 400, "invalid_field", field,
			        "%s (the input schema of agent %s%s%s)",
			        je.message, agent,
			        db_rows_value(rows, 0, 2) ? " version " : "",
			        db_rows_value(rows, 0, 2)
			            ? db_rows_value(rows, 0, 2)
			            : "") == -1
			    ? -1
			    : 1;
		}
		json_decref(params);
		json_decref(schema);
	}
	db_rows_free(rows);
	return r;
}

/*
 * Slot (whole seconds, from common/slot.c) of document d as a text
 * parameter, epoch seconds with the milliseconds every slot of d has
 * (slot_set_ms(): a once schedule's `at`, an interval's `start_at`).
 */
static void
slot_param(const struct schedule_doc *d, int64_t slot, char *buf, size_t len)
{
	struct timing tm = {.kind = d->kind};
	int64_t ms;

	slot_set_ms(&tm, d->at, d->start_at);
	ms = slot_ms(&tm, slot);
	snprintf(buf, len, "%lld.%03d", (long long)civil_fdiv(ms, 1000),
	    (int)civil_fmod(ms, 1000));
}

/*
 * The first slot of d from now as text parameters (epoch seconds, with
 * milliseconds), or answers 400 and returns 1 when it has none.
 */
static int
first_slot(const struct schedule_doc *d, char *run, char *slot, size_t len,
    struct response *rs)
{
	struct slot s;
	int r = schedule_first_slot(d, now_s(), &s);

	if (r == 1) {
		slot_param(d, s.at, run, len);
		slot_param(d, s.at, slot, len);
		return 0;
	}
	if (r == -1)
		api_error(rs, 400, "invalid_field", "timezone",
		    "the schedule's timing cannot be computed");
	else if (d->kind == SCHED_KIND_ONCE)
		api_error(rs, 400, "invalid_field", "at", "is in the past");
	else
		api_error(rs, 400, "invalid_field", NULL,
		    "the schedule has no slot before the year 10000");
	return 1;
}

/* Rolls back and hands a database failure to the server. */
static int
db_failed(struct request *rq)
{
	db_rollback(rq->db);
	return API_DB_FAILED;
}

/*
 * Keeps the document of o (a schedule as schedule_out() shows it) with
 * its row, plain and masked (the masked one only when it differs), for
 * the lists to read (api_schedule_doc).
 * 0, API_DB_FAILED, or -1 out of memory.
 */
static int
keep_doc(struct request *rq, const json_t *o, char *err, size_t errlen)
{
	json_t *doc = json_deep_copy(o);
	char *plain = NULL, *masked = NULL;
	const char *p[3];
	int r = -1;

	if (doc == NULL)
		return -1;
	json_object_del(doc, "id");
	json_object_del(doc, "owner");
	for (size_t i = 0; i < sizeof(state_keys) / sizeof(*state_keys); i++)
		json_object_del(doc, state_keys[i]);
	if ((plain = json_dumps(doc, JSON_COMPACT)) == NULL)
		goto out;
	mask_secrets(doc);
	if ((masked = json_dumps(doc, JSON_COMPACT)) == NULL)
		goto out;
	p[0] = json_string_value(json_object_get(o, "id"));
	p[1] = plain;
	p[2] = strcmp(masked, plain) == 0 ? NULL : masked;
	r = db_exec(rq->db, SQL_api_schedule_doc, 3, p, err, errlen) == -1
	    ? API_DB_FAILED
	    : 0;
out:
	free(plain);
	free(masked);
	json_decref(doc);
	return r;
}

/*
 * Answers with row_text and commits: the answer is made first, so that a
 * write whose answer cannot be made is rolled back, never committed
 * behind a 500.  doc: the write changed the document, which the row then
 * keeps anew (keep_doc()).  The commit's failure is the server's.
 */
static int
commit_reply(struct request *rq, struct response *rs, int status, int doc,
    const char *row_text, char *err, size_t errlen)
{
	json_t *o = schedule_out(row_text);
	int r;

	if (o == NULL) {
		db_rollback(rq->db);
		return -1;
	}
	if (doc && (r = keep_doc(rq, o, err, errlen)) != 0) {
		json_decref(o);
		db_rollback(rq->db);
		return r;
	}
	if (db_commit(rq->db, err, errlen) == -1) {
		json_decref(o);
		return db_failed(rq);
	}
	return api_json(rs, status, o);
}

/*
 * The next run of a schedule being resumed (row: the columns of load()),
 * as text parameters run and slot: a pending retry runs now; a slot comes
 * from now as for a new schedule, except that a once schedule whose
 * instant passed gets it as a missed slot, for its catch_up policy to
 * decide.  With runs in flight, run is "" (NULL): the end of the last of
 * them releases the slot (finish.c), so that nothing overlaps them.
 * Returns 0, or 1 after answering.
 */
static int
resume_slot(const struct db_rows *rows, char *run, char *slot, size_t len,
    struct response *rs)
{
	json_t *row =
	    json_loads(db_rows_value(rows, 0, API_SCHEDULE_COL_JSON), 0, NULL);
	const char *next_slot =
	    db_rows_value(rows, 0, API_SCHEDULE_COL_NEXT_SLOT);
	struct schedule_doc d;
	struct schedule_error e;
	int64_t now = now_s();
	struct slot s;
	int r = 0;

	if (strcmp(db_rows_value(rows, 0, API_SCHEDULE_COL_RETRY), "t") == 0 &&
	    next_slot) {
		snprintf(run, len, "%lld", (long long)now);
		snprintf(slot, len, "%s", next_slot);
		json_decref(row);
		return 0;
	}
	if (row == NULL || schedule_from_row(row, &d, &e) == -1) {
		json_decref(row);
		api_error(rs, 500, "internal", NULL,
		    "the stored schedule is not a valid document");
		return 1;
	}
	json_decref(row);
	if (schedule_first_slot(&d, now, &s) == 1) {
		slot_param(&d, s.at, run, len);
		slot_param(&d, s.at, slot, len);
	} else if (d.kind == SCHED_KIND_ONCE) {
		snprintf(run, len, "%lld", (long long)now);
		slot_param(&d, civil_fdiv(d.at, 1000), slot, len);
	} else {
		api_error(rs, 400, "invalid_field", NULL,
		    "the schedule has no slot before the year 10000");
		r = 1;
	}
	if (strcmp(db_rows_value(rows, 0, API_SCHEDULE_COL_RUNNING), "0") != 0)
		run[0] = '\0';
	schedule_clear(&d);
	return r;
}

/*
 * Pauses (resume 0) or resumes schedule id inside the caller's
 * transaction; rows is its row as load() read it, locked (a resume takes
 * its next slot from the document there).  Returns the new row (to free),
 * or NULL with *answered 1 after a 400 in rs, 0 for a database failure.
 */
static struct db_rows *
switch_status(struct request *rq, struct response *rs, const char *id,
    const struct db_rows *rows, int resume, int *answered, char *err,
    size_t errlen)
{
	char run[24] = "", slot[24] = "";
	const char *p[3] = {id, NULL, NULL};

	*answered = resume && resume_slot(rows, run, slot, sizeof(run), rs);
	if (*answered)
		return NULL;
	p[1] = resume && run[0] ? run : NULL;
	p[2] = resume ? slot : NULL;
	return db_query(rq->db,
	    resume ? SQL_api_schedule_resume : SQL_api_schedule_pause,
	    resume ? 3 : 1, p, err, errlen);
}

/*
 * Seed 004's enabled (enable: 1 true, -1 false) applied to schedule id,
 * whose status is status, after a write in the caller's transaction:
 * false pauses an active schedule, true resumes a paused one from its new
 * document; any other status stays.  *out, the row to answer with, is
 * replaced when the status changes.  Returns 0, 1 after answering 400, or
 * API_DB_FAILED (the caller rolls back).
 */
static int
apply_enable(struct request *rq, struct response *rs, const char *id,
    int enable, const char *status, struct db_rows **out, char *err,
    size_t errlen)
{
	struct db_rows *rows, *next;
	int found, answered;

	if (!(enable == -1 && strcmp(status, "active") == 0) &&
	    !(enable == 1 && strcmp(status, "paused") == 0))
		return 0;
	if ((rows = load(rq, id, 1, &found, err, errlen)) == NULL)
		return API_DB_FAILED;
	next = switch_status(
	    rq, rs, id, rows, enable == 1, &answered, err, errlen);
	db_rows_free(rows);
	if (next == NULL)
		return answered ? 1 : API_DB_FAILED;
	db_rows_free(*out);
	*out = next;
	return 0;
}

/*
 * A schedule created with enabled: false, its row in *rows (the insert's):
 * paused before the commit, *rows its paused row.  Returns 0, or
 * API_DB_FAILED after rolling back.
 */
static int
created_paused(struct request *rq, struct response *rs, struct db_rows **rows,
    char *err, size_t errlen)
{
	json_t *row = json_loads(db_rows_value(*rows, 0, 0), 0, NULL);
	const char *s = json_string_value(json_object_get(row, "id"));
	char id[API_ID_LEN + 1];

	snprintf(id, sizeof(id), "%s", s ? s : "");
	json_decref(row);
	if (apply_enable(rq, rs, id, -1, "active", rows, err, errlen) == 0)
		return 0;
	db_rows_free(*rows);
	return db_failed(rq);
}

/*
 * Gives the fields of d in mask (bits SCHEDULE_F_x) that have a configured
 * default (timeout_seconds, timezone) that default: a create gives those
 * it was not given or given as null, a PATCH those it set to null.
 * Returns 0, or -1 with *e set when out of memory.
 */
static int
configured_defaults(const struct request *rq, struct schedule_doc *d,
    uint32_t mask, struct schedule_error *e)
{
	char *tz;

	if (mask & (1u << SCHEDULE_F_TIMEOUT))
		d->timeout_seconds = rq->cf->default_timeout_seconds;
	if (!(mask & (1u << SCHEDULE_F_TIMEZONE)))
		return 0;
	if ((tz = strdup(rq->cf->default_timezone)) == NULL)
		return doc_fail(e, "internal", NULL, "out of memory");
	free(d->timezone);
	d->timezone = tz;
	return 0;
}

/* --- POST /schedules ---------------------------------------------------- */

/*
 * Writes document d: a new schedule of owner key (insert; with
 * rq->idem_key when there is one), again on the rare collision of the
 * id's first 8 digits, or over schedule key; run and slot are its
 * next_run_at and next_slot_at (api_schedule_insert and
 * api_schedule_update say how).  Returns the rows (none: the key's
 * schedule exists), or NULL with err.
 */
static struct db_rows *
write_doc(struct request *rq, int insert, const char *key, const char *run,
    const char *slot, const struct schedule_doc *d, char *err, size_t errlen)
{
	const char *p[5 + SCHEDULE_PARAMS] = {key, run, slot};
	struct schedule_params sp;
	struct db_rows *rows = NULL;
	const char *sql =
	    insert ? SQL_api_schedule_insert : SQL_api_schedule_update;
	int n = 3 + SCHEDULE_PARAMS;

	if (schedule_params(d, &sp) == -1) {
		log_errbuf(err, errlen, "out of memory");
		return NULL;
	}
	for (int i = 0; i < SCHEDULE_PARAMS; i++)
		p[3 + i] = sp.values[i];
	if (insert) {
		p[n++] = rq->idem_key;
		p[n++] = rq->idem_key ? rq->body : NULL;
	}
	/* Inside the caller's transaction: a collision undoes only itself. */
	for (int t = 0; t < (insert ? INSERT_TRIES : 1) && rows == NULL; t++) {
		if (insert &&
		    db_exec(rq->db, SQL_api_savepoint, 0, NULL, err, errlen) ==
		        -1)
			break;
		rows = db_query(rq->db, sql, n, p, err, errlen);
		if (rows == NULL && db_error(rq->db) != DB_ERR_UNIQUE)
			break;
		if (rows == NULL &&
		    db_exec(rq->db, SQL_api_savepoint_undo, 0, NULL, err,
		        errlen) == -1)
			break;
	}
	schedule_params_clear(&sp);
	return rows;
}

/*
 * A create with an Idempotency-Key whose schedule exists: answers with it
 * (201, as the first answer was) when this body is the first one and the
 * schedule is not deleted, else 422.  Returns 1 when *rs is filled, 0
 * when the owner has no schedule of the key, API_DB_FAILED.
 */
static int
idem_replay(struct request *rq, struct response *rs, const char *owner,
    char *err, size_t errlen)
{
	const char *p[3] = {owner, rq->idem_key, rq->body};
	struct db_rows *rows;
	int r = 1;

	if ((rows = db_query(
	         rq->db, SQL_api_schedule_by_key, 3, p, err, errlen)) == NULL)
		return API_DB_FAILED;
	if (db_rows_count(rows) == 0)
		r = 0;
	else if (strcmp(db_rows_value(rows, 0, 1), "t") != 0)
		api_error(rs, 422, "idempotency_conflict", "Idempotency-Key",
		    "this key was used for a request with another body");
	else if (strcmp(db_rows_value(rows, 0, 2), "t") == 0)
		api_error(rs, 422, "idempotency_conflict", "Idempotency-Key",
		    "the schedule created with this key has been deleted");
	else if (reply_schedule(rs, 201, db_rows_value(rows, 0, 0)) == -1)
		r = -1;
	db_rows_free(rows);
	return r;
}

/* The Idempotency-Key header is 1 to 255 printable ASCII characters. */
static int
bad_idem_key(const char *k, struct response *rs)
{
	size_t n = 0;

	if (k == NULL)
		return 0;
	for (; k[n] != '\0'; n++)
		if (k[n] < 0x20 || k[n] > 0x7e)
			break;
	if (n > 0 && n <= IDEM_KEY_MAX && k[n] == '\0')
		return 0;
	api_error(rs, 400, "invalid_header", "Idempotency-Key",
	    "an idempotency key is 1 to 255 printable ASCII characters");
	return 1;
}

/*
 * The owner of a new schedule: the caller's, or an admin's ?owner=.  NULL
 * after answering 400 or 403.
 */
static const char *
new_owner(struct request *rq, struct response *rs, char *buf, size_t len)
{
	static const char *const allowed[] = {"owner", NULL};
	int r;

	if (query_check(rq->query, allowed, rs) == -1)
		return NULL;
	if ((r = query_get(rq->query, "owner", buf, len)) == 0)
		return rq->who.owner;
	if (r == -1 || buf[0] == '\0' || strlen(buf) > API_OWNER_MAX * 4) {
		api_error(rs, 400, "invalid_query", "owner",
		    "an owner is 1 to 200 characters");
		return NULL;
	}
	if (rq->who.role != ROLE_ADMIN && strcmp(buf, rq->who.owner) != 0) {
		api_error(rs, 403, "forbidden", "owner",
		    "only an admin may create schedules for another owner");
		return NULL;
	}
	return buf;
}

/*
 * Whether owner has owner_max_schedules schedules already (deleted ones
 * do not count): 1 after answering 429, 0 if there is room,
 * API_DB_FAILED.  It counts no further than the limit.
 */
static int
owner_full(struct request *rq, struct response *rs, const char *owner,
    char *err, size_t errlen)
{
	char max[24];
	const char *p[2] = {owner, max};
	struct db_rows *rows;
	int full;

	if (rq->cf->owner_max_schedules == 0)
		return 0;
	snprintf(
	    max, sizeof(max), "%lld", (long long)rq->cf->owner_max_schedules);
	if ((rows = db_query(rq->db, SQL_api_owner_full, 2, p, err, errlen)) ==
	    NULL)
		return API_DB_FAILED;
	full = strcmp(db_rows_value(rows, 0, 0), "t") == 0;
	db_rows_free(rows);
	if (full &&
	    api_error(rs, 429, "too_many_schedules", NULL,
	        "this owner has %lld schedules, its limit "
	        "(owner_max_schedules)",
	        (long long)rq->cf->owner_max_schedules) == -1)
		return -1;
	return full;
}

/*
 * A target sent back as a viewer saw it: each value of target.headers and
 * target.env that is SECRET_MASK keeps the value the stored target old
 * has under that name, so that a GET then PATCH of the whole target does
 * not overwrite secrets with the mask.  Returns 0, or -1 with *e (400)
 * when old has no such value to keep.
 */
static int
keep_secrets(struct schedule_doc *d, const struct schedule_doc *old,
    struct schedule_error *e)
{
	static const char *const maps[] = {"headers", "env"};
	json_t *m, *om, *v, *ov;
	const char *k;

	if (!(d->present & (1u << SCHEDULE_F_TARGET)))
		return 0;
	for (size_t i = 0; i < sizeof(maps) / sizeof(*maps); i++) {
		m = json_object_get(d->target, maps[i]);
		om = json_object_get(old->target, maps[i]);
		json_object_foreach(m, k, v)
		{
			if (strcmp(json_string_value(v), SECRET_MASK) != 0)
				continue;
			if (!json_is_string(ov = json_object_get(om, k))) {
				snprintf(
				    e->code, sizeof(e->code), "invalid_field");
				snprintf(e->field, sizeof(e->field),
				    "target.%s.%s", maps[i], k);
				snprintf(e->message, sizeof(e->message),
				    "\"%s\" keeps a stored value, and there "
				    "is none of that name",
				    SECRET_MASK);
				return -1;
			}
			json_object_set(m, k, ov);
		}
	}
	return 0;
}

/*
 * POST /schedules: a new schedule from the document in the body.  With an
 * Idempotency-Key, a request the owner has sent before (its reply lost,
 * or a 503 while the commit's outcome was unknown) gets the schedule the
 * first one created, before anything else is checked: the document was
 * valid then, and a once schedule's instant may have passed since.
 */
int
schedules_create(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	char obuf[API_OWNER_MAX * 4 + 1], run[24], slot[24];
	const char *owner;
	struct schedule_doc d;
	struct schedule_error e;
	struct db_rows *rows;
	int enable, r = 0; /* a check below that answered returns 0 */

	if ((owner = new_owner(rq, rs, obuf, sizeof(obuf))) == NULL ||
	    api_no_body(rq, rs) || bad_idem_key(rq->idem_key, rs))
		return 0;
	/* A body that is not UTF-8 cannot be hashed as text: 400 below. */
	if (rq->idem_key && utf8_valid(rq->body, rq->body_len) &&
	    (r = idem_replay(rq, rs, owner, err, errlen)) != 0)
		return r == 1 ? 0 : r;
	if (schedule_parse(rq->body, rq->body_len, &d, &e) == -1)
		return api_doc_error(rs, &e);
	/* A new schedule has no stored secret for the mask to keep. */
	if (keep_secrets(&d, &(struct schedule_doc){0}, &e) == -1) {
		schedule_clear(&d);
		return api_doc_error(rs, &e);
	}
	if (configured_defaults(rq, &d, ~d.present | d.nulled, &e) == -1) {
		schedule_clear(&d);
		return api_doc_error(rs, &e);
	}
	if (forbidden_fields(rq, &d, d.present, rs) ||
	    no_run_user(rq, &d, owner, rs) || no_receiver(rq, &d, rs) ||
	    denied_url(rq, &d, rs) ||
	    first_slot(&d, run, slot, sizeof(run), rs) ||
	    (r = owner_full(rq, rs, owner, err, errlen)) != 0) {
		respell(rs, &d);
		schedule_clear(&d);
		return r == 1 ? 0 : r;
	}
	if (db_begin(rq->db, err, errlen) == -1) {
		schedule_clear(&d);
		return API_DB_FAILED;
	}
	/* In the transaction: the agent stays locked until the schedule is
	 * in, so that it is not deleted under it (agents_lock). */
	if ((r = agent_refused(rq, &d, owner, rs, err, errlen)) != 0 ||
	    ((d.target_type == SCHEDULE_TARGET_AGENT ||
	         d.target_type == SCHEDULE_TARGET_PIPELINE) &&
	        (r = datasources_refused(
	             rq, rs, d.target, owner, err, errlen)) != 0)) {
		db_rollback(rq->db);
		respell(rs, &d);
		schedule_clear(&d);
		return r == 1 ? 0 : r;
	}
	rows = write_doc(rq, 1, owner, run, slot, &d, err, errlen);
	enable = d.enable;
	schedule_clear(&d);
	if (rows == NULL)
		return db_failed(rq);
	if (db_rows_count(rows) == 0) {
		/* A request of the same key committed first. */
		db_rows_free(rows);
		db_rollback(rq->db);
		if ((r = idem_replay(rq, rs, owner, err, errlen)) == 0)
			api_error(rs, 503, "unavailable", NULL,
			    "a request with this Idempotency-Key was being "
			    "written; send it again");
		return r == 1 || r == 0 ? 0 : r;
	}
	/* seed 004's enabled: false: created paused, in the same transaction */
	if (enable == -1 &&
	    (r = created_paused(rq, rs, &rows, err, errlen)) != 0)
		return r;
	r = commit_reply(
	    rq, rs, 201, 1, db_rows_value(rows, 0, 0), err, errlen);
	db_rows_free(rows);
	return r;
}

/* --- GET /schedules/{id} ------------------------------------------------ */

/*
 * The next n fire times of a schedule from now: an active one from the
 * slot it waits for (next_slot_at, epoch text or NULL), anything else from
 * where resume would start it.  done and dead schedules have none.
 */
static json_t *
preview(
    const char *row_text, const char *status, const char *next_slot, int64_t n)
{
	json_t *row = json_loads(row_text, 0, NULL), *list;
	struct schedule_doc d;
	struct schedule_error e;
	int64_t pending;

	memset(&d, 0, sizeof(d));
	if (row == NULL || n == 0 || strcmp(status, "done") == 0 ||
	    strcmp(status, "dead") == 0 || schedule_from_row(row, &d, &e) == -1)
		list = json_array();
	else if (strcmp(status, "active") == 0 && next_slot) {
		pending = strtoll(next_slot, NULL, 10);
		list = schedule_fire_times(&d, now_s(), &pending, n);
	} else
		list = schedule_fire_times(&d, now_s(), NULL, n);
	schedule_clear(&d);
	json_decref(row);
	return list;
}

/* GET /schedules/{id}: the schedule and its next fire times. */
int
schedules_get(struct request *rq, struct response *rs, char *err, size_t errlen)
{
	static const char *const allowed[] = {"preview", NULL};
	char idbuf[API_ID_LEN + 1], buf[16], *end;
	const char *id;
	struct db_rows *rows;
	int64_t n = 5;
	json_t *o, *fires;
	int found, r;

	if (query_check(rq->query, allowed, rs) == -1)
		return 0;
	if ((r = query_get(rq->query, "preview", buf, sizeof(buf))) != 0) {
		n = r == 1 ? strtoll(buf, &end, 10) : -1;
		if (r == -1 || end == buf || *end || n < 0 ||
		    n > API_PREVIEW_MAX)
			return api_error(rs, 400, "invalid_query", "preview",
			    "must be a number from 0 to %d", API_PREVIEW_MAX);
	}
	if ((id = path_id(rq, rs, idbuf)) == NULL)
		return 0;
	if ((rows = load(rq, id, 0, &found, err, errlen)) == NULL)
		return found == 0 ? not_found(rs) : API_DB_FAILED;
	o = schedule_out_as(db_rows_value(rows, 0, API_SCHEDULE_COL_JSON),
	    rq->who.role < ROLE_EDITOR);
	fires = preview(db_rows_value(rows, 0, API_SCHEDULE_COL_JSON),
	    db_rows_value(rows, 0, API_SCHEDULE_COL_STATUS),
	    db_rows_value(rows, 0, API_SCHEDULE_COL_NEXT_SLOT), n);
	db_rows_free(rows);
	if (o == NULL || fires == NULL) {
		json_decref(o);
		json_decref(fires);
		return -1;
	}
	if (json_object_set_new(o, "next_fire_times", fires) == -1) {
		json_decref(o); /* fires went with the failed call */
		return -1;
	}
	return api_json(rs, 200, o);
}

/* --- PATCH /schedules/{id} ---------------------------------------------- */

/*
 * The first of keys (NULL-terminated) whose value differs between a and b,
 * or NULL when none does; keys[0] when a document cannot be built.
 */
static const char *
field_changed(const struct schedule_doc *a, const struct schedule_doc *b,
    const char *const *keys)
{
	json_t *ja = schedule_to_json(a), *jb = schedule_to_json(b);
	const char *changed = ja == NULL || jb == NULL ? keys[0] : NULL;

	for (int i = 0; !changed && keys[i]; i++)
		if (!json_equal(json_object_get(ja, keys[i]),
		        json_object_get(jb, keys[i])))
			changed = keys[i];
	json_decref(ja);
	json_decref(jb);
	return changed;
}

/* The fields that place the slots. */
static const char *const timing_keys[] = {"kind", "interval_seconds", "anchor",
    "cron", "timezone", "at", "start_at", "dst_gap", "dst_fold",
    "jitter_seconds", NULL};

/* The fields that only decide what the slots do: timing and policies. */
static const char *const slot_keys[] = {"kind", "interval_seconds", "anchor",
    "cron", "timezone", "at", "start_at", "dst_gap", "dst_fold",
    "jitter_seconds", "total_repeats", "max_retries", "backoff",
    "retry_delay_seconds", "overlap", "catch_up", "max_catch_up_runs",
    "starting_deadline_seconds", NULL};

/*
 * What a PATCH from old to d may do to a schedule of status `status`.  A
 * done or dead schedule has no slot left, so a change to a field that
 * only matters to slots would be accepted and ignored: it is refused
 * (400 invalid_state naming the field), except that a new `at` makes a
 * done schedule that is (or becomes) a once schedule active again.
 * Returns 1 for that revival, 0 to go on, -1 when *rs holds the 400.
 */
static int
terminal_patch(const struct schedule_doc *old, const struct schedule_doc *d,
    const char *status, struct response *rs)
{
	int done = strcmp(status, "done") == 0;
	const char *k;

	if (!done && strcmp(status, "dead") != 0)
		return 0;
	if (done && d->kind == SCHED_KIND_ONCE &&
	    (d->present & (1u << SCHEDULE_F_AT)) &&
	    field_changed(old, d, (const char *const[]){"at", NULL}))
		return 1;
	if ((k = field_changed(old, d, slot_keys)) == NULL)
		return 0;
	api_error(rs, 400, "invalid_state", k,
	    "the schedule is %s and has no slot left to change%s", status,
	    done ? "; only a new future at on a once schedule makes it active "
	           "again"
	         : "; create a new schedule");
	return -1;
}

/*
 * An apply's update: *d becomes the document json as a whole, parsed as a
 * create's body; every field counts as restated, those it leaves out as
 * set to null (their defaults, the configured ones included).  0, or -1
 * with *e.
 */
static int
replace_doc(struct schedule_doc *d, const char *json, size_t len,
    struct schedule_error *e)
{
	const uint32_t all = (1u << SCHEDULE_F_COUNT) - 1;
	struct schedule_doc nd;

	if (schedule_parse(json, len, &nd, e) == -1)
		return -1;
	nd.nulled = all & ~nd.present;
	nd.present = all;
	schedule_clear(d);
	*d = nd;
	return 0;
}

/* Makes a done schedule active again, at repeat and counters unchanged. */
static int
revive(struct request *rq, const char *id, char *err, size_t errlen)
{
	const char *p[1] = {id};

	return db_exec(rq->db, SQL_api_schedule_revive, 1, p, err, errlen);
}

/*
 * PATCH /schedules/{id}: the fields the body names change; a new timing
 * moves an active schedule's next slot (a pending retry keeps its time);
 * a new `at` revives a done once schedule (terminal_patch()); seed 004's
 * enabled pauses or resumes it (apply_enable()).
 */
int
schedules_update(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	char idbuf[API_ID_LEN + 1], run[24], slot[24];
	const char *id, *rp = NULL, *sp = NULL;
	struct db_rows *rows = NULL, *out;
	struct schedule_doc old, d;
	struct schedule_error e;
	json_t *row;
	int found, revived = 0, r = 0;

	memset(&old, 0, sizeof(old));
	memset(&d, 0, sizeof(d));
	if (query_check(rq->query, (const char *const[]){NULL}, rs) == -1 ||
	    (id = path_id(rq, rs, idbuf)) == NULL || api_no_body(rq, rs))
		goto out;
	if (db_begin(rq->db, err, errlen) == -1)
		return API_DB_FAILED;
	if ((rows = load(rq, id, 1, &found, err, errlen)) == NULL) {
		db_rollback(rq->db);
		r = found == 0 ? not_found(rs) : API_DB_FAILED;
		goto out;
	}
	if (read_only(rq, rs)) {
		db_rollback(rq->db);
		goto out;
	}
	row =
	    json_loads(db_rows_value(rows, 0, API_SCHEDULE_COL_JSON), 0, NULL);
	if (row == NULL || schedule_from_row(row, &old, &e) == -1 ||
	    schedule_from_row(row, &d, &e) == -1) {
		json_decref(row);
		db_rollback(rq->db);
		r = api_error(rs, 409, "unreadable", NULL,
		    "schedule %s: its stored row is not a valid document; "
		    "delete it and create it again",
		    id);
		goto out;
	}
	if ((rq->replace
	            ? replace_doc(&d, rq->body, rq->body_len, &e)
	            : schedule_patch(&d, rq->body, rq->body_len, &e)) == -1 ||
	    keep_secrets(&d, &old, &e) == -1) {
		json_decref(row);
		db_rollback(rq->db);
		r = api_doc_error(rs, &e);
		goto out;
	}
	/* Back to the default, as a create without it: the configured one. */
	if (configured_defaults(rq, &d, d.nulled, &e) == -1) {
		json_decref(row);
		db_rollback(rq->db);
		r = api_doc_error(rs, &e);
		goto out;
	}
	if (forbidden_fields(rq, &d, d.present, rs) ||
	    ((d.present & (1u << SCHEDULE_F_TARGET)) &&
	        (no_run_user(rq, &d,
	             json_string_value(json_object_get(row, "owner")), rs) ||
	            no_receiver(rq, &d, rs) || denied_url(rq, &d, rs))) ||
	    ((d.present & (1u << SCHEDULE_F_TARGET)) &&
	        (r = agent_refused(rq, &d,
	             json_string_value(json_object_get(row, "owner")), rs, err,
	             errlen)) != 0) ||
	    ((d.present & (1u << SCHEDULE_F_TARGET)) &&
	        (d.target_type == SCHEDULE_TARGET_AGENT ||
	            d.target_type == SCHEDULE_TARGET_PIPELINE) &&
	        (r = datasources_refused(rq, rs, d.target,
	             json_string_value(json_object_get(row, "owner")), err,
	             errlen)) != 0) ||
	    (revived = terminal_patch(&old, &d,
	         db_rows_value(rows, 0, API_SCHEDULE_COL_STATUS), rs)) == -1) {
		respell(rs, &d);
		json_decref(row);
		db_rollback(rq->db);
		r = r == 1 ? 0 : r; /* 1: answered; API_DB_FAILED stays */
		goto out;
	}
	json_decref(row);
	/*
	 * A new timing moves the slot an active schedule waits for.  A
	 * pending retry keeps its time, and while next_run_at is NULL with
	 * runs in flight (a retry, an `anchor: completion` run, a slot held
	 * back behind a run) the end of that run decides what comes next:
	 * only the slot moves, for it to find.
	 */
	if (revived ||
	    (field_changed(&old, &d, timing_keys) &&
	        strcmp(db_rows_value(rows, 0, API_SCHEDULE_COL_STATUS),
	            "active") == 0 &&
	        strcmp(db_rows_value(rows, 0, API_SCHEDULE_COL_RETRY), "t") !=
	            0)) {
		if (first_slot(&d, run, slot, sizeof(run), rs)) {
			respell(rs, &d);
			db_rollback(rq->db);
			goto out;
		}
		sp = slot;
		if (revived ||
		    strcmp(db_rows_value(rows, 0, API_SCHEDULE_COL_NO_NEXT_RUN),
		        "t") != 0 ||
		    strcmp(db_rows_value(rows, 0, API_SCHEDULE_COL_RUNNING),
		        "0") == 0)
			rp = run;
	}
	if ((revived && revive(rq, id, err, errlen) == -1) ||
	    (out = write_doc(rq, 0, id, rp, sp, &d, err, errlen)) == NULL) {
		r = db_failed(rq);
		goto out;
	}
	if ((r = apply_enable(rq, rs, id, d.enable,
	         revived ? "active"
	                 : db_rows_value(rows, 0, API_SCHEDULE_COL_STATUS),
	         &out, err, errlen)) != 0) {
		db_rows_free(out);
		db_rollback(rq->db);
		r = r == 1 ? 0 : r;
		goto out;
	}
	r = commit_reply(rq, rs, 200, 1, db_rows_value(out, 0, 0), err, errlen);
	db_rows_free(out);
out:
	db_rows_free(rows);
	schedule_clear(&old);
	schedule_clear(&d);
	return r;
}

/* --- DELETE, pause, resume ---------------------------------------------- */

/*
 * Deletes the schedules ids (a PostgreSQL array literal) that the caller
 * locked: at once when nothing of theirs runs, else hidden and paused
 * until the supervisor records the last run in flight and deletes them.
 */
static int
remove_locked(struct request *rq, const char *ids, char *err, size_t errlen)
{
	const char *p[1] = {ids};

	/* Their trigger keys go at once, the rows maybe later (below). */
	if (db_exec(rq->db, SQL_api_delete_keys, 1, p, err, errlen) == -1 ||
	    db_exec(rq->db, SQL_api_delete_idle, 1, p, err, errlen) == -1 ||
	    db_exec(rq->db, SQL_api_delete_busy, 1, p, err, errlen) == -1)
		return -1;
	return 0;
}

/* DELETE /schedules/{id}: 204; a run in flight finishes and is recorded. */
int
schedules_delete(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	char idbuf[API_ID_LEN + 1], arr[API_ID_LEN + 3];
	const char *id;
	struct db_rows *rows;
	int found;

	if (query_check(rq->query, (const char *const[]){NULL}, rs) == -1 ||
	    (id = path_id(rq, rs, idbuf)) == NULL)
		return 0;
	if (db_begin(rq->db, err, errlen) == -1)
		return API_DB_FAILED;
	if ((rows = load(rq, id, 1, &found, err, errlen)) == NULL) {
		db_rollback(rq->db);
		return found == 0 ? not_found(rs) : API_DB_FAILED;
	}
	db_rows_free(rows);
	if (read_only(rq, rs)) {
		db_rollback(rq->db);
		return 0;
	}
	snprintf(arr, sizeof(arr), "{%s}", id);
	if (remove_locked(rq, arr, err, errlen) == -1 ||
	    db_commit(rq->db, err, errlen) == -1)
		return db_failed(rq);
	rs->status = 204;
	return 0;
}

/* pause and resume: one status to another, or 400 invalid_state. */
static int
transition(struct request *rq, struct response *rs, int resume, char *err,
    size_t errlen)
{
	char idbuf[API_ID_LEN + 1];
	const char *id, *status;
	struct db_rows *rows, *out;
	int found, r;

	if (query_check(rq->query, (const char *const[]){NULL}, rs) == -1 ||
	    (id = path_id(rq, rs, idbuf)) == NULL)
		return 0;
	if (db_begin(rq->db, err, errlen) == -1)
		return API_DB_FAILED;
	if ((rows = load(rq, id, 1, &found, err, errlen)) == NULL) {
		db_rollback(rq->db);
		return found == 0 ? not_found(rs) : API_DB_FAILED;
	}
	r = 0;
	if (read_only(rq, rs))
		goto rollback;
	status = db_rows_value(rows, 0, API_SCHEDULE_COL_STATUS);
	if (strcmp(status, resume ? "paused" : "active") != 0) {
		r = api_error(rs, 400, "invalid_state", "status",
		    "only %s schedules can be %s; this one is %s",
		    resume ? "paused" : "active", resume ? "resumed" : "paused",
		    status);
		goto rollback;
	}
	out = switch_status(rq, rs, id, rows, resume, &r, err, errlen);
	if (out == NULL && r == 1) {
		r = 0;
		goto rollback;
	}
	db_rows_free(rows);
	if (out == NULL)
		return db_failed(rq);
	/* a pause or resume: state, not the document */
	r = commit_reply(rq, rs, 200, 0, db_rows_value(out, 0, 0), err, errlen);
	db_rows_free(out);
	return r;
rollback:
	db_rows_free(rows);
	db_rollback(rq->db);
	return r;
}

/* POST /schedules/{id}/pause: only an active schedule. */
int
schedules_pause(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	return transition(rq, rs, 0, err, errlen);
}

/* POST /schedules/{id}/resume: only a paused schedule. */
int
schedules_resume(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	return transition(rq, rs, 1, err, errlen);
}

/* --- trigger, batch delete ---------------------------------------------- */

/*
 * Loads an optional request body that must be an object with only the
 * members of `allowed` (strictly: duplicates, garbage, bad UTF-8 are
 * errors).  *out is NULL for an empty body.  1 after answering 400.
 */
static int
small_body(const struct request *rq, const char *const *allowed, json_t **out,
    struct response *rs)
{
	json_error_t jerr;
	const char *k;
	json_t *v;
	int i;

	*out = NULL;
	if (rq->body_len == 0)
		return 0;
	if ((*out = json_loadb(rq->body, rq->body_len, JSON_REJECT_DUPLICATES,
	         &jerr)) == NULL) {
		api_error(rs, 400, "invalid_json", NULL,
		    "line %d column %d: %s", jerr.line, jerr.column, jerr.text);
		return 1;
	}
	if (!json_is_object(*out)) {
		api_error(
		    rs, 400, "invalid_json", NULL, "expected a JSON object");
		goto bad;
	}
	json_object_foreach(*out, k, v)
	{
		for (i = 0; allowed[i] && strcmp(allowed[i], k) != 0; i++)
			;
		if (allowed[i] == NULL) {
			api_error(rs, 400, "unknown_field", k, "unknown field");
			goto bad;
		}
	}
	return 0;
bad:
	json_decref(*out);
	*out = NULL;
	return 1;
}

/* The answer to a trigger, from rows (trigger id, requested_at, id8). */
static int
trigger_reply(struct response *rs, const char *id, struct db_rows *rows)
{
	char run_id[RUN_ID_MAX];
	json_t *o;

	snprintf(run_id, sizeof(run_id), "sched-%s-t%s",
	    db_rows_value(rows, 0, 2), db_rows_value(rows, 0, 0));
	o = json_pack("{s:s, s:s, s:I, s:s}", "run_id", run_id, "schedule_id",
	    id, "trigger_id",
	    (json_int_t)strtoll(db_rows_value(rows, 0, 0), NULL, 10),
	    "requested_at", db_rows_value(rows, 0, 1));
	db_rows_free(rows);
	return o ? api_json(rs, 202, o) : -1;
}

/*
 * A trigger with an Idempotency-Key its requester used within the last
 * day (at any time if any_age: the key's row is known to be in force):
 * the first request's answer (202, as it was) when this one is the same
 * (schedule and body), 422 when not, 404 when that schedule has been
 * deleted since.  Returns 1 when *rs is filled, 0 when the key is new,
 * API_DB_FAILED.
 */
static int
trigger_replay(struct request *rq, struct response *rs, const char *id,
    const char *body, int any_age, char *err, size_t errlen)
{
	const char *p[5] = {
	    rq->who.owner, rq->idem_key, id, body, any_age ? "t" : "f"};
	struct db_rows *rows;

	if ((rows = db_query(
	         rq->db, SQL_api_trigger_by_key, 5, p, err, errlen)) == NULL)
		return API_DB_FAILED;
	if (db_rows_count(rows) == 0) {
		db_rows_free(rows);
		return 0;
	}
	if (strcmp(db_rows_value(rows, 0, 3), "t") != 0) {
		db_rows_free(rows);
		return api_error(rs, 422, "idempotency_conflict",
		           "Idempotency-Key",
		           "this key was used for a trigger of another "
		           "schedule or with another body") == -1
		    ? -1
		    : 1;
	}
	if (strcmp(db_rows_value(rows, 0, 4), "t") == 0) {
		db_rows_free(rows);
		return not_found(rs) == -1 ? -1 : 1;
	}
	return trigger_reply(rs, id, rows) == -1 ? -1 : 1;
}

/*
 * The trigger of a request with an Idempotency-Key: one the requester
 * used within the last day gets the first answer again; a new one is
 * taken together with the trigger, in one statement, so that of two
 * requests sent at once only one triggers a run.  A key older than a day
 * counts as new: its row, if the supervisors' heartbeat has not removed
 * it yet (prune.c), is taken over by the same statement.
 */
static int
trigger_keyed(struct request *rq, struct response *rs, const char **p,
    char *err, size_t errlen)
{
	const char *body = rq->body_len > 0 ? rq->body : "";
	const char *q[6] = {p[0], p[1], p[2], p[3], rq->idem_key, body};
	struct db_rows *rows;
	int found, r;

	if ((r = trigger_replay(rq, rs, p[0], body, 0, err, errlen)) != 0)
		return r == 1 ? 0 : r;
	if ((rows = db_query(
	         rq->db, SQL_api_trigger_keyed, 6, q, err, errlen)) == NULL)
		return API_DB_FAILED;
	if (db_rows_value(rows, 0, 0) != NULL)
		return trigger_reply(rs, p[0], rows);
	/*
	 * Not taken: no such schedule, or a request of the same key committed
	 * first, whose row was in force when the insert met it (even should
	 * it expire by now).
	 */
	found = strcmp(db_rows_value(rows, 0, 3), "t") == 0;
	db_rows_free(rows);
	if ((r = trigger_replay(rq, rs, p[0], body, found, err, errlen)) != 0)
		return r == 1 ? 0 : r;
	return not_found(rs);
}

/*
 * Counts one trigger request of a non-admin caller's owner in this
 * minute's trigger_counts row (and drops the owner's rows of earlier
 * minutes).  Returns 0 while within owner_max_triggers_per_minute; 1
 * after answering 429 with Retry-After (the count is not moved);
 * API_DB_FAILED.
 */
static int
too_many_triggers(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	char max[24];
	const char *p[2] = {rq->who.owner, max};
	struct db_rows *rows;
	int n;

	if (rq->who.role == ROLE_ADMIN ||
	    rq->cf->owner_max_triggers_per_minute == 0)
		return 0;
	snprintf(max, sizeof(max), "%lld",
	    (long long)rq->cf->owner_max_triggers_per_minute);
	if ((rows = db_query(
	         rq->db, SQL_api_trigger_count, 2, p, err, errlen)) == NULL)
		return API_DB_FAILED;
	n = db_rows_count(rows);
	db_rows_free(rows);
	if (n > 0)
		return 0;
	if (api_error(rs, 429, "too_many_requests", NULL,
	        "this owner has sent %lld trigger requests this minute, its "
	        "limit (owner_max_triggers_per_minute)",
	        (long long)rq->cf->owner_max_triggers_per_minute) == -1)
		return -1;
	rs->retry_after = (int)(60 - now_s() % 60); /* api_error() clears it */
	return 1;
}

/*
 * POST /schedules/{id}/trigger: one run now; 202 with its run id.  With an
 * Idempotency-Key, a request sent again (its reply lost, or a 503) gets
 * the first one's answer instead of a second run.
 */
int
schedules_trigger(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	static const char *const allowed[] = {"payload", NULL};
	char idbuf[API_ID_LEN + 1], *payload = NULL;
	const char *id, *p[4];
	struct schedule_error e;
	struct db_rows *rows;
	json_t *body, *pl;
	int found, r;

	if (query_check(rq->query, (const char *const[]){NULL}, rs) == -1 ||
	    (id = path_id(rq, rs, idbuf)) == NULL ||
	    bad_idem_key(rq->idem_key, rs) ||
	    small_body(rq, allowed, &body, rs))
		return 0;
	if (!rq->may) {
		json_decref(body);
		if ((rows = load(rq, id, 0, &found, err, errlen)) == NULL)
			return found == 0 ? not_found(rs) : API_DB_FAILED;
		db_rows_free(rows);
		read_only(rq, rs);
		return 0;
	}
	pl = json_object_get(body, "payload");
	if (pl && !json_is_object(pl) && !json_is_null(pl)) {
		json_decref(body);
		return api_error(rs, 400, "invalid_field", "payload",
		    "expected an object (or null for the schedule's)");
	}
	if (pl && schedule_json_storable(pl, "payload", &e) == -1) {
		json_decref(body);
		return api_doc_error(rs, &e);
	}
	if ((r = too_many_triggers(rq, rs, err, errlen)) != 0) {
		json_decref(body);
		return r == 1 ? 0 : r;
	}
	if (pl && json_is_object(pl) &&
	    (payload = json_dumps(pl, JSON_COMPACT)) == NULL) {
		json_decref(body);
		return -1;
	}
	json_decref(body);
	p[0] = id;
	p[1] = payload;
	p[2] = rq->who.owner;
	p[3] = scope(rq);
	if (rq->idem_key != NULL) {
		r = trigger_keyed(rq, rs, p, err, errlen);
		free(payload);
		return r;
	}
	rows = db_query(rq->db, SQL_api_trigger, 4, p, err, errlen);
	free(payload);
	if (rows == NULL)
		return API_DB_FAILED;
	if (db_rows_count(rows) == 0) {
		db_rows_free(rows);
		return not_found(rs);
	}
	return trigger_reply(rs, id, rows);
}

/*
 * Reads {"ids": [...]} into a PostgreSQL array literal of distinct UUIDs
 * (*arr, malloc'd) and a JSON list of them; 1 after answering 400/404.
 */
static int
batch_ids(
    const struct request *rq, char **arr, json_t **list, struct response *rs)
{
	static const char *const allowed[] = {"ids", NULL};
	char id[API_ID_LEN + 1], field[32];
	json_t *body, *ids, *v;
	size_t i, n, len = 0;
	FILE *f;

	*arr = NULL;
	*list = NULL;
	if (api_no_body(rq, rs) || small_body(rq, allowed, &body, rs))
		return 1;
	ids = json_object_get(body, "ids");
	if (!json_is_array(ids) || json_array_size(ids) == 0 ||
	    json_array_size(ids) > BATCH_MAX) {
		json_decref(body);
		api_error(rs, 400, ids ? "invalid_field" : "missing_field",
		    "ids", "expected an array of 1 to %d schedule ids",
		    BATCH_MAX);
		return 1;
	}
	if ((*list = json_array()) == NULL ||
	    (f = open_memstream(arr, &len)) == NULL) {
		json_decref(body);
		json_decref(*list);
		*list = NULL;
		return -1;
	}
	fputc('{', f);
	json_array_foreach(ids, i, v)
	{
		snprintf(field, sizeof(field), "ids[%zu]", i);
		if (!json_is_string(v)) {
			api_error(rs, 400, "invalid_field", field,
			    "expected a schedule id (a string)");
			break;
		}
		if (api_parse_id(json_string_value(v), id) == -1) {
			api_error(rs, 404, "not_found", field,
			    "no such schedule: \"%.40s\"",
			    json_string_value(v));
			break;
		}
		fprintf(f, "%s%s", i ? "," : "", id);
		json_array_append_new(*list, json_string(id));
	}
	fputc('}', f);
	fclose(f);
	n = json_array_size(ids);
	json_decref(body);
	if (i < n) {
		free(*arr);
		json_decref(*list);
		*arr = NULL;
		*list = NULL;
		return 1;
	}
	return 0;
}

/*
 * POST /schedules/batch-delete: all of ids or none.  The first id that
 * names nothing the caller can see is the 404's field.
 */
int
schedules_batch_delete(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	char *arr, field[32];
	json_t *list, *v, *deleted, *o;
	struct db_rows *rows;
	const char *p[2];
	size_t i, j;
	int n, seen;

	if (query_check(rq->query, (const char *const[]){NULL}, rs) == -1 ||
	    batch_ids(rq, &arr, &list, rs))
		return 0;
	p[0] = arr;
	p[1] = scope(rq);
	if (db_begin(rq->db, err, errlen) == -1 ||
	    (rows = db_query(rq->db, SQL_api_batch_lock, 2, p, err, errlen)) ==
	        NULL) {
		free(arr);
		json_decref(list);
		return db_failed(rq);
	}
	n = db_rows_count(rows);
	if ((deleted = json_array()) == NULL) {
		db_rows_free(rows);
		db_rollback(rq->db);
		free(arr);
		json_decref(list);
		return -1;
	}
	json_array_foreach(list, i, v)
	{
		seen = 0;
		for (j = 0; j < (size_t)n && !seen; j++)
			seen = strcmp(db_rows_value(rows, (int)j, 0),
			           json_string_value(v)) == 0;
		if (!seen) {
			snprintf(field, sizeof(field), "ids[%zu]", i);
			api_error(rs, 404, "not_found", field,
			    "no such schedule: %s; nothing was deleted",
			    json_string_value(v));
			db_rows_free(rows);
			db_rollback(rq->db);
			free(arr);
			json_decref(list);
			json_decref(deleted);
			return 0;
		}
	}
	if (read_only(rq, rs)) {
		db_rows_free(rows);
		db_rollback(rq->db);
		free(arr);
		json_decref(list);
		json_decref(deleted);
		return 0;
	}
	for (j = 0; j < (size_t)n; j++)
		json_array_append_new(
		    deleted, json_string(db_rows_value(rows, (int)j, 0)));
	db_rows_free(rows);
	json_decref(list);
	if (remove_locked(rq, arr, err, errlen) == -1 ||
	    db_commit(rq->db, err, errlen) == -1) {
		free(arr);
		json_decref(deleted);
		return db_failed(rq);
	}
	free(arr);
	o = json_pack("{s:o, s:i}", "deleted", deleted, "count", n);
	return o ? api_json(rs, 200, o) : -1;
}
