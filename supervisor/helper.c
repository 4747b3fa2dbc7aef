/*
 * helper.c: the supervisor's side of the runner helper (runner/zygote.c
 * is the helper's).  At its start the supervisor executes
 * `cronvisor-runner --helper` (beside it, or in ../lib/cronvisor) once and
 * sends it the exec runs (zygote_send()); the helper's answers arrive on
 * the socket, which the loop watches (zygote_watch()) and reads without
 * waiting (zygote_collect()).  Whenever the helper cannot do it (not
 * installed, died, wedged, a spec too large for one message) the
 * supervisor forks the runner itself, as it always does for HTTP runs,
 * which need libcurl: the helper is a saving, never a condition.  A dead
 * helper is started again a second later.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spawn.h"

#define ZYGOTE_RETRY_MS  1000  /* a dead helper is replaced after */
#define ZYGOTE_WEDGED_MS 60000 /* and one that did not answer */
#define ZYGOTE_OLD       8     /* helpers gone, not yet reaped */

/* The supervisor's side. */
static struct {
	pid_t pid;             /* the helper, 0 if none */
	int fd;                /* the supervisor's end of the socket, or -1 */
	int64_t retry_ms;      /* CLOCK_MONOTONIC ms before which no restart */
	pid_t old[ZYGOTE_OLD]; /* helpers dropped, for zygote_reaped() */
	int missing;           /* 1: not found, and said so */
	char path[PATH_MAX];   /* the helper's executable, "" if none */
	int exe;               /* and that file, opened O_PATH, or -1 */
	unsigned gen;          /* how many helpers were dropped */
	int epfd;  /* the loop watching fd (zygote_watch()), or -1 */
	void *tag; /* and its epoll data for it */
} zy = {.fd = -1, .exe = -1, .epfd = -1};

/* Watches the helper's socket in the supervisor's loop, if it has one. */
static void
zygote_watch_fd(void)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = zy.tag};

	if (zy.epfd != -1 && zy.fd != -1 &&
	    epoll_ctl(zy.epfd, EPOLL_CTL_ADD, zy.fd, &ev) == -1)
		log_warn("runner helper: epoll_ctl");
}

/* Closes the helper's socket, unwatched first. */
static void
zygote_close(void)
{
	if (zy.fd == -1)
		return;
	if (zy.epfd != -1)
		(void)epoll_ctl(zy.epfd, EPOLL_CTL_DEL, zy.fd, NULL);
	close(zy.fd);
	zy.fd = -1;
}

/*
 * The helper's executable, found from the running program's directory:
 * beside it (a build tree), else ../lib/cronvisor/ (installed: cronvisord
 * in /usr/sbin, the helper in /usr/lib/cronvisor).  Once found, the file
 * is kept open and every helper is started from it: a package upgrade
 * replaces the file on disk before it restarts cronvisord, and a helper
 * started in between must be of cronvisord's version, which the new file
 * may not be (it would refuse every run).
 */
static const char *
zygote_find(void)
{
	static const char *const rel[] = {
	    "/cronvisor-runner", "/../lib/cronvisor/cronvisor-runner"};
	char self[PATH_MAX], found[PATH_MAX], *slash;
	ssize_t n;
	int fd;

	if (zy.exe != -1)
		return zy.path;
	zy.path[0] = '\0';
	if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) <= 0)
		return NULL;
	self[n] = '\0';
	if ((slash = strrchr(self, '/')) == NULL)
		return NULL;
	*slash = '\0';
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		/* The path without "..", as the log shows it. */
		if ((size_t)snprintf(found, sizeof(found), "%s%s", self,
		        rel[i]) >= sizeof(found) ||
		    access(found, X_OK) != 0 ||
		    realpath(found, zy.path) == NULL)
			continue;
		/* Above the helper's socket: the child moves that to 3. */
		if ((fd = open(zy.path, O_PATH | O_CLOEXEC)) == -1)
			break;
		zy.exe = fcntl(fd, F_DUPFD_CLOEXEC, ZYGOTE_FD + 1);
		close(fd);
		if (zy.exe == -1)
			break;
		return zy.path;
	}
	zy.path[0] = '\0';
	return NULL;
}

/*
 * Drops the helper: closing its socket ends it, and one still running
 * (wedged) is killed; it is reaped later.  alive: 0 if it was reaped.
 */
