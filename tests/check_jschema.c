/*
 * check_jschema.c: the JSON Schema subset of common/jschema.c: every
 * keyword on valid and invalid instances, the boundary of every bound,
 * integer against number (3.0), lengths in code points, paths and their
 * escaping and cutting, which error comes first, each refused keyword and
 * ill-typed value at check time with its path, the depth limits of schemas
 * and instances, and uniqueItems on arrays large enough to take the
 * hashed path, against the pairwise one.
 *
 * The JSON of most tests is written with ' for " to stay readable; j()
 * swaps them back.  Tests that need a ' or an escape load JSON as it is.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cvtest.h"
#include "cronvisor.h"

/* Loads s (any JSON value, NUL escapes allowed) or fails the test. */
static json_t *
load_raw(const char *s)
{
	json_error_t err;
	json_t *v = json_loads(s, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);

	ck_assert_msg(v != NULL, "bad test JSON %s: %s", s, err.text);
	return v;
}

/* Loads s with every ' read as ". */
static json_t *
j(const char *s)
{
	char *t = strdup(s);
	json_t *v;

	ck_assert_ptr_nonnull(t);
	for (char *p = t; *p; p++)
		if (*p == '\'')
			*p = '"';
	v = load_raw(t);
	free(t);
	return v;
}

/* The schema s (in j() form) passes jschema_check(). */
static void
check_ok(const char *s)
{
	struct jschema_error e;
	json_t *schema = j(s);

	ck_assert_msg(jschema_check(schema, &e) == 0, "%s refused: %s: %s", s,
	    e.path, e.message);
	ck_assert_str_eq(e.path, "");
	json_decref(schema);
}

/* The schema v fails jschema_check() at path with message. */
static void
check_fails_json(json_t *v, const char *path, const char *message)
{
	struct jschema_error e;
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

	ck_assert_msg(jschema_check(v, &e) == -1, "%s accepted", s);
	ck_assert_msg(
	    strcmp(e.path, path) == 0 && strcmp(e.message, message) == 0,
	    "%s: got \"%s\": %s; want \"%s\": %s", s, e.path, e.message, path,
	    message);
	free(s);
	json_decref(v);
}

static void
check_fails(const char *s, const char *path, const char *message)
{
	check_fails_json(j(s), path, message);
}

/*
 * Validates the instance against the checked schema: 0 or -1, with
 * e filled in.
 */
static int
run(json_t *schema, json_t *instance, struct jschema_error *e)
{
	int rc;

	ck_assert_msg(jschema_check(schema, e) == 0, "schema refused: %s: %s",
	    e->path, e->message);
	rc = jschema_validate(schema, instance, e);
	json_decref(schema);
	json_decref(instance);
	return rc;
}

static void
valid(const char *schema, const char *instance)
{
	struct jschema_error e;

	ck_assert_msg(run(j(schema), j(instance), &e) == 0,
	    "%s refused %s: \"%s\": %s", schema, instance, e.path, e.message);
	ck_assert_str_eq(e.path, "");
	ck_assert_str_eq(e.message, "");
}

static void
invalid_json(
    json_t *schema, json_t *instance, const char *path, const char *message)
{
	struct jschema_error e;
	char *s = json_dumps(schema, JSON_COMPACT | JSON_ENCODE_ANY);
	char *i = json_dumps(instance, JSON_COMPACT | JSON_ENCODE_ANY);

	ck_assert_msg(run(schema, instance, &e) == -1, "%s accepted %s", s, i);
	ck_assert_msg(
	    strcmp(e.path, path) == 0 && strcmp(e.message, message) == 0,
	    "%s on %s: got \"%s\": %s; want \"%s\": %s", s, i, e.path,
	    e.message, path, message);
	free(s);
	free(i);
}

static void
invalid(const char *schema, const char *instance, const char *path,
    const char *message)
{
	invalid_json(j(schema), j(instance), path, message);
}

/* seg n times, sep between them, into buf. */
static void
repeat(char *buf, size_t len, const char *seg, int n, const char *sep)
{
	buf[0] = '\0';
	for (int i = 0; i < n; i++) {
		size_t used = strlen(buf);

		snprintf(buf + used, len - used, "%s%s", i ? sep : "", seg);
	}
}

START_TEST(test_boolean_schemas)
{
	valid("true", "{'a': [1, null]}");
	valid("{}", "'anything'");
	invalid("false", "0", "", "is not allowed (its schema is false)");
	invalid("{'properties': {'x': false}}", "{'x': 1}", "x",
	    "is not allowed (its schema is false)");
	valid("{'properties': {'x': false}}", "{'y': 1}");
	check_fails("1", "", "must be a schema (an object or a boolean)");
	check_fails("null", "", "must be a schema (an object or a boolean)");
	check_fails("[]", "", "must be a schema (an object or a boolean)");
}
END_TEST

