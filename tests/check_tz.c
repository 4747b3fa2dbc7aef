/*
 * check_tz.c: the Check suite of common/tz.c.  The oracle is glibc's
 * localtime_r(): Check forks every test, so a test may set TZ and call
 * tzset() without disturbing the others, and each compares the offset, DST
 * flag and abbreviation of tz_span_at() with glibc's on random instants and
 * around every transition of many zones (all of them, more thinly), also
 * checking the span's ends and the wall-time round trip at each instant.
 * The parser is fed every truncation of real files and a table of crafted
 * broken ones; names, the cache, $TZDIR and threads get their own tests.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cronvisor.h"
#include "cvtest.h"

#define ZONEINFO  "/usr/share/zoneinfo"
#define Y1900     (-2208988800LL) /* 1900-01-01T00:00:00Z */
#define Y2037     2114380800LL    /* 2037-01-01T00:00:00Z */
#define Y2100     4102444800LL    /* 2100-01-01T00:00:00Z */
#define Y1972     63072000LL      /* 1972-01-01T00:00:00Z */
#define MAX_TRANS 4096            /* transitions a test reads from one file */
#define MAX_SHOWN 5               /* mismatches printed per test */
#define DAY_S     86400           /* seconds per day */

/* What an oracle run compared and found. */
struct tally {
	long compared;   /* instants compared with glibc */
	long mismatches; /* of which differed, or broke an invariant */
	long roundtrips; /* tz_local_to_utc() round trips checked */
};

/* splitmix64: a small deterministic generator for sample instants. */
static uint64_t
rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int64_t
rnd_between(uint64_t *s, int64_t lo, int64_t hi)
{
	return lo + (int64_t)(rnd(s) % (uint64_t)(hi - lo));
}

static void
oracle_zone(const char *tzval)
{
	ck_assert_int_eq(setenv("TZ", tzval, 1), 0);
	tzset();
}

/* glibc's view of instant t under the current TZ. */
static void
oracle_at(int64_t t, long *off, int *isdst, const char **abbr)
{
	time_t tt = (time_t)t;
	struct tm tm;

	/*
	 * No ck_assert here or on any per-instant path: in fork mode each
	 * one writes its location to Check's pipe, a system call apiece.
	 */
	if (localtime_r(&tt, &tm) == NULL)
		abort();
	*off = tm.tm_gmtoff;
	*isdst = tm.tm_isdst;
	*abbr = tm.tm_zone;
}

static long
oracle_offset(int64_t t)
{
	long off;
	int isdst;
	const char *abbr;

	oracle_at(t, &off, &isdst, &abbr);
	return off;
}

static void
mismatch(struct tally *ty, const char *what, int64_t t, long got, long want)
{
	if (ty->mismatches++ < MAX_SHOWN)
		fprintf(stderr, "  %s at %lld: got %ld, want %ld\n", what,
		    (long long)t, got, want);
}

/*
 * Checks the span's ends: glibc must see prev_offset just before start
 * and next_offset at end, and tz_offset_at() must agree inside both ends.
 */
static void
check_span_ends(
    const struct tz *tz, const struct tz_span *sp, int64_t t, struct tally *ty)
{
	if (!(sp->start <= t && t < sp->end))
		mismatch(ty, "span bounds", t, (long)sp->start, (long)sp->end);
	if (tz_offset_at(tz, t) != sp->offset)
		mismatch(
		    ty, "tz_offset_at", t, tz_offset_at(tz, t), sp->offset);
	if (sp->start != INT64_MIN &&
	    (oracle_offset(sp->start - 1) != sp->prev_offset ||
	        sp->prev_offset == sp->offset ||
	        tz_offset_at(tz, sp->start) != sp->offset))
		mismatch(ty, "prev_offset", t, sp->prev_offset,
		    oracle_offset(sp->start - 1));
	if (sp->start == INT64_MIN && sp->prev_offset != sp->offset)
		mismatch(ty, "unbounded prev_offset", t, sp->prev_offset,
		    sp->offset);
	if (sp->end != INT64_MAX &&
	    (oracle_offset(sp->end) != sp->next_offset ||
	        sp->next_offset == sp->offset ||
	        tz_offset_at(tz, sp->end - 1) != sp->offset))
		mismatch(ty, "next_offset", t, sp->next_offset,
		    oracle_offset(sp->end));
	if (sp->end == INT64_MAX && sp->next_offset != sp->offset)
		mismatch(ty, "unbounded next_offset", t, sp->next_offset,
		    sp->offset);
}

/* Checks that the wall time of t leads back to t. */
static void
check_round_trip(const struct tz *tz, int64_t t, int32_t off, struct tally *ty)
{
	int64_t utc[2];
	int n = tz_local_to_utc(tz, t + off, utc);

	ty->roundtrips++;
	if (!((n >= 1 && utc[0] == t) || (n == 2 && utc[1] == t)) ||
	    (n == 2 && utc[0] >= utc[1]))
		mismatch(ty, "round trip", t, n, 1);
}

/* Compares tz with glibc (TZ already set) at instant t. */
static void
check_instant(const struct tz *tz, int64_t t, struct tally *ty)
{
	struct tz_span sp;
	const char *abbr;
	long off;
	int isdst;

	tz_span_at(tz, t, &sp);
	oracle_at(t, &off, &isdst, &abbr);
	ty->compared++;
	if (sp.offset != off)
		mismatch(ty, "offset", t, sp.offset, off);
	else if (sp.isdst != isdst)
		mismatch(ty, "isdst", t, sp.isdst, isdst);
	else if (strcmp(sp.abbr, abbr) != 0 && ty->mismatches++ < MAX_SHOWN)
		fprintf(stderr, "  abbreviation at %lld: got %s, want %s\n",
		    (long long)t, sp.abbr, abbr);
	check_span_ends(tz, &sp, t, ty);
	check_round_trip(tz, t, sp.offset, ty);
}

static uint32_t
be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

/*
 * The transition instants of a TZif v2+ image, read independently of
 * tz.c (the files come from the system, so this trusts them).
 */
