/*
 * table.c: how the API commands show JSON to people: aligned tables with
 * a header row (schedules list, runs list, token list) and aligned
 * "key: value" listings (schedules get, runs show).  Everything here
 * prints; nothing here knows which document it prints, so the commands
 * only choose columns.  Names, descriptions and outputs are the users'
 * text, so every control character in what is shown is written out
 * (text_escape(): ESC as \x1b, a carriage return as \r): nothing a user
 * wrote can move an operator's cursor or drive the terminal.  --json
 * prints the API's JSON untouched, where JSON's own escapes do the same.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisorctl.h"

#define TABLE_GAP "  " /* between two columns */

/* Rows of text cells; row 0 is the header. */
struct table {
	size_t ncols; /* cells per row */
	size_t nrows; /* rows stored, header included */
	size_t cap;   /* rows allocated */
	char **cells; /* nrows * ncols strings, owned */
};

/* The display width of UTF-8 text: its code points, not its bytes. */
static size_t
table_width(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			n++;
	return n;
}

/*
 * A copy of s (len bytes, or up to its NUL when len is SIZE_MAX) with
 * its control characters other than those in keep escaped
 * (text_escape()); the caller frees it.  Fatal on OOM.
 */
static char *
table_escape(const char *s, size_t len, const char *keep)
{
	char *raw = strndup(s, len), *c;
	size_t n;

	if (raw == NULL)
		fatal("strndup");
	n = text_escape(raw, keep, NULL, 0);
	if ((c = malloc(n + 1)) == NULL)
		fatal("malloc");
	text_escape(raw, keep, c, n + 1);
	free(raw);
	return c;
}

/*
 * A copy of s with tabs and line ends turned into spaces and the other
 * control characters escaped; fatal on OOM.
 */
static char *
table_cell(const char *s)
{
	char *c = strdup(s ? s : "-"), *e;

	if (c == NULL)
		fatal("strdup");
	for (char *p = c; *p; p++)
		if (*p == '\n' || *p == '\r' || *p == '\t')
			*p = ' ';
	e = table_escape(c, SIZE_MAX, NULL);
	free(c);
	return e;
}

/* Prints lead, then s (len bytes at most) with tabs kept, then a newline. */
static void
table_put(FILE *fp, const char *lead, const char *s, size_t len)
{
	char *e = table_escape(s, len, "\t");

	fprintf(fp, "%s%s\n", lead, e);
	free(e);
}

/*
 * Makes a table with ncols columns named headers[0..ncols-1] (copied).
 * Never returns NULL: a table the size of a listing failing to allocate
 * is fatal.
 */
struct table *
table_new(const char *const *headers, size_t ncols)
{
	struct table *t = calloc(1, sizeof(*t));

	if (t == NULL)
		fatal("calloc");
	t->ncols = ncols;
	table_add(t, headers);
	return t;
}

/* Adds one row of ncols cells (copied; NULL shows as "-"). */
void
table_add(struct table *t, const char *const *cells)
{
	if (t->nrows == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		char **p = reallocarray(t->cells, cap * t->ncols, sizeof(*p));

		if (p == NULL)
			fatal("reallocarray");
		t->cells = p;
		t->cap = cap;
	}
	for (size_t i = 0; i < t->ncols; i++)
		t->cells[t->nrows * t->ncols + i] = table_cell(cells[i]);
	t->nrows++;
}

/* Prints the table, each column as wide as its widest cell. */
void
table_print(const struct table *t, FILE *fp)
{
	size_t *w = calloc(t->ncols, sizeof(*w));

	if (w == NULL)
		fatal("calloc");
	for (size_t r = 0; r < t->nrows; r++)
		for (size_t c = 0; c < t->ncols; c++) {
			size_t n = table_width(t->cells[r * t->ncols + c]);
			if (n > w[c])
				w[c] = n;
		}
	for (size_t r = 0; r < t->nrows; r++) {
		for (size_t c = 0; c < t->ncols; c++) {
			const char *s = t->cells[r * t->ncols + c];
			if (c + 1 == t->ncols) {
				fprintf(fp, "%s\n", s);
				break;
			}
			fprintf(fp, "%s%*s" TABLE_GAP, s,
			    (int)(w[c] - table_width(s)), "");
		}
	}
	free(w);
}

/* Frees the table and its cells; NULL is fine. */
void
table_free(struct table *t)
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t);
}

