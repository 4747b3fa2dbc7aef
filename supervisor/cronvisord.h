/*
 * cronvisord.h: the table of contents of the supervisor.  Prototypes are
 * grouped under the file that defines them.
 */
#ifndef CRONVISORD_H
#define CRONVISORD_H

#include <sys/types.h>

#include <jansson.h>

#include "cronvisor.h"
#include "spawn.h"
#include "sql_queries.h"

struct db;
struct db_rows;

/* outcome.c: what a reaped runner's run amounts to. */
enum reap_cause {
	REAP_EXITED,   /* the runner ended by itself */
	REAP_DEADLINE, /* the supervisor killed it at its backstop deadline */
	REAP_SHUTDOWN, /* the supervisor killed it while shutting down */
	REAP_LOST,     /* it stopped it: a peer declared the run lost */
	REAP_FENCED,   /* it stopped it: its lease could not be renewed */
	REAP_BATCH,    /* it stopped its batch runner for another of its runs */
};
enum frame_state {
	FRAME_NONE, /* no byte of a result arrived */
	FRAME_OK,   /* one well-formed result arrived */
	FRAME_BAD,  /* a malformed or truncated result arrived */
};
struct verdict {
	enum run_status status; /* what the run's row records */
	int retryable;          /* 0: the retry budget is spent at once */
	char error[CV_ERRLEN];  /* why it did not succeed, or "" */
};
void outcome_decide(int wstatus, enum reap_cause cause, enum frame_state fs,
    const struct result *res, const char *frame_err, struct verdict *out);

/* A schedules row, as sched_load() reads it. */
struct sched {
	char id[40];                   /* UUID */
	char id8[9];                   /* its first eight hex digits */
	char *name;                    /* for logs and events */
	struct timing tm;              /* when it fires */
	struct retry_policy pol;       /* repeats, retries, backoff */
	struct catch_up_policy cu;     /* missed slots */
	enum schedule_overlap overlap; /* slots due while a run runs */
	int anchor_completion; /* interval counted from each run's end */
	int64_t jitter;        /* seconds of deterministic start delay */
	int64_t timeout;       /* seconds a run may take */
	int active;            /* status is 'active' */
	int64_t repeat;        /* current_repeat: successful runs */
	int64_t retry;         /* current_retry */
	int retry_pending;     /* a retry chain waits (retries rows) or runs */
	int64_t next_run_at;   /* when something is due, CV_NEVER: NULL */
	int64_t next_run_us;   /* the same to the microsecond, or 0 */
	int64_t next_slot_at;  /* the slot it belongs to */
	int64_t running;       /* runs in flight */
	int64_t slot_seq;      /* repeat number of the next slot run */
	int deleted;           /* deleted_at is set: it goes when idle */
	char *target;          /* target JSON, "" for the receiver */
	char *limits;          /* limits JSON */
	char *payload;         /* trigger_payload JSON, or a trigger's */
	char *workflow_id;     /* "" for none */
	char *trigger_node_id; /* "" for none */
	char *owner;           /* whose: its events, its run's user */
	char *organization_id; /* seed 002's, "" for none */
	char *environment_id;  /* seed 002's, "" for none */
};

/* The strings and vectors a run_spec points to. */
struct spec_buf {
	char **argv;    /* EXEC: the command */
	char **env;     /* EXEC: its environment */
	char **headers; /* HTTP: request headers */
	char *body;     /* HTTP: request body */
	char *cwd;      /* EXEC: working directory */
	char *url;      /* HTTP, REDIS: where to */
	char *method;   /* HTTP: how; REDIS: the command */
	char *key;      /* REDIS: the key as sent */
	char *aux; /* REDIS: redis_url, which a checked url may not reach */
};

enum job_state {
	JOB_STARTING, /* claimed, runner not forked yet */
	JOB_RUNNING,  /* its runner works: pipe open, not reaped */
	JOB_ENDED,    /* reaped and the pipe at EOF: result to write */
	JOB_DONE,     /* its result is in the database */
};

/* What a run is (runs.kind, sql/013_fanout.sql). */
enum run_kind {
	KIND_SLOT,   /* a slot's attempt, or a trigger-now run */
	KIND_FANOUT, /* a fan-out slot's attempt: it expands, then waits */
	KIND_JOB,    /* an attempt of one of a fan-out's jobs */
};