static size_t
file_transitions(const unsigned char *b, size_t len, int64_t *out)
{
	size_t o = 44 + (size_t)be32(b + 32) * 5 + (size_t)be32(b + 36) * 6 +
	    be32(b + 40) + (size_t)be32(b + 28) * 8 + be32(b + 24) +
	    be32(b + 20);
	size_t n = be32(b + o + 32);

	ck_assert_uint_le(o + 44 + n * 8, len);
	ck_assert_uint_le(n, MAX_TRANS);
	for (size_t i = 0; i < n; i++) {
		const unsigned char *p = b + o + 44 + 8 * i;
		out[i] = (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
	}
	return n;
}

static unsigned char *
read_zone(const char *name, size_t *len)
{
	char path[512];
	unsigned char *buf;

	snprintf(path, sizeof(path), "%s/%s", ZONEINFO, name);
	ck_assert_msg(io_read_file(path, 1 << 20, &buf, len) == 0, "%s: %s",
	    path, strerror(errno));
	return buf;
}

/* Checks every transition of the file of zone name, and 1 s either side. */
static void
check_transitions(const struct tz *tz, const char *name, struct tally *ty)
{
	static int64_t trans[MAX_TRANS];
	size_t len, n;
	unsigned char *buf = read_zone(name, &len);

	n = file_transitions(buf, len, trans);
	free(buf);
	for (size_t i = 0; i < n; i++)
		for (int64_t d = -1; d <= 1; d++)
			if (trans[i] + d >= CV_TIME_MIN &&
			    trans[i] + d <= CV_TIME_MAX)
				check_instant(tz, trans[i] + d, ty);
}

/*
 * Walks the spans from..to and checks each boundary and 1 s either side:
 * the footer's transitions, which the file does not list.
 */
static void
check_span_walk(const struct tz *tz, int64_t from, int64_t to, struct tally *ty)
{
	struct tz_span sp;

	for (int64_t t = from; t < to; t = sp.end) {
		tz_span_at(tz, t, &sp);
		if (sp.end == INT64_MAX || sp.end > CV_TIME_MAX - 1)
			break;
		for (int64_t d = -1; d <= 1; d++)
			check_instant(tz, sp.end + d, ty);
	}
}

static void
check_random(const struct tz *tz, uint64_t seed, long n, int64_t lo, int64_t hi,
    struct tally *ty)
{
	for (long i = 0; i < n; i++)
		check_instant(tz, rnd_between(&seed, lo, hi), ty);
}

static void
report(const char *what, const struct tally *ty)
{
	fprintf(stderr,
	    "check_tz: %s: %ld instants compared with glibc, "
	    "%ld round trips, %ld mismatches\n",
	    what, ty->compared, ty->roundtrips, ty->mismatches);
}

static const char *const oracle_zones[] = {
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",
    "Asia/Kathmandu",
    "Pacific/Chatham",
    "America/Santiago",
    "Europe/Dublin",
    "Africa/Casablanca",
    "America/Nuuk",
    "Pacific/Apia",
    "Asia/Tehran",
    "America/St_Johns",
    "Antarctica/Troll",
    "Europe/Berlin",
    "Australia/Sydney",
    "America/Sao_Paulo",
    "Asia/Tokyo",
    "UTC",
};
#define NORACLE ((int)(sizeof(oracle_zones) / sizeof(oracle_zones[0])))

static const struct tz *
get_zone(const char *name)
{
	char err[CV_ERRLEN] = "";
	const struct tz *tz = tz_get(name, err, sizeof(err));

	ck_assert_msg(tz != NULL, "%s: %s", name, err);
	return tz;
}

/* 100,000 random instants in 1900-2100 plus every transition, per zone. */
START_TEST(test_oracle_zone)
{
	const char *name = oracle_zones[_i];
	const struct tz *tz = get_zone(name);
	struct tally ty = {0};
	char what[128];

	oracle_zone(name);
	check_random(tz, 1000 + (uint64_t)_i, 100000, Y1900, Y2100, &ty);
	check_transitions(tz, name, &ty);
	check_span_walk(tz, Y2037, Y2100, &ty);
	snprintf(what, sizeof(what), "%s 1900-2100", name);
	report(what, &ty);
	ck_assert_int_eq(ty.mismatches, 0);
	tz_cache_clear();
}
END_TEST

/* Beyond 2100 the footer rules alone decide: compare as far as 9999. */
START_TEST(test_oracle_far_future)
{
	const char *name = oracle_zones[_i];
	const struct tz *tz = get_zone(name);
	struct tally ty = {0};
	char what[128];

	oracle_zone(name);
	check_random(tz, 2000 + (uint64_t)_i, 20000, Y2100, CV_TIME_MAX, &ty);
	check_span_walk(tz, Y2100, Y2100 + 200LL * 31556952, &ty);
	check_span_walk(tz, CV_TIME_MAX - 30LL * 31556952, CV_TIME_MAX, &ty);
	snprintf(what, sizeof(what), "%s 2100-9999", name);
	report(what, &ty);
	ck_assert_int_eq(ty.mismatches, 0);
	tz_cache_clear();
}
END_TEST

/* Reads the zone and link names of tzdata.zi into a new array. */
static char **
zone_names(size_t *n)
{
	FILE *fp = fopen(ZONEINFO "/tzdata.zi", "r");
	char line[512], a[256], b[256], **names = NULL;
	size_t cap = 0;

	ck_assert_ptr_nonnull(fp);
	*n = 0;
	while (fgets(line, sizeof(line), fp) != NULL) {
		const char *nm = NULL;
		if (sscanf(line, "Z %255s", a) == 1)
			nm = a;
		else if (sscanf(line, "L %255s %255s", a, b) == 2)
			nm = b;
		if (nm == NULL)
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 256;
			names = realloc(names, cap * sizeof(*names));
			ck_assert_ptr_nonnull(names);
		}
		names[(*n)++] = strdup(nm);
	}
	fclose(fp);
	return names;
}

/* Every zone and link of tzdata.zi: transitions, 1,000 + 100 samples. */
START_TEST(test_oracle_sweep)
{
	size_t n, i;
	char **names = zone_names(&n);
	struct tally ty = {0};
	char what[128];

	ck_assert_uint_gt(n, 400);
	for (i = 0; i < n; i++) {
		const struct tz *tz = get_zone(names[i]);
		oracle_zone(names[i]);
		check_random(tz, 3000 + i, 1000, Y1900, Y2100, &ty);
		check_random(tz, 4000 + i, 100, Y2100, CV_TIME_MAX, &ty);
		check_transitions(tz, names[i], &ty);
		free(names[i]);
	}
	free(names);
	snprintf(what, sizeof(what), "sweep of %zu zones and links", n);
	report(what, &ty);
	ck_assert_int_eq(ty.mismatches, 0);
	tz_cache_clear();
}
END_TEST

/* A crafted TZif image; see craft_build(). */
struct craft {
	char version;       /* '2', '3' or 0 for version 1 */
	size_t ntrans;      /* transitions */
	int64_t trans[8];   /* their instants */
	uint8_t idx[8];     /* their types */
	size_t ntypes;      /* local time types */
	int32_t off[8];     /* type offsets */
	uint8_t isdst[8];   /* type DST flags */
	uint8_t ai[8];      /* type abbreviation indexes */
	const char *chars;  /* abbreviation block, NUL-separated */
	size_t nchars;      /* its size */
	const char *footer; /* POSIX TZ string; NULL: no footer at all */
	uint32_t nleap;     /* leap-second records (zeros) */
	uint32_t nind;      /* standard/wall and UT/local indicators */
	uint8_t indval;     /* their value */
};

static unsigned char *
put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
	return p + 4;
}

static unsigned char *
put_header(unsigned char *p, const struct craft *c, int empty)
{
	memcpy(p, "TZif", 4);
	p[4] = (unsigned char)c->version;
	memset(p + 5, 0, 15);
	p += 20;
	p = put32(p, empty ? 0 : c->nind);
	p = put32(p, empty ? 0 : c->nind);
	p = put32(p, c->nleap);
	p = put32(p, empty ? 0 : (uint32_t)c->ntrans);
	p = put32(p, empty ? 0 : (uint32_t)c->ntypes);
	return put32(p, empty ? 0 : (uint32_t)c->nchars);
}

/*
 * Builds the image into buf (4 KiB is plenty): a v1 header and a v1 block
 * holding only the leap records (the reader skips it), then the v2 header,
 * the 64-bit data and the footer.  Version 1 gets just its header: the
 * reader refuses it from there.  Returns the size.
 */
