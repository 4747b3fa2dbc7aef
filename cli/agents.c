/*
 * agents.c: "cronvisorctl agents …", the agent registry of the REST API
 * (docs/agents.md): list, show, create, update and delete agents, their
 * versions, deploy, promote and roll back a version per environment, and
 * the health probes.  create builds the agent document from flags (the
 * common fields) or sends a file as it is; update sends a file, a JSON
 * patch, as it is.  As in schedules.c, the CLI checks only what it needs
 * to write JSON and leaves the document's validation to the API.
 *
 * Secrets (a bearer token, a basic password, an HMAC key) come only from
 * files or stdin, never from the command line, where every local user
 * reads them in ps and /proc/PID/cmdline; the --bearer-token, --password
 * and --hmac-secret options exist only to refuse a secret given there,
 * and to keep getopt_long from taking them as abbreviations of the
 * --…-file options (it would then name the secret as a file that does not
 * exist).  The API never sends a secret back, and --dry-run prints "***"
 * in place of each one it would send.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisorctl.h"

#define AGENTS_MASK "***" /* a secret, in what --dry-run prints */

/* The command-specific options; getopt_long returns AO_BASE + these. */
enum agents_opt {
	AO_OWNER,           /* --owner O: ?owner= (admin) */
	AO_ENABLED,         /* --enabled true|false (list filter) */
	AO_LIMIT,           /* --limit N (page size) */
	AO_ALL,             /* --all: follow next_cursor */
	AO_FILE,            /* --file F: the document itself */
	AO_ID,              /* --id ID: agent_id */
	AO_NAME,            /* --name N */
	AO_ENDPOINT,        /* --endpoint URL */
	AO_DESCRIPTION,     /* --description D */
	AO_TIMEOUT_MS,      /* --timeout-ms N */
	AO_MAX_CONCURRENT,  /* --max-concurrent N */
	AO_BEARER_FILE,     /* --bearer-token-file PATH */
	AO_BASIC,           /* --basic USER */
	AO_PASSWORD_FILE,   /* --password-file PATH (with --basic) */
	AO_HMAC_FILE,       /* --hmac-secret-file PATH */
	AO_HEALTH_URL,      /* --health-url URL */
	AO_HEALTH_INTERVAL, /* --health-interval S (with --health-url) */
	AO_SCHEMA_FILE,     /* --schema-file PATH: input_schema */
	AO_DISABLED,        /* --disabled: "enabled": false */
	AO_VERSION,         /* --version V (add-version) */
	AO_ENV,             /* --env ENV (deploy, rollback) */
	AO_FROM,            /* --from ENV (promote) */
	AO_TO,              /* --to ENV (promote) */
	AO_BEARER_ARGV,     /* --bearer-token: refused */
	AO_PASSWORD_ARGV,   /* --password: refused */
	AO_HMAC_ARGV,       /* --hmac-secret: refused */
	AO_HELP,            /* --help */
	AO_COUNT,           /* number of options */
};
#define AO_BASE   0x200
#define AO_BIT(o) CMD_BIT(o)
_Static_assert(AO_COUNT <= 64, "an agents_opt mask has 64 bits");

static const struct option agents_options[] = {
    {"owner", required_argument, NULL, AO_BASE + AO_OWNER},
    {"enabled", required_argument, NULL, AO_BASE + AO_ENABLED},
    {"limit", required_argument, NULL, AO_BASE + AO_LIMIT},
    {"all", no_argument, NULL, AO_BASE + AO_ALL},
    {"file", required_argument, NULL, AO_BASE + AO_FILE},
    {"id", required_argument, NULL, AO_BASE + AO_ID},
    {"name", required_argument, NULL, AO_BASE + AO_NAME},
    {"endpoint", required_argument, NULL, AO_BASE + AO_ENDPOINT},
    {"description", required_argument, NULL, AO_BASE + AO_DESCRIPTION},
    {"timeout-ms", required_argument, NULL, AO_BASE + AO_TIMEOUT_MS},
    {"max-concurrent", required_argument, NULL, AO_BASE + AO_MAX_CONCURRENT},
    {"bearer-token-file", required_argument, NULL, AO_BASE + AO_BEARER_FILE},
    {"basic", required_argument, NULL, AO_BASE + AO_BASIC},
    {"password-file", required_argument, NULL, AO_BASE + AO_PASSWORD_FILE},
    {"hmac-secret-file", required_argument, NULL, AO_BASE + AO_HMAC_FILE},
    {"health-url", required_argument, NULL, AO_BASE + AO_HEALTH_URL},
    {"health-interval", required_argument, NULL, AO_BASE + AO_HEALTH_INTERVAL},
    {"schema-file", required_argument, NULL, AO_BASE + AO_SCHEMA_FILE},
    {"disabled", no_argument, NULL, AO_BASE + AO_DISABLED},
    {"version", required_argument, NULL, AO_BASE + AO_VERSION},
    {"env", required_argument, NULL, AO_BASE + AO_ENV},
    {"from", required_argument, NULL, AO_BASE + AO_FROM},
    {"to", required_argument, NULL, AO_BASE + AO_TO},
    {"bearer-token", required_argument, NULL, AO_BASE + AO_BEARER_ARGV},
    {"password", required_argument, NULL, AO_BASE + AO_PASSWORD_ARGV},
    {"hmac-secret", required_argument, NULL, AO_BASE + AO_HMAC_ARGV},
    {"help", no_argument, NULL, AO_BASE + AO_HELP},
    CTL_GLOBAL_OPTIONS,
    {NULL, 0, NULL, 0},
};