/* Every type name against a value of every kind. */
START_TEST(test_type_each)
{
	static const char *const values[] = {
	    "null", "true", "3", "3.0", "3.5", "'s'", "[]", "{}"};
	static const struct {
		const char *type, *message;
		const char ok[9]; /* one char per value: y accepted */
	} types[] = {
	    {"null", "must be null", "ynnnnnnn"},
	    {"boolean", "must be a boolean", "nynnnnnn"},
	    {"integer", "must be an integer", "nnyynnnn"},
	    {"number", "must be a number", "nnyyynnn"},
	    {"string", "must be a string", "nnnnnynn"},
	    {"array", "must be an array", "nnnnnnyn"},
	    {"object", "must be an object", "nnnnnnny"},
	};
	char schema[64];

	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		snprintf(
		    schema, sizeof(schema), "{'type': '%s'}", types[t].type);
		for (size_t v = 0; v < 8; v++)
			if (types[t].ok[v] == 'y')
				valid(schema, values[v]);
			else
				invalid(
				    schema, values[v], "", types[t].message);
	}
}
END_TEST

START_TEST(test_type_union)
{
	valid("{'type': ['string', 'null']}", "null");
	valid("{'type': ['string', 'null']}", "'x'");
	invalid("{'type': ['string', 'null']}", "1", "",
	    "must be a string or null");
	invalid("{'type': ['object', 'array', 'null']}", "true", "",
	    "must be an object, an array or null");
	valid("{'type': ['integer', 'boolean']}", "false");
	invalid("{'type': ['integer']}", "0.5", "", "must be an integer");
}
END_TEST

/* integer takes a real with no fraction, however it is written. */
START_TEST(test_integer_real)
{
	valid("{'type': 'integer'}", "3.0");
	valid("{'type': 'integer'}", "-0.0");
	valid("{'type': 'integer'}", "1e300");
	valid("{'type': 'integer'}", "-9223372036854775808");
	invalid("{'type': 'integer'}", "3.5", "", "must be an integer");
	invalid("{'type': 'integer'}", "-1e-9", "", "must be an integer");
	valid("{'type': 'number'}", "3");
}
END_TEST

START_TEST(test_required)
{
	valid("{'required': ['a', 'b']}", "{'b': 0, 'a': null}");
	invalid("{'required': ['a', 'b']}", "{'a': 1}", "b", "is required");
	invalid("{'required': ['a', 'b']}", "{}", "a", "is required");
	valid("{'required': []}", "{}");
	/* required means nothing to a value that is not an object */
	valid("{'required': ['a']}", "[1]");
	invalid("{'properties': {'p': {'required': ['q']}}}", "{'p': {}}",
	    "p.q", "is required");
	invalid("{'required': ['first name']}", "{}", "[\"first name\"]",
	    "is required");
}
END_TEST

START_TEST(test_nested_paths)
{
	static const char schema[] =
	    "{'properties': {'tickers': {'items': {'properties':"
	    " {'id': {'type': 'integer'}}}}}}";

	valid(schema, "{'tickers': [{'id': 1}, {'id': 2.0}]}");
	invalid(schema, "{'tickers': [{'id': 1}, {'id': 2}, {'id': 2.5}]}",
	    "tickers[2].id", "must be an integer");
	invalid("{'items': {'items': {'type': 'string'}}}", "[[], ['a', 1]]",
	    "[1][1]", "must be a string");
	invalid("{'additionalProperties': {'properties': {'a b':"
	        " {'items': {'maximum': 1}}}}}",
	    "{'x': {'a b': [0, 1, 2]}}", "x[\"a b\"][2]", "must be at most 1");
}
END_TEST

START_TEST(test_additional_properties)
{
	static const char closed[] =
	    "{'properties': {'a': {}}, 'additionalProperties': false}";

	valid(closed, "{'a': 1}");
	valid(closed, "{}");
	invalid(closed, "{'a': 1, 'extra': 2}", "extra",
	    "is not allowed (additionalProperties is false)");
	valid("{'additionalProperties': {'type': 'integer'}}", "{'x': 1}");
	invalid("{'properties': {'s': {'type': 'string'}},"
	        " 'additionalProperties': {'type': 'integer'}}",
	    "{'s': 'ok', 'n': 'no'}", "n", "must be an integer");
	valid("{'additionalProperties': true}", "{'x': 1}");
	valid("{'properties': {'a': {}}}", "{'zzz': 1}");
	invalid("{'additionalProperties': false}", "{'x': 1}", "x",
	    "is not allowed (additionalProperties is false)");
}
END_TEST

/* enum and const compare as JSON Schema does: 1 equals 1.0. */
START_TEST(test_enum_const)
{
	static const char e[] = "{'enum': ['a', 1, null, {'k': [1, 2]}]}";

	valid(e, "'a'");
	valid(e, "1.0");
	valid(e, "null");
	valid(e, "{'k': [1.0, 2]}");
	invalid(e, "'1'", "", "is not one of the allowed values");
	invalid(e, "{'k': [2, 1]}", "", "is not one of the allowed values");
	invalid(
	    e, "{'k': [1, 2], 'l': 0}", "", "is not one of the allowed values");
	invalid(e, "false", "", "is not one of the allowed values");
	valid("{'enum': [{'a': 1, 'b': 2}]}", "{'b': 2, 'a': 1}");
	valid("{'const': 2}", "2.0");
	invalid("{'const': 'v1'}", "'v2'", "", "must be \"v1\"");
	invalid("{'const': 2.5}", "2", "", "must be 2.5");
	invalid("{'const': false}", "0", "", "must be false");
	invalid("{'const': null}", "false", "", "must be null");
	invalid("{'const': [1]}", "[1, 1]", "", "is not the allowed value");
	valid("{'const': {'a': [true]}}", "{'a': [true]}");
	invalid("{'const': {'a': 1}}", "{}", "", "is not the allowed value");
	invalid("{'const': [1, 2]}", "[1]", "", "is not the allowed value");
	/* exact above 2^53, where a double cannot tell them apart */
	invalid("{'const': 9007199254740993}", "9007199254740992.0", "",
	    "must be 9007199254740993");
}
END_TEST

