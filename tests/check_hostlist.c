/*
 * check_hostlist.c: tests of common/hostlist.c.  The parser is checked on
 * every element form and every error (with its message), CIDR prefixes at
 * their boundaries (0, 1, max-1, max, max+1) for both families, and the
 * matcher and the verdict on a table of (allow, deny, host, address) rows:
 * deny wins, an empty allow list allows all, names compare without case
 * and trailing dot, suffix patterns never match the bare domain, an
 * IPv4-mapped IPv6 address is the IPv4 address, and an address known only
 * after resolution is checked like a literal.  hostlist_url_host() is
 * checked on userinfo, ports, brackets and percent escapes.
 */
#include <stdio.h>
#include <string.h>

#include "cronvisor.h"
#include "cvtest.h"

/* Parses text, which must parse; the caller clears hl. */
static void
parse_ok(struct hostlist *hl, const char *text)
{
	char err[CV_ERRLEN] = "";

	ck_assert_msg(hostlist_parse(hl, text, err, sizeof(err)) == 0,
	    "\"%s\" refused: %s", text, err);
}

static const struct {
	const char *text; /* a list */
	size_t n;         /* its elements */
} good[] = {
    {"", 0},
    {"   ", 0},
    {"localhost", 1},
    {" localhost , example.com ", 2},
    {"*.example.com", 1},
    {"EXAMPLE.com.", 1},
    {"169.254.169.254", 1},
    {"169.254.0.0/16,fe80::/10,fd00:ec2::254", 3},
    {"0.0.0.0/0", 1},
    {"::/0", 1},
    {"[::1]", 1},
    {"[2001:db8::]/32", 1},
    {"10.1.2.3/8", 1}, /* host bits are masked away */
    {"a-b_c.d9", 1},
    {"1.2.3.4/32,::ffff:1.2.3.4/128", 2},
};

START_TEST(test_parse_good)
{
	struct hostlist hl;

	parse_ok(&hl, good[_i].text);
	ck_assert_uint_eq(hl.n, good[_i].n);
	hostlist_clear(&hl);
}
END_TEST

static const struct {
	const char *text; /* a bad list */
	const char *err;  /* the message */
} bad[] = {
    {",", "element 1 is empty"},
    {"a,,b", "element 2 is empty"},
    {"a,", "element 2 is empty"},
    {"*", "\"*\": not a host name, *.suffix, IP address or CIDR block"},
    {"*.", "\"*.\": not a host name, *.suffix, IP address or CIDR block"},
    {"a.*.com",
        "\"a.*.com\": not a host name, *.suffix, IP address or CIDR "
        "block"},
    {"exa mple.com",
        "\"exa mple.com\": not a host name, *.suffix, IP "
        "address or CIDR block"},
    {"a..b", "\"a..b\": not a host name, *.suffix, IP address or CIDR block"},
    {"http://x", "\"http://x\": not an IP address before '/'"},
    {"10.0.0.0/33", "\"10.0.0.0/33\": prefix length over 32"},
    {"::/129", "\"::/129\": prefix length over 128"},
    {"10.0.0.0/", "\"10.0.0.0/\": prefix length is not a number"},
    {"10.0.0.0/-1", "\"10.0.0.0/-1\": prefix length is not a number"},
    {"10.0.0.0/1000", "\"10.0.0.0/1000\": prefix length is not a number"},
    {"10.0.0/8", "\"10.0.0/8\": not an IP address before '/'"},
    {"fe80::1%eth0",
        "\"fe80::1%eth0\": not a host name, *.suffix, IP "
        "address or CIDR block"},
    {"\xc3\xa9.example",
        "\"\xc3\xa9.example\": not a host name, *.suffix, "
        "IP address or CIDR block"},
};

START_TEST(test_parse_bad)
{
	struct hostlist hl;
	char err[CV_ERRLEN] = "";

	ck_assert_int_eq(
	    hostlist_parse(&hl, bad[_i].text, err, sizeof(err)), -1);
	ck_assert_str_eq(err, bad[_i].err);
	ck_assert_uint_eq(hl.n, 0);
	hostlist_clear(&hl);
}
END_TEST