/* The flags that build create's document: none of them with --file. */
#define AO_DOC                                                                 \
	(AO_BIT(AO_ID) | AO_BIT(AO_NAME) | AO_BIT(AO_ENDPOINT) |               \
	    AO_BIT(AO_DESCRIPTION) | AO_BIT(AO_TIMEOUT_MS) |                   \
	    AO_BIT(AO_MAX_CONCURRENT) | AO_BIT(AO_BEARER_FILE) |               \
	    AO_BIT(AO_BASIC) | AO_BIT(AO_PASSWORD_FILE) |                      \
	    AO_BIT(AO_HMAC_FILE) | AO_BIT(AO_HEALTH_URL) |                     \
	    AO_BIT(AO_HEALTH_INTERVAL) | AO_BIT(AO_SCHEMA_FILE) |              \
	    AO_BIT(AO_DISABLED))

/* The options whose value may be "-", stdin: one of them at most. */
static const enum agents_opt agents_inputs[] = {
    AO_FILE, AO_SCHEMA_FILE, AO_BEARER_FILE, AO_PASSWORD_FILE, AO_HMAC_FILE};

/* The environments, in the order deployments are shown. */
static const char *const agents_envs[] = {
    "production", "staging", "development", NULL};

/* The options of one command line, as given. */
struct agents_args {
	const char *arg[AO_COUNT]; /* last value of each flag */
	int given[AO_COUNT];       /* 1: the flag was given */
	char **pos;                /* the positional arguments */
	int npos;                  /* entries in pos */
	char path[256];            /* "/agents/ID", or "/agents" without ID */
};

/*
 * One subcommand: what cmd.c reads of it (cmd.opts: AO_BIT()s of the
 * flags it takes, AO_OWNER for all; cmd.min_pos == cmd.max_pos: ID
 * [VERSION]), the flags it needs and how it runs.
 */
struct agents_cmd {
	struct cmd cmd; /* first: cmd.c hands back a pointer to it */
	int (*run)(const struct agents_args *a);
	unsigned long long need; /* AO_BIT()s of the flags it needs */
};

/* Looks the long name of option code c up, for messages. */
static const char *
agents_optname(int c)
{
	return cmd_optname(agents_options, c);
}

/* --- reading files and secrets --------------------------------------- */

/*
 * Reads a secret from the file of option opt (or stdin): its first line
 * without the line end and the blanks around it, as ctl_read_secret()
 * does.  Returns a new string the caller frees, or NULL after a message
 * (which names the file, never shows its content).
 */
static char *
agents_secret(const char *opt, const char *path)
{
	char *buf;

	if ((buf = ctl_read_input(opt, path)) == NULL)
		return NULL;
	if (ctl_first_line(buf) == 0) {
		log_warnx("--%s %s: no secret on its first line", opt, path);
		free(buf);
		return NULL;
	}
	return buf;
}

/*
 * Sets "input_schema" of doc to the JSON document of the file of
 * --schema-file, if it was given.  Returns 0, or CTL_EXIT_FAIL after a
 * message.
 */
static int
agents_set_schema(json_t *doc, const struct agents_args *a)
{
	const char *path = a->arg[AO_SCHEMA_FILE];
	json_error_t je;
	json_t *schema;
	char *text;

	if (!a->given[AO_SCHEMA_FILE])
		return 0;
	if ((text = ctl_read_input("schema-file", path)) == NULL)
		return CTL_EXIT_FAIL;
	schema = json_loads(text, JSON_DECODE_ANY, &je);
	free(text);
	if (schema == NULL) {
		log_warnx("--schema-file %s: not JSON: %s (line %d)", path,
		    je.text, je.line);
		return CTL_EXIT_FAIL;
	}
	api_set(doc, "input_schema", schema);
	return 0;
}

/* --- the documents create and add-version send ------------------------ */

/* Sets key of doc to the text of option opt, if it was given. */
static void
agents_set_str(json_t *doc, const struct agents_args *a, enum agents_opt opt,
    const char *key)
{
	if (a->given[opt])
		api_set(doc, key, json_string(a->arg[opt]));
}

/*
 * The auth object of the flags into *out (NULL: no auth flag), its
 * secret read from its file.  Returns 0, CTL_EXIT_USAGE or CTL_EXIT_FAIL
 * after a message.
 */
