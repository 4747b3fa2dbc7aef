/*
 * runner.h: the table of contents of runner/, the code that runs in the
 * child the supervisor forks for each run.  The supervisor fills a struct
 * run_spec, calls spawn_runner() and from then on only polls the result
 * pipe and reaps the pid; everything else here runs in the child, which
 * isolates itself (signals, session, descriptors, subreaper), runs the
 * target (a command or an HTTP request) under the run's timeout, kills
 * whatever the target left behind, writes exactly one result frame
 * (common/result.c) and _exit()s.  Nothing here touches a database, so the
 * whole of it is tested by tests/check_runner.c.
 *
 * Signals a runner understands, for the supervisor's benefit: SIGTERM stops
 * the run as a timeout does (SIGTERM to the target's tree, the kill grace,
 * SIGKILL) and still reports, as RESULT_ERROR "interrupted"; SIGKILL leaves
 * the target's main process to its parent-death signal (SIGKILL) but may
 * orphan its descendants, so a backstop should send SIGTERM first.  The
 * runner also gets SIGTERM by itself when the supervisor dies
 * (PR_SET_PDEATHSIG): see child.c for why a run does not outlive its
 * supervisor.
 */
#ifndef RUNNER_H
#define RUNNER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cronvisor.h"

enum run_target {
	RUN_TARGET_EXEC,  /* run a command */
	RUN_TARGET_HTTP,  /* make one HTTP request */
	RUN_TARGET_REDIS, /* one XADD, LPUSH or PUBLISH (redis.c) */
};

/* Resource limits of the target; 0 leaves the inherited limit. */
struct run_limits {
	int64_t cpu_seconds; /* RLIMIT_CPU: SIGXCPU, then SIGKILL 1 s later */
	int64_t memory_mb;   /* RLIMIT_AS: address space */
	int64_t nofile;      /* RLIMIT_NOFILE: open descriptors */
	int64_t nproc;       /* RLIMIT_NPROC: processes of the target's uid */
	int64_t fsize_mb;    /* RLIMIT_FSIZE: largest file it may write */
};

/*
 * One run, as the supervisor describes it.  Nothing is copied: the child
 * works on its copy of the supervisor's memory, so the pointers need only
 * be valid when spawn_runner() is called.
 */
struct run_spec {
	const char *run_id;     /* for log prefixes, e.g. sched-…-n5-rc0 */
	const char *schedule;   /* schedule name, for log prefixes */
	enum run_target target; /* which of the groups below counts */
	char *const *argv;      /* EXEC: NULL-terminated, argv[0] the file */
	char *const *env;       /* EXEC: "K=V", NULL-terminated; all it gets */
	const char *cwd;        /* EXEC: working directory, NULL: "/" */
	int run_as;             /* 1: switch to uid/gid (needs root) */
	uid_t uid;              /* user to run as (HTTP: before the request) */
	gid_t gid;              /* group to run as (no other groups) */
	const char *method;     /* HTTP: "GET", "POST", …; NULL: GET/POST */
	const char *url;        /* HTTP: http:// or https:// only */
	const char *const *headers; /* HTTP: "Name: value", NULL-terminated */
	const void *body;           /* HTTP: request body, NULL: none */
	size_t body_len;            /* HTTP: bytes in body */
	const char *proxy;          /* HTTP: proxy URL; NULL: none, ever */
	const char *allow_hosts;    /* HTTP: hostlist text; NULL, "": any */
	const char *deny_hosts;     /* HTTP: hostlist text, wins; NULL: none */
	const char *receiver_url; /* HTTP: a URL it may not reach, NULL: none */
	long max_redirects;       /* HTTP: redirects followed, each checked */
	const char *redis_command; /* REDIS: "xadd", "lpush", "publish" */
	const char *redis_key;     /* REDIS: the key or channel, as sent */
	int64_t redis_maxlen;      /* REDIS: XADD MAXLEN ~ */
	int redis_checked; /* REDIS: url is the schedule's own: host lists */
	const char *redis_default; /* REDIS: redis_url, which url may not
	                            * reach when checked; NULL: none */
	int64_t timeout;           /* seconds the target may take, >= 1 */
	int64_t kill_grace;        /* seconds from SIGTERM to SIGKILL, >= 0 */
	size_t output_tail;        /* output bytes kept, <= RESULT_OUTPUT_MAX */
	int64_t not_before_us;     /* CLOCK_REALTIME µs to start at, 0: now */
	struct run_limits limits;  /* EXEC: applied to the target only */
};

