/*
 * schedule.c: the schedule document of the API (ARCHITECTURE.md, "The
 * schedule and run documents"), so that the API accepts exactly what the
 * supervisor can run.  One table describes every top-level field: its JSON
 * name (which is also its column in sql/001_init.sql), its type, range and
 * default.  Parsing, null handling, output, comparison and the INSERT
 * parameters are all driven by that table, so a field is added in one
 * place.  Rules the table cannot say (which timing fields go with which
 * kind, the cron expression, the zone, the target) are checked afterwards
 * on the whole document.  `null` means "the default" for every field that
 * has one; name and kind have none and reject it.
 */
#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisor.h"

#define PAYLOAD_DEPTH_MAX 32         /* nesting allowed in payload and body */
#define LIMIT_MAX         2147483647 /* largest resource limit */
#define TEXT_ID_MAX       255        /* workflow_id and the other FT_IDs */
#define REAL_STORED_MAX   1e17       /* reals from here come back integers */
#define INT64_BEYOND      9223372036854775808.0 /* 2^63: no int64 */

enum ftype {
	FT_TEXT,    /* a string; null: the default string or NULL */
	FT_INT,     /* an integer in [lo, hi]; null: def */
	FT_ENUM,    /* one of names; stored as the index */
	FT_TIME,    /* an RFC 3339 instant; null: SCHEDULE_UNSET */
	FT_TARGET,  /* the target object */
	FT_LIMITS,  /* the limits object */
	FT_PAYLOAD, /* the trigger payload, an object */
	FT_ID,      /* a string or an integer kept as text; null: NULL */
};

struct field {
	const char *name;         /* JSON key and schedules column */
	enum ftype type;          /* how it is read */
	size_t off;               /* where it lives in struct schedule_doc */
	int64_t lo, hi;           /* FT_INT range; FT_TEXT length range */
	int64_t def;              /* FT_INT and FT_ENUM default */
	const char *sdef;         /* FT_TEXT default, NULL for none */
	const char *const *names; /* FT_ENUM names, NULL-terminated */
	int nullable;             /* 0: null is an error */
};

static const char *const kinds[] = {"interval", "cron", "once", NULL};
static const char *const anchors[] = {"slot", "completion", NULL};
static const char *const backoffs[] = {"exponential", "linear", "fixed", NULL};
static const char *const overlaps[] = {"skip", "allow", "buffer_one", NULL};
static const char *const catchups[] = {"latest", "all", "none", NULL};
static const char *const gaps[] = {"auto", "shift", "skip", NULL};
static const char *const folds[] = {"auto", "first", "both", NULL};

#define OFF(m) offsetof(struct schedule_doc, m)
#define UNSET  SCHEDULE_UNSET

/* In the order of enum schedule_field: the index is the presence bit. */
static const struct field fields[SCHEDULE_F_COUNT] = {
    {"name", FT_TEXT, OFF(name), 1, 200, 0, NULL, NULL, 0},
    {"description", FT_TEXT, OFF(description), 0, 10000, 0, "", NULL, 1},
    {"kind", FT_ENUM, OFF(kind), 0, 0, 0, NULL, kinds, 0},
    {"interval_seconds", FT_INT, OFF(interval_seconds), 1, 3162240000LL, UNSET,
        NULL, NULL, 1},
    {"anchor", FT_ENUM, OFF(anchor_completion), 0, 0, 0, NULL, anchors, 1},
    {"cron", FT_TEXT, OFF(cron), 1, 127, 0, NULL, NULL, 1},
    {"timezone", FT_TEXT, OFF(timezone), 1, 255, 0, "UTC", NULL, 1},
    {"at", FT_TIME, OFF(at), 0, 0, UNSET, NULL, NULL, 1},
    {"start_at", FT_TIME, OFF(start_at), 0, 0, UNSET, NULL, NULL, 1},
    {"total_repeats", FT_INT, OFF(total_repeats), 0, INT64_MAX, 0, NULL, NULL,
        1},
    {"max_retries", FT_INT, OFF(max_retries), 0, 1000, 3, NULL, NULL, 1},
    {"backoff", FT_ENUM, OFF(backoff), 0, 0, 0, NULL, backoffs, 1},
    {"retry_delay_seconds", FT_INT, OFF(retry_delay_seconds), 1, 31536000,
        UNSET, NULL, NULL, 1},
    {"timeout_seconds", FT_INT, OFF(timeout_seconds), 1, 31536000, 600, NULL,
        NULL, 1},
    {"overlap", FT_ENUM, OFF(overlap), 0, 0, 0, NULL, overlaps, 1},
    {"catch_up", FT_ENUM, OFF(catch_up), 0, 0, 0, NULL, catchups, 1},
    {"max_catch_up_runs", FT_INT, OFF(max_catch_up_runs), 1, 1000, 10, NULL,
        NULL, 1},
    {"starting_deadline_seconds", FT_INT, OFF(starting_deadline_seconds), 0,
        INT64_MAX, UNSET, NULL, NULL, 1},
    {"jitter_seconds", FT_INT, OFF(jitter_seconds), 0, INT64_MAX, 0, NULL, NULL,
        1},
    {"dst_gap", FT_ENUM, OFF(dst_gap), 0, 0, 0, NULL, gaps, 1},
    {"dst_fold", FT_ENUM, OFF(dst_fold), 0, 0, 0, NULL, folds, 1},
    {"history_limit", FT_INT, OFF(history_limit), 1, 100000, 100, NULL, NULL,
        1},
    {"target", FT_TARGET, OFF(target), 0, 0, 0, NULL, NULL, 1},
    {"limits", FT_LIMITS, OFF(limits), 0, 0, 0, NULL, NULL, 1},
    {"trigger_payload", FT_PAYLOAD, OFF(trigger_payload), 0, 0, 0, NULL, NULL,
        1},
    {"workflow_id", FT_ID, OFF(workflow_id), 0, 0, 0, NULL, NULL, 1},
    {"trigger_node_id", FT_ID, OFF(trigger_node_id), 0, 0, 0, NULL, NULL, 1},
    {"priority", FT_INT, OFF(priority), -1000000, 1000000, 0, NULL, NULL, 1},
    {"organization_id", FT_ID, OFF(organization_id), 0, 0, 0, NULL, NULL, 1},
    {"environment_id", FT_ID, OFF(environment_id), 0, 0, 0, NULL, NULL, 1},
};

static const char *const limit_names[] = {
    "cpu_seconds", "memory_mb", "nofile", "nproc", "fsize_mb", NULL};

/*
 * Fills *e and returns -1, so that every error path is one statement.
 * A NULL field means the whole body.
 */
int
doc_fail(struct schedule_error *e, const char *code, const char *field,
    const char *fmt, ...)
{
	va_list ap;

	snprintf(e->code, sizeof(e->code), "%s", code);
	snprintf(e->field, sizeof(e->field), "%s", field ? field : "");
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
	return -1;
}

