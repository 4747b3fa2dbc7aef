/*
 * jschema.c: JSON Schema over jansson, for the subset that an AI agent's
 * input_schema needs, so that a job's parameters are refused at the API
 * rather than by the agent halfway through a run.  Debian packages no C
 * library for JSON Schema; this one is small on purpose, and it is strict
 * about its own limits: jschema_check() refuses every schema that uses
 * anything outside the subset, because a keyword silently skipped (a
 * "pattern", an "anyOf") would let through exactly what the schema's
 * author meant to keep out.
 *
 * The subset, with the meaning of draft 2020-12: the boolean schemas true
 * and false; type (a name or an array of names: object, array, string,
 * number, integer, boolean, null; integer takes a real with no fraction,
 * 3.0, as JSON Schema does), enum, const; minimum, maximum,
 * exclusiveMinimum, exclusiveMaximum (numbers); minLength, maxLength (in
 * Unicode code points, not bytes); items (one schema for every element),
 * minItems, maxItems, uniqueItems; properties, additionalProperties (a
 * boolean or a schema), required, minProperties, maxProperties.  The
 * annotations $schema, $id, $comment, title, description, default,
 * examples, format, deprecated, readOnly and writeOnly are type-checked
 * and otherwise ignored ("format" is an annotation in 2020-12 too).
 *
 * Numbers compare exactly whatever jansson's type for them (an integer or
 * a real): 1 and 1.0 are equal for enum, const and uniqueItems, and
 * 9007199254740993 is greater than the real 9007199254740992.0.
 *
 * Depth: the root of a schema or an instance is at depth 0, a member or
 * element (or the subschema that applies to one) one level below its
 * parent.  Nothing may lie deeper than JSCHEMA_DEPTH_MAX.  Every recursion
 * here is bounded: jschema_check() follows only subschemas and stops at
 * the limit; jschema_validate() first walks the instance and refuses one
 * nested too deeply, so that everything after it (validation, equality,
 * hashing) recurses no deeper than that instance, whatever the schema.
 *
 * Paths name members with dots and elements with [i]; a member whose
 * name is not a plain identifier is written ["name"] with JSON escaping
 * (control characters escaped too, so that a path is safe in a log line),
 * and a path too long for its buffer ends in "...", cut between segments.
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisor.h"

#define PATH_CUT    "..." /* ends a path cut at its buffer's size */
#define SMALL_ARRAY 8     /* uniqueItems compares every pair below this */
#define QUOTE_SHORT 72    /* bytes of a quoted name in a message */

/* The types of JSON Schema, as bits of a set. */
#define T_NULL    0x01
#define T_BOOLEAN 0x02
#define T_OBJECT  0x04
#define T_ARRAY   0x08
#define T_NUMBER  0x10
#define T_INTEGER 0x20
#define T_STRING  0x40

static const struct type_name {
	const char *name;    /* as written in a schema */
	const char *article; /* as written in a message */
	unsigned bit;        /* T_* */
} type_names[] = {
    {"object", "an object", T_OBJECT},
    {"array", "an array", T_ARRAY},
    {"string", "a string", T_STRING},
    {"number", "a number", T_NUMBER},
    {"integer", "an integer", T_INTEGER},
    {"boolean", "a boolean", T_BOOLEAN},
    {"null", "null", T_NULL},
};
#define NTYPES (sizeof(type_names) / sizeof(type_names[0]))

/* What the value of each keyword must be. */
enum kw_kind {
	KW_SCHEMA,     /* a subschema: items, additionalProperties */
	KW_PROPERTIES, /* an object of subschemas */
	KW_TYPE,       /* a type name or an array of distinct ones */
	KW_REQUIRED,   /* an array of distinct strings */
	KW_ENUM,       /* a non-empty array */
	KW_ANY,        /* any value: const, default */
	KW_NUMBER,     /* any number */
	KW_COUNT,      /* a non-negative integer */
	KW_BOOLEAN,    /* true or false */
	KW_STRING,     /* a string */
	KW_ARRAY,      /* an array: examples */
};

static const struct keyword {
	const char *name;  /* as written in a schema */
	enum kw_kind kind; /* what its value must be */
} keywords[] = {
    {"type", KW_TYPE},
    {"enum", KW_ENUM},
    {"const", KW_ANY},
    {"minimum", KW_NUMBER},
    {"maximum", KW_NUMBER},
    {"exclusiveMinimum", KW_NUMBER},
    {"exclusiveMaximum", KW_NUMBER},
    {"minLength", KW_COUNT},
    {"maxLength", KW_COUNT},
    {"items", KW_SCHEMA},
    {"minItems", KW_COUNT},
    {"maxItems", KW_COUNT},
    {"uniqueItems", KW_BOOLEAN},
    {"properties", KW_PROPERTIES},
    {"additionalProperties", KW_SCHEMA},
    {"required", KW_REQUIRED},
    {"minProperties", KW_COUNT},
    {"maxProperties", KW_COUNT},
    /* annotations: checked, then ignored */
    {"$schema", KW_STRING},
    {"$id", KW_STRING},
    {"$comment", KW_STRING},
    {"title", KW_STRING},
    {"description", KW_STRING},
    {"default", KW_ANY},
    {"examples", KW_ARRAY},
    {"format", KW_STRING},
    {"deprecated", KW_BOOLEAN},
    {"readOnly", KW_BOOLEAN},
    {"writeOnly", KW_BOOLEAN},
};
#define NKEYWORDS (sizeof(keywords) / sizeof(keywords[0]))

