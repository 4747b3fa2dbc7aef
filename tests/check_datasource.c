/*
 * check_datasource.c: seed 004's data-source strings (common/datasource.c):
 * the seed's own examples parsed, every malformed part refused with what
 * is wrong, %-escapes, the options (batchSize, staggerDelay, equalities,
 * the JSON filter); and the SELECT compiled over a registered table: the
 * exact text and parameters for the seed's examples and for every
 * operator, identifiers only from the registration (a column the string
 * names that is not registered is refused, and no value ever reaches the
 * text), the limits of depth, conditions and values.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cvtest.h"
#include "cronvisor.h"

static const struct ds_column ticker_cols[] = {
    {"id", "\"id\"", "text"},
    {"enabled", "\"enabled\"", "boolean"},
    {"active", "\"active\"", "integer"},
    {"status", "\"status\"", "text"},
    {"createdAt", "\"created_at\"", "timestamp with time zone"},
    {"sector", "\"sector\"", "text"},
};
static const struct ds_table ticker = {"ticker", "\"public\".\"ticker\"", "id",
    ticker_cols, sizeof(ticker_cols) / sizeof(*ticker_cols)};

static void
parse_ok(const char *s, struct ds_spec *d)
{
	char err[256] = "";

	ck_assert_msg(ds_parse(s, d, err, sizeof(err)) == 0, "%s: %s", s, err);
}

static void
parse_bad(const char *s, const char *part)
{
	struct ds_spec d;
	char err[256] = "";

	ck_assert_msg(
	    ds_parse(s, &d, err, sizeof(err)) == -1, "%s: accepted", s);
	ck_assert_msg(
	    strstr(err, part) != NULL, "%s: \"%s\" lacks \"%s\"", s, err, part);
	ck_assert_ptr_null(d.filter);
	ck_assert_ptr_null(d.value);
}

/* Compiles s over ticker (limit 1000): the SQL and the params, "|"-joined. */
static void
sql_is(const char *s, const char *want_sql, const char *want_params)
{
	struct ds_spec d;
	struct ds_query q;
	char err[256] = "", params[2048] = "";

	parse_ok(s, &d);
	ck_assert_msg(ds_compile(&d, &ticker, 1000, &q, err, sizeof(err)) == 0,
	    "%s: %s", s, err);
	ck_assert_msg(strcmp(q.sql, want_sql) == 0, "%s:\n got  %s\n want %s",
	    s, q.sql, want_sql);
	for (int i = 0; i < q.nparams; i++)
		snprintf(params + strlen(params),
		    sizeof(params) - strlen(params), "%s%s", i ? "|" : "",
		    q.params[i]);
	ck_assert_msg(strcmp(params, want_params) == 0,
	    "%s: params \"%s\", want \"%s\"", s, params, want_params);
	ds_query_clear(&q);
	ds_spec_clear(&d);
}

static void
compile_bad(const char *s, const char *part)
{
	struct ds_spec d;
	struct ds_query q;
	char err[256] = "";

	parse_ok(s, &d);
	ck_assert_msg(ds_compile(&d, &ticker, 1000, &q, err, sizeof(err)) == -1,
	    "%.100s: compiled to %.200s", s, q.sql);
	ck_assert_msg(
	    strstr(err, part) != NULL, "%s: \"%s\" lacks \"%s\"", s, err, part);
	ck_assert_ptr_null(q.sql);
	ds_spec_clear(&d);
}

#define SEL                                                                    \
	"SELECT to_jsonb(\"id\")::text FROM \"public\".\"ticker\" WHERE "      \
	"\"id\" IS NOT NULL"
#define END " ORDER BY \"id\" LIMIT 1001"

