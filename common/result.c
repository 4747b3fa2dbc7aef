/*
 * result.c: the one message a runner child sends its supervisor.  After the
 * target finished (or could not start) the runner writes exactly one frame
 * to its result pipe: a 4-byte big-endian payload length, then a msgpack map
 * with short string keys ("st" status, "du" duration, "out" output tail, and
 * so on; the table `fields` below is the whole protocol).  The supervisor
 * reads the pipe without blocking and feeds whatever arrived to a
 * result_reader, which checks the length before buffering a byte of payload
 * and then decodes it.  The bytes come from a process that runs arbitrary
 * jobs, so every frame is untrusted: a malformed one becomes an error
 * message the caller records as a protocol error, never a crash and never
 * an allocation sized by the sender.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "cronvisor.h"

/* Containers (of unknown keys) may nest this deep; msgpack-c allows 32. */
#define RESULT_DEPTH_MAX 16

/* The largest result the encoder can produce must fit in a frame. */
_Static_assert(RESULT_OUTPUT_MAX + RESULT_ERROR_MAX + 256 <= RESULT_FRAME_MAX,
    "a full result must fit in one frame");

enum field_kind {
	FIELD_STATUS, /* a status name, as a string */
	FIELD_INT,    /* an int64_t member of struct result */
	FIELD_OUTPUT, /* the output tail: bin or str, may hold NULs */
	FIELD_ERROR,  /* the error text: str without NULs, or nil */
	FIELD_BOOL,   /* the retryable flag */
};

#define FIELD_REQUIRED 0x01 /* a frame without this key is rejected */
#define FIELD_NIL      0x02 /* nil is accepted and keeps the default */
#define FIELD_ZERO     0x04 /* 0 is accepted besides min..max */

/* One key of the result map: how it is checked, read and written. */
struct field {
	const char *key;      /* the key on the wire */
	enum field_kind kind; /* how the value is read and written */
	unsigned flags;       /* FIELD_* above */
	int64_t min;          /* FIELD_INT: smallest value accepted */
	int64_t max;          /* FIELD_INT: largest value; else max bytes */
	size_t off;           /* FIELD_INT: offsetof the member */
	const char *want;     /* what the value must be, for messages */
};

