/*
 * apply.c: POST /apply (docs/apply.md), schedules, agents and pipelines
 * as code.  An owner's set of documents is made to exist as written, in
 * one transaction: each thing the set names is created when missing,
 * replaced when its document changed (the SHA-256 stored with it says
 * so), and left alone, state and counts included, when not; with prune,
 * the set's things the documents no longer name are deleted.  Every
 * write goes through the API's own handler for it (POST /agents, PATCH
 * /schedules/{id}, DELETE /pipelines/{id}, ...), with the caller's token,
 * so the same checks hold; their transactions are savepoints of the
 * apply's (db_nest()).  The first refusal undoes everything and answers
 * with the handler's status and error, its field prefixed with where the
 * document is ("schedules[2].target.url").  A dry run does it all and
 * rolls it back: its plan is exactly what the apply would do.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

static const char *const kind_names[APPLY_KINDS] = {
    "agent", "pipeline", "schedule"};

/* The state of one apply. */
struct apply {
	struct request *rq;
	struct response *rs;
	const struct apply_req *ar;
	const char *owner;
	char owner_query[API_OWNER_MAX * 12 + 8]; /* "owner=..." encoded */
	json_t *changes;                          /* what was done, in order */
	int counts[4];                            /* per action below */
	char *err;
	size_t errlen;
};

enum action { ACT_CREATE, ACT_UPDATE, ACT_UNCHANGED, ACT_DELETE };
static const char *const action_names[] = {
    "create", "update", "unchanged", "delete"};

/* "owner=" and owner, percent-encoded, for the handlers' query. */
static void
owner_query(const char *owner, char *buf, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = (size_t)snprintf(buf, len, "owner=");

	for (const unsigned char *p = (const unsigned char *)owner;
	     *p && n + 4 < len; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~", *p)) {
			buf[n++] = (char)*p;
			continue;
		}
		buf[n++] = '%';
		buf[n++] = hex[*p >> 4];
		buf[n++] = hex[*p & 15];
	}
	buf[n] = '\0';
}

/*
 * Runs handler h as the request METHOD /seg0[/seg1]?query with body doc
 * (NULL: none) for the caller, inside the apply's transaction; replace: a
 * PATCH that gives the whole document.  *out is the handler's answer (the
 * caller's to clear).  The handler's return value.
 */
static int
sub_call(struct apply *a, api_handler h, const char *method, const char *seg0,
    const char *seg1, const char *query, json_t *doc, int replace,
    struct response *out)
{
	struct request sub = *a->rq;
	char s0[32], s1[256], *text = NULL;
	int r;

	memset(out, 0, sizeof(*out));
	snprintf(s0, sizeof(s0), "%s", seg0);
	snprintf(s1, sizeof(s1), "%s", seg1 ? seg1 : "");
	if (doc && (text = json_dumps(doc, JSON_COMPACT)) == NULL)
		return -1;
	sub.method = method;
	memset(sub.segs, 0, sizeof(sub.segs));
	sub.segs[0] = s0;
	sub.segs[1] = seg1 ? s1 : NULL;
	sub.nsegs = seg1 ? 2 : 1;
	sub.query = query;
	sub.body = text ? text : (char *)"";
	sub.body_len = text ? strlen(text) : 0;
	sub.idem_key = NULL;
	sub.replace = replace;
	r = h(&sub, out, a->err, a->errlen);
	free(text);
	return r;
}

/*
 * Answers with the refusal in sub (a handler's, for item i of kind k named
 * key): its status, code and message, the field prefixed with where the
 * document is.  0, or -1 out of memory.
 */
static int
refused(struct apply *a, enum apply_kind k, size_t i, const char *key,
    struct response *sub)
{
	json_t *er = sub->body ? json_object_get(sub->body, "error") : NULL;
	const char *code = json_string_value(json_object_get(er, "code"));
	const char *msg = json_string_value(json_object_get(er, "message"));
	const char *field = json_string_value(json_object_get(er, "field"));
	char path[300];
	int r;

	snprintf(path, sizeof(path), "%s[%zu]%s%s", apply_list_name(k), i,
	    field ? "." : "", field ? field : "");
	r = api_error(a->rs, sub->status, code ? code : "refused", path,
	    "%s \"%s\": %s", kind_names[k], key,
	    msg ? msg : "refused by the API");
	a->rs->retry_after = sub->retry_after;
	json_decref(sub->body);
	free(sub->raw);
	return r;
}

