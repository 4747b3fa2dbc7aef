/*
 * check_slot.c: fire times (common/slot.c).  Hand-checked DST cases in the
 * zones the design names (the expected instants were read off zdump -v),
 * then a cross-check of slot_next() against a brute-force reference that
 * walks every wall minute around real transitions and resolves each match
 * with tz_local_to_utc() — a different algorithm from the span walk of
 * slot.c — and finally jitter and the catch-up planner.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cvtest.h"
#include "cronvisor.h"

/* Parses an RFC 3339 UTC instant written in a test; aborts on typos. */
static int64_t
T(const char *s)
{
	char err[CV_ERRLEN];
	int64_t t;

	if (timefmt_parse(s, NULL, &t, err, sizeof(err)) == -1)
		ck_abort_msg("bad test time %s: %s", s, err);
	return t;
}

static struct timing
cron_timing(
    const char *expr, const char *zone, enum dst_gap gap, enum dst_fold fold)
{
	struct timing tm;
	char err[CV_ERRLEN];

	memset(&tm, 0, sizeof(tm));
	tm.kind = SCHED_KIND_CRON;
	tm.start_at = CV_TIME_MIN;
	tm.gap = gap;
	tm.fold = fold;
	ck_assert_msg(cron_parse(expr, &tm.cron, err, sizeof(err)) == 0,
	    "%s: %s", expr, err);
	if (zone) {
		tm.tz = tz_get(zone, err, sizeof(err));
		ck_assert_msg(tm.tz != NULL, "%s: %s", zone, err);
	}
	return tm;
}

/*
 * Asserts that the fire times after `from` are exactly want[] (RFC 3339,
 * a trailing "!" marks a gap shift, "1"/"2" the first/second pass of a
 * doubled time, "o" the only pass of a repeated time).
 */
static void
expect(
    const struct timing *tm, const char *from, const char *const *want, int n)
{
	int64_t t = T(from);
	struct slot sl;
	char got[40], w[40];

	for (int i = 0; i < n; i++) {
		size_t len = strlen(want[i]);
		enum slot_note note = SLOT_NOTE_NONE;

		snprintf(w, sizeof(w), "%s", want[i]);
		if (w[len - 1] != 'Z') {
			note = w[len - 1] == '!' ? SLOT_NOTE_GAP_SHIFT
			    : w[len - 1] == '1'  ? SLOT_NOTE_FOLD_FIRST
			    : w[len - 1] == '2'  ? SLOT_NOTE_FOLD_SECOND
			                         : SLOT_NOTE_FOLD_ONLY;
			w[len - 1] = '\0';
		}
		ck_assert_msg(slot_next(tm, t, &sl) == 1, "%s: no slot %d",
		    tm->cron.text, i);
		timefmt_utc(sl.at, got, sizeof(got));
		ck_assert_msg(sl.at == T(w),
		    "%s after %s: slot %d is %s, want "
		    "%s",
		    tm->cron.text, from, i, got, w);
		ck_assert_msg(sl.note == note,
		    "%s: slot %d (%s) note %d, "
		    "want %d",
		    tm->cron.text, i, got, sl.note, note);
		t = sl.at;
	}
}

#define EXPECT(tm, from, ...)                                                  \
	do {                                                                   \
		static const char *const w_[] = {__VA_ARGS__};                 \
		expect(tm, from, w_, (int)(sizeof(w_) / sizeof(w_[0])));       \
	} while (0)

