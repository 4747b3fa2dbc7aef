/*
 * pipeline.c: the pipeline document of the API (docs/orchestration.md):
 * a named graph of agent steps, parsed, validated and written back in its
 * native form.  Seed 004's spellings (id, stepId, agentId, dependsOn,
 * retryConfig {maxRetries, backoff, delay}, timeout, failFast) are read
 * as the native ones (pipeline_id, step_id, agent_id, depends_on, retry
 * {max_retries, backoff, delay_ms}, timeout_ms, fail_fast); an error
 * names the field as the input spelled it.  Pure: no database (whether
 * each step's agent exists is the API's to check); jansson for the JSON.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisor.h"

static const char *const run_whens[] = {"success", "done", "failure", NULL};
static const char *const backoffs[] = {"exponential", "linear", "fixed", NULL};

/* A member and its other spelling (seed 004's), NULL when it has none. */
struct spelling {
	const char *native;
	const char *seed;
};

static const struct spelling top_names[] = {
    {"pipeline_id", "id"},
    {"name", NULL},
    {"description", NULL},
    {"steps", NULL},
    {"fail_fast", "failFast"},
    {"enabled", NULL},
    {NULL, NULL},
};

static const struct spelling step_names[] = {
    {"step_id", "stepId"},
    {"agent_id", "agentId"},
    {"depends_on", "dependsOn"},
    {"parallel", NULL},
    {"params", NULL},
    {"retry", "retryConfig"},
    {"timeout_ms", "timeout"},
    {"run_when", "runWhen"},
    {NULL, NULL},
};

static const struct spelling retry_names[] = {
    {"max_retries", "maxRetries"},
    {"backoff", NULL},
    {"delay_ms", "delay"},
    {NULL, NULL},
};

/*
 * The native name of member k of an object whose members are names, or
 * NULL when it is none of them.
 */
static const char *
native_of(const struct spelling *names, const char *k)
{
	for (; names->native; names++)
		if (strcmp(k, names->native) == 0 ||
		    (names->seed && strcmp(k, names->seed) == 0))
			return names->native;
	return NULL;
}

/* path "." member, into buf. */
static const char *
at(char *buf, size_t len, const char *path, const char *member)
{
	/* A path longer than buf is cut: it only names the field. */
	if (snprintf(buf, len, "%s%s%s", path, path[0] ? "." : "", member) < 0)
		buf[0] = '\0';
	return buf;
}

/*
 * Reads object v (at path, "" for the body) into a new object with its
 * members under their native names; a member given in both spellings,
 * or one that is neither, is refused.  NULL with *e set.
 */
static json_t *
natives(json_t *v, const struct spelling *names, const char *path,
    const char *what, struct schedule_error *e)
{
	char field[sizeof(e->field)];
	const char *k, *nat;
	json_t *out, *x;

	if (!json_is_object(v)) {
		doc_fail(e, path[0] ? "invalid_field" : "invalid_json",
		    path[0] ? path : NULL, "expected an object");
		return NULL;
	}
	if ((out = json_object()) == NULL) {
		doc_fail(e, "internal", path, "out of memory");
		return NULL;
	}
	json_object_foreach(v, k, x)
	{
		snprintf(field, sizeof(field), "%s%s%s", path,
		    path[0] ? "." : "", k);
		if ((nat = native_of(names, k)) == NULL) {
			doc_fail(e, "unknown_field", field, "not a field of %s",
			    what);
			goto fail;
		}
		if (json_object_get(out, nat) != NULL) {
			doc_fail(e, "invalid_field", field,
			    "given twice (as %s too)", nat);
			goto fail;
		}
		/* The value is only read; it stays v's (a borrowed copy). */
		if (json_object_set(out, nat, x) == -1) {
			doc_fail(e, "internal", field, "out of memory");
			goto fail;
		}
	}
	return out;
fail:
	json_decref(out);
	return NULL;
}

/* The name the input gave member nat of v (for messages). */
static const char *
given(json_t *v, const struct spelling *names, const char *nat)
{
	for (; names->native; names++)
		if (strcmp(names->native, nat) == 0)
			return names->seed && json_object_get(v, names->seed)
			    ? names->seed
			    : names->native;
	return nat;
}