/* Adds {"kind", "key", "id"?, "action"} to the changes. */
static int
record(struct apply *a, enum apply_kind k, const char *key, const char *id,
    enum action act)
{
	json_t *c = json_pack("{s:s, s:s, s:s}", "kind", kind_names[k],
	    k == APPLY_SCHEDULE ? "name" : "id", key, "action",
	    action_names[act]);

	if (c == NULL)
		return -1;
	if ((id && json_object_set_new(c, "id", json_string(id)) == -1) ||
	    json_array_append_new(a->changes, c) == -1) {
		json_decref(c);
		return -1;
	}
	a->counts[act]++;
	return 0;
}

/* The keys of the apply's documents of kind k, as a JSON array's text;
 * NULL out of memory. */
static char *
names_array(const struct apply *a, enum apply_kind k)
{
	json_t *arr = json_array();
	char *text;

	for (size_t i = 0; arr && i < a->ar->n[k]; i++)
		if (json_array_append_new(
		        arr, json_string(a->ar->items[k][i].key)) == -1)
			json_decref(arr), arr = NULL;
	if (arr == NULL)
		return NULL;
	text = json_dumps(arr, JSON_COMPACT);
	json_decref(arr);
	return text;
}

/*
 * Whether a successful sub-request answered: 1 if so, 0 after answering
 * the apply with its refusal, API_DB_FAILED or -1 as the handler said.
 */
static int
sub_ok(struct apply *a, int r, enum apply_kind k, size_t i, const char *key,
    struct response *sub)
{
	if (r != 0) {
		json_decref(sub->body);
		free(sub->raw);
		return r;
	}
	if (sub->status >= 400)
		return refused(a, k, i, key, sub) == -1 ? -1 : 0;
	return 1;
}

/* The item of an agent or pipeline (kind k), by its slug. */
static int
apply_slug(struct apply *a, enum apply_kind k, size_t i)
{
	const struct apply_item *it = &a->ar->items[k][i];
	const char *p[4] = {a->owner, it->key, a->ar->set, it->hash};
	const char *seg = k == APPLY_AGENT ? "agents" : "pipelines";
	api_handler create =
	    k == APPLY_AGENT ? agents_create : pipelines_create;
	api_handler update =
	    k == APPLY_AGENT ? agents_update : pipelines_update;
	struct response sub;
	struct db_rows *rows;
	enum action act;
	int r;

	if ((rows = db_query(a->rq->db,
	         k == APPLY_AGENT ? SQL_apply_agent_state
	                          : SQL_apply_pipeline_state,
	         2, p, a->err, a->errlen)) == NULL)
		return API_DB_FAILED;
	if (db_rows_count(rows) == 0) {
		act = ACT_CREATE;
		r = sub_call(a, create, "POST", seg, NULL, a->owner_query,
		    it->doc, 0, &sub);
	} else if (db_rows_value(rows, 0, 0)[0] != '\0' &&
	    strcmp(db_rows_value(rows, 0, 0), a->ar->set) != 0) {
		char path[64];

		snprintf(path, sizeof(path), "%s[%zu].%s", apply_list_name(k),
		    i, k == APPLY_AGENT ? "agent_id" : "pipeline_id");
		r = api_error(a->rs, 409, "conflict", path,
		    "%s \"%s\" belongs to the apply set \"%s\": apply it "
		    "with that set, or delete it first",
		    kind_names[k], it->key, db_rows_value(rows, 0, 0));
		db_rows_free(rows);
		return r;
	} else if (strcmp(db_rows_value(rows, 0, 0), a->ar->set) == 0 &&
	    strcmp(db_rows_value(rows, 0, 1), it->hash) == 0) {
		db_rows_free(rows);
		return record(a, k, it->key, NULL, ACT_UNCHANGED) == -1 ? -1
		                                                        : 1;
	} else {
		act = ACT_UPDATE;
		r = sub_call(a, update, "PATCH", seg, it->key, a->owner_query,
		    it->doc, 1, &sub);
	}
	db_rows_free(rows);
	if ((r = sub_ok(a, r, k, i, it->key, &sub)) != 1)
		return r;
	json_decref(sub.body);
	free(sub.raw);
	if (db_exec(a->rq->db,
	        k == APPLY_AGENT ? SQL_apply_agent_mark
	                         : SQL_apply_pipeline_mark,
	        4, p, a->err, a->errlen) == -1)
		return API_DB_FAILED;
	return record(a, k, it->key, NULL, act) == -1 ? -1 : 1;
}

