/*
 * check_runner.c: the runner child of runner/, driven for real.  Each test
 * calls spawn_runner() as the supervisor will, with the multi-call helper
 * tests/helpers/cvhelper (or a tiny HTTP server on a loopback socket, in
 * the test process itself) as the target, reads the result frame from the
 * non-blocking pipe with a result_reader until end of file, reaps the
 * runner and checks the recorded outcome.  Every exec run carries a unique
 * marker in its environment; after each run no process under /proc may
 * carry it, and the test process may have no child left, zombie or not.
 * Timeouts are 1-2 s so the suite stays fast.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cronvisor.h"
#include "cvtest.h"
#include "spawn.h"

#ifndef CV_HELPER
#error "CV_HELPER must name the cvhelper program"
#endif

/* What one run left: the decoded result and the runner's wait status. */
struct ran {
	struct result res; /* the result frame */
	int got;           /* 1: a whole frame arrived */
	int wstatus;       /* the runner's wait status */
	struct rusage ru;  /* the runner's own resource use */
	double secs;       /* wall time from spawn to reaped */
};

static char marker[64];   /* CVMARK=<pid>: this test's processes */
static char *env_base[8]; /* PATH, the marker, then test variables */
static char *argv_buf[8]; /* the command of the run */

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
nap(double secs)
{
	struct timespec ts = {
	    (time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* A spec running cvhelper MODE ARG [ARG2] with the default settings. */
static void
spec_exec(
    struct run_spec *s, const char *mode, const char *arg, const char *arg2)
{
	snprintf(marker, sizeof(marker), "CVMARK=%d", (int)getpid());
	env_base[0] = "PATH=/usr/bin:/bin";
	env_base[1] = marker;
	env_base[2] = NULL;
	argv_buf[0] = CV_HELPER;
	argv_buf[1] = (char *)mode;
	argv_buf[2] = (char *)arg;
	argv_buf[3] = (char *)arg2;
	argv_buf[4] = NULL;
	memset(s, 0, sizeof(*s));
	s->run_id = "sched-test-n0-rc0";
	s->schedule = "check_runner";
	s->target = RUN_TARGET_EXEC;
	s->argv = argv_buf;
	s->env = env_base;
	s->timeout = 5;
	s->kill_grace = 1;
	s->output_tail = 4096;
}

/* Reads the result pipe until end of file into r. */
static void
collect_frame(int fd, struct ran *r)
{
	struct result_reader rd;
	unsigned char buf[8192];
	char err[CV_ERRLEN];
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	size_t used, off;
	ssize_t n;

	result_reader_init(&rd);
	for (;;) {
		ck_assert_int_gt(poll(&pfd, 1, 30000), 0);
		n = read(fd, buf, sizeof(buf));
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			continue;
		ck_assert_int_ge(n, 0);
		if (n == 0)
			break;
		for (off = 0; off < (size_t)n; off += used)
			ck_assert_msg(
			    result_reader_feed(&rd, buf + off, (size_t)n - off,
			        &used, &r->res, err, sizeof(err)) >= 0,
			    "%s", err);
	}
	r->got = result_reader_eof(&rd, err, sizeof(err));
	result_reader_clear(&rd);
}

/* Counts the processes other than this one whose environment has marker. */
static int
marked(void)
{
	char path[300], buf[65536];
	struct dirent *de;
	DIR *d = opendir("/proc");
	int n = 0, fd;
	ssize_t len;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)) != NULL) {
		if (atoi(de->d_name) <= 0 || atoi(de->d_name) == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%s/environ", de->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
			continue;
		len = io_read(fd, buf, sizeof(buf));
		close(fd);
		if (len > 0 &&
		    memmem(buf, (size_t)len, marker, strlen(marker) + 1) !=
		        NULL)
			n++;
	}
	closedir(d);
	return n;
}

/* Nothing of the run may be left: no child of ours, no marked process. */
static void
assert_clean(void)
{
	ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
	ck_assert_int_eq(errno, ECHILD);
	ck_assert_int_eq(marked(), 0);
}

/* Collects the result of a spawned runner and reaps it. */
static void
finish(pid_t pid, int fd, double t0, struct ran *r)
{
	collect_frame(fd, r);
	close(fd);
	ck_assert_int_eq(wait4(pid, &r->wstatus, 0, &r->ru), pid);
	r->secs = now() - t0;
	ck_assert_msg(WIFEXITED(r->wstatus) && WEXITSTATUS(r->wstatus) == 0,
	    "runner wait status %#x", r->wstatus);
	ck_assert_int_eq(r->got, 1);
	assert_clean();
}

/* Runs spec to the end. */
static void
run(const struct run_spec *s, struct ran *r)
{
	double t0 = now();
	int fd;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	result_init(&r->res);
	ck_assert_int_gt(pid = spawn_runner(s, &fd), 0);
	ck_assert_int_ne(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	ck_assert_int_ne(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
	finish(pid, fd, t0, r);
}

/* Returns 1 if the output holds s. */
static int
out_has(const struct ran *r, const char *s)
{
	return r->res.output_len > 0 &&
	    memmem(r->res.output, r->res.output_len, s, strlen(s)) != NULL;
}

START_TEST(test_success_output)
{
	struct run_spec s;
	struct ran r;

	spec_exec(&s, "print", "hello", "0");
	run(&s, &r);
	ck_assert_int_eq(r.res.status, RESULT_OK);
	ck_assert_int_eq(r.res.exit_code, 0);
	ck_assert_int_eq(r.res.signal, 0);
	ck_assert_ptr_null(r.res.error);
	ck_assert(out_has(&r, "hello\n"));
	ck_assert(out_has(&r, "stderr:hello\n"));
	ck_assert_int_gt(r.res.duration_us, 0);
	ck_assert_int_lt(r.res.duration_us, 2000000);
	ck_assert_int_gt(r.res.max_rss_kb, 0);
	result_clear(&r.res);
}
END_TEST

START_TEST(test_exit_3_stderr)
{
	struct run_spec s;
	struct ran r;

	spec_exec(&s, "print", "oops", "3");
	run(&s, &r);
	ck_assert_int_eq(r.res.status, RESULT_FAILED);
	ck_assert_int_eq(r.res.exit_code, 3);
	ck_assert_int_eq(r.res.retryable, 1);
	ck_assert_str_eq(r.res.error, "exited with status 3");
	ck_assert(out_has(&r, "stderr:oops\n"));
	result_clear(&r.res);
}
END_TEST

/* A real exit status 127 is a failure, not a failed exec. */
START_TEST(test_exit_127)
{
	struct run_spec s;
	struct ran r;

	spec_exec(&s, "print", "x", "127");
	run(&s, &r);
	ck_assert_int_eq(r.res.status, RESULT_FAILED);
	ck_assert_int_eq(r.res.exit_code, 127);
	ck_assert_int_eq(r.res.retryable, 1);
	result_clear(&r.res);
}
END_TEST

START_TEST(test_exec_missing)
{
	static char *argv_missing[] = {"/nonexistent/cv-nothing", NULL};
	static char *argv_bare[] = {"cv-no-such-command", NULL};
	static char *argv_noexec[] = {"/etc/passwd", NULL};
	struct run_spec s;
	struct ran r;

	spec_exec(&s, "x", NULL, NULL);
	s.argv = argv_missing;
	run(&s, &r);
	ck_assert_int_eq(r.res.status, RESULT_ERROR);
	ck_assert_int_eq(r.res.retryable, 0);
	ck_assert_str_eq(r.res.error,
	    "cannot execute /nonexistent/cv-nothing: "
	    "No such file or directory");
	result_clear(&r.res);
	s.argv = argv_bare;
	run(&s, &r);
	ck_assert_int_eq(r.res.status, RESULT_ERROR);
	ck_assert_str_eq(r.res.error,
	    "cannot execute cv-no-such-command: "
	    "No such file or directory");
	result_clear(&r.res);
	s.argv = argv_noexec;
	run(&s, &r);
	ck_assert_int_eq(r.res.status, RESULT_ERROR);
	ck_assert_int_eq(r.res.retryable, 0);
	ck_assert_str_eq(
	    r.res.error, "cannot execute /etc/passwd: Permission denied");
	result_clear(&r.res);
}
END_TEST

/* A bare name is looked up in the run's PATH, without a shell. */
START_TEST(test_path_lookup)
{
	static char *argv_echo[] = {"echo", "via", "$PATH", NULL};
	struct run_spec s;
	struct ran r;

	spec_exec(&s, "x", NULL, NULL);
	s.argv = argv_echo;
	run(&s, &r);
	ck_assert_int_eq(r.res.status, RESULT_OK);
	ck_assert_int_eq(r.res.output_len, strlen("via $PATH\n"));
	ck_assert(out_has(&r, "via $PATH\n"));
	result_clear(&r.res);
}
END_TEST

START_TEST(test_timeout)
{
	struct run_spec s;
	struct ran r;

	spec_exec(&s, "sleep", "10", NULL);
	s.timeout = 1;
	run(&s, &r);
	ck_assert_int_eq(r.res.status, RESULT_TIMEOUT);
	ck_assert_int_eq(r.res.signal, SIGTERM);
	ck_assert_int_eq(r.res.exit_code, -1);
	ck_assert_str_eq(r.res.error, "timed out after 1 s");
	ck_assert_int_ge(r.res.duration_us, 950000);
	ck_assert_int_lt(r.res.duration_us, 1500000);
	ck_assert(out_has(&r, "started\n"));
	ck_assert(!out_has(&r, "woke up"));
	result_clear(&r.res);
}
END_TEST

START_TEST(test_ignores_sigterm)
{
	struct run_spec s;
	struct ran r;

	spec_exec(&s, "ignoreterm", "10", NULL);
	s.timeout = 1;
	s.kill_grace = 1;
	run(&s, &r);
	ck_assert_int_eq(r.res.status, RESULT_TIMEOUT);
	ck_assert_int_eq(r.res.signal, SIGKILL);
	ck_assert_int_ge(r.res.duration_us, 1950000);
	ck_assert_int_lt(r.res.duration_us, 2600000);
	ck_assert(out_has(&r, "started\n"));
	result_clear(&r.res);
}
END_TEST

/* Returns the pid the escape helper printed. */
static pid_t
grandchild(const struct ran *r)
{
	const char *p = memmem(r->res.output, r->res.output_len, "grandchild ",
	    strlen("grandchild "));

	ck_assert_ptr_nonnull(p);
	return (pid_t)atoi(p + strlen("grandchild "));
}

/* A grandchild in its own session, ignoring SIGTERM, dies at the timeout. */
START_TEST(test_escapee_timeout)
{
	struct run_spec s;
	struct ran r;
	pid_t gc;

	spec_exec(&s, "escape", "wait", NULL);
	s.timeout = 1;
	run(&s, &r);
	ck_assert_int_eq(r.res.status, RESULT_TIMEOUT);
	gc = grandchild(&r);
	ck_assert_int_eq(kill(gc, 0), -1);
	ck_assert_int_eq(errno, ESRCH);
	ck_assert_double_lt(r.secs, 3.5);
	result_clear(&r.res);
}
END_TEST

/* What a successful command leaves behind is killed; the outcome stands. */
START_TEST(test_escapee_after_success)
{
	struct run_spec s;
	struct ran r;
	pid_t gc;

	spec_exec(&s, "escape", "exit", NULL);
	s.timeout = 10;
	run(&s, &r);
	ck_assert_int_eq(r.res.status, RESULT_OK);
	ck_assert_int_eq(r.res.exit_code, 0);
	ck_assert_int_lt(r.res.duration_us, 1000000);
	gc = grandchild(&r);
	ck_assert_int_eq(kill(gc, 0), -1);
	ck_assert_int_eq(errno, ESRCH);
	ck_assert_double_lt(r.secs, 3.0);
	result_clear(&r.res);
}
END_TEST

START_TEST(test_flood)
{
	struct run_spec s;
	struct ran r;

	spec_exec(&s, "flood", "100", NULL);
	s.timeout = 20;
	run(&s, &r);
	ck_assert_int_eq(r.res.status, RESULT_OK);
	ck_assert_uint_eq(r.res.output_len, 4096);
	ck_assert(memcmp(r.res.output + 4096 - 13, "END-OF-FLOOD\n", 13) == 0);
	ck_assert_int_eq(r.res.output[0], 'x');
	/* 100 MiB went through; the runner kept a few pages of it. */
	ck_assert_msg(r.ru.ru_maxrss < 32 * 1024, "runner max RSS %ld KiB",
	    r.ru.ru_maxrss);
	result_clear(&r.res);
}
END_TEST

START_TEST(test_memory_limit)
{
	struct run_spec s;
	struct ran r;

	spec_exec(&s, "alloc", "256", NULL);
	s.limits.memory_mb = 64;
	run(&s, &r);
	ck_assert_int_eq(r.res.status, RESULT_FAILED);
	ck_assert_int_eq(r.res.exit_code, 3);
	ck_assert(out_has(&r, "allocation failed\n"));
	result_clear(&r.res);
	spec_exec(&s, "alloc", "16", NULL);
	s.limits.memory_mb = 64;
	run(&s, &r);
	ck_assert_int_eq(r.res.status, RESULT_OK);
	ck_assert_int_ge(r.res.max_rss_kb, 16 * 1024);
	result_clear(&r.res);
}
END_TEST

/* The environment is exactly what the run gives, nothing inherited. */
START_TEST(test_env_cleared)
{
	char expect[256];
	struct run_spec s;
	struct ran r;

	ck_assert_int_eq(setenv("CV_SECRET", "leak", 1), 0);
	spec_exec(&s, "env", NULL, NULL);
	env_base[2] = "FOO=bar baz";
	env_base[3] = NULL;
	run(&s, &r);
	ck_assert_int_eq(r.res.status, RESULT_OK);
	snprintf(expect, sizeof(expect),
	    "PATH=/usr/bin:/bin\n%s\nFOO=bar baz\n", marker);
	ck_assert_uint_eq(r.res.output_len, strlen(expect));
	ck_assert(memcmp(r.res.output, expect, strlen(expect)) == 0);
	result_clear(&r.res);
}
END_TEST

START_TEST(test_cwd)
{
	struct run_spec s;
	struct ran r;

	spec_exec(&s, "cwd", NULL, NULL);
	s.cwd = "/usr/share";
	run(&s, &r);
	ck_assert_int_eq(r.res.status, RESULT_OK);
	ck_assert(out_has(&r, "/usr/share\n"));
	result_clear(&r.res);
	s.cwd = "/nonexistent-cv-dir";
	run(&s, &r);
	ck_assert_int_eq(r.res.status, RESULT_ERROR);
	ck_assert_int_eq(r.res.retryable, 0);
	ck_assert_str_eq(r.res.error,
	    "cannot change directory to "
	    "/nonexistent-cv-dir: No such file or "
	    "directory");
	result_clear(&r.res);
}
END_TEST

START_TEST(test_run_as)
{
	struct passwd *pw = getpwnam("nobody");
	char expect[128];
	struct run_spec s;
	struct ran r;

	if (geteuid() != 0 || pw == NULL)
		return; /* needs root and the user nobody */
	spec_exec(&s, "ids", NULL, NULL);
	s.run_as = 1;
	s.uid = pw->pw_uid;
	s.gid = pw->pw_gid;
	run(&s, &r);
	ck_assert_int_eq(r.res.status, RESULT_OK);
	snprintf(expect, sizeof(expect),
	    "uid %d euid %d gid %d egid %d groups 0", (int)pw->pw_uid,
	    (int)pw->pw_uid, (int)pw->pw_gid, (int)pw->pw_gid);
	ck_assert_msg(
	    out_has(&r, expect), "%.*s", (int)r.res.output_len, r.res.output);
	result_clear(&r.res);
}
END_TEST

/* Counts the processes of uid. */
static int
procs_of(uid_t uid)
{
	struct dirent *de;
	DIR *d = opendir("/proc");
	char path[300];
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)) != NULL) {
		char line[256];
		FILE *f;
		int u;
		snprintf(path, sizeof(path), "/proc/%s/status", de->d_name);
		if (atoi(de->d_name) <= 0 || (f = fopen(path, "re")) == NULL)
			continue;
		while (fgets(line, sizeof(line), f) != NULL)
			if (sscanf(line, "Uid: %d", &u) == 1 && (uid_t)u == uid)
				n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

/*
 * RLIMIT_NPROC counts every process of the user, so the limit is set a
 * few above what nobody runs already.  Root ignores the limit: the run
 * must drop to nobody for it to bite.
 */
START_TEST(test_nproc_limit)
{
	struct passwd *pw = getpwnam("nobody");
	struct run_spec s;
	struct ran r;

	if (geteuid() != 0 || pw == NULL)
		return;
	spec_exec(&s, "forks", "40", NULL);
	s.run_as = 1;
	s.uid = pw->pw_uid;
	s.gid = pw->pw_gid;
	s.limits.nproc = procs_of(pw->pw_uid) + 5;
	run(&s, &r);
	ck_assert_int_eq(r.res.status, RESULT_FAILED);
	ck_assert_int_eq(r.res.exit_code, 4);
	ck_assert(out_has(&r, "failed"));
	result_clear(&r.res);
}
END_TEST

/* No descriptor of the process that spawned the runner reaches the target. */
START_TEST(test_no_fd_leak)
{
	int p[2], fd, sock;
	struct run_spec s;
	struct ran r;

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_ge(fd = open("/dev/null", O_RDONLY), 0);
	ck_assert_int_ge(sock = socket(AF_INET, SOCK_STREAM, 0), 0);
	ck_assert_int_ge(dup2(fd, 100), 0);
	spec_exec(&s, "fds", NULL, NULL);
	run(&s, &r);
	ck_assert_int_eq(r.res.status, RESULT_OK);
	ck_assert_uint_eq(r.res.output_len, strlen("fd 0\nfd 1\nfd 2\n"));
	ck_assert(memcmp(r.res.output, "fd 0\nfd 1\nfd 2\n", 15) == 0);
	result_clear(&r.res);
	close(100);
	close(sock);
	close(fd);
	close(p[0]);
	close(p[1]);
}
END_TEST

/* SIGTERM to the runner stops the run as a timeout would, and reports. */
START_TEST(test_interrupted)
{
	struct run_spec s;
	struct ran r;
	double t0 = now();
	int fd;
	pid_t pid;

	spec_exec(&s, "sleep", "10", NULL);
	s.timeout = 10;
	memset(&r, 0, sizeof(r));
	result_init(&r.res);
	ck_assert_int_gt(pid = spawn_runner(&s, &fd), 0);
	nap(0.3);
	ck_assert_int_eq(kill(pid, SIGTERM), 0);
	finish(pid, fd, t0, &r);
	ck_assert_int_eq(r.res.status, RESULT_ERROR);
	ck_assert_int_eq(r.res.retryable, 1);
	ck_assert_int_eq(r.res.signal, SIGTERM);
	ck_assert_ptr_nonnull(strstr(r.res.error, "interrupted"));
	ck_assert_double_lt(r.secs, 2.0);
	result_clear(&r.res);
}
END_TEST

/*
 * When the supervisor dies, its runner stops the run (PR_SET_PDEATHSIG)
 * instead of running on unrecorded.  The test process is a subreaper, so
 * the orphaned runner becomes its child and can be waited for.
 */
START_TEST(test_supervisor_death)
{
	struct run_spec s;
	int p[2], fd, st;
	pid_t sup, runner;
	double t0 = now();

	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	spec_exec(&s, "sleep", "30", NULL);
	s.timeout = 30;
	if ((sup = fork()) == 0) {
		runner = spawn_runner(&s, &fd);
		(void)io_write_all(p[1], &runner, sizeof(runner));
		nap(0.3);
		_exit(0);
	}
	close(p[1]);
	ck_assert_int_eq(
	    io_read(p[0], &runner, sizeof(runner)), (ssize_t)sizeof(runner));
	close(p[0]);
	ck_assert_int_eq(waitpid(sup, &st, 0), sup);
	ck_assert_int_eq(waitpid(runner, &st, 0), runner);
	/* Its result had no reader: it could not be written. */
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2);
	ck_assert_double_lt(now() - t0, 3.0);
	assert_clean();
}
END_TEST

/* A one-connection HTTP server on a loopback port, in the test process. */
struct srv {
	int lfd;        /* listening socket */
	int cfd;        /* the accepted connection, or -1 */
	int port;       /* its port */
	char req[8192]; /* the request as received */
	size_t reqlen;  /* bytes in req */
	char url[128];  /* http://127.0.0.1:port/hook?x=1 */
};

static void
srv_open(struct srv *sv)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);

	memset(sv, 0, sizeof(*sv));
	sv->cfd = -1;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_ge(
	    sv->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), 0);
	ck_assert_int_eq(bind(sv->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(sv->lfd, 4), 0);
	ck_assert_int_eq(getsockname(sv->lfd, (struct sockaddr *)&sa, &len), 0);
	sv->port = ntohs(sa.sin_port);
	snprintf(
	    sv->url, sizeof(sv->url), "http://127.0.0.1:%d/hook?x=1", sv->port);
}