static void
zygote_drop(const char *why, int alive, int64_t retry_ms)
{
	if (zy.pid > 0) {
		log_warnx("runner helper %d: %s; the supervisor forks runners "
		          "until it is replaced",
		    (int)zy.pid, why);
		if (alive) {
			kill(zy.pid, SIGKILL);
			memmove(zy.old + 1, zy.old,
			    sizeof(zy.old) - sizeof(zy.old[0]));
			zy.old[0] = zy.pid;
		}
	}
	zygote_close();
	zy.pid = 0;
	zy.gen++;
	zy.retry_ms = clock_ms() + retry_ms;
}

/*
 * Starts the helper if there is none and none failed in the last second
 * (the supervisor calls it at its start, so that the first run does not
 * wait for the helper's exec).  Returns 0 if one runs, -1 if runners are
 * to be forked here.
 */
int
zygote_start(void)
{
	int sv[2], size = ZYGOTE_MSG_MAX;
	char *argv[] = {(char *)"cronvisor-runner", (char *)"--helper", NULL};
	extern char **environ;
	pid_t pid;

	if (zy.pid > 0)
		return 0;
	if (clock_ms() < zy.retry_ms)
		return -1;
	zy.retry_ms = clock_ms() + ZYGOTE_RETRY_MS;
	if (zygote_find() == NULL) {
		if (!zy.missing)
			log_warnx("runner helper: no cronvisor-runner beside "
			          "cronvisord or in ../lib/cronvisor; the "
			          "supervisor forks every runner");
		zy.missing = 1;
		return -1;
	}
	zy.missing = 0;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1) {
		log_warn("runner helper: socketpair");
		return -1;
	}
	(void)setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	(void)setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	/* vfork: nothing but system calls until execve. */
	if ((pid = vfork()) == 0) {
		if (sv[1] == ZYGOTE_FD ? fcntl(ZYGOTE_FD, F_SETFD, 0) == -1
		                       : dup2(sv[1], ZYGOTE_FD) == -1)
			_exit(127);
		/*
		 * What the supervisor opened without O_CLOEXEC stays here;
		 * one by one before Linux 5.11.
		 */
		if (syscall(SYS_close_range, ZYGOTE_FD + 1, ~0U,
		        CLOSE_RANGE_CLOEXEC) == -1)
			for (int fd = ZYGOTE_FD + 1; fd < 65536; fd++)
				(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
		syscall(SYS_execveat, zy.exe, "", argv, environ, AT_EMPTY_PATH);
		/* No execveat() here (a seccomp filter): by its name then. */
		execve(zy.path, argv, environ);
		_exit(127);
	}
	close(sv[1]);
	if (pid == -1) {
		log_warn("runner helper: cannot start %s", zy.path);
		close(sv[0]);
		return -1;
	}
	zy.pid = pid;
	zy.fd = sv[0];
	zygote_watch_fd();
	log_info("runner helper %d started (%s)", (int)pid, zy.path);
	return 0;
}

/*
 * Asks the helper to fork the runner of spec (an exec run), with
 * result_wr as its result pipe, without waiting for its answer, which
 * zygote_collect() reads: several runs can be asked for before the first
 * answer is read, so that the helper forks them back to back instead of
 * waiting for the supervisor between two.  Returns 0 with *z filled, or
 * -1 (*z empty) if the caller is to fork the runner itself.
 *
 * The runner the helper forks waits for a byte on a "go" pipe before it
 * does anything, and the byte is written only once the helper's answer
 * has named it.  Without an answer (the helper wedged, or died after the
 * fork) the go pipe is closed unwritten and that runner, if there is one,
 * exits without running anything: only then may the caller fork another.
 */
int
zygote_send(const struct run_spec *spec, int result_wr, struct zygote_sent *z)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(2 * sizeof(int))];
	} ctl;
	struct msghdr msg;
	struct iovec iov;
	unsigned char *buf;
	int go[2], fds[2];
	size_t len;
	ssize_t n;

	z->go = -1;
	if (spec->target != RUN_TARGET_EXEC || zygote_start() == -1)
		return -1;
	if (spec_encode(spec, log_getlevel(), &buf, &len) == -1)
		return -1;
	if (pipe2(go, O_CLOEXEC) == -1) {
		free(buf);
		return -1;
	}
	fds[0] = result_wr;
	fds[1] = go[0];
	memset(&ctl, 0, sizeof(ctl));
	zygote_msg(&msg, &iov, buf, len, ctl.buf, sizeof(ctl.buf));
	CMSG_FIRSTHDR(&msg)->cmsg_level = SOL_SOCKET;
	CMSG_FIRSTHDR(&msg)->cmsg_type = SCM_RIGHTS;
	CMSG_FIRSTHDR(&msg)->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(CMSG_FIRSTHDR(&msg)), fds, sizeof(fds));
	/*
	 * Not waiting: requests sent before their answers are read fill the
	 * socket's buffer, and a wedged helper would then hold the
	 * supervisor here, where no time limit applies.  A full buffer
	 * (EAGAIN) leaves that run to the caller to fork.
	 */
	while ((n = sendmsg(zy.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT)) == -1 &&
	    errno == EINTR)
		;
	free(buf);
	close(go[0]);
	if (n == -1) {
		if (errno != EMSGSIZE && errno != ENOBUFS && errno != EAGAIN)
			zygote_drop(strerror(errno), 1, ZYGOTE_RETRY_MS);
		close(go[1]);
		return -1;
	}
	z->go = go[1];
	z->gen = zy.gen;
	z->run_id = spec->run_id != NULL ? spec->run_id : "?";
	return 0;
}

