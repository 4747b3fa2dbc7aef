/*
 * mcp.c: `cronvisorctl mcp`, scheduling tools for AI agents over the Model
 * Context Protocol (docs/cli.md, "mcp"): JSON-RPC 2.0 on stdin and stdout,
 * one message a line; logs and the API's refusals also go to stderr.
 * Every tool calls the REST API with the user's token (CRONVISOR_TOKEN,
 * --token-file), so roles and tenants hold as for any client: the server
 * has no powers of its own.  A tool's arguments are checked against its
 * input schema's required members and types before anything is sent (a
 * bad one is a tool error naming the argument); what the API refuses is a
 * tool error with the API's words (isError, not a protocol error: the
 * model reads it and can correct itself); an unknown tool, method or a
 * message that is not JSON-RPC is a protocol error.
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisorctl.h"

#define MCP_PROTOCOL "2025-06-18" /* the newest revision known */
#define MCP_LINE_MAX (4 * 1024 * 1024)

/* JSON-RPC's error codes. */
#define RPC_PARSE    (-32700)
#define RPC_INVALID  (-32600)
#define RPC_METHOD   (-32601)
#define RPC_PARAMS   (-32602)
#define RPC_INTERNAL (-32603)

static const char id_schema[] =
    "{\"type\": \"string\", \"description\": \"the schedule's id (a UUID)\"}";

/* The tools: name, description, input schema (JSON text). */
static const struct mcp_tool {
	const char *name;
	const char *description;
	const char *schema;
} tools[] = {
    {"create_schedule",
        "Create a schedule. `schedule` is the schedule document of the "
        "cronvisor API: name, one of interval_seconds, cron (with "
        "timezone) or at, and a target ({\"type\": \"http\", \"url\": ...}, "
        "{\"type\": \"agent\", \"agent\": ...}, ...); max_retries, "
        "timeout_seconds and the rest are optional. Returns the schedule "
        "as saved, with its id and next_run_at.",
        "{\"type\": \"object\", \"properties\": {"
        "\"schedule\": {\"type\": \"object\", \"description\": \"the "
        "schedule document (docs/schedules.md)\"},"
        "\"idempotency_key\": {\"type\": \"string\", \"description\": "
        "\"the same key again returns the first create's schedule "
        "instead of a second one\"}},"
        "\"required\": [\"schedule\"], \"additionalProperties\": false}"},
    {"list_schedules",
        "List the schedules the token may see, oldest first, a page at a "
        "time.",
        "{\"type\": \"object\", \"properties\": {"
        "\"status\": {\"type\": \"string\", \"enum\": [\"active\", "
        "\"paused\", \"done\", \"dead\"]},"
        "\"name\": {\"type\": \"string\", \"description\": \"a prefix of "
        "the name\"},"
        "\"limit\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": "
        "500},"
        "\"cursor\": {\"type\": \"string\", \"description\": \"next_cursor "
        "of the previous page\"}},"
        "\"additionalProperties\": false}"},
    {"pause_schedule", "Pause a schedule: no slot fires until it is resumed.",
        NULL},
    {"resume_schedule",
        "Resume a paused schedule from its next slot (missed slots follow "
        "its catch-up policy).",
        NULL},
    {"delete_schedule",
        "Delete a schedule and its history. A run in flight ends first.", NULL},
    {"preview_schedule",
        "What a schedule would do next, without saving or running "
        "anything: give `id` for a saved schedule, or `schedule` for a "
        "document not saved. Returns the first firing and, for a fan-out, "
        "its values and batches.",
        "{\"type\": \"object\", \"properties\": {"
        "\"id\": {\"type\": \"string\", \"description\": \"a saved "
        "schedule's id\"},"
        "\"schedule\": {\"type\": \"object\", \"description\": \"a "
        "schedule document\"}},"
        "\"additionalProperties\": false}"},
    {"list_runs",
        "List the runs of a schedule, newest first: status, times, exit "
        "code or HTTP status, error.",
        "{\"type\": \"object\", \"properties\": {"
        "\"schedule_id\": {\"type\": \"string\", \"description\": \"the "
        "schedule's id\"},"
        "\"status\": {\"type\": \"string\", \"enum\": [\"running\", "
        "\"waiting\", \"succeeded\", \"failed\", \"timed_out\", \"lost\", "
        "\"interrupted\", \"crashed\", \"protocol_error\", \"skipped\", "
        "\"missed\", \"expired\"]},"
        "\"limit\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": "
        "500},"
        "\"cursor\": {\"type\": \"string\"}},"
        "\"required\": [\"schedule_id\"], \"additionalProperties\": false}"},
};
#define NTOOLS (sizeof(tools) / sizeof(tools[0]))

