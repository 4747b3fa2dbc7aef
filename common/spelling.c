/*
 * spelling.c: the seeds' own spellings of the schedule document, taken as
 * they are (docs/schedules.md, "The seeds' spellings").  Seed 004's
 * orchestrator writes a schedule as {repeat, cronExpression, interval in
 * ms, startAt, targetType, agentId, params, retryConfig {maxRetries,
 * backoff, delay in ms}, timeout in ms, enabled}; seed 002's scheduler as
 * {scheduleType: cron|datetime, cronExpression, scheduledAt, workflowId,
 * workflowEntityId, organizationId, environmentId}.  spelling_apply()
 * rewrites such a body into the native document, in place, before
 * common/schedule.c reads it, so that one parser and one set of rules
 * (kinds, ranges, the cron, the zone, the target) hold for every spelling.
 * What it rewrote is noted in the document, so that an error found later,
 * here or in the API, names the field as the body spelled it
 * (spelling_field()).  Two spellings of one field in one body are refused
 * naming both: which one was meant cannot be known.  Milliseconds become
 * the native seconds only when they are whole seconds, except an agent
 * job's timeout, which the agent target keeps in ms.  Pure; jansson only.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cronvisor.h"

#define KINDS_ALL 7u /* one bit per enum sched_kind */
#define K(k)      (1u << (k))

/* A field that is only renamed. */
struct rename {
	const char *given;  /* the seed's key */
	const char *native; /* the document's */
};

static const struct rename renames[] = {
    {"cronExpression", "cron"},
    {"scheduledAt", "at"},
    {"workflowId", "workflow_id"},
    {"workflowEntityId", "trigger_node_id"},
    {"organizationId", "organization_id"},
    {"environmentId", "environment_id"},
};

/* A word of a field that says the kind, and the kinds it allows. */
struct kind_word {
	const char *key;  /* kind, repeat or scheduleType */
	const char *word; /* its value */
	unsigned kinds;   /* K(SCHED_KIND_x) bits */
};

static const struct kind_word kind_words[] = {
    {"kind", "interval", K(SCHED_KIND_INTERVAL)},
    {"kind", "cron", K(SCHED_KIND_CRON)},
    {"kind", "once", K(SCHED_KIND_ONCE)},
    {"repeat", "once", K(SCHED_KIND_ONCE)},
    {"repeat", "repeating", K(SCHED_KIND_INTERVAL) | K(SCHED_KIND_CRON)},
    {"scheduleType", "cron", K(SCHED_KIND_CRON)},
    {"scheduleType", "datetime", K(SCHED_KIND_ONCE)},
};
#define NKIND_WORDS (sizeof(kind_words) / sizeof(kind_words[0]))

static const char *const kind_names[] = {"interval", "cron", "once"};

/*
 * Notes that path (static) was given as given (static too), replacing
 * what was noted of path before.
 */
static int
note(struct schedule_doc *d, const char *path, const char *given,
    struct schedule_error *e)
{
	for (int i = 0; i < d->nspelled; i++)
		if (strcmp(d->spelled[i].native, path) == 0) {
			d->spelled[i].given = given;
			return 0;
		}
	if (d->nspelled == SCHEDULE_SPELLINGS)
		return doc_fail(e, "internal", given, "too many spellings");
	d->spelled[d->nspelled].native = path;
	d->spelled[d->nspelled].given = given;
	d->nspelled++;
	return 0;
}

/* How the body spelled the native path: a seed's key, or the path. */
static const char *
given_as(const struct schedule_doc *d, const char *path)
{
	for (int i = 0; i < d->nspelled; i++)
		if (strcmp(d->spelled[i].native, path) == 0)
			return d->spelled[i].given;
	return path;
}

/*
 * Sets member key of obj, the native field path ("cron", "target.agent"),
 * to v (a new reference, taken even on error), noting that the body
 * spelled it given.  A member already there is the same field spelled
 * twice.
 */
static int
put(json_t *obj, const char *key, const char *path, const char *given,
    json_t *v, struct schedule_doc *d, struct schedule_error *e)
{
	if (v == NULL)
		return doc_fail(e, "internal", given, "out of memory");
	if (json_object_get(obj, key) != NULL) {
		json_decref(v);
		return doc_fail(e, "invalid_field", given,
		    "%s and %s are two spellings of one field: give one", given,
		    given_as(d, path));
	}
	if (json_object_set_new(obj, key, v) == -1)
		return doc_fail(e, "internal", given, "out of memory");
	return note(d, path, given, e);
}