/* The field's slot in d, for each storage type. */
static char **
str_at(struct schedule_doc *d, const struct field *f)
{
	return (char **)((char *)d + f->off);
}

static int64_t *
int_at(struct schedule_doc *d, const struct field *f)
{
	return (int64_t *)((char *)d + f->off);
}

/* Enums and anchor_completion are int-sized; see struct schedule_doc. */
static int *
enum_at(struct schedule_doc *d, const struct field *f)
{
	return (int *)((char *)d + f->off);
}

/* Sets field f of d to its default, freeing what it held; 0 or -1 (OOM). */
static int
reset_field(struct schedule_doc *d, const struct field *f)
{
	switch (f->type) {
	case FT_TEXT:
	case FT_ID:
		free(*str_at(d, f));
		*str_at(d, f) = f->sdef ? strdup(f->sdef) : NULL;
		return f->sdef && *str_at(d, f) == NULL ? -1 : 0;
	case FT_INT:
	case FT_TIME:
		*int_at(d, f) = f->def;
		return 0;
	case FT_ENUM:
		*enum_at(d, f) = (int)f->def;
		return 0;
	case FT_TARGET:
		json_decref(d->target);
		d->target = NULL;
		d->target_type = SCHEDULE_TARGET_RECEIVER;
		return 0;
	case FT_LIMITS:
		memset(&d->limits, 0, sizeof(d->limits));
		return 0;
	case FT_PAYLOAD:
		json_decref(d->trigger_payload);
		d->trigger_payload = json_object();
		return d->trigger_payload ? 0 : -1;
	}
	return 0;
}

/*
 * Sets every field of d to its default.  Only an allocation can fail, and
 * then the string or payload is NULL; schedule_parse() reports it.  Pair
 * with schedule_clear().
 */
void
schedule_init(struct schedule_doc *d)
{
	memset(d, 0, sizeof(*d));
	for (int i = 0; i < SCHEDULE_F_COUNT; i++)
		(void)reset_field(d, &fields[i]);
}

/* Frees everything d holds and leaves it zeroed; d may be zeroed already. */
void
schedule_clear(struct schedule_doc *d)
{
	free(d->name);
	free(d->description);
	free(d->cron);
	free(d->timezone);
	free(d->workflow_id);
	free(d->trigger_node_id);
	free(d->organization_id);
	free(d->environment_id);
	json_decref(d->target);
	json_decref(d->trigger_payload);
	memset(d, 0, sizeof(*d));
}

/* 1 if v nests no deeper than max levels of arrays and objects. */
static int
depth_ok(json_t *v, int max)
{
	const char *k;
	json_t *x;
	size_t i;

	if (!json_is_object(v) && !json_is_array(v))
		return 1;
	if (max == 0)
		return 0;
	if (json_is_array(v)) {
		json_array_foreach(v, i, x) if (!depth_ok(x, max - 1)) return 0;
	} else {
		json_object_foreach(
		    v, k, x) if (!depth_ok(x, max - 1)) return 0;
	}
	return 1;
}

/*
 * The first number of v (path: its place, len bytes, the first at in
 * use) that does not come back from the schedules row as jansson read it,
 * or 0.  A value reaches PostgreSQL as jansson writes it (%.17g: exact
 * for every double) and comes back as numeric_out() prints it: in plain
 * digits, never with an exponent.  jansson writes a real of 1e17 or more
 * with an exponent ("1e19"), so it comes back an integer: beyond int64
 * (then jansson cannot read the row at all: the list, the PATCH and the
 * run of the schedule fail) or of another type.  -0.0 comes back 0.
 * Integers are int64 both ways.  With beyond set, only numbers of 2^63
 * or more are reported (a body read with JSON_DECODE_INT_AS_REAL, to
 * find the integer that jansson found too big).
 */
static int
unstorable(json_t *v, char *path, size_t len, size_t at, int beyond)
{
	const char *k;
	json_t *x;
	size_t i;
	double r;

	if (at >= len)
		at = len - 1;
	if (json_is_real(v)) {
		r = json_real_value(v);
		return beyond
		    ? r >= INT64_BEYOND || r < -INT64_BEYOND
		    : fabs(r) >= REAL_STORED_MAX || (r == 0 && signbit(r));
	}
	if (json_is_array(v)) {
		json_array_foreach(v, i, x)
		{
			snprintf(path + at, len - at, "[%zu]", i);
			if (unstorable(
			        x, path, len, at + strlen(path + at), beyond))
				return 1;
		}
	} else if (json_is_object(v)) {
		json_object_foreach(v, k, x)
		{
			snprintf(path + at, len - at, ".%s", k);
			if (unstorable(
			        x, path, len, at + strlen(path + at), beyond))
				return 1;
		}
	}
	path[at] = '\0';
	return 0;
}

/*
 * An integer member v of field, min..max, into *out (NULL: only
 * checked).  0, or -1 with *e naming the field.
 */
int
doc_int(json_t *v, const char *field, int64_t min, int64_t max, int64_t *out,
    struct schedule_error *e)
{
	if (!json_is_integer(v))
		return doc_fail(
		    e, "invalid_field", field, "expected an integer");
	if (json_integer_value(v) < min || json_integer_value(v) > max)
		return doc_fail(e, "invalid_field", field,
		    "expected %lld to %lld", (long long)min, (long long)max);
	if (out != NULL)
		*out = json_integer_value(v);
	return 0;
}

/*
 * Checks that the JSON value v of field (a dotted path, "" for a whole
 * body) survives the round trip through PostgreSQL's jsonb and back
 * through jansson: every number comes back the same number of the same
 * type.  Returns 0, or -1 with *e naming the first number that would not
 * (400: "trigger_payload.x", "target.body.list[2]").
 */
int
schedule_json_storable(
    struct json_t *v, const char *field, struct schedule_error *e)
{
	char path[sizeof(e->field)];

	snprintf(path, sizeof(path), "%s", field);
	if (!unstorable(v, path, sizeof(path), strlen(path), 0))
		return 0;
	return doc_fail(e, "invalid_field", path[0] == '.' ? path + 1 : path,
	    "this number would not come back as it was given (a real of "
	    "1e17 or more comes back from storage as an integer, one beyond "
	    "64 bits cannot be read back at all, -0.0 comes back 0): give an "
	    "integer from -9223372036854775808 to 9223372036854775807, a "
	    "smaller real, or a string");
}

/*
 * Parses a strict RFC 3339 instant into epoch milliseconds:
 * YYYY-MM-DDTHH:MM:SS, an optional fraction of one to three digits (kept;
 * a finer one is refused, not cut), then Z or +HH:MM/-HH:MM.
 * timefmt_parse_ms() also takes forms people type ("@epoch", bare dates,
 * no offset); the API document does not.
 */