START_TEST(test_interval)
{
	struct timing tm = {.kind = SCHED_KIND_INTERVAL,
	    .interval = 90,
	    .start_at = T("2026-01-01T00:00:00Z")};
	struct slot sl;

	ck_assert_int_eq(slot_next(&tm, T("2025-06-01T00:00:00Z"), &sl), 1);
	ck_assert_int_eq(sl.at, T("2026-01-01T00:00:00Z"));
	ck_assert_int_eq(slot_next(&tm, T("2026-01-01T00:00:00Z") - 1, &sl), 1);
	ck_assert_int_eq(sl.at, T("2026-01-01T00:00:00Z"));
	/* strictly after: a slot instant gives the following slot */
	ck_assert_int_eq(slot_next(&tm, T("2026-01-01T00:00:00Z"), &sl), 1);
	ck_assert_int_eq(sl.at, T("2026-01-01T00:01:30Z"));
	ck_assert_int_eq(slot_next(&tm, T("2026-01-01T00:01:29Z"), &sl), 1);
	ck_assert_int_eq(sl.at, T("2026-01-01T00:01:30Z"));
	ck_assert_int_eq(slot_next(&tm, T("2026-01-02T00:00:00Z"), &sl), 1);
	ck_assert_int_eq(sl.at, T("2026-01-02T00:01:30Z"));
	/* an anchor before the epoch and instants before the anchor */
	tm.start_at = -1000;
	ck_assert_int_eq(slot_next(&tm, -1000, &sl), 1);
	ck_assert_int_eq(sl.at, -910);
	ck_assert_int_eq(slot_next(&tm, -5000, &sl), 1);
	ck_assert_int_eq(sl.at, -1000);
	/* nothing past year 9999, and no overflow on the way there */
	ck_assert_int_eq(slot_next(&tm, CV_TIME_MAX, &sl), 0);
	ck_assert_int_eq(slot_next(&tm, INT64_MAX, &sl), 0);
	tm.interval = INT64_MAX;
	tm.start_at = 1000;
	ck_assert_int_eq(slot_next(&tm, 999, &sl), 1);
	ck_assert_int_eq(sl.at, 1000);
	ck_assert_int_eq(slot_next(&tm, 1000, &sl), 0);
	tm.interval = 3600;
	tm.start_at = CV_TIME_MAX - 10;
	ck_assert_int_eq(slot_next(&tm, 0, &sl), 1);
	ck_assert_int_eq(sl.at, CV_TIME_MAX - 10);
	ck_assert_int_eq(slot_next(&tm, CV_TIME_MAX - 10, &sl), 0);
}
END_TEST

START_TEST(test_once)
{
	struct timing tm = {
	    .kind = SCHED_KIND_ONCE, .at = T("2026-12-24T17:00:00Z")};
	struct slot sl;

	ck_assert_int_eq(slot_next(&tm, T("2026-12-24T16:59:59Z"), &sl), 1);
	ck_assert_int_eq(sl.at, tm.at);
	ck_assert_int_eq(slot_next(&tm, tm.at, &sl), 0);
	ck_assert_int_eq(slot_next(&tm, tm.at + 1, &sl), 0);
	/* no slot before start_at */
	tm.start_at = tm.at + 1;
	ck_assert_int_eq(slot_next(&tm, 0, &sl), 0);
	tm.start_at = INT64_MIN;
	ck_assert_int_eq(slot_next(&tm, 0, &sl), 1);
}
END_TEST

/*
 * Instants with milliseconds: a once slot and an interval grid keep them
 * (0, 1 and 999 ms, and before 1970, where the second rounds down), a cron
 * start_at rounds up to its next second, CV_NEVER stays.
 */