/*
 * Moves member given of root, if there, to member key of obj (the native
 * field path), as it is.
 */
static int
move(json_t *root, const char *given, json_t *obj, const char *key,
    const char *path, struct schedule_doc *d, struct schedule_error *e)
{
	json_t *v = json_object_get(root, given);

	if (v == NULL)
		return 0;
	json_incref(v);
	json_object_del(root, given);
	return put(obj, key, path, given, v, d, e);
}

/*
 * Reads v, milliseconds (an integer or null) that must be whole seconds
 * from lo to hi, into *out (a new reference: the seconds, or null).
 * Returns 0, or -1 with *e naming given.
 */
static int
ms_to_seconds(json_t *v, const char *given, int64_t lo, int64_t hi,
    json_t **out, struct schedule_error *e)
{
	json_int_t ms = json_integer_value(v);

	*out = NULL;
	if (!json_is_null(v) &&
	    (!json_is_integer(v) || ms < lo * 1000 || ms > hi * 1000))
		return doc_fail(e, "invalid_field", given,
		    "expected milliseconds from %lld to %lld",
		    (long long)lo * 1000, (long long)hi * 1000);
	if (!json_is_null(v) && ms % 1000 != 0)
		return doc_fail(e, "invalid_field", given,
		    "%lld ms is not a whole number of seconds, which is what "
		    "cronvisor keeps: give a multiple of 1000",
		    (long long)ms);
	*out = json_is_null(v) ? json_null() : json_integer(ms / 1000);
	return *out ? 0 : doc_fail(e, "internal", given, "out of memory");
}

/* Moves the milliseconds of member given of root to seconds in key. */
static int
move_ms(json_t *root, const char *given, const char *key, int64_t hi,
    struct schedule_doc *d, struct schedule_error *e)
{
	json_t *v = json_object_get(root, given), *x;

	if (v == NULL)
		return 0;
	if (ms_to_seconds(v, given, 1, hi, &x, e) == -1)
		return -1;
	json_object_del(root, given);
	return put(root, key, key, given, x, d, e);
}

/*
 * The kinds member key of root allows (KINDS_ALL when absent), and its
 * word in *word.  A native kind that is not a kind allows all: the
 * document's reader refuses it.
 */
static int
kinds_of(json_t *root, const char *key, unsigned *kinds, const char **word,
    struct schedule_error *e)
{
	json_t *v = json_object_get(root, key);
	const char *s = json_string_value(v);
	int repeat = strcmp(key, "repeat") == 0;

	*kinds = KINDS_ALL;
	*word = s;
	if (v == NULL)
		return 0;
	for (size_t i = 0; s && i < NKIND_WORDS; i++)
		if (strcmp(kind_words[i].key, key) == 0 &&
		    strcmp(kind_words[i].word, s) == 0) {
			*kinds = kind_words[i].kinds;
			return 0;
		}
	if (strcmp(key, "kind") == 0)
		return 0;
	return doc_fail(e, "invalid_field", key, "expected \"%s\" or \"%s\"",
	    repeat ? "once" : "cron", repeat ? "repeating" : "datetime");
}

/* 1 if root has either of the two keys. */
static int
has(json_t *root, const char *a, const char *b)
{
	return json_object_get(root, a) || json_object_get(root, b);
}

/*
 * A repeating schedule (repeat: "repeating") is a cron or an interval
 * one, whichever timing the body gives; with neither, a patch keeps the
 * base kind if it repeats.  Returns the kind, -1 to keep the base's, or
 * -2 with *e set.
 */
static int
repeating_kind(json_t *root, int base, struct schedule_error *e)
{
	int cr = has(root, "cron", "cronExpression");
	int iv = has(root, "interval_seconds", "interval");

	if (cr && iv) {
		doc_fail(e, "invalid_field",
		    json_object_get(root, "interval") ? "interval"
		                                      : "interval_seconds",
		    "a repeating schedule takes cronExpression or interval, "
		    "not both");
		return -2;
	}
	if (cr || iv)
		return cr ? SCHED_KIND_CRON : SCHED_KIND_INTERVAL;
	if (base == SCHED_KIND_CRON || base == SCHED_KIND_INTERVAL)
		return -1;
	doc_fail(e, "missing_field", "cronExpression",
	    "repeat \"repeating\" needs cronExpression (a cron expression) "
	    "or interval (milliseconds)");
	return -2;
}

