/*
 * list.c: the lists of the REST API.  What every list shares (?limit=,
 * ?cursor=, the page and its next_cursor), and GET /schedules (issue 22):
 * its filters, its orders (each the keyset scan of an index), its cursors
 * and the rows written out from each schedule's kept document without
 * parsing it.
 */
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"

/* --- GET /schedules ----------------------------------------------------- */

/* Checks ?name=value against a list of names; 1 after answering 400. */
static int
bad_enum(const char *name, const char *value, const char *const *names,
    struct response *rs)
{
	for (int i = 0; names[i]; i++)
		if (strcmp(value, names[i]) == 0)
			return 0;
	api_error(rs, 400, "invalid_query", name, "\"%s\" is not a valid %s",
	    value, name);
	return 1;
}

/*
 * Reads ?limit= (1 to API_LIST_MAX, default API_LIST_DEF) into *out; 1
 * after answering 400.
 */
static int
read_limit(const char *query, int64_t *out, struct response *rs)
{
	char buf[24], *end;
	int r = query_get(query, "limit", buf, sizeof(buf));

	*out = API_LIST_DEF;
	if (r == 0)
		return 0;
	if (r == 1) {
		*out = strtoll(buf, &end, 10);
		if (end != buf && *end == '\0' && *out >= 1 &&
		    *out <= API_LIST_MAX)
			return 0;
	}
	api_error(rs, 400, "invalid_query", "limit",
	    "must be a number from 1 to %d", API_LIST_MAX);
	return 1;
}

/*
 * Reads ?cursor= (microseconds, '_', the id of the last row of the
 * previous page: a UUID when uuid is set, else a run id) into us and id
 * (idlen bytes); both "" when absent.  1 after answering 400.
 */
int
api_read_cursor(const char *query, char *us, size_t uslen, char *id,
    size_t idlen, int uuid, struct response *rs)
{
	char buf[160], *sep;
	size_t n;
	int r = query_get(query, "cursor", buf, sizeof(buf));

	us[0] = id[0] = '\0';
	if (r == 0)
		return 0;
	if (r == 1 && (sep = strchr(buf, '_')) != NULL &&
	    (n = (size_t)(sep - buf)) > 0 && n < uslen && n <= 18 &&
	    strspn(buf, "0123456789") == n && strlen(sep + 1) < idlen &&
	    (uuid ? idlen > API_ID_LEN && api_parse_id(sep + 1, id) == 0
	          : strncmp(sep + 1, "sched-", 6) == 0)) {
		memcpy(us, buf, n);
		us[n] = '\0';
		if (!uuid)
			snprintf(id, idlen, "%s", sep + 1);
		return 0;
	}
	us[0] = id[0] = '\0';
	api_error(rs, 400, "invalid_query", "cursor",
	    "not a cursor this API gave out");
	return 1;
}

/*
 * The page of a list: {key: [items of the rows' column 0], next_cursor}.
 * The query asked for one row more than limit; its presence means another
 * page, whose cursor is the last item's (column 1 microseconds, column 2
 * id).  item turns a row's JSON text into the object shown.
 */
int
api_page(struct response *rs, struct db_rows *rows, int64_t limit,
    const char *key, json_t *(*item)(const char *))
{
	int n = db_rows_count(rows);
	json_t *list = json_array(), *o;
	char cursor[160];

	if (list == NULL)
		return -1;
	for (int i = 0; i < n && i < limit; i++)
		if ((o = item(db_rows_value(rows, i, 0))) == NULL ||
		    json_array_append_new(list, o) == -1) {
			json_decref(list);
			return -1;
		}
	if (n > limit)
		snprintf(cursor, sizeof(cursor), "%s_%s",
		    db_rows_value(rows, (int)limit - 1, 1),
		    db_rows_value(rows, (int)limit - 1, 2));
	o = json_pack(
	    "{s:o, s:s?}", key, list, "next_cursor", n > limit ? cursor : NULL);
	return o ? api_json(rs, 200, o) : -1;
}

