/*
 * datasources.c: the tables data-source strings may read, and the preview
 * of a string (docs/orchestration.md, "Fan-out").  An admin registers a
 * table or view: the database is asked whether it exists, which columns
 * it has, their types and quoted names, and whether the read-only role
 * (datasource_role) may read each; only what it says is stored, and only
 * that reaches a query (common/datasource.c).  A preview runs the string's
 * query as that role, read only, in one snapshot, within
 * datasource_timeout_ms, and shows what a firing would expand to.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"

#define PREVIEW_SAMPLE 20 /* values and batches a preview shows */

/* The owner whose registrations the caller may use; NULL: an admin's. */
static const char *
scope(const struct request *rq)
{
	return rq->who.role == ROLE_ADMIN ? NULL : rq->who.owner;
}

/* A datasource row (the {{datasources_row}} columns) as the API shows it. */
static json_t *
row_json(const struct db_rows *rows, int i)
{
	json_t *cols = json_loads(
	    db_rows_value(rows, i, DATASOURCES_ROW_COL_COLUMNS), 0, NULL);
	json_t *owners = json_loads(
	    db_rows_value(rows, i, DATASOURCES_ROW_COL_OWNERS), 0, NULL);
	json_t *c;
	size_t k;

	/* The quoted identifier is the server's business, not the caller's. */
	json_array_foreach(cols, k, c)
	{
		json_object_del(c, "sql");
	}
	return json_pack("{s:s, s:s, s:s, s:s, s:o?, s:o?, s:s, s:s, s:s}",
	    "name", db_rows_value(rows, i, DATASOURCES_ROW_COL_NAME),
	    "relation",
	    db_rows_value(rows, i, DATASOURCES_ROW_COL_RELATION_SQL), "given",
	    db_rows_value(rows, i, DATASOURCES_ROW_COL_RELATION), "key",
	    db_rows_value(rows, i, DATASOURCES_ROW_COL_KEY), "columns", cols,
	    "owners", owners, "description",
	    db_rows_value(rows, i, DATASOURCES_ROW_COL_DESCRIPTION),
	    "created_by",
	    db_rows_value(rows, i, DATASOURCES_ROW_COL_CREATED_BY),
	    "created_at",
	    db_rows_value(rows, i, DATASOURCES_ROW_COL_CREATED_AT));
}

/* GET /data-sources: the registrations the caller may use, by name. */
int
datasources_list(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	const char *p[1] = {scope(rq)};
	struct db_rows *rows;
	json_t *list;

	if (query_check(rq->query, (const char *const[]){NULL}, rs) == -1)
		return 0;
	if ((rows = db_query(
	         rq->db, SQL_datasources_list, 1, p, err, errlen)) == NULL)
		return API_DB_FAILED;
	if ((list = json_array()) == NULL) {
		db_rows_free(rows);
		return -1;
	}
	for (int i = 0; i < db_rows_count(rows); i++)
		if (json_array_append_new(list, row_json(rows, i)) == -1) {
			json_decref(list);
			db_rows_free(rows);
			return -1;
		}
	db_rows_free(rows);
	return api_json(rs, 200, json_pack("{s:o}", "data_sources", list));
}

/* The registration named name that the caller may use, or NULL (rows). */
static struct db_rows *
load(struct request *rq, const char *name, char *err, size_t errlen)
{
	const char *p[2] = {name, scope(rq)};

	return db_query(rq->db, SQL_datasources_get, 2, p, err, errlen);
}

static int
no_source(struct response *rs)
{
	return api_error(rs, 404, "not_found", NULL, "no such data source");
}

/* GET /data-sources/{name} */
int
datasources_get(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	struct db_rows *rows;
	int r;

	if (query_check(rq->query, (const char *const[]){NULL}, rs) == -1)
		return 0;
	if ((rows = load(rq, rq->segs[1], err, errlen)) == NULL)
		return API_DB_FAILED;
	r = db_rows_count(rows) == 0 ? no_source(rs)
	                             : api_json(rs, 200, row_json(rows, 0));
	db_rows_free(rows);
	return r;
}

/* DELETE /data-sources/{name} (an admin's) */
int
datasources_delete(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	const char *p[1] = {rq->segs[1]};
	struct db_rows *rows;
	int n;

	if (query_check(rq->query, (const char *const[]){NULL}, rs) == -1)
		return 0;
	if ((rows = db_query(
	         rq->db, SQL_datasources_delete, 1, p, err, errlen)) == NULL)
		return API_DB_FAILED;
	n = db_rows_count(rows);
	db_rows_free(rows);
	if (n == 0)
		return no_source(rs);
	rs->status = 204;
	return 0;
}

