/*
 * next.c: "cronvisorctl next", the preview of a schedule's fire times, like
 * systemd-analyze calendar --iterations.  It runs the same slot_next() the
 * supervisor runs, so what it prints is what will happen, DST included.
 *
 *	cronvisorctl next '0 9 * * 1-5' --tz America/New_York --count 5
 *	cronvisorctl next --every 90s --start 2026-01-01T00:00:00Z --count 3
 *	cronvisorctl next --at 2026-12-24T18:00:00 --tz Europe/Berlin
 *	cronvisorctl next --batch < cases.jsonl
 *
 * --batch reads JSON lines {"id": any, "cron": "...", "tz": "...", "from":
 * epoch, "count": N} (or "every"/"start" or "at" in place of "cron", and
 * optional "dst_gap"/"dst_fold") and writes {"id": same, "next": [epoch…]}
 * or {"id": same, "error": "..."} per line, in order.
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cronvisorctl.h"

#define NEXT_COUNT_MAX 100000 /* most fire times one request may ask for */
#define EVERY_BUF      32     /* an interval in seconds, as text */

enum next_format {
	NEXT_FORMAT_TEXT,  /* one readable line per fire time */
	NEXT_FORMAT_EPOCH, /* epoch seconds only */
	NEXT_FORMAT_JSON,  /* one JSON document */
};

/* What one preview asks for, as given on the command line or a batch line. */
struct next_req {
	const char *cron;  /* cron expression, or NULL */
	const char *every; /* interval duration, or NULL */
	const char *start; /* interval anchor, or NULL = from */
	const char *at;    /* once instant, or NULL */
	const char *tz;    /* zone name, NULL = UTC */
	const char *gap;   /* dst_gap name, or NULL = auto */
	const char *fold;  /* dst_fold name, or NULL = auto */
	int64_t from;      /* list fire times after this instant */
	int64_t count;     /* how many */
};

static const char *const gap_names[] = {"auto", "shift", "skip"};
static const char *const fold_names[] = {"auto", "first", "both"};

/* Finds name in names[n]; returns its index or -1. */
static int
lookup(const char *name, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (strcmp(name, names[i]) == 0)
			return i;
	return -1;
}

/* Puts "name: " before the message in err; returns -1. */
static int
prefix(char *err, size_t errlen, const char *name)
{
	char msg[CV_ERRLEN];

	snprintf(msg, sizeof(msg), "%s", err);
	return log_errbuf(err, errlen, "%s: %s", name, msg);
}

/*
 * Turns a request into a timing.  Returns 0, or -1 with err holding the
 * message a user needs (the parser's, the zone reader's, …).
 */
static int
req_timing(
    const struct next_req *rq, struct timing *tm, char *err, size_t errlen)
{
	int kinds = !!rq->cron + !!rq->every + !!rq->at, g = 0, f = 0;
	int64_t at_ms = SCHEDULE_UNSET, start_ms = SCHEDULE_UNSET;

	memset(tm, 0, sizeof(*tm));
	tm->start_at = CV_TIME_MIN;
	if (kinds != 1) {
		snprintf(err, errlen,
		    "give exactly one of a cron expression, "
		    "--every or --at");
		return -1;
	}
	if (rq->tz && (tm->tz = tz_get(rq->tz, err, errlen)) == NULL)
		return -1;
	if ((rq->gap && (g = lookup(rq->gap, gap_names, 3)) < 0) ||
	    (rq->fold && (f = lookup(rq->fold, fold_names, 3)) < 0)) {
		snprintf(err, errlen,
		    g < 0 ? "dst_gap: \"%s\" is not one of "
		            "auto, shift, skip"
		          : "dst_fold: \"%s\" is not one of "
		            "auto, first, both",
		    g < 0 ? rq->gap : rq->fold);
		return -1;
	}
	tm->gap = (enum dst_gap)g;
	tm->fold = (enum dst_fold)f;
	if (rq->start && rq->at)
		return log_errbuf(err, errlen,
		    "start: a one-shot schedule "
		    "takes no start");
	/* Instants to the millisecond, as the API keeps them. */
	if (rq->start &&
	    timefmt_parse_ms(rq->start, tm->tz, &start_ms, err, errlen) == -1)
		return prefix(err, errlen, "start");
	if (rq->at &&
	    timefmt_parse_ms(rq->at, tm->tz, &at_ms, err, errlen) == -1)
		return prefix(err, errlen, "at");
	tm->kind = rq->cron ? SCHED_KIND_CRON
	    : rq->at        ? SCHED_KIND_ONCE
	                    : SCHED_KIND_INTERVAL;
	slot_set_ms(tm, at_ms, start_ms);
	if (rq->cron)
		return cron_parse(rq->cron, &tm->cron, err, errlen);
	if (rq->at)
		return 0;
	if (rq->start == NULL)
		tm->start_at = rq->from;
	if (timefmt_duration(rq->every, &tm->interval, err, errlen) == -1)
		return prefix(err, errlen, "every");
	return 0;
}