/* A string of min..max characters without NUL or control characters. */
static int
text_ok(json_t *v, const char *field, size_t min, size_t max,
    struct schedule_error *e)
{
	const char *s = json_string_value(v);

	if (s == NULL)
		return doc_fail(e, "invalid_field", field, "expected a string");
	if (strlen(s) != json_string_length(v))
		return doc_fail(
		    e, "invalid_field", field, "must not contain NUL");
	if (strlen(s) < min || utf8_chars(s) > max)
		return min ? doc_fail(e, "invalid_field", field,
		                 "expected %zu to %zu characters", min, max)
		           : doc_fail(e, "invalid_field", field,
		                 "expected at most %zu characters", max);
	return 0;
}

static int
slug_ok(json_t *v, const char *field, struct schedule_error *e)
{
	if (text_ok(v, field, 1, 64, e) == -1)
		return -1;
	return agent_slug_ok(json_string_value(v))
	    ? 0
	    : doc_fail(e, "invalid_field", field,
	          "expected a slug: 1 to 64 of a-z, 0-9 and '-', not "
	          "starting or ending with '-'");
}

static int
bool_ok(json_t *v, const char *field, struct schedule_error *e)
{
	return json_is_boolean(v)
	    ? 0
	    : doc_fail(e, "invalid_field", field, "expected true or false");
}

/* v is one of the strings of names (NULL-terminated); its index, or -1. */
static int
one_of(json_t *v, const char *const *names, const char *field,
    struct schedule_error *e)
{
	const char *s = json_string_value(v);
	char list[128] = "";

	for (int i = 0; names[i]; i++) {
		if (s && strcmp(s, names[i]) == 0)
			return i;
		snprintf(list + strlen(list), sizeof(list) - strlen(list),
		    "%s\"%s\"",
		    i == 0             ? ""
		        : names[i + 1] ? ", "
		                       : " or ",
		    names[i]);
	}
	return doc_fail(e, "invalid_field", field, "expected %s", list);
}

/* The step's retry: {max_retries, backoff, delay_ms}, or null. */
static json_t *
step_retry(json_t *v, const char *path, struct schedule_error *e)
{
	char f[sizeof(e->field)];
	json_t *n, *x, *out;
	int b = 0;

	if (json_is_null(v))
		return json_null();
	if ((n = natives(v, retry_names, path, "a retry", e)) == NULL)
		return NULL;
	if ((x = json_object_get(n, "max_retries")) == NULL) {
		doc_fail(e, "missing_field",
		    at(f, sizeof(f), path,
		        given(v, retry_names, "max_retries")),
		    "required");
		goto fail;
	}
	if (doc_int(x,
	        at(f, sizeof(f), path, given(v, retry_names, "max_retries")), 0,
	        1000, NULL, e) == -1)
		goto fail;
	if ((x = json_object_get(n, "backoff")) != NULL &&
	    (b = one_of(x, backoffs, at(f, sizeof(f), path, "backoff"), e)) ==
	        -1)
		goto fail;
	if ((x = json_object_get(n, "delay_ms")) != NULL && !json_is_null(x) &&
	    doc_int(x,
	        at(f, sizeof(f), path, given(v, retry_names, "delay_ms")), 1,
	        31536000000LL, NULL, e) == -1)
		goto fail;
	/* delay_ms null: the schedule's retry delay (docs/orchestration.md) */
	out = json_pack("{s:O, s:s, s:O?}", "max_retries",
	    json_object_get(n, "max_retries"), "backoff", backoffs[b],
	    "delay_ms", json_object_get(n, "delay_ms"));
	json_decref(n);
	if (out == NULL)
		doc_fail(e, "internal", path, "out of memory");
	return out;
fail:
	json_decref(n);
	return NULL;
}

/*
 * Step i (v) into its native form, its dependencies checked for their
 * shape only (pipeline_check() checks what they name).
 */
