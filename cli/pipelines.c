/*
 * pipelines.c: "cronvisorctl pipelines …", the pipelines of the REST API
 * (docs/orchestration.md): list, show, create, update and delete.  create
 * and update send a file (or stdin) as it is: a pipeline is a graph, and
 * its steps read better as a document than as flags.  As elsewhere, the
 * CLI checks only what it needs and leaves the document to the API.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisorctl.h"

/* The command-specific options; getopt_long returns PO_BASE + these. */
enum pipelines_opt {
	PO_OWNER,   /* --owner O: ?owner= (admin) */
	PO_ENABLED, /* --enabled true|false (list filter) */
	PO_AGENT,   /* --agent ID (list filter) */
	PO_LIMIT,   /* --limit N (page size) */
	PO_ALL,     /* --all: follow next_cursor */
	PO_FILE,    /* --file F: the document */
	PO_HELP,    /* --help */
	PO_COUNT,   /* number of options */
};
#define PO_BASE   0x300
#define PO_BIT(o) CMD_BIT(o)

static const struct option pipelines_options[] = {
    {"owner", required_argument, NULL, PO_BASE + PO_OWNER},
    {"enabled", required_argument, NULL, PO_BASE + PO_ENABLED},
    {"agent", required_argument, NULL, PO_BASE + PO_AGENT},
    {"limit", required_argument, NULL, PO_BASE + PO_LIMIT},
    {"all", no_argument, NULL, PO_BASE + PO_ALL},
    {"file", required_argument, NULL, PO_BASE + PO_FILE},
    {"help", no_argument, NULL, PO_BASE + PO_HELP},
    CTL_GLOBAL_OPTIONS,
    {NULL, 0, NULL, 0},
};

/* The options of one command line, as given. */
struct pipelines_args {
	const char *arg[PO_COUNT]; /* last value of each flag */
	int given[PO_COUNT];       /* 1: the flag was given */
	char **pos;                /* the positional arguments */
	int npos;                  /* entries in pos */
	char path[256];            /* "/pipelines/ID", or "/pipelines" */
};

struct pipelines_cmd {
	struct cmd cmd; /* first: cmd.c hands back a pointer to it */
	int (*run)(const struct pipelines_args *a);
	unsigned long long need; /* PO_BIT()s of the flags it needs */
};

/* --- showing answers ---------------------------------------------------- */

/* "a,b" of a JSON array of strings, or "-" when empty. */
static const char *
pipelines_join(const json_t *arr, char *buf, size_t len)
{
	size_t i, n = 0;

	buf[0] = '\0';
	for (i = 0; i < json_array_size(arr) && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? "," : "",
		    json_string_value(json_array_get(arr, i)));
	return buf[0] ? buf : "-";
}

/* Prints a list of pipelines as the table of "pipelines list". */
static void
pipelines_table(const json_t *list)
{
	static const char *const head[] = {
	    "ID", "OWNER", "NAME", "STEPS", "ENABLED", "UPDATED"};
	struct table *t = table_new(head, 6);
	size_t i;
	json_t *x;

	json_array_foreach(list, i, x)
	{
		char steps[24];
		const char *row[6] = {
		    json_string_value(json_object_get(x, "pipeline_id")),
		    json_string_value(json_object_get(x, "owner")),
		    json_string_value(json_object_get(x, "name")), steps,
		    json_is_true(json_object_get(x, "enabled")) ? "yes" : "no",
		    json_string_value(json_object_get(x, "updated_at"))};

		snprintf(steps, sizeof(steps), "%zu",
		    json_array_size(json_object_get(x, "steps")));
		table_add(t, row);
	}
	table_print(t, stdout);
	table_free(t);
}

