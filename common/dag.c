/*
 * dag.c: what a pipeline's run does next (docs/orchestration.md, "When a
 * step runs"): given the state of each step of one context (a pipeline
 * run for one expanded value), which steps start now and which will never
 * run, and why.  Pure: the supervisor calls it when a context is made and
 * each time one of its steps ends, and writes what it says.
 *
 * The rules, in the order they apply:
 *   1. fail_fast: once a step has failed, every step that has not started
 *      is not run ("fail_fast: step X failed").
 *   2. A waiting step whose dependencies have all ended is decided by its
 *      run_when: success needs every one completed; done needs them
 *      ended, whatever the outcome (a step not run has ended); failure
 *      needs one failed.  A step whose run_when cannot hold is not run,
 *      with why; one whose dependencies have not all ended waits.
 *   3. Steps ready to start go in the order of the pipeline.  A step with
 *      parallel false runs alone: it starts only when no other step of
 *      the context runs or starts in the same round, and none starts
 *      after it in that round; while it runs, none starts.  A ready step
 *      behind it in the order waits for it, so that it is not starved.
 * Deciding again after writing what was decided changes nothing more:
 * dag_advance() is its own fixed point, which check_dag.c checks.
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "cronvisor.h"

static const char *const when_names[] = {"success", "done", "failure"};

/* The run_when named s, or -1. */
int
dag_when(const char *s)
{
	for (int i = 0; i < 3; i++)
		if (s != NULL && strcmp(s, when_names[i]) == 0)
			return i;
	return -1;
}

static int
ended(enum dag_state s)
{
	return s == DAG_COMPLETED || s == DAG_FAILED || s == DAG_NOT_RUN;
}

/*
 * Step i of g, waiting with every dependency ended: 1 if its run_when
 * holds, else 0 with why it never will in why (len bytes).
 */
static int
when_holds(
    const struct dag *g, const enum dag_state *st, int i, char *why, size_t len)
{
	const struct dag_step *s = &g->steps[i];
	int failed = -1, other = -1;

	for (int k = 0; k < s->ndeps; k++) {
		int d = s->deps[k];

		if (st[d] == DAG_FAILED && failed < 0)
			failed = d;
		if (st[d] != DAG_COMPLETED && other < 0)
			other = d;
	}
	switch (s->when) {
	case DAG_WHEN_SUCCESS:
		if (other < 0)
			return 1;
		snprintf(why, len, "run_when success: step %s %s",
		    g->steps[other].id,
		    st[other] == DAG_FAILED ? "failed" : "was not run");
		return 0;
	case DAG_WHEN_DONE:
		return 1;
	case DAG_WHEN_FAILURE:
		if (failed >= 0)
			return 1;
		snprintf(why, len,
		    "run_when failure: no step it depends on "
		    "failed");
		return 0;
	}
	return 0;
}

/*
 * Advances the context whose step states are st (g->nsteps of them):
 * marks DAG_NOT_RUN the steps that never will run (each with its reason
 * in why[i]), and DAG_RUNNING the steps to start now, in order, their
 * indexes into start[] (at most g->nsteps).  Returns how many start.
 */
int
dag_advance(const struct dag *g, enum dag_state *st, int *start,
    char (*why)[DAG_WHY_LEN])
{
	int nstart = 0, running = 0, alone = 0, changed = 1, failed = -1;

	for (int i = 0; i < g->nsteps; i++) {
		if (st[i] == DAG_FAILED && failed < 0)
			failed = i;
		if (st[i] == DAG_RUNNING) {
			running++;
			alone |= !g->steps[i].parallel;
		}
	}
	/* 1 and 2, until nothing more is decided: a step not run may decide
	 * the steps that depend on it. */
	while (changed) {
		changed = 0;
		for (int i = 0; i < g->nsteps; i++) {
			const struct dag_step *s = &g->steps[i];
			int all = 1;

			if (st[i] != DAG_WAITING)
				continue;
			if (g->fail_fast && failed >= 0) {
				snprintf(why[i], DAG_WHY_LEN,
				    "fail_fast: step %s failed",
				    g->steps[failed].id);
				st[i] = DAG_NOT_RUN;
				changed = 1;
				continue;
			}
			for (int k = 0; k < s->ndeps; k++)
				all &= ended(st[s->deps[k]]);
			if (all && !when_holds(g, st, i, why[i], DAG_WHY_LEN)) {
				st[i] = DAG_NOT_RUN;
				changed = 1;
			}
		}
	}
	/* 3: the ready ones, in order. */
	for (int i = 0; i < g->nsteps && !alone; i++) {
		const struct dag_step *s = &g->steps[i];
		int all = 1;

		if (st[i] != DAG_WAITING)
			continue;
		for (int k = 0; k < s->ndeps; k++)
			all &= ended(st[s->deps[k]]);
		if (!all)
			continue;
		if (!s->parallel) {
			if (running + nstart == 0) {
				st[i] = DAG_RUNNING;
				start[nstart++] = i;
			}
			break; /* it runs alone, or is next in line */
		}
		st[i] = DAG_RUNNING;
		start[nstart++] = i;
	}
	return nstart;
}

/*
 * The outcome of a context whose steps have all ended: DAG_COMPLETED if
 * no step failed (a step not run because its run_when failure did not
 * hold is no failure), DAG_FAILED if one failed and none completed, else
 * -1 (partial); 0 while a step has not ended.
 */
int
dag_outcome(const struct dag *g, const enum dag_state *st)
{
	int done = 0, failed = 0;

	for (int i = 0; i < g->nsteps; i++) {
		if (!ended(st[i]))
			return 0;
		done += st[i] == DAG_COMPLETED;
		failed += st[i] == DAG_FAILED;
	}
	return failed == 0 ? DAG_COMPLETED : done == 0 ? DAG_FAILED : -1;
}

/*
 * g from steps, a pipeline's steps in their native form (pipeline.c:
 * step_id, depends_on, run_when, parallel), which stay borrowed (the
 * step ids point into them).  0, or -1 when they are not such steps.
 */
int
dag_load(struct dag *g, const json_t *steps, int fail_fast)
{
	size_t n = json_array_size(steps), i, k;
	json_t *s, *d;

	memset(g, 0, sizeof(*g));
	if (!json_is_array(steps) || n == 0 || n > PIPELINE_STEPS_MAX)
		return -1;
	g->nsteps = (int)n;
	g->fail_fast = fail_fast;
	json_array_foreach(steps, i, s)
	{
		struct dag_step *t = &g->steps[i];
		json_t *w = json_object_get(s, "run_when"),
		       *p = json_object_get(s, "parallel");

		if ((t->id = json_string_value(
		         json_object_get(s, "step_id"))) == NULL)
			return -1;
		t->when = w == NULL || json_is_null(w)
		    ? DAG_WHEN_SUCCESS
		    : (enum dag_when)dag_when(json_string_value(w));
		if ((int)t->when < 0)
			return -1;
		t->parallel = p == NULL || json_is_null(p) || json_is_true(p);
	}
	json_array_foreach(steps, i, s)
	{
		json_array_foreach(json_object_get(s, "depends_on"), k, d)
		{
			int at = -1;

			for (int m = 0; m < g->nsteps && at < 0; m++)
				if (json_is_string(d) &&
				    strcmp(g->steps[m].id,
				        json_string_value(d)) == 0)
					at = m;
			if (at < 0 || at == (int)i ||
			    g->steps[i].ndeps >= PIPELINE_STEPS_MAX)
				return -1;
			g->steps[i].deps[g->steps[i].ndeps++] = at;
		}
	}
	return 0;
}
