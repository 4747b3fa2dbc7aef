/*
 * cron.c: cron expressions exactly as cronie, the cron of most Linux servers,
 * reads them (the seven rules of ARCHITECTURE.md, "Schedule semantics").
 * cron_parse() turns five fields, or one of the lowercase @ aliases, into one
 * bit set per field plus the "field begins with *" flags that choose between
 * the AND rule and the Vixie OR rule for the two day fields, and rejects with
 * a message naming the field everything cronie rejects, plus the few things
 * the rules tighten: ranges that wrap outside day-of-week, and expressions
 * that can never fire.  cron_next_wall() finds the next matching wall-clock
 * minute by jumping from set bit to set bit, month by month, and never walks
 * days or minutes, so an expression that fires once in decades still costs
 * microseconds.  Everything here is pure: no zones (slot.c maps wall times
 * to instants), no allocation, no global state.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cronvisor.h"

#define SECS_PER_DAY 86400
#define MINUTE_BITS  ((UINT64_C(1) << 60) - 1) /* minutes 0-59 */
#define HOUR_BITS    ((UINT64_C(1) << 24) - 1) /* hours 0-23 */
#define DOM_BITS     UINT64_C(0xfffffffe)      /* days 1-31 */
#define MONTH_BITS   UINT64_C(0x1ffe)          /* months 1-12 */
#define DOW_BITS     UINT64_C(0x7f)            /* weekdays 0-6 */
#define STEP_MAX     9999 /* larger steps act alike: only the range start */

/* One of the five fields: its range, its names and its "*" flag. */
struct field {
	const char *name;         /* as errors name it */
	int min;                  /* smallest value */
	int max;                  /* largest value (7 in day-of-week) */
	const char *const *names; /* three-letter names for min.., or NULL */
	unsigned star;            /* CRON_*_STAR set if the text starts '*' */
	int sunday_end;           /* 1: a range may end in 0, meaning 7 */
};

static const char *const month_names[] = {"jan", "feb", "mar", "apr", "may",
    "jun", "jul", "aug", "sep", "oct", "nov", "dec", NULL};