static size_t
craft_build(const struct craft *c, unsigned char *buf)
{
	unsigned char *p = put_header(buf, c, c->version != 0);

	if (c->version == 0)
		return (size_t)(p - buf);
	memset(p, 0, (size_t)c->nleap * 8);
	p += c->nleap * 8;
	p = put_header(p, c, 0);
	for (size_t i = 0; i < c->ntrans; i++) {
		p = put32(p, (uint32_t)((uint64_t)c->trans[i] >> 32));
		p = put32(p, (uint32_t)c->trans[i]);
	}
	memcpy(p, c->idx, c->ntrans);
	p += c->ntrans;
	for (size_t i = 0; i < c->ntypes; i++) {
		p = put32(p, (uint32_t)c->off[i]);
		*p++ = c->isdst[i];
		*p++ = c->ai[i];
	}
	memcpy(p, c->chars, c->nchars);
	p += c->nchars;
	memset(p, 0, (size_t)c->nleap * 12);
	p += c->nleap * 12;
	memset(p, c->indval, 2 * (size_t)c->nind);
	p += 2 * c->nind;
	if (c->footer != NULL)
		p += sprintf((char *)p, "\n%s\n", c->footer);
	return (size_t)(p - buf);
}

/* A sane crafted zone: LMT, then EST/EDT flips, and a footer. */
static struct craft
craft_base(void)
{
	struct craft c = {
	    .version = '2',
	    .ntrans = 3,
	    .trans = {-2000000000, 1000000000, 1010000000},
	    .idx = {1, 2, 1},
	    .ntypes = 3,
	    .off = {-17762, -18000, -14400},
	    .isdst = {0, 0, 1},
	    .ai = {0, 4, 8},
	    .chars = "LMT\0EST\0EDT",
	    .nchars = 12,
	    .footer = "EST5EDT,M3.2.0,M11.1.0",
	};
	return c;
}

/* Parses c and returns the zone, or NULL with the message in err. */
static struct tz *
craft_parse(const struct craft *c, char *err)
{
	unsigned char buf[4096];
	size_t len = craft_build(c, buf);

	err[0] = '\0';
	return tz_parse("Craft/Zone", buf, len, err, CV_ERRLEN);
}

static void
expect_reject(const struct craft *c, const char *want)
{
	char err[CV_ERRLEN];
	struct tz *tz = craft_parse(c, err);

	ck_assert_msg(tz == NULL, "accepted, wanted \"%s\"", want);
	ck_assert_msg(
	    strstr(err, want) != NULL, "got \"%s\", want \"%s\"", err, want);
	ck_assert_msg(
	    strncmp(err, "time zone \"Craft/Zone\": ", 24) == 0, "%s", err);
}

static void
expect_accept(const struct craft *c)
{
	char err[CV_ERRLEN];
	struct tz *tz = craft_parse(c, err);

	ck_assert_msg(tz != NULL, "rejected: %s", err);
	tz_free(tz);
}

START_TEST(test_parse_crafted_base)
{
	struct craft c = craft_base();
	char err[CV_ERRLEN];
	struct tz *tz = craft_parse(&c, err);
	struct tz_span sp;

	ck_assert_msg(tz != NULL, "%s", err);
	ck_assert_str_eq(tz_name(tz), "Craft/Zone");
	tz_span_at(tz, -3000000000LL, &sp);
	ck_assert_int_eq(sp.offset, -17762);
	ck_assert_str_eq(sp.abbr, "LMT");
	ck_assert(sp.start == INT64_MIN && sp.end == -2000000000);
	ck_assert_int_eq(sp.next_offset, -18000);
	tz_span_at(tz, 1005000000, &sp);
	ck_assert(sp.offset == -14400 && sp.isdst == 1);
	ck_assert(sp.start == 1000000000 && sp.end == 1010000000);
	ck_assert(sp.prev_offset == -18000 && sp.next_offset == -18000);
	tz_free(tz);
}
END_TEST

/*
 * Transitions at the very ends of int64_t: a span reaching them is still
 * unbounded, with no neighbouring offset (a fuzzer finding).
 */
START_TEST(test_span_extreme_transitions)
{
	struct craft c = craft_base();
	char err[CV_ERRLEN];
	struct tz_span sp;
	struct tz *tz;

	c.trans[0] = INT64_MIN;
	c.trans[2] = INT64_MAX;
	c.footer = "";
	tz = craft_parse(&c, err);
	ck_assert_msg(tz != NULL, "%s", err);
	tz_span_at(tz, CV_TIME_MIN, &sp);
	ck_assert(sp.start == INT64_MIN && sp.end == 1000000000);
	ck_assert(sp.offset == -18000 && sp.prev_offset == -18000);
	tz_span_at(tz, CV_TIME_MAX, &sp);
	ck_assert(sp.start == 1000000000 && sp.end == INT64_MAX);
	ck_assert(sp.offset == -14400 && sp.next_offset == -14400);
	ck_assert_int_eq(tz_offset_at(tz, INT64_MAX), -18000);
	tz_free(tz);
	c.footer = "<+03>-3";
	tz = craft_parse(&c, err);
	ck_assert_msg(tz != NULL, "%s", err);
	tz_span_at(tz, CV_TIME_MAX, &sp);
	ck_assert(sp.end == INT64_MAX && sp.next_offset == -14400);
	tz_free(tz);
}
END_TEST

/* Each count, index and value RFC 8536 bounds, one test per row. */
START_TEST(test_parse_crafted_rejects)
{
	struct craft c;

	c = craft_base(), c.idx[1] = 3;
	expect_reject(&c, "type index out of range");
	c = craft_base(), c.trans[1] = c.trans[2];
	expect_reject(&c, "transitions not in ascending order");
	c = craft_base(), c.trans[0] = c.trans[2] + 1;
	expect_reject(&c, "transitions not in ascending order");
	c = craft_base(), c.ai[2] = 12;
	expect_reject(&c, "abbreviation index out of range");
	c = craft_base(), c.chars = "LMT\0EST\0EDTX", c.ai[2] = 8;
	expect_reject(&c, "abbreviation not NUL-terminated");
	c = craft_base(), c.chars = "LMT\0EST\0ABCDEFGHIJKLMNOP", c.nchars = 25;
	expect_reject(&c, "abbreviation too long");
	c = craft_base(), c.isdst[1] = 2;
	expect_reject(&c, "bad DST flag");
	c = craft_base(), c.ntypes = 0, c.ntrans = 0;
	expect_reject(&c, "type count out of range");
	c = craft_base(), c.nchars = 0;
	expect_reject(&c, "no abbreviations");
	c = craft_base(), c.nind = 3, c.indval = 2;
	expect_reject(&c, "bad standard/wall indicator");
	c = craft_base(), c.nind = 2;
	expect_reject(&c, "indicator count differs");
	c = craft_base(), c.version = 'X';
	expect_reject(&c, "unknown TZif version");
	c = craft_base(), c.nleap = 2;
	expect_reject(&c, "leap-second (right/) zones are not supported");
	c = craft_base(), c.version = 0;
	expect_reject(&c, "TZif version 1 is not supported");
	c = craft_base(), c.nind = 3, c.indval = 1;
	expect_accept(&c);
}
END_TEST