/* Every numeric bound at, just inside and just outside its boundary. */
START_TEST(test_number_bounds)
{
	valid("{'minimum': 10}", "10");
	valid("{'minimum': 10}", "10.0");
	invalid("{'minimum': 10}", "9.999", "", "must be at least 10");
	invalid("{'minimum': 10}", "9", "", "must be at least 10");
	valid("{'exclusiveMinimum': 10}", "10.5");
	valid("{'exclusiveMinimum': 10}", "11");
	invalid(
	    "{'exclusiveMinimum': 10}", "10", "", "must be greater than 10");
	invalid(
	    "{'exclusiveMinimum': 10}", "10.0", "", "must be greater than 10");
	valid("{'maximum': 10}", "10");
	invalid("{'maximum': 10}", "10.0001", "", "must be at most 10");
	invalid("{'maximum': 10}", "11", "", "must be at most 10");
	valid("{'exclusiveMaximum': 10}", "9");
	invalid("{'exclusiveMaximum': 10}", "10", "", "must be less than 10");
	valid("{'minimum': 0.1}", "0.1");
	invalid("{'minimum': 0.1}", "0", "", "must be at least 0.1");
	invalid("{'maximum': -1.5}", "-1", "", "must be at most -1.5");
	valid("{'minimum': -1.5}", "-1");
	/* integer against real, exactly, near 2^53 and 2^63 */
	invalid("{'maximum': 9007199254740992.0}", "9007199254740993", "",
	    "must be at most 9007199254740992");
	valid("{'maximum': 9223372036854775807}", "9223372036854775807");
	invalid("{'maximum': 9223372036854775807}", "9223372036854775808.0", "",
	    "must be at most 9223372036854775807");
	valid("{'exclusiveMaximum': 9223372036854775808.0}",
	    "9223372036854775807");
	valid("{'minimum': -1e19}", "-9223372036854775808");
	invalid("{'maximum': -1e19}", "-9223372036854775808", "",
	    "must be at most -1e+19");
	/* bounds say nothing of what is not a number */
	valid("{'minimum': 10}", "'5'");
}
END_TEST

/* Lengths count code points: é is one, not two bytes. */
START_TEST(test_string_lengths)
{
	valid("{'maxLength': 1}", "'\\u00e9'");
	valid("{'maxLength': 1}", "'\xc3\xa9'");
	valid("{'maxLength': 1}", "'\xf0\x9f\x98\x80'"); /* U+1F600 */
	invalid("{'maxLength': 1}", "'\xc3\xa9\xc3\xa9'", "",
	    "must be at most 1 character long");
	invalid("{'minLength': 2}", "'\xc3\xa9'", "",
	    "must be at least 2 characters long");
	valid("{'minLength': 3}", "'abc'");
	invalid("{'minLength': 3}", "'ab'", "",
	    "must be at least 3 characters long");
	valid("{'maxLength': 3}", "'abc'");
	invalid("{'maxLength': 3}", "'abcd'", "",
	    "must be at most 3 characters long");
	valid("{'maxLength': 0}", "''");
	valid("{'minLength': 2, 'maxLength': 2}", "'a\\u0000'");
	valid("{'minLength': 1}", "5");
}
END_TEST

START_TEST(test_array_counts)
{
	valid("{'minItems': 2}", "[1, 2]");
	invalid("{'minItems': 2}", "[1]", "", "must have at least 2 items");
	valid("{'maxItems': 2}", "[1, 2]");
	invalid(
	    "{'maxItems': 2}", "[1, 2, 3]", "", "must have at most 2 items");
	invalid("{'maxItems': 1}", "[1, 2]", "", "must have at most 1 item");
	valid("{'maxItems': 0}", "[]");
	valid("{'minItems': 5}", "{}");
	invalid("{'items': {'type': 'integer'}}", "[1, 2, 'x', 4]", "[2]",
	    "must be an integer");
	valid("{'items': false}", "[]");
	invalid("{'items': false}", "[0]", "[0]",
	    "is not allowed (its schema is false)");
}
END_TEST

START_TEST(test_object_counts)
{
	valid("{'minProperties': 1}", "{'a': 0}");
	invalid(
	    "{'minProperties': 1}", "{}", "", "must have at least 1 property");
	valid("{'maxProperties': 2}", "{'a': 0, 'b': 0}");
	invalid("{'maxProperties': 2}", "{'a': 0, 'b': 0, 'c': 0}", "",
	    "must have at most 2 properties");
	valid("{'maxProperties': 0}", "[1]");
}
END_TEST

