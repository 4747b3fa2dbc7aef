/*
 * check_spec.c: the run spec the supervisor sends its runner helper
 * (runner/spec.c).  A full spec and the edges of every range go through
 * encode and decode unchanged; every element with a wrong type or value,
 * a string with a NUL, another layout version, a short or long array,
 * trailing bytes and every truncation are refused with the element's
 * name, and nothing is left allocated (ASan's leak check in CI).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "cvtest.h"
#include "runner.h"
#include "spec_same.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static char *argv_full[] = {"/usr/local/bin/backup", "--full", "", NULL};
static char *env_full[] = {"PATH=/usr/bin:/bin", "A=", NULL};
static char *argv_one[] = {"true", NULL};
static char *env_none[] = {NULL};

static const struct run_spec full = {.run_id = "sched-0a1b2c3d-n5-a0",
    .schedule = "nightly \xc3\xa9t\xc3\xa9",
    .target = RUN_TARGET_EXEC,
    .argv = argv_full,
    .env = env_full,
    .cwd = "/srv",
    .run_as = 1,
    .uid = 4294967294u,
    .gid = 0,
    .timeout = INT64_MAX,
    .kill_grace = 0,
    .output_tail = RESULT_OUTPUT_MAX,
    .not_before_us = 1795392000123456LL,
    .limits = {1, 2, 3, 4, INT64_MAX}};

START_TEST(test_round_trip)
{
	struct run_spec m = {.run_id = "r",
	    .schedule = "s",
	    .target = RUN_TARGET_EXEC,
	    .argv = argv_one,
	    .env = env_none,
	    .timeout = 1};
	const struct run_spec *in = _i == 0 ? &full : &m;
	struct run_spec out;
	enum log_level lv;
	unsigned char *buf;
	size_t len;
	char err[256];

	ck_assert_int_eq(
	    spec_encode(
	        in, _i == 0 ? LOG_LEVEL_DEBUG : LOG_LEVEL_WARN, &buf, &len),
	    0);
	ck_assert_int_eq(spec_decode(buf, len, &out, &lv, err, sizeof(err)), 0);
	ck_assert(spec_same(in, &out));
	ck_assert_int_eq(lv, _i == 0 ? LOG_LEVEL_DEBUG : LOG_LEVEL_WARN);
	spec_free(&out);
	ck_assert_ptr_null(out.argv);
	free(buf);
}
END_TEST

START_TEST(test_http_not_encoded)
{
	struct run_spec h = full;
	unsigned char *buf = NULL;
	size_t len;

	h.target = RUN_TARGET_HTTP;
	ck_assert_int_eq(spec_encode(&h, LOG_LEVEL_INFO, &buf, &len), -1);
	ck_assert_ptr_null(buf);
}
END_TEST

/*
 * Encodes full with element `bad` replaced by what put() packs; decoding
 * must fail naming `name`.
 */
struct bad {
	int pos;          /* the element replaced */
	const char *name; /* the name the error must give */
	int kind;         /* what goes there instead */
};

enum {
	K_NIL,
	K_STR,
	K_NEG,
	K_BIG,
	K_ZERO,
	K_NULSTR,
	K_EMPTYARR,
	K_ARR_INT,
	K_ARR_NUL,
	K_TRUE,
	K_UID_MAX,
	K_TAIL_OVER,
	K_LEVEL_OVER,
};

static const struct bad bads[] = {
    {0, "version", K_ZERO},
    {0, "version", K_BIG},
    {0, "version", K_STR},
    {1, "run_id", K_NIL},
    {1, "run_id", K_NULSTR},
    {2, "schedule", K_NEG},
    {3, "argv", K_EMPTYARR},
    {3, "argv", K_ARR_INT},
    {3, "argv", K_ARR_NUL},
    {3, "argv", K_STR},
    {4, "env", K_NIL},
    {4, "env", K_ARR_NUL},
    {5, "cwd", K_NULSTR},
    {5, "cwd", K_TRUE},
    {6, "run_as", K_ZERO},
    {7, "uid", K_NEG},
    {7, "uid", K_UID_MAX},
    {8, "gid", K_STR},
    {9, "timeout", K_ZERO},
    {9, "timeout", K_BIG},
    {10, "kill_grace", K_NEG},
    {11, "output_tail", K_TAIL_OVER},
    {12, "not_before_us", K_NEG},
    {13, "limits.cpu_seconds", K_NEG},
    {14, "limits.memory_mb", K_NIL},
    {15, "limits.nofile", K_STR},
    {16, "limits.nproc", K_TRUE},
    {17, "limits.fsize_mb", K_BIG},
    {18, "log_level", K_LEVEL_OVER},
};