START_TEST(test_seed_examples)
{
	struct ds_spec d;

	parse_ok("db:ticker:all:id", &d);
	ck_assert_str_eq(d.table, "ticker");
	ck_assert_int_eq(d.all, 1);
	ck_assert_str_eq(d.field, "id");
	ck_assert_int_eq(d.batch_size, -1);
	ck_assert_int_eq(d.stagger_ms, -1);
	ds_spec_clear(&d);
	parse_ok("db:ticker:AAPL:id", &d);
	ck_assert_int_eq(d.all, 0);
	ck_assert_str_eq(d.value, "AAPL");
	ds_spec_clear(&d);
	parse_ok(
	    "db:ticker:all:id?enabled=true&batchSize=10&staggerDelay=2000", &d);
	ck_assert_int_eq(d.batch_size, 10);
	ck_assert_int_eq(d.stagger_ms, 2000);
	ck_assert_int_eq(d.max_failures, -1);
	ck_assert_int_eq(d.max_failures_pct, -1);
	ds_spec_clear(&d);
	parse_ok("db:ticker:all:id?maxFailures=0&maxFailuresPercent=25", &d);
	ck_assert_int_eq(d.max_failures, 0);
	ck_assert_int_eq(d.max_failures_pct, 25);
	ds_spec_clear(&d);

	sql_is("db:ticker:all:id", SEL END, "");
	sql_is("db:ticker:AAPL:id", SEL " AND \"id\" = CAST($1 AS text)" END,
	    "AAPL");
	sql_is("db:ticker:all:id?enabled=true",
	    SEL " AND (\"enabled\" = CAST($1 AS boolean))" END, "true");
	sql_is("db:ticker:all:id?enabled=true&active=1&batchSize=5",
	    SEL " AND (\"enabled\" = CAST($1 AS boolean)) AND "
	        "(\"active\" = CAST($2 AS integer))" END,
	    "true|1");
	sql_is(
	    "db:ticker:all:id?filter={\"enabled\":true,\"status\":\"active\","
	    "\"createdAt\":{\"$gte\":\"2024-01-01\"}}",
	    SEL " AND (\"enabled\" = CAST($1 AS boolean) AND \"status\" = "
	        "CAST($2 AS text) AND \"created_at\" >= CAST($3 AS timestamp "
	        "with time zone))" END,
	    "true|active|2024-01-01");
	/* The value of any column, not only ids. */
	sql_is("db:ticker:all:sector",
	    "SELECT to_jsonb(\"sector\")::text FROM \"public\".\"ticker\" WHERE "
	    "\"sector\" IS NOT NULL" END,
	    "");
}
END_TEST

START_TEST(test_parse_parts)
{
	struct ds_spec d;

	/* A value may hold ':' (the field is after the last one) and
	 * %-escapes for '?', '&' and the like. */
	parse_ok("db:ticker:urn:x:1:id", &d);
	ck_assert_str_eq(d.value, "urn:x:1");
	ck_assert_str_eq(d.field, "id");
	ds_spec_clear(&d);
	parse_ok("db:ticker:a%3Fb%26c%25:id?status=x%26y", &d);
	ck_assert_str_eq(d.value, "a?b&c%");
	ck_assert_str_eq(json_string_value(json_object_get(
	                     json_array_get(d.filter, 0), "status")),
	    "x&y");
	ds_spec_clear(&d);
	/* Unicode passes as bytes. */
	parse_ok("db:ticker:\xc3\xa9t\xc3\xa9:id?status=\xe2\x9c\x93", &d);
	ck_assert_str_eq(d.value, "\xc3\xa9t\xc3\xa9");
	ds_spec_clear(&d);
	ck_assert_int_eq(ds_is_source("db:ticker:all:id"), 1);
	ck_assert_int_eq(ds_is_source("http://x:1:2"), 0);
	ck_assert_int_eq(ds_is_source("DB:ticker:all:id"), 0);
	ck_assert_int_eq(ds_is_source(NULL), 0);
}
END_TEST

