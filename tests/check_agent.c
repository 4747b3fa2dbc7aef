/*
 * check_agent.c: the agent document (common/agent.c): a full document and
 * the defaults of a minimal one, every field's errors with the exact code
 * and field path (slugs, names counted in code points, URLs, each type of
 * auth with its members and secrets, integer bounds, health, the refused
 * keywords of input_schema), what jansson's strict mode rejects, PATCH
 * (secrets kept, auth types changed, nulls that remove), the round trip
 * through the columns of an agents row, the API's view that never shows
 * the secret, and the version document.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cvtest.h"
#include "cronvisor.h"

/* The three members every agent needs, for bodies built around them. */
#define BASE                                                                   \
	"\"agent_id\": \"a\", \"name\": \"n\", "                               \
	"\"endpoint\": \"http://x.test/run\""

/* Every field of an agent, none at its default. */
static const char full[] =
    "{\"agent_id\": \"query-strategy\", \"name\": \"Query strategy\","
    " \"description\": \"plans the queries\","
    " \"endpoint\": \"https://agents.example.test/qs/run\","
    " \"auth\": {\"type\": \"bearer\", \"token\": \"s3cr3t-bearer\"},"
    " \"timeout_ms\": 30000, \"max_concurrent_requests\": 4,"
    " \"heartbeat_seconds\": 15,"
    " \"health\": {\"url\": \"https://agents.example.test/qs/health\","
    " \"interval_seconds\": 30, \"when_unhealthy\": \"go\"},"
    " \"input_schema\": {\"type\": \"object\", \"properties\":"
    " {\"ticker\": {\"type\": \"string\", \"maxLength\": 8}},"
    " \"required\": [\"ticker\"]},"
    " \"enabled\": false}";

/* The secret of each document below, searched for in what is shown. */
#define SECRET "s3cr3t-XYZ"

static const char basic[] =
    "{" BASE ", \"auth\": {\"type\": \"basic\","
    " \"username\": \"svc\", \"password\": \"" SECRET "\"}}";
static const char bearer[] = "{" BASE ", \"auth\": {\"type\": \"bearer\","
                             " \"token\": \"" SECRET "\"}}";
static const char hmac[] = "{" BASE ", \"auth\": {\"type\": \"hmac\","
                           " \"secret\": \"" SECRET "\"}}";

/* Parses s, which must be valid, into *d. */
static void
parse_ok(const char *s, struct agent_doc *d)
{
	struct schedule_error e;

	memset(&e, 0, sizeof(e));
	ck_assert_msg(agent_parse(s, strlen(s), d, &e) == 0,
	    "%.200s: %s: %s (%s)", s, e.field, e.message, e.code);
}

/* Parses s, which must fail with code and field, leaving *d cleared. */
static void
parse_fails(const char *s, const char *code, const char *field)
{
	struct agent_doc d;
	struct schedule_error e;

	memset(&e, 0, sizeof(e));
	ck_assert_msg(
	    agent_parse(s, strlen(s), &d, &e) == -1, "%.200s parsed", s);
	ck_assert_msg(strcmp(e.code, code) == 0 && strcmp(e.field, field) == 0,
	    "%.200s: got %s at \"%s\" (%s), want %s at \"%s\"", s, e.code,
	    e.field, e.message, code, field);
	ck_assert_msg(e.message[0] != '\0', "%.200s: no message", s);
	ck_assert(d.agent_id == NULL && d.name == NULL && d.endpoint == NULL &&
	    d.auth_secret == NULL && d.auth_username == NULL &&
	    d.health_url == NULL && d.input_schema == NULL);
}

/*
 * A minimal valid agent with `extra` members added, into buf; when extra
 * starts with one of the three required members, it takes that member's
 * place (a body may not name a member twice).
 */
static void
with(char *buf, size_t len, const char *extra)
{
	static const char *const base[][2] = {
	    {"\"agent_id\":", "\"agent_id\": \"a\", "},
	    {"\"name\":", "\"name\": \"n\", "},
	    {"\"endpoint\":", "\"endpoint\": \"http://x.test/run\", "},
	};
	size_t at = 1;
	int n;

	ck_assert(len > 1);
	strcpy(buf, "{");
	for (size_t i = 0; i < 3; i++) {
		if (strncmp(extra, base[i][0], strlen(base[i][0])) == 0)
			continue;
		n = snprintf(buf + at, len - at, "%s", base[i][1]);
		ck_assert(n > 0 && (size_t)n < len - at);
		at += n;
	}
	n = snprintf(buf + at, len - at, "%s}", extra);
	ck_assert(n > 0 && (size_t)n < len - at);
	if (extra[0] == '\0')
		memmove(buf + at - 2, buf + at, 2); /* drop the last ", " */
}

static void
extra_fails(const char *extra, const char *code, const char *field)
{
	static char buf[32768];

	with(buf, sizeof(buf), extra);
	parse_fails(buf, code, field);
}

static void
extra_ok(const char *extra)
{
	static char buf[32768];
	struct agent_doc d;

	with(buf, sizeof(buf), extra);
	parse_ok(buf, &d);
	agent_clear(&d);
}

/* Applies the patch s, which must succeed, to *d. */
static void
patch_ok(struct agent_doc *d, const char *s)
{
	struct schedule_error e;

	memset(&e, 0, sizeof(e));
	ck_assert_msg(agent_patch(d, s, strlen(s), &e) == 0,
	    "patch %.200s: %s: %s (%s)", s, e.field, e.message, e.code);
}

/* Applies the patch s to a copy of the document src: it must fail so. */
static void
patch_fails(const char *src, const char *s, const char *code, const char *field)
{
	struct agent_doc d;
	struct schedule_error e;

	parse_ok(src, &d);
	memset(&e, 0, sizeof(e));
	ck_assert_msg(
	    agent_patch(&d, s, strlen(s), &e) == -1, "patch %.200s applied", s);
	ck_assert_msg(strcmp(e.code, code) == 0 && strcmp(e.field, field) == 0,
	    "patch %.200s: got %s at \"%s\" (%s), want %s at \"%s\"", s, e.code,
	    e.field, e.message, code, field);
	ck_assert(e.message[0] != '\0');
	agent_clear(&d);
}

/* The member "<key>": "<unit n times>", in memory the caller frees. */
static char *
long_member(const char *key, const char *unit, size_t n)
{
	size_t ul = strlen(unit), kl = strlen(key);
	char *s = malloc(kl + ul * n + 8);

	ck_assert_ptr_nonnull(s);
	sprintf(s, "\"%s\": \"", key);
	for (size_t i = 0; i < n; i++)
		memcpy(s + kl + 5 + i * ul, unit, ul);
	strcpy(s + kl + 5 + n * ul, "\"");
	return s;
}

/* extra_ok() or extra_fails() on "<key>": "<n units>". */
static void
long_ok(const char *key, const char *unit, size_t n)
{
	char *m = long_member(key, unit, n);

	extra_ok(m);
	free(m);
}

static void
long_fails(const char *key, const char *unit, size_t n, const char *field)
{
	char *m = long_member(key, unit, n);

	extra_fails(m, "invalid_field", field);
	free(m);
}

START_TEST(test_full_document)
{
	struct agent_doc d;
	json_t *p;

	parse_ok(full, &d);
	ck_assert_str_eq(d.agent_id, "query-strategy");
	ck_assert_str_eq(d.name, "Query strategy");
	ck_assert_str_eq(d.description, "plans the queries");
	ck_assert_str_eq(d.endpoint, "https://agents.example.test/qs/run");
	ck_assert_int_eq(d.auth_type, AGENT_AUTH_BEARER);
	ck_assert_ptr_null(d.auth_username);
	ck_assert_str_eq(d.auth_secret, "s3cr3t-bearer");
	ck_assert_int_eq(d.timeout_ms, 30000);
	ck_assert_int_eq(d.max_concurrent_requests, 4);
	ck_assert_int_eq(d.heartbeat_seconds, 15);
	ck_assert_str_eq(d.health_url, "https://agents.example.test/qs/health");
	ck_assert_int_eq(d.health_interval_seconds, 30);
	ck_assert_int_eq(d.when_unhealthy_go, 1);
	ck_assert_int_eq(d.enabled, 0);
	p = json_object_get(
	    json_object_get(d.input_schema, "properties"), "ticker");
	ck_assert_int_eq(
	    json_integer_value(json_object_get(p, "maxLength")), 8);
	agent_clear(&d);
	/* agent_clear() leaves an initialised document behind. */
	ck_assert_ptr_null(d.agent_id);
	ck_assert_ptr_null(d.input_schema);
	ck_assert_int_eq(d.timeout_ms, AGENT_TIMEOUT_DEF);
}
END_TEST

