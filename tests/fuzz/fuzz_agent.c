/*
 * fuzz_agent.c: libFuzzer target for the agent document of common/agent.c.
 * The input is split at its first NUL into an agent body and a PATCH body
 * (no NUL: an empty patch).  Whatever parses must give its row's columns
 * and the API's view (with no member that holds a secret), read back from
 * its columns to the same columns, take its own body as a PATCH without
 * change, and then take the patch or refuse it with an error.  The body is
 * also read as a version document.  Everything is freed: ASan's leak
 * check runs at exit.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisor.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t len);

/* Aborts unless a refusal says what and why. */
static void
refused(const struct schedule_error *e)
{
	if (e->code[0] == '\0' || e->message[0] == '\0')
		abort();
}

/* The API's view of d: never a member that would hold the secret. */
static void
check_view(const struct agent_doc *d)
{
	json_t *j = agent_to_json(d), *auth;

	if (j == NULL)
		abort();
	auth = json_object_get(j, "auth");
	if (json_object_get(auth, "token") ||
	    json_object_get(auth, "password") ||
	    json_object_get(auth, "secret") ||
	    json_object_get(j, "auth_secret"))
		abort();
	json_decref(j);
}

/*
 * d through its row: the columns read back by agent_from_row() give the
 * same columns, and that copy patched with the body it came from is
 * unchanged.
 */
static void
check_row(const struct agent_doc *d, const char *body, size_t len)
{
	struct agent_doc r;
	struct schedule_error e;
	json_t *c = agent_columns(d), *c2;

	if (c == NULL || agent_from_row(c, &r, &e) == -1)
		abort();
	if (agent_patch(&r, body, len, &e) == -1)
		abort();
	c2 = agent_columns(&r);
	if (c2 == NULL || !json_equal(c, c2))
		abort();
	json_decref(c2);
	json_decref(c);
	agent_clear(&r);
}

static void
fuzz_version(const char *body, size_t len)
{
	struct agent_version v;
	struct schedule_error e;

	if (agent_version_parse(body, len, &v, &e) == -1) {
		refused(&e);
		return;
	}
	if (v.version == NULL || v.endpoint == NULL ||
	    !agent_version_ok(v.version))
		abort();
	agent_version_clear(&v);
}

/*
 * An agent's report and heartbeat (agent_report_parse()): refused with a
 * code and a message, or read into JSON texts that jansson reads back.
 */
static void
fuzz_report(const char *body, size_t len)
{
	struct agent_report r;
	struct schedule_error e;
	json_t *v;

	for (int beat = 0; beat < 2; beat++) {
		if (agent_report_parse(body, len, beat, &r, &e) == -1) {
			refused(&e);
			continue;
		}
		if ((beat && r.status) || (!beat && r.status == NULL))
			abort();
		if (r.result != NULL) {
			if ((v = json_loads(r.result, JSON_DECODE_ANY, NULL)) ==
			    NULL)
				abort();
			json_decref(v);
		}
		if (r.error != NULL) {
			if ((v = json_loads(r.error, 0, NULL)) == NULL ||
			    !json_is_object(v))
				abort();
			json_decref(v);
		}
		agent_report_clear(&r);
	}
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t len)
{
	const char *body = (const char *)data, *patch = "";
	const unsigned char *nul = memchr(data, '\0', len);
	size_t blen = len, plen = 0;
	struct agent_doc d;
	struct schedule_error e;

	if (nul != NULL) {
		blen = (size_t)(nul - data);
		patch = (const char *)nul + 1;
		plen = len - blen - 1;
	}
	fuzz_version(body, blen);
	fuzz_report(body, blen);
	if (agent_parse(body, blen, &d, &e) == -1) {
		refused(&e);
		return 0;
	}
	if (!agent_slug_ok(d.agent_id))
		abort();
	check_view(&d);
	check_row(&d, body, blen);
	if (agent_patch(&d, patch, plen, &e) == -1)
		refused(&e);
	else
		check_view(&d);
	agent_clear(&d);
	return 0;
}
