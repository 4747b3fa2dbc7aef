/*
 * fuzz_tz.c: libFuzzer target for the TZif reader and the POSIX TZ footer
 * parser of common/tz.c.  Each input is parsed twice: as a whole TZif
 * image, and as the footer of a minimal valid image wrapped around it (so
 * that the footer parser and the yearly rule arithmetic see arbitrary
 * strings, not only those behind a valid binary part).  Whatever parses is
 * then queried at the ends of the instant range, at instants taken from
 * the input, and along a walk over consecutive spans, and every answer is
 * checked against the invariants tz.c promises; a violation aborts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisor.h"

#define SAFE    ((int64_t)1 << 50) /* tz.c evaluates rules exactly within */
#define OFF_MIN (-89999)           /* RFC 8536 offset bounds */
#define OFF_MAX 93599
#define WALK    12 /* spans walked from each start */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
in_safe(int64_t t)
{
	return t > -SAFE && t < SAFE;
}

/* The instants of [start, end) agree with the span at both ends. */
static void
check_span_ends(const struct tz *tz, const struct tz_span *sp)
{
	if (sp->start == INT64_MIN) {
		if (sp->prev_offset != sp->offset)
			abort();
	} else if (in_safe(sp->start)) {
		if (sp->prev_offset == sp->offset ||
		    tz_offset_at(tz, sp->start - 1) != sp->prev_offset ||
		    tz_offset_at(tz, sp->start) != sp->offset)
			abort();
	}
	if (sp->end == INT64_MAX) {
		if (sp->next_offset != sp->offset)
			abort();
	} else if (in_safe(sp->end)) {
		if (sp->next_offset == sp->offset ||
		    tz_offset_at(tz, sp->end) != sp->next_offset ||
		    tz_offset_at(tz, sp->end - 1) != sp->offset)
			abort();
	}
}

/* Every instant tz_local_to_utc() reports shows wall. */
static void
check_solutions(const struct tz *tz, int64_t wall, int n, const int64_t *utc)
{
	if (n < 0 || n > 2 || (n == 2 && utc[0] >= utc[1]))
		abort();
	for (int i = 0; i < n; i++)
		if (utc[i] < CV_TIME_MIN || utc[i] > CV_TIME_MAX ||
		    utc[i] + tz_offset_at(tz, utc[i]) != wall)
			abort();
	if (n == 0 && utc[0] != CV_NEVER &&
	    (utc[0] + tz_offset_at(tz, utc[0]) <= wall ||
	        (utc[0] > CV_TIME_MIN &&
	            utc[0] - 1 + tz_offset_at(tz, utc[0] - 1) >= wall)))
		abort();
}

/* The wall time of t leads back to t, or to passes around it. */
static void
check_round_trip(const struct tz *tz, int64_t t, int32_t offset)
{
	int64_t utc[2];
	int n = tz_local_to_utc(tz, t + offset, utc);

	check_solutions(tz, t + offset, n, utc);
	if (n == 0 || (n == 1 && utc[0] != t) ||
	    (n == 2 && (t < utc[0] || t > utc[1])))
		abort();
	n = tz_local_to_utc(tz, t + offset + 1800, utc);
	check_solutions(tz, t + offset + 1800, n, utc);
}

/* Checks the span at t, then walks on over the next few spans. */
static void
check_from(const struct tz *tz, int64_t t)
{
	struct tz_span sp;

	for (int i = 0; i < WALK && t <= CV_TIME_MAX; i++, t = sp.end) {
		tz_span_at(tz, t, &sp);
		if (!(sp.start <= t && t < sp.end) ||
		    tz_offset_at(tz, t) != sp.offset || sp.offset < OFF_MIN ||
		    sp.offset > OFF_MAX || (sp.isdst != 0 && sp.isdst != 1) ||
		    memchr(sp.abbr, '\0', sizeof(sp.abbr)) == NULL)
			abort();
		check_span_ends(tz, &sp);
		check_round_trip(tz, t, sp.offset);
		if (sp.end == INT64_MAX)
			break;
	}
}