/* A tool's input schema; the id-only tools share one. */
static json_t *
mcp_schema(const struct mcp_tool *t)
{
	json_t *s;

	if (t->schema != NULL)
		return json_loads(t->schema, 0, NULL);
	s = json_pack("{s:s, s:{s:o}, s:[s], s:b}", "type", "object",
	    "properties", "id", json_loads(id_schema, 0, NULL), "required",
	    "id", "additionalProperties", 0);
	return s;
}

FILE *mcp_out; /* where the answers go: stdout unless a test says */

/* Writes one message, a line. */
static void
mcp_send(json_t *msg)
{
	FILE *fp = mcp_out != NULL ? mcp_out : stdout;
	char *text = json_dumps(msg, JSON_COMPACT);

	if (text != NULL) {
		fputs(text, fp);
		fputc('\n', fp);
		fflush(fp);
		free(text);
	}
	json_decref(msg);
}

static void
mcp_result(json_t *id, json_t *result)
{
	mcp_send(json_pack(
	    "{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result));
}

static void
mcp_error(json_t *id, int code, const char *message)
{
	mcp_send(json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
	    id != NULL ? id : json_null(), "error", "code", code, "message",
	    message));
}

/* A tool's answer: text, and whether it is an error. */
static json_t *
mcp_text(const char *text, int is_error)
{
	return json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text",
	    "text", text, "isError", is_error);
}

/* A tool error whose text is printf's. */
static json_t *mcp_fail(const char *fmt, ...) CV_PRINTF(1, 2);

static json_t *
mcp_fail(const char *fmt, ...)
{
	char buf[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return mcp_text(buf, 1);
}

/*
 * Checks args against schema: an object; its required members present;
 * each member known (additionalProperties false) and of its type (and
 * enum, and integer bounds).  NULL if they fit, else the tool error.
 */
static json_t *
mcp_check(json_t *schema, json_t *args)
{
	json_t *props = json_object_get(schema, "properties"), *v, *p, *r;
	const char *k, *ty;
	size_t i;

	if (!json_is_object(args))
		return mcp_fail("arguments: expected an object");
	json_array_foreach(json_object_get(schema, "required"), i, r)
	{
		if (json_object_get(args, json_string_value(r)) == NULL)
			return mcp_fail("%s: required", json_string_value(r));
	}
	json_object_foreach(args, k, v)
	{
		if ((p = json_object_get(props, k)) == NULL)
			return mcp_fail("%s: not an argument of this tool", k);
		ty = json_string_value(json_object_get(p, "type"));
		if ((strcmp(ty, "string") == 0 && !json_is_string(v)) ||
		    (strcmp(ty, "object") == 0 && !json_is_object(v)) ||
		    (strcmp(ty, "integer") == 0 && !json_is_integer(v)))
			return mcp_fail("%s: expected a%s %s", k,
			    ty[0] == 'i' || ty[0] == 'o' ? "n" : "", ty);
		if (json_is_integer(v) &&
		    (json_integer_value(v) <
		            json_integer_value(json_object_get(p, "minimum")) ||
		        json_integer_value(v) >
		            json_integer_value(json_object_get(p, "maximum"))))
			return mcp_fail("%s: expected %lld to %lld", k,
			    (long long)json_integer_value(
			        json_object_get(p, "minimum")),
			    (long long)json_integer_value(
			        json_object_get(p, "maximum")));
		if (json_object_get(p, "enum") != NULL) {
			json_t *e;
			size_t j;
			int found = 0;

			json_array_foreach(json_object_get(p, "enum"), j, e)
			    found |= json_equal(e, v);
			if (!found)
				return mcp_fail("%s: \"%s\" is not one of the "
				                "allowed values",
				    k, json_string_value(v));
		}
	}
	return NULL;
}

/* An id a path may carry: a UUID's characters; NULL if fine. */
static json_t *
mcp_id(const char *name, const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n > 64 ||
	    id[strspn(id, "0123456789abcdefABCDEF-")] != '\0')
		return mcp_fail("%s: expected a schedule id (a UUID)", name);
	return NULL;
}

