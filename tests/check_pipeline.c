/*
 * check_pipeline.c: the pipeline document (common/pipeline.c): the native
 * form of a full and of a minimal document (every default), seed 004's
 * spellings read as the native ones and named as given in errors, every
 * field's errors with the exact code and field path, the graph's checks
 * (duplicate ids, unknown and self dependencies, cycles named step by
 * step), the size limits, and PATCH (members replaced, the id kept).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cvtest.h"
#include "cronvisor.h"

/* Parses s, which must be valid. */
static json_t *
ok(const char *s)
{
	struct schedule_error e;
	json_t *d;

	memset(&e, 0, sizeof(e));
	d = pipeline_parse(s, strlen(s), NULL, &e);
	ck_assert_msg(
	    d != NULL, "%.300s: %s: %s (%s)", s, e.field, e.message, e.code);
	return d;
}

/* Parses s (on base, if given), which must fail with code at field. */
static void
bad_on(const json_t *base, const char *s, const char *code, const char *field,
    const char *msg_part)
{
	struct schedule_error e;
	json_t *d;

	memset(&e, 0, sizeof(e));
	d = pipeline_parse(s, strlen(s), base, &e);
	ck_assert_msg(d == NULL, "%.300s: accepted", s);
	ck_assert_msg(strcmp(e.code, code) == 0,
	    "%.300s: code %s, want %s (%s)", s, e.code, code, e.message);
	ck_assert_msg(strcmp(e.field, field) == 0,
	    "%.300s: field \"%s\", want \"%s\" (%s)", s, e.field, field,
	    e.message);
	if (msg_part)
		ck_assert_msg(strstr(e.message, msg_part) != NULL,
		    "%.300s: message \"%s\" lacks \"%s\"", s, e.message,
		    msg_part);
}

static void
bad(const char *s, const char *code, const char *field, const char *msg_part)
{
	bad_on(NULL, s, code, field, msg_part);
}

/* The native document d, compact with sorted keys, is want. */
static void
is(json_t *d, const char *want)
{
	char *got = json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS);

	ck_assert_msg(strcmp(got, want) == 0, "got  %s\nwant %s", got, want);
	free(got);
}

START_TEST(test_minimal_defaults)
{
	json_t *d = ok("{\"pipeline_id\": \"p\", \"name\": \"P\", \"steps\":"
	               " [{\"step_id\": \"a\", \"agent_id\": \"x\"}]}");

	is(d,
	    "{\"description\":\"\",\"enabled\":true,\"fail_fast\":false,"
	    "\"name\":\"P\",\"pipeline_id\":\"p\",\"steps\":[{\"agent_id\":"
	    "\"x\",\"depends_on\":[],\"parallel\":true,\"params\":{},"
	    "\"retry\":null,\"run_when\":\"success\",\"step_id\":\"a\","
	    "\"timeout_ms\":null}]}");
	json_decref(d);
}
END_TEST

START_TEST(test_full_native)
{
	json_t *d =
	    ok("{\"pipeline_id\": \"news\", \"name\": \"Newsletter\","
	       " \"description\": \"daily\", \"fail_fast\": true,"
	       " \"enabled\": false, \"steps\": ["
	       " {\"step_id\": \"collect\", \"agent_id\": \"data-collection\","
	       "  \"parallel\": false, \"params\": {\"source\": \"news\"},"
	       "  \"retry\": {\"max_retries\": 2, \"backoff\": \"linear\","
	       "  \"delay_ms\": 1500}, \"timeout_ms\": 60000},"
	       " {\"step_id\": \"analyze\", \"agent_id\": \"analysis\","
	       "  \"depends_on\": [\"collect\"], \"run_when\": \"done\"},"
	       " {\"step_id\": \"alert\", \"agent_id\": \"alert\","
	       "  \"depends_on\": [\"collect\", \"analyze\"],"
	       "  \"run_when\": \"failure\"}]}");

	is(d,
	    "{\"description\":\"daily\",\"enabled\":false,\"fail_fast\":true,"
	    "\"name\":\"Newsletter\",\"pipeline_id\":\"news\",\"steps\":["
	    "{\"agent_id\":\"data-collection\",\"depends_on\":[],"
	    "\"parallel\":false,\"params\":{\"source\":\"news\"},"
	    "\"retry\":{\"backoff\":\"linear\",\"delay_ms\":1500,"
	    "\"max_retries\":2},\"run_when\":\"success\",\"step_id\":"
	    "\"collect\",\"timeout_ms\":60000},"
	    "{\"agent_id\":\"analysis\",\"depends_on\":[\"collect\"],"
	    "\"parallel\":true,\"params\":{},\"retry\":null,\"run_when\":"
	    "\"done\",\"step_id\":\"analyze\",\"timeout_ms\":null},"
	    "{\"agent_id\":\"alert\",\"depends_on\":[\"collect\",\"analyze\"],"
	    "\"parallel\":true,\"params\":{},\"retry\":null,\"run_when\":"
	    "\"failure\",\"step_id\":\"alert\",\"timeout_ms\":null}]}");
	json_decref(d);
}
END_TEST