static json_t *
step_parse(json_t *v, size_t i, struct schedule_error *e)
{
	char path[32], f[sizeof(e->field)];
	json_t *n, *x, *out = NULL, *deps = NULL, *retry = NULL;
	size_t k;
	int w = 0;

	snprintf(path, sizeof(path), "steps[%zu]", i);
	if ((n = natives(v, step_names, path, "a step", e)) == NULL)
		return NULL;
	if ((x = json_object_get(n, "step_id")) == NULL ||
	    (json_object_get(n, "agent_id")) == NULL) {
		doc_fail(e, "missing_field",
		    at(f, sizeof(f), path, x == NULL ? "step_id" : "agent_id"),
		    "required");
		goto out;
	}
	if (slug_ok(x, at(f, sizeof(f), path, given(v, step_names, "step_id")),
	        e) == -1 ||
	    slug_ok(json_object_get(n, "agent_id"),
	        at(f, sizeof(f), path, given(v, step_names, "agent_id")),
	        e) == -1)
		goto out;
	if ((deps = json_array()) == NULL)
		goto oom;
	if ((x = json_object_get(n, "depends_on")) != NULL) {
		const char *dn = given(v, step_names, "depends_on");

		if (!json_is_array(x) ||
		    json_array_size(x) > PIPELINE_STEPS_MAX) {
			doc_fail(e, "invalid_field", at(f, sizeof(f), path, dn),
			    "expected an array of at most %d step ids",
			    PIPELINE_STEPS_MAX);
			goto out;
		}
		for (k = 0; k < json_array_size(x); k++) {
			json_t *d = json_array_get(x, k);
			char df[sizeof(e->field)];

			snprintf(df, sizeof(df), "%s.%s[%zu]", path, dn, k);
			if (slug_ok(d, df, e) == -1)
				goto out;
			for (size_t m = 0; m < k; m++)
				if (json_equal(json_array_get(x, m), d)) {
					doc_fail(e, "invalid_field", df,
					    "\"%s\" is named twice",
					    json_string_value(d));
					goto out;
				}
			if (json_array_append(deps, d) == -1)
				goto oom;
		}
	}
	if ((x = json_object_get(n, "parallel")) != NULL &&
	    bool_ok(x, at(f, sizeof(f), path, "parallel"), e) == -1)
		goto out;
	if ((x = json_object_get(n, "params")) != NULL) {
		at(f, sizeof(f), path, "params");
		if (!json_is_object(x)) {
			doc_fail(e, "invalid_field", f, "expected an object");
			goto out;
		}
		if (schedule_json_storable(x, f, e) == -1)
			goto out;
	}
	if ((x = json_object_get(n, "retry")) != NULL &&
	    (retry = step_retry(x,
	         at(f, sizeof(f), path, given(v, step_names, "retry")), e)) ==
	        NULL)
		goto out;
	if ((x = json_object_get(n, "timeout_ms")) != NULL &&
	    !json_is_null(x) &&
	    doc_int(x,
	        at(f, sizeof(f), path, given(v, step_names, "timeout_ms")), 1,
	        31536000000LL, NULL, e) == -1)
		goto out;
	if ((x = json_object_get(n, "run_when")) != NULL &&
	    (w = one_of(x, run_whens,
	         at(f, sizeof(f), path, given(v, step_names, "run_when")),
	         e)) == -1)
		goto out;
	x = json_object_get(n, "parallel");
	out = json_pack("{s:O, s:O, s:O, s:b, s:O?, s:O?, s:O?, s:s}",
	    "step_id", json_object_get(n, "step_id"), "agent_id",
	    json_object_get(n, "agent_id"), "depends_on", deps, "parallel",
	    x == NULL || json_is_true(x), "params",
	    json_object_get(n, "params"), "retry", retry, "timeout_ms",
	    json_object_get(n, "timeout_ms"), "run_when", run_whens[w]);
	if (out != NULL && json_is_null(json_object_get(out, "params")) &&
	    json_object_set_new(out, "params", json_object()) == -1) {
		json_decref(out);
		out = NULL;
	}
	if (out == NULL)
		goto oom;
	goto out;
oom:
	doc_fail(e, "internal", path, "out of memory");
out:
	json_decref(n);
	json_decref(deps);
	json_decref(retry);
	return out;
}

/* The index of the step named id in steps, or -1. */
static int
step_index(json_t *steps, const char *id)
{
	for (size_t i = 0; i < json_array_size(steps); i++)
		if (strcmp(json_string_value(json_object_get(
		               json_array_get(steps, i), "step_id")),
		        id) == 0)
			return (int)i;
	return -1;
}

/*
 * Names the cycle that step i (left by the topological sort) lies on or
 * leads to: following the first dependency still left from each step
 * must come back to a step already seen.
 */