/* The API's answer as the tool's: its JSON, or its error's words. */
static json_t *
mcp_api(int rc, json_t *out)
{
	json_t *r;
	char *text;

	if (rc != 0) {
		json_decref(out);
		return mcp_fail("%s",
		    api_last_error()[0] ? api_last_error()
		                        : "the request failed");
	}
	text = out != NULL ? json_dumps(out, JSON_INDENT(2)) : strdup("{}");
	json_decref(out);
	r = mcp_text(text != NULL ? text : "{}", 0);
	free(text);
	return r;
}

/*
 * The query of a listing: each of names (NULL-terminated, at most 4) with
 * its argument, a string as it is and an integer in buf; absent ones
 * left out by the API client (value NULL).  Returns how many.
 */
static size_t
mcp_query(
    json_t *args, const char *const *names, struct api_query *q, char buf[][24])
{
	size_t n = 0;

	for (; names[n] != NULL; n++) {
		json_t *v = json_object_get(args, names[n]);

		q[n].name = names[n];
		q[n].value = json_string_value(v);
		if (json_is_integer(v)) {
			snprintf(buf[n], 24, "%lld",
			    (long long)json_integer_value(v));
			q[n].value = buf[n];
		}
	}
	return n;
}

/* Runs tool t with args (already checked); the tool's answer. */
static json_t *
mcp_call(const struct mcp_tool *t, json_t *args)
{
	const char *id = json_string_value(json_object_get(args, "id"));
	json_t *out = NULL, *bad;
	struct api_query q[4];
	char path[160], buf[4][24];
	int rc;

	if (id != NULL && (bad = mcp_id("id", id)) != NULL)
		return bad;
	if (strcmp(t->name, "create_schedule") == 0) {
		const char *key =
		    json_string_value(json_object_get(args, "idempotency_key"));

		/* a header's value: printable ASCII, as the API takes it */
		for (const char *c = key; c != NULL && *c; c++)
			if ((unsigned char)*c < 0x21 ||
			    (unsigned char)*c > 0x7e)
				return mcp_fail(
				    "idempotency_key: printable ASCII "
				    "only, no spaces");
		if (key != NULL && (key[0] == '\0' || strlen(key) > 255))
			return mcp_fail("idempotency_key: 1 to 255 characters");
		rc = api_request_json("POST", "/schedules", NULL, 0,
		    json_object_get(args, "schedule"),
		    json_string_value(json_object_get(args, "idempotency_key")),
		    &out);
		return mcp_api(rc, out);
	}
	if (strcmp(t->name, "list_schedules") == 0) {
		static const char *const names[] = {
		    "status", "name", "limit", "cursor", NULL};

		rc = api_request("GET", "/schedules", q,
		    mcp_query(args, names, q, buf), NULL, &out);
		return mcp_api(rc, out);
	}
	if (strcmp(t->name, "pause_schedule") == 0 ||
	    strcmp(t->name, "resume_schedule") == 0) {
		snprintf(path, sizeof(path), "/schedules/%s/%s", id,
		    t->name[0] == 'p' ? "pause" : "resume");
		rc = api_request("POST", path, NULL, 0, NULL, &out);
		return mcp_api(rc, out);
	}
	if (strcmp(t->name, "delete_schedule") == 0) {
		snprintf(path, sizeof(path), "/schedules/%s", id);
		rc = api_request("DELETE", path, NULL, 0, NULL, &out);
		return mcp_api(rc, out);
	}
	if (strcmp(t->name, "preview_schedule") == 0) {
		json_t *doc = json_object_get(args, "schedule");

		if ((id == NULL) == (doc == NULL))
			return mcp_fail(
			    "give id (a saved schedule) or schedule "
			    "(a document), one of them");
		if (id != NULL)
			snprintf(
			    path, sizeof(path), "/schedules/%s/preview", id);
		rc = api_request_json("POST",
		    id != NULL ? path : "/schedules/preview", NULL, 0, doc,
		    NULL, &out);
		return mcp_api(rc, out);
	}
	/* list_runs */
	{
		static const char *const names[] = {
		    "status", "limit", "cursor", NULL};
		const char *sid =
		    json_string_value(json_object_get(args, "schedule_id"));
		size_t nq = mcp_query(args, names, q, buf);

		if ((bad = mcp_id("schedule_id", sid)) != NULL)
			return bad;
		snprintf(path, sizeof(path), "/schedules/%s/runs", sid);
		rc = api_request("GET", path, q, nq, NULL, &out);
		return mcp_api(rc, out);
	}
}

/* tools/list's result. */
static json_t *
mcp_list(void)
{
	json_t *list = json_array();

	for (size_t i = 0; i < NTOOLS; i++)
		json_array_append_new(list,
		    json_pack("{s:s, s:s, s:o}", "name", tools[i].name,
		        "description", tools[i].description, "inputSchema",
		        mcp_schema(&tools[i])));
	return json_pack("{s:o}", "tools", list);
}