START_TEST(test_ms)
{
	struct timing tm = {.kind = SCHED_KIND_ONCE, .start_at = CV_TIME_MIN};
	struct slot sl;
	static const int64_t once[][3] = {{1767225600000, 1767225600, 0},
	    {1767225600001, 1767225600, 1}, {1767225600999, 1767225600, 999},
	    {-1, -1, 999}, {-1000, -1, 0}};

	for (size_t i = 0; i < sizeof(once) / sizeof(once[0]); i++) {
		slot_set_ms(&tm, once[i][0], SCHEDULE_UNSET);
		ck_assert_int_eq(tm.at, once[i][1]);
		ck_assert_int_eq(tm.ms, once[i][2]);
		ck_assert_int_eq(slot_next(&tm, tm.at - 1, &sl), 1);
		ck_assert_int_eq(slot_ms(&tm, sl.at), once[i][0]);
	}
	ck_assert(slot_ms(&tm, CV_NEVER) == CV_NEVER);
	tm = (struct timing){.kind = SCHED_KIND_INTERVAL, .interval = 10};
	slot_set_ms(&tm, SCHEDULE_UNSET, 1767225600436);
	ck_assert_int_eq(tm.start_at, 1767225600);
	ck_assert_int_eq(tm.ms, 436);
	ck_assert_int_eq(slot_next(&tm, 1767225600 + 25, &sl), 1);
	ck_assert_int_eq(slot_ms(&tm, sl.at), 1767225630436);
	/* Without start_at the anchor is left as it is, whole seconds. */
	tm.start_at = 77;
	slot_set_ms(&tm, SCHEDULE_UNSET, SCHEDULE_UNSET);
	ck_assert_int_eq(tm.start_at, 77);
	ck_assert_int_eq(tm.ms, 0);
	tm = (struct timing){.kind = SCHED_KIND_CRON};
	slot_set_ms(&tm, SCHEDULE_UNSET, 1767225600001);
	ck_assert_int_eq(tm.start_at, 1767225601);
	ck_assert_int_eq(tm.ms, 0);
	slot_set_ms(&tm, SCHEDULE_UNSET, 1767225600000);
	ck_assert_int_eq(tm.start_at, 1767225600);
}
END_TEST

START_TEST(test_cron_utc)
{
	struct timing tm = cron_timing("0 9 * * 1-5", NULL, 0, 0);

	/* Saturday 2026-03-07: the next weekday 09:00 is Monday */
	EXPECT(&tm, "2026-03-07T00:00:00Z", "2026-03-09T09:00:00Z",
	    "2026-03-10T09:00:00Z");
	/* start_at as low as it goes means no start */
	tm.start_at = INT64_MIN;
	EXPECT(&tm, "2026-03-07T00:00:00Z", "2026-03-09T09:00:00Z");
	tm = cron_timing("0 0 29 2 *", NULL, 0, 0);
	EXPECT(&tm, "2026-01-01T00:00:00Z", "2028-02-29T00:00:00Z",
	    "2032-02-29T00:00:00Z");
	EXPECT(&tm, "2097-03-01T00:00:00Z", "2104-02-29T00:00:00Z");
	tm = cron_timing("0 0 13 * FRI", NULL, 0, 0);
	/* 2026-02-13 is a Friday the 13th: it fires once, not twice */
	EXPECT(&tm, "2026-02-10T00:00:00Z", "2026-02-13T00:00:00Z",
	    "2026-02-20T00:00:00Z", "2026-02-27T00:00:00Z",
	    "2026-03-06T00:00:00Z", "2026-03-13T00:00:00Z");
	tm = cron_timing("0 0 */2 * MON", NULL, 0, 0);
	/* odd days that are Mondays */
	EXPECT(&tm, "2026-03-01T00:00:00Z", "2026-03-09T00:00:00Z",
	    "2026-03-23T00:00:00Z", "2026-04-13T00:00:00Z");
	tm = cron_timing("* * * * *", NULL, 0, 0);
	EXPECT(&tm, "2026-03-01T00:00:30Z", "2026-03-01T00:01:00Z",
	    "2026-03-01T00:02:00Z");
	/* start_at: no slot before it */
	tm = cron_timing("0 * * * *", NULL, 0, 0);
	tm.start_at = T("2026-03-01T05:00:00Z");
	EXPECT(&tm, "2026-03-01T00:00:00Z", "2026-03-01T05:00:00Z",
	    "2026-03-01T06:00:00Z");
}
END_TEST