/* UTC offsets: RFC 8536's -24:59:59 and 25:59:59 pass, one more fails. */
START_TEST(test_parse_offset_bounds)
{
	static const struct {
		int32_t off; /* offset of type 1 */
		int ok;      /* 1: accepted */
	} rows[] = {
	    {-89999, 1},
	    {-90000, 0},
	    {93599, 1},
	    {93600, 0},
	    {INT32_MIN, 0},
	    {INT32_MAX, 0},
	    {0, 1},
	};
	struct craft c;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		c = craft_base();
		c.off[1] = rows[i].off;
		if (rows[i].ok)
			expect_accept(&c);
		else
			expect_reject(&c, "UTC offset out of range");
	}
}
END_TEST

/* 257 types: more than a one-byte index can name. */
START_TEST(test_parse_too_many_types)
{
	unsigned char buf[4096];
	struct craft c = craft_base();
	char err[CV_ERRLEN];
	size_t len = craft_build(&c, buf);

	put32(buf + 44 + 36, 257);
	ck_assert_ptr_null(tz_parse("X", buf, len, err, sizeof(err)));
	ck_assert_str_eq(err,
	    "time zone \"X\": malformed TZif file: type "
	    "count out of range");
}
END_TEST

/* Counts near 2^32 must fail as truncation, not overflow into a malloc. */
START_TEST(test_parse_huge_counts)
{
	unsigned char buf[4096];
	struct craft c = craft_base();
	char err[CV_ERRLEN];
	size_t len = craft_build(&c, buf);

	for (int field = 0; field < 6; field++) {
		for (int hdr = 0; hdr < 2; hdr++) {
			unsigned char copy[4096];
			size_t at = (hdr ? 44 : 0) + 20 + 4 * (size_t)field;
			memcpy(copy, buf, len);
			put32(copy + at, 0xffffffffu);
			ck_assert_ptr_null(
			    tz_parse("X", copy, len, err, sizeof(err)));
			put32(copy + at, 0x80000000u);
			ck_assert_ptr_null(
			    tz_parse("X", copy, len, err, sizeof(err)));
		}
	}
}
END_TEST

/* Every proper prefix of a real file is rejected, cleanly. */
START_TEST(test_parse_truncated)
{
	static const char *const names[] = {
	    "America/New_York", "Asia/Kathmandu", "America/Santiago", "UTC"};
	char err[CV_ERRLEN];
	size_t len;

	for (size_t z = 0; z < sizeof(names) / sizeof(names[0]); z++) {
		unsigned char *buf = read_zone(names[z], &len);
		struct tz *tz = tz_parse(names[z], buf, len, err, sizeof(err));
		ck_assert_msg(tz != NULL, "%s", err);
		tz_free(tz);
		for (size_t cut = 0; cut < len; cut++) {
			unsigned char *part = malloc(cut + 1);
			memcpy(part, buf, cut);
			err[0] = '\0';
			tz = tz_parse(names[z], part, cut, err, sizeof(err));
			ck_assert_msg(tz == NULL, "%s cut at %zu accepted",
			    names[z], cut);
			ck_assert_msg(
			    strstr(err, "malformed TZif file") != NULL,
			    "%s cut at %zu: %s", names[z], cut, err);
			free(part);
		}
		free(buf);
	}
}
END_TEST

/* Magic in either header, the version byte, leap seconds, real files. */
START_TEST(test_parse_real_damaged)
{
	char err[CV_ERRLEN];
	size_t len, len2;
	unsigned char *buf = read_zone("America/New_York", &len);
	size_t v2 = 44 + (size_t)be32(buf + 32) * 5 +
	    (size_t)be32(buf + 36) * 6 + be32(buf + 40) + be32(buf + 24) +
	    be32(buf + 20);
	unsigned char *right = read_zone("right/Europe/Berlin", &len2);

	buf[0] = 'X';
	ck_assert_ptr_null(tz_parse("NY", buf, len, err, sizeof(err)));
	ck_assert_str_eq(err,
	    "time zone \"NY\": malformed TZif file: "
	    "bad magic");
	buf[0] = 'T';
	buf[v2 + 3] = 'F';
	ck_assert_ptr_null(tz_parse("NY", buf, len, err, sizeof(err)));
	ck_assert_str_eq(err,
	    "time zone \"NY\": malformed TZif file: "
	    "bad magic");
	buf[v2 + 3] = 'f';
	buf[4] = 0; /* a v1-only file: the header says so */
	ck_assert_ptr_null(tz_parse("NY", buf, v2, err, sizeof(err)));
	ck_assert_str_eq(err,
	    "time zone \"NY\": TZif version 1 is not "
	    "supported");
	ck_assert_ptr_null(tz_parse("R", right, len2, err, sizeof(err)));
	ck_assert_str_eq(err,
	    "time zone \"R\": leap-second (right/) zones "
	    "are not supported");
	free(buf);
	free(right);
}
END_TEST

/* Footers that must be refused, each inside an otherwise good file. */
START_TEST(test_parse_bad_footers)
{
	static const char *const bad[] = {
	    "EST",
	    "ES5",
	    "E5T5",
	    "<AB>5",
	    "<ABC5",
	    "<A B>5",
	    "EST5:60",
	    "EST5:00:60",
	    "EST25",
	    "EST-25",
	    "EST5EDT,M3.2.0",
	    "EST5EDT,M13.1.0,M11.1.0",
	    "EST5EDT,M0.1.0,M11.1.0",
	    "EST5EDT,M3.6.0,M11.1.0",
	    "EST5EDT,M3.0.0,M11.1.0",
	    "EST5EDT,M3.2.7,M11.1.0",
	    "EST5EDT,J0,J365",
	    "EST5EDT,366,J1",
	    "EST5EDT,J366,1",
	    "EST5EDT,M3.2.0/168,M11.1.0",
	    "EST5EDT,M3.2.0/-168,M11.1.0",
	    "EST5EDT,M3.2.0,M11.1.0x",
	    "EST5EDT,M3.2.0,M11.1.0,",
	    "EST5EDT4,",
	    "EST5EDT,",
	    "EST5 ",
	    " EST5",
	    "EST5EDT,M3.2.0/2:60,M11.1.0",
	    "EST5EDT,M3.2.0/,M11.1.0",
	    "EST5EDT,M3..0,M11.1.0",
	    "EST5EDT,Mx.1.0,M11.1.0",
	    "ABCDEFGHIJKLMNOP5",
	    "<ABCDEFGHIJKLMNOP>5",
	    "EST0005",
	    "EST+",
	    "EST5EDT,M3.2.0/1000,M11.1.0",
	    "EST5EDT,M03.02.0,M11.1.0",
	};
	char longfooter[302];
	struct craft c;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c = craft_base();
		c.footer = bad[i];
		expect_reject(&c, "bad footer TZ string");
	}
	c = craft_base(), c.footer = NULL;
	expect_reject(&c, "missing footer");
	c = craft_base(), c.footer = "EST5EDT\nEST5";
	expect_accept(&c); /* what follows the footer is ignored */
	c = craft_base();
	memset(longfooter, 'A', 300);
	memcpy(longfooter + 300, "5", 2);
	c.footer = longfooter;
	expect_reject(&c, "footer too long");
}
END_TEST

