/*
 * fuzz_cron.c: the libFuzzer target for common/cron.c.  Any input is a
 * candidate expression.  Whatever parses must survive its own round trip
 * (parsing its text gives the same struct, byte for byte) and its next fire
 * times, searched from a few starting points spread over years 1 to 9999,
 * must be whole minutes at or after the start, inside the limit, match
 * every field by an independent reading of the calendar (gmtime_r()), and
 * be the first such minute as far as a few cheap probes can tell.  A broken
 * property aborts, which libFuzzer reports as a crash.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cronvisor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define YEAR_SECS (366 * 86400LL)

/* Aborts with a message: the fuzzer's crash. */
static void
check(int ok, const char *what, const struct cron *c, int64_t from, int64_t got)
{
	if (ok)
		return;
	fprintf(stderr, "fuzz_cron: %s: \"%s\" from %lld got %lld\n", what,
	    c->text, (long long)from, (long long)got);
	abort();
}

/* Whether wall time t matches c, read with gmtime_r(), not cron.c. */
static int
matches(const struct cron *c, int64_t t)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (gmtime_r(&tt, &tm) == NULL)
		return 0;
	return (c->minute >> tm.tm_min & 1) && (c->hour >> tm.tm_hour & 1) &&
	    (c->month >> (tm.tm_mon + 1) & 1) &&
	    cron_day_matches(c, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
}

/* Searches from one point and checks the answer and the one after it. */
static void
probe(const struct cron *c, int64_t from, int64_t limit)
{
	int64_t got = cron_next_wall(c, from, limit), again;

	if (got == CV_NEVER) {
		/* Every parsed expression fires within 400 years. */
		check(limit - from < 401 * YEAR_SECS ||
		        from > CV_TIME_MAX - 401 * YEAR_SECS,
		    "no fire time in 401 years", c, from, got);
		return;
	}
	check(
	    got >= from && got < limit, "outside [from, limit)", c, from, got);
	check(got % 60 == 0, "not a whole minute", c, from, got);
	check(matches(c, got), "does not match", c, from, got);
	check(got - 60 < from || !matches(c, got - 60), "a minute was skipped",
	    c, from, got);
	check(cron_next_wall(c, got, limit) == got, "not a fixed point", c,
	    from, got);
	again = cron_next_wall(c, got + 1, CV_NEVER);
	check(again > got, "next after a match is not later", c, from, again);
	if (again != CV_NEVER)
		check(
		    matches(c, again), "second does not match", c, from, again);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int64_t starts[] = {CV_TIME_MIN, -1, 0, 1704067199,
	    951782400, 4102444800LL, CV_TIME_MAX - 86400 * 400LL};
	char buf[512], err[CV_ERRLEN];
	struct cron c, again;
	uint64_t h = 1469598103934665603ULL;

	if (size >= sizeof(buf))
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	if (cron_parse(buf, &c, err, sizeof(err)) == -1) {
		if (err[0] == '\0' || memchr(err, '\0', sizeof(err)) == NULL)
			abort();
		return 0;
	}
	if (cron_parse(c.text, &again, err, sizeof(err)) == -1 ||
	    memcmp(&c, &again, sizeof(c)) != 0)
		check(0, "round trip differs", &c, 0, 0);
	for (size_t i = 0; i < size; i++)
		h = (h ^ data[i]) * 1099511628211ULL;
	for (size_t i = 0; i < sizeof(starts) / sizeof(starts[0]); i++)
		probe(&c, starts[i], CV_NEVER);
	/* One more start anywhere in years 1-9999, from the input's hash. */
	probe(&c,
	    CV_TIME_MIN + (int64_t)(h % (uint64_t)(CV_TIME_MAX - CV_TIME_MIN)),
	    CV_NEVER);
	probe(&c, 1700000000 + (int64_t)(h % 100000000),
	    1700000000 + (int64_t)(h % 100000000) + 86400 * 40);
	return 0;
}