/*
 * The registered columns of doc, checked against what the database has
 * (cols: datasources_columns): each gets its "sql" (quoted) and "type".
 * 0, or 1 after answering 400 naming the column.
 */
static int
resolve_columns(const struct request *rq, struct response *rs, json_t *doc,
    const char *relation, const struct db_rows *cols)
{
	size_t i;
	json_t *c;

	json_array_foreach(json_object_get(doc, "columns"), i, c)
	{
		const char *want =
		    json_string_value(json_object_get(c, "column"));
		char field[32];
		int k, n = db_rows_count(cols);

		snprintf(field, sizeof(field), "columns[%zu]", i);
		for (k = 0; k < n && strcmp(db_rows_value(cols, k, 0), want);
		     k++)
			;
		if (k == n)
			return api_error(rs, 400, "invalid_field", field,
			           "%s has no column \"%s\"", relation, want),
			       1;
		if (strcmp(db_rows_value(cols, k, 3), "t") != 0)
			return api_error(rs, 400, "invalid_field", field,
			           "the role %s may not read %s.%s: GRANT "
			           "SELECT (%s) ON %s TO %s first",
			           rq->cf->datasource_role, relation,
			           db_rows_value(cols, k, 1),
			           db_rows_value(cols, k, 1), relation,
			           rq->cf->datasource_role),
			       1;
		if (json_object_set_new(c, "sql",
		        json_string(db_rows_value(cols, k, 1))) == -1 ||
		    json_object_set_new(c, "type",
		        json_string(db_rows_value(cols, k, 2))) == -1)
			return -1;
	}
	return 0;
}

/* POST /data-sources: an admin registers a table or view. */
int
datasources_create(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	const char *p[8];
	char by[API_OWNER_MAX * 4 + 40], *cols_text = NULL, *owners_text = NULL;
	struct schedule_error e;
	struct db_rows *rel = NULL, *cols = NULL, *rows = NULL;
	json_t *doc;
	int r = 0;

	if (query_check(rq->query, (const char *const[]){NULL}, rs) == -1 ||
	    api_no_body(rq, rs))
		return 0;
	if ((doc = ds_registration_parse(rq->body, rq->body_len, &e)) == NULL)
		return api_doc_error(rs, &e);
	p[0] = json_string_value(json_object_get(doc, "relation"));
	p[1] = rq->cf->datasource_role;
	if ((rel = db_query(rq->db, SQL_datasources_relation, 2, p, err,
	         errlen)) == NULL) {
		r = API_DB_FAILED;
		goto out;
	}
	if (db_rows_count(rel) == 0) {
		r = api_error(rs, 400, "invalid_field", "relation",
		    "no table or view \"%s\"", p[0]);
		goto out;
	}
	if (strchr("rvmpf", db_rows_value(rel, 0, 2)[0]) == NULL) {
		r = api_error(rs, 400, "invalid_field", "relation",
		    "%s is not a table or a view", db_rows_value(rel, 0, 1));
		goto out;
	}
	if (strcmp(db_rows_value(rel, 0, 3), "t") != 0) {
		r = api_error(rs, 400, "invalid_field", NULL,
		    "the role %s (datasource_role) does not exist: create it "
		    "and grant it to the database user (docs/orchestration.md)",
		    rq->cf->datasource_role);
		goto out;
	}
	p[0] = db_rows_value(rel, 0, 0);
	if ((cols = db_query(
	         rq->db, SQL_datasources_columns, 2, p, err, errlen)) == NULL) {
		r = API_DB_FAILED;
		goto out;
	}
	if ((r = resolve_columns(
	         rq, rs, doc, db_rows_value(rel, 0, 1), cols)) != 0) {
		r = r == 1 ? 0 : r;
		goto out;
	}
	cols_text = json_dumps(json_object_get(doc, "columns"), JSON_COMPACT);
	owners_text = json_dumps(json_object_get(doc, "owners"), JSON_COMPACT);
	if (cols_text == NULL || owners_text == NULL) {
		r = -1;
		goto out;
	}
	api_whom(rq, by, sizeof(by));
	p[0] = json_string_value(json_object_get(doc, "name"));
	p[1] = json_string_value(json_object_get(doc, "relation"));
	p[2] = db_rows_value(rel, 0, 1);
	p[3] = json_string_value(json_object_get(doc, "key"));
	p[4] = cols_text;
	p[5] = owners_text;
	p[6] = json_string_value(json_object_get(doc, "description"));
	p[7] = by;
	if ((rows = db_query(
	         rq->db, SQL_datasources_insert, 8, p, err, errlen)) == NULL)
		r = API_DB_FAILED;
	else if (db_rows_count(rows) == 0)
		r = api_error(rs, 409, "conflict", "name",
		    "a data source \"%s\" is registered already", p[0]);
	else
		r = api_json(rs, 201, row_json(rows, 0));
out:
	free(cols_text);
	free(owners_text);
	db_rows_free(rel);
	db_rows_free(cols);
	db_rows_free(rows);
	json_decref(doc);
	return r;
}

