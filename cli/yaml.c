/*
 * yaml.c: YAML read as JSON, for the files of cronvisorctl apply.  libyaml
 * parses; this turns its events into jansson values.  Plain scalars are
 * resolved as YAML 1.2's core schema does (null, true/false, integers,
 * floats; "yes", "no" and "on" stay strings), quoted and block scalars
 * are strings, and the explicit tags !!str, !!int, !!float, !!bool and
 * !!null are honoured; other tags, complex keys and the .inf and .nan
 * floats (JSON has none) are refused.  Anchors and aliases work; what
 * aliases expand to counts against a limit of nodes, so that a small file
 * cannot expand into a huge body ("billion laughs").  Mapping keys must be
 * unique, as in the JSON the API reads.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "cronvisor.h"
#include "yaml_json.h"

#define YJ_DEPTH_MAX   64       /* nesting of collections */
#define YJ_NODES_MAX   1000000  /* nodes, aliases expanded */
#define YJ_BYTES_MAX   67108864 /* bytes of scalars, aliases expanded */
#define YJ_ANCHORS_MAX 10000    /* anchors in one document */
#define TAG            "tag:yaml.org,2002:"

struct yj_frame {
	json_t *node;  /* the mapping or sequence being filled */
	char *key;     /* a mapping's key waiting for its value, or NULL */
	char *anchor;  /* the collection's anchor, or NULL */
	size_t nodes0; /* nodes counted when it started */
	size_t bytes0; /* bytes counted when it started */
	int height;    /* levels of collections below it */
};

struct yj_anchor {
	char *name;
	json_t *node;
	size_t nodes; /* nodes it expands to */
	size_t bytes; /* bytes of scalars it expands to */
	int height;   /* levels of collections: 0 for a scalar */
};

struct yj {
	struct yj_frame stack[YJ_DEPTH_MAX];
	int depth;
	struct yj_anchor *anchors;
	size_t nanchors;
	size_t nodes; /* counted so far, aliases expanded */
	size_t bytes; /* of scalars, counted so far, aliases expanded */
	json_t *docs; /* the documents read */
	json_t *root; /* the document being read */
	char *err;
	size_t errlen;
};

static int yj_fail(struct yj *y, const yaml_mark_t *m, const char *fmt, ...)
    CV_PRINTF(3, 4);

static int
yj_fail(struct yj *y, const yaml_mark_t *m, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(y->err, y->errlen, "line %zu, column %zu: %s", m->line + 1,
	    m->column + 1, msg);
	return -1;
}

/* Whether s matches the extended regular expression re (compiled once;
 * a process keeps at most YJ_RX of them). */
#define YJ_RX 8
static int
matches(const char *re, const char *s)
{
	static struct {
		const char *re;
		regex_t rx;
	} cache[YJ_RX];
	static int n;
	int i;

	for (i = 0; i < n && cache[i].re != re; i++)
		;
	if (i == n) {
		if (n == YJ_RX ||
		    regcomp(&cache[n].rx, re, REG_EXTENDED | REG_NOSUB) != 0)
			return 0;
		cache[n++].re = re;
	}
	return regexec(&cache[i].rx, s, 0, NULL, 0) == 0;
}

/* An integer of the core schema (decimal, 0o octal, 0x hex); NULL if s is
 * none or does not fit in 64 bits (*big set then). */
static json_t *
core_int(const char *s, int *big)
{
	int base = 10;
	const char *digits = s;
	long long v;
	char *end;

	if (matches("^0o[0-7]+$", s))
		base = 8, digits = s + 2;
	else if (matches("^0x[0-9a-fA-F]+$", s))
		base = 16, digits = s + 2;
	else if (!matches("^[-+]?[0-9]+$", s))
		return NULL;
	errno = 0;
	v = strtoll(digits, &end, base);
	if (errno == ERANGE || *end != '\0') {
		*big = 1;
		return NULL;
	}
	return json_integer((json_int_t)v);
}

