/*
 * check_schedule.c: the schedule document (common/schedule.c): seed 000's
 * body and the ARCHITECTURE.md example as they are, every field's type and
 * range errors with the exact field path, unknown fields at each level,
 * what jansson's strict mode rejects, PATCH, the first slot of each kind
 * (a cron across New York's DST change), the INSERT parameters and the
 * round trip through schedule_to_json().
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cvtest.h"
#include "cronvisor.h"
#include "sql_queries.h"

static const char seed000[] =
    "{\"name\": \"Daily report\", \"workflow_id\": 1,"
    " \"trigger_node_id\": \"trigger_schedule_abc123\","
    " \"interval_seconds\": 86400, \"total_repeats\": 0,"
    " \"max_retries\": 3, \"timeout_seconds\": 600,"
    " \"trigger_payload\": {\"report_type\": \"daily\"}}";

static const char example[] =
    "{\"name\": \"nightly-backup\", \"description\": \"\","
    " \"kind\": \"cron\", \"cron\": \"30 2 * * *\","
    " \"timezone\": \"Europe/Berlin\", \"total_repeats\": 0,"
    " \"max_retries\": 3, \"backoff\": \"exponential\","
    " \"retry_delay_seconds\": 60, \"timeout_seconds\": 600,"
    " \"overlap\": \"skip\", \"catch_up\": \"latest\","
    " \"max_catch_up_runs\": 10, \"starting_deadline_seconds\": null,"
    " \"jitter_seconds\": 0, \"dst_gap\": \"shift\", \"dst_fold\": \"auto\","
    " \"history_limit\": 100,"
    " \"target\": {\"type\": \"exec\", \"argv\": [\"/usr/local/bin/backup\","
    " \"--full\"], \"env\": {\"BACKUP_DIR\": \"/srv/backup\"},"
    " \"cwd\": \"/srv\", \"run_as\": null},"
    " \"limits\": {\"cpu_seconds\": 60, \"memory_mb\": 512, \"nofile\": 1024,"
    " \"nproc\": 64, \"fsize_mb\": 1024},"
    " \"trigger_payload\": {\"report_type\": \"daily\"},"
    " \"workflow_id\": null, \"trigger_node_id\": null}";

/* Parses s, which must be valid, into *d. */
static void
parse_ok(const char *s, struct schedule_doc *d)
{
	struct schedule_error e;

	ck_assert_msg(schedule_parse(s, strlen(s), d, &e) == 0,
	    "%s: %s: %s (%s)", s, e.field, e.message, e.code);
}

/* Parses s, which must fail with code and field. */
static void
parse_fails(const char *s, const char *code, const char *field)
{
	struct schedule_doc d;
	struct schedule_error e;

	memset(&e, 0, sizeof(e));
	ck_assert_msg(
	    schedule_parse(s, strlen(s), &d, &e) == -1, "%s parsed", s);
	ck_assert_msg(strcmp(e.code, code) == 0 && strcmp(e.field, field) == 0,
	    "%s: got %s at \"%s\" (%s), want %s at \"%s\"", s, e.code, e.field,
	    e.message, code, field);
	ck_assert(e.message[0] != '\0');
	ck_assert_ptr_null(d.name);
}

/* A minimal valid interval schedule with `extra` members added. */
static void
with(char *buf, size_t len, const char *extra)
{
	int n = snprintf(buf, len,
	    "{\"name\": \"x\", \"interval_seconds\": 60%s%s}",
	    extra[0] ? ", " : "", extra);

	ck_assert(n > 0 && (size_t)n < len);
}

static void
extra_fails(const char *extra, const char *code, const char *field)
{
	char buf[4096];

	with(buf, sizeof(buf), extra);
	parse_fails(buf, code, field);
}

static void
extra_ok(const char *extra)
{
	struct schedule_doc d;
	char buf[4096];

	with(buf, sizeof(buf), extra);
	parse_ok(buf, &d);
	schedule_clear(&d);
}

START_TEST(test_seed000)
{
	struct schedule_doc d;

	parse_ok(seed000, &d);
	ck_assert_str_eq(d.name, "Daily report");
	ck_assert_int_eq(d.kind, SCHED_KIND_INTERVAL);
	ck_assert_int_eq(d.interval_seconds, 86400);
	ck_assert_str_eq(d.workflow_id, "1");
	ck_assert_str_eq(d.trigger_node_id, "trigger_schedule_abc123");
	ck_assert_int_eq(d.target_type, SCHEDULE_TARGET_RECEIVER);
	ck_assert_ptr_null(d.target);
	ck_assert_str_eq(d.timezone, "UTC");
	ck_assert_str_eq(d.description, "");
	ck_assert_int_eq(d.backoff, BACKOFF_EXPONENTIAL);
	ck_assert_int_eq(d.retry_delay_seconds, SCHEDULE_UNSET);
	ck_assert_int_eq(d.starting_deadline_seconds, SCHEDULE_UNSET);
	ck_assert_int_eq(d.history_limit, 100);
	ck_assert_int_eq(d.max_catch_up_runs, 10);
	ck_assert_int_eq(d.catch_up, CATCH_UP_LATEST);
	ck_assert(!(d.present & (1u << SCHEDULE_F_KIND)));
	ck_assert(d.present & (1u << SCHEDULE_F_INTERVAL));
	ck_assert_str_eq(json_string_value(
	                     json_object_get(d.trigger_payload, "report_type")),
	    "daily");
	schedule_clear(&d);
}
END_TEST

START_TEST(test_example)
{
	struct schedule_doc d;

	parse_ok(example, &d);
	ck_assert_int_eq(d.kind, SCHED_KIND_CRON);
	ck_assert_str_eq(d.cron, "30 2 * * *");
	ck_assert_int_eq(d.dst_gap, DST_GAP_SHIFT);
	ck_assert_int_eq(d.target_type, SCHEDULE_TARGET_EXEC);
	ck_assert_ptr_null(json_object_get(d.target, "run_as"));
	ck_assert_str_eq(
	    json_string_value(json_object_get(d.target, "cwd")), "/srv");
	ck_assert_int_eq(d.limits.memory_mb, 512);
	ck_assert_int_eq(d.limits.fsize_mb, 1024);
	ck_assert_int_eq(d.retry_delay_seconds, 60);
	schedule_clear(&d);
	extra_ok("\"target\": {\"type\": \"redis\", \"command\": \"xadd\", "
	         "\"key\": \"reports\", \"maxlen\": 100, \"url\": "
	         "\"redis://:p%40w@[::1]:6380/2\", \"body\": {\"a\": 1}, "
	         "\"raw_key\": false}");
	extra_ok("\"target\": {\"type\": \"redis\", \"command\": \"publish\", "
	         "\"key\": \"news\", \"url\": null, \"maxlen\": null}");
	extra_ok("\"target\": {\"type\": \"http\", \"url\": \"https://h/x\","
	         " \"headers\": {\"X-A\": \"b\"}, \"body\": {\"k\": [1]}}");
	extra_ok("\"kind\": \"interval\", \"anchor\": \"completion\","
	         " \"start_at\": \"2026-01-01T00:00:00.250+01:00\"");
	extra_ok("\"target\": null, \"limits\": {\"nproc\": null}");
}
END_TEST

/* Boundaries of every integer field: lo-1, lo, hi, hi+1. */
START_TEST(test_int_ranges)
{
	static const struct {
		const char *name;
		long long lo, hi;
	} f[] = {
	    {"interval_seconds", 1, 3162240000LL},
	    {"total_repeats", 0, 0},
	    {"max_retries", 0, 1000},
	    {"retry_delay_seconds", 1, 31536000},
	    {"timeout_seconds", 1, 31536000},
	    {"max_catch_up_runs", 1, 1000},
	    {"starting_deadline_seconds", 0, 0},
	    {"jitter_seconds", 0, 0},
	    {"history_limit", 1, 100000},
	};
	char buf[4096], ex[128];

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		snprintf(ex, sizeof(ex), "\"%s\": %lld, \"kind\": \"interval\"",
		    f[i].name, f[i].lo - 1);
		snprintf(buf, sizeof(buf), "{\"name\": \"x\", %s%s}", ex,
		    strcmp(f[i].name, "interval_seconds")
		        ? ", \"interval_seconds\": 5"
		        : "");
		parse_fails(buf, "invalid_field", f[i].name);
		snprintf(buf, sizeof(buf), "\"%s\": %lld", f[i].name, f[i].lo);
		if (strcmp(f[i].name, "interval_seconds"))
			extra_ok(buf);
		snprintf(buf, sizeof(buf), "\"%s\": \"1\"", f[i].name);
		extra_fails(buf,
		    strcmp(f[i].name, "interval_seconds") ? "invalid_field"
		                                          : "invalid_json",
		    strcmp(f[i].name, "interval_seconds") ? f[i].name : "");
		snprintf(buf, sizeof(buf), "\"%s\": 1.0", f[i].name);
		if (strcmp(f[i].name, "interval_seconds"))
			extra_fails(buf, "invalid_field", f[i].name);
		if (f[i].hi == 0)
			continue;
		snprintf(buf, sizeof(buf), "\"%s\": %lld", f[i].name, f[i].hi);
		if (strcmp(f[i].name, "interval_seconds"))
			extra_ok(buf);
		snprintf(
		    buf, sizeof(buf), "\"%s\": %lld", f[i].name, f[i].hi + 1);
		if (strcmp(f[i].name, "interval_seconds"))
			extra_fails(buf, "invalid_field", f[i].name);
	}
	parse_fails("{\"name\": \"x\", \"interval_seconds\": 0}",
	    "invalid_field", "interval_seconds");
	parse_fails("{\"name\": \"x\", \"interval_seconds\": -5}",
	    "invalid_field", "interval_seconds");
	parse_fails("{\"name\": \"x\", \"interval_seconds\": 3162240001}",
	    "invalid_field", "interval_seconds");
	parse_fails("{\"name\": \"x\", \"interval_seconds\": \"60\"}",
	    "invalid_field", "interval_seconds");
	parse_fails("{\"name\": \"x\", \"interval_seconds\": 99999999999999999"
	            "999999}",
	    "invalid_field", "interval_seconds");
	extra_ok("\"total_repeats\": 9223372036854775807");
	extra_fails("\"max_retries\": -1", "invalid_field", "max_retries");
}
END_TEST