START_TEST(test_defaults)
{
	struct agent_doc d;

	parse_ok("{" BASE "}", &d);
	ck_assert_str_eq(d.agent_id, "a");
	ck_assert_str_eq(d.name, "n");
	ck_assert_str_eq(d.endpoint, "http://x.test/run");
	ck_assert_ptr_null(d.description);
	ck_assert_int_eq(d.auth_type, AGENT_AUTH_NONE);
	ck_assert_ptr_null(d.auth_username);
	ck_assert_ptr_null(d.auth_secret);
	ck_assert_int_eq(d.timeout_ms, 300000);
	ck_assert_int_eq(d.max_concurrent_requests, 0);
	ck_assert_int_eq(d.heartbeat_seconds, SCHEDULE_UNSET);
	ck_assert_ptr_null(d.health_url);
	ck_assert_int_eq(d.health_interval_seconds, 60);
	ck_assert_int_eq(d.when_unhealthy_go, 0);
	ck_assert_ptr_null(d.input_schema);
	ck_assert_int_eq(d.enabled, 1);
	agent_clear(&d);
	/* A health object with only its url takes the defaults. */
	parse_ok("{" BASE ", \"health\": {\"url\": \"http://x.test/h\"}}", &d);
	ck_assert_str_eq(d.health_url, "http://x.test/h");
	ck_assert_int_eq(d.health_interval_seconds, 60);
	ck_assert_int_eq(d.when_unhealthy_go, 0);
	agent_clear(&d);
	/* Explicit nulls are the defaults too. */
	parse_ok("{" BASE ", \"heartbeat_seconds\": null, \"health\": null,"
	         " \"input_schema\": null}",
	    &d);
	ck_assert_int_eq(d.heartbeat_seconds, SCHEDULE_UNSET);
	ck_assert_ptr_null(d.health_url);
	ck_assert_ptr_null(d.input_schema);
	agent_clear(&d);
}
END_TEST

START_TEST(test_required_fields)
{
	parse_fails("{}", "missing_field", "agent_id");
	parse_fails("{\"name\": \"n\", \"endpoint\": \"http://x\"}",
	    "missing_field", "agent_id");
	parse_fails("{\"agent_id\": \"a\", \"endpoint\": \"http://x\"}",
	    "missing_field", "name");
	parse_fails("{\"agent_id\": \"a\", \"name\": \"n\"}", "missing_field",
	    "endpoint");
}
END_TEST

START_TEST(test_slug)
{
	static const struct {
		const char *s;
		int ok;
	} t[] = {
	    {"a", 1},
	    {"0", 1},
	    {"query-strategy", 1},
	    {"a--b", 1},
	    {"a1-b2-c3", 1},
	    {"", 0},
	    {"-", 0},
	    {"-a", 0},
	    {"a-", 0},
	    {"Abc", 0},
	    {"aBc", 0},
	    {"a_b", 0},
	    {"a.b", 0},
	    {"a b", 0},
	    {"a/b", 0},
	    {"\xc3\xa9", 0},
	};
	char s64[66], buf[128];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		ck_assert_msg(agent_slug_ok(t[i].s) == t[i].ok,
		    "agent_slug_ok(\"%s\") != %d", t[i].s, t[i].ok);
		snprintf(buf, sizeof(buf),
		    "{\"agent_id\": \"%s\", \"name\": \"n\","
		    " \"endpoint\": \"http://x\"}",
		    t[i].s);
		if (t[i].ok) {
			struct agent_doc d;

			parse_ok(buf, &d);
			ck_assert_str_eq(d.agent_id, t[i].s);
			agent_clear(&d);
		} else
			parse_fails(buf, "invalid_field", "agent_id");
	}
	/* 64 characters are a slug, 65 are not. */
	memset(s64, 'a', 65);
	s64[64] = '\0';
	ck_assert(agent_slug_ok(s64));
	snprintf(buf, sizeof(buf),
	    "{\"agent_id\": \"%s\", \"name\": \"n\", \"endpoint\": \"http://x\"}",
	    s64);
	{
		struct agent_doc d;

		parse_ok(buf, &d);
		ck_assert_uint_eq(strlen(d.agent_id), 64);
		agent_clear(&d);
	}
	s64[64] = 'a';
	s64[65] = '\0';
	ck_assert(!agent_slug_ok(s64));
	snprintf(buf, sizeof(buf),
	    "{\"agent_id\": \"%s\", \"name\": \"n\", \"endpoint\": \"http://x\"}",
	    s64);
	parse_fails(buf, "invalid_field", "agent_id");
	/* Not a string. */
	parse_fails(
	    "{\"agent_id\": 5, \"name\": \"n\", \"endpoint\": \"http://x\"}",
	    "invalid_field", "agent_id");
	parse_fails(
	    "{\"agent_id\": null, \"name\": \"n\", \"endpoint\": \"http://x\"}",
	    "invalid_field", "agent_id");
	parse_fails(
	    "{\"agent_id\": [\"a\"], \"name\": \"n\", \"endpoint\": \"http://x\"}",
	    "invalid_field", "agent_id");
}
END_TEST

/* name: 1 to 200 code points; description: at most 10000. */
START_TEST(test_name_and_description)
{
	struct agent_doc d;

	parse_fails(
	    "{\"agent_id\": \"a\", \"name\": \"\", \"endpoint\": \"http://x\"}",
	    "invalid_field", "name");
	parse_fails(
	    "{\"agent_id\": \"a\", \"name\": 7, \"endpoint\": \"http://x\"}",
	    "invalid_field", "name");
	parse_fails(
	    "{\"agent_id\": \"a\", \"name\": null, \"endpoint\": \"http://x\"}",
	    "invalid_field", "name");
	/* with() puts these in the place of the minimal document's name. */
	long_ok("name", "x", 200);
	long_fails("name", "x", 201, "name");
	/* é is two bytes, one code point: 200 of them (400 bytes) fit. */
	long_ok("name", "\xc3\xa9", 200);
	long_fails("name", "\xc3\xa9", 201, "name");
	/* A four-byte code point counts once too. */
	long_ok("name", "\xf0\x9f\x98\x80", 200);
	long_fails("name", "\xf0\x9f\x98\x80", 201, "name");
	/* jansson refuses \u0000 before the field is read. */
	extra_fails("\"name\": \"a\\u0000b\"", "invalid_json", "");

	parse_ok("{" BASE ", \"description\": \"\"}", &d);
	ck_assert_str_eq(d.description, "");
	agent_clear(&d);
	long_ok("description", "x", 10000);
	long_ok("description", "\xc3\xa9", 10000);
	long_fails("description", "x", 10001, "description");
	long_fails("description", "\xc3\xa9", 10001, "description");
	extra_fails("\"description\": 1", "invalid_field", "description");
	extra_fails("\"description\": null", "invalid_field", "description");
}
END_TEST

/* key (or health's url, key "url") with the JSON value v, into m. */
static void
url_member(char *m, size_t len, const char *key, const char *v)
{
	int n = strcmp(key, "url")
	    ? snprintf(m, len, "\"%s\": %s", key, v)
	    : snprintf(m, len, "\"health\": {\"url\": %s}", v);

	ck_assert(n > 0 && (size_t)n < len);
}

/* The rules of endpoint, which health.url shares. */
static void
url_cases(const char *key, const char *field)
{
	static const char *const bad[] = {
	    "\"ftp://x.test/\"",
	    "\"x.test/run\"",
	    "\"\"",
	    "\"http://\"",
	    "\"https://\"",
	    "\"http:///path\"",
	    "\"http://:80/\"",
	    "\"http://@x.test/\"",
	    "\"http://?q\"",
	    "\"http://x.test/a b\"",
	    "\"http:// x.test/\"",
	    "\"http://x.test/\\tb\"",
	    "\"http://x.test/\\u007f\"",
	    "5",
	    "null",
	    "true",
	    "{\"url\": \"http://x\"}",
	};
	static const char *const good[] = {
	    "\"http://x\"",
	    "\"https://x.test:8443/a?b=c#d\"",
	    "\"HTTPS://X.TEST/\"",
	    "\"http://[::1]:8080/\"",
	};
	char m[256], *v, *b;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		url_member(m, sizeof(m), key, bad[i]);
		extra_fails(m, "invalid_field", field);
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		url_member(m, sizeof(m), key, good[i]);
		extra_ok(m);
	}
	/* AGENT_URL_MAX characters ("http://x.test/" and p's) fit, one more
	 * does not. */
	v = malloc(AGENT_URL_MAX + 4);
	b = malloc(AGENT_URL_MAX + 64);
	ck_assert(v != NULL && b != NULL);
	memcpy(v, "\"http://x.test/", 15);
	memset(v + 15, 'p', AGENT_URL_MAX - 14);
	strcpy(v + 1 + AGENT_URL_MAX, "\"");
	url_member(b, AGENT_URL_MAX + 64, key, v);
	extra_ok(b);
	strcpy(v + 1 + AGENT_URL_MAX, "p\"");
	url_member(b, AGENT_URL_MAX + 64, key, v);
	extra_fails(b, "invalid_field", field);
	/*
	 * The limit is in bytes: the header says "characters", PostgreSQL's
	 * length() counts characters, but url() refuses more than
	 * AGENT_URL_MAX bytes before text() counts code points.  é is two
	 * bytes: 2046 bytes and é fit, 2047 and é (2048 code points) do not.
	 */
	strcpy(v + 1 + AGENT_URL_MAX - 2, "\xc3\xa9\"");
	url_member(b, AGENT_URL_MAX + 64, key, v);
	extra_ok(b);
	v[AGENT_URL_MAX - 1] = 'p';
	strcpy(v + 1 + AGENT_URL_MAX - 1, "\xc3\xa9\"");
	url_member(b, AGENT_URL_MAX + 64, key, v);
	extra_fails(b, "invalid_field", field);
	free(v);
	free(b);
}