static int
agents_auth(const struct agents_args *a, json_t **out)
{
	int n = a->given[AO_BEARER_FILE] + a->given[AO_BASIC] +
	    a->given[AO_HMAC_FILE];
	enum agents_opt opt = AO_BEARER_FILE;
	const char *type = "bearer", *member = "token";
	char *secret;

	*out = NULL;
	if (n > 1)
		return ctl_usage_error("give only one of --bearer-token-file, "
		                       "--basic and --hmac-secret-file");
	if (a->given[AO_BASIC] != a->given[AO_PASSWORD_FILE])
		return ctl_usage_error("--basic USER and --password-file PATH "
		                       "go together");
	if (n == 0)
		return 0;
	if (a->given[AO_BASIC]) {
		opt = AO_PASSWORD_FILE;
		type = "basic";
		member = "password";
	} else if (a->given[AO_HMAC_FILE]) {
		opt = AO_HMAC_FILE;
		type = "hmac";
		member = "secret";
	}
	if ((secret = agents_secret(
	         agents_optname(AO_BASE + opt), a->arg[opt])) == NULL)
		return CTL_EXIT_FAIL;
	if ((*out = json_pack("{ss}", "type", type)) == NULL)
		fatalx("out of memory");
	if (a->given[AO_BASIC])
		api_set(*out, "username", json_string(a->arg[AO_BASIC]));
	api_set(*out, member, json_string(secret));
	free(secret);
	return 0;
}

/*
 * The health object of --health-url and --health-interval into *out
 * (NULL: none).  Returns 0 or CTL_EXIT_USAGE after a message.
 */
static int
agents_health_doc(const struct agents_args *a, json_t **out)
{
	char err[CV_ERRLEN];
	int64_t s;

	*out = NULL;
	if (!a->given[AO_HEALTH_URL]) {
		if (a->given[AO_HEALTH_INTERVAL])
			return ctl_usage_error(
			    "--health-interval needs --health-url");
		return 0;
	}
	if ((*out = json_pack("{ss}", "url", a->arg[AO_HEALTH_URL])) == NULL)
		fatalx("out of memory");
	if (!a->given[AO_HEALTH_INTERVAL])
		return 0;
	if (timefmt_duration(
	        a->arg[AO_HEALTH_INTERVAL], &s, err, sizeof(err)) == -1) {
		json_decref(*out);
		*out = NULL;
		return ctl_usage_error("--health-interval: %s", err);
	}
	api_set(*out, "interval_seconds", json_integer(s));
	return 0;
}

/*
 * Sets key of doc to the whole number of option opt, if it was given.
 * Returns 0 or CTL_EXIT_USAGE; the API checks the range.
 */
static int
agents_set_int(json_t *doc, const struct agents_args *a, enum agents_opt opt,
    const char *key)
{
	char flag[64];
	int64_t v;

	if (!a->given[opt])
		return 0;
	snprintf(flag, sizeof(flag), "--%s", agents_optname(AO_BASE + opt));
	if (ctl_parse_int(flag, a->arg[opt], INT64_MIN, INT64_MAX, &v) != 0)
		return CTL_EXIT_USAGE;
	api_set(doc, key, json_integer(v));
	return 0;
}

/*
 * Builds create's agent document from the flags into *out (the caller
 * owns it).  Returns 0, CTL_EXIT_USAGE or CTL_EXIT_FAIL after a message.
 */
static int
agents_doc(const struct agents_args *a, json_t **out)
{
	json_t *doc, *v;
	int rc;

	if (!a->given[AO_ID] || !a->given[AO_NAME] || !a->given[AO_ENDPOINT])
		return ctl_usage_error("agents create needs --id, --name and "
		                       "--endpoint, or --file");
	/* The members in the order of docs/agents.md. */
	doc = json_pack(
	    "{ssss}", "agent_id", a->arg[AO_ID], "name", a->arg[AO_NAME]);
	if (doc == NULL)
		fatalx("out of memory");
	agents_set_str(doc, a, AO_DESCRIPTION, "description");
	agents_set_str(doc, a, AO_ENDPOINT, "endpoint");
	if ((rc = agents_auth(a, &v)))
		goto fail;
	if (v != NULL)
		api_set(doc, "auth", v);
	if ((rc = agents_set_int(doc, a, AO_TIMEOUT_MS, "timeout_ms")) ||
	    (rc = agents_set_int(
	         doc, a, AO_MAX_CONCURRENT, "max_concurrent_requests")) ||
	    (rc = agents_health_doc(a, &v)))
		goto fail;
	if (v != NULL)
		api_set(doc, "health", v);
	if ((rc = agents_set_schema(doc, a)) != 0)
		goto fail;
	if (a->given[AO_DISABLED])
		api_set(doc, "enabled", json_false());
	*out = doc;
	return 0;
fail:
	json_decref(doc);
	return rc;
}

/*
 * For --dry-run: text with each secret of its "auth" object replaced by
 * AGENTS_MASK, as a new string the caller frees; NULL when text holds no
 * secret to hide (or is not JSON: the API would refuse it anyway, and it
 * is printed as it is).
 */