/* Strings, enums, times, zones, cron and the timing rules. */
START_TEST(test_field_errors)
{
	struct schedule_doc d;
	char name[260], buf[600];

	extra_fails("\"description\": 5", "invalid_field", "description");
	extra_fails("\"backoff\": \"quadratic\"", "invalid_field", "backoff");
	extra_fails("\"overlap\": \"queue\"", "invalid_field", "overlap");
	extra_fails("\"catch_up\": 1", "invalid_field", "catch_up");
	extra_fails("\"dst_gap\": \"AUTO\"", "invalid_field", "dst_gap");
	extra_fails("\"dst_fold\": \"last\"", "invalid_field", "dst_fold");
	extra_fails("\"anchor\": \"start\"", "invalid_field", "anchor");
	extra_fails(
	    "\"timezone\": \"Mars/Olympus\"", "invalid_field", "timezone");
	extra_fails("\"timezone\": \"\"", "invalid_field", "timezone");
	extra_fails(
	    "\"start_at\": \"2026-01-01\"", "invalid_field", "start_at");
	extra_fails("\"start_at\": \"2026-01-01T00:00:00\"", "invalid_field",
	    "start_at");
	extra_fails(
	    "\"start_at\": \"@1700000000\"", "invalid_field", "start_at");
	extra_fails("\"start_at\": \"2026-13-01T00:00:00Z\"", "invalid_field",
	    "start_at");
	extra_fails("\"start_at\": 1700000000", "invalid_field", "start_at");
	extra_fails("\"workflow_id\": \"\"", "invalid_field", "workflow_id");
	extra_fails("\"workflow_id\": true", "invalid_field", "workflow_id");
	extra_fails(
	    "\"trigger_node_id\": []", "invalid_field", "trigger_node_id");
	extra_fails(
	    "\"trigger_payload\": [1]", "invalid_field", "trigger_payload");
	extra_fails(
	    "\"trigger_payload\": \"x\"", "invalid_field", "trigger_payload");
	extra_ok("\"trigger_payload\": null, \"description\": null");
	parse_fails("{\"interval_seconds\": 60}", "missing_field", "name");
	parse_fails("{\"name\": null, \"interval_seconds\": 60}",
	    "invalid_field", "name");
	parse_fails("{\"name\": \"\", \"interval_seconds\": 60}",
	    "invalid_field", "name");
	/* 201 characters are too many, 200 of two bytes each are fine. */
	memset(name, 'a', 201);
	name[201] = '\0';
	snprintf(buf, sizeof(buf),
	    "{\"interval_seconds\": 1, \"name\": \"%s\"}", name);
	parse_fails(buf, "invalid_field", "name");
	strcpy(buf, "{\"interval_seconds\": 1, \"name\": \"");
	for (int i = 0; i < 200; i++)
		strcat(buf, "\xc3\xa9");
	strcat(buf, "\"}");
	parse_ok(buf, &d);
	schedule_clear(&d);
	parse_fails("{\"name\": \"x\"}", "missing_field", "kind");
	parse_fails(
	    "{\"name\": \"x\", \"kind\": null, \"cron\": \"* * * * *\"}",
	    "invalid_field", "kind");
	parse_fails(
	    "{\"name\": \"x\", \"kind\": \"weekly\"}", "invalid_field", "kind");
	parse_fails("{\"name\": \"x\", \"cron\": \"* * * * *\","
	            " \"interval_seconds\": 5}",
	    "invalid_field", "kind");
	parse_fails(
	    "{\"name\": \"x\", \"kind\": \"cron\"}", "missing_field", "cron");
	parse_fails(
	    "{\"name\": \"x\", \"kind\": \"once\"}", "missing_field", "at");
	parse_fails("{\"name\": \"x\", \"kind\": \"interval\"}",
	    "missing_field", "interval_seconds");
	parse_fails("{\"name\": \"x\", \"kind\": \"cron\", \"cron\": \"* * * *"
	            " *\", \"interval_seconds\": 5}",
	    "invalid_field", "interval_seconds");
	parse_fails("{\"name\": \"x\", \"cron\": \"0 0 * * *\", \"anchor\": "
	            "\"completion\"}",
	    "invalid_field", "anchor");
	parse_fails("{\"name\": \"x\", \"at\": \"2026-12-24T18:00:00+01:00\","
	            " \"start_at\": \"2026-12-24T18:00:00Z\"}",
	    "invalid_field", "start_at");
	parse_fails("{\"name\": \"x\", \"kind\": \"interval\", "
	            "\"interval_seconds\": 5, \"cron\": \"* * * * *\"}",
	    "invalid_field", "cron");
	parse_fails("{\"name\": \"x\", \"cron\": \"0 0 * * MONDAY\"}",
	    "invalid_field", "cron");
	parse_fails("{\"name\": \"x\", \"cron\": \"@reboot\"}", "invalid_field",
	    "cron");
	parse_fails(
	    "{\"name\": \"x\", \"cron\": \"\"}", "invalid_field", "cron");
	parse_fails(
	    "{\"name\": \"x\", \"at\": \"tomorrow\"}", "invalid_field", "at");
}
END_TEST

START_TEST(test_target_errors)
{
	static const struct {
		const char *target, *code, *field;
	} t[] = {
	    {"[]", "invalid_field", "target"},
	    {"\"exec\"", "invalid_field", "target"},
	    {"{}", "missing_field", "target.type"},
	    {"{\"type\": \"shell\"}", "invalid_field", "target.type"},
	    {"{\"type\": \"exec\"}", "missing_field", "target.argv"},
	    {"{\"type\": \"exec\", \"argv\": []}", "invalid_field",
	        "target.argv"},
	    {"{\"type\": \"exec\", \"argv\": [\"\"]}", "invalid_field",
	        "target.argv"},
	    {"{\"type\": \"exec\", \"argv\": [\"/bin/x\", 1]}", "invalid_field",
	        "target.argv"},
	    {"{\"type\": \"exec\", \"argv\": \"/bin/x\"}", "invalid_field",
	        "target.argv"},
	    {"{\"type\": \"exec\", \"argv\": [\"/x\"], \"cwd\": \"srv\"}",
	        "invalid_field", "target.cwd"},
	    {"{\"type\": \"exec\", \"argv\": [\"/x\"], \"cwd\": 1}",
	        "invalid_field", "target.cwd"},
	    {"{\"type\": \"exec\", \"argv\": [\"/x\"], \"env\": {\"1A\": \"b\"}}",
	        "invalid_field", "target.env"},
	    {"{\"type\": \"exec\", \"argv\": [\"/x\"], \"env\": {\"A=B\": \"b\"}}",
	        "invalid_field", "target.env"},
	    {"{\"type\": \"exec\", \"argv\": [\"/x\"], \"env\": {\"A\": 1}}",
	        "invalid_field", "target.env"},
	    {"{\"type\": \"exec\", \"argv\": [\"/x\"], \"env\": []}",
	        "invalid_field", "target.env"},
	    {"{\"type\": \"exec\", \"argv\": [\"/x\"], \"run_as\": \"\"}",
	        "invalid_field", "target.run_as"},
	    {"{\"type\": \"exec\", \"argv\": [\"/x\"], \"url\": \"http://h\"}",
	        "unknown_field", "target.url"},
	    {"{\"type\": \"exec\", \"argv\": [\"/x\"], \"bogus\": 1}",
	        "unknown_field", "target.bogus"},
	    {"{\"type\": \"http\"}", "missing_field", "target.url"},
	    {"{\"type\": \"http\", \"url\": \"ftp://h/\"}", "invalid_field",
	        "target.url"},
	    {"{\"type\": \"http\", \"url\": \"file:///etc/passwd\"}",
	        "invalid_field", "target.url"},
	    {"{\"type\": \"http\", \"url\": \"http://\"}", "invalid_field",
	        "target.url"},
	    {"{\"type\": \"http\", \"url\": \"http://h/a b\"}", "invalid_field",
	        "target.url"},
	    {"{\"type\": \"http\", \"url\": 5}", "invalid_field", "target.url"},
	    {"{\"type\": \"http\", \"url\": \"http://h\", \"method\": \"PO ST\"}",
	        "invalid_field", "target.method"},
	    {"{\"type\": \"http\", \"url\": \"http://h\", \"headers\": {\"A\": "
	     "\"b\\r\\nX: y\"}}",
	        "invalid_field", "target.headers"},
	    {"{\"type\": \"http\", \"url\": \"http://h\", \"headers\": {\"A B\": "
	     "\"b\"}}",
	        "invalid_field", "target.headers"},
	    {"{\"type\": \"http\", \"url\": \"http://h\", \"argv\": [\"/x\"]}",
	        "unknown_field", "target.argv"},
	    {"{\"type\": \"redis\", \"key\": \"k\"}", "missing_field",
	        "target.command"},
	    {"{\"type\": \"redis\", \"command\": \"xadd\"}", "missing_field",
	        "target.key"},
	    {"{\"type\": \"redis\", \"command\": \"del\", \"key\": \"k\"}",
	        "invalid_field", "target.command"},
	    {"{\"type\": \"redis\", \"command\": \"xadd\", \"key\": 5}",
	        "invalid_field", "target.key"},
	    {"{\"type\": \"redis\", \"command\": \"publish\", \"key\": \"k\", "
	     "\"maxlen\": 3}",
	        "invalid_field", "target.maxlen"},
	    {"{\"type\": \"redis\", \"command\": \"xadd\", \"key\": \"k\", "
	     "\"maxlen\": 100000001}",
	        "invalid_field", "target.maxlen"},
	    {"{\"type\": \"redis\", \"command\": \"xadd\", \"key\": \"k\", "
	     "\"url\": \"http://h\"}",
	        "invalid_field", "target.url"},
	    {"{\"type\": \"redis\", \"command\": \"xadd\", \"key\": \"k\", "
	     "\"url\": \"redis://h:0\"}",
	        "invalid_field", "target.url"},
	    {"{\"type\": \"redis\", \"command\": \"xadd\", \"key\": \"k\", "
	     "\"raw_key\": \"yes\"}",
	        "invalid_field", "target.raw_key"},
	    {"{\"type\": \"redis\", \"command\": \"xadd\", \"key\": \"k\", "
	     "\"argv\": []}",
	        "unknown_field", "target.argv"},
	    {"{\"type\": \"redis\", \"command\": \"xadd\", \"key\": \"k\", "
	     "\"body\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
	        "invalid_field", "target.body"},
	};
	char buf[1024];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(buf, sizeof(buf), "\"target\": %s", t[i].target);
		extra_fails(buf, t[i].code, t[i].field);
	}
	extra_fails("\"limits\": []", "invalid_field", "limits");
	extra_fails("\"limits\": {\"memory_mb\": 0}", "invalid_field",
	    "limits.memory_mb");
	extra_fails("\"limits\": {\"nofile\": \"5\"}", "invalid_field",
	    "limits.nofile");
	extra_fails("\"limits\": {\"cpu_seconds\": 2147483648}",
	    "invalid_field", "limits.cpu_seconds");
	extra_fails("\"limits\": {\"stack_mb\": 8}", "unknown_field",
	    "limits.stack_mb");
	extra_fails("\"colour\": \"red\"", "unknown_field", "colour");
	extra_fails("\"id\": \"x\"", "unknown_field", "id");
}
END_TEST

