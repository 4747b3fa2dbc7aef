/*
 * pipeline.c: the supervisor's side of pipelines (docs/orchestration.md,
 * "When a pipeline runs"; sql/014_pipeline_runs.sql).  A pipeline's slot
 * expands as a fan-out's does (fanout.c): a context per value (or one),
 * and in each a job per step, written with the first decision of a
 * context (pipeline_plan_steps()).  Each time jobs of contexts end, the
 * transaction that writes their ends decides those contexts again
 * (pipeline_advance(), common/dag.c): the steps that may start now become
 * ready, at once (the supervisor claims them in the same turn, its peers
 * are woken), and those that never will are skipped with why.  The
 * executions are locked first, so that two supervisors ending two steps
 * of one context decide it one after the other, each seeing the other's
 * end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cronvisord.h"

/* Steps started by pipeline_advance_rows() since pipeline_started(). */
static int started;

/*
 * The steps of a pipeline's plan (fanout_plan's $9), from its
 * native steps and g (dag_load()ed from them): each step's step_id,
 * agent_id, params, timeout_ms and retry, with what the first decision of
 * a context makes of it: start true, or why it never runs.  NULL when out
 * of memory.
 */
json_t *
pipeline_plan_steps(const struct dag *g, json_t *steps)
{
	enum dag_state st[PIPELINE_STEPS_MAX];
	char(*why)[DAG_WHY_LEN] = calloc(PIPELINE_STEPS_MAX, DAG_WHY_LEN);
	int start[PIPELINE_STEPS_MAX];
	json_t *out = json_array(), *s;
	size_t i;

	if (why == NULL || out == NULL) {
		free(why);
		json_decref(out);
		return NULL;
	}
	for (int k = 0; k < g->nsteps; k++)
		st[k] = DAG_WAITING;
	(void)dag_advance(g, st, start, why);
	json_array_foreach(steps, i, s)
	{
		json_t *o = json_pack("{s:O, s:O, s:O?, s:O?, s:O?, s:b, s:s?}",
		    "step_id", json_object_get(s, "step_id"), "agent_id",
		    json_object_get(s, "agent_id"), "params",
		    json_object_get(s, "params"), "timeout_ms",
		    json_object_get(s, "timeout_ms"), "retry",
		    json_object_get(s, "retry"), "start", st[i] == DAG_RUNNING,
		    "why", st[i] == DAG_NOT_RUN ? why[i] : NULL);

		if (o == NULL || json_array_append_new(out, o) == -1) {
			json_decref(out);
			out = NULL;
			break;
		}
	}
	free(why);
	return out;
}

/* enum dag_state of a job's status and whether it is ready. */
static enum dag_state
state_of(const char *status, int ready)
{
	if (strcmp(status, "completed") == 0)
		return DAG_COMPLETED;
	if (strcmp(status, "failed") == 0)
		return DAG_FAILED;
	if (strcmp(status, "skipped") == 0)
		return DAG_NOT_RUN;
	if (strcmp(status, "running") == 0 || ready)
		return DAG_RUNNING;
	return DAG_WAITING;
}

/*
 * Decides the context of rows [from, to) (fanout_contexts', one context,
 * by step) under g, and appends to out a {id, why} per step it decided:
 * why null for a step that starts.  0, or -1 when out of memory or when
 * the rows are not g's steps.
 */
static int
decide(const struct dag *g, const struct db_rows *rows, int from, int to,
    json_t *out)
{
	enum dag_state st[PIPELINE_STEPS_MAX], was[PIPELINE_STEPS_MAX];
	const char *ids[PIPELINE_STEPS_MAX];
	char(*why)[DAG_WHY_LEN];
	int start[PIPELINE_STEPS_MAX], unsent[PIPELINE_STEPS_MAX], r = 0,
	                                                           failed = -1;

	if (to - from != g->nsteps)
		return -1;
	if ((why = calloc(PIPELINE_STEPS_MAX, DAG_WHY_LEN)) == NULL)
		return -1;
	for (int i = from; i < to; i++) {
		int k = (int)strtol(db_rows_value(rows, i, 2), NULL, 10);

		if (k != i - from) {
			free(why);
			return -1;
		}
		ids[k] = db_rows_value(rows, i, 3);
		st[k] = was[k] = state_of(db_rows_value(rows, i, 4),
		    strcmp(db_rows_value(rows, i, 5), "t") == 0);
		/* Ready (it counts as started) but never sent yet. */
		unsent[k] = st[k] == DAG_RUNNING &&
		    strcmp(db_rows_value(rows, i, 4), "pending") == 0 &&
		    strcmp(db_rows_value(rows, i, 6), "0") == 0;
		if (st[k] == DAG_FAILED && failed < 0)
			failed = k;
	}
	(void)dag_advance(g, st, start, why);
	/* fail_fast: a step not sent yet is not run either. */
	for (int k = 0; g->fail_fast && failed >= 0 && k < g->nsteps; k++)
		if (unsent[k]) {
			st[k] = DAG_NOT_RUN;
			was[k] = DAG_WAITING;
			snprintf(why[k], DAG_WHY_LEN,
			    "fail_fast: step %s failed", g->steps[failed].id);
		}
	for (int k = 0; k < g->nsteps && r == 0; k++) {
		json_t *o;

		if (was[k] != DAG_WAITING || st[k] == DAG_WAITING)
			continue;
		o = json_pack("{s:s, s:s?}", "id", ids[k], "why",
		    st[k] == DAG_NOT_RUN ? why[k] : NULL);
		if (o == NULL || json_array_append_new(out, o) == -1)
			r = -1;
	}
	free(why);
	return r;
}