/*
 * The text of one JSON value for a cell: "-" for a missing value or null,
 * a string as it is (pointing into v), numbers and booleans written into
 * buf, objects and arrays as compact JSON cut to fit buf.
 */
const char *
table_text(const json_t *v, char *buf, size_t len)
{
	char *s;

	if (v == NULL || json_is_null(v))
		return "-";
	if (json_is_string(v))
		return json_string_value(v);
	if (json_is_integer(v))
		snprintf(
		    buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, len, "%g", json_real_value(v));
	else if (json_is_boolean(v))
		snprintf(buf, len, "%s", json_is_true(v) ? "true" : "false");
	else if ((s = json_dumps(v, JSON_COMPACT)) != NULL) {
		snprintf(buf, len, "%s", s);
		free(s);
	} else
		snprintf(buf, len, "?");
	return buf;
}

/*
 * Prints one key of table_kv() (key holds its colon): multi-line text and
 * non-empty lists go on indented lines of their own (strings as they are,
 * anything else as compact JSON), everything else after the key.
 */
static void
table_kv_one(const char *key, const json_t *v, int width, FILE *fp)
{
	char buf[1024], lead[160], *s;
	const json_t *e;
	size_t i;

	snprintf(lead, sizeof(lead), "%-*s ", width, key);
	if (json_is_string(v) && strchr(json_string_value(v), '\n')) {
		fprintf(fp, "%s\n", key);
		for (const char *p = json_string_value(v); *p;) {
			size_t n = strcspn(p, "\n");
			table_put(fp, "    ", p, n);
			p += n + (p[n] == '\n');
		}
	} else if (json_is_array(v) && json_array_size(v) > 0) {
		fprintf(fp, "%s\n", key);
		json_array_foreach(v, i, e)
		{
			table_put(fp, "    ", table_text(e, buf, sizeof(buf)),
			    SIZE_MAX);
		}
	} else if (json_is_object(v) || json_is_array(v)) {
		s = json_dumps(v, JSON_COMPACT);
		table_put(fp, lead, s ? s : "?", SIZE_MAX);
		free(s);
	} else
		table_put(fp, lead, table_text(v, buf, sizeof(buf)), SIZE_MAX);
}

/*
 * Prints a JSON object as "key: value" lines, values aligned: first the
 * keys of order (a NULL-terminated list; NULL: none) that obj has, in
 * that order, then the others in the object's own order.  Keys whose
 * value is null or "" are left out (they are the unset fields of another
 * kind, mostly); nested objects show as compact JSON.
 */
void
table_kv(const json_t *obj, const char *const *order, FILE *fp)
{
	char key[128];
	const char *k;
	json_t *v, *sorted = json_object();
	int width = 0;

	if (sorted == NULL)
		fatalx("json_object");
	for (size_t i = 0; order != NULL && order[i] != NULL; i++)
		if ((v = json_object_get(obj, order[i])) != NULL)
			json_object_set(sorted, order[i], v);
	json_object_foreach((json_t *)obj, k, v)
	{
		if (json_object_get(sorted, k) == NULL)
			json_object_set(sorted, k, v);
		if ((int)strlen(k) + 1 > width)
			width = (int)strlen(k) + 1;
	}
	json_object_foreach(sorted, k, v)
	{
		if (json_is_null(v) ||
		    (json_is_string(v) && json_string_length(v) == 0))
			continue;
		snprintf(key, sizeof(key), "%s:", k);
		table_kv_one(key, v, width, fp);
	}
	json_decref(sorted);
}

/*
 * Writes a number of seconds the way people write durations ("5m",
 * "1h30m", "2d", "0s") into buf; returns buf.
 */
const char *
table_duration(int64_t seconds, char *buf, size_t len)
{
	static const struct {
		int64_t secs; /* seconds in one unit */
		char unit;    /* its letter */
	} units[] = {{86400, 'd'}, {3600, 'h'}, {60, 'm'}, {1, 's'}};
	size_t off = 0;

	buf[0] = '\0';
	if (seconds <= 0) {
		snprintf(buf, len, "%llds", (long long)seconds);
		return buf;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		int64_t n = seconds / units[i].secs;
		if (n == 0 || off >= len)
			continue;
		off += snprintf(buf + off, len - off, "%lld%c", (long long)n,
		    units[i].unit);
		seconds %= units[i].secs;
	}
	return buf;
}
