/*
 * timefmt.c: instants and durations as people and the API write them.
 * Output is RFC 3339: UTC with a "Z", or local time with its offset.  Input
 * is RFC 3339 with "Z" or an offset (an instant), the same without one (a
 * wall time in the given zone, resolved like a fixed-time cron job: a time
 * inside a DST gap means the transition, a repeated one its first pass),
 * a bare date (its midnight), or "@" and epoch seconds.  Instants keep
 * their milliseconds (timefmt_parse_ms(), timefmt_utc_ms()): a fraction
 * of up to three digits is read, a finer one refused rather than cut.
 * Durations are a number of seconds or a sequence such as "1h30m", "90s",
 * "2d".
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisor.h"

/* Writes the broken-down form of wall time w as "YYYY-MM-DDTHH:MM:SS". */
static int
wall_format(int64_t w, char *buf, size_t len)
{
	int64_t y, secs = civil_fmod(w, 86400);
	int m, d, n;

	if (w < CV_TIME_MIN - 90000 || w > CV_TIME_MAX + 90000)
		return -1;
	civil_date(civil_fdiv(w, 86400), &y, &m, &d);
	n = snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d", (int)y, m, d,
	    (int)(secs / 3600), (int)(secs / 60 % 60), (int)(secs % 60));
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/*
 * Formats t as "2026-03-09T13:00:00Z" into buf.  Returns 0, or -1 when t is
 * outside [CV_TIME_MIN, CV_TIME_MAX] or buf is too small (25 bytes do).
 */
int
timefmt_utc(int64_t t, char *buf, size_t len)
{
	if (t < CV_TIME_MIN || t > CV_TIME_MAX || wall_format(t, buf, len) ||
	    strlen(buf) + 2 > len)
		return -1;
	strcat(buf, "Z");
	return 0;
}

/*
 * Formats t as local time in tz with its offset, "2026-03-09T09:00:00-04:00"
 * (offsets with seconds, as some historical ones have, get ":SS" more).
 * Returns 0, or -1 as timefmt_utc() does (32 bytes always suffice).
 */
int
timefmt_local(int64_t t, const struct tz *tz, char *buf, size_t len)
{
	int32_t off = tz ? tz_offset_at(tz, t) : 0;
	int32_t a = off < 0 ? -off : off;
	char tail[16];
	size_t used;

	if (t < CV_TIME_MIN || t > CV_TIME_MAX ||
	    wall_format(t + off, buf, len))
		return -1;
	if (a % 60)
		snprintf(tail, sizeof(tail), "%c%02d:%02d:%02d",
		    off < 0 ? '-' : '+', a / 3600, a / 60 % 60, a % 60);
	else
		snprintf(tail, sizeof(tail), "%c%02d:%02d", off < 0 ? '-' : '+',
		    a / 3600, a / 60 % 60);
	used = strlen(buf);
	if (used + strlen(tail) + 1 > len)
		return -1;
	strcpy(buf + used, tail);
	return 0;
}

/*
 * Puts ".mmm" (ms, 1-999) before the zone suffix of the time in buf, which
 * starts with the 19 characters of "YYYY-MM-DDTHH:MM:SS".  0, or -1 when
 * buf is too small.
 */
static int
insert_ms(char *buf, size_t len, int ms)
{
	size_t used = strlen(buf);
	char frac[8];

	if (used < 19 || used + 5 > len)
		return -1;
	snprintf(frac, sizeof(frac), ".%03d", ms % 1000);
	memmove(buf + 23, buf + 19, used - 19 + 1);
	memcpy(buf + 19, frac, 4);
	return 0;
}

/*
 * timefmt_utc() of an instant in epoch milliseconds: with ".mmm" when it
 * has a fraction of a second ("2026-11-25T17:40:20.436Z"), as
 * timefmt_utc() when it has none.  Returns 0, or -1 (30 bytes suffice).
 */
int
timefmt_utc_ms(int64_t ms, char *buf, size_t len)
{
	int frac = (int)civil_fmod(ms, 1000);

	if (timefmt_utc(civil_fdiv(ms, 1000), buf, len) == -1)
		return -1;
	return frac ? insert_ms(buf, len, frac) : 0;
}

/*
 * timefmt_local() of an instant in epoch milliseconds, with ".mmm" as
 * timefmt_utc_ms() has it.  Returns 0, or -1 (40 bytes suffice).
 */