/* Prints one fire time as a text line. */
static void
print_text(const struct timing *tm, const struct slot *sl)
{
	static const char *const wd[] = {
	    "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
	char utc[40], local[40], wall[40];
	struct tz_span sp = {.abbr = "UTC"};
	int64_t days;

	if (tm->tz)
		tz_span_at(tm->tz, sl->at, &sp);
	timefmt_utc_ms(slot_ms(tm, sl->at), utc, sizeof(utc));
	timefmt_local_ms(slot_ms(tm, sl->at), tm->tz, local, sizeof(local));
	days = civil_fdiv(sl->at + sp.offset, 86400);
	*strchr(local, 'T') = ' ';
	printf("%s  %s %s %s", utc, wd[civil_weekday(days)], local, sp.abbr);
	if (sl->note == SLOT_NOTE_GAP_SHIFT) {
		timefmt_utc(sl->wall, wall, sizeof(wall));
		printf("  (%.5s %s)", wall + 11, slot_note_text(sl->note));
	} else if (sl->note != SLOT_NOTE_NONE) {
		printf("  (%s)", slot_note_text(sl->note));
	}
	putchar('\n');
}

/* Prints up to rq->count fire times of tm after rq->from. */
static void
print_slots(
    const struct next_req *rq, const struct timing *tm, enum next_format fmt)
{
	json_t *doc = NULL, *list = NULL;
	struct slot sl;
	int64_t t = rq->from;

	if (fmt == NEXT_FORMAT_JSON) {
		list = json_array();
		doc = json_pack("{s:s, s:o}", "timezone",
		    tm->tz ? tz_name(tm->tz) : "UTC", "next", list);
	}
	for (int64_t i = 0; i < rq->count && slot_next(tm, t, &sl); i++) {
		t = sl.at;
		if (fmt == NEXT_FORMAT_EPOCH)
			printf("%lld\n", (long long)sl.at);
		else if (fmt == NEXT_FORMAT_TEXT)
			print_text(tm, &sl);
		else
			json_array_append_new(
			    list, schedule_slot_json(tm, &sl));
	}
	if (doc) {
		json_dumpf(doc, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(doc);
	}
}

/*
 * Reads one batch line's fields into rq.  Returns 0, or -1 with err set.
 * The strings point into obj (which must outlive rq) or into everybuf,
 * EVERY_BUF bytes, which holds an interval given as a number.
 */
static int
batch_req(
    json_t *obj, struct next_req *rq, char *everybuf, char *err, size_t errlen)
{
	json_t *id = NULL, *every = NULL;
	json_int_t from = (json_int_t)time(NULL), count = 1;
	json_error_t je;

	memset(rq, 0, sizeof(*rq));
	if (json_unpack_ex(obj, &je, JSON_STRICT,
	        "{s?o, s?s, s?o, s?s, s?s, s?s, s?I, s?I, s?s, s?s}", "id", &id,
	        "cron", &rq->cron, "every", &every, "start", &rq->start, "at",
	        &rq->at, "tz", &rq->tz, "from", &from, "count", &count,
	        "dst_gap", &rq->gap, "dst_fold", &rq->fold) == -1) {
		snprintf(err, errlen, "%s", je.text);
		return -1;
	}
	if (every && json_is_integer(every)) {
		snprintf(everybuf, EVERY_BUF, "%lld",
		    (long long)json_integer_value(every));
		rq->every = everybuf;
	} else if (every && json_is_string(every)) {
		rq->every = json_string_value(every);
	} else if (every) {
		snprintf(err, errlen,
		    "every: expected seconds or a duration "
		    "such as \"90s\"");
		return -1;
	}
	if (count < 1 || count > NEXT_COUNT_MAX || from < CV_TIME_MIN ||
	    from > CV_TIME_MAX) {
		snprintf(err, errlen,
		    count < 1 || count > NEXT_COUNT_MAX
		        ? "count: out of range 1-%d"
		        : "from: out of range",
		    NEXT_COUNT_MAX);
		return -1;
	}
	rq->from = from;
	rq->count = count;
	return 0;
}

/* Answers one batch line; returns the reply object. */
static json_t *
batch_line(const char *line, size_t len)
{
	json_t *in, *reply, *list, *id;
	struct next_req rq;
	struct timing tm;
	struct slot sl;
	json_error_t je;
	char err[CV_ERRLEN], everybuf[EVERY_BUF];

	in = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
	if (in == NULL || !json_is_object(in)) {
		snprintf(err, sizeof(err), "%s",
		    in ? "expected a JSON object" : je.text);
		json_decref(in);
		return json_pack("{s:n, s:s}", "id", "error", err);
	}
	id = json_object_get(in, "id");
	reply = json_pack("{s:O}", "id", id ? id : json_null());
	if (batch_req(in, &rq, everybuf, err, sizeof(err)) == -1 ||
	    req_timing(&rq, &tm, err, sizeof(err)) == -1) {
		json_object_set_new(reply, "error", json_string(err));
	} else {
		list = json_array();
		for (int64_t i = 0;
		     i < rq.count && slot_next(&tm, rq.from, &sl);
		     i++, rq.from = sl.at)
			json_array_append_new(list, json_integer(sl.at));
		json_object_set_new(reply, "next", list);
	}
	json_decref(in);
	return reply;
}

/* CTL_EXIT_OK if everything printed reached stdout, else a complaint and
 * CTL_EXIT_FAIL (a full disk, a closed pipe). */
static int
output_status(void)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return CTL_EXIT_OK;
	log_warn("writing the output");
	return CTL_EXIT_FAIL;
}

/* --batch: one reply line per non-blank input line. */
static int
batch(void)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	while ((n = getline(&line, &cap, stdin)) != -1) {
		json_t *reply;

		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			n--;
		if (strspn(line, " \t") == (size_t)n)
			continue;
		reply = batch_line(line, (size_t)n);
		json_dumpf(reply, stdout, JSON_COMPACT | JSON_ENCODE_ANY);
		putchar('\n');
		json_decref(reply);
	}
	free(line);
	return output_status();
}