START_TEST(test_unique_small)
{
	valid("{'uniqueItems': true}", "[1, '1', [1], {'1': 1}, true, null]");
	invalid("{'uniqueItems': true}", "[1, 2, 1]", "",
	    "must not have duplicate items ([0] and [2] are equal)");
	invalid("{'uniqueItems': true}", "[1, 2.0, 2]", "",
	    "must not have duplicate items ([1] and [2] are equal)");
	invalid("{'uniqueItems': true}", "[{'a': 1, 'b': 2}, {'b': 2, 'a': 1}]",
	    "", "must not have duplicate items ([0] and [1] are equal)");
	valid("{'uniqueItems': true}", "[[1, 2], [2, 1]]");
	valid("{'uniqueItems': false}", "[1, 1]");
	valid("{'uniqueItems': true}", "[]");
}
END_TEST

/* n elements 0..n-1 as integers, with a[k] set to the value of a[v]. */
static json_t *
numbers(size_t n, const size_t *k, const size_t *v, size_t pairs, int real)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_integer((json_int_t)i * 7));
	for (size_t p = 0; p < pairs; p++)
		json_array_set_new(a, k[p],
		    real ? json_real((double)v[p] * 7)
		         : json_integer((json_int_t)v[p] * 7));
	return a;
}

/*
 * Arrays of 7 elements (compared pairwise) and of 8 and more (hashed)
 * report the same pair: the first element equal to an earlier one.
 */
START_TEST(test_unique_large)
{
	static const size_t k1[] = {6}, v1[] = {2};
	static const size_t k2[] = {90, 95}, v2[] = {37, 5};
	static const size_t k3[] = {20, 50}, v3[] = {4, 4};
	static const size_t k4[] = {7}, v4[] = {0};

	invalid_json(j("{'uniqueItems': true}"), numbers(7, k1, v1, 1, 0), "",
	    "must not have duplicate items ([2] and [6] are equal)");
	invalid_json(j("{'uniqueItems': true}"), numbers(8, k1, v1, 1, 0), "",
	    "must not have duplicate items ([2] and [6] are equal)");
	invalid_json(j("{'uniqueItems': true}"), numbers(100, k2, v2, 2, 0), "",
	    "must not have duplicate items ([37] and [90] are equal)");
	invalid_json(j("{'uniqueItems': true}"), numbers(100, k3, v3, 2, 1), "",
	    "must not have duplicate items ([4] and [20] are equal)");
	invalid_json(j("{'uniqueItems': true}"), numbers(8, k4, v4, 1, 1), "",
	    "must not have duplicate items ([0] and [7] are equal)");
	valid("{'uniqueItems': true}",
	    "[{'a': 1, 'b': 2}, {'a': 2, 'b': 1}, [1, 2], [2, 1], 'a', 'b',"
	    " 1.5, 1, true, false, null, {}]");
	invalid("{'uniqueItems': true}",
	    "[0, 1, 2, 3, 4, 5, 6, 7, {'x': [1, {'y': 2}], 'z': 3},"
	    " {'z': 3.0, 'x': [1, {'y': 2}]}]",
	    "", "must not have duplicate items ([8] and [9] are equal)");
}
END_TEST

/* 200,000 distinct elements: a pairwise check would take minutes. */
START_TEST(test_unique_many)
{
	struct jschema_error e;
	json_t *a = json_array(), *s = j("{'uniqueItems': true}");

	for (json_int_t i = 0; i < 200000; i++)
		json_array_append_new(
		    a, i % 2 ? json_integer(i) : json_real((double)i + 0.5));
	ck_assert_int_eq(jschema_validate(s, a, &e), 0);
	json_array_append_new(a, json_real(199999.0));
	ck_assert_int_eq(jschema_validate(s, a, &e), -1);
	ck_assert_str_eq(e.message,
	    "must not have duplicate items ([199999] and [200000] are equal)");
	json_decref(a);
	json_decref(s);
}
END_TEST

/*
 * The first error in document order: the value's own keywords before its
 * members, required names before members, members in the order of
 * "properties", then the others in the instance's order.
 */
START_TEST(test_first_error)
{
	static const char schema[] =
	    "{'properties': {'b': {'type': 'string'}, 'a': {'type': 'string'}},"
	    " 'additionalProperties': {'type': 'string'}}";

	invalid(schema, "{'a': 1, 'b': 2}", "b", "must be a string");
	invalid(schema, "{'z': 0, 'a': 1}", "a", "must be a string");
	invalid(schema, "{'z': 0, 'y': 1, 'b': 'ok'}", "z", "must be a string");
	invalid("{'required': ['r'], 'properties': {'a': {'type': 'null'}}}",
	    "{'a': 1}", "r", "is required");
	invalid("{'minItems': 3, 'items': {'type': 'string'}}", "[1]", "",
	    "must have at least 3 items");
	invalid("{'type': 'integer', 'enum': [1], 'minimum': 5}", "'x'", "",
	    "must be an integer");
	invalid("{'enum': [1, 7], 'minimum': 5}", "3", "",
	    "is not one of the allowed values");
	invalid("{'minimum': 0, 'maximum': 1, 'exclusiveMinimum': 0}", "0", "",
	    "must be greater than 0");
	invalid("{'items': {'type': 'string'}, 'uniqueItems': true}", "[1, 1]",
	    "", "must not have duplicate items ([0] and [1] are equal)");
}
END_TEST