START_TEST(test_new_york)
{
	const char *z = "America/New_York";
	struct timing tm = cron_timing("30 2 * * *", z, 0, 0);

	/* spring forward 2026-03-08 02:00 EST -> 03:00 EDT at 07:00Z */
	EXPECT(&tm, "2026-03-06T12:00:00Z", "2026-03-07T07:30:00Z",
	    "2026-03-08T07:00:00Z!", "2026-03-09T06:30:00Z");
	tm = cron_timing("30 2 * * *", z, DST_GAP_SKIP, 0);
	EXPECT(&tm, "2026-03-06T12:00:00Z", "2026-03-07T07:30:00Z",
	    "2026-03-09T06:30:00Z");
	/* several matches in the gap, and 03:00 itself, fire once */
	tm = cron_timing("0,30 2,3 * * *", z, 0, 0);
	EXPECT(&tm, "2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z!",
	    "2026-03-08T07:30:00Z", "2026-03-09T06:00:00Z");
	/* a wildcard job fires at every real matching instant only */
	tm = cron_timing("*/30 * * * *", z, 0, 0);
	EXPECT(&tm, "2026-03-08T06:00:00Z", "2026-03-08T06:30:00Z",
	    "2026-03-08T07:00:00Z", "2026-03-08T07:30:00Z");
	/* with shift it also fires once for the vanished 02:00 and 02:30,
	 * and that coincides with the real 03:00 */
	tm = cron_timing("*/30 * * * *", z, DST_GAP_SHIFT, 0);
	EXPECT(&tm, "2026-03-08T06:00:00Z", "2026-03-08T06:30:00Z",
	    "2026-03-08T07:00:00Z!", "2026-03-08T07:30:00Z");

	/* fall back 2026-11-01 02:00 EDT -> 01:00 EST at 06:00Z */
	tm = cron_timing("30 1 * * *", z, 0, 0);
	EXPECT(&tm, "2026-10-31T12:00:00Z", "2026-11-01T05:30:00Zo",
	    "2026-11-02T06:30:00Z");
	tm = cron_timing("30 1 * * *", z, 0, DST_FOLD_BOTH);
	EXPECT(&tm, "2026-10-31T12:00:00Z", "2026-11-01T05:30:00Z1",
	    "2026-11-01T06:30:00Z2", "2026-11-02T06:30:00Z");
	tm = cron_timing("*/30 * * * *", z, 0, 0);
	EXPECT(&tm, "2026-11-01T04:45:00Z", "2026-11-01T05:00:00Z1",
	    "2026-11-01T05:30:00Z1", "2026-11-01T06:00:00Z2",
	    "2026-11-01T06:30:00Z2", "2026-11-01T07:00:00Z");
	tm = cron_timing("*/30 * * * *", z, 0, DST_FOLD_FIRST);
	EXPECT(&tm, "2026-11-01T04:45:00Z", "2026-11-01T05:00:00Zo",
	    "2026-11-01T05:30:00Zo", "2026-11-01T07:00:00Z");
	tm = cron_timing("0 9 * * 1-5", z, 0, 0);
	EXPECT(&tm, "2026-03-07T00:00:00Z", "2026-03-09T13:00:00Z",
	    "2026-03-10T13:00:00Z");
}
END_TEST