/* Handles one message (a request or a notification). */
static void
mcp_handle(json_t *msg)
{
	json_t *id = json_object_get(msg, "id");
	const char *method = json_string_value(json_object_get(msg, "method"));
	json_t *params = json_object_get(msg, "params");

	if (id != NULL && !json_is_string(id) && !json_is_integer(id)) {
		mcp_error(NULL, RPC_INVALID, "an id is a string or an integer");
		return;
	}
	if (!json_is_object(msg) ||
	    json_string_value(json_object_get(msg, "jsonrpc")) == NULL ||
	    strcmp(json_string_value(json_object_get(msg, "jsonrpc")), "2.0") !=
	        0 ||
	    method == NULL ||
	    (id != NULL && !json_is_string(id) && !json_is_integer(id))) {
		mcp_error(id, RPC_INVALID, "not a JSON-RPC 2.0 request");
		return;
	}
	if (id == NULL)
		return; /* a notification (notifications/initialized, ...) */
	if (strcmp(method, "initialize") == 0) {
		const char *v = json_string_value(
		    json_object_get(params, "protocolVersion"));

		/* the client's revision if this server knows it, else its own
		 */
		if (v == NULL ||
		    (strcmp(v, "2024-11-05") && strcmp(v, "2025-03-26") &&
		        strcmp(v, MCP_PROTOCOL)))
			v = MCP_PROTOCOL;
		mcp_result(id,
		    json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s}, s:s}",
		        "protocolVersion", v, "capabilities", "tools",
		        "listChanged", 0, "serverInfo", "name", "cronvisor",
		        "version", CV_VERSION, "instructions",
		        "Schedules of the cronvisor installation the token "
		        "belongs to: create, list, preview, pause, resume and "
		        "delete them, and read their runs. Times are RFC 3339, "
		        "in UTC unless a schedule's timezone says otherwise."));
	} else if (strcmp(method, "ping") == 0) {
		mcp_result(id, json_object());
	} else if (strcmp(method, "tools/list") == 0) {
		mcp_result(id, mcp_list());
	} else if (strcmp(method, "tools/call") == 0) {
		const char *name =
		    json_string_value(json_object_get(params, "name"));
		json_t *args = json_object_get(params, "arguments"), *bad,
		       *schema;
		size_t i;

		for (i = 0; name != NULL && i < NTOOLS; i++)
			if (strcmp(tools[i].name, name) == 0)
				break;
		if (name == NULL || i == NTOOLS) {
			mcp_error(id, RPC_PARAMS, "unknown tool");
			return;
		}
		if (args == NULL)
			args = json_object();
		else
			json_incref(args);
		schema = mcp_schema(&tools[i]);
		bad = mcp_check(schema, args);
		json_decref(schema);
		mcp_result(id, bad != NULL ? bad : mcp_call(&tools[i], args));
		json_decref(args);
	} else {
		mcp_error(id, RPC_METHOD, "method not found");
	}
}

/*
 * Handles one line of input (n bytes, not necessarily NUL-terminated): a
 * message, or a protocol error; a blank line is nothing.
 */
void
mcp_line(const char *line, size_t n)
{
	json_error_t je;
	json_t *msg;

	if (n > MCP_LINE_MAX) {
		mcp_error(NULL, RPC_INVALID, "message too long");
		return;
	}
	size_t blank = 0;

	while (blank < n && strchr(" \t\r\n", line[blank]) != NULL &&
	    line[blank] != '\0')
		blank++;
	if (blank == n)
		return;
	if ((msg = json_loadb(line, n, JSON_REJECT_DUPLICATES, &je)) == NULL) {
		mcp_error(NULL, RPC_PARSE, "not JSON");
		return;
	}
	if (json_is_array(msg))
		mcp_error(NULL, RPC_INVALID, "batches are not supported");
	else
		mcp_handle(msg);
	json_decref(msg);
}

int
mcp_main(int argc, char **argv)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (argc > 1 &&
	    (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		puts("usage: cronvisorctl [--url URL] [--token-file FILE] mcp\n"
		     "  serves the Model Context Protocol on stdin and stdout");
		return 0;
	}
	if (argc > 1)
		return ctl_usage_error("mcp takes no arguments");
	while ((n = getline(&line, &cap, stdin)) != -1)
		mcp_line(line, (size_t)n);
	free(line);
	api_cleanup();
	return 0;
}