/* Walks from both ends of the range, fixed years and an input instant. */
static void
exercise(const struct tz *tz, const uint8_t *data, size_t size)
{
	uint64_t raw = 0;

	check_from(tz, CV_TIME_MIN);
	check_from(tz, CV_TIME_MAX);
	check_from(tz, 0);
	check_from(tz, -2208988800LL); /* 1900 */
	check_from(tz, 2147483647LL);  /* 2038 */
	check_from(tz, 4102444800LL);  /* 2100 */
	for (size_t i = 0; i < size && i < 8; i++)
		raw = raw << 8 | data[size - 1 - i];
	check_from(tz,
	    CV_TIME_MIN +
	        (int64_t)(raw % (uint64_t)(CV_TIME_MAX - CV_TIME_MIN + 1)));
	if (strlen(tz_name(tz)) == 0)
		abort();
}

static unsigned char *
put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
	return p + 4;
}

/* A TZif header: magic, version '2', 15 reserved bytes, six counts. */
static unsigned char *
put_header(unsigned char *p, uint32_t ntrans, uint32_t ntypes, uint32_t nchars)
{
	memcpy(p, "TZif2", 5);
	memset(p + 5, 0, 15 + 12);
	p = put32(p + 32, ntrans);
	p = put32(p, ntypes);
	return put32(p, nchars);
}

/*
 * A minimal v2 image: no v1 data, one transition at the epoch from LMT
 * (+00:30) to "UTC", then the input, up to its first newline, as footer.
 * buf must hold size + 150 bytes.
 */
static size_t
wrap_footer(const uint8_t *data, size_t size, unsigned char *buf)
{
	static const unsigned char body[] = {0, 0, 0, 0, 0, 0, 0,
	    0,                /* transition at 0 ... */
	    1,                /* ... to type 1 */
	    0, 0, 7, 8, 0, 0, /* type 0: +00:30, LMT */
	    0, 0, 0, 0, 0, 4, /* type 1: +00:00, UTC */
	    'L', 'M', 'T', 0, 'U', 'T', 'C', 0, '\n'};
	const uint8_t *nl = memchr(data, '\n', size);
	size_t len = nl != NULL ? (size_t)(nl - data) : size;
	unsigned char *p = put_header(buf, 0, 0, 0);

	p = put_header(p, 1, 2, 8);
	memcpy(p, body, sizeof(body));
	p += sizeof(body);
	memcpy(p, data, len);
	p[len] = '\n';
	return (size_t)(p + len + 1 - buf);
}

/*
 * The wrapper must itself be valid, or the footer half of the target would
 * quietly test nothing but a rejection: check it with a known footer.
 */
static void
wrap_selftest(void)
{
	static int done;
	unsigned char buf[256];
	char err[CV_ERRLEN];
	struct tz *tz;

	if (done++)
		return;
	tz = tz_parse("Fuzz/Self", buf,
	    wrap_footer((const uint8_t *)"EST5EDT", 7, buf), err, sizeof(err));
	if (tz == NULL || tz_offset_at(tz, 1500000000) != -14400)
		abort();
	tz_free(tz);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[CV_ERRLEN];
	unsigned char *buf;
	struct tz *tz;

	wrap_selftest();

	if ((tz = tz_parse("Fuzz/Zone", data, size, err, sizeof(err))) !=
	    NULL) {
		exercise(tz, data, size);
		tz_free(tz);
	} else if (strncmp(err, "time zone \"Fuzz/Zone\": ", 23) != 0)
		abort();
	if (size > 4096 || (buf = malloc(size + 200)) == NULL)
		return 0;
	if ((tz = tz_parse("Fuzz/Footer", buf, wrap_footer(data, size, buf),
	         err, sizeof(err))) != NULL) {
		exercise(tz, data, size);
		tz_free(tz);
	}
	free(buf);
	return 0;
}