/*
 * Pairs of bounds that jschema_check() refuses when no value can lie
 * between them: such a schema is a mistake, and its author is better told
 * when writing it than every caller at each refused job.
 */
static const struct bound_pair {
	const char *lo, *hi; /* the keywords */
	int strict;          /* 1: lo == hi leaves nothing either */
} bound_pairs[] = {
    {"minimum", "maximum", 0},
    {"minimum", "exclusiveMaximum", 1},
    {"exclusiveMinimum", "maximum", 1},
    {"exclusiveMinimum", "exclusiveMaximum", 1},
    {"minLength", "maxLength", 0},
    {"minItems", "maxItems", 0},
    {"minProperties", "maxProperties", 0},
};

/* The numeric bounds in the order validation tries them. */
static const struct limit {
	const char *name; /* the keyword */
	int sign;         /* 1: a lower bound, -1: an upper one */
	int strict;       /* 1: the bound itself is outside */
	const char *what; /* "must be <what> <bound>" */
} limits[] = {
    {"minimum", 1, 0, "at least"},
    {"exclusiveMinimum", 1, 1, "greater than"},
    {"maximum", -1, 0, "at most"},
    {"exclusiveMaximum", -1, 1, "less than"},
};

/* What the count keywords count, for their messages. */
static const struct counted {
	const char *min, *max;  /* the keywords */
	const char *verb;       /* "must <verb> at least ..." */
	const char *one, *many; /* what is counted */
	const char *tail;       /* after it */
} count_length = {"minLength", "maxLength", "be", "character", "characters",
    " long"},
  count_items = {"minItems", "maxItems", "have", "item", "items", ""},
  count_members = {
      "minProperties", "maxProperties", "have", "property", "properties", ""};

/* One walk over a schema or an instance, building the path as it goes. */
struct walk {
	struct jschema_error *e; /* the path is built in e->path itself */
	size_t len;              /* bytes of e->path in use */
	int cut;                 /* 1: PATH_CUT ends the path */
};

/* An element of an array, hashed for uniqueItems. */
struct hashed {
	uint64_t hash; /* hash_value() of the element */
	size_t index;  /* its index in the array */
};

static int validate(struct walk *w, const json_t *s, const json_t *v);
static int check_schema(struct walk *w, const json_t *s, int depth);

static int fail(struct walk *w, const char *fmt, ...) CV_PRINTF(2, 3);

/* Fills in the message (the path is already in place) and returns -1. */
static int
fail(struct walk *w, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(w->e->message, sizeof(w->e->message), fmt, ap);
	va_end(ap);
	return -1;
}

static void
walk_init(struct walk *w, struct jschema_error *e)
{
	w->e = e;
	w->len = 0;
	w->cut = 0;
	e->path[0] = '\0';
	e->message[0] = '\0';
}

/*
 * jansson's object iterators take a json_t * though they change nothing;
 * these two are the only places that cast the const away.
 */
static void *
iter_first(const json_t *o)
{
	return json_object_iter((json_t *)o);
}

static void *
iter_next(const json_t *o, void *it)
{
	return json_object_iter_next((json_t *)o, it);
}

/*
 * Writes the escape of the character at p (left bytes remain) into u and
 * returns the bytes of p it stands for: JSON's escapes for '"' and '\\',
 * \uXXXX for C0 controls, DEL and the C1 controls U+0080..U+009F (which
 * JSON allows raw, but a terminal may act on), the character itself
 * otherwise.  A byte that starts no valid UTF-8 becomes U+FFFD: jansson
 * never makes such a string, but a caller's json_stringn_nocheck() might.
 */
static size_t
escape_char(const unsigned char *p, size_t left, char u[8])
{
	static const char shorts[] = "\b\f\n\r\t", letters[] = "bfnrt";
	const char *sh;
	size_t n;

	if (*p == '"' || *p == '\\') {
		snprintf(u, 8, "\\%c", *p);
		return 1;
	}
	if (*p != '\0' && (sh = strchr(shorts, *p)) != NULL) {
		snprintf(u, 8, "\\%c", letters[sh - shorts]);
		return 1;
	}
	if (*p < 0x20 || *p == 0x7f) {
		snprintf(u, 8, "\\u%04x", *p);
		return 1;
	}
	if (*p == 0xc2 && left >= 2 && p[1] >= 0x80 && p[1] <= 0x9f) {
		snprintf(u, 8, "\\u%04x", p[1]);
		return 2;
	}
	if ((n = utf8_len(p, left)) == 0) {
		snprintf(u, 8, "\\ufffd");
		return 1;
	}
	memcpy(u, p, n);
	u[n] = '\0';
	return n;
}