/* Seed 004's own pipeline, as its admin console would save it. */
START_TEST(test_seed_spelling)
{
	json_t *d = ok(
	    "{\"id\": \"newsletter-generation-pipeline\", \"name\": "
	    "\"Newsletter Generation Pipeline\", \"enabled\": true, \"steps\": ["
	    "{\"stepId\": \"collect\", \"agentId\": \"data-collection\","
	    " \"parallel\": false, \"retryConfig\": {\"maxRetries\": 3,"
	    " \"backoff\": \"exponential\", \"delay\": 5000}, \"timeout\": 30000},"
	    "{\"stepId\": \"analyze\", \"agentId\": \"analysis\","
	    " \"dependsOn\": [\"collect\"], \"parallel\": false},"
	    "{\"stepId\": \"generate\", \"agentId\": \"content-generation\","
	    " \"dependsOn\": [\"analyze\"], \"parallel\": false,"
	    " \"runWhen\": \"success\"}], \"failFast\": false}");
	json_t *s0 = json_array_get(json_object_get(d, "steps"), 0);

	ck_assert_str_eq(json_string_value(json_object_get(d, "pipeline_id")),
	    "newsletter-generation-pipeline");
	ck_assert_int_eq(json_integer_value(json_object_get(
	                     json_object_get(s0, "retry"), "delay_ms")),
	    5000);
	ck_assert_int_eq(
	    json_integer_value(json_object_get(s0, "timeout_ms")), 30000);
	ck_assert_str_eq(
	    json_string_value(json_array_get(
	        json_object_get(json_array_get(json_object_get(d, "steps"), 2),
	            "depends_on"),
	        0)),
	    "analyze");
	json_decref(d);
	/* Errors name the field as the input spelled it. */
	bad("{\"id\": \"p\", \"name\": \"P\", \"steps\": [{\"stepId\": \"a\","
	    " \"agentId\": \"x\", \"dependsOn\": [\"b\"]}]}",
	    "invalid_field", "steps[0].dependsOn[0]", "no step \"b\"");
	bad("{\"id\": \"p\", \"name\": \"P\", \"steps\": [{\"stepId\": \"a\","
	    " \"agentId\": \"x\", \"dependsOn\": [\"b\"]}, {\"stepId\": \"b\","
	    " \"agentId\": \"x\", \"dependsOn\": [\"a\"]}]}",
	    "invalid_field", "steps[0].dependsOn", "a cycle");
	bad("{\"id\": \"p\", \"name\": \"P\", \"steps\": [{\"stepId\": \"a\","
	    " \"agentId\": \"x\"}, {\"stepId\": \"a\", \"agentId\": \"x\"}]}",
	    "invalid_field", "steps[1].stepId", "duplicate step id");
	bad("{\"id\": \"p\", \"name\": \"P\", \"steps\": [{\"stepId\": \"a\","
	    " \"agentId\": \"X\"}]}",
	    "invalid_field", "steps[0].agentId", "slug");
	bad("{\"id\": \"p\", \"name\": \"P\", \"steps\": [{\"stepId\": \"a\","
	    " \"agentId\": \"x\", \"retryConfig\": {\"maxRetries\": -1}}]}",
	    "invalid_field", "steps[0].retryConfig.maxRetries", "0 to 1000");
	bad("{\"id\": \"p\", \"name\": \"P\", \"steps\": [{\"stepId\": \"a\","
	    " \"agentId\": \"x\", \"timeout\": 0}]}",
	    "invalid_field", "steps[0].timeout", NULL);
	/* Both spellings of one member. */
	bad("{\"id\": \"p\", \"pipeline_id\": \"p\", \"name\": \"P\","
	    " \"steps\": [{\"stepId\": \"a\", \"agentId\": \"x\"}]}",
	    "invalid_field", "pipeline_id", "given twice");
	bad("{\"id\": \"p\", \"name\": \"P\", \"steps\": [{\"stepId\": \"a\","
	    " \"step_id\": \"a\", \"agentId\": \"x\"}]}",
	    "invalid_field", "steps[0].step_id", "given twice");
}
END_TEST

