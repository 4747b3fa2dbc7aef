/*
 * executions.c: "cronvisorctl executions list|show|jobs" and
 * "cronvisorctl jobs show", the executions and jobs of the REST API
 * (docs/executions.md), as a table and as "key: value" lines, or the
 * API's JSON with --json.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cronvisorctl.h"

static void
executions_usage(FILE *fp)
{
	fputs(
	    "usage: cronvisorctl executions list [--schedule ID] [--status S] "
	    "[--limit N] [--all]\n"
	    "       cronvisorctl executions show EXECUTION_ID\n"
	    "       cronvisorctl executions jobs EXECUTION_ID [--status S] "
	    "[--limit N] [--all]\n"
	    "       cronvisorctl executions retry-failed EXECUTION_ID\n"
	    "       cronvisorctl jobs show JOB_ID\n"
	    "\n"
	    "executions list shows executions, newest first, of one schedule\n"
	    "or of all you can see; show shows one with its jobs counted by\n"
	    "status; jobs lists its jobs; retry-failed runs a fan-out's\n"
	    "failed jobs again.  jobs show shows one job with its attempts\n"
	    "(its runs).\n"
	    "\n" CTL_GLOBAL_USAGE,
	    fp);
}

/* A value of o for a table cell: strings as they are, numbers printed. */
static const char *
cell(const json_t *o, const char *key, char *buf, size_t len)
{
	const json_t *v = json_object_get(o, key);

	if (json_is_string(v))
		return json_string_value(v);
	if (json_is_integer(v)) {
		snprintf(buf, len, "%lld", (long long)json_integer_value(v));
		return buf;
	}
	return "-";
}

/*
 * The message of a job's error object, else why it waits or was not run
 * (a pipeline step's), else "-".
 */
static const char *
job_error(const json_t *j)
{
	const char *s = json_string_value(
	    json_object_get(json_object_get(j, "error"), "message"));

	if (s == NULL)
		s = json_string_value(json_object_get(j, "wait_reason"));
	return s ? s : "-";
}

static void
executions_table(const json_t *list)
{
	static const char *const hdr[] = {
	    "ID", "SCHEDULE", "STATUS", "SLOT", "JOBS", "ENQUEUED", "FINISHED"};
	struct table *t = table_new(hdr, 7);
	char a[32], b[32];
	const json_t *x;
	size_t i;

	json_array_foreach((json_t *)list, i, x)
	{
		const char *row[] = {cell(x, "id", NULL, 0),
		    cell(x, "schedule_id", NULL, 0), cell(x, "status", NULL, 0),
		    cell(x, "slot_at", NULL, 0),
		    cell(x, "jobs_created", a, sizeof(a)),
		    cell(x, "jobs_enqueued", b, sizeof(b)),
		    cell(x, "finished_at", NULL, 0)};
		table_add(t, row);
	}
	table_print(t, stdout);
	table_free(t);
}

static void
jobs_table(const json_t *list)
{
	static const char *const hdr[] = {"ID", "STATUS", "STEP", "CONTEXT",
	    "AGENT", "PRIORITY", "ATTEMPTS", "ERROR"};
	struct table *t = table_new(hdr, 8);
	char a[32], b[32], c[32];
	const json_t *j;
	size_t i;

	json_array_foreach((json_t *)list, i, j)
	{
		const char *row[] = {cell(j, "id", NULL, 0),
		    cell(j, "status", NULL, 0), cell(j, "step_id", NULL, 0),
		    cell(j, "context", c, sizeof(c)),
		    cell(j, "agent_id", NULL, 0),
		    cell(j, "priority", a, sizeof(a)),
		    cell(j, "attempt_count", b, sizeof(b)), job_error(j)};
		table_add(t, row);
	}
	table_print(t, stdout);
	table_free(t);
}

static const char *const exec_order[] = {"id", "schedule_id", "schedule_name",
    "status", "slot_at", "triggered", "jobs_created", "jobs_enqueued", "jobs",
    "pipeline", "errors", "metadata", "created_at", "updated_at", "finished_at",
    NULL};
static const char *const job_order[] = {"id", "execution_id", "schedule_id",
    "status", "agent_id", "agent_version", "pipeline_id", "pipeline_step_id",
    "context", "item", "priority", "enqueued_at", "dependencies", "params",
    "wait_reason", "result", "error", "attempt_count", "created_at",
    "finished_at", "attempts", NULL};

