/*
 * schedules.c: "cronvisorctl schedules …", the schedule commands of the
 * REST API (docs/api.md): list, get, create, update, delete, pause, resume
 * and trigger.  create and update build the schedule document from flags,
 * one flag per field (the table sched_fields), or send a file as it is;
 * the CLI checks only what it needs to write JSON (numbers, durations,
 * JSON values) and leaves the schedule's validation to the API, so that
 * there is one truth about what a valid schedule is.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisorctl.h"

#define SCHED_HEADERS  64  /* most --header flags */
#define SCHED_IDS      500 /* most ids of one delete */
#define SCHED_PARALLEL 4   /* import's requests in flight: the API's threads */

/* The command-specific options; getopt_long returns SO_BASE + these. */
enum sched_opt {
	SO_NAME,         /* --name: name, or the list's name prefix */
	SO_DESCRIPTION,  /* --description */
	SO_EVERY,        /* --every DUR: an interval schedule */
	SO_CRON,         /* --cron EXPR: a cron schedule */
	SO_TZ,           /* --tz ZONE: timezone */
	SO_AT,           /* --at TIME: a once schedule */
	SO_REPEATS,      /* --repeats N: total_repeats */
	SO_RETRIES,      /* --retries N: max_retries */
	SO_BACKOFF,      /* --backoff NAME */
	SO_RETRY_DELAY,  /* --retry-delay DUR */
	SO_TIMEOUT,      /* --timeout DUR */
	SO_OVERLAP,      /* --overlap NAME */
	SO_CATCH_UP,     /* --catch-up NAME */
	SO_JITTER,       /* --jitter DUR */
	SO_START_AT,     /* --start-at TIME */
	SO_PAYLOAD,      /* --payload JSON */
	SO_WORKFLOW,     /* --workflow ID */
	SO_TRIGGER_NODE, /* --trigger-node ID */
	SO_OWNER,        /* --owner NAME: ?owner= (admin) */
	SO_EXEC,         /* --exec -- ARGV: an exec target */
	SO_HTTP,         /* --http METHOD URL: an http target */
	SO_HEADER,       /* --header 'K: V' of the http target */
	SO_BODY,         /* --body JSON of the http target */
	SO_FILE,         /* --file FILE: the document itself */
	SO_STATUS,       /* --status S (list filter) */
	SO_KIND,         /* --kind K (list filter) */
	SO_LIMIT,        /* --limit N (page size) */
	SO_ALL,          /* --all: follow next_cursor */
	SO_PREVIEW,      /* --preview N (get) */
	SO_PARALLEL,     /* --parallel N (import) */
	SO_KEY_PREFIX,   /* --key-prefix P (import) */
	SO_HELP,         /* --help */
	SO_COUNT,        /* number of options */
};
#define SO_BASE   0x200
#define SO_BIT(o) CMD_BIT(o)
_Static_assert(SO_COUNT <= 64, "a sched_opt mask has 64 bits");

static const struct option sched_options[] = {
    {"name", required_argument, NULL, SO_BASE + SO_NAME},
    {"description", required_argument, NULL, SO_BASE + SO_DESCRIPTION},
    {"every", required_argument, NULL, SO_BASE + SO_EVERY},
    {"cron", required_argument, NULL, SO_BASE + SO_CRON},
    {"tz", required_argument, NULL, SO_BASE + SO_TZ},
    {"at", required_argument, NULL, SO_BASE + SO_AT},
    {"repeats", required_argument, NULL, SO_BASE + SO_REPEATS},
    {"retries", required_argument, NULL, SO_BASE + SO_RETRIES},
    {"backoff", required_argument, NULL, SO_BASE + SO_BACKOFF},
    {"retry-delay", required_argument, NULL, SO_BASE + SO_RETRY_DELAY},
    {"timeout", required_argument, NULL, SO_BASE + SO_TIMEOUT},
    {"overlap", required_argument, NULL, SO_BASE + SO_OVERLAP},
    {"catch-up", required_argument, NULL, SO_BASE + SO_CATCH_UP},
    {"jitter", required_argument, NULL, SO_BASE + SO_JITTER},
    {"start-at", required_argument, NULL, SO_BASE + SO_START_AT},
    {"payload", required_argument, NULL, SO_BASE + SO_PAYLOAD},
    {"workflow", required_argument, NULL, SO_BASE + SO_WORKFLOW},
    {"trigger-node", required_argument, NULL, SO_BASE + SO_TRIGGER_NODE},
    {"owner", required_argument, NULL, SO_BASE + SO_OWNER},
    {"exec", no_argument, NULL, SO_BASE + SO_EXEC},
    {"http", required_argument, NULL, SO_BASE + SO_HTTP},
    {"header", required_argument, NULL, SO_BASE + SO_HEADER},
    {"body", required_argument, NULL, SO_BASE + SO_BODY},
    {"file", required_argument, NULL, SO_BASE + SO_FILE},
    {"status", required_argument, NULL, SO_BASE + SO_STATUS},
    {"kind", required_argument, NULL, SO_BASE + SO_KIND},
    {"limit", required_argument, NULL, SO_BASE + SO_LIMIT},
    {"all", no_argument, NULL, SO_BASE + SO_ALL},
    {"preview", required_argument, NULL, SO_BASE + SO_PREVIEW},
    {"parallel", required_argument, NULL, SO_BASE + SO_PARALLEL},
    {"key-prefix", required_argument, NULL, SO_BASE + SO_KEY_PREFIX},
    {"help", no_argument, NULL, SO_BASE + SO_HELP},
    CTL_GLOBAL_OPTIONS,
    {NULL, 0, NULL, 0},
};

