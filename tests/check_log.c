/*
 * check_log.c: the logger (common/log.c): line shape, levels, the per-thread
 * prefix, strerror for log_warn, errno left alone, and fatal()'s exit.
 * Each test captures stderr through a pipe.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cvtest.h"
#include "cronvisor.h"

static int saved_stderr = -1, cap[2];

static void
capture(void)
{
	ck_assert_int_eq(pipe(cap), 0);
	saved_stderr = dup(2);
	dup2(cap[1], 2);
	close(cap[1]);
}

/* Stops capturing and returns what was written, NUL-terminated. */
static const char *
captured(void)
{
	static char buf[8192];
	ssize_t n;

	fflush(stderr);
	dup2(saved_stderr, 2);
	close(saved_stderr);
	n = io_read(cap[0], buf, sizeof(buf) - 1);
	close(cap[0]);
	buf[n < 0 ? 0 : n] = '\0';
	return buf;
}

START_TEST(test_lines_and_levels)
{
	log_init("cvtest", LOG_LEVEL_INFO);
	capture();
	log_warnx("w %d", 1);
	log_info("i %s", "two");
	log_debug("hidden");
	log_setlevel(LOG_LEVEL_DEBUG);
	log_debug("d");
	log_setlevel(LOG_LEVEL_WARN);
	log_info("hidden too");
	log_warnx("still");
	ck_assert_str_eq(captured(),
	    "cvtest: w 1\ncvtest: i two\n"
	    "cvtest: d\ncvtest: still\n");
}
END_TEST

START_TEST(test_warn_errno)
{
	log_init("cvtest", LOG_LEVEL_INFO);
	capture();
	errno = ENOENT;
	log_warn("open %s", "/x");
	ck_assert_int_eq(errno, ENOENT);
	errno = EACCES;
	log_warnx("plain");
	log_info("info");
	ck_assert_int_eq(errno, EACCES);
	ck_assert_str_eq(captured(),
	    "cvtest: open /x: No such file or "
	    "directory\ncvtest: plain\ncvtest: info\n");
}
END_TEST

static void *
other_thread(void *arg)
{
	(void)arg;
	log_warnx("from the other thread");
	return NULL;
}

START_TEST(test_prefix)
{
	pthread_t th;

	log_init("cvtest", LOG_LEVEL_INFO);
	capture();
	log_prefix("run %s schedule \"%s\"", "sched-1a2b3c4d-n5-rc0", "backup");
	log_warnx("timed out");
	/* the prefix belongs to this thread only */
	pthread_create(&th, NULL, other_thread, NULL);
	pthread_join(th, NULL);
	log_prefix(NULL);
	log_warnx("done");
	ck_assert_str_eq(captured(),
	    "cvtest: run sched-1a2b3c4d-n5-rc0 schedule \"backup\": timed out\n"
	    "cvtest: from the other thread\ncvtest: done\n");
}
END_TEST

/* A name with a newline cannot forge a line; ESC never reaches the log. */
START_TEST(test_control_escaped)
{
	log_init("cvtest", LOG_LEVEL_INFO);
	capture();
	log_prefix("schedule \"%s\"", "x\x1b[31m\r\x7f");
	log_warnx("created \"%s\"", "a\ncvtest: run forged: succeeded");
	log_prefix(NULL);
	log_info("output %s",
	    "tab\there \xc2\x9b"
	    "1m caf\xc3\xa9");
	ck_assert_str_eq(captured(),
	    "cvtest: schedule \"x\\x1b[31m\\r\\x7f\": created "
	    "\"a\\ncvtest: run forged: succeeded\"\n"
	    "cvtest: output tab\\there \\xc2\\x9b1m caf\xc3\xa9\n");
}
END_TEST

/* text_escape(): what it keeps, its length, and a cut at a whole escape. */
START_TEST(test_text_escape)
{
	char b[16];

	ck_assert_uint_eq(text_escape("a\nb\x1b", "\n", b, sizeof(b)), 7);
	ck_assert_str_eq(b, "a\nb\\x1b");
	ck_assert_uint_eq(text_escape("a\nb", NULL, b, sizeof(b)), 4);
	ck_assert_str_eq(b, "a\\nb");
	ck_assert_uint_eq(text_escape("", NULL, b, sizeof(b)), 0);
	ck_assert_str_eq(b, "");
	/* 0123456789abcd then ESC: the 4-byte escape does not fit whole */
	ck_assert_uint_eq(
	    text_escape("0123456789abcd\x1b", NULL, b, sizeof(b)), 18);
	ck_assert_str_eq(b, "0123456789abcd");
	ck_assert_uint_eq(text_escape("\x01", NULL, b, 5), 4);
	ck_assert_str_eq(b, "\\x01");
	ck_assert_uint_eq(text_escape("\x01", NULL, b, 4), 4);
	ck_assert_str_eq(b, "");
	ck_assert_uint_eq(text_escape("xy", NULL, b, 0), 2);
	/* U+00A0 and invalid bytes are not controls; a lone 0xc2 neither */
	text_escape("\xc2\xa0\xff\xc2", NULL, b, sizeof(b));
	ck_assert_str_eq(b, "\xc2\xa0\xff\xc2");
}
END_TEST

START_TEST(test_level_names)
{
	enum log_level l;

	ck_assert_int_eq(log_level_parse("debug", &l), 0);
	ck_assert_int_eq(l, LOG_LEVEL_DEBUG);
	ck_assert_int_eq(log_level_parse("warn", &l), 0);
	ck_assert_int_eq(l, LOG_LEVEL_WARN);
	ck_assert_str_eq(log_level_name(LOG_LEVEL_INFO), "info");
	ck_assert_int_eq(log_level_parse("INFO", &l), -1);
	ck_assert_int_eq(log_level_parse("", &l), -1);
}
END_TEST

START_TEST(test_fatal_exits)
{
	log_init("cvtest", LOG_LEVEL_INFO);
	capture();
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		errno = EPERM;
		fatal("cannot %s", "go on");
	}
	waitpid(pid, &st, 0);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	pid = fork();
	if (pid == 0)
		fatalx("broken invariant");
	waitpid(pid, &st, 0);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	ck_assert_str_eq(captured(),
	    "cvtest: cannot go on: Operation not "
	    "permitted\ncvtest: broken invariant\n");
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("log");

	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_lines_and_levels);
	tcase_add_test(tc, test_warn_errno);
	tcase_add_test(tc, test_prefix);
	tcase_add_test(tc, test_control_escaped);
	tcase_add_test(tc, test_text_escape);
	tcase_add_test(tc, test_level_names);
	tcase_add_test(tc, test_fatal_exits);
	suite_add_tcase(s, tc);
	return cvtest_run(s);
}