int
timefmt_local_ms(int64_t ms, const struct tz *tz, char *buf, size_t len)
{
	int frac = (int)civil_fmod(ms, 1000);

	if (timefmt_local(civil_fdiv(ms, 1000), tz, buf, len) == -1)
		return -1;
	return frac ? insert_ms(buf, len, frac) : 0;
}

/* Reads exactly n digits at *p into *v and advances *p; 0 or -1. */
static int
digits(const char **p, int n, int *v)
{
	*v = 0;
	for (int i = 0; i < n; i++, (*p)++) {
		if (!isdigit((unsigned char)**p))
			return -1;
		*v = *v * 10 + (**p - '0');
	}
	return 0;
}

/*
 * Reads ".fraction" at *p, if there is one, into *ms and advances *p: one
 * to three digits are milliseconds; more is an error (a finer instant
 * would be cut, and a cut instant fires early).  0, or -1 with err set.
 */
static int
parse_fraction(const char **p, int *ms, char *err, size_t errlen)
{
	const char *f = *p + 1;
	int n = 0;

	*ms = 0;
	if (**p != '.' || !isdigit((unsigned char)*f))
		return 0;
	while (isdigit((unsigned char)f[n]))
		n++;
	if (n > 3)
		return log_errbuf(err, errlen,
		    ".%.*s: finer than milliseconds (at most 3 digits after "
		    "the seconds)",
		    n > 12 ? 12 : n, f);
	for (int i = 0; i < 3; i++)
		*ms = *ms * 10 + (i < n ? f[i] - '0' : 0);
	*p = f + n;
	return 0;
}

/*
 * Parses "YYYY-MM-DD[(T| )HH:MM[:SS[.mmm]]]" into wall seconds and *ms, the
 * milliseconds, and leaves *p after it.  Returns 0, or -1 with err set.
 */