#define P "{\"pipeline_id\": \"p\", \"name\": \"P\", \"steps\": "

START_TEST(test_field_errors)
{
	bad("[]", "invalid_json", "", "object");
	bad("{\"name\": \"P\", \"steps\": [{\"step_id\": \"a\", \"agent_id\": "
	    "\"x\"}]}",
	    "missing_field", "pipeline_id", NULL);
	bad("{\"pipeline_id\": \"p\", \"steps\": [{\"step_id\": \"a\", "
	    "\"agent_id\": \"x\"}]}",
	    "missing_field", "name", NULL);
	bad("{\"pipeline_id\": \"p\", \"name\": \"P\"}", "missing_field",
	    "steps", NULL);
	bad("{\"pipeline_id\": \"P Q\", \"name\": \"P\", \"steps\": []}",
	    "invalid_field", "pipeline_id", "slug");
	bad("{\"pipeline_id\": \"-p\", \"name\": \"P\", \"steps\": []}",
	    "invalid_field", "pipeline_id", "slug");
	bad("{\"pipeline_id\": \"p\", \"name\": \"\", \"steps\": []}",
	    "invalid_field", "name", "1 to 200");
	bad("{\"pipeline_id\": \"p\", \"name\": 5, \"steps\": []}",
	    "invalid_field", "name", "string");
	/* jansson refuses NUL in strings before the document is read. */
	bad("{\"pipeline_id\": \"p\", \"name\": \"a\\u0000b\", \"steps\": []}",
	    "invalid_json", "", "NUL");
	bad(P "[]}", "invalid_field", "steps", "1 to 100");
	bad(P "{}}", "invalid_field", "steps", "1 to 100");
	bad(P "[{\"step_id\": \"a\", \"agent_id\": \"x\"}], \"owner\": 1}",
	    "unknown_field", "owner", NULL);
	bad(P "[{\"step_id\": \"a\", \"agent_id\": \"x\"}], \"fail_fast\": 1}",
	    "invalid_field", "fail_fast", "true or false");
	bad(P "[{\"step_id\": \"a\", \"agent_id\": \"x\"}], \"enabled\": "
	      "\"yes\"}",
	    "invalid_field", "enabled", "true or false");
	bad(P "[5]}", "invalid_field", "steps[0]", "object");
	bad(P "[{\"agent_id\": \"x\"}]}", "missing_field", "steps[0].step_id",
	    NULL);
	bad(P "[{\"step_id\": \"a\"}]}", "missing_field", "steps[0].agent_id",
	    NULL);
	bad(P "[{\"step_id\": \"a\", \"agent_id\": \"x\", \"bogus\": 1}]}",
	    "unknown_field", "steps[0].bogus", NULL);
	bad(P "[{\"step_id\": \"a\", \"agent_id\": \"x\", \"params\": []}]}",
	    "invalid_field", "steps[0].params", "object");
	bad(P "[{\"step_id\": \"a\", \"agent_id\": \"x\", \"parallel\": 1}]}",
	    "invalid_field", "steps[0].parallel", "true or false");
	bad(P "[{\"step_id\": \"a\", \"agent_id\": \"x\", \"depends_on\": "
	      "\"b\"}]}",
	    "invalid_field", "steps[0].depends_on", "array");
	bad(P "[{\"step_id\": \"a\", \"agent_id\": \"x\", \"depends_on\": "
	      "[1]}]}",
	    "invalid_field", "steps[0].depends_on[0]", "string");
	bad(P "[{\"step_id\": \"a\", \"agent_id\": \"x\"}, {\"step_id\": \"b\","
	      " \"agent_id\": \"x\", \"depends_on\": [\"a\", \"a\"]}]}",
	    "invalid_field", "steps[1].depends_on[1]", "named twice");
	bad(P "[{\"step_id\": \"a\", \"agent_id\": \"x\", \"run_when\": "
	      "\"always\"}]}",
	    "invalid_field", "steps[0].run_when",
	    "\"success\", \"done\" or \"failure\"");
	bad(P "[{\"step_id\": \"a\", \"agent_id\": \"x\", \"retry\": "
	      "{\"max_retries\": 1, \"backoff\": \"random\"}}]}",
	    "invalid_field", "steps[0].retry.backoff", NULL);
	bad(P "[{\"step_id\": \"a\", \"agent_id\": \"x\", \"retry\": "
	      "{\"backoff\": \"fixed\"}}]}",
	    "missing_field", "steps[0].retry.max_retries", NULL);
	bad(P "[{\"step_id\": \"a\", \"agent_id\": \"x\", \"retry\": "
	      "{\"max_retries\": 1, \"delay_ms\": 0}}]}",
	    "invalid_field", "steps[0].retry.delay_ms", NULL);
	bad(P "[{\"step_id\": \"a\", \"agent_id\": \"x\", \"retry\": "
	      "{\"max_retries\": 1, \"jitter\": 0}}]}",
	    "unknown_field", "steps[0].retry.jitter", NULL);
	bad(P "[{\"step_id\": \"a\", \"agent_id\": \"x\", \"timeout_ms\": "
	      "1.5}]}",
	    "invalid_field", "steps[0].timeout_ms", "integer");
	/* A number jsonb would not give back as it came. */
	bad(P "[{\"step_id\": \"a\", \"agent_id\": \"x\", \"params\": "
	      "{\"n\": 1e400}}]}",
	    "invalid_json", "", NULL);
}
END_TEST

