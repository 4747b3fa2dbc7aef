/*
 * pipelines.c: pipelines (docs/orchestration.md), graphs of agent steps.
 * A pipeline belongs to an owner and is named by a slug unique within it,
 * addressed as an agent is (?owner= for an admin; another owner's is 404
 * to anyone else).  The document is checked by common/pipeline.c; that
 * every step's agent exists is checked here, against the owner's
 * registry.  The statements are those of sql/queries/pipelines.sql.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

#define NO_PIPELINE "no such pipeline"

/* A pipeline's address: its owner and slug. */
struct addr {
	char owner[API_OWNER_MAX * 4 + 1];
	char slug[65];
};

static int
no_pipeline(struct response *rs)
{
	return api_error(rs, 404, "not_found", NULL, NO_PIPELINE);
}

/* The pipeline of /pipelines/{id}: 0, or 1 after answering. */
static int
req_addr(struct request *rq, struct response *rs, struct addr *a)
{
	static const char *const allowed[] = {"owner", NULL};

	if (query_check(rq->query, allowed, rs) == -1 ||
	    api_req_owner(rq, rs, a->owner, sizeof(a->owner), NO_PIPELINE))
		return 1;
	if (rq->nsegs < 2 || strlen(rq->segs[1]) >= sizeof(a->slug) ||
	    !agent_slug_ok(rq->segs[1]))
		return no_pipeline(rs), 1;
	snprintf(a->slug, sizeof(a->slug), "%s", rq->segs[1]);
	return 0;
}

/*
 * How the body spelled step i's agent member: "agentId" (seed 004's) or
 * "agent_id" (also for a step the body did not send: a PATCH keeps the
 * stored steps, which are native).
 */
static const char *
given_agent(const struct request *rq, size_t i)
{
	json_t *body = json_loadb(rq->body, rq->body_len, 0, NULL);
	json_t *step = json_array_get(json_object_get(body, "steps"), i);
	const char *name =
	    json_object_get(step, "agentId") ? "agentId" : "agent_id";

	json_decref(body);
	return name;
}

/*
 * Whether every step of doc names an agent of owner: 0 yes, 1 after
 * answering 400 naming the first step whose agent is missing, or
 * API_DB_FAILED.
 */
static int
agents_missing(struct request *rq, struct response *rs, const char *owner,
    json_t *doc, char *err, size_t errlen)
{
	json_t *steps = json_object_get(doc, "steps"), *ids = json_array();
	const char *p[2] = {owner, NULL};
	struct db_rows *rows;
	char *text;
	size_t i;
	int r = 0;

	for (i = 0; ids && i < json_array_size(steps); i++)
		if (json_array_append(ids,
		        json_object_get(
		            json_array_get(steps, i), "agent_id")) == -1) {
			json_decref(ids);
			ids = NULL;
		}
	text = ids ? json_dumps(ids, JSON_COMPACT) : NULL;
	json_decref(ids);
	if (text == NULL)
		return -1;
	p[1] = text;
	rows =
	    db_query(rq->db, SQL_pipelines_agents_missing, 2, p, err, errlen);
	free(text);
	if (rows == NULL)
		return API_DB_FAILED;
	if (db_rows_count(rows) > 0) {
		const char *id = db_rows_value(rows, 0, 0);
		char field[48];

		for (i = 0; i < json_array_size(steps); i++)
			if (strcmp(json_string_value(json_object_get(
			               json_array_get(steps, i), "agent_id")),
			        id) == 0)
				break;
		snprintf(field, sizeof(field), "steps[%zu].%s", i,
		    given_agent(rq, i));
		api_error(rs, 400, "unknown_agent", field,
		    "owner %s has no agent \"%s\"", owner, id);
		r = 1;
	}
	db_rows_free(rows);
	return r;
}

/* The document doc as compact JSON text; NULL out of memory. */
static char *
doc_text(json_t *doc)
{
	return json_dumps(doc, JSON_COMPACT);
}

/* GET /pipelines: by owner and id, paged; ?owner=, ?enabled=, ?agent=. */
int
pipelines_list(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	return api_slug_list(
	    rq, rs, SQL_pipelines_list, "pipelines", "agent", err, errlen);
}

/* POST /pipelines: a new pipeline (201), 409 if the owner has its id. */
int
pipelines_create(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	static const char *const allowed[] = {"owner", NULL};
	char owner[API_OWNER_MAX * 4 + 1], by[API_OWNER_MAX * 4 + 40], *text;
	const char *p[3];
	struct schedule_error e;
	struct db_rows *rows;
	json_t *doc;
	int r;

	if (query_check(rq->query, allowed, rs) == -1 ||
	    api_req_owner(rq, rs, owner, sizeof(owner), NULL) ||
	    api_no_body(rq, rs))
		return 0;
	if ((doc = pipeline_parse(rq->body, rq->body_len, NULL, &e)) == NULL)
		return api_doc_error(rs, &e);
	/* One transaction: the agents stay locked until the pipeline is in. */
	if (db_begin(rq->db, err, errlen) == -1) {
		json_decref(doc);
		return API_DB_FAILED;
	}
	if ((r = agents_missing(rq, rs, owner, doc, err, errlen)) != 0 ||
	    (text = doc_text(doc)) == NULL) {
		json_decref(doc);
		db_rollback(rq->db);
		return r ? (r == 1 ? 0 : r) : -1;
	}
	api_whom(rq, by, sizeof(by));
	p[0] = owner;
	p[1] = by;
	p[2] = text;
	rows = db_query(rq->db, SQL_pipelines_insert, 3, p, err, errlen);
	free(text);
	if (rows == NULL || db_commit(rq->db, err, errlen) == -1) {
		db_rows_free(rows);
		db_rollback(rq->db);
		json_decref(doc);
		return API_DB_FAILED;
	}
	if (db_rows_count(rows) == 0) {
		db_rows_free(rows);
		api_error(rs, 409, "conflict", "pipeline_id",
		    "this owner has a pipeline \"%s\" already",
		    json_string_value(json_object_get(doc, "pipeline_id")));
		json_decref(doc);
		return 0;
	}
	json_decref(doc);
	return api_reply_text(rs, 201, rows);
}

