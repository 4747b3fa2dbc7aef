/*
 * datasource.c: seed 004's data-source strings, which expand a param into
 * one job per row of a table (docs/orchestration.md, "Fan-out"):
 *
 *   db:<table>:<filter>:<field>[?<options>]
 *
 * ds_parse() reads one into a struct ds_spec; ds_compile() turns a spec
 * into one parameterised SELECT over a registered table.  Security is the
 * point of the split: the string names a table and columns only as keys
 * into the registration the caller passes (struct ds_table), so every
 * identifier that reaches SQL comes from the registration, already
 * quoted, and every value from the string is a query parameter, cast to
 * the registered type of its column.  The JSON filter takes a documented
 * set of operators, nested DS_DEPTH_MAX deep at most, DS_NODES_MAX nodes
 * at most.  Pure: no database; jansson for the JSON.
 */
#include <ctype.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisor.h"

static int fail(char *err, size_t errlen, const char *fmt, ...) CV_PRINTF(3, 4);

static int
fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* 1 if s (n bytes) is a name: a letter or '_', then letters, digits, '_'. */
static int
name_ok(const char *s, size_t n)
{
	if (n == 0 || n > DS_NAME_MAX ||
	    !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return 0;
	return 1;
}

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/*
 * A copy of s (n bytes) with each %XX decoded; NULL for a malformed
 * escape, a NUL byte, or out of memory (*oom set).
 */
static char *
decode(const char *s, size_t n, int *oom)
{
	char *out = malloc(n + 1), *o = out;

	*oom = out == NULL;
	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '%') {
			*o++ = s[i];
			continue;
		}
		int h = i + 2 < n ? hexval((unsigned char)s[i + 1]) : -1;
		int l = i + 2 < n ? hexval((unsigned char)s[i + 2]) : -1;

		if (h < 0 || l < 0 || (h == 0 && l == 0)) {
			free(out);
			return NULL;
		}
		*o++ = (char)(h * 16 + l);
		i += 2;
	}
	*o = '\0';
	return out;
}

void
ds_spec_clear(struct ds_spec *d)
{
	free(d->value);
	json_decref(d->filter);
	memset(d, 0, sizeof(*d));
}

/* 1 if s looks like a data-source string (it starts with "db:"). */
int
ds_is_source(const char *s)
{
	return s != NULL && strncmp(s, "db:", 3) == 0;
}

/* Adds {column: value} (an equality of the query string) to d's filter. */
static int
add_equal(struct ds_spec *d, const char *col, const char *val, char *err,
    size_t errlen)
{
	json_t *cond = json_pack("{s:s}", col, val);

	if (cond == NULL || json_array_append_new(d->filter, cond) == -1)
		return fail(err, errlen, "out of memory");
	return 0;
}

/* Reads an integer option into *out, min..max. */
static int
int_option(const char *k, const char *v, int64_t min, int64_t max, int64_t *out,
    char *err, size_t errlen)
{
	char *end;
	long long x;

	if (*v == '\0' || !isdigit((unsigned char)*v))
		return fail(err, errlen,
		    "%s: expected an integer, not \"%.40s\"", k, v);
	x = strtoll(v, &end, 10);
	if (*end != '\0' || x < min || x > max)
		return fail(err, errlen, "%s: expected %lld to %lld", k,
		    (long long)min, (long long)max);
	*out = x;
	return 0;
}