/* The graph of execution x among graphs (fanout_graphs' rows), or -1. */
static int
graph_of(const struct db_rows *graphs, const char *x)
{
	for (int i = 0; i < db_rows_count(graphs); i++)
		if (strcmp(db_rows_value(graphs, i, 0), x) == 0)
			return i;
	return -1;
}

/*
 * Decides contexts again, in the caller's transaction, after steps of
 * theirs ended: ctxs a JSON array of {x: execution, c: context} (c null:
 * all of the execution's), released.  Executions that are not pipelines'
 * are left alone.  Returns how many steps started (the caller's claim
 * comes next, and peers are woken), or -1 with err set.
 */
int
pipeline_advance(struct db *db, json_t *ctxs, char *err, size_t errlen)
{
	json_t *xs = json_array(), *c, *out = json_array(), *steps = NULL;
	struct db_rows *graphs = NULL, *rows = NULL, *w = NULL;
	struct dag *g = malloc(sizeof(*g));
	char *a = NULL, *b = NULL, *o = NULL;
	const char *p[1];
	int r = -1, gi = -1, from = 0, n;
	size_t i;

	if (xs == NULL || out == NULL || g == NULL)
		goto oom;
	json_array_foreach(ctxs, i, c)
	{
		json_t *x = json_object_get(c, "x"), *y;
		size_t k;
		int dup = 0;

		json_array_foreach(xs, k, y) dup |= json_equal(x, y);
		if (!dup && json_array_append(xs, x) == -1)
			goto oom;
	}
	if (json_array_size(xs) == 0) {
		r = 0;
		goto out;
	}
	if ((a = json_dumps(xs, JSON_COMPACT)) == NULL ||
	    (b = json_dumps(ctxs, JSON_COMPACT)) == NULL)
		goto oom;
	p[0] = a;
	if ((graphs = db_query(db, SQL_fanout_graphs, 1, p, err, errlen)) ==
	    NULL)
		goto out;
	if (db_rows_count(graphs) == 0) {
		r = 0;
		goto out;
	}
	p[0] = b;
	if ((rows = db_query(db, SQL_fanout_contexts, 1, p, err, errlen)) ==
	    NULL)
		goto out;
	n = db_rows_count(rows);
	for (int k = 0; k <= n; k++) {
		int last = k == n ||
		    (k > from &&
		        (strcmp(db_rows_value(rows, k, 0),
		             db_rows_value(rows, from, 0)) ||
		            strcmp(db_rows_value(rows, k, 1),
		                db_rows_value(rows, from, 1))));

		if (k == n && from == n)
			break;
		if (!last)
			continue;
		/* Rows [from, k) are one context. */
		if (gi < 0 ||
		    strcmp(db_rows_value(graphs, gi, 0),
		        db_rows_value(rows, from, 0))) {
			json_decref(steps);
			steps = NULL;
			gi = graph_of(graphs, db_rows_value(rows, from, 0));
			if (gi >= 0)
				steps = json_loads(
				    db_rows_value(graphs, gi, 1), 0, NULL);
			if (gi < 0 || steps == NULL ||
			    dag_load(g, steps,
			        strcmp(db_rows_value(graphs, gi, 2), "t") ==
			            0) == -1) {
				log_warnx("execution %s: its pipeline cannot "
				          "be read; its steps are left as they "
				          "are",
				    db_rows_value(rows, from, 0));
				gi = -1;
			}
		}
		if (gi >= 0 && decide(g, rows, from, k, out) == -1)
			log_warnx("execution %s context %s: its steps do not "
			          "match its pipeline; left as they are",
			    db_rows_value(rows, from, 0),
			    db_rows_value(rows, from, 1));
		from = k;
	}
	if (json_array_size(out) == 0) {
		r = 0;
		goto out;
	}
	if ((o = json_dumps(out, JSON_COMPACT)) == NULL)
		goto oom;
	p[0] = o;
	if ((w = db_query(db, SQL_fanout_advance, 1, p, err, errlen)) == NULL)
		goto out;
	r = (int)strtol(db_rows_value(w, 0, 0), NULL, 10);
	goto out;
oom:
	log_errbuf(err, errlen, "out of memory");
out:
	json_decref(ctxs);
	json_decref(xs);
	json_decref(out);
	json_decref(steps);
	db_rows_free(graphs);
	db_rows_free(rows);
	db_rows_free(w);
	free(g);
	free(a);
	free(b);
	free(o);
	return r;
}

/*
 * pipeline_advance() of the contexts of rows whose columns are an
 * execution, a job, whether it failed for good and its context (NULL:
 * not a pipeline's): finish_jobs' and claim_jobs_drop's.  Returns how
 * many steps started, or -1 with err set.
 */
int
pipeline_advance_rows(
    struct db *db, const struct db_rows *rows, char *err, size_t errlen)
{
	json_t *ctxs = json_array();
	int n = db_rows_count(rows), r;

	for (int i = 0; i < n && ctxs; i++) {
		json_t *o;

		if (db_rows_value(rows, i, 3) == NULL)
			continue;
		o = json_pack("{s:s, s:I}", "x", db_rows_value(rows, i, 0), "c",
		    (json_int_t)strtoll(db_rows_value(rows, i, 3), NULL, 10));
		if (o == NULL || json_array_append_new(ctxs, o) == -1) {
			json_decref(ctxs);
			ctxs = NULL;
		}
	}
	if (ctxs == NULL)
		return log_errbuf(err, errlen, "out of memory");
	r = pipeline_advance(db, ctxs, err, errlen);
	if (r > 0)
		started += r;
	return r;
}

/*
 * Whether steps started since the last call (the loop then claims in
 * the same turn: a step's dependent goes out without waiting for the
 * timer).
 */
int
pipeline_started(void)
{
	int r = started > 0;

	started = 0;
	return r;
}