/* Returns 1 once req holds the headers and Content-Length body bytes. */
static int
srv_complete(struct srv *sv)
{
	const char *end, *cl;

	sv->req[sv->reqlen] = '\0';
	if ((end = strstr(sv->req, "\r\n\r\n")) == NULL)
		return 0;
	cl = strcasestr(sv->req, "\r\nContent-Length:");
	if (cl == NULL || cl > end)
		return 1;
	return sv->reqlen >= (size_t)(end + 4 - sv->req) +
	    (size_t)atol(cl + strlen("\r\nContent-Length:"));
}

/*
 * Accepts one connection, reads one request and writes response; with
 * response NULL, keeps the connection open without answering.
 */
static void
srv_serve(struct srv *sv, const char *response)
{
	struct pollfd pfd = {.fd = sv->lfd, .events = POLLIN};
	ssize_t n;

	ck_assert_int_eq(poll(&pfd, 1, 10000), 1);
	ck_assert_int_ge(
	    sv->cfd = accept4(sv->lfd, NULL, NULL, SOCK_CLOEXEC), 0);
	while (!srv_complete(sv)) {
		pfd = (struct pollfd){.fd = sv->cfd, .events = POLLIN};
		ck_assert_int_eq(poll(&pfd, 1, 10000), 1);
		n = read(sv->cfd, sv->req + sv->reqlen,
		    sizeof(sv->req) - 1 - sv->reqlen);
		ck_assert_int_gt(n, 0);
		sv->reqlen += (size_t)n;
	}
	if (response == NULL)
		return;
	ck_assert_int_eq(io_write_all(sv->cfd, response, strlen(response)), 0);
	close(sv->cfd);
	sv->cfd = -1;
}

