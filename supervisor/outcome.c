/*
 * outcome.c: the one pure function that turns what the supervisor saw of a
 * runner — its wait status, the result frame it sent (if any) and why it
 * was reaped — into the run's recorded status.  The frame is trusted only
 * together with the wait status: a runner writes its frame and then
 * _exit(0)s, so a frame from a runner that died any other way proves
 * nothing, and a clean exit without a frame is a protocol error, never a
 * success.  What the supervisor did to the runner (a backstop kill, a
 * shutdown) decides before anything else the runner said, except a
 * completed success: a run that finished well just before it was stopped
 * must not run again.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "cronvisord.h"

/* The verdict a well-formed frame from a cleanly exited runner carries. */
static void
from_result(const struct result *res, struct verdict *out)
{
	static const enum run_status map[] = {
	    [RESULT_OK] = RUN_SUCCEEDED,
	    [RESULT_FAILED] = RUN_FAILED,
	    [RESULT_TIMEOUT] = RUN_TIMED_OUT,
	    [RESULT_ERROR] = RUN_FAILED,
	};

	out->status = map[res->status];
	out->retryable = res->retryable;
	if (res->error != NULL)
		snprintf(out->error, sizeof(out->error), "%s", res->error);
	else if (res->status == RESULT_FAILED && res->signal > 0)
		snprintf(out->error, sizeof(out->error),
		    "killed by signal "
		    "%lld (%s)",
		    (long long)res->signal, strsignal((int)res->signal));
	else if (res->status == RESULT_FAILED && res->http_status > 0)
		snprintf(out->error, sizeof(out->error), "HTTP status %lld",
		    (long long)res->http_status);
	else if (res->status == RESULT_FAILED)
		snprintf(out->error, sizeof(out->error), "exit code %lld",
		    (long long)res->exit_code);
	else if (res->status == RESULT_TIMEOUT)
		snprintf(out->error, sizeof(out->error), "timed out");
	else if (res->status == RESULT_ERROR)
		snprintf(out->error, sizeof(out->error),
		    "the runner could not run the target");
}

/*
 * Decides the status of a run from the runner's wait status, why it was
 * reaped, and the state of its result frame (res is read only when fs is
 * FRAME_OK, frame_err only when it is FRAME_BAD).  Fills *out; never fails.
 *
 *	cause      wait status       frame   status
 *	any        exit 0            OK, ok  succeeded
 *	SHUTDOWN   any               any     interrupted
 *	LOST       any               any     interrupted
 *	FENCED     any               any     interrupted
 *	BATCH      any               any     interrupted
 *	DEADLINE   any               any     timed_out
 *	EXITED     exit 0            OK      from the frame
 *	EXITED     exit 0            NONE    protocol_error
 *	EXITED     exit 0            BAD     protocol_error
 *	EXITED     exit != 0         any     crashed
 *	EXITED     killed by signal  any     crashed
 */
void
outcome_decide(int wstatus, enum reap_cause cause, enum frame_state fs,
    const struct result *res, const char *frame_err, struct verdict *out)
{
	int clean = WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0;

	memset(out, 0, sizeof(*out));
	out->retryable = 1;
	if (clean && fs == FRAME_OK && res->status == RESULT_OK) {
		from_result(res, out);
	} else if (cause == REAP_SHUTDOWN) {
		out->status = RUN_INTERRUPTED;
		snprintf(out->error, sizeof(out->error),
		    "interrupted by a supervisor shutdown");
	} else if (cause == REAP_LOST) {
		out->status = RUN_INTERRUPTED;
		snprintf(out->error, sizeof(out->error),
		    "stopped: another supervisor declared the run lost while "
		    "this one could not renew its lease");
	} else if (cause == REAP_BATCH) {
		out->status = RUN_INTERRUPTED;
		snprintf(out->error, sizeof(out->error),
		    "interrupted: its batch runner was stopped for another of "
		    "its runs");
	} else if (cause == REAP_FENCED) {
		out->status = RUN_INTERRUPTED;
		snprintf(out->error, sizeof(out->error),
		    "stopped: this supervisor could not renew its lease (the "
		    "database did not answer), and stopped the run before "
		    "another supervisor could take it over");
	} else if (cause == REAP_DEADLINE) {
		out->status = RUN_TIMED_OUT;
		snprintf(out->error, sizeof(out->error),
		    "the runner did not report within its timeout and grace "
		    "period and was killed");
	} else if (WIFSIGNALED(wstatus)) {
		out->status = RUN_CRASHED;
		snprintf(out->error, sizeof(out->error),
		    "the runner was killed by signal %d (%s)",
		    WTERMSIG(wstatus), strsignal(WTERMSIG(wstatus)));
	} else if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
		out->status = RUN_CRASHED;
		snprintf(out->error, sizeof(out->error),
		    "the runner exited with status %d", WEXITSTATUS(wstatus));
	} else if (fs == FRAME_OK) {
		from_result(res, out);
	} else {
		out->status = RUN_PROTOCOL_ERROR;
		snprintf(out->error, sizeof(out->error), "%s",
		    fs == FRAME_NONE ? "the runner exited without a result"
		                     : frame_err);
	}
}