/*
 * Writes s[0..n) as a JSON string, quotes included, into out (outlen
 * bytes, NUL-terminated when outlen > 0, cut only between whole escapes
 * or characters).  Returns the length of the whole, as snprintf does.
 */
static size_t
quote(const char *s, size_t n, char *out, size_t outlen)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t total = 1, used = 0, m, k;
	int full = outlen < 2;
	char u[8];

	if (!full)
		out[used++] = '"';
	for (size_t i = 0; i <= n; i += k) {
		if (i == n) {
			snprintf(u, sizeof(u), "\"");
			k = 1;
		} else
			k = escape_char(p + i, n - i, u);
		m = strlen(u);
		if (!full && used + m < outlen) {
			memcpy(out + used, u, m);
			used += m;
		} else
			full = 1;
		total += m;
	}
	if (outlen > 0)
		out[used] = '\0';
	return total;
}

/* A member name quoted for a message, cut with `..."` when long. */
static const char *
quote_short(const char *s, size_t n, char out[QUOTE_SHORT])
{
	size_t used;

	if (quote(s, n, out, QUOTE_SHORT - 4) < QUOTE_SHORT - 4)
		return out;
	used = strlen(out);
	memcpy(out + used, "...\"", 5);
	return out;
}

/*
 * Appends one segment to the path, whole or not at all: a segment that
 * does not fit, with room left for PATH_CUT, is replaced by PATH_CUT and
 * nothing more is appended until path_back() goes back before it.
 * Returns the length to go back to.
 */
static size_t
path_put(struct walk *w, const char *seg, size_t n)
{
	size_t saved = w->len;
	char *path = w->e->path;

	if (w->cut)
		return saved;
	if (n >= sizeof(w->e->path) ||
	    w->len + n + sizeof(PATH_CUT) > sizeof(w->e->path)) {
		memcpy(path + w->len, PATH_CUT, sizeof(PATH_CUT));
		w->cut = 1;
		return saved;
	}
	memcpy(path + w->len, seg, n);
	w->len += n;
	path[w->len] = '\0';
	return saved;
}

/* Goes back to the path as it was len bytes long. */
static void
path_back(struct walk *w, size_t len)
{
	w->len = len;
	w->cut = 0;
	w->e->path[len] = '\0';
}

static size_t
path_index(struct walk *w, size_t i)
{
	char seg[32];
	int n = snprintf(seg, sizeof(seg), "[%zu]", i);

	return path_put(w, seg, (size_t)n);
}

/* [A-Za-z_][A-Za-z0-9_]*: a name written with a dot. */
static int
plain_name(const char *s, size_t n)
{
	if (n == 0 || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!(s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') ||
		        (s[i] >= 'A' && s[i] <= 'Z') ||
		        (s[i] >= '0' && s[i] <= '9')))
			return 0;
	return 1;
}

/* Appends a member name: "name", ".name" or ["any name"]. */
static size_t
path_name(struct walk *w, const char *s, size_t n)
{
	char seg[sizeof(w->e->path) + 1];
	size_t m;

	if (plain_name(s, n)) {
		if (w->len == 0 || n >= sizeof(seg) - 1)
			return path_put(
			    w, s, n); /* too long: path_put() cuts */
		seg[0] = '.';
		memcpy(seg + 1, s, n);
		return path_put(w, seg, n + 1);
	}
	seg[0] = '[';
	m = quote(s, n, seg + 1, sizeof(seg) - 2);
	if (m >= sizeof(seg) - 2)
		m = sizeof(seg); /* too long: path_put() cuts */
	else
		seg[m + 1] = ']';
	return path_put(w, seg, m + 2);
}

/* 1 if the real r has no fraction (every real of 2^63 or more has none). */
static int
real_is_integral(double r)
{
	if (r >= 0x1p63 || r < -0x1p63)
		return 1;
	return (double)(long long)r == r;
}

/*
 * Compares the integer i with the real r exactly: -1, 0 or 1.  Converting
 * i to a double would round above 2^53; truncating r instead is exact,
 * and the fraction decides when the integer parts are equal.
 */
static int
int_real_cmp(json_int_t i, double r)
{
	json_int_t t;

	if (r >= 0x1p63)
		return -1;
	if (r < -0x1p63)
		return 1;
	t = (json_int_t)r;
	if (i != t)
		return i < t ? -1 : 1;
	return (double)t < r ? -1 : (double)t > r;
}

/* Compares two numbers exactly, whatever their jansson types. */
static int
num_cmp(const json_t *a, const json_t *b)
{
	json_int_t x, y;
	double p, q;

	if (json_is_integer(a) && json_is_integer(b)) {
		x = json_integer_value(a);
		y = json_integer_value(b);
		return x < y ? -1 : x > y;
	}
	if (json_is_integer(a))
		return int_real_cmp(json_integer_value(a), json_real_value(b));
	if (json_is_integer(b))
		return -int_real_cmp(json_integer_value(b), json_real_value(a));
	p = json_real_value(a);
	q = json_real_value(b);
	return p < q ? -1 : p > q;
}