/* What jansson's strict mode and the body checks reject. */
START_TEST(test_json_errors)
{
	struct schedule_doc d;
	struct schedule_error e;
	char *deep;
	size_t n = 3000;

	parse_fails(
	    "{\"name\": \"x\", \"name\": \"y\", \"interval_seconds\": 1}",
	    "invalid_json", "");
	parse_fails(
	    "{\"name\": \"x\", \"interval_seconds\": 1} x", "invalid_json", "");
	parse_fails(
	    "{\"name\": \"x\", \"interval_seconds\": 1}{}", "invalid_json", "");
	parse_fails("{\"name\": \"\xff\xfe\", \"interval_seconds\": 1}",
	    "invalid_json", "");
	parse_fails("{\"name\": \"\\u0000\", \"interval_seconds\": 1}",
	    "invalid_json", "");
	parse_fails("[]", "invalid_json", "");
	parse_fails("1", "invalid_json", "");
	parse_fails("\"x\"", "invalid_json", "");
	parse_fails("", "invalid_json", "");
	parse_fails("{", "invalid_json", "");
	parse_fails(
	    "{\"name\": \"x\", \"interval_seconds\": 1,}", "invalid_json", "");
	/* A NUL byte inside the given length. */
	ck_assert_int_eq(schedule_parse("{\"name\": \"x\"\0}", 14, &d, &e), -1);
	ck_assert_str_eq(e.code, "invalid_json");
	/* Deeper than jansson's parser goes. */
	deep = malloc(2 * n + 1);
	memset(deep, '[', n);
	memset(deep + n, ']', n);
	deep[2 * n] = '\0';
	parse_fails(deep, "invalid_json", "");
	free(deep);
	/* Deeper than a payload may be. */
	deep = malloc(4096);
	strcpy(deep, "\"trigger_payload\": ");
	for (int i = 0; i < 40; i++)
		strcat(deep, "{\"a\": ");
	strcat(deep, "1");
	for (int i = 0; i < 40; i++)
		strcat(deep, "}");
	extra_fails(deep, "invalid_field", "trigger_payload");
	free(deep);
}
END_TEST

/* Parses s and writes it back, parses that and compares. */
static void
round_trip(const char *s)
{
	struct schedule_doc a, b;
	json_t *j;
	char *out;

	parse_ok(s, &a);
	j = schedule_to_json(&a);
	ck_assert_ptr_nonnull(j);
	out = json_dumps(j, JSON_COMPACT);
	parse_ok(out, &b);
	ck_assert_msg(schedule_equal(&a, &b), "%s", out);
	free(out);
	json_decref(j);
	schedule_clear(&a);
	schedule_clear(&b);
}

/*
 * Numbers that would not come back from the schedules row as they were
 * given (PostgreSQL prints jsonb numerics in plain digits) are refused,
 * naming the number; those that do are taken.
 */
START_TEST(test_storable_numbers)
{
	static const struct {
		const char *value; /* trigger_payload */
		const char *field; /* NULL: accepted */
	} cases[] = {
	    {"{\"x\": 1e19}", "trigger_payload.x"},
	    {"{\"x\": 1e17}", "trigger_payload.x"},
	    {"{\"x\": -1.5e300}", "trigger_payload.x"},
	    {"{\"x\": -0.0}", "trigger_payload.x"},
	    {"{\"a\": [1, {\"b\": 2e20}]}", "trigger_payload.a[1].b"},
	    {"{\"x\": 18446744073709551616}", "trigger_payload.x"},
	    {"{\"x\": {\"y\": 9223372036854775808}}", "trigger_payload.x.y"},
	    {"{\"x\": 9.99e16}", NULL},
	    {"{\"x\": 1e-300}", NULL},
	    {"{\"x\": 5e-324}", NULL},
	    {"{\"x\": 0.1}", NULL},
	    {"{\"x\": 0.0}", NULL},
	    {"{\"x\": -0}", NULL},
	    {"{\"x\": 9223372036854775807}", NULL},
	    {"{\"x\": -9223372036854775808}", NULL},
	};
	char body[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct schedule_doc d;

		snprintf(body, sizeof(body),
		    "{\"name\": \"n\", \"interval_seconds\": 60, "
		    "\"trigger_payload\": %s}",
		    cases[i].value);
		if (cases[i].field == NULL) {
			parse_ok(body, &d);
			schedule_clear(&d);
		} else {
			parse_fails(body, "invalid_field", cases[i].field);
		}
	}
	/* The target's body too, and the integer too big for jansson. */
	parse_fails("{\"name\": \"n\", \"interval_seconds\": 60, \"target\": "
	            "{\"type\": \"http\", \"url\": \"http://h/\", "
	            "\"body\": {\"v\": [1e19]}}}",
	    "invalid_field", "target.body.v[0]");
	parse_fails("{\"name\": \"n\", \"interval_seconds\": 60, \"target\": "
	            "{\"type\": \"http\", \"url\": \"http://h/\", "
	            "\"body\": -9223372036854775809000}}",
	    "invalid_field", "target.body");
	/* jansson cannot hold 1e400 at all: the whole body is refused. */
	parse_fails("{\"name\": \"n\", \"interval_seconds\": 60, "
	            "\"trigger_payload\": {\"x\": 1e400}}",
	    "invalid_json", "");
}
END_TEST

START_TEST(test_round_trip)
{
	struct schedule_doc d;
	json_t *j;

	round_trip(seed000);
	round_trip(example);
	round_trip("{\"name\": \"o\", \"at\": \"2026-12-24T18:00:00+01:00\","
	           " \"target\": {\"type\": \"http\", \"url\": \"http://h/\","
	           " \"body\": \"raw\"}}");
	round_trip("{\"name\": \"i\", \"interval_seconds\": 300, \"anchor\":"
	           " \"completion\", \"start_at\": \"2026-01-01T00:00:00Z\","
	           " \"starting_deadline_seconds\": 0, \"overlap\": "
	           "\"buffer_one\"}");
	parse_ok(
	    "{\"name\": \"o\", \"at\": \"2026-12-24T18:00:00+01:00\"}", &d);
	j = schedule_to_json(&d);
	ck_assert_str_eq(json_string_value(json_object_get(j, "at")),
	    "2026-12-24T17:00:00Z");
	ck_assert_str_eq(json_string_value(json_object_get(j, "kind")), "once");
	ck_assert(json_is_null(json_object_get(j, "interval_seconds")));
	ck_assert(json_is_null(json_object_get(j, "target")));
	ck_assert_int_eq(json_object_size(j), SCHEDULE_F_COUNT);
	json_decref(j);
	schedule_clear(&d);
}
END_TEST

/* Applies patch p to d, which must succeed. */
static void
patch_ok(struct schedule_doc *d, const char *p)
{
	struct schedule_error e;

	ck_assert_msg(schedule_patch(d, p, strlen(p), &e) == 0, "%s: %s: %s", p,
	    e.field, e.message);
}