/* How a flag's text becomes a JSON value of the document. */
enum sched_type {
	ST_STRING,   /* as it is */
	ST_INT,      /* a whole number */
	ST_DURATION, /* "90", "5m", "1h30m": seconds */
	ST_JSON,     /* any JSON value */
	ST_ID,       /* a number if it is all digits, else a string */
};

/* One document field set by one flag. */
struct sched_field {
	enum sched_opt opt; /* the flag */
	const char *field;  /* the document's field */
	enum sched_type type;
	const char *kind; /* timing flags: the kind they imply, else NULL */
};

static const struct sched_field sched_fields[] = {
    {SO_NAME, "name", ST_STRING, NULL},
    {SO_DESCRIPTION, "description", ST_STRING, NULL},
    {SO_EVERY, "interval_seconds", ST_DURATION, "interval"},
    {SO_CRON, "cron", ST_STRING, "cron"},
    {SO_AT, "at", ST_STRING, "once"},
    {SO_TZ, "timezone", ST_STRING, NULL},
    {SO_START_AT, "start_at", ST_STRING, NULL},
    {SO_REPEATS, "total_repeats", ST_INT, NULL},
    {SO_RETRIES, "max_retries", ST_INT, NULL},
    {SO_BACKOFF, "backoff", ST_STRING, NULL},
    {SO_RETRY_DELAY, "retry_delay_seconds", ST_DURATION, NULL},
    {SO_TIMEOUT, "timeout_seconds", ST_DURATION, NULL},
    {SO_OVERLAP, "overlap", ST_STRING, NULL},
    {SO_CATCH_UP, "catch_up", ST_STRING, NULL},
    {SO_JITTER, "jitter_seconds", ST_DURATION, NULL},
    {SO_PAYLOAD, "trigger_payload", ST_JSON, NULL},
    {SO_WORKFLOW, "workflow_id", ST_ID, NULL},
    {SO_TRIGGER_NODE, "trigger_node_id", ST_STRING, NULL},
};
#define SCHED_NFIELDS (sizeof(sched_fields) / sizeof(sched_fields[0]))

/* The options of one command line, as given. */
struct sched_args {
	const char *arg[SO_COUNT];         /* last value of each flag */
	int given[SO_COUNT];               /* 1: the flag was given */
	const char *header[SCHED_HEADERS]; /* --header values, in order */
	size_t nheader;                    /* entries in header */
	const char *http_url;              /* the URL after --http METHOD */
	char **pos;                        /* the positional arguments */
	int npos;                          /* entries in pos */
	char **argv;                       /* the words after "--" */
	int nargv;                         /* entries in argv */
};

/*
 * One subcommand: what cmd.c reads of it (cmd.opts: SO_BIT()s of the
 * flags it takes) and how it runs.
 */
struct sched_cmd {
	struct cmd cmd; /* first: cmd.c hands back a pointer to it */
	int (*run)(const struct sched_args *a);
};

#define SO_DOC                                                                 \
	(SO_BIT(SO_NAME) | SO_BIT(SO_DESCRIPTION) | SO_BIT(SO_EVERY) |         \
	    SO_BIT(SO_CRON) | SO_BIT(SO_TZ) | SO_BIT(SO_AT) |                  \
	    SO_BIT(SO_REPEATS) | SO_BIT(SO_RETRIES) | SO_BIT(SO_BACKOFF) |     \
	    SO_BIT(SO_RETRY_DELAY) | SO_BIT(SO_TIMEOUT) | SO_BIT(SO_OVERLAP) | \
	    SO_BIT(SO_CATCH_UP) | SO_BIT(SO_JITTER) | SO_BIT(SO_START_AT) |    \
	    SO_BIT(SO_PAYLOAD) | SO_BIT(SO_WORKFLOW) |                         \
	    SO_BIT(SO_TRIGGER_NODE) | SO_BIT(SO_EXEC) | SO_BIT(SO_HTTP) |      \
	    SO_BIT(SO_HEADER) | SO_BIT(SO_BODY) | SO_BIT(SO_FILE))

#define SCHED_DOC_USAGE                                                        \
	"timing (one of):\n"                                                   \
	"  --every DUR            every DUR: 300, 90s, 5m, 2h, 1d, 1h30m\n"    \
	"  --cron 'EXPR'          a cron expression (cronie's rules)\n"        \
	"  --at TIME              once, at an RFC 3339 time\n"                 \
	"  --tz ZONE              the IANA time zone (default UTC)\n"          \
	"  --start-at TIME        no slot before TIME\n"                       \
	"  --jitter DUR           random delay per slot, at most DUR\n"        \
	"target (one of; none: the configured receiver):\n"                    \
	"  --exec -- CMD ARGS...  run a command (everything after --)\n"       \
	"  --http METHOD URL      send an HTTP request\n"                      \
	"    --header 'K: V'      a request header (repeatable)\n"             \
	"    --body JSON          the request body\n"                          \
	"behaviour:\n"                                                         \
	"  --name NAME  --description TEXT  --repeats N  --retries N\n"        \
	"  --backoff exponential|linear|fixed  --retry-delay DUR\n"            \
	"  --timeout DUR  --overlap skip|allow|buffer_one\n"                   \
	"  --catch-up latest|all|none  --payload JSON\n"                       \
	"  --workflow ID  --trigger-node ID\n"                                 \
	"  --file FILE.json       send this document as it is (- = stdin)\n"