/*
 * The timing field a kind said with repeat or scheduleType (by) needs is
 * missing: its error names it as that seed spells it (a once schedule's
 * startAt or scheduledAt, a cron one's cronExpression).
 */
static int
timing_notes(json_t *root, const char *by, int kind, struct schedule_doc *d,
    struct schedule_error *e)
{
	int s004 = strcmp(by, "repeat") == 0;

	if (kind == SCHED_KIND_ONCE && !json_object_get(root, "at"))
		return note(d, "at", s004 ? "startAt" : "scheduledAt", e);
	if (kind == SCHED_KIND_CRON && !json_object_get(root, "cron"))
		return note(d, "cron", "cronExpression", e);
	return 0;
}

/*
 * Reads the fields that say the kind (kind, repeat, scheduleType), which
 * must agree, and leaves the one native kind they say in root, if any.
 * base is the kind of the schedule a patch applies to, or -1.
 */
static int
apply_kind(
    json_t *root, int base, struct schedule_doc *d, struct schedule_error *e)
{
	static const char *const keys[] = {"kind", "repeat", "scheduleType"};
	const char *by = NULL, *byword = NULL, *word;
	unsigned all = KINDS_ALL, k;
	int kind = -1;

	for (int i = 0; i < 3; i++) {
		if (kinds_of(root, keys[i], &k, &word, e) == -1)
			return -1;
		if (k == KINDS_ALL)
			continue;
		if ((all & k) == 0)
			return doc_fail(e, "invalid_field", keys[i],
			    "%s \"%s\" and %s \"%s\" disagree: give one", by,
			    byword, keys[i], word);
		all &= k;
		by = keys[i];
		byword = word;
	}
	if (by != NULL && json_object_get(root, "kind") == NULL) {
		for (int i = 0; i < 3; i++)
			if (all == K(i))
				kind = i;
		if (kind == -1 && (kind = repeating_kind(root, base, e)) == -2)
			return -1;
		if (kind >= 0 &&
		    put(root, "kind", "kind", by, json_string(kind_names[kind]),
		        d, e) == -1)
			return -1;
		if (timing_notes(root, by, kind, d, e) == -1)
			return -1;
	}
	json_object_del(root, "repeat");
	json_object_del(root, "scheduleType");
	return 0;
}

/*
 * startAt is the instant of a once schedule (at), else the first slot
 * (start_at).  Without a kind, a body whose only timing is startAt is a
 * once schedule; a patch goes by the kind it leaves.
 */
static int
apply_start(
    json_t *root, int base, struct schedule_doc *d, struct schedule_error *e)
{
	const char *k = json_string_value(json_object_get(root, "kind"));
	const char *to;
	int once;

	if (k != NULL)
		once = strcmp(k, "once") == 0;
	else if (base >= 0)
		once = base == SCHED_KIND_ONCE;
	else
		once = !has(root, "cron", "interval_seconds") &&
		    !json_object_get(root, "at");
	to = once ? "at" : "start_at";
	return move(root, "startAt", root, to, to, d, e);
}

/* One member k of retryConfig, v, into its native field of root. */
static int
retry_member(json_t *root, const char *k, json_t *v, struct schedule_doc *d,
    struct schedule_error *e)
{
	char path[128];
	json_t *x;

	if (strcmp(k, "maxRetries") == 0)
		return put(root, "max_retries", "max_retries",
		    "retryConfig.maxRetries", json_incref(v), d, e);
	if (strcmp(k, "backoff") == 0)
		return put(root, "backoff", "backoff", "retryConfig.backoff",
		    json_incref(v), d, e);
	if (strcmp(k, "delay") == 0)
		return ms_to_seconds(
		           v, "retryConfig.delay", 1, 31536000, &x, e) == -1
		    ? -1
		    : put(root, "retry_delay_seconds", "retry_delay_seconds",
		          "retryConfig.delay", x, d, e);
	snprintf(path, sizeof(path), "retryConfig.%s", k);
	return doc_fail(e, "unknown_field", path, "unknown field");
}

/* retryConfig {maxRetries, backoff, delay in ms}, or null: the defaults. */
static int
apply_retry(json_t *root, struct schedule_doc *d, struct schedule_error *e)
{
	static const char *const natives[] = {
	    "max_retries", "backoff", "retry_delay_seconds", NULL};
	json_t *rc = json_object_get(root, "retryConfig"), *v;
	const char *k;
	int r = 0;

	if (rc == NULL)
		return 0;
	if (!json_is_object(rc) && !json_is_null(rc))
		return doc_fail(e, "invalid_field", "retryConfig",
		    "expected an object or null");
	json_incref(rc);
	json_object_del(root, "retryConfig");
	for (int i = 0; r == 0 && natives[i] && json_is_null(rc); i++)
		r = put(root, natives[i], natives[i], "retryConfig",
		    json_null(), d, e);
	json_object_foreach(rc, k, v)
	{
		if (r == 0)
			r = retry_member(root, k, v, d, e);
	}
	json_decref(rc);
	return r;
}

