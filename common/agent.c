/*
 * agent.c: the agent document of the API (docs/agents.md): parsed,
 * validated, patched, and written as the columns of an agents row, and
 * the version document.  Pure: no database; jansson for the JSON.  The
 * secret of the agent's auth is write-only: it is read from a body and
 * written to the row, and agent_to_json() never shows it.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisor.h"

static const char *const auth_names[] = {"none", "bearer", "basic", "hmac"};
/* The member of "auth" that holds the secret, per type. */
static const char *const secret_names[] = {NULL, "token", "password", "secret"};

static int
fail_oom(struct schedule_error *e, const char *field)
{
	return doc_fail(e, "internal", field, "out of memory");
}

void
agent_init(struct agent_doc *d)
{
	memset(d, 0, sizeof(*d));
	d->timeout_ms = AGENT_TIMEOUT_DEF;
	d->health_interval_seconds = AGENT_HEALTH_INTERVAL_DEF;
	d->heartbeat_seconds = SCHEDULE_UNSET;
	d->enabled = 1;
}

void
agent_clear(struct agent_doc *d)
{
	free(d->agent_id);
	free(d->name);
	free(d->description);
	free(d->endpoint);
	free(d->auth_username);
	free(d->auth_secret);
	free(d->health_url);
	json_decref(d->input_schema);
	agent_init(d);
}

/* 1 if s is a slug: 1-64 of [a-z0-9-], not starting or ending with '-'. */
int
agent_slug_ok(const char *s)
{
	size_t n = strlen(s);

	return n >= 1 && n <= 64 && s[0] != '-' && s[n - 1] != '-' &&
	    strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == n;
}

/* *out = a copy of string v of 1..max characters (min 0: may be ""). */
static int
text(json_t *v, const char *field, size_t min, size_t max, char **out,
    struct schedule_error *e)
{
	const char *s = json_string_value(v);
	size_t n;
	char *c;

	if (s == NULL)
		return doc_fail(e, "invalid_field", field, "expected a string");
	n = strlen(s);
	if (memchr(s, '\0', json_string_length(v)) != NULL)
		return doc_fail(
		    e, "invalid_field", field, "must not contain NUL");
	if (n < min || utf8_chars(s) > max)
		return min ? doc_fail(e, "invalid_field", field,
		                 "expected %zu to %zu characters", min, max)
		           : doc_fail(e, "invalid_field", field,
		                 "expected at most %zu characters", max);
	if ((c = strdup(s)) == NULL)
		return fail_oom(e, field);
	free(*out);
	*out = c;
	return 0;
}

static int
url(json_t *v, const char *field, char **out, struct schedule_error *e)
{
	if (doc_check_url(v, field, e) == -1)
		return -1;
	if (strlen(json_string_value(v)) > AGENT_URL_MAX)
		return doc_fail(e, "invalid_field", field,
		    "expected at most %d characters", AGENT_URL_MAX);
	return text(v, field, 1, AGENT_URL_MAX, out, e);
}

/*
 * The input schema: an object (or true/false) that jschema_check()
 * accepts, nested no deeper than it allows; NULL removes it.
 */
int
agent_schema(
    json_t *v, const char *field, json_t **out, struct schedule_error *e)
{
	struct jschema_error je;
	char path[sizeof(e->field) + sizeof(je.path) + 8];

	if (json_is_null(v)) {
		json_decref(*out);
		*out = NULL;
		return 0;
	}
	if (!json_is_object(v) && !json_is_boolean(v))
		return doc_fail(e, "invalid_field", field,
		    "expected a JSON Schema object or null");
	if (jschema_check(v, &je) == -1) {
		snprintf(path, sizeof(path), "%s%s%s", field,
		    je.path[0] && je.path[0] != '[' ? "." : "", je.path);
		return doc_fail(e, "invalid_field", path, "%s", je.message);
	}
	if (schedule_json_storable(v, field, e) == -1)
		return -1;
	json_decref(*out);
	*out = json_deep_copy(v);
	return *out ? 0 : fail_oom(e, field);
}

/* 1 if s has no control characters (it goes into a header). */
static int
printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

/*
 * "auth": {"type": …} and the members its type takes.  A patch (keep)
 * that names the type the agent already has and no secret keeps the
 * stored secret: secrets are never shown, so a client cannot send one
 * back.
 */