static const struct field fields[] = {
    {"st", FIELD_STATUS, FIELD_REQUIRED, 0, 0, 0,
        "\"ok\", \"failed\", \"timeout\" or \"error\""},
    {"du", FIELD_INT, FIELD_REQUIRED, 0, INT64_MAX,
        offsetof(struct result, duration_us), "a non-negative integer"},
    {"ec", FIELD_INT, FIELD_NIL, -1, 255, offsetof(struct result, exit_code),
        "an integer from -1 to 255, or nil"},
    {"sg", FIELD_INT, FIELD_NIL, 0, 64, offsetof(struct result, signal),
        "an integer from 0 to 64, or nil"},
    {"hs", FIELD_INT, FIELD_NIL | FIELD_ZERO, 100, 599,
        offsetof(struct result, http_status),
        "0, an integer from 100 to 599, or nil"},
    {"cu", FIELD_INT, FIELD_NIL, 0, INT64_MAX,
        offsetof(struct result, cpu_user_us), "a non-negative integer or nil"},
    {"cs", FIELD_INT, FIELD_NIL, 0, INT64_MAX,
        offsetof(struct result, cpu_sys_us), "a non-negative integer or nil"},
    {"rss", FIELD_INT, FIELD_NIL, 0, INT64_MAX,
        offsetof(struct result, max_rss_kb), "a non-negative integer or nil"},
    {"out", FIELD_OUTPUT, 0, 0, RESULT_OUTPUT_MAX, 0,
        "binary data or a string"},
    {"err", FIELD_ERROR, FIELD_NIL, 0, RESULT_ERROR_MAX, 0, "a string or nil"},
    {"rt", FIELD_BOOL, 0, 0, 0, 0, "a boolean"},
    {"ra", FIELD_INT, FIELD_NIL, 0, 86400, offsetof(struct result, retry_after),
        "an integer from 0 to 86400, or nil"},
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

static const char *const status_names[] = {"ok", "failed", "timeout", "error"};
#define NSTATUS (sizeof(status_names) / sizeof(status_names[0]))

/*
 * Sets every field to its default: no exit code (-1), no signal, no HTTP
 * status, zero counters, empty output, no error text, retryable.  The
 * status is RESULT_ERROR until someone says otherwise, so a runner that
 * forgets to set it never reports success by accident.  Nothing is freed:
 * use result_clear() on a result that may own memory.
 */
void
result_init(struct result *r)
{
	memset(r, 0, sizeof(*r));
	r->status = RESULT_ERROR;
	r->exit_code = -1;
	r->output = NULL;
	r->error = NULL;
	r->retryable = 1;
}

/* Frees the output and error text r owns and re-initialises it. */
void
result_clear(struct result *r)
{
	free(r->output);
	free(r->error);
	result_init(r);
}

/* Returns the wire name of a status ("ok", ...), "unknown" if invalid. */
const char *
result_status_name(enum result_status s)
{
	if ((unsigned)s >= NSTATUS)
		return "unknown";
	return status_names[s];
}

static int64_t
field_get(const struct result *r, const struct field *f)
{
	int64_t v;

	memcpy(&v, (const char *)r + f->off, sizeof(v));
	return v;
}

static void
field_set(struct result *r, const struct field *f, int64_t v)
{
	memcpy((char *)r + f->off, &v, sizeof(v));
}

static int
field_int_ok(const struct field *f, int64_t v)
{
	return (v >= f->min && v <= f->max) ||
	    ((f->flags & FIELD_ZERO) && v == 0);
}

/*
 * Pre-check.  msgpack-c's unpacker allocates every array and map from its
 * declared element count before it has seen a single element, and it has no
 * option to limit that: a 16-byte payload declaring 2^32 entries makes it
 * ask malloc for gigabytes.  So before a payload reaches msgpack-c we walk it
 * ourselves: each declared count must fit in the bytes that remain (every
 * element takes at least one byte), non-empty containers nest at most
 * RESULT_DEPTH_MAX deep, and every length must lie inside the payload.  A
 * payload that passes is a complete msgpack object holding at most one
 * element per byte, so msgpack-c allocates a small multiple of its length.
 * The walk does not interpret anything; decoding stays msgpack-c's job.
 */
enum mp_kind {
	MP_BYTES, /* the length counts bytes of data */
	MP_ARRAY, /* it counts elements */
	MP_MAP,   /* it counts key-value pairs */
};

/* The formats from 0xc4 (bin 8) to 0xdf (map 32). */
static const struct mp_fmt {
	unsigned char width; /* bytes of the big-endian length after the tag */
	unsigned char fixed; /* bytes of data that always follow the length */
	unsigned char kind;  /* enum mp_kind: what the length counts */
} mp_fmts[] = {
    {1, 0, MP_BYTES}, {2, 0, MP_BYTES}, {4, 0, MP_BYTES}, /* bin 8-32 */
    {1, 1, MP_BYTES}, {2, 1, MP_BYTES}, {4, 1, MP_BYTES}, /* ext 8-32 */
    {0, 4, MP_BYTES}, {0, 8, MP_BYTES},                   /* float 32-64 */
    {0, 1, MP_BYTES}, {0, 2, MP_BYTES}, {0, 4, MP_BYTES}, /* uint 8-32 */
    {0, 8, MP_BYTES},                                     /* uint 64 */
    {0, 1, MP_BYTES}, {0, 2, MP_BYTES}, {0, 4, MP_BYTES}, /* int 8-32 */
    {0, 8, MP_BYTES},                                     /* int 64 */
    {0, 2, MP_BYTES}, {0, 3, MP_BYTES}, {0, 5, MP_BYTES}, /* fixext 1-4 */
    {0, 9, MP_BYTES}, {0, 17, MP_BYTES},                  /* fixext 8-16 */
    {1, 0, MP_BYTES}, {2, 0, MP_BYTES}, {4, 0, MP_BYTES}, /* str 8-32 */
    {2, 0, MP_ARRAY}, {4, 0, MP_ARRAY},                   /* array 16-32 */
    {2, 0, MP_MAP}, {4, 0, MP_MAP},                       /* map 16-32 */
};
_Static_assert(sizeof(mp_fmts) / sizeof(mp_fmts[0]) == 0xdf - 0xc4 + 1,
    "one entry per tag from 0xc4 to 0xdf");

/* One object's header: what to skip and how many objects follow. */
struct mp_head {
	size_t hlen;   /* bytes of the tag and its length field */
	uint64_t skip; /* bytes of data after them */
	uint64_t n;    /* objects inside (a map's pairs count twice) */
};

/* Reads the header at p; returns 0, or -1 if truncated or tag 0xc1. */
static int
mp_head(const unsigned char *p, size_t avail, struct mp_head *h)
{
	const struct mp_fmt *f;
	uint64_t v = 0;
	unsigned b;

	memset(h, 0, sizeof(*h));
	h->hlen = 1;
	if (avail == 0)
		return -1;
	b = p[0];
	if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3)
		return 0; /* fixint, nil, booleans */
	if (b == 0xc1)
		return -1; /* never used */
	if (b >= 0xc4) {
		f = &mp_fmts[b - 0xc4];
		if (avail - 1 < f->width)
			return -1;
		for (unsigned i = 0; i < f->width; i++)
			v = v << 8 | p[1 + i];
		h->hlen = 1 + f->width;
		if (f->kind == MP_BYTES)
			h->skip = f->fixed + v;
		else
			h->n = f->kind == MP_MAP ? 2 * v : v;
	} else if (b <= 0x8f)
		h->n = 2 * (b & 0x0f); /* fixmap */
	else if (b <= 0x9f)
		h->n = b & 0x0f; /* fixarray */
	else
		h->skip = b & 0x1f; /* fixstr */
	return 0;
}

