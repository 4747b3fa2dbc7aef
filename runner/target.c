/*
 * target.c: the target process of an exec run, from the runner's fork()
 * to execve().  It puts itself in a process group of its own, gets
 * /dev/null as stdin and the output pipe as stdout and stderr, changes
 * directory, takes the run's resource limits, gives up root if the run
 * names a user (groups, then gid, then uid), sets no_new_privs for every
 * run (see target_user()), and executes argv with exactly the run's
 * environment: no shell, and a PATH search only for a bare name.  Any
 * step that fails is reported through the status pipe (close-on-exec, so
 * a successful execve() closes it empty): the stage and errno, which
 * target_describe() turns into the precise error the run records, instead
 * of a guess from exit status 127.  It runs in a vfork() child (exec.c),
 * in the runner's memory: between vfork() and execve() nothing here
 * allocates or writes anything but its own stack (and once RLIMIT_AS is
 * set an allocation could fail anyway), and the identity changes are the
 * raw system calls, not glibc's wrappers, which in a process that ever
 * had threads would signal the runner's threads and wait for them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runner.h"

enum target_stage {
	TARGET_STAGE_SETUP, /* process group, descriptors, signals */
	TARGET_STAGE_CHDIR, /* the working directory */
	TARGET_STAGE_LIMIT, /* a resource limit */
	TARGET_STAGE_USER,  /* the privilege drop */
	TARGET_STAGE_EXEC,  /* execve() itself */
};

/* The PATH searched when the run's environment has none. */
#define TARGET_PATH "/usr/local/bin:/usr/bin:/bin"

/* Reports a failed stage to the runner and exits. */
static _Noreturn void
target_fail(int statusfd, int stage)
{
	struct target_error te = {stage, errno};

	(void)io_write_all(statusfd, &te, sizeof(te));
	_exit(127);
}

/* stdin from /dev/null, stdout and stderr into the output pipe. */
static int
target_stdio(int outfd)
{
	int fd;

	if ((fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	if (dup2(fd, STDIN_FILENO) == -1 || dup2(outfd, STDOUT_FILENO) == -1 ||
	    dup2(outfd, STDERR_FILENO) == -1)
		return -1;
	close(fd);
	close(outfd);
	return 0;
}

/*
 * Sets one limit to v * scale, the hard limit hard_extra above it, if v >
 * 0.  A limit the runner's own hard limit already undercuts is kept as it
 * is: the run asked for at most that much, and it gets less.
 */
static int
target_limit(int resource, int64_t v, rlim_t scale, rlim_t hard_extra)
{
	struct rlimit old, rl;

	if (v <= 0)
		return 0;
	if ((uint64_t)v > (uint64_t)RLIM_INFINITY / scale / 2)
		return 0; /* larger than anything: leave it as it is */
	if (getrlimit(resource, &old) == -1)
		return -1;
	rl.rlim_cur = (rlim_t)v * scale;
	rl.rlim_max = rl.rlim_cur + hard_extra;
	if (old.rlim_max != RLIM_INFINITY && rl.rlim_max > old.rlim_max)
		rl.rlim_max = old.rlim_max;
	if (rl.rlim_cur > rl.rlim_max)
		rl.rlim_cur = rl.rlim_max;
	return setrlimit(resource, &rl);
}

/*
 * The run's limits, and never a core dump.  RLIMIT_CPU gets a hard limit
 * one second above the soft one, so that the target sees SIGXCPU (and may
 * say so in its output) before the kernel's SIGKILL.
 */
static int
target_limits(const struct run_limits *l)
{
	struct rlimit core = {0, 0};

	if (setrlimit(RLIMIT_CORE, &core) == -1 ||
	    target_limit(RLIMIT_CPU, l->cpu_seconds, 1, 1) == -1 ||
	    target_limit(RLIMIT_AS, l->memory_mb, 1024 * 1024, 0) == -1 ||
	    target_limit(RLIMIT_NOFILE, l->nofile, 1, 0) == -1 ||
	    target_limit(RLIMIT_NPROC, l->nproc, 1, 0) == -1 ||
	    target_limit(RLIMIT_FSIZE, l->fsize_mb, 1024 * 1024, 0) == -1)
		return -1;
	return 0;
}

/*
 * Becomes spec->uid/gid for good: supplementary groups cleared, the gid
 * set before the uid (after setuid() we could no longer change it); a
 * non-zero uid leaves no capability.  A runner that is not root can only
 * "switch" to the user it already is.  The raw system calls change the
 * calling thread only: call it where there is no other (the target
 * process, an HTTP runner before libcurl starts any).  0, or -1 with errno.
 */
int
target_switch(const struct run_spec *spec)
{
	if (geteuid() != 0) {
		if (getuid() == spec->uid && getgid() == spec->gid)
			return 0;
		errno = EPERM;
		return -1;
	}
	if (syscall(SYS_setgroups, 0, NULL) == -1 ||
	    syscall(SYS_setgid, spec->gid) == -1 ||
	    syscall(SYS_setuid, spec->uid) == -1)
		return -1;
	if (getuid() != spec->uid || geteuid() != spec->uid) {
		errno = EPERM;
		return -1;
	}
	return 0;
}

/*
 * The run's user, then no_new_privs for every run, with or without
 * run_as: no set-user-ID program or file capability gives a job more than
 * the runner handed it.  The packaged unit (NoNewPrivileges=yes) already
 * does that for every run; setting it here gives a supervisor started any
 * other way the same promise.  It takes nothing from a root job (root
 * keeps its capabilities across execve), and a run_as job cannot get root
 * back through sudo or su.
 */
static int
target_user(const struct run_spec *spec)
{
	if (spec->run_as && target_switch(spec) == -1)
		return -1;
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

/* Returns the PATH of the run's environment, or the default one. */
static const char *
target_path(char *const *env)
{
	for (size_t i = 0; env != NULL && env[i] != NULL; i++)
		if (strncmp(env[i], "PATH=", 5) == 0)
			return env[i] + 5;
	return TARGET_PATH;
}

/*
 * execvp() without its shell fallback and with the run's own PATH: a name
 * with a '/' is executed as it is; a bare name is tried in each directory
 * of PATH (empty entries, which would mean the working directory, are
 * skipped).  EACCES from one directory is remembered, as execvp() does, so
 * that "permission denied" wins over "not found".  Returns only on failure,
 * with errno set.
 */
static void
target_exec(char *const *argv, char *const *env)
{
	char path[PATH_MAX];
	const char *dir, *end;
	int denied = 0;
	size_t dlen;

	if (strchr(argv[0], '/') != NULL) {
		execve(argv[0], argv, env);
		return;
	}
	for (dir = target_path(env); *dir != '\0'; dir = end + (*end != '\0')) {
		end = strchrnul(dir, ':');
		dlen = (size_t)(end - dir);
		if (dlen == 0 || dlen + 1 + strlen(argv[0]) >= sizeof(path))
			continue;
		/* Not snprintf: with a long precision glibc's may allocate. */
		memcpy(path, dir, dlen);
		path[dlen] = '/';
		memcpy(path + dlen + 1, argv[0], strlen(argv[0]) + 1);
		execve(path, argv, env);
		if (errno == EACCES)
			denied = 1;
		else if (errno != ENOENT && errno != ENOTDIR)
			return;
	}
	errno = denied ? EACCES : ENOENT;
}

/*
 * The last RUNNER_SPIN_US before the start time, watched on the clock; if
 * the clock is still short of it after 10 times that (it was set back),
 * the rest is slept on the clock: never before the instant.
 */
static void
target_await(int64_t not_before_us)
{
	struct timespec t0, t, at;

	if (not_before_us <= 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (child_now_us() < not_before_us) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000000 +
		        (t.tv_nsec - t0.tv_nsec) / 1000 >
		    10 * RUNNER_SPIN_US) {
			at.tv_sec = (time_t)(not_before_us / 1000000);
			at.tv_nsec = (long)(not_before_us % 1000000) * 1000;
			while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME,
			           &at, NULL) == EINTR)
				;
		}
	}
}

