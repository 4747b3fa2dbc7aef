/*
 * tz.c: IANA time zones read from the system's compiled tz database (TZif
 * files, RFC 8536, under $TZDIR or /usr/share/zoneinfo), and the two
 * conversions cronvisor needs: from an instant to the UTC offset in force
 * (with the whole span of constant offset around it, which next-slot
 * computation walks in hot loops) and from a local wall time back to the
 * instants that show it.  glibc offers no thread-safe per-zone API (no
 * tzalloc/localtime_rz) and switching the process-wide TZ is not safe in a
 * multi-threaded daemon, so the files are parsed here.  Instants after a
 * file's last transition follow the POSIX TZ string in its footer,
 * evaluated year by year.  A parsed zone is immutable, so any number of
 * threads may use it at once; tz_get() keeps one copy of each zone in a
 * process-wide cache.  Everything here was written from RFC 8536 and POSIX;
 * where they leave a choice, glibc's localtime_r() (the oracle of
 * tests/check_tz.c) decides, and the comments say so.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisor.h"

#define TZ_DEFAULT_DIR   "/usr/share/zoneinfo"
#define TZ_FILE_MAX      (1024 * 1024) /* largest TZif file read */
#define TZ_NAME_MAX      255           /* longest zone name accepted */
#define TZ_PATH_MAX      4096          /* longest $TZDIR/name path */
#define TZ_ABBR_MAX      15            /* longest abbreviation kept */
#define TZ_OFF_MIN       (-89999)      /* RFC 8536: offsets from -24:59:59 */
#define TZ_OFF_MAX       93599         /* ... to 25:59:59 */
#define TZ_FOOTER_MAX    255           /* longest POSIX TZ string accepted */
#define TZ_CLAMP         ((int64_t)1 << 50) /* bound of the rule arithmetic */
#define TZ_CACHE_BUCKETS 64                 /* hash chains of the zone cache */
#define DAY              86400              /* seconds per day */

/*
 * The footer's yearly rules, evaluated as POSIX describes them: each rule
 * year has a DST start and a DST end, and the state at an instant is set
 * by the latest of all those changes at or before it.  glibc instead looks
 * only at the two changes of the instant's UTC calendar year.  The two
 * agree whenever a year's changes fall inside it, as for every real zone
 * (tests/check_tz.c compares them); they part for rules that cross a year
 * end, such as "EST5EDT,0/0,J365/25" (DST all year), where glibc shows
 * standard time for the first hours of each UTC year and this code shows
 * DST throughout, as RFC 8536 says that form means.
 *
 * The yearly rules are evaluated over a window of FWIN_YEARS rule years.
 * One year's changes fall between 8 days before its January 1 and 9 days
 * after the next one (a rule day up to 365, a time up to 167 h, an offset
 * up to 26 h), so FWIN_SLACK days inside either end of the window no
 * change of a year outside it can appear.  A walk along the changes gives
 * up after FWALK_MAX steps: the Gregorian calendar repeats every 400
 * years, so rules that change the offset at all change it within any 400
 * years, which is well under FWALK_MAX steps (at most two changes a year
 * plus one window refill per 3 years).
 */
#define FWIN_YEARS 7
#define FWIN_SLACK (10 * DAY)
#define FWALK_MAX  2000

/* One local time type: an offset with its DST flag and abbreviation. */
struct tz_type {
	int32_t offset;             /* UTC offset in seconds, east positive */
	int isdst;                  /* 1: daylight saving time */
	char abbr[TZ_ABBR_MAX + 1]; /* designation such as "CEST" */
};

enum tz_date_kind {
	TZ_DATE_JULIAN1, /* Jn: day 1-365, February 29 never counted */
	TZ_DATE_JULIAN0, /* n: day 0-365, February 29 counted */
	TZ_DATE_MONTH,   /* Mm.w.d: weekday d of week w of month m */
};

/* The day and time of one yearly change in a POSIX TZ string. */
struct tz_date {
	enum tz_date_kind kind; /* which form the day takes */
	int month;              /* MONTH: 1-12 */
	int week;               /* MONTH: 1-5, 5 meaning the last */
	int day;                /* J: 1-365, n: 0-365, M: weekday 0-6 */
	int32_t secs;           /* local time of day, -167 h to 167 h */
};

enum tz_footer_kind {
	TZ_FOOTER_NONE,  /* empty footer: the last type lasts for ever */
	TZ_FOOTER_FIXED, /* one type for ever */
	TZ_FOOTER_RULES, /* standard and daylight time by yearly rules */
};

/* The POSIX TZ string at the end of a TZif file, parsed. */
struct tz_footer {
	enum tz_footer_kind kind; /* which of the fields below count */
	struct tz_type std;       /* standard time (FIXED: the only type) */
	struct tz_type dst;       /* RULES: daylight saving time */
	struct tz_date start;     /* RULES: DST begins, on the std clock */
	struct tz_date end;       /* RULES: DST ends, on the dst clock */
	int steady;               /* RULES: the offset never changes */
};

/*
 * A zone.  The transitions cut time into periods: period 0 lies before the
 * first transition, period k >= 1 starts at trans[k - 1].  Periods below
 * nper follow the table; with a footer in use the last transition starts
 * the footer's rule instead.  first[k] and last[k] name the first and last
 * period of the run of equal offsets around period k, so that a span is
 * found with one binary search.
 */