static void
srv_close(struct srv *sv)
{
	if (sv->cfd != -1)
		close(sv->cfd);
	close(sv->lfd);
}

static const char *const hook_headers[] = {"Content-Type: application/json",
    "X-Job-Id: job-42", "X-Execution-Id: sched-test-n0-rc0", NULL};
static const char hook_body[] = "{\"scheduled_job_id\":\"job-42\"}";

static void
spec_http(struct run_spec *s, const struct srv *sv)
{
	snprintf(marker, sizeof(marker), "CVMARK=%d", (int)getpid());
	memset(s, 0, sizeof(*s));
	s->run_id = "sched-test-n0-rc0";
	s->schedule = "check_runner";
	s->target = RUN_TARGET_HTTP;
	s->method = "POST";
	s->url = sv->url;
	s->headers = hook_headers;
	s->body = hook_body;
	s->body_len = strlen(hook_body);
	s->timeout = 5;
	s->kill_grace = 1;
	s->output_tail = 4096;
}

/* Runs spec against sv, which answers with response. */
static void
run_http(const struct run_spec *s, struct srv *sv, const char *response,
    struct ran *r)
{
	double t0 = now();
	int fd;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	result_init(&r->res);
	ck_assert_int_gt(pid = spawn_runner(s, &fd), 0);
	srv_serve(sv, response);
	finish(pid, fd, t0, r);
}

