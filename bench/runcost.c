/*
 * runcost.c: what cronvisor's way of running a command costs beside the
 * bare fork/exec/wait of the same command, in CPU time, measured in one
 * process, one after the other, so that the ratio holds on a noisy
 * machine.  No database: only the runner path of an exec run, as the
 * supervisor drives it: the runner helper (cronvisor-runner, found beside
 * this program) forks a runner per run, the runner isolates itself, forks
 * the command and sends its result frame, which is read to its end, and
 * the runner is reaped.  K runs in flight, asked of the helper in
 * batches of at most SPAWN_MAX, as the supervisor does.
 *
 * usage: runcost [N [K [COMMAND...]]]   (3000 runs, 64 in flight, /bin/true)
 * prints: the runner path's runs/s and CPU µs per run (this process and
 * its children: the helper, the runners and the commands); the CPU µs
 * per run of bench/forkexec, the bare loop of the limit, run as a child
 * for the same command; and the ratio of the two.  The last line has
 * the same figures as JSON (bench/run keeps it in bench/out/runcost.json).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spawn.h"

#include "clock.h"

#define INFLIGHT_MAX 256

static char *true_argv[] = {(char *)"/bin/true", NULL};
static char **cmd = true_argv;

/* CPU seconds of this process and of its reaped children. */
static double
cpu_s(void)
{
	return (cpu_us(RUSAGE_SELF) + cpu_us(RUSAGE_CHILDREN)) / 1e6;
}

static _Noreturn void
die(const char *what)
{
	perror(what);
	exit(1);
}

/* Reaps what has exited; returns how many runners that was. */
static int
reap(int block)
{
	int n = 0, st;
	pid_t pid;

	while ((pid = waitpid(-1, &st, block && n == 0 ? 0 : WNOHANG)) > 0)
		if (!zygote_reaped(pid, st))
			n++;
	if (pid == -1 && errno != ECHILD)
		die("waitpid");
	return n;
}

/*
 * Starts batch runners as cronvisord does: each exec run asked of the
 * helper, its answer awaited on the helper's socket (epfd); one it cannot
 * take forked here.
 */
static void
start_batch(int epfd, const struct run_spec *const *specs, int batch,
    pid_t *pids, int *rfds)
{
	struct spawn_ask asks[SPAWN_MAX];
	struct epoll_event ev;
	int asked[SPAWN_MAX], err = 0;

	for (int i = 0; i < batch; i++) {
		asked[i] = spawn_ask(specs[i], &asks[i]) == 0;
		if (!asked[i])
			spawn_runners(&specs[i], 1, &pids[i], &rfds[i], &err);
	}
	for (int i = 0; i < batch; i++) {
		int give_up = 0;

		while (asked[i] &&
		    !spawn_answer(
		        specs[i], &asks[i], give_up, &pids[i], &rfds[i], &err))
			give_up = epoll_wait(epfd, &ev, 1, SPAWN_REPLY_MS) == 0;
		if (pids[i] == -1) {
			errno = err;
			die("spawn_runners");
		}
	}
}

/* n runs through the helper, k in flight; returns runs per second. */
static double
runner_path(int n, int k)
{
	static char *env[] = {(char *)"PATH=/usr/bin:/bin", NULL};
	struct run_spec spec = {.run_id = "runcost",
	    .schedule = "runcost",
	    .target = RUN_TARGET_EXEC,
	    .argv = cmd,
	    .env = env,
	    .timeout = 60,
	    .kill_grace = 1,
	    .output_tail = 4096};
	const struct run_spec *specs[SPAWN_MAX];
	struct pollfd fds[INFLIGHT_MAX];
	pid_t pids[SPAWN_MAX];
	int rfds[SPAWN_MAX], open = 0, started = 0, reaped = 0;
	int epfd = epoll_create1(EPOLL_CLOEXEC);
	char buf[4096];
	double t0 = now_s();

	if (epfd == -1)
		die("epoll_create1");
	zygote_watch(epfd, NULL);
	for (int i = 0; i < SPAWN_MAX; i++)
		specs[i] = &spec;
	while (reaped < n) {
		int batch = n - started;

		if (batch > k - (started - reaped))
			batch = k - (started - reaped);
		if (batch > SPAWN_MAX)
			batch = SPAWN_MAX;
		if (batch > 0) {
			start_batch(epfd, specs, batch, pids, rfds);
			for (int i = 0; i < batch; i++) {
				fds[open].fd = rfds[i];
				fds[open++].events = POLLIN;
			}
			started += batch;
		}
		if (open > 0 && poll(fds, (nfds_t)open, 1000) == -1 &&
		    errno != EINTR)
			die("poll");
		for (int i = 0; i < open; i++) {
			ssize_t got;

			if (fds[i].revents == 0)
				continue;
			while ((got = read(fds[i].fd, buf, sizeof(buf))) > 0)
				;
			if (got == 0 || (got == -1 && errno != EAGAIN)) {
				close(fds[i].fd);
				fds[i--] = fds[--open];
			}
		}
		reaped += reap(open == 0);
	}
	close(epfd);
	return n / (now_s() - t0);
}

