/*
 * slot.c: when a schedule fires.  Given a schedule's timing, slot_next()
 * returns the first fire instant strictly after a given instant; the API's
 * preview, cronvisorctl next and the supervisor all call it, so they agree
 * to the second.  slot_plan() decides what to do with the slots that came
 * due while nobody was watching (catch-up), and slot_jitter() spreads a
 * slot's start deterministically.
 *
 * Cron schedules follow cronie's daemon through DST changes.  The zone's
 * history is cut into spans of constant UTC offset (tz_span_at).  Inside a
 * span wall time and real time advance together, so the next matching wall
 * time is found by the calendar search of cron.c and converted back by
 * subtracting the span's offset.  At the span's end the clock jumps:
 *
 *  - forward (spring): wall times [end+offset, end+next_offset) never occur.
 *    Under DST_GAP_SHIFT a match among them fires once, at the transition
 *    instant `end`; under DST_GAP_SKIP it does not fire.
 *  - backward (fall): wall times [start', start'+prev_offset-offset') of the
 *    following span occur a second time.  Under DST_FOLD_FIRST the second
 *    pass does not fire; under DST_FOLD_BOTH it does.
 *
 * AUTO picks cronie's rule: fixed-time jobs shift and fire once, wildcard
 * jobs (minute or hour field beginning with '*') skip the gap and fire in
 * both passes.  Every step either returns or moves to a later span, and a
 * span is months long, so a search costs a few calendar searches, never a
 * walk through minutes.
 */
#include <string.h>

#include "cronvisor.h"

/* Spans a search may cross: 2 a year for 5000 years, plus fold skips. */
#define SLOT_SPANS_MAX 20000
/* NONE catch-up: a slot this late (without a deadline) counts as missed. */
#define SLOT_ON_TIME 60
/* Slots slot_plan() counts one by one before settling for a lower bound. */
#define SLOT_COUNT_MAX 100000

/* The span around t in the schedule's zone; UTC when it has none. */
static void
span_at(const struct timing *tm, int64_t t, struct tz_span *sp)
{
	if (tm->tz != NULL) {
		tz_span_at(tm->tz, t, sp);
		return;
	}
	memset(sp, 0, sizeof(*sp));
	sp->start = INT64_MIN;
	sp->end = INT64_MAX;
	strcpy(sp->abbr, "UTC");
}

/* The DST rules in force for this schedule, AUTO resolved. */
static void
dst_rules(const struct timing *tm, enum dst_gap *gap, enum dst_fold *fold)
{
	int wild = cron_is_wildcard(&tm->cron);

	*gap = tm->gap != DST_GAP_AUTO ? tm->gap
	    : wild                     ? DST_GAP_SKIP
	                               : DST_GAP_SHIFT;
	*fold = tm->fold != DST_FOLD_AUTO ? tm->fold
	    : wild                        ? DST_FOLD_BOTH
	                                  : DST_FOLD_FIRST;
}

/*
 * Classifies a match at wall time w in span sp: 1 if w is the second pass
 * of a repeated wall time (the previous span showed it already), and sets
 * the note a first pass deserves.
 */
static int
fold_pass(const struct tz_span *sp, int64_t w, enum dst_fold fold,
    enum slot_note *note)
{
	*note = SLOT_NOTE_NONE;
	if (sp->start != INT64_MIN && sp->prev_offset > sp->offset &&
	    w < sp->start + sp->prev_offset)
		return 1;
	if (sp->end != INT64_MAX && sp->next_offset < sp->offset &&
	    w >= sp->end + sp->next_offset)
		*note = fold == DST_FOLD_BOTH ? SLOT_NOTE_FOLD_FIRST
		                              : SLOT_NOTE_FOLD_ONLY;
	return 0;
}

