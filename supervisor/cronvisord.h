/*
 * cronvisord.h: the table of contents of the supervisor.  Prototypes are
 * grouped under the file that defines them.
 */
#ifndef CRONVISORD_H
#define CRONVISORD_H

#include "cronvisor.h"

/* outcome.c: what a reaped runner's run amounts to. */
enum reap_cause {
	REAP_EXITED,   /* the runner ended by itself */
	REAP_DEADLINE, /* the supervisor killed it at its backstop deadline */
	REAP_SHUTDOWN, /* the supervisor killed it while shutting down */
};
enum frame_state {
	FRAME_NONE, /* no byte of a result arrived */
	FRAME_OK,   /* one well-formed result arrived */
	FRAME_BAD,  /* a malformed or truncated result arrived */
};
struct verdict {
	enum run_status status; /* what the run's row records */
	int retryable;          /* 0: the retry budget is spent at once */
	char error[CV_ERRLEN];  /* why it did not succeed, or "" */
};
void outcome_decide(int wstatus, enum reap_cause cause, enum frame_state fs,
    const struct result *res, const char *frame_err, struct verdict *out);

#endif