struct tz {
	char *name;              /* as given to tz_get() or tz_parse() */
	struct tz *next;         /* next zone in the same cache bucket */
	size_t ntrans;           /* transitions */
	int64_t *trans;          /* their instants, strictly ascending */
	uint8_t *ttype;          /* the type each one switches to */
	size_t nper;             /* periods governed by the table */
	uint32_t *first;         /* per period: first period of its span */
	uint32_t *last;          /* per period: last period of its span */
	size_t ntypes;           /* local time types, 1-256 */
	struct tz_type *types;   /* the types */
	size_t pre;              /* type before the first transition */
	int use_footer;          /* the footer rules from trans[ntrans-1] */
	struct tz_footer footer; /* the POSIX TZ string */
};

/*
 * The process-wide zone cache.  It is the module's only mutable state: the
 * zones themselves never change once built, so only the table of them
 * needs the lock.
 */
static struct {
	pthread_mutex_t lock;                /* guards bucket */
	struct tz *bucket[TZ_CACHE_BUCKETS]; /* chains by name hash */
} tz_cache = {PTHREAD_MUTEX_INITIALIZER, {NULL}};

/* One yearly change of the footer rules, as an instant. */
struct fev {
	int64_t at;   /* the instant of the change */
	int64_t year; /* the rule year it belongs to */
	int dst;      /* 1: daylight time begins, 0: it ends */
};

/* The changes of FWIN_YEARS consecutive rule years, in order. */
struct fwin {
	struct fev ev[2 * FWIN_YEARS]; /* sorted by fev_before() */
	int64_t lo; /* every change in (lo, hi) is in ev ... */
	int64_t hi; /* ... and no other change lies between them */
};

/* The TZif reader's position and error report. */
struct tzif {
	const char *name;       /* zone name, for messages */
	char *err;              /* where the message goes, may be NULL */
	size_t errlen;          /* its size */
	const unsigned char *p; /* next unread byte */
	size_t left;            /* bytes after p */
};

/* The six counts of a TZif header. */
struct tzif_counts {
	uint32_t isut;  /* UT/local indicators */
	uint32_t isstd; /* standard/wall indicators */
	uint32_t leap;  /* leap-second records */
	uint32_t time;  /* transitions */
	uint32_t type;  /* local time types */
	uint32_t chars; /* bytes of abbreviations */
};

/* Reports a malformed file; returns -1 for the caller to pass on. */
static int
bad(struct tzif *r, const char *why)
{
	log_errbuf(r->err, r->errlen,
	    "time zone \"%s\": malformed TZif file: %s", r->name, why);
	return -1;
}

/* Reports a well-formed file this reader refuses; returns -1. */
static int
unsupported(struct tzif *r, const char *why)
{
	log_errbuf(r->err, r->errlen, "time zone \"%s\": %s", r->name, why);
	return -1;
}

/* Takes n bytes from the reader, or returns NULL if fewer are left. */
static const unsigned char *
take(struct tzif *r, uint64_t n)
{
	const unsigned char *p = r->p;

	if (n > r->left)
		return NULL;
	r->p += n;
	r->left -= n;
	return p;
}

static uint32_t
be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