/* The cron case of slot_next(); see the top of the file. */
static int
cron_next(const struct timing *tm, int64_t after, struct slot *out)
{
	enum dst_gap gap;
	enum dst_fold fold;
	struct tz_span sp;
	int64_t x = after, lo, limit, w;

	dst_rules(tm, &gap, &fold);
	for (int i = 0; i < SLOT_SPANS_MAX && x < CV_TIME_MAX; i++) {
		span_at(tm, x + 1, &sp);
		lo = x + 1 + sp.offset;
		if (sp.end == INT64_MAX)
			limit = CV_TIME_MAX + 1 + sp.offset;
		else
			limit = sp.end +
			    (sp.next_offset > sp.offset ? sp.next_offset
			                                : sp.offset);
		w = cron_next_wall(&tm->cron, lo, limit);
		if (w == CV_NEVER) {
			if (sp.end == INT64_MAX)
				return 0;
			x = sp.end - 1;
			continue;
		}
		if (sp.end == INT64_MAX || w < sp.end + sp.offset) {
			if (fold_pass(&sp, w, fold, &out->note)) {
				if (fold == DST_FOLD_BOTH) {
					out->note = SLOT_NOTE_FOLD_SECOND;
				} else {
					/* Past the whole second pass. */
					x = sp.start + sp.prev_offset -
					    sp.offset - 1;
					continue;
				}
			}
			out->at = w - sp.offset;
			out->wall = w;
			return out->at <= CV_TIME_MAX;
		}
		/* w lies in the gap the clock jumps over at sp.end. */
		if (gap == DST_GAP_SHIFT) {
			out->at = sp.end;
			out->wall = w;
			out->note = SLOT_NOTE_GAP_SHIFT;
			return 1;
		}
		x = sp.end - 1;
	}
	return 0;
}

/*
 * Sets the instants of tm from epoch milliseconds (SCHEDULE_UNSET: not
 * given), after tm->kind: a once schedule's slot is at_ms; an interval's
 * slots are start_ms + k * interval, each with start_ms's milliseconds,
 * which tm->ms keeps (tm->at and tm->start_at are the whole seconds); cron
 * slots are whole minutes, so a start_ms with a fraction of a second
 * rounds up: no slot fires before it.  Without start_ms, tm->start_at is
 * left as it is.
 */
void
slot_set_ms(struct timing *tm, int64_t at_ms, int64_t start_ms)
{
	tm->ms = 0;
	if (tm->kind == SCHED_KIND_ONCE && at_ms != INT64_MIN) {
		tm->at = civil_fdiv(at_ms, 1000);
		tm->ms = (int)civil_fmod(at_ms, 1000);
	}
	if (start_ms == INT64_MIN)
		return;
	if (tm->kind == SCHED_KIND_CRON) {
		tm->start_at = -civil_fdiv(-start_ms, 1000);
		return;
	}
	tm->start_at = civil_fdiv(start_ms, 1000);
	if (tm->kind == SCHED_KIND_INTERVAL)
		tm->ms = (int)civil_fmod(start_ms, 1000);
}

/*
 * The instant of slot (whole seconds, from slot_next() or slot_plan()) in
 * epoch milliseconds: slot * 1000 + tm->ms; CV_NEVER stays CV_NEVER.
 */
int64_t
slot_ms(const struct timing *tm, int64_t slot)
{
	return slot == CV_NEVER ? CV_NEVER : slot * 1000 + tm->ms;
}

/*
 * The first fire instant strictly after `after` for the timing tm, with the
 * wall time it matched and what a DST rule did to it.  Interval slots are
 * start_at + k * interval; a once schedule has the single slot `at`; cron
 * slots follow the rules at the top of this file and are never earlier
 * than start_at.  Returns 1 and fills *out, or 0 when there is no further
 * slot up to CV_TIME_MAX.  tm must be valid (interval > 0, cron parsed).
 */