static int
parse_time(const char *s, int64_t *out, char *err, size_t errlen)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:dd";
	size_t i;

	for (i = 0; shape[i]; i++)
		if (shape[i] == 'd' ? !isdigit((unsigned char)s[i])
		                    : s[i] != shape[i])
			return log_errbuf(err, errlen,
			    "\"%.40s\" is not an RFC 3339 time", s);
	if (s[i] == '.') {
		for (i++; isdigit((unsigned char)s[i]); i++)
			;
		if (!isdigit((unsigned char)s[i - 1]))
			return log_errbuf(err, errlen, "bad fraction");
	}
	if (strcmp(s + i, "Z") != 0 &&
	    !((s[i] == '+' || s[i] == '-') &&
	        isdigit((unsigned char)s[i + 1]) &&
	        isdigit((unsigned char)s[i + 2]) && s[i + 3] == ':' &&
	        isdigit((unsigned char)s[i + 4]) &&
	        isdigit((unsigned char)s[i + 5]) && s[i + 6] == '\0'))
		return log_errbuf(
		    err, errlen, "\"%.40s\" needs a Z or +HH:MM offset", s);
	return timefmt_parse_ms(s, NULL, out, err, errlen);
}

/* Reads a string field (FT_TEXT) with its length in characters. */
static int
decode_text(const struct field *f, json_t *v, struct schedule_doc *d,
    struct schedule_error *e)
{
	const char *s = json_string_value(v), *keep;
	size_t n;

	if (s == NULL)
		return doc_fail(
		    e, "invalid_field", f->name, "expected a string");
	n = utf8_chars(s);
	if ((int64_t)n < f->lo || (int64_t)n > f->hi)
		return doc_fail(e, "invalid_field", f->name,
		    "must be %lld to %lld characters long", (long long)f->lo,
		    (long long)f->hi);
	/* a description may hold lines; no text may hold terminal controls */
	keep = f->off == OFF(description) ? "\t\n\r" : NULL;
	if (text_escape(s, keep, NULL, 0) != strlen(s))
		return doc_fail(e, "invalid_field", f->name,
		    "must not contain control characters%s",
		    keep ? " other than tab and line ends" : "");
	free(*str_at(d, f));
	if ((*str_at(d, f) = strdup(s)) == NULL)
		return doc_fail(e, "internal", f->name, "out of memory");
	return 0;
}

/* Reads an integer field (FT_INT) within its range. */
static int
decode_int(const struct field *f, json_t *v, struct schedule_doc *d,
    struct schedule_error *e)
{
	json_int_t x;

	if (!json_is_integer(v))
		return doc_fail(
		    e, "invalid_field", f->name, "expected an integer");
	x = json_integer_value(v);
	if (x < f->lo || x > f->hi)
		return doc_fail(e, "invalid_field", f->name,
		    f->hi == INT64_MAX ? "must be at least %lld"
		                       : "must be between %lld and %lld",
		    (long long)f->lo, (long long)f->hi);
	*int_at(d, f) = x;
	return 0;
}

/* Reads one of the names of an FT_ENUM field. */
static int
decode_enum(const struct field *f, json_t *v, struct schedule_doc *d,
    struct schedule_error *e)
{
	const char *s = json_string_value(v);
	char list[128] = "";

	for (int i = 0; s && f->names[i]; i++)
		if (strcmp(s, f->names[i]) == 0) {
			*enum_at(d, f) = i;
			return 0;
		}
	for (int i = 0; f->names[i]; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list),
		    "%s\"%s\"", i ? (f->names[i + 1] ? ", " : " or ") : "",
		    f->names[i]);
	return doc_fail(e, "invalid_field", f->name, "expected %s", list);
}

/* Reads an instant (FT_TIME). */
static int
decode_time(const struct field *f, json_t *v, struct schedule_doc *d,
    struct schedule_error *e)
{
	const char *s = json_string_value(v);
	char err[CV_ERRLEN];

	if (s == NULL)
		return doc_fail(e, "invalid_field", f->name,
		    "expected an RFC 3339 time string");
	if (parse_time(s, int_at(d, f), err, sizeof(err)) == -1)
		return doc_fail(e, "invalid_field", f->name, "%s", err);
	return 0;
}

/* Reads an FT_ID (workflow_id, ...): a string, or a number as text. */
static int
decode_id(const struct field *f, json_t *v, struct schedule_doc *d,
    struct schedule_error *e)
{
	char num[32];
	const char *s = json_string_value(v);

	if (json_is_integer(v)) {
		snprintf(
		    num, sizeof(num), "%lld", (long long)json_integer_value(v));
		s = num;
	}
	if (s == NULL)
		return doc_fail(e, "invalid_field", f->name,
		    "expected a string or an integer");
	if (s[0] == '\0' || utf8_chars(s) > TEXT_ID_MAX)
		return doc_fail(e, "invalid_field", f->name,
		    "must be 1 to %d characters long", TEXT_ID_MAX);
	free(*str_at(d, f));
	if ((*str_at(d, f) = strdup(s)) == NULL)
		return doc_fail(e, "internal", f->name, "out of memory");
	return 0;
}

/* Reads the limits object: each key optional, null = the default. */
static int
decode_limits(json_t *v, struct schedule_doc *d, struct schedule_error *e)
{
	int64_t *slot[] = {&d->limits.cpu_seconds, &d->limits.memory_mb,
	    &d->limits.nofile, &d->limits.nproc, &d->limits.fsize_mb};
	char path[128];
	const char *k;
	json_t *x;
	int i;

	if (!json_is_object(v))
		return doc_fail(
		    e, "invalid_field", "limits", "expected an object");
	memset(&d->limits, 0, sizeof(d->limits));
	json_object_foreach(v, k, x)
	{
		snprintf(path, sizeof(path), "limits.%s", k);
		for (i = 0; limit_names[i] && strcmp(k, limit_names[i]); i++)
			;
		if (limit_names[i] == NULL)
			return doc_fail(
			    e, "unknown_field", path, "unknown field");
		if (json_is_null(x))
			continue;
		if (!json_is_integer(x) || json_integer_value(x) < 1 ||
		    json_integer_value(x) > LIMIT_MAX)
			return doc_fail(e, "invalid_field", path,
			    "expected an integer between 1 and %d", LIMIT_MAX);
		*slot[i] = json_integer_value(x);
	}
	return 0;
}

/* Reads the trigger payload: an object of modest depth. */
static int
decode_payload(json_t *v, struct schedule_doc *d, struct schedule_error *e)
{
	if (!json_is_object(v))
		return doc_fail(e, "invalid_field", "trigger_payload",
		    "expected an object");
	if (!depth_ok(v, PAYLOAD_DEPTH_MAX))
		return doc_fail(e, "invalid_field", "trigger_payload",
		    "nested deeper than %d levels", PAYLOAD_DEPTH_MAX);
	if (schedule_json_storable(v, "trigger_payload", e) == -1)
		return -1;
	json_decref(d->trigger_payload);
	d->trigger_payload = json_deep_copy(v);
	return d->trigger_payload
	    ? 0
	    : doc_fail(e, "internal", "trigger_payload", "out of memory");
}

