/*
 * check_decide.c: the scheduling decisions of supervisor/decide.c.  Each
 * decision is walked over every combination of what it reads (kind x
 * overlap x runs in flight x runs fired x repeats x room for a slot; kind
 * x outcome x attempt x chain x anchor x budget for a run's end) and held
 * against a table of rules written as data, first match wins; then the
 * stories of docs/schedules.md are played through them, among them two
 * runs of `overlap: allow` that fail together and keep a retry chain each.
 */
#include <stdio.h>
#include <string.h>

#include "cvtest.h"
#include "cronvisord.h"

#define T0  1798761600 /* 2027-01-01T00:00:00Z */
#define ANY (-1)

/* An active interval schedule of 60 s from T0, or a once one at T0. */
static struct sched
sched_of(enum sched_kind kind, enum schedule_overlap ov)
{
	struct sched s;

	memset(&s, 0, sizeof(s));
	snprintf(s.id, sizeof(s.id), "0123abcd-0000-4000-8000-000000000001");
	s.tm.kind = kind;
	s.tm.interval = kind == SCHED_KIND_INTERVAL ? 60 : 0;
	s.tm.start_at = kind == SCHED_KIND_INTERVAL ? T0 : CV_TIME_MIN;
	s.tm.at = T0;
	s.pol = (struct retry_policy){0, 3, BACKOFF_FIXED, 10};
	s.cu = (struct catch_up_policy){CATCH_UP_LATEST, 10, -1};
	s.overlap = ov;
	s.active = 1;
	s.next_run_at = s.next_slot_at = T0;
	return s;
}

/*
 * decide_slot()'s rules, first match wins.  Columns: once (1: a once
 * schedule), overlap, busy (runs in flight or fired > 0), running (> 0),
 * fired (> 0), full (total_repeats reached by the runs in flight), room
 * (claim), owner (room) — ANY matches anything — and the act.
 */
static const struct slot_rule {
	int once, overlap, busy, running, fired, full, room, owner;
	enum slot_act act;
} slot_rules[] = {
    {0, ANY, 1, ANY, ANY, 1, ANY, ANY, ACT_HOLD},
    {0, SCHEDULE_OVERLAP_SKIP, ANY, 1, ANY, ANY, ANY, ANY, ACT_SKIP},
    {ANY, SCHEDULE_OVERLAP_BUFFER_ONE, 1, ANY, ANY, ANY, ANY, ANY, ACT_BUFFER},
    {1, ANY, 1, ANY, ANY, ANY, ANY, ANY, ACT_BUFFER},
    {ANY, SCHEDULE_OVERLAP_SKIP, ANY, ANY, 1, ANY, ANY, ANY, ACT_HOLD},
    {ANY, SCHEDULE_OVERLAP_BUFFER_ONE, ANY, ANY, 1, ANY, ANY, ANY, ACT_HOLD},
    {ANY, ANY, ANY, ANY, ANY, ANY, 0, ANY, ACT_HOLD},
    {1, ANY, ANY, ANY, ANY, ANY, ANY, 0, ACT_WAIT_OWNER},
    {0, ANY, ANY, ANY, ANY, ANY, ANY, 0, ACT_SKIP_OWNER},
    {ANY, ANY, ANY, ANY, ANY, ANY, ANY, ANY, ACT_FIRE},
};

static int
match(int rule, int v)
{
	return rule == ANY || rule == v;
}

static enum slot_act
slot_want(int once, int ov, int64_t running, int64_t fired, int full,
    int64_t room, int64_t owner)
{
	int busy = running + fired > 0;

	for (size_t i = 0;; i++) {
		const struct slot_rule *r = &slot_rules[i];

		if (match(r->once, once) && match(r->overlap, ov) &&
		    match(r->busy, busy) && match(r->running, running > 0) &&
		    match(r->fired, fired > 0) && match(r->full, full) &&
		    match(r->room, room > 0) && match(r->owner, owner > 0))
			return r->act;
	}
}

/*
 * Combination i of a table whose columns have the sizes in radix: its
 * value in column c is digit[c].
 */
static void
digits(int i, const int *radix, int n, int *digit)
{
	for (int c = n - 1; c >= 0; c--) {
		digit[c] = i % radix[c];
		i /= radix[c];
	}
}

/* The number of combinations of a table with columns of sizes radix. */
static int
combinations(const int *radix, int n)
{
	int total = 1;

	for (int c = 0; c < n; c++)
		total *= radix[c];
	return total;
}

