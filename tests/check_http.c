/*
 * check_http.c: the pure parts of cronvisor-api (api/http.c, auth.c,
 * route.c): REQUEST_URI into path segments and query, percent-decoding,
 * query parameters, the body's length and type checks, bearer tokens,
 * routing (404 against 405 against a match, batch-delete against {id},
 * 401 and 403), the error document and the CGI response bytes.  No
 * FastCGI and no database: the handlers reached are called without one.
 */
#include <check.h>
#include <string.h>

#include <jansson.h>

#include "api.h"
#include "cvtest.h"

/* Splits a copy of path; returns the count and leaves segs pointing in buf. */
static int
split(const char *path, char *buf, size_t len, char **segs)
{
	snprintf(buf, len, "%s", path);
	return api_split_path(buf, segs, API_MAX_SEGS);
}

START_TEST(t_split)
{
	char buf[256], *segs[API_MAX_SEGS];

	ck_assert_int_eq(split("/schedules/a%2Fb", buf, sizeof(buf), segs), 2);
	ck_assert_str_eq(segs[0], "schedules");
	ck_assert_str_eq(segs[1], "a/b");
	ck_assert_int_eq(split("/schedules/", buf, sizeof(buf), segs), 1);
	ck_assert_int_eq(split("//schedules//x//", buf, sizeof(buf), segs), 2);
	ck_assert_str_eq(segs[1], "x");
	ck_assert_int_eq(split("", buf, sizeof(buf), segs), 0);
	ck_assert_int_eq(split("/", buf, sizeof(buf), segs), 0);
	ck_assert_int_eq(split("/a+b%20c", buf, sizeof(buf), segs), 1);
	ck_assert_str_eq(segs[0], "a+b c");
	ck_assert_int_eq(split("/%41%62", buf, sizeof(buf), segs), 1);
	ck_assert_str_eq(segs[0], "Ab");
	/* MAX segments fit, MAX + 1 do not. */
	ck_assert_int_eq(split("/1/2/3/4/5/6", buf, sizeof(buf), segs), 6);
	ck_assert_int_eq(split("/1/2/3/4/5/6/", buf, sizeof(buf), segs), 6);
	ck_assert_int_eq(split("/1/2/3/4/5/6/7", buf, sizeof(buf), segs), -1);
	/* Bad escapes and a decoded NUL. */
	ck_assert_int_eq(split("/a%", buf, sizeof(buf), segs), -1);
	ck_assert_int_eq(split("/a%2", buf, sizeof(buf), segs), -1);
	ck_assert_int_eq(split("/a%2/b", buf, sizeof(buf), segs), -1);
	ck_assert_int_eq(split("/a%zz", buf, sizeof(buf), segs), -1);
	ck_assert_int_eq(split("/a%00b", buf, sizeof(buf), segs), -1);
	ck_assert_int_eq(split("/runs/sched-%FF", buf, sizeof(buf), segs), -1);
}
END_TEST

START_TEST(t_percent_decode)
{
	char s[32];

	snprintf(s, sizeof(s), "a%%2fb%%2F%%7e");
	ck_assert_int_eq(api_percent_decode(s), 0);
	ck_assert_str_eq(s, "a/b/~");
	snprintf(s, sizeof(s), "%%g0");
	ck_assert_int_eq(api_percent_decode(s), -1);
	snprintf(s, sizeof(s), "%%00");
	ck_assert_int_eq(api_percent_decode(s), -1);
	snprintf(s, sizeof(s), "%s", "");
	ck_assert_int_eq(api_percent_decode(s), 0);
}
END_TEST

/* Runs http_target on uri; returns its result and the response status. */
static int
target(const char *uri, struct request *rq, char **buf, int *status)
{
	struct response rs;
	int rc;

	memset(rq, 0, sizeof(*rq));
	memset(&rs, 0, sizeof(rs));
	rc = http_target(uri, buf, rq, &rs);
	*status = rs.status;
	http_response_clear(&rs);
	return rc;
}