START_TEST(test_parse_errors)
{
	char big[DS_STRING_MAX + 32];

	parse_bad("ticker:all:id", "expected db:");
	parse_bad("db:ticker", "expected db:");
	parse_bad("db:ticker:all", "expected db:");
	parse_bad("db:ticker:all?x=1", "expected db:");
	parse_bad("db::all:id", "table \"\"");
	parse_bad("db:tick-er:all:id", "table \"tick-er\"");
	parse_bad("db:1ticker:all:id", "table \"1ticker\"");
	parse_bad("db:ticker;DROP TABLE x:all:id", "table \"ticker;DROP");
	parse_bad("db:ticker:all:", "field \"\"");
	parse_bad("db:ticker:all:id;--", "field \"id;--\"");
	parse_bad("db:ticker:all:i d", "field \"i d\"");
	parse_bad("db:ticker::id", "the filter is empty");
	parse_bad("db:ticker:a%zzb:id", "malformed %-escape");
	parse_bad("db:ticker:a%00b:id", "malformed %-escape");
	parse_bad("db:ticker:ab%2:id", "malformed %-escape");
	parse_bad("db:ticker:all:id?batchSize=0", "batchSize: expected 1 to");
	parse_bad(
	    "db:ticker:all:id?batchSize=10001", "batchSize: expected 1 to");
	parse_bad(
	    "db:ticker:all:id?batchSize=ten", "batchSize: expected an integer");
	parse_bad(
	    "db:ticker:all:id?batchSize=-1", "batchSize: expected an integer");
	parse_bad("db:ticker:all:id?batchSize=5x", "batchSize: expected 1 to");
	parse_bad("db:ticker:all:id?staggerDelay=3600001", "staggerDelay");
	parse_bad("db:ticker:all:id?maxFailures=-1", "maxFailures");
	parse_bad(
	    "db:ticker:all:id?maxFailuresPercent=101", "maxFailuresPercent");
	parse_bad(
	    "db:ticker:all:id?maxFailuresPercent=10%25", "maxFailuresPercent");
	parse_bad("db:ticker:all:id?enabled", "expected key=value");
	parse_bad("db:ticker:all:id?bad-key=1", "not a column name");
	parse_bad("db:ticker:all:id?x=%GG", "malformed");
	parse_bad("db:ticker:all:id?filter=[1]", "expected a JSON object");
	parse_bad("db:ticker:all:id?filter={bad", "filter: not JSON");
	parse_bad(
	    "db:ticker:all:id?filter={\"a\":1,\"a\":2}", "filter: not JSON");
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "db:ticker:", 10);
	parse_bad(big, "longer than");
	snprintf(big, sizeof(big), "db:ticker:all:id?filter={\"s\":\"%*s\"}",
	    DS_FILTER_BYTES, "x");
	parse_bad(big, "filter: at most");
}
END_TEST

START_TEST(test_operators)
{
	sql_is("db:ticker:all:id?filter={\"status\":{\"$ne\":\"x\"}}",
	    SEL " AND (\"status\" IS DISTINCT FROM CAST($1 AS text))" END, "x");
	sql_is("db:ticker:all:id?filter={\"active\":{\"$gt\":1,\"$lte\":9.5}}",
	    SEL " AND (\"active\" > CAST($1 AS integer) AND \"active\" <= "
	        "CAST($2 AS integer))" END,
	    "1|9.5");
	sql_is("db:ticker:all:id?filter={\"id\":{\"$in\":[\"A\",\"B\"]}}",
	    SEL " AND (\"id\" IN (CAST($1 AS text), CAST($2 AS text)))" END,
	    "A|B");
	sql_is("db:ticker:all:id?filter={\"id\":{\"$nin\":[\"A\"]}}",
	    SEL
	    " AND ((\"id\" IS NULL OR \"id\" NOT IN (CAST($1 AS text))))" END,
	    "A");
	sql_is("db:ticker:all:id?filter={\"id\":{\"$in\":[]}}",
	    SEL " AND (false)" END, "");
	sql_is("db:ticker:all:id?filter={\"sector\":{\"$exists\":false},"
	       "\"status\":null}",
	    SEL " AND (\"sector\" IS NULL AND \"status\" IS NULL)" END, "");
	sql_is("db:ticker:all:id?filter={\"$or\":[{\"status\":\"a\"},"
	       "{\"$not\":{\"enabled\":false}}],\"active\":{\"$eq\":2}}",
	    SEL " AND (((\"status\" = CAST($1 AS text)) OR (NOT (\"enabled\" = "
	        "CAST($2 AS boolean)))) AND \"active\" = CAST($3 AS "
	        "integer))" END,
	    "a|false|2");
	sql_is("db:ticker:all:id?filter={}", SEL " AND true" END, "");
}
END_TEST