START_TEST(test_endpoint)
{
	struct agent_doc d;
	char buf[128];

	url_cases("endpoint", "endpoint");
	with(buf, sizeof(buf), "\"endpoint\": \"HTTPS://X.TEST/\"");
	parse_ok(buf, &d);
	ck_assert_str_eq(d.endpoint, "HTTPS://X.TEST/");
	agent_clear(&d);
}
END_TEST

START_TEST(test_health_url)
{
	url_cases("url", "health.url");
}
END_TEST

/* Each type of auth with exactly its members. */
START_TEST(test_auth_types)
{
	struct agent_doc d;

	parse_ok("{" BASE ", \"auth\": {\"type\": \"none\"}}", &d);
	ck_assert_int_eq(d.auth_type, AGENT_AUTH_NONE);
	ck_assert_ptr_null(d.auth_secret);
	ck_assert_ptr_null(d.auth_username);
	agent_clear(&d);
	parse_ok(bearer, &d);
	ck_assert_int_eq(d.auth_type, AGENT_AUTH_BEARER);
	ck_assert_str_eq(d.auth_secret, SECRET);
	ck_assert_ptr_null(d.auth_username);
	agent_clear(&d);
	parse_ok(basic, &d);
	ck_assert_int_eq(d.auth_type, AGENT_AUTH_BASIC);
	ck_assert_str_eq(d.auth_secret, SECRET);
	ck_assert_str_eq(d.auth_username, "svc");
	agent_clear(&d);
	parse_ok(hmac, &d);
	ck_assert_int_eq(d.auth_type, AGENT_AUTH_HMAC);
	ck_assert_str_eq(d.auth_secret, SECRET);
	ck_assert_ptr_null(d.auth_username);
	agent_clear(&d);
	/* The members may come in any order, type last. */
	parse_ok("{" BASE
	         ", \"auth\": {\"token\": \"t\", \"type\": \"bearer\"}}",
	    &d);
	ck_assert_str_eq(d.auth_secret, "t");
	agent_clear(&d);
}
END_TEST

START_TEST(test_auth_errors)
{
	/* auth itself and its type */
	extra_fails("\"auth\": \"bearer\"", "invalid_field", "auth");
	extra_fails("\"auth\": null", "invalid_field", "auth");
	extra_fails(
	    "\"auth\": [{\"type\": \"none\"}]", "invalid_field", "auth");
	extra_fails("\"auth\": {}", "missing_field", "auth.type");
	extra_fails(
	    "\"auth\": {\"token\": \"t\"}", "missing_field", "auth.type");
	extra_fails("\"auth\": {\"type\": \"Bearer\", \"token\": \"t\"}",
	    "invalid_field", "auth.type");
	extra_fails(
	    "\"auth\": {\"type\": \"digest\"}", "invalid_field", "auth.type");
	extra_fails("\"auth\": {\"type\": \"\"}", "invalid_field", "auth.type");
	extra_fails("\"auth\": {\"type\": 1}", "invalid_field", "auth.type");
	extra_fails("\"auth\": {\"type\": null}", "invalid_field", "auth.type");
	/* members of another type, or of none */
	extra_fails("\"auth\": {\"type\": \"none\", \"token\": \"t\"}",
	    "unknown_field", "auth.token");
	extra_fails("\"auth\": {\"type\": \"none\", \"username\": \"u\"}",
	    "unknown_field", "auth.username");
	extra_fails("\"auth\": {\"type\": \"bearer\", \"token\": \"t\","
	            " \"password\": \"p\"}",
	    "unknown_field", "auth.password");
	extra_fails("\"auth\": {\"type\": \"bearer\", \"token\": \"t\","
	            " \"username\": \"u\"}",
	    "unknown_field", "auth.username");
	extra_fails("\"auth\": {\"type\": \"hmac\", \"token\": \"t\"}",
	    "unknown_field", "auth.token");
	extra_fails("\"auth\": {\"type\": \"basic\", \"username\": \"u\","
	            " \"secret\": \"s\"}",
	    "unknown_field", "auth.secret");
	extra_fails("\"auth\": {\"type\": \"hmac\", \"secret\": \"s\","
	            " \"algorithm\": \"sha256\"}",
	    "unknown_field", "auth.algorithm");
	/* the secret of each type, and basic's username */
	extra_fails(
	    "\"auth\": {\"type\": \"bearer\"}", "missing_field", "auth.token");
	extra_fails(
	    "\"auth\": {\"type\": \"hmac\"}", "missing_field", "auth.secret");
	extra_fails("\"auth\": {\"type\": \"basic\", \"username\": \"u\"}",
	    "missing_field", "auth.password");
	extra_fails("\"auth\": {\"type\": \"basic\", \"password\": \"p\"}",
	    "missing_field", "auth.username");
	/* "***" stands for a stored secret, and a new agent has none */
	extra_fails("\"auth\": {\"type\": \"bearer\", \"token\": \"***\"}",
	    "invalid_field", "auth.token");
	extra_fails("\"auth\": {\"type\": \"basic\", \"username\": \"u\","
	            " \"password\": \"***\"}",
	    "invalid_field", "auth.password");
	extra_fails("\"auth\": {\"type\": \"hmac\", \"secret\": \"***\"}",
	    "invalid_field", "auth.secret");
}
END_TEST

/* The values of secrets and usernames. */
START_TEST(test_auth_values)
{
	static const char *const bad_secret[] = {
	    "\"\"",
	    "5",
	    "null",
	    "[\"t\"]",
	    "\"a\\nb\"",
	    "\"a\\rb\"",
	    "\"\\tab\"",
	    "\"ab\\u0001\"",
	    "\"ab\\u001f\"",
	    "\"a\\u007fb\"",
	};
	static const char *const types[][2] = {
	    {"bearer", "token"},
	    {"basic", "password"},
	    {"hmac", "secret"},
	};
	char m[256], path[32];
	char *s;
	size_t p;

	for (size_t t = 0; t < 3; t++) {
		snprintf(path, sizeof(path), "auth.%s", types[t][1]);
		for (size_t i = 0;
		     i < sizeof(bad_secret) / sizeof(bad_secret[0]); i++) {
			snprintf(m, sizeof(m),
			    "\"auth\": {\"type\": \"%s\", \"username\": \"u\","
			    " \"%s\": %s}",
			    types[t][0], types[t][1], bad_secret[i]);
			/* only basic takes a username: put it there alone */
			if (t != 1)
				snprintf(m, sizeof(m),
				    "\"auth\": {\"type\": \"%s\", \"%s\": %s}",
				    types[t][0], types[t][1], bad_secret[i]);
			extra_fails(m, "invalid_field", path);
		}
		/* Spaces and non-ASCII are not control characters. */
		snprintf(m, sizeof(m),
		    "\"auth\": {\"type\": \"%s\",%s \"%s\": \"a b \xc3\xa9\"}",
		    types[t][0], t == 1 ? " \"username\": \"u\"," : "",
		    types[t][1]);
		extra_ok(m);
	}
	/* A secret of 4096 characters fits, 4097 do not. */
	s = malloc(4200);
	ck_assert_ptr_nonnull(s);
	strcpy(s, "\"auth\": {\"type\": \"bearer\", \"token\": \"");
	p = strlen(s);
	memset(s + p, 'k', 4096);
	strcpy(s + p + 4096, "\"}");
	extra_ok(s);
	memmove(s + p + 1, s + p, strlen(s + p) + 1);
	extra_fails(s, "invalid_field", "auth.token");
	free(s);
	/* basic's username: 1 to 200 characters, no ':' */
	extra_fails("\"auth\": {\"type\": \"basic\", \"username\": \"a:b\","
	            " \"password\": \"p\"}",
	    "invalid_field", "auth.username");
	extra_fails("\"auth\": {\"type\": \"basic\", \"username\": \":\","
	            " \"password\": \"p\"}",
	    "invalid_field", "auth.username");
	extra_fails("\"auth\": {\"type\": \"basic\", \"username\": \"\","
	            " \"password\": \"p\"}",
	    "invalid_field", "auth.username");
	extra_fails("\"auth\": {\"type\": \"basic\", \"username\": 5,"
	            " \"password\": \"p\"}",
	    "invalid_field", "auth.username");
	extra_fails("\"auth\": {\"type\": \"basic\", \"username\": null,"
	            " \"password\": \"p\"}",
	    "invalid_field", "auth.username");
	s = malloc(512);
	ck_assert_ptr_nonnull(s);
	strcpy(s, "\"auth\": {\"type\": \"basic\", \"username\": \"");
	p = strlen(s);
	memset(s + p, 'u', 200);
	strcpy(s + p + 200, "\", \"password\": \"p\"}");
	extra_ok(s);
	memmove(s + p + 1, s + p, strlen(s + p) + 1);
	extra_fails(s, "invalid_field", "auth.username");
	free(s);
	/* a password may hold ':' (only the username may not) */
	extra_ok("\"auth\": {\"type\": \"basic\", \"username\": \"u\","
	         " \"password\": \"p:q\"}");
}
END_TEST

/* The member of integer field f with the JSON value v, into m. */
struct int_field {
	const char *pre;   /* the body up to the value */
	const char *post;  /* and after it */
	const char *field; /* the path in errors */
	long long lo, hi;  /* the bounds */
	int null_ok;       /* null is the default, not an error */
};