/* Looks the long name of option code c up, for messages. */
static const char *
sched_optname(int c)
{
	return cmd_optname(sched_options, c);
}

/*
 * Turns the text s of flag opt into a JSON value of the given type.
 * Returns 0 with *out set (the caller owns it), or CTL_EXIT_USAGE after
 * a message naming the flag.
 */
static int
sched_value(int opt, const char *s, enum sched_type type, json_t **out)
{
	const char *name = sched_optname(SO_BASE + opt);
	char err[CV_ERRLEN], flag[64];
	json_error_t je;
	int64_t v;

	snprintf(flag, sizeof(flag), "--%s", name);
	if (type == ST_STRING) {
		*out = json_string(s);
	} else if (type == ST_ID &&
	    (s[0] == '\0' || s[strspn(s, "0123456789")])) {
		*out = json_string(s);
	} else if (type == ST_INT || type == ST_ID ||
	    (type == ST_DURATION && s[0] && !s[strspn(s, "0123456789")])) {
		if (ctl_parse_int(flag, s, INT64_MIN, INT64_MAX, &v) != 0)
			return CTL_EXIT_USAGE;
		*out = json_integer(v);
	} else if (type == ST_DURATION) {
		if (timefmt_duration(s, &v, err, sizeof(err)) == -1)
			return ctl_usage_error("%s: %s", flag, err);
		*out = json_integer(v);
	} else if ((*out = json_loads(s, JSON_DECODE_ANY, &je)) == NULL) {
		return ctl_usage_error("%s: not JSON: %s", flag, je.text);
	}
	if (*out == NULL)
		fatalx("out of memory");
	return 0;
}

/*
 * Builds the target object of --exec or --http (NULL: neither) into
 * *out.  Returns 0 or CTL_EXIT_USAGE after a message.
 */
static int
sched_target(const struct sched_args *a, json_t **out)
{
	json_t *t, *argv, *hdrs, *body;

	*out = NULL;
	if (a->given[SO_EXEC] && a->given[SO_HTTP])
		return ctl_usage_error("give only one of --exec and --http");
	if (!a->given[SO_HTTP] && (a->nheader || a->given[SO_BODY]))
		return ctl_usage_error("--header and --body need --http");
	if (a->nargv > 0 && !a->given[SO_EXEC])
		return ctl_usage_error("the words after -- need --exec");
	if (a->given[SO_EXEC]) {
		if (a->nargv == 0)
			return ctl_usage_error("--exec needs the command after "
			                       "--: --exec -- CMD ARGS...");
		argv = json_array();
		for (int i = 0; i < a->nargv; i++)
			json_array_append_new(argv, json_string(a->argv[i]));
		*out = json_pack("{ssso}", "type", "exec", "argv", argv);
	} else if (a->given[SO_HTTP]) {
		hdrs = json_object();
		for (size_t i = 0; i < a->nheader; i++) {
			const char *h = a->header[i], *c = strchr(h, ':');
			if (c == NULL || c == h)
				return json_decref(hdrs),
				       ctl_usage_error("--header \"%s\": want "
				                       "'Name: value'",
				           h);
			char *name = strndup(h, (size_t)(c - h));
			if (name == NULL)
				fatal("strndup");
			c += 1 + strspn(c + 1, " \t");
			api_set(hdrs, name, json_string(c));
			free(name);
		}
		t = json_pack("{sssssssO}", "type", "http", "method",
		    a->arg[SO_HTTP], "url", a->http_url, "headers", hdrs);
		json_decref(hdrs);
		if (a->given[SO_BODY]) {
			if (sched_value(
			        SO_BODY, a->arg[SO_BODY], ST_JSON, &body))
				return json_decref(t), CTL_EXIT_USAGE;
			api_set(t, "body", body);
		}
		*out = t;
	}
	if ((a->given[SO_EXEC] || a->given[SO_HTTP]) && *out == NULL)
		fatalx("out of memory");
	return 0;
}

/*
 * Builds the document create and update send from the flags: the fields
 * of sched_fields that were given, the kind their timing flag implies,
 * and the target.  Returns 0 with *out set, or CTL_EXIT_USAGE.
 */
static int
sched_doc(const struct sched_args *a, json_t **out)
{
	const struct sched_field *f;
	json_t *doc = json_object(), *v;
	int timings = 0, rc;

	if (doc == NULL)
		fatalx("out of memory");
	for (size_t i = 0; i < SCHED_NFIELDS; i++) {
		f = &sched_fields[i];
		if (!a->given[f->opt])
			continue;
		if (f->kind != NULL && timings++ == 0)
			api_set(doc, "kind", json_string(f->kind));
		else if (f->kind != NULL)
			return json_decref(doc),
			       ctl_usage_error("give only one of --every, "
			                       "--cron and --at");
		if ((rc = sched_value(f->opt, a->arg[f->opt], f->type, &v)))
			return json_decref(doc), rc;
		api_set(doc, f->field, v);
	}
	if ((rc = sched_target(a, &v)) != 0)
		return json_decref(doc), rc;
	if (v != NULL)
		api_set(doc, "target", v);
	*out = doc;
	return 0;
}

