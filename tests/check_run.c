/*
 * check_run.c: run statuses (common/run.c): names both ways, the outcome
 * every status feeds the state machine, and seed 000's run ids.
 */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cvtest.h"
#include "cronvisor.h"

START_TEST(test_names_round_trip)
{
	enum run_status s;

	for (int i = RUN_RUNNING; i <= RUN_EXPIRED; i++) {
		ck_assert_int_eq(
		    run_status_parse(run_status_name((enum run_status)i), &s),
		    0);
		ck_assert_int_eq(s, i);
	}
	ck_assert_str_eq(run_status_name(RUN_TIMED_OUT), "timed_out");
	ck_assert_str_eq(run_status_name(RUN_PROTOCOL_ERROR), "protocol_error");
	ck_assert_int_eq(run_status_parse("Succeeded", &s), -1);
	ck_assert_int_eq(run_status_parse("", &s), -1);
}
END_TEST

START_TEST(test_outcomes)
{
	static const struct {
		enum run_status s;
		enum outcome o;
	} t[] = {
	    {RUN_SUCCEEDED, OUTCOME_SUCCESS},
	    {RUN_FAILED, OUTCOME_FAILURE},
	    {RUN_CRASHED, OUTCOME_FAILURE},
	    {RUN_PROTOCOL_ERROR, OUTCOME_FAILURE},
	    {RUN_TIMED_OUT, OUTCOME_TIMEOUT},
	    {RUN_LOST, OUTCOME_LOST},
	    {RUN_INTERRUPTED, OUTCOME_INTERRUPTED},
	    {RUN_SKIPPED, OUTCOME_SKIPPED},
	    {RUN_MISSED, OUTCOME_SKIPPED},
	    {RUN_EXPIRED, OUTCOME_SKIPPED},
	};

	ck_assert_int_eq(sizeof(t) / sizeof(t[0]), RUN_EXPIRED);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		ck_assert_int_eq(run_status_outcome(t[i].s), t[i].o);
}
END_TEST

/* Asking for the outcome of a run still running is a broken invariant. */
START_TEST(test_running_is_fatal)
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		close(2);
		run_status_outcome(RUN_RUNNING);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1);
}
END_TEST

START_TEST(test_run_ids)
{
	char buf[RUN_ID_MAX];

	ck_assert_int_eq(run_id(buf, sizeof(buf),
	                     "1a2b3c4d-0000-4000-8000-000000000000", 5, 0),
	    0);
	ck_assert_str_eq(buf, "sched-1a2b3c4d-n5-rc0");
	ck_assert_int_eq(
	    run_id(buf, sizeof(buf), "ABCDEF01-x", INT64_MAX, INT64_MAX), 0);
	ck_assert_str_eq(
	    buf, "sched-ABCDEF01-n9223372036854775807-rc9223372036854775807");
	ck_assert_int_eq(run_id(buf, sizeof(buf), "1a2b3c4", 0, 0), -1);
	ck_assert_int_eq(run_id(buf, sizeof(buf), "1a2b3c4g-", 0, 0), -1);
	ck_assert_int_eq(run_id(buf, sizeof(buf), "1a2b3c4d", -1, 0), -1);
	ck_assert_int_eq(run_id(buf, 21, "1a2b3c4d", 5, 0), -1);
	ck_assert_int_eq(run_id(buf, 22, "1a2b3c4d", 5, 0), 0);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("run");
	TCase *tc = tcase_create("run");

	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_names_round_trip);
	tcase_add_test(tc, test_outcomes);
	tcase_add_test(tc, test_running_is_fatal);
	tcase_add_test(tc, test_run_ids);
	suite_add_tcase(s, tc);
	return cvtest_run(s);
}
