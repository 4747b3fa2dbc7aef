/*
 * check_result.c: the result frame of common/result.c.  The codec is checked
 * by round trips and by hand-built payloads (every key with every wrong type
 * and every out-of-range value, unknown keys of every msgpack type, huge
 * declared counts that must be refused before msgpack-c sees them); the
 * reader by feeding frames in every chunking, at the length boundaries 0, 1,
 * MAX-1, MAX, MAX+1 and 0xFFFFFFFF, truncated, and followed by extra bytes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "cronvisor.h"
#include "cvtest.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* A payload under construction: raw bytes and packed objects mix. */
struct pl {
	msgpack_sbuffer sb; /* the bytes so far */
	msgpack_packer pk;  /* packs into sb */
};

static void
pl_init(struct pl *p)
{
	msgpack_sbuffer_init(&p->sb);
	msgpack_packer_init(&p->pk, &p->sb, msgpack_sbuffer_write);
}

static void
pl_free(struct pl *p)
{
	msgpack_sbuffer_destroy(&p->sb);
}

static void
pl_raw(struct pl *p, const void *b, size_t n)
{
	ck_assert_int_eq(msgpack_sbuffer_write(&p->sb, b, n), 0);
}

static void
pl_str(struct pl *p, const char *s)
{
	msgpack_pack_str_with_body(&p->pk, s, strlen(s));
}

/* The two required keys with valid values. */
static void
pl_required(struct pl *p)
{
	pl_str(p, "st");
	pl_str(p, "ok");
	pl_str(p, "du");
	msgpack_pack_int64(&p->pk, 1);
}

static int
decode(const struct pl *p, struct result *r, char *err)
{
	return result_decode(
	    (const unsigned char *)p->sb.data, p->sb.size, r, err, CV_ERRLEN);
}

/* Asserts that p does not decode and that the message holds want. */
static void
expect_error(const struct pl *p, const char *want)
{
	struct result r;
	char err[CV_ERRLEN] = "";

	ck_assert_int_eq(decode(p, &r, err), -1);
	ck_assert_msg(strstr(err, want) != NULL, "message \"%s\" lacks \"%s\"",
	    err, want);
	ck_assert_ptr_null(r.output);
	ck_assert_ptr_null(r.error);
}

/*
 * A map of the required keys plus key with the raw msgpack value val; if
 * key is a required key, val replaces its value.
 */
static void
pl_with(struct pl *p, const char *key, const void *val, size_t vlen)
{
	int req = strcmp(key, "st") == 0 || strcmp(key, "du") == 0;

	pl_init(p);
	msgpack_pack_map(&p->pk, req ? 2 : 3);
	if (strcmp(key, "st") != 0) {
		pl_str(p, "st");
		pl_str(p, "ok");
	}
	if (strcmp(key, "du") != 0) {
		pl_str(p, "du");
		msgpack_pack_int64(&p->pk, 1);
	}
	pl_str(p, key);
	pl_raw(p, val, vlen);
}

static void
assert_result_eq(const struct result *a, const struct result *b)
{
	ck_assert_int_eq(a->status, b->status);
	ck_assert_int_eq(a->exit_code, b->exit_code);
	ck_assert_int_eq(a->signal, b->signal);
	ck_assert_int_eq(a->http_status, b->http_status);
	ck_assert_int_eq(a->duration_us, b->duration_us);
	ck_assert_int_eq(a->cpu_user_us, b->cpu_user_us);
	ck_assert_int_eq(a->cpu_sys_us, b->cpu_sys_us);
	ck_assert_int_eq(a->max_rss_kb, b->max_rss_kb);
	ck_assert_uint_eq(a->output_len, b->output_len);
	if (a->output_len > 0)
		ck_assert_mem_eq(a->output, b->output, a->output_len);
	if (a->error == NULL || b->error == NULL)
		ck_assert_ptr_eq(a->error, b->error);
	else
		ck_assert_str_eq(a->error, b->error);
	ck_assert_int_eq(a->retryable, b->retryable);
}

/* Encodes r, checks the prefix, decodes the payload into back. */
static void
round_trip(const struct result *r, struct result *back)
{
	unsigned char *buf;
	size_t len, n;
	char err[CV_ERRLEN] = "";

	ck_assert_int_eq(result_encode(r, &buf, &len), 0);
	ck_assert_uint_ge(len, 5);
	n = (size_t)buf[0] << 24 | (size_t)buf[1] << 16 | (size_t)buf[2] << 8 |
	    buf[3];
	ck_assert_uint_eq(n, len - 4);
	ck_assert_uint_le(n, RESULT_FRAME_MAX);
	ck_assert_msg(
	    result_decode(buf + 4, n, back, err, sizeof(err)) == 0, "%s", err);
	free(buf);
}

/* A result with every field away from its default. */
static void
full_result(struct result *r, size_t outlen)
{
	result_init(r);
	r->status = RESULT_FAILED;
	r->exit_code = 3;
	r->signal = 9;
	r->http_status = 503;
	r->duration_us = 1234567;
	r->cpu_user_us = 1000;
	r->cpu_sys_us = 2000;
	r->max_rss_kb = 4096;
	r->output = malloc(outlen + 1);
	ck_assert_ptr_nonnull(r->output);
	for (size_t i = 0; i < outlen; i++)
		r->output[i] = (char)(i % 7 == 0 ? '\0' : 'a' + i % 26);
	r->output_len = outlen;
	r->error = strdup("connection refused \xc3\xbc");
	r->retryable = 0;
}

START_TEST(test_round_trip_full)
{
	struct result r, back;

	full_result(&r, 300);
	round_trip(&r, &back);
	assert_result_eq(&r, &back);
	ck_assert_int_eq(back.output[back.output_len], '\0');
	result_clear(&back);
	result_clear(&r);
}
END_TEST

START_TEST(test_round_trip_minimal)
{
	struct result r, back;

	result_init(&r);
	ck_assert_int_eq(r.status, RESULT_ERROR);
	ck_assert_int_eq(r.exit_code, -1);
	ck_assert_int_eq(r.retryable, 1);
	round_trip(&r, &back);
	assert_result_eq(&r, &back);
	ck_assert_ptr_null(back.output);
	ck_assert_ptr_null(back.error);
	result_clear(&back);
}
END_TEST

