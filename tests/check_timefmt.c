/*
 * check_timefmt.c: RFC 3339 instants and durations (common/timefmt.c):
 * output in UTC and local time, input with and without offsets, wall times
 * inside DST gaps and folds, and every error path.
 */
#include <string.h>

#include "cvtest.h"
#include "cronvisor.h"

static int64_t
parse(const char *s, const char *zone)
{
	char err[CV_ERRLEN];
	const struct tz *tz = zone ? tz_get(zone, err, sizeof(err)) : NULL;
	int64_t t = 42;

	ck_assert_msg(zone == NULL || tz != NULL, "%s", err);
	ck_assert_msg(
	    timefmt_parse(s, tz, &t, err, sizeof(err)) == 0, "%s: %s", s, err);
	return t;
}

static void
parse_fails(const char *s, const char *want)
{
	char err[CV_ERRLEN] = "";
	int64_t t = 42;

	ck_assert_msg(
	    timefmt_parse(s, NULL, &t, err, sizeof(err)) == -1, "%s parsed", s);
	ck_assert_int_eq(t, 42);
	ck_assert_msg(
	    strstr(err, want) != NULL, "%s: \"%s\" lacks \"%s\"", s, err, want);
}

START_TEST(test_output)
{
	char buf[40];
	const struct tz *tz;
	char err[CV_ERRLEN];

	ck_assert_int_eq(timefmt_utc(0, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "1970-01-01T00:00:00Z");
	ck_assert_int_eq(timefmt_utc(1773061200, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "2026-03-09T13:00:00Z");
	ck_assert_int_eq(timefmt_utc(CV_TIME_MIN, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "0001-01-01T00:00:00Z");
	ck_assert_int_eq(timefmt_utc(CV_TIME_MAX, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "9999-12-31T23:59:59Z");
	ck_assert_int_eq(timefmt_utc(CV_TIME_MAX + 1, buf, sizeof(buf)), -1);
	ck_assert_int_eq(timefmt_utc(0, buf, 20), -1);
	ck_assert_int_eq(timefmt_utc(0, buf, 21), 0);

	tz = tz_get("America/New_York", err, sizeof(err));
	ck_assert_ptr_nonnull(tz);
	ck_assert_int_eq(timefmt_local(1773061200, tz, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "2026-03-09T09:00:00-04:00");
	tz = tz_get("Asia/Kathmandu", err, sizeof(err));
	ck_assert_int_eq(timefmt_local(1773061200, tz, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "2026-03-09T18:45:00+05:45");
	ck_assert_int_eq(timefmt_local(0, NULL, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "1970-01-01T00:00:00+00:00");
	/* local mean time had offsets with seconds */
	tz = tz_get("Europe/Amsterdam", err, sizeof(err));
	ck_assert_int_eq(timefmt_local(-2000000000, tz, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "1906-08-16T20:46:12+00:19:32");
}
END_TEST

START_TEST(test_input)
{
	ck_assert_int_eq(parse("2026-03-09T13:00:00Z", NULL), 1773061200);
	ck_assert_int_eq(parse("2026-03-09t13:00:00z", NULL), 1773061200);
	ck_assert_int_eq(parse("2026-03-09 13:00:00Z", NULL), 1773061200);
	ck_assert_int_eq(parse("2026-03-09T13:00Z", NULL), 1773061200);
	/* In whole seconds a fraction rounds up: never earlier than given. */
	ck_assert_int_eq(parse("2026-03-09T13:00:00.999Z", NULL), 1773061201);
	ck_assert_int_eq(parse("2026-03-09T13:00:00.001Z", NULL), 1773061201);
	ck_assert_int_eq(parse("2026-03-09T13:00:00.000Z", NULL), 1773061200);
	ck_assert_int_eq(parse("1969-12-31T23:59:59.5Z", NULL), 0);
	ck_assert_int_eq(parse("2026-03-09T09:00:00-04:00", NULL), 1773061200);
	ck_assert_int_eq(parse("2026-03-09T18:45:00+05:45", NULL), 1773061200);
	ck_assert_int_eq(parse("2026-03-09T18:45:00+0545", NULL), 1773061200);
	ck_assert_int_eq(parse("2026-03-09", NULL), 1773014400);
	ck_assert_int_eq(parse("@1773061200", NULL), 1773061200);
	ck_assert_int_eq(parse("@-5", NULL), -5);
	/* wall time in a zone */
	ck_assert_int_eq(
	    parse("2026-03-09T09:00:00", "America/New_York"), 1773061200);
	/* 02:30 does not exist on 2026-03-08: the transition, 07:00Z */
	ck_assert_int_eq(
	    parse("2026-03-08T02:30:00", "America/New_York"), 1772953200);
	/* 01:30 happens twice on 2026-11-01: the first, 05:30Z */
	ck_assert_int_eq(
	    parse("2026-11-01T01:30:00", "America/New_York"), 1793511000);
	/* an explicit offset wins over the zone */
	ck_assert_int_eq(
	    parse("2026-11-01T01:30:00-05:00", "America/New_York"), 1793514600);
	ck_assert_int_eq(parse("2024-02-29T00:00:00Z", NULL), 1709164800);
	/* what timefmt_local() writes for local mean time reads back */
	ck_assert_int_eq(
	    parse("1906-08-16T20:46:12+00:19:32", NULL), -2000000000);
}
END_TEST

/* timefmt_parse_ms() of s in UTC; fails the test on error. */
static int64_t
parse_ms(const char *s)
{
	char err[CV_ERRLEN] = "";
	int64_t t = 42;

	ck_assert_msg(timefmt_parse_ms(s, NULL, &t, err, sizeof(err)) == 0,
	    "%s: %s", s, err);
	return t;
}

START_TEST(test_input_ms)
{
	char err[CV_ERRLEN] = "";
	int64_t t = 42;

	/* 0, 1 and 999 ms, and fewer digits: tenths, hundredths. */
	ck_assert_int_eq(parse_ms("2026-11-25T17:40:20Z"), 1795628420000);
	ck_assert_int_eq(parse_ms("2026-11-25T17:40:20.000Z"), 1795628420000);
	ck_assert_int_eq(parse_ms("2026-11-25T17:40:20.001Z"), 1795628420001);
	ck_assert_int_eq(parse_ms("2026-11-25T17:40:20.999Z"), 1795628420999);
	ck_assert_int_eq(parse_ms("2026-11-25T17:40:20.436Z"), 1795628420436);
	ck_assert_int_eq(parse_ms("2026-11-25T17:40:20.4Z"), 1795628420400);
	ck_assert_int_eq(parse_ms("2026-11-25T17:40:20.43Z"), 1795628420430);
	ck_assert_int_eq(
	    parse_ms("2026-11-25T18:40:20.436+01:00"), 1795628420436);
	ck_assert_int_eq(parse_ms("1969-12-31T23:59:59.999Z"), -1);
	ck_assert_int_eq(parse_ms("@1795628420"), 1795628420000);
	/* Finer than a millisecond: refused, not cut; *out untouched. */
	ck_assert_int_eq(timefmt_parse_ms("2026-11-25T17:40:20.4361Z", NULL, &t,
	                     err, sizeof(err)),
	    -1);
	ck_assert_str_eq(err,
	    ".4361: finer than milliseconds (at most 3 digits after the "
	    "seconds)");
	ck_assert_int_eq(t, 42);
	ck_assert_int_eq(timefmt_parse_ms("2026-11-25T17:40:20.0000Z", NULL, &t,
	                     err, sizeof(err)),
	    -1);
	ck_assert_int_eq(
	    timefmt_parse("2026-11-25T17:40:20.4361Z", NULL, &t, err, 64), -1);
	ck_assert_int_eq(t, 42);
}
END_TEST

START_TEST(test_output_ms)
{
	const struct tz *tz;
	char buf[40], err[CV_ERRLEN];

	ck_assert_int_eq(timefmt_utc_ms(1795628420436, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "2026-11-25T17:40:20.436Z");
	ck_assert_int_eq(timefmt_utc_ms(1795628420001, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "2026-11-25T17:40:20.001Z");
	ck_assert_int_eq(timefmt_utc_ms(1795628420999, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "2026-11-25T17:40:20.999Z");
	/* A whole second prints as timefmt_utc() has it. */
	ck_assert_int_eq(timefmt_utc_ms(1795628420000, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "2026-11-25T17:40:20Z");
	ck_assert_int_eq(timefmt_utc_ms(-1, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "1969-12-31T23:59:59.999Z");
	/* Too small a buffer for the fraction. */
	ck_assert_int_eq(timefmt_utc_ms(1795628420436, buf, 22), -1);
	tz = tz_get("Asia/Kathmandu", err, sizeof(err));
	ck_assert_ptr_nonnull(tz);
	ck_assert_int_eq(
	    timefmt_local_ms(1795628420436, tz, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "2026-11-25T23:25:20.436+05:45");
	/* What is written reads back to the millisecond. */
	ck_assert_int_eq(parse_ms(buf), 1795628420436);
}
END_TEST

START_TEST(test_input_errors)
{
	parse_fails("", "expected YYYY-MM-DD");
	parse_fails("yesterday", "expected YYYY-MM-DD");
	parse_fails("2026-3-9T13:00:00Z", "expected YYYY-MM-DD");
	parse_fails("2026-03-09T13", "expected YYYY-MM-DD");
	parse_fails("2026-13-01T00:00:00Z", "out of range");
	parse_fails("2026-02-29T00:00:00Z", "out of range");
	parse_fails("2026-04-31T00:00:00Z", "out of range");
	parse_fails("2026-01-01T24:00:00Z", "out of range");
	parse_fails("2026-01-01T23:60:00Z", "out of range");
	parse_fails("2026-01-01T23:59:60Z", "out of range");
	parse_fails("0000-01-01T00:00:00Z", "out of range");
	parse_fails("2026-01-01T00:00:00+25:00", "bad UTC offset");
	parse_fails("2026-01-01T00:00:00+05:", "bad UTC offset");
	parse_fails("2026-01-01T00:00:00 UTC", "bad UTC offset");
	parse_fails("2026-01-01T00:00:00Zjunk", "bad UTC offset");
	parse_fails("2026-01-01T00:00:00+01:00:60", "bad UTC offset");
	parse_fails("2026-01-01T00:00:00+01:00:", "bad UTC offset");
	parse_fails("2026-01-01T00:00:00+0100:00", "bad UTC offset");
	parse_fails("2026-01-01T00:00.5Z", "bad UTC offset");
	parse_fails("@ 5", "bad epoch seconds");
	parse_fails("@+5", "bad epoch seconds");
	parse_fails("2026-02-30", "2026-02-30: date or time out of range");
	parse_fails("@", "bad epoch seconds");
	parse_fails("@12x", "bad epoch seconds");
	parse_fails("@99999999999999999999", "bad epoch seconds");
	parse_fails("@253402300800", "bad epoch seconds");
	parse_fails("9999-12-31T23:59:59-01:00", "out of range");
}
END_TEST

START_TEST(test_duration)
{
	static const struct {
		const char *s;
		int64_t want;
	} ok[] = {{"90", 90}, {"90s", 90}, {"5m", 300}, {"2h", 7200},
	    {"1d", 86400}, {"1w", 604800}, {"1h30m", 5400}, {"1d2h3m4s", 93784},
	    {"1", 1}, {"3162240000s", 3162240000}};
	static const char *const bad[] = {"", "0", "0s", "-5", "5x", "h",
	    "1h30", "1.5h", " 5m", "5m ", "3162240001s", "99999999999999999999",
	    "1h1h", "30m1h", "5s5s", "36601d"};
	char err[CV_ERRLEN];
	int64_t v;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ck_assert_msg(
		    timefmt_duration(ok[i].s, &v, err, sizeof(err)) == 0,
		    "%s: %s", ok[i].s, err);
		ck_assert_int_eq(v, ok[i].want);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 7;
		ck_assert_msg(
		    timefmt_duration(bad[i], &v, err, sizeof(err)) == -1,
		    "%s parsed", bad[i]);
		ck_assert_int_eq(v, 7);
		ck_assert_ptr_nonnull(strstr(err, "duration"));
	}
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("timefmt");
	TCase *tc = tcase_create("timefmt");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_output);
	tcase_add_test(tc, test_input);
	tcase_add_test(tc, test_input_errors);
	tcase_add_test(tc, test_input_ms);
	tcase_add_test(tc, test_output_ms);
	tcase_add_test(tc, test_duration);
	suite_add_tcase(s, tc);
	return cvtest_run(s);
}