/* The options after '?': key=value pairs joined by '&'. */
static int
options(struct ds_spec *d, const char *s, char *err, size_t errlen)
{
	json_error_t je;
	json_t *f;
	int oom, r = 0;

	while (*s && r == 0) {
		size_t n = strcspn(s, "&"), kn = strcspn(s, "=");
		char *k, *v;

		if (kn >= n)
			return fail(err, errlen,
			    "option \"%.*s\": expected key=value",
			    (int)(n > 40 ? 40 : n), s);
		k = decode(s, kn, &oom);
		v = decode(s + kn + 1, n - kn - 1, &oom);
		if (k == NULL || v == NULL)
			r = oom ? fail(err, errlen, "out of memory")
			        : fail(err, errlen,
			              "option \"%.*s\": a malformed %%-escape",
			              (int)(n > 40 ? 40 : n), s);
		else if (strcmp(k, "batchSize") == 0) {
			r = int_option(
			    k, v, 1, DS_BATCH_MAX, &d->batch_size, err, errlen);
		} else if (strcmp(k, "staggerDelay") == 0) {
			r = int_option(k, v, 0, DS_STAGGER_MAX, &d->stagger_ms,
			    err, errlen);
		} else if (strcmp(k, "maxFailures") == 0) {
			r = int_option(k, v, 0, DS_FAILURES_MAX,
			    &d->max_failures, err, errlen);
		} else if (strcmp(k, "maxFailuresPercent") == 0) {
			r = int_option(
			    k, v, 0, 100, &d->max_failures_pct, err, errlen);
		} else if (strcmp(k, "filter") == 0) {
			if (strlen(v) > DS_FILTER_BYTES)
				r = fail(err, errlen,
				    "filter: at most %d bytes",
				    DS_FILTER_BYTES);
			else if ((f = json_loads(
			              v, JSON_REJECT_DUPLICATES, &je)) == NULL)
				r = fail(err, errlen, "filter: not JSON: %s",
				    je.text);
			else if (!json_is_object(f)) {
				json_decref(f);
				r = fail(err, errlen,
				    "filter: expected a JSON object");
			} else if (json_array_append_new(d->filter, f) == -1)
				r = fail(err, errlen, "out of memory");
		} else if (!name_ok(k, strlen(k)))
			r = fail(err, errlen,
			    "option \"%.40s\": not a column name, batchSize, "
			    "staggerDelay, maxFailures, maxFailuresPercent or "
			    "filter",
			    k);
		else
			r = add_equal(d, k, v, err, errlen);
		free(k);
		free(v);
		s += n;
		if (*s == '&')
			s++;
	}
	return r;
}

/*
 * Parses data-source string s into *d (which need not be initialised):
 * 0, or -1 with err saying what is wrong (d cleared).  The field is what
 * follows the last ':' before the options, so that a filter value may
 * hold ':' (a time, a URN); a '?' or '&' in a value is written %3F, %26.
 * The query string's equalities and its JSON filter end up in d->filter,
 * an array of filter objects that must all hold.
 */
int
ds_parse(const char *s, struct ds_spec *d, char *err, size_t errlen)
{
	static const char form[] =
	    "expected db:<table>:<filter>:<field>[?options]";
	const char *p, *end, *c1, *c3 = NULL, *q;
	size_t n = strlen(s), tn, vn, fn;
	int oom;

	memset(d, 0, sizeof(*d));
	d->batch_size = -1; /* the configured defaults */
	d->stagger_ms = -1;
	d->max_failures = -1; /* no tolerance: partial whatever the count */
	d->max_failures_pct = -1;
	if (n > DS_STRING_MAX)
		return fail(err, errlen, "longer than %d bytes", DS_STRING_MAX);
	if (!ds_is_source(s))
		return fail(err, errlen, "%s", form);
	p = s + 3;
	q = strchr(p, '?');
	end = q ? q : s + n;
	if ((c1 = memchr(p, ':', (size_t)(end - p))) == NULL)
		return fail(err, errlen, "%s", form);
	for (const char *x = c1 + 1; x < end; x++)
		if (*x == ':')
			c3 = x;
	if (c3 == NULL)
		return fail(err, errlen, "%s", form);
	tn = (size_t)(c1 - p);
	vn = (size_t)(c3 - c1 - 1);
	fn = (size_t)(end - c3 - 1);
	if (!name_ok(p, tn))
		return fail(err, errlen,
		    "table \"%.*s\": expected a name (a letter or _, then "
		    "letters, digits and _; %d at most)",
		    (int)(tn > 64 ? 64 : tn), p, DS_NAME_MAX);
	if (!name_ok(c3 + 1, fn))
		return fail(err, errlen,
		    "field \"%.*s\": expected a column name (a letter or _, "
		    "then letters, digits and _; %d at most)",
		    (int)(fn > 64 ? 64 : fn), c3 + 1, DS_NAME_MAX);
	memcpy(d->table, p, tn);
	memcpy(d->field, c3 + 1, fn);
	if (vn == 0)
		return fail(
		    err, errlen, "the filter is empty: all, or a value");
	if (vn == 3 && memcmp(c1 + 1, "all", 3) == 0)
		d->all = 1;
	else if ((d->value = decode(c1 + 1, vn, &oom)) == NULL)
		return fail(err, errlen, "%s",
		    oom ? "out of memory"
		        : "the filter value: a malformed %-escape");
	if ((d->filter = json_array()) == NULL) {
		ds_spec_clear(d);
		return fail(err, errlen, "out of memory");
	}
	if (q && options(d, q + 1, err, errlen) == -1) {
		ds_spec_clear(d);
		return -1;
	}
	return 0;
}

