/*
 * check_civil.c: the calendar arithmetic of common/civil.c against glibc's
 * timegm() and gmtime_r() for every day from year 1 to 9999 and a sample
 * far outside, plus the division helpers and leap-year rules.
 */
#include <time.h>

#include "cvtest.h"
#include "cronvisor.h"

START_TEST(test_every_day_against_glibc)
{
	const int64_t first = -719162,
	              last = 2932896; /* 0001-01-01, 9999-12-31 */
	long bad = 0;

	for (int64_t days = first; days <= last; days++) {
		time_t t = (time_t)(days * 86400);
		struct tm tmv;
		int64_t y;
		int m, d;

		gmtime_r(&t, &tmv);
		civil_date(days, &y, &m, &d);
		bad += y != tmv.tm_year + 1900 || m != tmv.tm_mon + 1 ||
		    d != tmv.tm_mday || civil_weekday(days) != tmv.tm_wday ||
		    civil_days(y, m, d) != days;
	}
	ck_assert_int_eq(bad, 0);
}
END_TEST

START_TEST(test_far_years)
{
	static const int64_t years[] = {-1000000, -4001, -400, -1, 0, 1, 1582,
	    1900, 2000, 2100, 2400, 99999, 1000000007};

	for (size_t i = 0; i < sizeof(years) / sizeof(years[0]); i++)
		for (int m = 1; m <= 12; m++)
			for (int d = 1; d <= civil_month_days(years[i], m);
			     d++) {
				int64_t y2;
				int m2, d2;

				civil_date(
				    civil_days(years[i], m, d), &y2, &m2, &d2);
				ck_assert(y2 == years[i] && m2 == m && d2 == d);
			}
	/* consecutive years are 365 or 366 days apart */
	for (int64_t y = -1000; y < 3000; y++)
		ck_assert_int_eq(civil_days(y + 1, 1, 1) - civil_days(y, 1, 1),
		    365 + civil_is_leap(y));
}
END_TEST

START_TEST(test_rules)
{
	ck_assert(civil_is_leap(2000) && civil_is_leap(2024) &&
	    civil_is_leap(0) && civil_is_leap(-4) && civil_is_leap(2400));
	ck_assert(!civil_is_leap(1900) && !civil_is_leap(2100) &&
	    !civil_is_leap(2026) && !civil_is_leap(-1) && !civil_is_leap(-100));
	ck_assert_int_eq(civil_month_days(2024, 2), 29);
	ck_assert_int_eq(civil_month_days(2100, 2), 28);
	ck_assert_int_eq(civil_month_days(2026, 4), 30);
	ck_assert_int_eq(civil_month_days(2026, 12), 31);
	ck_assert_int_eq(civil_days(1970, 1, 1), 0);
	ck_assert_int_eq(civil_days(2026, 3, 9), 20521);
	ck_assert_int_eq(civil_weekday(20521), 1); /* a Monday */
	ck_assert_int_eq(civil_weekday(-1), 3);    /* 1969-12-31, Wednesday */
	ck_assert_int_eq(civil_fdiv(-1, 60), -1);
	ck_assert_int_eq(civil_fdiv(-60, 60), -1);
	ck_assert_int_eq(civil_fdiv(-61, 60), -2);
	ck_assert_int_eq(civil_fdiv(59, 60), 0);
	ck_assert_int_eq(civil_fmod(-1, 60), 59);
	ck_assert_int_eq(civil_fmod(-60, 60), 0);
	ck_assert_int_eq(civil_fmod(61, 60), 1);
	ck_assert_int_eq(civil_fmod(INT64_MIN, 86400), 30592);
	ck_assert_int_eq(civil_fdiv(INT64_MIN, 86400), -106751991167301);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("civil");
	TCase *tc = tcase_create("civil");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_every_day_against_glibc);
	tcase_add_test(tc, test_far_years);
	tcase_add_test(tc, test_rules);
	suite_add_tcase(s, tc);
	return cvtest_run(s);
}