/* A number for a message: the shortest form that reads back the same. */
static const char *
num_text(const json_t *v, char *buf, size_t len)
{
	if (json_is_integer(v)) {
		snprintf(
		    buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return buf;
	}
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, json_real_value(v));
		if (strtod(buf, NULL) == json_real_value(v))
			break;
	}
	return buf;
}

/* The value of a count keyword (a non-negative integer); 0, or -1. */
static int
count_of(const json_t *v, uint64_t *out)
{
	double r;

	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = (uint64_t)json_integer_value(v);
		return 0;
	}
	if (!json_is_real(v) || (r = json_real_value(v)) < 0 ||
	    !real_is_integral(r))
		return -1;
	*out = r >= 0x1p64 ? UINT64_MAX : (uint64_t)r;
	return 0;
}

/*
 * Whether a and b are equal as JSON Schema has it: numbers by value,
 * objects whatever their members' order.  The recursion goes only as deep
 * as the shallower of the two, and one of them is always an instance that
 * jschema_validate() has found within JSCHEMA_DEPTH_MAX.
 */
static int
equal(const json_t *a, const json_t *b)
{
	const json_t *x;
	size_t i;
	void *it;

	if (json_is_number(a) && json_is_number(b))
		return num_cmp(a, b) == 0;
	if (json_typeof(a) != json_typeof(b))
		return 0;
	switch (json_typeof(a)) {
	case JSON_STRING:
		return json_string_length(a) == json_string_length(b) &&
		    memcmp(json_string_value(a), json_string_value(b),
		        json_string_length(a)) == 0;
	case JSON_ARRAY:
		if (json_array_size(a) != json_array_size(b))
			return 0;
		for (i = 0; i < json_array_size(a); i++)
			if (!equal(json_array_get(a, i), json_array_get(b, i)))
				return 0;
		return 1;
	case JSON_OBJECT:
		if (json_object_size(a) != json_object_size(b))
			return 0;
		for (it = iter_first(a); it != NULL; it = iter_next(a, it)) {
			x = json_object_getn(b, json_object_iter_key(it),
			    json_object_iter_key_len(it));
			if (x == NULL || !equal(json_object_iter_value(it), x))
				return 0;
		}
		return 1;
	default:
		return 1; /* true, false, null */
	}
}

/* splitmix64's finaliser: every bit of x moves every bit of the result. */
static uint64_t
mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t
hash_bytes(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
	return mix(h ^ n);
}

/*
 * A hash of v that agrees with equal(): 1 and 1.0 hash alike (a real with
 * no fraction in the range of an integer hashes as that integer), and an
 * object's members are summed so that their order does not count.
 */
static uint64_t
hash_value(const json_t *v)
{
	uint64_t h;
	double r;
	size_t i;
	void *it;

	switch (json_typeof(v)) {
	case JSON_STRING:
		return hash_bytes(json_string_value(v), json_string_length(v));
	case JSON_INTEGER:
		return mix((uint64_t)json_integer_value(v) ^ 0x1234);
	case JSON_REAL:
		r = json_real_value(v);
		if (r < 0x1p63 && r >= -0x1p63 && real_is_integral(r))
			return mix((uint64_t)(long long)r ^ 0x1234);
		memcpy(&h, &r, sizeof(h));
		return mix(h ^ 0x5678);
	case JSON_ARRAY:
		h = 0xa11a7;
		for (i = 0; i < json_array_size(v); i++)
			h = mix(h ^ hash_value(json_array_get(v, i)));
		return h;
	case JSON_OBJECT:
		h = 0x0b1ec7;
		for (it = iter_first(v); it != NULL; it = iter_next(v, it))
			h += mix(hash_bytes(json_object_iter_key(it),
			             json_object_iter_key_len(it)) ^
			    hash_value(json_object_iter_value(it)));
		return h;
	default:
		return mix(json_typeof(v) + 0x9a9a);
	}
}

/*
 * The first pair of equal elements of a, comparing every pair: the
 * smallest *j equal to an earlier element, and the first such *i.
 * Returns 1, or 0 if all differ.
 */
static int
duplicate_pairs(const json_t *a, size_t *i, size_t *j)
{
	size_t n = json_array_size(a);

	for (*j = 1; *j < n; (*j)++)
		for (*i = 0; *i < *j; (*i)++)
			if (equal(json_array_get(a, *i), json_array_get(a, *j)))
				return 1;
	return 0;
}

static int
by_hash(const void *pa, const void *pb)
{
	const struct hashed *a = pa, *b = pb;

	if (a->hash != b->hash)
		return a->hash < b->hash ? -1 : 1;
	return a->index < b->index ? -1 : a->index > b->index;
}

/*
 * The first pair of equal elements in h[r..end), a run of one hash in
 * the order of the array, whose later index is below limit: 1 with *i
 * and *j, or 0.
 */