/*
 * The JSON value of a scalar: tag (NULL: none given) and plain (an untagged
 * plain scalar) decide how value is read.  NULL with the error set.
 */
static json_t *
scalar(struct yj *y, const yaml_event_t *ev)
{
	const char *v = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	const char *tag = (const char *)ev->data.scalar.tag;
	int plain = ev->data.scalar.plain_implicit &&
	    ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	int big = 0;
	json_t *j;

	if (tag && strcmp(tag, "!") == 0)
		tag = TAG "str"; /* the non-specific tag of a quoted scalar */
	if (tag == NULL && !plain)
		tag = TAG "str";
	if (tag && strcmp(tag, TAG "str") == 0)
		return json_stringn(v, len);
	if (tag && strncmp(tag, TAG, strlen(TAG)) != 0)
		return yj_fail(y, &ev->start_mark, "unsupported tag %s", tag),
		       NULL;
	if (strlen(v) != len)
		return yj_fail(y, &ev->start_mark,
		           "a NUL character in a plain scalar"),
		       NULL;
	if ((!tag || strcmp(tag, TAG "null") == 0) &&
	    matches("^(~|null|Null|NULL|)$", v))
		return json_null();
	if ((!tag || strcmp(tag, TAG "bool") == 0) &&
	    matches("^(true|True|TRUE|false|False|FALSE)$", v))
		return json_boolean(v[0] == 't' || v[0] == 'T');
	if ((!tag || strcmp(tag, TAG "int") == 0) &&
	    (j = core_int(v, &big)) != NULL)
		return j;
	if (big)
		return yj_fail(
		           y, &ev->start_mark, "%s does not fit in 64 bits", v),
		       NULL;
	if ((!tag || strcmp(tag, TAG "float") == 0) &&
	    matches(
	        "^[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?$", v)) {
		double d = strtod(v, NULL);

		if (!isfinite(d))
			return yj_fail(y, &ev->start_mark,
			           "%s is out of the range of a double", v),
			       NULL;
		return json_real(d);
	}
	if (matches("^[-+]?\\.(inf|Inf|INF)$|^\\.(nan|NaN|NAN)$", v))
		return yj_fail(y, &ev->start_mark,
		           "%s: JSON has no infinite or NaN number", v),
		       NULL;
	if (tag)
		return yj_fail(y, &ev->start_mark,
		           "\"%s\" does not read as its tag says", v),
		       NULL;
	return json_stringn(v, len);
}

/* Forgets the anchors (a document's are its own). */
static void
anchors_clear(struct yj *y)
{
	for (size_t i = 0; i < y->nanchors; i++) {
		free(y->anchors[i].name);
		json_decref(y->anchors[i].node);
	}
	free(y->anchors);
	y->anchors = NULL;
	y->nanchors = 0;
}

/* Remembers node under anchor name (taking name), of the size given. */
static int
anchor_set(struct yj *y, char *name, json_t *node, size_t nodes, size_t bytes,
    int height)
{
	struct yj_anchor *a;

	if (y->nanchors == YJ_ANCHORS_MAX) {
		free(name);
		snprintf(
		    y->err, y->errlen, "more than %d anchors", YJ_ANCHORS_MAX);
		return -1;
	}
	a = realloc(y->anchors, (y->nanchors + 1) * sizeof(*y->anchors));
	if (a == NULL) {
		free(name);
		snprintf(y->err, y->errlen, "out of memory");
		return -1;
	}
	y->anchors = a;
	a[y->nanchors].name = name;
	a[y->nanchors].node = json_incref(node);
	a[y->nanchors].nodes = nodes;
	a[y->nanchors].bytes = bytes;
	a[y->nanchors].height = height;
	y->nanchors++;
	return 0;
}

/* The latest anchor called name, or NULL. */
static struct yj_anchor *
anchor_get(struct yj *y, const char *name)
{
	for (size_t i = y->nanchors; i > 0; i--)
		if (strcmp(y->anchors[i - 1].name, name) == 0)
			return &y->anchors[i - 1];
	return NULL;
}

