/*
 * check_outcome.c: the run-status decision of supervisor/outcome.c, every
 * row of its table (cause x wait status x frame state x result status),
 * with wait statuses taken from real children.
 */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cvtest.h"
#include "cronvisord.h"

/* A real wait status: a child that exits with code, or dies of sig. */
static int
wait_status(int code, int sig)
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		if (sig)
			kill(getpid(), sig);
		_exit(code);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	return st;
}

enum { EXIT0, EXIT1, KILLED, NWAIT };

START_TEST(test_table)
{
	int ws[NWAIT] = {
	    wait_status(0, 0), wait_status(1, 0), wait_status(0, SIGKILL)};
	static const enum run_status from_frame[] = {
	    [RESULT_OK] = RUN_SUCCEEDED,
	    [RESULT_FAILED] = RUN_FAILED,
	    [RESULT_TIMEOUT] = RUN_TIMED_OUT,
	    [RESULT_ERROR] = RUN_FAILED,
	};
	int rows = 0;

	for (int cause = REAP_EXITED; cause <= REAP_BATCH; cause++)
		for (int w = 0; w < NWAIT; w++)
			for (int fs = FRAME_NONE; fs <= FRAME_BAD; fs++)
				for (int rs = RESULT_OK; rs <= RESULT_ERROR;
				     rs++) {
					struct result res;
					struct verdict v;
					enum run_status want;

					result_init(&res);
					res.status = (enum result_status)rs;
					res.retryable = rs != RESULT_ERROR;
					outcome_decide(ws[w],
					    (enum reap_cause)cause,
					    (enum frame_state)fs, &res,
					    "result: frame truncated", &v);
					if (w == EXIT0 && fs == FRAME_OK &&
					    rs == RESULT_OK)
						want = RUN_SUCCEEDED;
					else if (cause == REAP_SHUTDOWN ||
					    cause == REAP_LOST ||
					    cause == REAP_FENCED ||
					    cause == REAP_BATCH)
						want = RUN_INTERRUPTED;
					else if (cause == REAP_DEADLINE)
						want = RUN_TIMED_OUT;
					else if (w != EXIT0)
						want = RUN_CRASHED;
					else if (fs != FRAME_OK)
						want = RUN_PROTOCOL_ERROR;
					else
						want = from_frame[rs];
					ck_assert_msg(v.status == want,
					    "cause %d wait %d frame %d result "
					    "%d: status %d, want %d",
					    cause, w, fs, rs, v.status, want);
					ck_assert_int_eq(v.retryable,
					    want == from_frame[rs] &&
					            cause == REAP_EXITED &&
					            w == EXIT0 && fs == FRAME_OK
					        ? res.retryable
					        : 1);
					ck_assert_int_eq(v.error[0] == '\0',
					    want == RUN_SUCCEEDED);
					rows++;
				}
	ck_assert_int_eq(rows, 6 * NWAIT * 3 * 4);
}
END_TEST

START_TEST(test_messages)
{
	struct result res;
	struct verdict v;

	result_init(&res);
	outcome_decide(
	    wait_status(0, SIGKILL), REAP_EXITED, FRAME_OK, &res, NULL, &v);
	ck_assert_str_eq(v.error, "the runner was killed by signal 9 (Killed)");
	outcome_decide(
	    wait_status(2, 0), REAP_EXITED, FRAME_NONE, &res, NULL, &v);
	ck_assert_str_eq(v.error, "the runner exited with status 2");
	outcome_decide(
	    wait_status(0, 0), REAP_EXITED, FRAME_NONE, &res, NULL, &v);
	ck_assert_str_eq(v.error, "the runner exited without a result");
	/* A runner stopped as it reported being told to stop: why it was. */
	res.status = RESULT_ERROR;
	outcome_decide(
	    wait_status(0, 0), REAP_SHUTDOWN, FRAME_OK, &res, NULL, &v);
	ck_assert_str_eq(v.error, "interrupted by a supervisor shutdown");
	outcome_decide(wait_status(0, 0), REAP_LOST, FRAME_OK, &res, NULL, &v);
	ck_assert_int_eq(v.status, RUN_INTERRUPTED);
	ck_assert_str_eq(v.error,
	    "stopped: another supervisor declared the run lost while this "
	    "one could not renew its lease");
	res.status = RESULT_OK;
	outcome_decide(wait_status(0, 0), REAP_EXITED, FRAME_BAD, &res,
	    "result: missing required key \"st\"", &v);
	ck_assert_str_eq(v.error, "result: missing required key \"st\"");
	res.status = RESULT_FAILED;
	res.exit_code = 3;
	outcome_decide(
	    wait_status(0, 0), REAP_EXITED, FRAME_OK, &res, NULL, &v);
	ck_assert_str_eq(v.error, "exit code 3");
	res.signal = 9;
	outcome_decide(
	    wait_status(0, 0), REAP_EXITED, FRAME_OK, &res, NULL, &v);
	ck_assert_str_eq(v.error, "killed by signal 9 (Killed)");
	res.signal = 0;
	res.http_status = 503;
	outcome_decide(
	    wait_status(0, 0), REAP_EXITED, FRAME_OK, &res, NULL, &v);
	ck_assert_str_eq(v.error, "HTTP status 503");
	res.error = strdup("cannot execute /nope: No such file or directory");
	res.status = RESULT_ERROR;
	res.retryable = 0;
	outcome_decide(
	    wait_status(0, 0), REAP_EXITED, FRAME_OK, &res, NULL, &v);
	ck_assert_int_eq(v.status, RUN_FAILED);
	ck_assert_int_eq(v.retryable, 0);
	ck_assert_str_eq(v.error, res.error);
	result_clear(&res);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("outcome");
	TCase *tc = tcase_create("outcome");

	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_table);
	tcase_add_test(tc, test_messages);
	suite_add_tcase(s, tc);
	return cvtest_run(s);
}
