/*
 * fuzz_mcp.c: libFuzzer target for `cronvisorctl mcp`'s handling of one
 * line of input (cli/mcp.c, mcp_line()): whatever the bytes, exactly one
 * answer for a request with an id and none for a notification, and never
 * a crash, leak or read out of bounds.  The REST API is a stand-in here
 * (api_request() and api_request_json() below): it answers every other
 * call with an object and refuses the rest, so that both ends of each
 * tool run.  The answers go to a memory stream whose lines are counted.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisorctl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int calls;

int
api_request(const char *method, const char *path, const struct api_query *q,
    size_t nq, const char *body, json_t **out)
{
	(void)method;
	(void)path;
	(void)q;
	(void)nq;
	(void)body;
	*out = NULL;
	if (calls++ % 2)
		return -1;
	*out = json_pack("{s:[]}", "schedules");
	return 0;
}

int
api_request_json(const char *method, const char *path,
    const struct api_query *q, size_t nq, const json_t *body, const char *key,
    json_t **out)
{
	(void)key;
	(void)body;
	return api_request(method, path, q, nq, NULL, out);
}

const char *
api_last_error(void)
{
	return "refused by the stand-in API";
}

void
api_cleanup(void)
{
}

int
ctl_usage_error(const char *fmt, ...)
{
	(void)fmt;
	return 2;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = NULL;
	size_t len = 0, lines = 0;
	json_t *msg =
	    json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	const char *v = json_string_value(json_object_get(msg, "jsonrpc"));
	int want = json_is_object(msg) && json_object_get(msg, "id") == NULL &&
	        json_is_string(json_object_get(msg, "method")) && v != NULL &&
	        strcmp(v, "2.0") == 0
	    ? 0
	    : -1;

	json_decref(msg);
	if ((mcp_out = open_memstream(&buf, &len)) == NULL)
		abort();
	mcp_line((const char *)data, size);
	fclose(mcp_out);
	mcp_out = NULL;
	for (size_t i = 0; i < len; i++)
		lines += buf[i] == '\n';
	/* a notification: no answer; anything else: at most one */
	if (lines > 1 || (want == 0 && lines != 0))
		abort();
	free(buf);
	return 0;
}
