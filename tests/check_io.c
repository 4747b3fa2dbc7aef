/*
 * check_io.c: tests of common/io.c.  Helper children write into or read
 * from a pipe in small pieces with pauses, so that io_read() and
 * io_write_all() see short transfers; an interval timer whose handler is
 * installed without SA_RESTART interrupts their blocked calls with EINTR.
 * io_read_file() is checked at the size limit and on what is not a regular
 * file, and io_fix_stdio() in children whose descriptors 0-2 are closed.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cronvisor.h"
#include "cvtest.h"

static volatile sig_atomic_t alarms; /* SIGALRMs seen since arm_timer() */

static void
on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

/*
 * Sends SIGALRM every 2 ms to a handler installed without SA_RESTART, so
 * that a read() or write() blocked on a pipe fails with EINTR (or returns
 * short) instead of being restarted by the kernel.
 */
static void
arm_timer(void)
{
	struct sigaction sa;
	struct itimerval it = {{0, 2000}, {0, 2000}};

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0;
	ck_assert_int_eq(sigaction(SIGALRM, &sa, NULL), 0);
	alarms = 0;
	ck_assert_int_eq(setitimer(ITIMER_REAL, &it, NULL), 0);
}

static void
disarm_timer(void)
{
	struct itimerval it = {{0, 0}, {0, 0}};

	ck_assert_int_eq(setitimer(ITIMER_REAL, &it, NULL), 0);
}

static void
pause_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* The byte at offset i of every test stream. */
static unsigned char
pattern(size_t i)
{
	return (unsigned char)(i % 251);
}

/*
 * Forks a child that waits delay_ms, then writes total pattern bytes to
 * fds[1] in pieces of piece bytes with pause_ms between them, and exits.
 * The parent keeps fds[0] only.  Returns the child's pid.
 */
static pid_t
spawn_writer(int fds[2], size_t total, size_t piece, long delay_ms, long gap_ms)
{
	pid_t pid = fork();

	ck_assert_int_ne(pid, -1);
	if (pid == 0) {
		unsigned char buf[4096];

		close(fds[0]);
		pause_ms(delay_ms);
		for (size_t off = 0; off < total; off += piece) {
			size_t n = total - off < piece ? total - off : piece;

			for (size_t i = 0; i < n; i++)
				buf[i] = pattern(off + i);
			if (write(fds[1], buf, n) != (ssize_t)n)
				_exit(1);
			pause_ms(gap_ms);
		}
		_exit(0);
	}
	close(fds[1]);
	return pid;
}

/*
 * Forks a child that reads fds[0] in pieces of piece bytes with gap_ms
 * pauses until end of file, or until limit bytes if limit > 0, and exits 0
 * if it got want bytes of the pattern.  The parent keeps fds[1] only.
 */
static pid_t
spawn_reader(int fds[2], size_t piece, long gap_ms, size_t limit, size_t want)
{
	pid_t pid = fork();

	ck_assert_int_ne(pid, -1);
	if (pid == 0) {
		unsigned char buf[4096];
		size_t got = 0;
		ssize_t n;

		close(fds[1]);
		pause_ms(gap_ms * 5);
		while ((limit == 0 || got < limit) &&
		    (n = read(fds[0], buf, piece)) > 0) {
			for (ssize_t i = 0; i < n; i++)
				if (buf[i] != pattern(got + (size_t)i))
					_exit(2);
			got += (size_t)n;
			pause_ms(gap_ms);
		}
		_exit(got == want ? 0 : 1);
	}
	close(fds[0]);
	return pid;
}