static int check_target(
    json_t *t, enum schedule_target *type, struct schedule_error *e);

/* Reads the target, which check_target() validates. */
static int
decode_target(json_t *v, struct schedule_doc *d, struct schedule_error *e)
{
	static const char *const optional[] = {"cwd", "run_as", "body", "env",
	    "headers", "url", "maxlen", "raw_key", NULL};
	enum schedule_target type = SCHEDULE_TARGET_RECEIVER;
	json_t *copy;

	if (check_target(v, &type, e) == -1 ||
	    schedule_json_storable(v, "target", e) == -1)
		return -1;
	if ((copy = json_deep_copy(v)) == NULL)
		return doc_fail(e, "internal", "target", "out of memory");
	/* Optional members given as null are dropped: null is the default. */
	for (int i = 0; optional[i]; i++)
		if (json_is_null(json_object_get(copy, optional[i])))
			json_object_del(copy, optional[i]);
	if (type == SCHEDULE_TARGET_HTTP && !json_object_get(copy, "method") &&
	    json_object_set_new(copy, "method", json_string("POST")) == -1) {
		json_decref(copy);
		return doc_fail(e, "internal", "target", "out of memory");
	}
	json_decref(d->target);
	d->target = copy;
	d->target_type = type;
	return 0;
}

/* Reads one present, non-null field. */
static int
decode_value(const struct field *f, json_t *v, struct schedule_doc *d,
    struct schedule_error *e)
{
	switch (f->type) {
	case FT_TEXT:
		return decode_text(f, v, d, e);
	case FT_INT:
		return decode_int(f, v, d, e);
	case FT_ENUM:
		return decode_enum(f, v, d, e);
	case FT_TIME:
		return decode_time(f, v, d, e);
	case FT_ID:
		return decode_id(f, v, d, e);
	case FT_LIMITS:
		return decode_limits(v, d, e);
	case FT_PAYLOAD:
		return decode_payload(v, d, e);
	case FT_TARGET:
		return decode_target(v, d, e);
	}
	return 0;
}

static const struct field *
field_find(const char *name)
{
	for (int i = 0; i < SCHEDULE_F_COUNT; i++)
		if (strcmp(fields[i].name, name) == 0)
			return &fields[i];
	return NULL;
}

/* Reads every member of the object root into d, marking them present. */
static int
decode_fields(json_t *root, struct schedule_doc *d, struct schedule_error *e)
{
	const struct field *f;
	const char *k;
	json_t *v;

	json_object_foreach(root, k, v)
	{
		if ((f = field_find(k)) == NULL)
			return doc_fail(e, "unknown_field", k, "unknown field");
		d->present |= 1u << (f - fields);
		if (!json_is_null(v)) {
			if (decode_value(f, v, d, e) == -1)
				return -1;
		} else if (!f->nullable) {
			return doc_fail(
			    e, "invalid_field", k, "must not be null");
		} else if (reset_field(d, f) == -1) {
			return doc_fail(e, "internal", k, "out of memory");
		}
	}
	return 0;
}

/* Without "kind", the one timing field given says it (seed 000). */
static int
infer_kind(json_t *root, struct schedule_doc *d, struct schedule_error *e)
{
	int n = (d->interval_seconds != UNSET) + (d->cron != NULL) +
	    (d->at != UNSET);

	if (json_object_get(root, "kind") != NULL)
		return 0;
	if (n != 1)
		return doc_fail(e, n ? "invalid_field" : "missing_field",
		    "kind",
		    n ? "give kind: more than one of interval_seconds, cron "
		        "and at is set"
		      : "a schedule needs interval_seconds, cron or at");
	d->kind = d->interval_seconds != UNSET ? SCHED_KIND_INTERVAL
	    : d->cron                          ? SCHED_KIND_CRON
	                                       : SCHED_KIND_ONCE;
	return 0;
}

/* The timing fields of d agree with its kind. */
static int
check_kind(const struct schedule_doc *d, struct schedule_error *e)
{
	int iv = d->kind == SCHED_KIND_INTERVAL,
	    cr = d->kind == SCHED_KIND_CRON;
	int on = d->kind == SCHED_KIND_ONCE;
	const char *k = kinds[d->kind];

	if (iv && d->interval_seconds == UNSET)
		return doc_fail(e, "missing_field", "interval_seconds",
		    "required for kind interval");
	if (cr && d->cron == NULL)
		return doc_fail(
		    e, "missing_field", "cron", "required for kind cron");
	if (on && d->at == UNSET)
		return doc_fail(
		    e, "missing_field", "at", "required for kind once");
	if (!iv && d->interval_seconds != UNSET)
		return doc_fail(e, "invalid_field", "interval_seconds",
		    "not allowed for kind %s", k);
	if (!iv && d->anchor_completion)
		return doc_fail(e, "invalid_field", "anchor",
		    "completion is only for kind interval");
	if (!cr && d->cron != NULL)
		return doc_fail(
		    e, "invalid_field", "cron", "not allowed for kind %s", k);
	if (!on && d->at != UNSET)
		return doc_fail(
		    e, "invalid_field", "at", "not allowed for kind %s", k);
	if (on && d->start_at != UNSET)
		return doc_fail(e, "invalid_field", "start_at",
		    "not allowed for kind once");
	return 0;
}

/* The rules across fields, once every field is read. */
static int
check_doc(json_t *root, struct schedule_doc *d, struct schedule_error *e)
{
	char err[CV_ERRLEN];
	struct cron c;

	if (d->name == NULL)
		return doc_fail(e, "missing_field", "name", "required");
	if (d->description == NULL || d->timezone == NULL ||
	    d->trigger_payload == NULL)
		return doc_fail(e, "internal", NULL, "out of memory");
	if (infer_kind(root, d, e) == -1 || check_kind(d, e) == -1)
		return -1;
	if (d->cron && cron_parse(d->cron, &c, err, sizeof(err)) == -1)
		return doc_fail(e, "invalid_field", "cron", "%s", err);
	if (tz_get(d->timezone, err, sizeof(err)) == NULL)
		return doc_fail(e, "invalid_field", "timezone", "%s", err);
	return 0;
}

/* Reads the object root into d (initialised by the caller). */
static int
decode_doc(json_t *root, struct schedule_doc *d, struct schedule_error *e)
{
	if (!json_is_object(root))
		return doc_fail(
		    e, "invalid_json", NULL, "expected a JSON object");
	if (decode_fields(root, d, e) == -1)
		return -1;
	return check_doc(root, d, e);
}

