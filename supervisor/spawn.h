/*
 * spawn.h: the supervisor's side of starting a runner (spawn.c) and of
 * the runner helper (helper.c); runner/runner.h is the child's side.
 */
#ifndef SPAWN_H
#define SPAWN_H

#include <sys/types.h>

#include "runner.h"

/* helper.c: the runner helper, which forks the runners of exec runs. */
struct zygote_sent {        /* a run asked of the helper, its answer not read */
	int go;             /* the runner's go pipe, -1: not sent */
	unsigned gen;       /* the helper it went to */
	const char *run_id; /* for the log */
};
int zygote_start(void);
int zygote_send(
    const struct run_spec *spec, int result_wr, struct zygote_sent *z);
pid_t zygote_collect(struct zygote_sent *z, int give_up, int *pending);
void zygote_watch(int epfd, void *tag);
int zygote_reaped(pid_t pid, int wstatus);
void zygote_stop(void);

/* spawn.c: the supervisor's side. */
#define SPAWN_MAX      32     /* runs spawn_runners() starts at once */
#define SPAWN_REPLY_MS 2000   /* the helper's answer, at most */
struct spawn_ask {            /* a runner asked of the helper (spawn_ask()) */
	struct zygote_sent z; /* what was sent */
	int p[2];             /* the run's result pipe */
	pid_t parent;         /* the supervisor */
	int64_t sent_ms;      /* CLOCK_MONOTONIC ms it was sent */
};
int spawn_init(void);
pid_t spawn_runner(const struct run_spec *spec, int *result_fd);
void spawn_runners(const struct run_spec *const *specs, int n, pid_t *pids,
    int *result_fds, int *errs);
pid_t spawn_batch(const struct run_spec *const *specs, int n, int *result_fds);
int spawn_ask(const struct run_spec *spec, struct spawn_ask *a);
int spawn_answer(const struct run_spec *spec, struct spawn_ask *a, int give_up,
    pid_t *pid, int *result_fd, int *err);

#endif