/* Waits for pid and asserts that it exited with status 0. */
static void
assert_child_ok(pid_t pid)
{
	int st;

	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(
	    WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
}

static void
assert_pattern(const unsigned char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		ck_assert_msg(buf[i] == pattern(i), "byte %zu differs", i);
}

START_TEST(test_read_short_writes)
{
	enum { TOTAL = 10000 };
	unsigned char *buf = malloc(TOTAL);
	int fds[2];
	pid_t pid;

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(pipe2(fds, O_CLOEXEC), 0);
	pid = spawn_writer(fds, TOTAL, 7, 0, 0);
	ck_assert_int_eq(io_read(fds[0], buf, TOTAL), TOTAL);
	assert_pattern(buf, TOTAL);
	assert_child_ok(pid);
	close(fds[0]);
	free(buf);
}
END_TEST

/* Three short writes then EOF: one call returns all 300, then 0. */
START_TEST(test_read_eof)
{
	unsigned char buf[1000];
	int fds[2];
	pid_t pid;

	ck_assert_int_eq(pipe2(fds, O_CLOEXEC), 0);
	pid = spawn_writer(fds, 300, 100, 0, 20);
	ck_assert_int_eq(io_read(fds[0], buf, sizeof(buf)), 300);
	assert_pattern(buf, 300);
	ck_assert_int_eq(io_read(fds[0], buf, sizeof(buf)), 0);
	assert_child_ok(pid);
	close(fds[0]);
}
END_TEST

START_TEST(test_read_zero_len)
{
	unsigned char buf[1];
	int fds[2];

	ck_assert_int_eq(pipe2(fds, O_CLOEXEC), 0);
	/* Would block forever if io_read() called read() at all. */
	ck_assert_int_eq(io_read(fds[0], buf, 0), 0);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

/* A blocked read interrupted by signals is retried transparently. */
START_TEST(test_read_eintr)
{
	enum { TOTAL = 2000 };
	unsigned char buf[TOTAL];
	int fds[2];
	pid_t pid;

	ck_assert_int_eq(pipe2(fds, O_CLOEXEC), 0);
	pid = spawn_writer(fds, TOTAL, 500, 100, 30);
	arm_timer();
	ck_assert_int_eq(io_read(fds[0], buf, TOTAL), TOTAL);
	disarm_timer();
	ck_assert_msg(alarms > 10, "only %d signals arrived", (int)alarms);
	assert_pattern(buf, TOTAL);
	assert_child_ok(pid);
	close(fds[0]);
}
END_TEST

/* A non-blocking descriptor returns what it has, or -1/EAGAIN. */
START_TEST(test_read_nonblock)
{
	unsigned char buf[100];
	int fds[2];

	ck_assert_int_eq(pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
	ck_assert_int_eq(write(fds[1], "0123456789", 10), 10);
	ck_assert_int_eq(io_read(fds[0], buf, sizeof(buf)), 10);
	ck_assert_int_eq(memcmp(buf, "0123456789", 10), 0);
	errno = 0;
	ck_assert_int_eq(io_read(fds[0], buf, sizeof(buf)), -1);
	ck_assert_int_eq(errno, EAGAIN);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

START_TEST(test_read_error)
{
	unsigned char buf[10];

	errno = 0;
	ck_assert_int_eq(io_read(-1, buf, sizeof(buf)), -1);
	ck_assert_int_eq(errno, EBADF);
}
END_TEST

/* Far more than the pipe holds, to a reader that takes its time. */
START_TEST(test_write_slow_reader)
{
	enum { TOTAL = 1 << 20 };
	unsigned char *buf = malloc(TOTAL);
	int fds[2];
	pid_t pid;

	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i < TOTAL; i++)
		buf[i] = pattern(i);
	ck_assert_int_eq(pipe2(fds, O_CLOEXEC), 0);
	pid = spawn_reader(fds, 4096, 0, 0, TOTAL);
	ck_assert_int_eq(io_write_all(fds[1], buf, TOTAL), 0);
	close(fds[1]);
	assert_child_ok(pid);
	free(buf);
}
END_TEST

/* A write blocked on a full pipe, interrupted by signals, goes on. */
START_TEST(test_write_eintr)
{
	enum { TOTAL = 256 * 1024 };
	unsigned char *buf = malloc(TOTAL);
	int fds[2];
	pid_t pid;

	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i < TOTAL; i++)
		buf[i] = pattern(i);
	ck_assert_int_eq(pipe2(fds, O_CLOEXEC), 0);
	pid = spawn_reader(fds, 4096, 2, 0, TOTAL);
	arm_timer();
	ck_assert_int_eq(io_write_all(fds[1], buf, TOTAL), 0);
	disarm_timer();
	ck_assert_msg(alarms > 10, "only %d signals arrived", (int)alarms);
	close(fds[1]);
	assert_child_ok(pid);
	free(buf);
}
END_TEST

START_TEST(test_write_epipe)
{
	unsigned char buf[100] = {0};
	int fds[2];

	ck_assert(signal(SIGPIPE, SIG_IGN) != SIG_ERR);
	ck_assert_int_eq(pipe2(fds, O_CLOEXEC), 0);
	close(fds[0]);
	errno = 0;
	ck_assert_int_eq(io_write_all(fds[1], buf, sizeof(buf)), -1);
	ck_assert_int_eq(errno, EPIPE);
	close(fds[1]);
}
END_TEST

/* The reader leaves in the middle: the write fails with EPIPE. */
START_TEST(test_write_epipe_midway)
{
	enum { TOTAL = 1 << 20 };
	unsigned char *buf = malloc(TOTAL);
	int fds[2];
	pid_t pid;

	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i < TOTAL; i++)
		buf[i] = pattern(i);
	ck_assert(signal(SIGPIPE, SIG_IGN) != SIG_ERR);
	ck_assert_int_eq(pipe2(fds, O_CLOEXEC), 0);
	pid = spawn_reader(fds, 1000, 0, 3000, 3000);
	errno = 0;
	ck_assert_int_eq(io_write_all(fds[1], buf, TOTAL), -1);
	ck_assert_int_eq(errno, EPIPE);
	close(fds[1]);
	assert_child_ok(pid);
	free(buf);
}
END_TEST

START_TEST(test_write_zero_len)
{
	ck_assert_int_eq(io_write_all(-1, "", 0), 0);
}
END_TEST

/* A temporary directory for one test, in dir (32 bytes). */
static const char *
tmpdir(char *dir)
{
	strcpy(dir, "/tmp/check_io.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	return dir;
}

static void
write_bytes(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	ck_assert_int_ne(fd, -1);
	ck_assert_int_eq(io_write_all(fd, data, len), 0);
	ck_assert_int_eq(close(fd), 0);
}

/*
 * Calls io_read_file(path, max) and checks its result: want_errno 0 means
 * success with want_len bytes (then compared with want, if not NULL, and
 * NUL-terminated); otherwise -1 with that errno and *buf untouched.
 */
static void
check_read_file(const char *path, size_t max, int want_errno, const void *want,
    size_t want_len)
{
	unsigned char sentinel, *buf = &sentinel;
	size_t len = 12345;
	int r;

	errno = 0;
	r = io_read_file(path, max, &buf, &len);
	if (want_errno != 0) {
		ck_assert_int_eq(r, -1);
		ck_assert_msg(errno == want_errno, "%s: errno %s, want %s",
		    path, strerror(errno), strerror(want_errno));
		ck_assert_ptr_eq(buf, &sentinel);
		return;
	}
	ck_assert_msg(r == 0, "%s: %s", path, strerror(errno));
	ck_assert_uint_eq(len, want_len);
	if (want != NULL)
		ck_assert_int_eq(memcmp(buf, want, len), 0);
	ck_assert_int_eq(buf[len], '\0');
	free(buf);
}

/* The lowest free descriptor: it tells whether a call leaked one. */
static int
lowest_free_fd(void)
{
	int fd = dup(0);

	ck_assert_int_ne(fd, -1);
	close(fd);
	return fd;
}

START_TEST(test_read_file)
{
	char dirbuf[32], path[64];
	const char *dir = tmpdir(dirbuf);
	unsigned char data[101];
	int free_fd = lowest_free_fd();

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = pattern(i);
	snprintf(path, sizeof(path), "%s/f", dir);
	write_bytes(path, "hello\nworld", 11);
	check_read_file(path, 100, 0, "hello\nworld", 11);
	/* NUL bytes are data; the appended NUL is not counted. */
	write_bytes(path, "a\0b", 3);
	check_read_file(path, 100, 0, "a\0b", 3);
	write_bytes(path, "", 0);
	check_read_file(path, 100, 0, "", 0);
	check_read_file(path, 0, 0, "", 0);
	write_bytes(path, "x", 1);
	check_read_file(path, 0, EFBIG, NULL, 0);
	check_read_file(path, 1, 0, "x", 1);
	write_bytes(path, data, 100);
	check_read_file(path, 99, EFBIG, NULL, 0);
	check_read_file(path, 100, 0, data, 100);
	check_read_file(path, 101, 0, data, 100);
	write_bytes(path, data, 101);
	check_read_file(path, 100, EFBIG, NULL, 0);
	check_read_file(path, SIZE_MAX, 0, data, 101);
	unlink(path);
	check_read_file(path, 100, ENOENT, NULL, 0);
	check_read_file(dir, 100, EINVAL, NULL, 0);
	check_read_file("/dev/null", 100, EINVAL, NULL, 0);
	ck_assert_int_eq(lowest_free_fd(), free_fd);
	rmdir(dir);
}
END_TEST

/* A FIFO without a writer is refused, not waited on. */
START_TEST(test_read_file_fifo)
{
	char dirbuf[32], path[64];
	const char *dir = tmpdir(dirbuf);

	snprintf(path, sizeof(path), "%s/fifo", dir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	/* Before the fix open() blocked here until the test's timeout. */
	check_read_file(path, 100, EINVAL, NULL, 0);
	unlink(path);
	rmdir(dir);
}
END_TEST

/*
 * Files under /proc report a size of 0 but have contents: the size from
 * fstat() is a hint, and only max decides EFBIG.
 */
START_TEST(test_read_file_proc)
{
	unsigned char *buf;
	size_t len;

	ck_assert_int_eq(
	    io_read_file("/proc/self/status", 1 << 20, &buf, &len), 0);
	ck_assert_uint_gt(len, 16);
	ck_assert_uint_eq(strlen((char *)buf), len);
	ck_assert_ptr_nonnull(strstr((char *)buf, "Name:"));
	free(buf);
	check_read_file("/proc/self/status", 16, EFBIG, NULL, 0);
}
END_TEST

/* Whether fd is open on /dev/null. */
static int
is_devnull(int fd)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && stat("/dev/null", &b) == 0 &&
	    S_ISCHR(a.st_mode) && a.st_rdev == b.st_rdev;
}

/*
 * In a child: closes the descriptors of 0-2 whose bit is set in mask, runs
 * io_fix_stdio(), and exits 0 if each of 0-2 is open (the closed ones on
 * /dev/null, the others as they were) and no other descriptor leaked.
 */
static void
check_fix_stdio(unsigned mask)
{
	pid_t pid = fork();

	ck_assert_int_ne(pid, -1);
	if (pid == 0) {
		struct stat before[3], after;
		int free_fd, fd;

		for (fd = 0; fd < 3; fd++)
			if (fstat(fd, &before[fd]) == -1)
				_exit(10 + fd);
		/* With 0-2 open, the lowest free descriptor is above them. */
		if ((free_fd = dup(0)) == -1 || close(free_fd) == -1)
			_exit(3);
		for (fd = 0; fd < 3; fd++)
			if (mask & (1u << fd))
				close(fd);
		io_fix_stdio();
		for (fd = 0; fd < 3; fd++) {
			if (fstat(fd, &after) == -1)
				_exit(20 + fd);
			if ((mask & (1u << fd))
			        ? !is_devnull(fd)
			        : after.st_ino != before[fd].st_ino)
				_exit(30 + fd);
		}
		/* And it still is: io_fix_stdio() kept nothing else open. */
		if ((fd = dup(0)) != free_fd)
			_exit(40);
		_exit(0);
	}
	assert_child_ok(pid);
}

START_TEST(test_fix_stdio)
{
	check_fix_stdio((unsigned)_i);
}
END_TEST

static Suite *
io_suite(void)
{
	Suite *s = suite_create("io");
	TCase *tr = tcase_create("read");
	TCase *tw = tcase_create("write");
	TCase *tf = tcase_create("file");
	TCase *ts = tcase_create("stdio");

	tcase_set_timeout(tr, 10);
	tcase_add_test(tr, test_read_short_writes);
	tcase_add_test(tr, test_read_eof);
	tcase_add_test(tr, test_read_zero_len);
	tcase_add_test(tr, test_read_eintr);
	tcase_add_test(tr, test_read_nonblock);
	tcase_add_test(tr, test_read_error);
	suite_add_tcase(s, tr);
	tcase_set_timeout(tw, 10);
	tcase_add_test(tw, test_write_slow_reader);
	tcase_add_test(tw, test_write_eintr);
	tcase_add_test(tw, test_write_epipe);
	tcase_add_test(tw, test_write_epipe_midway);
	tcase_add_test(tw, test_write_zero_len);
	suite_add_tcase(s, tw);
	tcase_set_timeout(tf, 10);
	tcase_add_test(tf, test_read_file);
	tcase_add_test(tf, test_read_file_fifo);
	tcase_add_test(tf, test_read_file_proc);
	suite_add_tcase(s, tf);
	tcase_set_timeout(ts, 10);
	tcase_add_loop_test(ts, test_fix_stdio, 0, 8);
	suite_add_tcase(s, ts);
	return s;
}

int
main(void)
{
	return cvtest_run(io_suite());
}
