/*
 * datasources.c: "cronvisorctl data-sources …", the tables data-source
 * strings may read (docs/orchestration.md, "Fan-out"): list, show,
 * register (an admin's, from a file), delete, and preview what a string
 * expands to now.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisorctl.h"

enum ds_opt {
	DO_FILE, /* --file F: the registration */
	DO_HELP, /* --help */
	DO_COUNT,
};
#define DO_BASE 0x400

static const struct option ds_options[] = {
    {"file", required_argument, NULL, DO_BASE + DO_FILE},
    {"help", no_argument, NULL, DO_BASE + DO_HELP},
    CTL_GLOBAL_OPTIONS,
    {NULL, 0, NULL, 0},
};

struct ds_args {
	const char *file; /* --file */
	char **pos;       /* the positional arguments */
	int npos;
	char path[256]; /* "/data-sources/NAME" or "/data-sources" */
};

struct ds_cmd {
	struct cmd cmd;
	int (*run)(const struct ds_args *a);
};

/* Prints the registrations as a table. */
static void
ds_table(const json_t *doc)
{
	static const char *const head[] = {
	    "NAME", "RELATION", "KEY", "COLUMNS", "OWNERS"};
	struct table *t = table_new(head, 5);
	size_t i, k;
	json_t *x, *c;

	json_array_foreach(json_object_get(doc, "data_sources"), i, x)
	{
		char cols[1024] = "", owners[512] = "";
		const char *row[5] = {
		    json_string_value(json_object_get(x, "name")),
		    json_string_value(json_object_get(x, "relation")),
		    json_string_value(json_object_get(x, "key")), cols, owners};

		json_array_foreach(json_object_get(x, "columns"), k, c)
		{
			snprintf(cols + strlen(cols),
			    sizeof(cols) - strlen(cols), "%s%s", k ? "," : "",
			    json_string_value(json_object_get(c, "name")));
		}
		json_array_foreach(json_object_get(x, "owners"), k, c)
		{
			snprintf(owners + strlen(owners),
			    sizeof(owners) - strlen(owners), "%s%s",
			    k ? "," : "", json_string_value(c));
		}
		if (owners[0] == '\0')
			snprintf(owners, sizeof(owners), "(all)");
		table_add(t, row);
	}
	table_print(t, stdout);
	table_free(t);
}

/* Prints one registration: its members, then its columns. */
static void
ds_show(const json_t *x)
{
	static const char *const order[] = {"name", "relation", "key", "owners",
	    "description", "created_by", "created_at", NULL};
	static const char *const head[] = {"NAME", "COLUMN", "TYPE"};
	json_t *copy = json_copy((json_t *)x), *c;
	struct table *t = table_new(head, 3);
	size_t i;

	if (copy == NULL)
		fatalx("out of memory");
	json_object_del(copy, "columns");
	json_object_del(copy, "given");
	table_kv(copy, order, stdout);
	json_decref(copy);
	printf("\n");
	json_array_foreach(json_object_get(x, "columns"), i, c)
	{
		const char *row[3] = {
		    json_string_value(json_object_get(c, "name")),
		    json_string_value(json_object_get(c, "column")),
		    json_string_value(json_object_get(c, "type"))};

		table_add(t, row);
	}
	table_print(t, stdout);
	table_free(t);
}

/*
 * Prints a preview (of a string, or of a schedule's firing): the param
 * it expands, the count, the sample, then the batches (with when each
 * starts, for a schedule's).
 */
void
ds_print_preview(const json_t *x)
{
	static const char *const head[] = {
	    "BATCH", "OFFSET MS", "JOBS", "STARTS AT"};
	json_t *param = json_object_get(x, "param"), *v;
	const char *first = json_string_value(json_object_get(x, "first_fire"));
	struct table *t = table_new(head, first ? 4 : 3);
	size_t i;

	if (json_is_null(param)) {
		printf("no data-source param: one job%s%s\n",
		    first ? ", first firing " : "", first ? first : "");
		table_free(t);
		return;
	}
	if (json_is_string(param))
		printf("param:   %s\n", json_string_value(param));
	if (first)
		printf("firing:  %s\n", first);
	printf("values:  %lld%s\n",
	    (long long)json_integer_value(json_object_get(x, "count")),
	    json_is_true(json_object_get(x, "over_limit"))
	        ? " (more: over the row limit)"
	        : "");
	printf("batches: %lld of %lld, %lld ms apart\n",
	    (long long)json_integer_value(json_object_get(x, "batches")),
	    (long long)json_integer_value(json_object_get(x, "batch_size")),
	    (long long)json_integer_value(json_object_get(x, "stagger_ms")));
	printf("sample: ");
	json_array_foreach(json_object_get(x, "sample"), i, v)
	{
		char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);

		printf(" %s", s ? s : "?");
		free(s);
	}
	printf("\n\n");
	json_array_foreach(json_object_get(x, "plan"), i, v)
	{
		char b[24], o[24], j[24];
		const char *row[4] = {b, o, j,
		    json_string_value(json_object_get(v, "starts_at"))};

		snprintf(b, sizeof(b), "%lld",
		    (long long)json_integer_value(json_object_get(v, "batch")));
		snprintf(o, sizeof(o), "%lld",
		    (long long)json_integer_value(
		        json_object_get(v, "offset_ms")));
		snprintf(j, sizeof(j), "%lld",
		    (long long)json_integer_value(json_object_get(v, "jobs")));
		table_add(t, row);
	}
	table_print(t, stdout);
	table_free(t);
}