/* A schedule or run id that can stand in a path as it is; else NULL. */
static const char *
sched_id(const char *id)
{
	static const char ok[] = "abcdefghijklmnopqrstuvwxyz"
	                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.";

	if (id[0] == '\0' || id[strspn(id, ok)] != '\0' ||
	    strcmp(id, ".") == 0 || strcmp(id, "..") == 0) {
		ctl_usage_error("\"%s\" is not a schedule id", id);
		return NULL;
	}
	return id;
}

/* "every 5m", "cron 0 9 * * 1-5 Europe/Paris", "at …": a timing, short. */
static const char *
sched_timing(const json_t *s, char *buf, size_t len)
{
	const char *kind = json_string_value(json_object_get(s, "kind"));
	const char *tz = json_string_value(json_object_get(s, "timezone"));
	json_t *iv = json_object_get(s, "interval_seconds");
	char d[64];

	if (kind != NULL && strcmp(kind, "interval") == 0)
		snprintf(buf, len, "every %s%s",
		    table_duration(json_integer_value(iv), d, sizeof(d)),
		    json_is_true(json_object_get(s, "anchor_completion")) ||
		            (json_is_string(json_object_get(s, "anchor")) &&
		                strcmp(json_string_value(
		                           json_object_get(s, "anchor")),
		                    "completion") == 0)
		        ? " after completion"
		        : "");
	else if (kind != NULL && strcmp(kind, "cron") == 0)
		snprintf(buf, len, "cron %s%s%s",
		    json_string_value(json_object_get(s, "cron")),
		    tz && strcmp(tz, "UTC") ? " " : "",
		    tz && strcmp(tz, "UTC") ? tz : "");
	else if (kind != NULL && strcmp(kind, "once") == 0)
		snprintf(buf, len, "at %s",
		    table_text(json_object_get(s, "at"), d, sizeof(d)));
	else
		snprintf(buf, len, "-");
	return buf;
}

/* Prints a list of schedules as the table of "schedules list". */
static void
sched_table(const json_t *list)
{
	static const char *const hdr[] = {"ID", "NAME", "KIND", "TIMING",
	    "STATUS", "NEXT RUN", "RUNS/ERRORS"};
	char timing[512], counts[64], b1[64], b2[64];
	struct table *t = table_new(hdr, 7);
	const json_t *s;
	size_t i;

	json_array_foreach((json_t *)list, i, s)
	{
		snprintf(counts, sizeof(counts), "%s/%s",
		    table_text(json_object_get(s, "run_count"), b1, sizeof(b1)),
		    table_text(
		        json_object_get(s, "error_count"), b2, sizeof(b2)));
		const char *row[] = {
		    json_string_value(json_object_get(s, "id")),
		    json_string_value(json_object_get(s, "name")),
		    json_string_value(json_object_get(s, "kind")),
		    sched_timing(s, timing, sizeof(timing)),
		    json_string_value(json_object_get(s, "status")),
		    json_string_value(json_object_get(s, "next_run_at")),
		    counts,
		};
		table_add(t, row);
	}
	table_print(t, stdout);
	table_free(t);
}

/* Prints one schedule as "key: value" lines, the useful keys first. */
static void
sched_show(const json_t *s)
{
	static const char *const order[] = {"id", "name", "description",
	    "owner", "status", "kind", "interval_seconds", "anchor", "cron",
	    "timezone", "at", "start_at", "next_run_at", "last_run_at",
	    "last_error", "run_count", "error_count", "runs_in_flight",
	    "current_repeat", "current_retry", "total_repeats", "max_retries",
	    "backoff", "retry_delay_seconds", "timeout_seconds", "overlap",
	    "catch_up", "max_catch_up_runs", "starting_deadline_seconds",
	    "jitter_seconds", "dst_gap", "dst_fold", "history_limit", "target",
	    "limits", "trigger_payload", "workflow_id", "trigger_node_id",
	    "organization_id", "environment_id", "created_at", "updated_at",
	    NULL};

	json_t *copy = json_copy((json_t *)s), *fire, *lines, *f;
	char line[256], b[64], b2[64];
	size_t i;

	/* The preview's fire times, one line each: UTC, local, DST note. */
	fire = json_object_get(s, "next_fire_times");
	if (copy != NULL && json_is_array(fire) && (lines = json_array())) {
		json_array_foreach(fire, i, f)
		{
			json_t *at = json_object_get(f, "at");
			json_t *note = json_object_get(f, "note");
			snprintf(line, sizeof(line), "%s  local %s%s%s",
			    table_text(at ? at : json_object_get(f, "utc"), b,
			        sizeof(b)),
			    table_text(
			        json_object_get(f, "local"), b2, sizeof(b2)),
			    json_is_string(note) ? "  " : "",
			    json_is_string(note) ? json_string_value(note)
			                         : "");
			json_array_append_new(lines, json_string(line));
		}
		json_object_set_new(copy, "next_fire_times", lines);
	}
	table_kv(copy ? copy : s, order, stdout);
	json_decref(copy);
}