static char *
agents_masked(const char *text)
{
	static const char *const secrets[] = {"token", "password", "secret"};
	json_t *doc = json_loads(text, 0, NULL), *auth;
	char *s = NULL;
	int n = 0;

	auth = json_object_get(doc, "auth");
	for (size_t i = 0;
	     json_is_object(auth) && i < sizeof(secrets) / sizeof(*secrets);
	     i++)
		if (json_is_string(json_object_get(auth, secrets[i]))) {
			api_set(auth, secrets[i], json_string(AGENTS_MASK));
			n++;
		}
	if (n > 0 && (s = json_dumps(doc, JSON_COMPACT)) == NULL)
		fatalx("out of memory");
	json_decref(doc);
	return s;
}

/* --- showing answers ---------------------------------------------------- */

/* "production=1.2.0 staging=1.3.0": an agent's deployments, or "-". */
static const char *
agents_deployed(const json_t *deps, char *buf, size_t len)
{
	size_t off = 0;
	const char *v;

	buf[0] = '\0';
	for (size_t i = 0; agents_envs[i] != NULL && off < len; i++)
		if ((v = json_string_value(
		         json_object_get(deps, agents_envs[i]))) != NULL)
			off += snprintf(buf + off, len - off, "%s%s=%s",
			    off ? " " : "", agents_envs[i], v);
	return buf[0] ? buf : "-";
}

/* "yes", "no" or "-" for true, false and null (or missing). */
static const char *
agents_yes(const json_t *v)
{
	return json_is_true(v) ? "yes" : json_is_false(v) ? "no" : "-";
}

/* Prints a list of agents as the table of "agents list". */
static void
agents_table(const json_t *list)
{
	static const char *const hdr[] = {"AGENT", "OWNER", "NAME", "ENDPOINT",
	    "AUTH", "ENABLED", "HEALTHY", "DEPLOYED"};
	struct table *t = table_new(hdr, 8);
	char dep[512];
	const json_t *x;
	size_t i;

	json_array_foreach((json_t *)list, i, x)
	{
		const char *row[] = {
		    json_string_value(json_object_get(x, "agent_id")),
		    json_string_value(json_object_get(x, "owner")),
		    json_string_value(json_object_get(x, "name")),
		    json_string_value(json_object_get(x, "endpoint")),
		    json_string_value(
		        json_object_get(json_object_get(x, "auth"), "type")),
		    agents_yes(json_object_get(x, "enabled")),
		    agents_yes(json_object_get(x, "healthy")),
		    agents_deployed(
		        json_object_get(x, "deployments"), dep, sizeof(dep)),
		};
		table_add(t, row);
	}
	table_print(t, stdout);
	table_free(t);
}

/* Prints one agent as "key: value" lines, the useful keys first. */
static void
agents_show_agent(const json_t *x)
{
	static const char *const order[] = {"agent_id", "owner", "name",
	    "description", "endpoint", "auth", "enabled", "timeout_ms",
	    "max_concurrent_requests", "heartbeat_seconds", "health",
	    "input_schema", "deployments", "healthy", "health_error",
	    "health_checked_at", "created_by", "created_at", "updated_at",
	    NULL};
	json_t *copy = json_copy((json_t *)x);
	char dep[512];

	if (copy == NULL)
		fatalx("out of memory");
	if (json_is_object(json_object_get(x, "deployments")))
		api_set(copy, "deployments",
		    json_string(agents_deployed(
		        json_object_get(x, "deployments"), dep, sizeof(dep))));
	table_kv(copy, order, stdout);
	json_decref(copy);
}

/* "production,staging": a version's environments joined, or "-". */
static const char *
agents_envs_of(const json_t *v, char *buf, size_t len)
{
	const json_t *e;
	size_t i, off = 0;

	buf[0] = '\0';
	json_array_foreach(json_object_get(v, "environments"), i, e)
	{
		if (off < len && json_is_string(e))
			off += snprintf(buf + off, len - off, "%s%s",
			    off ? "," : "", json_string_value(e));
	}
	return buf[0] ? buf : "-";
}

/* Prints one version as "key: value" lines. */
static void
agents_show_version(const json_t *v)
{
	static const char *const order[] = {"agent_id", "version", "endpoint",
	    "environments", "description", "input_schema", "created_by",
	    "created_at", NULL};
	json_t *copy = json_copy((json_t *)v);
	char envs[256];

	if (copy == NULL)
		fatalx("out of memory");
	api_set(copy, "environments",
	    json_string(agents_envs_of(v, envs, sizeof(envs))));
	table_kv(copy, order, stdout);
	json_decref(copy);
}

/* Prints {"versions": [...]} as the table of "agents versions". */
static void
agents_show_versions(const json_t *doc)
{
	static const char *const hdr[] = {
	    "VERSION", "ENDPOINT", "ENVIRONMENTS", "CREATED"};
	struct table *t = table_new(hdr, 4);
	char envs[256];
	const json_t *v;
	size_t i;

	json_array_foreach(json_object_get(doc, "versions"), i, v)
	{
		const char *row[] = {
		    json_string_value(json_object_get(v, "version")),
		    json_string_value(json_object_get(v, "endpoint")),
		    agents_envs_of(v, envs, sizeof(envs)),
		    json_string_value(json_object_get(v, "created_at")),
		};
		table_add(t, row);
	}
	table_print(t, stdout);
	table_free(t);
}

