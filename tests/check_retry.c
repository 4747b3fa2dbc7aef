/*
 * check_retry.c: the repeat/retry state machine of common/retry.c, row by
 * row against hand-written tables (seed 003's transition equation and
 * seed 000's backoff table), then exhaustively over a small domain against
 * the invariants every transition must keep.
 */
#include "cvtest.h"
#include "cronvisor.h"

struct row {
	int64_t total, max_retries; /* policy: R and mr */
	int64_t n, rc;              /* state before */
	enum outcome outcome;       /* what the run did */
	int retryable;              /* the result's flag */
	enum step step;             /* expected step */
	int64_t n2, rc2, delay;     /* expected state after */
	int run, error;             /* expected counter bumps */
};

#define S OUTCOME_SUCCESS
#define F OUTCOME_FAILURE
#define T OUTCOME_TIMEOUT
#define L OUTCOME_LOST
#define K OUTCOME_SKIPPED
#define I OUTCOME_INTERRUPTED

/* Exponential backoff, base 60 s. */
static const struct row rows[] = {
    /* success: next repeat, retries reset; done at R */
    {0, 3, 0, 0, S, 1, STEP_NEXT, 1, 0, 0, 1, 0},
    {0, 3, 41, 2, S, 1, STEP_NEXT, 42, 0, 0, 1, 0},
    {3, 3, 0, 0, S, 1, STEP_NEXT, 1, 0, 0, 1, 0},
    {3, 3, 1, 0, S, 1, STEP_NEXT, 2, 0, 0, 1, 0},
    {3, 3, 2, 0, S, 1, STEP_DONE, 3, 0, 0, 1, 0},
    {3, 3, 2, 3, S, 1, STEP_DONE, 3, 0, 0, 1, 0},
    {1, 0, 0, 0, S, 1, STEP_DONE, 1, 0, 0, 1, 0},
    {1, 0, 0, 0, S, 0, STEP_DONE, 1, 0, 0, 1, 0},
    /* failure: retry the same repeat after backoff(rc+1) */
    {0, 3, 5, 0, F, 1, STEP_RETRY, 5, 1, 60, 0, 1},
    {0, 3, 5, 1, F, 1, STEP_RETRY, 5, 2, 120, 0, 1},
    {0, 3, 5, 2, F, 1, STEP_RETRY, 5, 3, 240, 0, 1},
    {0, 3, 5, 3, F, 1, STEP_DEAD, 5, 4, 0, 0, 1},
    {0, 0, 5, 0, F, 1, STEP_DEAD, 5, 1, 0, 0, 1},
    {0, 10, 0, 3, T, 1, STEP_RETRY, 0, 4, 480, 0, 1},
    {0, 10, 0, 4, T, 1, STEP_RETRY, 0, 5, 600, 0, 1},
    {0, 10, 0, 9, T, 1, STEP_RETRY, 0, 10, 600, 0, 1},
    {0, 10, 0, 10, T, 1, STEP_DEAD, 0, 11, 0, 0, 1},
    {0, 3, 7, 1, L, 1, STEP_RETRY, 7, 2, 120, 0, 1},
    /* retryable: false spends the budget at once */
    {0, 3, 5, 0, F, 0, STEP_DEAD, 5, 4, 0, 0, 1},
    {0, 3, 5, 2, T, 0, STEP_DEAD, 5, 4, 0, 0, 1},
    /* skipped: nothing ran, nothing changes but the slot */
    {3, 3, 2, 0, K, 1, STEP_NEXT, 2, 0, 0, 0, 0},
    {0, 3, 4, 2, K, 1, STEP_NEXT, 4, 2, 0, 0, 0},
    /* interrupted by a shutdown: again at once, nothing spent */
    {0, 3, 4, 2, I, 1, STEP_RETRY, 4, 3, 0, 0, 0},
    {0, 0, 4, 0, I, 0, STEP_RETRY, 4, 1, 0, 0, 0},
    {0, 3, 4, 3, I, 1, STEP_RETRY, 4, 4, 0, 0, 0},
};