/* "schedules list": the filters as query parameters, --all pages. */
static int
sched_list(const struct sched_args *a)
{
	const struct api_query q[] = {
	    {"status", a->arg[SO_STATUS]},
	    {"kind", a->arg[SO_KIND]},
	    {"workflow_id", a->arg[SO_WORKFLOW]},
	    {"name", a->arg[SO_NAME]},
	    {"owner", a->arg[SO_OWNER]},
	    {"limit", a->arg[SO_LIMIT]},
	};

	return api_list_print("/schedules", q, sizeof(q) / sizeof(q[0]),
	    "schedules", a->given[SO_ALL], sched_table);
}

/* "schedules get ID": the schedule and its next fire times. */
static int
sched_get(const struct sched_args *a)
{
	const struct api_query q[] = {{"preview", a->arg[SO_PREVIEW]}};
	char path[256];
	json_t *doc;
	int rc;

	if (sched_id(a->pos[0]) == NULL)
		return CTL_EXIT_USAGE;
	snprintf(path, sizeof(path), "/schedules/%s", a->pos[0]);
	rc = api_request("GET", path, q, 1, NULL, &doc);
	return api_output(rc, doc, sched_show);
}

/*
 * "schedules preview ID" or "schedules preview --file FILE": what the
 * next firing of a saved schedule, or the first of a document not saved,
 * would expand to (docs/orchestration.md).
 */
static int
sched_preview(const struct sched_args *a)
{
	char path[256], *text = NULL;
	json_t *doc = NULL;
	int rc;

	if ((a->npos == 1) == (a->given[SO_FILE] != 0))
		return ctl_usage_error(
		    "schedules preview takes a schedule id or --file, one of "
		    "them");
	if (a->npos == 1) {
		if (sched_id(a->pos[0]) == NULL)
			return CTL_EXIT_USAGE;
		snprintf(
		    path, sizeof(path), "/schedules/%s/preview", a->pos[0]);
	} else {
		snprintf(path, sizeof(path), "/schedules/preview");
		if ((text = ctl_read_input("file", a->arg[SO_FILE])) == NULL)
			return CTL_EXIT_FAIL;
	}
	rc = api_request("POST", path, NULL, 0, text, &doc);
	free(text);
	return api_output(rc, doc, ds_print_preview);
}

/*
 * "schedules create" and "schedules update ID": POST or PATCH the
 * document of --file as it is, or the one the flags build.
 */
static int
sched_write(const struct sched_args *a, const char *method, const char *path)
{
	const struct api_query q[] = {{"owner", a->arg[SO_OWNER]}};
	json_t *doc = NULL, *ans;
	char *text, key[API_KEY_LEN];
	int rc;

	if (a->given[SO_FILE]) {
		for (size_t i = 0; i < SCHED_NFIELDS; i++)
			if (a->given[sched_fields[i].opt])
				return ctl_usage_error(
				    "--file and --%s: the "
				    "file is the whole document",
				    sched_optname(
				        SO_BASE + sched_fields[i].opt));
		if (a->given[SO_EXEC] || a->given[SO_HTTP] || a->nargv)
			return ctl_usage_error("--file is the whole document: "
			                       "no --exec or --http with it");
		if ((text = ctl_read_input("file", a->arg[SO_FILE])) == NULL)
			return CTL_EXIT_FAIL;
	} else {
		if ((rc = sched_doc(a, &doc)) != 0)
			return rc;
		if ((text = json_dumps(doc, JSON_COMPACT)) == NULL)
			fatalx("out of memory");
		json_decref(doc);
	}
	/* A create may be sent again after a lost answer or a 503: the key
	 * makes the API answer with the first one's schedule. */
	if (strcmp(method, "POST") == 0) {
		if (api_key(key) == -1) {
			free(text);
			return CTL_EXIT_FAIL;
		}
		rc = api_request_key(method, path, q, 1, text, key, &ans);
	} else {
		rc = api_request(method, path, q, 1, text, &ans);
	}
	free(text);
	return api_output(rc, ans, sched_show);
}

/* "schedules create": POST /schedules. */
static int
sched_create(const struct sched_args *a)
{
	return sched_write(a, "POST", "/schedules");
}

/* "schedules update ID": PATCH /schedules/ID with the given fields. */
static int
sched_update(const struct sched_args *a)
{
	char path[256];

	if (sched_id(a->pos[0]) == NULL)
		return CTL_EXIT_USAGE;
	snprintf(path, sizeof(path), "/schedules/%s", a->pos[0]);
	return sched_write(a, "PATCH", path);
}

/* The file "schedules import" reads, one schedule document a line. */
struct sched_import {
	FILE *fp;         /* the file, or stdin */
	const char *name; /* its name in messages ("-": stdin) */
	const char *pfx;  /* Idempotency-Key prefix of this import */
	char *line;       /* getline()'s buffer */
	size_t cap;       /* its size */
	long lineno;      /* number of the last line read, from 1 */
	size_t bad;       /* lines refused before sending (not an object) */
	int read_error;   /* 1: reading the file failed */
};