/* The type of a crafted zone whose footer is fs, at instant t. */
static void
footer_at(const char *fs, int64_t t, struct tz_span *sp)
{
	struct craft c = craft_base();
	char err[CV_ERRLEN];
	struct tz *tz;

	c.footer = fs;
	tz = craft_parse(&c, err);
	ck_assert_msg(tz != NULL, "%s: %s", fs, err);
	tz_span_at(tz, t, sp);
	tz_free(tz);
}

/* Good footers, including v3's negative and 167 h times. */
START_TEST(test_parse_good_footers)
{
	static const struct {
		const char *footer; /* POSIX TZ string */
		int64_t t;          /* instant asked about */
		int32_t offset;     /* expected offset */
		int isdst;          /* expected DST flag */
		const char *abbr;   /* expected abbreviation */
	} rows[] = {
	    {"<+03>-3", 1500000000, 10800, 0, "+03"},
	    {"<-0330>3:30", 1500000000, -12600, 0, "-0330"},
	    {"EST5EDT", 1500000000, -14400, 1, "EDT"}, /* glibc's default */
	    {"EST5EDT", 1510000000, -18000, 0, "EST"},
	    {"EST5EDT4,M3.2.0/2:00:00,M11.1.0/2", 1500000000, -14400, 1, "EDT"},
	    {"<+1245>-12:45<+1345>,M9.5.0/2:45,M4.1.0/3:45", 1500000000, 45900,
	        0, "+1245"},
	    {"EST+5EDT,M3.2.0/-1:30,M11.1.0/+1", 1500000000, -14400, 1, "EDT"},
	    {"EET-2EEST,M3.4.4/167,M10.4.4/-167", 1500000000, 10800, 1, "EEST"},
	    {"EST5EDT,0/0,J365/25", 1483228800, -14400, 1, "EDT"},
	    {"EST5EDT,0/0,J365/25", 1483246800, -14400, 1, "EDT"},
	    {"EST5EDT,J60/0,300", 1500000000, -14400, 1, "EDT"},
	    {"AAA3BBB3,M3.2.0,M11.1.0", 1500000000, -10800, 1, "BBB"},
	    {"ABCDEFGHIJKLMNO-1", 1500000000, 3600, 0, "ABCDEFGHIJKLMNO"},
	};
	struct tz_span sp;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		footer_at(rows[i].footer, rows[i].t, &sp);
		ck_assert_msg(sp.offset == rows[i].offset &&
		        sp.isdst == rows[i].isdst &&
		        strcmp(sp.abbr, rows[i].abbr) == 0,
		    "%s: got %d %d %s", rows[i].footer, sp.offset, sp.isdst,
		    sp.abbr);
	}
}
END_TEST

/* DST all year, or DST at the standard offset: no transitions at all. */
START_TEST(test_footer_steady)
{
	struct tz_span sp;

	/* After the crafted table's last transition (2002), all EDT. */
	footer_at("EST5EDT,0/0,J365/25", 1500000000, &sp);
	ck_assert_int_eq(sp.start, 1000000000); /* joins the table's EDT */
	ck_assert(sp.end == INT64_MAX && sp.next_offset == -14400);
	footer_at("EST5EDT,0/0,J365/25", CV_TIME_MAX, &sp);
	ck_assert(sp.offset == -14400 && sp.isdst == 1);
	/* Equal offsets: one span, though the flag and name still flip. */
	footer_at("AAA4BBB4,M3.2.0,M11.1.0", 1500000000, &sp);
	ck_assert(sp.isdst == 1 && sp.start == 1000000000);
	ck_assert(sp.end == INT64_MAX && sp.offset == -14400);
	footer_at("AAA4BBB4,M3.2.0,M11.1.0", 1510000000, &sp);
	ck_assert(sp.isdst == 0 && strcmp(sp.abbr, "AAA") == 0);
	ck_assert(sp.start == 1000000000 && sp.end == INT64_MAX);
	/* Zero-length DST never happens. */
	footer_at("EST5EDT4,M3.2.0/3,M3.2.0/4", 1489301000, &sp);
	ck_assert(sp.isdst == 0 && sp.end == INT64_MAX);
}
END_TEST

/*
 * Internal consistency at t, where no oracle applies: the span holds t,
 * tz_offset_at() agrees at and around both ends, and the wall time of t
 * leads back to t (or to passes around it, should crafted rules make more
 * than two).  Returns the number of failures.
 */
static int
check_consistent(const struct tz *tz, int64_t t)
{
	struct tz_span sp;
	int64_t utc[2];
	int n, bad = 0;

	tz_span_at(tz, t, &sp);
	bad +=
	    !(sp.start <= t && t < sp.end) || tz_offset_at(tz, t) != sp.offset;
	if (sp.start != INT64_MIN)
		bad += tz_offset_at(tz, sp.start - 1) != sp.prev_offset ||
		    tz_offset_at(tz, sp.start) != sp.offset ||
		    sp.prev_offset == sp.offset;
	if (sp.end != INT64_MAX)
		bad += tz_offset_at(tz, sp.end) != sp.next_offset ||
		    tz_offset_at(tz, sp.end - 1) != sp.offset ||
		    sp.next_offset == sp.offset;
	n = tz_local_to_utc(tz, t + sp.offset, utc);
	bad += !((n == 1 && utc[0] == t) ||
	    (n == 2 && utc[0] <= t && t <= utc[1] && utc[0] < utc[1]));
	return bad;
}

/*
 * Rules no real zone has, whose changes collide, cross year ends, or come
 * and go with leap years; glibc evaluates them per UTC year and differs,
 * so only consistency is checked, over the whole range of instants.
 */
START_TEST(test_footer_degenerate)
{
	static const char *const footers[] = {
	    "EST5EDT,0/0,J365/25",
	    "AAA0BBB1,0/0,365/0",
	    "AAA0BBB-1,J1/0,J1/0",
	    "AAA0BBB-1,M1.1.0/-167,M12.5.6/167",
	    "AAA0BBB-1,365/167,0/-167",
	    "AAA-24BBB24,M3.2.0,M11.1.0",
	    "AAA24BBB-24,J59/0,J60/0",
	    "<+25>-24:59:59<-25>24:59:59,J1/167,J365/-167",
	    "AAA0BBB-1,M2.5.0/167,M3.1.0/-167",
	    "AAA0BBB-1,59/0,J60/0",
	};
	char err[CV_ERRLEN];
	long checked = 0, bad = 0;

	for (size_t i = 0; i < sizeof(footers) / sizeof(footers[0]); i++) {
		struct craft c = craft_base();
		struct tz_span sp;
		uint64_t seed = 9000 + i;
		struct tz *tz;
		c.footer = footers[i];
		tz = craft_parse(&c, err);
		ck_assert_msg(tz != NULL, "%s: %s", footers[i], err);
		for (int k = 0; k < 20000; k++, checked++)
			bad += check_consistent(
			    tz, rnd_between(&seed, CV_TIME_MIN, CV_TIME_MAX));
		for (int64_t t = 900000000; t < 2000000000; t = sp.end) {
			tz_span_at(tz, t, &sp);
			bad += check_consistent(tz, t), checked++;
		}
		tz_free(tz);
	}
	fprintf(stderr,
	    "check_tz: degenerate footers: %ld instants, %ld "
	    "inconsistent\n",
	    checked, bad);
	ck_assert_int_eq(bad, 0);
}
END_TEST

