/*
 * fuzz_listquery.c: libFuzzer target for the query of GET /schedules
 * (api/list.c, schedules_list_query(): its filters, search, sort,
 * order, limit and cursor, issue 22).  The first byte picks the role, the
 * rest is REQUEST_URI.  The invariants: a query read gives a statement
 * that takes exactly its parameters and a limit of 1 to 500; the search
 * is valid UTF-8 of 1 to 200 characters, bound as a LIKE pattern that
 * matches it literally; a non-admin's statement has the owner's
 * condition, bound to its own owner; a cursor read gives an id and a
 * sort key that is valid UTF-8 (a name's, decoded from hex, has no NUL);
 * written back out as a page gives it, the cursor is the one read; a
 * refused query answers an error that formats and whose body is JSON.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "api.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t len);

/* Formats rs and checks that its body is JSON. */
static void
check_error(const struct response *rs)
{
	char *out, *body;
	size_t n;
	json_t *j;

	if (rs->status < 400 || http_format(rs, &out, &n) == -1)
		abort();
	if ((body = strstr(out, "\r\n\r\n")) == NULL ||
	    (j = json_loads(body + 4, 0, NULL)) == NULL)
		abort();
	json_decref(j);
	free(out);
}

/*
 * The statement is api_schedule_list's completed by list_sql(): it takes
 * its parameters $1..$np, each at least once, and no other (the query's
 * values go in as parameters only).
 */
static void
check_sql(const struct list_query *q)
{
	int seen[12] = {0};

	if (strncmp(q->sql, SQL_api_schedule_list,
	        strlen(SQL_api_schedule_list)) != 0)
		abort();

	for (const char *c = q->sql; (c = strchr(c, '$')) != NULL;) {
		char *end;
		long n = strtol(c + 1, &end, 10);

		if (end == c + 1 || n < 1 || n > q->np)
			abort();
		seen[n] = 1;
		c = end;
	}
	for (int i = 1; i <= q->np; i++)
		if (!seen[i])
			abort();
}

/* The value of the parameter that follows the text at in q's statement
 * ("... = $"), or NULL when the text is not there or has no value. */
static const char *
param_of(const struct list_query *q, const char *at)
{
	const char *c = strstr(q->sql, at);
	long n;

	if (c == NULL)
		return NULL;
	n = strtol(c + strlen(at), NULL, 10);
	return n >= 1 && n <= q->np ? q->p[n - 1] : NULL;
}

/* Whether LIKE pattern p matches exactly the substring s, anywhere: "%",
 * then s with each %, _ and \ escaped by a \, then "%". */
static int
like_of(const char *p, const char *s)
{
	if (*p++ != '%')
		return 0;
	for (; *s; s++) {
		if ((*s == '%' || *s == '_' || *s == '\\') && *p++ != '\\')
			return 0;
		if (*p++ != *s)
			return 0;
	}
	return strcmp(p, "%") == 0;
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t len)
{
	static const enum role roles[] = {ROLE_VIEWER, ROLE_EDITOR, ROLE_ADMIN};
	struct list_query *q = malloc(sizeof(*q));
	char *uri, *buf = NULL, cursor[API_LIST_CURSOR_MAX + 1],
	           again[API_LIST_CURSOR_MAX + 1];
	struct request rq;
	struct response rs;
	const char *o;

	if (len < 1 || q == NULL ||
	    (uri = strndup((const char *)data + 1, len - 1)) == NULL) {
		free(q);
		return 0;
	}
	memset(&rq, 0, sizeof(rq));
	memset(&rs, 0, sizeof(rs));
	rq.who.role = roles[data[0] % 3];
	strcpy(rq.who.owner, "alice");
	if (http_target(uri, &buf, &rq, &rs) != 0)
		goto out;
	if (schedules_list_query(&rq, &rs, q) != 0) {
		check_error(&rs);
		goto out;
	}
	if (q->limit < 1 || q->limit > 500 || q->np < 2)
		abort();
	if (q->f[LIST_F_Q] != NULL &&
	    (q->val[LIST_F_Q][0] == '\0' ||
	        !utf8_valid(q->val[LIST_F_Q], strlen(q->val[LIST_F_Q])) ||
	        utf8_chars(q->val[LIST_F_Q]) > 200))
		abort();
	if (rq.who.role != ROLE_ADMIN &&
	    ((o = param_of(q, " AND owner = $")) == NULL ||
	        strcmp(o, "alice") != 0))
		abort(); /* a non-admin lists its own owner's only */
	if (q->f[LIST_F_Q] != NULL &&
	    ((o = param_of(q, " AND lower(name) LIKE lower($")) == NULL ||
	        !like_of(o, q->val[LIST_F_Q])))
		abort(); /* the search, any %, _ and \ in it literal */
	check_sql(q);
	if (q->id[0] != '\0') {
		if (strlen(q->id) != API_ID_LEN ||
		    !utf8_valid(q->key, strlen(q->key)))
			abort();
		/* what a page would give out for that row is what was read */
		if (query_get(rq.query, "cursor", cursor, sizeof(cursor)) !=
		        1 ||
		    schedules_list_cursor(q, q->key[0] ? q->key : NULL, q->id,
		        again, sizeof(again)) != 0)
			abort();
		/* ids are read in any case and given out in lower case */
		if (strcasecmp(cursor, again) != 0 ||
		    strncmp(cursor, again, strlen(again) - API_ID_LEN) != 0)
			abort();
	}
out:
	http_response_clear(&rs);
	free(buf);
	free(uri);
	free(q);
	return 0;
}