/*
 * api_batch()'s source for "schedules import": the next line that holds
 * a JSON object, sent as it is, with the key PREFIX-LINE and the label
 * FILE:LINE.  Blank lines are skipped; a line that is not a JSON object
 * is reported with its number and counted in bad.  Returns 1, or 0 at
 * the end of the file.
 */
static int
sched_import_next(void *arg, struct api_item *it)
{
	struct sched_import *im = arg;
	json_error_t je;
	json_t *doc;
	ssize_t n;

	while ((n = getline(&im->line, &im->cap, im->fp)) != -1) {
		im->lineno++;
		while (n > 0 &&
		    (im->line[n - 1] == '\n' || im->line[n - 1] == '\r'))
			im->line[--n] = '\0';
		if (im->line[strspn(im->line, " \t")] == '\0')
			continue;
		if ((doc = json_loadb(im->line, (size_t)n, 0, &je)) == NULL ||
		    !json_is_object(doc)) {
			log_warnx("%s:%ld: not a JSON object%s%s", im->name,
			    im->lineno, doc ? "" : ": ", doc ? "" : je.text);
			json_decref(doc);
			im->bad++;
			continue;
		}
		json_decref(doc);
		if ((it->body = strdup(im->line)) == NULL)
			fatal("strdup");
		snprintf(
		    it->key, sizeof(it->key), "%s-%ld", im->pfx, im->lineno);
		snprintf(it->label, sizeof(it->label), "%s:%ld", im->name,
		    im->lineno);
		return 1;
	}
	if (ferror(im->fp)) {
		log_warn("%s: reading line %ld", im->name, im->lineno + 1);
		im->read_error = 1;
	}
	return 0;
}

/*
 * "schedules import FILE": POST /schedules once per line of FILE (JSON
 * lines; - reads stdin), --parallel at once, each with an Idempotency-
 * Key made of this import's prefix and the line number, so that a
 * request sent again (a lost answer, a 503) or a whole import run again
 * with the same --key-prefix creates nothing twice.  Prints the counts;
 * a failed line is reported with its number and the API's message.
 */
static int
sched_import(const struct sched_args *a)
{
	const struct api_query q[] = {{"owner", a->arg[SO_OWNER]}};
	struct sched_import im = {0};
	struct api_batch b = {0};
	char pfx[API_KEY_LEN];
	int64_t par = SCHED_PARALLEL;
	int rc;

	if (a->given[SO_PARALLEL] &&
	    ctl_parse_int("--parallel", a->arg[SO_PARALLEL], 1,
	        API_PARALLEL_MAX, &par) != 0)
		return CTL_EXIT_USAGE;
	if (a->given[SO_KEY_PREFIX])
		im.pfx = a->arg[SO_KEY_PREFIX];
	else if (api_key(pfx) == -1)
		return CTL_EXIT_FAIL;
	else
		im.pfx = pfx;
	im.name = a->pos[0];
	if (strcmp(im.name, "-") == 0)
		im.fp = stdin;
	else if ((im.fp = fopen(im.name, "re")) == NULL) {
		log_warn("%s", im.name);
		return CTL_EXIT_FAIL;
	}
	b = (struct api_batch){.method = "POST",
	    .path = "/schedules",
	    .q = q,
	    .nq = 1,
	    .parallel = (int)par,
	    .next = sched_import_next,
	    .arg = &im};
	/* Nothing read: --url or --token is missing (said so). */
	if ((rc = api_batch(&b)) == -1 && im.lineno == 0 && !b.stopped) {
		if (im.fp != stdin)
			fclose(im.fp);
		return CTL_EXIT_FAIL;
	}
	if (b.stopped)
		log_warnx("%s: stopped after line %ld; run the import again "
		          "with --key-prefix %s to send the rest without "
		          "creating any schedule twice",
		    im.name, im.lineno, im.pfx);
	if (ctl.json && !ctl.dry_run)
		printf("{\"created\": %zu, \"failed\": %zu, \"lines\": %ld}\n",
		    b.done, b.failed + im.bad, im.lineno);
	else if (!ctl.dry_run)
		printf("%s: %zu created, %zu failed\n", im.name, b.done,
		    b.failed + im.bad);
	if (im.fp != stdin)
		fclose(im.fp);
	free(im.line);
	return rc == 0 && im.bad == 0 && !im.read_error ? CTL_EXIT_OK
	                                                : CTL_EXIT_FAIL;
}

/* Prints the answer of a delete for people: the ids that went. */
static void
sched_show_deleted(const json_t *doc)
{
	const json_t *id;
	size_t i;

	json_array_foreach(json_object_get(doc, "deleted"), i, id)
	    printf("deleted %s\n", json_string_value(id));
}

/*
 * "schedules delete ID...": one id is a DELETE, several a batch-delete
 * (all or nothing).  Either way --json prints {"deleted": [...],
 * "count": N}, the batch's answer, made up for the single DELETE (whose
 * answer, a 204, has no body).
 */