/*
 * The target process: called in the runner's vfork() child, with the output
 * pipe's write end and the status pipe's write end (both close-on-exec).
 * Never returns: it becomes the command, or reports why it could not and
 * _exit()s with 127.
 */
void
target_main(const struct run_spec *spec, int outfd, int statusfd)
{
	pid_t runner = getppid();
	sigset_t none;

	sigemptyset(&none);
	if (sigprocmask(SIG_SETMASK, &none, NULL) == -1 ||
	    setpgid(0, 0) == -1 || target_stdio(outfd) == -1)
		target_fail(statusfd, TARGET_STAGE_SETUP);
	if (chdir(spec->cwd != NULL ? spec->cwd : "/") == -1)
		target_fail(statusfd, TARGET_STAGE_CHDIR);
	if (target_limits(&spec->limits) == -1)
		target_fail(statusfd, TARGET_STAGE_LIMIT);
	if (target_user(spec) == -1)
		target_fail(statusfd, TARGET_STAGE_USER);
	/*
	 * If the runner is SIGKILLed, the target goes with it.  Set after the
	 * privilege drop, which clears it; the runner may have died already.
	 */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1 ||
	    getppid() != runner)
		target_fail(statusfd, TARGET_STAGE_SETUP);
	target_await(spec->not_before_us);
	target_exec(spec->argv, spec->env);
	target_fail(statusfd, TARGET_STAGE_EXEC);
}

/* Returns 1 if a retry cannot help after err, as with a missing file. */
static int
target_permanent(int stage, int err)
{
	if (stage == TARGET_STAGE_USER)
		return 1;
	return err == ENOENT || err == EACCES || err == ENOEXEC ||
	    err == ENOTDIR;
}

/*
 * Turns what the target reported through the status pipe into res: status
 * RESULT_ERROR, the error text naming the stage and the file, and the
 * retryable flag (0 for a missing or unusable file or user).  Returns
 * nothing; res->error is left NULL if out of memory.
 */
void
target_describe(const struct run_spec *spec, const struct target_error *te,
    struct result *res)
{
	char msg[RESULT_ERROR_MAX];
	const char *e = strerror(te->err);

	switch (te->stage) {
	case TARGET_STAGE_CHDIR:
		snprintf(msg, sizeof(msg), "cannot change directory to %s: %s",
		    spec->cwd != NULL ? spec->cwd : "/", e);
		break;
	case TARGET_STAGE_LIMIT:
		snprintf(msg, sizeof(msg), "cannot set resource limits: %s", e);
		break;
	case TARGET_STAGE_USER:
		snprintf(msg, sizeof(msg), "cannot run as uid %u gid %u: %s",
		    (unsigned)spec->uid, (unsigned)spec->gid, e);
		break;
	case TARGET_STAGE_EXEC:
		snprintf(msg, sizeof(msg), "cannot execute %s: %s",
		    spec->argv[0], e);
		break;
	default:
		snprintf(msg, sizeof(msg), "cannot set up the target: %s", e);
		break;
	}
	res->status = RESULT_ERROR;
	res->retryable = !target_permanent(te->stage, te->err);
	free(res->error);
	res->error = strdup(msg);
}