static int
name_cycle(json_t *steps, json_t *input, const char *left, int i,
    struct schedule_error *e)
{
	int order[PIPELINE_STEPS_MAX], seen[PIPELINE_STEPS_MAX], n = 0, s;
	char msg[CV_ERRLEN], path[64];
	size_t len;

	memset(seen, -1, sizeof(seen));
	while (seen[i] < 0) {
		json_t *deps = json_object_get(
		    json_array_get(steps, (size_t)i), "depends_on");
		int next = -1;

		seen[i] = n;
		order[n++] = i;
		for (size_t k = 0; k < json_array_size(deps) && next < 0; k++) {
			int d = step_index(
			    steps, json_string_value(json_array_get(deps, k)));

			if (d >= 0 && left[d])
				next = d;
		}
		if (next < 0) /* cannot be: a step left has a dependency left */
			break;
		i = next;
	}
	snprintf(msg, sizeof(msg), "a cycle: ");
	for (s = seen[i] >= 0 ? seen[i] : 0; s < n; s++) {
		len = strlen(msg);
		snprintf(msg + len, sizeof(msg) - len, "%s depends on ",
		    json_string_value(json_object_get(
		        json_array_get(steps, (size_t)order[s]), "step_id")));
	}
	len = strlen(msg);
	snprintf(msg + len, sizeof(msg) - len, "%s",
	    json_string_value(
	        json_object_get(json_array_get(steps, (size_t)i), "step_id")));
	snprintf(path, sizeof(path), "steps[%d].%s", i,
	    given(json_array_get(input, (size_t)i), step_names, "depends_on"));
	return doc_fail(e, "invalid_field", path, "%s", msg);
}

/*
 * Checks the graph of the native steps: ids unique, every dependency a
 * step of the pipeline other than itself, and no cycle (named when there
 * is one).  0, or -1 with *e naming the step.
 */
static int
graph_check(json_t *steps, json_t *input, struct schedule_error *e)
{
	size_t n = json_array_size(steps);
	char left[PIPELINE_STEPS_MAX], path[64];
	int pending[PIPELINE_STEPS_MAX], progress = 1, remain = (int)n;

	for (size_t i = 0; i < n; i++) {
		json_t *s = json_array_get(steps, i);
		const char *id =
		    json_string_value(json_object_get(s, "step_id"));
		json_t *deps = json_object_get(s, "depends_on");

		if (step_index(steps, id) != (int)i) {
			snprintf(path, sizeof(path), "steps[%zu].%s", i,
			    given(json_array_get(input, i), step_names,
			        "step_id"));
			return doc_fail(e, "invalid_field", path,
			    "duplicate step id \"%s\" (steps[%d] has it)", id,
			    step_index(steps, id));
		}
		for (size_t k = 0; k < json_array_size(deps); k++) {
			const char *d =
			    json_string_value(json_array_get(deps, k));

			snprintf(path, sizeof(path), "steps[%zu].%s[%zu]", i,
			    given(json_array_get(input, i), step_names,
			        "depends_on"),
			    k);
			if (strcmp(d, id) == 0)
				return doc_fail(e, "invalid_field", path,
				    "step \"%s\" cannot depend on itself", id);
			if (step_index(steps, d) < 0)
				return doc_fail(e, "invalid_field", path,
				    "no step \"%s\" in this pipeline", d);
		}
		left[i] = 1;
		pending[i] = (int)json_array_size(deps);
	}
	/* Kahn's sort: take the steps whose dependencies are all taken. */
	while (remain > 0 && progress) {
		progress = 0;
		for (size_t i = 0; i < n; i++) {
			const char *id;

			if (!left[i] || pending[i] > 0)
				continue;
			left[i] = 0;
			remain--;
			progress = 1;
			id = json_string_value(json_object_get(
			    json_array_get(steps, i), "step_id"));
			for (size_t j = 0; j < n; j++) {
				json_t *deps = json_object_get(
				    json_array_get(steps, j), "depends_on");

				for (size_t k = 0; k < json_array_size(deps);
				     k++)
					if (strcmp(json_string_value(
					               json_array_get(deps, k)),
					        id) == 0)
						pending[j]--;
			}
		}
	}
	for (size_t i = 0; remain > 0 && i < n; i++)
		if (left[i])
			return name_cycle(steps, input, left, (int)i, e);
	return 0;
}