/* Prints the help text of "cronvisorctl next". */
void
next_usage(FILE *fp)
{
	fputs("usage: cronvisorctl next CRON [options]\n"
	      "       cronvisorctl next --every DURATION [--start TIME] "
	      "[options]\n"
	      "       cronvisorctl next --at TIME [options]\n"
	      "       cronvisorctl next --batch < cases.jsonl\n"
	      "\n"
	      "  --tz ZONE          IANA time zone (default UTC)\n"
	      "  --count N          how many fire times (default 5)\n"
	      "  --from TIME        list fire times after TIME (default now)\n"
	      "  --dst-gap RULE     auto, shift or skip\n"
	      "  --dst-fold RULE    auto, first or both\n"
	      "  --format epoch     print epoch seconds only\n"
	      "  --json             print JSON\n"
	      "\n"
	      "TIME is RFC 3339 (2026-03-07T00:00:00Z); without Z or an offset "
	      "it is\nwall time in --tz.  DURATION is 90s, 5m, 1h30m, 2d, ….\n",
	    fp);
}

/* Reads a TIME argument now that the zone is known. */
static int
arg_time(
    const char *s, const char *zone, int64_t *out, char *err, size_t errlen)
{
	const struct tz *tz = NULL;

	if (zone && (tz = tz_get(zone, err, errlen)) == NULL)
		return -1;
	return timefmt_parse(s, tz, out, err, errlen);
}

/* What the command line asked for. */
struct next_opts {
	struct next_req rq;   /* the preview */
	enum next_format fmt; /* how to print it */
	const char *from;     /* --from, read once the zone is known */
	int batch;            /* --batch */
};