/*
 * Prints the deployments of {"deployments": {ENV: {"version",
 * "deployed_by", "deployed_at"}}} one line per environment, aligned:
 * "production  1.2.0  alice (token 3)  2026-…".
 */
static void
agents_show_current(const json_t *doc)
{
	const json_t *deps = json_object_get(doc, "deployments"), *d;
	struct table *t = NULL;

	for (size_t i = 0; agents_envs[i] != NULL; i++) {
		if ((d = json_object_get(deps, agents_envs[i])) == NULL)
			continue;
		const char *row[] = {agents_envs[i],
		    json_string_value(json_object_get(d, "version")),
		    json_string_value(json_object_get(d, "deployed_by")),
		    json_string_value(json_object_get(d, "deployed_at"))};
		/* A table's first row is its header: here, the first line. */
		if (t == NULL)
			t = table_new(row, 4);
		else
			table_add(t, row);
	}
	if (t == NULL)
		printf("no version is deployed: jobs use the agent's own "
		       "endpoint\n");
	else
		table_print(t, stdout);
	table_free(t);
}

/* Prints the deployments, then the log (the newest first) as a table. */
static void
agents_show_deployments(const json_t *doc)
{
	static const char *const hdr[] = {
	    "AT", "ENVIRONMENT", "ACTION", "VERSION", "PREVIOUS", "BY"};
	const json_t *hist = json_object_get(doc, "history"), *h;
	struct table *t;
	size_t i;

	agents_show_current(doc);
	if (json_array_size(hist) == 0)
		return;
	t = table_new(hdr, 6);
	json_array_foreach(hist, i, h)
	{
		const char *row[] = {
		    json_string_value(json_object_get(h, "at")),
		    json_string_value(json_object_get(h, "environment")),
		    json_string_value(json_object_get(h, "action")),
		    json_string_value(json_object_get(h, "version")),
		    json_string_value(json_object_get(h, "previous")),
		    json_string_value(json_object_get(h, "by")),
		};
		table_add(t, row);
	}
	printf("\n");
	table_print(t, stdout);
	table_free(t);
}

/* Prints the probes of "agents health" as a table. */
static void
agents_probes(const json_t *probes)
{
	static const char *const hdr[] = {
	    "CHECKED", "OK", "HTTP", "LATENCY", "ERROR"};
	struct table *t = table_new(hdr, 5);
	char http[32], lat[32];
	const json_t *p, *ms;
	size_t i;

	json_array_foreach(probes, i, p)
	{
		ms = json_object_get(p, "latency_ms");
		if (json_is_integer(ms))
			snprintf(lat, sizeof(lat), "%lldms",
			    (long long)json_integer_value(ms));
		const char *row[] = {
		    json_string_value(json_object_get(p, "checked_at")),
		    agents_yes(json_object_get(p, "ok")),
		    table_text(
		        json_object_get(p, "http_status"), http, sizeof(http)),
		    json_is_integer(ms) ? lat : "-",
		    json_string_value(json_object_get(p, "error")),
		};
		table_add(t, row);
	}
	table_print(t, stdout);
	table_free(t);
}

/* Prints "agents health": the latest probe's outcome, then the probes. */
static void
agents_show_health(const json_t *doc)
{
	static const char *const order[] = {
	    "url", "healthy", "error", "checked_at", "next_at", NULL};
	const json_t *probes = json_object_get(doc, "probes");
	char b[64];
	json_t *kv;

	kv = json_pack("{ssssssssss}", "url",
	    table_text(json_object_get(doc, "url"), b, sizeof(b)), "healthy",
	    agents_yes(json_object_get(doc, "healthy")), "error",
	    json_is_string(json_object_get(doc, "error"))
	        ? json_string_value(json_object_get(doc, "error"))
	        : "-",
	    "checked_at",
	    json_is_string(json_object_get(doc, "checked_at"))
	        ? json_string_value(json_object_get(doc, "checked_at"))
	        : "-",
	    "next_at",
	    json_is_string(json_object_get(doc, "next_at"))
	        ? json_string_value(json_object_get(doc, "next_at"))
	        : "-");
	if (kv == NULL)
		fatalx("out of memory");
	table_kv(kv, order, stdout);
	json_decref(kv);
	if (json_array_size(probes) == 0) {
		printf("no probe yet\n");
		return;
	}
	printf("\n");
	agents_probes(probes);
}

/* --- the commands ----------------------------------------------------------
 */

/*
 * Sends method to a->path ("/agents" or "/agents/ID"), followed by
 * "/sub" unless sub is NULL, with ?owner= and the body text (NULL: none),
 * and shows the answer with show().  --dry-run prints text with its
 * secrets masked.
 */