/*
 * The rows of GET /schedules are {{api_listed}} (enum
 * api_listed_col of sql/queries/api.sql), then the sort key of the
 * statement's order, for the next cursor.
 */
#define ITEM_KEY API_LISTED_COL_COUNT

/* Writes the string s as JSON (null for NULL); -1 out of memory. */
static int
put_string(FILE *fp, const char *s)
{
	const unsigned char *c;
	json_t *j;
	int r;

	if (s == NULL)
		return fputs("null", fp) < 0 ? -1 : 0;
	/* Most need no escape: as they are (jansson escapes the others). */
	for (c = (const unsigned char *)s;
	     *c >= 0x20 && *c != '"' && *c != '\\' && *c != 0x7f; c++)
		;
	if (*c == '\0')
		return fprintf(fp, "\"%s\"", s) < 0 ? -1 : 0;
	if ((j = json_string(s)) == NULL)
		return -1;
	r = json_dumpf(j, fp, JSON_ENCODE_ANY | JSON_COMPACT);
	json_decref(j);
	return r;
}

/*
 * Writes an instant given in µs since the epoch (NULL: null) as
 * cronvisor_time() in sql/functions.sql does: UTC, with ".mmm" when it is
 * not a whole second.
 */
static void
put_time(FILE *fp, const char *us_text)
{
	int64_t us, s, frac;
	char buf[40];

	if (us_text == NULL) {
		fputs("null", fp);
		return;
	}
	us = strtoll(us_text, NULL, 10);
	s = us / 1000000 - (us % 1000000 < 0);
	frac = us - s * 1000000;
	if (timefmt_utc(s, buf, sizeof(buf)) == -1) {
		fputs("null", fp);
		return;
	}
	buf[strlen(buf) - 1] = '\0'; /* the Z */
	if (frac)
		fprintf(fp, "\"%s.%03dZ\"", buf, (int)(frac / 1000));
	else
		fprintf(fp, "\"%sZ\"", buf);
}

/*
 * One schedule of a page, row i, as schedule_out_as() shows it: from its
 * kept document and its state, without building it (or, when it has no
 * kept document, built as a GET builds it).  -1 out of memory.
 */
static int
put_item(FILE *fp, const struct db_rows *rows, int i, int masked)
{
	const char *doc = db_rows_value(rows, i, API_LISTED_COL_DOC);
	json_t *o;
	char *text;
	int r;

	if (db_rows_value(rows, i, API_LISTED_COL_ROW) != NULL || doc == NULL) {
		if ((o = schedule_out_as(
		         db_rows_value(rows, i, API_LISTED_COL_ROW), masked)) ==
		    NULL)
			return -1;
		text = json_dumps(o, JSON_COMPACT);
		json_decref(o);
		if (text == NULL)
			return -1;
		r = fputs(text, fp) < 0 ? -1 : 0;
		free(text);
		return r;
	}
	fprintf(fp, "{\"id\":\"%s\",\"owner\":",
	    db_rows_value(rows, i, API_LISTED_COL_ID));
	if (put_string(fp, db_rows_value(rows, i, API_LISTED_COL_OWNER)) == -1)
		return -1;
	/* the document's members, then the state */
	fprintf(fp,
	    ",%.*s,\"status\":\"%s\",\"current_repeat\":%s,"
	    "\"current_retry\":%s,\"run_count\":%s,\"error_count\":%s,"
	    "\"last_error\":",
	    (int)strlen(doc + 1) - 1, doc + 1,
	    db_rows_value(rows, i, API_LISTED_COL_STATUS),
	    db_rows_value(rows, i, API_LISTED_COL_REPEAT),
	    db_rows_value(rows, i, API_LISTED_COL_RETRY),
	    db_rows_value(rows, i, API_LISTED_COL_RUNS),
	    db_rows_value(rows, i, API_LISTED_COL_ERRORS));
	if (put_string(fp, db_rows_value(rows, i, API_LISTED_COL_LAST_ERROR)) ==
	    -1)
		return -1;
	fputs(",\"last_run_at\":", fp);
	put_time(fp, db_rows_value(rows, i, API_LISTED_COL_LAST_RUN));
	fputs(",\"next_run_at\":", fp);
	put_time(fp, db_rows_value(rows, i, API_LISTED_COL_NEXT_RUN));
	fprintf(fp, ",\"runs_in_flight\":%s,\"apply_set\":",
	    db_rows_value(rows, i, API_LISTED_COL_RUNNING));
	if (put_string(fp, db_rows_value(rows, i, API_LISTED_COL_APPLY_SET)) ==
	    -1)
		return -1;
	fputs(",\"created_at\":", fp);
	put_time(fp, db_rows_value(rows, i, API_LISTED_COL_CREATED));
	fputs(",\"updated_at\":", fp);
	put_time(fp, db_rows_value(rows, i, API_LISTED_COL_UPDATED));
	return fputc('}', fp) == EOF ? -1 : 0;
}

