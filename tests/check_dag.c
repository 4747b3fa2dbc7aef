/*
 * check_dag.c: what a pipeline's run does next (common/dag.c): chains,
 * diamonds and independent branches step by step; each run_when with its
 * dependencies completed, failed and not run, and the reasons given;
 * fail_fast; steps that run alone; the outcome of a context; and a
 * simulation of random graphs and outcomes that checks, at every step,
 * that nothing starts before its dependencies have ended, that a step
 * that runs alone never shares the context, that every step ends once,
 * and that dag_advance() is its own fixed point.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cvtest.h"
#include "cronvisor.h"

static struct dag g;
static enum dag_state st[PIPELINE_STEPS_MAX];
static char why[PIPELINE_STEPS_MAX][DAG_WHY_LEN];
static const char *const names[] = {"a", "b", "c", "d", "e", "f", "g", "h"};

/* A graph of n steps, none depending on another, all parallel. */
static void
graph(int n, int fail_fast)
{
	memset(&g, 0, sizeof(g));
	g.nsteps = n;
	g.fail_fast = fail_fast;
	for (int i = 0; i < n; i++) {
		g.steps[i].id = names[i];
		g.steps[i].parallel = 1;
		st[i] = DAG_WAITING;
	}
	memset(why, 0, sizeof(why));
}

static void
dep(int step, int on)
{
	g.steps[step].deps[g.steps[step].ndeps++] = on;
}

/* Advances; returns the steps started as a string of their names. */
static const char *
advance(void)
{
	static char out[64];
	int start[PIPELINE_STEPS_MAX], n = dag_advance(&g, st, start, why);

	out[0] = '\0';
	for (int i = 0; i < n; i++)
		strcat(out, g.steps[start[i]].id);
	return out;
}

START_TEST(test_chain)
{
	graph(3, 0);
	dep(1, 0);
	dep(2, 1);
	ck_assert_str_eq(advance(), "a");
	ck_assert_str_eq(advance(), ""); /* nothing ended: nothing more */
	st[0] = DAG_COMPLETED;
	ck_assert_str_eq(advance(), "b");
	st[1] = DAG_COMPLETED;
	ck_assert_str_eq(advance(), "c");
	ck_assert_int_eq(dag_outcome(&g, st), 0);
	st[2] = DAG_COMPLETED;
	ck_assert_int_eq(dag_outcome(&g, st), DAG_COMPLETED);
}
END_TEST

START_TEST(test_chain_failure)
{
	graph(3, 0);
	dep(1, 0);
	dep(2, 1);
	advance();
	st[0] = DAG_FAILED;
	ck_assert_str_eq(advance(), "");
	ck_assert_int_eq(st[1], DAG_NOT_RUN);
	ck_assert_int_eq(st[2], DAG_NOT_RUN);
	ck_assert_str_eq(why[1], "run_when success: step a failed");
	ck_assert_str_eq(why[2], "run_when success: step b was not run");
	ck_assert_int_eq(dag_outcome(&g, st), DAG_FAILED);
}
END_TEST

/* top -> left, right -> join; right fails; an independent step goes on. */
START_TEST(test_diamond_partial)
{
	graph(5, 0);
	dep(1, 0);
	dep(2, 0);
	dep(3, 1);
	dep(3, 2);
	ck_assert_str_eq(advance(), "ae");
	st[0] = DAG_COMPLETED;
	ck_assert_str_eq(advance(), "bc");
	st[1] = DAG_COMPLETED;
	ck_assert_str_eq(advance(), ""); /* join waits for right */
	ck_assert_int_eq(st[3], DAG_WAITING);
	st[2] = DAG_FAILED;
	ck_assert_str_eq(advance(), "");
	ck_assert_int_eq(st[3], DAG_NOT_RUN);
	ck_assert_str_eq(why[3], "run_when success: step c failed");
	ck_assert_int_eq(dag_outcome(&g, st), 0); /* e still runs */
	st[4] = DAG_COMPLETED;
	ck_assert_int_eq(dag_outcome(&g, st), -1); /* partial */
}
END_TEST