/* --- the query -------------------------------------------------------------
 */

/* What ds_compile() builds as it goes. */
struct build {
	const struct ds_table *t;
	char *sql;         /* the text so far */
	size_t len, cap;   /* its length and room */
	char **params;     /* the values, $1.. */
	int nparams, capp; /* in use and room */
	int nodes;         /* filter nodes read */
	char *err;         /* the caller's message buffer */
	size_t errlen;     /* its size */
};

static int put(struct build *b, const char *fmt, ...) CV_PRINTF(2, 3);

/* Appends formatted text to the query; -1 out of memory. */
static int
put(struct build *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->sql ? b->sql + b->len : NULL,
		    b->sql ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return fail(b->err, b->errlen, "out of memory");
		if (b->sql && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return 0;
		}
		size_t cap = (b->cap ? b->cap * 2 : 256) + (size_t)n;
		char *s = realloc(b->sql, cap);

		if (s == NULL)
			return fail(b->err, b->errlen, "out of memory");
		b->sql = s;
		b->cap = cap;
	}
}

/* The registered column named name, or NULL. */
static const struct ds_column *
column(const struct ds_table *t, const char *name)
{
	for (int i = 0; i < t->ncolumns; i++)
		if (strcmp(t->columns[i].name, name) == 0)
			return &t->columns[i];
	return NULL;
}

/* A new parameter of text v: appends "CAST($n AS type)". */
static int
param(struct build *b, const struct ds_column *c, const char *v)
{
	char *copy;

	if (b->nparams >= DS_PARAMS_MAX)
		return fail(b->err, b->errlen, "filter: more than %d values",
		    DS_PARAMS_MAX);
	if (strlen(v) > DS_VALUE_MAX)
		return fail(b->err, b->errlen,
		    "filter: a value of more than %d bytes", DS_VALUE_MAX);
	if (b->nparams == b->capp) {
		int cap = b->capp ? b->capp * 2 : 8;
		char **p = realloc(b->params, (size_t)cap * sizeof(*p));

		if (p == NULL)
			return fail(b->err, b->errlen, "out of memory");
		b->params = p;
		b->capp = cap;
	}
	if ((copy = strdup(v)) == NULL)
		return fail(b->err, b->errlen, "out of memory");
	b->params[b->nparams++] = copy;
	return put(b, "CAST($%d AS %s)", b->nparams, c->type);
}

/* A scalar's text as a parameter: a string as is, a number, a boolean. */
static int
scalar(struct build *b, const struct ds_column *c, json_t *v, const char *where)
{
	char num[64];

	if (json_is_string(v))
		return param(b, c, json_string_value(v));
	if (json_is_integer(v)) {
		snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
		    json_integer_value(v));
		return param(b, c, num);
	}
	if (json_is_real(v)) {
		snprintf(num, sizeof(num), "%.17g", json_real_value(v));
		return param(b, c, num);
	}
	if (json_is_boolean(v))
		return param(b, c, json_is_true(v) ? "true" : "false");
	return fail(b->err, b->errlen,
	    "filter: %s: expected a string, a number or a boolean", where);
}

static int cond(struct build *b, json_t *obj, int depth);

/*
 * Counts one more condition of the filter and joins it to the one
 * before (*first: none yet).  0, or -1 past DS_NODES_MAX.
 */