#define RESP_200                                                               \
	"HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\naccepted"

START_TEST(test_http_ok)
{
	struct run_spec s;
	struct srv sv;
	struct ran r;

	/* A proxy in the environment must not be used. */
	ck_assert_int_eq(setenv("http_proxy", "http://127.0.0.1:9", 1), 0);
	srv_open(&sv);
	spec_http(&s, &sv);
	run_http(&s, &sv, RESP_200, &r);
	ck_assert_int_eq(r.res.status, RESULT_OK);
	ck_assert_int_eq(r.res.http_status, 200);
	ck_assert_uint_eq(r.res.output_len, 8);
	ck_assert(memcmp(r.res.output, "accepted", 8) == 0);
	ck_assert_msg(strncmp(sv.req, "POST /hook?x=1 HTTP/1.1\r\n", 25) == 0,
	    "%s", sv.req);
	ck_assert_ptr_nonnull(strstr(sv.req, "\r\nX-Job-Id: job-42\r\n"));
	ck_assert_ptr_nonnull(
	    strstr(sv.req, "\r\nX-Execution-Id: sched-test-n0-rc0\r\n"));
	ck_assert_ptr_nonnull(
	    strstr(sv.req, "\r\nContent-Type: application/json\r\n"));
	ck_assert_ptr_nonnull(strstr(sv.req,
	    "\r\n\r\n{\"scheduled_job_id\":"
	    "\"job-42\"}"));
	result_clear(&r.res);
	srv_close(&sv);
}
END_TEST