/*
 * Walks the object at p[*off] and everything inside it, advancing *off
 * past it.  Returns NULL, or what is wrong with the payload.
 */
static const char *
mp_walk(const unsigned char *p, size_t len, size_t *off, int depth)
{
	struct mp_head h;
	const char *why;

	if (mp_head(p + *off, len - *off, &h) == -1)
		return "payload is truncated or not msgpack";
	*off += h.hlen;
	if (h.skip > len - *off)
		return "payload is truncated";
	*off += h.skip;
	if (h.n == 0)
		return NULL;
	if (depth >= RESULT_DEPTH_MAX)
		return "payload nests too deeply";
	if (h.n > len - *off)
		return "payload declares more elements than it holds";
	for (uint64_t i = 0; i < h.n; i++)
		if ((why = mp_walk(p, len, off, depth + 1)) != NULL)
			return why;
	return NULL;
}

/*
 * The pre-check above for any msgpack payload (runner/spec.c uses it too):
 * returns NULL if p starts with one complete object that msgpack-c can
 * unpack without an allocation larger than a small multiple of len, with
 * *end set to where it ends, or what is wrong with the payload.
 */
const char *
result_check_msgpack(const unsigned char *p, size_t len, size_t *end)
{
	*end = 0;
	if (len == 0)
		return "empty payload";
	return mp_walk(p, len, end, 0);
}

/* Describes the type of o for messages. */
static const char *
mp_type_name(const msgpack_object *o)
{
	switch (o->type) {
	case MSGPACK_OBJECT_NIL:
		return "nil";
	case MSGPACK_OBJECT_BOOLEAN:
		return "a boolean";
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		return "an integer";
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		return "a float";
	case MSGPACK_OBJECT_STR:
		return "a string";
	case MSGPACK_OBJECT_ARRAY:
		return "an array";
	case MSGPACK_OBJECT_MAP:
		return "a map";
	case MSGPACK_OBJECT_BIN:
		return "binary data";
	case MSGPACK_OBJECT_EXT:
		return "an extension";
	}
	return "an unknown type";
}

static int
bad_type(
    const struct field *f, const msgpack_object *v, char *err, size_t errlen)
{
	return log_errbuf(err, errlen, "result: key \"%s\" must be %s, not %s",
	    f->key, f->want, mp_type_name(v));
}

/* "st": the status name.  An unknown name is echoed, made printable. */
static int
decode_status(const struct field *f, const msgpack_object *v, struct result *r,
    char *err, size_t errlen)
{
	char shown[24];
	size_t n;

	if (v->type != MSGPACK_OBJECT_STR)
		return bad_type(f, v, err, errlen);
	for (size_t i = 0; i < NSTATUS; i++)
		if (v->via.str.size == strlen(status_names[i]) &&
		    memcmp(v->via.str.ptr, status_names[i], v->via.str.size) ==
		        0) {
			r->status = (enum result_status)i;
			return 0;
		}
	n = v->via.str.size < sizeof(shown) ? v->via.str.size
	                                    : sizeof(shown) - 1;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v->via.str.ptr[i];
		shown[i] = c >= 0x20 && c < 0x7f && c != '"' ? (char)c : '?';
	}
	shown[n] = '\0';
	return log_errbuf(err, errlen,
	    "result: key \"%s\" must be %s, not \"%s\"", f->key, f->want,
	    shown);
}