/* Sends method to a->path with the body text, the answer shown by show. */
static int
ds_send(const struct ds_args *a, const char *method, const char *text,
    void (*show)(const json_t *))
{
	json_t *doc = NULL;
	int rc = api_request(method, a->path, NULL, 0, text, &doc);

	return api_output(rc, doc, show);
}

static int
ds_list(const struct ds_args *a)
{
	return ds_send(a, "GET", NULL, ds_table);
}

static int
ds_get(const struct ds_args *a)
{
	return ds_send(a, "GET", NULL, ds_show);
}

static int
ds_create(const struct ds_args *a)
{
	char *text;
	int rc;

	if ((text = ctl_read_input("file", a->file)) == NULL)
		return CTL_EXIT_FAIL;
	rc = ds_send(a, "POST", text, ds_show);
	free(text);
	return rc;
}

static int
ds_delete(const struct ds_args *a)
{
	return api_delete_print(a->path, NULL, "data source", a->pos[0]);
}

static int
ds_preview(const struct ds_args *a)
{
	json_t *body = json_pack("{s:s}", "source", a->pos[0]);
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	int rc;

	json_decref(body);
	if (text == NULL)
		fatalx("out of memory");
	rc = ds_send(a, "POST", text, ds_print_preview);
	free(text);
	return rc;
}

static const struct ds_cmd ds_cmds[] = {
    {{"list", 0, 0, 0,
         "usage: cronvisorctl data-sources list\n"
         "\n"
         "Lists the registered tables the caller's owner may use.\n"},
        ds_list},
    {{"show", 0, 1, 1,
         "usage: cronvisorctl data-sources show NAME\n"
         "\n"
         "Shows a registration and its columns with their types.\n"},
        ds_get},
    {{"create", CMD_BIT(DO_FILE), 0, 0,
         "usage: cronvisorctl data-sources create --file F\n"
         "\n"
         "Registers a table or view (an admin's) from a JSON document (-\n"
         "reads stdin): name, relation, key, columns, owners.\n"},
        ds_create},
    {{"delete", 0, 1, 1,
         "usage: cronvisorctl data-sources delete NAME\n"
         "\n"
         "Deletes a registration (an admin's).\n"},
        ds_delete},
    {{"preview", 0, 1, 1,
         "usage: cronvisorctl data-sources preview 'db:TABLE:FILTER:FIELD[?...]'\n"
         "\n"
         "Shows what a data-source string expands to now: how many values,\n"
         "the first ones, and the batches with their offsets.\n"},
        ds_preview},
};

static int
ds_option(int opt, int argc, char **argv, void *args)
{
	struct ds_args *a = args;

	(void)argc;
	(void)argv;
	if (opt == DO_FILE)
		a->file = optarg;
	return 0;
}

static int
dsc_parse(const struct cmd_group *g, const struct cmd *c, int argc, char **argv,
    void *args)
{
	struct ds_args *a = args;
	int rc;

	memset(a, 0, sizeof(*a));
	if ((rc = cmd_getopt(g, c, argc, argv, a)) != 0)
		return rc;
	a->pos = argv + optind;
	a->npos = argc - optind;
	if (strcmp(c->name, "create") == 0 && a->file == NULL)
		return ctl_usage_error("data-sources create needs --file");
	if (cmd_check_pos(g, c, a->pos, a->npos,
	        strcmp(c->name, "preview") == 0 ? "the data-source string"
	                                        : "the name") != 0)
		return CTL_EXIT_USAGE;
	if (a->npos == 0 || strcmp(c->name, "preview") == 0) {
		snprintf(a->path, sizeof(a->path), "/data-sources%s",
		    a->npos ? "/preview" : "");
		return 0;
	}
	if (ctl_check_id(a->pos[0]) != 0)
		return CTL_EXIT_USAGE;
	snprintf(a->path, sizeof(a->path), "/data-sources/%s", a->pos[0]);
	return 0;
}

static int
ds_run(const struct cmd *c, void *args)
{
	return ((const struct ds_cmd *)c)->run(args);
}

static const struct cmd_group ds_group = {
    .name = "data-sources",
    .synopsis = "usage: cronvisorctl data-sources "
                "list|show|create|delete|preview ...\n\n",
    CMD_TABLE(ds_cmds),
    .options = ds_options,
    .base = DO_BASE,
    .count = DO_COUNT,
    .help = DO_HELP,
    .always = 0,
    .option = ds_option,
    .parse = dsc_parse,
    .run = ds_run,
};

/* Entry point of "cronvisorctl data-sources"; argv[0] is "data-sources". */
int
datasources_main(int argc, char **argv)
{
	struct ds_args a;

	return cmd_main(&ds_group, &a, argc, argv);
}