static int
next_cond(struct build *b, int *first)
{
	if (++b->nodes > DS_NODES_MAX)
		return fail(b->err, b->errlen,
		    "filter: more than %d conditions", DS_NODES_MAX);
	if (!*first && put(b, " AND ") == -1)
		return -1;
	*first = 0;
	return 0;
}

/* An operator object {"$gte": …, …} on column c (named name). */
static int
ops(struct build *b, const struct ds_column *c, const char *name, json_t *o)
{
	static const char *const cmp[][2] = {{"$eq", "="}, {"$ne", NULL},
	    {"$gt", ">"}, {"$gte", ">="}, {"$lt", "<"}, {"$lte", "<="}};
	const char *k;
	json_t *v;
	int first = 1;

	if (json_object_size(o) == 0)
		return fail(b->err, b->errlen,
		    "filter: %s: an empty operator object", name);
	json_object_foreach(o, k, v)
	{
		size_t i, n = sizeof(cmp) / sizeof(*cmp);

		if (next_cond(b, &first) == -1)
			return -1;
		for (i = 0; i < n && strcmp(k, cmp[i][0]) != 0; i++)
			;
		if (i < n && cmp[i][1] == NULL) { /* $ne: NULL is different */
			if (put(b, "%s IS DISTINCT FROM ", c->sql) == -1 ||
			    scalar(b, c, v, name) == -1)
				return -1;
		} else if (i < n) {
			if (put(b, "%s %s ", c->sql, cmp[i][1]) == -1 ||
			    scalar(b, c, v, name) == -1)
				return -1;
		} else if (strcmp(k, "$in") == 0 || strcmp(k, "$nin") == 0) {
			size_t j;
			json_t *x;

			if (!json_is_array(v))
				return fail(b->err, b->errlen,
				    "filter: %s.%s: expected an array", name,
				    k);
			if (json_array_size(v) == 0) {
				if (put(b, k[1] == 'i' ? "false" : "true") ==
				    -1)
					return -1;
				continue;
			}
			if (put(b,
			        k[1] == 'i' ? "%s IN ("
			                    : "(%s IS NULL OR %s NOT IN (",
			        c->sql, c->sql) == -1)
				return -1;
			json_array_foreach(v, j, x)
			{
				if ((j && put(b, ", ") == -1) ||
				    scalar(b, c, x, name) == -1)
					return -1;
			}
			if (put(b, k[1] == 'i' ? ")" : "))") == -1)
				return -1;
		} else if (strcmp(k, "$exists") == 0) {
			if (!json_is_boolean(v))
				return fail(b->err, b->errlen,
				    "filter: %s.$exists: expected true or false",
				    name);
			if (put(b, "%s IS %sNULL", c->sql,
			        json_is_true(v) ? "NOT " : "") == -1)
				return -1;
		} else
			return fail(b->err, b->errlen,
			    "filter: %s: unknown operator \"%.40s\" (expected "
			    "$eq, $ne, $gt, $gte, $lt, $lte, $in, $nin or "
			    "$exists)",
			    name, k);
	}
	return 0;
}

/* "$and" / "$or": an array of filter objects, joined by op. */
static int
logic(struct build *b, const char *k, json_t *v, const char *op, int depth)
{
	size_t i;
	json_t *x;

	if (!json_is_array(v) || json_array_size(v) == 0)
		return fail(b->err, b->errlen,
		    "filter: %s: expected a non-empty array of objects", k);
	if (put(b, "(") == -1)
		return -1;
	json_array_foreach(v, i, x)
	{
		if ((i && put(b, " %s ", op) == -1) ||
		    cond(b, x, depth + 1) == -1)
			return -1;
	}
	return put(b, ")");
}