START_TEST(test_path_escaping)
{
	static const char schema[] = "{'additionalProperties': false}";
	json_t *inst;

	invalid(schema, "{'_x9': 1}", "_x9",
	    "is not allowed (additionalProperties is false)");
	invalid(schema, "{'a.b': 1}", "[\"a.b\"]",
	    "is not allowed (additionalProperties is false)");
	invalid(schema, "{'1abc': 1}", "[\"1abc\"]",
	    "is not allowed (additionalProperties is false)");
	invalid(schema, "{'': 1}", "[\"\"]",
	    "is not allowed (additionalProperties is false)");
	invalid_json(j(schema), load_raw("{\"say \\\"hi\\\"\\\\\": 1}"),
	    "[\"say \\\"hi\\\"\\\\\"]",
	    "is not allowed (additionalProperties is false)");
	invalid_json(j(schema), load_raw("{\"a\\nb\\u001b\\u007f\": 1}"),
	    "[\"a\\nb\\u001b\\u007f\"]",
	    "is not allowed (additionalProperties is false)");
	invalid_json(j(schema), load_raw("{\"\\u009b\\u00e9\": 1}"),
	    "[\"\\u009b\xc3\xa9\"]",
	    "is not allowed (additionalProperties is false)");
	/* a byte that is not UTF-8 (only a _nocheck call makes one) */
	inst = json_object();
	json_object_setn_new_nocheck(inst, "a\xff", 2, json_true());
	invalid_json(j(schema), inst, "[\"a\\ufffd\"]",
	    "is not allowed (additionalProperties is false)");
	/* jansson reads no NUL in a key, but makes one with json_object_setn */
	inst = json_object();
	json_object_setn_new(inst, "a\0b", 3, json_true());
	invalid_json(j(schema), inst, "[\"a\\u0000b\"]",
	    "is not allowed (additionalProperties is false)");
	invalid("{'properties': {'a b': {'items': {'additionalProperties':"
	        " false}}}}",
	    "{'a b': [{}, {'c': {'d': 1}}]}", "[\"a b\"][1].c",
	    "is not allowed (additionalProperties is false)");
}
END_TEST

/*
 * A path too long for its buffer ends in "...", cut between segments:
 * eight names of 40 bytes, the first six fit (40 + 5 * 41 = 245 bytes),
 * the seventh would not leave room for the "...".
 */
START_TEST(test_path_cut)
{
	struct jschema_error e;
	char name[41], want[512];
	json_t *inst = json_string("not an integer");
	json_t *schema = j("{'type': 'integer'}");

	memset(name, 'n', 40);
	name[40] = '\0';
	for (int i = 0; i < 8; i++) {
		inst = json_pack("{s:o}", name, inst);
		schema = json_pack("{s:o}", "additionalProperties", schema);
	}
	ck_assert_int_eq(run(schema, inst, &e), -1);
	ck_assert_str_eq(e.message, "must be an integer");
	repeat(want, sizeof(want), name, 6, ".");
	strcat(want, "...");
	ck_assert_str_eq(e.path, want);
}
END_TEST

/*
 * The boundary of the cut: a path of 252 bytes is whole, one of 253 is
 * not (the "..." and the NUL must still fit in 256).
 */
START_TEST(test_path_boundary)
{
	static const char schema[] =
	    "{'additionalProperties': {'additionalProperties': false}}";
	char a[201], b[53], doc[400], want[300];

	memset(a, 'a', 200);
	a[200] = '\0';
	memset(b, 'b', 52);
	b[52] = '\0';
	snprintf(doc, sizeof(doc), "{'%s': {'%s': 1}}", a, b + 1);
	snprintf(want, sizeof(want), "%s.%s", a, b + 1);
	ck_assert_uint_eq(strlen(want), 252);
	invalid(schema, doc, want,
	    "is not allowed (additionalProperties is false)");
	snprintf(doc, sizeof(doc), "{'%s': {'%s': 1}}", a, b);
	snprintf(want, sizeof(want), "%s...", a);
	invalid(schema, doc, want,
	    "is not allowed (additionalProperties is false)");
}
END_TEST

/* A member name longer than the whole path is "..." alone. */
START_TEST(test_path_long_name)
{
	char name[400], doc[500];

	memset(name, 'x', 300);
	name[300] = '\0';
	snprintf(doc, sizeof(doc), "{'%s': 1}", name);
	invalid("{'additionalProperties': false}", doc, "...",
	    "is not allowed (additionalProperties is false)");
	name[0] = ' ';
	snprintf(doc, sizeof(doc), "{'a': {'%s': 1}}", name);
	invalid("{'additionalProperties': {'additionalProperties': false}}",
	    doc, "a...", "is not allowed (additionalProperties is false)");
}
END_TEST