static int
run_duplicate(const json_t *a, const struct hashed *h, size_t r, size_t end,
    size_t limit, size_t *i, size_t *j)
{
	for (size_t y = r + 1; y < end && h[y].index < limit; y++)
		for (size_t x = r; x < y; x++)
			if (equal(json_array_get(a, h[x].index),
			        json_array_get(a, h[y].index))) {
				*i = h[x].index;
				*j = h[y].index;
				return 1;
			}
	return 0;
}

/*
 * The same answer as duplicate_pairs() in O(n log n) rather than O(n^2):
 * only elements of equal hash can be equal, and sorting by (hash, index)
 * puts them next to each other in their order in the array.  Every pair
 * of a large array of distinct parameters would cost seconds of the API's
 * time per request.  An allocation failure falls back on every pair.
 */
static int
duplicate(const json_t *a, size_t *i, size_t *j)
{
	size_t n = json_array_size(a), r, end, x;
	struct hashed *h;
	int found = 0;

	if (n < SMALL_ARRAY || (h = calloc(n, sizeof(*h))) == NULL)
		return duplicate_pairs(a, i, j);
	for (x = 0; x < n; x++) {
		h[x].hash = hash_value(json_array_get(a, x));
		h[x].index = x;
	}
	qsort(h, n, sizeof(*h), by_hash);
	for (r = 0; r < n; r = end) {
		for (end = r + 1; end < n && h[end].hash == h[r].hash; end++)
			;
		if (run_duplicate(a, h, r, end, found ? *j : n, i, j))
			found = 1;
	}
	free(h);
	return found;
}

/* The T_* bit of a type name, or 0. */
static unsigned
type_bit(const json_t *name)
{
	for (size_t i = 0; i < NTYPES; i++)
		if (json_string_length(name) == strlen(type_names[i].name) &&
		    memcmp(json_string_value(name), type_names[i].name,
		        json_string_length(name)) == 0)
			return type_names[i].bit;
	return 0;
}

/* "a string", "an integer", ... for a T_* bit, or "" for none. */
static const char *
type_article(unsigned bit)
{
	for (size_t i = 0; i < NTYPES; i++)
		if (type_names[i].bit == bit)
			return type_names[i].article;
	return "";
}

/* The T_* bits v is an instance of. */
static unsigned
type_of(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return T_OBJECT;
	case JSON_ARRAY:
		return T_ARRAY;
	case JSON_STRING:
		return T_STRING;
	case JSON_INTEGER:
		return T_NUMBER | T_INTEGER;
	case JSON_REAL:
		return real_is_integral(json_real_value(v))
		    ? T_NUMBER | T_INTEGER
		    : T_NUMBER;
	case JSON_TRUE:
	case JSON_FALSE:
		return T_BOOLEAN;
	default:
		return T_NULL;
	}
}

/* ------------------------------------------------------------------ */
/* jschema_check(): is this a schema of the subset? */

static const struct keyword *
keyword_find(const char *name, size_t len)
{
	for (size_t i = 0; i < NKEYWORDS; i++)
		if (strlen(keywords[i].name) == len &&
		    memcmp(keywords[i].name, name, len) == 0)
			return &keywords[i];
	return NULL;
}

/* One name of "type" (its path in place); seen: the names before it. */
static int
check_type_name(struct walk *w, const json_t *v, unsigned *seen)
{
	char q[QUOTE_SHORT];
	unsigned bit;

	if (!json_is_string(v))
		return fail(w, "must be a type name");
	quote_short(json_string_value(v), json_string_length(v), q);
	if ((bit = type_bit(v)) == 0)
		return fail(w,
		    "%s is not a type (object, array, string, number, integer, "
		    "boolean or null)",
		    q);
	if (*seen & bit)
		return fail(w, "repeats %s", q);
	*seen |= bit;
	return 0;
}

static int
check_type(struct walk *w, const json_t *v)
{
	unsigned seen = 0;
	const json_t *x;
	size_t i, saved;

	if (json_is_string(v))
		return check_type_name(w, v, &seen);
	if (!json_is_array(v))
		return fail(w, "must be a type name or an array of them");
	if (json_array_size(v) == 0)
		return fail(w, "must not be empty");
	json_array_foreach(v, i, x)
	{
		saved = path_index(w, i);
		if (check_type_name(w, x, &seen) == -1)
			return -1;
		path_back(w, saved);
	}
	return 0;
}

/*
 * "required": distinct strings.  The names seen go into a jansson object
 * rather than being compared pairwise: a schema comes from outside too,
 * and 100,000 names compared pairwise would hold an API thread for long.
 */
static int
check_required(struct walk *w, const json_t *v)
{
	json_t *seen, *x;
	size_t i, saved;
	int rc = 0;

	if (!json_is_array(v))
		return fail(w, "must be an array of strings");
	if ((seen = json_object()) == NULL)
		return fail(w, "out of memory");
	json_array_foreach(v, i, x)
	{
		char q[QUOTE_SHORT];
		const char *s = json_string_value(x);
		size_t n = json_string_length(x);

		saved = path_index(w, i);
		if (s == NULL)
			rc = fail(w, "must be a string");
		else if (json_object_getn(seen, s, n) != NULL)
			rc = fail(w, "repeats %s", quote_short(s, n, q));
		else if (json_object_setn_new_nocheck(seen, s, n, json_null()))
			rc = fail(w, "out of memory");
		if (rc == -1)
			break;
		path_back(w, saved);
	}
	json_decref(seen);
	return rc;
}