/* Loads a body strictly: duplicates, garbage and bad UTF-8 are errors. */
json_t *
doc_load(const char *json, size_t len, struct schedule_error *e)
{
	json_error_t jerr;
	json_t *root;

	char path[sizeof(e->field)] = "";

	if ((root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr)) !=
	    NULL)
		return root;
	/*
	 * An integer beyond int64 is refused by jansson before any field is
	 * known; read as reals, the body says where it is.
	 */
	if (strncmp(jerr.text, "too big", 7) == 0 &&
	    (root = json_loadb(json, len,
	         JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL, NULL)) &&
	    unstorable(root, path, sizeof(path), 0, 1)) {
		json_decref(root);
		doc_fail(e, "invalid_field", path[0] == '.' ? path + 1 : path,
		    "%s: numbers must fit in 64 bits (integers) or a double "
		    "(reals)",
		    jerr.text);
		return NULL;
	}
	json_decref(root);
	doc_fail(e, "invalid_json", NULL, "line %d column %d: %s%s", jerr.line,
	    jerr.column, jerr.text,
	    strstr(jerr.text, "number overflow") || strstr(jerr.text, "too big")
	        ? " (numbers must fit in 64 bits or a double)"
	        : "");
	return NULL;
}

/*
 * Parses and validates the schedule document json[0..len) (a POST body,
 * native or in a seed's spelling: spelling.c) into *out, which the caller
 * need not initialise.  Returns 0 with *out
 * owned by the caller (schedule_clear()), or -1 with *e saying what and
 * where, and *out cleared.  out->present says which fields the body named.
 */
int
schedule_parse(const char *json, size_t len, struct schedule_doc *out,
    struct schedule_error *e)
{
	json_t *root;
	int r;

	schedule_init(out);
	if ((root = doc_load(json, len, e)) == NULL) {
		schedule_clear(out);
		return -1;
	}
	r = json_is_object(root) ? spelling_apply(root, NULL, out, e) : 0;
	if (r == 0)
		r = decode_doc(root, out, e);
	json_decref(root);
	if (r == -1) {
		spelling_error(out, e);
		schedule_clear(out);
	}
	return r;
}

/* 1 if s is a valid environment variable name. */
static int
env_name_ok(const char *s)
{
	if (!isalpha((unsigned char)*s) && *s != '_')
		return 0;
	for (s++; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return 0;
	return 1;
}

/* 1 if s is an HTTP token (RFC 9110): a method or a header name. */
static int
token_ok(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) &&
		    !strchr("!#$%&'*+-.^_`|~", *s))
			return 0;
	return 1;
}

/*
 * Checks an object of strings: env (keys are variable names) or headers
 * (keys are tokens, values without CR or LF, which would inject headers).
 */
static int
check_map(json_t *v, int headers, const char *path, struct schedule_error *e)
{
	const char *k, *s;
	json_t *x;

	if (!json_is_object(v))
		return doc_fail(e, "invalid_field", path, "expected an object");
	json_object_foreach(v, k, x)
	{
		if (headers ? !token_ok(k) : !env_name_ok(k))
			return doc_fail(e, "invalid_field", path,
			    "\"%.40s\" is not a valid %s name", k,
			    headers ? "header" : "variable");
		if ((s = json_string_value(x)) == NULL)
			return doc_fail(e, "invalid_field", path,
			    "\"%.40s\": expected a string", k);
		if (headers && strpbrk(s, "\r\n"))
			return doc_fail(e, "invalid_field", path,
			    "\"%.40s\": CR or LF in a header value", k);
	}
	return 0;
}

/* Checks argv: a non-empty array of strings, the first not empty. */
static int
check_argv(json_t *v, const char *path, struct schedule_error *e)
{
	json_t *x;
	size_t i;

	if (!json_is_array(v) || json_array_size(v) == 0 ||
	    json_array_size(v) > 4096)
		return doc_fail(e, "invalid_field", path,
		    "expected an array of 1 to 4096 strings");
	json_array_foreach(v, i, x) if (!json_is_string(x)) return doc_fail(
	    e, "invalid_field", path, "element %zu: expected a string", i);
	if (json_string_value(json_array_get(v, 0))[0] == '\0')
		return doc_fail(
		    e, "invalid_field", path, "the command is empty");
	return 0;
}

/* Checks an http(s) URL with a host and no spaces or control bytes. */
int
doc_check_url(json_t *v, const char *path, struct schedule_error *e)
{
	const char *s = json_string_value(v), *h;

	if (s == NULL)
		return doc_fail(e, "invalid_field", path, "expected a string");
	if (strncasecmp(s, "http://", 7) == 0)
		h = s + 7;
	else if (strncasecmp(s, "https://", 8) == 0)
		h = s + 8;
	else
		return doc_fail(
		    e, "invalid_field", path, "expected an http or https URL");
	if (*h == '\0' || strchr("/?#:@", *h) || strlen(s) > 8192)
		return doc_fail(
		    e, "invalid_field", path, "the URL has no host");
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || *s == 0x7f)
			return doc_fail(e, "invalid_field", path,
			    "spaces and control characters must be escaped");
	return 0;
}

/*
 * Checks one member k (not "type") of an agent target, or of a pipeline
 * target (pipeline 1): the same members, its id under "pipeline".
 */
static int
check_agent_member(const char *k, json_t *v, int pipeline, const char *path,
    struct schedule_error *e)
{
	static const char *const envs[] = {
	    "production", "staging", "development", NULL};
	const char *s = json_string_value(v);
	int i;

	if (strcmp(k, pipeline ? "pipeline" : "agent") == 0)
		return s && agent_slug_ok(s)
		    ? 0
		    : doc_fail(e, "invalid_field", path,
		          "expected a%s id (a slug: a-z, 0-9 and '-')",
		          pipeline ? " pipeline" : "n agent");
	if (strcmp(k, "params") == 0)
		return json_is_object(v) && depth_ok(v, PAYLOAD_DEPTH_MAX)
		    ? 0
		    : doc_fail(e, "invalid_field", path,
		          "expected an object (nested at most %d deep)",
		          PAYLOAD_DEPTH_MAX);
	if (strcmp(k, "environment") == 0) {
		for (i = 0; s && envs[i] && strcmp(envs[i], s); i++)
			;
		return s && envs[i] ? 0
		                    : doc_fail(e, "invalid_field", path,
		                          "expected \"production\", "
		                          "\"staging\" or \"development\"");
	}
	if (strcmp(k, "timeout_ms") == 0)
		return json_is_integer(v) && json_integer_value(v) >= 1 &&
		        json_integer_value(v) <= 31536000000LL
		    ? 0
		    : doc_fail(e, "invalid_field", path,
		          "expected milliseconds from 1 to 31536000000");
	return doc_fail(e, "unknown_field", path,
	    "unknown field for a%s target", pipeline ? " pipeline" : "n agent");
}

/*
 * Checks one member k (not "type") of a redis target (docs/schedules.md,
 * "Redis targets"): command, key, url, maxlen, body, raw_key.
 */