START_TEST(test_graph)
{
	json_t *d;

	bad(P "[{\"step_id\": \"a\", \"agent_id\": \"x\"}, {\"step_id\": \"a\","
	      " \"agent_id\": \"y\"}]}",
	    "invalid_field", "steps[1].step_id",
	    "duplicate step id \"a\" (steps[0] has it)");
	bad(P "[{\"step_id\": \"a\", \"agent_id\": \"x\", \"depends_on\": "
	      "[\"a\"]}]}",
	    "invalid_field", "steps[0].depends_on[0]", "itself");
	bad(P "[{\"step_id\": \"a\", \"agent_id\": \"x\", \"depends_on\": "
	      "[\"nope\"]}]}",
	    "invalid_field", "steps[0].depends_on[0]", "no step \"nope\"");
	/* Two steps, then three, on a cycle; a step that only leads to one. */
	bad(P "[{\"step_id\": \"a\", \"agent_id\": \"x\", \"depends_on\": "
	      "[\"b\"]}, {\"step_id\": \"b\", \"agent_id\": \"x\", "
	      "\"depends_on\": [\"a\"]}]}",
	    "invalid_field", "steps[0].depends_on",
	    "a cycle: a depends on b depends on a");
	bad(P "[{\"step_id\": \"start\", \"agent_id\": \"x\"},"
	      " {\"step_id\": \"tail\", \"agent_id\": \"x\", \"depends_on\": "
	      "[\"c\"]},"
	      " {\"step_id\": \"a\", \"agent_id\": \"x\", \"depends_on\": "
	      "[\"start\", \"c\"]},"
	      " {\"step_id\": \"b\", \"agent_id\": \"x\", \"depends_on\": "
	      "[\"a\"]},"
	      " {\"step_id\": \"c\", \"agent_id\": \"x\", \"depends_on\": "
	      "[\"b\"]}]}",
	    "invalid_field", "steps[4].depends_on",
	    "a cycle: c depends on b depends on a depends on c");
	/* A diamond is no cycle, whatever the order the steps come in. */
	d = ok(P "[{\"step_id\": \"join\", \"agent_id\": \"x\", \"depends_on\":"
	         " [\"l\", \"r\"]}, {\"step_id\": \"l\", \"agent_id\": \"x\","
	         " \"depends_on\": [\"top\"]}, {\"step_id\": \"r\", "
	         "\"agent_id\": \"x\", \"depends_on\": [\"top\"]},"
	         " {\"step_id\": \"top\", \"agent_id\": \"x\"}]}");
	json_decref(d);
}
END_TEST