/* A filter object: every member must hold. */
static int
cond(struct build *b, json_t *obj, int depth)
{
	const char *k;
	json_t *v;
	int first = 1;

	if (depth > DS_DEPTH_MAX)
		return fail(b->err, b->errlen, "filter: nested deeper than %d",
		    DS_DEPTH_MAX);
	if (!json_is_object(obj))
		return fail(b->err, b->errlen, "filter: expected an object");
	if (json_object_size(obj) == 0)
		return put(b, "true");
	if (put(b, "(") == -1)
		return -1;
	json_object_foreach(obj, k, v)
	{
		const struct ds_column *c;

		if (next_cond(b, &first) == -1)
			return -1;
		if (strcmp(k, "$and") == 0 || strcmp(k, "$or") == 0) {
			if (logic(b, k, v, k[1] == 'a' ? "AND" : "OR", depth) ==
			    -1)
				return -1;
		} else if (strcmp(k, "$not") == 0) {
			if (put(b, "NOT ") == -1 || cond(b, v, depth + 1) == -1)
				return -1;
		} else if (k[0] == '$')
			return fail(b->err, b->errlen,
			    "filter: unknown operator \"%.40s\" (expected a "
			    "column, $and, $or or $not)",
			    k);
		else if ((c = column(b->t, k)) == NULL)
			return fail(b->err, b->errlen,
			    "filter: \"%.64s\" is not a registered column of "
			    "%s",
			    k, b->t->name);
		else if (json_is_null(v)) {
			if (put(b, "%s IS NULL", c->sql) == -1)
				return -1;
		} else if (json_is_object(v)) {
			if (depth + 1 > DS_DEPTH_MAX)
				return fail(b->err, b->errlen,
				    "filter: nested deeper than %d",
				    DS_DEPTH_MAX);
			if (ops(b, c, k, v) == -1)
				return -1;
		} else if (json_is_array(v))
			return fail(b->err, b->errlen,
			    "filter: %s: an array (use {\"$in\": [...]})", k);
		else if (put(b, "%s = ", c->sql) == -1 ||
		    scalar(b, c, v, k) == -1)
			return -1;
	}
	return put(b, ")");
}

void
ds_query_clear(struct ds_query *q)
{
	for (int i = 0; i < q->nparams; i++)
		free(q->params[i]);
	free(q->params);
	free(q->sql);
	memset(q, 0, sizeof(*q));
}

/*
 * The SELECT of spec d over registered table t: the field's values as
 * JSON text (to_jsonb), the rows where it is not NULL and every filter
 * holds (for a value rather than "all": the key column equals it), in
 * the key's order, limit + 1 rows at most (one more than may be expanded,
 * so that a table over the limit is told apart).  0 with *q filled (the
 * caller frees it with ds_query_clear()), or -1 with err naming the
 * column or the operator refused (q cleared).
 */
int
ds_compile(const struct ds_spec *d, const struct ds_table *t, int64_t limit,
    struct ds_query *q, char *err, size_t errlen)
{
	struct build b = {.t = t, .err = err, .errlen = errlen};
	const struct ds_column *f, *key;
	size_t i;
	json_t *x;

	memset(q, 0, sizeof(*q));
	if (strcmp(d->table, t->name) != 0)
		return fail(
		    err, errlen, "table \"%s\" is not registered", d->table);
	if ((f = column(t, d->field)) == NULL)
		return fail(err, errlen,
		    "field \"%s\": not a registered column of %s", d->field,
		    t->name);
	if ((key = column(t, t->key)) == NULL)
		return fail(err, errlen, "%s: its key column is not registered",
		    t->name);
	if (put(&b, "SELECT to_jsonb(%s)::text FROM %s WHERE %s IS NOT NULL",
	        f->sql, t->relation, f->sql) == -1)
		goto fail;
	if (!d->all &&
	    (put(&b, " AND %s = ", key->sql) == -1 ||
	        param(&b, key, d->value) == -1))
		goto fail;
	json_array_foreach(d->filter, i, x)
	{
		if (put(&b, " AND ") == -1 || cond(&b, x, 1) == -1)
			goto fail;
	}
	if (put(&b, " ORDER BY %s LIMIT %lld", key->sql,
	        (long long)limit + 1) == -1)
		goto fail;
	q->sql = b.sql;
	q->params = b.params;
	q->nparams = b.nparams;
	return 0;
fail:
	q->sql = b.sql;
	q->params = b.params;
	q->nparams = b.nparams;
	ds_query_clear(q);
	return -1;
}