/* zygote.c: the runner helper's side (supervisor/helper.c: the other). */
#define ZYGOTE_FD      3             /* the helper's end of the socket */
#define ZYGOTE_MSG_MAX (1024 * 1024) /* largest spec the helper takes */
struct zygote_reply {                /* the helper's answer to one spec */
	int32_t pid;                 /* the runner, or 0 */
	int32_t err;                 /* errno if no runner was forked */
};
struct msghdr;
struct iovec;
void zygote_msg(struct msghdr *msg, struct iovec *iov, void *buf, size_t len,
    void *ctl, size_t ctllen);
int zygote_serve(void);

/* spec.c: an exec run's spec as bytes, for the helper. */
int spec_encode(const struct run_spec *spec, enum log_level level,
    unsigned char **buf, size_t *len);
int spec_decode(const unsigned char *buf, size_t len, struct run_spec *spec,
    enum log_level *level, char *err, size_t errlen);
void spec_free(struct run_spec *spec);

/* cgroup.c: a cgroup v2 per run, where the supervisor was given one. */
#define CGROUP_ROOT "/sys/fs/cgroup" /* where cgroup2 is mounted */
int cgroup_self_path(const char *text, char *path, size_t len);
int cgroup_has(const char *list, const char *name);
int cgroup_delegated(const char *dir);
int cgroup_setup_at(const char *root, const char *self, char *why, size_t len);
int cgroup_setup(const char *root);
int cgroup_enter_at(const char *root, const char *self, const char *run_id,
    const struct run_limits *l);
int cgroup_enter(
    const char *root, const char *run_id, const struct run_limits *l);
void cgroup_remove(const char *run_id);

/* child.c: the runner child, from fork to _exit. */
#define RUNNER_BATCH_MAX 256 /* runs one batch runner makes (batch.c) */
_Noreturn void child_main(
    const struct run_spec *spec, int result_fd, pid_t parent);
int child_isolate(int *fds, int n, pid_t parent, struct result *res);
const char *child_check(const struct run_spec *spec);
int child_drop(const struct run_spec *spec, pid_t parent, struct result *res);
int child_write(const struct run_spec *spec, int result_fd, struct result *res);
int child_signals(int sfd, int *alarm_seen, int *term, int *chld);
extern void (*child_http)(const struct run_spec *, int, struct result *);
extern void *(*child_redis_open)(const struct run_spec *, struct result *);
void *redis_target_open(const struct run_spec *spec, struct result *res);
void redis_target_run(
    void *conn, const struct run_spec *spec, struct result *res);
extern void (*child_redis_run)(
    void *conn, const struct run_spec *, struct result *);
int child_start(const struct run_spec *spec, int sfd, struct result *res);
int64_t child_now_us(void);
extern int child_signals_default;
void child_signals_defaults(void);

/*
 * A run with a start time: the runner sleeps until this many µs before
 * it, the target process watches the clock for the rest (child.c).
 */
#define RUNNER_SPIN_US 200

/* exec.c: an exec target, watched from the runner. */
void exec_run(const struct run_spec *spec, int sfd, struct result *res);

/* target.c: the target process, from fork to execve. */
struct target_error {
	int stage; /* TARGET_STAGE_* of target.c: what failed */
	int err;   /* its errno */
};
_Noreturn void target_main(
    const struct run_spec *spec, int outfd, int statusfd);
int target_switch(const struct run_spec *spec);
void target_describe(const struct run_spec *spec, const struct target_error *te,
    struct result *res);

/* http.c: an http target, done by libcurl in the runner. */
void http_run(const struct run_spec *spec, int sfd, struct result *res);

/*
 * batch.c: one runner for many HTTP runs (an execution's agent jobs of one
 * user), each with its own result pipe fds[i].
 */
_Noreturn void batch_main(
    const struct run_spec *const *specs, int *fds, int n, pid_t parent);

/* tree.c: every descendant of the runner, found through /proc. */
int tree_signal(pid_t pgid, int sig);
int tree_count(void);

/* tail.c: the last bytes of an unbounded stream. */
struct tail {
	char *buf;    /* cap bytes, a ring */
	size_t cap;   /* bytes kept at most */
	size_t head;  /* where the next byte goes */
	uint64_t len; /* bytes seen in all */
};
int tail_init(struct tail *t, size_t cap);
void tail_add(struct tail *t, const void *data, size_t len);
int tail_take(struct tail *t, struct result *res);
void tail_clear(struct tail *t);

#endif /* RUNNER_H */
