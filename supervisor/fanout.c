/*
 * fanout.c: the supervisor's side of fan-out (docs/orchestration.md,
 * "Fan-out"; sql/013_fanout.sql).  A slot whose agent target has a
 * data-source param is a fanout attempt: right after the claim's commit,
 * in the claim's task, its string is compiled against the admin's
 * registration (common/datasource.c) and read as the read-only role in
 * one snapshot, within the time limit; then one transaction writes the
 * plan (a job per value, each batch ready at its planned start) and
 * leaves the attempt waiting, without a lease, for its jobs.  The claim
 * starts those jobs as their time comes (claim_jobs); the end of each
 * attempt decides whether its job goes again (job_next()), and the end
 * of the last job settles the execution, which reports the fanout
 * attempt back to a supervisor (claim_reports) to end it as the
 * execution ended.  An expansion that fails ends its attempt as failed,
 * and its execution with the error.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cronvisord.h"

/* runs.kind as enum run_kind. */
enum run_kind
run_kind_parse(const char *s)
{
	if (s != NULL && strcmp(s, "fanout") == 0)
		return KIND_FANOUT;
	if (s != NULL && strcmp(s, "job") == 0)
		return KIND_JOB;
	return KIND_SLOT;
}

/*
 * Ends fanout attempt j without a runner, as failed (retryable 1 or not
 * 0) with why, or as interrupted (retryable 2: the database failed, the
 * slot goes again at once without spending a retry): its end is written
 * as any run's (finish.c), and its execution fails with the same error
 * unless it goes again (fanout_ended).
 */