START_TEST(test_round_trip_status)
{
	struct result r, back;

	result_init(&r);
	r.status = (enum result_status)_i;
	round_trip(&r, &back);
	ck_assert_int_eq(back.status, _i);
	result_clear(&back);
}
END_TEST

START_TEST(test_status_names)
{
	ck_assert_str_eq(result_status_name(RESULT_OK), "ok");
	ck_assert_str_eq(result_status_name(RESULT_FAILED), "failed");
	ck_assert_str_eq(result_status_name(RESULT_TIMEOUT), "timeout");
	ck_assert_str_eq(result_status_name(RESULT_ERROR), "error");
	ck_assert_str_eq(result_status_name((enum result_status)42), "unknown");
}
END_TEST

/* A hand-built map of only the required keys takes every default. */
START_TEST(test_defaults)
{
	struct pl p;
	struct result r;
	char err[CV_ERRLEN] = "";

	pl_init(&p);
	msgpack_pack_map(&p.pk, 2);
	pl_required(&p);
	ck_assert_int_eq(decode(&p, &r, err), 0);
	ck_assert_int_eq(r.status, RESULT_OK);
	ck_assert_int_eq(r.duration_us, 1);
	ck_assert_int_eq(r.exit_code, -1);
	ck_assert_int_eq(r.signal, 0);
	ck_assert_int_eq(r.http_status, 0);
	ck_assert_int_eq(r.cpu_user_us + r.cpu_sys_us + r.max_rss_kb, 0);
	ck_assert_ptr_null(r.output);
	ck_assert_uint_eq(r.output_len, 0);
	ck_assert_ptr_null(r.error);
	ck_assert_int_eq(r.retryable, 1);
	pl_free(&p);
}
END_TEST

START_TEST(test_clear)
{
	struct result r;

	full_result(&r, 10);
	result_clear(&r);
	ck_assert_ptr_null(r.output);
	ck_assert_ptr_null(r.error);
	ck_assert_uint_eq(r.output_len, 0);
	ck_assert_int_eq(r.exit_code, -1);
	ck_assert_int_eq(r.retryable, 1);
	result_clear(&r); /* twice is harmless */
}
END_TEST

/* The encoder sends the tail of long output: RESULT_OUTPUT_MAX and +1. */
START_TEST(test_encode_output_tail)
{
	struct result r, back;
	size_t n = RESULT_OUTPUT_MAX + (size_t)_i;

	full_result(&r, n);
	round_trip(&r, &back);
	ck_assert_uint_eq(back.output_len, RESULT_OUTPUT_MAX);
	ck_assert_mem_eq(
	    back.output, r.output + n - RESULT_OUTPUT_MAX, RESULT_OUTPUT_MAX);
	result_clear(&back);
	result_clear(&r);
}
END_TEST

/* Error text over the limit is cut before a UTF-8 sequence that would
 * straddle it: {prefix length, character, bytes expected}. */
static const struct {
	size_t pad;     /* ASCII bytes before ch */
	const char *ch; /* what follows them */
	size_t want;    /* bytes sent */
} cut_cases[] = {
    {RESULT_ERROR_MAX, "", RESULT_ERROR_MAX},
    {RESULT_ERROR_MAX, "x", RESULT_ERROR_MAX},
    {RESULT_ERROR_MAX + 900, "", RESULT_ERROR_MAX},
    {RESULT_ERROR_MAX - 1, "\xc3\xa9", RESULT_ERROR_MAX - 1},
    {RESULT_ERROR_MAX - 2, "\xc3\xa9", RESULT_ERROR_MAX},
    {RESULT_ERROR_MAX - 2, "\xe2\x82\xac", RESULT_ERROR_MAX - 2},
    {RESULT_ERROR_MAX - 1, "\xe2\x82\xac", RESULT_ERROR_MAX - 1},
    {RESULT_ERROR_MAX - 3, "\xf0\x9f\x98\x80", RESULT_ERROR_MAX - 3},
    {RESULT_ERROR_MAX - 1, "\x80\x80\x80\x80\x80", RESULT_ERROR_MAX - 2},
    {RESULT_ERROR_MAX - 9, "\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80",
        RESULT_ERROR_MAX - 3},
    {0, "", 0},
};

START_TEST(test_encode_error_cut)
{
	struct result r, back;
	size_t pad = cut_cases[_i].pad;
	const char *ch = cut_cases[_i].ch;

	result_init(&r);
	r.error = malloc(pad + strlen(ch) + 1);
	ck_assert_ptr_nonnull(r.error);
	memset(r.error, 'a', pad);
	strcpy(r.error + pad, ch);
	round_trip(&r, &back);
	ck_assert_ptr_nonnull(back.error);
	ck_assert_uint_eq(strlen(back.error), cut_cases[_i].want);
	ck_assert_int_eq(memcmp(back.error, r.error, cut_cases[_i].want), 0);
	result_clear(&back);
	result_clear(&r);
}
END_TEST