START_TEST(test_parse_limits)
{
	char text[64 * 300], label[80], err[CV_ERRLEN];
	struct hostlist hl;
	size_t o = 0;

	/* 256 elements parse, 257 do not. */
	for (int i = 0; i < 257; i++)
		o += (size_t)snprintf(
		    text + o, sizeof(text) - o, "%sh%d", i ? "," : "", i);
	ck_assert_int_eq(hostlist_parse(&hl, text, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "more than 256 elements");
	*strrchr(text, ',') = '\0';
	parse_ok(&hl, text);
	ck_assert_uint_eq(hl.n, 256);
	hostlist_clear(&hl);
	/* A label of 63 bytes is a name, 64 is not. */
	memset(label, 'a', 64);
	label[63] = '\0';
	parse_ok(&hl, label);
	hostlist_clear(&hl);
	label[63] = 'a';
	label[64] = '\0';
	ck_assert_int_eq(hostlist_parse(&hl, label, err, sizeof(err)), -1);
	hostlist_clear(&hl);
}
END_TEST

/* Prefix boundaries: LIST matches ADDRESS or not. */
static const struct {
	const char *list; /* a list */
	const char *ip;   /* an address */
	int match;        /* whether it is on the list */
} nets[] = {
    {"10.0.0.0/8", "10.0.0.0", 1},
    {"10.0.0.0/8", "10.255.255.255", 1},
    {"10.0.0.0/8", "11.0.0.0", 0},
    {"10.0.0.0/8", "9.255.255.255", 0},
    {"0.0.0.0/0", "255.255.255.255", 1},
    {"0.0.0.0/0", "::1", 0},
    {"128.0.0.0/1", "127.255.255.255", 0},
    {"128.0.0.0/1", "128.0.0.0", 1},
    {"1.2.3.4/31", "1.2.3.5", 1},
    {"1.2.3.4/31", "1.2.3.6", 0},
    {"1.2.3.4/32", "1.2.3.4", 1},
    {"1.2.3.4/32", "1.2.3.5", 0},
    {"1.2.3.4", "1.2.3.4", 1},
    {"10.1.2.3/8", "10.200.0.1", 1},
    {"169.254.169.254", "::ffff:169.254.169.254", 1},
    {"::ffff:0:0/96", "127.0.0.1", 1},
    {"::/0", "2001:db8::1", 1},
    {"::/0", "10.0.0.1", 1},
    {"fe80::/10", "fe80::1", 1},
    {"fe80::/10", "febf:ffff::1", 1},
    {"fe80::/10", "fec0::1", 0},
    {"8000::/1", "7fff::", 0},
    {"8000::/1", "8000::", 1},
    {"2001:db8::1/127", "2001:db8::", 1},
    {"2001:db8::1/127", "2001:db8::2", 0},
    {"2001:db8::1/128", "2001:db8::1", 1},
    {"2001:db8::1/128", "2001:db8::0", 0},
    {"[::1]", "::1", 1},
    {"::1", "[::1]", 1},
    {"fd00:ec2::254", "FD00:EC2::254", 1},
    {"localhost", "127.0.0.1", 0},
    {"10.0.0.0/8", "not-an-ip", 0},
};

START_TEST(test_match_net)
{
	struct hostlist hl;

	parse_ok(&hl, nets[_i].list);
	ck_assert_msg(hostlist_match(&hl, NULL, nets[_i].ip) == nets[_i].match,
	    "%s on %s: want %d", nets[_i].ip, nets[_i].list, nets[_i].match);
	/* A literal host is the same address. */
	ck_assert_int_eq(hostlist_match(&hl, nets[_i].ip, NULL),
	    strcmp(nets[_i].ip, "not-an-ip") == 0 ? 0 : nets[_i].match);
	hostlist_clear(&hl);
}
END_TEST

/* Names: LIST matches HOST or not. */
static const struct {
	const char *list; /* a list */
	const char *host; /* a URL's host */
	int match;        /* whether it is on the list */
} names[] = {
    {"example.com", "example.com", 1},
    {"example.com", "EXAMPLE.COM", 1},
    {"example.com", "example.com.", 1},
    {"example.com.", "example.com", 1},
    {"example.com", "www.example.com", 0},
    {"example.com", "example.co", 0},
    {"example.com", "xexample.com", 0},
    {"*.example.com", "www.example.com", 1},
    {"*.example.com", "a.b.example.com", 1},
    {"*.example.com", "example.com", 0},
    {"*.example.com", "xexample.com", 0},
    {"*.example.com", "www.example.com.", 1},
    {"*.EXAMPLE.com", "Www.Example.Com", 1},
    {"localhost", "localhost", 1},
    {"localhost", "localhost.localdomain", 0},
    {"localhost", "", 0},
    {"localhost", "local host", 0},
    {"127.0.0.1", "localhost", 0},
};

START_TEST(test_match_name)
{
	struct hostlist hl;

	parse_ok(&hl, names[_i].list);
	ck_assert_msg(
	    hostlist_match(&hl, names[_i].host, NULL) == names[_i].match,
	    "%s on %s: want %d", names[_i].host, names[_i].list,
	    names[_i].match);
	hostlist_clear(&hl);
}
END_TEST

/* The verdict: allow, deny, host, address -> verdict. */
static const struct {
	const char *allow;          /* http_allow_hosts */
	const char *deny;           /* http_deny_hosts */
	const char *host;           /* the URL's host */
	const char *ip;             /* the address, NULL before resolution */
	enum hostlist_verdict want; /* what hostlist_check says */
} verdicts[] = {
    {"", "", "example.com", NULL, HOSTLIST_OK},
    {"", "", "example.com", "93.184.216.34", HOSTLIST_OK},
    {"", "localhost", "localhost", NULL, HOSTLIST_DENIED},
    {"", "localhost", "LOCALHOST.", NULL, HOSTLIST_DENIED},
    {"", "127.0.0.0/8", "localhost", NULL, HOSTLIST_OK},
    {"", "127.0.0.0/8", "localhost", "127.0.0.1", HOSTLIST_DENIED},
    {"", "127.0.0.0/8", "evil.example", "::ffff:127.0.0.2", HOSTLIST_DENIED},
    {"", "169.254.169.254", "169.254.169.254", NULL, HOSTLIST_DENIED},
    {"", "169.254.169.254", "[::ffff:169.254.169.254]", NULL, HOSTLIST_DENIED},
    {"", "169.254.0.0/16", "metadata.internal", "169.254.169.254",
        HOSTLIST_DENIED},
    {"", "::1", "[::1]", NULL, HOSTLIST_DENIED},
    /* Deny wins over allow. */
    {"localhost", "localhost", "localhost", NULL, HOSTLIST_DENIED},
    {"*.example.com", "bad.example.com", "bad.example.com", NULL,
        HOSTLIST_DENIED},
    {"*.example.com", "bad.example.com", "good.example.com", NULL, HOSTLIST_OK},
    {"*.example.com", "10.0.0.0/8", "good.example.com", "10.0.0.5",
        HOSTLIST_DENIED},
    /* An allow list. */
    {"api.example.com", "", "api.example.com", NULL, HOSTLIST_OK},
    {"api.example.com", "", "api.example.com", "203.0.113.9", HOSTLIST_OK},
    {"api.example.com", "", "other.example.com", NULL, HOSTLIST_NOT_ALLOWED},
    {"api.example.com", "", "203.0.113.9", NULL, HOSTLIST_NOT_ALLOWED},
    {"10.0.0.0/8", "", "10.1.2.3", NULL, HOSTLIST_OK},
    {"10.0.0.0/8", "", "11.1.2.3", NULL, HOSTLIST_NOT_ALLOWED},
    /* A name may still resolve into an allowed block: decided later. */
    {"10.0.0.0/8", "", "svc.internal", NULL, HOSTLIST_OK},
    {"10.0.0.0/8", "", "svc.internal", "10.9.9.9", HOSTLIST_OK},
    {"10.0.0.0/8", "", "svc.internal", "192.0.2.1", HOSTLIST_NOT_ALLOWED},
    {"api.example.com", "", "svc.internal", NULL, HOSTLIST_NOT_ALLOWED},
    /* Addresses in other spellings are the address, never a name. */
    {"", "127.0.0.0/8", "0x7f.1", NULL, HOSTLIST_DENIED},
    {"", "127.0.0.0/8", "0x7f.1", "127.0.0.1", HOSTLIST_DENIED},
    {"localhost", "", "0x7f.1", "127.0.0.1", HOSTLIST_NOT_ALLOWED},
    {"10.0.0.0/8", "", "0xa.1", NULL, HOSTLIST_OK},
    {"10.0.0.0/8", "", "0xb.1", NULL, HOSTLIST_NOT_ALLOWED},
    /* the address connected to, whatever the URL said */
    {"", "169.254.0.0/16", "2852039166", "169.254.169.254", HOSTLIST_DENIED},
    {"", "169.254.0.0/16", "metadata.test", "64:ff9b::a9fe:a9fe",
        HOSTLIST_DENIED},
    {"", "169.254.0.0/16", "metadata.test", "fe80::1%eth0", HOSTLIST_OK},
    {"", "fe80::/10", "metadata.test", "fe80::1%eth0", HOSTLIST_DENIED},
};

/* The default http_deny_hosts of common/config.c. */
#define DEFAULT_DENY                                                           \
	"169.254.0.0/16,fe80::/10,fd00:ec2::254,100.100.100.200,0.0.0.0/8,::"

/*
 * Every spelling of a denied address that libcurl reads as that address
 * (issue 17): the default deny list refuses each of them.
 */
static const char *const spellings[] = {
    "169.254.169.254",
    "2852039166",
    "0xa9fea9fe",
    "0XA9FEA9FE",
    "0251.0376.0251.0376",
    "0xa9.0xfe.0xa9.0xfe",
    "169.254.43518",
    "169.0xfea9fe",
    "169.254.169.254.",
    "2852039166.",
    "00000000251.254.169.254",
    "[::169.254.169.254]",
    "[::a9fe:a9fe]",
    "[::ffff:169.254.169.254]",
    "[::ffff:a9fe:a9fe]",
    "[64:ff9b::a9fe:a9fe]",
    "[64:ff9b::169.254.169.254]",
    "[2002:a9fe:a9fe::1]",
    "[fe80::1%eth0]",
    "[FD00:EC2:0::254]",
    "100.100.100.200",
    "0x64646464" /* 100.100.100.100: not listed */,
    "0",
    "0.0.0.0",
    "0x0",
    "[::]",
    "[::ffff:0.0.0.0]",
    "[0:0:0:0:0:0:0:0]",
};

START_TEST(test_spellings)
{
	struct hostlist allow = {0}, deny;
	const char *h = spellings[_i];
	enum hostlist_verdict want =
	    strcmp(h, "0x64646464") == 0 ? HOSTLIST_OK : HOSTLIST_DENIED;

	parse_ok(&deny, DEFAULT_DENY);
	ck_assert_msg(hostlist_check(&allow, &deny, h, NULL) == want,
	    "%s: want %d", h, want);
	/* as the address connected to, too */
	if (h[0] != '[' && strchr(h, 'x') == NULL && strchr(h, 'X') == NULL &&
	    strspn(h, "0123456789.") == strlen(h))
		ck_assert_int_eq(
		    hostlist_check(&allow, &deny, "x.test", h), want);
	hostlist_clear(&deny);
}
END_TEST

/* Hosts that look numeric but are names (or nothing), as libcurl reads them. */
static const struct {
	const char *host;  /* a URL's host */
	const char *canon; /* hostlist_canon(), NULL: -1 */
} canons[] = {
    {"Example.COM.", "example.com"},
    {"example.com", "example.com"},
    {"169.254.169.254", "169.254.169.254"},
    {"2852039166", "169.254.169.254"},
    {"0xa9fea9fe", "169.254.169.254"},
    {"0251.0376.0251.0376", "169.254.169.254"},
    {"169.254.43518", "169.254.169.254"},
    {"169.254.169.254.", "169.254.169.254"},
    {"127.1", "127.0.0.1"},
    {"127.0.1", "127.0.0.1"},
    {"4294967295", "255.255.255.255"},
    {"4294967296", "4294967296"}, /* over 32 bits: a name */
    {"1.16777215", "1.255.255.255"},
    {"1.16777216", "1.16777216"},
    {"1.2.65535", "1.2.255.255"},
    {"1.2.65536", "1.2.65536"},
    {"256.1.1.1", "256.1.1.1"},
    {"1.2.3.256", "1.2.3.256"},
    {"1.2.3.4.5", "1.2.3.4.5"},
    {"08.1.1.1", "08.1.1.1"}, /* not octal: a name */
    {"0x.1.1.1", "0x.1.1.1"},
    {"0x1g", "0x1g"},
    {"1.2.3.4..", NULL},
    {"[::1]", "[::1]"},
    {"[::FFFF:127.0.0.1]", "127.0.0.1"},
    {"[::ffff:7f00:1]", "127.0.0.1"},
    {"[::127.0.0.1]", "[::127.0.0.1]"},
    {"[64:ff9b::a9fe:a9fe]", "[64:ff9b::a9fe:a9fe]"},
    {"[fe80::1%eth0]", "[fe80::1]"},
    {"[1.2.3.4]", NULL},
    {"[::1", NULL},
    {"exa mple", NULL},
    {"", NULL},
};

START_TEST(test_canon)
{
	char out[64];
	int r = hostlist_canon(canons[_i].host, out, sizeof(out));

	if (canons[_i].canon == NULL)
		ck_assert_msg(r == -1, "%s gave %s", canons[_i].host, out);
	else {
		ck_assert_msg(r == 0, "%s refused", canons[_i].host);
		ck_assert_str_eq(out, canons[_i].canon);
	}
}
END_TEST

START_TEST(test_url_canon)
{
	char out[16];

	ck_assert_int_eq(
	    hostlist_url_canon("http://u:p@0x7f.1:8080/x", out, sizeof(out)),
	    0);
	ck_assert_str_eq(out, "127.0.0.1");
	ck_assert_int_eq(
	    hostlist_url_canon("https://LocalHost./", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "localhost");
	ck_assert_int_eq(hostlist_url_canon("ftp://x/", out, sizeof(out)), -1);
	/* 15 bytes and a NUL fit; 16 do not */
	ck_assert_int_eq(
	    hostlist_url_canon("http://255.255.255.255/", out, sizeof(out)), 0);
	ck_assert_int_eq(
	    hostlist_url_canon("http://[1:2:3:4:5:6:7:8]/", out, sizeof(out)),
	    -1);
}
END_TEST

START_TEST(test_check)
{
	struct hostlist allow, deny;

	parse_ok(&allow, verdicts[_i].allow);
	parse_ok(&deny, verdicts[_i].deny);
	ck_assert_msg(hostlist_check(&allow, &deny, verdicts[_i].host,
	                  verdicts[_i].ip) == verdicts[_i].want,
	    "row %d: host %s ip %s", _i, verdicts[_i].host,
	    verdicts[_i].ip ? verdicts[_i].ip : "-");
	hostlist_clear(&allow);
	hostlist_clear(&deny);
}
END_TEST

START_TEST(test_verdict_text)
{
	ck_assert_str_eq(hostlist_verdict_text(HOSTLIST_DENIED),
	    "is denied by http_deny_hosts");
	ck_assert_str_eq(hostlist_verdict_text(HOSTLIST_NOT_ALLOWED),
	    "is not in http_allow_hosts");
}
END_TEST

static const struct {
	const char *url;  /* a URL */
	const char *host; /* its host, NULL: none */
} urls[] = {
    {"http://example.com/", "example.com"},
    {"https://example.com", "example.com"},
    {"HTTP://Example.com:8080/x?y#z", "Example.com"},
    {"http://user:pw@example.com/", "example.com"},
    {"http://a@b@example.com/", "example.com"},
    {"http://example.com/@evil.com", "example.com"},
    {"http://example.com?@evil.com", "example.com"},
    {"http://[::1]:80/", "[::1]"},
    {"http://[::1/", "[::1"},
    {"http://169.254.169.254/latest", "169.254.169.254"},
    {"http://local%68ost/", "localhost"},
    {"http://a%00b/", NULL},
    {"http:///x", NULL},
    {"http://:80/", NULL},
    {"ftp://example.com/", NULL},
    {"example.com", NULL},
};

START_TEST(test_url_host)
{
	char host[64];
	int r = hostlist_url_host(urls[_i].url, host, sizeof(host));

	if (urls[_i].host == NULL)
		ck_assert_msg(r == -1, "%s gave %s", urls[_i].url, host);
	else {
		ck_assert_int_eq(r, 0);
		ck_assert_str_eq(host, urls[_i].host);
	}
}
END_TEST

START_TEST(test_url_host_small)
{
	char host[4];

	ck_assert_int_eq(hostlist_url_host("http://abc/", host, 4), 0);
	ck_assert_str_eq(host, "abc");
	ck_assert_int_eq(hostlist_url_host("http://abcd/", host, 4), -1);
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static Suite *
hostlist_suite(void)
{
	Suite *s = suite_create("hostlist");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, test_parse_good, 0, N(good));
	tcase_add_loop_test(tc, test_parse_bad, 0, N(bad));
	tcase_add_test(tc, test_parse_limits);
	tcase_add_loop_test(tc, test_match_net, 0, N(nets));
	tcase_add_loop_test(tc, test_match_name, 0, N(names));
	tcase_add_loop_test(tc, test_check, 0, N(verdicts));
	tcase_add_loop_test(tc, test_spellings, 0, N(spellings));
	tcase_add_loop_test(tc, test_canon, 0, N(canons));
	tcase_add_test(tc, test_url_canon);
	tcase_add_test(tc, test_verdict_text);
	tcase_add_loop_test(tc, test_url_host, 0, N(urls));
	tcase_add_test(tc, test_url_host_small);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return cvtest_run(hostlist_suite());
}
