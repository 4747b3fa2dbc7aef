/*
 * runs.c: "cronvisorctl runs list SCHEDULE_ID" and "cronvisorctl runs show
 * RUN_ID", the run history of the REST API (docs/api.md), as a table and
 * as "key: value" lines, or the API's JSON with --json.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cronvisorctl.h"

#define RUNS_NOTE_MAX 60 /* characters of the note or error in the table */

/* Prints the usage of "runs list" and "runs show" on fp. */
static void
runs_usage(FILE *fp)
{
	fputs("usage: cronvisorctl runs list SCHEDULE_ID [--status S] "
	      "[--limit N] [--all]\n"
	      "       cronvisorctl runs show RUN_ID\n"
	      "\n"
	      "list shows a schedule's runs, newest first, one page (--limit,\n"
	      "default 100) or --all of them; show shows one run, with its\n"
	      "output.\n"
	      "\n" CTL_GLOBAL_USAGE,
	    fp);
}

/* "12ms", "1.5s", "2m3s": a run's duration_ms for people. */
static const char *
runs_duration(const json_t *ms, char *buf, size_t len)
{
	json_int_t v;

	if (!json_is_integer(ms))
		return "-";
	v = json_integer_value(ms);
	if (v < 1000)
		snprintf(buf, len, "%lldms", (long long)v);
	else if (v < 60000)
		snprintf(buf, len, "%.1fs", (double)v / 1000);
	else
		table_duration(v / 1000, buf, len);
	return buf;
}

/* "0", "sig 9", "http 503", "-": how a run's target ended. */
static const char *
runs_exit(const json_t *r, char *buf, size_t len)
{
	json_t *sig = json_object_get(r, "signal");
	json_t *code = json_object_get(r, "exit_code");
	json_t *http = json_object_get(r, "http_status");

	if (json_is_integer(http) && json_integer_value(http) != 0)
		snprintf(
		    buf, len, "http %lld", (long long)json_integer_value(http));
	else if (json_is_integer(sig) && json_integer_value(sig) != 0)
		snprintf(
		    buf, len, "sig %lld", (long long)json_integer_value(sig));
	else if (json_is_integer(code) && json_integer_value(code) >= 0)
		snprintf(buf, len, "%lld", (long long)json_integer_value(code));
	else
		return "-";
	return buf;
}

/* The note of a run, else its error, cut to RUNS_NOTE_MAX bytes. */
static const char *
runs_note(const json_t *r, char *buf, size_t len)
{
	const char *s = json_string_value(json_object_get(r, "note"));

	if (s == NULL)
		s = json_string_value(json_object_get(r, "error"));
	if (s == NULL)
		return "-";
	snprintf(buf, len, "%.*s%s", RUNS_NOTE_MAX, s,
	    strlen(s) > RUNS_NOTE_MAX ? "…" : "");
	return buf;
}

/* Prints a list of runs as the table of "runs list". */
static void
runs_table(const json_t *list)
{
	static const char *const hdr[] = {
	    "ID", "STATUS", "SLOT", "STARTED", "DURATION", "EXIT/HTTP", "NOTE"};
	struct table *t = table_new(hdr, 7);
	char dur[64], ex[64], note[RUNS_NOTE_MAX * 2];
	const json_t *r;
	size_t i;

	json_array_foreach((json_t *)list, i, r)
	{
		const char *row[] = {
		    json_string_value(json_object_get(r, "id")),
		    json_string_value(json_object_get(r, "status")),
		    json_string_value(json_object_get(r, "slot_at")),
		    json_string_value(json_object_get(r, "started_at")),
		    runs_duration(
		        json_object_get(r, "duration_ms"), dur, sizeof(dur)),
		    runs_exit(r, ex, sizeof(ex)),
		    runs_note(r, note, sizeof(note)),
		};
		table_add(t, row);
	}
	table_print(t, stdout);
	table_free(t);
}

/* "runs list SCHEDULE_ID": GET /schedules/ID/runs, --all pages. */
static int
runs_list(const char *id, const char *status, const char *limit, int all)
{
	const struct api_query q[] = {{"status", status}, {"limit", limit}};
	char path[256];

	snprintf(path, sizeof(path), "/schedules/%s/runs", id);
	return api_list_print(path, q, 2, "runs", all, runs_table);
}

/* "runs show RUN_ID": GET /runs/ID. */
static int
runs_show(const char *id)
{
	static const char *const order[] = {"id", "schedule_id", "job_id",
	    "status", "repeat_number", "attempt", "slot_at", "started_at",
	    "finished_at", "duration_ms", "exit_code", "signal", "http_status",
	    "error", "note", "cpu_user_ms", "cpu_sys_ms", "max_rss_kb",
	    "supervisor", "output", NULL};
	char path[256];

	snprintf(path, sizeof(path), "/runs/%s", id);
	return api_show_print(path, order);
}

/* Entry point of "cronvisorctl runs"; argv[0] is "runs". */
int
runs_main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"status", required_argument, NULL, 's'},
	    {"limit", required_argument, NULL, 'l'},
	    {"all", no_argument, NULL, 'a'},
	    {"help", no_argument, NULL, 'h'},
	    CTL_GLOBAL_OPTIONS,
	    {NULL, 0, NULL, 0},
	};
	const char *status = NULL, *limit = NULL;
	int all = 0, c, list;

	if (argc < 2 ||
	    (strcmp(argv[1], "list") != 0 && strcmp(argv[1], "show") != 0)) {
		int help = argc >= 2 &&
		    (strcmp(argv[1], "--help") == 0 ||
		        strcmp(argv[1], "-h") == 0);
		if (!help && argc >= 2)
			ctl_usage_error("unknown runs command \"%s\"", argv[1]);
		runs_usage(help ? stdout : stderr);
		return help ? CTL_EXIT_OK : CTL_EXIT_USAGE;
	}
	list = strcmp(argv[1], "list") == 0;
	argv[1] = list ? "cronvisorctl runs list" : "cronvisorctl runs show";
	optind = 1;
	while ((c = getopt_long(argc - 1, argv + 1, "h", opts, NULL)) != -1) {
		if (ctl_global_option(c, optarg))
			continue;
		if (c == 'h')
			return runs_usage(stdout), CTL_EXIT_OK;
		if (c == '?')
			goto usage;
		if (!list) {
			ctl_usage_error("runs show takes no --status, --limit "
			                "or --all");
			goto usage;
		}
		if (c == 's')
			status = optarg;
		else if (c == 'l')
			limit = optarg;
		else
			all = 1;
	}
	if (optind != argc - 2) {
		ctl_usage_error("runs %s takes one id", list ? "list" : "show");
		goto usage;
	}
	if (ctl_check_id(argv[1 + optind]) != 0)
		goto usage;
	return list ? runs_list(argv[1 + optind], status, limit, all)
	            : runs_show(argv[1 + optind]);
usage:
	runs_usage(stderr);
	return CTL_EXIT_USAGE;
}