/*
 * Counts n more nodes and b more bytes, and a value height levels high in
 * the collection being filled; -1 past a limit.
 */
static int
count(struct yj *y, size_t n, size_t b, int height, const yaml_mark_t *m)
{
	if (n > YJ_NODES_MAX || (y->nodes += n) > YJ_NODES_MAX)
		return yj_fail(
		    y, m, "more than 1,000,000 nodes (aliases expanded)");
	if (b > YJ_BYTES_MAX || (y->bytes += b) > YJ_BYTES_MAX)
		return yj_fail(
		    y, m, "more than 64 MiB of text (aliases expanded)");
	if (y->depth + height > YJ_DEPTH_MAX)
		return yj_fail(y, m, "nested deeper than 64 levels");
	if (y->depth > 0 && y->stack[y->depth - 1].height < height)
		y->stack[y->depth - 1].height = height;
	return 0;
}

/*
 * Puts a finished value v (stolen) where it goes: the document's root, an
 * item of the sequence being filled, or the value of the pending key.
 */
static int
place(struct yj *y, json_t *v, const yaml_mark_t *m)
{
	struct yj_frame *f;
	int r;

	if (v == NULL)
		return y->err[0] ? -1 : yj_fail(y, m, "out of memory");
	if (y->depth == 0) {
		y->root = v;
		return 0;
	}
	f = &y->stack[y->depth - 1];
	if (json_is_array(f->node))
		return json_array_append_new(f->node, v) == 0
		    ? 0
		    : yj_fail(y, m, "out of memory");
	if (f->key == NULL) {
		json_decref(v);
		return yj_fail(y, m,
		    "a mapping key must be a scalar, not a collection or an "
		    "alias");
	}
	if (json_object_get(f->node, f->key) != NULL) {
		json_decref(v);
		r = yj_fail(y, m, "the key \"%s\" appears twice", f->key);
	} else
		r = json_object_set_new(f->node, f->key, v) == 0
		    ? 0
		    : yj_fail(y, m, "a key that is not UTF-8");
	free(f->key);
	f->key = NULL;
	return r;
}

/* Whether the next scalar is a mapping's key. */
static int
wants_key(const struct yj *y)
{
	const struct yj_frame *f =
	    y->depth > 0 ? &y->stack[y->depth - 1] : NULL;

	return f && json_is_object(f->node) && f->key == NULL;
}

/* A collection's tag, if it has one of its own, must be its kind's. */
static int
collection_tag(struct yj *y, const yaml_event_t *ev)
{
	int seq = ev->type == YAML_SEQUENCE_START_EVENT;
	const char *tag = (const char *)(seq ? ev->data.sequence_start.tag
	                                     : ev->data.mapping_start.tag);

	if (tag == NULL || strcmp(tag, seq ? TAG "seq" : TAG "map") == 0)
		return 0;
	return yj_fail(y, &ev->start_mark, "unsupported tag %s", tag);
}

static char *
dup_anchor(const yaml_char_t *a)
{
	return a ? strdup((const char *)a) : NULL;
}