START_TEST(test_other_zones)
{
	struct timing tm;

	/* London: 01:00 GMT -> 02:00 BST on 2026-03-29 at 01:00Z */
	tm = cron_timing("30 1 * * *", "Europe/London", 0, 0);
	EXPECT(&tm, "2026-03-28T12:00:00Z", "2026-03-29T01:00:00Z!",
	    "2026-03-30T00:30:00Z");
	/* and back 02:00 BST -> 01:00 GMT on 2026-10-25 at 01:00Z */
	EXPECT(&tm, "2026-10-24T12:00:00Z", "2026-10-25T00:30:00Zo",
	    "2026-10-26T01:30:00Z");
	/* Lord Howe: a 30-minute gap 02:00 -> 02:30 +11 on 2026-10-04 */
	tm = cron_timing("15 2 * * *", "Australia/Lord_Howe", 0, 0);
	EXPECT(&tm, "2026-10-02T12:00:00Z", "2026-10-02T15:45:00Z",
	    "2026-10-03T15:30:00Z!", "2026-10-04T15:15:00Z");
	/* and a 30-minute fold 02:00 +11 -> 01:30 +10:30 on 2026-04-05 */
	tm = cron_timing("45 1 * * *", "Australia/Lord_Howe", 0, 0);
	EXPECT(&tm, "2026-04-04T00:00:00Z", "2026-04-04T14:45:00Zo",
	    "2026-04-05T15:15:00Z");
	tm = cron_timing("45 1 * * *", "Australia/Lord_Howe", 0, DST_FOLD_BOTH);
	EXPECT(&tm, "2026-04-04T00:00:00Z", "2026-04-04T14:45:00Z1",
	    "2026-04-04T15:15:00Z2", "2026-04-05T15:15:00Z");
	/* Kathmandu +05:45 */
	tm = cron_timing("0 9 * * *", "Asia/Kathmandu", 0, 0);
	EXPECT(&tm, "2026-06-01T00:00:00Z", "2026-06-01T03:15:00Z",
	    "2026-06-02T03:15:00Z");
	/* Chatham: 02:45 +1245 -> 03:45 +1345 on 2026-09-27 at 14:00Z */
	tm = cron_timing("0 3 * * *", "Pacific/Chatham", 0, 0);
	EXPECT(&tm, "2026-09-25T00:00:00Z", "2026-09-25T14:15:00Z",
	    "2026-09-26T14:00:00Z!", "2026-09-27T13:15:00Z");
	/* Santiago: midnight does not exist on 2026-09-06 (00:00 -> 01:00) */
	tm = cron_timing("0 0 * * *", "America/Santiago", 0, 0);
	EXPECT(&tm, "2026-09-04T12:00:00Z", "2026-09-05T04:00:00Z",
	    "2026-09-06T04:00:00Z!", "2026-09-07T03:00:00Z");
	/* and 23:xx Saturday repeats on 2026-04-04 (24:00 -> 23:00) */
	tm = cron_timing("30 23 * * *", "America/Santiago", 0, 0);
	EXPECT(&tm, "2026-04-04T12:00:00Z", "2026-04-05T02:30:00Zo",
	    "2026-04-06T03:30:00Z");
}
END_TEST

/* --- the brute-force reference ------------------------------------- */

static int
wall_matches(const struct cron *c, int64_t w)
{
	time_t tt = (time_t)w;
	struct tm tmv;

	gmtime_r(&tt, &tmv);
	return (c->minute >> tmv.tm_min & 1) && (c->hour >> tmv.tm_hour & 1) &&
	    (c->month >> (tmv.tm_mon + 1) & 1) &&
	    cron_day_matches(
	        c, tmv.tm_year + 1900, tmv.tm_mon + 1, tmv.tm_mday);
}

static int
cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/*
 * All fire instants in [a, b] by definition: every matching wall minute
 * resolved to its real instants under the schedule's DST rules.  Returns
 * the count, sorted and without duplicates, in out (room for max).
 */
static int
reference(const struct timing *tm, int64_t a, int64_t b, int64_t *out, int max)
{
	int wild = cron_is_wildcard(&tm->cron), n = 0, k = 0;
	int shift =
	    tm->gap == DST_GAP_SHIFT || (tm->gap == DST_GAP_AUTO && !wild);
	int both =
	    tm->fold == DST_FOLD_BOTH || (tm->fold == DST_FOLD_AUTO && wild);
	int64_t w0 = (a - 2 * 86400) / 60 * 60, utc[2];

	for (int64_t w = w0; w < b + 2 * 86400; w += 60) {
		if (!wall_matches(&tm->cron, w))
			continue;
		int r = tz_local_to_utc(tm->tz, w, utc);
		int64_t c[2];
		int nc = 0;

		if (r == 0 && shift)
			c[nc++] = utc[0];
		if (r >= 1)
			c[nc++] = utc[0];
		if (r == 2 && both)
			c[nc++] = utc[1];
		for (int i = 0; i < nc; i++)
			if (c[i] >= a && c[i] <= b) {
				ck_assert_int_lt(n, max);
				out[n++] = c[i];
			}
	}
	qsort(out, (size_t)n, sizeof(out[0]), cmp64);
	for (int i = 0; i < n; i++)
		if (k == 0 || out[i] != out[k - 1])
			out[k++] = out[i];
	return k;
}