static void
put(msgpack_packer *pk, int kind)
{
	switch (kind) {
	case K_NIL:
		msgpack_pack_nil(pk);
		break;
	case K_STR:
		msgpack_pack_str_with_body(pk, "x", 1);
		break;
	case K_NEG:
		msgpack_pack_int64(pk, -1);
		break;
	case K_BIG:
		msgpack_pack_uint64(pk, UINT64_MAX);
		break;
	case K_ZERO:
		msgpack_pack_int64(pk, 0);
		break;
	case K_NULSTR:
		msgpack_pack_str_with_body(pk, "a\0b", 3);
		break;
	case K_EMPTYARR:
		msgpack_pack_array(pk, 0);
		break;
	case K_ARR_INT:
		msgpack_pack_array(pk, 1);
		msgpack_pack_int64(pk, 7);
		break;
	case K_ARR_NUL:
		msgpack_pack_array(pk, 2);
		msgpack_pack_str_with_body(pk, "ok", 2);
		msgpack_pack_str_with_body(pk, "n\0l", 3);
		break;
	case K_TRUE:
		msgpack_pack_true(pk);
		break;
	case K_UID_MAX:
		msgpack_pack_uint64(pk, UINT32_MAX);
		break;
	case K_TAIL_OVER:
		msgpack_pack_uint64(pk, RESULT_OUTPUT_MAX + 1);
		break;
	case K_LEVEL_OVER:
		msgpack_pack_int64(pk, LOG_LEVEL_DEBUG + 1);
		break;
	}
}

/* Copies the elements of a good encoding, replacing one. */
static void
build(const struct bad *b, int count, msgpack_sbuffer *sb)
{
	msgpack_unpacked up;
	msgpack_packer pk;
	unsigned char *buf;
	size_t len, off = 0;

	ck_assert_int_eq(spec_encode(&full, LOG_LEVEL_INFO, &buf, &len), 0);
	msgpack_unpacked_init(&up);
	ck_assert_int_eq(msgpack_unpack_next(&up, (const char *)buf, len, &off),
	    MSGPACK_UNPACK_SUCCESS);
	msgpack_sbuffer_init(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	msgpack_pack_array(&pk, (size_t)count);
	for (int i = 0; i < count; i++) {
		if (b != NULL && i == b->pos)
			put(&pk, b->kind);
		else if (i < (int)up.data.via.array.size)
			msgpack_pack_object(&pk, up.data.via.array.ptr[i]);
		else
			msgpack_pack_int64(&pk, 0);
	}
	msgpack_unpacked_destroy(&up);
	free(buf);
}

static void
expect_refused(const unsigned char *buf, size_t len, const char *want)
{
	struct run_spec out;
	enum log_level lv;
	char err[256] = "";

	ck_assert_int_eq(
	    spec_decode(buf, len, &out, &lv, err, sizeof(err)), -1);
	ck_assert_msg(
	    strstr(err, want) != NULL, "error \"%s\" lacks \"%s\"", err, want);
	ck_assert_ptr_null(out.argv);
	ck_assert_ptr_null(out.run_id);
}

START_TEST(test_bad_element)
{
	msgpack_sbuffer sb;
	char want[64];

	build(&bads[_i], 19, &sb);
	snprintf(want, sizeof(want), "bad %s", bads[_i].name);
	expect_refused((const unsigned char *)sb.data, sb.size, want);
	msgpack_sbuffer_destroy(&sb);
}
END_TEST

START_TEST(test_bad_length)
{
	msgpack_sbuffer sb;

	build(NULL, _i == 0 ? 18 : 20, &sb);
	expect_refused(
	    (const unsigned char *)sb.data, sb.size, "not an array of 19");
	msgpack_sbuffer_destroy(&sb);
}
END_TEST

START_TEST(test_truncated_and_trailing)
{
	unsigned char *buf, *more;
	size_t len;

	ck_assert_int_eq(spec_encode(&full, LOG_LEVEL_INFO, &buf, &len), 0);
	for (size_t n = 0; n < len; n++)
		expect_refused(buf, n, "run spec: ");
	more = malloc(len + 1);
	memcpy(more, buf, len);
	more[len] = 0xc0;
	expect_refused(more, len + 1, "trailing data");
	free(more);
	free(buf);
}
END_TEST

START_TEST(test_not_array)
{
	static const unsigned char map[] = {0x80}, str[] = {0xa1, 'x'},
	                           huge[] = {0xdd, 0xff, 0xff, 0xff, 0xff};

	expect_refused(map, sizeof(map), "not an array");
	expect_refused(str, sizeof(str), "not an array");
	expect_refused(huge, sizeof(huge), "more elements than it holds");
}
END_TEST

static Suite *
spec_suite(void)
{
	Suite *s = suite_create("spec");
	TCase *tc = tcase_create("codec");

	tcase_add_loop_test(tc, test_round_trip, 0, 2);
	tcase_add_test(tc, test_http_not_encoded);
	tcase_add_loop_test(tc, test_bad_element, 0, NELEM(bads));
	tcase_add_loop_test(tc, test_bad_length, 0, 2);
	tcase_add_test(tc, test_truncated_and_trailing);
	tcase_add_test(tc, test_not_array);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return cvtest_run(spec_suite());
}