START_TEST(test_http_500)
{
	struct run_spec s;
	struct srv sv;
	struct ran r;

	srv_open(&sv);
	spec_http(&s, &sv);
	s.method = "PUT";
	run_http(&s, &sv,
	    "HTTP/1.1 500 Internal Server Error\r\nContent-Type: "
	    "text/plain\r\nContent-Length: 4\r\nConnection: close\r\n\r\nboom",
	    &r);
	ck_assert(strncmp(sv.req, "PUT /hook?x=1 HTTP/1.1\r\n", 24) == 0);
	ck_assert_int_eq(r.res.status, RESULT_FAILED);
	ck_assert_int_eq(r.res.http_status, 500);
	ck_assert_int_eq(r.res.retryable, 1);
	ck_assert_str_eq(r.res.error, "HTTP 500");
	ck_assert(out_has(&r, "boom"));
	result_clear(&r.res);
	srv_close(&sv);
}
END_TEST

/* GET means GET: the run's event body is not sent (it was, as a POST). */
START_TEST(test_http_get)
{
	struct run_spec s;
	struct srv sv;
	struct ran r;

	srv_open(&sv);
	spec_http(&s, &sv);
	s.method = "GET";
	run_http(&s, &sv, RESP_200, &r);
	ck_assert_msg(strncmp(sv.req, "GET /hook?x=1 HTTP/1.1\r\n", 24) == 0,
	    "%s", sv.req);
	ck_assert_ptr_null(strstr(sv.req, "scheduled_job_id"));
	ck_assert_ptr_null(strstr(sv.req, "Content-Length"));
	ck_assert_int_eq(r.res.status, RESULT_OK);
	ck_assert_int_eq(r.res.http_status, 200);
	result_clear(&r.res);
	srv_close(&sv);
}
END_TEST