static int
decode_auth(json_t *v, struct agent_doc *d, int keep, struct schedule_error *e)
{
	const char *ty = json_string_value(json_object_get(v, "type")), *k;
	const char *sname;
	int t, had;
	json_t *x;
	char path[64];

	if (!json_is_object(v))
		return doc_fail(e, "invalid_field", "auth",
		    "expected an object such as {\"type\": \"bearer\", "
		    "\"token\": \"…\"}");
	if (json_object_get(v, "type") == NULL)
		return doc_fail(e, "missing_field", "auth.type", "required");
	for (t = 0; t < 4 && (ty == NULL || strcmp(ty, auth_names[t])); t++)
		;
	if (t == 4)
		return doc_fail(e, "invalid_field", "auth.type",
		    "expected \"none\", \"bearer\", \"basic\" or \"hmac\"");
	sname = secret_names[t];
	json_object_foreach(v, k, x)
	{
		snprintf(path, sizeof(path), "auth.%s", k);
		/* secret_set is what a GET shows: sent back, it says nothing.
		 */
		if (strcmp(k, "type") == 0 || strcmp(k, "secret_set") == 0 ||
		    (sname && strcmp(k, sname) == 0) ||
		    (t == AGENT_AUTH_BASIC && strcmp(k, "username") == 0))
			continue;
		return doc_fail(e, "unknown_field", path,
		    "not a member of %s auth", auth_names[t]);
	}
	had = keep && (int)d->auth_type == t && d->auth_secret != NULL;
	d->auth_type = (enum agent_auth)t;
	if (t == AGENT_AUTH_BASIC) {
		x = json_object_get(v, "username");
		if (x == NULL && !had)
			return doc_fail(
			    e, "missing_field", "auth.username", "required");
		if (x &&
		    (text(x, "auth.username", 1, 200, &d->auth_username, e) ==
		            -1 ||
		        strchr(d->auth_username, ':') ||
		        !printable(d->auth_username)))
			return doc_fail(e, "invalid_field", "auth.username",
			    "expected 1 to 200 characters without ':' or "
			    "control characters");
	} else {
		free(d->auth_username);
		d->auth_username = NULL;
	}
	if (sname == NULL) {
		free(d->auth_secret);
		d->auth_secret = NULL;
		return 0;
	}
	snprintf(path, sizeof(path), "auth.%s", sname);
	if ((x = json_object_get(v, sname)) == NULL)
		return had ? 0 : doc_fail(e, "missing_field", path, "required");
	if (json_is_string(x) && strcmp(json_string_value(x), "***") == 0)
		return had ? 0
		           : doc_fail(e, "invalid_field", path,
		                 "\"***\" stands for a stored secret; this "
		                 "agent has none of this type");
	if (text(x, path, 1, 4096, &d->auth_secret, e) == -1)
		return -1;
	return printable(d->auth_secret)
	    ? 0
	    : doc_fail(e, "invalid_field", path,
	          "control characters are not allowed");
}

