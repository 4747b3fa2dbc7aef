/*
 * task.c: the supervisor's database work, off its event loop.  The loop
 * has one database connection, and that connection does one piece of work
 * at a time: a task (a claim, the results of a turn, a heartbeat, a
 * reconnect).  A task is ordinary sequential code (claim.c, finish.c,
 * peer.c) run on a stack of its own: each statement it sends through
 * db.c waits for its answer in task_wait(), which switches back to the
 * loop.  The loop then goes on reaping runners, reading their results and
 * enforcing their deadlines, and switches back into the task when the
 * socket is ready (task_ready()) or the statement's time is up
 * (task_expired()).  So nothing in the loop waits on the network, and a
 * database that stops answering costs a task, never the loop.
 *
 * The states, one task at a time:
 *
 *	IDLE ── task_run() ──▶ RUNNING ── task_wait() ──▶ WAITING
 *	  ▲                      │   ▲                      │
 *	  └── the function ends ─┘   └─ task_ready/expired ─┘
 *
 * A task never forks (the loop starts the runners a claim returns, on
 * its own stack) and never frees a job the loop may hold.  Under
 * AddressSanitizer every switch is announced to it (the fiber API), and
 * its one-time warning that it "doesn't fully support swapcontext" is
 * expected.  tests/check_task.c drives this file with a loop of its own.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "cronvisord.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define TASK_ASAN 1
#endif

#define TASK_STACK (1024 * 1024) /* bytes of a task's stack */

enum task_state { TASK_IDLE, TASK_RUNNING, TASK_WAITING };

static struct {
	enum task_state state;
	ucontext_t loop;         /* where the loop left off */
	ucontext_t ctx;          /* where the task left off */
	char *stack;             /* TASK_STACK bytes above a guard page */
	void (*fn)(void *);      /* the task's function */
	void *arg;               /* and its argument */
	int fd;                  /* the socket it waits for */
	uint32_t events;         /* and how (EPOLLIN, EPOLLOUT) */
	int64_t deadline_ms;     /* CLOCK_MONOTONIC ms its wait ends */
	int expired;             /* 1: resumed by task_expired() */
	int epfd;                /* the loop's epoll */
	int watched;             /* the fd in epfd, or -1 */
	uint32_t watched_events; /* and its events */
	int (*sock)(void);       /* the database socket now, or -1 */
#ifdef TASK_ASAN
	void *loop_fake;         /* ASan's state of the loop's stack */
	void *task_fake;         /* and of the task's */
	const void *loop_bottom; /* the loop's stack, for ASan */
	size_t loop_size;        /* and its size */
#endif
} tk = {.watched = -1};

/* Watches fd for events in the loop's epoll (tag: the database's). */
static void
task_watch(int fd, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = TASK_TAG};

	if (fd == tk.watched && events == tk.watched_events)
		return;
	/* libpq's socket may be a new one, maybe under the old number. */
	if (tk.watched != -1 && fd != tk.watched)
		(void)epoll_ctl(tk.epfd, EPOLL_CTL_DEL, tk.watched, NULL);
	if (fd < 0) {
		tk.watched = -1;
		return;
	}
	if (epoll_ctl(tk.epfd, EPOLL_CTL_MOD, fd, &ev) == -1 &&
	    (errno != ENOENT ||
	        epoll_ctl(tk.epfd, EPOLL_CTL_ADD, fd, &ev) == -1))
		fatal("epoll_ctl");
	tk.watched = fd;
	tk.watched_events = events;
}

/*
 * Sets the task machinery up on the loop's epoll.  sock() returns the
 * database socket (-1 if none), watched for input between tasks:
 * notifications.  libpq may close that socket and open another during
 * any call; all of them are made in tasks, and the watch follows the
 * socket before the loop runs again (task_wait(), the end of a task), so
 * that an old number is never unwatched after the loop reused it.
 */