static void expand_failed(struct job *j, int retryable, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void
expand_failed(struct job *j, int retryable, const char *fmt, ...)
{
	va_list ap;

	j->adopted = 1;
	j->fs = FRAME_OK;
	result_init(&j->res);
	j->res.status = RESULT_FAILED;
	memset(&j->verdict, 0, sizeof(j->verdict));
	/* The database failed under it: again at once, not counted. */
	j->verdict.status = retryable == 2 ? RUN_INTERRUPTED : RUN_FAILED;
	j->verdict.retryable = retryable != 0;
	va_start(ap, fmt);
	vsnprintf(j->verdict.error, sizeof(j->verdict.error), fmt, ap);
	va_end(ap);
	finish_text(j->verdict.error, strlen(j->verdict.error));
	log_warnx(
	    "run %s schedule \"%s\": %s", j->run_id, j->name, j->verdict.error);
}

/*
 * The values of d (the string of param field) for j's owner, read as the
 * read-only role in one snapshot within the time limit: a JSON array text of at
 * most limit + 1 values
 * (*n of them) in *out, or NULL after expand_failed() (or with err set
 * and *dberr on a database failure).
 */
static char *
read_values(struct db *db, const struct config *cf, struct job *j,
    const struct ds_spec *d, const char *field, int64_t *n, int *dberr,
    char *err, size_t errlen)
{
	struct ds_column cbuf[DS_COLUMNS_MAX];
	const char *p[2] = {d->table, j->owner};
	struct ds_query q = {0};
	struct ds_table t;
	struct db_rows *reg, *rows = NULL;
	json_t *cols = NULL;
	char why[CV_ERRLEN], ms[24], *out = NULL;
	const char *role[2] = {cf->datasource_role, ms};
	size_t len = 2, at = 0;
	int64_t tmo = cf->datasource_timeout_ms;

	*dberr = 0;
	if ((reg = db_query(db, SQL_fanout_source, 2, p, err, errlen)) ==
	    NULL) {
		*dberr = 1;
		return NULL;
	}
	if (db_rows_count(reg) == 0) {
		expand_failed(j, 0, "%s: table \"%s\" is not registered", field,
		    d->table);
		goto out;
	}
	cols = json_loads(db_rows_value(reg, 0, 2), 0, NULL);
	if (ds_table_load(&t, cbuf, d->table, db_rows_value(reg, 0, 0),
	        db_rows_value(reg, 0, 1), cols) == -1) {
		expand_failed(j, 0,
		    "%s: the registration of \"%s\" cannot be "
		    "read",
		    field, d->table);
		goto out;
	}
	if (ds_compile(d, &t, cf->datasource_row_limit, &q, why, sizeof(why)) ==
	    -1) {
		expand_failed(j, 0, "%s: %s", field, why);
		goto out;
	}
	/* The supervisor waits db_timeout_ms for any answer. */
	if (tmo > cf->db_timeout_ms)
		tmo = cf->db_timeout_ms;
	snprintf(ms, sizeof(ms), "%lld", (long long)tmo);
	if (db_exec(db, SQL_datasources_snapshot, 0, NULL, why, sizeof(why)) ==
	        -1 ||
	    db_exec(db, SQL_datasources_as_reader, 2, role, why, sizeof(why)) ==
	        -1 ||
	    (rows = db_query(db, q.sql, q.nparams,
	         (const char *const *)q.params, why, sizeof(why))) == NULL) {
		const char *state = db_sqlstate(db);

		if (db_error(db) == DB_ERR_CONNECTION) {
			snprintf(err, errlen, "%s", why);
			*dberr = 1;
		} else {
			/* A timeout may pass; a table changed will not. */
			expand_failed(j,
			    state != NULL && strcmp(state, "57014") == 0,
			    "%s: the query of %s failed: %s", field, d->table,
			    why);
		}
		db_rollback(db);
		goto out;
	}
	db_rollback(db);
	*n = db_rows_count(rows);
	for (int64_t i = 0; i < *n; i++)
		len += strlen(db_rows_value(rows, (int)i, 0)) + 1;
	if ((out = malloc(len + 1)) == NULL) {
		log_errbuf(err, errlen, "out of memory");
		*dberr = 1;
		goto out;
	}
	out[at++] = '[';
	for (int64_t i = 0; i < *n; i++) {
		const char *v = db_rows_value(rows, (int)i, 0);
		size_t vl = strlen(v);

		if (i > 0)
			out[at++] = ',';
		memcpy(out + at, v, vl);
		at += vl;
	}
	out[at++] = ']';
	out[at] = '\0';
out:
	ds_query_clear(&q);
	db_rows_free(rows);
	db_rows_free(reg);
	json_decref(cols);
	return out;
}

/*
 * Writes the plan of fanout attempt j (values, the JSON array of n of
 * them, for param, NULL for none; meta its metadata members) and leaves
 * it waiting, in one transaction: a job per value, or for a pipeline's
 * (pipeline its id, steps its plan's steps: pipeline_plan_steps()) a
 * job per value and step, the contexts of a retry decided again.  An
 * execution with nothing left to do settles at once.  0, or -1 with err
 * set.
 */
static int
write_plan(struct db *db, int64_t lease, struct job *j, const char *values,
    const char *param, int64_t batch, int64_t stagger, json_t *meta,
    const char *output, const char *pipeline, json_t *steps, char *err,
    size_t errlen)
{
	char l[24], b[24], st[24],
	    *m = json_dumps(meta, JSON_COMPACT),
	    *sp = steps ? json_dumps(steps, JSON_COMPACT) : NULL;
	const char *p[10] = {
	    j->run_id, l, values, param, b, st, m, output, sp, pipeline};
	struct db_rows *rows = NULL;
	json_t *xs;
	int r = -1;

	snprintf(l, sizeof(l), "%lld", (long long)lease);
	snprintf(b, sizeof(b), "%lld", (long long)batch);
	snprintf(st, sizeof(st), "%lld", (long long)stagger);
	if (m == NULL || (steps != NULL && sp == NULL)) {
		log_errbuf(err, errlen, "out of memory");
		goto out;
	}
	if (db_begin(db, err, errlen) == -1)
		goto out;
	if ((rows = db_query(db, SQL_fanout_plan, 10, p, err, errlen)) == NULL)
		goto fail;
	if (db_rows_count(rows) == 0 ||
	    strcmp(db_rows_value(rows, 0, 2), "1") != 0) {
		/* No longer ours: a peer declared it lost meanwhile. */
		db_rollback(db);
		log_warnx("run %s: no longer ours (lease lost); its expansion "
		          "is not written",
		    j->run_id);
		r = 0;
		goto out;
	}
	/* A retry of the slot: its contexts are decided again. */
	if (steps != NULL && strcmp(db_rows_value(rows, 0, 3), "0") != 0 &&
	    pipeline_advance(db,
	        json_pack("[{s:s, s:n}]", "x", db_rows_value(rows, 0, 0), "c"),
	        err, errlen) == -1)
		goto fail;
	xs = json_pack("[s]", db_rows_value(rows, 0, 0));
	if (xs == NULL ||
	    fanout_settle(db, xs, json_array(), err, errlen) == -1)
		goto fail;
	r = db_commit(db, err, errlen);
	goto out;
fail:
	db_rollback(db);
out:
	db_rows_free(rows);
	free(m);
	free(sp);
	return r;
}

/*
 * The pipeline of j's target t, for its plan: its graph into g, its
 * plan's steps (pipeline_plan_steps()) and its metadata into meta
 * (member "pipeline").  The steps, or NULL after expand_failed() (or
 * with err set and *dberr on a database failure).
 */
static json_t *
load_pipeline(struct db *db, struct job *j, json_t *t, struct dag *g,
    json_t *meta, int *dberr, char *err, size_t errlen)
{
	const char *p[3] = {j->owner,
	    json_string_value(json_object_get(t, "pipeline")), j->run_id};
	struct db_rows *rows;
	json_t *steps = NULL, *plan = NULL;
	int ff;

	*dberr = 0;
	if (p[1] == NULL) {
		expand_failed(j, 0, "target.pipeline: missing");
		return NULL;
	}
	if ((rows = db_query(db, SQL_fanout_pipeline, 3, p, err, errlen)) ==
	    NULL) {
		*dberr = 1;
		return NULL;
	}
	if (db_rows_count(rows) == 0) {
		expand_failed(j, 0,
		    "target.pipeline: owner %s has no pipeline "
		    "\"%s\" (deleted since the schedule was saved)",
		    j->owner, p[1]);
		goto out;
	}
	if (strcmp(db_rows_value(rows, 0, 2), "t") != 0) {
		expand_failed(
		    j, 0, "target.pipeline: pipeline \"%s\" is disabled", p[1]);
		goto out;
	}
	ff = strcmp(db_rows_value(rows, 0, 1), "t") == 0;
	steps = json_loads(db_rows_value(rows, 0, 0), 0, NULL);
	if (steps == NULL || dag_load(g, steps, ff) == -1) {
		expand_failed(j, 0,
		    "target.pipeline: the steps of pipeline \"%s\" cannot be "
		    "read",
		    p[1]);
		goto out;
	}
	if ((plan = pipeline_plan_steps(g, steps)) == NULL ||
	    json_object_set_new(meta, "pipeline",
	        json_pack("{s:s, s:b, s:O}", "pipeline_id", p[1], "fail_fast",
	            ff, "steps", steps)) == -1) {
		json_decref(plan);
		plan = NULL;
		log_errbuf(err, errlen, "out of memory");
		*dberr = 1;
	}
out:
	json_decref(steps);
	db_rows_free(rows);
	return plan;
}

/*
 * Expands fanout attempt j: 1 when its plan is written (the attempt
 * waits in the database: the caller drops j), 0 when it failed (j ends
 * without a runner, failed), -1 on a database failure (err set; j ends
 * as failed, retryable, and its result waits to be written like any).
 * An agent target expands its data-source param into a job per value; a
 * pipeline target into a context per value (one without such a param),
 * and in each a job per step.
 */
static int
expand(struct db *db, const struct config *cf, int64_t lease, struct job *j,
    char *err, size_t errlen)
{
	json_t *t = json_loads(j->fan_target, 0, NULL), *params, *v,
	       *meta = json_object(), *steps = NULL, *pl;
	const char *k, *key = NULL, *src = NULL, *pid = NULL;
	struct ds_spec d = {0};
	struct dag *g = NULL;
	char why[CV_ERRLEN], field[160], out[256], *values = NULL;
	int64_t n = 1, batch = 1, stagger = 0, batches = 1;
	int dberr = 0, r = 0;

	if (meta == NULL) {
		expand_failed(j, 2, "out of memory");
		r = -1;
		goto out;
	}
	params = json_object_get(t, "params");
	json_object_foreach(params, k, v)
	{
		if (!ds_is_source(json_string_value(v)))
			continue;
		if (key != NULL) {
			expand_failed(j, 0,
			    "target.params: %s and %s are both data-source "
			    "strings; a schedule expands one param",
			    key, k);
			goto out;
		}
		key = k;
		src = json_string_value(v);
	}
	if (strcmp(json_string_value(json_object_get(t, "type"))
	            ? json_string_value(json_object_get(t, "type"))
	            : "",
	        "pipeline") == 0) {
		pid = json_string_value(json_object_get(t, "pipeline"));
		if ((g = malloc(sizeof(*g))) == NULL ||
		    (steps = load_pipeline(
		         db, j, t, g, meta, &dberr, err, errlen)) == NULL) {
			if (g == NULL || dberr) {
				expand_failed(j, 2, "the pipeline of %s: %s",
				    j->run_id, g ? err : "out of memory");
				r = -1;
			}
			goto out;
		}
	}
	if (key == NULL && steps == NULL) {
		expand_failed(j, 0, "target.params: no data-source string");
		goto out;
	}
	if (key != NULL) {
		snprintf(field, sizeof(field), "target.params.%s", key);
		if (ds_parse(src, &d, why, sizeof(why)) == -1) {
			expand_failed(j, 0, "%s: %s", field, why);
			goto out;
		}
		values =
		    read_values(db, cf, j, &d, field, &n, &dberr, err, errlen);
		if (values == NULL) {
			if (dberr) {
				expand_failed(j, 2, "the expansion of %s: %s",
				    field, err);
				r = -1;
			}
			goto out;
		}
		if (n > cf->datasource_row_limit) {
			expand_failed(j, 0,
			    "%s: %s has more than %lld values "
			    "(datasource_row_limit)",
			    field, d.table,
			    (long long)cf->datasource_row_limit);
			goto out;
		}
		batch = d.batch_size > 0 ? d.batch_size : cf->fanout_batch_size;
		stagger =
		    d.stagger_ms >= 0 ? d.stagger_ms : cf->fanout_stagger_ms;
		batches = (n + batch - 1) / batch;
		if (json_object_set_new(meta, "fanout",
		        json_pack(
		            "{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:o, s:o}",
		            "param", key, "source", src, "table", d.table,
		            "field", d.field, "values", (json_int_t)n,
		            "batches", (json_int_t)batches, "batch_size",
		            (json_int_t)batch, "stagger_ms",
		            (json_int_t)stagger, "max_failures",
		            batch_int(d.max_failures, d.max_failures < 0),
		            "max_failures_percent",
		            batch_int(d.max_failures_pct,
		                d.max_failures_pct < 0))) == -1) {
			expand_failed(j, 2, "out of memory");
			r = -1;
			goto out;
		}
		snprintf(out, sizeof(out),
		    "%s expanded to %lld values in %lld batches of %lld, %lld "
		    "ms apart",
		    key, (long long)n, (long long)batches, (long long)batch,
		    (long long)stagger);
	} else {
		snprintf(field, sizeof(field), "target.pipeline");
		snprintf(out, sizeof(out), "pipeline %s: one context", pid);
	}
	if ((pl = json_object_get(meta, "pipeline")) != NULL) {
		json_object_set_new(pl, "contexts", json_integer(n));
		if (key != NULL) {
			size_t o = strlen(out);

			snprintf(out + o, sizeof(out) - o,
			    "; pipeline %s: a context each", pid);
		}
	}
	if (write_plan(db, lease, j, values ? values : "[null]", key, batch,
	        stagger, meta, out, pid, steps, err, errlen) == -1) {
		expand_failed(
		    j, 2, "the plan of %s cannot be written: %s", field, err);
		r = -1;
	} else {
		log_info("run %s schedule \"%s\": %s", j->run_id, j->name, out);
		r = 1;
	}
out:
	free(values);
	free(g);
	ds_spec_clear(&d);
	json_decref(steps);
	json_decref(meta);
	json_decref(t);
	return r;
}

/*
 * Expands the fanout attempts of the list *jobs (a claim's, just
 * committed), in the claim's task, one after the other, between() before
 * each (the heartbeat, when due: an expansion may take up to the query's
 * time limit; -1 stops them): those whose plan is written leave the list
 * (their attempts wait in the database); the others stay on it, ended.
 * 0, or -1 with err set on a database failure (the rest stay on the
 * list, interrupted: their slots go again).
 */
int
fanout_expand(struct db *db, const struct config *cf, int64_t lease,
    struct job **jobs, int (*between)(void), char *err, size_t errlen)
{
	struct job **pp = jobs, *j;
	int r = 0;

	while ((j = *pp) != NULL) {
		int e = 0;

		if (j->kind != KIND_FANOUT || j->adopted) {
			pp = &j->next;
			continue;
		}
		if (r == 0 && between() == -1) {
			snprintf(err, errlen,
			    "the supervisor lost its database or its lease");
			r = -1;
		}
		if (r == 0)
			e = expand(db, cf, lease, j, err, errlen);
		else
			expand_failed(
			    j, 2, "the expansion could not run: %s", err);
		if (e == 1) {
			*pp = j->next;
			job_free(j);
			continue;
		}
		if (e == -1)
			r = -1;
		pp = &j->next;
	}
	return r;
}

/*
 * Settles the executions xs (a JSON array of ids) after their jobs
 * failed (a JSON array of ids, failed for good) or ended: both arrays
 * are released.  0, or -1 with err set.
 */
int
fanout_settle(
    struct db *db, json_t *xs, json_t *failed, char *err, size_t errlen)
{
	char *a = json_dumps(xs, JSON_COMPACT),
	     *b = json_dumps(failed, JSON_COMPACT);
	const char *p[2] = {a, b};
	int r = -1;

	if (a == NULL || b == NULL)
		log_errbuf(err, errlen, "out of memory");
	else
		r = db_exec(db, SQL_fanout_settle, 2, p, err, errlen);
	json_decref(xs);
	json_decref(failed);
	free(a);
	free(b);
	return r == -1 ? -1 : 0;
}

/*
 * fanout_settle() of rows whose columns are an execution, a job and
 * whether it failed for good.  0, or -1 with err set.
 */
int
fanout_settle_rows(
    struct db *db, const struct db_rows *rows, char *err, size_t errlen)
{
	json_t *xs = json_array(), *failed = json_array(), *x;
	int n = db_rows_count(rows);

	for (int i = 0; i < n && xs && failed; i++) {
		const char *id = db_rows_value(rows, i, 0);
		size_t k, dup = 0;

		json_array_foreach(xs, k, x) dup |=
		    strcmp(json_string_value(x), id) == 0;
		if (!dup && json_array_append_new(xs, json_string(id)) == -1)
			break;
		if (strcmp(db_rows_value(rows, i, 2), "t") == 0 &&
		    json_array_append_new(
		        failed, json_string(db_rows_value(rows, i, 1))) == -1)
			break;
	}
	if (xs == NULL || failed == NULL) {
		json_decref(xs);
		json_decref(failed);
		return log_errbuf(err, errlen, "out of memory");
	}
	return fanout_settle(db, xs, failed, err, errlen);
}

/*
 * What follows attempt j of a fan-out job under pol (its schedule's; a
 * pipeline step's own retry, if it has one, instead):
 * {id, again, delay, spent} for finish_jobs.  A failure counts toward
 * max_retries (a result marked not retryable spends them all); an
 * interrupted attempt (a supervisor stopped) goes again at once without
 * counting, as a slot's does.
 */
json_t *
fanout_next(const struct job *j, const struct retry_policy *pol)
{
	int64_t spent = j->spent, delay = 0;
	int again = 0;

	switch (run_status_outcome(j->verdict.status)) {
	case OUTCOME_SUCCESS:
	case OUTCOME_SKIPPED:
		break;
	case OUTCOME_INTERRUPTED:
		again = 1;
		break;
	case OUTCOME_FAILURE:
	case OUTCOME_TIMEOUT:
	case OUTCOME_LOST:
		spent++;
		if (j->own_retry) {
			/* A step's: its delay in ms, else the schedule's. */
			struct retry_policy own = j->retry;

			if (own.delay < 0)
				own.delay =
				    pol != NULL ? pol->delay * 1000 : 60000;
			again =
			    j->verdict.retryable && spent <= own.max_retries;
			if (again)
				delay = retry_backoff(&own, spent);
		} else {
			again = j->verdict.retryable && pol != NULL &&
			    spent <= pol->max_retries;
			if (again)
				delay = retry_backoff(pol, spent) * 1000;
		}
		if (again && j->fs == FRAME_OK &&
		    j->res.retry_after * 1000 > delay)
			delay = j->res.retry_after * 1000;
		break;
	}
	return json_pack("{s:s, s:b, s:I, s:I}", "id", j->run_id, "again",
	    again, "delay", (json_int_t)delay, "spent", (json_int_t)spent);
}