/*
 * Reads member nat of n (native names) into the document out; v is the
 * input (for the names it gave).
 */
static int
top_member(json_t *out, json_t *v, json_t *n, const char *nat,
    struct schedule_error *e)
{
	json_t *x = json_object_get(n, nat), *steps;
	const char *f = given(v, top_names, nat);

	if (x == NULL)
		return 0;
	if (strcmp(nat, "pipeline_id") == 0) {
		if (slug_ok(x, f, e) == -1)
			return -1;
	} else if (strcmp(nat, "name") == 0) {
		if (text_ok(x, f, 1, 200, e) == -1)
			return -1;
	} else if (strcmp(nat, "description") == 0) {
		if (json_is_null(x))
			x = json_string("");
		else if (text_ok(x, f, 0, 10000, e) == -1)
			return -1;
		else
			json_incref(x);
		return json_object_set_new(out, nat, x) == -1
		    ? doc_fail(e, "internal", f, "out of memory")
		    : 0;
	} else if (strcmp(nat, "steps") == 0) {
		if (!json_is_array(x) || json_array_size(x) == 0 ||
		    json_array_size(x) > PIPELINE_STEPS_MAX)
			return doc_fail(e, "invalid_field", f,
			    "expected an array of 1 to %d steps",
			    PIPELINE_STEPS_MAX);
		if ((steps = json_array()) == NULL)
			return doc_fail(e, "internal", f, "out of memory");
		for (size_t i = 0; i < json_array_size(x); i++) {
			json_t *s = step_parse(json_array_get(x, i), i, e);

			if (s == NULL ||
			    json_array_append_new(steps, s) == -1) {
				json_decref(steps);
				return s ? doc_fail(e, "internal", f,
				               "out of memory")
				         : -1;
			}
		}
		if (graph_check(steps, x, e) == -1) {
			json_decref(steps);
			return -1;
		}
		return json_object_set_new(out, nat, steps) == -1
		    ? doc_fail(e, "internal", f, "out of memory")
		    : 0;
	} else if (bool_ok(x, f, e) == -1) /* fail_fast, enabled */
		return -1;
	return json_object_set(out, nat, x) == -1
	    ? doc_fail(e, "internal", f, "out of memory")
	    : 0;
}

/*
 * Parses a pipeline document: a POST body (base NULL), or a PATCH body
 * applied to base (a document this function returned, as stored), whose
 * members the body's replace (steps whole) and whose id may not change.
 * Returns the native document, every member present (description "",
 * fail_fast false and enabled true by default; each step with depends_on
 * [], parallel true, params {}, retry and timeout_ms null for the
 * schedule's, run_when "success"), or NULL with *e naming the field.
 */
json_t *
pipeline_parse(
    const char *json, size_t len, const json_t *base, struct schedule_error *e)
{
	json_t *v, *n = NULL, *out = NULL;
	const char *id;

	if ((v = doc_load(json, len, e)) == NULL)
		return NULL;
	if ((n = natives(v, top_names, "", "a pipeline", e)) == NULL)
		goto fail;
	out = base ? json_deep_copy(base)
	           : json_pack("{s:s, s:b, s:b}", "description", "",
	                 "fail_fast", 0, "enabled", 1);
	if (out == NULL) {
		doc_fail(e, "internal", NULL, "out of memory");
		goto fail;
	}
	if (base &&
	    (id = json_string_value(json_object_get(n, "pipeline_id"))) &&
	    strcmp(
	        id, json_string_value(json_object_get(base, "pipeline_id")))) {
		doc_fail(e, "invalid_field", given(v, top_names, "pipeline_id"),
		    "a pipeline's id cannot change");
		goto fail;
	}
	for (const struct spelling *s = top_names; s->native; s++)
		if (top_member(out, v, n, s->native, e) == -1)
			goto fail;
	for (const struct spelling *s = top_names; s->native; s++)
		if (json_object_get(out, s->native) == NULL) {
			doc_fail(e, "missing_field", s->native, "required");
			goto fail;
		}
	json_decref(n);
	json_decref(v);
	return out;
fail:
	json_decref(out);
	json_decref(n);
	json_decref(v);
	return NULL;
}
