/*
 * check_receiver.c: common/receiver.c: which URLs lead to the receiver
 * (spellings of one host, default ports, dot segments, escapes, the path
 * boundary) and the signature, against Python's hmac module.
 */
#include <string.h>

#include "cvtest.h"
#include "cronvisor.h"

START_TEST(test_reaches)
{
	static const struct {
		const char *url;
		int want;
	} cases[] = {
	    {"http://127.0.0.1:8080/receiver", 1},
	    {"http://127.0.0.1:8080/receiver/", 1},
	    {"http://127.0.0.1:8080/receiver/x?y=1", 1},
	    {"http://127.0.0.1:8080/receiver?x", 1},
	    {"HTTP://127.0.0.1:8080/RECEIVER", 1},
	    {"http://127.0.0.1:8080/./receiver", 1},
	    {"http://127.0.0.1:8080/a/../receiver", 1},
	    {"http://127.0.0.1:8080/%72eceiver", 1},
	    {"http://127.0.0.1.:8080/receiver", 1},
	    {"http://0x7f000001:8080/receiver", 1},
	    {"http://2130706433:8080/receiver", 1},
	    {"http://0177.0.0.1:8080/receiver", 1},
	    {"http://127.1:8080/receiver", 1},
	    {"http://[::ffff:127.0.0.1]:8080/receiver", 1},
	    {"http://user:pw@127.0.0.1:8080/receiver", 1},
	    {"http://%31%32%37.0.0.1:8080/receiver", 1},
	    {"http://127.0.0.1:8080/receivers", 0},
	    {"http://127.0.0.1:8080/other", 0},
	    {"http://127.0.0.1:8081/receiver", 0},
	    {"http://127.0.0.1/receiver", 0},
	    {"http://127.0.0.2:8080/receiver", 0},
	    {"ftp://127.0.0.1:8080/receiver", 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++)
		ck_assert_msg(receiver_reaches("http://127.0.0.1:8080/receiver",
		                  cases[i].url) == cases[i].want,
		    "%s: want %d", cases[i].url, cases[i].want);
	/* The default port, a whole host, no receiver. */
	ck_assert(receiver_reaches(
	    "https://Hooks.Example./", "https://hooks.example:443/x"));
	ck_assert(!receiver_reaches(
	    "https://hooks.example/", "http://hooks.example/x"));
	ck_assert(receiver_reaches("http://[::1]/r", "http://[0:0::1]:80/r/"));
	ck_assert(!receiver_reaches("", "http://127.0.0.1/"));
	ck_assert(!receiver_reaches(NULL, "http://127.0.0.1/"));
}
END_TEST

/* At connect time: another name for one of the receiver's addresses. */
START_TEST(test_reaches_ip)
{
	struct receiver_url r, u;
	const char *ips[] = {"127.0.0.1", NULL};

	ck_assert_int_eq(receiver_url_parse("http://localhost:80/r", &r), 0);
	ck_assert_int_eq(receiver_url_parse("http://other.name/r/x", &u), 0);
	ck_assert(!receiver_url_reaches(&r, &u, ips, NULL));
	ck_assert(receiver_url_reaches(&r, &u, ips, "127.0.0.1"));
	ck_assert(!receiver_url_reaches(&r, &u, ips, "127.0.0.2"));
}
END_TEST

START_TEST(test_sign)
{
	char sig[RECEIVER_SIG_LEN];
	const char *body = "what do ya want for nothing?";

	ck_assert_int_eq(receiver_sign("Jefe", 5, "x", 1, sig, sizeof(sig)), 0);
	ck_assert_int_eq((int)strlen(sig), 7 + 64);
	ck_assert(strncmp(sig, "t=5,v1=", 7) == 0);
	ck_assert_int_eq(receiver_sign("Jefe", 1234, body, strlen(body), sig,
	                     sizeof(sig)),
	    0);
	ck_assert(strncmp(sig, "t=1234,v1=", 10) == 0);
	ck_assert_int_eq(receiver_sign("Jefe", 1, "x", 1, sig, 10), -1);
}
END_TEST

/* The MAC itself. */
START_TEST(test_sign_vector)
{
	char sig[RECEIVER_SIG_LEN];

	ck_assert_int_eq(receiver_sign("key", 0, "abc", 3, sig, sizeof(sig)), 0);
	/* HMAC-SHA256("key", "0.abc"), from Python's hmac module. */
	ck_assert_str_eq(sig + 7,
	    "762c53aa1d60a3a4638b606618736c81fe179dc8b79da355075c5e7f6cb9fefd");
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("receiver");
	TCase *tc = tcase_create("receiver");

	tcase_add_test(tc, test_reaches);
	tcase_add_test(tc, test_reaches_ip);
	tcase_add_test(tc, test_sign);
	tcase_add_test(tc, test_sign_vector);
	suite_add_tcase(s, tc);
	return cvtest_run(s);
}
