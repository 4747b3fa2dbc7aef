/*
 * http.c: the edge between FastCGI and the handlers.  It builds a struct
 * request from the parameters nginx sends (the method; the path and query
 * from REQUEST_URI, taken raw because nginx decodes and normalizes
 * DOCUMENT_URI and PATH_INFO, which would turn an id's %2F into a
 * separator; the body, checked against CONTENT_LENGTH, CONTENT_TYPE and
 * api_max_body_bytes before a byte of it is read), and it writes a struct
 * response back as CGI headers and a compact JSON body.  It also holds
 * the helpers every handler uses: the error document, query parameters,
 * percent-decoding.  Everything but http_request() and http_send() is pure
 * and is what tests/check_http.c and tests/fuzz/fuzz_request.c drive.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <fcgiapp.h>
#include <jansson.h>

#include "api.h"

#define HTTP_GENERIC_500 "internal error; the cronvisor-api log has the details"
#define HTTP_MESSAGE_MAX 512 /* bytes of an error message */
#define HTTP_HEADERS_MAX 512 /* bytes of the CGI header block */

/* The value of one hex digit, or -1. */
static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Percent-decodes the n bytes at s into out (outlen bytes, NUL included),
 * with '+' as a space when plus is set (query strings).  out may be s: the
 * output never runs ahead of the input.  out NULL only checks that s
 * decodes.  Returns the decoded length, or -1 for a bad escape, a decoded
 * NUL, an output that does not fit or is not UTF-8.
 */
static ssize_t
decode(const char *s, size_t n, char *out, size_t outlen, int plus)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];

		if (c == '%') {
			int hi, lo;

			if (i + 2 >= n)
				return -1;
			if ((hi = hexval((unsigned char)s[i + 1])) < 0 ||
			    (lo = hexval((unsigned char)s[i + 2])) < 0)
				return -1;
			c = hi * 16 + lo;
			i += 2;
		} else if (c == '+' && plus)
			c = ' ';
		if (c == '\0' || (out != NULL && o + 1 >= outlen))
			return -1;
		if (out != NULL)
			out[o] = (char)c;
		o++;
	}
	if (out != NULL) {
		/* What reaches PostgreSQL must be UTF-8 (else a 500). */
		if (o >= outlen || !utf8_valid(out, o))
			return -1;
		out[o] = '\0';
	}
	return (ssize_t)o;
}

/*
 * Percent-decodes the NUL-terminated s in place ('+' stays a '+': this is
 * for path segments).  Returns 0, or -1 for an invalid escape or one that
 * decodes to NUL (s is then garbage).
 */
int
api_percent_decode(char *s)
{
	size_t n = strlen(s);

	return decode(s, n, s, n + 1, 0) < 0 ? -1 : 0;
}

/*
 * Splits path (the part after API_PREFIX, modified in place) on '/',
 * dropping empty segments so that "//a/" is ["a"], and percent-decodes
 * each segment, so that "a%2Fb" is one segment "a/b".  Stores at most max
 * pointers into path in segs.  Returns the number of segments, or -1 when
 * there are more than max or a segment does not decode.
 */
int
api_split_path(char *path, char **segs, int max)
{
	int n = 0;
	char *p = path;

	while (*p != '\0') {
		char *seg;

		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		seg = p;
		p += strcspn(p, "/");
		if (*p != '\0')
			*p++ = '\0';
		if (n >= max || api_percent_decode(seg) == -1)
			return -1;
		segs[n++] = seg;
	}
	return n;
}

/*
 * Whether a failed database call means the connection is gone (or was
 * never there: db NULL), so that the answer is a 503 and the connection is
 * reset before its next use.
 */
int
api_db_lost(struct db *db)
{
	return db == NULL || !db_ok(db) || db_error(db) == DB_ERR_CONNECTION;
}

/* Frees what rs holds and empties it. */
void
http_response_clear(struct response *rs)
{
	json_decref(rs->body);
	free(rs->raw);
	memset(rs, 0, sizeof(*rs));
}

/*
 * A JSON string of s; bytes that are not UTF-8 become '?' rather than
 * losing the whole message (a query parameter name is the client's text).
 */