static void
int_member(char *m, size_t len, const struct int_field *f, const char *v)
{
	int n = snprintf(m, len, "%s%s%s", f->pre, v, f->post);

	ck_assert(n > 0 && (size_t)n < len);
}

/* lo-1, lo, hi, hi+1, reals, a string, a boolean, null, beyond 64 bits. */
START_TEST(test_integer_bounds)
{
	static const struct int_field f[] = {
	    {"\"timeout_ms\": ", "", "timeout_ms", 1, 31536000000LL, 0},
	    {"\"max_concurrent_requests\": ", "", "max_concurrent_requests", 0,
	        100000, 0},
	    {"\"heartbeat_seconds\": ", "", "heartbeat_seconds", 1, 86400, 1},
	    {"\"health\": {\"url\": \"http://h\", \"interval_seconds\": ", "}",
	        "health.interval_seconds", 5, 86400, 0},
	};
	static const char *const wrong[] = {
	    "1.5", "10.0", "1e3", "\"10\"", "true", "[10]", "{}"};
	char v[64], m[256];

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		long long vals[] = {f[i].lo - 1, f[i].lo, f[i].hi, f[i].hi + 1};

		for (size_t j = 0; j < 4; j++) {
			snprintf(v, sizeof(v), "%lld", vals[j]);
			int_member(m, sizeof(m), &f[i], v);
			if (j == 1 || j == 2)
				extra_ok(m);
			else
				extra_fails(m, "invalid_field", f[i].field);
		}
		for (size_t j = 0; j < sizeof(wrong) / sizeof(wrong[0]); j++) {
			int_member(m, sizeof(m), &f[i], wrong[j]);
			extra_fails(m, "invalid_field", f[i].field);
		}
		int_member(m, sizeof(m), &f[i], "null");
		if (f[i].null_ok)
			extra_ok(m);
		else
			extra_fails(m, "invalid_field", f[i].field);
		/* Beyond 64 bits: jansson refuses it, the field is named. */
		int_member(m, sizeof(m), &f[i], "99999999999999999999");
		extra_fails(m, "invalid_field", f[i].field);
	}
}
END_TEST

/* The values stored, at the bounds. */
START_TEST(test_integer_values)
{
	struct agent_doc d;

	parse_ok("{" BASE ", \"timeout_ms\": 31536000000,"
	         " \"max_concurrent_requests\": 100000,"
	         " \"heartbeat_seconds\": 86400, \"health\": {\"url\":"
	         " \"http://h\", \"interval_seconds\": 86400}}",
	    &d);
	ck_assert_int_eq(d.timeout_ms, 31536000000LL);
	ck_assert_int_eq(d.max_concurrent_requests, 100000);
	ck_assert_int_eq(d.heartbeat_seconds, 86400);
	ck_assert_int_eq(d.health_interval_seconds, 86400);
	agent_clear(&d);
	parse_ok(
	    "{" BASE ", \"timeout_ms\": 1, \"max_concurrent_requests\": 0,"
	    " \"heartbeat_seconds\": 1, \"health\": {\"url\": \"http://h\","
	    " \"interval_seconds\": 5}}",
	    &d);
	ck_assert_int_eq(d.timeout_ms, 1);
	ck_assert_int_eq(d.max_concurrent_requests, 0);
	ck_assert_int_eq(d.heartbeat_seconds, 1);
	ck_assert_int_eq(d.health_interval_seconds, 5);
	agent_clear(&d);
}
END_TEST

START_TEST(test_health)
{
	struct agent_doc d;

	extra_fails("\"health\": 5", "invalid_field", "health");
	extra_fails("\"health\": \"http://h\"", "invalid_field", "health");
	extra_fails("\"health\": [\"http://h\"]", "invalid_field", "health");
	extra_fails("\"health\": true", "invalid_field", "health");
	extra_fails("\"health\": {}", "missing_field", "health.url");
	extra_fails("\"health\": {\"interval_seconds\": 30,"
	            " \"when_unhealthy\": \"go\"}",
	    "missing_field", "health.url");
	extra_fails("\"health\": {\"url\": \"http://h\", \"path\": \"/h\"}",
	    "unknown_field", "health.path");
	extra_fails("\"health\": {\"url\": \"http://h\", \"interval\": 30}",
	    "unknown_field", "health.interval");
	extra_fails("\"health\": {\"url\": \"http://h\","
	            " \"when_unhealthy\": \"maybe\"}",
	    "invalid_field", "health.when_unhealthy");
	extra_fails("\"health\": {\"url\": \"http://h\","
	            " \"when_unhealthy\": \"Go\"}",
	    "invalid_field", "health.when_unhealthy");
	extra_fails("\"health\": {\"url\": \"http://h\","
	            " \"when_unhealthy\": \"\"}",
	    "invalid_field", "health.when_unhealthy");
	extra_fails("\"health\": {\"url\": \"http://h\","
	            " \"when_unhealthy\": true}",
	    "invalid_field", "health.when_unhealthy");
	extra_fails("\"health\": {\"url\": \"http://h\","
	            " \"when_unhealthy\": null}",
	    "invalid_field", "health.when_unhealthy");
	extra_fails(
	    "\"health\": {\"url\": null}", "invalid_field", "health.url");
	parse_ok("{" BASE ", \"health\": {\"when_unhealthy\": \"wait\","
	         " \"url\": \"http://h\"}}",
	    &d);
	ck_assert_int_eq(d.when_unhealthy_go, 0);
	ck_assert_str_eq(d.health_url, "http://h");
	agent_clear(&d);
	parse_ok("{" BASE ", \"health\": {\"when_unhealthy\": \"go\","
	         " \"url\": \"http://h\"}}",
	    &d);
	ck_assert_int_eq(d.when_unhealthy_go, 1);
	agent_clear(&d);
}
END_TEST

START_TEST(test_enabled)
{
	struct agent_doc d;

	parse_ok("{" BASE ", \"enabled\": false}", &d);
	ck_assert_int_eq(d.enabled, 0);
	agent_clear(&d);
	parse_ok("{" BASE ", \"enabled\": true}", &d);
	ck_assert_int_eq(d.enabled, 1);
	agent_clear(&d);
	extra_fails("\"enabled\": 0", "invalid_field", "enabled");
	extra_fails("\"enabled\": 1", "invalid_field", "enabled");
	extra_fails("\"enabled\": \"true\"", "invalid_field", "enabled");
	extra_fails("\"enabled\": null", "invalid_field", "enabled");
}
END_TEST

/* input_schema: what jschema_check() refuses, at "input_schema.<path>". */
START_TEST(test_input_schema)
{
	static const struct {
		const char *schema;
		const char *field;
	} bad[] = {
	    {"5", "input_schema"},
	    {"\"object\"", "input_schema"},
	    {"[]", "input_schema"},
	    {"{\"pattern\": \"^a\"}", "input_schema.pattern"},
	    {"{\"anyOf\": [{}]}", "input_schema.anyOf"},
	    {"{\"oneOf\": [{}]}", "input_schema.oneOf"},
	    {"{\"if\": {}}", "input_schema.if"},
	    {"{\"$ref\": \"#\"}", "input_schema[\"$ref\"]"},
	    {"{\"properties\": {\"x\": {\"pattern\": \"a\"}}}",
	        "input_schema.properties.x.pattern"},
	    {"{\"properties\": {\"x\": {\"items\": {\"format\": 5}}}}",
	        "input_schema.properties.x.items.format"},
	    {"{\"properties\": {\"a b\": {\"pattern\": \"a\"}}}",
	        "input_schema.properties[\"a b\"].pattern"},
	    {"{\"items\": [{}]}", "input_schema.items"},
	    {"{\"type\": \"text\"}", "input_schema.type"},
	    {"{\"required\": [\"a\", \"a\"]}", "input_schema.required[1]"},
	    {"{\"minimum\": 5, \"maximum\": 1}", "input_schema.minimum"},
	    {"{\"enum\": []}", "input_schema.enum"},
	    /* a number jsonb would not give back as it is */
	    {"{\"default\": 1e20}", "input_schema.default"},
	    {"{\"const\": {\"x\": [1, -0.0]}}", "input_schema.const.x[1]"},
	};
	static const char *const good[] = {
	    "true",
	    "false",
	    "{}",
	    "{\"type\": \"object\", \"additionalProperties\": false}",
	    ("{\"$schema\": \"https://json-schema.org/draft/2020-12/schema\","
	     " \"title\": \"t\", \"default\": 1e16}"),
	};
	struct agent_doc d;
	char m[512];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(m, sizeof(m), "\"input_schema\": %s", bad[i].schema);
		extra_fails(m, "invalid_field", bad[i].field);
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(m, sizeof(m), "\"input_schema\": %s", good[i]);
		extra_ok(m);
	}
	parse_ok("{" BASE ", \"input_schema\": false}", &d);
	ck_assert(json_is_false(d.input_schema));
	agent_clear(&d);
}
END_TEST