START_TEST(t_target)
{
	struct request rq;
	char *buf;
	int st;

	ck_assert_int_eq(target("/api/v1/schedules/a%2Fb/runs?limit=5&x=%2F",
	                     &rq, &buf, &st),
	    0);
	ck_assert_int_eq(rq.nsegs, 3);
	ck_assert_str_eq(rq.segs[1], "a/b");
	ck_assert_str_eq(rq.query, "limit=5&x=%2F");
	free(buf);
	ck_assert_int_eq(target("/api/v1/schedules/", &rq, &buf, &st), 0);
	ck_assert_int_eq(rq.nsegs, 1);
	ck_assert_str_eq(rq.query, "");
	free(buf);
	ck_assert_int_eq(target("/api/v1", &rq, &buf, &st), 0);
	ck_assert_int_eq(rq.nsegs, 0);
	free(buf);
	ck_assert_int_eq(target("/api/v1?x", &rq, &buf, &st), 0);
	ck_assert_str_eq(rq.query, "x");
	free(buf);
	ck_assert_int_eq(
	    target("http://example.org/api/v1/health", &rq, &buf, &st), 0);
	ck_assert_int_eq(rq.nsegs, 1);
	free(buf);
	/* Prefix mismatches: 404. */
	const char *bad[] = {"/api/v10/health", "/api/v2/health", "/api",
	    "/API/v1/health", "/", "", "api/v1/health", "/x/api/v1/health",
	    "/api/v1/a%zz", "/api/v1/1/2/3/4/5/6/7", "/api%2Fv1/health"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(
		    target(bad[i], &rq, &buf, &st) == -1, "%s", bad[i]);
		ck_assert_int_eq(st, 404);
		free(buf);
	}
}
END_TEST

START_TEST(t_query_get)
{
	const char *q = "limit=5&name=a+b%20c&empty=&flag&&x=%zz&dup=1&dup=2"
	                "&na%6De2=v&long=0123456789";
	char buf[8];

	ck_assert_int_eq(query_get(q, "limit", buf, sizeof(buf)), 1);
	ck_assert_str_eq(buf, "5");
	ck_assert_int_eq(query_get(q, "name", buf, sizeof(buf)), 1);
	ck_assert_str_eq(buf, "a b c");
	ck_assert_int_eq(query_get(q, "empty", buf, sizeof(buf)), 1);
	ck_assert_str_eq(buf, "");
	ck_assert_int_eq(query_get(q, "flag", buf, sizeof(buf)), 1);
	ck_assert_str_eq(buf, "");
	ck_assert_int_eq(query_get(q, "absent", buf, sizeof(buf)), 0);
	ck_assert_int_eq(query_get(q, "x", buf, sizeof(buf)), -1);
	/* A value PostgreSQL would refuse (not UTF-8) does not decode. */
	ck_assert_int_eq(query_get("n=%FF", "n", buf, sizeof(buf)), -1);
	ck_assert_int_eq(query_get("n=%C3%A9", "n", buf, sizeof(buf)), 1);
	ck_assert_int_eq(query_get("n=%ED%A0%80", "n", buf, sizeof(buf)), -1);
	ck_assert_int_eq(query_get(q, "dup", buf, sizeof(buf)), 1);
	ck_assert_str_eq(buf, "1");
	ck_assert_int_eq(query_get(q, "name2", buf, sizeof(buf)), 1);
	ck_assert_str_eq(buf, "v");
	/* 10 bytes do not fit in 8; 7 would. */
	ck_assert_int_eq(query_get(q, "long", buf, sizeof(buf)), -1);
	ck_assert_int_eq(
	    query_get("long=0123456", "long", buf, sizeof(buf)), 1);
	ck_assert_int_eq(
	    query_get("long=01234567", "long", buf, sizeof(buf)), -1);
	ck_assert_int_eq(query_get("a=%00", "a", buf, sizeof(buf)), -1);
	ck_assert_int_eq(query_get("", "a", buf, sizeof(buf)), 0);
}
END_TEST