int
slot_next(const struct timing *tm, int64_t after, struct slot *out)
{
	int64_t start = tm->start_at < CV_TIME_MIN ? CV_TIME_MIN : tm->start_at;
	int64_t q;

	memset(out, 0, sizeof(*out));
	if (after < CV_TIME_MIN - 1)
		after = CV_TIME_MIN - 1;
	if (after >= CV_TIME_MAX || start > CV_TIME_MAX)
		return 0;
	if (after < start - 1)
		after = start - 1;
	switch (tm->kind) {
	case SCHED_KIND_INTERVAL:
		/* The slot after `after` is start + q * interval, if in range.
		 */
		q = civil_fdiv(after - start, tm->interval) + 1;
		if (q > (CV_TIME_MAX - start) / tm->interval)
			return 0;
		out->at = start + q * tm->interval;
		break;
	case SCHED_KIND_ONCE:
		if (tm->at <= after || tm->at > CV_TIME_MAX)
			return 0;
		out->at = tm->at;
		break;
	case SCHED_KIND_CRON:
		return cron_next(tm, after, out);
	}
	out->wall = out->at + (tm->tz ? tz_offset_at(tm->tz, out->at) : 0);
	return 1;
}

/* A 64-bit mix of the bytes of id and the slot (FNV-1a, then a finalizer
 * so that neighbouring slots land far apart). */