/*
 * The orders of GET /schedules (issue 22), ?sort= and ?order=: each the
 * keyset scan of an index (the owner's, or every owner's for an admin),
 * for the index keeps the order only when the ORDER BY is its expression,
 * and the prefix that marks its cursors, "<tag>.<key>_<id>", so that a
 * cursor is never read in another order than the one it was made for.
 * The default order's cursors are "<key>_<id>", as they were before there
 * were others: clients hold such cursors.  Each order's SQL: the sort key
 * a row gives out for the next cursor, the index's expression (an order
 * of none, a next run of a schedule that is not active, sorts as if at
 * +infinity), and a cursor's key as a value of that expression from the
 * parameter $# (µs since the epoch, or the name; put_param()).
 */
enum list_key {
	LIST_KEY_US,   /* µs since the epoch */
	LIST_KEY_NEXT, /* µs since the epoch, or "" for none (+infinity) */
	LIST_KEY_NAME, /* a name: its UTF-8 in hex, any character safe */
};

#define LIST_US(c) "(extract(epoch FROM " c ") * 1000000)::bigint"
#define LIST_AT    "('epoch'::timestamptz + $#::bigint * interval '1 microsecond')"
#define LIST_INF   "'infinity'::timestamptz"

static const struct list_order {
	const char *sort;  /* ?sort= */
	const char *order; /* ?order= */
	const char *tag;   /* its cursors' prefix; "" for the default */
	enum list_key key; /* how its cursors hold the sort key */
	const char *out;   /* SQL: the sort key a row gives out */
	const char *by;    /* SQL: the index's expression, ordered by */
	const char *after; /* SQL: a cursor's key as a value of by, from $# */
	int desc;          /* descending */
} list_orders[] = {
    {"created_at", "asc", "", LIST_KEY_US, LIST_US("created_at"), "created_at",
        LIST_AT, 0},
    {"created_at", "desc", "cd", LIST_KEY_US, LIST_US("created_at"),
        "created_at", LIST_AT, 1},
    {"name", "asc", "na", LIST_KEY_NAME, "name", "name", "$#::text", 0},
    {"name", "desc", "nd", LIST_KEY_NAME, "name", "name", "$#::text", 1},
    {"next_run_at", "asc", "ra", LIST_KEY_NEXT, LIST_US("next_run_at"),
        "coalesce(next_run_at, " LIST_INF ")",
        "coalesce(" LIST_AT ", " LIST_INF ")", 0},
    {"next_run_at", "desc", "rd", LIST_KEY_NEXT, LIST_US("next_run_at"),
        "coalesce(next_run_at, " LIST_INF ")",
        "coalesce(" LIST_AT ", " LIST_INF ")", 1},
};
#define LIST_ORDERS (sizeof(list_orders) / sizeof(list_orders[0]))