/* 1 if t is an object of type ty ("agent" or "pipeline"). */
static int
is_type(json_t *t, const char *ty)
{
	const char *s = json_string_value(json_object_get(t, "type"));

	return json_is_object(t) && s && strcmp(s, ty) == 0;
}

/*
 * A copy of the base's agent target for a patch that changes some of its
 * members with the seed's names, without the members it changes; NULL
 * when out of memory.
 */
static json_t *
base_target(json_t *root, const struct schedule_doc *base)
{
	json_t *t = json_deep_copy(base->target);

	if (t && json_object_get(root, "agentId"))
		json_object_del(t, "agent");
	if (t && json_object_get(root, "pipelineId"))
		json_object_del(t, "pipeline");
	if (t && json_object_get(root, "params"))
		json_object_del(t, "params");
	if (t && json_object_get(root, "timeout"))
		json_object_del(t, "timeout_ms");
	return t;
}

/*
 * The agent or pipeline target the seed's members go into, or NULL: for
 * targetType "agent" or agentId (targetType "pipeline" or pipelineId) a
 * new one (where a native target is the field spelled twice), or the
 * body's own agent or pipeline target; a patch of such a schedule that
 * names its id, params or timeout without a native target starts from
 * the base's.  *kind is "agent" or "pipeline" (its id member's name).
 * Returns 0 with *out borrowed from root, or -1 with *e set.
 */
static int
orch_target(json_t *root, const struct schedule_doc *base, json_t **out,
    const char **kind, struct schedule_doc *d, struct schedule_error *e)
{
	json_t *tt = json_object_get(root, "targetType");
	const char *s = json_string_value(tt);
	int pid = json_object_get(root, "pipelineId") != NULL;
	int aid = json_object_get(root, "agentId") != NULL;
	int from_base;

	*out = NULL;
	if (tt && !json_is_null(tt) &&
	    (s == NULL || (strcmp(s, "agent") && strcmp(s, "pipeline"))))
		return doc_fail(e, "invalid_field", "targetType",
		    "expected \"agent\" or \"pipeline\"");
	if (aid && pid)
		return doc_fail(e, "invalid_field", "pipelineId",
		    "a schedule targets an agent (agentId) or a pipeline "
		    "(pipelineId), not both");
	if (s != NULL &&
	    ((aid && strcmp(s, "agent")) || (pid && strcmp(s, "pipeline"))))
		return doc_fail(e, "invalid_field",
		    aid ? "agentId" : "pipelineId",
		    "does not go with targetType \"%s\"", s);
	/* Not s itself: targetType goes from root below. */
	*kind = s ? (strcmp(s, "agent") ? "pipeline" : "agent")
	    : pid ? "pipeline"
	    : aid ? "agent"
	    : is_type(json_object_get(root, "target"), "pipeline") ||
	        (!json_object_get(root, "target") && base &&
	            is_type(base->target, "pipeline"))
	    ? "pipeline"
	    : "agent";
	from_base = base && is_type(base->target, *kind) &&
	    !json_object_get(root, "target") &&
	    (aid || pid || has(root, "params", "timeout"));
	if (s == NULL && !aid && !pid && !from_base)
		goto out;
	if (!aid && !pid && !from_base)
		return doc_fail(e, "missing_field",
		    strcmp(*kind, "agent") ? "pipelineId" : "agentId",
		    "required for targetType \"%s\"", *kind);
	if (put(root, "target", "target",
	        s ? "targetType" : (aid ? "agentId" : "pipelineId"),
	        from_base ? base_target(root, base)
	                  : json_pack("{s:s}", "type", *kind),
	        d, e) == -1)
		return -1;
out:
	json_object_del(root, "targetType");
	if (is_type(json_object_get(root, "target"), *kind))
		*out = json_object_get(root, "target");
	return 0;
}

/*
 * Seed 004's target members (targetType, agentId or pipelineId, params,
 * timeout): an agent or pipeline target takes its id, params and the
 * timeout as they are (its timeout_ms; null: the agent's); without one,
 * params has nowhere to go and the timeout is the run's, in whole
 * seconds (timeout_seconds).
 */