/* Each keyword outside the subset is refused, with its place. */
START_TEST(test_check_unsupported)
{
	/* the name, and its path: a name with a $ is not an identifier */
	static const char *const refused[][2] = {{"pattern", ".pattern"},
	    {"anyOf", ".anyOf"}, {"oneOf", ".oneOf"}, {"allOf", ".allOf"},
	    {"not", ".not"}, {"$ref", "[\"$ref\"]"}, {"$defs", "[\"$defs\"]"},
	    {"definitions", ".definitions"}, {"if", ".if"}, {"then", ".then"},
	    {"else", ".else"}, {"patternProperties", ".patternProperties"},
	    {"prefixItems", ".prefixItems"}, {"contains", ".contains"},
	    {"minContains", ".minContains"}, {"maxContains", ".maxContains"},
	    {"dependentRequired", ".dependentRequired"},
	    {"dependentSchemas", ".dependentSchemas"},
	    {"propertyNames", ".propertyNames"},
	    {"unevaluatedProperties", ".unevaluatedProperties"},
	    {"unevaluatedItems", ".unevaluatedItems"},
	    {"multipleOf", ".multipleOf"},
	    {"additionalItems", ".additionalItems"},
	    {"contentEncoding", ".contentEncoding"},
	    {"$anchor", "[\"$anchor\"]"}, {"$dynamicRef", "[\"$dynamicRef\"]"},
	    {"Type", ".Type"}};
	char schema[128], path[128], message[128], kname[101];

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		const char *name = refused[i][0], *seg = refused[i][1];

		snprintf(message, sizeof(message),
		    "keyword \"%s\" is not supported", name);
		snprintf(schema, sizeof(schema), "{'%s': {}}", name);
		check_fails(schema, seg + (seg[0] == '.'), message);
		snprintf(schema, sizeof(schema),
		    "{'properties': {'name': {'type': 'string', '%s': 1}}}",
		    name);
		snprintf(path, sizeof(path), "properties.name%s", seg);
		check_fails(schema, path, message);
	}
	check_fails("{'items': {'anyOf': []}}", "items.anyOf",
	    "keyword \"anyOf\" is not supported");
	check_fails("{'additionalProperties': {'$ref': '#'}}",
	    "additionalProperties[\"$ref\"]",
	    "keyword \"$ref\" is not supported");
	check_fails("{'properties': {'a b': {'pattern': 'x'}}}",
	    "properties[\"a b\"].pattern",
	    "keyword \"pattern\" is not supported");
	check_fails_json(load_raw("{\"x\\n\\\"y\": 1}"), "[\"x\\n\\\"y\"]",
	    "keyword \"x\\n\\\"y\" is not supported");
	/* a long name is cut in the message, not in the path */
	memset(kname, 'k', 100);
	kname[100] = '\0';
	snprintf(schema, sizeof(schema), "{'%s': 1}", kname);
	snprintf(message, sizeof(message),
	    "keyword \"%.66s...\" is not supported", kname);
	check_fails(schema, kname, message);
}
END_TEST

/* Each keyword's value of the wrong type, and what is accepted. */
START_TEST(test_check_values)
{
	check_fails("{'minimum': '1'}", "minimum", "must be a number");
	check_fails("{'exclusiveMinimum': true}", "exclusiveMinimum",
	    "must be a number");
	check_fails(
	    "{'maxLength': -1}", "maxLength", "must be a non-negative integer");
	check_fails(
	    "{'minItems': 1.5}", "minItems", "must be a non-negative integer");
	check_fails("{'maxProperties': '2'}", "maxProperties",
	    "must be a non-negative integer");
	check_ok("{'minLength': 2.0, 'maxItems': 0, 'minProperties': 1e30}");
	check_fails(
	    "{'required': 'a'}", "required", "must be an array of strings");
	check_fails(
	    "{'required': ['a', 1]}", "required[1]", "must be a string");
	check_fails(
	    "{'required': ['a', 'b', 'a']}", "required[2]", "repeats \"a\"");
	check_fails("{'type': 'strin'}", "type",
	    "\"strin\" is not a type (object, array, string, number, integer, "
	    "boolean or null)");
	check_fails("{'type': ['string', 'nul']}", "type[1]",
	    "\"nul\" is not a type (object, array, string, number, integer, "
	    "boolean or null)");
	check_fails(
	    "{'type': ['string', 'string']}", "type[1]", "repeats \"string\"");
	check_fails("{'type': []}", "type", "must not be empty");
	check_fails(
	    "{'type': 1}", "type", "must be a type name or an array of them");
	check_fails("{'type': [null]}", "type[0]", "must be a type name");
	check_fails("{'enum': []}", "enum", "must not be empty");
	check_fails("{'enum': 1}", "enum", "must be an array");
	check_fails(
	    "{'properties': []}", "properties", "must be an object of schemas");
	check_fails("{'properties': {'a': 1}}", "properties.a",
	    "must be a schema (an object or a boolean)");
	check_fails("{'items': [{}]}", "items",
	    "must be a schema (an object or a boolean)");
	check_fails("{'additionalProperties': 'no'}", "additionalProperties",
	    "must be a schema (an object or a boolean)");
	check_fails("{'uniqueItems': 1}", "uniqueItems", "must be a boolean");
	check_fails("{'properties': {'age': {'minimum': null}}}",
	    "properties.age.minimum", "must be a number");
	check_ok("{'const': null, 'enum': [null, [], {}]}");
}
END_TEST