static int
agents_send(const struct agents_args *a, const char *method, const char *sub,
    const char *text, void (*show)(const json_t *))
{
	const struct api_query q[] = {{"owner", a->arg[AO_OWNER]}};
	char *masked = ctl.dry_run && text ? agents_masked(text) : NULL;
	char path[300];
	json_t *doc;
	int rc;

	snprintf(path, sizeof(path), "%s%s%s", a->path, sub ? "/" : "",
	    sub ? sub : "");
	rc = api_request(method, path, q, 1, masked ? masked : text, &doc);
	free(masked);
	return api_output(rc, doc, show);
}

/* agents_send() with a JSON body (stolen; NULL: out of memory). */
static int
agents_send_json(const struct agents_args *a, const char *method,
    const char *sub, json_t *body, void (*show)(const json_t *))
{
	char *text;
	int rc;

	if (body == NULL || (text = json_dumps(body, JSON_COMPACT)) == NULL)
		fatalx("out of memory");
	json_decref(body);
	rc = agents_send(a, method, sub, text, show);
	free(text);
	return rc;
}

/* agents_send() with the file of --file as it is, the agent shown. */
static int
agents_send_file(const struct agents_args *a, const char *method)
{
	char *text;
	int rc;

	if ((text = ctl_read_input("file", a->arg[AO_FILE])) == NULL)
		return CTL_EXIT_FAIL;
	rc = agents_send(a, method, NULL, text, agents_show_agent);
	free(text);
	return rc;
}

/* "agents list": GET /agents with the filters, --all pages. */
static int
agents_list(const struct agents_args *a)
{
	const struct api_query q[] = {{"owner", a->arg[AO_OWNER]},
	    {"enabled", a->arg[AO_ENABLED]}, {"limit", a->arg[AO_LIMIT]}};
	const char *en = a->arg[AO_ENABLED];

	if (en != NULL && strcmp(en, "true") != 0 && strcmp(en, "false") != 0)
		return ctl_usage_error(
		    "--enabled: \"%s\" is not true or false", en);
	return api_list_print(
	    "/agents", q, 3, "agents", a->given[AO_ALL], agents_table);
}

/* "agents show ID": GET /agents/ID. */
static int
agents_show(const struct agents_args *a)
{
	return agents_send(a, "GET", NULL, NULL, agents_show_agent);
}

/*
 * "agents create": POST /agents with the document of --file as it is, or
 * the one the flags build.
 */
static int
agents_create(const struct agents_args *a)
{
	json_t *doc = NULL;
	int rc;

	if (a->given[AO_FILE]) {
		for (int o = 0; o < AO_COUNT; o++)
			if ((AO_DOC & AO_BIT(o)) && a->given[o])
				return ctl_usage_error(
				    "--file and --%s: the file is the whole "
				    "document",
				    agents_optname(AO_BASE + o));
		return agents_send_file(a, "POST");
	}
	if ((rc = agents_doc(a, &doc)) != 0)
		return rc;
	return agents_send_json(a, "POST", NULL, doc, agents_show_agent);
}

/* "agents update ID --file F": PATCH /agents/ID with the file. */
static int
agents_update(const struct agents_args *a)
{
	return agents_send_file(a, "PATCH");
}

/* "agents delete ID": DELETE /agents/ID, whose 204 has no body. */
static int
agents_delete(const struct agents_args *a)
{
	return api_delete_print(a->path, a->arg[AO_OWNER], "agent", a->pos[0]);
}

/* "agents versions ID": GET /agents/ID/versions. */
static int
agents_versions(const struct agents_args *a)
{
	return agents_send(a, "GET", "versions", NULL, agents_show_versions);
}

/* "agents add-version ID --version V --endpoint URL …". */
static int
agents_add_version(const struct agents_args *a)
{
	json_t *doc;
	int rc;

	doc = json_pack("{ssss}", "version", a->arg[AO_VERSION], "endpoint",
	    a->arg[AO_ENDPOINT]);
	if (doc == NULL)
		fatalx("out of memory");
	if ((rc = agents_set_schema(doc, a)) != 0) {
		json_decref(doc);
		return rc;
	}
	agents_set_str(doc, a, AO_DESCRIPTION, "description");
	return agents_send_json(
	    a, "POST", "versions", doc, agents_show_version);
}

/* "agents deploy ID VERSION --env ENV". */
static int
agents_deploy(const struct agents_args *a)
{
	return agents_send_json(a, "POST", "deploy",
	    json_pack(
	        "{ssss}", "version", a->pos[1], "environment", a->arg[AO_ENV]),
	    agents_show_current);
}

/* "agents promote ID --from ENV --to ENV". */
static int
agents_promote(const struct agents_args *a)
{
	return agents_send_json(a, "POST", "promote",
	    json_pack("{ssss}", "from", a->arg[AO_FROM], "to", a->arg[AO_TO]),
	    agents_show_current);
}

/* "agents rollback ID --env ENV". */
static int
agents_rollback(const struct agents_args *a)
{
	return agents_send_json(a, "POST", "rollback",
	    json_pack("{ss}", "environment", a->arg[AO_ENV]),
	    agents_show_current);
}

/* "agents deployments ID": the deployments and the log. */
static int
agents_deployments(const struct agents_args *a)
{
	return agents_send(
	    a, "GET", "deployments", NULL, agents_show_deployments);
}

