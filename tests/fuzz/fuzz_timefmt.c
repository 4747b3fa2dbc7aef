/*
 * fuzz_timefmt.c: libFuzzer target for the instant and duration parsers of
 * common/timefmt.c.  Whatever parses must format back and parse again to
 * the same instant.
 */
#include <stdlib.h>
#include <string.h>

#include "cronvisor.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t len);

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t len)
{
	static const struct tz *ny;
	char s[128], buf[48], err[CV_ERRLEN];
	int64_t t, t2, d;

	if (ny == NULL &&
	    (ny = tz_get("America/New_York", err, sizeof(err))) == NULL)
		abort();
	if (len >= sizeof(s))
		return 0;
	memcpy(s, data, len);
	s[len] = '\0';
	for (int zoned = 0; zoned < 2; zoned++) {
		if (timefmt_parse(s, zoned ? ny : NULL, &t, err, sizeof(err)) ==
		    -1)
			continue;
		if (t < CV_TIME_MIN || t > CV_TIME_MAX)
			abort();
		if (timefmt_utc(t, buf, sizeof(buf)) == -1 ||
		    timefmt_parse(buf, NULL, &t2, err, sizeof(err)) == -1 ||
		    t2 != t)
			abort();
		/*
		 * Local time reads back too, except within a day of the ends
		 * of the range, where the wall date is year 0 or 10000 and
		 * RFC 3339 has no way to write it.
		 */
		if (timefmt_local(t, ny, buf, sizeof(buf)) == -1)
			abort();
		if (t > CV_TIME_MIN + 86400 && t < CV_TIME_MAX - 86400 &&
		    (timefmt_parse(buf, NULL, &t2, err, sizeof(err)) == -1 ||
		        t2 != t))
			abort();
	}
	/* Milliseconds read back to the millisecond. */
	if (timefmt_parse_ms(s, NULL, &t, err, sizeof(err)) == 0 &&
	    (timefmt_utc_ms(t, buf, sizeof(buf)) == -1 ||
	        timefmt_parse_ms(buf, NULL, &t2, err, sizeof(err)) == -1 ||
	        t2 != t))
		abort();
	if (timefmt_duration(s, &d, err, sizeof(err)) == 0 &&
	    (d < 1 || d > 100LL * 366 * 86400))
		abort();
	return 0;
}