static uint64_t
jitter_hash(const char *id, int64_t slot)
{
	uint64_t h = 0xcbf29ce484222325ULL, s = (uint64_t)slot;

	for (const unsigned char *p = (const unsigned char *)id; *p; p++)
		h = (h ^ *p) * 0x100000001b3ULL;
	for (int i = 0; i < 8; i++, s >>= 8)
		h = (h ^ (s & 0xff)) * 0x100000001b3ULL;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

/*
 * The delay in seconds, 0 <= d <= jitter, by which the run of `slot` of the
 * schedule `id` starts late.  The same (id, slot) always gives the same
 * delay, so every supervisor and every restart agrees; the run never starts
 * at or after next_slot (pass CV_NEVER when there is none).
 */
int64_t
slot_jitter(const char *id, int64_t slot, int64_t next_slot, int64_t jitter)
{
	int64_t max = jitter;

	if (next_slot != CV_NEVER) {
		if (next_slot <= slot)
			return 0;
		if ((uint64_t)next_slot - (uint64_t)slot - 1 < (uint64_t)max)
			max = next_slot - slot - 1;
	}
	if (max <= 0)
		return 0;
	return (int64_t)(jitter_hash(id, slot) % ((uint64_t)max + 1));
}

/* The slots newest first in a ring of n entries, with the total seen. */
struct ring {
	int64_t s[SLOT_PLAN_MAX + 1]; /* the newest slots, circular */
	int cap;                      /* entries kept, <= SLOT_PLAN_MAX + 1 */
	int64_t seen;                 /* slots pushed in all */
};

static void
ring_push(struct ring *r, int64_t s)
{
	r->s[r->seen % r->cap] = s;
	r->seen++;
}

/* The k-th newest slot pushed, k = 0 the newest; k < min(seen, cap). */
static int64_t
ring_get(const struct ring *r, int64_t k)
{
	return r->s[(r->seen - 1 - k) % r->cap];
}

/*
 * Pushes the slots in (lo, hi] into r, at most max of them; returns 0, or
 * -1 when it stopped at max with slots left.
 */
static int
walk(const struct timing *tm, int64_t lo, int64_t hi, struct ring *r,
    int64_t max)
{
	struct slot sl;

	for (int64_t n = 0; slot_next(tm, lo, &sl) && sl.at <= hi; n++) {
		if (n == max)
			return -1;
		ring_push(r, sl.at);
		lo = sl.at;
	}
	return 0;
}

/*
 * Fills r with the newest slots in [due, now] and sets *total to how many
 * there are.  Interval slots are counted by arithmetic; others are walked.
 * Past SLOT_COUNT_MAX slots the walk stops at some slot x: the newest
 * slots are then found in a window that ends at now, grown until it holds
 * enough of them or reaches back to x (then the count is exact again);
 * otherwise the slots between x and the window go uncounted, *total is a
 * lower bound and *exact is cleared.
 */
static void
due_slots(const struct timing *tm, int64_t due, int64_t now, struct ring *r,
    int64_t *total, int *exact)
{
	static _Thread_local struct ring first;
	int64_t w = 3600, k, x;

	*exact = 1;
	if (tm->kind == SCHED_KIND_INTERVAL && due >= tm->start_at &&
	    (due - tm->start_at) % tm->interval == 0) {
		*total = (now - due) / tm->interval + 1;
		k = *total > r->cap ? *total - r->cap : 0;
		for (; k < *total; k++)
			ring_push(r, due + k * tm->interval);
		return;
	}
	if (walk(tm, due - 1, now, r, SLOT_COUNT_MAX) == 0) {
		*total = r->seen;
		return;
	}
	first = *r;
	x = ring_get(&first, 0);
	for (;; w *= 8) {
		if (now - w <= x) {
			*r = first;
			walk(tm, x, now, r, INT64_MAX);
			break;
		}
		r->seen = 0;
		walk(tm, now - w, now, r, INT64_MAX);
		if (r->seen >= r->cap) {
			*exact = 0;
			*total = SLOT_COUNT_MAX + r->seen;
			return;
		}
	}
	*total = r->seen;
}

/* Records a slot that did not run in the missed or expired tallies. */
static void
tally(int64_t *n, int64_t *first, int64_t *last, int64_t s)
{
	if (*n == 0 || s < *first)
		*first = s;
	if (*n == 0 || s > *last)
		*last = s;
	(*n)++;
}

/*
 * Decides what to do when the slot `due` (the schedule's first unfired
 * slot) has come and `now` may be later still, perhaps after downtime.
 * All slots in [due, now] are due; the newest of them is on time or late,
 * the others were missed.  By pol->mode: LATEST fires the newest once,
 * ALL fires the newest max_runs of them, NONE fires the newest only if it
 * is less than a minute (or the deadline) late; the rest count as missed.
 * A slot chosen to fire that is more than pol->deadline seconds late is
 * expired instead.  out->next is the first slot after now.  Returns the
 * number of slots to fire.
 */
int
slot_plan(const struct timing *tm, const struct catch_up_policy *pol,
    int64_t due, int64_t now, struct slot_plan *out)
{
	static _Thread_local struct ring r;
	struct slot sl;
	int64_t total, want, n, s, late, grace;

	memset(out, 0, sizeof(*out));
	out->exact = 1;
	out->next = due;
	if (due > now)
		return 0;
	want = pol->mode == CATCH_UP_ALL ? pol->max_runs : 1;
	want = want < 1 ? 1 : want > SLOT_PLAN_MAX ? SLOT_PLAN_MAX : want;
	r.cap = (int)want + 1;
	r.seen = 0;
	due_slots(tm, due, now, &r, &total, &out->exact);
	/* The newest n slots are judged one by one, older ones are dropped. */
	n = total < want ? total : want;
	if (total > n) {
		out->missed = total - n;
		out->missed_last = ring_get(&r, n);
		out->missed_first = slot_next(tm, due - 1, &sl) ? sl.at : due;
	}
	grace = pol->deadline >= 0 ? pol->deadline : SLOT_ON_TIME;
	for (int64_t k = n - 1; k >= 0; k--) {
		s = ring_get(&r, k);
		late = now - s;
		if (pol->mode == CATCH_UP_NONE && late > grace)
			tally(&out->missed, &out->missed_first,
			    &out->missed_last, s);
		else if (pol->deadline >= 0 && late > pol->deadline)
			tally(&out->expired, &out->expired_first,
			    &out->expired_last, s);
		else
			out->fire[out->nfire++] = s;
	}
	out->next = slot_next(tm, now, &sl) ? sl.at : CV_NEVER;
	return out->nfire;
}

static const char *const slot_notes[] = {
    [SLOT_NOTE_NONE] = "",
    [SLOT_NOTE_GAP_SHIFT] = "wall time skipped by DST: fires at the "
                            "transition",
    [SLOT_NOTE_FOLD_ONLY] = "wall time repeated by DST: fires at the "
                            "first pass only",
    [SLOT_NOTE_FOLD_FIRST] = "wall time repeated by DST: first of two "
                             "fires",
    [SLOT_NOTE_FOLD_SECOND] = "wall time repeated by DST: second of two "
                              "fires",
};

/* A short English explanation of a note; "" for SLOT_NOTE_NONE. */
const char *
slot_note_text(enum slot_note note)
{
	return slot_notes[note];
}
