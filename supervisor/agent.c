/*
 * agent.c: the supervisor's side of agent targets (docs/agents.md).  The
 * request to an agent is an HTTP run, made by a forked runner under the
 * same isolation and host lists as an http target's; what is particular
 * is here: the request (its body, the job's headers, the agent's auth,
 * the callback token), the verdict of the agent's answer (202 leaves the
 * attempt waiting for a report; 408, 429 and 5xx are retried, any other
 * 4xx is final), and the end of an attempt taken back from waiting, whose
 * report (or expiry) stands in for a runner's result.
 */
#include <sys/random.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "cronvisord.h"

/*
 * A callback token: AGENT_TOKEN_LEN hex characters from getrandom().  0,
 * or -1 (buf holds len >= AGENT_TOKEN_LEN + 1 bytes).
 */
int
agent_token(char *buf, size_t len)
{
	unsigned char raw[AGENT_TOKEN_LEN / 2];
	size_t got = 0;
	ssize_t n;

	if (len < AGENT_TOKEN_LEN + 1)
		return -1;
	while (got < sizeof(raw)) {
		if ((n = getrandom(raw + got, sizeof(raw) - got, 0)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(buf + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

static const char *
val(const struct db_rows *rows, int row, int col)
{
	return db_rows_value(rows, row, col);
}

static int
is_true(const char *v)
{
	return v != NULL && strcmp(v, "t") == 0;
}

/* The JSON body of the request; NULL out of memory (err says why else). */
static char *
request_body(const struct job *j, const struct db_rows *rows, int row,
    const char *token, json_t *params, const struct config *cf)
{
	const char *job = val(rows, row, CLAIM_AGENT_COL_JOB);
	const char *hb = val(rows, row, CLAIM_AGENT_COL_HEARTBEAT);
	const char *base = cf->agent_callback_url;
	char complete[2048 + 128],
	    beat[2048 + 128]; /* config.c: URLs of 2048 */
	json_t *body;
	char *out;

	snprintf(complete, sizeof(complete), "%s/jobs/%s/complete", base, job);
	snprintf(beat, sizeof(beat), "%s/jobs/%s/heartbeat", base, job);
	body = json_pack("{s:s, s:s, s:s, s:s, s:s?, s:I, s:O, s:{s:o, s:o, "
	                 "s:s, s:s, s:o}}",
	    "jobId", job, "executionId",
	    val(rows, row, CLAIM_AGENT_COL_EXECUTION), "scheduleId",
	    val(rows, row, CLAIM_AGENT_COL_SCHEDULE), "runId", j->run_id,
	    "version", val(rows, row, CLAIM_AGENT_COL_VERSION), "attempt",
	    (json_int_t)(j->attempt + 1), "params", params, "callback", "url",
	    base && base[0] ? json_string(complete) : json_null(),
	    "heartbeatUrl", base && base[0] ? json_string(beat) : json_null(),
	    "token", token, "deadline",
	    val(rows, row, CLAIM_AGENT_COL_DEADLINE), "heartbeatSeconds",
	    hb ? json_integer(strtoll(hb, NULL, 10)) : json_null());
	out = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	return out;
}

/* "Authorization: Basic <base64 of user:password>" into sb->headers. */
static int
basic_auth(struct spec_buf *sb, size_t *n, const char *user, const char *pw)
{
	size_t ul = strlen(user), pl = strlen(pw);
	unsigned char *plain = malloc(ul + 1 + pl);
	unsigned char *b64 = malloc(6 + 4 * ((ul + 1 + pl + 2) / 3) + 1);
	int r = -1;

	if (plain != NULL && b64 != NULL) {
		memcpy(plain, user, ul);
		plain[ul] = ':';
		memcpy(plain + ul + 1, pw, pl);
		memcpy(b64, "Basic ", 6);
		EVP_EncodeBlock(b64 + 6, plain, (int)(ul + 1 + pl));
		r = sched_header(sb, n, "Authorization", (const char *)b64);
	}
	if (plain != NULL)
		explicit_bzero(plain, ul + 1 + pl);
	free(plain);
	free(b64);
	return r;
}

/*
 * The agent's auth into sb->headers (n in use), for a request whose body
 * is body: a bearer token, basic credentials, or an HMAC signature of the
 * body (docs/agents.md, "Auth"); nothing for "none".  0, or -1 out of
 * memory.
 */
int
agent_auth(struct spec_buf *sb, size_t *n, const char *auth,
    const char *username, const char *secret, const char *body)
{
	char sig[RECEIVER_SIG_LEN];

	if (auth == NULL || secret == NULL)
		return 0;
	if (strcmp(auth, "bearer") == 0) {
		char *b = NULL;
		int r;

		if (asprintf(&b, "Bearer %s", secret) < 0)
			return -1;
		r = sched_header(sb, n, "Authorization", b);
		explicit_bzero(b, strlen(b));
		free(b);
		return r;
	}
	if (strcmp(auth, "basic") == 0)
		return basic_auth(sb, n, username ? username : "", secret);
	if (strcmp(auth, "hmac") == 0)
		return receiver_sign(secret, (int64_t)time(NULL), body,
		           strlen(body), sig, sizeof(sig)) == -1 ||
		        sched_header(sb, n, "X-Cronvisor-Signature", sig) == -1
		    ? -1
		    : 0;
	return 0;
}

/*
 * The spec of agent job j from row `row` of claim_agents (claim.sql):
 * an HTTP POST of the job to the agent's (or its version's) endpoint,
 * with the job's headers, the agent's auth and the callback token.  A job
 * that cannot be sent (the agent is gone or disabled, its version gone,
 * its params outside the input schema) gets a spawn error instead: it
 * ends at once, failed and not retried, with why.
 */
void
agent_spec(struct job *j, const struct db_rows *rows, int row,
    const char *token, const struct config *cf)
{
	const char *agent = val(rows, row, CLAIM_AGENT_COL_ENDPOINT);
	const char *auth = val(rows, row, CLAIM_AGENT_COL_AUTH);
	const char *secret = val(rows, row, CLAIM_AGENT_COL_SECRET);
	const char *schema_text = val(rows, row, CLAIM_AGENT_COL_SCHEMA);
	const char *tmo = val(rows, row, CLAIM_AGENT_COL_TIMEOUT_MS);
	struct spec_buf *sb = &j->sb;
	struct run_spec *spec = &j->spec;
	struct jschema_error je;
	json_t *params, *schema;
	char attempt[24];
	size_t n = 0;
	int64_t ms, nb;

	if (!is_true(val(rows, row, CLAIM_AGENT_COL_FOUND))) {
		snprintf(j->spawn_error, sizeof(j->spawn_error),
		    "target.agent: the schedule's owner has no such agent");
		return;
	}
	if (!is_true(val(rows, row, CLAIM_AGENT_COL_ENABLED))) {
		snprintf(j->spawn_error, sizeof(j->spawn_error),
		    "target.agent: the agent is disabled");
		return;
	}
	if (!is_true(val(rows, row, CLAIM_AGENT_COL_VERSION_FOUND)) ||
	    agent == NULL) {
		snprintf(j->spawn_error, sizeof(j->spawn_error),
		    "the agent's version %s, which this job uses, no longer "
		    "exists",
		    val(rows, row, CLAIM_AGENT_COL_VERSION)
		        ? val(rows, row, CLAIM_AGENT_COL_VERSION)
		        : "?");
		return;
	}
	params = json_loads(val(rows, row, CLAIM_AGENT_COL_PARAMS), 0, NULL);
	schema = schema_text ? json_loads(schema_text, 0, NULL) : NULL;
	if (params == NULL || (schema_text && schema == NULL)) {
		snprintf(j->spawn_error, sizeof(j->spawn_error),
		    "the job's params or the agent's input schema cannot be "
		    "read");
	} else if (schema && jschema_validate(schema, params, &je) == -1) {
		char msg[sizeof(je.path) + sizeof(je.message) + 64];

		snprintf(msg, sizeof(msg),
		    "params%s%s: %s (the agent's input schema)",
		    je.path[0] && je.path[0] != '[' ? "." : "", je.path,
		    je.message);
		msg[sizeof(j->spawn_error) - 1] = '\0'; /* cut, not overflown */
		memcpy(j->spawn_error, msg, sizeof(j->spawn_error));
		finish_text(j->spawn_error, strlen(j->spawn_error));
	}
	json_decref(schema);
	if (j->spawn_error[0]) {
		json_decref(params);
		return;
	}
	/* The instant it may start (claimed ahead) survives the reset. */
	nb = spec->not_before_us;
	memset(sb, 0, sizeof(*sb));
	memset(spec, 0, sizeof(*spec));
	spec->not_before_us = nb;
	sb->body = request_body(j, rows, row, token, params, cf);
	json_decref(params);
	snprintf(attempt, sizeof(attempt), "%lld", (long long)j->attempt + 1);
	if (sb->body == NULL || (sb->url = strdup(agent)) == NULL ||
	    (sb->method = strdup("POST")) == NULL ||
	    sched_header(sb, &n, "Content-Type", "application/json") == -1 ||
	    sched_header(sb, &n, "X-Job-Id",
	        val(rows, row, CLAIM_AGENT_COL_JOB)) == -1 ||
	    sched_header(sb, &n, "X-Execution-Id",
	        val(rows, row, CLAIM_AGENT_COL_EXECUTION)) == -1 ||
	    sched_header(sb, &n, "X-Attempt", attempt) == -1 ||
	    sched_header(sb, &n, "Idempotency-Key",
	        val(rows, row, CLAIM_AGENT_COL_JOB)) == -1)
		goto oom;
	if (agent_auth(sb, &n, auth, val(rows, row, CLAIM_AGENT_COL_USERNAME),
	        secret, sb->body) == -1)
		goto oom;
	ms = tmo ? strtoll(tmo, NULL, 10) : AGENT_TIMEOUT_DEF;
	spec->run_id = j->run_id;
	spec->schedule = j->name;
	spec->timeout = ms <= 0 ? 1 : (ms + 999) / 1000;
	spec->kill_grace = cf->kill_grace_seconds;
	spec->output_tail = (size_t)cf->output_tail_bytes;
	spec->target = RUN_TARGET_HTTP;
	spec->url = sb->url;
	spec->method = sb->method;
	spec->headers = (const char *const *)sb->headers;
	spec->body = sb->body;
	spec->body_len = strlen(sb->body);
	spec->max_redirects = (long)cf->http_max_redirects;
	if (sched_http_common(val(rows, row, CLAIM_AGENT_COL_OWNER), cf, sb,
	        spec, j->spawn_error, sizeof(j->spawn_error)) == -1)
		goto fail;
	return;
oom:
	snprintf(j->spawn_error, sizeof(j->spawn_error), "out of memory");
fail:
	sched_spec_clear(sb);
	memset(spec, 0, sizeof(*spec));
}

/*
 * The verdict of an agent's answer, after outcome_decide(): 202 leaves the
 * attempt waiting for the agent's report; any other 2xx ends it, with the
 * answer as its result when it is JSON; 408, 429 and 5xx are retried
 * (after Retry-After, when the agent gave one) unless the answer says
 * "retryable": false; any other status is final.  What the runner refused
 * (a denied host, a redirect to one) stays final.
 */
void
agent_outcome(struct job *j)
{
	const struct result *r = &j->res;
	int64_t st = r->http_status;
	json_t *v;

	if (j->fs != FRAME_OK)
		return;
	if (j->verdict.status == RUN_SUCCEEDED && st == 202) {
		j->verdict.status = RUN_WAITING;
		return;
	}
	if (j->verdict.status == RUN_SUCCEEDED) {
		if (r->output && r->output_len > 0 &&
		    (v = json_loadb(r->output, r->output_len, 0, NULL)) !=
		        NULL) {
			j->result =
			    json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
			json_decref(v);
		}
		return;
	}
	if (j->verdict.status != RUN_FAILED || st < 300)
		return;
	if (st != 408 && st != 429 && st < 500)
		j->verdict.retryable = 0;
}

/*
 * The end of an attempt taken back from waiting (row `row` of
 * claim_reports): as its report says (completed, or failed with its
 * error and whether it may be retried), or timed out at its deadline or
 * for a missed heartbeat.  It ends without a runner: its result is made
 * here, the output the report's result or error as text.
 */
void
agent_adopted(
    struct job *j, const struct db_rows *rows, int row, const struct config *cf)
{
	const char *rep = val(rows, row, CLAIM_REPORT_COL_REPORT);
	const char *hb = val(rows, row, CLAIM_REPORT_COL_HEARTBEAT);
	const char *http = val(rows, row, CLAIM_REPORT_COL_HTTP);
	json_t *report = rep ? json_loads(rep, 0, NULL) : NULL;
	json_t *res = json_object_get(report, "result");
	json_t *err = json_object_get(report, "error");
	const char *st = json_string_value(json_object_get(report, "status"));
	const char *msg = json_string_value(json_object_get(err, "message"));
	json_t *retry = json_object_get(err, "retryable");
	struct verdict *v = &j->verdict;
	char *text = NULL;
	size_t cap = (size_t)cf->output_tail_bytes;

	j->adopted = 1;
	j->fs = FRAME_OK;
	result_init(&j->res);
	j->res.duration_us =
	    strtoll(val(rows, row, CLAIM_REPORT_COL_DURATION_US), NULL, 10);
	j->res.http_status = http ? strtoll(http, NULL, 10) : 0;
	memset(v, 0, sizeof(*v));
	v->retryable = 1;
	if (report == NULL) {
		v->status = RUN_TIMED_OUT;
		if (is_true(val(rows, row, CLAIM_REPORT_COL_PAST_DEADLINE)))
			snprintf(v->error, sizeof(v->error),
			    "the agent did not report by the job's deadline");
		else
			snprintf(v->error, sizeof(v->error),
			    "the agent sent no heartbeat for %s s",
			    hb ? hb : "?");
	} else if (st && strcmp(st, "completed") == 0) {
		v->status = RUN_SUCCEEDED;
		if (res && !json_is_null(res))
			text = json_dumps(res, JSON_COMPACT | JSON_ENCODE_ANY);
	} else {
		v->status = RUN_FAILED;
		v->retryable = !json_is_false(retry);
		/* A fan-out's report is its execution's, not an agent's. */
		snprintf(v->error, sizeof(v->error), "%s%s%s",
		    j->kind == KIND_FANOUT ? ""
		                           : "the agent reported a failure",
		    msg && j->kind != KIND_FANOUT ? ": " : "", msg ? msg : "");
	}
	j->res.status = v->status == RUN_SUCCEEDED ? RESULT_OK : RESULT_FAILED;
	if (text != NULL) {
		size_t n = strlen(text);

		j->res.output_len = n < cap ? n : cap;
		j->res.output = text;
	}
	finish_text(v->error, strlen(v->error));
	json_decref(report);
}