/*
 * The commands of both: what is "executions" or "jobs", sub the command
 * after it.  Options as runs.c's.
 */
static int
run_cmd(int jobs, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"schedule", required_argument, NULL, 'S'},
	    {"status", required_argument, NULL, 's'},
	    {"limit", required_argument, NULL, 'l'},
	    {"all", no_argument, NULL, 'a'},
	    {"help", no_argument, NULL, 'h'},
	    CTL_GLOBAL_OPTIONS,
	    {NULL, 0, NULL, 0},
	};
	static const char *const subs[] = {
	    "list", "show", "jobs", "retry-failed"};
	const char *status = NULL, *limit = NULL, *sched = NULL;
	char path[256], prog[64];
	int all = 0, c, sub = -1, nargs;

	for (int i = 0; argc >= 2 && i < 4; i++)
		if (strcmp(argv[1], subs[i]) == 0 && (!jobs || i == 1))
			sub = i;
	if (sub < 0) {
		int help = argc >= 2 &&
		    (strcmp(argv[1], "--help") == 0 ||
		        strcmp(argv[1], "-h") == 0);
		if (!help && argc >= 2)
			ctl_usage_error(
			    "unknown %s command \"%s\"", argv[0], argv[1]);
		executions_usage(help ? stdout : stderr);
		return help ? CTL_EXIT_OK : CTL_EXIT_USAGE;
	}
	snprintf(prog, sizeof(prog), "cronvisorctl %s %s", argv[0], subs[sub]);
	argv[1] = prog;
	optind = 1;
	while ((c = getopt_long(argc - 1, argv + 1, "h", opts, NULL)) != -1) {
		if (ctl_global_option(c, optarg))
			continue;
		if (c == 'h')
			return executions_usage(stdout), CTL_EXIT_OK;
		if (c == '?')
			goto usage;
		if (sub == 1 || sub == 3 || (c == 'S' && sub != 0)) {
			ctl_usage_error("%s takes no such option", prog);
			goto usage;
		}
		if (c == 'S')
			sched = optarg;
		else if (c == 's')
			status = optarg;
		else if (c == 'l')
			limit = optarg;
		else
			all = 1;
	}
	nargs = argc - 1 - optind;
	if (nargs != (sub == 0 ? 0 : 1)) {
		ctl_usage_error(
		    "%s takes %s", prog, sub == 0 ? "no argument" : "one id");
		goto usage;
	}
	if ((sched && ctl_check_id(sched) != 0) ||
	    (nargs == 1 && ctl_check_id(argv[1 + optind]) != 0))
		goto usage;
	if (sub == 0) {
		const struct api_query q[] = {{"schedule_id", sched},
		    {"status", status}, {"limit", limit}};
		return api_list_print(
		    "/executions", q, 3, "executions", all, executions_table);
	}
	if (sub == 2) {
		const struct api_query q[] = {
		    {"status", status}, {"limit", limit}};
		snprintf(path, sizeof(path), "/executions/%s/jobs",
		    argv[1 + optind]);
		return api_list_print(path, q, 2, "jobs", all, jobs_table);
	}
	if (sub == 3) {
		json_t *doc;
		int rc;

		snprintf(path, sizeof(path), "/executions/%s/retry-failed",
		    argv[1 + optind]);
		rc = api_request("POST", path, NULL, 0, NULL, &doc);
		if (rc == 0 && doc != NULL && !ctl.json)
			printf("retried %lld failed jobs of execution %s\n",
			    (long long)json_integer_value(
			        json_object_get(doc, "retried")),
			    argv[1 + optind]);
		else if (rc == 0 && doc != NULL)
			api_print_json(doc);
		json_decref(doc);
		return rc == -1 ? CTL_EXIT_FAIL : CTL_EXIT_OK;
	}
	snprintf(path, sizeof(path), "/%s/%s", jobs ? "jobs" : "executions",
	    argv[1 + optind]);
	return api_show_print(path, jobs ? job_order : exec_order);
usage:
	executions_usage(stderr);
	return CTL_EXIT_USAGE;
}

/* Entry point of "cronvisorctl executions"; argv[0] is "executions". */
int
executions_main(int argc, char **argv)
{
	return run_cmd(0, argc, argv);
}

/* Entry point of "cronvisorctl jobs"; argv[0] is "jobs". */
int
jobs_main(int argc, char **argv)
{
	return run_cmd(1, argc, argv);
}