/* Writes row's sort key as order o's cursors hold it. */
static void
put_cursor_key(FILE *fp, const struct list_order *o, const char *key)
{
	if (key == NULL) /* a next run of none: "" */
		return;
	if (o->key != LIST_KEY_NAME) {
		fputs(key, fp);
		return;
	}
	for (const unsigned char *c = (const unsigned char *)key; *c; c++)
		fprintf(fp, "%02x", *c);
}

/*
 * A page of GET /schedules in order o from rows (limit + 1 of them at
 * most: the last says there is a next page), written out as text: the
 * kept documents are not parsed (issue 22: lists read, not built).  0 or
 * -1.
 */
static int
list_page(struct response *rs, struct db_rows *rows, int64_t limit, int masked,
    const struct list_order *o)
{
	int n = db_rows_count(rows);
	char *buf = NULL;
	size_t len = 0;
	FILE *fp;
	int r = 0;

	if ((fp = open_memstream(&buf, &len)) == NULL)
		return -1;
	fputs("{\"schedules\":[", fp);
	for (int i = 0; i < n && i < limit && r == 0; i++) {
		if (i > 0)
			fputc(',', fp);
		r = put_item(fp, rows, i, masked);
	}
	fputc(']', fp);
	if (n > limit) {
		fprintf(fp, ",\"next_cursor\":\"%s%s", o->tag,
		    o->tag[0] ? "." : "");
		put_cursor_key(
		    fp, o, db_rows_value(rows, (int)limit - 1, ITEM_KEY));
		fprintf(fp, "_%s\"",
		    db_rows_value(rows, (int)limit - 1, API_LISTED_COL_ID));
	}
	fputc('}', fp);
	if (fclose(fp) != 0 || r == -1) {
		free(buf);
		return -1;
	}
	return api_raw(rs, 200, buf);
}

/* ?sort= and ?order= into *out; 1 after answering 400. */
static int
list_order_of(
    const char *query, const struct list_order **out, struct response *rs)
{
	static const char *const sorts[] = {
	    "created_at", "name", "next_run_at", NULL};
	static const char *const orders[] = {"asc", "desc", NULL};
	char sort[64] = "created_at", order[64] = "asc";

	if (query_get(query, "sort", sort, sizeof(sort)) == -1)
		return api_error(rs, 400, "invalid_query", "sort",
		           "bad encoding or too long"),
		       1;
	if (query_get(query, "order", order, sizeof(order)) == -1)
		return api_error(rs, 400, "invalid_query", "order",
		           "bad encoding or too long"),
		       1;
	if (bad_enum("sort", sort, sorts, rs) ||
	    bad_enum("order", order, orders, rs))
		return 1;
	for (size_t i = 0; i < LIST_ORDERS; i++)
		if (strcmp(list_orders[i].sort, sort) == 0 &&
		    strcmp(list_orders[i].order, order) == 0) {
			*out = &list_orders[i];
			return 0;
		}
	abort(); /* every sort has both orders */
}

/* The value of a lower-case hex digit. */
static int
nibble(char c)
{
	return c <= '9' ? c - '0' : c - 'a' + 10;
}

/*
 * The sort key of a cursor (text of klen bytes at k) into key
 * (API_LIST_CURSOR_MAX bytes) as order o's statement takes it: µs since the
 * epoch (a next run's "" stays "", for none), or the name decoded from hex. 0,
 * or -1 when it is not such a key.
 */