static const char *const ref_zones[] = {
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",
    "Asia/Kathmandu",
    "Pacific/Chatham",
    "America/Santiago",
    "Europe/Dublin",
    "America/St_Johns",
    "Africa/Casablanca",
    "Antarctica/Troll",
    "Europe/Berlin",
    "Australia/Sydney",
};
static const char *const f_min[] = {
    "*", "*/15", "0", "30", "0,30", "5-50/15", "*/7", "45", "15,45"};
static const char *const f_hour[] = {
    "*", "*/2", "0-23/3", "1", "2", "1-3", "0,2,23", "*/5", "0", "3", "23"};
static const char *const f_dom[] = {
    "*", "*", "*", "*/2", "1-31", "8", "1,15,29"};
static const char *const f_dow[] = {
    "*", "*", "*", "1-5", "SUN", "0-6", "SAT,SUN"};

#define NELEM(a) (int)(sizeof(a) / sizeof(a[0]))
#define REF_MAX  40000

/*
 * For random expressions, zones and DST rules, the slot_next() sequence
 * over ten days around each transition of a year equals the reference.
 */
START_TEST(test_reference)
{
	static int64_t want[REF_MAX];
	static const int years[] = {1996, 2026, 2031, 2087};
	char expr[96], err[CV_ERRLEN];
	unsigned seed = 20261122u + (unsigned)_i;
	long compared = 0;

	srand(seed);
	for (int iter = 0; iter < 60; iter++) {
		struct timing tm;
		struct tz_span sp;
		struct slot sl;

		snprintf(expr, sizeof(expr), "%s %s %s * %s",
		    f_min[rand() % NELEM(f_min)],
		    f_hour[rand() % NELEM(f_hour)],
		    f_dom[rand() % NELEM(f_dom)], f_dow[rand() % NELEM(f_dow)]);
		tm = cron_timing(expr, ref_zones[rand() % NELEM(ref_zones)],
		    (enum dst_gap)(rand() % 3), (enum dst_fold)(rand() % 3));
		int64_t t = T("2026-01-01T00:00:00Z") +
		    (int64_t)(years[rand() % 4] - 2026) * 365 * 86400;
		for (int tr = 0; tr < 3; tr++) {
			tz_span_at(tm.tz, t, &sp);
			if (sp.end == INT64_MAX)
				break;
			int64_t a = sp.end - 5 * 86400, b = sp.end + 5 * 86400;
			int n = reference(&tm, a, b, want, REF_MAX), i = 0;

			for (int64_t x = a - 1;
			     slot_next(&tm, x, &sl) && sl.at <= b;
			     x = sl.at, i++) {
				ck_assert_msg(i < n && sl.at == want[i],
				    "%s in %s (gap %d fold %d): slot %d is "
				    "%lld, want %lld",
				    expr, tz_name(tm.tz), tm.gap, tm.fold, i,
				    (long long)sl.at,
				    i < n ? (long long)want[i] : -1LL);
			}
			ck_assert_msg(i == n, "%s in %s: %d slots, want %d",
			    expr, tz_name(tm.tz), i, n);
			compared += n;
			t = sp.end;
		}
	}
	(void)err;
	ck_assert_int_gt(compared, 1000);
}
END_TEST

/* --- jitter ---------------------------------------------------------- */

START_TEST(test_jitter)
{
	int seen[31] = {0};
	int64_t d;

	for (int64_t s = 0; s < 31000; s += 1) {
		d = slot_jitter("a1b2c3d4-0000", s * 60, s * 60 + 60, 30);
		ck_assert_int_ge(d, 0);
		ck_assert_int_le(d, 30);
		ck_assert_int_eq(
		    d, slot_jitter("a1b2c3d4-0000", s * 60, s * 60 + 60, 30));
		seen[d]++;
	}
	/* every value in range occurs, none dominates */
	for (int i = 0; i <= 30; i++) {
		ck_assert_int_gt(seen[i], 500);
		ck_assert_int_lt(seen[i], 1500);
	}
	/* never at or past the next slot */
	for (int64_t s = 0; s < 1000; s++) {
		d = slot_jitter("x", s * 10, s * 10 + 10, 3600);
		ck_assert_int_le(d, 9);
	}
	ck_assert_int_eq(slot_jitter("x", 100, 101, 3600), 0);
	ck_assert_int_eq(slot_jitter("x", 100, CV_NEVER, 0), 0);
	ck_assert_int_le(slot_jitter("x", 100, CV_NEVER, 5), 5);
	/* extremes do not overflow */
	ck_assert_int_ge(slot_jitter("x", 100, CV_NEVER, INT64_MAX), 0);
	ck_assert_int_eq(slot_jitter("x", 100, 100, 60), 0);
	ck_assert_int_eq(slot_jitter("x", 100, 50, 60), 0);
	ck_assert_int_le(slot_jitter("x", INT64_MIN, INT64_MAX, 60), 60);
	/* different schedules spread differently */
	int differ = 0;
	for (int64_t s = 0; s < 100; s++)
		differ += slot_jitter("sched-a", s, CV_NEVER, 1000) !=
		    slot_jitter("sched-b", s, CV_NEVER, 1000);
	ck_assert_int_gt(differ, 90);
}
END_TEST

