/*
 * cvhelper.c: a misbehaving command for the runner's tests, one program
 * with many modes (the first argument), each a way a real job goes wrong
 * or a way to look at what the runner gave it:
 *
 *   print TEXT CODE   TEXT on stdout, "stderr:TEXT" on stderr, exit CODE
 *   sleep SECS        say "started", then sleep
 *   ignoreterm SECS   ignore SIGTERM, say "started", then sleep
 *   escape exit|wait  start a grandchild that setsid()s, double-forks,
 *                     ignores SIGTERM and sleeps 60 s; print its pid;
 *                     then exit 0 or sleep 60 s
 *   flood MB          write MB MiB of 'x' lines, then "END-OF-FLOOD"
 *   alloc MB          allocate and touch MB MiB; exit 3 if malloc fails
 *   forks N           fork N sleeping children; exit 4 if a fork failed
 *   forkbomb SECS     every process forks without end (for at most SECS);
 *                     the first one exits 4 a second after a fork was
 *                     refused
 *   spin [noxcpu]     burn CPU for ever (noxcpu: ignore SIGXCPU too)
 *   outlive SECS FILE ignore SIGTERM, say "started", sleep, then append
 *                     "finished $CRONVISOR_RUN_ID" to FILE
 *   env | cwd | ids | fds   print the environment, working directory,
 *                     user and group ids, or open descriptors
 *
 * It is built without sanitizers: their runtimes reserve terabytes of
 * address space, which RLIMIT_AS tests would trip over.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static void
nap(double secs)
{
	struct timespec ts = {
	    (time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static int
say(const char *s)
{
	fputs(s, stdout);
	fflush(stdout);
	return 0;
}

/*
 * Starts a grandchild in a session of its own whose parent is gone, so
 * that neither the process group nor the parent links of a naive runner
 * would find it.  Prints its pid.
 */
static void
escape(void)
{
	int fds[2];
	pid_t pid, gc = 0;

	if (pipe(fds) == -1 || (pid = fork()) == -1)
		exit(2);
	if (pid == 0) {
		setsid();
		if ((gc = fork()) != 0) {
			(void)write(fds[1], &gc, sizeof(gc));
			_exit(0);
		}
		signal(SIGTERM, SIG_IGN);
		nap(60);
		_exit(0);
	}
	while (waitpid(pid, NULL, 0) == -1 && errno == EINTR)
		;
	if (read(fds[0], &gc, sizeof(gc)) != (ssize_t)sizeof(gc))
		exit(2);
	printf("grandchild %d\n", (int)gc);
	fflush(stdout);
}

static int
flood(long mb)
{
	static char line[1024];

	memset(line, 'x', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\n';
	for (long i = 0; i < mb * 1024; i++)
		if (fwrite(line, 1, sizeof(line), stdout) != sizeof(line))
			return 1;
	return say("END-OF-FLOOD\n");
}

static int
alloc(long mb)
{
	/* volatile: an optimiser may not drop the pages being touched */
	char *volatile p = malloc((size_t)mb * 1024 * 1024);

	if (p == NULL) {
		say("allocation failed\n");
		return 3;
	}
	for (size_t i = 0; i < (size_t)mb * 1024 * 1024; i += 4096)
		p[i] = 1;
	say("allocated\n");
	free(p);
	return 0;
}

static int
forks(long n)
{
	long ok = 0, failed = 0;

	for (long i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			nap(0.3);
			_exit(0);
		}
		if (pid > 0)
			ok++;
		else
			failed++;
	}
	while (wait(NULL) > 0 || errno == EINTR)
		;
	printf("forked %ld failed %ld\n", ok, failed);
	return failed > 0 ? 4 : 0;
}

/*
 * A fork bomb with a deadline, so that a runner which failed to stop it
 * does not take the machine down with the test.  Every process, the first
 * and each child, forks in a loop; a refused fork (RLIMIT_NPROC: EAGAIN)
 * makes it pause, not spin.  The first process reports the refusal and
 * exits 4, leaving its descendants for the runner to kill.
 */