/* --- the registration ---------------------------------------------------- */

/* 1 if s is a relation name: "table" or "schema.table", plain names. */
static int
relation_ok(const char *s)
{
	const char *dot = strchr(s, '.');

	if (dot == NULL)
		return name_ok(s, strlen(s));
	return name_ok(s, (size_t)(dot - s)) &&
	    name_ok(dot + 1, strlen(dot + 1));
}

/* A registered column: "name", or {"name": …, "column": …}. */
static json_t *
reg_column(json_t *v, size_t i, struct schedule_error *e)
{
	const char *name, *col, *k;
	char f[64];
	json_t *x;

	snprintf(f, sizeof(f), "columns[%zu]", i);
	if (json_is_string(v))
		name = col = json_string_value(v);
	else if (json_is_object(v)) {
		json_object_foreach(v, k, x)
		{
			if (strcmp(k, "name") && strcmp(k, "column")) {
				snprintf(
				    f, sizeof(f), "columns[%zu].%.20s", i, k);
				doc_fail(e, "unknown_field", f,
				    "not a member of a column");
				return NULL;
			}
		}
		name = json_string_value(json_object_get(v, "name"));
		col = json_string_value(json_object_get(v, "column"));
		if (col == NULL)
			col = name;
	} else {
		doc_fail(e, "invalid_field", f,
		    "expected a column name, or {\"name\", \"column\"}");
		return NULL;
	}
	if (name == NULL || !name_ok(name, strlen(name))) {
		doc_fail(e, "invalid_field", f,
		    "expected a name: a letter or _, then letters, digits and _ "
		    "(%d at most)",
		    DS_NAME_MAX);
		return NULL;
	}
	if (strlen(col) == 0 || strlen(col) > DS_NAME_MAX) {
		doc_fail(e, "invalid_field", f, "the column: 1 to %d bytes",
		    DS_NAME_MAX);
		return NULL;
	}
	return json_pack("{s:s, s:s}", "name", name, "column", col);
}

/*
 * A registration document (POST /data-sources): {"name", "relation",
 * "key", "columns", "owners", "description"}.  Returns it with every
 * member present (columns as [{"name", "column"}], owners [] for every
 * owner, description ""), or NULL with *e naming the member.  Whether the
 * relation and its columns exist, and may be read, is the API's to ask
 * the database.
 */
