/*
 * check_runuser.c: tests of common/runuser.c and of the two settings that
 * use it.  The checker is run on good and bad values of both forms (names
 * at the length boundaries, root refused, an owner listed twice, blanks,
 * owners holding ':'), and runuser_for() on a table of (list, default,
 * owner) rows: the owner's element wins, others get the default, and an
 * empty default leaves them without a user.
 */
#include <stdio.h>
#include <string.h>

#include "cronvisor.h"
#include "cvtest.h"

static const struct {
	const char *v; /* a value */
	int pairs;     /* 1: run_users, 0: run_user_default */
	int ok;        /* 1 if valid */
} values[] = {
    {"", 0, 1},
    {"cronvisor-run", 0, 1},
    {"a", 0, 1},
    {"_x.y-z9", 0, 1},
    {"abcdefghijklmnopqrstuvwxyz012345", 0, 1},  /* 32 bytes */
    {"abcdefghijklmnopqrstuvwxyz0123456", 0, 0}, /* 33 */
    {"root", 0, 0},
    {"roots", 0, 1},
    {"-x", 0, 0},
    {"9x", 0, 0},
    {"a b", 0, 0},
    {"a:b", 0, 0},
    {"", 1, 1},
    {"tenant-x:cvrun-x", 1, 1},
    {"tenant-x:cvrun-x,tenant-y:cvrun-y", 1, 1},
    {" tenant-x : cvrun-x , tenant-y:cvrun-y ", 1, 1},
    {"urn:team:a:cvrun-a", 1, 1}, /* the owner holds ':' */
    {"tenant-x:root", 1, 0},
    {"tenant-x:", 1, 0},
    {":cvrun-x", 1, 0},
    {"tenant-x", 1, 0},
    {"tenant-x:cvrun-x,", 1, 0},
    {",tenant-x:cvrun-x", 1, 0},
    {"tenant-x:cvrun-x,,b:c", 1, 0},
    {"tenant-x:cvrun-x,tenant-x:cvrun-y", 1, 0},
    {"tenant-x:cvrun-x,tenant-xy:cvrun-y", 1, 1},
    {"t:a b", 1, 0},
};

START_TEST(test_check)
{
	char why[CV_ERRLEN] = "";
	int r = runuser_check(values[_i].v, values[_i].pairs, why, sizeof(why));

	ck_assert_msg((r == 0) == values[_i].ok, "\"%s\" (pairs %d): %d %s",
	    values[_i].v, values[_i].pairs, r, why);
	if (!values[_i].ok)
		ck_assert_msg(
		    why[0] != '\0', "\"%s\": no reason", values[_i].v);
}
END_TEST

static const struct {
	const char *users; /* run_users */
	const char *def;   /* run_user_default */
	const char *owner; /* whose run */
	const char *want;  /* its user, NULL: none */
} rows[] = {
    {"", "cronvisor-run", "anyone", "cronvisor-run"},
    {"", "", "anyone", NULL},
    {"", NULL, "anyone", NULL},
    {NULL, "d", "anyone", "d"},
    {"x:ux,y:uy", "d", "x", "ux"},
    {"x:ux,y:uy", "d", "y", "uy"},
    {"x:ux,y:uy", "d", "z", "d"},
    {"x:ux,y:uy", "", "z", NULL},
    {"x:ux,y:uy", "", "", NULL},
    {"x:ux", "d", "xx", "d"},
    {"xx:ux", "d", "x", "d"},
    {" x : ux , y:uy", "", "x", "ux"},
    {"urn:team:a:ua", "", "urn:team:a", "ua"},
    {"x:ux", "d", NULL, "d"},
};

START_TEST(test_for)
{
	char buf[RUNUSER_NAME_MAX + 1];
	const char *got = runuser_for(
	    rows[_i].users, rows[_i].def, rows[_i].owner, buf, sizeof(buf));

	if (rows[_i].want == NULL)
		ck_assert_msg(got == NULL, "row %d: got \"%s\"", _i, got);
	else
		ck_assert_msg(got != NULL && strcmp(got, rows[_i].want) == 0,
		    "row %d: got \"%s\", want \"%s\"", _i, got ? got : "(null)",
		    rows[_i].want);
}
END_TEST

/* The settings: the default is the packages' user; root is refused. */
START_TEST(test_config)
{
	static const char text[] = "run_users = \"a:ua, b:ub\"\n"
	                           "run_user_default = \"\"\n";
	char err[CV_ERRLEN] = "";
	struct config cf;

	config_defaults(&cf);
	ck_assert_str_eq(cf.run_user_default, "cronvisor-run");
	ck_assert_str_eq(cf.run_users, "");
	ck_assert_int_eq(
	    config_parse(&cf, text, sizeof(text) - 1, "t", err, sizeof(err)),
	    0);
	ck_assert_str_eq(cf.run_users, "a:ua, b:ub");
	ck_assert_str_eq(cf.run_user_default, "");
	ck_assert_int_eq(config_parse(&cf, "run_user_default = root\n", 24, "t",
	                     err, sizeof(err)),
	    -1);
	ck_assert_msg(strstr(err, "run_user_default") != NULL, "%s", err);
	ck_assert_str_eq(cf.run_user_default, "");
	config_clear(&cf);
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static Suite *
runuser_suite(void)
{
	Suite *s = suite_create("runuser");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, test_check, 0, N(values));
	tcase_add_loop_test(tc, test_for, 0, N(rows));
	tcase_add_test(tc, test_config);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return cvtest_run(runuser_suite());
}
