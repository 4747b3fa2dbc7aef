/*
 * bench_next.c: how fast next-fire times are computed, the work a
 * supervisor does every time it claims a slot and an API preview does per
 * line.  Measures slot_next() per second for cron schedules in several
 * zones and for interval schedules in the same run, and prints a table and
 * (with -j FILE) the same figures as JSON.  Only ratios measured together
 * mean anything on a shared machine.
 *
 * usage: bench_next [-s SECONDS_PER_CASE] [-j results.json]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cronvisor.h"

#include "clock.h"

struct bcase {
	const char *name; /* table label */
	const char *cron; /* expression, or NULL for an interval */
	const char *zone; /* zone name, or NULL for UTC */
	double rate;      /* measured: slot_next() calls per second */
};

static struct bcase cases[] = {
    {"interval 90s", NULL, NULL, 0},
    {"cron */5 * * * *  UTC", "*/5 * * * *", NULL, 0},
    {"cron 0 9 * * 1-5  New_York", "0 9 * * 1-5", "America/New_York", 0},
    {"cron 30 2 * * *  New_York (DST)", "30 2 * * *", "America/New_York", 0},
    {"cron 15 2 * * *  Lord_Howe", "15 2 * * *", "Australia/Lord_Howe", 0},
    {"cron 0 0 13 * FRI  Berlin", "0 0 13 * FRI", "Europe/Berlin", 0},
    {"cron 0 0 29 2 *  Kathmandu", "0 0 29 2 *", "Asia/Kathmandu", 0},
    {"cron 0 0 29 2 */7  UTC (decades)", "0 0 29 2 */7", NULL, 0},
};

/* Calls slot_next() in a chain from 2026 on for about `secs` seconds. */
static double
measure(const struct timing *tm, double secs)
{
	const int64_t t0 = 1767225600; /* 2026-01-01 */
	double start = now_s(), el;
	long n = 0;
	int64_t t = t0;
	struct slot sl;

	do {
		for (int i = 0; i < 1000; i++, n++) {
			if (!slot_next(tm, t, &sl) || sl.at > t0 + 3153600000LL)
				sl.at = t0;
			t = sl.at;
		}
		el = now_s() - start;
	} while (el < secs);
	return (double)n / el;
}

int
main(int argc, char **argv)
{
	const char *json = NULL;
	double secs = 1.0;
	char err[CV_ERRLEN];
	FILE *fp;
	int c;

	log_init("bench_next", LOG_LEVEL_INFO);
	while ((c = getopt(argc, argv, "s:j:")) != -1)
		switch (c) {
		case 's':
			secs = atof(optarg);
			break;
		case 'j':
			json = optarg;
			break;
		default:
			fatalx("usage: bench_next [-s SECONDS] [-j FILE]");
		}
	printf("%-38s %14s %10s\n", "schedule", "next()/s", "vs interval");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct timing tm = {
		    .kind = SCHED_KIND_INTERVAL, .interval = 90, .start_at = 0};
		if (cases[i].cron) {
			tm.kind = SCHED_KIND_CRON;
			tm.start_at = CV_TIME_MIN;
			if (cron_parse(cases[i].cron, &tm.cron, err,
			        sizeof(err)) == -1)
				fatalx("%s: %s", cases[i].cron, err);
		}
		if (cases[i].zone &&
		    (tm.tz = tz_get(cases[i].zone, err, sizeof(err))) == NULL)
			fatalx("%s", err);
		cases[i].rate = measure(&tm, secs);
		printf("%-38s %14.0f %10.3f\n", cases[i].name, cases[i].rate,
		    cases[i].rate / cases[0].rate);
	}
	if (json == NULL)
		return 0;
	if ((fp = fopen(json, "w")) == NULL)
		fatal("%s", json);
	fprintf(fp, "{\n  \"next_fire\": [\n");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		fprintf(fp,
		    "    {\"schedule\": \"%s\", \"per_second\": %.0f, "
		    "\"ratio_to_interval\": %.4f}%s\n",
		    cases[i].name, cases[i].rate, cases[i].rate / cases[0].rate,
		    i + 1 < sizeof(cases) / sizeof(cases[0]) ? "," : "");
	fprintf(fp, "  ]\n}\n");
	if (fclose(fp) != 0)
		fatal("%s", json);
	tz_cache_clear();
	return 0;
}