/* --- the preview ------------------------------------------------------------
 */

/*
 * Runs q as the read-only role, in one read-only snapshot, within the
 * time limit: its rows, or NULL with err set (the transaction is over
 * either way).  in_txn: inside the caller's transaction instead, in a
 * savepoint rolled back after (the role and time limit with it).
 */
static struct db_rows *
run_as_reader(struct request *rq, const struct ds_query *q, int in_txn,
    char *err, size_t errlen)
{
	char ms[24], back[CV_ERRLEN];
	const char *p[2] = {rq->cf->datasource_role, ms};
	struct db_rows *rows = NULL;

	snprintf(
	    ms, sizeof(ms), "%lld", (long long)rq->cf->datasource_timeout_ms);
	if (db_exec(rq->db,
	        in_txn ? SQL_datasources_savepoint : SQL_datasources_snapshot,
	        0, NULL, err, errlen) == -1)
		return NULL;
	if (db_exec(rq->db, SQL_datasources_as_reader, 2, p, err, errlen) != -1)
		rows = db_query(rq->db, q->sql, q->nparams,
		    (const char *const *)q->params, err, errlen);
	if (!in_txn)
		db_rollback(rq->db);
	else if (db_exec(rq->db, SQL_datasources_back, 0, NULL, back,
	             sizeof(back)) == -1) {
		db_rows_free(rows);
		snprintf(err, errlen, "the check cannot be undone");
		return NULL;
	}
	return rows;
}

/* The preview's answer: the values' count, a sample, the batches. */
static json_t *
preview_json(const struct ds_spec *d, const struct db_rows *rows, int64_t limit,
    int64_t batch, int64_t stagger)
{
	int64_t n = db_rows_count(rows), count = n > limit ? limit : n;
	int64_t batches = (count + batch - 1) / batch;
	json_t *sample = json_array(), *plan = json_array();

	for (int64_t i = 0; i < count && i < PREVIEW_SAMPLE; i++)
		json_array_append_new(sample,
		    json_loads(
		        db_rows_value(rows, (int)i, 0), JSON_DECODE_ANY, NULL));
	for (int64_t k = 0; k < batches && k < PREVIEW_SAMPLE; k++)
		json_array_append_new(plan,
		    json_pack("{s:I, s:I, s:I}", "batch", (json_int_t)k,
		        "offset_ms", (json_int_t)(k * stagger), "jobs",
		        (json_int_t)(count - k * batch < batch
		                ? count - k * batch
		                : batch)));
	return json_pack("{s:s, s:s, s:I, s:b, s:I, s:o, s:I, s:I, s:I, s:o}",
	    "table", d->table, "field", d->field, "count", (json_int_t)count,
	    "over_limit", n > limit, "limit", (json_int_t)limit, "sample",
	    sample, "batch_size", (json_int_t)batch, "stagger_ms",
	    (json_int_t)stagger, "batches", (json_int_t)batches, "plan", plan);
}

/*
 * The preview of data-source string src for the caller (field names it in
 * errors), the batches planned from fire_ms (epoch ms of the firing; < 0:
 * none, offsets only): 0 with *out, or after answering 400 (*out NULL),
 * or API_DB_FAILED / -1.  With owner, the check of a schedule being saved
 * for that owner, in the caller's transaction: its query reads one row.
 */