/* One event; 0, 1 at the stream's end, -1 with the error set. */
static int
event(struct yj *y, yaml_event_t *ev)
{
	const yaml_mark_t *m = &ev->start_mark;
	struct yj_anchor *an;
	struct yj_frame *f;
	json_t *v;

	switch (ev->type) {
	case YAML_STREAM_END_EVENT:
		return 1;
	case YAML_DOCUMENT_END_EVENT:
		if (y->root == NULL)
			return 0;
		if (json_array_append_new(y->docs, y->root) == -1)
			return yj_fail(y, m, "out of memory");
		y->root = NULL;
		return 0;
	case YAML_DOCUMENT_START_EVENT:
		anchors_clear(y);
		return 0;
	case YAML_SCALAR_EVENT:
		if (count(y, 1, ev->data.scalar.length, 0, m) == -1)
			return -1;
		if (wants_key(y)) {
			f = &y->stack[y->depth - 1];
			if ((f->key =
			            strndup((const char *)ev->data.scalar.value,
			                ev->data.scalar.length)) == NULL)
				return yj_fail(y, m, "out of memory");
			if (strlen(f->key) != ev->data.scalar.length)
				return yj_fail(
				    y, m, "a NUL character in a key");
			return 0;
		}
		if ((v = scalar(y, ev)) == NULL)
			return y->err[0] ? -1 : yj_fail(y, m, "out of memory");
		if (ev->data.scalar.anchor &&
		    anchor_set(y, dup_anchor(ev->data.scalar.anchor), v, 1,
		        ev->data.scalar.length, 0) == -1) {
			json_decref(v);
			return -1;
		}
		return place(y, v, m);
	case YAML_ALIAS_EVENT:
		if ((an = anchor_get(y, (const char *)ev->data.alias.anchor)) ==
		    NULL)
			return yj_fail(y, m, "no anchor &%s before this alias",
			    (const char *)ev->data.alias.anchor);
		if (count(y, an->nodes, an->bytes, an->height, m) == -1)
			return -1;
		return place(y, json_incref(an->node), m);
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		if (wants_key(y))
			return yj_fail(y, m,
			    "a mapping key must be a scalar, not a "
			    "collection");
		if (collection_tag(y, ev) == -1 || count(y, 1, 0, 1, m) == -1)
			return -1;
		f = &y->stack[y->depth];
		memset(f, 0, sizeof(*f));
		f->node = ev->type == YAML_SEQUENCE_START_EVENT ? json_array()
		                                                : json_object();
		f->anchor = dup_anchor(ev->type == YAML_SEQUENCE_START_EVENT
		        ? ev->data.sequence_start.anchor
		        : ev->data.mapping_start.anchor);
		f->nodes0 = y->nodes;
		f->bytes0 = y->bytes;
		y->depth++;
		if (f->node == NULL)
			return yj_fail(y, m, "out of memory");
		return 0;
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		f = &y->stack[--y->depth];
		v = f->node;
		f->node = NULL;
		if (y->depth > 0 &&
		    y->stack[y->depth - 1].height < f->height + 1)
			y->stack[y->depth - 1].height = f->height + 1;
		if (f->anchor) {
			char *a = f->anchor;

			f->anchor = NULL;
			if (anchor_set(y, a, v, y->nodes - f->nodes0 + 1,
			        y->bytes - f->bytes0, f->height + 1) == -1) {
				json_decref(v);
				return -1;
			}
		}
		return place(y, v, m);
	default:
		return 0;
	}
}

/*
 * Reads the YAML stream text[0..len) (JSON is YAML too) into a JSON array
 * of its documents.  NULL with err set ("line L, column C: what").
 */
json_t *
yaml_to_json(const char *text, size_t len, char *err, size_t errlen)
{
	yaml_parser_t p;
	yaml_event_t ev;
	struct yj y;
	int r = 0;

	memset(&y, 0, sizeof(y));
	y.err = err;
	y.errlen = errlen;
	err[0] = '\0';
	if ((y.docs = json_array()) == NULL || !yaml_parser_initialize(&p)) {
		json_decref(y.docs);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	while (r == 0) {
		if (!yaml_parser_parse(&p, &ev)) {
			snprintf(err, errlen, "line %zu, column %zu: %s%s%s",
			    p.problem_mark.line + 1, p.problem_mark.column + 1,
			    p.problem ? p.problem : "not YAML",
			    p.context ? " " : "", p.context ? p.context : "");
			r = -1;
			break;
		}
		r = event(&y, &ev);
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	while (y.depth > 0) {
		struct yj_frame *f = &y.stack[--y.depth];

		json_decref(f->node);
		free(f->key);
		free(f->anchor);
	}
	anchors_clear(&y);
	json_decref(y.root);
	if (r == -1) {
		json_decref(y.docs);
		return NULL;
	}
	return y.docs;
}