/* Footer strings against glibc's own TZ-string evaluation, 1972-2400. */
START_TEST(test_oracle_footer_strings)
{
	static const char *const footers[] = {
	    "EST5EDT,M3.2.0,M11.1.0",
	    "<-02>2<-01>,M3.5.0/-1,M10.5.0/0",
	    "IST-1GMT0,M10.5.0,M3.5.0/1",
	    "EET-2EEST,M3.4.4/50,M10.4.4/50",
	    "<+00>0<+02>-2,M3.5.0/1,M10.5.0/3",
	    "<-04>4<-03>,M9.1.6/24,M4.1.6/24",
	    "<+1245>-12:45<+1345>,M9.5.0/2:45,M4.1.0/3:45",
	    "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0",
	    "CST6CDT,J60/2,J300/2",
	    "CST6CDT,59/2,299/2",
	    "XST3XDT,M2.5.1/-100,M11.5.6/120",
	    "<+14>-14<+15>,M5.1.0/-20,M8.5.6/160",
	    "WGT3WGST,M3.5.6/22,M10.5.6/23",
	    "AAA-5BBB-7:30:15,J100/1:02:03,J200/4:05:06",
	};
	struct tally ty = {0};
	char err[CV_ERRLEN];

	for (size_t i = 0; i < sizeof(footers) / sizeof(footers[0]); i++) {
		struct craft c = craft_base();
		struct tz *tz;
		c.footer = footers[i];
		c.ntrans = 1; /* the footer rules from 1971 on */
		c.trans[0] = 31536000;
		tz = craft_parse(&c, err);
		ck_assert_msg(tz != NULL, "%s: %s", footers[i], err);
		oracle_zone(footers[i]);
		check_random(tz, 5000 + i, 20000, Y1972, 13569465600LL, &ty);
		check_span_walk(tz, Y1972, Y1972 + 100LL * 31556952, &ty);
		tz_free(tz);
	}
	report("footer strings vs glibc TZ strings", &ty);
	ck_assert_int_eq(ty.mismatches, 0);
}
END_TEST

/*
 * Writes image c to dir/zone<n>.  Each case gets its own file, and all
 * stay until the test ends: glibc skips reloading a file whose inode and
 * mtime match the last one it read, and a deleted file's inode comes back.
 */
static void
craft_file(
    const struct craft *c, const char *dir, int n, char *path, size_t len)
{
	unsigned char buf[4096];
	size_t size = craft_build(c, buf);
	FILE *fp;

	snprintf(path, len, "%s/zone%d", dir, n);
	ck_assert_ptr_nonnull(fp = fopen(path, "wb"));
	ck_assert_uint_eq(fwrite(buf, 1, size, fp), size);
	fclose(fp);
}

/* Compares crafted image c with glibc reading it from dir/zone<n>. */
static void
check_craft_vs_glibc(
    const struct craft *c, const char *dir, int n, struct tally *ty)
{
	char path[128], tzval[160], err[CV_ERRLEN];
	struct tz *tz = craft_parse(c, err);

	ck_assert_msg(tz != NULL, "%s", err);
	craft_file(c, dir, n, path, sizeof(path));
	snprintf(tzval, sizeof(tzval), ":%s", path);
	oracle_zone(tzval);
	check_random(tz, 6000, 5000, Y1900, Y2100, ty);
	for (size_t i = 0; i < c->ntrans; i++)
		for (int64_t d = -1; d <= 1; d++)
			check_instant(tz, c->trans[i] + d, ty);
	tz_free(tz);
}

/*
 * Where RFC 8536 and glibc part: type 0 is DST (glibc takes the first
 * standard type before the first transition), no transitions but a DST
 * footer (glibc ignores the footer), a footer that disagrees with the
 * last transition's type (the footer wins from that transition on).
 */
START_TEST(test_oracle_crafted_files)
{
	static const uint8_t dst[][3] = {
	    {0, 0, 1}, {1, 0, 1}, {1, 1, 1}, {1, 1, 0}, {0, 1, 0}};
	struct tally ty = {0};
	struct craft cases[16];
	char dir[] = "/tmp/check_tz.XXXXXX", path[128];
	int n = 0;

	for (size_t i = 0; i < sizeof(dst) / sizeof(dst[0]); i++) {
		cases[n] = craft_base();
		memcpy(cases[n++].isdst, dst[i], 3);
	}
	cases[n] = craft_base(), cases[n++].ntrans = 0;
	cases[n] = craft_base(), cases[n].ntrans = 0;
	cases[n++].isdst[0] = 1;
	cases[n] = craft_base(), cases[n++].footer = "<+03>-3";
	cases[n] = craft_base(), cases[n++].footer = "";
	cases[n] = craft_base(), cases[n++].off[2] = -18000; /* merges */
	ck_assert_ptr_nonnull(mkdtemp(dir));
	for (int i = 0; i < n; i++)
		check_craft_vs_glibc(&cases[i], dir, i, &ty);
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/zone%d", dir, i);
		unlink(path);
	}
	rmdir(dir);
	report("crafted files vs glibc", &ty);
	ck_assert_int_eq(ty.mismatches, 0);
}
END_TEST

/* wall = the local date and time read as if it were UTC. */
static int64_t
wall_of(int y, int mo, int d, int h, int mi)
{
	struct tm tm = {.tm_year = y - 1900,
	    .tm_mon = mo - 1,
	    .tm_mday = d,
	    .tm_hour = h,
	    .tm_min = mi};

	return (int64_t)timegm(&tm);
}

/*
 * Two backward jumps an hour apart make three passes of some wall times;
 * crafted data only, and the first and last pass are reported.
 */
START_TEST(test_convert_three_passes)
{
	struct craft c = craft_base();
	char err[CV_ERRLEN];
	int64_t utc[2];
	struct tz *tz;

	c.off[0] = 7200, c.off[1] = 3600, c.off[2] = 0;
	c.isdst[2] = 0;
	c.idx[0] = 0, c.idx[1] = 1, c.idx[2] = 2;
	c.trans[2] = 1000003600;
	c.footer = "";
	tz = craft_parse(&c, err);
	ck_assert_msg(tz != NULL, "%s", err);
	ck_assert_int_eq(tz_local_to_utc(tz, 1000005400, utc), 2);
	ck_assert_int_eq(utc[0], 1000000000 - 1800);
	ck_assert_int_eq(utc[1], 1000005400);
	ck_assert_int_eq(tz_local_to_utc(tz, 1000007200, utc), 1);
	ck_assert_int_eq(utc[0], 1000007200);
	tz_free(tz);
}
END_TEST