void
task_init(int epfd, int (*sock)(void))
{
	tk.sock = sock;
	tk.epfd = epfd;
	tk.stack = mmap(NULL, TASK_STACK + 4096, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (tk.stack == MAP_FAILED ||
	    mprotect(tk.stack, 4096, PROT_NONE) == -1) /* overflow faults */
		fatal("task stack");
	tk.stack += 4096;
	task_idle_watch();
}

/* Switches from the loop into the task, until it waits or ends. */
static void
task_enter(void)
{
#ifdef TASK_ASAN
	__sanitizer_start_switch_fiber(&tk.loop_fake, tk.stack, TASK_STACK);
#endif
	if (swapcontext(&tk.loop, &tk.ctx) == -1)
		fatal("swapcontext");
#ifdef TASK_ASAN
	__sanitizer_finish_switch_fiber(tk.loop_fake, NULL, NULL);
#endif
}

/* Switches from the task back to the loop; ending: it never returns. */
static void
task_leave(int ending)
{
#ifdef TASK_ASAN
	__sanitizer_start_switch_fiber(
	    ending ? NULL : &tk.task_fake, tk.loop_bottom, tk.loop_size);
#else
	(void)ending;
#endif
	if (swapcontext(&tk.ctx, &tk.loop) == -1)
		fatal("swapcontext");
#ifdef TASK_ASAN
	__sanitizer_finish_switch_fiber(
	    tk.task_fake, &tk.loop_bottom, &tk.loop_size);
#endif
}

/* The first frame of every task. */
static void
task_main(void)
{
#ifdef TASK_ASAN
	__sanitizer_finish_switch_fiber(NULL, &tk.loop_bottom, &tk.loop_size);
#endif
	tk.fn(tk.arg);
	tk.state = TASK_IDLE;
	task_idle_watch();
	task_leave(1);
}

/*
 * Runs fn(arg) as the task, until it first waits or ends.  Returns 0, or
 * -1 if a task is already under way (nothing is done then).
 */
int
task_run(void (*fn)(void *), void *arg)
{
	if (tk.state != TASK_IDLE)
		return -1;
	if (getcontext(&tk.ctx) == -1)
		fatal("getcontext");
	tk.ctx.uc_stack.ss_sp = tk.stack;
	tk.ctx.uc_stack.ss_size = TASK_STACK;
	tk.ctx.uc_link = NULL;
	makecontext(&tk.ctx, task_main, 0);
	tk.fn = fn;
	tk.arg = arg;
	tk.state = TASK_RUNNING;
	task_enter();
	return 0;
}

/* 1 while a task is under way (running or waiting), else 0. */
int
task_busy(void)
{
	return tk.state != TASK_IDLE;
}

/*
 * db_set_wait()'s wait: inside a task, hands the loop the socket to watch
 * and the deadline, and switches back to it; outside one (the start and
 * the stop of the supervisor, before and after the loop), blocks in
 * poll().  Returns 0 when fd is ready, -1 when timeout_ms passed.
 */
int
task_wait(void *arg, int fd, int events, int64_t timeout_ms)
{
	if (tk.state != TASK_RUNNING)
		return db_wait_poll(arg, fd, events, timeout_ms);
	tk.fd = fd;
	tk.events = (events & DB_WAIT_READ ? EPOLLIN : 0) |
	    (events & DB_WAIT_WRITE ? EPOLLOUT : 0);
	tk.deadline_ms = clock_ms() + timeout_ms;
	tk.expired = 0;
	task_watch(fd, tk.events);
	tk.state = TASK_WAITING;
	task_leave(0);
	tk.state = TASK_RUNNING;
	return tk.expired ? -1 : 0;
}

/*
 * The loop's side: the database socket is ready.  A waiting task goes on
 * (until it waits again or ends); between tasks it means notifications,
 * which the next task reads.  Returns 1 if a task was resumed.
 */
int
task_ready(void)
{
	if (tk.state != TASK_WAITING)
		return 0;
	tk.state = TASK_RUNNING;
	task_enter();
	return 1;
}

/*
 * The loop's side of the clock: a task waiting past its deadline goes on
 * with its wait failed.  Returns when the loop must look again (the
 * deadline of the waiting task), or INT64_MAX.
 */
int64_t
task_expired(int64_t now_ms)
{
	if (tk.state != TASK_WAITING)
		return INT64_MAX;
	if (now_ms < tk.deadline_ms)
		return tk.deadline_ms;
	tk.expired = 1;
	tk.state = TASK_RUNNING;
	task_enter();
	return tk.state == TASK_WAITING ? tk.deadline_ms : INT64_MAX;
}

/* When the waiting task's wait ends (CLOCK_MONOTONIC ms), or INT64_MAX. */
int64_t
task_deadline(void)
{
	return tk.state == TASK_WAITING ? tk.deadline_ms : INT64_MAX;
}

/*
 * Between tasks: watches the database socket, if there is one, for input
 * only.
 */
void
task_idle_watch(void)
{
	int fd = tk.sock();

	if (tk.state == TASK_IDLE)
		task_watch(fd, fd < 0 ? 0 : EPOLLIN);
}