START_TEST(test_patch)
{
	struct schedule_doc d, before;
	struct schedule_error e;
	const char *p;

	parse_ok(example, &d);
	patch_ok(&d, "{\"max_retries\": 5, \"description\": \"hi\"}");
	ck_assert_int_eq(d.max_retries, 5);
	ck_assert_str_eq(d.description, "hi");
	ck_assert_str_eq(d.cron, "30 2 * * *");
	ck_assert_int_eq(d.limits.memory_mb, 512);
	ck_assert_uint_eq(d.present,
	    (1u << SCHEDULE_F_MAX_RETRIES) | (1u << SCHEDULE_F_DESCRIPTION));
	ck_assert_uint_eq(d.nulled, 0);
	/* null: the default. */
	patch_ok(&d,
	    "{\"max_retries\": null, \"target\": null, \"limits\":"
	    " null, \"retry_delay_seconds\": null, \"name\": \"n\"}");
	ck_assert_uint_eq(d.nulled,
	    (1u << SCHEDULE_F_MAX_RETRIES) | (1u << SCHEDULE_F_TARGET) |
	        (1u << SCHEDULE_F_LIMITS) | (1u << SCHEDULE_F_RETRY_DELAY));
	ck_assert_int_eq(d.max_retries, 3);
	ck_assert_int_eq(d.target_type, SCHEDULE_TARGET_RECEIVER);
	ck_assert_int_eq(d.limits.memory_mb, 0);
	ck_assert_int_eq(d.retry_delay_seconds, SCHEDULE_UNSET);
	/* A new kind drops the old kind's timing. */
	patch_ok(&d, "{\"kind\": \"interval\", \"interval_seconds\": 60}");
	ck_assert_int_eq(d.kind, SCHED_KIND_INTERVAL);
	ck_assert_ptr_null(d.cron);
	/* Errors leave d as it was, and name the field. */
	parse_ok(seed000, &before);
	schedule_clear(&d);
	parse_ok(seed000, &d);
	static const struct {
		const char *p, *field;
	} bad[] = {
	    {"{\"interval_seconds\": 0}", "interval_seconds"},
	    {"{\"cron\": \"* * * * *\"}", "cron"},
	    {"{\"kind\": \"cron\"}", "cron"},
	    {"{\"kind\": null}", "kind"},
	    {"{\"name\": null}", "name"},
	    {"{\"bogus\": 1}", "bogus"},
	    {"{\"limits\": {\"nproc\": -1}}", "limits.nproc"},
	    {"{\"a\": 1, \"a\": 2}", ""},
	    {"[]", ""},
	    {"{} x", ""},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		p = bad[i].p;
		ck_assert_msg(
		    schedule_patch(&d, p, strlen(p), &e) == -1, "%s", p);
		ck_assert_msg(
		    strcmp(e.field, bad[i].field) == 0, "%s: %s", p, e.field);
		ck_assert(schedule_equal(&d, &before));
	}
	patch_ok(&d, "{}");
	ck_assert(schedule_equal(&d, &before));
	ck_assert_uint_eq(d.present, 0);
	patch_ok(&d, "{\"kind\": \"once\", \"at\": \"2027-01-01T00:00:00Z\"}");
	ck_assert_int_eq(d.interval_seconds, SCHEDULE_UNSET);
	ck_assert_int_eq(d.at, 1798761600000);
	/* A PATCH of at keeps its milliseconds. */
	patch_ok(&d, "{\"at\": \"2027-01-01T00:00:00.436Z\"}");
	ck_assert_int_eq(d.at, 1798761600436);
	schedule_clear(&d);
	schedule_clear(&before);
}
END_TEST

/* The first slot of document s at now. */
static int
first(const char *s, int64_t now, struct slot *sl)
{
	struct schedule_doc d;
	int r;

	parse_ok(s, &d);
	r = schedule_first_slot(&d, now, sl);
	schedule_clear(&d);
	return r;
}

START_TEST(test_first_slot)
{
	const int64_t now = 1767225600; /* 2026-01-01T00:00:00Z */
	struct slot sl;

	ck_assert_int_eq(first(seed000, now, &sl), 1);
	ck_assert_int_eq(sl.at, now + 86400);
	ck_assert_int_eq(first("{\"name\": \"i\", \"interval_seconds\": 60,"
	                       " \"start_at\": \"2026-01-02T00:00:00Z\"}",
	                     now, &sl),
	    1);
	ck_assert_int_eq(sl.at, now + 86400);
	/* A start in the past: its grid, at or after now. */
	ck_assert_int_eq(first("{\"name\": \"i\", \"interval_seconds\": 7,"
	                       " \"start_at\": \"2025-12-31T23:59:00Z\"}",
	                     now, &sl),
	    1);
	ck_assert_int_eq(sl.at, now - 60 + 63);
	ck_assert_int_eq(first("{\"name\": \"i\", \"interval_seconds\": 60,"
	                       " \"start_at\": \"2026-01-01T00:00:00Z\"}",
	                     now, &sl),
	    1);
	ck_assert_int_eq(sl.at, now);
	/* Once: at, unless it is past. */
	ck_assert_int_eq(
	    first("{\"name\": \"o\", \"at\": \"2026-01-01T00:00:01Z\"}", now,
	        &sl),
	    1);
	ck_assert_int_eq(sl.at, now + 1);
	ck_assert_int_eq(
	    first("{\"name\": \"o\", \"at\": \"2025-12-31T23:59:59Z\"}", now,
	        &sl),
	    0);
	/* Cron: strictly after now, in the zone. */
	ck_assert_int_eq(
	    first("{\"name\": \"c\", \"cron\": \"0 0 * * *\"}", now, &sl), 1);
	ck_assert_int_eq(sl.at, now + 86400);
	ck_assert_int_eq(first("{\"name\": \"c\", \"cron\": \"0 9 * * *\","
	                       " \"timezone\": \"America/New_York\"}",
	                     now, &sl),
	    1);
	ck_assert_int_eq(sl.at, now + 14 * 3600);
	/*
	 * New York springs forward on 2026-03-08 at 02:00 EST (07:00Z):
	 * 02:30 does not exist and a fixed-time job fires at the transition.
	 * From midnight EST (05:00Z) the first slot is 07:00Z, the next day's
	 * 02:30 EDT is 06:30Z.
	 */
	ck_assert_int_eq(first("{\"name\": \"c\", \"cron\": \"30 2 * * *\","
	                       " \"timezone\": \"America/New_York\"}",
	                     1772946000, &sl),
	    1);
	ck_assert_int_eq(sl.at, 1772953200);
	ck_assert_int_eq(sl.note, SLOT_NOTE_GAP_SHIFT);
	ck_assert_int_eq(first("{\"name\": \"c\", \"cron\": \"30 2 * * *\","
	                       " \"timezone\": \"America/New_York\","
	                       " \"dst_gap\": \"skip\"}",
	                     1772946000, &sl),
	    1);
	ck_assert_int_eq(sl.at, 1773037800);
	/* A cron never fires before start_at. */
	ck_assert_int_eq(first("{\"name\": \"c\", \"cron\": \"0 0 * * *\","
	                       " \"start_at\": \"2026-02-01T00:00:00Z\"}",
	                     now, &sl),
	    1);
	ck_assert_int_eq(sl.at, 1769904000);
}
END_TEST

START_TEST(test_params)
{
	struct schedule_doc d;
	struct schedule_params p;
	int seen = 0;

	parse_ok(example, &d);
	ck_assert_int_eq(schedule_params(&d, &p), 0);
	for (int i = 0; i < SCHEDULE_PARAMS; i++) {
		const char *c = p.columns[i], *v = p.values[i];

		ck_assert_ptr_nonnull(c);
		if (strcmp(c, "kind") == 0 && ++seen)
			ck_assert_str_eq(v, "cron");
		if (strcmp(c, "interval_seconds") == 0 && ++seen)
			ck_assert_ptr_null(v);
		if (strcmp(c, "max_retries") == 0 && ++seen)
			ck_assert_str_eq(v, "3");
		if (strcmp(c, "anchor") == 0 && ++seen)
			ck_assert_str_eq(v, "slot");
		if (strcmp(c, "limits") == 0 && ++seen)
			ck_assert_str_eq(v,
			    "{\"cpu_seconds\":60,\"memory_mb\":"
			    "512,\"nofile\":1024,\"nproc\":64,"
			    "\"fsize_mb\":1024}");
		if (strcmp(c, "trigger_payload") == 0 && ++seen)
			ck_assert_str_eq(v, "{\"report_type\":\"daily\"}");
		if (strcmp(c, "workflow_id") == 0 && ++seen)
			ck_assert_ptr_null(v);
	}
	ck_assert_int_eq(seen, 7);
	schedule_params_clear(&p);
	schedule_clear(&d);
	parse_ok(
	    "{\"name\": \"o\", \"at\": \"2026-12-24T18:00:00+01:00\"}", &d);
	ck_assert_int_eq(schedule_params(&d, &p), 0);
	for (int i = 0; i < SCHEDULE_PARAMS; i++) {
		if (strcmp(p.columns[i], "at") == 0)
			ck_assert_str_eq(p.values[i], "2026-12-24T17:00:00Z");
		if (strcmp(p.columns[i], "target") == 0)
			ck_assert_ptr_null(p.values[i]);
		if (strcmp(p.columns[i], "limits") == 0)
			ck_assert_str_eq(p.values[i], "{}");
	}
	schedule_params_clear(&p);
	schedule_clear(&d);
}
END_TEST

/* s with every run of white space made one space, in a static buffer. */
static const char *
squeeze(const char *s)
{
	static char buf[8192];
	size_t n = 0;

	for (; *s != '\0' && n + 1 < sizeof(buf); s++)
		if (*s != ' ' && *s != '\n' && *s != '\t')
			buf[n++] = *s;
		else if (n > 0 && buf[n - 1] != ' ')
			buf[n++] = ' ';
	buf[n] = '\0';
	return buf;
}

/*
 * The API's insert and update of a whole document (sql/queries/api.sql)
 * name the columns of schedule_params() in its order, as $4...: the two
 * lists are written apart and must not drift.
 */