/* agent_schema() on its own: a copy, and null that removes. */
START_TEST(test_agent_schema)
{
	struct schedule_error e;
	json_t *out = NULL, *v = json_pack("{s:s}", "type", "string");

	ck_assert_ptr_nonnull(v);
	ck_assert_int_eq(agent_schema(v, "schema", &out, &e), 0);
	ck_assert_ptr_nonnull(out);
	ck_assert_ptr_ne(out, v);
	ck_assert(json_equal(out, v));
	json_object_set_new(v, "pattern", json_string("x"));
	/* a failure leaves *out as it was */
	memset(&e, 0, sizeof(e));
	ck_assert_int_eq(agent_schema(v, "schema", &out, &e), -1);
	ck_assert_str_eq(e.code, "invalid_field");
	ck_assert_str_eq(e.field, "schema.pattern");
	ck_assert_ptr_nonnull(out);
	ck_assert_ptr_null(json_object_get(out, "pattern"));
	json_decref(v);
	v = json_null();
	ck_assert_int_eq(agent_schema(v, "schema", &out, &e), 0);
	ck_assert_ptr_null(out);
}
END_TEST

START_TEST(test_json_errors)
{
	static const char *const not_object[] = {
	    "[]", "\"agent\"", "5", "null", "true", "[{\"agent_id\": \"a\"}]"};

	for (size_t i = 0; i < sizeof(not_object) / sizeof(not_object[0]); i++)
		parse_fails(not_object[i], "invalid_json", "");
	parse_fails("", "invalid_json", "");
	parse_fails("{", "invalid_json", "");
	parse_fails("{" BASE ",}", "invalid_json", "");
	parse_fails("{" BASE "} {}", "invalid_json", "");
	/* duplicate keys, at the top and inside auth and health */
	parse_fails("{" BASE ", \"name\": \"m\"}", "invalid_json", "");
	extra_fails(
	    "\"enabled\": true, \"enabled\": false", "invalid_json", "");
	extra_fails("\"auth\": {\"type\": \"bearer\", \"token\": \"a\","
	            " \"token\": \"b\"}",
	    "invalid_json", "");
	extra_fails(
	    "\"health\": {\"url\": \"http://h\", \"url\": \"http://i\"}",
	    "invalid_json", "");
	/* unknown top-level fields, the row's own columns among them */
	extra_fails("\"agent\": \"a\"", "unknown_field", "agent");
	extra_fails("\"owner\": \"alice\"", "unknown_field", "owner");
	extra_fails("\"auth_secret\": \"s\"", "unknown_field", "auth_secret");
	extra_fails("\"auth_type\": \"none\"", "unknown_field", "auth_type");
	extra_fails(
	    "\"health_url\": \"http://h\"", "unknown_field", "health_url");
	extra_fails("\"Name\": \"n\"", "unknown_field", "Name");
	extra_fails("\"\": 1", "unknown_field", "");
	/* a body cut by its length */
	{
		struct agent_doc d;
		struct schedule_error e;
		const char *s = "{" BASE "}";

		ck_assert_int_eq(agent_parse(s, strlen(s) - 1, &d, &e), -1);
		ck_assert_str_eq(e.code, "invalid_json");
		ck_assert_int_eq(agent_parse(s, strlen(s), &d, &e), 0);
		agent_clear(&d);
	}
}
END_TEST

START_TEST(test_patch_replaces)
{
	struct agent_doc d;

	parse_ok(full, &d);
	patch_ok(&d, "{}");
	ck_assert_str_eq(d.name, "Query strategy");
	patch_ok(&d, "{\"name\": \"Renamed\"}");
	ck_assert_str_eq(d.name, "Renamed");
	ck_assert_str_eq(d.description, "plans the queries");
	ck_assert_str_eq(d.endpoint, "https://agents.example.test/qs/run");
	ck_assert_str_eq(d.auth_secret, "s3cr3t-bearer");
	ck_assert_int_eq(d.timeout_ms, 30000);
	patch_ok(&d,
	    "{\"description\": \"\", \"timeout_ms\": 1,"
	    " \"max_concurrent_requests\": 0, \"enabled\": true,"
	    " \"endpoint\": \"http://new.test/\","
	    " \"heartbeat_seconds\": 60}");
	ck_assert_str_eq(d.description, "");
	ck_assert_int_eq(d.timeout_ms, 1);
	ck_assert_int_eq(d.max_concurrent_requests, 0);
	ck_assert_int_eq(d.enabled, 1);
	ck_assert_str_eq(d.endpoint, "http://new.test/");
	ck_assert_int_eq(d.heartbeat_seconds, 60);
	ck_assert_str_eq(d.name, "Renamed");
	patch_ok(&d, "{\"input_schema\": {\"type\": \"array\"}}");
	ck_assert_str_eq(
	    json_string_value(json_object_get(d.input_schema, "type")),
	    "array");
	ck_assert_ptr_null(json_object_get(d.input_schema, "properties"));
	agent_clear(&d);
	/* the field errors of a body are those of a patch */
	patch_fails(
	    full, "{\"timeout_ms\": -5}", "invalid_field", "timeout_ms");
	patch_fails(full, "{\"name\": \"\"}", "invalid_field", "name");
	patch_fails(
	    full, "{\"endpoint\": \"ftp://x\"}", "invalid_field", "endpoint");
	patch_fails(full, "{\"health\": {\"url\": \"http://h\", \"x\": 1}}",
	    "unknown_field", "health.x");
	patch_fails(full, "{\"input_schema\": {\"pattern\": \"a\"}}",
	    "invalid_field", "input_schema.pattern");
	patch_fails(full, "{\"colour\": \"blue\"}", "unknown_field", "colour");
	patch_fails(full, "{\"heartbeat_seconds\": 0}", "invalid_field",
	    "heartbeat_seconds");
	patch_fails(full, "[]", "invalid_json", "");
	patch_fails(full, "null", "invalid_json", "");
	patch_fails(full, "{", "invalid_json", "");
	patch_fails(
	    full, "{\"name\": \"a\", \"name\": \"b\"}", "invalid_json", "");
}
END_TEST

START_TEST(test_patch_agent_id)
{
	struct agent_doc d;

	parse_ok(full, &d);
	patch_ok(&d, "{\"agent_id\": \"query-strategy\", \"name\": \"Q\"}");
	ck_assert_str_eq(d.agent_id, "query-strategy");
	ck_assert_str_eq(d.name, "Q");
	agent_clear(&d);
	patch_fails(
	    full, "{\"agent_id\": \"other\"}", "invalid_field", "agent_id");
	patch_fails(full, "{\"agent_id\": \"Query-Strategy\"}", "invalid_field",
	    "agent_id");
	patch_fails(full, "{\"agent_id\": 5}", "invalid_field", "agent_id");
	patch_fails(full, "{\"agent_id\": null}", "invalid_field", "agent_id");
	patch_fails(full, "{\"agent_id\": \"\"}", "invalid_field", "agent_id");
}
END_TEST

/* A secret not sent, or sent as "***", is kept for the same auth type. */
START_TEST(test_patch_keeps_secret)
{
	struct agent_doc d;

	parse_ok(bearer, &d);
	patch_ok(&d, "{\"auth\": {\"type\": \"bearer\"}}");
	ck_assert_int_eq(d.auth_type, AGENT_AUTH_BEARER);
	ck_assert_str_eq(d.auth_secret, SECRET);
	patch_ok(&d, "{\"auth\": {\"type\": \"bearer\", \"token\": \"***\"}}");
	ck_assert_str_eq(d.auth_secret, SECRET);
	patch_ok(&d, "{\"name\": \"m\"}");
	ck_assert_str_eq(d.auth_secret, SECRET);
	patch_ok(&d, "{\"auth\": {\"type\": \"bearer\", \"token\": \"new\"}}");
	ck_assert_str_eq(d.auth_secret, "new");
	agent_clear(&d);

	parse_ok(basic, &d);
	patch_ok(&d, "{\"auth\": {\"type\": \"basic\"}}");
	ck_assert_str_eq(d.auth_username, "svc");
	ck_assert_str_eq(d.auth_secret, SECRET);
	patch_ok(&d, "{\"auth\": {\"type\": \"basic\", \"username\": \"v\"}}");
	ck_assert_str_eq(d.auth_username, "v");
	ck_assert_str_eq(d.auth_secret, SECRET);
	patch_ok(
	    &d, "{\"auth\": {\"type\": \"basic\", \"password\": \"***\"}}");
	ck_assert_str_eq(d.auth_username, "v");
	ck_assert_str_eq(d.auth_secret, SECRET);
	agent_clear(&d);
	patch_fails(basic,
	    "{\"auth\": {\"type\": \"basic\", \"username\": \"a:b\"}}",
	    "invalid_field", "auth.username");

	parse_ok(hmac, &d);
	patch_ok(&d, "{\"auth\": {\"type\": \"hmac\", \"secret\": \"***\"}}");
	ck_assert_str_eq(d.auth_secret, SECRET);
	agent_clear(&d);
	/* a new secret is checked as in a body */
	patch_fails(hmac, "{\"auth\": {\"type\": \"hmac\", \"secret\": \"\"}}",
	    "invalid_field", "auth.secret");
	patch_fails(hmac,
	    "{\"auth\": {\"type\": \"hmac\", \"secret\": \"a\\nb\"}}",
	    "invalid_field", "auth.secret");
	patch_fails(hmac, "{\"auth\": {\"type\": \"hmac\", \"token\": \"t\"}}",
	    "unknown_field", "auth.token");
}
END_TEST