/* Values the decoder would reject are refused by the encoder too. */
START_TEST(test_encode_invalid)
{
	struct result r;
	unsigned char *buf = (unsigned char *)"x";
	size_t len = 7;

	result_init(&r);
	switch (_i) {
	case 0:
		r.status = (enum result_status)4;
		break;
	case 1:
		r.duration_us = -1;
		break;
	case 2:
		r.exit_code = 256;
		break;
	case 3:
		r.exit_code = -2;
		break;
	case 4:
		r.signal = 65;
		break;
	case 5:
		r.http_status = 99;
		break;
	case 6:
		r.http_status = 600;
		break;
	case 7:
		r.max_rss_kb = -1;
		break;
	case 8:
		r.output_len = 5;
		break; /* output NULL */
	}
	errno = 0;
	ck_assert_int_eq(result_encode(&r, &buf, &len), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(buf);
	ck_assert_uint_eq(len, 0);
}
END_TEST

/* Raw msgpack values, for the tables below. */
#define U64MAX "\xcf\xff\xff\xff\xff\xff\xff\xff\xff"
#define I64MAX "\xcf\x7f\xff\xff\xff\xff\xff\xff\xff"
#define TWO63  "\xcf\x80\x00\x00\x00\x00\x00\x00\x00"
#define F64    "\xcb\x3f\xf0\x00\x00\x00\x00\x00\x00" /* 1.0 */
#define V(s)   s, sizeof(s) - 1

/*
 * Every known key with a value of a wrong type or out of range, and how the
 * message ends.  Octal escapes where a hex escape would swallow a letter.
 */
static const struct {
	const char *key;  /* the key */
	const char *val;  /* its raw msgpack value */
	size_t len;       /* bytes in val */
	const char *tail; /* how the message ends */
} bad_values[] = {
    {"st", V("\x01"), "not an integer"},
    {"st", V("\xc0"), "not nil"},
    {"st", V("\xc4\x02ok"), "not binary data"},
    {"st", V("\245bogus"), "not \"bogus\""},
    {"st", V("\xa2OK"), "not \"OK\""},
    {"st", V("\xa3ok\x00"), "not \"ok?\""},
    {"st", V("\xa0"), "not \"\""},
    {"du", V("\2411"), "not a string"},
    {"du", V("\xc0"), "not nil"},
    {"du", V(F64), "not a float"},
    {"du", V("\xc3"), "not a boolean"},
    {"du", V("\xff"), "not -1"},
    {"du", V(U64MAX), "not 18446744073709551615"},
    {"du", V(TWO63), "not 9223372036854775808"},
    {"ec", V("\xa1x"), "not a string"},
    {"ec", V("\xc2"), "not a boolean"},
    {"ec", V("\xfe"), "not -2"},
    {"ec", V("\xcd\x01\x00"), "not 256"},
    {"sg", V("\x90"), "not an array"},
    {"sg", V("\xff"), "not -1"},
    {"sg", V("\x41"), "not 65"},
    {"hs", V("\x80"), "not a map"},
    {"hs", V("\x01"), "not 1"},
    {"hs", V("\x63"), "not 99"},
    {"hs", V("\xcd\x02\x58"), "not 600"},
    {"hs", V("\xff"), "not -1"},
    {"cu", V("\xd4\x01\x00"), "not an extension"},
    {"cu", V("\xff"), "not -1"},
    {"cu", V(TWO63), "not 9223372036854775808"},
    {"cs", V("\xca\x00\x00\x00\x00"), "not a float"},
    {"cs", V("\xd0\x80"), "not -128"},
    {"rss", V("\xc3"), "not a boolean"},
    {"rss", V("\xd3\xff\xff\xff\xff\xff\xff\xff\xff"), "not -1"},
    {"out", V("\x01"), "not an integer"},
    {"out", V("\xc0"), "not nil"},
    {"out", V("\x91\xc4\x00"), "not an array"},
    {"err", V("\xc4\x01x"), "not binary data"},
    {"err", V("\x05"), "not an integer"},
    {"err", V("\243a\0b"), "must not contain NUL bytes"},
    {"err", V("\xa1\x00"), "must not contain NUL bytes"},
    {"rt", V("\xc0"), "not nil"},
    {"rt", V("\x01"), "not an integer"},
    {"rt", V("\xa4true"), "not a string"},
};

START_TEST(test_bad_value)
{
	struct pl p;
	struct result r;
	char err[CV_ERRLEN] = "", head[32];
	size_t n, t = strlen(bad_values[_i].tail);

	pl_with(&p, bad_values[_i].key, bad_values[_i].val, bad_values[_i].len);
	ck_assert_int_eq(decode(&p, &r, err), -1);
	ck_assert_ptr_null(r.output);
	snprintf(
	    head, sizeof(head), "result: key \"%s\" must ", bad_values[_i].key);
	n = strlen(err);
	ck_assert_msg(strncmp(err, head, strlen(head)) == 0 && n >= t &&
	        strcmp(err + n - t, bad_values[_i].tail) == 0,
	    "message \"%s\" is not \"%s...%s\"", err, head,
	    bad_values[_i].tail);
	pl_free(&p);
}
END_TEST

/* The whole message, once for each key. */
static const struct {
	const char *key; /* the key */
	const char *val; /* its raw msgpack value */
	size_t len;      /* bytes in val */
	const char *msg; /* the message */
} messages[] = {
    {"st", V("\x01"),
        "result: key \"st\" must be \"ok\", \"failed\", "
        "\"timeout\" or \"error\", not an integer"},
    {"du", V("\xff"),
        "result: key \"du\" must be a non-negative integer, "
        "not -1"},
    {"ec", V("\xfe"),
        "result: key \"ec\" must be an integer from -1 to "
        "255, or nil, not -2"},
    {"sg", V("\x41"),
        "result: key \"sg\" must be an integer from 0 to 64, "
        "or nil, not 65"},
    {"hs", V("\x63"),
        "result: key \"hs\" must be 0, an integer from 100 "
        "to 599, or nil, not 99"},
    {"cu", V("\xff"),
        "result: key \"cu\" must be a non-negative integer "
        "or nil, not -1"},
    {"out", V("\xc0"),
        "result: key \"out\" must be binary data or a "
        "string, not nil"},
    {"err", V("\x05"),
        "result: key \"err\" must be a string or nil, not "
        "an integer"},
    {"rt", V("\xc0"), "result: key \"rt\" must be a boolean, not nil"},
};

START_TEST(test_message)
{
	struct pl p;
	struct result r;
	char err[CV_ERRLEN] = "";

	pl_with(&p, messages[_i].key, messages[_i].val, messages[_i].len);
	ck_assert_int_eq(decode(&p, &r, err), -1);
	ck_assert_str_eq(err, messages[_i].msg);
	pl_free(&p);
}
END_TEST

/* Values at the edges of each range, and nil, are accepted. */
static const struct {
	const char *key; /* the key */
	const char *val; /* its raw msgpack value */
	size_t len;      /* bytes in val */
	size_t off;      /* offsetof the int64_t member */
	int64_t want;    /* its value after decoding */
} good_ints[] = {
    {"du", V("\x00"), offsetof(struct result, duration_us), 0},
    {"du", V(I64MAX), offsetof(struct result, duration_us), INT64_MAX},
    {"du", V("\xd0\x05"), offsetof(struct result, duration_us), 5},
    {"ec", V("\xff"), offsetof(struct result, exit_code), -1},
    {"ec", V("\xd3\xff\xff\xff\xff\xff\xff\xff\xff"),
        offsetof(struct result, exit_code), -1},
    {"ec", V("\x00"), offsetof(struct result, exit_code), 0},
    {"ec", V("\xcc\xff"), offsetof(struct result, exit_code), 255},
    {"ec", V("\xc0"), offsetof(struct result, exit_code), -1},
    {"sg", V("\x00"), offsetof(struct result, signal), 0},
    {"sg", V("\x40"), offsetof(struct result, signal), 64},
    {"sg", V("\xc0"), offsetof(struct result, signal), 0},
    {"hs", V("\x00"), offsetof(struct result, http_status), 0},
    {"hs", V("\x64"), offsetof(struct result, http_status), 100},
    {"hs", V("\xcd\x02\x57"), offsetof(struct result, http_status), 599},
    {"hs", V("\xc0"), offsetof(struct result, http_status), 0},
    {"cu", V(I64MAX), offsetof(struct result, cpu_user_us), INT64_MAX},
    {"cu", V("\xc0"), offsetof(struct result, cpu_user_us), 0},
    {"cs", V("\xce\xff\xff\xff\xff"), offsetof(struct result, cpu_sys_us),
        UINT32_MAX},
    {"cs", V("\xc0"), offsetof(struct result, cpu_sys_us), 0},
    {"rss", V("\x7f"), offsetof(struct result, max_rss_kb), 127},
    {"rss", V("\xc0"), offsetof(struct result, max_rss_kb), 0},
};

START_TEST(test_good_int)
{
	struct pl p;
	struct result r;
	char err[CV_ERRLEN] = "";
	int64_t v;

	pl_with(&p, good_ints[_i].key, good_ints[_i].val, good_ints[_i].len);
	ck_assert_msg(decode(&p, &r, err) == 0, "%s", err);
	memcpy(&v, (char *)&r + good_ints[_i].off, sizeof(v));
	ck_assert_int_eq(v, good_ints[_i].want);
	result_clear(&r);
	pl_free(&p);
}
END_TEST

START_TEST(test_good_other)
{
	struct pl p;
	struct result r;
	char err[CV_ERRLEN] = "";

	pl_with(&p, "out", V("\243a\0b")); /* str, with a NUL */
	ck_assert_msg(decode(&p, &r, err) == 0, "%s", err);
	ck_assert_uint_eq(r.output_len, 3);
	ck_assert_mem_eq(r.output, "a\0b", 4);
	result_clear(&r);
	pl_free(&p);

	pl_with(&p, "out", V("\xc4\x00")); /* empty bin */
	ck_assert_int_eq(decode(&p, &r, err), 0);
	ck_assert_ptr_null(r.output);
	pl_free(&p);

	pl_with(&p, "err", V("\xa0"));
	ck_assert_int_eq(decode(&p, &r, err), 0);
	ck_assert_str_eq(r.error, "");
	result_clear(&r);
	pl_free(&p);

	pl_with(&p, "st", V("\xa7timeout"));
	ck_assert_int_eq(decode(&p, &r, err), 0);
	ck_assert_int_eq(r.status, RESULT_TIMEOUT);
	pl_free(&p);

	pl_with(&p, "rt", V("\xc2"));
	ck_assert_int_eq(decode(&p, &r, err), 0);
	ck_assert_int_eq(r.retryable, 0);
	pl_free(&p);
}
END_TEST

/* "out" and "err" at their limits and one byte over, as bin and as str. */
START_TEST(test_byte_limits)
{
	static const char *const keys[] = {"out", "out", "err"};
	static const size_t max[] = {
	    RESULT_OUTPUT_MAX, RESULT_OUTPUT_MAX, RESULT_ERROR_MAX};
	const char *key = keys[_i / 2];
	size_t n = max[_i / 2] + (size_t)(_i % 2);
	struct pl p;
	struct result r;
	char err[CV_ERRLEN] = "", *body;

	body = malloc(n);
	ck_assert_ptr_nonnull(body);
	memset(body, 'z', n);
	pl_init(&p);
	msgpack_pack_map(&p.pk, 3);
	pl_required(&p);
	pl_str(&p, key);
	if (_i / 2 == 0)
		msgpack_pack_bin_with_body(&p.pk, body, n);
	else
		msgpack_pack_str_with_body(&p.pk, body, n);
	if (_i % 2 == 0) {
		ck_assert_msg(decode(&p, &r, err) == 0, "%s", err);
		ck_assert_uint_eq(
		    key[0] == 'o' ? r.output_len : strlen(r.error), n);
		result_clear(&r);
	} else {
		snprintf(body, n,
		    "key \"%s\" must be at most %zu bytes, not %zu", key, n - 1,
		    n);
		expect_error(&p, body);
	}
	free(body);
	pl_free(&p);
}
END_TEST

START_TEST(test_missing_key)
{
	struct pl p;

	pl_init(&p);
	msgpack_pack_map(&p.pk, 0);
	expect_error(&p, "result: missing required key \"st\"");
	pl_free(&p);

	pl_init(&p); /* keys are case-sensitive */
	msgpack_pack_map(&p.pk, 2);
	pl_str(&p, "ST");
	pl_str(&p, "ok");
	pl_str(&p, "du");
	msgpack_pack_int64(&p.pk, 1);
	expect_error(&p, "result: missing required key \"st\"");
	pl_free(&p);

	pl_init(&p);
	msgpack_pack_map(&p.pk, 2);
	pl_str(&p, "st");
	pl_str(&p, "ok");
	pl_str(&p, "ec");
	msgpack_pack_int64(&p.pk, 0);
	expect_error(&p, "result: missing required key \"du\"");
	pl_free(&p);
}
END_TEST

/* Each known key twice; the value is valid, so only the repeat is wrong. */
static const struct {
	const char *key; /* the key */
	const char *val; /* a valid raw value */
	size_t len;      /* bytes in val */
} dup_keys[] = {
    {"st", V("\xa2ok")},
    {"du", V("\x01")},
    {"ec", V("\x00")},
    {"sg", V("\x00")},
    {"hs", V("\xc0")},
    {"cu", V("\x00")},
    {"cs", V("\x00")},
    {"rss", V("\x00")},
    {"out", V("\xc4\x01x")},
    {"err", V("\xa1x")},
    {"rt", V("\xc3")},
};

START_TEST(test_duplicate_key)
{
	struct pl p;
	char want[64];

	pl_init(&p);
	msgpack_pack_map(&p.pk, 4);
	pl_required(&p);
	for (int i = 0; i < 2; i++) {
		pl_str(&p, dup_keys[_i].key);
		pl_raw(&p, dup_keys[_i].val, dup_keys[_i].len);
	}
	snprintf(want, sizeof(want), "result: duplicate key \"%s\"",
	    dup_keys[_i].key);
	expect_error(&p, want);
	pl_free(&p);
}
END_TEST

/* Unknown keys are ignored whatever their value, and whatever the key. */
static const struct {
	const char *key; /* raw msgpack key */
	size_t klen;     /* bytes in key */
	const char *val; /* raw msgpack value */
	size_t vlen;     /* bytes in val */
} unknown[] = {
    {V("\xa1x"), V("\xc0")}, {V("\xa1x"), V("\xc3")}, {V("\xa1x"), V("\xc2")},
    {V("\xa1x"), V("\x7f")}, {V("\xa1x"), V("\xe0")}, {V("\xa1x"), V(U64MAX)},
    {V("\xa1x"), V("\xd3\x80\x00\x00\x00\x00\x00\x00\x00")},
    {V("\xa1x"), V("\xca\x7f\xc0\x00\x00")}, /* NaN */
    {V("\xa1x"), V(F64)}, {V("\xa1x"), V("\xa5hello")},
    {V("\xa1x"), V("\xd9\003abc")}, {V("\xa1x"), V("\xc5\x00\x02\x00\x00")},
    {V("\xa1x"), V("\xc7\x02\x05\x00\x00")}, {V("\xa1x"), V("\xd4\x05\x00")},
    {V("\xa1x"), V("\xd8\xff\1\2\3\4\5\6\7\10\11\12\13\14\15\16\17\20")},
    {V("\xa1x"), V("\x90")}, {V("\xa1x"), V("\x80")},
    {V("\xa1x"), V("\x93\x01\x91\x80\x81\241a\x92\xc0\xc3")},
    {V("\xa1x"), V("\x81\242du\xa1x")}, /* a nested "du" is not ours */
    {V("\xa1x"), V("\xdc\x00\x01\xc0")},
    {V("\xa1x"), V("\xde\x00\x01\xc0\xc0")}, {V("\xa3stt"), V("\xa1x")},
    {V("\xa1s"), V("\xa1x")}, {V("\xa3st "), V("\xa1x")},
    {V("\xa3s\0t"), V("\xa1x")}, {V("\xa0"), V("\xa1x")},
    {V("\x01"), V("\xa1x")},            /* an integer key */
    {V("\xc4\002du"), V("\xa1x")},      /* "du" as bin: not a str key */
    {V("\xc0"), V("\xc0")},             /* a nil key */
    {V("\x92\xa2st\xa2ok"), V("\x80")}, /* an array key */
};

START_TEST(test_unknown_key)
{
	struct pl p;
	struct result r;
	char err[CV_ERRLEN] = "";

	pl_init(&p);
	msgpack_pack_map(&p.pk, 4);
	pl_required(&p);
	pl_raw(&p, unknown[_i].key, unknown[_i].klen);
	pl_raw(&p, unknown[_i].val, unknown[_i].vlen);
	pl_raw(&p, unknown[_i].key, unknown[_i].klen); /* twice is fine */
	pl_raw(&p, unknown[_i].val, unknown[_i].vlen);
	ck_assert_msg(decode(&p, &r, err) == 0, "%s", err);
	ck_assert_int_eq(r.status, RESULT_OK);
	ck_assert_int_eq(r.duration_us, 1);
	pl_free(&p);
}
END_TEST

/* Nesting: the result map plus 15 levels is fine, plus 16 is not. */
START_TEST(test_depth)
{
	int levels = 15 + _i;
	struct pl p;
	struct result r;
	char err[CV_ERRLEN] = "";

	pl_init(&p);
	msgpack_pack_map(&p.pk, 3);
	pl_required(&p);
	pl_str(&p, "x");
	for (int i = 0; i < levels; i++)
		msgpack_pack_array(&p.pk, 1);
	msgpack_pack_nil(&p.pk);
	if (_i == 0)
		ck_assert_msg(decode(&p, &r, err) == 0, "%s", err);
	else
		expect_error(&p, "result: payload nests too deeply");
	pl_free(&p);
}
END_TEST

/*
 * Declared sizes the payload cannot hold.  msgpack-c would malloc from the
 * count (gigabytes); the pre-check must refuse them first.
 */
static const struct {
	const char *val;  /* raw value of the unknown key "x" */
	size_t len;       /* bytes in val */
	const char *want; /* part of the message */
} huge[] = {
    {V("\xdd\xff\xff\xff\xff\x00\x00"), "declares more elements"},
    {V("\xdf\xff\xff\xff\xff\x00\x00"), "declares more elements"},
    {V("\xdc\xff\xff\xc0\xc0\xc0"), "declares more elements"},
    {V("\xde\x00\x02\xc0\xc0\xc0"), "declares more elements"},
    {V("\x9f\xc0"), "declares more elements"},
    {V("\x91\xdd\x00\x00\x00\x05\xdd\x00\x00\x00\x02\xc0\xc0"),
        "payload is truncated"},
    {V("\xdb\xff\xff\xff\377abc"), "payload is truncated"},
    {V("\xc6\xff\xff\xff\377abc"), "payload is truncated"},
    {V("\xc9\xff\xff\xff\xff\001abc"), "payload is truncated"},
    {V("\xd8\x01"), "payload is truncated"},
    {V("\xcf\x00"), "payload is truncated"},
    {V("\xdd\x00\x00"), "payload is truncated or not msgpack"},
    {V("\xc1"), "payload is truncated or not msgpack"},
};

START_TEST(test_huge_count)
{
	struct pl p;

	pl_init(&p);
	msgpack_pack_map(&p.pk, 3);
	pl_required(&p);
	pl_str(&p, "x");
	pl_raw(&p, huge[_i].val, huge[_i].len);
	expect_error(&p, huge[_i].want);
	pl_free(&p);
}
END_TEST

/* Payloads that are not exactly one map. */
static const struct {
	const char *bytes; /* the payload */
	size_t len;        /* its length */
	const char *want;  /* part of the message */
} not_map[] = {
    {"", 0, "result: empty payload"},
    {V("\x90"), "result: payload is an array, not a map"},
    {V("\x01"), "result: payload is an integer, not a map"},
    {V("\xa2ok"), "result: payload is a string, not a map"},
    {V("\xc0"), "result: payload is nil, not a map"},
    {V("\xc1"), "result: payload is truncated or not msgpack"},
    {V("\xdf\xff\xff\xff\xff"), "declares more elements"},
    {V("\x80\x80"), "result: trailing data after the map (1 of 2 bytes)"},
    {V("\x82\xa2st\xa2ok\242du\x01\xc0"), "trailing data after the map"},
    {V("\x81\xa2st"), "result: payload is truncated or not msgpack"},
};

START_TEST(test_not_map)
{
	struct result r;
	char err[CV_ERRLEN] = "";

	ck_assert_int_eq(result_decode((const unsigned char *)not_map[_i].bytes,
	                     not_map[_i].len, &r, err, sizeof(err)),
	    -1);
	ck_assert_msg(strstr(err, not_map[_i].want) != NULL,
	    "message \"%s\" lacks \"%s\"", err, not_map[_i].want);
}
END_TEST

/* An error after "out" was copied must free it (LeakSanitizer checks). */
START_TEST(test_error_after_alloc)
{
	struct pl p;

	pl_init(&p);
	msgpack_pack_map(&p.pk, 4);
	pl_str(&p, "out");
	msgpack_pack_bin_with_body(&p.pk, "abc", 3);
	pl_str(&p, "err");
	pl_str(&p, "text");
	pl_required(&p);
	pl_raw(&p, "\242du", 3); /* the map claims 4 pairs: a 5th key */
	expect_error(&p, "result: trailing data after the map (3 of 32 bytes)");
	pl_free(&p);

	pl_init(&p);
	msgpack_pack_map(&p.pk, 3);
	pl_str(&p, "out");
	msgpack_pack_bin_with_body(&p.pk, "abc", 3);
	pl_str(&p, "err");
	pl_str(&p, "text");
	pl_str(&p, "du");
	msgpack_pack_int64(&p.pk, -5);
	expect_error(&p, "key \"du\" must be a non-negative integer, not -5");
	pl_free(&p);
}
END_TEST

/* ---- the reader ---- */

/* A frame of a full result with outlen bytes of output, and its result. */
static unsigned char *
sample_frame(size_t outlen, size_t *len, struct result *want)
{
	unsigned char *buf;

	full_result(want, outlen);
	ck_assert_int_eq(result_encode(want, &buf, len), 0);
	return buf;
}

/* Feeds frame in chunks of sizes from next_chunk; checks the result. */
static void
feed_chunked(const unsigned char *frame, size_t len, const struct result *want,
    size_t (*next_chunk)(size_t i))
{
	struct result_reader rd;
	struct result got;
	char err[CV_ERRLEN] = "";
	size_t off = 0, used, n;
	int rc = 0;

	result_reader_init(&rd);
	for (size_t i = 0; off < len; i++) {
		n = next_chunk(i);
		if (n > len - off)
			n = len - off;
		rc = result_reader_feed(
		    &rd, frame + off, n, &used, &got, err, sizeof(err));
		ck_assert_msg(rc >= 0, "%s", err);
		ck_assert_uint_eq(used, n);
		off += n;
		ck_assert_int_eq(rc, off == len);
	}
	ck_assert_int_eq(rc, 1);
	ck_assert_int_eq(rd.state, RESULT_READER_DONE);
	ck_assert_ptr_null(rd.buf);
	assert_result_eq(want, &got);
	ck_assert_int_eq(result_reader_eof(&rd, err, sizeof(err)), 1);
	result_clear(&got);
	result_reader_clear(&rd);
}

static size_t
chunk_one(size_t i)
{
	(void)i;
	return 1;
}

static size_t
chunk_all(size_t i)
{
	(void)i;
	return SIZE_MAX;
}

static size_t chunk_split; /* test_split_every_byte's first chunk */

static size_t
chunk_at_split(size_t i)
{
	return i == 0 ? chunk_split : SIZE_MAX;
}

static size_t chunk_max; /* largest random chunk */

static size_t
chunk_random(size_t i)
{
	(void)i;
	return 1 + (size_t)random() % chunk_max;
}

START_TEST(test_reader_whole)
{
	struct result want;
	size_t len;
	unsigned char *frame = sample_frame(300, &len, &want);

	feed_chunked(frame, len, &want, chunk_all);
	feed_chunked(frame, len, &want, chunk_one);
	free(frame);
	result_clear(&want);
}
END_TEST

/* Split in two at every byte, including the 4 of the length. */
START_TEST(test_split_every_byte)
{
	struct result want;
	size_t len;
	unsigned char *frame = sample_frame(300, &len, &want);

	for (chunk_split = 1; chunk_split < len; chunk_split++)
		feed_chunked(frame, len, &want, chunk_at_split);
	free(frame);
	result_clear(&want);
}
END_TEST

/* Random chunk sizes over a small and a largest-possible frame. */
START_TEST(test_random_chunks)
{
	static const size_t outlens[] = {0, 1, 300, RESULT_OUTPUT_MAX};
	struct result want;
	size_t len;
	unsigned char *frame;

	srandom(12345);
	for (size_t k = 0; k < NELEM(outlens); k++) {
		frame = sample_frame(outlens[k], &len, &want);
		for (int rep = 0; rep < 40; rep++) {
			chunk_max = rep % 2 ? 7 : 5000;
			feed_chunked(frame, len, &want, chunk_random);
		}
		free(frame);
		result_clear(&want);
	}
}
END_TEST

/* A frame cut short at every byte: the reader waits, EOF says truncated. */
START_TEST(test_truncated)
{
	struct result_reader rd;
	struct result want, got;
	char err[CV_ERRLEN] = "";
	size_t len, used;
	unsigned char *frame = sample_frame(50, &len, &want);

	for (size_t k = 0; k < len; k++) {
		result_reader_init(&rd);
		ck_assert_int_eq(result_reader_feed(&rd, frame, k, &used, &got,
		                     err, sizeof(err)),
		    0);
		ck_assert_uint_eq(used, k);
		if (k == 0) {
			ck_assert_int_eq(
			    result_reader_eof(&rd, err, sizeof(err)), 0);
			ck_assert_str_eq(err, "result: no result frame");
			continue;
		}
		ck_assert_int_eq(result_reader_eof(&rd, err, sizeof(err)), -1);
		ck_assert_msg(
		    strstr(err, "result: frame truncated after ") == err, "%s",
		    err);
		ck_assert_int_eq(rd.state, RESULT_READER_FAILED);
		ck_assert_ptr_null(rd.buf);
		result_reader_clear(&rd);
	}
	free(frame);
	result_clear(&want);
}
END_TEST

/* Feeds hdr (4 bytes) plus some payload; the length must be refused at
 * once, with nothing allocated. */
static void
expect_bad_length(const char *hdr, const char *want)
{
	struct result_reader rd;
	struct result got;
	unsigned char data[64] = {0};
	char err[CV_ERRLEN] = "";
	size_t used;

	memcpy(data, hdr, 4);
	result_reader_init(&rd);
	ck_assert_int_eq(
	    result_reader_feed(&rd, data, 2, &used, &got, err, sizeof(err)), 0);
	ck_assert_ptr_null(rd.buf);
	ck_assert_int_eq(result_reader_feed(&rd, data + 2, sizeof(data) - 2,
	                     &used, &got, err, sizeof(err)),
	    -1);
	ck_assert_uint_eq(used, 2);
	ck_assert_str_eq(err, want);
	ck_assert_ptr_null(rd.buf);
	ck_assert_int_eq(rd.state, RESULT_READER_FAILED);
	ck_assert_int_eq(
	    result_reader_feed(&rd, data, 1, &used, &got, err, sizeof(err)),
	    -1);
	ck_assert_int_eq(result_reader_eof(&rd, err, sizeof(err)), -1);
	result_reader_clear(&rd);
}

START_TEST(test_length_bad)
{
	char max1[4] = {0, 4, 0, 1}; /* RESULT_FRAME_MAX + 1 */

	ck_assert_int_eq(RESULT_FRAME_MAX, 0x40000);
	expect_bad_length("\0\0\0\0", "result: frame length is 0");
	expect_bad_length(max1,
	    "result: frame length 262145 exceeds the "
	    "maximum 262144");
	expect_bad_length("\xff\xff\xff\xff",
	    "result: frame length 4294967295 "
	    "exceeds the maximum 262144");
}
END_TEST

/* Length 1 passes the length check; its one byte must still be a map. */
START_TEST(test_length_one)
{
	struct result_reader rd;
	struct result got;
	char err[CV_ERRLEN] = "";
	size_t used;

	result_reader_init(&rd);
	ck_assert_int_eq(
	    result_reader_feed(&rd, (const unsigned char *)"\0\0\0\1", 4, &used,
	        &got, err, sizeof(err)),
	    0);
	ck_assert_int_eq(rd.state, RESULT_READER_PAYLOAD);
	ck_assert_ptr_nonnull(rd.buf);
	ck_assert_int_eq(result_reader_feed(&rd, (const unsigned char *)"\x80",
	                     1, &used, &got, err, sizeof(err)),
	    -1);
	ck_assert_str_eq(err, "result: missing required key \"st\"");
	ck_assert_ptr_null(rd.buf);
	ck_assert_int_eq(rd.state, RESULT_READER_FAILED);
	result_reader_clear(&rd);

	ck_assert_int_eq(
	    result_reader_feed(&rd, (const unsigned char *)"\0\0\0\1\xc0", 5,
	        &used, &got, err, sizeof(err)),
	    -1);
	ck_assert_str_eq(err, "result: payload is nil, not a map");
	result_reader_clear(&rd);
}
END_TEST

/*
 * Frames of RESULT_FRAME_MAX - 1 and RESULT_FRAME_MAX bytes: a valid map
 * padded to size with an unknown key holding a large bin, or (the most
 * msgpack-c ever allocates for) an array of nils or a map of nil pairs.
 */
START_TEST(test_length_max)
{
	size_t total = RESULT_FRAME_MAX - (_i == 0), pad, len;
	struct pl p;
	struct result want;
	unsigned char *frame;

	pl_init(&p);
	pl_raw(&p, "\0\0\0\0", 4);
	msgpack_pack_map(&p.pk, 3);
	pl_required(&p);
	pl_str(&p, "pad");
	pad = total - (p.sb.size - 4) - 5; /* 5: a bin/array/map 32 header */
	if (_i <= 1)
		msgpack_pack_bin(&p.pk, pad);
	else if (_i == 2)
		msgpack_pack_array(&p.pk, pad);
	else {
		ck_assert_uint_eq(pad % 2, 0);
		msgpack_pack_map(&p.pk, pad / 2);
	}
	ck_assert_uint_eq(p.sb.size - 4, total - pad);
	len = total + 4;
	frame = malloc(len);
	ck_assert_ptr_nonnull(frame);
	memcpy(frame, p.sb.data, p.sb.size);
	memset(frame + p.sb.size, _i <= 1 ? 0 : 0xc0, pad);
	frame[1] = (unsigned char)(total >> 16);
	frame[2] = (unsigned char)(total >> 8);
	frame[3] = (unsigned char)total;
	result_init(&want);
	want.status = RESULT_OK;
	want.duration_us = 1;
	feed_chunked(frame, len, &want, chunk_all);
	chunk_max = 4096;
	feed_chunked(frame, len, &want, chunk_random);
	free(frame);
	pl_free(&p);
}
END_TEST

START_TEST(test_data_after_frame)
{
	struct result_reader rd;
	struct result want, got;
	char err[CV_ERRLEN] = "";
	size_t len, used;
	unsigned char *frame = sample_frame(20, &len, &want);
	unsigned char *two = malloc(2 * len);

	ck_assert_ptr_nonnull(two);
	memcpy(two, frame, len);
	memcpy(two + len, frame, len);
	result_reader_init(&rd);
	ck_assert_int_eq(result_reader_feed(
	                     &rd, two, 2 * len, &used, &got, err, sizeof(err)),
	    1);
	ck_assert_uint_eq(used, len);
	assert_result_eq(&want, &got);
	ck_assert_int_eq(
	    result_reader_feed(&rd, two, 0, &used, &got, err, sizeof(err)), 0);
	ck_assert_int_eq(result_reader_feed(&rd, two + len, len, &used, &got,
	                     err, sizeof(err)),
	    -1);
	ck_assert_uint_eq(used, 0);
	ck_assert_str_eq(err, "result: data after the result frame");
	ck_assert_int_eq(rd.state, RESULT_READER_FAILED);
	ck_assert_int_eq(result_reader_eof(&rd, err, sizeof(err)), -1);
	assert_result_eq(&want, &got); /* what was decoded stays */
	result_reader_clear(&rd);
	result_clear(&got);
	result_clear(&want);
	free(two);
	free(frame);
}
END_TEST

/* A bad payload in a well-formed frame fails the reader for good. */
START_TEST(test_reader_bad_payload)
{
	static const unsigned char frame[] = "\0\0\0\x06\x81\242du\xa1x";
	struct result_reader rd;
	struct result got;
	char err[CV_ERRLEN] = "";
	size_t used;

	result_reader_init(&rd);
	ck_assert_int_eq(result_reader_feed(&rd, frame, sizeof(frame) - 1,
	                     &used, &got, err, sizeof(err)),
	    -1);
	ck_assert_uint_eq(used, sizeof(frame) - 1);
	ck_assert_str_eq(err,
	    "result: key \"du\" must be a non-negative "
	    "integer, not a string");
	ck_assert_ptr_null(rd.buf);
	ck_assert_ptr_null(got.output);
	ck_assert_int_eq(
	    result_reader_feed(&rd, frame, 4, &used, &got, err, sizeof(err)),
	    -1);
	ck_assert_str_eq(err, "result: the frame was already bad");
	result_reader_clear(&rd);
}
END_TEST

/* Clearing a reader in the middle of a payload frees it (LSan checks). */
START_TEST(test_reader_clear_mid_frame)
{
	struct result_reader rd;
	struct result want, got;
	char err[CV_ERRLEN] = "";
	size_t len, used;
	unsigned char *frame = sample_frame(100, &len, &want);

	result_reader_init(&rd);
	ck_assert_int_eq(result_reader_feed(&rd, frame, len / 2, &used, &got,
	                     err, sizeof(err)),
	    0);
	ck_assert_ptr_nonnull(rd.buf);
	result_reader_clear(&rd);
	ck_assert_ptr_null(rd.buf);
	ck_assert_int_eq(rd.state, RESULT_READER_HEADER);
	ck_assert_uint_eq(rd.hdrlen, 0);
	feed_chunked(frame, len, &want, chunk_all); /* usable again */
	free(frame);
	result_clear(&want);
}
END_TEST

static Suite *
result_suite(void)
{
	Suite *s = suite_create("result");
	TCase *tc = tcase_create("codec");
	TCase *td = tcase_create("decode");
	TCase *tr = tcase_create("reader");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_round_trip_full);
	tcase_add_test(tc, test_round_trip_minimal);
	tcase_add_loop_test(tc, test_round_trip_status, 0, 4);
	tcase_add_test(tc, test_status_names);
	tcase_add_test(tc, test_clear);
	tcase_add_loop_test(tc, test_encode_output_tail, 0, 2);
	tcase_add_loop_test(tc, test_encode_error_cut, 0, NELEM(cut_cases));
	tcase_add_loop_test(tc, test_encode_invalid, 0, 9);
	suite_add_tcase(s, tc);

	tcase_set_timeout(td, 30);
	tcase_add_test(td, test_defaults);
	tcase_add_loop_test(td, test_bad_value, 0, NELEM(bad_values));
	tcase_add_loop_test(td, test_message, 0, NELEM(messages));
	tcase_add_loop_test(td, test_good_int, 0, NELEM(good_ints));
	tcase_add_test(td, test_good_other);
	tcase_add_loop_test(td, test_byte_limits, 0, 6);
	tcase_add_test(td, test_missing_key);
	tcase_add_loop_test(td, test_duplicate_key, 0, NELEM(dup_keys));
	tcase_add_loop_test(td, test_unknown_key, 0, NELEM(unknown));
	tcase_add_loop_test(td, test_depth, 0, 2);
	tcase_add_loop_test(td, test_huge_count, 0, NELEM(huge));
	tcase_add_loop_test(td, test_not_map, 0, NELEM(not_map));
	tcase_add_test(td, test_error_after_alloc);
	suite_add_tcase(s, td);

	tcase_set_timeout(tr, 60);
	tcase_add_test(tr, test_reader_whole);
	tcase_add_test(tr, test_split_every_byte);
	tcase_add_test(tr, test_random_chunks);
	tcase_add_test(tr, test_truncated);
	tcase_add_test(tr, test_length_bad);
	tcase_add_test(tr, test_length_one);
	tcase_add_loop_test(tr, test_length_max, 0, 4);
	tcase_add_test(tr, test_data_after_frame);
	tcase_add_test(tr, test_reader_bad_payload);
	tcase_add_test(tr, test_reader_clear_mid_frame);
	suite_add_tcase(s, tr);
	return s;
}

int
main(void)
{
	return cvtest_run(result_suite());
}