static int64_t
be64(const unsigned char *p)
{
	return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

/* Days from 1970-01-01 to January 1 of year y. */
static int64_t
jan1(int64_t y)
{
	return civil_days(y, 1, 1);
}

/* The year that contains day number days. */
static int64_t
year_of(int64_t days)
{
	int64_t y;
	int m, d;

	civil_date(days, &y, &m, &d);
	return y;
}

static int64_t
clamp(int64_t t)
{
	return t < -TZ_CLAMP ? -TZ_CLAMP : t > TZ_CLAMP ? TZ_CLAMP : t;
}

/* Day number of the day a Mm.w.d rule names in year y. */
static int64_t
month_day(const struct tz_date *d, int64_t y)
{
	int64_t first = civil_days(y, d->month, 1);
	int64_t len = civil_month_days(y, d->month);
	int64_t n =
	    civil_fmod(d->day - civil_weekday(first), 7) + 7 * (d->week - 1);

	if (n >= len) /* week 5 in a month with four such weekdays */
		n -= 7;
	return first + n;
}

/*
 * The instant at which a rule date falls in year y, for a clock at offset
 * (the offset in force before the change).  A day-of-year past the end of
 * the year runs into the next one, as POSIX arithmetic implies.
 */
static int64_t
date_instant(const struct tz_date *d, int64_t y, int32_t offset)
{
	int64_t day = jan1(y);

	switch (d->kind) {
	case TZ_DATE_JULIAN1:
		day += d->day - 1 + (d->day >= 60 && civil_is_leap(y));
		break;
	case TZ_DATE_JULIAN0:
		day += d->day;
		break;
	case TZ_DATE_MONTH:
		day = month_day(d, y);
		break;
	}
	return day * DAY + d->secs - offset;
}

/*
 * Orders changes by instant; simultaneous ones by rule year, then DST
 * start before DST end.  So DST that ends when the next year's begins
 * (a TZ string's way of saying "DST all year") never lapses, and DST that
 * begins and ends at the same instant never happens.
 */
static int
fev_before(const struct fev *a, const struct fev *b)
{
	if (a->at != b->at)
		return a->at < b->at;
	if (a->year != b->year)
		return a->year < b->year;
	return a->dst > b->dst;
}

/* Fills w with the changes of the rule years y-3 to y+3. */
static void
fwin_fill(struct fwin *w, const struct tz_footer *f, int64_t y)
{
	int n = 0, i, j;

	for (int64_t yy = y - FWIN_YEARS / 2; yy <= y + FWIN_YEARS / 2; yy++) {
		w->ev[n++] = (struct fev){
		    date_instant(&f->start, yy, f->std.offset), yy, 1};
		w->ev[n++] = (struct fev){
		    date_instant(&f->end, yy, f->dst.offset), yy, 0};
	}
	for (i = 1; i < n; i++) {
		struct fev e = w->ev[i];
		for (j = i; j > 0 && fev_before(&e, &w->ev[j - 1]); j--)
			w->ev[j] = w->ev[j - 1];
		w->ev[j] = e;
	}
	w->lo = jan1(y - FWIN_YEARS / 2) * DAY + FWIN_SLACK;
	w->hi = jan1(y + FWIN_YEARS / 2 + 1) * DAY - FWIN_SLACK;
}

/* Fills w around instant t, so that t lies well inside (lo, hi). */
static void
fwin_at(struct fwin *w, const struct tz_footer *f, int64_t t)
{
	fwin_fill(w, f, year_of(civil_fdiv(t, DAY)));
}

/* Index of the last change at or before t, or -1. */
static int
fwin_last_le(const struct fwin *w, int64_t t)
{
	int i = 2 * FWIN_YEARS;

	while (i > 0 && w->ev[i - 1].at > t)
		i--;
	return i - 1;
}

/*
 * The DST flag of the rules at t, from a window filled around t.  The
 * window holds a change before t (the rule year two before t's has ended
 * by then), so the index is never -1; the check only guards the array.
 */
static int
fwin_dst(const struct fwin *w, int64_t t)
{
	int i = fwin_last_le(w, t);

	return i >= 0 ? w->ev[i].dst : 0;
}

/*
 * The last instant at or before t where the rules switch into state dst,
 * the state at t; INT64_MIN when that switch lies at or before since, or
 * none is found.  w must have been filled around t; it is refilled as the
 * walk leaves it.
 */
static int64_t
footer_prev_change(struct fwin *w, const struct tz_footer *f, int64_t t,
    int64_t since, int dst)
{
	int i = fwin_last_le(w, t), p;
	int64_t x = i >= 0 ? w->ev[i].at : t;

	for (int step = 0; step < FWALK_MAX && x > since; step++) {
		p = fwin_last_le(w, x - 1);
		if (p < 0 || w->ev[p].at <= w->lo) {
			fwin_at(w, f, x);
			continue;
		}
		if (w->ev[p].dst != dst)
			return x;
		x = w->ev[p].at;
	}
	return INT64_MIN;
}

/*
 * The first instant after t where the rules leave state dst, the state at
 * t; INT64_MAX if none is found.  w must have been filled around t.
 */
static int64_t
footer_next_change(
    struct fwin *w, const struct tz_footer *f, int64_t t, int dst)
{
	int64_t x = t;
	int j;

	for (int step = 0; step < FWALK_MAX; step++) {
		j = fwin_last_le(w, x) + 1;
		if (j >= 2 * FWIN_YEARS || w->ev[j].at >= w->hi) {
			fwin_at(w, f, x);
			continue;
		}
		x = w->ev[j].at;
		if (fwin_dst(w, x) != dst)
			return x;
	}
	return INT64_MAX;
}

/* The footer's type at instant t (clamped for the arithmetic). */
static const struct tz_type *
footer_type(const struct tz_footer *f, int64_t t)
{
	struct fwin w;

	if (f->kind != TZ_FOOTER_RULES)
		return &f->std;
	t = clamp(t);
	fwin_at(&w, f, t);
	return fwin_dst(&w, t) ? &f->dst : &f->std;
}

static void
span_set_type(struct tz_span *out, const struct tz_type *ty)
{
	out->offset = ty->offset;
	out->isdst = ty->isdst;
	memcpy(out->abbr, ty->abbr, sizeof(out->abbr));
}

/*
 * The footer's span around t, ignoring the table: start is INT64_MIN when
 * the offset has not changed since `since' (the footer's first instant),
 * and prev_offset is then meaningless.
 */
static void
footer_span(
    const struct tz_footer *f, int64_t t, int64_t since, struct tz_span *out)
{
	const struct tz_type *cur = &f->std, *other = &f->std;
	struct fwin w, w2;
	int dst;

	out->start = INT64_MIN;
	out->end = INT64_MAX;
	if (f->kind == TZ_FOOTER_RULES) {
		t = clamp(t);
		fwin_at(&w, f, t);
		dst = fwin_dst(&w, t);
		cur = dst ? &f->dst : &f->std;
		other = dst ? &f->std : &f->dst;
		if (!f->steady) {
			w2 = w;
			out->start = footer_prev_change(&w, f, t, since, dst);
			out->end = footer_next_change(&w2, f, t, dst);
		}
	}
	span_set_type(out, cur);
	out->prev_offset = other->offset;
	out->next_offset = out->end == INT64_MAX ? cur->offset : other->offset;
}

static const struct tz_type *
period_type(const struct tz *tz, size_t k)
{
	return &tz->types[k == 0 ? tz->pre : tz->ttype[k - 1]];
}

/* The period that contains t: the number of transitions at or before t. */
static size_t
period_of(const struct tz *tz, int64_t t)
{
	size_t lo = 0, hi = tz->ntrans, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (tz->trans[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Sets the start of out to that of the table span of period k. */
static void
span_table_start(const struct tz *tz, size_t k, struct tz_span *out)
{
	size_t f = tz->first[k];

	out->start = f == 0 ? INT64_MIN : tz->trans[f - 1];
	out->prev_offset =
	    f == 0 ? out->offset : period_type(tz, f - 1)->offset;
}

/* The span around t, for t in the table's periods. */
static void
span_table(const struct tz *tz, int64_t t, struct tz_span *out)
{
	size_t k = period_of(tz, t), l = tz->last[k];
	int64_t at;
	struct tz_span fs;

	span_set_type(out, period_type(tz, k));
	span_table_start(tz, k, out);
	if (l + 1 < tz->nper) {
		out->end = tz->trans[l];
		out->next_offset = period_type(tz, l + 1)->offset;
	} else if (!tz->use_footer) {
		out->end = INT64_MAX;
		out->next_offset = out->offset;
	} else {
		/* The span runs into the footer's first instant. */
		at = tz->trans[tz->ntrans - 1];
		footer_span(&tz->footer, at, at, &fs);
		out->end = fs.offset != out->offset ? at : fs.end;
		out->next_offset =
		    fs.offset != out->offset ? fs.offset : fs.next_offset;
	}
}

/* The span around t, for t at or after the first instant of the footer. */
static void
span_footer(const struct tz *tz, int64_t t, struct tz_span *out)
{
	int64_t at = tz->trans[tz->ntrans - 1];
	size_t k = tz->nper - 1;

	footer_span(&tz->footer, t, at, out);
	if (out->start != INT64_MIN)
		return;
	/* The footer's offset holds since its first instant: join the table. */
	if (period_type(tz, k)->offset != out->offset) {
		out->start = at;
		out->prev_offset = period_type(tz, k)->offset;
	} else
		span_table_start(tz, k, out);
}

/*
 * Fills out with the longest span of constant UTC offset that contains t,
 * with the DST flag and abbreviation in force at t (see struct tz_span).
 * t should lie within [CV_TIME_MIN, CV_TIME_MAX]; instants beyond +-2^50 s
 * are clamped when the footer rules are evaluated.  Needs no allocation and
 * no lock: O(log n) in the transitions, plus the rules of a few years when
 * t follows the footer.
 */
void
tz_span_at(const struct tz *tz, int64_t t, struct tz_span *out)
{
	if (tz->use_footer && t >= tz->trans[tz->ntrans - 1])
		span_footer(tz, t, out);
	else
		span_table(tz, t, out);
	/*
	 * A file may put a transition at INT64_MIN or INT64_MAX itself; the
	 * limits still mean "no end", so no neighbouring offset is claimed.
	 */
	if (out->start == INT64_MIN)
		out->prev_offset = out->offset;
	if (out->end == INT64_MAX)
		out->next_offset = out->offset;
}

/* Returns the UTC offset in seconds (east positive) in force at t. */
int32_t
tz_offset_at(const struct tz *tz, int64_t t)
{
	if (tz->use_footer && t >= tz->trans[tz->ntrans - 1])
		return footer_type(&tz->footer, t)->offset;
	return period_type(tz, period_of(tz, t))->offset;
}

/* Returns the zone's name; valid as long as the zone. */
const char *
tz_name(const struct tz *tz)
{
	return tz->name;
}

/* a - b, saturated at the int64_t limits. */
static int64_t
sat_sub(int64_t a, int64_t b)
{
	if (b > 0 && a < INT64_MIN + b)
		return INT64_MIN;
	if (b < 0 && a > INT64_MAX + b)
		return INT64_MAX;
	return a - b;
}

/*
 * Finds the instants in [CV_TIME_MIN, CV_TIME_MAX] whose local wall time
 * is wall.  Returns 1 with the instant in utc[0]; 2 in a fall-back fold,
 * with the earlier pass in utc[0] and the later in utc[1] (should crafted
 * data produce more passes, the first and the last); or 0 in a
 * spring-forward gap, with utc[0] set to the first instant after the gap
 * (the transition that skipped wall), or CV_NEVER if none is in range.
 * Unused entries of utc are set to CV_NEVER.
 */
int
tz_local_to_utc(const struct tz *tz, int64_t wall, int64_t utc[2])
{
	struct tz_span sp;
	int64_t lo = sat_sub(wall, TZ_OFF_MAX), hi = sat_sub(wall, TZ_OFF_MIN);
	int64_t t, cand, gap = CV_NEVER;
	int n = 0;

	utc[0] = utc[1] = CV_NEVER;
	lo = lo < CV_TIME_MIN ? CV_TIME_MIN : lo;
	hi = hi > CV_TIME_MAX ? CV_TIME_MAX : hi;
	/* Only instants in [lo, hi] can show wall: offsets are bounded. */
	for (t = lo; t <= hi; t = sp.end) {
		tz_span_at(tz, t, &sp);
		cand = wall - sp.offset;
		if (cand >= t && cand < sp.end && cand <= hi)
			utc[n++ == 0 ? 0 : 1] = cand; /* keep first and last */
		else if (cand < t && gap == CV_NEVER)
			gap = t; /* this span's walls all lie after wall */
		if (sp.end == INT64_MAX)
			break;
	}
	if (n == 0)
		utc[0] = gap;
	return n > 2 ? 2 : n;
}

/* Reads one TZif header: magic, version and counts. */
static int
tzif_header(struct tzif *r, struct tzif_counts *c)
{
	const unsigned char *h = take(r, 44);

	if (h == NULL)
		return bad(r, "truncated header");
	if (memcmp(h, "TZif", 4) != 0)
		return bad(r, "bad magic");
	if (h[4] == 0)
		return unsupported(r, "TZif version 1 is not supported");
	if (h[4] < '2' || h[4] > '4')
		return unsupported(r, "unknown TZif version");
	c->isut = be32(h + 20);
	c->isstd = be32(h + 24);
	c->leap = be32(h + 28);
	c->time = be32(h + 32);
	c->type = be32(h + 36);
	c->chars = be32(h + 40);
	if (c->leap != 0)
		return unsupported(
		    r, "leap-second (right/) zones are not supported");
	return 0;
}

/* Checks the counts of the 64-bit header against RFC 8536 section 3.1. */
static int
tzif_check_counts(struct tzif *r, const struct tzif_counts *c)
{
	if (c->type == 0 || c->type > 256)
		return bad(r, "type count out of range");
	if (c->chars == 0)
		return bad(r, "no abbreviations");
	if ((c->isut != 0 && c->isut != c->type) ||
	    (c->isstd != 0 && c->isstd != c->type))
		return bad(r, "indicator count differs from type count");
	return 0;
}

/* Size of a data block; 64-bit arithmetic, as the counts are 32-bit. */
static uint64_t
tzif_block_size(const struct tzif_counts *c, unsigned timesize)
{
	return (uint64_t)c->time * (timesize + 1) + (uint64_t)c->type * 6 +
	    c->chars + (uint64_t)c->leap * (timesize + 4) + c->isstd + c->isut;
}

static size_t
cstrnlen(const char *s, size_t max)
{
	const char *z = memchr(s, '\0', max);

	return z == NULL ? max : (size_t)(z - s);
}

/* Reads the local time types and their abbreviations. */
static int
tzif_types(struct tzif *r, struct tz *tz, const unsigned char *p,
    const unsigned char *chars, uint32_t nchars)
{
	for (size_t i = 0; i < tz->ntypes; i++, p += 6) {
		struct tz_type *ty = &tz->types[i];
		int64_t off = (int32_t)be32(p);
		size_t len;

		if (off < TZ_OFF_MIN || off > TZ_OFF_MAX)
			return bad(r, "UTC offset out of range");
		if (p[4] > 1)
			return bad(r, "bad DST flag");
		if (p[5] >= nchars)
			return bad(r, "abbreviation index out of range");
		len = cstrnlen((const char *)chars + p[5], nchars - p[5]);
		if (len == nchars - p[5])
			return bad(r, "abbreviation not NUL-terminated");
		if (len > TZ_ABBR_MAX)
			return bad(r, "abbreviation too long");
		ty->offset = (int32_t)off;
		ty->isdst = p[4];
		memcpy(ty->abbr, chars + p[5], len);
		ty->abbr[len] = '\0';
	}
	return 0;
}

/* Reads the transitions: strictly ascending, with valid type indexes. */
static int
tzif_transitions(struct tzif *r, struct tz *tz, const unsigned char *times,
    const unsigned char *idx)
{
	for (size_t i = 0; i < tz->ntrans; i++) {
		tz->trans[i] = be64(times + 8 * i);
		if (i > 0 && tz->trans[i] <= tz->trans[i - 1])
			return bad(r, "transitions not in ascending order");
		if (idx[i] >= tz->ntypes)
			return bad(r, "type index out of range");
		tz->ttype[i] = idx[i];
	}
	return 0;
}

/* Checks the standard/wall and UT/local indicators (RFC 8536 3.2). */
static int
tzif_indicators(struct tzif *r, const struct tzif_counts *c,
    const unsigned char *isstd, const unsigned char *isut)
{
	for (uint32_t i = 0; i < c->isstd; i++)
		if (isstd[i] > 1)
			return bad(r, "bad standard/wall indicator");
	for (uint32_t i = 0; i < c->isut; i++)
		if (isut[i] > 1 ||
		    (isut[i] == 1 && (c->isstd == 0 || isstd[i] == 0)))
			return bad(r, "bad UT/local indicator");
	return 0;
}

/* Allocates a zone with room for ntrans transitions and ntypes types. */
static struct tz *
tz_alloc(const char *name, size_t ntrans, size_t ntypes)
{
	struct tz *tz;

	if ((tz = calloc(1, sizeof(*tz))) == NULL)
		return NULL;
	tz->ntrans = ntrans;
	tz->ntypes = ntypes;
	tz->name = strdup(name);
	tz->trans = calloc(ntrans + 1, sizeof(*tz->trans));
	tz->ttype = calloc(ntrans + 1, sizeof(*tz->ttype));
	tz->first = calloc(ntrans + 1, sizeof(*tz->first));
	tz->last = calloc(ntrans + 1, sizeof(*tz->last));
	tz->types = calloc(ntypes, sizeof(*tz->types));
	if (tz->name == NULL || tz->trans == NULL || tz->ttype == NULL ||
	    tz->first == NULL || tz->last == NULL || tz->types == NULL) {
		tz_free(tz);
		return NULL;
	}
	return tz;
}

/*
 * Reads a name of a POSIX TZ string: three or more letters, or <...> with
 * three or more letters, digits, '+' or '-'.
 */
static const char *
posix_name(const char *s, char abbr[TZ_ABBR_MAX + 1])
{
	size_t n = 0;
	int quoted = *s == '<';

	s += quoted;
	for (;; s++, n++) {
		int c = (unsigned char)*s;
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		        (quoted &&
		            ((c >= '0' && c <= '9') || c == '+' || c == '-'))))
			break;
		if (n == TZ_ABBR_MAX)
			return NULL;
		abbr[n] = (char)c;
	}
	abbr[n] = '\0';
	if (n < 3 || (quoted && *s++ != '>'))
		return NULL;
	return s;
}

/* Reads an unsigned number of 1 to maxdig digits into *v. */
static const char *
posix_num(const char *s, int maxdig, int *v)
{
	int n = 0;

	*v = 0;
	while (n < maxdig && *s >= '0' && *s <= '9') {
		*v = *v * 10 + (*s++ - '0');
		n++;
	}
	return n == 0 || (*s >= '0' && *s <= '9') ? NULL : s;
}

/*
 * Reads [+-]hh[:mm[:ss]] with hh at most maxh (24 for offsets, 167 for
 * the v3 rule times) into *secs.
 */
static const char *
posix_hms(const char *s, int maxh, int32_t *secs)
{
	int neg = *s == '-', h, m = 0, sec = 0;

	s += *s == '-' || *s == '+';
	if ((s = posix_num(s, 3, &h)) == NULL || h > maxh)
		return NULL;
	if (*s == ':' && ((s = posix_num(s + 1, 2, &m)) == NULL || m > 59))
		return NULL;
	if (*s == ':' && ((s = posix_num(s + 1, 2, &sec)) == NULL || sec > 59))
		return NULL;
	*secs = (neg ? -1 : 1) * (h * 3600 + m * 60 + sec);
	return s;
}

/* Reads a rule date, Jn, n or Mm.w.d, with an optional /time. */
static const char *
posix_date(const char *s, struct tz_date *d)
{
	int lo = 0;

	memset(d, 0, sizeof(*d));
	if (*s == 'M') {
		d->kind = TZ_DATE_MONTH;
		if ((s = posix_num(s + 1, 2, &d->month)) == NULL ||
		    *s++ != '.' || (s = posix_num(s, 1, &d->week)) == NULL ||
		    *s++ != '.' || (s = posix_num(s, 1, &d->day)) == NULL)
			return NULL;
		if (d->month < 1 || d->month > 12 || d->week < 1 ||
		    d->week > 5 || d->day > 6)
			return NULL;
	} else {
		d->kind = *s == 'J' ? TZ_DATE_JULIAN1 : TZ_DATE_JULIAN0;
		lo = *s == 'J';
		if ((s = posix_num(s + lo, 3, &d->day)) == NULL ||
		    d->day < lo || d->day > 365)
			return NULL;
	}
	d->secs = 2 * 3600;
	if (*s == '/' && (s = posix_hms(s + 1, 167, &d->secs)) == NULL)
		return NULL;
	return s;
}

/*
 * Parses the POSIX TZ string of a footer (NUL-terminated) into f:
 * std offset [dst [offset] [,start[/time],end[/time]]].  A DST name
 * without rules gets glibc's built-in rule, M3.2.0,M11.1.0 (the United
 * States' since 2007), rather than the rules of a "posixrules" file.
 */
static int
footer_parse(const char *s, struct tz_footer *f)
{
	int32_t secs;

	memset(f, 0, sizeof(*f));
	if ((s = posix_name(s, f->std.abbr)) == NULL ||
	    (s = posix_hms(s, 24, &secs)) == NULL)
		return -1;
	f->std.offset = -secs;
	f->kind = TZ_FOOTER_FIXED;
	if (*s == '\0')
		return 0;
	f->kind = TZ_FOOTER_RULES;
	if ((s = posix_name(s, f->dst.abbr)) == NULL)
		return -1;
	f->dst.isdst = 1;
	f->dst.offset = f->std.offset + 3600;
	if (*s != ',' && *s != '\0') {
		if ((s = posix_hms(s, 24, &secs)) == NULL)
			return -1;
		f->dst.offset = -secs;
	}
	if (*s == '\0') {
		f->start = (struct tz_date){TZ_DATE_MONTH, 3, 2, 0, 7200};
		f->end = (struct tz_date){TZ_DATE_MONTH, 11, 1, 0, 7200};
		return 0;
	}
	if (*s++ != ',' || (s = posix_date(s, &f->start)) == NULL ||
	    *s++ != ',' || (s = posix_date(s, &f->end)) == NULL || *s != '\0')
		return -1;
	return 0;
}

/*
 * Decides whether footer rules ever change the offset: they do if they do
 * within 400 years (the calendar's period), which a walk from 2000 covers.
 */
static int
footer_is_steady(const struct tz_footer *f)
{
	struct fwin w;
	int64_t t = jan1(2000) * DAY;

	if (f->std.offset == f->dst.offset)
		return 1;
	fwin_at(&w, f, t);
	return footer_next_change(&w, f, t, fwin_dst(&w, t)) == INT64_MAX;
}

/* Reads the footer: newline, POSIX TZ string, newline. */
static int
tzif_footer(struct tzif *r, struct tz_footer *f)
{
	const unsigned char *p = take(r, 1), *nl;
	char buf[TZ_FOOTER_MAX + 1];
	size_t len;

	if (p == NULL || *p != '\n')
		return bad(r, "missing footer");
	if ((nl = memchr(r->p, '\n', r->left)) == NULL)
		return bad(r, "unterminated footer");
	if ((len = (size_t)(nl - r->p)) > TZ_FOOTER_MAX)
		return bad(r, "footer too long");
	memcpy(buf, r->p, len);
	buf[len] = '\0';
	/* Bytes after the footer are ignored, as glibc ignores them. */
	if (len == 0) {
		f->kind = TZ_FOOTER_NONE;
		return 0;
	}
	if (strlen(buf) != len || footer_parse(buf, f) == -1)
		return bad(r, "bad footer TZ string");
	if (f->kind == TZ_FOOTER_RULES)
		f->steady = footer_is_steady(f);
	return 0;
}

/*
 * The type before the first transition.  RFC 8536 says type 0; glibc takes
 * the first standard-time type (type 0 if all are DST).  zic's files start
 * with a standard type 0 (local mean time, usually), so the two agree on
 * every real zone; where they differ, this follows glibc, like the rest of
 * the system (tests/check_tz.c checks crafted files against it).
 */
static size_t
first_std_type(const struct tz *tz)
{
	for (size_t i = 0; i < tz->ntypes; i++)
		if (!tz->types[i].isdst)
			return i;
	return 0;
}

static int
same_offset(const struct tz *tz, size_t a, size_t b)
{
	return period_type(tz, a)->offset == period_type(tz, b)->offset;
}

/* Computes nper, first[] and last[]: the runs of equal offsets. */
static void
tz_index(struct tz *tz)
{
	size_t k;

	/*
	 * glibc ignores the footer of a file without transitions, where RFC
	 * 8536 would apply it; zic writes such files only for fixed zones,
	 * whose footer says the same as type 0.  This follows glibc.
	 */
	tz->use_footer = tz->footer.kind != TZ_FOOTER_NONE && tz->ntrans > 0;
	tz->nper = tz->use_footer ? tz->ntrans : tz->ntrans + 1;
	tz->pre = first_std_type(tz);
	for (k = 0; k < tz->nper; k++) {
		tz->first[k] = (uint32_t)k;
		if (k > 0 && same_offset(tz, k - 1, k))
			tz->first[k] = tz->first[k - 1];
	}
	for (k = tz->nper; k-- > 0;) {
		tz->last[k] = (uint32_t)k;
		if (k + 1 < tz->nper && same_offset(tz, k, k + 1))
			tz->last[k] = tz->last[k + 1];
	}
}

/* Reads the 64-bit data block and footer into a new zone. */
static struct tz *
tzif_body(struct tzif *r, const struct tzif_counts *c)
{
	const unsigned char *times, *idx, *types, *chars, *isstd, *isut;
	struct tz *tz;

	times = take(r, (uint64_t)c->time * 8);
	idx = take(r, c->time);
	types = take(r, (uint64_t)c->type * 6);
	chars = take(r, c->chars);
	isstd = take(r, c->isstd);
	isut = take(r, c->isut);
	if ((tz = tz_alloc(r->name, c->time, c->type)) == NULL) {
		log_errbuf(r->err, r->errlen, "time zone \"%s\": %s", r->name,
		    strerror(errno));
		return NULL;
	}
	if (tzif_transitions(r, tz, times, idx) == -1 ||
	    tzif_types(r, tz, types, chars, c->chars) == -1 ||
	    tzif_indicators(r, c, isstd, isut) == -1 ||
	    tzif_footer(r, &tz->footer) == -1) {
		tz_free(tz);
		return NULL;
	}
	tz_index(tz);
	return tz;
}

/*
 * Parses the TZif image buf[0..len) (RFC 8536, version 2 or later) into a
 * new zone named name (not NULL; copied), which the caller frees with
 * tz_free().  Does not cache.  Every count in the file is checked against
 * len before use.  Returns NULL with a message in err for: a file that is
 * not TZif, version 1 only, with leap-second records, truncated, with
 * out-of-range indexes or offsets, unsorted transitions, or a malformed
 * footer.
 */
struct tz *
tz_parse(const char *name, const unsigned char *buf, size_t len, char *err,
    size_t errlen)
{
	struct tzif r = {name, err, errlen, buf, len};
	struct tzif_counts c;

	if (tzif_header(&r, &c) == -1)
		return NULL;
	/* Skip the 32-bit data; the 64-bit copy after it is complete. */
	if (take(&r, tzif_block_size(&c, 4)) == NULL) {
		bad(&r, "truncated version 1 data");
		return NULL;
	}
	if (tzif_header(&r, &c) == -1 || tzif_check_counts(&r, &c) == -1)
		return NULL;
	if (tzif_block_size(&c, 8) > r.left) {
		bad(&r, "truncated data");
		return NULL;
	}
	return tzif_body(&r, &c);
}

/* Frees a zone from tz_parse() (never one from tz_get()); NULL is fine. */
void
tz_free(struct tz *tz)
{
	if (tz == NULL)
		return;
	free(tz->name);
	free(tz->trans);
	free(tz->ttype);
	free(tz->first);
	free(tz->last);
	free(tz->types);
	free(tz);
}

/*
 * A zone name is a relative path inside the tz directory: 1 to 255 bytes
 * of [A-Za-z0-9._+-/], no leading '/', and no empty, "." or ".."
 * component, so it cannot leave the directory.
 */
static int
name_valid(const char *name)
{
	size_t len = strlen(name), comp = 0;

	if (len == 0 || len > TZ_NAME_MAX)
		return 0;
	for (size_t i = 0; i <= len; i++) {
		unsigned char c = (unsigned char)name[i];
		if (c == '/' || c == '\0') {
			if (comp == 0 || (comp == 1 && name[i - 1] == '.') ||
			    (comp == 2 && name[i - 1] == '.' &&
			        name[i - 2] == '.'))
				return 0;
			comp = 0;
			continue;
		}
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		        (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		        c == '+' || c == '-'))
			return 0;
		comp++;
	}
	return 1;
}

/* The built-in UTC, for systems without tzdata. */
static struct tz *
tz_builtin_utc(const char *name, char *err, size_t errlen)
{
	struct tz *tz = tz_alloc(name, 0, 1);

	if (tz == NULL) {
		log_errbuf(
		    err, errlen, "time zone \"%s\": %s", name, strerror(errno));
		return NULL;
	}
	memcpy(tz->types[0].abbr, "UTC", 4);
	tz_index(tz);
	return tz;
}

/* Reads and parses $TZDIR/name. */
static struct tz *
tz_load(const char *name, char *err, size_t errlen)
{
	const char *dir = getenv("TZDIR");
	char path[TZ_PATH_MAX];
	unsigned char *buf;
	size_t len;
	struct tz *tz;

	if (dir == NULL || *dir == '\0')
		dir = TZ_DEFAULT_DIR;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    sizeof(path)) {
		log_errbuf(
		    err, errlen, "time zone \"%s\": path too long", name);
		return NULL;
	}
	if (io_read_file(path, TZ_FILE_MAX, &buf, &len) == -1) {
		if (errno == ENOENT &&
		    (strcmp(name, "UTC") == 0 || strcmp(name, "Etc/UTC") == 0))
			return tz_builtin_utc(name, err, errlen);
		if (errno == ENOENT || errno == ENOTDIR || errno == EINVAL)
			log_errbuf(
			    err, errlen, "unknown time zone \"%s\"", name);
		else
			log_errbuf(err, errlen, "time zone \"%s\": %s: %s",
			    name, path, strerror(errno));
		return NULL;
	}
	tz = tz_parse(name, buf, len, err, errlen);
	free(buf);
	return tz;
}