/*
 * The helper's answer to the zygote_send() of *z, answers being read in
 * the order of the sends, without waiting: the supervisor watches the
 * helper's socket in its event loop (zygote_watch()).  Returns the
 * runner's pid (the supervisor's child), or -1 if the caller is to fork
 * the runner itself; or -1 with *pending set (and *z kept) when the
 * answer has not come yet.  give_up: the answer is overdue; unless it is
 * there now (the loop may have been busy when it came), the helper counts
 * as wedged and is dropped (and with it every answer awaited).
 */
pid_t
zygote_collect(struct zygote_sent *z, int give_up, int *pending)
{
	struct zygote_reply rep;
	ssize_t n;
	int go = z->go;

	*pending = 0;
	if (go == -1)
		return -1;
	/* Its helper was dropped since: that runner never gets its byte. */
	if (z->gen != zy.gen || zy.fd == -1) {
		z->go = -1;
		close(go);
		return -1;
	}
	while ((n = recv(zy.fd, &rep, sizeof(rep), MSG_DONTWAIT)) == -1 &&
	    errno == EINTR)
		;
	if (n == -1 && errno == EAGAIN) {
		/* No answer there: overdue, the helper is given up. */
		if (give_up) {
			zygote_drop("no answer", 1, ZYGOTE_WEDGED_MS);
			z->go = -1;
			close(go);
			return -1;
		}
		*pending = 1;
		return -1;
	}
	z->go = -1;
	if (n != (ssize_t)sizeof(rep)) {
		zygote_drop("gone", 1, ZYGOTE_RETRY_MS);
		close(go);
		return -1;
	}
	if (rep.pid <= 0) {
		errno = rep.err;
		log_warn("runner helper %d could not start run %s", (int)zy.pid,
		    z->run_id);
		/* It cannot read what this supervisor writes: another version.
		 */
		if (rep.err == EINVAL)
			zygote_drop("refuses the runs (a cronvisor-runner of "
			            "another version? restart cronvisord)",
			    1, ZYGOTE_WEDGED_MS);
		close(go);
		return -1;
	}
	if (write(go, "g", 1) != 1)
		log_warn("run %s: starting its runner", z->run_id);
	close(go);
	return (pid_t)rep.pid;
}

/*
 * Has the helper's socket watched for input in the event loop epfd (with
 * tag as its epoll data) from now on: each helper's, from its start to
 * its drop, so that the answers of zygote_collect() wake the loop.
 */
void
zygote_watch(int epfd, void *tag)
{
	zy.epfd = epfd;
	zy.tag = tag;
	zygote_watch_fd();
}

/*
 * Returns 1 if pid, just reaped by the supervisor, was a runner helper
 * (which is then replaced at the next exec run), else 0.
 */
int
zygote_reaped(pid_t pid, int wstatus)
{
	if (zy.pid > 0 && pid == zy.pid) {
		zygote_drop(WIFSIGNALED(wstatus) ? "killed" : "exited", 0,
		    ZYGOTE_RETRY_MS);
		return 1;
	}
	for (int i = 0; i < ZYGOTE_OLD; i++) {
		if (zy.old[i] == pid) {
			zy.old[i] = 0;
			return 1;
		}
	}
	return 0;
}

/*
 * The supervisor stops: its helper exits when its socket closes, and is
 * given up to 5 s to do so (and be reaped) before the supervisor exits and
 * its death signal kills it.
 */
void
zygote_stop(void)
{
	struct timespec tick = {0, 10 * 1000000};

	zygote_close();
	for (int i = 0; zy.pid > 0 && i < 500; i++) {
		if (waitpid(zy.pid, NULL, WNOHANG) != 0)
			break;
		nanosleep(&tick, NULL);
	}
	zy.fd = -1;
	zy.pid = 0;
	zy.retry_ms = INT64_MAX;
}