static json_t *
text_json(const char *s)
{
	json_t *j;
	char *copy;

	if ((j = json_string(s)) != NULL)
		return j;
	if ((copy = strdup(s)) == NULL)
		return NULL;
	for (char *p = copy; *p != '\0'; p++)
		if ((unsigned char)*p >= 0x80 || (unsigned char)*p < 0x20)
			*p = '?';
	j = json_string(copy);
	free(copy);
	return j;
}

/*
 * Fills rs with the error document {"error": {"code", "message",
 * "field"}} and status (field NULL: JSON null).  For a 500 the message
 * formatted here is logged and the client gets a generic one: internals
 * (SQL, paths, library errors) never leave the process.  Whatever rs held
 * is released first.  Returns 0, or -1 if out of memory (rs then still has
 * the status and no body).
 */
int
api_error(struct response *rs, int status, const char *code, const char *field,
    const char *fmt, ...)
{
	char msg[HTTP_MESSAGE_MAX];
	json_t *f, *m, *doc;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	http_response_clear(rs);
	rs->status = status;
	if (status == 500) {
		log_warnx("internal error: %s", msg);
		snprintf(msg, sizeof(msg), "%s", HTTP_GENERIC_500);
	}
	f = field != NULL ? text_json(field) : json_null();
	m = text_json(msg);
	if (f == NULL || m == NULL) {
		json_decref(f);
		json_decref(m);
		return -1;
	}
	doc = json_pack("{s:{s:s, s:o, s:o}}", "error", "code", code, "message",
	    m, "field", f);
	if (doc == NULL)
		return -1;
	rs->body = doc;
	return 0;
}

/*
 * Fills rs with status and the JSON document body, whose reference rs now
 * owns.  Returns 0, or -1 when body is NULL (a failed json_pack: out of
 * memory), so that `return api_json(rs, 200, json_pack(...));` works.
 */
int
api_json(struct response *rs, int status, struct json_t *body)
{
	if (body == NULL)
		return -1;
	http_response_clear(rs);
	rs->status = status;
	rs->body = body;
	return 0;
}

/*
 * Fills rs with status and a body already serialized as JSON (a malloc'd
 * string that rs now owns, e.g. from PostgreSQL's jsonb output).  Returns
 * 0, or -1 when json_text is NULL.
 */
int
api_raw(struct response *rs, int status, char *json_text)
{
	if (json_text == NULL)
		return -1;
	http_response_clear(rs);
	rs->status = status;
	rs->raw = json_text;
	return 0;
}

/*
 * Finds the next "name[=value]" pair of query at *pos (skipping empty
 * ones), and advances *pos past it.  Returns 1 with the pair's name in
 * [*k, *k + *klen) and its value in [*v, *v + *vlen), or 0 at the end.
 */
static int
query_next(const char *query, size_t *pos, const char **k, size_t *klen,
    const char **v, size_t *vlen)
{
	const char *p = query + *pos, *eq;
	size_t n;

	while (*p == '&')
		p++;
	if (*p == '\0') {
		*pos = (size_t)(p - query);
		return 0;
	}
	n = strcspn(p, "&");
	eq = memchr(p, '=', n);
	*k = p;
	*klen = eq != NULL ? (size_t)(eq - p) : n;
	*v = eq != NULL ? eq + 1 : p + n;
	*vlen = eq != NULL ? n - *klen - 1 : 0;
	*pos = (size_t)(p + n - query);
	return 1;
}

/*
 * Looks up parameter name in the raw query string (percent- and
 * '+'-decoding names and values) and copies its decoded value into buf
 * (len bytes).  The first occurrence wins; query_check() refuses repeats.
 * Returns 1 found, 0 absent, -1 when its value does not decode (bad
 * escape, NUL) or does not fit in buf.
 */
int
query_get(const char *query, const char *name, char *buf, size_t len)
{
	char key[API_QUERY_NAME_MAX + 1];
	const char *k, *v;
	size_t pos = 0, klen, vlen;

	if (query == NULL)
		return 0;
	while (query_next(query, &pos, &k, &klen, &v, &vlen)) {
		if (decode(k, klen, key, sizeof(key), 1) < 0 ||
		    strcmp(key, name) != 0)
			continue;
		return decode(v, vlen, buf, len, 1) < 0 ? -1 : 1;
	}
	return 0;
}