START_TEST(test_params_sql)
{
	struct schedule_doc d;
	struct schedule_params p;
	char cols[2048] = "idempotency_hash", vals[512] = "'UTF8')),",
	     sets[4096] = "SET";
	size_t a = strlen(cols), b = strlen(vals), c = strlen(sets);

	parse_ok(example, &d);
	ck_assert_int_eq(schedule_params(&d, &p), 0);
	for (int i = 0; i < SCHEDULE_PARAMS; i++) {
		a += snprintf(cols + a, sizeof(cols) - a, ", %s", p.columns[i]);
		b += snprintf(
		    vals + b, sizeof(vals) - b, "%s $%d", i ? "," : "", i + 4);
		c += snprintf(sets + c, sizeof(sets) - c, " %s = $%d,",
		    p.columns[i], i + 4);
	}
	snprintf(cols + a, sizeof(cols) - a, ")");
	snprintf(vals + b, sizeof(vals) - b, ")");
	snprintf(sets + c, sizeof(sets) - c, " next_run_at");
	ck_assert_ptr_nonnull(strstr(squeeze(SQL_api_schedule_insert), cols));
	ck_assert_ptr_nonnull(strstr(squeeze(SQL_api_schedule_insert), vals));
	ck_assert_ptr_nonnull(strstr(squeeze(SQL_api_schedule_update), sets));
	schedule_params_clear(&p);
	schedule_clear(&d);
}
END_TEST

/*
 * A stored row (the JSON of cronvisor_schedule_json(), sql/functions.sql)
 * reads back as the document it was written from; the state members are
 * ignored; a row the API would refuse is an error.
 */
START_TEST(test_from_row)
{
	struct schedule_doc d, back;
	struct schedule_error e;
	json_t *row;

	ck_assert_int_eq(schedule_parse(example, strlen(example), &d, &e), 0);
	row = schedule_to_json(&d);
	ck_assert_ptr_nonnull(row);
	json_object_set_new(
	    row, "id", json_string("3f2ed927-d36f-4d23-8775-068b42bc0d36"));
	json_object_set_new(row, "owner", json_string("alice"));
	json_object_set_new(row, "status", json_string("paused"));
	json_object_set_new(row, "run_count", json_integer(7));
	ck_assert_int_eq(schedule_from_row(row, &back, &e), 0);
	ck_assert(schedule_equal(&d, &back));
	schedule_clear(&back);
	json_object_set_new(row, "cron", json_string("61 * * * *"));
	ck_assert_int_eq(schedule_from_row(row, &back, &e), -1);
	ck_assert_str_eq(e.field, "cron");
	ck_assert_ptr_null(back.name);
	json_decref(row);
	ck_assert_int_eq(schedule_from_row(NULL, &back, &e), -1);
	schedule_clear(&d);
}
END_TEST

/* The JSON string of field k of document text s once parsed. */
static void
shown_as(const char *s, const char *k, const char *want)
{
	struct schedule_doc d;
	json_t *o;

	parse_ok(s, &d);
	o = schedule_to_json(&d);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(json_string_value(json_object_get(o, k)), want);
	json_decref(o);
	schedule_clear(&d);
}

/*
 * Instants keep their milliseconds: at and start_at read and written
 * with them (0, 1, 999 ms), a finer fraction refused naming the field,
 * once and interval slots carry them, a cron start_at with them fires no
 * slot before it.
 */
START_TEST(test_instants_ms)
{
	const int64_t now = 1767225600; /* 2026-01-01T00:00:00Z */
	struct schedule_doc d;
	struct timing tm;
	struct slot sl;
	char err[CV_ERRLEN];

	shown_as("{\"name\": \"o\", \"at\": \"2026-01-01T00:00:01.436Z\"}",
	    "at", "2026-01-01T00:00:01.436Z");
	shown_as("{\"name\": \"o\", \"at\": \"2026-01-01T00:00:01.000Z\"}",
	    "at", "2026-01-01T00:00:01Z");
	shown_as("{\"name\": \"o\", \"at\": \"2026-01-01T00:00:01.001Z\"}",
	    "at", "2026-01-01T00:00:01.001Z");
	shown_as("{\"name\": \"o\", \"at\": \"2026-01-01T01:00:01.999+01:00\"}",
	    "at", "2026-01-01T00:00:01.999Z");
	shown_as("{\"name\": \"i\", \"interval_seconds\": 60,"
	         " \"start_at\": \"2026-01-01T00:00:00.5Z\"}",
	    "start_at", "2026-01-01T00:00:00.500Z");
	parse_fails("{\"name\": \"o\", \"at\": \"2026-01-01T00:00:01.4361Z\"}",
	    "invalid_field", "at");
	parse_fails("{\"name\": \"i\", \"interval_seconds\": 60,"
	            " \"start_at\": \"2026-01-01T00:00:00.0001Z\"}",
	    "invalid_field", "start_at");

	/* Once: the slot is the second, ms the rest. */
	parse_ok("{\"name\": \"o\", \"at\": \"2026-01-01T00:00:01.436Z\"}", &d);
	ck_assert_int_eq(d.at, (now + 1) * 1000 + 436);
	ck_assert_int_eq(schedule_timing(&d, &tm, err, sizeof(err)), 0);
	ck_assert_int_eq(tm.at, now + 1);
	ck_assert_int_eq(tm.ms, 436);
	ck_assert_int_eq(schedule_first_slot(&d, now, &sl), 1);
	ck_assert_int_eq(slot_ms(&tm, sl.at), (now + 1) * 1000 + 436);
	schedule_clear(&d);

	/* Interval: every slot start_at + k * interval, with its ms. */
	parse_ok("{\"name\": \"i\", \"interval_seconds\": 60,"
	         " \"start_at\": \"2026-01-01T00:00:00.999Z\"}",
	    &d);
	ck_assert_int_eq(schedule_timing(&d, &tm, err, sizeof(err)), 0);
	ck_assert_int_eq(tm.ms, 999);
	ck_assert_int_eq(schedule_first_slot(&d, now, &sl), 1);
	ck_assert_int_eq(slot_ms(&tm, sl.at), now * 1000 + 999);
	ck_assert_int_eq(slot_next(&tm, sl.at, &sl), 1);
	ck_assert_int_eq(slot_ms(&tm, sl.at), (now + 60) * 1000 + 999);
	schedule_clear(&d);

	/*
	 * Cron: whole minutes, so a start_at of 00:00:00.001 has its first
	 * slot a minute later, never at 00:00:00.000, before it.
	 */
	parse_ok("{\"name\": \"c\", \"cron\": \"* * * * *\","
	         " \"start_at\": \"2026-01-01T00:00:00.001Z\"}",
	    &d);
	ck_assert_int_eq(schedule_timing(&d, &tm, err, sizeof(err)), 0);
	ck_assert_int_eq(tm.ms, 0);
	ck_assert_int_eq(schedule_first_slot(&d, now - 1, &sl), 1);
	ck_assert_int_eq(sl.at, now + 60);
	ck_assert_int_eq(slot_ms(&tm, sl.at), (now + 60) * 1000);
	schedule_clear(&d);
	parse_ok("{\"name\": \"c\", \"cron\": \"* * * * *\","
	         " \"start_at\": \"2026-01-01T00:00:00.000Z\"}",
	    &d);
	ck_assert_int_eq(schedule_first_slot(&d, now - 1, &sl), 1);
	ck_assert_int_eq(sl.at, now);
	schedule_clear(&d);
}
END_TEST

/* A preview slot as JSON: UTC, the wall time with its offset, the note. */
START_TEST(test_slot_json)
{
	struct schedule_doc d;
	struct schedule_error e;
	struct timing tm;
	struct slot sl;
	char err[CV_ERRLEN];
	json_t *o;
	/* 2026-03-29 01:30 UTC: 02:30 Berlin does not exist that day. */
	static const char body[] =
	    "{\"name\": \"n\", \"cron\": \"30 2 * * *\","
	    " \"timezone\": \"Europe/Berlin\", \"dst_gap\": \"shift\"}";

	ck_assert_int_eq(schedule_parse(body, strlen(body), &d, &e), 0);
	ck_assert_int_eq(schedule_timing(&d, &tm, err, sizeof(err)), 0);
	ck_assert_int_eq(slot_next(&tm, 1774656000, &sl), 1); /* 03-28 00:00Z */
	o = schedule_slot_json(&tm, &sl);
	ck_assert_str_eq(json_string_value(json_object_get(o, "utc")),
	    "2026-03-28T01:30:00Z");
	ck_assert_str_eq(json_string_value(json_object_get(o, "local")),
	    "2026-03-28T02:30:00+01:00");
	ck_assert(json_is_null(json_object_get(o, "note")));
	json_decref(o);
	ck_assert_int_eq(slot_next(&tm, sl.at, &sl), 1);
	o = schedule_slot_json(&tm, &sl);
	ck_assert_str_eq(json_string_value(json_object_get(o, "local")),
	    "2026-03-29T03:00:00+02:00");
	ck_assert_str_eq(json_string_value(json_object_get(o, "abbr")), "CEST");
	ck_assert(json_is_string(json_object_get(o, "note")));
	json_decref(o);
	schedule_clear(&d);
}
END_TEST

/* --- the seeds' spellings (common/spelling.c) --------------------------- */

/* Seed 004's example schedule, with every member its Schedule type has. */
static const char seed004[] =
    "{\"name\": \"Weekly Entity Graph Refresh\", \"repeat\": \"repeating\","
    " \"cronExpression\": \"0 2 * * 0\", \"targetType\": \"agent\","
    " \"agentId\": \"query-strategy\","
    " \"params\": {\"refreshEntityGraph\": true},"
    " \"retryConfig\": {\"maxRetries\": 3, \"backoff\": \"exponential\","
    " \"delay\": 2000}, \"timeout\": 30000, \"priority\": 5,"
    " \"enabled\": true}";