/* An integer field; nil, where allowed, keeps the default. */
static int
decode_int(const struct field *f, const msgpack_object *v, struct result *r,
    char *err, size_t errlen)
{
	int64_t x;

	if (v->type == MSGPACK_OBJECT_NIL && (f->flags & FIELD_NIL))
		return 0;
	if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
		if (v->via.u64 > INT64_MAX)
			return log_errbuf(err, errlen,
			    "result: key \"%s\" must be %s, not %" PRIu64,
			    f->key, f->want, v->via.u64);
		x = (int64_t)v->via.u64;
	} else if (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
		x = v->via.i64;
	else
		return bad_type(f, v, err, errlen);
	if (!field_int_ok(f, x))
		return log_errbuf(err, errlen,
		    "result: key \"%s\" must be %s, not %" PRId64, f->key,
		    f->want, x);
	field_set(r, f, x);
	return 0;
}

/*
 * "out" and "err": copies the bytes into a new NUL-terminated buffer.  An
 * empty output stays NULL; an empty error text is "".
 */
static int
decode_bytes(const struct field *f, const msgpack_object *v, struct result *r,
    char *err, size_t errlen)
{
	int out = f->kind == FIELD_OUTPUT;
	const char *src;
	uint32_t n;
	char *p;

	if (!out && v->type == MSGPACK_OBJECT_NIL)
		return 0;
	if (v->type == MSGPACK_OBJECT_STR) {
		src = v->via.str.ptr;
		n = v->via.str.size;
	} else if (out && v->type == MSGPACK_OBJECT_BIN) {
		src = v->via.bin.ptr;
		n = v->via.bin.size;
	} else
		return bad_type(f, v, err, errlen);
	if (n > f->max)
		return log_errbuf(err, errlen,
		    "result: key \"%s\" must be at most %" PRId64
		    " bytes, not %" PRIu32,
		    f->key, f->max, n);
	if (!out && n > 0 && memchr(src, '\0', n) != NULL)
		return log_errbuf(err, errlen,
		    "result: key \"%s\" must not contain NUL bytes", f->key);
	if (out && n == 0)
		return 0;
	if ((p = malloc((size_t)n + 1)) == NULL)
		return log_errbuf(err, errlen, "result: out of memory");
	if (n > 0)
		memcpy(p, src, n);
	p[n] = '\0';
	if (out) {
		r->output = p;
		r->output_len = n;
	} else
		r->error = p;
	return 0;
}

static int
decode_field(const struct field *f, const msgpack_object *v, struct result *r,
    char *err, size_t errlen)
{
	switch (f->kind) {
	case FIELD_STATUS:
		return decode_status(f, v, r, err, errlen);
	case FIELD_INT:
		return decode_int(f, v, r, err, errlen);
	case FIELD_OUTPUT:
	case FIELD_ERROR:
		return decode_bytes(f, v, r, err, errlen);
	case FIELD_BOOL:
		if (v->type != MSGPACK_OBJECT_BOOLEAN)
			return bad_type(f, v, err, errlen);
		r->retryable = v->via.boolean ? 1 : 0;
		return 0;
	}
	return log_errbuf(err, errlen, "result: internal error");
}

/* Finds the known key k, or NULL; keys that are not strings are unknown. */
static const struct field *
field_find(const msgpack_object *k)
{
	if (k->type != MSGPACK_OBJECT_STR)
		return NULL;
	for (size_t i = 0; i < NFIELDS; i++)
		if (k->via.str.size == strlen(fields[i].key) &&
		    memcmp(k->via.str.ptr, fields[i].key, k->via.str.size) == 0)
			return &fields[i];
	return NULL;
}