/* FNV-1a, enough to spread a few hundred names over the buckets. */
static unsigned
name_hash(const char *name)
{
	uint32_t h = 2166136261u;

	for (; *name != '\0'; name++)
		h = (h ^ (unsigned char)*name) * 16777619u;
	return h % TZ_CACHE_BUCKETS;
}

/* Copies name into buf for a message, '?' for anything unprintable. */
static const char *
name_printable(const char *name, char *buf, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len && name[i] != '\0'; i++)
		buf[i] = name[i] >= ' ' && name[i] <= '~' ? name[i] : '?';
	buf[i] = '\0';
	return buf;
}

static void
cache_lock(void)
{
	if (pthread_mutex_lock(&tz_cache.lock) != 0)
		fatalx("tz: cannot lock the zone cache");
}

static void
cache_unlock(void)
{
	if (pthread_mutex_unlock(&tz_cache.lock) != 0)
		fatalx("tz: cannot unlock the zone cache");
}

/*
 * Returns the zone called name (an IANA name such as "Europe/Berlin"),
 * reading $TZDIR/name (default /usr/share/zoneinfo) the first time and
 * the cached copy afterwards: the same name always gives the same pointer,
 * valid until tz_cache_clear().  $TZDIR is read when a name is first
 * loaded, not again.  Thread-safe.  Returns NULL with a message in err for
 * an invalid name, an unknown zone or a malformed file; it never falls
 * back to UTC, except that "UTC" and "Etc/UTC" get a built-in zone when
 * their file is missing.
 */