static int
forkbomb(double secs)
{
	time_t end = time(NULL) + (time_t)secs + 1;
	int first = 1, err = 0;

	while (time(NULL) < end) {
		pid_t pid = fork();
		if (pid == 0) {
			first = 0;
			continue;
		}
		if (pid > 0)
			continue;
		err = errno;
		if (first) {
			nap(1); /* the bomb goes on: let the test see it */
			printf("fork refused: %s\n", strerror(err));
			fflush(stdout);
			return 4;
		}
		nap(0.05);
	}
	if (first)
		printf("fork never refused\n");
	return first ? 0 : 5;
}

static _Noreturn void
spin(const char *how)
{
	volatile unsigned long n = 0;

	if (strcmp(how, "noxcpu") == 0)
		signal(SIGXCPU, SIG_IGN);
	say("spinning\n");
	for (;;)
		n++;
}

/* Ignores SIGTERM, sleeps, then leaves proof that it was not killed. */
static int
outlive(double secs, const char *file)
{
	const char *id = getenv("CRONVISOR_RUN_ID");
	FILE *f;

	signal(SIGTERM, SIG_IGN);
	say("started\n");
	nap(secs);
	if ((f = fopen(file, "a")) == NULL)
		return 1;
	fprintf(f, "finished %s\n", id != NULL ? id : "?");
	return fclose(f) == 0 ? 0 : 1;
}

static int
fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;

	if (d == NULL)
		return 1;
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.' && atoi(de->d_name) != dirfd(d))
			printf("fd %s\n", de->d_name);
	closedir(d);
	return 0;
}

static int
ids(void)
{
	gid_t groups[64];
	int n = getgroups(64, groups);

	printf("uid %d euid %d gid %d egid %d groups %d\n", (int)getuid(),
	    (int)geteuid(), (int)getgid(), (int)getegid(), n);
	return 0;
}

static int
looks(const char *mode)
{
	char buf[4096];

	if (strcmp(mode, "env") == 0) {
		for (char **e = environ; *e != NULL; e++)
			printf("%s\n", *e);
		return 0;
	}
	if (strcmp(mode, "cwd") == 0) {
		if (getcwd(buf, sizeof(buf)) == NULL)
			return 1;
		printf("%s\n", buf);
		return 0;
	}
	if (strcmp(mode, "ids") == 0)
		return ids();
	if (strcmp(mode, "fds") == 0)
		return fds();
	fprintf(stderr, "cvhelper: unknown mode %s\n", mode);
	return 2;
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	const char *arg = argc > 2 ? argv[2] : "0";

	if (strcmp(mode, "print") == 0) {
		printf("%s\n", arg);
		fflush(stdout);
		fprintf(stderr, "stderr:%s\n", arg);
		return argc > 3 ? atoi(argv[3]) : 0;
	}
	if (strcmp(mode, "sleep") == 0 || strcmp(mode, "ignoreterm") == 0) {
		if (mode[0] == 'i')
			signal(SIGTERM, SIG_IGN);
		say("started\n");
		nap(atof(arg));
		return say("woke up\n");
	}
	if (strcmp(mode, "escape") == 0) {
		escape();
		if (strcmp(arg, "wait") == 0)
			nap(60);
		return 0;
	}
	if (strcmp(mode, "flood") == 0)
		return flood(atol(arg));
	if (strcmp(mode, "alloc") == 0)
		return alloc(atol(arg));
	if (strcmp(mode, "forks") == 0)
		return forks(atol(arg));
	if (strcmp(mode, "forkbomb") == 0)
		return forkbomb(atof(arg));
	if (strcmp(mode, "spin") == 0)
		spin(arg);
	if (strcmp(mode, "outlive") == 0)
		return outlive(atof(arg), argc > 3 ? argv[3] : "/dev/null");
	return looks(mode);
}