/* Seed 002's cron body as its Scheduled Events API takes it. */
static const char seed002[] =
    "{\"name\": \"every five\", \"scheduleType\": \"cron\","
    " \"cronExpression\": \"*/5 * * * *\", \"timezone\": \"UTC\","
    " \"organizationId\": \"org-uuid\", \"environmentId\": \"env-uuid\","
    " \"workflowId\": \"wf-1\", \"workflowEntityId\": \"ent-1\"}";

/* "name" plus the members extra: must parse into *d. */
static void
named_ok(const char *extra, struct schedule_doc *d)
{
	char buf[2048];

	snprintf(buf, sizeof(buf), "{\"name\": \"x\", %s}", extra);
	parse_ok(buf, d);
}

START_TEST(test_seed004)
{
	struct schedule_doc d;
	json_t *want;

	parse_ok(seed004, &d);
	ck_assert_int_eq(d.kind, SCHED_KIND_CRON);
	ck_assert_str_eq(d.cron, "0 2 * * 0");
	ck_assert_int_eq(d.target_type, SCHEDULE_TARGET_AGENT);
	want = json_pack("{s:s, s:s, s:{s:b}, s:i}", "type", "agent", "agent",
	    "query-strategy", "params", "refreshEntityGraph", 1, "timeout_ms",
	    30000);
	ck_assert(json_equal(d.target, want));
	json_decref(want);
	ck_assert_int_eq(d.max_retries, 3);
	ck_assert_int_eq(d.backoff, BACKOFF_EXPONENTIAL);
	ck_assert_int_eq(d.retry_delay_seconds, 2);
	ck_assert_int_eq(d.timeout_seconds, 600); /* the agent's is in ms */
	ck_assert_int_eq(d.priority, 5);
	ck_assert_int_eq(d.enable, 1);
	ck_assert_str_eq(d.timezone, "UTC"); /* the API's default_timezone */
	ck_assert_uint_eq(d.present,
	    (1u << SCHEDULE_F_NAME) | (1u << SCHEDULE_F_KIND) |
	        (1u << SCHEDULE_F_CRON) | (1u << SCHEDULE_F_TARGET) |
	        (1u << SCHEDULE_F_MAX_RETRIES) | (1u << SCHEDULE_F_BACKOFF) |
	        (1u << SCHEDULE_F_RETRY_DELAY) | (1u << SCHEDULE_F_PRIORITY));
	schedule_clear(&d);

	/* once: startAt is the instant */
	named_ok("\"repeat\": \"once\", \"startAt\": \"2024-01-15T10:00:00Z\","
	         " \"targetType\": \"agent\", \"agentId\": \"data-collection\","
	         " \"params\": {\"tickerId\": \"db:ticker:AAPL:id\"}",
	    &d);
	ck_assert_int_eq(d.kind, SCHED_KIND_ONCE);
	ck_assert_int_eq(d.at, 1705312800000);
	ck_assert_int_eq(d.start_at, SCHEDULE_UNSET);
	ck_assert_int_eq(d.enable, 0);
	ck_assert_str_eq(json_string_value(json_object_get(
	                     json_object_get(d.target, "params"), "tickerId")),
	    "db:ticker:AAPL:id");
	ck_assert_ptr_null(json_object_get(d.target, "timeout_ms"));
	schedule_clear(&d);

	/* repeating with an interval in ms; startAt is the first slot */
	named_ok("\"repeat\": \"repeating\", \"interval\": 60000, \"startAt\":"
	         " \"2026-05-01T00:00:00.250Z\", \"timeout\": 120000,"
	         " \"retryConfig\": {\"backoff\": \"linear\", \"delay\": 5000},"
	         " \"enabled\": false",
	    &d);
	ck_assert_int_eq(d.kind, SCHED_KIND_INTERVAL);
	ck_assert_int_eq(d.interval_seconds, 60);
	ck_assert_int_eq(d.start_at, 1777593600250);
	ck_assert_int_eq(d.at, SCHEDULE_UNSET);
	ck_assert_int_eq(d.timeout_seconds, 120); /* no agent: the run's */
	ck_assert_int_eq(d.backoff, BACKOFF_LINEAR);
	ck_assert_int_eq(d.retry_delay_seconds, 5);
	ck_assert_int_eq(d.max_retries, 3);
	ck_assert_int_eq(d.enable, -1);
	ck_assert_int_eq(d.target_type, SCHEDULE_TARGET_RECEIVER);
	schedule_clear(&d);

	/* without repeat: the one timing says the kind, as natively */
	named_ok("\"startAt\": \"2026-05-01T00:00:00Z\"", &d);
	ck_assert_int_eq(d.kind, SCHED_KIND_ONCE);
	ck_assert_int_eq(d.at, 1777593600000);
	schedule_clear(&d);
	named_ok("\"cronExpression\": \"0 8 * * *\", \"startAt\":"
	         " \"2026-05-01T00:00:00Z\", \"enabled\": null",
	    &d);
	ck_assert_int_eq(d.kind, SCHED_KIND_CRON);
	ck_assert_int_eq(d.start_at, 1777593600000);
	ck_assert_int_eq(d.enable, 0);
	schedule_clear(&d);
	/* repeat agreeing with a native kind; retryConfig null: defaults */
	named_ok("\"repeat\": \"repeating\", \"kind\": \"cron\", \"cron\":"
	         " \"0 8 * * *\", \"retryConfig\": null",
	    &d);
	ck_assert_int_eq(d.kind, SCHED_KIND_CRON);
	ck_assert_int_eq(d.max_retries, 3);
	ck_assert_uint_eq(d.nulled, 0); /* nulled is a patch's */
	schedule_clear(&d);
	/* an agent target of the native spelling takes the seed's members */
	named_ok(
	    "\"interval_seconds\": 60, \"target\": {\"type\": \"agent\","
	    " \"agent\": \"a\"}, \"params\": {\"k\": 1}, \"timeout\": 1500",
	    &d);
	ck_assert_int_eq(json_integer_value(json_object_get(
	                     json_object_get(d.target, "params"), "k")),
	    1);
	ck_assert_int_eq(
	    json_integer_value(json_object_get(d.target, "timeout_ms")), 1500);
	schedule_clear(&d);
	/* agentId alone says the target */
	named_ok(
	    "\"interval\": 1000, \"agentId\": \"a\", \"timeout\": null", &d);
	ck_assert_int_eq(d.target_type, SCHEDULE_TARGET_AGENT);
	ck_assert_int_eq(d.interval_seconds, 1);
	ck_assert_ptr_null(json_object_get(d.target, "timeout_ms"));
	schedule_clear(&d);
	/* seed 004's pipeline target: targetType and pipelineId */
	named_ok("\"interval\": 1000, \"targetType\": \"pipeline\", "
	         "\"pipelineId\": \"newsletter\", \"params\": {\"k\": 2}, "
	         "\"timeout\": 2500",
	    &d);
	ck_assert_int_eq(d.target_type, SCHEDULE_TARGET_PIPELINE);
	ck_assert_str_eq(
	    json_string_value(json_object_get(d.target, "type")), "pipeline");
	ck_assert_str_eq(
	    json_string_value(json_object_get(d.target, "pipeline")),
	    "newsletter");
	ck_assert_ptr_null(json_object_get(d.target, "agent"));
	ck_assert_int_eq(
	    json_integer_value(json_object_get(d.target, "timeout_ms")), 2500);
	schedule_clear(&d);
	/* pipelineId alone says it too */
	named_ok("\"interval\": 1000, \"pipelineId\": \"p\"", &d);
	ck_assert_int_eq(d.target_type, SCHEDULE_TARGET_PIPELINE);
	schedule_clear(&d);
	/* a native pipeline target takes the seed's params and timeout */
	named_ok("\"interval\": 1000, \"target\": {\"type\": \"pipeline\", "
	         "\"pipeline\": \"p\"}, \"params\": {\"k\": 3}, "
	         "\"timeout\": 60000",
	    &d);
	ck_assert_int_eq(d.target_type, SCHEDULE_TARGET_PIPELINE);
	ck_assert_int_eq(json_integer_value(json_object_get(
	                     json_object_get(d.target, "params"), "k")),
	    3);
	ck_assert_int_eq(
	    json_integer_value(json_object_get(d.target, "timeout_ms")), 60000);
	schedule_clear(&d);
}
END_TEST

START_TEST(test_seed002)
{
	struct schedule_doc d;

	parse_ok(seed002, &d);
	ck_assert_int_eq(d.kind, SCHED_KIND_CRON);
	ck_assert_str_eq(d.cron, "*/5 * * * *");
	ck_assert_str_eq(d.organization_id, "org-uuid");
	ck_assert_str_eq(d.environment_id, "env-uuid");
	ck_assert_str_eq(d.workflow_id, "wf-1");
	ck_assert_str_eq(d.trigger_node_id, "ent-1");
	ck_assert_int_eq(d.target_type, SCHEDULE_TARGET_RECEIVER);
	schedule_clear(&d);
	named_ok("\"scheduleType\": \"datetime\", \"scheduledAt\":"
	         " \"2026-04-15T14:30:00.000Z\", \"timezone\": "
	         "\"America/New_York\", \"organizationId\": 7",
	    &d);
	ck_assert_int_eq(d.kind, SCHED_KIND_ONCE);
	ck_assert_int_eq(d.at, 1776263400000);
	ck_assert_str_eq(d.timezone, "America/New_York");
	ck_assert_str_eq(d.organization_id, "7");
	ck_assert_ptr_null(d.environment_id);
	schedule_clear(&d);
	/* scheduleType agreeing with kind */
	named_ok("\"scheduleType\": \"datetime\", \"kind\": \"once\","
	         " \"at\": \"2026-04-15T14:30:00Z\"",
	    &d);
	ck_assert_int_eq(d.kind, SCHED_KIND_ONCE);
	schedule_clear(&d);
}
END_TEST