/* Reads the known keys of the map into r, which was result_init()ed. */
static int
decode_map(
    const msgpack_object_map *m, struct result *r, char *err, size_t errlen)
{
	unsigned seen = 0;
	const struct field *f;

	for (uint32_t i = 0; i < m->size; i++) {
		if ((f = field_find(&m->ptr[i].key)) == NULL)
			continue; /* unknown: ignored, whatever its value */
		if (seen & 1u << (f - fields))
			return log_errbuf(err, errlen,
			    "result: duplicate key \"%s\"", f->key);
		seen |= 1u << (f - fields);
		if (decode_field(f, &m->ptr[i].val, r, err, errlen) == -1)
			return -1;
	}
	for (size_t i = 0; i < NFIELDS; i++)
		if ((fields[i].flags & FIELD_REQUIRED) && !(seen & 1u << i))
			return log_errbuf(err, errlen,
			    "result: missing required key \"%s\"",
			    fields[i].key);
	return 0;
}

/*
 * Decodes one payload (the bytes after the length prefix) into out, whose
 * previous contents are overwritten, not freed.  The payload must be exactly
 * one msgpack map; unknown keys are ignored, known ones checked as described
 * in the table above.  Returns 0 with out owning its output and error (free
 * them with result_clear()), or -1 with a message in err and out left as
 * result_init() makes it.
 */
int
result_decode(const unsigned char *payload, size_t len, struct result *out,
    char *err, size_t errlen)
{
	msgpack_unpacked up;
	msgpack_unpack_return rv;
	const char *why;
	size_t off = 0;
	int rc = -1;

	result_init(out);
	if ((why = result_check_msgpack(payload, len, &off)) != NULL)
		return log_errbuf(err, errlen, "result: %s", why);
	if (off != len)
		return log_errbuf(err, errlen,
		    "result: trailing data after the map (%zu of %zu bytes)",
		    len - off, len);
	msgpack_unpacked_init(&up);
	off = 0;
	rv = msgpack_unpack_next(&up, (const char *)payload, len, &off);
	if (rv == MSGPACK_UNPACK_NOMEM_ERROR)
		log_errbuf(
		    err, errlen, "result: out of memory unpacking the payload");
	else if (rv != MSGPACK_UNPACK_SUCCESS || off != len)
		log_errbuf(err, errlen, "result: payload is not valid msgpack");
	else if (up.data.type != MSGPACK_OBJECT_MAP)
		log_errbuf(err, errlen, "result: payload is %s, not a map",
		    mp_type_name(&up.data));
	else
		rc = decode_map(&up.data.via.map, out, err, errlen);
	msgpack_unpacked_destroy(&up);
	if (rc == -1)
		result_clear(out);
	return rc;
}

/*
 * Returns how many bytes of the NUL-terminated text s to send: all of it,
 * or at most RESULT_ERROR_MAX, cut before a UTF-8 sequence that would not
 * fit rather than through it.  Text that is not UTF-8 is cut at most three
 * bytes short of the limit.
 */