/* "health": {"url", "interval_seconds", "when_unhealthy"} or null. */
static int
decode_health(json_t *v, struct agent_doc *d, struct schedule_error *e)
{
	const char *k, *w;
	json_t *x;
	char path[64];

	/* The object replaces the agent's health whole, as in a POST. */
	free(d->health_url);
	d->health_url = NULL;
	d->health_interval_seconds = AGENT_HEALTH_INTERVAL_DEF;
	d->when_unhealthy_go = 0;
	if (json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return doc_fail(e, "invalid_field", "health",
		    "expected an object with \"url\", or null");
	json_object_foreach(v, k, x)
	{
		snprintf(path, sizeof(path), "health.%s", k);
		if (strcmp(k, "url") == 0) {
			if (url(x, path, &d->health_url, e) == -1)
				return -1;
		} else if (strcmp(k, "interval_seconds") == 0) {
			if (doc_int(x, path, 5, 86400,
			        &d->health_interval_seconds, e) == -1)
				return -1;
		} else if (strcmp(k, "when_unhealthy") == 0) {
			w = json_string_value(x);
			if (w == NULL || (strcmp(w, "wait") && strcmp(w, "go")))
				return doc_fail(e, "invalid_field", path,
				    "expected \"wait\" or \"go\"");
			d->when_unhealthy_go = w[0] == 'g';
		} else
			return doc_fail(
			    e, "unknown_field", path, "not a member of health");
	}
	if (d->health_url == NULL)
		return doc_fail(e, "missing_field", "health.url", "required");
	return 0;
}

/* One member k of an agent body; keep as for decode_auth(). */
static int
decode_member(const char *k, json_t *v, struct agent_doc *d, int keep,
    struct schedule_error *e)
{
	if (strcmp(k, "agent_id") == 0) {
		if (text(v, k, 1, 64, &d->agent_id, e) == -1)
			return -1;
		return agent_slug_ok(d->agent_id)
		    ? 0
		    : doc_fail(e, "invalid_field", k,
		          "expected a slug: 1 to 64 of a-z, 0-9 and '-', "
		          "not starting or ending with '-'");
	}
	if (strcmp(k, "name") == 0)
		return text(v, k, 1, 200, &d->name, e);
	if (strcmp(k, "description") == 0)
		return text(v, k, 0, 10000, &d->description, e);
	if (strcmp(k, "endpoint") == 0)
		return url(v, k, &d->endpoint, e);
	if (strcmp(k, "auth") == 0)
		return decode_auth(v, d, keep, e);
	if (strcmp(k, "timeout_ms") == 0)
		return doc_int(v, k, 1, 31536000000LL, &d->timeout_ms, e);
	if (strcmp(k, "max_concurrent_requests") == 0)
		return doc_int(v, k, 0, 100000, &d->max_concurrent_requests, e);
	if (strcmp(k, "heartbeat_seconds") == 0) {
		if (json_is_null(v)) {
			d->heartbeat_seconds = SCHEDULE_UNSET;
			return 0;
		}
		return doc_int(v, k, 1, 86400, &d->heartbeat_seconds, e);
	}
	if (strcmp(k, "health") == 0)
		return decode_health(v, d, e);
	if (strcmp(k, "input_schema") == 0)
		return agent_schema(v, k, &d->input_schema, e);
	if (strcmp(k, "enabled") == 0) {
		if (!json_is_boolean(v))
			return doc_fail(
			    e, "invalid_field", k, "expected true or false");
		d->enabled = json_is_true(v);
		return 0;
	}
	return doc_fail(e, "unknown_field", k, "not a field of an agent");
}

static int
decode(json_t *root, struct agent_doc *d, int keep, struct schedule_error *e)
{
	const char *k;
	json_t *v;

	if (!json_is_object(root))
		return doc_fail(e, "invalid_json", NULL, "expected an object");
	json_object_foreach(root, k, v)
	{
		if (decode_member(k, v, d, keep, e) == -1)
			return -1;
	}
	return 0;
}

/* What every agent needs, whatever the body named. */
static int
complete(const struct agent_doc *d, struct schedule_error *e)
{
	if (d->agent_id == NULL)
		return doc_fail(e, "missing_field", "agent_id", "required");
	if (d->name == NULL)
		return doc_fail(e, "missing_field", "name", "required");
	if (d->endpoint == NULL)
		return doc_fail(e, "missing_field", "endpoint", "required");
	return 0;
}

/*
 * Parses and validates an agent document (a POST body) into *out, which
 * the caller need not initialise.  0 with *out owned by the caller
 * (agent_clear()), or -1 with *e saying what and where, *out cleared.
 */
int
agent_parse(const char *json, size_t len, struct agent_doc *out,
    struct schedule_error *e)
{
	json_t *root;
	int r;

	agent_init(out);
	if ((root = doc_load(json, len, e)) == NULL)
		return -1;
	r = decode(root, out, 0, e);
	json_decref(root);
	if (r == 0)
		r = complete(out, e);
	if (r == -1)
		agent_clear(out);
	return r;
}

/* The member of "auth" that holds the secret of auth type type ("token"
 * for "bearer"); NULL for "none" or a type that is none of them. */
const char *
agent_secret_name(const char *type)
{
	for (int t = 0; type && t < 4; t++)
		if (strcmp(type, auth_names[t]) == 0)
			return secret_names[t];
	return NULL;
}

/*
 * The body json of a change to agent d (read from its row), loaded; NULL
 * with *e when it is no JSON or names another agent_id.
 */
static json_t *
change_load(const struct agent_doc *d, const char *json, size_t len,
    struct schedule_error *e)
{
	json_t *root, *id;

	if ((root = doc_load(json, len, e)) == NULL)
		return NULL;
	id = json_object_get(root, "agent_id");
	if (id &&
	    !(json_is_string(id) && d->agent_id &&
	        strcmp(json_string_value(id), d->agent_id) == 0)) {
		json_decref(root);
		doc_fail(e, "invalid_field", "agent_id",
		    "an agent's id cannot change");
		return NULL;
	}
	return root;
}

/*
 * Applies a PATCH body to d (read from its row): the members it names
 * replace d's; agent_id may not change.  0, or -1 with *e (d then holds
 * some of the changes: the caller drops it).
 */
int
agent_patch(
    struct agent_doc *d, const char *json, size_t len, struct schedule_error *e)
{
	json_t *root;
	int r;

	if ((root = change_load(d, json, len, e)) == NULL)
		return -1;
	r = decode(root, d, 1, e);
	json_decref(root);
	return r == 0 ? complete(d, e) : -1;
}

/*
 * Replaces d (read from its row) with the document json as a whole, as an
 * apply does: the members it leaves out take their defaults, but an auth
 * of the stored type that gives no secret (or "***") keeps the stored one,
 * as a patch does.  agent_id may not change.  0, or -1 with *e (d then
 * holds some of the document: the caller drops it).
 */
int
agent_replace(
    struct agent_doc *d, const char *json, size_t len, struct schedule_error *e)
{
	struct agent_doc nd;
	json_t *root;
	int r;

	if ((root = change_load(d, json, len, e)) == NULL)
		return -1;
	agent_init(&nd);
	nd.agent_id = d->agent_id;
	d->agent_id = NULL;
	if (json_object_get(root, "auth") != NULL) {
		nd.auth_type = d->auth_type;
		nd.auth_secret = d->auth_secret;
		nd.auth_username = d->auth_username;
		d->auth_secret = d->auth_username = NULL;
	}
	agent_clear(d);
	r = decode(root, &nd, 1, e);
	json_decref(root);
	*d = nd;
	return r == 0 ? complete(d, e) : -1;
}

static const char *
str(json_t *row, const char *k)
{
	return json_string_value(json_object_get(row, k));
}

static int
dup_to(char **out, const char *s)
{
	if (s == NULL)
		return 0;
	return (*out = strdup(s)) == NULL ? -1 : 0;
}

/*
 * *d from an agents row as JSON (to_jsonb()).  0, or -1 with *e: a row
 * that does not read as an agent (written by hand, or a bug).
 */
int
agent_from_row(json_t *row, struct agent_doc *d, struct schedule_error *e)
{
	const char *a = str(row, "auth_type"), *w = str(row, "when_unhealthy");
	json_t *hb = json_object_get(row, "heartbeat_seconds");
	json_t *schema = json_object_get(row, "input_schema");
	int t;

	agent_init(d);
	for (t = 0; t < 4 && (a == NULL || strcmp(a, auth_names[t])); t++)
		;
	if (t == 4 || !str(row, "agent_id") || !str(row, "name") ||
	    !str(row, "endpoint")) {
		agent_clear(d);
		return doc_fail(e, "internal", NULL,
		    "the agent's row is not "
		    "an agent");
	}
	d->auth_type = (enum agent_auth)t;
	if (dup_to(&d->agent_id, str(row, "agent_id")) ||
	    dup_to(&d->name, str(row, "name")) ||
	    dup_to(&d->description, str(row, "description")) ||
	    dup_to(&d->endpoint, str(row, "endpoint")) ||
	    dup_to(&d->auth_username, str(row, "auth_username")) ||
	    dup_to(&d->auth_secret, str(row, "auth_secret")) ||
	    dup_to(&d->health_url, str(row, "health_url"))) {
		agent_clear(d);
		return fail_oom(e, NULL);
	}
	d->timeout_ms = json_integer_value(json_object_get(row, "timeout_ms"));
	d->max_concurrent_requests =
	    json_integer_value(json_object_get(row, "max_concurrent_requests"));
	d->heartbeat_seconds =
	    json_is_integer(hb) ? json_integer_value(hb) : SCHEDULE_UNSET;
	d->health_interval_seconds =
	    json_integer_value(json_object_get(row, "health_interval_seconds"));
	d->when_unhealthy_go = w && strcmp(w, "go") == 0;
	d->enabled = json_is_true(json_object_get(row, "enabled"));
	if (schema && !json_is_null(schema))
		d->input_schema = json_incref(schema);
	return 0;
}

static json_t *
opt_str(const char *s)
{
	return s ? json_string(s) : json_null();
}

/*
 * d as the columns of an agents row (jsonb_populate_record() reads them),
 * secret included; NULL out of memory.
 */
json_t *
agent_columns(const struct agent_doc *d)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:I, s:I, s:o, "
	                 "s:o, s:I, s:s, s:O?, s:b}",
	    "agent_id", d->agent_id, "name", d->name, "description",
	    d->description ? d->description : "", "endpoint", d->endpoint,
	    "auth_type", auth_names[d->auth_type], "auth_username",
	    opt_str(d->auth_username), "auth_secret", opt_str(d->auth_secret),
	    "timeout_ms", (json_int_t)d->timeout_ms, "max_concurrent_requests",
	    (json_int_t)d->max_concurrent_requests, "heartbeat_seconds",
	    d->heartbeat_seconds == SCHEDULE_UNSET
	        ? json_null()
	        : json_integer(d->heartbeat_seconds),
	    "health_url", opt_str(d->health_url), "health_interval_seconds",
	    (json_int_t)d->health_interval_seconds, "when_unhealthy",
	    d->when_unhealthy_go ? "go" : "wait", "input_schema",
	    d->input_schema, "enabled", d->enabled);
}