/* Every refusal of a seed's spelling names the field as the body does. */
static const struct seed_bad {
	const char *extra; /* members beside "name" */
	const char *code;  /* the error */
	const char *field; /* as the body spells it */
} seed_bads[] = {
    /* two spellings of one field, or of the kind, that disagree */
    {"\"cronExpression\": \"0 8 * * *\", \"cron\": \"0 8 * * *\"",
        "invalid_field", "cronExpression"},
    {"\"repeat\": \"once\", \"kind\": \"cron\", \"cron\": \"0 8 * * *\"",
        "invalid_field", "repeat"},
    {"\"repeat\": \"repeating\", \"kind\": \"once\", \"at\": "
     "\"2026-01-01T00:00:00Z\"",
        "invalid_field", "repeat"},
    {"\"scheduleType\": \"cron\", \"repeat\": \"once\", \"cronExpression\": "
     "\"0 8 * * *\"",
        "invalid_field", "scheduleType"},
    {"\"scheduleType\": \"datetime\", \"kind\": \"cron\", \"cron\": "
     "\"0 8 * * *\"",
        "invalid_field", "scheduleType"},
    {"\"interval\": 60000, \"interval_seconds\": 60", "invalid_field",
        "interval"},
    {"\"scheduledAt\": \"2026-01-01T00:00:00Z\", \"at\": "
     "\"2026-01-01T00:00:00Z\"",
        "invalid_field", "scheduledAt"},
    {"\"scheduleType\": \"datetime\", \"scheduledAt\": "
     "\"2026-01-01T00:00:00Z\", \"startAt\": \"2026-01-01T00:00:00Z\"",
        "invalid_field", "startAt"},
    {"\"cronExpression\": \"0 8 * * *\", \"startAt\": "
     "\"2026-01-01T00:00:00Z\", \"start_at\": \"2026-01-01T00:00:00Z\"",
        "invalid_field", "startAt"},
    {"\"repeat\": \"once\", \"startAt\": \"2026-01-01T00:00:00Z\", \"at\": "
     "\"2026-01-01T00:00:00Z\"",
        "invalid_field", "startAt"},
    {"\"interval\": 60000, \"retryConfig\": {\"maxRetries\": 1}, "
     "\"max_retries\": 1",
        "invalid_field", "retryConfig.maxRetries"},
    {"\"interval\": 60000, \"timeout\": 1000, \"timeout_seconds\": 1",
        "invalid_field", "timeout"},
    {"\"interval\": 60000, \"workflowId\": \"w\", \"workflow_id\": \"w\"",
        "invalid_field", "workflowId"},
    {"\"interval\": 60000, \"workflowEntityId\": \"e\", \"trigger_node_id\": "
     "\"e\"",
        "invalid_field", "workflowEntityId"},
    {"\"interval\": 60000, \"organizationId\": \"o\", \"organization_id\": "
     "\"o\"",
        "invalid_field", "organizationId"},
    {"\"interval\": 60000, \"environmentId\": \"e\", \"environment_id\": "
     "\"e\"",
        "invalid_field", "environmentId"},
    {"\"interval\": 60000, \"targetType\": \"agent\", \"agentId\": \"a\","
     " \"target\": {\"type\": \"exec\", \"argv\": [\"/bin/true\"]}",
        "invalid_field", "targetType"},
    {"\"interval\": 60000, \"agentId\": \"a\", \"target\": {\"type\": "
     "\"agent\", \"agent\": \"a\"}",
        "invalid_field", "agentId"},
    {"\"interval\": 60000, \"target\": {\"type\": \"agent\", \"agent\": "
     "\"a\", \"timeout_ms\": 5}, \"timeout\": 5",
        "invalid_field", "timeout"},
    /* the kind's words */
    {"\"repeat\": \"sometimes\", \"interval\": 60000", "invalid_field",
        "repeat"},
    {"\"repeat\": null, \"interval\": 60000", "invalid_field", "repeat"},
    {"\"repeat\": 1, \"interval\": 60000", "invalid_field", "repeat"},
    {"\"scheduleType\": \"weekly\", \"cronExpression\": \"0 8 * * *\"",
        "invalid_field", "scheduleType"},
    {"\"repeat\": \"repeating\"", "missing_field", "cronExpression"},
    {"\"repeat\": \"repeating\", \"cronExpression\": \"0 8 * * *\", "
     "\"interval\": 60000",
        "invalid_field", "interval"},
    {"\"repeat\": \"once\"", "missing_field", "startAt"},
    {"\"scheduleType\": \"datetime\"", "missing_field", "scheduledAt"},
    {"\"scheduleType\": \"cron\"", "missing_field", "cronExpression"},
    {"\"repeat\": \"once\", \"interval\": 60000, \"startAt\": "
     "\"2026-01-01T00:00:00Z\"",
        "invalid_field", "interval"},
    /* values */
    {"\"interval\": 1500", "invalid_field", "interval"},
    {"\"interval\": 999", "invalid_field", "interval"},
    {"\"interval\": 0", "invalid_field", "interval"},
    {"\"interval\": -60000", "invalid_field", "interval"},
    {"\"interval\": 3162240001000", "invalid_field", "interval"},
    {"\"interval\": \"60000\"", "invalid_field", "interval"},
    {"\"interval\": 60000.5", "invalid_field", "interval"},
    {"\"cronExpression\": \"61 * * * *\"", "invalid_field", "cronExpression"},
    {"\"cronExpression\": 5", "invalid_field", "cronExpression"},
    {"\"scheduledAt\": \"2026-04-15 14:30\"", "invalid_field", "scheduledAt"},
    {"\"scheduledAt\": \"2026-04-15T14:30:00\"", "invalid_field",
        "scheduledAt"},
    {"\"repeat\": \"once\", \"startAt\": \"tomorrow\"", "invalid_field",
        "startAt"},
    {"\"repeat\": \"repeating\", \"interval\": 60000, \"startAt\": 5",
        "invalid_field", "startAt"},
    {"\"cronExpression\": \"0 8 * * *\", \"timezone\": \"Mars/Base\"",
        "invalid_field", "timezone"},
    {"\"interval\": 60000, \"retryConfig\": {\"delay\": 1500}", "invalid_field",
        "retryConfig.delay"},
    {"\"interval\": 60000, \"retryConfig\": {\"delay\": 0}", "invalid_field",
        "retryConfig.delay"},
    {"\"interval\": 60000, \"retryConfig\": {\"backoff\": \"random\"}",
        "invalid_field", "retryConfig.backoff"},
    {"\"interval\": 60000, \"retryConfig\": {\"backoff\": {\"type\": "
     "\"fixed\"}}",
        "invalid_field", "retryConfig.backoff"},
    {"\"interval\": 60000, \"retryConfig\": {\"maxRetries\": -1}",
        "invalid_field", "retryConfig.maxRetries"},
    {"\"interval\": 60000, \"retryConfig\": {\"maxRetries\": 1001}",
        "invalid_field", "retryConfig.maxRetries"},
    {"\"interval\": 60000, \"retryConfig\": {\"jitter\": 1}", "unknown_field",
        "retryConfig.jitter"},
    {"\"interval\": 60000, \"retryConfig\": 3", "invalid_field", "retryConfig"},
    {"\"interval\": 60000, \"targetType\": \"pipeline\", \"pipelineId\": "
     "\"Not A Slug\"",
        "invalid_field", "pipelineId"},
    {"\"interval\": 60000, \"targetType\": \"pipeline\"", "missing_field",
        "pipelineId"},
    {"\"interval\": 60000, \"targetType\": \"agent\", \"pipelineId\": "
     "\"p\"",
        "invalid_field", "pipelineId"},
    {"\"interval\": 60000, \"targetType\": \"pipeline\", \"agentId\": "
     "\"a\"",
        "invalid_field", "agentId"},
    {"\"interval\": 60000, \"agentId\": \"a\", \"pipelineId\": \"p\"",
        "invalid_field", "pipelineId"},
    {"\"interval\": 60000, \"pipelineId\": \"p\", \"timeout\": 0",
        "invalid_field", "timeout"},
    {"\"interval\": 60000, \"target\": {\"type\": \"pipeline\"}",
        "missing_field", "target.pipeline"},
    {"\"interval\": 60000, \"target\": {\"type\": \"pipeline\", "
     "\"pipeline\": \"p\", \"agent\": \"a\"}",
        "unknown_field", "target.agent"},
    {"\"interval\": 60000, \"targetType\": \"lambda\"", "invalid_field",
        "targetType"},
    {"\"interval\": 60000, \"targetType\": 1", "invalid_field", "targetType"},
    {"\"interval\": 60000, \"targetType\": \"agent\"", "missing_field",
        "agentId"},
    {"\"interval\": 60000, \"agentId\": \"Not A Slug\"", "invalid_field",
        "agentId"},
    {"\"interval\": 60000, \"agentId\": null", "invalid_field", "agentId"},
    {"\"interval\": 60000, \"agentId\": \"a\", \"params\": [1]",
        "invalid_field", "params"},
    {"\"interval\": 60000, \"params\": {\"k\": 1}", "invalid_field", "params"},
    {"\"interval\": 60000, \"agentId\": \"a\", \"params\": {\"k\": 1e300}",
        "invalid_field", "params.k"},
    {"\"interval\": 60000, \"agentId\": \"a\", \"timeout\": 0", "invalid_field",
        "timeout"},
    {"\"interval\": 60000, \"agentId\": \"a\", \"timeout\": 31536000001",
        "invalid_field", "timeout"},
    {"\"interval\": 60000, \"timeout\": 1500", "invalid_field", "timeout"},
    {"\"interval\": 60000, \"timeout\": 0", "invalid_field", "timeout"},
    {"\"interval\": 60000, \"enabled\": \"yes\"", "invalid_field", "enabled"},
    {"\"interval\": 60000, \"enabled\": 1", "invalid_field", "enabled"},
    {"\"interval\": 60000, \"organizationId\": \"\"", "invalid_field",
        "organizationId"},
    {"\"interval\": 60000, \"environmentId\": [1]", "invalid_field",
        "environmentId"},
    {"\"interval\": 60000, \"workflowEntityId\": {}", "invalid_field",
        "workflowEntityId"},
    {"\"interval\": 60000, \"priority\": \"high\"", "invalid_field",
        "priority"},
    /* what no seed spells stays unknown, as before */
    {"\"interval\": 60000, \"createdAt\": \"2026-01-01T00:00:00Z\"",
        "unknown_field", "createdAt"},
    {"\"interval\": 60000, \"checkInterval\": 60000", "unknown_field",
        "checkInterval"},
};