START_TEST(test_convert_fixed_cases)
{
	const struct tz *ny = get_zone("America/New_York");
	const struct tz *lh = get_zone("Australia/Lord_Howe");
	int64_t utc[2];

	/* Spring forward: 02:30 does not exist; the gap ends at 07:00Z. */
	ck_assert_int_eq(
	    tz_local_to_utc(ny, wall_of(2026, 3, 8, 2, 30), utc), 0);
	ck_assert_int_eq(utc[0], wall_of(2026, 3, 8, 7, 0));
	ck_assert_int_eq(utc[1], CV_NEVER);
	/* Fall back: 01:30 happens twice, an hour apart. */
	ck_assert_int_eq(
	    tz_local_to_utc(ny, wall_of(2026, 11, 1, 1, 30), utc), 2);
	ck_assert_int_eq(utc[0], wall_of(2026, 11, 1, 5, 30));
	ck_assert_int_eq(utc[1] - utc[0], 3600);
	ck_assert_int_eq(
	    tz_local_to_utc(ny, wall_of(2026, 7, 1, 12, 0), utc), 1);
	ck_assert_int_eq(utc[0], wall_of(2026, 7, 1, 16, 0));
	/* Lord Howe moves by 30 minutes: 02:00-02:30 missing in October. */
	ck_assert_int_eq(
	    tz_local_to_utc(lh, wall_of(2026, 10, 4, 2, 15), utc), 0);
	ck_assert_int_eq(utc[0], wall_of(2026, 10, 3, 15, 30));
	ck_assert_int_eq(
	    tz_local_to_utc(lh, wall_of(2026, 10, 4, 2, 30), utc), 1);
	ck_assert_int_eq(
	    tz_local_to_utc(lh, wall_of(2026, 4, 5, 1, 45), utc), 2);
	ck_assert_int_eq(utc[1] - utc[0], 1800);
	ck_assert_int_eq(utc[0], wall_of(2026, 4, 4, 14, 45));
	/* Beyond the range of instants: nothing, and no gap end either. */
	ck_assert_int_eq(tz_local_to_utc(ny, INT64_MAX, utc), 0);
	ck_assert_int_eq(utc[0], CV_NEVER);
	ck_assert_int_eq(tz_local_to_utc(ny, INT64_MIN, utc), 0);
	tz_cache_clear();
}
END_TEST

static int
short_span(const struct tz_span *sp)
{
	return sp->start != INT64_MIN && sp->end != INT64_MAX &&
	    sp->end - sp->start < 2 * DAY_S;
}

/*
 * Checks the wall times around the offset change at the end of sp, into
 * span nx: each wall in a gap has no instant and the gap's end in utc[0],
 * each in a fold two instants, the walls just outside one.  Returns the
 * walls checked; adds the failures to *bad.
 */
static long
check_change(const struct tz *tz, const struct tz_span *sp,
    const struct tz_span *nx, long *bad)
{
	int64_t utc[2], before = sp->end + sp->offset;
	int64_t after = sp->end + nx->offset;
	int64_t lo = before < after ? before : after;
	int64_t hi = before < after ? after : before, w;
	long n = 0;

	for (w = lo; w < hi; w += (hi - lo) / 7 + 1, n++) {
		int got = tz_local_to_utc(tz, w, utc);
		if (after > before)
			*bad += got != 0 || utc[0] != sp->end;
		else
			*bad += got != 2 || utc[0] != w - sp->offset ||
			    utc[1] != w - nx->offset;
	}
	*bad += tz_local_to_utc(tz, lo - 1, utc) != 1;
	*bad += tz_local_to_utc(tz, hi, utc) != 1;
	return n;
}

/* check_change() at every offset change of a zone from 1900 to 2400. */
static long
check_gaps_folds(const struct tz *tz, long *bad)
{
	struct tz_span sp, nx;
	long checked = 0;

	for (int64_t t = Y1900; t < 13569465600LL; t = sp.end) {
		tz_span_at(tz, t, &sp);
		if (sp.end == INT64_MAX)
			break;
		tz_span_at(tz, sp.end, &nx);
		/* Changes less than two days apart need a wider model. */
		if (!short_span(&sp) && !short_span(&nx))
			checked += check_change(tz, &sp, &nx, bad);
	}
	return checked;
}

START_TEST(test_convert_gaps_folds)
{
	long checked = 0, bad = 0;

	for (int i = 0; i < NORACLE; i++)
		checked += check_gaps_folds(get_zone(oracle_zones[i]), &bad);
	fprintf(stderr,
	    "check_tz: %ld gap and fold wall times checked, %ld wrong\n",
	    checked, bad);
	ck_assert_int_gt(checked, 10000);
	ck_assert_int_eq(bad, 0);
	tz_cache_clear();
}
END_TEST

START_TEST(test_names_invalid)
{
	static const char *const bad[] = {
	    "../etc/passwd",
	    "/etc/localtime",
	    "",
	    "a//b",
	    "a/",
	    ".",
	    "..",
	    "a/./b",
	    "a/../b",
	    "America/New York",
	    "America/New_York\n",
	    "Europe/Berlin;rm",
	    "$HOME",
	    "a\\b",
	    "Ä",
	};
	char err[CV_ERRLEN], longname[300];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_ptr_null(tz_get(bad[i], err, sizeof(err)));
		ck_assert_msg(strncmp(err, "invalid time zone name", 22) == 0,
		    "%s: %s", bad[i], err);
	}
	ck_assert_ptr_null(tz_get(NULL, err, sizeof(err)));
	memset(longname, 'a', sizeof(longname));
	longname[256] = '\0';
	ck_assert_ptr_null(tz_get(longname, err, sizeof(err)));
	ck_assert_str_eq(err,
	    "invalid time zone name \"aaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"");
	longname[255] = '\0'; /* the longest valid name: just unknown */
	ck_assert_ptr_null(tz_get(longname, err, sizeof(err)));
	ck_assert_msg(strncmp(err, "unknown time zone", 17) == 0, "%s", err);
	ck_assert_ptr_null(tz_get("a/..b", err, sizeof(err)));
	ck_assert_msg(strncmp(err, "unknown time zone", 17) == 0, "%s", err);
}
END_TEST

START_TEST(test_names_unknown)
{
	char err[CV_ERRLEN];

	ck_assert_ptr_null(tz_get("Foo/Bar", err, sizeof(err)));
	ck_assert_str_eq(err, "unknown time zone \"Foo/Bar\"");
	ck_assert_ptr_null(tz_get("America", err, sizeof(err)));
	ck_assert_str_eq(err, "unknown time zone \"America\"");
	ck_assert_ptr_null(tz_get("America/New_York/x", err, sizeof(err)));
	ck_assert_str_eq(err, "unknown time zone \"America/New_York/x\"");
	ck_assert_ptr_null(tz_get("tzdata.zi", err, sizeof(err)));
	ck_assert_str_eq(err,
	    "time zone \"tzdata.zi\": malformed TZif file: "
	    "bad magic");
	ck_assert_ptr_null(tz_get("right/Europe/Berlin", err, sizeof(err)));
	ck_assert_str_eq(err,
	    "time zone \"right/Europe/Berlin\": leap-second "
	    "(right/) zones are not supported");
}
END_TEST

START_TEST(test_cache_same_pointer)
{
	const struct tz *a = get_zone("Europe/Berlin");
	const struct tz *b = get_zone("Europe/Berlin");
	const struct tz *c = get_zone("Europe/Paris");

	ck_assert_ptr_eq(a, b);
	ck_assert_ptr_ne(a, c);
	ck_assert_str_eq(tz_name(a), "Europe/Berlin");
	tz_cache_clear();
	a = get_zone("Europe/Berlin");
	ck_assert_int_eq(tz_offset_at(a, 1500000000), 7200);
	tz_cache_clear();
}
END_TEST

