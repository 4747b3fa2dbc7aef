/*
 * retry.c: the repeat/retry state machine of seed 003, as one pure function.
 * A schedule is at repeat n (successful runs so far) and retry rc (failed
 * attempts at the current repeat).  A run's outcome moves it on:
 *
 *	success:		n+1 >= R (R > 0)  -> done
 *				otherwise         -> next slot, n+1, rc = 0
 *	failure, timeout, lost:	rc+1 > max_retries -> dead
 *				otherwise          -> same slot again after
 *				                      backoff(rc+1), rc+1
 *	skipped:		nothing ran: next slot, n and rc unchanged
 *	interrupted:		a supervisor shutdown stopped it: the same
 *				slot again at once as attempt rc+1, never dead
 *
 * The retry budget is per repeat: a success resets it.  A result marked not
 * retryable spends the whole budget at once.  The supervisor applies the
 * transition in the same transaction that records the run, so the database
 * never holds a schedule half-way between two states.
 */
#include <string.h>

#include "cronvisor.h"

/*
 * The delay before retry number rc (rc >= 1; smaller values count as 1):
 * exponential d*2^(rc-1) and linear d*rc, both capped at 10*d, or fixed d.
 * Never overflows for d < 2^59: the cap is reached before the product could.
 */
int64_t
retry_backoff(const struct retry_policy *pol, int64_t rc)
{
	int64_t d = pol->delay;

	if (rc < 1)
		rc = 1;
	switch (pol->backoff) {
	case BACKOFF_EXPONENTIAL:
		/* 2^(rc-1) >= 16 > 10 from rc = 5 on. */
		if (rc >= 5 || d << (rc - 1) > 10 * d)
			return 10 * d;
		return d << (rc - 1);
	case BACKOFF_LINEAR:
		return rc >= 10 ? 10 * d : d * rc;
	case BACKOFF_FIXED:
		break;
	}
	return d;
}

/*
 * Computes what follows a run of repeat `repeat`, retry `retry` that ended
 * with `outcome`.  retryable = 0 (from the runner's result) means a retry
 * cannot help, so a failure goes straight to dead.  Fills *out; never fails.
 * The caller has validated pol (total_repeats >= 0, max_retries >= 0,
 * delay > 0).
 */
void
retry_next(const struct retry_policy *pol, int64_t repeat, int64_t retry,
    enum outcome outcome, int retryable, struct transition *out)
{
	int64_t rc;

	memset(out, 0, sizeof(*out));
	out->repeat = repeat;
	out->retry = retry;
	switch (outcome) {
	case OUTCOME_SUCCESS:
		out->counts_run = 1;
		out->repeat = repeat + 1;
		out->retry = 0;
		out->step =
		    pol->total_repeats > 0 && out->repeat >= pol->total_repeats
		    ? STEP_DONE
		    : STEP_NEXT;
		return;
	case OUTCOME_FAILURE:
	case OUTCOME_TIMEOUT:
	case OUTCOME_LOST:
		out->counts_error = 1;
		rc = retryable ? retry + 1 : pol->max_retries + 1;
		out->retry = rc;
		if (rc > pol->max_retries) {
			out->step = STEP_DEAD;
			return;
		}
		out->step = STEP_RETRY;
		out->delay = retry_backoff(pol, rc);
		return;
	case OUTCOME_SKIPPED:
		out->step = STEP_NEXT;
		return;
	case OUTCOME_INTERRUPTED:
		/*
		 * Not the run's fault: it runs again at once and is never the
		 * one that makes the schedule dead, but it takes the next
		 * attempt number, so that every run of a slot has its own.
		 */
		out->step = STEP_RETRY;
		out->retry = retry + 1;
		return;
	}
}

static const char *const retry_backoff_names[] = {
    [BACKOFF_EXPONENTIAL] = "exponential",
    [BACKOFF_LINEAR] = "linear",
    [BACKOFF_FIXED] = "fixed",
};

/* Returns the API name of a backoff kind. */
const char *
retry_backoff_name(enum backoff b)
{
	return retry_backoff_names[b];
}

/* Parses "exponential", "linear" or "fixed"; returns 0, or -1. */
int
retry_backoff_parse(const char *name, enum backoff *out)
{
	for (size_t i = 0;
	     i < sizeof(retry_backoff_names) / sizeof(retry_backoff_names[0]);
	     i++)
		if (strcmp(name, retry_backoff_names[i]) == 0) {
			*out = (enum backoff)i;
			return 0;
		}
	return -1;
}
