/*
 * run.c: what a run's status means.  Every slot leaves one row in `runs`
 * whose status says what happened to it, and that status is what the
 * repeat/retry state machine (retry.c) consumes: the mapping lives here so
 * that the supervisor, the API and the tests read statuses one way.  Run
 * ids follow seed 000's deterministic shape, sched-<id8>-n<repeat>-rc<retry>.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "cronvisor.h"

static const char *const run_names[] = {
    [RUN_RUNNING] = "running",
    [RUN_SUCCEEDED] = "succeeded",
    [RUN_FAILED] = "failed",
    [RUN_TIMED_OUT] = "timed_out",
    [RUN_LOST] = "lost",
    [RUN_INTERRUPTED] = "interrupted",
    [RUN_CRASHED] = "crashed",
    [RUN_PROTOCOL_ERROR] = "protocol_error",
    [RUN_SKIPPED] = "skipped",
    [RUN_MISSED] = "missed",
    [RUN_EXPIRED] = "expired",
    [RUN_WAITING] = "waiting",
};
#define RUN_NSTATUS (sizeof(run_names) / sizeof(run_names[0]))

/* The name of a status as the database and the API spell it. */
const char *
run_status_name(enum run_status s)
{
	return run_names[s];
}

/* Parses a status name; returns 0, or -1 for anything else. */
int
run_status_parse(const char *name, enum run_status *out)
{
	for (size_t i = 0; i < RUN_NSTATUS; i++)
		if (strcmp(name, run_names[i]) == 0) {
			*out = (enum run_status)i;
			return 0;
		}
	return -1;
}

/*
 * The state machine's outcome for a finished run or a slot that did not
 * run.  A crash or a malformed result is the run's failure (the runner is
 * cronvisor's code, but what made it die, such as a memory limit, is the
 * target's); a slot that did not run is skipped.  RUN_RUNNING and
 * RUN_WAITING are not outcomes: asking for one is a broken invariant.
 */
enum outcome
run_status_outcome(enum run_status s)
{
	switch (s) {
	case RUN_SUCCEEDED:
		return OUTCOME_SUCCESS;
	case RUN_FAILED:
	case RUN_CRASHED:
	case RUN_PROTOCOL_ERROR:
		return OUTCOME_FAILURE;
	case RUN_TIMED_OUT:
		return OUTCOME_TIMEOUT;
	case RUN_LOST:
		return OUTCOME_LOST;
	case RUN_INTERRUPTED:
		return OUTCOME_INTERRUPTED;
	case RUN_SKIPPED:
	case RUN_MISSED:
	case RUN_EXPIRED:
		return OUTCOME_SKIPPED;
	case RUN_RUNNING:
	case RUN_WAITING:
		break;
	}
	fatalx("run_status_outcome: status %d is not an outcome", (int)s);
}

/*
 * Writes seed 000's run id, "sched-<id8>-n<repeat>-rc<retry>", where id8
 * is the first eight characters of the schedule's UUID.  Returns 0, or -1
 * if schedule_id does not start with eight hex digits, a count is
 * negative, or buf (RUN_ID_MAX bytes always do) is too small.
 */
int
run_id(char *buf, size_t len, const char *schedule_id, int64_t repeat,
    int64_t retry)
{
	int n;

	for (int i = 0; i < 8; i++)
		if (!isxdigit((unsigned char)schedule_id[i]))
			return -1;
	if (repeat < 0 || retry < 0)
		return -1;
	n = snprintf(buf, len, "sched-%.8s-n%lld-rc%lld", schedule_id,
	    (long long)repeat, (long long)retry);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}