json_t *
ds_registration_parse(const char *json, size_t len, struct schedule_error *e)
{
	static const char *const members[] = {"name", "relation", "key",
	    "columns", "owners", "description", NULL};
	json_t *v, *out = NULL, *cols = NULL, *owners = NULL, *x;
	const char *k, *s;
	size_t i;

	if ((v = doc_load(json, len, e)) == NULL)
		return NULL;
	if (!json_is_object(v)) {
		doc_fail(e, "invalid_json", NULL, "expected an object");
		goto out;
	}
	json_object_foreach(v, k, x)
	{
		for (i = 0; members[i] && strcmp(members[i], k); i++)
			;
		if (members[i] == NULL) {
			doc_fail(e, "unknown_field", k,
			    "not a field of a data source");
			goto out;
		}
	}
	for (i = 0; i < 4; i++)
		if (json_object_get(v, members[i]) == NULL) {
			doc_fail(e, "missing_field", members[i], "required");
			goto out;
		}
	s = json_string_value(json_object_get(v, "name"));
	if (s == NULL || !name_ok(s, strlen(s))) {
		doc_fail(e, "invalid_field", "name",
		    "expected a name: a letter or _, then letters, digits and _ "
		    "(%d at most)",
		    DS_NAME_MAX);
		goto out;
	}
	s = json_string_value(json_object_get(v, "relation"));
	if (s == NULL || !relation_ok(s)) {
		doc_fail(e, "invalid_field", "relation",
		    "expected table or schema.table (plain names)");
		goto out;
	}
	x = json_object_get(v, "columns");
	if (!json_is_array(x) || json_array_size(x) == 0 ||
	    json_array_size(x) > DS_COLUMNS_MAX) {
		doc_fail(e, "invalid_field", "columns",
		    "expected an array of 1 to %d columns", DS_COLUMNS_MAX);
		goto out;
	}
	if ((cols = json_array()) == NULL)
		goto oom;
	for (i = 0; i < json_array_size(x); i++) {
		json_t *c = reg_column(json_array_get(x, i), i, e);
		char f[32];

		if (c == NULL)
			goto out;
		for (size_t j = 0; j < json_array_size(cols); j++)
			if (json_equal(json_object_get(
			                   json_array_get(cols, j), "name"),
			        json_object_get(c, "name"))) {
				json_decref(c);
				snprintf(f, sizeof(f), "columns[%zu]", i);
				doc_fail(e, "invalid_field", f,
				    "the name is registered twice");
				goto out;
			}
		if (json_array_append_new(cols, c) == -1)
			goto oom;
	}
	s = json_string_value(json_object_get(v, "key"));
	for (i = 0; s && i < json_array_size(cols); i++)
		if (strcmp(s,
		        json_string_value(json_object_get(
		            json_array_get(cols, i), "name"))) == 0)
			break;
	if (s == NULL || i == json_array_size(cols)) {
		doc_fail(e, "invalid_field", "key",
		    "expected the name of one of the columns");
		goto out;
	}
	x = json_object_get(v, "owners");
	if (x != NULL && (!json_is_array(x) || json_array_size(x) > 1000)) {
		doc_fail(e, "invalid_field", "owners",
		    "expected an array of at most 1000 owners ([]: every owner)");
		goto out;
	}
	if ((owners = json_array()) == NULL)
		goto oom;
	for (i = 0; i < json_array_size(x); i++) {
		const char *o = json_string_value(json_array_get(x, i));
		char f[32];

		snprintf(f, sizeof(f), "owners[%zu]", i);
		if (o == NULL || *o == '\0' || utf8_chars(o) > 200) {
			doc_fail(e, "invalid_field", f,
			    "an owner is 1 to 200 characters");
			goto out;
		}
		if (json_array_append(owners, json_array_get(x, i)) == -1)
			goto oom;
	}
	x = json_object_get(v, "description");
	if (x != NULL && !json_is_null(x) &&
	    (!json_is_string(x) || utf8_chars(json_string_value(x)) > 10000)) {
		doc_fail(e, "invalid_field", "description",
		    "expected at most 10000 characters");
		goto out;
	}
	out = json_pack("{s:O, s:O, s:O, s:O, s:O, s:s}", "name",
	    json_object_get(v, "name"), "relation",
	    json_object_get(v, "relation"), "key", json_object_get(v, "key"),
	    "columns", cols, "owners", owners, "description",
	    json_is_string(x) ? json_string_value(x) : "");
	if (out != NULL)
		goto out;
oom:
	doc_fail(e, "internal", NULL, "out of memory");
out:
	json_decref(cols);
	json_decref(owners);
	json_decref(v);
	return out;
}

/*
 * The registered table name (relation its quoted name, key its key
 * column's name) from columns, the registration's JSON array of
 * {name, sql, type}: t points into columns, c (DS_COLUMNS_MAX entries) and
 * the strings given, which must outlive it.  0, or -1 when columns is not
 * such an array.
 */
int
ds_table_load(struct ds_table *t, struct ds_column *c, const char *name,
    const char *relation, const char *key, json_t *columns)
{
	size_t i;
	json_t *x;

	t->name = name;
	t->relation = relation;
	t->key = key;
	t->columns = c;
	t->ncolumns = 0;
	if (!json_is_array(columns) || name == NULL || relation == NULL ||
	    key == NULL)
		return -1;
	json_array_foreach(columns, i, x)
	{
		if (i >= DS_COLUMNS_MAX)
			return -1;
		c[i].name = json_string_value(json_object_get(x, "name"));
		c[i].sql = json_string_value(json_object_get(x, "sql"));
		c[i].type = json_string_value(json_object_get(x, "type"));
		if (!c[i].name || !c[i].sql || !c[i].type)
			return -1;
		t->ncolumns++;
	}
	return 0;
}