static int
sched_delete(const struct sched_args *a)
{
	json_t *ids = json_array(), *doc = NULL, *body;
	char path[256];
	int rc;

	for (int i = 0; i < a->npos; i++) {
		if (sched_id(a->pos[i]) == NULL)
			return json_decref(ids), CTL_EXIT_USAGE;
		json_array_append_new(ids, json_string(a->pos[i]));
	}
	if (a->npos == 1) {
		snprintf(path, sizeof(path), "/schedules/%s", a->pos[0]);
		rc = api_request("DELETE", path, NULL, 0, NULL, &doc);
		json_decref(doc);
		doc = rc == 0 ? json_pack("{sOsi}", "deleted", ids, "count", 1)
		              : NULL;
	} else {
		body = json_pack("{sO}", "ids", ids);
		rc = api_request_json("POST", "/schedules/batch-delete", NULL,
		    0, body, NULL, &doc);
		json_decref(body);
	}
	json_decref(ids);
	return api_output(rc, doc, sched_show_deleted);
}

/* Prints the schedule pause or resume returns, in one line. */
static void
sched_show_status(const json_t *s)
{
	printf("schedule %s is %s\n",
	    json_string_value(json_object_get(s, "id")),
	    json_string_value(json_object_get(s, "status")));
}

/* "schedules pause|resume ID": POST /schedules/ID/pause|resume. */
static int
sched_state(const struct sched_args *a, const char *verb)
{
	char path[256];
	json_t *doc;
	int rc;

	if (sched_id(a->pos[0]) == NULL)
		return CTL_EXIT_USAGE;
	snprintf(path, sizeof(path), "/schedules/%s/%s", a->pos[0], verb);
	rc = api_request("POST", path, NULL, 0, NULL, &doc);
	return api_output(rc, doc, sched_show_status);
}

/* "schedules pause ID". */
static int
sched_pause(const struct sched_args *a)
{
	return sched_state(a, "pause");
}

/* "schedules resume ID". */
static int
sched_resume(const struct sched_args *a)
{
	return sched_state(a, "resume");
}

/* Prints the answer of a trigger: the id the run will have. */
static void
sched_show_trigger(const json_t *t)
{
	printf("triggered %s: run %s\n",
	    json_string_value(json_object_get(t, "schedule_id")),
	    json_string_value(json_object_get(t, "run_id")));
}

/* "schedules trigger ID [--payload JSON]": one run now. */
static int
sched_trigger(const struct sched_args *a)
{
	json_t *body = NULL, *payload, *doc;
	char path[256], key[API_KEY_LEN];
	int rc;

	if (sched_id(a->pos[0]) == NULL)
		return CTL_EXIT_USAGE;
	if (a->given[SO_PAYLOAD]) {
		rc = sched_value(
		    SO_PAYLOAD, a->arg[SO_PAYLOAD], ST_JSON, &payload);
		if (rc != 0)
			return rc;
		body = json_pack("{so}", "payload", payload);
	}
	snprintf(path, sizeof(path), "/schedules/%s/trigger", a->pos[0]);
	/* Sent again after a lost answer or a 503, the key makes the API
	 * answer with the first one's run instead of starting a second. */
	if (api_key(key) == -1) {
		json_decref(body);
		return CTL_EXIT_FAIL;
	}
	rc = api_request_json("POST", path, NULL, 0, body, key, &doc);
	json_decref(body);
	return api_output(rc, doc, sched_show_trigger);
}