/* One run this supervisor claimed. */
struct job {
	enum job_state state;        /* where it is, moved by job_state() */
	char run_id[RUN_ID_MAX];     /* sched-<id8>-n<repeat>-rc<attempt> */
	char schedule_id[40];        /* its schedule */
	char *name;                  /* the schedule's name, for logs */
	int64_t slot;                /* the slot it runs */
	int64_t repeat;              /* n */
	int64_t attempt;             /* rc */
	int triggered;               /* trigger-now: run id sched-<id8>-t<n> */
	enum run_kind kind;          /* what it is */
	char *fan_target;            /* KIND_FANOUT: the target to expand */
	int64_t spent;               /* KIND_JOB: its job's failures so far */
	int own_retry;               /* KIND_JOB: a pipeline step's retry: */
	struct retry_policy retry;   /* its retry, delay in ms (-1: the */
	                             /* schedule's) */
	struct spec_buf sb;          /* what spec points to */
	struct run_spec spec;        /* what the runner runs */
	char spawn_error[CV_ERRLEN]; /* non-empty: it cannot start */
	pid_t pid;                   /* the runner, 0 before the fork */
	int batch;                   /* its runner makes other runs too */
	int fd;                      /* its result pipe, -1 when closed */
	int reaped;                  /* waitpid() returned it */
	int wstatus;                 /* what waitpid() said */
	enum reap_cause cause;       /* what the supervisor did to it */
	int64_t deadline_ms;         /* backstop, CLOCK_MONOTONIC ms */
	struct result_reader rd;     /* its result frame, arriving */
	struct result res;           /* the frame, decoded */
	enum frame_state fs;         /* how the frame went */
	char frame_err[CV_ERRLEN];   /* why it was bad */
	struct verdict verdict;      /* the run's status, once ENDED */
	int64_t ended_us;            /* when it ended, CLOCK_REALTIME us */
	int64_t ended_ms;            /* and CLOCK_MONOTONIC ms */
	int64_t seen;                /* reconcile() round that found its row */
	int asking;                  /* its runner was asked of the helper */
	struct spawn_ask ask;        /* how, while asking */
	struct job *ask_next;        /* the next job asking */
	int agent;                   /* an agent target: spec after insert */
	char agent_env[16];          /* its environment */
	char *result;                /* an agent's answer or report (JSON) */
	int adopted;                 /* taken back from waiting: no runner */
	int probe;                   /* an agent's health probe (health.c) */
	char *owner;                 /* probe: the agent's owner */
	char *probe_url;             /* probe: what it GETs */
	struct job *next;            /* list of jobs */
};

/* The supervisor's state: its one global. */
struct supervisor {
	struct config cf;        /* the configuration in force */
	const char *config_path; /* where it came from */
	int debug;               /* 1: -d, passed on to the events worker */
	struct db *db;           /* the connection, also LISTENing */
	int64_t id;              /* our supervisors row: the lease */
	int epfd;                /* the event loop */
	int sigfd;               /* SIGCHLD, SIGTERM, SIGINT, SIGHUP */
	int timerfd;             /* the earliest next_run_at */
	struct job *jobs;        /* runs claimed and not yet written */
	struct job *fresh;       /* claimed by a task, runners not forked */
	struct job *expanding;   /* a claim's, while its fan-outs expand */
	int nfresh;              /* entries in fresh */
	int want_claim;          /* claim at the next turn */
	int backlog;             /* the last claim took all it could */
	int idle_claim;          /* the last claim took nothing */
	int want_db;             /* the socket had input between tasks */
	int want_reload;         /* SIGHUP came: reload between tasks */
	int stopping;            /* a stop signal came: claim no more */
	int64_t stop_ms;         /* when running runs get interrupted */
	int told;                /* 1: they were, once stop_ms had come */
	int64_t heartbeat_ms;    /* next heartbeat, CLOCK_MONOTONIC ms */
	int64_t poll_ms;         /* next claim whatever the timer says */
	int retired;             /* our supervisors row was retired */
	int db_down;             /* the connection is lost */
	int64_t db_retry_ms;     /* next reconnect (or work after a failure) */
	int64_t db_backoff_ms;   /* and the wait after it */
	int64_t db_lost_ms;      /* when the database went away, or 0 */
	int db_failing;          /* a task failed since the last success */
	int task_failed;         /* the task under way had a failure */
	char db_last[CV_ERRLEN]; /* the failure last logged */
	int64_t lease_ok_ms;     /* when the last renewed heartbeat was sent */
	int fenced;              /* runs stopped: the lease was not renewed */
	int64_t probe_ms;        /* next look for due health probes, or 0 */
	int64_t report_ms;       /* claim the gathered reports then, or 0 */
};
extern struct supervisor sv;

/* cronvisord.c */
void db_failed(const char *err);