/* Another type of auth needs its own secret (and basic its username). */
START_TEST(test_patch_auth_type_change)
{
	struct agent_doc d;
	static const char none[] = "{" BASE "}";

	patch_fails(bearer,
	    "{\"auth\": {\"type\": \"basic\", \"username\": \"u\"}}",
	    "missing_field", "auth.password");
	patch_fails(bearer,
	    "{\"auth\": {\"type\": \"basic\", \"password\": \"p\"}}",
	    "missing_field", "auth.username");
	patch_fails(bearer, "{\"auth\": {\"type\": \"hmac\"}}", "missing_field",
	    "auth.secret");
	patch_fails(bearer,
	    "{\"auth\": {\"type\": \"hmac\", \"secret\": \"***\"}}",
	    "invalid_field", "auth.secret");
	patch_fails(basic, "{\"auth\": {\"type\": \"bearer\"}}",
	    "missing_field", "auth.token");
	patch_fails(none, "{\"auth\": {\"type\": \"bearer\"}}", "missing_field",
	    "auth.token");
	patch_fails(none,
	    "{\"auth\": {\"type\": \"bearer\", \"token\": \"***\"}}",
	    "invalid_field", "auth.token");

	parse_ok(bearer, &d);
	patch_ok(&d,
	    "{\"auth\": {\"type\": \"basic\", \"username\": \"u\","
	    " \"password\": \"pw\"}}");
	ck_assert_int_eq(d.auth_type, AGENT_AUTH_BASIC);
	ck_assert_str_eq(d.auth_username, "u");
	ck_assert_str_eq(d.auth_secret, "pw");
	/* basic to hmac: the username goes */
	patch_ok(&d, "{\"auth\": {\"type\": \"hmac\", \"secret\": \"k\"}}");
	ck_assert_int_eq(d.auth_type, AGENT_AUTH_HMAC);
	ck_assert_ptr_null(d.auth_username);
	ck_assert_str_eq(d.auth_secret, "k");
	/* to none: the secret goes */
	patch_ok(&d, "{\"auth\": {\"type\": \"none\"}}");
	ck_assert_int_eq(d.auth_type, AGENT_AUTH_NONE);
	ck_assert_ptr_null(d.auth_secret);
	ck_assert_ptr_null(d.auth_username);
	/* and back: none kept no secret to fall back on */
	patch_ok(&d, "{\"auth\": {\"type\": \"bearer\", \"token\": \"t2\"}}");
	ck_assert_int_eq(d.auth_type, AGENT_AUTH_BEARER);
	ck_assert_str_eq(d.auth_secret, "t2");
	agent_clear(&d);
}
END_TEST

/* null removes health and input_schema and unsets heartbeat_seconds. */
START_TEST(test_patch_nulls)
{
	struct agent_doc d;
	json_t *j;

	parse_ok(full, &d);
	patch_ok(&d, "{\"health\": null}");
	ck_assert_ptr_null(d.health_url);
	ck_assert_ptr_nonnull(d.input_schema);
	ck_assert_int_eq(d.heartbeat_seconds, 15);
	patch_ok(&d, "{\"input_schema\": null}");
	ck_assert_ptr_null(d.input_schema);
	patch_ok(&d, "{\"heartbeat_seconds\": null}");
	ck_assert_int_eq(d.heartbeat_seconds, SCHEDULE_UNSET);
	j = agent_to_json(&d);
	ck_assert_ptr_nonnull(j);
	ck_assert(json_is_null(json_object_get(j, "health")));
	ck_assert(json_is_null(json_object_get(j, "input_schema")));
	ck_assert(json_is_null(json_object_get(j, "heartbeat_seconds")));
	json_decref(j);
	/* the other members stay */
	ck_assert_str_eq(d.name, "Query strategy");
	ck_assert_str_eq(d.auth_secret, "s3cr3t-bearer");
	/* health comes back only with a url */
	{
		struct schedule_error e;
		const char *p = "{\"health\": {\"interval_seconds\": 30}}";

		ck_assert_int_eq(agent_patch(&d, p, strlen(p), &e), -1);
		ck_assert_str_eq(e.code, "missing_field");
		ck_assert_str_eq(e.field, "health.url");
	}
	agent_clear(&d);
}
END_TEST

/*
 * A "health" object in a PATCH replaces the agent's health whole, as the
 * same object does in a POST (docs/api.md: "The fields the body names
 * replace the agent's"): after {"health": null}, a new health object
 * without interval_seconds or when_unhealthy takes their defaults, not the
 * values the agent had before.  The values are read before the asserts so
 * that a failure leaks nothing (valgrind with CK_FORK=no).
 */
START_TEST(test_patch_health_null_then_new_health_takes_defaults)
{
	struct agent_doc d;
	int64_t interval;
	int go, url_ok;

	parse_ok(full, &d);
	patch_ok(&d, "{\"health\": null}");
	patch_ok(&d, "{\"health\": {\"url\": \"http://x.test/h\"}}");
	url_ok = d.health_url && strcmp(d.health_url, "http://x.test/h") == 0;
	interval = d.health_interval_seconds;
	go = d.when_unhealthy_go;
	agent_clear(&d);
	ck_assert(url_ok);
	ck_assert_int_eq(interval, AGENT_HEALTH_INTERVAL_DEF);
	ck_assert_int_eq(go, 0);
}
END_TEST

/*
 * What a GET shows can be sent back: auth.secret_set is accepted and says
 * nothing (the stored secret is kept); a health object without its url is
 * refused in a PATCH as in a POST.
 */
START_TEST(test_patch_get_shape_and_partial_health)
{
	struct schedule_error e;
	struct agent_doc d;
	int kept, r;

	parse_ok(full, &d);
	patch_ok(&d,
	    "{\"auth\": {\"type\": \"bearer\", "
	    "\"secret_set\": true}}");
	kept = d.auth_secret != NULL;
	r = agent_patch(&d, "{\"health\": {\"interval_seconds\": 10}}",
	    strlen("{\"health\": {\"interval_seconds\": 10}}"), &e);
	agent_clear(&d);
	ck_assert(kept);
	ck_assert_int_eq(r, -1);
	ck_assert_str_eq(e.code, "missing_field");
	ck_assert_str_eq(e.field, "health.url");
}
END_TEST

/* An agent's report: what is read, what is refused and where. */
static void
report_fails(int beat, const char *body, const char *code, const char *field)
{
	struct agent_report r;
	struct schedule_error e;

	ck_assert_msg(
	    agent_report_parse(body, strlen(body), beat, &r, &e) == -1,
	    "accepted: %s", body);
	ck_assert_str_eq(e.code, code);
	ck_assert_str_eq(e.field, field);
	ck_assert_ptr_null(r.status);
	ck_assert_ptr_null(r.token);
}

START_TEST(test_report_parse)
{
	const char *ok = "{\"status\": \"failed\", \"result\": [1, \"x\"], "
	                 "\"error\": {\"message\": \"quota\", \"retryable\": "
	                 "false}, \"token\": \"t0k\"}";
	struct agent_report r;
	struct schedule_error e;

	ck_assert_int_eq(agent_report_parse(ok, strlen(ok), 0, &r, &e), 0);
	ck_assert_str_eq(r.status, "failed");
	ck_assert_str_eq(r.result, "[1,\"x\"]");
	ck_assert_str_eq(
	    r.error, "{\"message\":\"quota\",\"retryable\":false}");
	ck_assert_str_eq(r.token, "t0k");
	agent_report_clear(&r);
	ck_assert_ptr_null(r.status);
	/* a heartbeat may be empty, or carry its token only */
	ck_assert_int_eq(agent_report_parse("", 0, 1, &r, &e), 0);
	ck_assert_ptr_null(r.status);
	ck_assert_ptr_null(r.token);
	ck_assert_int_eq(
	    agent_report_parse("{\"token\": \"a\"}", 14, 1, &r, &e), 0);
	ck_assert_str_eq(r.token, "a");
	agent_report_clear(&r);
	report_fails(0, "", "invalid_json", "");
	report_fails(0, "[]", "invalid_json", "");
	report_fails(0, "{\"status\": \"done\"}", "invalid_field", "status");
	report_fails(0, "{}", "missing_field", "status");
	report_fails(0, "{\"status\": \"completed\", \"error\": \"x\"}",
	    "invalid_field", "error");
	report_fails(0,
	    "{\"status\": \"failed\", \"error\": {\"retryable\": \"no\"}}",
	    "invalid_field", "error");
	report_fails(0, "{\"status\": \"failed\", \"error\": {\"message\": 1}}",
	    "invalid_field", "error");
	report_fails(0,
	    "{\"status\": \"failed\", \"error\": {\"message\": \"m\", "
	    "\"code\": 1}}",
	    "invalid_field", "error");
	report_fails(0, "{\"status\": \"completed\", \"extra\": 1}",
	    "unknown_field", "extra");
	report_fails(0, "{\"status\": \"completed\", \"token\": 5}",
	    "invalid_field", "token");
	report_fails(0,
	    "{\"status\": \"completed\", \"result\": {\"v\": 1e19}}",
	    "invalid_field", "result.v");
	report_fails(
	    1, "{\"status\": \"completed\"}", "unknown_field", "status");
	report_fails(1, "7", "invalid_json", "");
}
END_TEST