static int
cursor_key(const struct list_order *o, const char *k, size_t klen, char *key)
{
	/* No sign: an instant before 1970 is no schedule's, and a key
	 * PostgreSQL cannot hold as a timestamp would be a 500, not a 400;
	 * 18 digits are at most the year 33658. */
	size_t digits = klen;

	if (o->key == LIST_KEY_NAME) {
		if (klen == 0 || klen % 2 != 0 || klen > 200 * 4 * 2 ||
		    strspn(k, "0123456789abcdef") < klen)
			return -1;
		for (size_t i = 0; i < klen / 2; i++)
			if ((key[i] = (char)(nibble(k[2 * i]) << 4 |
			         nibble(k[2 * i + 1]))) == '\0')
				return -1;
		key[klen / 2] = '\0';
		return utf8_valid(key, klen / 2) && utf8_chars(key) <= 200 ? 0
		                                                           : -1;
	}
	if (klen == 0 && o->key == LIST_KEY_NEXT) {
		key[0] = '\0';
		return 0;
	}
	if (digits == 0 || digits > 18 ||
	    strspn(k + (klen - digits), "0123456789") < digits)
		return -1;
	memcpy(key, k, klen);
	key[klen] = '\0';
	return 0;
}

/*
 * Reads ?cursor= of order o into key (API_LIST_CURSOR_MAX bytes, see
 * cursor_key()) and id (API_ID_LEN + 1 bytes); both "" without one.  1
 * after answering 400: not a cursor this API gave out, or one made for
 * another order.
 */
static int
list_cursor(const char *query, const struct list_order *o, char *key, char *id,
    struct response *rs)
{
	char buf[API_LIST_CURSOR_MAX + 1], *us, *k = buf;
	const char *tag = "";
	int r = query_get(query, "cursor", buf, sizeof(buf));
	int known = 0;

	key[0] = id[0] = '\0';
	if (r == 0)
		return 0;
	/* "<tag>.<key>_<id>", or "<key>_<id>" (the default order's) */
	if (r == 1 && (us = strrchr(buf, '_')) != NULL &&
	    api_parse_id(us + 1, id) == 0) {
		*us = '\0';
		if ((k = strchr(buf, '.')) != NULL) {
			*k++ = '\0';
			tag = buf;
		} else
			k = buf;
		/* a tag, or none with no '.' (".<key>" is no cursor) */
		for (size_t i = 0; i < LIST_ORDERS && (tag[0] || k == buf); i++)
			known |= strcmp(list_orders[i].tag, tag) == 0;
		if (known && strcmp(tag, o->tag) != 0)
			return api_error(rs, 400, "invalid_query", "cursor",
			           "a cursor of another sort or order than "
			           "sort=%s&order=%s",
			           o->sort, o->order),
			       1;
		if (known && cursor_key(o, k, strlen(k), key) == 0)
			return 0;
	}
	key[0] = id[0] = '\0';
	api_error(rs, 400, "invalid_query", "cursor",
	    "not a cursor this API gave out");
	return 1;
}

/*
 * The filters of GET /schedules into p[0..7) (NULL: none): status, kind,
 * workflow_id, name (a prefix), owner, q (a substring of the name), and
 * target_type, in val (7 buffers of 1024 bytes).  1 after answering.
 */
static int
list_filters(
    struct request *rq, struct response *rs, char val[][1024], const char **p)
{
	static const char *const statuses[] = {
	    "active", "paused", "done", "dead", NULL};
	static const char *const kinds[] = {"interval", "cron", "once", NULL};
	static const char *const types[] = {
	    "exec", "http", "redis", "agent", "pipeline", "receiver", NULL};
	static const char *const names[] = {"status", "kind", "workflow_id",
	    "name", "owner", "q", "target_type"};
	int r;

	for (int i = 0; i < 7; i++) {
		if ((r = query_get(rq->query, names[i], val[i], 1024)) == -1)
			return api_error(rs, 400, "invalid_query", names[i],
			           "bad encoding or too long"),
			       1;
		p[i] = r ? val[i] : NULL;
	}
	if ((p[0] && bad_enum("status", p[0], statuses, rs)) ||
	    (p[1] && bad_enum("kind", p[1], kinds, rs)) ||
	    (p[6] && bad_enum("target_type", p[6], types, rs)))
		return 1;
	if (p[5] && (p[5][0] == '\0' || utf8_chars(p[5]) > 200))
		return api_error(rs, 400, "invalid_query", "q",
		           "a search is 1 to 200 characters"),
		       1;
	if (p[4] && rq->who.role != ROLE_ADMIN)
		return api_error(rs, 403, "forbidden", "owner",
		           "only an admin may list another owner's schedules"),
		       1;
	if (p[4] == NULL)
		p[4] = api_scope(rq);
	return 0;
}

