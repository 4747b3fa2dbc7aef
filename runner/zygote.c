/*
 * zygote.c: the runner helper's side.  `cronvisor-runner --helper` is a
 * small process that forks the runners of exec runs on the supervisor's
 * behalf: a fork costs what the forking process has mapped, and the
 * supervisor maps libpq, libcurl and the ~35 libraries they pull in (a
 * fork and exit of it cost 0.47 ms of CPU against 0.12 ms for a process
 * with libc alone, bench/README.md).  The supervisor (supervisor/helper.c)
 * starts it with one end of a SOCK_SEQPACKET socket pair as descriptor 3
 * and sends it every exec run (spec.c) with the write end of the run's
 * result pipe attached (SCM_RIGHTS).  The helper forks the runner with
 * CLONE_PARENT, so the runner is the supervisor's own child, exactly as
 * if the supervisor had forked it: the supervisor reaps it, signals it,
 * and reads its result pipe; the runner's PR_SET_PDEATHSIG follows the
 * supervisor.  The helper answers with the runner's pid (or an errno);
 * the runner waits for the supervisor's go before it does anything, so
 * no exit status can come before the supervisor knows whose it is.  The
 * helper exits when the supervisor closes its end, and dies with it
 * (PR_SET_PDEATHSIG).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runner.h"

/* A message of one buffer and room for control data. */
void
zygote_msg(struct msghdr *msg, struct iovec *iov, void *buf, size_t len,
    void *ctl, size_t ctllen)
{
	memset(msg, 0, sizeof(*msg));
	*iov = (struct iovec){.iov_base = buf, .iov_len = len};
	msg->msg_iov = iov;
	msg->msg_iovlen = 1;
	msg->msg_control = ctl;
	msg->msg_controllen = ctllen;
}

/* The helper's side: one answer. */
static void
zygote_answer(int fd, pid_t pid, int err)
{
	struct zygote_reply rep = {.pid = (int32_t)pid, .err = err};

	while (
	    send(fd, &rep, sizeof(rep), MSG_NOSIGNAL) == -1 && errno == EINTR)
		;
}

/*
 * The two descriptors a message brought, in fd[0] and fd[1]; any other is
 * closed.  Returns how many there were, at most 2.
 */
static int
zygote_fds_of(struct msghdr *msg, int fd[2])
{
	struct cmsghdr *c;
	int n = 0, one;

	for (c = CMSG_FIRSTHDR(msg); c != NULL; c = CMSG_NXTHDR(msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0;
		     CMSG_LEN((i + 1) * sizeof(int)) <= c->cmsg_len; i++) {
			memcpy(
			    &one, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (n < 2)
				fd[n++] = one;
			else
				close(one);
		}
	}
	return n;
}

/*
 * The runner, just forked: waits for the supervisor's go (zygote_collect())
 * and becomes the runner, or exits at once, having done nothing, if the
 * supervisor closed the go pipe without a byte.
 */
static _Noreturn void
zygote_runner(const struct run_spec *spec, enum log_level level, int wr, int go,
    pid_t parent)
{
	ssize_t n;
	char c;

	while ((n = read(go, &c, 1)) == -1 && errno == EINTR)
		;
	if (n != 1)
		_exit(0);
	close(go);
	/* Named as a runner the supervisor forks. */
	(void)prctl(PR_SET_NAME, "cronvisord", 0, 0, 0);
	log_init("cronvisord", level);
	child_main(spec, wr, parent);
}

/*
 * The helper: `cronvisor-runner --helper`, the socket on ZYGOTE_FD.  Forks
 * a runner per spec until the supervisor closes the socket.  Returns the
 * exit status.
 */
int
zygote_serve(void)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(4 * sizeof(int))];
	} ctl;
	pid_t parent = getppid(), pid;
	struct run_spec spec;
	enum log_level level;
	char err[CV_ERRLEN];
	struct msghdr msg;
	struct iovec iov;
	unsigned char *buf;
	int fd[2], nfd, e;
	sigset_t block;
	ssize_t n;

	log_prefix("runner helper");
	/*
	 * Started by execveat() from an open file, its name would be the
	 * descriptor's number before Linux 6.14: the program's, as exec sets
	 * it (15 bytes), for ps and pgrep.
	 */
	(void)prctl(PR_SET_NAME, "cronvisor-runner", 0, 0, 0);
	/*
	 * The supervisor's mask (its signals go to a signalfd) is not ours,
	 * nor what it ignores (SIGPIPE), which execve() kept: every runner
	 * forked from here starts with the default dispositions.  SIGPIPE is
	 * blocked instead (a log line to a closed stderr fails, no more), and
	 * a runner sets its own mask.
	 */
	sigemptyset(&block);
	sigaddset(&block, SIGPIPE);
	(void)sigprocmask(SIG_SETMASK, &block, NULL);
	child_signals_defaults();
	child_signals_default = 1;
	if (fcntl(ZYGOTE_FD, F_SETFD, FD_CLOEXEC) == -1)
		fatal(
		    "descriptor %d is not the supervisor's socket", ZYGOTE_FD);
	/* The supervisor gone before this, the socket's end says so. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1 ||
	    getppid() != parent)
		fatalx("the supervisor is gone");
	if ((buf = malloc(ZYGOTE_MSG_MAX)) == NULL)
		fatal("malloc");
	for (;;) {
		zygote_msg(
		    &msg, &iov, buf, ZYGOTE_MSG_MAX, ctl.buf, sizeof(ctl.buf));
		if ((n = recvmsg(ZYGOTE_FD, &msg, MSG_CMSG_CLOEXEC)) == -1) {
			if (errno == EINTR)
				continue;
			fatal("reading the supervisor's socket");
		}
		if (n == 0)
			break; /* the supervisor closed it */
		nfd = zygote_fds_of(&msg, fd);
		if (nfd != 2 || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
			log_warnx("a message without its pipe, or too large");
			zygote_answer(ZYGOTE_FD, 0, EMSGSIZE);
		} else if (spec_decode(buf, (size_t)n, &spec, &level, err,
		               sizeof(err)) == -1) {
			log_warnx("%s", err);
			zygote_answer(ZYGOTE_FD, 0, EINVAL);
		} else {
			/*
			 * Like fork(), but the runner's parent is ours, the
			 * supervisor.  glibc has no fork with CLONE_PARENT;
			 * the raw system call skips its fork handlers (this
			 * process has none) and leaves the child's cached
			 * thread id the helper's, which only pthread_kill()
			 * and robust mutexes would read: the runner, one
			 * thread, uses neither (raise() asks the kernel).
			 */
			pid = (pid_t)syscall(
			    SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
			if (pid == 0)
				zygote_runner(
				    &spec, level, fd[0], fd[1], parent);
			e = errno;
			spec_free(&spec);
			zygote_answer(ZYGOTE_FD, pid > 0 ? pid : 0, e);
		}
		for (int i = 0; i < nfd; i++)
			close(fd[i]);
	}
	free(buf);
	return 0;
}