static size_t
error_len(const char *s)
{
	size_t n = strlen(s);

	if (n <= RESULT_ERROR_MAX)
		return n;
	n = RESULT_ERROR_MAX;
	while (n > RESULT_ERROR_MAX - 3 && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	return n;
}

/* Packs the value of field f of r; returns 0 or -1 (out of memory). */
static int
encode_field(msgpack_packer *pk, const struct field *f, const struct result *r)
{
	const char *s;
	size_t n;

	switch (f->kind) {
	case FIELD_STATUS:
		s = result_status_name(r->status);
		return msgpack_pack_str_with_body(pk, s, strlen(s));
	case FIELD_INT:
		return msgpack_pack_int64(pk, field_get(r, f));
	case FIELD_OUTPUT:
		/* Only the tail: the end of a log says what went wrong. */
		n = r->output_len < RESULT_OUTPUT_MAX ? r->output_len
		                                      : RESULT_OUTPUT_MAX;
		return msgpack_pack_bin_with_body(
		    pk, n > 0 ? r->output + r->output_len - n : "", n);
	case FIELD_ERROR:
		if (r->error == NULL)
			return msgpack_pack_nil(pk);
		return msgpack_pack_str_with_body(
		    pk, r->error, error_len(r->error));
	case FIELD_BOOL:
		return r->retryable ? msgpack_pack_true(pk)
		                    : msgpack_pack_false(pk);
	}
	return -1;
}

/* Returns 1 if r holds values the decoder accepts, else 0. */
static int
result_valid(const struct result *r)
{
	if ((unsigned)r->status >= NSTATUS)
		return 0;
	if (r->output == NULL && r->output_len > 0)
		return 0;
	for (size_t i = 0; i < NFIELDS; i++)
		if (fields[i].kind == FIELD_INT &&
		    !field_int_ok(&fields[i], field_get(r, &fields[i])))
			return 0;
	return 1;
}

/*
 * Encodes r as one frame, length prefix included, in a new buffer that the
 * caller frees: *buf and *len.  Every key is written.  Only the last
 * RESULT_OUTPUT_MAX bytes of the output are sent, and the error text is cut
 * to RESULT_ERROR_MAX bytes at a UTF-8 boundary.  Returns 0, or -1 with
 * *buf = NULL and errno EINVAL (r holds a value the decoder would reject:
 * bad status, a number out of range, output NULL with a length) or ENOMEM.
 */
int
result_encode(const struct result *r, unsigned char **buf, size_t *len)
{
	static const char nolen[4];
	msgpack_sbuffer sb;
	msgpack_packer pk;
	size_t n;
	int rc;

	*buf = NULL;
	*len = 0;
	if (!result_valid(r)) {
		errno = EINVAL;
		return -1;
	}
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	/* The length prefix, filled in below when the length is known. */
	rc = msgpack_sbuffer_write(&sb, nolen, sizeof(nolen));
	rc |= msgpack_pack_map(&pk, NFIELDS);
	for (size_t i = 0; i < NFIELDS; i++) {
		rc |= msgpack_pack_str_with_body(
		    &pk, fields[i].key, strlen(fields[i].key));
		rc |= encode_field(&pk, &fields[i], r);
	}
	if (rc != 0) {
		msgpack_sbuffer_destroy(&sb);
		errno = ENOMEM;
		return -1;
	}
	n = sb.size - sizeof(nolen);
	sb.data[0] = (char)(n >> 24);
	sb.data[1] = (char)(n >> 16);
	sb.data[2] = (char)(n >> 8);
	sb.data[3] = (char)n;
	*len = sb.size;
	*buf = (unsigned char *)msgpack_sbuffer_release(&sb);
	return 0;
}

/* Makes rd ready for the first byte of a frame; nothing is allocated. */
void
result_reader_init(struct result_reader *rd)
{
	memset(rd, 0, sizeof(*rd));
	rd->state = RESULT_READER_HEADER;
	rd->buf = NULL;
}

/* Frees what rd holds (a partial payload) and re-initialises it. */
void
result_reader_clear(struct result_reader *rd)
{
	free(rd->buf);
	result_reader_init(rd);
}

/*
 * Moves rd to state next.  A reader only moves forward, from HEADER to
 * PAYLOAD to DONE, or to FAILED from any state but FAILED; anything else is
 * a bug in this file, and decoding on from a confused state would be worse
 * than stopping.
 */
static void
reader_set_state(struct result_reader *rd, enum result_reader_state next)
{
	int ok = 0;

	switch (rd->state) {
	case RESULT_READER_HEADER:
		ok = next == RESULT_READER_PAYLOAD ||
		    next == RESULT_READER_FAILED;
		break;
	case RESULT_READER_PAYLOAD:
		ok = next == RESULT_READER_DONE || next == RESULT_READER_FAILED;
		break;
	case RESULT_READER_DONE:
		ok = next == RESULT_READER_FAILED;
		break;
	case RESULT_READER_FAILED:
		break;
	}
	if (!ok)
		fatalx("result reader: bad state change %d -> %d", rd->state,
		    next);
	rd->state = next;
}

/* Moves rd to FAILED, dropping any partial payload; returns -1. */
static int
reader_failed(struct result_reader *rd)
{
	free(rd->buf);
	rd->buf = NULL;
	reader_set_state(rd, RESULT_READER_FAILED);
	return -1;
}

static int reader_fail(struct result_reader *rd, char *err, size_t errlen,
    const char *fmt, ...) CV_PRINTF(4, 5);

/* Like reader_failed(), with a message formatted into err. */
static int
reader_fail(
    struct result_reader *rd, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return reader_failed(rd);
}

/* Appends what fits of data[*off..len) to dst[*have..want). */
static void
reader_copy(unsigned char *dst, size_t *have, size_t want,
    const unsigned char *data, size_t len, size_t *off)
{
	size_t n = want - *have;

	if (n > len - *off)
		n = len - *off;
	if (n == 0)
		return;
	memcpy(dst + *have, data + *off, n);
	*have += n;
	*off += n;
}

/*
 * The length prefix is complete: check it, like imsg's MAX_IMSGSIZE, before
 * a single byte of payload is buffered, then allocate exactly that much.
 */
static int
reader_start(struct result_reader *rd, char *err, size_t errlen)
{
	uint32_t n = (uint32_t)rd->hdr[0] << 24 | (uint32_t)rd->hdr[1] << 16 |
	    (uint32_t)rd->hdr[2] << 8 | rd->hdr[3];

	if (n == 0)
		return reader_fail(
		    rd, err, errlen, "result: frame length is 0");
	if (n > RESULT_FRAME_MAX)
		return reader_fail(rd, err, errlen,
		    "result: frame length %" PRIu32 " exceeds the maximum %d",
		    n, RESULT_FRAME_MAX);
	if ((rd->buf = malloc(n)) == NULL)
		return reader_fail(rd, err, errlen, "result: out of memory");
	rd->need = n;
	rd->len = 0;
	reader_set_state(rd, RESULT_READER_PAYLOAD);
	return 0;
}

/*
 * Feeds len bytes read from the result pipe, in any chunking, and sets
 * *used to how many of them it consumed.  Returns 0 when it needs more, 1
 * when this call completed the frame and decoded it into out (overwritten,
 * not freed; the caller result_clear()s it later), or -1 with a message in
 * err on a protocol error.  After 1, the frame is over: *used may be less
 * than len, and feeding the rest (any byte) returns -1 "data after the
 * result frame"; an empty feed returns 0.  After -1 the reader stays failed.
 * out is written only when a payload is decoded (left initialised if it
 * was bad).  Nothing is allocated before the length prefix passed its
 * checks, and never more than the declared length.
 */
int
result_reader_feed(struct result_reader *rd, const unsigned char *data,
    size_t len, size_t *used, struct result *out, char *err, size_t errlen)
{
	size_t off = 0;

	*used = 0;
	if (rd->state == RESULT_READER_FAILED)
		return log_errbuf(
		    err, errlen, "result: the frame was already bad");
	if (rd->state == RESULT_READER_DONE)
		return len == 0 ? 0
		                : reader_fail(rd, err, errlen,
		                      "result: data after the result frame");
	if (rd->state == RESULT_READER_HEADER) {
		reader_copy(
		    rd->hdr, &rd->hdrlen, sizeof(rd->hdr), data, len, &off);
		*used = off;
		if (rd->hdrlen < sizeof(rd->hdr))
			return 0;
		if (reader_start(rd, err, errlen) == -1)
			return -1;
	}
	reader_copy(rd->buf, &rd->len, rd->need, data, len, &off);
	*used = off;
	if (rd->len < rd->need)
		return 0;
	if (result_decode(rd->buf, rd->need, out, err, errlen) == -1)
		return reader_failed(rd); /* err says why */
	free(rd->buf);
	rd->buf = NULL;
	reader_set_state(rd, RESULT_READER_DONE);
	return 1;
}

/*
 * Tells rd that the pipe reached end of file, and says what arrived.
 * Returns 1 if a whole frame was decoded; 0 if not a single byte came (the
 * runner died before writing; err says so); -1 if the stream stopped in the
 * middle of a frame (rd moves to FAILED) or a protocol error was seen
 * before, with a message in err.  The wait status decides what any of
 * these mean for the run.
 */
int
result_reader_eof(struct result_reader *rd, char *err, size_t errlen)
{
	switch (rd->state) {
	case RESULT_READER_HEADER:
		if (rd->hdrlen == 0) {
			log_errbuf(err, errlen, "result: no result frame");
			return 0;
		}
		return reader_fail(rd, err, errlen,
		    "result: frame truncated after %zu of 4 length bytes",
		    rd->hdrlen);
	case RESULT_READER_PAYLOAD:
		return reader_fail(rd, err, errlen,
		    "result: frame truncated after %zu of %zu payload bytes",
		    rd->len, rd->need);
	case RESULT_READER_DONE:
		return 1;
	case RESULT_READER_FAILED:
		break;
	}
	return log_errbuf(err, errlen, "result: the frame was already bad");
}