START_TEST(test_slot_table)
{
	static const enum sched_kind kinds[] = {
	    SCHED_KIND_INTERVAL, SCHED_KIND_ONCE};
	static const int64_t totals[] = {0, 1, 2, 3, 5};
	/* kind, overlap, running, fired, total, repeat, room, owner */
	static const int radix[8] = {2, 3, 3, 3, 5, 3, 2, 2};
	int n = combinations(radix, 8);

	ck_assert_int_eq(n, 3240);
	for (int i = 0; i < n; i++) {
		int d[8];
		struct sched s;
		struct claim_walk w;
		struct claim_room rm;
		enum slot_act act, want;
		int full;

		digits(i, radix, 8, d);
		s = sched_of(kinds[d[0]], (enum schedule_overlap)d[1]);
		s.running = d[2];
		s.pol.total_repeats = totals[d[4]];
		s.repeat = d[5];
		rm = (struct claim_room){d[6], d[7]};
		decide_walk_init(&w);
		w.fired = d[3];
		full = totals[d[4]] > 0 && d[5] + d[2] + d[3] >= totals[d[4]];
		act = decide_slot(&s, &w, T0, &rm);
		want = slot_want(kinds[d[0]] == SCHED_KIND_ONCE, d[1], d[2],
		    d[3], full, d[6], d[7]);
		ck_assert_msg(act == want,
		    "kind %d overlap %d running %d fired %d total %lld "
		    "repeat %d room %d owner %d: act %d, want %d",
		    kinds[d[0]], d[1], d[2], d[3], (long long)totals[d[4]],
		    d[5], d[6], d[7], act, want);
		/* Only a held or a buffered slot is noted. */
		ck_assert_int_eq(w.held == T0, act == ACT_HOLD);
		ck_assert_int_eq(w.buffered == T0, act == ACT_BUFFER);
	}
}
END_TEST

/* What the claim leaves pending, for every walk that can end. */
START_TEST(test_claim_end_table)
{
	struct slot_plan p;
	int rows = 0;

	memset(&p, 0, sizeof(p));
	p.next = T0 + 120;
	for (int anchor = 0; anchor <= 1; anchor++)
		for (int64_t running = 0; running <= 1; running++)
			for (int64_t fired = 0; fired <= 1; fired++)
				for (int how = 0; how < 3; how++) {
					struct sched s =
					    sched_of(SCHED_KIND_INTERVAL,
					        SCHEDULE_OVERLAP_ALLOW);
					struct claim_walk w;
					struct claim_next nx;

					s.anchor_completion = anchor;
					s.running = running;
					decide_walk_init(&w);
					w.fired = fired;
					if (how == 1)
						w.buffered = T0 + 60;
					else if (how == 2)
						w.held = T0 + 60;
					decide_claim_end(&s, &w, &p, &nx);
					if (how == 1) { /* buffered */
						ck_assert_int_eq(
						    nx.next_run, CV_NEVER);
						ck_assert_int_eq(
						    nx.next_slot, T0 + 60);
					} else if (how == 2) { /* held */
						ck_assert_int_eq(nx.next_run,
						    running || fired ? CV_NEVER
						                     : T0 + 60);
						ck_assert_int_eq(
						    nx.next_slot, T0 + 60);
					} else if (anchor && fired) {
						ck_assert_int_eq(
						    nx.next_run, CV_NEVER);
						ck_assert_int_eq(
						    nx.next_slot, CV_NEVER);
					} else {
						ck_assert_int_eq(
						    nx.next_run, T0 + 120);
						ck_assert_int_eq(
						    nx.next_slot, T0 + 120);
					}
					rows++;
				}
	ck_assert_int_eq(rows, 24);
}
END_TEST

START_TEST(test_retry_table)
{
	for (int64_t room = 0; room <= 2; room++)
		for (int64_t own = -1; own <= 2; own++) {
			struct claim_room rm = {room, own};

			ck_assert_int_eq(decide_retry(&rm),
			    room <= 0      ? ACT_HOLD
			        : own <= 0 ? ACT_WAIT_OWNER
			                   : ACT_FIRE);
		}
}
END_TEST

/* Jitter: deterministic, within the slot's period, none without it. */
START_TEST(test_start)
{
	struct sched s = sched_of(SCHED_KIND_INTERVAL, SCHEDULE_OVERLAP_SKIP);
	int64_t a;

	ck_assert_int_eq(decide_start(&s, T0), T0);
	ck_assert_int_eq(decide_start(&s, CV_NEVER), CV_NEVER);
	s.jitter = 30;
	a = decide_start(&s, T0);
	ck_assert(a >= T0 && a <= T0 + 30);
	ck_assert_int_eq(decide_start(&s, T0), a);
	ck_assert_int_eq(decide_start(&s, CV_NEVER), CV_NEVER);
}
END_TEST