/* Prints one pipeline: its members as "key: value", then its steps. */
static void
pipelines_show(const json_t *x)
{
	static const char *const order[] = {"pipeline_id", "owner", "name",
	    "description", "enabled", "fail_fast", "created_by", "created_at",
	    "updated_by", "updated_at", NULL};
	static const char *const head[] = {"STEP", "AGENT", "DEPENDS ON",
	    "RUN WHEN", "PARALLEL", "TIMEOUT MS"};
	json_t *copy = json_copy((json_t *)x), *s;
	struct table *t = table_new(head, 6);
	size_t i;

	if (copy == NULL)
		fatalx("out of memory");
	json_object_del(copy, "steps");
	table_kv(copy, order, stdout);
	json_decref(copy);
	printf("\n");
	json_array_foreach(json_object_get(x, "steps"), i, s)
	{
		char deps[1024], tmo[24];
		const char *row[6] = {
		    json_string_value(json_object_get(s, "step_id")),
		    json_string_value(json_object_get(s, "agent_id")),
		    pipelines_join(
		        json_object_get(s, "depends_on"), deps, sizeof(deps)),
		    json_string_value(json_object_get(s, "run_when")),
		    json_is_true(json_object_get(s, "parallel")) ? "yes" : "no",
		    table_text(
		        json_object_get(s, "timeout_ms"), tmo, sizeof(tmo))};

		table_add(t, row);
	}
	table_print(t, stdout);
	table_free(t);
}

/* --- the commands ----------------------------------------------------------
 */

/* Sends method to a->path with ?owner= and the body text (NULL: none). */
static int
pipelines_send(
    const struct pipelines_args *a, const char *method, const char *text)
{
	const struct api_query q[] = {{"owner", a->arg[PO_OWNER]}};
	json_t *doc;
	int rc;

	rc = api_request(method, a->path, q, 1, text, &doc);
	return api_output(rc, doc, pipelines_show);
}

/* pipelines_send() with the file of --file as it is. */
static int
pipelines_send_file(const struct pipelines_args *a, const char *method)
{
	char *text;
	int rc;

	if ((text = ctl_read_input("file", a->arg[PO_FILE])) == NULL)
		return CTL_EXIT_FAIL;
	rc = pipelines_send(a, method, text);
	free(text);
	return rc;
}

/* "pipelines list": GET /pipelines with the filters, --all pages. */
static int
pipelines_list(const struct pipelines_args *a)
{
	const struct api_query q[] = {{"owner", a->arg[PO_OWNER]},
	    {"enabled", a->arg[PO_ENABLED]}, {"agent", a->arg[PO_AGENT]},
	    {"limit", a->arg[PO_LIMIT]}};
	const char *en = a->arg[PO_ENABLED];

	if (en != NULL && strcmp(en, "true") != 0 && strcmp(en, "false") != 0)
		return ctl_usage_error(
		    "--enabled: \"%s\" is not true or false", en);
	return api_list_print(
	    "/pipelines", q, 4, "pipelines", a->given[PO_ALL], pipelines_table);
}

/* "pipelines show ID": GET /pipelines/ID. */
static int
pipelines_get(const struct pipelines_args *a)
{
	return pipelines_send(a, "GET", NULL);
}

/* "pipelines create --file F": POST /pipelines with the file. */
static int
pipelines_create(const struct pipelines_args *a)
{
	return pipelines_send_file(a, "POST");
}

/* "pipelines update ID --file F": PATCH /pipelines/ID with the file. */
static int
pipelines_update(const struct pipelines_args *a)
{
	return pipelines_send_file(a, "PATCH");
}

/* "pipelines delete ID": DELETE /pipelines/ID, whose 204 has no body. */
static int
pipelines_delete(const struct pipelines_args *a)
{
	return api_delete_print(
	    a->path, a->arg[PO_OWNER], "pipeline", a->pos[0]);
}