static const struct sched_cmd sched_cmds[] = {
    {{"list",
         SO_BIT(SO_STATUS) | SO_BIT(SO_KIND) | SO_BIT(SO_WORKFLOW) |
             SO_BIT(SO_NAME) | SO_BIT(SO_OWNER) | SO_BIT(SO_LIMIT) |
             SO_BIT(SO_ALL),
         0, 0,
         "usage: cronvisorctl schedules list [--status S] [--kind K]\n"
         "           [--workflow ID] [--name PREFIX] [--owner O] [--limit N]\n"
         "           [--all]\n"
         "\n"
         "Lists schedules, oldest first, one page (--limit, default 100) or\n"
         "--all of them.  --owner is for admin tokens.\n"},
        sched_list},
    {{"get", SO_BIT(SO_PREVIEW), 1, 1,
         "usage: cronvisorctl schedules get ID [--preview N]\n"
         "\n"
         "Shows a schedule and its next N fire times (default 5).\n"},
        sched_get},
    {{"preview", SO_BIT(SO_FILE), 0, 1,
         "usage: cronvisorctl schedules preview ID\n"
         "       cronvisorctl schedules preview --file FILE.json\n"
         "\n"
         "Shows what the next firing of a schedule (or the first of a\n"
         "document not saved) would expand to: its data-source param's\n"
         "values and batches with when each starts.  Creates nothing.\n"},
        sched_preview},
    {{"create", SO_DOC | SO_BIT(SO_OWNER), 0, 0,
         "usage: cronvisorctl schedules create --name NAME TIMING [TARGET]\n"
         "           [OPTIONS] [--owner O]\n"
         "       cronvisorctl schedules create --file FILE.json [--owner O]\n"
         "\n"
         "Creates a schedule and shows it.  --owner (admin tokens) creates\n"
         "it for another owner.\n"
         "\n" SCHED_DOC_USAGE},
        sched_create},
    {{"import", SO_BIT(SO_OWNER) | SO_BIT(SO_PARALLEL) | SO_BIT(SO_KEY_PREFIX),
         1, 1,
         "usage: cronvisorctl schedules import FILE [--parallel N]\n"
         "           [--key-prefix P] [--owner O]\n"
         "\n"
         "Creates one schedule per line of FILE (JSON lines: one schedule\n"
         "document per line, as for create --file; blank lines are skipped;\n"
         "- reads stdin), N requests at once (default 4, at most 32) over\n"
         "kept-alive connections, and prints how many were created and how\n"
         "many failed.  Each failed line is reported as FILE:LINE: with the\n"
         "API's message and field; the others are still sent, and the exit\n"
         "status is then 1.  Each request carries the Idempotency-Key P-LINE\n"
         "(P: random unless --key-prefix gives it) and is sent again, with\n"
         "the same key, after a transport failure or a 502/503/504 (up to 5\n"
         "times, 0.2 s doubling): an import run again with the same\n"
         "--key-prefix creates nothing twice.\n"},
        sched_import},
    {{"update", SO_DOC, 1, 1,
         "usage: cronvisorctl schedules update ID [FLAGS]\n"
         "       cronvisorctl schedules update ID --file PATCH.json\n"
         "\n"
         "Changes only the fields the flags name (a PATCH) and shows the\n"
         "schedule.  A timing flag changes the kind too; --exec or --http\n"
         "replaces the whole target.\n"
         "\n" SCHED_DOC_USAGE},
        sched_update},
    {{"delete", 0, 1, SCHED_IDS,
         "usage: cronvisorctl schedules delete ID...\n"
         "\n"
         "Deletes schedules and their history; with several ids, all or\n"
         "none of them.  Runs in flight finish.\n"},
        sched_delete},
    {{"pause", 0, 1, 1,
         "usage: cronvisorctl schedules pause ID\n"
         "\n"
         "Pauses an active schedule; runs in flight finish.\n"},
        sched_pause},
    {{"resume", 0, 1, 1,
         "usage: cronvisorctl schedules resume ID\n"
         "\n"
         "Resumes a paused schedule from now on (the paused window is not\n"
         "replayed).\n"},
        sched_resume},
    {{"trigger", SO_BIT(SO_PAYLOAD), 1, 1,
         "usage: cronvisorctl schedules trigger ID [--payload JSON]\n"
         "\n"
         "Runs the schedule once, now, outside its slots; --payload\n"
         "replaces its trigger_payload for this run.  Sent again after a\n"
         "transport failure or a 502/503/504 with the same Idempotency-Key,\n"
         "it never starts a second run.\n"},
        sched_trigger},
};

/*
 * Stores command option opt in a (struct sched_args): --header in the
 * list of headers as well, --http with the URL after its METHOD.
 * Returns 0 or CTL_EXIT_USAGE.
 */
static int
sched_option(int opt, int argc, char **argv, void *args)
{
	struct sched_args *a = args;

	if (opt == SO_HEADER) {
		if (a->nheader == SCHED_HEADERS)
			return ctl_usage_error(
			    "more than %d --header", SCHED_HEADERS);
		a->header[a->nheader++] = optarg;
	}
	if (opt == SO_HTTP) {
		if (optind >= argc || argv[optind][0] == '-')
			return ctl_usage_error("--http needs METHOD URL");
		a->http_url = argv[optind++];
	}
	a->arg[opt] = optarg;
	a->given[opt] = 1;
	return 0;
}

/*
 * Parses the command line of subcommand c (argv[0] is its name) into
 * args (struct sched_args).  The words after the first "--" are --exec's
 * command and never options.  Returns 0, -1 for --help, or
 * CTL_EXIT_USAGE.
 */
static int
sched_parse(const struct cmd_group *g, const struct cmd *c, int argc,
    char **argv, void *args)
{
	struct sched_args *a = args;
	int n = 1, rc;

	memset(a, 0, sizeof(*a));
	while (n < argc && strcmp(argv[n], "--") != 0)
		n++;
	a->argv = argv + (n < argc ? n + 1 : argc);
	a->nargv = n < argc ? argc - n - 1 : 0;
	if ((rc = cmd_getopt(g, c, n, argv, a)) != 0)
		return rc;
	a->pos = argv + optind;
	a->npos = n - optind;
	if (a->nargv > 0 && !(c->opts & SO_BIT(SO_EXEC)))
		return ctl_usage_error(
		    "schedules %s: unexpected \"%s\" after --", c->name,
		    a->argv[0]);
	return cmd_check_pos(g, c, a->pos, a->npos,
	    c->min_pos == 1 ? "the schedule id" : "arguments");
}

/* Runs subcommand c with what sched_parse() read into args. */
static int
sched_run(const struct cmd *c, void *args)
{
	return ((const struct sched_cmd *)c)->run(args);
}

static const struct cmd_group sched_group = {
    .name = "schedules",
    .synopsis = "usage: cronvisorctl schedules list|get|create|import|"
                "update|delete|pause|resume|trigger ...\n\n",
    CMD_TABLE(sched_cmds),
    .options = sched_options,
    .base = SO_BASE,
    .count = SO_COUNT,
    .help = SO_HELP,
    .option = sched_option,
    .parse = sched_parse,
    .run = sched_run,
};

/* Entry point of "cronvisorctl schedules"; argv[0] is "schedules". */
int
schedules_main(int argc, char **argv)
{
	struct sched_args a;

	return cmd_main(&sched_group, &a, argc, argv);
}