static int
check_redis_member(
    const char *k, json_t *v, const char *path, struct schedule_error *e)
{
	const char *s = json_string_value(v);
	struct redis_url u;
	char err[CV_ERRLEN];

	if (strcmp(k, "command") == 0)
		return s &&
		        (strcmp(s, "xadd") == 0 || strcmp(s, "lpush") == 0 ||
		            strcmp(s, "publish") == 0)
		    ? 0
		    : doc_fail(e, "invalid_field", path,
		          "expected \"xadd\", \"lpush\" or \"publish\"");
	if (strcmp(k, "key") == 0) {
		if (s == NULL || s[0] == '\0' ||
		    strlen(s) != json_string_length(v) ||
		    strlen(s) > REDIS_KEY_MAX)
			return doc_fail(e, "invalid_field", path,
			    "expected a key of 1 to %d bytes, no NUL",
			    REDIS_KEY_MAX);
		return 0;
	}
	if (strcmp(k, "url") == 0) {
		if (json_is_null(v))
			return 0;
		if (s == NULL || strlen(s) > 2048 ||
		    redis_url_parse(s, &u, err, sizeof(err)) == -1)
			return doc_fail(e, "invalid_field", path, "%s",
			    s == NULL ? "expected a redis:// or unix:// URL"
			              : err);
		explicit_bzero(&u, sizeof(u));
		return 0;
	}
	if (strcmp(k, "maxlen") == 0)
		return json_is_null(v) ||
		        (json_is_integer(v) && json_integer_value(v) >= 1 &&
		            json_integer_value(v) <= 100000000)
		    ? 0
		    : doc_fail(e, "invalid_field", path,
		          "expected a number of entries from 1 to 100000000");
	if (strcmp(k, "raw_key") == 0)
		return json_is_boolean(v) || json_is_null(v)
		    ? 0
		    : doc_fail(
		          e, "invalid_field", path, "expected true or false");
	if (strcmp(k, "body") == 0)
		return depth_ok(v, PAYLOAD_DEPTH_MAX)
		    ? 0
		    : doc_fail(e, "invalid_field", path, "nested too deeply");
	return doc_fail(
	    e, "unknown_field", path, "unknown field for a redis target");
}

/* Checks one member k (not "type") of a target of the given type. */
static int
check_member(enum schedule_target type, const char *k, json_t *v,
    const char *path, struct schedule_error *e)
{
	const char *s = json_string_value(v);
	int opt = json_is_null(v);

	if (type == SCHEDULE_TARGET_AGENT || type == SCHEDULE_TARGET_PIPELINE)
		return check_agent_member(
		    k, v, type == SCHEDULE_TARGET_PIPELINE, path, e);
	if (type == SCHEDULE_TARGET_REDIS)
		return check_redis_member(k, v, path, e);

	if (type == SCHEDULE_TARGET_EXEC && strcmp(k, "argv") == 0)
		return check_argv(v, path, e);
	if (strcmp(k, type == SCHEDULE_TARGET_EXEC ? "env" : "headers") == 0)
		return opt
		    ? 0
		    : check_map(v, type == SCHEDULE_TARGET_HTTP, path, e);
	if (type == SCHEDULE_TARGET_EXEC && strcmp(k, "cwd") == 0)
		return opt || (s && s[0] == '/')
		    ? 0
		    : doc_fail(e, "invalid_field", path,
		          "expected an absolute path");
	if (type == SCHEDULE_TARGET_EXEC && strcmp(k, "run_as") == 0)
		return opt || (s && s[0] && strlen(s) <= 64 && !strchr(s, ':'))
		    ? 0
		    : doc_fail(
		          e, "invalid_field", path, "expected a user name");
	if (type == SCHEDULE_TARGET_HTTP && strcmp(k, "method") == 0)
		return s && token_ok(s) && strlen(s) <= 16
		    ? 0
		    : doc_fail(
		          e, "invalid_field", path, "expected an HTTP method");
	if (type == SCHEDULE_TARGET_HTTP && strcmp(k, "url") == 0)
		return doc_check_url(v, path, e);
	if (type == SCHEDULE_TARGET_HTTP && strcmp(k, "body") == 0)
		return depth_ok(v, PAYLOAD_DEPTH_MAX)
		    ? 0
		    : doc_fail(e, "invalid_field", path, "nested too deeply");
	return doc_fail(e, "unknown_field", path,
	    "unknown field for a%s target",
	    type == SCHEDULE_TARGET_EXEC ? "n exec" : "n http");
}

/* Checks a target object and says its type. */
static int
check_target(json_t *t, enum schedule_target *type, struct schedule_error *e)
{
	json_t *tv = json_object_get(t, "type"), *v;
	const char *ty = json_string_value(tv), *k;
	char path[128];

	if (!json_is_object(t))
		return doc_fail(
		    e, "invalid_field", "target", "expected an object or null");
	if (tv == NULL)
		return doc_fail(e, "missing_field", "target.type", "required");
	if (ty == NULL ||
	    (strcmp(ty, "exec") && strcmp(ty, "http") && strcmp(ty, "agent") &&
	        strcmp(ty, "pipeline") && strcmp(ty, "redis")))
		return doc_fail(e, "invalid_field", "target.type",
		    "expected \"exec\", \"http\", \"agent\", \"pipeline\" "
		    "or \"redis\"");
	*type = ty[0] == 'e' ? SCHEDULE_TARGET_EXEC
	    : ty[0] == 'h'   ? SCHEDULE_TARGET_HTTP
	    : ty[0] == 'a'   ? SCHEDULE_TARGET_AGENT
	    : ty[0] == 'r'   ? SCHEDULE_TARGET_REDIS
	                     : SCHEDULE_TARGET_PIPELINE;
	json_object_foreach(t, k, v)
	{
		snprintf(path, sizeof(path), "target.%s", k);
		if (strcmp(k, "type") && check_member(*type, k, v, path, e))
			return -1;
	}
	if (*type == SCHEDULE_TARGET_EXEC && !json_object_get(t, "argv"))
		return doc_fail(e, "missing_field", "target.argv", "required");
	if (*type == SCHEDULE_TARGET_HTTP && !json_object_get(t, "url"))
		return doc_fail(e, "missing_field", "target.url", "required");
	if (*type == SCHEDULE_TARGET_AGENT && !json_object_get(t, "agent"))
		return doc_fail(e, "missing_field", "target.agent", "required");
	if (*type == SCHEDULE_TARGET_PIPELINE &&
	    !json_object_get(t, "pipeline"))
		return doc_fail(
		    e, "missing_field", "target.pipeline", "required");
	if (*type == SCHEDULE_TARGET_REDIS) {
		const char *c =
		    json_string_value(json_object_get(t, "command"));

		if (c == NULL)
			return doc_fail(
			    e, "missing_field", "target.command", "required");
		if (!json_object_get(t, "key"))
			return doc_fail(
			    e, "missing_field", "target.key", "required");
		if (strcmp(c, "publish") == 0 &&
		    !json_is_null(json_object_get(t, "maxlen")) &&
		    json_object_get(t, "maxlen") != NULL)
			return doc_fail(e, "invalid_field", "target.maxlen",
			    "a publish keeps nothing: no maxlen");
	}
	return 0;
}