/*
 * d as the API shows it (docs/agents.md): auth without its secret (only
 * whether one is set), health as an object or null.  NULL out of memory.
 */
json_t *
agent_to_json(const struct agent_doc *d)
{
	json_t *auth = json_pack("{s:s}", "type", auth_names[d->auth_type]);
	json_t *health = d->health_url
	    ? json_pack("{s:s, s:I, s:s}", "url", d->health_url,
	          "interval_seconds", (json_int_t)d->health_interval_seconds,
	          "when_unhealthy", d->when_unhealthy_go ? "go" : "wait")
	    : json_null();

	if (auth && d->auth_type == AGENT_AUTH_BASIC)
		json_object_set_new(
		    auth, "username", json_string(d->auth_username));
	if (auth && d->auth_type != AGENT_AUTH_NONE)
		json_object_set_new(
		    auth, "secret_set", json_boolean(d->auth_secret != NULL));
	if (auth == NULL || health == NULL) {
		json_decref(auth);
		json_decref(health);
		return NULL;
	}
	return json_pack("{s:s, s:s, s:s, s:s, s:o, s:I, s:I, s:o, s:o, s:O?, "
	                 "s:b}",
	    "agent_id", d->agent_id, "name", d->name, "description",
	    d->description ? d->description : "", "endpoint", d->endpoint,
	    "auth", auth, "timeout_ms", (json_int_t)d->timeout_ms,
	    "max_concurrent_requests", (json_int_t)d->max_concurrent_requests,
	    "heartbeat_seconds",
	    d->heartbeat_seconds == SCHEDULE_UNSET
	        ? json_null()
	        : json_integer(d->heartbeat_seconds),
	    "health", health, "input_schema", d->input_schema, "enabled",
	    d->enabled);
}

