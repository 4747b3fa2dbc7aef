/*
 * check_cgroup.c: a cgroup per run (runner/cgroup.c), without a cgroup
 * mount: /proc/PID/cgroup and controller lists parsed; the supervisor's
 * set-up and the runner's entry driven against a directory tree that
 * stands for a delegated cgroup (the control files made beforehand, as
 * the kernel makes them), checking what is written where; and the
 * fallback: no cgroup2 mount, no memory or pids controller, a process not
 * in the supervisor's leaf, a cgroup not delegated (systemd's
 * user.delegate attribute) — each leaves everything as it was and the
 * runs get their rlimits only.  The machines that run the tests have no
 * writable cgroup v2 (a hybrid v1 hierarchy), so the real thing is not
 * driven here.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cvtest.h"
#include "runner.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static const struct {
	const char *text; /* /proc/PID/cgroup */
	const char *want; /* the v2 path, NULL: none */
} paths[] = {
    {"0::/system.slice/cronvisord.service\n",
        "/system.slice/cronvisord.service"},
    {"9:name=systemd:/\n4:memory:/a\n0::/\n", "/"},
    {"0::/x/supervisor", "/x/supervisor"},
    {"12:pids:/\n1:cpu:/\n", NULL},
    {"", NULL},
    {"0:/x\n", NULL},
};

START_TEST(test_self_path)
{
	char path[64];
	int r = cgroup_self_path(paths[_i].text, path, sizeof(path));

	if (paths[_i].want == NULL) {
		ck_assert_int_eq(r, -1);
	} else {
		ck_assert_int_eq(r, 0);
		ck_assert_str_eq(path, paths[_i].want);
	}
}
END_TEST

START_TEST(test_self_path_too_long)
{
	char path[4];

	ck_assert_int_eq(
	    cgroup_self_path("0::/abcd\n", path, sizeof(path)), -1);
	ck_assert_int_eq(cgroup_self_path("0::/ab\n", path, sizeof(path)), 0);
}
END_TEST

START_TEST(test_has)
{
	ck_assert(cgroup_has("cpuset cpu io memory pids\n", "cpu"));
	ck_assert(cgroup_has("cpuset cpu io memory pids\n", "pids"));
	ck_assert(cgroup_has("memory", "memory"));
	ck_assert(!cgroup_has("cpuset io memory", "cpu"));
	ck_assert(!cgroup_has("hugetlb\n", "memory"));
	ck_assert(!cgroup_has("", "pids"));
}
END_TEST

/* A scratch tree standing for a cgroup mount. */
static char root[64];

static void
mk_root(void)
{
	snprintf(root, sizeof(root), "/tmp/check_cgroup.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
}

/* Writes (creates) file root/rel with text. */
static void
put(const char *rel, const char *text)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	ck_assert_ptr_nonnull(f = fopen(p, "w"));
	fputs(text, f);
	fclose(f);
}

/* The text of root/rel ("(none)" if it cannot be read). */
static const char *
get(const char *rel)
{
	static char buf[256];
	char p[256];
	FILE *f;
	size_t n;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	if ((f = fopen(p, "r")) == NULL)
		return "(none)";
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void
mk(const char *rel)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	ck_assert_int_eq(mkdir(p, 0755), 0);
}

static int
exists(const char *rel)
{
	char p[256];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	return stat(p, &st) == 0;
}

START_TEST(test_setup)
{
	char why[256], pid[24];

	mk_root();
	mk("svc");
	put("svc/cgroup.controllers", "cpuset cpu io memory pids\n");
	put("svc/cgroup.subtree_control", "");
	mk("svc/supervisor");
	put("svc/supervisor/cgroup.procs", "");
	ck_assert_int_eq(cgroup_setup_at(root, "/svc", why, sizeof(why)), 1);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	ck_assert_str_eq(get("svc/supervisor/cgroup.procs"), pid);
	/* +memory, +pids, then +cpu: each a write of its own. */
	ck_assert_str_eq(get("svc/cgroup.subtree_control"), "+cpu");
	/* Again from inside the leaf: the same parent. */
	ck_assert_int_eq(
	    cgroup_setup_at(root, "/svc/supervisor", why, sizeof(why)), 1);

	/* Its runs' cgroups go when empty; one that is not is kept for later.
	 */
	mk("svc/run-a");
	cgroup_remove("a");
	ck_assert(!exists("svc/run-a"));
	mk("svc/run-b");
	put("svc/run-b/x", "");
	cgroup_remove("b");
	ck_assert(exists("svc/run-b"));
	ck_assert_int_eq(unlink(strcat(strcpy(why, root), "/svc/run-b/x")), 0);
	cgroup_remove("c");
	ck_assert(!exists("svc/run-b"));
}
END_TEST

START_TEST(test_delegated)
{
	char dir[128];

	mk_root();
	mk("svc");
	snprintf(dir, sizeof(dir), "%s/svc", root);
	ck_assert_int_eq(cgroup_delegated(dir), 0);
	if (setxattr(dir, "user.delegate", "0", 1, 0) == -1)
		return; /* no user attributes on this file system */
	ck_assert_int_eq(cgroup_delegated(dir), 0);
	ck_assert_int_eq(setxattr(dir, "user.delegate", "1", 1, 0), 0);
	ck_assert_int_eq(cgroup_delegated(dir), 1);
}
END_TEST