static const struct pipelines_cmd pipelines_cmds[] = {
    {{"list",
         PO_BIT(PO_ENABLED) | PO_BIT(PO_AGENT) | PO_BIT(PO_LIMIT) |
             PO_BIT(PO_ALL),
         0, 0,
         "usage: cronvisorctl pipelines list [--enabled true|false] [--agent "
         "ID]\n"
         "           [--limit N] [--all] [--owner O]\n"
         "\n"
         "Lists pipelines by owner and id; --agent those with a step of that\n"
         "agent, --all every page.\n"},
        pipelines_list, 0},
    {{"show", 0, 1, 1,
         "usage: cronvisorctl pipelines show ID [--owner O]\n"
         "\n"
         "Shows a pipeline and its steps.\n"},
        pipelines_get, 0},
    {{"create", PO_BIT(PO_FILE), 0, 0,
         "usage: cronvisorctl pipelines create --file F [--owner O]\n"
         "\n"
         "Creates a pipeline from a JSON document (- reads stdin), native or\n"
         "in seed 004's spelling (docs/orchestration.md).\n"},
        pipelines_create, PO_BIT(PO_FILE)},
    {{"update", PO_BIT(PO_FILE), 1, 1,
         "usage: cronvisorctl pipelines update ID --file F [--owner O]\n"
         "\n"
         "Changes the members the file names (steps as a whole).\n"},
        pipelines_update, PO_BIT(PO_FILE)},
    {{"delete", 0, 1, 1,
         "usage: cronvisorctl pipelines delete ID [--owner O]\n"
         "\n"
         "Deletes a pipeline no schedule runs.\n"},
        pipelines_delete, 0},
};

/* Stores command option opt in a (struct pipelines_args). */
static int
pipelines_option(int opt, int argc, char **argv, void *args)
{
	struct pipelines_args *a = args;

	(void)argc;
	(void)argv;
	a->arg[opt] = optarg;
	a->given[opt] = 1;
	return 0;
}

/*
 * Parses the command line of subcommand c (argv[0] is its name) into
 * args and checks it: the flags c needs, the positional arguments, an id
 * that can stand in a path.  Returns 0, -1 for --help, or CTL_EXIT_USAGE.
 */
static int
pipelines_parse(const struct cmd_group *g, const struct cmd *c, int argc,
    char **argv, void *args)
{
	const struct pipelines_cmd *pc = (const struct pipelines_cmd *)c;
	struct pipelines_args *a = args;
	int rc;

	memset(a, 0, sizeof(*a));
	if ((rc = cmd_getopt(g, c, argc, argv, a)) != 0)
		return rc;
	a->pos = argv + optind;
	a->npos = argc - optind;
	for (int o = 0; o < PO_COUNT; o++)
		if ((pc->need & PO_BIT(o)) && !a->given[o])
			return ctl_usage_error("pipelines %s needs --%s",
			    c->name,
			    cmd_optname(pipelines_options, PO_BASE + o));
	if (cmd_check_pos(g, c, a->pos, a->npos, "the pipeline id") != 0)
		return CTL_EXIT_USAGE;
	if (a->npos == 0) {
		snprintf(a->path, sizeof(a->path), "/pipelines");
		return 0;
	}
	if (ctl_check_id(a->pos[0]) != 0)
		return CTL_EXIT_USAGE;
	snprintf(a->path, sizeof(a->path), "/pipelines/%s", a->pos[0]);
	return 0;
}

/* Runs subcommand c with what pipelines_parse() read into args. */
static int
pipelines_run(const struct cmd *c, void *args)
{
	return ((const struct pipelines_cmd *)c)->run(args);
}

static const struct cmd_group pipelines_group = {
    .name = "pipelines",
    .synopsis = "usage: cronvisorctl pipelines list|show|create|update|"
                "delete ...\n\n",
    CMD_TABLE(pipelines_cmds),
    .options = pipelines_options,
    .base = PO_BASE,
    .count = PO_COUNT,
    .help = PO_HELP,
    .always = PO_BIT(PO_OWNER),
    .option = pipelines_option,
    .parse = pipelines_parse,
    .run = pipelines_run,
};

/* Entry point of "cronvisorctl pipelines"; argv[0] is "pipelines". */
int
pipelines_main(int argc, char **argv)
{
	struct pipelines_args a;

	return cmd_main(&pipelines_group, &a, argc, argv);
}