/* $TZDIR points at a directory with one crafted zone and nothing else. */
START_TEST(test_tzdir_override)
{
	char dir[] = "/tmp/check_tz.XXXXXX", sub[64], path[96], err[CV_ERRLEN];
	unsigned char buf[4096];
	struct craft c = craft_base();
	size_t len = craft_build(&c, buf);
	const struct tz *tz;
	FILE *fp;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/Test", dir);
	ck_assert_int_eq(mkdir(sub, 0700), 0);
	snprintf(path, sizeof(path), "%s/Zone", sub);
	ck_assert_ptr_nonnull(fp = fopen(path, "wb"));
	ck_assert_uint_eq(fwrite(buf, 1, len, fp), len);
	fclose(fp);
	setenv("TZDIR", dir, 1);
	tz = get_zone("Test/Zone");
	ck_assert_int_eq(tz_offset_at(tz, 1005000000), -14400);
	ck_assert_ptr_null(tz_get("America/New_York", err, sizeof(err)));
	ck_assert_str_eq(err, "unknown time zone \"America/New_York\"");
	/* No UTC file here: the built-in one, for these two names only. */
	tz = get_zone("UTC");
	ck_assert_int_eq(tz_offset_at(tz, 0), 0);
	ck_assert_ptr_eq(tz, get_zone("UTC"));
	tz = get_zone("Etc/UTC");
	ck_assert_int_eq(tz_offset_at(tz, CV_TIME_MAX), 0);
	ck_assert_ptr_null(tz_get("GMT", err, sizeof(err)));
	ck_assert_ptr_null(tz_get("Etc/GMT", err, sizeof(err)));
	unlink(path);
	rmdir(sub);
	rmdir(dir);
	tz_cache_clear();
}
END_TEST

START_TEST(test_builtin_utc_span)
{
	char dir[] = "/tmp/check_tz.XXXXXX";
	struct tz_span sp;
	const struct tz *tz;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	setenv("TZDIR", dir, 1);
	tz = get_zone("UTC");
	tz_span_at(tz, 12345, &sp);
	ck_assert(sp.start == INT64_MIN && sp.end == INT64_MAX);
	ck_assert(sp.offset == 0 && sp.prev_offset == 0 && sp.next_offset == 0);
	ck_assert(sp.isdst == 0 && strcmp(sp.abbr, "UTC") == 0);
	ck_assert_str_eq(tz_name(tz), "UTC");
	rmdir(dir);
	tz_cache_clear();
}
END_TEST

#define NTHREADS 8
static const char *const thread_zones[] = {"America/New_York", "Europe/Dublin",
    "Australia/Lord_Howe", "Pacific/Chatham", "America/Nuuk", "Asia/Kathmandu"};
#define NTZ     ((int)(sizeof(thread_zones) / sizeof(thread_zones[0])))
#define NSAMPLE 20000

/* What every thread must see, computed before the threads start. */
static struct {
	pthread_barrier_t go;                 /* all start at once */
	int64_t t[NSAMPLE];                   /* sample instants */
	int32_t want[NTZ][NSAMPLE];           /* offsets there */
	const struct tz *seen[NTHREADS][NTZ]; /* tz_get() results */
	int bad[NTHREADS];                    /* mismatches */
} thr;

static void *
thread_main(void *arg)
{
	int id = (int)(intptr_t)arg;
	struct tz_span sp;
	char err[CV_ERRLEN];

	pthread_barrier_wait(&thr.go);
	for (int round = 0; round < 3; round++)
		for (int z = 0; z < NTZ; z++) {
			int zz = (z + id) % NTZ;
			const struct tz *tz =
			    tz_get(thread_zones[zz], err, sizeof(err));
			if (tz == NULL) {
				thr.bad[id]++;
				continue;
			}
			thr.seen[id][zz] = tz;
			for (int i = 0; i < NSAMPLE; i++) {
				tz_span_at(tz, thr.t[i], &sp);
				thr.bad[id] += sp.offset != thr.want[zz][i];
			}
		}
	return NULL;
}

/* 8 threads race to load the same zones and use them. */
START_TEST(test_threads)
{
	pthread_t th[NTHREADS];
	uint64_t seed = 7;
	char err[CV_ERRLEN];
	size_t len;

	for (int i = 0; i < NSAMPLE; i++)
		thr.t[i] = rnd_between(&seed, Y1900, CV_TIME_MAX);
	for (int z = 0; z < NTZ; z++) {
		unsigned char *buf = read_zone(thread_zones[z], &len);
		struct tz *own = tz_parse("x", buf, len, err, sizeof(err));
		ck_assert_ptr_nonnull(own);
		for (int i = 0; i < NSAMPLE; i++)
			thr.want[z][i] = tz_offset_at(own, thr.t[i]);
		tz_free(own);
		free(buf);
	}
	pthread_barrier_init(&thr.go, NULL, NTHREADS);
	for (int i = 0; i < NTHREADS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, thread_main,
		                     (void *)(intptr_t)i),
		    0);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&thr.go);
	for (int i = 0; i < NTHREADS; i++) {
		ck_assert_int_eq(thr.bad[i], 0);
		for (int z = 0; z < NTZ; z++)
			ck_assert_ptr_eq(thr.seen[i][z], thr.seen[0][z]);
	}
	tz_cache_clear();
}
END_TEST

static Suite *
tz_suite(void)
{
	Suite *s = suite_create("tz");
	TCase *parse = tcase_create("parse");
	TCase *oracle = tcase_create("oracle");
	TCase *convert = tcase_create("convert");
	TCase *names = tcase_create("names");

	tcase_set_timeout(parse, 30);
	tcase_add_test(parse, test_parse_crafted_base);
	tcase_add_test(parse, test_span_extreme_transitions);
	tcase_add_test(parse, test_parse_crafted_rejects);
	tcase_add_test(parse, test_parse_offset_bounds);
	tcase_add_test(parse, test_parse_too_many_types);
	tcase_add_test(parse, test_parse_huge_counts);
	tcase_add_test(parse, test_parse_truncated);
	tcase_add_test(parse, test_parse_real_damaged);
	tcase_add_test(parse, test_parse_bad_footers);
	tcase_add_test(parse, test_parse_good_footers);
	tcase_add_test(parse, test_footer_steady);
	tcase_add_test(parse, test_footer_degenerate);
	suite_add_tcase(s, parse);

	tcase_set_timeout(oracle, 120);
	tcase_add_loop_test(oracle, test_oracle_zone, 0, NORACLE);
	tcase_add_loop_test(oracle, test_oracle_far_future, 0, NORACLE);
	tcase_add_test(oracle, test_oracle_sweep);
	tcase_add_test(oracle, test_oracle_footer_strings);
	tcase_add_test(oracle, test_oracle_crafted_files);
	suite_add_tcase(s, oracle);

	tcase_set_timeout(convert, 60);
	tcase_add_test(convert, test_convert_fixed_cases);
	tcase_add_test(convert, test_convert_three_passes);
	tcase_add_test(convert, test_convert_gaps_folds);
	tcase_add_test(convert, test_threads);
	suite_add_tcase(s, convert);

	tcase_set_timeout(names, 30);
	tcase_add_test(names, test_names_invalid);
	tcase_add_test(names, test_names_unknown);
	tcase_add_test(names, test_cache_same_pointer);
	tcase_add_test(names, test_tzdir_override);
	tcase_add_test(names, test_builtin_utc_span);
	suite_add_tcase(s, names);
	return s;
}

int
main(void)
{
	return cvtest_run(tz_suite());
}