/*
 * Checks that every parameter of the raw query is one of allowed (a NULL
 * terminated list), appears once and decodes.  Returns 0 when it does;
 * else -1 with rs holding the 400 invalid_query whose field names the
 * parameter (the handler then returns 0: the answer is ready).
 */
int
query_check(const char *query, const char *const *allowed, struct response *rs)
{
	char names[API_QUERY_PARAMS_MAX][API_QUERY_NAME_MAX + 1];
	const char *k, *v;
	size_t pos = 0, klen, vlen;
	int n = 0, known;

	if (query == NULL)
		return 0;
	while (query_next(query, &pos, &k, &klen, &v, &vlen)) {
		if (n == API_QUERY_PARAMS_MAX)
			return api_error(rs, 400, "invalid_query", NULL,
			           "more than %d query parameters",
			           API_QUERY_PARAMS_MAX),
			       -1;
		if (decode(k, klen, names[n], sizeof(names[n]), 1) < 0) {
			snprintf(names[n], sizeof(names[n]), "%.*s",
			    (int)(klen < API_QUERY_NAME_MAX
			            ? klen
			            : API_QUERY_NAME_MAX),
			    k);
			return api_error(rs, 400, "invalid_query", names[n],
			           "bad percent-encoding or too long a name"),
			       -1;
		}
		known = 0;
		for (const char *const *a = allowed; a && *a && !known; a++)
			known = strcmp(*a, names[n]) == 0;
		if (!known)
			return api_error(rs, 400, "invalid_query", names[n],
			           "unknown query parameter"),
			       -1;
		for (int i = 0; i < n; i++)
			if (strcmp(names[i], names[n]) == 0)
				return api_error(rs, 400, "invalid_query",
				           names[n],
				           "repeated query parameter"),
				       -1;
		if (decode(v, vlen, NULL, 0, 1) < 0)
			return api_error(rs, 400, "invalid_query", names[n],
			           "bad percent-encoding"),
			       -1;
		n++;
	}
	return 0;
}

/*
 * Whether a Content-Type is JSON: "application/json", any case, optionally
 * followed by parameters (";charset=utf-8") after optional whitespace.
 */
int
http_is_json(const char *ct)
{
	static const char json[] = "application/json";
	size_t n = sizeof(json) - 1;

	if (ct == NULL)
		return 0;
	ct += strspn(ct, " \t");
	if (strncasecmp(ct, json, n) != 0)
		return 0;
	ct += n;
	ct += strspn(ct, " \t");
	return *ct == '\0' || *ct == ';';
}

/*
 * Takes REQUEST_URI apart: the path, which must be API_PREFIX followed by
 * '/' or nothing, split and decoded into rq->segs, and the raw query into
 * rq->query.  An absolute-form URI ("http://host/...") is accepted.  *buf
 * gets the malloc'd copy that segs and query point into; the caller frees
 * it (also on failure).  Returns 0, or -1 with rs holding the 404 (or a
 * 500 when out of memory).
 */
int
http_target(
    const char *uri, char **buf, struct request *rq, struct response *rs)
{
	size_t plen = strlen(API_PREFIX);
	char *p, *q;
	int n;

	*buf = NULL;
	if (uri == NULL)
		uri = "";
	if (strncasecmp(uri, "http://", 7) == 0 ||
	    strncasecmp(uri, "https://", 8) == 0) {
		uri = strstr(uri, "://") + 3;
		uri += strcspn(uri, "/?");
	}
	if ((*buf = strdup(uri)) == NULL)
		return api_error(rs, 500, "internal", NULL, "out of memory"),
		       -1;
	p = *buf;
	if ((q = strchr(p, '?')) != NULL)
		*q++ = '\0';
	rq->query = q != NULL ? q : "";
	if (strncmp(p, API_PREFIX, plen) != 0 ||
	    (p[plen] != '/' && p[plen] != '\0'))
		return api_error(rs, 404, "not_found", NULL,
		           "no such route: the API lives under %s/",
		           API_PREFIX),
		       -1;
	if ((n = api_split_path(p + plen, rq->segs, API_MAX_SEGS)) < 0) {
		rq->nsegs = 0;
		return api_error(rs, 404, "not_found", NULL, "no such route"),
		       -1;
	}
	rq->nsegs = n;
	return 0;
}