/* task.c: the database work, one task at a time, off the loop. */
#define TASK_TAG ((void *)3) /* epoll data of the database socket */
void task_init(int epfd, int (*sock)(void));
int task_run(void (*fn)(void *), void *arg);
int task_busy(void);
int task_wait(void *arg, int fd, int events, int64_t timeout_ms);
int task_ready(void);
int64_t task_expired(int64_t now_ms);
int64_t task_deadline(void);
void task_idle_watch(void);

/*
 * decide.c: the scheduling decisions, pure functions of a schedule's row
 * and an event; claim.c and finish.c apply what they say.
 */
enum slot_act {
	ACT_FIRE,       /* start a run of the slot */
	ACT_SKIP,       /* record it skipped: a run of it is in flight */
	ACT_SKIP_OWNER, /* record it skipped: its owner is at its limit */
	ACT_BUFFER,     /* keep it for the end of the run in flight */
	ACT_HOLD,       /* keep it pending, and stop the plan there */
	ACT_WAIT_OWNER, /* keep it due a little later, and stop: owner full */
};
struct claim_walk {       /* one schedule's plan, as a claim goes through it */
	int64_t fired;    /* runs this claim started for it */
	int64_t buffered; /* the slot kept for a run's end, or CV_NEVER */
	int64_t held;     /* the first slot kept pending, or CV_NEVER */
};
struct claim_room {
	int64_t runs;  /* runs the claim may still start */
	int64_t owner; /* runs the schedule's owner may still start */
};
struct claim_next {        /* what a schedule waits for after a claim */
	int64_t next_run;  /* next_run_at, CV_NEVER: NULL */
	int64_t next_slot; /* next_slot_at, CV_NEVER: NULL */
};
struct run_end {                /* the end of a slot run, as decided */
	int64_t slot;           /* the slot it ran */
	int64_t repeat;         /* n */
	int64_t attempt;        /* rc */
	enum run_status status; /* its verdict */
	int retryable;          /* 0: the retry budget is spent at once */
	const char *error;      /* why it did not succeed, or "" */
	int64_t retry_after;    /* s: no retry sooner (HTTP Retry-After) */
};
struct finish_view {    /* what finish.c read for a retry's end */
	int64_t last;   /* the latest slot with a row, or CV_NEVER */
	int64_t others; /* retries of other slots waiting or running */
};
struct next_state {           /* what the schedule becomes */
	const char *status;   /* active, done or dead */
	int64_t repeat;       /* current_repeat */
	int64_t retry;        /* current_retry */
	int retry_pending;    /* a retry chain waits or runs */
	int64_t next_slot;    /* next_slot_at, CV_NEVER: NULL */
	int64_t next_run;     /* next_run_at, CV_NEVER: NULL */
	int counts_run;       /* run_count + */
	int counts_error;     /* error_count + */
	const char *error;    /* last_error, NULL: unchanged */
	int64_t delay;        /* >= 0: next_run_at is now() + delay */
	int slot_too;         /* with delay: next_slot_at too */
	int queue;            /* a retries row: retry_slot again */
	int64_t retry_slot;   /* its slot */
	int64_t retry_repeat; /* its repeat number (attempt: retry) */
	int64_t retry_delay;  /* seconds from now until it is due */
	int from_retries;     /* next_run_at: the earliest retries row */
};
void decide_walk_init(struct claim_walk *w);
enum slot_act decide_slot(const struct sched *s, struct claim_walk *w,
    int64_t slot, const struct claim_room *room);
int64_t decide_start(const struct sched *s, int64_t slot);
void decide_claim_end(const struct sched *s, const struct claim_walk *w,
    const struct slot_plan *p, struct claim_next *out);
enum slot_act decide_retry(const struct claim_room *room);
void decide_finish(const struct sched *s, const struct run_end *e,
    const struct finish_view *v, struct next_state *ns);

/* agent.c: agent targets (docs/agents.md). */
#define AGENT_TOKEN_LEN 64 /* hex characters of a callback token */
struct db_rows;
int agent_token(char *buf, size_t len);
int agent_auth(struct spec_buf *sb, size_t *n, const char *auth,
    const char *username, const char *secret, const char *body);
void agent_spec(struct job *j, const struct db_rows *rows, int row,
    const char *token, const struct config *cf);
void agent_outcome(struct job *j);
void agent_adopted(struct job *j, const struct db_rows *rows, int row,
    const struct config *cf);

/* health.c: the agents' health probes (docs/agents.md, "Health"). */
int health_claim(struct db *db, const struct config *cf, int64_t sv_id,
    int limit, struct job **jobs, int64_t *next_ms, char *err, size_t errlen);
int health_write(
    struct db *db, struct job *const *v, size_t n, char *err, size_t errlen);

/* batch.c */
json_t *batch_int(int64_t v, int null);
struct db_rows *batch_query(struct db *db, const char *sql, const char *first,
    json_t *rows, char *err, size_t errlen);