/*
 * The catch-up stories: one plan of three due slots, nothing in flight,
 * room for all, under each overlap policy; and total_repeats 2 with one
 * success so far.
 */
static void
walk(struct sched *s, const enum slot_act *want, int n)
{
	struct claim_walk w;
	struct claim_room rm = {10, 10};

	decide_walk_init(&w);
	for (int i = 0; i < n; i++) {
		enum slot_act act = decide_slot(s, &w, T0 + 60 * i, &rm);

		ck_assert_msg(act == want[i], "slot %d: act %d, want %d", i,
		    act, want[i]);
		if (act == ACT_FIRE) {
			w.fired++;
			rm.runs--;
			rm.owner--;
		}
		if (act == ACT_HOLD)
			break;
	}
}

START_TEST(test_plans)
{
	struct sched s = sched_of(SCHED_KIND_INTERVAL, SCHEDULE_OVERLAP_ALLOW);
	const enum slot_act all[] = {ACT_FIRE, ACT_FIRE, ACT_FIRE};
	const enum slot_act one[] = {ACT_FIRE, ACT_HOLD};
	const enum slot_act buf[] = {ACT_BUFFER, ACT_BUFFER, ACT_BUFFER};
	const enum slot_act fire_buf[] = {ACT_FIRE, ACT_BUFFER, ACT_BUFFER};
	const enum slot_act skip[] = {ACT_SKIP, ACT_SKIP, ACT_SKIP};

	walk(&s, all, 3); /* allow: every slot of catch_up all */
	s.overlap = SCHEDULE_OVERLAP_SKIP;
	walk(&s, one, 2); /* skip: one after the other, not skipped */
	s.overlap = SCHEDULE_OVERLAP_BUFFER_ONE;
	walk(&s, fire_buf, 3); /* the latest waits for the run */
	s.running = 1;         /* a run in flight */
	walk(&s, buf, 3);
	s.overlap = SCHEDULE_OVERLAP_SKIP;
	walk(&s, skip, 3);
	s = sched_of(SCHED_KIND_INTERVAL, SCHEDULE_OVERLAP_ALLOW);
	s.pol.total_repeats = 2;
	s.repeat = 1;
	walk(&s, one, 2); /* the one success still needed */
}
END_TEST

/*
 * What decide_finish() must say of one row of its table: a slot run of
 * repeat 7 at T0 + 60 ends with status st at attempt att; the schedule
 * (an allow interval of 60 s, max_retries 3, fixed backoff 10 s, retry 2,
 * next_run_at T0 + 90, next_slot_at T0 + 120) is in a retry chain or
 * not (pend), others retries wait or run, the latest row is at
 * T0 + 300, and the run is the last success total_repeats needs or not.
 */