START_TEST(test_compile_refusals)
{
	struct ds_spec d;
	struct ds_query q;
	struct ds_table other = ticker;
	char err[256], s[8192];
	size_t n;

	compile_bad(
	    "db:ticker:all:secret", "field \"secret\": not a registered");
	compile_bad(
	    "db:ticker:all:id?secret=1", "\"secret\" is not a registered");
	compile_bad("db:ticker:all:id?filter={\"id\\\" OR 1=1 --\":1}",
	    "is not a registered column");
	compile_bad("db:ticker:all:id?filter={\"$where\":\"1\"}",
	    "unknown operator \"$where\"");
	compile_bad("db:ticker:all:id?filter={\"id\":{\"$regex\":\"a\"}}",
	    "unknown operator \"$regex\"");
	compile_bad("db:ticker:all:id?filter={\"id\":{}}", "empty operator");
	compile_bad("db:ticker:all:id?filter={\"id\":[1]}", "use {\"$in\"");
	compile_bad("db:ticker:all:id?filter={\"id\":{\"$in\":\"A\"}}",
	    "expected an array");
	compile_bad("db:ticker:all:id?filter={\"id\":{\"$in\":[{\"a\":1}]}}",
	    "expected a string, a number or a boolean");
	compile_bad("db:ticker:all:id?filter={\"id\":{\"$exists\":1}}",
	    "expected true or false");
	compile_bad("db:ticker:all:id?filter={\"$or\":[]}", "non-empty array");
	compile_bad("db:ticker:all:id?filter={\"$and\":{}}", "non-empty array");
	compile_bad(
	    "db:ticker:all:id?filter={\"$not\":1}", "expected an object");
	/* Nested deeper than DS_DEPTH_MAX. */
	n = (size_t)snprintf(s, sizeof(s), "db:ticker:all:id?filter=");
	for (int i = 0; i < DS_DEPTH_MAX; i++)
		n += (size_t)snprintf(s + n, sizeof(s) - n, "{\"$not\":");
	n += (size_t)snprintf(s + n, sizeof(s) - n, "{\"id\":\"a\"}");
	for (int i = 0; i < DS_DEPTH_MAX; i++)
		n += (size_t)snprintf(s + n, sizeof(s) - n, "}");
	compile_bad(s, "nested deeper than");
	/* More than DS_NODES_MAX conditions. */
	n = (size_t)snprintf(
	    s, sizeof(s), "db:ticker:all:id?filter={\"$or\":[");
	for (int i = 0; i <= DS_NODES_MAX; i++)
		n += (size_t)snprintf(
		    s + n, sizeof(s) - n, "%s{\"id\":\"%d\"}", i ? "," : "", i);
	snprintf(s + n, sizeof(s) - n, "]}");
	compile_bad(s, "more than 256 conditions");
	/* A value longer than DS_VALUE_MAX. */
	n = (size_t)snprintf(s, sizeof(s), "db:ticker:");
	memset(s + n, 'v', DS_VALUE_MAX + 1);
	snprintf(
	    s + n + DS_VALUE_MAX + 1, sizeof(s) - n - DS_VALUE_MAX - 1, ":id");
	compile_bad(s, "more than 1000 bytes");
	/* Another table than the one registered under the name. */
	other.name = "user";
	parse_ok("db:ticker:all:id", &d);
	ck_assert_int_eq(ds_compile(&d, &other, 10, &q, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(
	    strstr(err, "table \"ticker\" is not registered"));
	ds_spec_clear(&d);
}
END_TEST

/* No value of the string ever reaches the SQL text: only $n does. */
START_TEST(test_values_are_params)
{
	static const char *const hostile[] = {
	    "db:ticker:x'); DROP TABLE ticker; --:id",
	    "db:ticker:all:id?status=a'%20OR%20'1'='1",
	    "db:ticker:all:id?filter={\"status\":\"'; DELETE FROM t; --\"}",
	    "db:ticker:all:id?filter={\"status\":{\"$in\":[\"$1\",\"\\\\\"]}}",
	};
	struct ds_spec d;
	struct ds_query q;
	char err[256];

	for (size_t i = 0; i < sizeof(hostile) / sizeof(*hostile); i++) {
		parse_ok(hostile[i], &d);
		ck_assert_msg(
		    ds_compile(&d, &ticker, 5, &q, err, sizeof(err)) == 0,
		    "%s: %s", hostile[i], err);
		ck_assert_msg(strchr(q.sql, '\'') == NULL &&
		        strchr(q.sql, ';') == NULL &&
		        strstr(q.sql, "DROP") == NULL &&
		        strstr(q.sql, "DELETE") == NULL,
		    "%s: %s", hostile[i], q.sql);
		ck_assert_int_ge(q.nparams, 1);
		ds_query_clear(&q);
		ds_spec_clear(&d);
	}
}
END_TEST

/* The registration document: its normal form, and what it refuses. */
START_TEST(test_registration)
{
	static const struct {
		const char *body, *code, *field;
	} bad[] = {
	    {"[]", "invalid_json", ""},
	    {"{\"relation\": \"t\", \"key\": \"id\", \"columns\": [\"id\"]}",
	        "missing_field", "name"},
	    {"{\"name\": \"t\", \"relation\": \"a.b.c\", \"key\": \"id\", "
	     "\"columns\": [\"id\"]}",
	        "invalid_field", "relation"},
	    {"{\"name\": \"t\", \"relation\": \"t\", \"key\": \"x\", "
	     "\"columns\": [\"id\"]}",
	        "invalid_field", "key"},
	    {"{\"name\": \"t\", \"relation\": \"t\", \"key\": \"id\", "
	     "\"columns\": [\"id\", 5]}",
	        "invalid_field", "columns[1]"},
	    {"{\"name\": \"t\", \"relation\": \"t\", \"key\": \"id\", "
	     "\"columns\": [{\"name\": \"id\", \"as\": 1}]}",
	        "unknown_field", "columns[0].as"},
	    {"{\"name\": \"t\", \"relation\": \"t\", \"key\": \"id\", "
	     "\"columns\": [\"id\"], \"owners\": \"alice\"}",
	        "invalid_field", "owners"},
	    {"{\"name\": \"t\", \"relation\": \"t\", \"key\": \"id\", "
	     "\"columns\": [\"id\"], \"grant\": true}",
	        "unknown_field", "grant"},
	};
	const char *ok_body =
	    "{\"name\": \"ticker\", \"relation\": \"public.ticker\", "
	    "\"key\": \"id\", \"columns\": [\"id\", {\"name\": \"createdAt\", "
	    "\"column\": \"created_at\"}], \"owners\": [\"alice\"]}";
	struct schedule_error e;
	json_t *r;
	char *got;

	memset(&e, 0, sizeof(e));
	r = ds_registration_parse(ok_body, strlen(ok_body), &e);
	ck_assert_msg(r != NULL, "%s: %s", e.field, e.message);
	got = json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS);
	ck_assert_str_eq(got,
	    "{\"columns\":[{\"column\":\"id\",\"name\":\"id\"},{\"column\":"
	    "\"created_at\",\"name\":\"createdAt\"}],\"description\":\"\","
	    "\"key\":\"id\",\"name\":\"ticker\",\"owners\":[\"alice\"],"
	    "\"relation\":\"public.ticker\"}");
	free(got);
	json_decref(r);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		memset(&e, 0, sizeof(e));
		r = ds_registration_parse(bad[i].body, strlen(bad[i].body), &e);
		ck_assert_msg(r == NULL, "%s: accepted", bad[i].body);
		ck_assert_msg(strcmp(e.code, bad[i].code) == 0 &&
		        strcmp(e.field, bad[i].field) == 0,
		    "%s: %s %s, want %s %s", bad[i].body, e.code, e.field,
		    bad[i].code, bad[i].field);
	}
}
END_TEST

static Suite *
datasource_suite(void)
{
	Suite *s = suite_create("datasource");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_seed_examples);
	tcase_add_test(tc, test_parse_parts);
	tcase_add_test(tc, test_parse_errors);
	tcase_add_test(tc, test_operators);
	tcase_add_test(tc, test_compile_refusals);
	tcase_add_test(tc, test_values_are_params);
	tcase_add_test(tc, test_registration);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return cvtest_run(datasource_suite());
}