/* The limits that are set, as an object (unset ones are absent). */
static json_t *
encode_limits(const struct schedule_limits *l)
{
	const int64_t v[] = {
	    l->cpu_seconds, l->memory_mb, l->nofile, l->nproc, l->fsize_mb};
	json_t *o = json_object();

	for (int i = 0; o && limit_names[i]; i++)
		if (v[i] != 0 &&
		    json_object_set_new(
		        o, limit_names[i], json_integer(v[i]))) {
			json_decref(o);
			return NULL;
		}
	return o;
}

/* One field as the API returns it; NULL when out of memory. */
static json_t *
encode_field(const struct schedule_doc *cd, const struct field *f)
{
	/* The accessors take a mutable doc; nothing below writes to it. */
	struct schedule_doc *d = (struct schedule_doc *)cd;
	char buf[40];

	switch (f->type) {
	case FT_TEXT:
	case FT_ID:
		return *str_at(d, f) ? json_string(*str_at(d, f)) : json_null();
	case FT_INT:
		return *int_at(d, f) == UNSET ? json_null()
		                              : json_integer(*int_at(d, f));
	case FT_ENUM:
		return json_string(f->names[*enum_at(d, f)]);
	case FT_TIME:
		if (*int_at(d, f) == UNSET)
			return json_null();
		return timefmt_utc_ms(*int_at(d, f), buf, sizeof(buf)) == -1
		    ? NULL
		    : json_string(buf);
	case FT_TARGET:
		return d->target ? json_deep_copy(d->target) : json_null();
	case FT_LIMITS:
		return encode_limits(&d->limits);
	case FT_PAYLOAD:
		return json_deep_copy(d->trigger_payload);
	}
	return NULL;
}

/*
 * The document d as the API returns it: every field of the schedule
 * document, unset ones as null, times as RFC 3339 in UTC, the kind always
 * spelled out.  Parsing it again gives an equal document.  Returns a new
 * reference the caller json_decref()s, or NULL when out of memory.
 */
json_t *
schedule_to_json(const struct schedule_doc *d)
{
	json_t *o = json_object(), *v;

	for (int i = 0; o && i < SCHEDULE_F_COUNT; i++)
		if ((v = encode_field(d, &fields[i])) == NULL ||
		    json_object_set_new(o, fields[i].name, v) == -1) {
			json_decref(o);
			return NULL;
		}
	return o;
}

/*
 * 1 if a and b hold the same document (present and nulled bits aside),
 * else 0; 0 too when memory runs out.
 */
int
schedule_equal(const struct schedule_doc *a, const struct schedule_doc *b)
{
	json_t *ja = schedule_to_json(a), *jb = schedule_to_json(b);
	int r = ja && jb && json_equal(ja, jb);

	json_decref(ja);
	json_decref(jb);
	return r;
}

/*
 * Reads the document of a stored schedule from row, the JSON of a
 * schedules row (cronvisor_schedule_json() in sql/functions.sql): the
 * members that are document fields, validated like a body; the others
 * (id, owner, status, counters) are ignored.  Returns 0 with *out owned by
 * the caller, or -1 with *e set (a row written by hand that the API would
 * not accept) and *out cleared.
 */
int
schedule_from_row(
    struct json_t *row, struct schedule_doc *out, struct schedule_error *e)
{
	json_t *doc = json_object();
	int r = -1;

	schedule_init(out);
	if (doc == NULL || !json_is_object(row)) {
		doc_fail(e, "internal", NULL, "not a schedules row");
		goto out;
	}
	for (int i = 0; i < SCHEDULE_F_COUNT; i++) {
		json_t *v = json_object_get(row, fields[i].name);

		if (v && json_object_set(doc, fields[i].name, v) == -1) {
			doc_fail(e, "internal", NULL, "out of memory");
			goto out;
		}
	}
	r = decode_doc(doc, out, e);
out:
	json_decref(doc);
	if (r == -1)
		schedule_clear(out);
	return r;
}

/* The patch changes the kind: forget the old kind's timing fields. */
static void
drop_old_timing(json_t *merged, json_t *patch)
{
	static const char *const timing[] = {
	    "interval_seconds", "anchor", "cron", "at", NULL};
	const char *k = json_string_value(json_object_get(patch, "kind"));

	if (k == NULL ||
	    json_equal(json_object_get(merged, "kind"),
	        json_object_get(patch, "kind")))
		return;
	for (int i = 0; timing[i]; i++)
		if (!json_object_get(patch, timing[i]))
			json_object_del(merged, timing[i]);
	if (strcmp(k, "once") == 0 && !json_object_get(patch, "start_at"))
		json_object_del(merged, "start_at");
}

/*
 * Applies the PATCH body json[0..len) to *d: fields the body names take
 * its values (null: the default; target and limits are replaced whole,
 * not merged), the others keep theirs, and the result is validated as a
 * whole like schedule_parse().  A patch that changes the kind drops the
 * old kind's timing fields it does not restate.  A seed's spellings are
 * read against *d (spelling.c: where startAt goes depends on the kind, an
 * agent's params patch its target).  Returns 0 with *d
 * replaced, d->present naming the fields the body named and d->nulled
 * those it set to null, or -1 with *e set and *d untouched.
 */
int
schedule_patch(struct schedule_doc *d, const char *json, size_t len,
    struct schedule_error *e)
{
	json_t *patch, *merged = NULL;
	struct schedule_doc nd;
	int r = -1;

	schedule_init(&nd);
	if ((patch = doc_load(json, len, e)) == NULL)
		goto out;
	if (!json_is_object(patch)) {
		doc_fail(e, "invalid_json", NULL, "expected a JSON object");
		goto out;
	}
	if (spelling_apply(patch, d, &nd, e) == -1)
		goto out;
	if ((merged = schedule_to_json(d)) == NULL) {
		doc_fail(e, "internal", NULL, "out of memory");
		goto out;
	}
	drop_old_timing(merged, patch);
	if (json_object_update(merged, patch) == -1 ||
	    decode_doc(merged, &nd, e) == -1)
		goto out;
	/* decode_doc() marked the merged fields: keep the patch's only. */
	nd.present = nd.nulled = 0;
	for (int i = 0; i < SCHEDULE_F_COUNT; i++) {
		json_t *v = json_object_get(patch, fields[i].name);

		if (v != NULL)
			nd.present |= 1u << i;
		if (json_is_null(v))
			nd.nulled |= 1u << i;
	}
	schedule_clear(d);
	*d = nd;
	memset(&nd, 0, sizeof(nd));
	r = 0;
out:
	if (r == -1)
		spelling_error(&nd, e);
	schedule_clear(&nd);
	json_decref(patch);
	json_decref(merged);
	return r;
}