/* "properties": an object whose members are schemas one level down. */
static int
check_properties(struct walk *w, const json_t *v, int depth)
{
	size_t saved;
	void *it;

	if (!json_is_object(v))
		return fail(w, "must be an object of schemas");
	for (it = iter_first(v); it != NULL; it = iter_next(v, it)) {
		saved = path_name(
		    w, json_object_iter_key(it), json_object_iter_key_len(it));
		if (check_schema(w, json_object_iter_value(it), depth + 1) ==
		    -1)
			return -1;
		path_back(w, saved);
	}
	return 0;
}

/* The value v of keyword kw, in a schema at depth (its path in place). */
static int
check_keyword(
    struct walk *w, const struct keyword *kw, const json_t *v, int depth)
{
	uint64_t n;

	switch (kw->kind) {
	case KW_SCHEMA:
		return check_schema(w, v, depth + 1);
	case KW_PROPERTIES:
		return check_properties(w, v, depth);
	case KW_TYPE:
		return check_type(w, v);
	case KW_REQUIRED:
		return check_required(w, v);
	case KW_ENUM:
		if (!json_is_array(v))
			return fail(w, "must be an array");
		return json_array_size(v) ? 0 : fail(w, "must not be empty");
	case KW_ANY:
		return 0;
	case KW_NUMBER:
		return json_is_number(v) ? 0 : fail(w, "must be a number");
	case KW_COUNT:
		return count_of(v, &n) == 0
		    ? 0
		    : fail(w, "must be a non-negative integer");
	case KW_BOOLEAN:
		return json_is_boolean(v) ? 0 : fail(w, "must be a boolean");
	case KW_STRING:
		return json_is_string(v) ? 0 : fail(w, "must be a string");
	case KW_ARRAY:
		return json_is_array(v) ? 0 : fail(w, "must be an array");
	}
	return fail(w, "unknown keyword kind"); /* not reached */
}

/* Refuses bounds of s that leave no value between them (bound_pairs). */
static int
check_bounds(struct walk *w, const json_t *s)
{
	const struct bound_pair *b;
	const json_t *lo, *hi;
	char l[40], h[40];
	size_t i;
	int c;

	for (i = 0; i < sizeof(bound_pairs) / sizeof(bound_pairs[0]); i++) {
		b = &bound_pairs[i];
		lo = json_object_get(s, b->lo);
		hi = json_object_get(s, b->hi);
		if (lo == NULL || hi == NULL)
			continue;
		c = num_cmp(lo, hi);
		if (c < 0 || (c == 0 && !b->strict))
			continue;
		path_name(w, b->lo, strlen(b->lo));
		num_text(lo, l, sizeof(l));
		num_text(hi, h, sizeof(h));
		if (b->strict)
			return fail(
			    w, "must be less than %s (%s >= %s)", b->hi, l, h);
		return fail(
		    w, "must not be greater than %s (%s > %s)", b->hi, l, h);
	}
	return 0;
}

/* Checks the schema s at depth, its path in place. */
static int
check_schema(struct walk *w, const json_t *s, int depth)
{
	const struct keyword *kw;
	const char *k;
	char q[QUOTE_SHORT];
	size_t kl, saved;
	void *it;

	if (depth > JSCHEMA_DEPTH_MAX)
		return fail(w, "is nested too deeply (more than %d levels)",
		    JSCHEMA_DEPTH_MAX);
	if (json_is_boolean(s))
		return 0;
	if (!json_is_object(s))
		return fail(w, "must be a schema (an object or a boolean)");
	for (it = iter_first(s); it != NULL; it = iter_next(s, it)) {
		k = json_object_iter_key(it);
		kl = json_object_iter_key_len(it);
		saved = path_name(w, k, kl);
		if ((kw = keyword_find(k, kl)) == NULL)
			return fail(w, "keyword %s is not supported",
			    quote_short(k, kl, q));
		if (check_keyword(w, kw, json_object_iter_value(it), depth))
			return -1;
		path_back(w, saved);
	}
	return check_bounds(w, s);
}

/*
 * Checks that schema is one this module applies in full: a boolean, or an
 * object whose keywords are all of the subset (see the top of this file)
 * with values of the right type, no subschema deeper than
 * JSCHEMA_DEPTH_MAX, "required" and "type" without repeats, no empty
 * "enum", no pair of bounds with nothing between them (minimum above
 * maximum, minLength above maxLength, ...).  Does not modify schema.
 * Returns 0, or -1 with e->path the place in the schema of the offending
 * keyword or value ("properties.age.minimum", "required[2]", "" for the
 * schema itself) and e->message why.  e->path is "" on success.
 */