START_TEST(test_run_when)
{
	/* done: runs after a failure and after a step not run. */
	graph(3, 0);
	dep(1, 0);
	dep(2, 1);
	g.steps[2].when = DAG_WHEN_DONE;
	advance();
	st[0] = DAG_FAILED;
	ck_assert_str_eq(advance(), "c");
	ck_assert_int_eq(st[1], DAG_NOT_RUN);

	/* failure: runs when one dependency failed, and not when none did. */
	graph(3, 0);
	dep(2, 0);
	dep(2, 1);
	g.steps[2].when = DAG_WHEN_FAILURE;
	ck_assert_str_eq(advance(), "ab");
	st[0] = DAG_FAILED;
	ck_assert_str_eq(advance(), ""); /* b has not ended */
	st[1] = DAG_COMPLETED;
	ck_assert_str_eq(advance(), "c");
	graph(2, 0);
	dep(1, 0);
	g.steps[1].when = DAG_WHEN_FAILURE;
	advance();
	st[0] = DAG_COMPLETED;
	ck_assert_str_eq(advance(), "");
	ck_assert_int_eq(st[1], DAG_NOT_RUN);
	ck_assert_str_eq(
	    why[1], "run_when failure: no step it depends on failed");
	/* A handler not needed is no failure of its context. */
	ck_assert_int_eq(dag_outcome(&g, st), DAG_COMPLETED);
	ck_assert_int_eq(dag_when("success"), DAG_WHEN_SUCCESS);
	ck_assert_int_eq(dag_when("done"), DAG_WHEN_DONE);
	ck_assert_int_eq(dag_when("failure"), DAG_WHEN_FAILURE);
	ck_assert_int_eq(dag_when("always"), -1);
	ck_assert_int_eq(dag_when(NULL), -1);
}
END_TEST

/* dag_load() reads the native steps the API stores. */
START_TEST(test_load)
{
	json_t *steps =
	    json_loads("[{\"step_id\": \"collect\", \"agent_id\": \"x\"},"
	               " {\"step_id\": \"analyze\", \"agent_id\": \"x\","
	               "  \"depends_on\": [\"collect\"], \"parallel\": false},"
	               " {\"step_id\": \"alert\", \"agent_id\": \"x\","
	               "  \"depends_on\": [\"collect\", \"analyze\"],"
	               "  \"run_when\": \"failure\"}]",
	        0, NULL);
	json_t *bad = json_loads(
	    "[{\"step_id\": \"a\", \"depends_on\": [\"zz\"]}]", 0, NULL);
	json_t *self = json_loads(
	    "[{\"step_id\": \"a\", \"depends_on\": [\"a\"]}]", 0, NULL);
	json_t *when = json_loads(
	    "[{\"step_id\": \"a\", \"run_when\": \"always\"}]", 0, NULL);

	ck_assert_int_eq(dag_load(&g, steps, 1), 0);
	ck_assert_int_eq(g.nsteps, 3);
	ck_assert_int_eq(g.fail_fast, 1);
	ck_assert_str_eq(g.steps[1].id, "analyze");
	ck_assert_int_eq(g.steps[0].parallel, 1);
	ck_assert_int_eq(g.steps[1].parallel, 0);
	ck_assert_int_eq(g.steps[1].ndeps, 1);
	ck_assert_int_eq(g.steps[1].deps[0], 0);
	ck_assert_int_eq(g.steps[2].ndeps, 2);
	ck_assert_int_eq(g.steps[2].deps[1], 1);
	ck_assert_int_eq(g.steps[2].when, DAG_WHEN_FAILURE);
	ck_assert_int_eq(g.steps[0].when, DAG_WHEN_SUCCESS);
	ck_assert_int_eq(dag_load(&g, bad, 0), -1);
	ck_assert_int_eq(dag_load(&g, self, 0), -1);
	ck_assert_int_eq(dag_load(&g, when, 0), -1);
	ck_assert_int_eq(dag_load(&g, json_object_get(steps, "x"), 0), -1);
	json_decref(steps);
	json_decref(bad);
	json_decref(self);
	json_decref(when);
}
END_TEST

START_TEST(test_fail_fast)
{
	graph(4, 1);
	dep(2, 0);
	dep(3, 1);
	ck_assert_str_eq(advance(), "ab");
	st[0] = DAG_FAILED;
	ck_assert_str_eq(advance(), "");
	ck_assert_int_eq(st[1], DAG_RUNNING); /* sent: it ends as it will */
	ck_assert_int_eq(st[2], DAG_NOT_RUN);
	ck_assert_int_eq(st[3], DAG_NOT_RUN);
	ck_assert_str_eq(why[3], "fail_fast: step a failed");
	st[1] = DAG_COMPLETED;
	ck_assert_int_eq(dag_outcome(&g, st), -1);
}
END_TEST