START_TEST(test_seed_errors)
{
	const struct seed_bad *b = &seed_bads[_i];
	char buf[2048];

	snprintf(buf, sizeof(buf), "{\"name\": \"x\", %s}", b->extra);
	parse_fails(buf, b->code, b->field);
}
END_TEST

/* A patch in a seed's spelling, read against the schedule it changes. */
START_TEST(test_seed_patch)
{
	struct schedule_doc d, before;
	struct schedule_error e;
	json_t *params;

	parse_ok(seed004, &d);
	patch_ok(&d, "{\"params\": {\"tickerId\": \"AAPL\"}}");
	ck_assert_str_eq(json_string_value(json_object_get(d.target, "agent")),
	    "query-strategy");
	params = json_object_get(d.target, "params");
	ck_assert_int_eq(json_object_size(params), 1);
	ck_assert_str_eq(
	    json_string_value(json_object_get(params, "tickerId")), "AAPL");
	ck_assert_int_eq(
	    json_integer_value(json_object_get(d.target, "timeout_ms")), 30000);
	ck_assert(d.present & (1u << SCHEDULE_F_TARGET));
	patch_ok(&d, "{\"agentId\": \"other\", \"timeout\": 5000}");
	ck_assert_str_eq(
	    json_string_value(json_object_get(d.target, "agent")), "other");
	ck_assert_int_eq(
	    json_integer_value(json_object_get(d.target, "timeout_ms")), 5000);
	ck_assert_ptr_nonnull(json_object_get(d.target, "params"));
	patch_ok(&d, "{\"enabled\": false, \"repeat\": \"repeating\"}");
	ck_assert_int_eq(d.enable, -1);
	ck_assert_int_eq(d.kind, SCHED_KIND_CRON);
	ck_assert_uint_eq(d.present, 0);
	/* the kind changes: the old timing goes */
	patch_ok(&d, "{\"repeat\": \"repeating\", \"interval\": 3600000}");
	ck_assert_int_eq(d.kind, SCHED_KIND_INTERVAL);
	ck_assert_int_eq(d.interval_seconds, 3600);
	ck_assert_ptr_null(d.cron);
	patch_ok(&d, "{\"startAt\": \"2026-05-01T00:00:00Z\"}");
	ck_assert_int_eq(d.start_at, 1777593600000);
	ck_assert_uint_eq(d.present, 1u << SCHEDULE_F_START_AT);
	patch_ok(&d, "{\"retryConfig\": null}");
	ck_assert_int_eq(d.retry_delay_seconds, SCHEDULE_UNSET);
	ck_assert_uint_eq(d.nulled,
	    (1u << SCHEDULE_F_MAX_RETRIES) | (1u << SCHEDULE_F_BACKOFF) |
	        (1u << SCHEDULE_F_RETRY_DELAY));
	/* errors leave d as it was and name the seed's field */
	parse_ok(seed004, &before);
	schedule_clear(&d);
	parse_ok(seed004, &d);
	static const struct {
		const char *p, *field;
	} bad[] = {
	    {"{\"interval\": 1500}", "interval"},
	    {"{\"cronExpression\": \"61 * * * *\"}", "cronExpression"},
	    {"{\"repeat\": \"once\"}", "startAt"},
	    {"{\"scheduleType\": \"datetime\"}", "scheduledAt"},
	    {"{\"agentId\": \"Bad Slug\"}", "agentId"},
	    {"{\"timeout\": 0}", "timeout"},
	    {"{\"retryConfig\": {\"delay\": 10}}", "retryConfig.delay"},
	    {"{\"cronExpression\": \"0 1 * * *\", \"cron\": \"0 1 * * *\"}",
	        "cronExpression"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(
		    schedule_patch(&d, bad[i].p, strlen(bad[i].p), &e) == -1,
		    "%s", bad[i].p);
		ck_assert_msg(strcmp(e.field, bad[i].field) == 0, "%s: %s",
		    bad[i].p, e.field);
		ck_assert(schedule_equal(&d, &before));
	}
	schedule_clear(&d);
	schedule_clear(&before);

	/* a done datetime schedule given a new scheduledAt: at is present */
	named_ok("\"scheduleType\": \"datetime\", \"scheduledAt\":"
	         " \"2026-04-15T14:30:00Z\"",
	    &d);
	patch_ok(&d, "{\"scheduledAt\": \"2026-06-01T08:00:00Z\"}");
	ck_assert_int_eq(d.at, 1780300800000);
	ck_assert_uint_eq(d.present, 1u << SCHEDULE_F_AT);
	/* startAt of a once schedule is its instant */
	patch_ok(&d, "{\"startAt\": \"2026-06-02T08:00:00Z\"}");
	ck_assert_int_eq(d.at, 1780387200000);
	/* from once to cron with seed 002's words */
	patch_ok(&d,
	    "{\"scheduleType\": \"cron\", \"cronExpression\":"
	    " \"0 9 * * 1-5\"}");
	ck_assert_int_eq(d.kind, SCHED_KIND_CRON);
	ck_assert_int_eq(d.at, SCHEDULE_UNSET);
	schedule_clear(&d);
}
END_TEST

/* The field paths of the API's own errors, as the body spelled them. */
START_TEST(test_seed_field_names)
{
	struct schedule_doc d;
	char buf[128];

	parse_ok(seed004, &d);
	ck_assert_str_eq(
	    spelling_field(&d, "target.agent", buf, sizeof(buf)), "agentId");
	ck_assert_str_eq(
	    spelling_field(&d, "target.params.tickerId", buf, sizeof(buf)),
	    "params.tickerId");
	ck_assert_str_eq(
	    spelling_field(&d, "target.params[0]", buf, sizeof(buf)),
	    "params[0]");
	ck_assert_str_eq(
	    spelling_field(&d, "target", buf, sizeof(buf)), "targetType");
	ck_assert_str_eq(
	    spelling_field(&d, "target.timeout_ms", buf, sizeof(buf)),
	    "timeout");
	ck_assert_str_eq(
	    spelling_field(&d, "cron", buf, sizeof(buf)), "cronExpression");
	ck_assert_str_eq(
	    spelling_field(&d, "kind", buf, sizeof(buf)), "repeat");
	ck_assert_str_eq(spelling_field(&d, "name", buf, sizeof(buf)), "name");
	ck_assert_str_eq(
	    spelling_field(&d, "cronx", buf, sizeof(buf)), "cronx");
	ck_assert_str_eq(spelling_field(&d, "", buf, sizeof(buf)), "");
	schedule_clear(&d);
	named_ok(
	    "\"repeat\": \"once\", \"startAt\": \"2026-01-01T00:00:00Z\"", &d);
	ck_assert_str_eq(spelling_field(&d, "at", buf, sizeof(buf)), "startAt");
	schedule_clear(&d);
	/* a native body is named natively */
	parse_ok(example, &d);
	ck_assert_str_eq(spelling_field(&d, "cron", buf, sizeof(buf)), "cron");
	ck_assert_int_eq(d.nspelled, 0);
	schedule_clear(&d);
}
END_TEST

/* A seed's body comes back as the native document, which reads the same. */
START_TEST(test_seed_round_trip)
{
	struct schedule_doc d;
	json_t *j;

	round_trip(seed004);
	round_trip(seed002);
	parse_ok(seed002, &d);
	j = schedule_to_json(&d);
	ck_assert_str_eq(
	    json_string_value(json_object_get(j, "organization_id")),
	    "org-uuid");
	ck_assert_str_eq(
	    json_string_value(json_object_get(j, "environment_id")),
	    "env-uuid");
	ck_assert_ptr_null(json_object_get(j, "organizationId"));
	ck_assert_ptr_null(json_object_get(j, "cronExpression"));
	json_decref(j);
	schedule_clear(&d);
}
END_TEST

static Suite *
schedule_suite(void)
{
	Suite *s = suite_create("schedule");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_seed000);
	tcase_add_test(tc, test_example);
	tcase_add_test(tc, test_int_ranges);
	tcase_add_test(tc, test_field_errors);
	tcase_add_test(tc, test_target_errors);
	tcase_add_test(tc, test_json_errors);
	tcase_add_test(tc, test_storable_numbers);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_patch);
	tcase_add_test(tc, test_first_slot);
	tcase_add_test(tc, test_params);
	tcase_add_test(tc, test_params_sql);
	tcase_add_test(tc, test_from_row);
	tcase_add_test(tc, test_slot_json);
	tcase_add_test(tc, test_instants_ms);
	tcase_add_test(tc, test_seed004);
	tcase_add_test(tc, test_seed002);
	tcase_add_loop_test(tc, test_seed_errors, 0,
	    (int)(sizeof(seed_bads) / sizeof(seed_bads[0])));
	tcase_add_test(tc, test_seed_patch);
	tcase_add_test(tc, test_seed_field_names);
	tcase_add_test(tc, test_seed_round_trip);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return cvtest_run(schedule_suite());
}