static int
apply_target(json_t *root, const struct schedule_doc *base,
    struct schedule_doc *d, struct schedule_error *e)
{
	const char *kind = "agent";
	json_t *t, *v;

	if (orch_target(root, base, &t, &kind, d, e) == -1)
		return -1;
	if (t == NULL && json_object_get(root, "params"))
		return doc_fail(e, "invalid_field", "params",
		    "params go to an agent or a pipeline: give targetType "
		    "\"agent\" and agentId, or \"pipeline\" and pipelineId");
	if (t == NULL)
		return move_ms(
		    root, "timeout", "timeout_seconds", 31536000, d, e);
	/* Literals: the notes keep the paths they are given. */
	if (move(root, strcmp(kind, "agent") ? "pipelineId" : "agentId", t,
	        kind,
	        strcmp(kind, "agent") ? "target.pipeline" : "target.agent", d,
	        e) == -1 ||
	    move(root, "params", t, "params", "target.params", d, e) == -1)
		return -1;
	if (json_is_null(v = json_object_get(root, "timeout"))) {
		json_object_del(root, "timeout");
		return note(d, "target.timeout_ms", "timeout", e);
	}
	return move(
	    root, "timeout", t, "timeout_ms", "target.timeout_ms", d, e);
}

/* seed 004's enabled: true or false (null: not given). */
static int
apply_enabled(json_t *root, struct schedule_doc *d, struct schedule_error *e)
{
	json_t *v = json_object_get(root, "enabled");

	if (v == NULL)
		return 0;
	if (!json_is_boolean(v) && !json_is_null(v))
		return doc_fail(
		    e, "invalid_field", "enabled", "expected true or false");
	d->enable = json_is_null(v) ? 0 : json_is_true(v) ? 1 : -1;
	json_object_del(root, "enabled");
	return 0;
}

/*
 * Rewrites the seeds' spellings in the object root (a POST or PATCH body)
 * into the native document, in place, and notes in d what it rewrote
 * (d->spelled) and seed 004's enabled (d->enable).  base is the schedule
 * a PATCH applies to (its kind and target decide where startAt, params
 * and timeout go), NULL for a create.  Native members and unknown ones
 * are left for the document's reader.  Returns 0, or -1 with *e naming
 * the field as the body spelled it; root may then be half rewritten.
 */
int
spelling_apply(struct json_t *root, const struct schedule_doc *base,
    struct schedule_doc *d, struct schedule_error *e)
{
	int bk = base ? (int)base->kind : -1;

	if (apply_kind(root, bk, d, e) == -1)
		return -1;
	for (size_t i = 0; i < sizeof(renames) / sizeof(renames[0]); i++)
		if (move(root, renames[i].given, root, renames[i].native,
		        renames[i].native, d, e) == -1)
			return -1;
	if (move_ms(root, "interval", "interval_seconds", 3162240000LL, d, e) ==
	        -1 ||
	    apply_start(root, bk, d, e) == -1 ||
	    apply_retry(root, d, e) == -1 ||
	    apply_target(root, base, d, e) == -1)
		return -1;
	return apply_enabled(root, d, e);
}

/*
 * The field path (as common/schedule.c and the API name it: "at",
 * "target.params.tickerId") as the body of d spelled it ("startAt",
 * "params.tickerId"), in buf; path itself when the body used the native
 * name.  The longest native path noted that is path or a prefix of it
 * ("target" for "target.type") decides.  Returns buf.
 */
const char *
spelling_field(
    const struct schedule_doc *d, const char *path, char *buf, size_t len)
{
	const struct schedule_spelling *best = NULL;
	size_t n, bn = 0;

	for (int i = 0; i < d->nspelled; i++) {
		n = strlen(d->spelled[i].native);
		if (strncmp(path, d->spelled[i].native, n) == 0 &&
		    strchr(".[", path[n]) && n > bn) {
			best = &d->spelled[i];
			bn = n;
		}
	}
	snprintf(buf, len, "%s%s", best ? best->given : "", path + bn);
	return buf;
}

/* Renames the field of *e as the body of d spelled it. */
void
spelling_error(const struct schedule_doc *d, struct schedule_error *e)
{
	char buf[sizeof(e->field)];

	snprintf(e->field, sizeof(e->field), "%s",
	    spelling_field(d, e->field, buf, sizeof(buf)));
}