/* Bounds with nothing between them are refused at the lower one. */
START_TEST(test_check_bounds)
{
	check_fails("{'minimum': 10, 'maximum': 5}", "minimum",
	    "must not be greater than maximum (10 > 5)");
	check_ok("{'minimum': 10, 'maximum': 10}");
	check_fails("{'minimum': 5, 'exclusiveMaximum': 5}", "minimum",
	    "must be less than exclusiveMaximum (5 >= 5)");
	check_fails("{'exclusiveMinimum': 5.5, 'maximum': 5.5}",
	    "exclusiveMinimum", "must be less than maximum (5.5 >= 5.5)");
	check_ok("{'exclusiveMinimum': 1, 'exclusiveMaximum': 2}");
	check_fails("{'minLength': 3, 'maxLength': 2}", "minLength",
	    "must not be greater than maxLength (3 > 2)");
	check_fails("{'minItems': 3, 'maxItems': 2}", "minItems",
	    "must not be greater than maxItems (3 > 2)");
	check_fails("{'minProperties': 1, 'maxProperties': 0}", "minProperties",
	    "must not be greater than maxProperties (1 > 0)");
	check_fails("{'properties': {'age': {'maximum': 1, 'minimum': 2.5}}}",
	    "properties.age.minimum",
	    "must not be greater than maximum (2.5 > 1)");
}
END_TEST

/* Annotations are accepted, type-checked, and change nothing. */
START_TEST(test_annotations)
{
	static const char schema[] =
	    "{'$schema': 'https://json-schema.org/draft/2020-12/schema',"
	    " '$id': 'urn:x', '$comment': 'c', 'title': 't',"
	    " 'description': 'd', 'default': 'not an integer',"
	    " 'examples': [1, 'x'], 'format': 'email', 'deprecated': true,"
	    " 'readOnly': false, 'writeOnly': true, 'type': 'string'}";

	valid(schema, "'not an email'");
	invalid(schema, "1", "", "must be a string");
	check_fails("{'title': 1}", "title", "must be a string");
	check_fails("{'description': null}", "description", "must be a string");
	check_fails("{'format': 1}", "format", "must be a string");
	check_fails("{'examples': {}}", "examples", "must be an array");
	check_fails("{'deprecated': 'yes'}", "deprecated", "must be a boolean");
	check_fails("{'readOnly': 0}", "readOnly", "must be a boolean");
}
END_TEST

/* `{"items": ... {"items": leaf}}` with leaf at depth n. */
static json_t *
nested_items(int n, json_t *leaf)
{
	for (int i = 0; i < n; i++)
		leaf = json_pack("{s:o}", "items", leaf);
	return leaf;
}

/* A value at depth n: n arrays around it. */
static json_t *
nested_arrays(int n, json_t *leaf)
{
	for (int i = 0; i < n; i++)
		leaf = json_pack("[o]", leaf);
	return leaf;
}

START_TEST(test_depth_schema)
{
	struct jschema_error e;
	char path[512];
	json_t *s;

	s = nested_items(JSCHEMA_DEPTH_MAX, j("{'type': 'integer'}"));
	ck_assert_int_eq(jschema_check(s, &e), 0);
	json_decref(s);
	repeat(path, sizeof(path), "items", JSCHEMA_DEPTH_MAX + 1, ".");
	check_fails_json(nested_items(JSCHEMA_DEPTH_MAX + 1, j("{}")), path,
	    "is nested too deeply (more than 32 levels)");
	check_fails_json(nested_items(JSCHEMA_DEPTH_MAX + 1, j("true")), path,
	    "is nested too deeply (more than 32 levels)");
	/* through properties and additionalProperties alike */
	s = j("{}");
	for (int i = 0; i < JSCHEMA_DEPTH_MAX; i++)
		s = json_pack("{s:{s:o}}", "properties", "p", s);
	s = json_pack("{s:o}", "additionalProperties", s);
	ck_assert_int_eq(jschema_check(s, &e), -1);
	ck_assert_str_eq(
	    e.message, "is nested too deeply (more than 32 levels)");
	/* that path is 400 bytes long: cut, at check time too */
	repeat(path, sizeof(path), "properties.p", 20, ".");
	ck_assert_int_eq(strncmp(e.path, "additionalProperties.", 21), 0);
	ck_assert_int_eq(strncmp(e.path + 21, path, strlen(e.path) - 24), 0);
	ck_assert_str_eq(e.path + strlen(e.path) - 3, "...");
	json_decref(s);
	/* values of const, enum and annotations are not schemas */
	s = json_pack("{s:o}", "const", nested_arrays(1000, json_null()));
	ck_assert_int_eq(jschema_check(s, &e), 0);
	json_decref(s);
}
END_TEST

START_TEST(test_depth_instance)
{
	struct jschema_error e;
	char path[512];
	json_t *s;

	repeat(path, sizeof(path), "[0]", JSCHEMA_DEPTH_MAX + 1, "");
	/* a value at depth 32 is fine, at 33 refused whatever the schema */
	ck_assert_int_eq(
	    run(j("true"), nested_arrays(JSCHEMA_DEPTH_MAX, json_null()), &e),
	    0);
	invalid_json(j("true"), nested_arrays(JSCHEMA_DEPTH_MAX + 1, j("1")),
	    path, "is nested too deeply (more than 32 levels)");
	invalid_json(j("{}"), nested_arrays(JSCHEMA_DEPTH_MAX + 1, j("[]")),
	    path, "is nested too deeply (more than 32 levels)");
	/* reported first, before an earlier error of another kind */
	invalid_json(j("{'items': {'type': 'string'}}"),
	    json_pack("[i,o]", 1, nested_arrays(JSCHEMA_DEPTH_MAX, j("0"))),
	    "[1]"
	    "[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]"
	    "[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]",
	    "is nested too deeply (more than 32 levels)");
	/* deeper than jansson parses, against enum and uniqueItems */
	s = json_pack("{s:[o]}", "enum", nested_arrays(5000, json_null()));
	invalid_json(s, nested_arrays(5000, json_null()), path,
	    "is nested too deeply (more than 32 levels)");
	invalid_json(j("{'uniqueItems': true}"),
	    json_pack("[o,o]", nested_arrays(5000, j("1")),
	        nested_arrays(5000, j("1"))),
	    "[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]"
	    "[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]",
	    "is nested too deeply (more than 32 levels)");
}
END_TEST