/* claim.c: due schedules into runs. */
int64_t owner_max(const struct config *cf);
void job_retry(struct job *j, const char *text);
/* events.c: the events worker, its supervisor's side and its main. */
void events_start(const char *config_path, int debug, int64_t now_ms);
int64_t events_due(void);
int events_reaped(pid_t pid, int st);
void events_restart(void);
void events_stop(void);
int events_main(int argc, char **argv, void (*usage)(FILE *));
/* notify.c: failure notifications, delivered by the events worker. */
int notify_round(
    struct db *db, const struct config *cf, char *err, size_t errlen);

int claim_due(struct db *db, const struct config *cf, int64_t sv_id, int limit,
    struct job **jobs, char *err, size_t errlen);
int claim_drops_more(void);

/* fanout.c: fan-out slots, their expansion and their jobs' ends. */
enum run_kind run_kind_parse(const char *s);
int fanout_expand(struct db *db, const struct config *cf, int64_t lease,
    struct job **jobs, int (*between)(void), char *err, size_t errlen);
int fanout_settle(
    struct db *db, json_t *xs, json_t *failed, char *err, size_t errlen);
int fanout_settle_rows(
    struct db *db, const struct db_rows *rows, char *err, size_t errlen);
json_t *fanout_next(const struct job *j, const struct retry_policy *pol);

/* pipeline.c: pipelines' contexts, decided as their steps end. */
json_t *pipeline_plan_steps(const struct dag *g, json_t *steps);
int pipeline_advance(struct db *db, json_t *ctxs, char *err, size_t errlen);
int pipeline_advance_rows(
    struct db *db, const struct db_rows *rows, char *err, size_t errlen);
int pipeline_started(void);

/* finish.c: a run's result and its schedule's next state. */
int finish_run_in(struct db *db, int64_t lease, const struct job *j, int bare,
    char *err, size_t errlen);
int finish_runs_in(struct db *db, int64_t lease, struct job *const *v, size_t n,
    char *err, size_t errlen);
int finish_run(struct db *db, int64_t lease, const struct job *j, int bare,
    char *err, size_t errlen);
void finish_text(char *s, size_t len);

/* job.c: a run's life in the supervisor. */
void job_state(struct job *j, enum job_state to);
void job_free(struct job *j);
void job_free_list(struct job *j);
void job_start(struct job *const *v, int n, int epfd, int64_t kill_grace);
int64_t job_answers(int epfd, int64_t now_ms, int64_t kill_grace);
int64_t job_asking_due(void);
void job_readable(struct job *j, int epfd);
void job_reaped(struct job *j, int st);
int job_batch_reaped(pid_t pid);
int64_t job_deadline(struct job *j, int64_t now_ms, int64_t kill_grace);
void job_interrupt(
    struct job *j, enum reap_cause why, int64_t now_ms, int64_t kill_grace);

/* peer.c: the other supervisors. */
int64_t peer_register(
    struct db *db, const char *name, char *err, size_t errlen);
int peer_heartbeat(struct db *db, int64_t id, char *err, size_t errlen);
int peer_stop(struct db *db, int64_t id, char *err, size_t errlen);
int peer_reap_lost(
    struct db *db, int64_t self, int64_t lease, char *err, size_t errlen);
int peer_reap_orphans(struct db *db, int64_t self,
    int (*ours)(const char *, void *), void *arg, char *err, size_t errlen);

/* prune.c: history retention. */
void prune_note(const char *id);
int prune_run(struct db *db, char *err, size_t errlen);
int prune_deleted(struct db *db, char *err, size_t errlen);
int prune_keys(struct db *db, char *err, size_t errlen);

/*
 * sched.c: schedules rows and the runs they make.  A statement selects
 * them with {{sched}} (sql/queries/sched.sql), enum sched_col the
 * positions.
 */
int sched_load(const struct db_rows *rows, int row, struct sched *s, char *err,
    size_t errlen);
void sched_clear(struct sched *s);
int sched_spec(const struct sched *s, const struct job *j,
    const struct config *cf, struct spec_buf *sb, struct run_spec *spec,
    char *err, size_t errlen);
int sched_set_payload(struct sched *s, const char *payload);
void sched_spec_clear(struct spec_buf *sb);
int sched_agent_env(const struct sched *s, char *env, size_t len);
int sched_fanout(const char *target);
const char *sched_agent(const struct sched *s, char *buf, size_t len);
int sched_http_common(const char *owner, const struct config *cf,
    struct spec_buf *sb, struct run_spec *spec, char *err, size_t errlen);
int sched_header(
    struct spec_buf *sb, size_t *n, const char *name, const char *value);

#endif