static int
parse_wall(const char **p, int64_t *wall, int *ms, char *err, size_t errlen)
{
	const char *start = *p;
	int y, mo, d, h = 0, mi = 0, s = 0;

	*ms = 0;
	if (digits(p, 4, &y) || *(*p)++ != '-' || digits(p, 2, &mo) ||
	    *(*p)++ != '-' || digits(p, 2, &d))
		goto bad;
	if (**p == 'T' || **p == 't' || **p == ' ') {
		(*p)++;
		if (digits(p, 2, &h) || *(*p)++ != ':' || digits(p, 2, &mi))
			goto bad;
		if (**p == ':') {
			(*p)++;
			if (digits(p, 2, &s))
				goto bad;
			if (parse_fraction(p, ms, err, errlen) == -1)
				return -1;
		}
	}
	if (y < 1 || mo < 1 || mo > 12 || d < 1 ||
	    d > civil_month_days(y, mo) || h > 23 || mi > 59 || s > 59) {
		snprintf(err, errlen, "%.*s: date or time out of range",
		    (int)(*p - start), start);
		return -1;
	}
	*wall = civil_days(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
	return 0;
bad:
	snprintf(err, errlen,
	    "expected YYYY-MM-DDTHH:MM:SS with an optional "
	    "Z or UTC offset");
	return -1;
}

/*
 * Parses "Z", "+HH:MM" / "-HH:MM" / "+HHMM", or "+HH:MM:SS" (the form
 * timefmt_local() writes for historical offsets) at p; returns 1 found,
 * 0 none, -1 malformed.
 */
static int
parse_offset(const char *p, int32_t *off)
{
	int h, m, s = 0, sign, colon;

	if ((p[0] == 'Z' || p[0] == 'z') && p[1] == '\0') {
		*off = 0;
		return 1;
	}
	if (p[0] != '+' && p[0] != '-')
		return p[0] == '\0' ? 0 : -1;
	sign = p[0] == '-' ? -1 : 1;
	p++;
	if (digits(&p, 2, &h) || ((colon = *p == ':') && *++p == '\0') ||
	    digits(&p, 2, &m) || h > 23 || m > 59)
		return -1;
	if (colon && *p == ':' && (p++, digits(&p, 2, &s) || s > 59))
		return -1;
	if (*p != '\0')
		return -1;
	*off = sign * (h * 3600 + m * 60 + s);
	return 1;
}

/*
 * Parses an instant (see the top of the file) into *out, epoch
 * milliseconds.  A wall time without offset is read in tz (UTC when tz is
 * NULL).  Returns 0, or -1 with err naming the problem (a fraction finer
 * than milliseconds is one); *out is untouched on error.
 */
int
timefmt_parse_ms(
    const char *s, const struct tz *tz, int64_t *out, char *err, size_t errlen)
{
	const char *p = s;
	int64_t wall, utc[2];
	int32_t off;
	char *end;
	int r, ms;

	if (s[0] == '@') {
		errno = 0;
		if (!isdigit((unsigned char)s[1]) &&
		    !(s[1] == '-' && isdigit((unsigned char)s[2])))
			return log_errbuf(
			    err, errlen, "\"%s\": bad epoch seconds", s);
		wall = strtoll(s + 1, &end, 10);
		if (end == s + 1 || *end != '\0' || errno ||
		    wall < CV_TIME_MIN || wall > CV_TIME_MAX) {
			snprintf(err, errlen, "\"%s\": bad epoch seconds", s);
			return -1;
		}
		*out = wall * 1000;
		return 0;
	}
	if (parse_wall(&p, &wall, &ms, err, errlen) == -1)
		return -1;
	if ((r = parse_offset(p, &off)) == -1) {
		snprintf(err, errlen, "\"%s\": bad UTC offset \"%s\"", s, p);
		return -1;
	}
	if (r == 1) {
		utc[0] = wall - off;
	} else if (tz == NULL) {
		utc[0] = wall;
	} else {
		/* A gap gives the transition instant, a fold its first pass. */
		tz_local_to_utc(tz, wall, utc);
	}
	if (utc[0] < CV_TIME_MIN || utc[0] > CV_TIME_MAX) {
		snprintf(err, errlen, "\"%s\" is out of range", s);
		return -1;
	}
	*out = utc[0] * 1000 + ms;
	return 0;
}

/*
 * timefmt_parse_ms() in whole seconds: a fraction rounds up to the next
 * second, so that an instant read here is never earlier than the one
 * written.  Returns 0, or -1 with err set; *out is untouched on error.
 */
int
timefmt_parse(
    const char *s, const struct tz *tz, int64_t *out, char *err, size_t errlen)
{
	int64_t ms;

	if (timefmt_parse_ms(s, tz, &ms, err, errlen) == -1)
		return -1;
	if (-civil_fdiv(-ms, 1000) > CV_TIME_MAX)
		return log_errbuf(err, errlen, "\"%s\" is out of range", s);
	*out = -civil_fdiv(-ms, 1000);
	return 0;
}

/*
 * Parses a duration: a whole number of seconds ("90"), or one or more
 * number-unit pairs with units w, d, h, m, s ("1h30m", "90s").  The result
 * is between 1 second and 100 years.  Returns 0, or -1 with err set.
 */
int
timefmt_duration(const char *s, int64_t *out, char *err, size_t errlen)
{
	const int64_t max = 100LL * 366 * 86400;
	const char *p = s;
	int64_t total = 0, n, unit, last = INT64_MAX;
	char *end;

	do {
		if (!isdigit((unsigned char)*p))
			goto bad;
		errno = 0;
		n = strtoll(p, &end, 10);
		if (errno || n > max)
			goto range;
		switch (*end) {
		case 'w':
			unit = 7 * 86400;
			break;
		case 'd':
			unit = 86400;
			break;
		case 'h':
			unit = 3600;
			break;
		case 'm':
			unit = 60;
			break;
		case 's':
			unit = 1;
			break;
		case '\0':
			if (p != s)
				goto bad;
			unit = 1;
			end--;
			break;
		default:
			goto bad;
		}
		if (unit >= last) /* units largest first, each once */
			goto bad;
		last = unit;
		if (n > max / unit || (total += n * unit) > max)
			goto range;
		p = end + 1;
	} while (*p != '\0');
	if (total < 1)
		goto range;
	*out = total;
	return 0;
bad:
	snprintf(err, errlen,
	    "\"%s\" is not a duration such as 90s, 5m, "
	    "1h30m or 2d",
	    s);
	return -1;
range:
	snprintf(
	    err, errlen, "duration \"%s\" is out of range 1s-100 years", s);
	return -1;
}