/* "agents health ID": the latest probe and the last 100. */
static int
agents_health(const struct agents_args *a)
{
	return agents_send(a, "GET", "health", NULL, agents_show_health);
}

#define AGENTS_SECRET_USAGE                                                    \
	"Secrets are read from files (- reads stdin; the first line), never\n" \
	"from the command line, where every local user sees them in ps.\n"

static const struct agents_cmd agents_cmds[] = {
    {{"list", AO_BIT(AO_ENABLED) | AO_BIT(AO_LIMIT) | AO_BIT(AO_ALL), 0, 0,
         "usage: cronvisorctl agents list [--enabled true|false] [--limit N]\n"
         "           [--all] [--owner O]\n"
         "\n"
         "Lists agents by owner and id, one page (--limit, default 100) or\n"
         "--all of them.  An admin's token lists every owner's; --owner\n"
         "(admin tokens) one owner's.\n"},
        agents_list, 0},
    {{"show", 0, 1, 1,
         "usage: cronvisorctl agents show ID [--owner O]\n"
         "\n"
         "Shows an agent.  Its auth shows the type and whether a secret is\n"
         "set, never the secret.\n"},
        agents_show, 0},
    {{"create", AO_DOC | AO_BIT(AO_FILE), 0, 0,
         "usage: cronvisorctl agents create --id ID --name NAME --endpoint "
         "URL\n"
         "           [OPTIONS] [--owner O]\n"
         "       cronvisorctl agents create --file FILE.json [--owner O]\n"
         "\n"
         "Registers an agent and shows it.  --file sends the agent document\n"
         "of docs/agents.md as it is (- reads stdin), instead of the flags.\n"
         "--owner (admin tokens) creates it for another owner.\n"
         "\n"
         "  --description TEXT         what it does\n"
         "  --timeout-ms N             how long a job may take (ms)\n"
         "  --max-concurrent N         requests in flight at once (0: no "
         "limit)\n"
         "  --bearer-token-file PATH   auth: Authorization: Bearer, the "
         "token\n"
         "                             read from PATH\n"
         "  --basic USER --password-file PATH\n"
         "                             auth: basic, the password from PATH\n"
         "  --hmac-secret-file PATH    auth: HMAC-SHA256 signature, the key\n"
         "                             read from PATH\n"
         "  --health-url URL           probed by a GET (health.url)\n"
         "  --health-interval S        every S seconds (or 5m, 1h; default "
         "60)\n"
         "  --schema-file PATH         input_schema, a JSON Schema\n"
         "  --disabled                 takes no jobs until enabled\n"
         "\n" AGENTS_SECRET_USAGE},
        agents_create, 0},
    {{"update", AO_BIT(AO_FILE), 1, 1,
         "usage: cronvisorctl agents update ID --file PATCH.json [--owner O]\n"
         "\n"
         "Changes the fields the file names (a JSON patch, sent as it is;\n"
         "- reads stdin) and shows the agent.  An auth of the same type\n"
         "without its secret keeps the stored one.\n"},
        agents_update, AO_BIT(AO_FILE)},
    {{"delete", 0, 1, 1,
         "usage: cronvisorctl agents delete ID [--owner O]\n"
         "\n"
         "Deletes an agent with its versions and deployments; refused while\n"
         "a schedule targets it.\n"},
        agents_delete, 0},
    {{"versions", 0, 1, 1,
         "usage: cronvisorctl agents versions ID [--owner O]\n"
         "\n"
         "Lists an agent's versions, the newest first, with the\n"
         "environments each runs in.\n"},
        agents_versions, 0},
    {{"add-version",
         AO_BIT(AO_VERSION) | AO_BIT(AO_ENDPOINT) | AO_BIT(AO_SCHEMA_FILE) |
             AO_BIT(AO_DESCRIPTION),
         1, 1,
         "usage: cronvisorctl agents add-version ID --version V --endpoint "
         "URL\n"
         "           [--schema-file PATH] [--description D] [--owner O]\n"
         "\n"
         "Adds a version (MAJOR.MINOR.PATCH) with its own endpoint and input\n"
         "schema (- reads stdin).  Versions cannot change once added.\n"},
        agents_add_version, AO_BIT(AO_VERSION) | AO_BIT(AO_ENDPOINT)},
    {{"deploy", AO_BIT(AO_ENV), 2, 2,
         "usage: cronvisorctl agents deploy ID VERSION --env ENV [--owner "
         "O]\n"
         "\n"
         "Deploys a version in an environment (production, staging,\n"
         "development) and prints what each environment runs.\n"},
        agents_deploy, AO_BIT(AO_ENV)},
    {{"promote", AO_BIT(AO_FROM) | AO_BIT(AO_TO), 1, 1,
         "usage: cronvisorctl agents promote ID --from ENV --to ENV [--owner "
         "O]\n"
         "\n"
         "Deploys in one environment the version another one runs and\n"
         "prints what each environment runs.\n"},
        agents_promote, AO_BIT(AO_FROM) | AO_BIT(AO_TO)},
    {{"rollback", AO_BIT(AO_ENV), 1, 1,
         "usage: cronvisorctl agents rollback ID --env ENV [--owner O]\n"
         "\n"
         "Goes back, in one environment, to the version the current one\n"
         "replaced, and prints what each environment runs.\n"},
        agents_rollback, AO_BIT(AO_ENV)},
    {{"deployments", 0, 1, 1,
         "usage: cronvisorctl agents deployments ID [--owner O]\n"
         "\n"
         "Prints what each environment runs, then the log of deploys,\n"
         "promotions and rollbacks (the last 100, the newest first).\n"},
        agents_deployments, 0},
    {{"health", 0, 1, 1,
         "usage: cronvisorctl agents health ID [--owner O]\n"
         "\n"
         "Shows an agent's latest health probe, then its last 100 probes.\n"},
        agents_health, 0},
};