/*
 * Checks the body's announced length and type before anything is read:
 * CONTENT_LENGTH missing or empty is 0, anything but decimal digits is a
 * 400, more than max a 413; a non-empty body must be application/json
 * (415).  Returns 0 with the length in *len, or -1 with rs filled.
 */
int
http_body_length(const char *cl, const char *ct, int64_t max, size_t *len,
    struct response *rs)
{
	uint64_t v = 0;

	*len = 0;
	if (cl == NULL || *cl == '\0')
		return 0;
	for (const char *p = cl; *p != '\0'; p++) {
		if (*p < '0' || *p > '9')
			return api_error(rs, 400, "invalid_json", NULL,
			           "Content-Length is not a number"),
			       -1;
		/* Past max it is too large whatever follows: no overflow. */
		if (v <= (uint64_t)max)
			v = v * 10 + (uint64_t)(*p - '0');
	}
	if (v > (uint64_t)max)
		return api_error(rs, 413, "payload_too_large", NULL,
		           "the body is over %" PRId64 " bytes", max),
		       -1;
	if (v > 0 && !http_is_json(ct))
		return api_error(rs, 415, "unsupported_media_type", NULL,
		           "a body must be application/json"),
		       -1;
	*len = (size_t)v;
	return 0;
}

/*
 * Reads exactly len bytes of body from the FastCGI input into a malloc'd,
 * NUL-terminated buffer.  Returns 0, or -1 with rs filled: a short body or
 * one holding a NUL byte is a 400.
 */
