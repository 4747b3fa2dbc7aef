/*
 * notify.c: the notification channels of an owner and their deliveries
 * (docs/operations.md, "Notifications"): /notification-channels (list,
 * create, get, delete; a change is a delete and a create) and
 * /notifications (the deliveries, newest first).  A channel document:
 *
 *	{"channel_id": "ops", "type": "webhook"|"slack"|"email",
 *	 "url": "https://...",            (webhook, slack)
 *	 "to": "a@example.com, b@...",    (email)
 *	 "secret": "whsec_...",           (webhook; made when not given)
 *	 "kinds": ["dead", "failed", "partial", "recovery"],
 *	 "schedule_ids": ["<uuid>", ...], (null: every schedule of the owner)
 *	 "enabled": true}
 *
 * A URL is checked like an http target's (the host lists, the receiver);
 * the events worker checks every address it connects to again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "api.h"

#define NO_CHANNEL "no such notification channel"

/* The channel of /notification-channels/{id}: owner and slug; 0, or 1. */
static int
channel_addr(struct request *rq, struct response *rs, char *owner, size_t olen,
    char *slug, size_t slen)
{
	static const char *const allowed[] = {"owner", NULL};

	if (query_check(rq->query, allowed, rs) == -1 ||
	    api_req_owner(rq, rs, owner, olen, NO_CHANNEL))
		return 1;
	if (rq->nsegs < 2 || strlen(rq->segs[1]) >= slen ||
	    !agent_slug_ok(rq->segs[1]))
		return api_error(rs, 404, "not_found", NULL, NO_CHANNEL), 1;
	snprintf(slug, slen, "%s", rq->segs[1]);
	return 0;
}