/* The row as to_jsonb() gives it: the columns and what the table adds. */
static json_t *
row_of(const struct agent_doc *d)
{
	json_t *c = agent_columns(d), *row, *more;
	char *text;

	ck_assert_ptr_nonnull(c);
	more = json_pack("{s:s, s:s, s:s, s:s, s:n, s:n, s:n, "
	                 "s:s}",
	    "owner", "alice", "created_by", "alice", "created_at",
	    "2026-03-09T12:00:00+00:00", "updated_at",
	    "2026-03-09T12:00:00+00:00", "healthy", "health_error",
	    "health_checked_at", "health_next_at", "2026-03-09T12:01:00+00:00");
	ck_assert_ptr_nonnull(more);
	ck_assert_int_eq(json_object_update(c, more), 0);
	json_decref(more);
	/* Through text, as the API reads the row. */
	text = json_dumps(c, JSON_COMPACT);
	json_decref(c);
	ck_assert_ptr_nonnull(text);
	row = json_loads(text, 0, NULL);
	free(text);
	ck_assert_ptr_nonnull(row);
	return row;
}

/* Every member of a and b, compared. */
static void
assert_same(const struct agent_doc *a, const struct agent_doc *b)
{
	json_t *ca = agent_columns(a), *cb = agent_columns(b);

	ck_assert_str_eq(a->agent_id, b->agent_id);
	ck_assert_str_eq(a->name, b->name);
	ck_assert_str_eq(a->description ? a->description : "",
	    b->description ? b->description : "");
	ck_assert_str_eq(a->endpoint, b->endpoint);
	ck_assert_int_eq(a->auth_type, b->auth_type);
	ck_assert_pstr_eq(a->auth_username, b->auth_username);
	ck_assert_pstr_eq(a->auth_secret, b->auth_secret);
	ck_assert_int_eq(a->timeout_ms, b->timeout_ms);
	ck_assert_int_eq(
	    a->max_concurrent_requests, b->max_concurrent_requests);
	ck_assert_int_eq(a->heartbeat_seconds, b->heartbeat_seconds);
	ck_assert_pstr_eq(a->health_url, b->health_url);
	ck_assert_int_eq(
	    a->health_interval_seconds, b->health_interval_seconds);
	ck_assert_int_eq(a->when_unhealthy_go, b->when_unhealthy_go);
	ck_assert(json_equal(a->input_schema, b->input_schema) ||
	    (a->input_schema == NULL && b->input_schema == NULL));
	ck_assert_int_eq(a->enabled, b->enabled);
	ck_assert(json_equal(ca, cb));
	json_decref(ca);
	json_decref(cb);
}

START_TEST(test_columns)
{
	static const char *const names[] = {"agent_id", "name", "description",
	    "endpoint", "auth_type", "auth_username", "auth_secret",
	    "timeout_ms", "max_concurrent_requests", "heartbeat_seconds",
	    "health_url", "health_interval_seconds", "when_unhealthy",
	    "input_schema", "enabled"};
	struct agent_doc d;
	json_t *c;

	parse_ok(basic, &d);
	c = agent_columns(&d);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_eq(
	    json_object_size(c), sizeof(names) / sizeof(names[0]));
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		ck_assert_msg(json_object_get(c, names[i]) != NULL,
		    "no column %s", names[i]);
	/* the row holds the secret: the API's view does not */
	ck_assert_str_eq(
	    json_string_value(json_object_get(c, "auth_secret")), SECRET);
	ck_assert_str_eq(
	    json_string_value(json_object_get(c, "auth_username")), "svc");
	ck_assert_str_eq(
	    json_string_value(json_object_get(c, "auth_type")), "basic");
	ck_assert_str_eq(
	    json_string_value(json_object_get(c, "description")), "");
	ck_assert(json_is_null(json_object_get(c, "heartbeat_seconds")));
	ck_assert(json_is_null(json_object_get(c, "health_url")));
	ck_assert(json_is_null(json_object_get(c, "input_schema")));
	ck_assert_str_eq(
	    json_string_value(json_object_get(c, "when_unhealthy")), "wait");
	ck_assert_int_eq(
	    json_integer_value(json_object_get(c, "timeout_ms")), 300000);
	ck_assert(json_is_true(json_object_get(c, "enabled")));
	json_decref(c);
	agent_clear(&d);
	parse_ok(full, &d);
	c = agent_columns(&d);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(
	    json_integer_value(json_object_get(c, "heartbeat_seconds")), 15);
	ck_assert_str_eq(
	    json_string_value(json_object_get(c, "when_unhealthy")), "go");
	ck_assert(json_is_false(json_object_get(c, "enabled")));
	ck_assert(json_is_null(json_object_get(c, "auth_username")));
	ck_assert(
	    json_equal(json_object_get(c, "input_schema"), d.input_schema));
	json_decref(c);
	agent_clear(&d);
}
END_TEST

START_TEST(test_from_row_round_trip)
{
	const char *docs[] = {full, basic, bearer, hmac, "{" BASE "}",
	    "{" BASE ", \"input_schema\": true, \"health\": {\"url\":"
	    " \"http://h\"}, \"heartbeat_seconds\": 86400}"};
	struct agent_doc a, b;
	struct schedule_error e;
	json_t *row;

	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		parse_ok(docs[i], &a);
		row = row_of(&a);
		memset(&e, 0, sizeof(e));
		ck_assert_msg(agent_from_row(row, &b, &e) == 0, "%s: %s",
		    docs[i], e.message);
		json_decref(row);
		assert_same(&a, &b);
		/* and a PATCH on what was read keeps working */
		patch_ok(&b, "{\"name\": \"renamed\"}");
		ck_assert_pstr_eq(b.auth_secret, a.auth_secret);
		agent_clear(&a);
		agent_clear(&b);
	}
}
END_TEST

/* A row that is not an agent: "internal", *d cleared. */
START_TEST(test_from_row_errors)
{
	static const char *const drop[] = {
	    "agent_id", "name", "endpoint", "auth_type"};
	struct agent_doc a, b;
	struct schedule_error e;
	json_t *row;

	parse_ok(full, &a);
	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++) {
		row = row_of(&a);
		json_object_del(row, drop[i]);
		memset(&e, 0, sizeof(e));
		ck_assert_int_eq(agent_from_row(row, &b, &e), -1);
		ck_assert_str_eq(e.code, "internal");
		ck_assert_ptr_null(b.agent_id);
		ck_assert_ptr_null(b.auth_secret);
		json_decref(row);
	}
	row = row_of(&a);
	json_object_set_new(row, "auth_type", json_string("digest"));
	ck_assert_int_eq(agent_from_row(row, &b, &e), -1);
	ck_assert_str_eq(e.code, "internal");
	json_object_set_new(row, "auth_type", json_integer(1));
	ck_assert_int_eq(agent_from_row(row, &b, &e), -1);
	json_decref(row);
	agent_clear(&a);
}
END_TEST

/* The API's view: the secret never, whether one is set always. */
START_TEST(test_to_json_hides_secret)
{
	static const struct {
		const char *doc;
		const char *type;
	} t[] = {
	    {basic, "basic"},
	    {bearer, "bearer"},
	    {hmac, "hmac"},
	};
	struct agent_doc d;
	json_t *j, *auth;
	char *text;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		parse_ok(t[i].doc, &d);
		j = agent_to_json(&d);
		ck_assert_ptr_nonnull(j);
		text = json_dumps(j, JSON_COMPACT);
		ck_assert_ptr_nonnull(text);
		ck_assert_msg(
		    strstr(text, SECRET) == NULL, "%s shows %s", text, SECRET);
		ck_assert_msg(strstr(text, "auth_secret") == NULL, "%s", text);
		free(text);
		auth = json_object_get(j, "auth");
		ck_assert_str_eq(
		    json_string_value(json_object_get(auth, "type")),
		    t[i].type);
		ck_assert(json_is_true(json_object_get(auth, "secret_set")));
		ck_assert_uint_eq(json_object_size(auth), i == 0 ? 3 : 2);
		if (i == 0)
			ck_assert_str_eq(json_string_value(
			                     json_object_get(auth, "username")),
			    "svc");
		json_decref(j);
		/* a row without its secret shows secret_set false */
		free(d.auth_secret);
		d.auth_secret = NULL;
		j = agent_to_json(&d);
		ck_assert_ptr_nonnull(j);
		ck_assert(json_is_false(
		    json_object_get(json_object_get(j, "auth"), "secret_set")));
		json_decref(j);
		agent_clear(&d);
	}
	/* none has no secret to speak of */
	parse_ok("{" BASE "}", &d);
	j = agent_to_json(&d);
	ck_assert_ptr_nonnull(j);
	auth = json_object_get(j, "auth");
	ck_assert_uint_eq(json_object_size(auth), 1);
	ck_assert_str_eq(
	    json_string_value(json_object_get(auth, "type")), "none");
	json_decref(j);
	agent_clear(&d);
}
END_TEST