/* An object instance: the path names the members on the way down. */
START_TEST(test_depth_object)
{
	char path[512];
	json_t *v = j("1");

	for (int i = 0; i < JSCHEMA_DEPTH_MAX + 1; i++)
		v = json_pack("{s:o}", "k", v);
	repeat(path, sizeof(path), "k", JSCHEMA_DEPTH_MAX + 1, ".");
	invalid_json(
	    j("{}"), v, path, "is nested too deeply (more than 32 levels)");
}
END_TEST

/* e is cleared on success, whatever it held. */
START_TEST(test_error_cleared)
{
	struct jschema_error e;
	json_t *s = j("{'type': 'integer'}"), *v = j("1");

	memset(&e, 'x', sizeof(e));
	ck_assert_int_eq(jschema_check(s, &e), 0);
	ck_assert_str_eq(e.path, "");
	ck_assert_str_eq(e.message, "");
	memset(&e, 'x', sizeof(e));
	ck_assert_int_eq(jschema_validate(s, v, &e), 0);
	ck_assert_str_eq(e.path, "");
	ck_assert_str_eq(e.message, "");
	json_decref(s);
	json_decref(v);
}
END_TEST

/* A realistic agent input_schema, valid and invalid parameters. */
START_TEST(test_agent_schema)
{
	static const char schema[] =
	    "{'$schema': 'https://json-schema.org/draft/2020-12/schema',"
	    " 'type': 'object', 'required': ['tickers', 'window'],"
	    " 'additionalProperties': false,"
	    " 'properties': {"
	    "  'tickers': {'type': 'array', 'minItems': 1, 'maxItems': 50,"
	    "   'uniqueItems': true, 'items': {'type': 'object',"
	    "   'required': ['id'], 'properties': {"
	    "    'id': {'type': 'string', 'minLength': 1, 'maxLength': 12},"
	    "    'weight': {'type': 'number', 'exclusiveMinimum': 0,"
	    "     'maximum': 1}}}},"
	    "  'window': {'enum': ['1d', '1w', '1m']},"
	    "  'verbose': {'type': 'boolean', 'default': false}}}";

	valid(schema,
	    "{'tickers': [{'id': 'ACME', 'weight': 0.5}],"
	    " 'window': '1d'}");
	invalid(schema, "{'tickers': [], 'window': '1d'}", "tickers",
	    "must have at least 1 item");
	invalid(schema,
	    "{'tickers': [{'id': 'A'}, {'id': 'B', 'weight': 0}],"
	    " 'window': '1d'}",
	    "tickers[1].weight", "must be greater than 0");
	invalid(schema, "{'tickers': [{'id': 'A'}, {}], 'window': '1d'}",
	    "tickers[1].id", "is required");
	invalid(schema, "{'tickers': [{'id': 'A'}], 'window': '2d'}", "window",
	    "is not one of the allowed values");
	invalid(schema, "{'tickers': [{'id': 'A'}], 'window': '1d', 'x': 1}",
	    "x", "is not allowed (additionalProperties is false)");
	invalid(schema, "{'tickers': [{'id': 'A'}]}", "window", "is required");
	invalid(schema, "[]", "", "must be an object");
}
END_TEST

static Suite *
jschema_suite(void)
{
	Suite *s = suite_create("jschema");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_boolean_schemas);
	tcase_add_test(tc, test_type_each);
	tcase_add_test(tc, test_type_union);
	tcase_add_test(tc, test_integer_real);
	tcase_add_test(tc, test_required);
	tcase_add_test(tc, test_nested_paths);
	tcase_add_test(tc, test_additional_properties);
	tcase_add_test(tc, test_enum_const);
	tcase_add_test(tc, test_number_bounds);
	tcase_add_test(tc, test_string_lengths);
	tcase_add_test(tc, test_array_counts);
	tcase_add_test(tc, test_object_counts);
	tcase_add_test(tc, test_unique_small);
	tcase_add_test(tc, test_unique_large);
	tcase_add_test(tc, test_unique_many);
	tcase_add_test(tc, test_first_error);
	tcase_add_test(tc, test_path_escaping);
	tcase_add_test(tc, test_path_cut);
	tcase_add_test(tc, test_path_boundary);
	tcase_add_test(tc, test_path_long_name);
	tcase_add_test(tc, test_check_unsupported);
	tcase_add_test(tc, test_check_values);
	tcase_add_test(tc, test_check_bounds);
	tcase_add_test(tc, test_annotations);
	tcase_add_test(tc, test_depth_schema);
	tcase_add_test(tc, test_depth_instance);
	tcase_add_test(tc, test_depth_object);
	tcase_add_test(tc, test_error_cleared);
	tcase_add_test(tc, test_agent_schema);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return cvtest_run(jschema_suite());
}