/* --- catch-up -------------------------------------------------------- */

START_TEST(test_plan_interval)
{
	static struct slot_plan p;
	int64_t t0 = T("2026-05-01T00:00:00Z");
	struct timing tm = {
	    .kind = SCHED_KIND_INTERVAL, .interval = 60, .start_at = t0};
	struct catch_up_policy latest = {CATCH_UP_LATEST, 10, -1};
	struct catch_up_policy all = {CATCH_UP_ALL, 10, -1};
	struct catch_up_policy none = {CATCH_UP_NONE, 10, -1};
	struct catch_up_policy dl = {CATCH_UP_LATEST, 10, 3};

	/* not due yet */
	ck_assert_int_eq(slot_plan(&tm, &latest, t0, t0 - 1, &p), 0);
	ck_assert_int_eq(p.next, t0);
	/* on time */
	ck_assert_int_eq(slot_plan(&tm, &latest, t0, t0, &p), 1);
	ck_assert_int_eq(p.fire[0], t0);
	ck_assert_int_eq(p.missed, 0);
	ck_assert_int_eq(p.next, t0 + 60);
	/* 61 slots came due during an hour of downtime */
	ck_assert_int_eq(slot_plan(&tm, &latest, t0, t0 + 3605, &p), 1);
	ck_assert_int_eq(p.fire[0], t0 + 3600);
	ck_assert_int_eq(p.missed, 60);
	ck_assert_int_eq(p.missed_first, t0);
	ck_assert_int_eq(p.missed_last, t0 + 3540);
	ck_assert_int_eq(p.next, t0 + 3660);
	ck_assert_int_eq(p.exact, 1);
	ck_assert_int_eq(slot_plan(&tm, &all, t0, t0 + 3605, &p), 10);
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(p.fire[i], t0 + 3060 + 60 * i);
	ck_assert_int_eq(p.missed, 51);
	ck_assert_int_eq(p.missed_last, t0 + 3000);
	/* fewer due than the maximum: all of them */
	ck_assert_int_eq(slot_plan(&tm, &all, t0, t0 + 125, &p), 3);
	ck_assert_int_eq(p.fire[0], t0);
	ck_assert_int_eq(p.fire[2], t0 + 120);
	ck_assert_int_eq(p.missed, 0);
	/* none: the newest fires only when it is not really late */
	ck_assert_int_eq(slot_plan(&tm, &none, t0, t0 + 3605, &p), 1);
	ck_assert_int_eq(p.missed, 60);
	ck_assert_int_eq(slot_plan(&tm, &none, t0, t0 + 3600 + 59, &p), 1);
	tm.interval = 3600;
	ck_assert_int_eq(slot_plan(&tm, &none, t0, t0 + 3661, &p), 0);
	ck_assert_int_eq(p.missed, 2);
	ck_assert_int_eq(p.missed_first, t0);
	ck_assert_int_eq(p.missed_last, t0 + 3600);
	/* a starting deadline expires what is too late */
	ck_assert_int_eq(slot_plan(&tm, &dl, t0, t0 + 3603, &p), 1);
	ck_assert_int_eq(slot_plan(&tm, &dl, t0, t0 + 3604, &p), 0);
	ck_assert_int_eq(p.expired, 1);
	ck_assert_int_eq(p.expired_first, t0 + 3600);
	ck_assert_int_eq(p.missed, 1);
	ck_assert_int_eq(p.next, t0 + 7200);
}
END_TEST