START_TEST(test_to_json_shape)
{
	static const char *const names[] = {"agent_id", "name", "description",
	    "endpoint", "auth", "timeout_ms", "max_concurrent_requests",
	    "heartbeat_seconds", "health", "input_schema", "enabled"};
	struct agent_doc d;
	json_t *j, *h;

	parse_ok(full, &d);
	j = agent_to_json(&d);
	ck_assert_ptr_nonnull(j);
	ck_assert_uint_eq(
	    json_object_size(j), sizeof(names) / sizeof(names[0]));
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		ck_assert_msg(
		    json_object_get(j, names[i]) != NULL, "no %s", names[i]);
	ck_assert_str_eq(json_string_value(json_object_get(j, "agent_id")),
	    "query-strategy");
	ck_assert_int_eq(
	    json_integer_value(json_object_get(j, "timeout_ms")), 30000);
	ck_assert_int_eq(
	    json_integer_value(json_object_get(j, "heartbeat_seconds")), 15);
	ck_assert(json_is_false(json_object_get(j, "enabled")));
	ck_assert(
	    json_equal(json_object_get(j, "input_schema"), d.input_schema));
	h = json_object_get(j, "health");
	ck_assert_str_eq(json_string_value(json_object_get(h, "url")),
	    "https://agents.example.test/qs/health");
	ck_assert_int_eq(
	    json_integer_value(json_object_get(h, "interval_seconds")), 30);
	ck_assert_str_eq(
	    json_string_value(json_object_get(h, "when_unhealthy")), "go");
	ck_assert_uint_eq(json_object_size(h), 3);
	json_decref(j);
	agent_clear(&d);
	parse_ok("{" BASE "}", &d);
	j = agent_to_json(&d);
	ck_assert_ptr_nonnull(j);
	ck_assert_str_eq(
	    json_string_value(json_object_get(j, "description")), "");
	ck_assert(json_is_null(json_object_get(j, "health")));
	ck_assert(json_is_null(json_object_get(j, "heartbeat_seconds")));
	ck_assert(json_is_null(json_object_get(j, "input_schema")));
	ck_assert(json_is_true(json_object_get(j, "enabled")));
	json_decref(j);
	agent_clear(&d);
}
END_TEST

START_TEST(test_version_ok)
{
	static const struct {
		const char *s;
		int ok;
	} t[] = {
	    {"1.2.3", 1},
	    {"0.0.0", 1},
	    {"1.2.3-rc.1", 1},
	    {"1.2.3+build.5", 1},
	    {"1.2.3-rc.1+build.5", 1},
	    {"1.2.3-", 0},
	    {"1.2.3+", 0},
	    {"999999999.999999999.999999999", 1},
	    {"1234567890.2.3", 0}, /* ten digits */
	    {"1.1234567890.3", 0},
	    {"1.2.1234567890", 0},
	    /*
	     * Leading zeros: agent_version_ok() accepts them (as does the
	     * CHECK of agent_versions.version), although SemVer does not.
	     * This tests what the code does.
	     */
	    {"01.2.3", 1},
	    {"1.02.003", 1},
	    {"1.2", 0},
	    {"1", 0},
	    {"", 0},
	    {"1.2.3.4", 0},
	    {"1.2.3 ", 0},
	    {" 1.2.3", 0},
	    {"v1.2.3", 0},
	    {"1..3", 0},
	    {".1.2.3", 0},
	    {"1.2.3_rc", 0},
	    {"1.2.3-rc_1", 0},
	    {"1.2.3-r\xc3\xa9", 0},
	    {"-1.2.3", 0},
	    {"1.2.a", 0},
	};
	char s[128];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		ck_assert_msg(agent_version_ok(t[i].s) == t[i].ok,
		    "agent_version_ok(\"%s\") != %d", t[i].s, t[i].ok);
	/* a suffix of 64 characters fits, 65 do not */
	strcpy(s, "1.2.3-");
	memset(s + 6, 'a', 64);
	s[70] = '\0';
	ck_assert(agent_version_ok(s));
	s[70] = 'a';
	s[71] = '\0';
	ck_assert(!agent_version_ok(s));
}
END_TEST

/* Parses a version document that must fail with code and field. */
static void
version_fails(const char *s, const char *code, const char *field)
{
	struct agent_version v;
	struct schedule_error e;

	memset(&e, 0, sizeof(e));
	ck_assert_msg(
	    agent_version_parse(s, strlen(s), &v, &e) == -1, "%s parsed", s);
	ck_assert_msg(strcmp(e.code, code) == 0 && strcmp(e.field, field) == 0,
	    "%s: got %s at \"%s\" (%s), want %s at \"%s\"", s, e.code, e.field,
	    e.message, code, field);
	ck_assert(e.message[0] != '\0');
	ck_assert(v.version == NULL && v.endpoint == NULL &&
	    v.description == NULL && v.input_schema == NULL);
}

START_TEST(test_version_parse)
{
	static const char *const bad_versions[] = {"\"1.2\"", "\"01.2\"",
	    "\"1.2.3-\"", "\"1.2.3.4\"", "\"1234567890.0.0\"", "\"\"", "5",
	    "null", "[\"1.2.3\"]"};
	struct agent_version v;
	struct schedule_error e;
	const char *s;
	char m[256];

	s = "{\"version\": \"1.2.3-rc.1\", \"endpoint\": \"https://x.test/v\","
	    " \"description\": \"first\", \"input_schema\": {\"type\":"
	    " \"object\"}}";
	ck_assert_int_eq(agent_version_parse(s, strlen(s), &v, &e), 0);
	ck_assert_str_eq(v.version, "1.2.3-rc.1");
	ck_assert_str_eq(v.endpoint, "https://x.test/v");
	ck_assert_str_eq(v.description, "first");
	ck_assert_str_eq(
	    json_string_value(json_object_get(v.input_schema, "type")),
	    "object");
	agent_version_clear(&v);
	ck_assert_ptr_null(v.version);
	s = "{\"version\": \"01.2.3\", \"endpoint\": \"http://x\"}";
	ck_assert_int_eq(agent_version_parse(s, strlen(s), &v, &e), 0);
	ck_assert_str_eq(v.version, "01.2.3");
	ck_assert_ptr_null(v.description);
	ck_assert_ptr_null(v.input_schema);
	agent_version_clear(&v);
	for (size_t i = 0; i < sizeof(bad_versions) / sizeof(bad_versions[0]);
	     i++) {
		snprintf(m, sizeof(m),
		    "{\"version\": %s, \"endpoint\": \"http://x\"}",
		    bad_versions[i]);
		version_fails(m, "invalid_field", "version");
	}
	version_fails(
	    "{\"endpoint\": \"http://x\"}", "missing_field", "version");
	version_fails("{\"version\": \"1.2.3\"}", "missing_field", "endpoint");
	version_fails("{}", "missing_field", "version");
	version_fails("{\"version\": \"1.2.3\", \"endpoint\": \"ftp://x\"}",
	    "invalid_field", "endpoint");
	version_fails("{\"version\": \"1.2.3\", \"endpoint\": \"http://x\","
	              " \"input_schema\": {\"properties\": {\"q\":"
	              " {\"pattern\": \"a\"}}}}",
	    "invalid_field", "input_schema.properties.q.pattern");
	version_fails("{\"version\": \"1.2.3\", \"endpoint\": \"http://x\","
	              " \"description\": 5}",
	    "invalid_field", "description");
	version_fails("{\"version\": \"1.2.3\", \"endpoint\": \"http://x\","
	              " \"name\": \"n\"}",
	    "unknown_field", "name");
	version_fails("[\"1.2.3\"]", "invalid_json", "");
	version_fails("{\"version\": \"1.2.3\", \"version\": \"1.2.4\","
	              " \"endpoint\": \"http://x\"}",
	    "invalid_json", "");
	version_fails("{\"version\": \"1.2.3\"", "invalid_json", "");
}
END_TEST

static Suite *
agent_suite(void)
{
	Suite *s = suite_create("agent");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_full_document);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_required_fields);
	tcase_add_test(tc, test_slug);
	tcase_add_test(tc, test_name_and_description);
	tcase_add_test(tc, test_endpoint);
	tcase_add_test(tc, test_health_url);
	tcase_add_test(tc, test_auth_types);
	tcase_add_test(tc, test_auth_errors);
	tcase_add_test(tc, test_auth_values);
	tcase_add_test(tc, test_integer_bounds);
	tcase_add_test(tc, test_integer_values);
	tcase_add_test(tc, test_health);
	tcase_add_test(tc, test_enabled);
	tcase_add_test(tc, test_input_schema);
	tcase_add_test(tc, test_agent_schema);
	tcase_add_test(tc, test_json_errors);
	tcase_add_test(tc, test_patch_replaces);
	tcase_add_test(tc, test_patch_agent_id);
	tcase_add_test(tc, test_patch_keeps_secret);
	tcase_add_test(tc, test_patch_auth_type_change);
	tcase_add_test(tc, test_patch_nulls);
	tcase_add_test(
	    tc, test_patch_health_null_then_new_health_takes_defaults);
	tcase_add_test(tc, test_patch_get_shape_and_partial_health);
	tcase_add_test(tc, test_report_parse);
	tcase_add_test(tc, test_columns);
	tcase_add_test(tc, test_from_row_round_trip);
	tcase_add_test(tc, test_from_row_errors);
	tcase_add_test(tc, test_to_json_hides_secret);
	tcase_add_test(tc, test_to_json_shape);
	tcase_add_test(tc, test_version_ok);
	tcase_add_test(tc, test_version_parse);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return cvtest_run(agent_suite());
}
