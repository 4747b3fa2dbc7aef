/*
 * fuzz_request.c: libFuzzer target for the request parsing of
 * cronvisor-api (api/http.c, auth.c, route.c).  The input is split at
 * '\n' into REQUEST_URI, CONTENT_TYPE, CONTENT_LENGTH, the Authorization
 * header and a method; each goes through the same code a FastCGI request
 * does.  The invariants: segments are non-empty, NUL-free and at most
 * API_MAX_SEGS; a token is 1-200 printable characters; every response
 * formats, and its JSON body parses back.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t len);

/* Takes the next '\n'-terminated field of the input as a C string. */
static char *
field(const unsigned char **p, const unsigned char *end)
{
	const unsigned char *nl = memchr(*p, '\n', (size_t)(end - *p));
	size_t n = nl != NULL ? (size_t)(nl - *p) : (size_t)(end - *p);
	char *s = strndup((const char *)*p, n);

	if (s == NULL)
		abort();
	*p = nl != NULL ? nl + 1 : end;
	return s;
}

/* Formats rs and checks that its body, if any, is JSON. */
static void
check_response(const struct response *rs)
{
	char *out, *body;
	size_t n;
	json_t *j;

	if (http_format(rs, &out, &n) == -1)
		abort();
	if (strlen(out) != n || strncmp(out, "Status: ", 8) != 0)
		abort();
	if ((body = strstr(out, "\r\n\r\n")) == NULL)
		abort();
	body += 4;
	if (*body != '\0') {
		if ((j = json_loads(body, 0, NULL)) == NULL)
			abort();
		json_decref(j);
	}
	free(out);
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t len)
{
	static const char *const allowed[] = {
	    "limit", "cursor", "status", "owner", NULL};
	const unsigned char *p = data, *end = data + len;
	char *uri = field(&p, end), *ct = field(&p, end), *cl = field(&p, end),
	     *authz = field(&p, end), *method = field(&p, end);
	char tok[AUTH_TOKEN_MAX + 1], val[64], *buf = NULL;
	struct request rq;
	struct response rs;
	const struct route *r;
	size_t blen;

	memset(&rq, 0, sizeof(rq));
	memset(&rs, 0, sizeof(rs));
	if (http_target(uri, &buf, &rq, &rs) == 0) {
		if (rq.nsegs < 0 || rq.nsegs > API_MAX_SEGS)
			abort();
		for (int i = 0; i < rq.nsegs; i++)
			if (rq.segs[i][0] == '\0')
				abort();
		for (const char *const *a = allowed; *a; a++)
			if (query_get(rq.query, *a, val, sizeof(val)) == 1 &&
			    strlen(val) >= sizeof(val))
				abort();
		query_check(rq.query, allowed, &rs);
		check_response(&rs);
		http_response_clear(&rs);
		if ((r = route_match(method, rq.segs, rq.nsegs, &rs)) == NULL &&
		    rs.status != 404 && rs.status != 405)
			abort();
	} else if (rs.status != 404)
		abort();
	check_response(&rs);
	http_response_clear(&rs);
	free(buf);

	if (http_body_length(cl, ct, 1048576, &blen, &rs) == 0) {
		if (blen > 1048576 || (blen > 0 && !http_is_json(ct)))
			abort();
	} else if (rs.status != 400 && rs.status != 413 && rs.status != 415)
		abort();
	check_response(&rs);
	http_response_clear(&rs);

	if (auth_bearer(authz, tok, sizeof(tok)) == 1) {
		size_t n = strlen(tok);

		if (n < 1 || n > AUTH_TOKEN_MAX)
			abort();
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)tok[i] <= 0x20 ||
			    (unsigned char)tok[i] >= 0x7f)
				abort();
	}

	/* Client text in an error document (a parameter name as field). */
	api_error(&rs, 400, "invalid_query", authz, "%s", ct);
	check_response(&rs);
	http_response_clear(&rs);

	free(uri);
	free(ct);
	free(cl);
	free(authz);
	free(method);
	return 0;
}