/*
 * The bare loop: bench/forkexec (a program with libc alone, as the limit
 * of bench/run is measured) for n runs, which it makes once with one and
 * once with two children in flight.  Returns the CPU seconds per run.
 */
static double
bare(int n)
{
	char self[4096], prog[4200], count[16], *slash;
	ssize_t len;
	double c0 = cpu_s();
	pid_t pid;
	int st;

	if ((len = readlink("/proc/self/exe", self, sizeof(self) - 1)) <= 0)
		die("/proc/self/exe");
	self[len] = '\0';
	if ((slash = strrchr(self, '/')) != NULL)
		*slash = '\0';
	snprintf(prog, sizeof(prog), "%s/bench/forkexec", self);
	snprintf(count, sizeof(count), "%d", n);
	if ((pid = fork()) == 0) {
		char *args[4 + 64] = {prog, count};
		int i = 2;

		for (char **c = cmd; *c != NULL && i < 4 + 62; c++)
			args[i++] = *c;
		args[i] = NULL;
		if (freopen("/dev/null", "w", stdout) == NULL)
			_exit(127);
		execv(prog, args);
		_exit(127);
	}
	if (pid == -1 || waitpid(pid, &st, 0) == -1)
		die("forkexec");
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "runcost: %s failed\n", prog);
		exit(1);
	}
	return (cpu_s() - c0) / (2.0 * n);
}

int
main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3000;
	int k = argc > 2 ? atoi(argv[2]) : 64;
	double c0, rate, path_us, bare_us;

	if (n < 1 || k < 1 || k > INFLIGHT_MAX) {
		fprintf(stderr, "usage: runcost [N [K (1-%d) [COMMAND...]]]\n",
		    INFLIGHT_MAX);
		return 2;
	}
	if (argc > 3)
		cmd = argv + 3;
	log_init("runcost", LOG_LEVEL_WARN);
	if (spawn_init() == -1 || zygote_start() == -1) {
		fprintf(stderr,
		    "runcost: no runner helper (cronvisor-runner "
		    "must be beside this program)\n");
		return 1;
	}
	c0 = cpu_s();
	rate = runner_path(n, k);
	zygote_stop();
	while (reap(1) > 0 || waitpid(-1, NULL, 0) > 0)
		;
	path_us = (cpu_s() - c0) / n * 1e6;
	bare_us = bare(n) * 1e6;
	printf("runner_path runs/s %.0f cpu_us_per_run %.1f (%d in flight)\n",
	    rate, path_us, k);
	printf("bare_forkexec cpu_us_per_run %.1f\n", bare_us);
	printf("runner_over_bare %.3f extra_us_per_run %.1f\n",
	    path_us / bare_us, path_us - bare_us);
	printf("{\"runs\": %d, \"in_flight\": %d, \"runs_per_second\": %.0f, "
	       "\"cpu_us_per_run\": %.1f, \"bare_cpu_us_per_run\": %.1f, "
	       "\"ratio\": %.3f}\n",
	    n, k, rate, path_us, bare_us, path_us / bare_us);
	return 0;
}