static int
preview_of(struct request *rq, struct response *rs, const char *src,
    const char *field, const char *owner, int64_t fire_ms, json_t **out,
    char *err, size_t errlen)
{
	const char *lp[2] = {NULL, owner ? owner : scope(rq)};
	struct ds_column cbuf[DS_COLUMNS_MAX];
	struct ds_spec d = {0};
	struct ds_query q = {0};
	struct ds_table t;
	struct db_rows *reg = NULL, *rows = NULL;
	json_t *cols = NULL, *p, *plan;
	char why[256], at[40];
	size_t k;
	int r = 0;

	*out = NULL;
	if (ds_parse(src, &d, why, sizeof(why)) == -1) {
		r = api_error(rs, 400, "invalid_field", field, "%s", why);
		goto out;
	}
	lp[0] = d.table;
	if ((reg = db_query(rq->db, SQL_datasources_get, 2, lp, err, errlen)) ==
	    NULL) {
		r = API_DB_FAILED;
		goto out;
	}
	if (db_rows_count(reg) == 0) {
		r = api_error(rs, 400, "invalid_field", field,
		    "table \"%s\" is not registered", d.table);
		goto out;
	}
	cols = json_loads(
	    db_rows_value(reg, 0, DATASOURCES_ROW_COL_COLUMNS), 0, NULL);
	if (ds_table_load(&t, cbuf,
	        db_rows_value(reg, 0, DATASOURCES_ROW_COL_NAME),
	        db_rows_value(reg, 0, DATASOURCES_ROW_COL_RELATION_SQL),
	        db_rows_value(reg, 0, DATASOURCES_ROW_COL_KEY), cols) == -1) {
		r = -1;
		goto out;
	}
	/* A check (owner given: a schedule being saved) reads one row. */
	if (ds_compile(&d, &t, owner ? 0 : rq->cf->datasource_row_limit, &q,
	        why, sizeof(why)) == -1) {
		r = api_error(rs, 400, "invalid_field", field, "%s", why);
		goto out;
	}
	if ((rows = run_as_reader(rq, &q, owner != NULL, why, sizeof(why))) ==
	    NULL) {
		/* The table changed since it was registered, the role lost
		 * its grant, or the time ran out: the caller's to know. */
		r = api_error(rs, 400, "source_failed", field,
		    "the query of %s failed: %s", d.table, why);
		goto out;
	}
	*out = preview_json(&d, rows, rq->cf->datasource_row_limit,
	    d.batch_size > 0 ? d.batch_size : rq->cf->fanout_batch_size,
	    d.stagger_ms >= 0 ? d.stagger_ms : rq->cf->fanout_stagger_ms);
	if (*out == NULL) {
		r = -1;
		goto out;
	}
	plan = json_object_get(*out, "plan");
	json_array_foreach(plan, k, p)
	{
		if (fire_ms < 0)
			break;
		timefmt_utc_ms(fire_ms +
		        json_integer_value(json_object_get(p, "offset_ms")),
		    at, sizeof(at));
		json_object_set_new(p, "starts_at", json_string(at));
	}
out:
	db_rows_free(rows);
	db_rows_free(reg);
	json_decref(cols);
	ds_query_clear(&q);
	ds_spec_clear(&d);
	return r;
}

/*
 * POST /data-sources/preview {"source": "db:…"}: what the string expands
 * to now, for the caller's owner, without creating anything.
 */
int
datasources_preview(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	struct schedule_error e;
	json_t *body, *out;
	const char *src;
	int r;

	if (query_check(rq->query, (const char *const[]){NULL}, rs) == -1 ||
	    api_no_body(rq, rs))
		return 0;
	if ((body = doc_load(rq->body, rq->body_len, &e)) == NULL)
		return api_doc_error(rs, &e);
	if (!json_is_object(body) || json_object_size(body) != 1 ||
	    (src = json_string_value(json_object_get(body, "source"))) ==
	        NULL) {
		json_decref(body);
		return api_error(rs, 400, "invalid_field", "source",
		    "expected {\"source\": \"db:<table>:<filter>:<field>\"}");
	}
	r = preview_of(rq, rs, src, "source", NULL, -1, &out, err, errlen);
	json_decref(body);
	return out ? api_json(rs, 200, out) : r;
}

/* --- a schedule's next firing ----------------------------------------------
 */

/*
 * The param of params whose value is a data-source string into *key
 * (NULL: none): 0, or -1 after answering 400 when two are (a schedule
 * expands one, docs/orchestration.md).
 */
static int
source_param(json_t *params, struct response *rs, const char **key)
{
	const char *k;
	json_t *v;

	*key = NULL;
	json_object_foreach(params, k, v)
	{
		if (!ds_is_source(json_string_value(v)))
			continue;
		if (*key != NULL) {
			api_error(rs, 400, "invalid_field", NULL,
			    "target.params: %s and %s are both data-source "
			    "strings; a schedule expands one param",
			    *key, k);
			return -1;
		}
		*key = k;
	}
	return 0;
}

/*
 * A schedule of owner being saved, in the caller's transaction: the
 * data-source param of its agent target (target), if any, compiles
 * against a registration the owner may use and its query runs as the
 * read-only role (one row read, in a savepoint).  0; 1 after answering
 * 400 naming the param (invalid_field, or source_failed when the query
 * fails); or API_DB_FAILED.
 */