START_TEST(test_http_500_permanent)
{
	struct run_spec s;
	struct srv sv;
	struct ran r;

	srv_open(&sv);
	spec_http(&s, &sv);
	run_http(&s, &sv,
	    "HTTP/1.1 500 Internal Server Error\r\nContent-Type: "
	    "application/json\r\nContent-Length: 40\r\nConnection: "
	    "close\r\n\r\n{\"error\": \"bad job\", \"retryable\": false}",
	    &r);
	ck_assert_int_eq(r.res.status, RESULT_FAILED);
	ck_assert_int_eq(r.res.http_status, 500);
	ck_assert_int_eq(r.res.retryable, 0);
	result_clear(&r.res);
	srv_close(&sv);
}
END_TEST

/* Redirects are not followed: the Location is reported instead. */
START_TEST(test_http_redirect)
{
	struct run_spec s;
	struct srv sv;
	struct ran r;

	srv_open(&sv);
	spec_http(&s, &sv);
	run_http(&s, &sv,
	    "HTTP/1.1 302 Found\r\nLocation: http://elsewhere.invalid/\r\n"
	    "Content-Length: 0\r\nConnection: close\r\n\r\n",
	    &r);
	ck_assert_int_eq(r.res.status, RESULT_FAILED);
	ck_assert_int_eq(r.res.http_status, 302);
	ck_assert_str_eq(r.res.error,
	    "HTTP 302 (redirects are not followed; "
	    "Location: http://elsewhere.invalid/)");
	result_clear(&r.res);
	srv_close(&sv);
}
END_TEST

START_TEST(test_http_refused)
{
	struct run_spec s;
	struct srv sv;
	struct ran r;

	srv_open(&sv);
	close(sv.lfd); /* nobody listens on the port any more */
	spec_http(&s, &sv);
	run(&s, &r);
	ck_assert_int_eq(r.res.status, RESULT_FAILED);
	ck_assert_int_eq(r.res.http_status, 0);
	ck_assert_int_eq(r.res.retryable, 1);
	ck_assert_msg(strstr(r.res.error, "onnect") != NULL, "%s", r.res.error);
	result_clear(&r.res);
}
END_TEST

/* A server that never answers: the run times out at its timeout. */
START_TEST(test_http_timeout)
{
	struct run_spec s;
	struct srv sv;
	struct ran r;

	srv_open(&sv);
	spec_http(&s, &sv);
	s.timeout = 1;
	run_http(&s, &sv, NULL, &r);
	ck_assert_int_eq(r.res.status, RESULT_TIMEOUT);
	ck_assert_int_eq(r.res.retryable, 1);
	ck_assert_int_ge(r.res.duration_us, 900000);
	ck_assert_int_lt(r.res.duration_us, 1600000);
	result_clear(&r.res);
	srv_close(&sv);
}
END_TEST