/* Runs query_check; returns the field of the error ("" for none, "null"). */
static int
qcheck(const char *q, char *field, size_t len)
{
	static const char *const allowed[] = {
	    "limit", "cursor", "status", NULL};
	struct response rs;
	json_t *f;
	int rc;

	memset(&rs, 0, sizeof(rs));
	field[0] = '\0';
	rc = query_check(q, allowed, &rs);
	if (rc == -1) {
		ck_assert_int_eq(rs.status, 400);
		ck_assert_str_eq(
		    json_string_value(json_object_get(
		        json_object_get(rs.body, "error"), "code")),
		    "invalid_query");
		f = json_object_get(json_object_get(rs.body, "error"), "field");
		snprintf(field, len, "%s",
		    json_is_null(f) ? "null" : json_string_value(f));
	}
	http_response_clear(&rs);
	return rc;
}

START_TEST(t_query_check)
{
	char f[128];

	ck_assert_int_eq(qcheck("", f, sizeof(f)), 0);
	ck_assert_int_eq(
	    qcheck("limit=5&cursor=abc&status=active", f, sizeof(f)), 0);
	ck_assert_int_eq(qcheck("&&limit=5&", f, sizeof(f)), 0);
	ck_assert_int_eq(qcheck("li%6Dit=5", f, sizeof(f)), 0);
	ck_assert_int_eq(qcheck("limit=5&bogus=1", f, sizeof(f)), -1);
	ck_assert_str_eq(f, "bogus");
	ck_assert_int_eq(qcheck("limit=5&limit=6", f, sizeof(f)), -1);
	ck_assert_str_eq(f, "limit");
	ck_assert_int_eq(qcheck("limit=5&li%6dit=6", f, sizeof(f)), -1);
	ck_assert_str_eq(f, "limit");
	ck_assert_int_eq(qcheck("limit=%zz", f, sizeof(f)), -1);
	ck_assert_str_eq(f, "limit");
	ck_assert_int_eq(qcheck("=5", f, sizeof(f)), -1);
	ck_assert_str_eq(f, "");
	ck_assert_int_eq(qcheck("caf%C3%A9=1", f, sizeof(f)), -1);
	ck_assert_str_eq(f, "caf\xc3\xa9");
	/* Not UTF-8 once decoded: the field is the name as it was sent. */
	ck_assert_int_eq(qcheck("x%ff=1", f, sizeof(f)), -1);
	ck_assert_str_eq(f, "x%ff");
}
END_TEST

START_TEST(t_content_type)
{
	ck_assert(http_is_json("application/json"));
	ck_assert(http_is_json("Application/JSON"));
	ck_assert(http_is_json("application/json; charset=utf-8"));
	ck_assert(http_is_json("application/json;charset=UTF-8"));
	ck_assert(http_is_json(" application/json "));
	ck_assert(!http_is_json(NULL));
	ck_assert(!http_is_json(""));
	ck_assert(!http_is_json("text/plain"));
	ck_assert(!http_is_json("application/jsonx"));
	ck_assert(!http_is_json("application/json-patch+json"));
	ck_assert(!http_is_json("application/x-www-form-urlencoded"));
	ck_assert(!http_is_json("application/js"));
}
END_TEST

/* http_body_length's status (0 when accepted) and the length it gave. */
static int
body_len(const char *cl, const char *ct, size_t *len)
{
	struct response rs;
	int st;

	memset(&rs, 0, sizeof(rs));
	if (http_body_length(cl, ct, 1024, len, &rs) == 0)
		st = 0;
	else
		st = rs.status;
	http_response_clear(&rs);
	return st;
}