START_TEST(test_alone)
{
	graph(3, 0);
	g.steps[1].parallel = 0;
	ck_assert_str_eq(advance(), "a"); /* b waits for a, c behind b */
	ck_assert_str_eq(advance(), "");
	st[0] = DAG_COMPLETED;
	ck_assert_str_eq(advance(), "b");
	ck_assert_str_eq(advance(), ""); /* nothing while b runs */
	st[1] = DAG_COMPLETED;
	ck_assert_str_eq(advance(), "c");
	/* First in line, it starts alone. */
	graph(2, 0);
	g.steps[0].parallel = 0;
	ck_assert_str_eq(advance(), "a");
	st[0] = DAG_FAILED;
	ck_assert_str_eq(advance(), "b");
}
END_TEST

/* Random graphs, random outcomes: the invariants at every step. */
START_TEST(test_simulation)
{
	unsigned seed = 12345;

	for (int round = 0; round < 3000; round++) {
		int n = 1 + (int)(rand_r(&seed) % 8), start[PIPELINE_STEPS_MAX];
		int started[PIPELINE_STEPS_MAX] = {0}, turns = 0;

		graph(n, (int)(rand_r(&seed) % 4 == 0));
		for (int i = 0; i < n; i++) {
			for (int j = 0; j < i;
			     j++) /* edges go back: no cycle */
				if (rand_r(&seed) % 3 == 0)
					dep(i, j);
			g.steps[i].when = (enum dag_when)(rand_r(&seed) % 3);
			g.steps[i].parallel = rand_r(&seed) % 4 != 0;
		}
		for (;;) {
			int k = dag_advance(&g, st, start, why), running = 0,
			    alone = 0;
			enum dag_state copy[PIPELINE_STEPS_MAX];

			for (int i = 0; i < k; i++) {
				const struct dag_step *s = &g.steps[start[i]];

				ck_assert_int_eq(started[start[i]]++, 0);
				for (int d = 0; d < s->ndeps; d++)
					ck_assert(
					    st[s->deps[d]] == DAG_COMPLETED ||
					    st[s->deps[d]] == DAG_FAILED ||
					    st[s->deps[d]] == DAG_NOT_RUN);
			}
			for (int i = 0; i < n; i++) {
				running += st[i] == DAG_RUNNING;
				alone |= st[i] == DAG_RUNNING &&
				    !g.steps[i].parallel;
				if (st[i] == DAG_NOT_RUN)
					ck_assert(why[i][0] != '\0');
			}
			ck_assert(!alone || running == 1);
			/* its own fixed point */
			memcpy(copy, st, sizeof(copy));
			ck_assert_int_eq(dag_advance(&g, copy, start, why), 0);
			ck_assert(memcmp(copy, st, sizeof(copy)) == 0);
			if (running == 0)
				break;
			/* one running step ends, completed or failed */
			for (int i = 0; i < n; i++)
				if (st[i] == DAG_RUNNING) {
					st[i] = rand_r(&seed) % 3 == 0
					    ? DAG_FAILED
					    : DAG_COMPLETED;
					break;
				}
			ck_assert_int_lt(++turns, 100);
		}
		/* Every step ended: nothing waits when nothing runs. */
		for (int i = 0; i < n; i++)
			ck_assert(st[i] == DAG_COMPLETED ||
			    st[i] == DAG_FAILED || st[i] == DAG_NOT_RUN);
		ck_assert_int_ne(dag_outcome(&g, st), 0);
	}
}
END_TEST

static Suite *
dag_suite(void)
{
	Suite *s = suite_create("dag");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_chain);
	tcase_add_test(tc, test_chain_failure);
	tcase_add_test(tc, test_diamond_partial);
	tcase_add_test(tc, test_run_when);
	tcase_add_test(tc, test_fail_fast);
	tcase_add_test(tc, test_load);
	tcase_add_test(tc, test_alone);
	tcase_add_test(tc, test_simulation);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return cvtest_run(dag_suite());
}