/* file:// and friends are refused: the runner may be root. */
START_TEST(test_http_bad_scheme)
{
	struct run_spec s;
	struct srv sv;
	struct ran r;

	srv_open(&sv);
	spec_http(&s, &sv);
	s.url = "file:///etc/passwd";
	run(&s, &r);
	ck_assert_int_eq(r.res.status, RESULT_ERROR);
	ck_assert_int_eq(r.res.retryable, 0);
	ck_assert_uint_eq(r.res.output_len, 0);
	result_clear(&r.res);
	srv_close(&sv);
}
END_TEST

/*
 * Batch runners (runner/batch.c): several HTTP runs in one runner, each
 * with its own result pipe.
 */

/* Reads one run's frame from fd (to its end) into r, and closes fd. */
static void
batch_frame(int fd, struct ran *r)
{
	memset(r, 0, sizeof(*r));
	result_init(&r->res);
	collect_frame(fd, r);
	close(fd);
	ck_assert_int_eq(r->got, 1);
}

/* Reaps the batch runner pid, which must exit 0, and checks all is gone. */
static void
batch_reap(pid_t pid)
{
	int st;

	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	    "batch runner wait status %#x", st);
	assert_clean();
}

/*
 * Accepts one connection of sv, reads its request and answers by the
 * path: /ok-N gets 200 and "body-N", /fail-N a 500.  Returns N.
 */
static int
batch_serve(struct srv *sv)
{
	char resp[256];
	const char *p;
	int n;

	sv->reqlen = 0;
	srv_serve(sv, NULL);
	ck_assert_ptr_nonnull(p = strstr(sv->req, " /"));
	if (sscanf(p, " /ok-%d", &n) == 1)
		snprintf(resp, sizeof(resp),
		    "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: "
		    "close\r\n\r\nbody-%d",
		    n);
	else if (sscanf(p, " /fail-%d", &n) == 1)
		snprintf(resp, sizeof(resp),
		    "HTTP/1.1 500 Oops\r\nContent-Length: 0\r\nConnection: "
		    "close\r\n\r\n");
	else
		ck_abort_msg("unexpected request: %s", sv->req);
	ck_assert_int_eq(io_write_all(sv->cfd, resp, strlen(resp)), 0);
	close(sv->cfd);
	sv->cfd = -1;
	return n;
}

/*
 * One runner, three runs: each result on its own pipe, each its own
 * outcome (a 200 with its body, a 500, a refused URL that never reaches
 * the server), one pid, and nothing left behind.
 */