START_TEST(test_rows)
{
	const struct row *r = &rows[_i];
	struct retry_policy pol = {
	    r->total, r->max_retries, BACKOFF_EXPONENTIAL, 60};
	struct transition tr;

	retry_next(&pol, r->n, r->rc, r->outcome, r->retryable, &tr);
	ck_assert_int_eq(tr.step, r->step);
	ck_assert_int_eq(tr.repeat, r->n2);
	ck_assert_int_eq(tr.retry, r->rc2);
	ck_assert_int_eq(tr.delay, r->delay);
	ck_assert_int_eq(tr.counts_run, r->run);
	ck_assert_int_eq(tr.counts_error, r->error);
}
END_TEST

/* Seed 000's table: 60 s and 300 s intervals, capped at 10x. */
START_TEST(test_backoff_tables)
{
	static const struct {
		enum backoff kind;
		int64_t d, rc, want;
	} t[] = {
	    {BACKOFF_EXPONENTIAL, 60, 1, 60},
	    {BACKOFF_EXPONENTIAL, 60, 2, 120},
	    {BACKOFF_EXPONENTIAL, 60, 3, 240},
	    {BACKOFF_EXPONENTIAL, 60, 4, 480},
	    {BACKOFF_EXPONENTIAL, 60, 5, 600},
	    {BACKOFF_EXPONENTIAL, 60, 63, 600},
	    {BACKOFF_EXPONENTIAL, 60, INT64_MAX, 600},
	    {BACKOFF_EXPONENTIAL, 300, 1, 300},
	    {BACKOFF_EXPONENTIAL, 300, 2, 600},
	    {BACKOFF_EXPONENTIAL, 300, 3, 1200},
	    {BACKOFF_EXPONENTIAL, 300, 4, 2400},
	    {BACKOFF_EXPONENTIAL, 300, 5, 3000},
	    {BACKOFF_EXPONENTIAL, 60, 0, 60},
	    {BACKOFF_LINEAR, 60, 1, 60},
	    {BACKOFF_LINEAR, 60, 2, 120},
	    {BACKOFF_LINEAR, 60, 9, 540},
	    {BACKOFF_LINEAR, 60, 10, 600},
	    {BACKOFF_LINEAR, 60, 11, 600},
	    {BACKOFF_LINEAR, 60, INT64_MAX, 600},
	    {BACKOFF_FIXED, 45, 1, 45},
	    {BACKOFF_FIXED, 45, 30, 45},
	    {BACKOFF_EXPONENTIAL, 1, 4, 8},
	    {BACKOFF_EXPONENTIAL, 1, 5, 10},
	    {BACKOFF_EXPONENTIAL, 31536000, 4, 252288000},
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct retry_policy pol = {0, 3, t[i].kind, t[i].d};
		ck_assert_msg(retry_backoff(&pol, t[i].rc) == t[i].want,
		    "row %zu: backoff(%lld) = %lld, want %lld", i,
		    (long long)t[i].rc, (long long)retry_backoff(&pol, t[i].rc),
		    (long long)t[i].want);
	}
}
END_TEST

/* Asserts the invariants of one transition. */
static void
check_invariants(const struct retry_policy *pol, int64_t n, int64_t rc,
    enum outcome o, int ry)
{
	struct transition tr;