/*
 * Fills the timing of common/slot.c for a valid document d (no start_at:
 * CV_TIME_MIN).  Returns 0, or -1 with err set if the zone cannot be read
 * or the cron does not parse (not for a document schedule_parse() passed).
 */
int
schedule_timing(
    const struct schedule_doc *d, struct timing *tm, char *err, size_t errlen)
{
	memset(tm, 0, sizeof(*tm));
	tm->kind = d->kind;
	tm->interval = d->interval_seconds;
	tm->start_at = CV_TIME_MIN;
	slot_set_ms(tm, d->at, d->start_at);
	tm->gap = d->dst_gap;
	tm->fold = d->dst_fold;
	if ((tm->tz = tz_get(d->timezone, err, errlen)) == NULL)
		return -1;
	if (d->kind == SCHED_KIND_CRON)
		return cron_parse(d->cron, &tm->cron, err, errlen);
	return 0;
}

/*
 * The first slot of a new (or re-timed) valid schedule d created at now:
 * the row's next_slot_at, and its next_run_at (jitter needs the row's id,
 * so the first run is not jittered).
 *   interval without start_at: now + interval_seconds, as seed 000 does
 *     (and as resume does): the first run comes one interval after the
 *     create, and the supervisor anchors later slots on it;
 *   interval with start_at: the first slot start_at + k * interval at or
 *     after now (start_at itself while it lies ahead);
 *   cron: the first match strictly after now, never before start_at;
 *   once: at, if it is not in the past.
 * Returns 1 with *out filled, 0 when there is no slot (a once in the past,
 * beyond year 9999), -1 if the timing cannot be built.
 */
int
schedule_first_slot(const struct schedule_doc *d, int64_t now, struct slot *out)
{
	struct timing tm;
	char err[CV_ERRLEN];

	memset(out, 0, sizeof(*out));
	if (schedule_timing(d, &tm, err, sizeof(err)) == -1)
		return -1;
	if (d->kind == SCHED_KIND_INTERVAL && d->start_at == UNSET) {
		if (now > CV_TIME_MAX - d->interval_seconds)
			return 0;
		out->at = now + d->interval_seconds;
		out->wall = out->at + tz_offset_at(tm.tz, out->at);
		return 1;
	}
	return slot_next(&tm, d->kind == SCHED_KIND_CRON ? now : now - 1, out);
}

/*
 * The next n fire times of document d, as schedule_slot_json() objects:
 * from the slot *pending when one is (an active schedule's next slot),
 * else from schedule_first_slot() at now; then slot_next().  An interval
 * without start_at counts from that first slot, as the supervisor anchors
 * it.  An empty list when d has no slot or no valid timing; NULL out of
 * memory.  The API's previews: GET /schedules/{id} and POST
 * /schedules/preview (issue 22's console).
 */
json_t *
schedule_fire_times(const struct schedule_doc *d, int64_t now,
    const int64_t *pending, int64_t n)
{
	json_t *list = json_array(), *o;
	struct timing tm;
	struct slot s;
	char err[CV_ERRLEN];
	int ok;

	if (list == NULL || schedule_timing(d, &tm, err, sizeof(err)) == -1)
		return list;
	if (pending != NULL) {
		if (d->kind == SCHED_KIND_INTERVAL && d->start_at == UNSET)
			tm.start_at = *pending;
		ok = slot_next(&tm, *pending - 1, &s);
	} else {
		ok = schedule_first_slot(d, now, &s) == 1;
		if (ok && d->kind == SCHED_KIND_INTERVAL &&
		    d->start_at == UNSET)
			tm.start_at = s.at;
	}
	for (int64_t i = 0; ok && i < n; i++) {
		if ((o = schedule_slot_json(&tm, &s)) == NULL ||
		    json_array_append_new(list, o) == -1) {
			json_decref(list);
			return NULL;
		}
		ok = slot_next(&tm, s.at, &s);
	}
	return list;
}

/* One value of schedule_to_json() as a text parameter; -1 on OOM. */
static int
param_text(json_t *v, char **out)
{
	char num[32];

	*out = NULL;
	if (json_is_null(v))
		return 0;
	if (json_is_integer(v)) {
		snprintf(
		    num, sizeof(num), "%lld", (long long)json_integer_value(v));
		*out = strdup(num);
	} else if (json_is_string(v)) {
		*out = strdup(json_string_value(v));
	} else {
		*out = json_dumps(v, JSON_COMPACT);
	}
	return *out ? 0 : -1;
}

_Static_assert(SCHEDULE_PARAMS == SCHEDULE_F_COUNT, "one column per field");

/*
 * Fills p with the columns of the schedules table that d maps to (their
 * names are the document's) and their values as text for db_exec()'s
 * parameters: NULL for SQL NULL, times in RFC 3339 UTC, target, limits
 * and trigger_payload as compact JSON.  Returns 0 with p owned by the
 * caller (schedule_params_clear()), or -1 when out of memory (p cleared).
 */
int
schedule_params(const struct schedule_doc *d, struct schedule_params *p)
{
	json_t *doc = schedule_to_json(d);
	int r = doc ? 0 : -1;

	memset(p, 0, sizeof(*p));
	for (int i = 0; r == 0 && i < SCHEDULE_F_COUNT; i++) {
		p->columns[i] = fields[i].name;
		r = param_text(
		    json_object_get(doc, fields[i].name), &p->values[i]);
	}
	json_decref(doc);
	if (r == -1)
		schedule_params_clear(p);
	return r;
}

/* Frees the values schedule_params() made; p may be cleared already. */
void
schedule_params_clear(struct schedule_params *p)
{
	for (int i = 0; i < SCHEDULE_PARAMS; i++)
		free(p->values[i]);
	memset(p, 0, sizeof(*p));
}

/*
 * One fire time of timing tm as JSON, for previews (the API's
 * next_fire_times, `cronvisorctl next --json`): the instant as epoch
 * (whole seconds) and UTC (with its milliseconds, if any), the wall time with
 * its offset in the zone, the zone's abbreviation, and what a DST rule did to
 * it (note, or null).  NULL when out of memory.
 */
struct json_t *
schedule_slot_json(const struct timing *tm, const struct slot *sl)
{
	char utc[40], local[40];
	struct tz_span sp = {.abbr = "UTC"};

	if (tm->tz)
		tz_span_at(tm->tz, sl->at, &sp);
	timefmt_utc_ms(slot_ms(tm, sl->at), utc, sizeof(utc));
	timefmt_local_ms(slot_ms(tm, sl->at), tm->tz, local, sizeof(local));
	return json_pack("{s:I, s:s, s:s, s:s, s:i, s:s?}", "epoch",
	    (json_int_t)sl->at, "utc", utc, "local", local, "abbr", sp.abbr,
	    "offset", (int)sp.offset, "note",
	    sl->note == SLOT_NOTE_NONE ? NULL : slot_note_text(sl->note));
}