/* GET /pipelines/{id} */
int
pipelines_get(struct request *rq, struct response *rs, char *err, size_t errlen)
{
	struct db_rows *rows;
	const char *p[2];
	struct addr a;

	if (req_addr(rq, rs, &a))
		return 0;
	p[0] = a.owner;
	p[1] = a.slug;
	if ((rows = db_query(rq->db, SQL_pipelines_get, 2, p, err, errlen)) ==
	    NULL)
		return API_DB_FAILED;
	if (db_rows_count(rows) == 0) {
		db_rows_free(rows);
		return no_pipeline(rs);
	}
	return api_reply_text(rs, 200, rows);
}

/*
 * PATCH /pipelines/{id}: the members the body names replace the
 * pipeline's (steps as a whole), checked as a whole.
 */
int
pipelines_update(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	char by[API_OWNER_MAX * 4 + 40], *text = NULL;
	const char *p[4];
	struct schedule_error e;
	json_t *base, *doc = NULL;
	struct addr a;
	int r;

	if (req_addr(rq, rs, &a) || api_no_body(rq, rs))
		return 0;
	p[0] = a.owner;
	p[1] = a.slug;
	if ((base = api_slug_load(rq, rs, SQL_pipelines_load, p, "pipeline", &r,
	         err, errlen)) == NULL)
		return r;
	/* An apply's: the document as a whole, not merged into base. */
	doc = pipeline_parse(
	    rq->body, rq->body_len, rq->replace ? NULL : base, &e);
	json_decref(base);
	if (doc == NULL) {
		db_rollback(rq->db);
		return api_doc_error(rs, &e);
	}
	if (strcmp(json_string_value(json_object_get(doc, "pipeline_id")),
	        a.slug) != 0) {
		json_decref(doc);
		db_rollback(rq->db);
		return api_error(rs, 400, "invalid_field", "pipeline_id",
		    "a pipeline's id cannot change");
	}
	if ((r = agents_missing(rq, rs, a.owner, doc, err, errlen)) != 0 ||
	    (text = doc_text(doc)) == NULL) {
		json_decref(doc);
		db_rollback(rq->db);
		return r ? (r == 1 ? 0 : r) : -1;
	}
	json_decref(doc);
	api_whom(rq, by, sizeof(by));
	p[2] = text;
	p[3] = by;
	r = api_write_reply(rq, rs, SQL_pipelines_update, 4, p, err, errlen);
	free(text);
	return r;
}

/* DELETE /pipelines/{id}: 204; 409 while a schedule runs it. */
int
pipelines_delete(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	const char *p[2];
	struct db_rows *rows;
	struct addr a;
	int r = 0;

	if (req_addr(rq, rs, &a))
		return 0;
	p[0] = a.owner;
	p[1] = a.slug;
	if (!rq->may) {
		/* A viewer learns that it may not, of a pipeline it sees. */
		if ((rows = db_query(
		         rq->db, SQL_pipelines_get, 2, p, err, errlen)) == NULL)
			return API_DB_FAILED;
		r = db_rows_count(rows);
		db_rows_free(rows);
		return r == 0 ? no_pipeline(rs)
		              : api_error(rs, 403, "forbidden", NULL,
		                    "a viewer token may read pipelines, not "
		                    "change them");
	}
	/*
	 * Locked first, in a statement of its own: a schedule saved
	 * meanwhile (it locks the pipeline's row, FOR SHARE) is then seen by
	 * the delete's snapshot, not missed.
	 */
	if (db_begin(rq->db, err, errlen) == -1)
		return API_DB_FAILED;
	if ((rows = db_query(rq->db, SQL_pipelines_lock, 2, p, err, errlen)) ==
	    NULL) {
		db_rollback(rq->db);
		return API_DB_FAILED;
	}
	db_rows_free(rows);
	if ((rows = db_query(
	         rq->db, SQL_pipelines_delete, 2, p, err, errlen)) == NULL ||
	    db_commit(rq->db, err, errlen) == -1) {
		db_rows_free(rows);
		db_rollback(rq->db);
		return API_DB_FAILED;
	}
	if (strcmp(db_rows_value(rows, 0, 0), "1") == 0)
		rs->status = 204;
	else if (strcmp(db_rows_value(rows, 0, 2), "t") == 0)
		r = api_error(rs, 409, "pipeline_in_use", NULL,
		    "%s schedule(s) run this pipeline: change or delete them "
		    "first",
		    db_rows_value(rows, 0, 1));
	else
		r = no_pipeline(rs);
	db_rows_free(rows);
	return r;
}