/* 1 if s is a version: MAJOR.MINOR.PATCH and an optional -pre or +build. */
int
agent_version_ok(const char *s)
{
	for (int part = 0; part < 3; part++) {
		size_t n = strspn(s, "0123456789");

		if (n < 1 || n > 9)
			return 0;
		s += n;
		if (part < 2 && *s++ != '.')
			return 0;
	}
	if (*s == '\0')
		return 1;
	if (*s != '-' && *s != '+')
		return 0;
	s++;
	return strlen(s) >= 1 && strlen(s) <= 64 &&
	    strspn(s,
	        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	        ".+-") == strlen(s);
}

void
agent_version_clear(struct agent_version *v)
{
	free(v->version);
	free(v->endpoint);
	free(v->description);
	json_decref(v->input_schema);
	memset(v, 0, sizeof(*v));
}

/*
 * A version document (POST /agents/{id}/versions): "version", "endpoint",
 * optional "input_schema" and "description".  0, or -1 with *e and *v
 * cleared.
 */
int
agent_version_parse(const char *json, size_t len, struct agent_version *v,
    struct schedule_error *e)
{
	json_t *root, *x;
	const char *k;
	int r = 0;

	memset(v, 0, sizeof(*v));
	if ((root = doc_load(json, len, e)) == NULL)
		return -1;
	if (!json_is_object(root))
		r = doc_fail(e, "invalid_json", NULL, "expected an object");
	json_object_foreach(root, k, x)
	{
		if (r == -1)
			break;
		if (strcmp(k, "version") == 0)
			r = text(x, k, 1, 100, &v->version, e) == -1 ||
			        !agent_version_ok(v->version)
			    ? doc_fail(e, "invalid_field", k,
			          "expected MAJOR.MINOR.PATCH, as 1.2.3 or "
			          "1.2.3-rc.1")
			    : 0;
		else if (strcmp(k, "endpoint") == 0)
			r = url(x, k, &v->endpoint, e);
		else if (strcmp(k, "description") == 0)
			r = text(x, k, 0, 10000, &v->description, e);
		else if (strcmp(k, "input_schema") == 0)
			r = agent_schema(x, k, &v->input_schema, e);
		else
			r = doc_fail(e, "unknown_field", k,
			    "not a field of an agent version");
	}
	json_decref(root);
	if (r == 0 && v->version == NULL)
		r = doc_fail(e, "missing_field", "version", "required");
	if (r == 0 && v->endpoint == NULL)
		r = doc_fail(e, "missing_field", "endpoint", "required");
	if (r == -1)
		agent_version_clear(v);
	return r;
}