static const char *const dow_names[] = {
    "sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL};

static const struct field fields[5] = {
    {"minute", 0, 59, NULL, CRON_MIN_STAR, 0},
    {"hour", 0, 23, NULL, CRON_HOUR_STAR, 0},
    {"day-of-month", 1, 31, NULL, CRON_DOM_STAR, 0},
    {"month", 1, 12, month_names, 0, 0},
    {"day-of-week", 0, 7, dow_names, CRON_DOW_STAR, 1},
};

/*
 * The aliases cronie knows, each exactly its five-field expansion.  cronie
 * sets its flags by hand for these and differs from the expansion in flags
 * that cannot change a match (@daily sets neither day flag); parsing the
 * expansion keeps one code path and makes the alias equal to it bit for bit.
 */
static const struct {
	const char *alias;     /* as written, lowercase only */
	const char *expansion; /* the five fields it stands for */
} aliases[] = {
    {"@yearly", "0 0 1 1 *"},
    {"@annually", "0 0 1 1 *"},
    {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"},
    {"@daily", "0 0 * * *"},
    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

/* A piece of the expression: not NUL-terminated. */
struct span {
	const char *s; /* first byte */
	size_t n;      /* length, at most 127 */
};

/* What a field's parser needs to report an error. */
struct ctx {
	const struct field *f; /* the field being parsed */
	char *err;             /* error buffer, or NULL */
	size_t errlen;         /* its size */
};

static int field_fail(const struct ctx *cx, const char *fmt, ...)
    CV_PRINTF(2, 3);

/* Formats "<field>: <reason>"; returns -1. */
static int
field_fail(const struct ctx *cx, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (cx->err == NULL || cx->errlen == 0)
		return -1;
	n = snprintf(cx->err, cx->errlen, "%s: ", cx->f->name);
	if (n >= 0 && (size_t)n < cx->errlen) {
		va_start(ap, fmt);
		vsnprintf(cx->err + n, cx->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static int
all_of(struct span t, const char *set)
{
	for (size_t i = 0; i < t.n; i++)
		if (strchr(set, t.s[i]) == NULL)
			return 0;
	return t.n > 0;
}

#define DIGITS  "0123456789"
#define LETTERS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

/* The value of a string of digits, saturated at STEP_MAX + 1. */
static int
digits_value(struct span t)
{
	int v = 0;

	for (size_t i = 0; i < t.n; i++) {
		v = v * 10 + (t.s[i] - '0');
		if (v > STEP_MAX)
			return STEP_MAX + 1;
	}
	return v;
}

/*
 * Whether an element uses the Quartz or Jenkins extensions cronie lacks
 * (?, L, W, LW, 15W, 5L, 5#3, H, H/5, H(0-29)), to say so rather than call
 * them bad numbers.  No valid element matches: no name starts with H or
 * ends a string of digits with L or W.
 */
static int
is_extension(struct span t)
{
	size_t i = 0;

	if (memchr(t.s, '?', t.n) != NULL || memchr(t.s, '#', t.n) != NULL)
		return 1;
	if ((t.s[0] == 'H' || t.s[0] == 'h') &&
	    (t.n == 1 || t.s[1] == '/' || t.s[1] == '('))
		return 1;
	while (i < t.n && t.s[i] >= '0' && t.s[i] <= '9')
		i++;
	t.s += i;
	t.n -= i;
	return (t.n == 1 && strchr("LlWw", t.s[0]) != NULL) ||
	    (t.n == 2 && strncasecmp(t.s, "LW", 2) == 0);
}

/*
 * Reads one value of a range: digits, or a three-letter name in month and
 * day-of-week (case-insensitive, as cronie's strcasecmp).  Leading zeros are
 * fine, as in cronie.  Returns 0 with *out set, or -1 with the error.
 */
static int
value_parse(const struct ctx *cx, struct span t, int *out)
{
	const struct field *f = cx->f;
	int len = (int)t.n;

	if (all_of(t, DIGITS)) {
		*out = digits_value(t);
		if (*out < f->min || *out > f->max)
			return field_fail(cx, "%.*s is out of range %d-%d", len,
			    t.s, f->min, f->max);
		return 0;
	}
	if (f->names == NULL)
		return field_fail(cx, "%.*s is not a number", len, t.s);
	if (!all_of(t, LETTERS))
		return field_fail(
		    cx, "%.*s is not a number or a name", len, t.s);
	if (t.n != 3)
		return field_fail(
		    cx, "%.*s is not a three-letter name", len, t.s);
	for (int i = 0; f->names[i] != NULL; i++)
		if (strncasecmp(f->names[i], t.s, 3) == 0) {
			*out = f->min + i;
			return 0;
		}
	return field_fail(cx, "unknown name %.*s", len, t.s);
}

/*
 * Reads the part of an element before any '/': "*", "N" or "A-B", into
 * [*lo, *hi]; *single says it was a lone value.  el is the whole element,
 * h and any "/S" after it.
 * A day-of-week range that ends in 0 (SUN) runs through Sunday (7), as in
 * cronie, but only without a step: cronie turns the end into 7 only when no
 * step follows, so "1-0/2" or "FRI-SUN/2" sets no day there and never fires;
 * such a range is an error here, as is every other reversed range.  One
 * quirk of cronie's get_range() is not copied, because the rules say ranges
 * never wrap: cronie turns an end of 0 into 7 in every field, so that "5-0"
 * in minute means 5-7 and "30-0" matches nothing.
 */
static int
head_parse(const struct ctx *cx, struct span h, struct span el, int *lo,
    int *hi, int *single)
{
	const char *dash = memchr(h.s, '-', h.n);
	struct span a, b;

	*single = 0;
	if (h.n == 1 && h.s[0] == '*') {
		*lo = cx->f->min;
		*hi = cx->f->max;
		return 0;
	}
	if (memchr(h.s, '*', h.n) != NULL)
		return field_fail(cx, "misplaced * in %.*s", (int)h.n, h.s);
	if (dash == NULL) {
		*single = 1;
		if (value_parse(cx, h, lo) == -1)
			return -1;
		*hi = *lo;
		return 0;
	}
	a = (struct span){h.s, (size_t)(dash - h.s)};
	b = (struct span){dash + 1, h.n - a.n - 1};
	if (a.n == 0 || b.n == 0 || memchr(b.s, '-', b.n) != NULL)
		return field_fail(cx, "malformed range %.*s", (int)h.n, h.s);
	if (value_parse(cx, a, lo) == -1 || value_parse(cx, b, hi) == -1)
		return -1;
	if (*lo > *hi && *hi == 0 && cx->f->sunday_end && el.n > h.n)
		return field_fail(cx,
		    "%.*s never fires: with a step, cron does not read an "
		    "end of 0 or SUN as Sunday (write 7 instead)",
		    (int)el.n, el.s);
	if (*lo > *hi && *hi == 0 && cx->f->sunday_end)
		*hi = 7;
	if (*lo > *hi)
		return field_fail(cx, "reversed range %.*s", (int)h.n, h.s);
	return 0;
}

/*
 * Reads the step after '/'.  A step larger than the range is accepted, as
 * cronie does (crontab(1) only warns): it selects the range's start alone.
 */
static int
step_parse(const struct ctx *cx, struct span el, struct span t, int *step)
{
	if (t.n == 0)
		return field_fail(
		    cx, "missing step after / in %.*s", (int)el.n, el.s);
	if (!all_of(t, DIGITS))
		return field_fail(
		    cx, "step %.*s is not a number", (int)t.n, t.s);
	*step = digits_value(t);
	if (*step == 0)
		return field_fail(
		    cx, "step %.*s must be at least 1", (int)t.n, t.s);
	return 0;
}

/*
 * Parses one list element (`*`, `N`, `A-B`, `*` or `A-B` with `/S`) and adds
 * its values to *bits (bit v for value v).
 */
static int
element_parse(const struct ctx *cx, struct span el, uint64_t *bits)
{
	const char *slash;
	struct span head = el, step_text;
	int lo = 0, hi = 0, single = 0, step = 1;

	if (el.n == 0)
		return field_fail(cx, "empty list element");
	if (is_extension(el))
		return field_fail(cx,
		    "%.*s is not cron syntax (?, L, W, # "
		    "and H are Quartz and Jenkins extensions)",
		    (int)el.n, el.s);
	for (size_t i = 0; i < el.n; i++)
		if (strchr(DIGITS LETTERS "*-/", el.s[i]) == NULL)
			return field_fail(cx,
			    "unexpected character '%c' in %.*s", el.s[i],
			    (int)el.n, el.s);
	if ((slash = memchr(el.s, '/', el.n)) != NULL)
		head.n = (size_t)(slash - el.s);
	if (head_parse(cx, head, el, &lo, &hi, &single) == -1)
		return -1;
	if (slash != NULL) {
		if (single)
			return field_fail(cx, "a step needs * or a range: %.*s",
			    (int)el.n, el.s);
		step_text = (struct span){slash + 1, el.n - head.n - 1};
		if (step_parse(cx, el, step_text, &step) == -1)
			return -1;
	}
	for (int v = lo; v <= hi; v += step)
		*bits |= UINT64_C(1) << v;
	return 0;
}

/* Parses one field, a comma list of elements, into *bits. */
static int
field_parse(const struct ctx *cx, struct span t, uint64_t *bits)
{
	const char *end = t.s + t.n, *p = t.s, *comma;
	struct span el;

	*bits = 0;
	for (;;) {
		comma = memchr(p, ',', (size_t)(end - p));
		el = (struct span){p, (size_t)((comma ? comma : end) - p)};
		if (element_parse(cx, el, bits) == -1)
			return -1;
		if (comma == NULL)
			return 0;
		p = comma + 1;
	}
}

/*
 * Splits s at runs of blanks (space, tab: cronie's Skip_Blanks) into at most
 * max spans; returns how many fields there are, which may exceed max.
 */
static int
split_fields(struct span s, struct span *out, int max)
{
	int n = 0;
	size_t i = 0, start;

	while (i < s.n) {
		while (i < s.n && (s.s[i] == ' ' || s.s[i] == '\t'))
			i++;
		if (i == s.n)
			break;
		start = i;
		while (i < s.n && s.s[i] != ' ' && s.s[i] != '\t')
			i++;
		if (n < max)
			out[n] = (struct span){s.s + start, i - start};
		n++;
	}
	return n;
}

/*
 * Whether, under the AND rule, some month of the month field holds a day of
 * the day-of-month field (February counts 29).  That is all that can stop
 * an AND expression from firing: in the 400-year Gregorian cycle every valid
 * date falls on every weekday.  Under the OR rule the day-of-week field alone
 * matches some day of every month, so such expressions always fire.
 */
static int
can_fire(const struct cron *c)
{
	if (!(c->flags & (CRON_DOM_STAR | CRON_DOW_STAR)))
		return 1;
	for (int m = 1; m <= 12; m++)
		if ((c->month >> m & 1) &&
		    (c->dom & ((UINT64_C(2) << civil_month_days(2000, m)) - 2)))
			return 1;
	return 0;
}

/*
 * Parses the five fields of s (blank-separated, already trimmed) into c,
 * whose text the caller fills.
 */
static int
fields_parse(struct span s, struct cron *c, char *err, size_t errlen)
{
	struct span f[5];
	uint64_t bits[5];
	int n = split_fields(s, f, 5);

	if (n != 5)
		return log_errbuf(err, errlen,
		    "expected 5 fields (minute hour "
		    "day-of-month month day-of-week), got %d",
		    n);
	for (int i = 0; i < 5; i++) {
		struct ctx cx = {&fields[i], err, errlen};

		if (field_parse(&cx, f[i], &bits[i]) == -1)
			return -1;
		if (f[i].s[0] == '*')
			c->flags |= fields[i].star;
	}
	c->minute = bits[0];
	c->hour = (uint32_t)bits[1];
	c->dom = (uint32_t)bits[2];
	c->month = (uint16_t)bits[3];
	c->dow = (uint8_t)((bits[4] | bits[4] >> 7) & DOW_BITS);
	if (!can_fire(c))
		return log_errbuf(err, errlen,
		    "the expression never fires: no month "
		    "in the month field has any day in the day-of-month field");
	return 0;
}

/* Looks up an alias (s starts with '@') and parses its expansion into c. */
static int
alias_parse(struct span s, struct cron *c, char *err, size_t errlen)
{
	size_t w = 0;

	while (w < s.n && s.s[w] != ' ' && s.s[w] != '\t')
		w++;
	if (w == 7 && memcmp(s.s, "@reboot", 7) == 0)
		return log_errbuf(err, errlen, "@reboot is not supported");
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++) {
		const char *e = aliases[i].expansion;

		if (strlen(aliases[i].alias) != w ||
		    memcmp(aliases[i].alias, s.s, w) != 0)
			continue;
		if (w != s.n)
			return log_errbuf(
			    err, errlen, "%.*s takes no fields", (int)w, s.s);
		return fields_parse(
		    (struct span){e, strlen(e)}, c, err, errlen);
	}
	return log_errbuf(err, errlen,
	    "unknown alias %.*s (the aliases are @yearly, "
	    "@annually, @monthly, @weekly, @daily, @midnight and @hourly, in "
	    "lowercase)",
	    (int)w, s.s);
}

/*
 * Parses the cron expression expr (NUL-terminated; leading and trailing
 * white space is ignored) as cronie would.  On success fills *out: the bit
 * sets, day-of-week 7 folded into bit 0, the CRON_*_STAR flags of the
 * fields that begin with '*', and text = the trimmed expression; returns 0.
 * On failure leaves *out untouched, writes "<field>: <reason>" (or a
 * message about the whole expression) to err, which may be NULL, cut to
 * errlen bytes (CV_ERRLEN is always enough), and returns -1.  Expressions
 * that can never fire are errors.
 */
int
cron_parse(const char *expr, struct cron *out, char *err, size_t errlen)
{
	static const char space[] = " \t\n\r\v\f";
	struct cron c;
	struct span s = {expr, strlen(expr)};

	while (s.n > 0 && strchr(space, s.s[0]) != NULL) {
		s.s++;
		s.n--;
	}
	while (s.n > 0 && strchr(space, s.s[s.n - 1]) != NULL)
		s.n--;
	if (s.n == 0)
		return log_errbuf(err, errlen, "expression is empty");
	if (s.n >= sizeof(c.text))
		return log_errbuf(err, errlen, "expression is too long");
	for (size_t i = 0; i < s.n; i++)
		if ((s.s[i] < 0x20 || s.s[i] > 0x7e) && s.s[i] != '\t')
			return log_errbuf(err, errlen,
			    "unexpected byte 0x%02x at offset %zu",
			    (unsigned char)s.s[i], i);
	memset(&c, 0, sizeof(c));
	if ((s.s[0] == '@' ? alias_parse(s, &c, err, errlen)
	                   : fields_parse(s, &c, err, errlen)) == -1)
		return -1;
	memcpy(c.text, s.s, s.n);
	*out = c;
	return 0;
}

/*
 * Returns 1 if the minute or the hour field begins with '*', which makes the
 * expression a "wildcard job" for cronie's DST rules, else 0.
 */
int
cron_is_wildcard(const struct cron *c)
{
	return (c->flags & (CRON_MIN_STAR | CRON_HOUR_STAR)) != 0;
}

/*
 * Returns 1 if the date year-month-mday passes day rule 6: both day fields
 * must match if either begins with '*', otherwise either may.  The month
 * field is not consulted.  An invalid date returns 0.
 */
int
cron_day_matches(const struct cron *c, int year, int month, int mday)
{
	int dom, dow;

	if (month < 1 || month > 12 || mday < 1 ||
	    mday > civil_month_days(year, month))
		return 0;
	dom = c->dom >> mday & 1;
	dow = c->dow >> civil_weekday(civil_days(year, month, mday)) & 1;
	if (c->flags & (CRON_DOM_STAR | CRON_DOW_STAR))
		return dom && dow;
	return dom || dow;
}

/* The smallest set bit of mask at or above from, or -1. */
static int
next_bit(uint64_t mask, int from)
{
	if (from >= 64 || (mask >>= from) == 0)
		return -1;
	return from + __builtin_ctzll(mask);
}

/*
 * The days of month m of year y that pass rule 6, as bits 1-31.  The
 * day-of-week set, rotated by the weekday of the 1st and repeated every
 * seven days, becomes a day-of-month set that combines with the
 * day-of-month field by AND or OR.  first is the day number of the 1st.
 */
static uint64_t
month_days(const struct cron *c, int64_t y, int m, int64_t first)
{
	int wd = civil_weekday(first);
	uint64_t dow = c->dow, week, days;

	week = ((dow >> wd) | (dow << (7 - wd))) & DOW_BITS;
	days = (week | week << 7 | week << 14 | week << 21 | week << 28) << 1;
	if (c->flags & (CRON_DOM_STAR | CRON_DOW_STAR))
		days &= c->dom;
	else
		days |= c->dom;
	return days & ((UINT64_C(2) << civil_month_days(y, m)) - 2);
}

/*
 * The first matching minute of the day at or after hh:mm, as minutes since
 * midnight, or -1 if the rest of the day has none.
 */
static int
clock_next(const struct cron *c, int hh, int mm)
{
	int h = next_bit(c->hour, hh), m;

	if (h == hh && (m = next_bit(c->minute, mm)) >= 0)
		return h * 60 + m;
	if (h == hh)
		h = next_bit(c->hour, hh + 1);
	if (h < 0)
		return -1;
	return h * 60 + next_bit(c->minute, 0);
}

/*
 * The first matching wall time in month m of year y at or after day d,
 * hh:mm, or CV_NEVER.  first is the day number of the 1st.
 */
static int64_t
month_next(const struct cron *c, int64_t y, int m, int64_t first, int d, int hh,
    int mm)
{
	uint64_t days = month_days(c, y, m, first);
	int day, t;

	while ((day = next_bit(days, d)) >= 0) {
		if (day != d)
			hh = mm = 0;
		if ((t = clock_next(c, hh, mm)) >= 0)
			return (first + day - 1) * SECS_PER_DAY + t * 60;
		d = day + 1;
		hh = mm = 0;
	}
	return CV_NEVER;
}

/*
 * Returns the smallest wall time W with W >= from, W < limit, W a whole
 * minute (floor semantics for negative values), whose month, day (rule 6),
 * hour and minute match c; CV_NEVER if there is none.  from is raised to
 * two days before CV_TIME_MIN and limit lowered to two days after
 * CV_TIME_MAX (wall times of the instants in range, in any zone, lie
 * within), so CV_NEVER may serve as "no limit".  The search jumps to the next
 * set bit of each field and costs at most one step per month it skips; matches
 * repeat every 400 years (146097 days, a whole number of weeks), so it gives up
 * after 401 years: that bounds hand-made structs that never fire, too.
 * "Strictly after T" is the caller's business: pass T + 1.
 */
int64_t
cron_next_wall(const struct cron *c, int64_t from, int64_t limit)
{
	struct cron k = *c;
	int64_t t, days, y, last, first, w;
	int m, d, hh, mm, sod;

	/* Bits outside the fields (a hand-made struct) would match nothing. */
	k.minute &= MINUTE_BITS;
	k.hour &= HOUR_BITS;
	k.dom &= DOM_BITS;
	k.month &= MONTH_BITS;
	k.dow &= DOW_BITS;
	/* Wall times run up to a day past the instants in far zones. */
	if (limit > CV_TIME_MAX + 1 + 2 * 86400)
		limit = CV_TIME_MAX + 1 + 2 * 86400;
	if (from < CV_TIME_MIN - 2 * 86400)
		from = CV_TIME_MIN - 2 * 86400;
	if (from >= limit) /* first: rounding INT64_MAX up would overflow */
		return CV_NEVER;
	t = -civil_fdiv(-from, 60) * 60;
	if (t >= limit || k.minute == 0 || k.hour == 0 || k.month == 0)
		return CV_NEVER;
	days = civil_fdiv(t, SECS_PER_DAY);
	civil_date(days, &y, &m, &d);
	sod = (int)(t - days * SECS_PER_DAY);
	hh = sod / 3600;
	mm = sod % 3600 / 60;
	for (last = y + 401; y <= last; y++, m = 1) {
		while ((m = next_bit(k.month, m)) >= 0) {
			first = civil_days(y, m, 1);
			if (first * SECS_PER_DAY >= limit)
				return CV_NEVER;
			if (first > days) { /* a later month: from its start */
				d = 1;
				hh = mm = 0;
			}
			if ((w = month_next(&k, y, m, first, d, hh, mm)) !=
			    CV_NEVER)
				return w < limit ? w : CV_NEVER;
			m++;
		}
	}
	return CV_NEVER;
}