START_TEST(test_batch_results)
{
	static const char *const ids[3] = {
	    "sched-b-n0-j1-rc0", "sched-b-n0-j2-rc0", "sched-b-n0-j3-rc0"};
	const struct run_spec *specs[3];
	char url[3][128];
	struct run_spec s[3];
	struct ran r[3];
	struct srv sv;
	int fds[3], seen = 0;
	pid_t pid;

	srv_open(&sv);
	for (int i = 0; i < 3; i++) {
		spec_http(&s[i], &sv);
		s[i].run_id = ids[i];
		snprintf(url[i], sizeof(url[i]), "http://127.0.0.1:%d/%s-%d",
		    sv.port, i == 1 ? "fail" : "ok", i);
		s[i].url = url[i];
		specs[i] = &s[i];
	}
	s[2].url = "file:///etc/passwd";
	ck_assert_int_gt(pid = spawn_batch(specs, 3, fds), 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_ne(fcntl(fds[i], F_GETFL) & O_NONBLOCK, 0);
	for (int k = 0; k < 2; k++)
		seen |= 1 << batch_serve(&sv);
	ck_assert_int_eq(seen, 3);
	for (int i = 0; i < 3; i++)
		batch_frame(fds[i], &r[i]);
	ck_assert_int_eq(r[0].res.status, RESULT_OK);
	ck_assert_int_eq(r[0].res.http_status, 200);
	ck_assert_uint_eq(r[0].res.output_len, 6);
	ck_assert(memcmp(r[0].res.output, "body-0", 6) == 0);
	ck_assert_int_eq(r[1].res.status, RESULT_FAILED);
	ck_assert_int_eq(r[1].res.http_status, 500);
	ck_assert_int_eq(r[1].res.retryable, 1);
	ck_assert_int_eq(r[2].res.status, RESULT_ERROR);
	ck_assert_int_eq(r[2].res.retryable, 0);
	ck_assert_int_eq(r[2].res.http_status, 0);
	batch_reap(pid);
	for (int i = 0; i < 3; i++)
		result_clear(&r[i].res);
	srv_close(&sv);
}
END_TEST

/*
 * A run's timeout is its own: a server that never answers times out the
 * run sent to it at its 1 s, while the other run's result, answered at
 * once, comes before that; a run with a later start time is not sent
 * before it (CLOCK_REALTIME, to the microsecond).
 */
START_TEST(test_batch_timeout_start)
{
	const struct run_spec *specs[3];
	struct srv quiet, fast, late;
	struct run_spec s[3];
	struct ran r[3];
	int fds[3];
	int64_t nb, arrived;
	double t0;
	pid_t pid;

	srv_open(&quiet);
	srv_open(&fast);
	srv_open(&late);
	spec_http(&s[0], &quiet);
	s[0].timeout = 1;
	spec_http(&s[1], &fast);
	spec_http(&s[2], &late);
	nb = clock_real_us() + 300000;
	s[2].not_before_us = nb;
	for (int i = 0; i < 3; i++)
		specs[i] = &s[i];
	t0 = now();
	ck_assert_int_gt(pid = spawn_batch(specs, 3, fds), 0);
	srv_serve(&quiet, NULL); /* connected, never answered */
	srv_serve(&fast, RESP_200);
	batch_frame(fds[1], &r[1]);
	ck_assert_int_eq(r[1].res.status, RESULT_OK);
	ck_assert_msg(
	    now() - t0 < 0.9, "the fast run waited %.3f s", now() - t0);
	srv_serve(&late, RESP_200);
	arrived = clock_real_us();
	ck_assert_msg(
	    arrived >= nb, "sent %lld us early", (long long)(nb - arrived));
	batch_frame(fds[2], &r[2]);
	ck_assert_int_eq(r[2].res.status, RESULT_OK);
	batch_frame(fds[0], &r[0]);
	ck_assert_int_eq(r[0].res.status, RESULT_TIMEOUT);
	ck_assert_int_eq(r[0].res.retryable, 1);
	ck_assert_int_ge(r[0].res.duration_us, 900000);
	ck_assert_int_lt(r[0].res.duration_us, 1600000);
	batch_reap(pid);
	for (int i = 0; i < 3; i++)
		result_clear(&r[i].res);
	srv_close(&quiet);
	srv_close(&fast);
	srv_close(&late);
}
END_TEST

/*
 * SIGTERM (a shutdown) ends every open run as interrupted and retryable,
 * one that has not started yet too; the runner still exits 0.
 */
START_TEST(test_batch_sigterm)
{
	const struct run_spec *specs[2];
	struct run_spec s[2];
	struct ran r[2];
	struct srv sv;
	int fds[2];
	pid_t pid;

	srv_open(&sv);
	spec_http(&s[0], &sv);
	spec_http(&s[1], &sv);
	s[1].not_before_us = clock_real_us() + 60000000;
	specs[0] = &s[0];
	specs[1] = &s[1];
	ck_assert_int_gt(pid = spawn_batch(specs, 2, fds), 0);
	srv_serve(&sv, NULL);
	ck_assert_int_eq(kill(pid, SIGTERM), 0);
	for (int i = 0; i < 2; i++) {
		batch_frame(fds[i], &r[i]);
		ck_assert_int_eq(r[i].res.status, RESULT_ERROR);
		ck_assert_int_eq(r[i].res.retryable, 1);
		ck_assert_ptr_nonnull(r[i].res.error);
		ck_assert_msg(strstr(r[i].res.error, "interrupted") != NULL,
		    "%s", r[i].res.error);
		result_clear(&r[i].res);
	}
	batch_reap(pid);
	srv_close(&sv);
}
END_TEST

static Suite *
runner_suite(void)
{
	Suite *su = suite_create("runner");
	TCase *te = tcase_create("exec");
	TCase *tk = tcase_create("kill");
	TCase *th = tcase_create("http");

	tcase_set_timeout(te, 30);
	tcase_add_test(te, test_success_output);
	tcase_add_test(te, test_exit_3_stderr);
	tcase_add_test(te, test_exit_127);
	tcase_add_test(te, test_exec_missing);
	tcase_add_test(te, test_path_lookup);
	tcase_add_test(te, test_flood);
	tcase_add_test(te, test_memory_limit);
	tcase_add_test(te, test_env_cleared);
	tcase_add_test(te, test_cwd);
	tcase_add_test(te, test_run_as);
	tcase_add_test(te, test_nproc_limit);
	tcase_add_test(te, test_no_fd_leak);
	suite_add_tcase(su, te);
	tcase_set_timeout(tk, 15);
	tcase_add_test(tk, test_timeout);
	tcase_add_test(tk, test_ignores_sigterm);
	tcase_add_test(tk, test_escapee_timeout);
	tcase_add_test(tk, test_escapee_after_success);
	tcase_add_test(tk, test_interrupted);
	tcase_add_test(tk, test_supervisor_death);
	suite_add_tcase(su, tk);
	tcase_set_timeout(th, 15);
	tcase_add_test(th, test_http_ok);
	tcase_add_test(th, test_http_500);
	tcase_add_test(th, test_http_get);
	tcase_add_test(th, test_http_500_permanent);
	tcase_add_test(th, test_http_redirect);
	tcase_add_test(th, test_http_refused);
	tcase_add_test(th, test_http_timeout);
	tcase_add_test(th, test_http_bad_scheme);
	tcase_add_test(th, test_batch_results);
	tcase_add_test(th, test_batch_timeout_start);
	tcase_add_test(th, test_batch_sigterm);
	suite_add_tcase(su, th);
	return su;
}

int
main(void)
{
	log_init("check_runner", LOG_LEVEL_WARN);
	if (spawn_init() == -1)
		fatalx("spawn_init failed");
	return cvtest_run(runner_suite());
}