/* Reads a --count or --format value into o; 0, or an exit status. */
static int
option_value(int c, const char *arg, struct next_opts *o)
{
	char *end;

	if (c == 'c') {
		o->rq.count = strtoll(arg, &end, 10);
		if (*arg == '\0' || *end != '\0' || o->rq.count < 1 ||
		    o->rq.count > NEXT_COUNT_MAX)
			return ctl_usage_error("--count: \"%s\" is not a "
			                       "number from 1 to %d",
			    arg, NEXT_COUNT_MAX);
		return 0;
	}
	if (strcmp(arg, "epoch") == 0)
		o->fmt = NEXT_FORMAT_EPOCH;
	else if (strcmp(arg, "text") == 0)
		o->fmt = NEXT_FORMAT_TEXT;
	else if (strcmp(arg, "json") == 0)
		o->fmt = NEXT_FORMAT_JSON;
	else
		return ctl_usage_error("--format: \"%s\" is not text, epoch "
		                       "or json",
		    arg);
	return 0;
}

/*
 * Parses the options of "cronvisorctl next" into o.  Returns 0 to go on,
 * or 1 with *rc set when the command is over (--help, a usage error).
 */
static int
next_options(int argc, char **argv, struct next_opts *o, int *rc)
{
	static const struct option opts[] = {
	    {"tz", required_argument, NULL, 'z'},
	    {"count", required_argument, NULL, 'c'},
	    {"from", required_argument, NULL, 'f'},
	    {"every", required_argument, NULL, 'e'},
	    {"start", required_argument, NULL, 's'},
	    {"at", required_argument, NULL, 'a'},
	    {"dst-gap", required_argument, NULL, 'g'},
	    {"dst-fold", required_argument, NULL, 'o'},
	    {"format", required_argument, NULL, 'F'},
	    {"json", no_argument, NULL, 'j'},
	    {"batch", no_argument, NULL, 'b'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char **str[128] = {['z'] = &o->rq.tz,
	    ['f'] = &o->from,
	    ['e'] = &o->rq.every,
	    ['s'] = &o->rq.start,
	    ['a'] = &o->rq.at,
	    ['g'] = &o->rq.gap,
	    ['o'] = &o->rq.fold};
	int c;

	optind = 1;
	while ((c = getopt_long(
	            argc, argv, "z:c:f:e:s:a:g:o:F:jbh", opts, NULL)) != -1) {
		*rc = CTL_EXIT_OK;
		if (c > 0 && c < 128 && str[c] != NULL)
			*str[c] = optarg;
		else if (c == 'j')
			o->fmt = NEXT_FORMAT_JSON;
		else if (c == 'b')
			o->batch = 1;
		else if (c == 'h')
			return next_usage(stdout), 1;
		else if (c == 'c' || c == 'F')
			*rc = option_value(c, optarg, o);
		else
			*rc = CTL_EXIT_USAGE;
		if (*rc != CTL_EXIT_OK)
			return 1;
	}
	return 0;
}

/* Entry point of "cronvisorctl next"; argv[0] is "next". */
int
next_main(int argc, char **argv)
{
	struct next_opts o = {.rq = {.count = 5, .from = (int64_t)time(NULL)},
	    .fmt = NEXT_FORMAT_TEXT};
	struct timing tm;
	char err[CV_ERRLEN];
	int rc;

	if (next_options(argc, argv, &o, &rc))
		return rc;
	if (o.batch)
		return optind == argc
		    ? batch()
		    : ctl_usage_error("--batch takes no other arguments");
	if (optind < argc)
		o.rq.cron = argv[optind++];
	if (optind < argc)
		return ctl_usage_error("unexpected argument \"%s\" (quote the "
		                       "cron expression)",
		    argv[optind]);
	if (o.rq.tz && tz_get(o.rq.tz, err, sizeof(err)) == NULL) {
		log_warnx("--tz: %s", err);
		return CTL_EXIT_FAIL;
	}
	if (o.from &&
	    arg_time(o.from, o.rq.tz, &o.rq.from, err, sizeof(err)) == -1) {
		log_warnx("--from: %s", err);
		return CTL_EXIT_FAIL;
	}
	if (req_timing(&o.rq, &tm, err, sizeof(err)) == -1) {
		log_warnx("%s", err);
		return CTL_EXIT_FAIL;
	}
	print_slots(&o.rq, &tm, o.fmt);
	return output_status();
}