START_TEST(test_plan_cron_and_once)
{
	static struct slot_plan p;
	struct timing tm = cron_timing("*/10 * * * *", "Europe/Berlin", 0, 0);
	struct catch_up_policy latest = {CATCH_UP_LATEST, 5, -1};
	struct catch_up_policy all = {CATCH_UP_ALL, 5, 600};
	int64_t t0 = T("2026-05-01T00:00:00Z");

	ck_assert_int_eq(slot_plan(&tm, &latest, t0, t0 + 86400 + 30, &p), 1);
	ck_assert_int_eq(p.fire[0], t0 + 86400);
	ck_assert_int_eq(p.missed, 144);
	ck_assert_int_eq(p.next, t0 + 86400 + 600);
	/* all, but a ten-minute deadline: four of the five are too late */
	ck_assert_int_eq(slot_plan(&tm, &all, t0, t0 + 86400 + 30, &p), 1);
	ck_assert_int_eq(p.expired, 4);
	ck_assert_int_eq(p.expired_first, t0 + 86400 - 2400);
	ck_assert_int_eq(p.missed, 140);

	/* years of downtime with a slot a minute: a lower bound, fast */
	tm = cron_timing("* * * * *", NULL, 0, 0);
	ck_assert_int_eq(
	    slot_plan(&tm, &latest, t0, t0 + 3 * 366 * 86400, &p), 1);
	ck_assert_int_eq(p.fire[0], t0 + 3 * 366 * 86400);
	ck_assert_int_eq(p.exact, 0);
	/* a lower bound: at least what was counted, never more than true */
	ck_assert_int_ge(p.missed, 100000);
	ck_assert_int_le(p.missed, 3 * 366 * 1440);
	/* just past the counting limit: still never an overcount */
	ck_assert_int_eq(slot_plan(&tm, &latest, t0, t0 + 100099 * 60, &p), 1);
	ck_assert_int_eq(p.fire[0], t0 + 100099 * 60);
	ck_assert_int_ge(p.missed, 100000);
	ck_assert_int_le(p.missed, 100099);
	/* below it: exact */
	ck_assert_int_eq(slot_plan(&tm, &latest, t0, t0 + 99998 * 60, &p), 1);
	ck_assert_int_eq(p.exact, 1);
	ck_assert_int_eq(p.missed, 99998);

	struct timing once = {.kind = SCHED_KIND_ONCE, .at = t0};
	ck_assert_int_eq(slot_plan(&once, &latest, t0, t0 + 7200, &p), 1);
	ck_assert_int_eq(p.fire[0], t0);
	ck_assert_int_eq(p.next, CV_NEVER);
}
END_TEST

START_TEST(test_notes)
{
	ck_assert_str_eq(slot_note_text(SLOT_NOTE_NONE), "");
	for (int i = 1; i <= SLOT_NOTE_FOLD_SECOND; i++)
		ck_assert_ptr_nonnull(
		    strstr(slot_note_text((enum slot_note)i), "DST"));
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("slot");
	TCase *tc = tcase_create("slot");
	TCase *ref = tcase_create("reference");

	tcase_set_timeout(tc, 60);
	tcase_set_timeout(ref, 120);
	tcase_add_test(tc, test_interval);
	tcase_add_test(tc, test_once);
	tcase_add_test(tc, test_ms);
	tcase_add_test(tc, test_cron_utc);
	tcase_add_test(tc, test_new_york);
	tcase_add_test(tc, test_other_zones);
	tcase_add_test(tc, test_jitter);
	tcase_add_test(tc, test_plan_interval);
	tcase_add_test(tc, test_plan_cron_and_once);
	tcase_add_test(tc, test_notes);
	tcase_add_loop_test(ref, test_reference, 0, 4);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, ref);
	return cvtest_run(s);
}