START_TEST(test_setup_fallback)
{
	char why[256];

	mk_root();
	mk("svc");
	/* No memory controller offered: nothing is made or moved. */
	put("svc/cgroup.controllers", "cpu io pids\n");
	ck_assert_int_eq(cgroup_setup_at(root, "/svc", why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(strstr(why, "no memory and pids controllers"));
	ck_assert(!exists("svc/supervisor"));
	/* No such cgroup at all. */
	ck_assert_int_eq(cgroup_setup_at(root, "/gone", why, sizeof(why)), 0);
	/* Not a cgroup2 mount: runs get rlimits only. */
	ck_assert_int_eq(cgroup_setup(root), 0);
	ck_assert(!exists("svc/supervisor"));
	/* And cgroup_remove() does nothing without a set-up. */
	mk("svc/run-a");
	cgroup_remove("a");
	ck_assert(exists("svc/run-a"));
}
END_TEST

/* The control files the kernel makes with a cgroup. */
static void
mk_run(const char *dir)
{
	static const char *const files[] = {"memory.max", "memory.swap.max",
	    "pids.max", "cpu.max", "cgroup.procs"};
	char p[128];

	mk(dir);
	for (size_t i = 0; i < NELEM(files); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
		put(p, "");
	}
}

START_TEST(test_enter)
{
	struct run_limits l = {.memory_mb = 512, .nproc = 64};
	struct run_limits none = {0};

	mk_root();
	mk("svc");
	put("svc/cgroup.subtree_control", "cpu memory pids\n");
	mk_run("svc/run-sched-0a1b2c3d-n5-rc0");
	ck_assert_int_eq(cgroup_enter_at(root, "/svc/supervisor",
	                     "sched-0a1b2c3d-n5-rc0", &l),
	    1);
	ck_assert_str_eq(
	    get("svc/run-sched-0a1b2c3d-n5-rc0/memory.max"), "536870912");
	ck_assert_str_eq(
	    get("svc/run-sched-0a1b2c3d-n5-rc0/memory.swap.max"), "0");
	/* The runner is in it too: one more than the run's nproc. */
	ck_assert_str_eq(get("svc/run-sched-0a1b2c3d-n5-rc0/pids.max"), "65");
	ck_assert_str_eq(
	    get("svc/run-sched-0a1b2c3d-n5-rc0/cpu.max"), "100000 100000");
	ck_assert_str_eq(
	    get("svc/run-sched-0a1b2c3d-n5-rc0/cgroup.procs"), "0");

	mk_run("svc/run-t1");
	ck_assert_int_eq(
	    cgroup_enter_at(root, "/svc/supervisor", "t1", &none), 1);
	ck_assert_str_eq(get("svc/run-t1/memory.max"), "max");
	ck_assert_str_eq(get("svc/run-t1/pids.max"), "max");

	/* No cpu controller: no cpu.max. */
	put("svc/cgroup.subtree_control", "memory pids\n");
	mk_run("svc/run-t2");
	ck_assert_int_eq(cgroup_enter_at(root, "/svc/supervisor", "t2", &l), 1);
	ck_assert_str_eq(get("svc/run-t2/cpu.max"), "");
}
END_TEST

START_TEST(test_enter_fallback)
{
	struct run_limits l = {.memory_mb = 512, .nproc = 64};

	mk_root();
	mk("svc");
	put("svc/cgroup.subtree_control", "cpu memory pids\n");
	/* Not in the supervisor's leaf (no set-up was done): nothing. */
	ck_assert_int_eq(cgroup_enter_at(root, "/svc", "a", &l), 0);
	ck_assert_int_eq(cgroup_enter_at(root, "/svc/other", "a", &l), 0);
	ck_assert(!exists("svc/run-a"));
	/* A run id that is no file name. */
	ck_assert_int_eq(
	    cgroup_enter_at(root, "/svc/supervisor", "../a", &l), 0);
	/* No pids controller handed down. */
	put("svc/cgroup.subtree_control", "cpu memory\n");
	ck_assert_int_eq(cgroup_enter_at(root, "/svc/supervisor", "a", &l), 0);
	ck_assert(!exists("svc/run-a"));
	/* A cgroup that cannot be written (no control files): -1. */
	put("svc/cgroup.subtree_control", "memory pids\n");
	ck_assert_int_eq(cgroup_enter_at(root, "/svc/supervisor", "b", &l), -1);
	/* Not a cgroup2 mount. */
	ck_assert_int_eq(cgroup_enter(root, "c", &l), 0);
}
END_TEST

static Suite *
cgroup_suite(void)
{
	Suite *s = suite_create("cgroup");
	TCase *tc = tcase_create("cgroup");

	tcase_add_loop_test(tc, test_self_path, 0, NELEM(paths));
	tcase_add_test(tc, test_self_path_too_long);
	tcase_add_test(tc, test_has);
	tcase_add_test(tc, test_setup);
	tcase_add_test(tc, test_delegated);
	tcase_add_test(tc, test_setup_fallback);
	tcase_add_test(tc, test_enter);
	tcase_add_test(tc, test_enter_fallback);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return cvtest_run(cgroup_suite());
}