/* PIPELINE_STEPS_MAX steps in a chain pass; one more is refused. */
START_TEST(test_limits)
{
	size_t cap = 64 * (PIPELINE_STEPS_MAX + 2) + 128, n;
	char *s = malloc(cap);
	json_t *d;

	for (int total = PIPELINE_STEPS_MAX; total <= PIPELINE_STEPS_MAX + 1;
	     total++) {
		n = (size_t)snprintf(s, cap, P "[");
		for (int i = 0; i < total; i++) {
			n += (size_t)snprintf(s + n, cap - n,
			    "%s{\"step_id\": \"s%d\", \"agent_id\": \"x\"",
			    i ? "," : "", i);
			if (i > 0)
				n += (size_t)snprintf(s + n, cap - n,
				    ", \"depends_on\": [\"s%d\"]", i - 1);
			n += (size_t)snprintf(s + n, cap - n, "}");
		}
		snprintf(s + n, cap - n, "]}");
		if (total == PIPELINE_STEPS_MAX) {
			d = ok(s);
			ck_assert_int_eq(
			    (int)json_array_size(json_object_get(d, "steps")),
			    PIPELINE_STEPS_MAX);
			json_decref(d);
		} else
			bad(s, "invalid_field", "steps", "1 to 100");
	}
	free(s);
}
END_TEST

START_TEST(test_patch)
{
	json_t *base = ok(P "[{\"step_id\": \"a\", \"agent_id\": \"x\"}],"
	                    " \"description\": \"d\"}");
	struct schedule_error e;
	const char *body = "{\"name\": \"Q\", \"enabled\": false, \"steps\": "
	                   "[{\"stepId\": \"b\", \"agentId\": \"y\"}]}";
	json_t *d;

	memset(&e, 0, sizeof(e));
	d = pipeline_parse(body, strlen(body), base, &e);
	ck_assert_msg(d != NULL, "%s: %s", e.field, e.message);
	is(d,
	    "{\"description\":\"d\",\"enabled\":false,\"fail_fast\":false,"
	    "\"name\":\"Q\",\"pipeline_id\":\"p\",\"steps\":[{\"agent_id\":"
	    "\"y\",\"depends_on\":[],\"parallel\":true,\"params\":{},"
	    "\"retry\":null,\"run_when\":\"success\",\"step_id\":\"b\","
	    "\"timeout_ms\":null}]}");
	json_decref(d);
	/* The same id may be sent back; another may not. */
	body = "{\"pipeline_id\": \"p\", \"description\": null}";
	d = pipeline_parse(body, strlen(body), base, &e);
	ck_assert_ptr_nonnull(d);
	ck_assert_str_eq(
	    json_string_value(json_object_get(d, "description")), "");
	json_decref(d);
	bad_on(base, "{\"id\": \"q\"}", "invalid_field", "id", "cannot change");
	bad_on(base, "{\"steps\": [{\"step_id\": \"a\"}]}", "missing_field",
	    "steps[0].agent_id", NULL);
	json_decref(base);
}
END_TEST

static Suite *
pipeline_suite(void)
{
	Suite *s = suite_create("pipeline");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_minimal_defaults);
	tcase_add_test(tc, test_full_native);
	tcase_add_test(tc, test_seed_spelling);
	tcase_add_test(tc, test_field_errors);
	tcase_add_test(tc, test_graph);
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_patch);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return cvtest_run(pipeline_suite());
}