/*
 * Stores command option opt in a (struct agents_args), or refuses the
 * secret on the command line of --bearer-token, --password and
 * --hmac-secret.  Returns 0 or CTL_EXIT_USAGE.
 */
static int
agents_option(int opt, int argc, char **argv, void *args)
{
	struct agents_args *a = args;

	(void)argc;
	(void)argv;
	if (opt == AO_BEARER_ARGV || opt == AO_PASSWORD_ARGV ||
	    opt == AO_HMAC_ARGV)
		return ctl_usage_error(
		    "--%s: a secret on the command line shows in ps to every "
		    "local user; use --%s-file PATH (- reads stdin)",
		    agents_optname(AO_BASE + opt),
		    agents_optname(AO_BASE + opt));
	a->arg[opt] = optarg;
	a->given[opt] = 1;
	return 0;
}

/*
 * Checks what the options of c's command line need once all are read:
 * the flags c needs, one stdin at most, the positional arguments, an id
 * that can stand in a path.  Sets a->path.  Returns 0 or CTL_EXIT_USAGE
 * after a message.
 */
static int
agents_check(const struct cmd_group *g, const struct agents_cmd *c,
    struct agents_args *a)
{
	int stdin_users = 0;

	for (int o = 0; o < AO_COUNT; o++)
		if ((c->need & AO_BIT(o)) && !a->given[o])
			return ctl_usage_error("agents %s needs --%s",
			    c->cmd.name, agents_optname(AO_BASE + o));
	for (size_t i = 0; i < sizeof(agents_inputs) / sizeof(*agents_inputs);
	     i++)
		stdin_users += a->given[agents_inputs[i]] &&
		    strcmp(a->arg[agents_inputs[i]], "-") == 0;
	if (stdin_users > 1)
		return ctl_usage_error("only one file may be - (stdin)");
	if (cmd_check_pos(g, &c->cmd, a->pos, a->npos,
	        a->npos == 0 ? "the agent id" : "the version") != 0)
		return CTL_EXIT_USAGE;
	if (a->npos == 0) {
		snprintf(a->path, sizeof(a->path), "/agents");
		return 0;
	}
	if (ctl_check_id(a->pos[0]) != 0)
		return CTL_EXIT_USAGE;
	snprintf(a->path, sizeof(a->path), "/agents/%s", a->pos[0]);
	return 0;
}

/*
 * Parses the command line of subcommand c (argv[0] is its name) into
 * args (struct agents_args).  Returns 0, -1 for --help, or
 * CTL_EXIT_USAGE.
 */
static int
agents_parse(const struct cmd_group *g, const struct cmd *c, int argc,
    char **argv, void *args)
{
	struct agents_args *a = args;
	int rc;

	memset(a, 0, sizeof(*a));
	if ((rc = cmd_getopt(g, c, argc, argv, a)) != 0)
		return rc;
	a->pos = argv + optind;
	a->npos = argc - optind;
	return agents_check(g, (const struct agents_cmd *)c, a);
}

/* Runs subcommand c with what agents_parse() read into args. */
static int
agents_run(const struct cmd *c, void *args)
{
	return ((const struct agents_cmd *)c)->run(args);
}

static const struct cmd_group agents_group = {
    .name = "agents",
    .synopsis = "usage: cronvisorctl agents list|show|create|update|"
                "delete|versions|add-version|\n"
                "           deploy|promote|rollback|deployments|health "
                "...\n\n",
    CMD_TABLE(agents_cmds),
    .options = agents_options,
    .base = AO_BASE,
    .count = AO_COUNT,
    .help = AO_HELP,
    /* The secrets on the command line are refused by agents_option(),
     * whatever the command. */
    .always = AO_BIT(AO_OWNER) | AO_BIT(AO_BEARER_ARGV) |
        AO_BIT(AO_PASSWORD_ARGV) | AO_BIT(AO_HMAC_ARGV),
    .option = agents_option,
    .parse = agents_parse,
    .run = agents_run,
};

/* Entry point of "cronvisorctl agents"; argv[0] is "agents". */
int
agents_main(int argc, char **argv)
{
	struct agents_args a;

	return cmd_main(&agents_group, &a, argc, argv);
}