/*
 * The conditions of GET /schedules' filters, in list_filters()' order,
 * each on the parameter $# (put_param()): the owner's is the first column of
 * the order's index; the search, q, is a LIKE pattern on the lowered name (the
 * trigram index of 022_console.sql when there is one); a schedule without a
 * target is the receiver's.
 */
static const char *const list_conds[LIST_FILTERS] = {
    "status = $#",
    "kind = $#",
    "workflow_id = $#",
    "starts_with(name, $#)",
    "owner = $#",
    "lower(name) LIKE lower($#)",
    "coalesce(nullif(target, 'null'::jsonb) ->> 'type', 'receiver') = $#",
};

/* Writes the SQL text sql, its one "$#" as the parameter $n. */
static void
put_param(FILE *fp, const char *sql, int n)
{
	const char *at = strstr(sql, "$#");

	fprintf(fp, "%.*s$%d%s", (int)(at - sql), sql, n, at + 2);
}

/* The substring s as a LIKE pattern into out (2 * strlen(s) + 3 bytes):
 * its %, _ and \ literal. */
static void
like_pattern(const char *s, char *out)
{
	*out++ = '%';
	for (; *s; s++) {
		if (*s == '%' || *s == '_' || *s == '\\')
			*out++ = '\\';
		*out++ = *s;
	}
	*out++ = '%';
	*out = '\0';
}

/*
 * The statement of q into q->sql, and its parameters into q->p and q->np:
 * api_schedule_list's columns and the order's key, then the conditions of
 * the filters given only, and the cursor's when there is one.  A plan
 * that PostgreSQL keeps for a statement (a generic plan, after a
 * connection's fifth run of it) is made without the parameters' values:
 * a condition written for "a value or none" ($1 IS NULL OR status = $1)
 * could neither be an index's nor be estimated, and such a plan sorted
 * every row of the owner on each page.  These statements hold what their
 * conditions are, and keep the keyset scan of the order's index however
 * they are planned (tests/api_list.sh asks PostgreSQL for the generic
 * plan).  q->once tells one with a filter besides the owner: not kept
 * prepared (schedules_list()).  $1 is whether documents are masked, $2
 * the rows to read.  -1 when it does not fit (it always does: the sizes
 * are fixed).
 */
static int
list_sql(struct list_query *q, int masked)
{
	const struct list_order *o = q->order;
	FILE *fp = fmemopen(q->sql, sizeof(q->sql), "w");
	int r;

	if (fp == NULL)
		return -1;
	q->np = 0;
	q->once = 0;
	q->p[q->np++] = masked ? "true" : "false";
	q->p[q->np++] = q->lim;
	fprintf(fp, "%s, %s FROM schedules s WHERE deleted_at IS NULL",
	    SQL_api_schedule_list, o->out);
	for (int i = 0; i < LIST_FILTERS; i++) {
		if (q->f[i] == NULL)
			continue;
		q->p[q->np++] = q->f[i];
		q->once |= i != LIST_F_OWNER;
		fputs(" AND ", fp);
		put_param(fp, list_conds[i], q->np);
	}
	if (q->id[0] != '\0') {
		/* (by, id) > (the cursor's key, the cursor's id) */
		fprintf(fp, " AND (%s, id) %c (", o->by, o->desc ? '<' : '>');
		q->p[q->np++] = q->key[0] ? q->key : NULL; /* no next run */
		put_param(fp, o->after, q->np);
		q->p[q->np++] = q->id;
		fprintf(fp, ", $%d::uuid)", q->np);
	}
	fprintf(fp, " ORDER BY %s%s, id%s LIMIT $2", o->by,
	    o->desc ? " DESC" : "", o->desc ? " DESC" : "");
	r = ferror(fp) ? -1 : 0;
	if (fclose(fp) != 0)
		r = -1;
	return r == 0 && strnlen(q->sql, sizeof(q->sql)) < sizeof(q->sql) - 1
	    ? 0
	    : -1;
}