void
agent_report_clear(struct agent_report *r)
{
	free(r->status);
	free(r->result);
	free(r->error);
	if (r->token != NULL)
		explicit_bzero(r->token, strlen(r->token));
	free(r->token);
	memset(r, 0, sizeof(*r));
}

/*
 * An agent's report (POST /jobs/{id}/complete) or heartbeat body, len
 * bytes (a heartbeat's may be empty): {"status": "completed"|"failed",
 * "result": any JSON, "error": {"message": string, "retryable": bool},
 * "token": string}, a heartbeat's only "token".  The result and the error
 * come back as compact JSON for PostgreSQL.  0, or -1 with *e naming the
 * member (and *r cleared).
 */
int
agent_report_parse(const char *body, size_t len, int heartbeat,
    struct agent_report *r, struct schedule_error *e)
{
	static const char *const report_keys[] = {
	    "status", "result", "error", "token", NULL};
	static const char *const beat_keys[] = {"token", NULL};
	const char *const *keys = heartbeat ? beat_keys : report_keys;
	json_t *b = NULL, *v, *er, *m, *rt;
	const char *k, *st;
	int i, rc = -1;

	memset(r, 0, sizeof(*r));
	if (len == 0 && heartbeat)
		return 0;
	if (len == 0)
		return doc_fail(
		    e, "invalid_json", NULL, "a JSON body is required");
	if ((b = doc_load(body, len, e)) == NULL)
		return -1;
	if (!json_is_object(b)) {
		doc_fail(e, "invalid_json", NULL, "expected an object");
		goto out;
	}
	json_object_foreach(b, k, v)
	{
		for (i = 0; keys[i] && strcmp(keys[i], k); i++)
			;
		if (keys[i] == NULL) {
			doc_fail(e, "unknown_field", k, "not a field of a %s",
			    heartbeat ? "heartbeat" : "report");
			goto out;
		}
	}
	if ((v = json_object_get(b, "token")) != NULL &&
	    (!json_is_string(v) || json_string_length(v) > 200 ||
	        (r->token = strdup(json_string_value(v))) == NULL)) {
		doc_fail(e, "invalid_field", "token",
		    "expected the attempt's callback token");
		goto out;
	}
	if (heartbeat) {
		rc = 0;
		goto out;
	}
	st = json_string_value(json_object_get(b, "status"));
	if (st == NULL || (strcmp(st, "completed") && strcmp(st, "failed"))) {
		doc_fail(e,
		    json_object_get(b, "status") ? "invalid_field"
		                                 : "missing_field",
		    "status", "expected \"completed\" or \"failed\"");
		goto out;
	}
	er = json_object_get(b, "error");
	m = json_object_get(er, "message");
	rt = json_object_get(er, "retryable");
	if (er && !json_is_null(er) &&
	    (!json_is_object(er) || (m && !json_is_string(m)) ||
	        (rt && !json_is_boolean(rt)) ||
	        json_object_size(er) != (size_t)(m != NULL) + (rt != NULL) ||
	        (m && utf8_chars(json_string_value(m)) > 4096))) {
		doc_fail(e, "invalid_field", "error",
		    "expected {\"message\": a string of at most 4096 "
		    "characters, \"retryable\": true or false}");
		goto out;
	}
	if ((v = json_object_get(b, "result")) != NULL &&
	    schedule_json_storable(v, "result", e) == -1)
		goto out;
	if ((r->status = strdup(st)) == NULL ||
	    (v &&
	        (r->result = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY)) ==
	            NULL) ||
	    (er && !json_is_null(er) &&
	        (r->error = json_dumps(er, JSON_COMPACT)) == NULL)) {
		fail_oom(e, NULL);
		goto out;
	}
	rc = 0;
out:
	json_decref(b);
	if (rc == -1)
		agent_report_clear(r);
	return rc;
}