	retry_next(pol, n, rc, o, ry, &tr);
	if (o == S) {
		ck_assert(tr.step == STEP_DONE || tr.step == STEP_NEXT);
		ck_assert_int_eq(tr.repeat, n + 1);
		ck_assert_int_eq(tr.retry, 0);
		ck_assert_int_eq(tr.step == STEP_DONE,
		    pol->total_repeats > 0 && n + 1 == pol->total_repeats);
		return;
	}
	if (o == K || o == I) {
		ck_assert_int_eq(tr.step, o == K ? STEP_NEXT : STEP_RETRY);
		ck_assert_int_eq(tr.delay, 0);
		ck_assert_int_eq(tr.repeat, n);
		ck_assert_int_eq(tr.retry, o == K ? rc : rc + 1);
		ck_assert_int_eq(tr.counts_run + tr.counts_error, 0);
		return;
	}
	ck_assert_int_eq(tr.repeat, n);
	ck_assert_int_eq(tr.counts_error, 1);
	ck_assert_int_eq(
	    tr.step == STEP_DEAD, !ry || rc + 1 > pol->max_retries);
	if (tr.step == STEP_RETRY) {
		ck_assert_int_eq(tr.retry, rc + 1);
		ck_assert_int_le(tr.retry, pol->max_retries);
		ck_assert_int_ge(tr.delay, pol->delay);
		ck_assert_int_le(tr.delay, 10 * pol->delay);
		ck_assert_int_eq(tr.delay, retry_backoff(pol, rc + 1));
	}
}

/* Every transition of a small domain keeps the invariants. */
START_TEST(test_exhaustive_invariants)
{
	long checked = 0;

	for (int kind = 0; kind < 3; kind++)
		for (int64_t total = 0; total <= 5; total++)
			for (int64_t mr = 0; mr <= 6; mr++) {
				struct retry_policy pol = {
				    total, mr, (enum backoff)kind, 7};

				for (int64_t n = 0; n < (total ? total : 8);
				     n++)
					for (int64_t rc = 0; rc <= mr; rc++)
						for (int o = 0; o <= I; o++) {
							check_invariants(&pol,
							    n, rc,
							    (enum outcome)o, 0);
							check_invariants(&pol,
							    n, rc,
							    (enum outcome)o, 1);
							checked += 2;
						}
			}
	ck_assert_int_gt(checked, 10000);
}
END_TEST

/*
 * Drives a schedule through a run of outcomes and counts executions: with
 * only failures each repeat costs mr + 1 runs before dead, and a success
 * anywhere in the retry loop resets the budget (seed 003's key property).
 */
START_TEST(test_sequences)
{
	struct retry_policy pol = {3, 2, BACKOFF_EXPONENTIAL, 60};
	static const enum outcome seq[] = {F, F, S, F, S, T, F, S};
	int64_t n = 0, rc = 0, runs = 0;
	struct transition tr = {0};

	for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		retry_next(&pol, n, rc, seq[i], 1, &tr);
		runs++;
		n = tr.repeat;
		rc = tr.retry;
		ck_assert(tr.step != STEP_DEAD);
	}
	ck_assert_int_eq(tr.step, STEP_DONE);
	ck_assert_int_eq(n, 3);
	ck_assert_int_eq(runs, 8);

	n = rc = runs = 0;
	do {
		retry_next(&pol, n, rc, F, 1, &tr);
		runs++;
		n = tr.repeat;
		rc = tr.retry;
	} while (tr.step == STEP_RETRY);
	ck_assert_int_eq(tr.step, STEP_DEAD);
	ck_assert_int_eq(runs, pol.max_retries + 1);
}
END_TEST

START_TEST(test_names)
{
	enum backoff b;

	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(retry_backoff_parse(
		                     retry_backoff_name((enum backoff)i), &b),
		    0);
		ck_assert_int_eq(b, i);
	}
	ck_assert_int_eq(retry_backoff_parse("Exponential", &b), -1);
	ck_assert_int_eq(retry_backoff_parse("", &b), -1);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("retry");
	TCase *tc = tcase_create("retry");

	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, test_rows, 0, sizeof(rows) / sizeof(rows[0]));
	tcase_add_test(tc, test_backoff_tables);
	tcase_add_test(tc, test_exhaustive_invariants);
	tcase_add_test(tc, test_sequences);
	tcase_add_test(tc, test_names);
	suite_add_tcase(s, tc);
	return cvtest_run(s);
}