/* The item of a schedule, by its name in the set. */
static int
apply_schedule(struct apply *a, size_t i)
{
	const struct apply_item *it = &a->ar->items[APPLY_SCHEDULE][i];
	const char *p[3] = {a->owner, a->ar->set, it->key};
	char id[API_ID_LEN + 1];
	struct response sub;
	struct db_rows *rows;
	const char *set;
	enum action act;
	int n, r;

	if ((rows = db_query(a->rq->db, SQL_apply_schedule_state, 3, p, a->err,
	         a->errlen)) == NULL)
		return API_DB_FAILED;
	n = db_rows_count(rows);
	set = n > 0 ? db_rows_value(rows, 0, 1) : "";
	/* Two of the set, or none of it and two of no set: which one? */
	if (n > 1 && strcmp(db_rows_value(rows, 1, 1), set) == 0) {
		char path[64];

		snprintf(path, sizeof(path), "schedules[%zu].name", i);
		r = api_error(a->rs, 409, "ambiguous", path,
		    "schedule \"%s\": owner %s has several schedules of this "
		    "name %s; rename or delete all but one",
		    it->key, a->owner,
		    set[0] ? "in this set" : "in no apply set");
		db_rows_free(rows);
		return r;
	}
	if (n == 0) {
		db_rows_free(rows);
		act = ACT_CREATE;
		r = sub_call(a, schedules_create, "POST", "schedules", NULL,
		    a->owner_query, it->doc, 0, &sub);
		if ((r = sub_ok(a, r, APPLY_SCHEDULE, i, it->key, &sub)) != 1)
			return r;
		if (json_string_value(json_object_get(sub.body, "id")) ==
		    NULL) {
			json_decref(sub.body);
			free(sub.raw);
			return api_error(a->rs, 500, "internal", NULL,
			    "a created schedule came back without its id");
		}
		snprintf(id, sizeof(id), "%s",
		    json_string_value(json_object_get(sub.body, "id")));
	} else {
		snprintf(id, sizeof(id), "%s", db_rows_value(rows, 0, 0));
		if (set[0] != '\0' &&
		    strcmp(db_rows_value(rows, 0, 2), it->hash) == 0) {
			db_rows_free(rows);
			return record(a, APPLY_SCHEDULE, it->key, id,
			           ACT_UNCHANGED) == -1
			    ? -1
			    : 1;
		}
		db_rows_free(rows);
		act = ACT_UPDATE;
		r = sub_call(a, schedules_update, "PATCH", "schedules", id, "",
		    it->doc, 1, &sub);
		if ((r = sub_ok(a, r, APPLY_SCHEDULE, i, it->key, &sub)) != 1)
			return r;
	}
	json_decref(sub.body);
	free(sub.raw);
	p[0] = id;
	p[1] = a->ar->set;
	p[2] = it->hash;
	if (db_exec(a->rq->db, SQL_apply_schedule_mark, 3, p, a->err,
	        a->errlen) == -1)
		return API_DB_FAILED;
	return record(a, APPLY_SCHEDULE, it->key, id, act) == -1 ? -1 : 1;
}

/* Deletes the set's things of kind k that the apply does not name. */
static int
prune(struct apply *a, enum apply_kind k)
{
	static const char *const sql[APPLY_KINDS] = {SQL_apply_agent_rest,
	    SQL_apply_pipeline_rest, SQL_apply_schedule_rest};
	static const api_handler del[APPLY_KINDS] = {
	    agents_delete, pipelines_delete, schedules_delete};
	static const char *const segs[APPLY_KINDS] = {
	    "agents", "pipelines", "schedules"};
	char *arr = names_array(a, k);
	const char *p[3] = {a->owner, a->ar->set, arr};
	struct response sub;
	struct db_rows *rows;
	int r = 1;

	if (arr == NULL)
		return -1;
	rows = db_query(a->rq->db, sql[k], 3, p, a->err, a->errlen);
	free(arr);
	if (rows == NULL)
		return API_DB_FAILED;
	for (int i = 0; i < db_rows_count(rows) && r == 1; i++) {
		const char *key = db_rows_value(rows, i, 0);
		const char *name =
		    k == APPLY_SCHEDULE ? db_rows_value(rows, i, 1) : key;

		r = sub_call(a, del[k], "DELETE", segs[k], key,
		    k == APPLY_SCHEDULE ? "" : a->owner_query, NULL, 0, &sub);
		if (r == 0 && sub.status >= 400) {
			json_t *er = json_object_get(sub.body, "error");
			const char *code =
			    json_string_value(json_object_get(er, "code"));
			const char *msg =
			    json_string_value(json_object_get(er, "message"));

			r = api_error(a->rs, sub.status,
			    code ? code : "refused", NULL,
			    "pruning %s \"%s\", which the set no longer names: "
			    "%s",
			    kind_names[k], name, msg ? msg : "refused");
			json_decref(sub.body);
			free(sub.raw);
			break;
		}
		json_decref(sub.body);
		free(sub.raw);
		if (r == 0)
			r = record(a, k, name, k == APPLY_SCHEDULE ? key : NULL,
			        ACT_DELETE) == -1
			    ? -1
			    : 1;
	}
	db_rows_free(rows);
	return r;
}