const struct tz *
tz_get(const char *name, char *err, size_t errlen)
{
	char shown[64];
	struct tz *tz;
	unsigned h;

	if (name == NULL || !name_valid(name)) {
		log_errbuf(err, errlen, "invalid time zone name \"%s\"",
		    name_printable(name ? name : "", shown, sizeof(shown)));
		return NULL;
	}
	h = name_hash(name);
	cache_lock();
	for (tz = tz_cache.bucket[h]; tz != NULL; tz = tz->next)
		if (strcmp(tz->name, name) == 0)
			break;
	/* Loading under the lock keeps one copy per name; misses are rare. */
	if (tz == NULL && (tz = tz_load(name, err, errlen)) != NULL) {
		tz->next = tz_cache.bucket[h];
		tz_cache.bucket[h] = tz;
	}
	cache_unlock();
	return tz;
}

/*
 * Frees every cached zone.  Every pointer tz_get() returned becomes
 * invalid: call it only when no thread uses a zone any more (at exit, so
 * that leak checkers stay quiet, and between tests).
 */
void
tz_cache_clear(void)
{
	struct tz *tz, *next;

	cache_lock();
	for (size_t i = 0; i < TZ_CACHE_BUCKETS; i++) {
		for (tz = tz_cache.bucket[i]; tz != NULL; tz = next) {
			next = tz->next;
			tz_free(tz);
		}
		tz_cache.bucket[i] = NULL;
	}
	cache_unlock();
}
