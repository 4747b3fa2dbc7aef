/*
 * check_task.c: supervisor/task.c, the supervisor's database work off its
 * loop, driven by a small loop of its own over pipes in place of the
 * database socket: a task runs until it waits, the loop resumes it when
 * its descriptor is ready or its deadline passed, its stack survives the
 * switches, one task at a time, and the socket watched between tasks
 * follows the one the connection has now.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "cronvisord.h"
#include "cvtest.h"

static int epfd;
static int sock_fd = -1; /* what task.c's sock() returns */

static int
sock(void)
{
	return sock_fd;
}

/* A fresh epoll, the task machinery on it (once per forked test). */
static void
setup(void)
{
	ck_assert_int_ge(epfd = epoll_create1(EPOLL_CLOEXEC), 0);
	task_init(epfd, sock);
}

/* Waits up to ms in the loop's epoll; returns the tag or NULL. */
static void *
loop_wait(int ms)
{
	struct epoll_event ev;

	return epoll_wait(epfd, &ev, 1, ms) == 1 ? ev.data.ptr : NULL;
}

static int ran;

static void
no_wait(void *arg)
{
	ran = *(int *)arg;
}

START_TEST(test_no_wait)
{
	int v = 7;

	setup();
	ck_assert_int_eq(task_run(no_wait, &v), 0);
	ck_assert_int_eq(ran, 7);
	ck_assert_int_eq(task_busy(), 0);
	ck_assert(task_deadline() == INT64_MAX);
}
END_TEST

/* The reader task: waits for its pipe, reads it, three times. */
static int pipe_rd, got[3], waits[3];

static void
reader(void *arg)
{
	char big[64 * 1024]; /* a stack frame of size, checked after */

	(void)arg;
	memset(big, 0x5a, sizeof(big));
	for (int i = 0; i < 3; i++) {
		char c = 0;
		ssize_t n;

		/* As db.c does: a wake is a cue to look, not a promise. */
		while ((n = read(pipe_rd, &c, 1)) == -1 && errno == EAGAIN)
			waits[i] |=
			    task_wait(NULL, pipe_rd, DB_WAIT_READ, 5000);
		ck_assert_int_eq(n, 1);
		got[i] = c;
	}
	for (size_t i = 0; i < sizeof(big); i++)
		if (big[i] != 0x5a)
			got[0] = -1;
}

START_TEST(test_wait_and_resume)
{
	int p[2], v = 0;

	setup();
	ck_assert_int_eq(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	pipe_rd = p[0];
	ck_assert_int_eq(task_run(reader, NULL), 0);
	ck_assert_int_eq(task_busy(), 1);
	/* One at a time. */
	ck_assert_int_eq(task_run(no_wait, &v), -1);
	ck_assert_int_eq(task_ready(), 1); /* a spurious wake: waits again */
	ck_assert_int_eq(task_busy(), 1);
	for (int i = 0; i < 3; i++) {
		char c = (char)('a' + i);

		ck_assert_ptr_null(loop_wait(0)); /* nothing to read yet */
		ck_assert_int_eq(write(p[1], &c, 1), 1);
		ck_assert_ptr_eq(loop_wait(1000), TASK_TAG);
		ck_assert_int_eq(task_ready(), 1);
	}
	ck_assert_int_eq(task_busy(), 0);
	ck_assert_int_eq(got[0], 'a');
	ck_assert_int_eq(got[1], 'b');
	ck_assert_int_eq(got[2], 'c');
	ck_assert_int_eq(waits[0] | waits[1] | waits[2], 0);
	/* Between tasks, task_ready() is the loop's cue for notifications. */
	ck_assert_int_eq(task_ready(), 0);
}
END_TEST

static int timed;

static void
times_out(void *arg)
{
	timed = task_wait(NULL, *(int *)arg, DB_WAIT_READ, 80);
}

START_TEST(test_deadline)
{
	int p[2];
	int64_t t0, at;

	setup();
	ck_assert_int_eq(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	t0 = clock_ms();
	ck_assert_int_eq(task_run(times_out, &p[0]), 0);
	at = task_deadline();
	ck_assert(at >= t0 + 80 && at <= clock_ms() + 80);
	/* Before its deadline the task stays put. */
	ck_assert(task_expired(at - 1) == at);
	ck_assert_int_eq(task_busy(), 1);
	ck_assert_ptr_null(loop_wait(100));
	ck_assert(task_expired(clock_ms()) == INT64_MAX);
	ck_assert_int_eq(task_busy(), 0);
	ck_assert_int_eq(timed, -1);
	ck_assert(clock_ms() - t0 >= 80);
}
END_TEST

/* Outside a task, task_wait() blocks in poll(), with its time limit. */
START_TEST(test_outside)
{
	int p[2];
	int64_t t0;

	setup();
	ck_assert_int_eq(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	t0 = clock_ms();
	ck_assert_int_eq(task_wait(NULL, p[0], DB_WAIT_READ, 50), -1);
	ck_assert(clock_ms() - t0 >= 50);
	ck_assert_int_eq(task_wait(NULL, p[1], DB_WAIT_WRITE, 50), 0);
	ck_assert_int_eq(write(p[1], "x", 1), 1);
	ck_assert_int_eq(task_wait(NULL, p[0], DB_WAIT_READ, 50), 0);
}
END_TEST

/* The connection's socket changes during a task (a reconnect). */
static int swap_to;

static void
swaps(void *arg)
{
	(void)arg;
	sock_fd = swap_to;
}

START_TEST(test_watch_follows)
{
	int a[2], b[2];

	ck_assert_int_eq(pipe2(a, O_CLOEXEC | O_NONBLOCK), 0);
	ck_assert_int_eq(pipe2(b, O_CLOEXEC | O_NONBLOCK), 0);
	sock_fd = a[0];
	setup();
	ck_assert_int_eq(write(a[1], "x", 1), 1);
	ck_assert_ptr_eq(loop_wait(100), TASK_TAG); /* a is watched */
	swap_to = b[0];
	ck_assert_int_eq(task_run(swaps, NULL), 0);
	ck_assert_ptr_null(loop_wait(50)); /* a, readable, is not any more */
	ck_assert_int_eq(write(b[1], "y", 1), 1);
	ck_assert_ptr_eq(loop_wait(100), TASK_TAG); /* b is */
	/* The connection gone: nothing is watched. */
	swap_to = -1;
	ck_assert_int_eq(task_run(swaps, NULL), 0);
	ck_assert_ptr_null(loop_wait(50));
}
END_TEST

static Suite *
task_suite(void)
{
	Suite *s = suite_create("task");
	TCase *tc = tcase_create("task");

	tcase_add_test(tc, test_no_wait);
	tcase_add_test(tc, test_wait_and_resume);
	tcase_add_test(tc, test_deadline);
	tcase_add_test(tc, test_outside);
	tcase_add_test(tc, test_watch_follows);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	log_init("check_task", LOG_LEVEL_WARN);
	return cvtest_run(task_suite());
}
