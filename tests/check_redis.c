/*
 * check_redis.c: tests of redis_url_parse() (common/redis.c): every form
 * the documentation gives (redis:// with and without credentials, port and
 * database; an [IPv6] host; unix:// with ?db=), percent-encoded
 * credentials, and every refusal with its message, which never shows the
 * password.
 */
#include <stdio.h>
#include <string.h>

#include "cronvisor.h"
#include "cvtest.h"

static const struct {
	const char *url;
	int is_unix;
	const char *host, *path, *user, *password;
	int port, db;
} good[] = {
    {"redis://127.0.0.1", 0, "127.0.0.1", "", "", "", 6379, 0},
    {"redis://127.0.0.1:6380", 0, "127.0.0.1", "", "", "", 6380, 0},
    {"redis://127.0.0.1:6379/2", 0, "127.0.0.1", "", "", "", 6379, 2},
    {"redis://redis.internal/", 0, "redis.internal", "", "", "", 6379, 0},
    {"redis://:pw@h", 0, "h", "", "", "pw", 6379, 0},
    {"redis://ops:s%40cret%3A1@h:1/15", 0, "h", "", "ops", "s@cret:1", 1, 15},
    {"redis://[::1]:7000/3", 0, "::1", "", "", "", 7000, 3},
    {"redis://[fe80::1]", 0, "fe80::1", "", "", "", 6379, 0},
    {"unix:///run/redis/redis.sock", 1, "", "/run/redis/redis.sock", "", "",
        6379, 0},
    {"unix:///tmp/r%20s.sock?db=4", 1, "", "/tmp/r s.sock", "", "", 6379, 4},
};

START_TEST(test_good)
{
	struct redis_url u;
	char err[CV_ERRLEN] = "";

	ck_assert_msg(redis_url_parse(good[_i].url, &u, err, sizeof(err)) == 0,
	    "%s refused: %s", good[_i].url, err);
	ck_assert_int_eq(u.is_unix, good[_i].is_unix);
	ck_assert_str_eq(u.host, good[_i].host);
	ck_assert_str_eq(u.path, good[_i].path);
	ck_assert_str_eq(u.user, good[_i].user);
	ck_assert_str_eq(u.password, good[_i].password);
	ck_assert_int_eq(u.port, good[_i].port);
	ck_assert_int_eq(u.db, good[_i].db);
}
END_TEST

static const struct {
	const char *url, *msg;
} bad[] = {
    {"", "starts with redis:// or unix://"},
    {"http://h", "starts with redis:// or unix://"},
    {"rediss://h", "TLS"},
    {"redis://", "no host"},
    {"redis://:6379", "no host"},
    {"redis://h:0", "port is not 1-65535"},
    {"redis://h:65536", "port is not 1-65535"},
    {"redis://h:12x", "port is not 1-65535"},
    {"redis://h/x", "database number"},
    {"redis://h/123456", "database number"},
    {"redis://h?db=1", "no query"},
    {"redis://h#x", "no query"},
    {"redis://pw-only@h", "USER:PASSWORD@"},
    {"redis://:p%4@h", "badly encoded"},
    {"redis://:p%00x@h", "badly encoded"},
    {"redis://h$st", "the host has a character"},
    {"redis://[::1", "unclosed"},
    {"redis://[]", "bad [IPv6]"},
    {"redis://[::1]x", "junk after"},
    {"unix://", "absolute path"},
    {"unix://relative.sock", "absolute path"},
    {"unix:///s.sock?db=x", "only ?db=N"},
    {"unix:///s.sock?password=x", "only ?db=N"},
};

START_TEST(test_bad)
{
	struct redis_url u;
	char err[CV_ERRLEN] = "";

	ck_assert_msg(redis_url_parse(bad[_i].url, &u, err, sizeof(err)) == -1,
	    "%s accepted", bad[_i].url);
	ck_assert_msg(strstr(err, bad[_i].msg) != NULL,
	    "%s: \"%s\" does not say \"%s\"", bad[_i].url, err, bad[_i].msg);
}
END_TEST

/* No message shows the password, whatever is wrong after it. */
START_TEST(test_secret)
{
	static const char *const urls[] = {"redis://:hunter2@h:99999",
	    "redis://u:hunter2@h/xyz", "redis://u:hunter2@h$",
	    "redis://u:hunter2@"};
	struct redis_url u;
	char err[CV_ERRLEN];

	for (size_t i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
		err[0] = '\0';
		ck_assert_int_eq(
		    redis_url_parse(urls[i], &u, err, sizeof(err)), -1);
		ck_assert_msg(strstr(err, "hunter2") == NULL, "%s", err);
	}
}
END_TEST

/* Every field too long is refused rather than cut. */
START_TEST(test_long)
{
	char url[2048], err[CV_ERRLEN];
	struct redis_url u;

	snprintf(url, sizeof(url), "redis://%0300d", 1);
	ck_assert_int_eq(redis_url_parse(url, &u, err, sizeof(err)), -1);
	snprintf(url, sizeof(url), "unix:///%0200d", 1);
	ck_assert_int_eq(redis_url_parse(url, &u, err, sizeof(err)), -1);
	snprintf(url, sizeof(url), "redis://:%0600d@h", 1);
	ck_assert_int_eq(redis_url_parse(url, &u, err, sizeof(err)), -1);
}
END_TEST

/* The loopback in its spellings, and what is not it. */
START_TEST(test_local)
{
	static const char *const local[] = {"localhost", "LOCALHOST.",
	    "127.0.0.1", "127.1.2.3", "0.0.0.0", "::1",
	    "::", "::ffff:127.0.0.1", "0:0:0:0:0:ffff:7f00:1",
	    "::ffff:0.0.0.0"};
	static const char *const other[] = {"10.0.0.1", "128.0.0.1",
	    "localhost.example", "::2", "::ffff:10.0.0.1", "fe80::1",
	    "1.127.0.0", "redis", ""};

	for (size_t i = 0; i < sizeof(local) / sizeof(*local); i++)
		ck_assert_msg(redis_host_local(local[i]), "%s", local[i]);
	for (size_t i = 0; i < sizeof(other) / sizeof(*other); i++)
		ck_assert_msg(!redis_host_local(other[i]), "%s", other[i]);
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

int
main(void)
{
	Suite *s = suite_create("redis");
	TCase *tc = tcase_create("url");

	tcase_add_loop_test(tc, test_good, 0, N(good));
	tcase_add_loop_test(tc, test_bad, 0, N(bad));
	tcase_add_test(tc, test_secret);
	tcase_add_test(tc, test_long);
	tcase_add_test(tc, test_local);
	suite_add_tcase(s, tc);
	return cvtest_run(s);
}
