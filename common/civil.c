/*
 * civil.c: the proleptic Gregorian calendar as integer arithmetic on day
 * numbers (days since 1970-01-01, negative before it).  The time-zone
 * reader, the cron calendar search and the time formatter all need dates
 * of wall times; they take them from here rather than from gmtime_r() and
 * timegm(), because glibc's gmtime_r() takes the time zone lock on every
 * call, timegm() normalises through mktime()'s search, and the cron search
 * calls these once for every month it skips.  Exact for every year an
 * int64_t of days can hold; no state, no locks.
 */
#include "cronvisor.h"

/* Floor division for b > 0: rounds towards minus infinity. */
int64_t
civil_fdiv(int64_t a, int64_t b)
{
	return a / b - (a % b != 0 && a < 0);
}

/* The remainder that goes with civil_fdiv(): 0 <= r < b for b > 0. */
int64_t
civil_fmod(int64_t a, int64_t b)
{
	int64_t r = a % b;

	return r < 0 ? r + b : r;
}

/* Returns 1 if y is a leap year of the Gregorian calendar. */
int
civil_is_leap(int64_t y)
{
	return civil_fmod(y, 4) == 0 &&
	    (civil_fmod(y, 100) != 0 || civil_fmod(y, 400) == 0);
}

/* Days in month m (1-12) of year y. */
int
civil_month_days(int64_t y, int m)
{
	static const int days[13] = {
	    0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	return m == 2 && civil_is_leap(y) ? 29 : days[m];
}

/*
 * The day number of y-m-d (m 1-12, d 1-31; d past the month's end runs
 * into the next).  The year is counted from March, so that the leap day
 * ends it: a 400-year era has 146097 days, and within an era the day of a
 * March-based year is 365 per year plus the leap days before it.
 */
int64_t
civil_days(int64_t y, int m, int d)
{
	int64_t era, yoe, doy;

	if (m <= 2)
		y--;
	era = civil_fdiv(y, 400);
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}

/* The date of day number days: the inverse of civil_days(). */
void
civil_date(int64_t days, int64_t *y, int *m, int *d)
{
	int64_t z = days + 719468, era, doe, yoe, doy, mp;

	era = civil_fdiv(z, 146097);
	doe = z - era * 146097;
	/* Years of the era, correcting for the leap days of 4, 100, 400. */
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

/* The weekday of day number days, Sunday = 0 (1970-01-01 was a Thursday). */
int
civil_weekday(int64_t days)
{
	return (int)civil_fmod(days + 4, 7);
}