/*
 * What GET /schedules' query asks, read into q before any statement runs:
 * its statement and the statement's parameters (list_sql()).  0; 1 after
 * answering 400 or 403; -1 out of room (a 500).  tests/fuzz/fuzz_listquery.c
 * reads queries through it.
 */
int
schedules_list_query(
    struct request *rq, struct response *rs, struct list_query *q)
{
	static const char *const allowed[] = {"status", "kind", "workflow_id",
	    "name", "owner", "q", "target_type", "sort", "order", "limit",
	    "cursor", NULL};
	const struct list_order *o;

	memset(q, 0, sizeof(*q));
	if (query_check(rq->query, allowed, rs) == -1 ||
	    read_limit(rq->query, &q->limit, rs) ||
	    list_order_of(rq->query, &o, rs) ||
	    list_cursor(rq->query, o, q->key, q->id, rs) ||
	    list_filters(rq, rs, q->val, q->f))
		return 1;
	q->order = o;
	snprintf(q->lim, sizeof(q->lim), "%lld", (long long)q->limit + 1);
	if (q->f[LIST_F_Q] != NULL) {
		like_pattern(q->f[LIST_F_Q], q->like);
		q->f[LIST_F_Q] = q->like;
	}
	return list_sql(q, rq->who.role < ROLE_EDITOR);
}

/*
 * The cursor of q's order that points after the row of sort key key
 * (NULL: a next run of none) and id, into out (outlen bytes, at least
 * API_LIST_CURSOR_MAX + 1): as a page gives it out.  -1 when it does not
 * fit.
 */
int
schedules_list_cursor(const struct list_query *q, const char *key,
    const char *id, char *out, size_t outlen)
{
	const struct list_order *o = q->order;
	FILE *fp = fmemopen(out, outlen, "w");
	int r;

	if (fp == NULL)
		return -1;
	fprintf(fp, "%s%s", o->tag, o->tag[0] ? "." : "");
	put_cursor_key(fp, o, key);
	fprintf(fp, "_%s", id);
	r = ferror(fp) ? -1 : 0;
	if (fclose(fp) != 0)
		r = -1;
	return r == 0 && strnlen(out, outlen) < outlen ? 0 : -1;
}

/*
 * GET /schedules: the caller's schedules, filtered, in the order asked
 * (the oldest first by default), a page after the cursor.
 */
int
schedules_list(
    struct request *rq, struct response *rs, char *err, size_t errlen)
{
	struct list_query *q = malloc(sizeof(*q));
	struct db_rows *rows = NULL;
	int r;

	if (q == NULL)
		return -1;
	if ((r = schedules_list_query(rq, rs, q)) != 0) {
		free(q);
		return r == 1 ? 0 : -1;
	}
	/* A page of every owner's or one owner's is a statement of its
	 * order and cursor (24 in all), prepared as any; one with filters is
	 * one of many, each planned for its values (db_query_once()), so
	 * that no client fills a connection's statements with them. */
	rows = (q->once ? db_query_once : db_query)(
	    rq->db, q->sql, q->np, q->p, err, errlen);
	if (rows == NULL) {
		free(q);
		return API_DB_FAILED;
	}
	r = list_page(rs, rows, q->limit, rq->who.role < ROLE_EDITOR, q->order);
	db_rows_free(rows);
	free(q);
	return r;
}