/* A new whsec_ secret: 32 random bytes, base64. */
static int
channel_secret(char *buf, size_t len)
{
	unsigned char raw[32];

	if (len < 6 + 45 ||
	    getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return -1;
	memcpy(buf, "whsec_", 6);
	EVP_EncodeBlock((unsigned char *)buf + 6, raw, sizeof(raw));
	explicit_bzero(raw, sizeof(raw));
	return 0;
}

/* Checks the "to" of an e-mail channel: addresses, comma-separated. */
static int
channel_to_ok(const char *to)
{
	int n = 0;

	if (to == NULL || to[0] == '\0' || strlen(to) > 1000)
		return 0;
	for (const char *p = to; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == '<' || *p == '>' ||
		    *p == '"' || *p == '\\')
			return 0;
	for (const char *p = to; *p;) {
		size_t k = strcspn(p, ","), at = strcspn(p, "@");

		if (at >= k || at == 0 || k - at < 2)
			return 0;
		n++;
		p += k;
		while (*p == ',' || *p == ' ')
			p++;
	}
	return n > 0 && n <= 20;
}

/*
 * The channel document of the body, checked and completed (kinds,
 * enabled, a secret for a webhook).  Returns it, or NULL after the 400.
 */
static json_t *
channel_doc(struct request *rq, struct response *rs)
{
	static const char *const known[] = {"channel_id", "type", "url", "to",
	    "secret", "kinds", "schedule_ids", "enabled", NULL};
	static const char *const kinds[] = {
	    "dead", "failed", "partial", "recovery", NULL};
	json_t *d = json_loadb(
	           rq->body, rq->body_len, JSON_REJECT_DUPLICATES, NULL),
	       *v;
	const char *k, *type, *id, *url;
	char field[80], secret[64];
	size_t i;

	if (!json_is_object(d)) {
		json_decref(d);
		return api_error(rs, 400, "invalid_json", NULL,
		           "the body is not a JSON object"),
		       NULL;
	}
	json_object_foreach(d, k, v)
	{
		for (i = 0; known[i] && strcmp(known[i], k); i++)
			;
		if (known[i] == NULL) {
			snprintf(field, sizeof(field), "%.64s", k);
			api_error(rs, 400, "unknown_field", field,
			    "not a field of a notification channel");
			goto bad;
		}
	}
	id = json_string_value(json_object_get(d, "channel_id"));
	type = json_string_value(json_object_get(d, "type"));
	url = json_string_value(json_object_get(d, "url"));
	if (id == NULL || !agent_slug_ok(id)) {
		api_error(rs, 400, id ? "invalid_field" : "missing_field",
		    "channel_id",
		    "expected an id: 1 to 64 of a-z, 0-9 and '-'");
		goto bad;
	}
	if (type == NULL ||
	    (strcmp(type, "webhook") && strcmp(type, "slack") &&
	        strcmp(type, "email"))) {
		api_error(rs, 400, type ? "invalid_field" : "missing_field",
		    "type", "expected \"webhook\", \"slack\" or \"email\"");
		goto bad;
	}
	if (strcmp(type, "email") == 0) {
		if (json_object_get(d, "url") || json_object_get(d, "secret")) {
			api_error(rs, 400, "invalid_field",
			    json_object_get(d, "url") ? "url" : "secret",
			    "an email channel takes \"to\", no url or secret");
			goto bad;
		}
		if (!channel_to_ok(
		        json_string_value(json_object_get(d, "to")))) {
			api_error(rs, 400,
			    json_object_get(d, "to") ? "invalid_field"
			                             : "missing_field",
			    "to",
			    "expected up to 20 e-mail addresses, "
			    "comma-separated, 1000 characters at most");
			goto bad;
		}
	} else {
		if (json_object_get(d, "to")) {
			api_error(rs, 400, "invalid_field", "to",
			    "only an email channel takes \"to\"");
			goto bad;
		}
		if (url == NULL || strlen(url) > 2048 ||
		    (strncmp(url, "https://", 8) &&
		        strncmp(url, "http://", 7)) ||
		    strpbrk(url, " \t\r\n") != NULL) {
			api_error(rs, 400,
			    url ? "invalid_field" : "missing_field", "url",
			    "expected an http:// or https:// URL");
			goto bad;
		}
		if (api_url_denied(rq, url, "url", rs))
			goto bad;
	}
	if ((v = json_object_get(d, "secret")) != NULL) {
		const char *s = json_string_value(v);

		if (strcmp(type, "webhook") != 0 || s == NULL ||
		    strncmp(s, "whsec_", 6) != 0 || strlen(s) < 6 + 24 ||
		    strlen(s) > 6 + 340 ||
		    s[6 +
		        strspn(s + 6,
		            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop"
		            "qrstuvwxyz0123456789+/=")] != '\0') {
			api_error(rs, 400, "invalid_field", "secret",
			    "a webhook's secret is whsec_ and the base64 of a key "
			    "of 18 to 255 bytes");
			goto bad;
		}
	} else if (strcmp(type, "webhook") == 0) {
		if (channel_secret(secret, sizeof(secret)) == -1) {
			api_error(rs, 500, "internal", NULL, "no random bytes");
			goto bad;
		}
		json_object_set_new(d, "secret", json_string(secret));
		explicit_bzero(secret, sizeof(secret));
	}
	if ((v = json_object_get(d, "kinds")) == NULL)
		json_object_set_new(d, "kinds",
		    json_pack("[s,s,s]", "dead", "failed", "partial"));
	else {
		json_t *e;
		size_t j;

		if (!json_is_array(v) || json_array_size(v) == 0) {
			api_error(rs, 400, "invalid_field", "kinds",
			    "expected a list of dead, failed, partial, recovery");
			goto bad;
		}
		json_array_foreach(v, j, e)
		{
			for (i = 0; kinds[i] &&
			     (!json_is_string(e) ||
			         strcmp(kinds[i], json_string_value(e)));
			     i++)
				;
			if (kinds[i] == NULL) {
				snprintf(field, sizeof(field), "kinds[%zu]", j);
				api_error(rs, 400, "invalid_field", field,
				    "expected dead, failed, partial or recovery");
				goto bad;
			}
		}
	}
	if ((v = json_object_get(d, "schedule_ids")) != NULL &&
	    !json_is_null(v)) {
		json_t *e;
		size_t j;
		char idbuf[API_ID_LEN + 1];

		if (!json_is_array(v) || json_array_size(v) == 0 ||
		    json_array_size(v) > 1000) {
			api_error(rs, 400, "invalid_field", "schedule_ids",
			    "expected 1 to 1000 schedule ids, or null for all");
			goto bad;
		}
		json_array_foreach(v, j, e)
		{
			if (!json_is_string(e) ||
			    api_parse_id(json_string_value(e), idbuf) != 0) {
				snprintf(field, sizeof(field),
				    "schedule_ids[%zu]", j);
				api_error(rs, 400, "invalid_field", field,
				    "expected a schedule id (a UUID)");
				goto bad;
			}
		}
	}
	if ((v = json_object_get(d, "enabled")) == NULL)
		json_object_set_new(d, "enabled", json_true());
	else if (!json_is_boolean(v)) {
		api_error(rs, 400, "invalid_field", "enabled",
		    "expected true or false");
		goto bad;
	}
	return d;
bad:
	json_decref(d);
	return NULL;
}

/* GET /notification-channels */
int
notify_channels_list(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	return api_slug_list(
	    rq, rs, SQL_notify_channels_list, "channels", NULL, err, errlen);
}

/* POST /notification-channels: 201 with the secret, shown this once. */
int
notify_channels_create(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	static const char *const allowed[] = {"owner", NULL};
	char owner[API_OWNER_MAX * 4 + 1], by[API_OWNER_MAX * 4 + 40], *text;
	const char *p[3];
	struct db_rows *rows;
	json_t *doc;

	if (query_check(rq->query, allowed, rs) == -1 ||
	    api_req_owner(rq, rs, owner, sizeof(owner), NULL) ||
	    api_no_body(rq, rs))
		return 0;
	if ((doc = channel_doc(rq, rs)) == NULL)
		return 0;
	text = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	if (text == NULL)
		return -1;
	api_whom(rq, by, sizeof(by));
	p[0] = owner;
	p[1] = by;
	p[2] = text;
	rows = db_query(rq->db, SQL_notify_channel_insert, 3, p, err, errlen);
	explicit_bzero(text, strlen(text));
	free(text);
	if (rows == NULL)
		return API_DB_FAILED;
	if (db_rows_count(rows) == 0) {
		db_rows_free(rows);
		return api_error(rs, 409, "conflict", "channel_id",
		    "the owner has a channel of that id");
	}
	return api_reply_text(rs, 201, rows);
}

/* GET /notification-channels/{id} */
int
notify_channels_get(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	char owner[API_OWNER_MAX * 4 + 1], slug[65];
	const char *p[2] = {owner, slug};
	struct db_rows *rows;

	if (channel_addr(rq, rs, owner, sizeof(owner), slug, sizeof(slug)))
		return 0;
	if ((rows = db_query(
	         rq->db, SQL_notify_channel_get, 2, p, err, errlen)) == NULL)
		return API_DB_FAILED;
	if (db_rows_count(rows) == 0) {
		db_rows_free(rows);
		return api_error(rs, 404, "not_found", NULL, NO_CHANNEL);
	}
	return api_reply_text(rs, 200, rows);
}

/* DELETE /notification-channels/{id}: 204; its pending deliveries fail. */
int
notify_channels_delete(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	char owner[API_OWNER_MAX * 4 + 1], slug[65];
	const char *p[2] = {owner, slug};
	struct db_rows *rows;
	int n;

	if (channel_addr(rq, rs, owner, sizeof(owner), slug, sizeof(slug)))
		return 0;
	if (!rq->may)
		return api_error(rs, 403, "forbidden", NULL,
		    "a viewer token may read channels, not change them");
	if ((rows = db_query(
	         rq->db, SQL_notify_channel_delete, 2, p, err, errlen)) == NULL)
		return API_DB_FAILED;
	n = atoi(db_rows_value(rows, 0, 0));
	db_rows_free(rows);
	if (n == 0)
		return api_error(rs, 404, "not_found", NULL, NO_CHANNEL);
	rs->status = 204;
	return 0;
}

/* GET /notifications: the deliveries, newest first. */
int
notify_list(struct request *rq, struct response *rs, char *err, size_t errlen)
{
	static const char *const allowed[] = {
	    "owner", "status", "channel", "limit", "cursor", NULL};
	static const char *const statuses[] = {
	    "pending", "delivered", "failed", NULL};
	char owner[API_OWNER_MAX * 4 + 1], status[16], chan[80], cur[48],
	    lim[24], *end, *id = NULL;
	const char *p[5];
	struct db_rows *rows;
	int64_t limit;
	int has_owner, r;

	if (query_check(rq->query, allowed, rs) == -1 ||
	    api_list_limit(rq->query, &limit, rs) ||
	    api_query_enum(rq->query, "status", statuses, "a delivery status",
	        status, sizeof(status), rs))
		return 0;
	has_owner = query_get(rq->query, "owner", owner, sizeof(owner)) != 0;
	if (api_req_owner(rq, rs, owner, sizeof(owner), NULL))
		return 0;
	if ((r = query_get(rq->query, "channel", chan, sizeof(chan))) != 0 &&
	    (r == -1 || !agent_slug_ok(chan)))
		return api_error(rs, 400, "invalid_query", "channel",
		    "expected a channel id");
	if ((r = query_get(rq->query, "cursor", cur, sizeof(cur))) != 0 &&
	    (r == -1 || (id = strrchr(cur, '_')) == NULL ||
	        strtoll(id + 1, &end, 10) <= 0 || *end != '\0'))
		return api_error(rs, 400, "invalid_query", "cursor",
		    "not a cursor this API gave out");
	r = query_get(rq->query, "channel", chan, sizeof(chan));
	snprintf(lim, sizeof(lim), "%lld", (long long)limit + 1);
	p[0] = rq->who.role == ROLE_ADMIN && !has_owner ? NULL : owner;
	p[1] = status[0] ? status : NULL;
	p[2] = r == 1 ? chan : NULL;
	p[3] = id != NULL ? id + 1 : NULL;
	p[4] = lim;
	/* planned for its values (LIST_ONCE) */
	if ((rows = db_query_once(
	         rq->db, SQL_notify_list, 5, p, err, errlen)) == NULL)
		return API_DB_FAILED;
	r = api_page(rs, rows, limit, "notifications", api_row_item);
	db_rows_free(rows);
	return r;
}