static void
finish_case(enum run_status st, int64_t att, int pend, int64_t others,
    int anchor, int rt, int last)
{
	struct sched s = sched_of(SCHED_KIND_INTERVAL, SCHEDULE_OVERLAP_ALLOW);
	const struct run_end e = {T0 + 60, 7, att, st, rt, "boom", 0};
	const struct finish_view v = {T0 + 300, others};
	enum outcome o = run_status_outcome(st);
	int bad =
	    o == OUTCOME_FAILURE || o == OUTCOME_TIMEOUT || o == OUTCOME_LOST;
	int64_t rc = bad && !rt ? 4 : att + 1;
	struct next_state ns;

	s.anchor_completion = anchor;
	s.retry_pending = pend;
	s.retry = 2;
	s.repeat = 7;
	s.pol.total_repeats = last ? 8 : 0;
	s.next_run_at = T0 + 90;
	s.next_slot_at = T0 + 120;
	decide_finish(&s, &e, &v, &ns);
	if (o == OUTCOME_SUCCESS && last) {
		ck_assert_str_eq(ns.status, "done");
	} else if (bad && rc > 3) {
		ck_assert_str_eq(ns.status, "dead");
		ck_assert_int_eq(ns.retry, rc);
	} else {
		ck_assert_str_eq(ns.status, "active");
	}
	if (strcmp(ns.status, "active") != 0) {
		/* Nothing due, no chain: the retries rows go with it. */
		ck_assert_int_eq(ns.next_run, CV_NEVER);
		ck_assert_int_eq(ns.next_slot, CV_NEVER);
		ck_assert_int_eq(ns.retry_pending, 0);
		ck_assert_int_eq(ns.queue, 0);
		return;
	}
	if (bad || o == OUTCOME_INTERRUPTED) {
		/* A retry of its own slot; the slot sequence stays. */
		ck_assert_int_eq(ns.queue, 1);
		ck_assert_int_eq(ns.retry_slot, T0 + 60);
		ck_assert_int_eq(ns.retry_repeat, 7);
		ck_assert_int_eq(ns.retry, att + 1);
		ck_assert_int_eq(ns.retry_delay, bad ? 10 : 0);
		ck_assert_int_eq(ns.retry_pending, 1);
		ck_assert_int_eq(ns.from_retries, 1);
		ck_assert_int_eq(ns.next_slot, T0 + 120);
		ck_assert_int_eq(ns.delay, -1);
		ck_assert_ptr_eq(
		    ns.error, o == OUTCOME_INTERRUPTED ? NULL : e.error);
		return;
	}
	ck_assert_int_eq(ns.queue, 0);
	ck_assert_int_eq(ns.from_retries, 0);
	ck_assert_int_eq(ns.counts_run, o == OUTCOME_SUCCESS);
	if (pend && (att == 0 || others > 0)) {
		/* A chain goes on: nothing moves. */
		ck_assert_int_eq(ns.retry_pending, 1);
		ck_assert_int_eq(ns.retry, 2);
		ck_assert_int_eq(ns.next_run, T0 + 90);
		ck_assert_int_eq(ns.next_slot, T0 + 120);
		ck_assert_int_eq(ns.delay, -1);
		return;
	}
	ck_assert_int_eq(ns.retry_pending, att > 0 ? 0 : pend);
	ck_assert_int_eq(ns.retry, att > 0 ? 0 : 2);
	if (anchor) {
		ck_assert_int_eq(ns.delay, 60);
		ck_assert_int_eq(ns.slot_too, 1);
	} else if (att > 0) {
		/* The chain ended: after the latest row. */
		ck_assert_int_eq(ns.next_slot, T0 + 360);
		ck_assert_int_eq(ns.next_run, T0 + 360);
	} else {
		ck_assert_int_eq(ns.next_run, T0 + 90);
		ck_assert_int_eq(ns.next_slot, T0 + 120);
	}
}

/*
 * decide_finish()'s table: every outcome x attempt x chain state x
 * others x anchor x retryable x whether the run completes the repeats,
 * held against the rules of docs/schedules.md ("Repeats and retries").
 */
START_TEST(test_finish_table)
{
	static const enum run_status sts[] = {RUN_SUCCEEDED, RUN_FAILED,
	    RUN_TIMED_OUT, RUN_LOST, RUN_CRASHED, RUN_INTERRUPTED, RUN_SKIPPED,
	    RUN_MISSED};
	/* status, attempt, chain, others, anchor, retryable, last */
	static const int radix[7] = {8, 4, 2, 2, 2, 2, 2};
	int n = combinations(radix, 7);

	ck_assert_int_eq(n, 1024);
	for (int i = 0; i < n; i++) {
		int d[7];

		digits(i, radix, 7, d);
		finish_case(sts[d[0]], d[1], d[2], d[3], d[4], d[5], d[6]);
	}
}
END_TEST

/*
 * A buffered slot (next_run_at NULL, next_slot_at after the run's slot)
 * is due when the run ends; a success at the end of a chain resumes
 * after the retried slot when no later row stands.
 */
START_TEST(test_finish_buffered)
{
	struct sched s =
	    sched_of(SCHED_KIND_INTERVAL, SCHEDULE_OVERLAP_BUFFER_ONE);
	struct run_end e = {T0, 0, 0, RUN_SUCCEEDED, 1, "", 0};
	struct finish_view v = {CV_NEVER, 0};
	struct next_state ns;

	s.next_run_at = CV_NEVER;
	s.next_slot_at = T0 + 60;
	decide_finish(&s, &e, &v, &ns);
	ck_assert_int_eq(ns.next_run, T0 + 60);
	ck_assert_str_eq(ns.error, "");
	ck_assert_int_eq(ns.counts_run, 1);
	ck_assert_int_eq(ns.repeat, 1);
	e.attempt = 2;
	s.retry_pending = 1;
	s.next_slot_at = T0;
	decide_finish(&s, &e, &v, &ns);
	ck_assert_int_eq(ns.retry_pending, 0);
	ck_assert_int_eq(ns.next_slot, T0 + 60);
	ck_assert_int_eq(ns.next_run, T0 + 60);
}
END_TEST