static int
read_body(FCGX_Stream *in, size_t len, char **body, struct response *rs)
{
	size_t got = 0;
	char *b;

	if ((b = malloc(len + 1)) == NULL)
		return api_error(rs, 500, "internal", NULL, "out of memory"),
		       -1;
	while (got < len) {
		size_t want = len - got > INT32_MAX ? INT32_MAX : len - got;
		int n = FCGX_GetStr(b + got, (int)want, in);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	b[got] = '\0';
	*body = b;
	if (got < len)
		return api_error(rs, 400, "invalid_json", NULL,
		           "the body is shorter than its Content-Length"),
		       -1;
	if (memchr(b, '\0', len) != NULL)
		return api_error(rs, 400, "invalid_json", NULL,
		           "the body holds a NUL byte"),
		       -1;
	return 0;
}

/*
 * Builds rq from the FastCGI request fr: method, path segments, query and
 * body (rq->cf is set to cf; who and db are the caller's business).  *buf
 * holds the path copy; both it and rq->body are released with
 * http_request_clear(), also after a failure.  Returns 0, or -1 with rs
 * holding the error answer (404, 400, 413, 415, 500).
 */
int
http_request(struct FCGX_Request *fr, const struct config *cf,
    struct request *rq, char **buf, struct response *rs)
{
	const char *method = FCGX_GetParam("REQUEST_METHOD", fr->envp);
	const char *uri = FCGX_GetParam("REQUEST_URI", fr->envp);
	size_t len;

	rq->cf = cf;
	rq->method = method != NULL ? method : "";
	rq->body = NULL;
	rq->body_len = 0;
	rq->idem_key = FCGX_GetParam("HTTP_IDEMPOTENCY_KEY", fr->envp);
	if (uri == NULL)
		return api_error(rs, 500, "internal", NULL,
		           "FastCGI parameter REQUEST_URI is missing: include "
		           "fastcgi_params in the nginx location"),
		       -1;
	if (http_target(uri, buf, rq, rs) == -1)
		return -1;
	if (http_body_length(FCGX_GetParam("CONTENT_LENGTH", fr->envp),
	        FCGX_GetParam("CONTENT_TYPE", fr->envp), cf->api_max_body_bytes,
	        &len, rs) == -1)
		return -1;
	if (read_body(fr->in, len, &rq->body, rs) == -1)
		return -1;
	rq->body_len = len;
	return 0;
}

/* Releases what http_request() allocated for rq; rq->body becomes NULL. */
void
http_request_clear(struct request *rq, char **buf)
{
	free(rq->body);
	rq->body = NULL;
	free(*buf);
	*buf = NULL;
}

/* The reason phrase of an HTTP status the API answers with. */
const char *
http_reason(int status)
{
	static const struct {
		int status;
		const char *reason;
	} reasons[] = {
	    {200, "OK"},
	    {201, "Created"},
	    {202, "Accepted"},
	    {204, "No Content"},
	    {400, "Bad Request"},
	    {401, "Unauthorized"},
	    {403, "Forbidden"},
	    {404, "Not Found"},
	    {405, "Method Not Allowed"},
	    {409, "Conflict"},
	    {413, "Content Too Large"},
	    {415, "Unsupported Media Type"},
	    {422, "Unprocessable Content"},
	    {429, "Too Many Requests"},
	    {500, "Internal Server Error"},
	    {503, "Service Unavailable"},
	};

	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (reasons[i].status == status)
			return reasons[i].reason;
	return "Unknown";
}

/*
 * Serializes rs as a CGI response: the Status line, Content-Type,
 * Content-Length, Cache-Control: no-store, Allow for a 405,
 * WWW-Authenticate for a 401, Retry-After: 1 for a 503 (the database is
 * away: clients such as cronvisorctl retry), a blank line and the compact JSON
 * body (none for a 204).  A status outside 100-599 is sent as 500.  *out is
 * malloc'd (the caller frees it) and *len its length.  Returns 0, or -1 if out
 * of memory.
 */
int
http_format(const struct response *rs, char **out, size_t *len)
{
	char hdr[HTTP_HEADERS_MAX];
	char *text = NULL;
	const char *body = "";
	int status = rs->status >= 100 && rs->status <= 599 ? rs->status : 500;
	size_t blen = 0;
	int h;

	if (status != 204) {
		if (rs->raw != NULL)
			body = rs->raw;
		else if (rs->body != NULL) {
			if ((text = json_dumps(rs->body,
			         JSON_COMPACT | JSON_ENCODE_ANY)) == NULL)
				return -1;
			body = text;
		}
		blen = strlen(body);
	}
	h = snprintf(hdr, sizeof(hdr), "Status: %d %s\r\n%s%s%s%s%s%s%s",
	    status, http_reason(status),
	    status == 204 ? "" : "Content-Type: application/json\r\n",
	    "Cache-Control: no-store\r\n",
	    status == 405 && rs->allow[0] != '\0' ? "Allow: " : "",
	    status == 405 && rs->allow[0] != '\0' ? rs->allow : "",
	    status == 405 && rs->allow[0] != '\0' ? "\r\n" : "",
	    status == 401 ? "WWW-Authenticate: Bearer realm=\"cronvisor\"\r\n"
	                  : "",
	    status == 503 && rs->retry_after <= 0 ? "Retry-After: 1\r\n" : "");
	if (rs->retry_after > 0)
		h += snprintf(hdr + h, sizeof(hdr) - (size_t)h,
		    "Retry-After: %d\r\n", rs->retry_after);
	if (status != 204)
		h += snprintf(hdr + h, sizeof(hdr) - (size_t)h,
		    "Content-Length: %zu\r\n", blen);
	h += snprintf(hdr + h, sizeof(hdr) - (size_t)h, "\r\n");
	if ((*out = malloc((size_t)h + blen + 1)) == NULL) {
		free(text);
		return -1;
	}
	memcpy(*out, hdr, (size_t)h);
	memcpy(*out + h, body, blen);
	(*out)[h + blen] = '\0';
	*len = (size_t)h + blen;
	free(text);
	return 0;
}

/*
 * Writes rs to the FastCGI output stream.  When it cannot be serialized
 * (out of memory) a bodiless 500 goes out instead.  Returns 0, or -1 when
 * the stream failed (nginx went away; nothing more can be done).
 */
int
http_send(struct FCGX_Stream *out, const struct response *rs)
{
	static const char fallback[] = "Status: 500 Internal Server Error\r\n"
	                               "Content-Length: 0\r\n\r\n";
	char *text;
	size_t len;
	int rc = 0;

	if (http_format(rs, &text, &len) == -1) {
		log_warnx("out of memory formatting a response");
		return FCGX_PutStr(fallback, (int)sizeof(fallback) - 1, out) < 0
		    ? -1
		    : 0;
	}
	for (size_t off = 0; off < len && rc == 0;) {
		size_t n = len - off > INT32_MAX ? INT32_MAX : len - off;
		int w = FCGX_PutStr(text + off, (int)n, out);

		if (w < 0)
			rc = -1;
		else
			off += (size_t)w;
	}
	free(text);
	return rc;
}