int
jschema_check(const struct json_t *schema, struct jschema_error *e)
{
	struct walk w;

	walk_init(&w, e);
	if (check_schema(&w, schema, 0) == -1)
		return -1;
	path_back(&w, 0);
	return 0;
}

/* ------------------------------------------------------------------ */
/* jschema_validate(): does this instance match? */

/* Refuses the first value (in v's own order) deeper than the maximum. */
static int
depth_ok(struct walk *w, const json_t *v, int depth)
{
	size_t i, saved;
	void *it;

	if (depth > JSCHEMA_DEPTH_MAX)
		return fail(w, "is nested too deeply (more than %d levels)",
		    JSCHEMA_DEPTH_MAX);
	for (i = 0; i < json_array_size(v); i++) { /* 0 unless an array */
		saved = path_index(w, i);
		if (depth_ok(w, json_array_get(v, i), depth + 1) == -1)
			return -1;
		path_back(w, saved);
	}
	for (it = iter_first(v); it != NULL; it = iter_next(v, it)) {
		saved = path_name(
		    w, json_object_iter_key(it), json_object_iter_key_len(it));
		if (depth_ok(w, json_object_iter_value(it), depth + 1) == -1)
			return -1;
		path_back(w, saved);
	}
	return 0;
}

/* "type": t is a name or an array of them, in a checked schema. */
static int
match_type(struct walk *w, const json_t *t, const json_t *v)
{
	char list[160];
	const char *sep;
	size_t i, n, used = 0;
	unsigned allowed = 0;
	const json_t *x;

	n = json_is_array(t) ? json_array_size(t) : 1;
	for (i = 0; i < n; i++) {
		x = json_is_array(t) ? json_array_get(t, i) : t;
		allowed |= json_is_string(x) ? type_bit(x) : 0;
	}
	if (allowed == 0 || (type_of(v) & allowed) != 0)
		return 0; /* no "type", or v is of one of them */
	list[0] = '\0';
	for (i = 0; i < n && used < sizeof(list); i++) {
		x = json_is_array(t) ? json_array_get(t, i) : t;
		sep = i == 0 ? "" : i + 1 < n ? ", " : " or ";
		used += (size_t)snprintf(list + used, sizeof(list) - used,
		    "%s%s", sep,
		    json_is_string(x) ? type_article(type_bit(x)) : "");
	}
	return fail(w, "must be %s", list);
}

/* "const": the message names a scalar; a container is only "not it". */
static int
match_const(struct walk *w, const json_t *c, const json_t *v)
{
	char buf[QUOTE_SHORT];

	if (equal(v, c))
		return 0;
	switch (json_typeof(c)) {
	case JSON_STRING:
		return fail(w, "must be %s",
		    quote_short(
		        json_string_value(c), json_string_length(c), buf));
	case JSON_INTEGER:
	case JSON_REAL:
		return fail(w, "must be %s", num_text(c, buf, sizeof(buf)));
	case JSON_TRUE:
	case JSON_FALSE:
	case JSON_NULL:
		return fail(w, "must be %s",
		    json_is_true(c)        ? "true"
		        : json_is_false(c) ? "false"
		                           : "null");
	default:
		return fail(w, "is not the allowed value");
	}
}

static int
match_enum(struct walk *w, const json_t *values, const json_t *v)
{
	for (size_t i = 0; i < json_array_size(values); i++)
		if (equal(v, json_array_get(values, i)))
			return 0;
	return fail(w, "is not one of the allowed values");
}

static int
validate_number(struct walk *w, const json_t *s, const json_t *v)
{
	const struct limit *l;
	const json_t *b;
	char buf[40];
	int c;

	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		l = &limits[i];
		if (!json_is_number(b = json_object_get(s, l->name)))
			continue;
		c = num_cmp(v, b) * l->sign;
		if (c < 0 || (c == 0 && l->strict))
			return fail(w, "must be %s %s", l->what,
			    num_text(b, buf, sizeof(buf)));
	}
	return 0;
}

/* Checks count (code points, elements or members) against s's c->min, max. */
static int
match_count(
    struct walk *w, const json_t *s, const struct counted *c, uint64_t count)
{
	uint64_t n;

	if (count_of(json_object_get(s, c->min), &n) == 0 && count < n)
		return fail(w, "must %s at least %llu %s%s", c->verb,
		    (unsigned long long)n, n == 1 ? c->one : c->many, c->tail);
	if (count_of(json_object_get(s, c->max), &n) == 0 && count > n)
		return fail(w, "must %s at most %llu %s%s", c->verb,
		    (unsigned long long)n, n == 1 ? c->one : c->many, c->tail);
	return 0;
}

/* minLength, maxLength: in code points, the bytes that start one. */
static int
validate_string(struct walk *w, const json_t *s, const json_t *v)
{
	const char *p = json_string_value(v);
	size_t len = json_string_length(v);
	uint64_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += ((unsigned char)p[i] & 0xc0) != 0x80;
	return match_count(w, s, &count_length, n);
}