/*
 * An HTTP Retry-After (an agent's 429 or 503) puts the retry no sooner
 * than it says; a shorter one leaves the backoff's delay.
 */
START_TEST(test_finish_retry_after)
{
	struct sched s = sched_of(SCHED_KIND_INTERVAL, SCHEDULE_OVERLAP_SKIP);
	struct run_end e = {T0, 0, 0, RUN_FAILED, 1, "HTTP 429", 30};
	struct finish_view v = {CV_NEVER, 0};
	struct next_state ns;
	int64_t backoff;

	decide_finish(&s, &e, &v, &ns);
	ck_assert_int_eq(ns.queue, 1);
	ck_assert_int_eq(ns.retry_delay, 30);
	e.retry_after = 0;
	decide_finish(&s, &e, &v, &ns);
	backoff = ns.retry_delay;
	ck_assert_int_lt(backoff, 30);
	e.retry_after = backoff > 1 ? backoff - 1 : 0;
	decide_finish(&s, &e, &v, &ns);
	ck_assert_int_eq(ns.retry_delay, backoff);
}
END_TEST

/*
 * overlap: allow, runs of slots A and B in flight, both fail.  Each gets a
 * retries row of its own (the first one's is not replaced by the second);
 * A's retry succeeds while B's row waits: the chain goes on; B's retry
 * succeeds with nothing else waiting: the schedule resumes after the
 * latest slot recorded.
 */
START_TEST(test_allow_chains)
{
	struct sched s = sched_of(SCHED_KIND_INTERVAL, SCHEDULE_OVERLAP_ALLOW);
	struct run_end a = {T0, 0, 0, RUN_FAILED, 1, "a failed", 0};
	struct run_end b = {T0 + 60, 1, 0, RUN_FAILED, 1, "b failed", 0};
	struct finish_view v = {CV_NEVER, 0};
	struct next_state ns;

	s.running = 2;
	s.next_run_at = s.next_slot_at = T0 + 120;
	decide_finish(&s, &a, &v, &ns);
	ck_assert_int_eq(ns.queue, 1);
	ck_assert_int_eq(ns.retry_slot, T0);
	ck_assert_int_eq(ns.retry_repeat, 0);
	ck_assert_int_eq(ns.retry, 1);
	/* What finish_states wrote: the chain is under way. */
	s.retry_pending = ns.retry_pending;
	s.retry = ns.retry;
	decide_finish(&s, &b, &v, &ns);
	ck_assert_int_eq(ns.queue, 1);
	ck_assert_int_eq(ns.retry_slot, T0 + 60);
	ck_assert_int_eq(ns.retry_repeat, 1);
	ck_assert_int_eq(ns.retry, 1);
	ck_assert_int_eq(ns.retry_pending, 1);
	/* A's retry succeeds; B's row still waits. */
	a.attempt = 1;
	a.status = RUN_SUCCEEDED;
	v.others = 1;
	v.last = T0 + 60;
	decide_finish(&s, &a, &v, &ns);
	ck_assert_str_eq(ns.status, "active");
	ck_assert_int_eq(ns.retry_pending, 1);
	ck_assert_int_eq(ns.next_slot, T0 + 120);
	ck_assert_int_eq(ns.counts_run, 1);
	/* B's retry succeeds; nothing else waits or runs. */
	b.attempt = 1;
	b.status = RUN_SUCCEEDED;
	v.others = 0;
	decide_finish(&s, &b, &v, &ns);
	ck_assert_int_eq(ns.retry_pending, 0);
	ck_assert_int_eq(ns.retry, 0);
	ck_assert_int_eq(ns.next_slot, T0 + 120);
	ck_assert_int_eq(ns.next_run, T0 + 120);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("decide");
	TCase *tc = tcase_create("decide");

	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_slot_table);
	tcase_add_test(tc, test_claim_end_table);
	tcase_add_test(tc, test_retry_table);
	tcase_add_test(tc, test_start);
	tcase_add_test(tc, test_plans);
	tcase_add_test(tc, test_finish_table);
	tcase_add_test(tc, test_finish_buffered);
	tcase_add_test(tc, test_finish_retry_after);
	tcase_add_test(tc, test_allow_chains);
	suite_add_tcase(s, tc);
	return cvtest_run(s);
}