START_TEST(t_body_length)
{
	const char *json = "application/json";
	size_t n;

	ck_assert_int_eq(body_len(NULL, NULL, &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(body_len("", NULL, &n), 0);
	ck_assert_int_eq(body_len("0", "text/plain", &n), 0);
	ck_assert_int_eq(body_len("12", json, &n), 0);
	ck_assert_uint_eq(n, 12);
	ck_assert_int_eq(body_len("1023", json, &n), 0);
	ck_assert_int_eq(body_len("1024", json, &n), 0);
	ck_assert_uint_eq(n, 1024);
	ck_assert_int_eq(body_len("1025", json, &n), 413);
	ck_assert_int_eq(body_len("99999999999999999999999999", json, &n), 413);
	ck_assert_int_eq(body_len("1025", "text/plain", &n), 413);
	ck_assert_int_eq(body_len("abc", json, &n), 400);
	ck_assert_int_eq(body_len("-1", json, &n), 400);
	ck_assert_int_eq(body_len(" 5", json, &n), 400);
	ck_assert_int_eq(body_len("5", NULL, &n), 415);
	ck_assert_int_eq(body_len("5", "text/plain", &n), 415);
}
END_TEST

START_TEST(t_bearer)
{
	char tok[AUTH_TOKEN_MAX + 1], longtok[AUTH_TOKEN_MAX + 16];

	ck_assert_int_eq(auth_bearer("Bearer cvt_abc", tok, sizeof(tok)), 1);
	ck_assert_str_eq(tok, "cvt_abc");
	ck_assert_int_eq(
	    auth_bearer("bEaReR   cvt_abc  ", tok, sizeof(tok)), 1);
	ck_assert_str_eq(tok, "cvt_abc");
	ck_assert_int_eq(auth_bearer(NULL, tok, sizeof(tok)), 0);
	ck_assert_int_eq(auth_bearer("", tok, sizeof(tok)), 0);
	ck_assert_int_eq(auth_bearer("Bearer", tok, sizeof(tok)), 0);
	ck_assert_int_eq(auth_bearer("Bearer ", tok, sizeof(tok)), 0);
	ck_assert_int_eq(auth_bearer("Bearercvt_abc", tok, sizeof(tok)), 0);
	ck_assert_int_eq(
	    auth_bearer("Basic dXNlcjpwYXNz", tok, sizeof(tok)), 0);
	ck_assert_int_eq(auth_bearer("Bearer a b", tok, sizeof(tok)), 0);
	ck_assert_int_eq(auth_bearer("Bearer a\x01", tok, sizeof(tok)), 0);
	ck_assert_int_eq(
	    auth_bearer("Bearer caf\xc3\xa9", tok, sizeof(tok)), 0);
	/* 200 characters are a token, 201 are not. */
	memcpy(longtok, "Bearer ", 7);
	memset(longtok + 7, 'x', AUTH_TOKEN_MAX);
	longtok[7 + AUTH_TOKEN_MAX] = '\0';
	ck_assert_int_eq(auth_bearer(longtok, tok, sizeof(tok)), 1);
	ck_assert_uint_eq(strlen(tok), AUTH_TOKEN_MAX);
	longtok[7 + AUTH_TOKEN_MAX] = 'x';
	longtok[8 + AUTH_TOKEN_MAX] = '\0';
	ck_assert_int_eq(auth_bearer(longtok, tok, sizeof(tok)), 0);
}
END_TEST

/* Matches method and path (after the prefix); returns the route or NULL. */
static const struct route *
match(const char *method, const char *path, int *status, char *allow)
{
	static char buf[256];
	char *segs[API_MAX_SEGS];
	struct response rs;
	const struct route *r;
	int n;

	memset(&rs, 0, sizeof(rs));
	snprintf(buf, sizeof(buf), "%s", path);
	n = api_split_path(buf, segs, API_MAX_SEGS);
	ck_assert_int_ge(n, 0);
	r = route_match(method, segs, n, &rs);
	*status = rs.status;
	snprintf(allow, 64, "%s", rs.allow);
	http_response_clear(&rs);
	return r;
}

START_TEST(t_route_match)
{
	static const struct {
		const char *method, *path;
		api_handler handler;
	} ok[] = {
	    {"GET", "/schedules", schedules_list},
	    {"GET", "/schedules/", schedules_list},
	    {"POST", "/schedules", schedules_create},
	    {"POST", "/schedules/batch-delete", schedules_batch_delete},
	    {"POST", "/schedules/batch-delete/", schedules_batch_delete},
	    {"GET", "/schedules/abc", schedules_get},
	    {"PATCH", "/schedules/abc", schedules_update},
	    {"DELETE", "/schedules/abc", schedules_delete},
	    {"POST", "/schedules/abc/pause", schedules_pause},
	    {"POST", "/schedules/abc/resume", schedules_resume},
	    {"POST", "/schedules/abc/trigger", schedules_trigger},
	    {"GET", "/schedules/abc/runs", runs_of_schedule},
	    {"GET", "/schedules/batch-delete/runs", runs_of_schedule},
	    {"GET", "/runs/sched-1a2b3c4d-n5-rc0", runs_get},
	    {"GET", "/health", health_get},
	};
	const struct route *r;
	char allow[64];
	int st;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		r = match(ok[i].method, ok[i].path, &st, allow);
		ck_assert_msg(r != NULL && r->handler == ok[i].handler, "%s %s",
		    ok[i].method, ok[i].path);
	}
	ck_assert_ptr_null(match("GET", "/nope", &st, allow));
	ck_assert_int_eq(st, 404);
	ck_assert_ptr_null(match("GET", "", &st, allow));
	ck_assert_int_eq(st, 404);
	ck_assert_ptr_null(match("GET", "/schedules/a/b", &st, allow));
	ck_assert_int_eq(st, 404);
	ck_assert_ptr_null(match("GET", "/runs", &st, allow));
	ck_assert_int_eq(st, 404);
	ck_assert_ptr_null(match("GET", "/health/x", &st, allow));
	ck_assert_int_eq(st, 404);
	ck_assert_ptr_null(match("DELETE", "/schedules", &st, allow));
	ck_assert_int_eq(st, 405);
	ck_assert_str_eq(allow, "GET, POST");
	ck_assert_ptr_null(match("POST", "/schedules/abc", &st, allow));
	ck_assert_int_eq(st, 405);
	ck_assert_str_eq(allow, "GET, PATCH, DELETE");
	ck_assert_ptr_null(match("GET", "/schedules/batch-delete", &st, allow));
	ck_assert_int_eq(st, 405);
	ck_assert_str_eq(allow, "POST");
	ck_assert_ptr_null(match("GET", "/schedules/abc/pause", &st, allow));
	ck_assert_int_eq(st, 405);
	ck_assert_str_eq(allow, "POST");
	ck_assert_ptr_null(match("POST", "/health", &st, allow));
	ck_assert_str_eq(allow, "GET");
	ck_assert_ptr_null(match("get", "/health", &st, allow));
	ck_assert_int_eq(st, 405);
	ck_assert_ptr_null(match("HEAD", "/runs/x", &st, allow));
	ck_assert_int_eq(st, 405);
}
END_TEST

/* Dispatches method path as who (role < 0: nobody); returns the status. */
static int
dispatch(const char *method, const char *path, int role, struct response *rs)
{
	static char buf[256];
	struct config cf;
	struct request rq;
	char err[CV_ERRLEN] = "";
	int rc;

	memset(&rq, 0, sizeof(rq));
	memset(rs, 0, sizeof(*rs));
	memset(&cf, 0, sizeof(cf));
	config_defaults(&cf);
	rq.cf = &cf;
	rq.method = method;
	rq.query = "";
	rq.body = "";
	snprintf(buf, sizeof(buf), "%s", path);
	rq.nsegs = api_split_path(buf, rq.segs, API_MAX_SEGS);
	if (role >= 0) {
		rq.who.token_id = 1;
		rq.who.role = (enum role)role;
		snprintf(rq.who.owner, sizeof(rq.who.owner), "alice");
	}
	rc = route_dispatch(&rq, rs, err, sizeof(err));
	config_clear(&cf);
	ck_assert_int_eq(rc, 0);
	return rs->status;
}

/* The error code of an error document. */
static const char *
code_of(const struct response *rs)
{
	return json_string_value(
	    json_object_get(json_object_get(rs->body, "error"), "code"));
}

START_TEST(t_route_auth)
{
	struct response rs;

	ck_assert_int_eq(dispatch("GET", "/schedules", -1, &rs), 401);
	ck_assert_str_eq(code_of(&rs), "unauthorized");
	http_response_clear(&rs);
	ck_assert_int_eq(dispatch("POST", "/schedules", ROLE_VIEWER, &rs), 403);
	ck_assert_str_eq(code_of(&rs), "forbidden");
	http_response_clear(&rs);
	/*
	 * A viewer's write to a schedule is refused only once the schedule
	 * proved visible (schedules.c): an id that names nothing is a 404.
	 */
	ck_assert_int_eq(
	    dispatch("POST", "/schedules/x/pause", ROLE_VIEWER, &rs), 404);
	ck_assert_str_eq(code_of(&rs), "not_found");
	http_response_clear(&rs);
	/* 404 and 405 come before authentication. */
	ck_assert_int_eq(dispatch("GET", "/nope", -1, &rs), 404);
	http_response_clear(&rs);
	ck_assert_int_eq(dispatch("PUT", "/schedules", -1, &rs), 405);
	http_response_clear(&rs);
	/* Health needs no token; without a database it is a 503. */
	ck_assert_int_eq(dispatch("GET", "/health", -1, &rs), 503);
	ck_assert_str_eq(json_string_value(json_object_get(rs.body, "status")),
	    "unavailable");
	ck_assert_str_eq(code_of(&rs), "unavailable");
	http_response_clear(&rs);
	ck_assert_int_eq(dispatch("GET", "/health", -1, &rs), 503);
	http_response_clear(&rs);
}
END_TEST

START_TEST(t_error_shape)
{
	struct response rs;
	json_t *e;
	char *s;

	memset(&rs, 0, sizeof(rs));
	ck_assert_int_eq(api_error(&rs, 400, "invalid_field",
	                     "limits.memory_mb", "must be %d or less", 5),
	    0);
	ck_assert_int_eq(rs.status, 400);
	s = json_dumps(rs.body, JSON_COMPACT | JSON_SORT_KEYS);
	ck_assert_str_eq(s,
	    "{\"error\":{\"code\":\"invalid_field\",\"field\":"
	    "\"limits.memory_mb\",\"message\":\"must be 5 or less\"}}");
	free(s);
	ck_assert_int_eq(
	    api_error(&rs, 404, "not_found", NULL, "no such schedule"), 0);
	e = json_object_get(rs.body, "error");
	ck_assert_int_eq(json_object_size(rs.body), 1);
	ck_assert_int_eq(json_object_size(e), 3);
	ck_assert(json_is_null(json_object_get(e, "field")));
	/* A 500 never shows its text. */
	ck_assert_int_eq(api_error(&rs, 500, "internal", NULL,
	                     "SELECT failed: relation \"x\" does not exist"),
	    0);
	e = json_object_get(rs.body, "error");
	ck_assert_str_eq(json_string_value(json_object_get(e, "message")),
	    "internal error; the cronvisor-api log has the details");
	ck_assert_str_eq(
	    json_string_value(json_object_get(e, "code")), "internal");
	/* Text that is not UTF-8 still makes a document. */
	ck_assert_int_eq(
	    api_error(&rs, 400, "invalid_query", "a\xff", "bad \xfe"), 0);
	e = json_object_get(rs.body, "error");
	ck_assert_str_eq(json_string_value(json_object_get(e, "field")), "a?");
	http_response_clear(&rs);
	ck_assert_ptr_null(rs.body);
	ck_assert_int_eq(api_json(&rs, 200, NULL), -1);
	ck_assert_int_eq(api_raw(&rs, 200, NULL), -1);
}
END_TEST

/* Formats rs; returns the bytes (static) for strstr checks. */
static const char *
format(const struct response *rs, size_t *len)
{
	static char copy[4096];
	char *out;

	ck_assert_int_eq(http_format(rs, &out, len), 0);
	ck_assert_uint_lt(*len, sizeof(copy));
	memcpy(copy, out, *len + 1);
	free(out);
	return copy;
}

START_TEST(t_format)
{
	struct response rs;
	const char *s;
	size_t len;

	memset(&rs, 0, sizeof(rs));
	ck_assert_int_eq(api_raw(&rs, 200, strdup("{\"a\":1}")), 0);
	s = format(&rs, &len);
	ck_assert_str_eq(s,
	    "Status: 200 OK\r\nContent-Type: application/json\r\n"
	    "Cache-Control: no-store\r\nContent-Length: 7\r\n"
	    "\r\n{\"a\":1}");
	ck_assert_int_eq(
	    api_json(&rs, 201, json_pack("{s:[i,i]}", "x", 1, 2)), 0);
	s = format(&rs, &len);
	ck_assert_ptr_nonnull(strstr(s, "Status: 201 Created\r\n"));
	ck_assert_ptr_nonnull(strstr(s, "\r\n\r\n{\"x\":[1,2]}"));
	http_response_clear(&rs);
	rs.status = 204;
	s = format(&rs, &len);
	ck_assert_str_eq(
	    s, "Status: 204 No Content\r\nCache-Control: no-store\r\n\r\n");
	api_error(&rs, 401, "unauthorized", NULL, "no");
	s = format(&rs, &len);
	ck_assert_ptr_nonnull(
	    strstr(s, "WWW-Authenticate: Bearer realm=\"cronvisor\"\r\n"));
	api_error(&rs, 405, "method_not_allowed", NULL, "no");
	snprintf(rs.allow, sizeof(rs.allow), "GET, POST");
	s = format(&rs, &len);
	ck_assert_ptr_nonnull(strstr(s, "Status: 405 Method Not Allowed\r\n"));
	ck_assert_ptr_nonnull(strstr(s, "Allow: GET, POST\r\n"));
	ck_assert_ptr_null(strstr(s, "WWW-Authenticate"));
	ck_assert_ptr_null(strstr(s, "Retry-After"));
	api_error(&rs, 503, "unavailable", NULL, "no");
	s = format(&rs, &len);
	ck_assert_ptr_nonnull(strstr(s, "Status: 503 Service Unavailable\r\n"));
	ck_assert_ptr_nonnull(strstr(s, "Retry-After: 1\r\n"));
	http_response_clear(&rs);
	rs.status = 0;
	s = format(&rs, &len);
	ck_assert_ptr_nonnull(
	    strstr(s, "Status: 500 Internal Server Error\r\n"));
	ck_assert_ptr_nonnull(strstr(s, "Content-Length: 0\r\n"));
	ck_assert_str_eq(http_reason(413), "Content Too Large");
}
END_TEST

static Suite *
http_suite(void)
{
	Suite *s = suite_create("http");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, t_split);
	tcase_add_test(tc, t_percent_decode);
	tcase_add_test(tc, t_target);
	tcase_add_test(tc, t_query_get);
	tcase_add_test(tc, t_query_check);
	tcase_add_test(tc, t_content_type);
	tcase_add_test(tc, t_body_length);
	tcase_add_test(tc, t_bearer);
	tcase_add_test(tc, t_route_match);
	tcase_add_test(tc, t_route_auth);
	tcase_add_test(tc, t_error_shape);
	tcase_add_test(tc, t_format);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	log_init("check_http", LOG_LEVEL_WARN);
	return cvtest_run(http_suite());
}