/* Every write of the apply, in order; 1 when all were done. */
static int
apply_all(struct apply *a)
{
	int r = 1;

	/*
	 * Agents, then pipelines (which use agents), then the schedules the
	 * set no longer names (so that a rename fits an owner's schedule
	 * limit), then the schedules (which use both), then the pipelines
	 * and agents the set no longer names (nothing of the set uses them
	 * any more).
	 */
	for (int k = 0; k < APPLY_SCHEDULE && r == 1; k++)
		for (size_t i = 0; i < a->ar->n[k] && r == 1; i++)
			r = apply_slug(a, (enum apply_kind)k, i);
	if (a->ar->prune && r == 1)
		r = prune(a, APPLY_SCHEDULE);
	for (size_t i = 0; i < a->ar->n[APPLY_SCHEDULE] && r == 1; i++)
		r = apply_schedule(a, i);
	for (int k = APPLY_SCHEDULE - 1; a->ar->prune && k >= 0 && r == 1; k--)
		r = prune(a, (enum apply_kind)k);
	return r;
}

/* The answer of an apply that went through (or a dry run's plan). */
static int
reply(struct apply *a)
{
	json_t *counts = json_object(), *doc;

	for (int i = 0; counts && i < 4; i++)
		if (json_object_set_new(
		        counts, action_names[i], json_integer(a->counts[i])))
			json_decref(counts), counts = NULL;
	if (counts == NULL)
		return -1;
	doc = json_pack("{s:s, s:s, s:b, s:b, s:o, s:O}", "set", a->ar->set,
	    "owner", a->owner, "dry_run", a->ar->dry_run, "prune", a->ar->prune,
	    "counts", counts, "changes", a->changes);
	return api_json(a->rs, 200, doc);
}

/* POST /apply: the set of documents in the body, for ?owner= or the
 * caller's owner. */
int
apply_post(struct request *rq, struct response *rs, char *err, size_t errlen)
{
	static const char *const allowed[] = {"owner", NULL};
	char owner[API_OWNER_MAX * 4 + 1];
	struct schedule_error e;
	struct apply_req ar;
	struct apply a;
	const char *p[2];
	int r;

	if (query_check(rq->query, allowed, rs) == -1 ||
	    api_req_owner(rq, rs, owner, sizeof(owner), NULL) ||
	    api_no_body(rq, rs))
		return 0;
	if (apply_parse(rq->body, rq->body_len, &ar, &e) == -1) {
		apply_clear(&ar);
		return api_doc_error(rs, &e);
	}
	memset(&a, 0, sizeof(a));
	a.rq = rq;
	a.rs = rs;
	a.ar = &ar;
	a.owner = owner;
	a.err = err;
	a.errlen = errlen;
	owner_query(owner, a.owner_query, sizeof(a.owner_query));
	if ((a.changes = json_array()) == NULL) {
		apply_clear(&ar);
		return -1;
	}
	p[0] = owner;
	p[1] = ar.set;
	if (db_begin(rq->db, err, errlen) == -1) {
		r = API_DB_FAILED;
		goto out;
	}
	if (db_exec(rq->db, SQL_apply_lock, 2, p, err, errlen) == -1) {
		db_rollback(rq->db);
		r = API_DB_FAILED;
		goto out;
	}
	db_nest(rq->db, 1);
	r = apply_all(&a);
	db_nest(rq->db, 0);
	if (r != 1) {
		db_rollback(rq->db);
		goto out;
	}
	/* The answer first: one that cannot be made is no committed apply. */
	if (reply(&a) == -1) {
		db_rollback(rq->db);
		r = -1;
	} else if (ar.dry_run)
		r = db_rollback(rq->db) == -1 ? API_DB_FAILED : 0;
	else
		r = db_commit(rq->db, err, errlen) == -1 ? API_DB_FAILED : 0;
out:
	json_decref(a.changes);
	apply_clear(&ar);
	return r;
}