int
datasources_refused(struct request *rq, struct response *rs, json_t *target,
    const char *owner, char *err, size_t errlen)
{
	json_t *params = json_object_get(target, "params"), *out = NULL;
	const char *key;
	char field[160];
	int r;

	if (source_param(params, rs, &key) == -1)
		return 1;
	if (key == NULL)
		return 0;
	snprintf(field, sizeof(field), "target.params.%s", key);
	r = preview_of(rq, rs, json_string_value(json_object_get(params, key)),
	    field, owner, -1, &out, err, errlen);
	if (r == API_DB_FAILED || r == -1)
		return r;
	json_decref(out);
	return out == NULL ? 1 : 0;
}

/*
 * What the next firing (at fire_ms) of a schedule whose target is target
 * would create: {"param": null, "jobs": 1} when no param of an agent
 * target is a data-source string, else that param's preview with the
 * planned start of each batch.  Two such params are refused: a schedule
 * expands one (docs/orchestration.md).
 */
static int
schedule_preview(struct request *rq, struct response *rs, json_t *target,
    int64_t fire_ms, json_t *fires, char *err, size_t errlen)
{
	json_t *params = json_object_get(target, "params"), *out = NULL;
	const char *key;
	char field[128], at[40] = "";
	int r;

	if (fire_ms >= 0)
		timefmt_utc_ms(fire_ms, at, sizeof(at));
	if (source_param(params, rs, &key) == -1) {
		json_decref(fires);
		return 0;
	}
	if (key == NULL)
		out = json_pack("{s:n, s:i, s:s?}", "param", "jobs", 1,
		    "first_fire", at[0] ? at : NULL);
	else {
		snprintf(field, sizeof(field), "target.params.%s", key);
		if ((r = preview_of(rq, rs,
		         json_string_value(json_object_get(params, key)), field,
		         NULL, fire_ms, &out, err, errlen)) != 0 ||
		    out == NULL) {
			json_decref(fires);
			return r;
		}
		json_object_set_new(out, "param", json_string(key));
		json_object_set_new(
		    out, "first_fire", at[0] ? json_string(at) : json_null());
	}
	if (out != NULL && fires != NULL)
		json_object_set_new(out, "next_fire_times", fires);
	else
		json_decref(fires);
	return out ? api_json(rs, 200, out) : -1;
}

/* POST /schedules/preview: a schedule document, not saved. */
int
schedules_preview(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	struct schedule_error e;
	struct schedule_doc d;
	struct timing tm;
	struct slot sl;
	int64_t fire = -1;
	char why[CV_ERRLEN];
	int r;

	if (query_check(rq->query, (const char *const[]){NULL}, rs) == -1 ||
	    api_no_body(rq, rs))
		return 0;
	if (schedule_parse(rq->body, rq->body_len, &d, &e) == -1)
		return api_doc_error(rs, &e);
	if (schedule_timing(&d, &tm, why, sizeof(why)) == 0 &&
	    schedule_first_slot(&d, (int64_t)time(NULL), &sl) == 1)
		fire = slot_ms(&tm, sl.at);
	r = schedule_preview(rq, rs, d.target, fire,
	    schedule_fire_times(
	        &d, (int64_t)time(NULL), NULL, API_PREVIEW_FIRES),
	    err, errlen);
	schedule_clear(&d);
	return r;
}

/* POST /schedules/{id}/preview: a saved schedule's next firing. */
int
schedules_preview_saved(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	char id[API_ID_LEN + 1];
	const char *p[2];
	struct db_rows *rows;
	json_t *target;
	int r;

	if (query_check(rq->query, (const char *const[]){NULL}, rs) == -1)
		return 0;
	if (rq->nsegs < 2 || api_parse_id(rq->segs[1], id) == -1)
		return api_error(
		    rs, 404, "not_found", NULL, "no such schedule");
	p[0] = id;
	p[1] = scope(rq);
	if ((rows = db_query(
	         rq->db, SQL_datasources_schedule, 2, p, err, errlen)) == NULL)
		return API_DB_FAILED;
	if (db_rows_count(rows) == 0) {
		db_rows_free(rows);
		return api_error(
		    rs, 404, "not_found", NULL, "no such schedule");
	}
	target = db_rows_value(rows, 0, 0)
	    ? json_loads(db_rows_value(rows, 0, 0), 0, NULL)
	    : NULL;
	r = schedule_preview(rq, rs, target,
	    db_rows_value(rows, 0, 1)
	        ? strtoll(db_rows_value(rows, 0, 1), NULL, 10)
	        : -1,
	    NULL, err, errlen);
	json_decref(target);
	db_rows_free(rows);
	return r;
}
