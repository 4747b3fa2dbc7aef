/*
 * auth.c: who a bearer token belongs to.  The database keeps only the
 * SHA-256 of each token (sql/002_api.sql), computed by PostgreSQL, so the
 * lookup sends the token as a query parameter and lets the server hash it:
 * the token never appears in SQL text, in a log line or in an error
 * message.  A header that cannot hold a token is refused before any query,
 * so garbage costs no database round trip.
 */
#include <string.h>
#include <strings.h>
#include <stdlib.h>

#include <jansson.h>

#include "api.h"

#define AUTH_SCHEME "bearer" /* the only scheme, matched in any case */

/*
 * Extracts the token from an Authorization header value: the scheme
 * "Bearer" in any case, one or more spaces, then 1 to AUTH_TOKEN_MAX
 * printable ASCII characters other than space (trailing spaces are
 * ignored).  token must have room for AUTH_TOKEN_MAX + 1 bytes (len).
 * Returns 1 with the token copied, or 0 when the header is absent or
 * malformed.
 */
int
auth_bearer(const char *h, char *token, size_t len)
{
	size_t n = strlen(AUTH_SCHEME), t;

	if (h == NULL || strncasecmp(h, AUTH_SCHEME, n) != 0 ||
	    (h[n] != ' ' && h[n] != '\t'))
		return 0;
	h += n;
	h += strspn(h, " \t");
	t = strlen(h);
	while (t > 0 && (h[t - 1] == ' ' || h[t - 1] == '\t'))
		t--;
	if (t == 0 || t > AUTH_TOKEN_MAX || t >= len)
		return 0;
	for (size_t i = 0; i < t; i++)
		if ((unsigned char)h[i] <= 0x20 || (unsigned char)h[i] >= 0x7f)
			return 0;
	memcpy(token, h, t);
	token[t] = '\0';
	return 1;
}

/* The name of a role. */
const char *
auth_role_name(enum role role)
{
	switch (role) {
	case ROLE_VIEWER:
		return "viewer";
	case ROLE_EDITOR:
		return "editor";
	case ROLE_ADMIN:
		return "admin";
	}
	return "unknown";
}

/*
 * GET /me: who the token is, for a client that shows only what its role
 * may do (the console, issue 22).
 */
int
auth_me(struct request *rq, struct response *rs, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	if (query_check(rq->query, (const char *const[]){NULL}, rs) == -1)
		return 0;
	return api_json(rs, 200,
	    json_pack("{s:s, s:s}", "owner", rq->who.owner, "role",
	        auth_role_name(rq->who.role)));
}

/* Parses "viewer", "editor" or "admin"; returns 0, or -1. */
int
auth_role_parse(const char *name, enum role *out)
{
	static const char *const names[] = {"viewer", "editor", "admin"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(name, names[i]) == 0) {
			*out = (enum role)i;
			return 0;
		}
	return -1;
}

/*
 * Looks up the principal of the Authorization header value (NULL: none)
 * among the tokens that are not revoked.  Returns 1 with *who filled, 0
 * when the header holds no well-formed token or the token is unknown or
 * revoked (no query is made for a malformed one), or -1 when the database
 * call failed (err says why; db_error() says whether the connection went).
 */
int
auth_principal(struct db *db, const char *authorization, struct principal *who,
    char *err, size_t errlen)
{
	char token[AUTH_TOKEN_MAX + 1];
	const char *params[1] = {token};
	struct db_rows *rows;
	const char *id, *owner, *role;
	int rc = 0;

	if (!auth_bearer(authorization, token, sizeof(token)))
		return 0;
	rows = db_query(db, SQL_api_auth, 1, params, err, errlen);
	explicit_bzero(token, sizeof(token));
	if (rows == NULL)
		return -1;
	if (db_rows_count(rows) == 1 &&
	    (id = db_rows_value(rows, 0, 0)) != NULL &&
	    (owner = db_rows_value(rows, 0, 1)) != NULL &&
	    (role = db_rows_value(rows, 0, 2)) != NULL &&
	    strlen(owner) < sizeof(who->owner) &&
	    auth_role_parse(role, &who->role) == 0) {
		who->token_id = strtoll(id, NULL, 10);
		memcpy(who->owner, owner, strlen(owner) + 1);
		rc = 1;
	}
	db_rows_free(rows);
	return rc;
}