static int
validate_array(struct walk *w, const json_t *s, const json_t *v)
{
	const json_t *items = json_object_get(s, "items");
	size_t n = json_array_size(v), i, j, saved;

	if (match_count(w, s, &count_items, n) == -1)
		return -1;
	if (json_is_true(json_object_get(s, "uniqueItems")) &&
	    duplicate(v, &i, &j))
		return fail(w,
		    "must not have duplicate items ([%zu] and [%zu] are equal)",
		    i, j);
	for (i = 0; items != NULL && i < n; i++) {
		saved = path_index(w, i);
		if (validate(w, items, json_array_get(v, i)) == -1)
			return -1;
		path_back(w, saved);
	}
	return 0;
}

/* The members of v that "properties" does not name, in v's order. */
static int
validate_others(struct walk *w, const json_t *s, const json_t *v)
{
	const json_t *props = json_object_get(s, "properties");
	const json_t *more = json_object_get(s, "additionalProperties");
	const char *k;
	size_t kl, saved;
	void *it;

	if (more == NULL || json_is_true(more))
		return 0;
	for (it = iter_first(v); it != NULL; it = iter_next(v, it)) {
		k = json_object_iter_key(it);
		kl = json_object_iter_key_len(it);
		if (json_is_object(props) && json_object_getn(props, k, kl))
			continue;
		saved = path_name(w, k, kl);
		if (json_is_false(more))
			return fail(w,
			    "is not allowed (additionalProperties is false)");
		if (validate(w, more, json_object_iter_value(it)) == -1)
			return -1;
		path_back(w, saved);
	}
	return 0;
}

/*
 * An object: its counts, then each name of "required" it lacks, then its
 * members in the order of "properties", then the others in its own order.
 */
static int
validate_object(struct walk *w, const json_t *s, const json_t *v)
{
	const json_t *req = json_object_get(s, "required");
	const json_t *props = json_object_get(s, "properties");
	const json_t *x;
	size_t i, saved;
	void *it;

	if (match_count(w, s, &count_members, json_object_size(v)) == -1)
		return -1;
	for (i = 0; i < json_array_size(req); i++) {
		x = json_array_get(req, i);
		if (!json_is_string(x) ||
		    json_object_getn(
		        v, json_string_value(x), json_string_length(x)) != NULL)
			continue;
		path_name(w, json_string_value(x), json_string_length(x));
		return fail(w, "is required");
	}
	for (it = iter_first(props); it != NULL; it = iter_next(props, it)) {
		x = json_object_getn(
		    v, json_object_iter_key(it), json_object_iter_key_len(it));
		if (x == NULL)
			continue;
		saved = path_name(
		    w, json_object_iter_key(it), json_object_iter_key_len(it));
		if (validate(w, json_object_iter_value(it), x) == -1)
			return -1;
		path_back(w, saved);
	}
	return validate_others(w, s, v);
}

/*
 * Validates v against the schema s, v's path in place.  The recursion
 * follows v's members and elements, which depth_ok() has bounded.
 */
static int
validate(struct walk *w, const json_t *s, const json_t *v)
{
	const json_t *x;

	if (json_is_false(s))
		return fail(w, "is not allowed (its schema is false)");
	if (!json_is_object(s))
		return 0; /* true */
	if ((x = json_object_get(s, "type")) != NULL &&
	    match_type(w, x, v) == -1)
		return -1;
	if ((x = json_object_get(s, "const")) != NULL &&
	    match_const(w, x, v) == -1)
		return -1;
	if ((x = json_object_get(s, "enum")) != NULL &&
	    match_enum(w, x, v) == -1)
		return -1;
	switch (json_typeof(v)) {
	case JSON_INTEGER:
	case JSON_REAL:
		return validate_number(w, s, v);
	case JSON_STRING:
		return validate_string(w, s, v);
	case JSON_ARRAY:
		return validate_array(w, s, v);
	case JSON_OBJECT:
		return validate_object(w, s, v);
	default:
		return 0;
	}
}

/*
 * Validates instance against schema, which jschema_check() has accepted
 * (any other schema does not crash it, but what it then applies is not
 * specified).  Neither is modified.  Returns 0 if instance is valid, or
 * -1 with the first error: e->path its place in the instance ("" for the
 * whole, "tickers[3].id"; the caller adds any prefix of its own) and
 * e->message what is wrong ("must be an integer", "is required").  An
 * instance nested deeper than JSCHEMA_DEPTH_MAX is refused before anything
 * else, at its first value too deep.  Otherwise the first error is the
 * first in document order: a value's own keywords (type, const, enum, its
 * bounds, counts and uniqueItems, the names of "required" it lacks)
 * before its members and elements; members in the order of "properties",
 * then the others in the instance's order.  e->path is "" on success.
 */
int
jschema_validate(const struct json_t *schema, const struct json_t *instance,
    struct jschema_error *e)
{
	struct walk w;

	walk_init(&w, e);
	if (depth_ok(&w, instance, 0) == -1 ||
	    validate(&w, schema, instance) == -1)
		return -1;
	path_back(&w, 0);
	return 0;
}
