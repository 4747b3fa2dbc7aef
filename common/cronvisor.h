/*
 * cronvisor.h: the table of contents of common/, the code every cronvisor
 * process shares.  Prototypes are grouped under the file that defines them.
 * Everything here is a pure function or owns its state explicitly, so it can
 * be tested without a database; nothing here forks, sleeps or touches a
 * network.
 *
 * Time is int64_t seconds since the Unix epoch throughout.  A "wall" time is
 * the same count read on a zone's clock: the seconds from 1970-01-01 00:00
 * local time to the local date and time, so that gmtime_r() and timegm() turn
 * wall times into broken-down local dates and back without any zone.
 * The instants a user gives (a once schedule's `at`, `start_at`) keep their
 * milliseconds: the documents hold them in epoch ms, and a timing carries
 * them as whole seconds plus `ms`, the part after the second that every
 * slot of the schedule shares (slot_set_ms(), slot_ms()), so that the slot
 * arithmetic stays in seconds and only the edges (the database, the timer,
 * the runner's wait) add the milliseconds.
 */
#ifndef CRONVISOR_H
#define CRONVISOR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define CV_ERRLEN 256 /* size of the err buffers the functions below fill */

/* The instants cronvisor works with: years 1 to 9999. */
#define CV_TIME_MIN (-62135596800LL) /* 0001-01-01T00:00:00Z */
#define CV_TIME_MAX 253402300799LL   /* 9999-12-31T23:59:59Z */
#define CV_NEVER    INT64_MAX        /* "no such instant" */

#define CV_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* clock.c: the clocks (monotonic: waits and durations; real: instants). */
int64_t clock_ms(void);
int64_t clock_us(void);
int64_t clock_real_us(void);

/* log.c: the OpenBSD-shaped logger; everything goes to stderr. */
enum log_level {
	LOG_LEVEL_WARN,  /* warnings and errors only */
	LOG_LEVEL_INFO,  /* the default */
	LOG_LEVEL_DEBUG, /* everything */
};
void log_init(const char *progname, enum log_level level);
enum log_level log_getlevel(void);
void log_setlevel(enum log_level level);
int log_level_parse(const char *name, enum log_level *out);
const char *log_level_name(enum log_level level);
void log_prefix(const char *fmt, ...) CV_PRINTF(1, 2);
void log_warn(const char *fmt, ...) CV_PRINTF(1, 2);
void log_warnx(const char *fmt, ...) CV_PRINTF(1, 2);
void log_info(const char *fmt, ...) CV_PRINTF(1, 2);
void log_debug(const char *fmt, ...) CV_PRINTF(1, 2);
_Noreturn void fatal(const char *fmt, ...) CV_PRINTF(1, 2);
_Noreturn void fatalx(const char *fmt, ...) CV_PRINTF(1, 2);
int log_errbuf(char *err, size_t errlen, const char *fmt, ...) CV_PRINTF(3, 4);

/* text.c: UTF-8 as PostgreSQL takes it. */
size_t utf8_len(const unsigned char *p, size_t left);
int utf8_valid(const char *s, size_t len);
size_t utf8_chars(const char *s);
size_t text_escape(const char *s, const char *keep, char *out, size_t outlen);

/* io.c: EINTR and short-transfer loops, in one place. */
ssize_t io_read(int fd, void *buf, size_t len);
int io_write_all(int fd, const void *buf, size_t len);
int io_read_file(
    const char *path, size_t max, unsigned char **buf, size_t *len);
void io_fix_stdio(void);

/* civil.c: the Gregorian calendar on day numbers (days since 1970-01-01). */
int64_t civil_fdiv(int64_t a, int64_t b);
int64_t civil_fmod(int64_t a, int64_t b);
int civil_is_leap(int64_t y);
int civil_month_days(int64_t y, int m);
int64_t civil_days(int64_t y, int m, int d);
void civil_date(int64_t days, int64_t *y, int *m, int *d);
int civil_weekday(int64_t days);

/* tz.c: IANA time zones read from the system TZif files. */
struct tz;
struct tz_span {
	int64_t start;       /* first instant of the span; INT64_MIN: none */
	int64_t end;         /* first instant after it; INT64_MAX: none */
	int32_t offset;      /* UTC offset in seconds throughout the span */
	int32_t prev_offset; /* offset just before start (= offset if none) */
	int32_t next_offset; /* offset from end on (= offset if none) */
	int isdst;           /* DST flag at the instant asked about */
	char abbr[16];       /* abbreviation at the instant asked about */
};
const struct tz *tz_get(const char *name, char *err, size_t errlen);
struct tz *tz_parse(const char *name, const unsigned char *buf, size_t len,
    char *err, size_t errlen);
void tz_free(struct tz *tz);
void tz_cache_clear(void);
const char *tz_name(const struct tz *tz);
void tz_span_at(const struct tz *tz, int64_t t, struct tz_span *out);
int32_t tz_offset_at(const struct tz *tz, int64_t t);
int tz_local_to_utc(const struct tz *tz, int64_t wall, int64_t utc[2]);

/* cron.c: cron expressions exactly as cronie parses them. */
struct cron {
	uint64_t minute; /* bit m: minute m matches, 0-59 */
	uint32_t hour;   /* bit h: hour h matches, 0-23 */
	uint32_t dom;    /* bit d: day of month d matches, 1-31 */
	uint16_t month;  /* bit m: month m matches, 1-12 */
	uint8_t dow;     /* bit d: weekday d matches, 0-6, Sunday = 0 */
	unsigned flags;  /* CRON_* below */
	char text[128];  /* the expression as given, for messages */
};
#define CRON_MIN_STAR  0x01 /* the minute field begins with '*' */
#define CRON_HOUR_STAR 0x02 /* the hour field begins with '*' */
#define CRON_DOM_STAR  0x04 /* the day-of-month field begins with '*' */
#define CRON_DOW_STAR  0x08 /* the day-of-week field begins with '*' */
int cron_parse(const char *expr, struct cron *out, char *err, size_t errlen);
int cron_is_wildcard(const struct cron *c);
int cron_day_matches(const struct cron *c, int year, int month, int mday);
int64_t cron_next_wall(const struct cron *c, int64_t from, int64_t limit);

/* slot.c: next fire instants, DST rules, jitter and missed-slot policy. */
enum sched_kind {
	SCHED_KIND_INTERVAL, /* every N seconds from an anchor */
	SCHED_KIND_CRON,     /* a cron expression in a zone */
	SCHED_KIND_ONCE,     /* one instant */
};
enum dst_gap {
	DST_GAP_AUTO,  /* cronie: shift fixed-time jobs, skip wildcard jobs */
	DST_GAP_SHIFT, /* a match inside a gap fires at the transition */
	DST_GAP_SKIP,  /* a match inside a gap does not fire */
};
enum dst_fold {
	DST_FOLD_AUTO,  /* cronie: first for fixed-time, both for wildcard */
	DST_FOLD_FIRST, /* a repeated wall time fires at its first pass only */
	DST_FOLD_BOTH,  /* a repeated wall time fires in both passes */
};
struct timing {
	enum sched_kind kind; /* which of the fields below count */
	int64_t interval;     /* INTERVAL: seconds between slots, > 0 */
	int64_t start_at;     /* INTERVAL: anchor; all: no slot before it */
	int64_t at;           /* ONCE: the instant */
	int ms;               /* ms after each slot's second (slot_set_ms()) */
	struct cron cron;     /* CRON: the expression */
	const struct tz *tz;  /* CRON and previews: the zone (NULL = UTC) */
	enum dst_gap gap;     /* CRON: spring-forward rule */
	enum dst_fold fold;   /* CRON: fall-back rule */
};
enum slot_note {
	SLOT_NOTE_NONE,       /* an ordinary slot */
	SLOT_NOTE_GAP_SHIFT,  /* wall time did not exist: moved to transition */
	SLOT_NOTE_FOLD_ONLY,  /* repeated wall time: fires at first pass only */
	SLOT_NOTE_FOLD_FIRST, /* repeated wall time: first of two fires */
	SLOT_NOTE_FOLD_SECOND, /* repeated wall time: second of two fires */
};
struct slot {
	int64_t at;          /* the fire instant */
	int64_t wall;        /* the matching wall time (CRON), else at+offset */
	enum slot_note note; /* what a DST rule did to it */
};
enum catch_up {
	CATCH_UP_LATEST, /* fire the most recent missed slot once */
	CATCH_UP_ALL,    /* fire every missed slot, up to a maximum */
	CATCH_UP_NONE,   /* fire none of them */
};
struct catch_up_policy {
	enum catch_up mode; /* what to do with missed slots */
	int64_t max_runs;   /* ALL: at most this many, >= 1 */
	int64_t deadline;   /* starting deadline in seconds, -1: none */
};
#define SLOT_PLAN_MAX 1000 /* most slots one plan fires */
struct slot_plan {
	int64_t fire[SLOT_PLAN_MAX]; /* slots to run now, oldest first */
	int nfire;                   /* entries in fire */
	int64_t missed;              /* slots dropped by the policy */
	int64_t missed_first;        /* oldest dropped slot, if missed > 0 */
	int64_t missed_last;         /* newest dropped slot, if missed > 0 */
	int64_t expired;             /* slots past the starting deadline */
	int64_t expired_first;       /* oldest expired slot, if expired > 0 */
	int64_t expired_last;        /* newest expired slot, if expired > 0 */
	int64_t next;                /* first slot after now, or CV_NEVER */
	int exact;                   /* 0: missed is a lower bound (huge gap) */
};
void slot_set_ms(struct timing *tm, int64_t at_ms, int64_t start_ms);
int64_t slot_ms(const struct timing *tm, int64_t slot);
int slot_next(const struct timing *tm, int64_t after, struct slot *out);
int64_t slot_jitter(
    const char *id, int64_t slot, int64_t next_slot, int64_t jitter);
int slot_plan(const struct timing *tm, const struct catch_up_policy *pol,
    int64_t due, int64_t now, struct slot_plan *out);
const char *slot_note_text(enum slot_note note);

/* retry.c: the repeat/retry state machine of seed 003. */
enum outcome {
	OUTCOME_SUCCESS,     /* the run did what it should */
	OUTCOME_FAILURE,     /* it ran and failed */
	OUTCOME_TIMEOUT,     /* it ran past its timeout and was killed */
	OUTCOME_LOST,        /* its supervisor vanished; nobody knows */
	OUTCOME_SKIPPED,     /* the slot did not run (overlap) */
	OUTCOME_INTERRUPTED, /* stopped by a supervisor shutdown: run again */
};
enum backoff {
	BACKOFF_EXPONENTIAL, /* d * 2^(rc-1), capped at 10 d */
	BACKOFF_LINEAR,      /* d * rc, capped at 10 d */
	BACKOFF_FIXED,       /* d */
};
enum step {
	STEP_NEXT,  /* go on to the next slot */
	STEP_RETRY, /* run the same slot again after a delay */
	STEP_DONE,  /* the repeat count is reached: status done */
	STEP_DEAD,  /* the retries are exhausted: status dead */
};
struct retry_policy {
	int64_t total_repeats; /* successful runs wanted; 0 = forever */
	int64_t max_retries;   /* retries per repeat, >= 0 */
	enum backoff backoff;  /* how the retry delay grows */
	int64_t delay;         /* base retry delay in seconds, > 0 */
};
struct transition {
	enum step step;   /* what happens next */
	int64_t repeat;   /* repeat number n of the next run */
	int64_t retry;    /* retry count rc of the next run */
	int64_t delay;    /* STEP_RETRY: seconds until the retry */
	int counts_run;   /* 1: add one to run_count */
	int counts_error; /* 1: add one to error_count */
};
void retry_next(const struct retry_policy *pol, int64_t repeat, int64_t retry,
    enum outcome outcome, int retryable, struct transition *out);
int64_t retry_backoff(const struct retry_policy *pol, int64_t rc);
const char *retry_backoff_name(enum backoff b);
int retry_backoff_parse(const char *name, enum backoff *out);

/* run.c: run statuses, what each means to the state machine, run ids. */
enum run_status {
	RUN_RUNNING,        /* claimed, its runner is working */
	RUN_SUCCEEDED,      /* the target succeeded */
	RUN_FAILED,         /* the target failed */
	RUN_TIMED_OUT,      /* killed at its timeout */
	RUN_LOST,           /* its supervisor vanished while it ran */
	RUN_INTERRUPTED,    /* killed by a supervisor shutdown */
	RUN_CRASHED,        /* the runner died without a proper result */
	RUN_PROTOCOL_ERROR, /* the runner's result frame was malformed */
	RUN_SKIPPED,        /* not run: the previous run still ran */
	RUN_MISSED,         /* not run: dropped by the catch-up policy */
	RUN_EXPIRED,        /* not run: past its starting deadline */
	RUN_WAITING,        /* an agent accepted it (202) and will report */
};
#define RUN_ID_MAX 64 /* room for any run id, NUL included */
const char *run_status_name(enum run_status s);
int run_status_parse(const char *name, enum run_status *out);
enum outcome run_status_outcome(enum run_status s);
int run_id(char *buf, size_t len, const char *schedule_id, int64_t repeat,
    int64_t retry);

/* result.c: the runner's result frame, a length-prefixed msgpack map. */
enum result_status {
	RESULT_OK,      /* the target succeeded */
	RESULT_FAILED,  /* it ran and failed (exit code, signal, HTTP) */
	RESULT_TIMEOUT, /* it was killed at its timeout */
	RESULT_ERROR,   /* the runner could not run it at all */
};
struct result {
	enum result_status status; /* what happened */
	int64_t exit_code;         /* -1: none (killed, or not a command) */
	int64_t signal;            /* signal that ended it, 0: none */
	int64_t http_status;       /* HTTP status, 0: none */
	int64_t duration_us;       /* wall time the target took */
	int64_t cpu_user_us;       /* user CPU of the target's processes */
	int64_t cpu_sys_us;        /* system CPU of the target's processes */
	int64_t max_rss_kb;        /* peak resident memory, KiB */
	char *output;              /* tail of the output, may hold NULs */
	size_t output_len;         /* bytes in output */
	char *error;               /* error text, NUL-terminated, or NULL */
	int retryable;             /* 0: a retry cannot help */
	int64_t retry_after;       /* HTTP Retry-After, seconds; 0: none */
};
#define RESULT_FRAME_MAX  (256 * 1024) /* largest payload accepted */
#define RESULT_OUTPUT_MAX (64 * 1024)  /* longest output tail sent */
#define RESULT_ERROR_MAX  4096         /* longest error text sent */
enum result_reader_state {
	RESULT_READER_HEADER,  /* reading the 4-byte length */
	RESULT_READER_PAYLOAD, /* reading the payload */
	RESULT_READER_DONE,    /* one frame decoded */
	RESULT_READER_FAILED,  /* a protocol error was seen */
};
struct result_reader {
	enum result_reader_state state; /* where in the frame we are */
	unsigned char hdr[4];           /* length prefix, big-endian */
	size_t hdrlen;                  /* bytes of hdr read */
	unsigned char *buf;             /* payload being read */
	size_t need;                    /* payload length */
	size_t len;                     /* payload bytes read */
};
void result_init(struct result *r);
void result_clear(struct result *r);
const char *result_status_name(enum result_status s);
int result_encode(const struct result *r, unsigned char **buf, size_t *len);
const char *result_check_msgpack(
    const unsigned char *p, size_t len, size_t *end);
int result_decode(const unsigned char *payload, size_t len, struct result *out,
    char *err, size_t errlen);
void result_reader_init(struct result_reader *rd);
void result_reader_clear(struct result_reader *rd);
int result_reader_feed(struct result_reader *rd, const unsigned char *data,
    size_t len, size_t *used, struct result *out, char *err, size_t errlen);
int result_reader_eof(struct result_reader *rd, char *err, size_t errlen);

/* runuser.c: the Unix user of an owner's runs. */
#define RUNUSER_NAME_MAX 32 /* bytes of a user name */
int runuser_check(const char *v, int pairs, char *why, size_t whylen);
const char *runuser_for(const char *users, const char *def, const char *owner,
    char *buf, size_t len);

/* hostlist.c: allow and deny lists of HTTP hosts, names and CIDR blocks. */
struct hostlist_entry;
struct hostlist {
	struct hostlist_entry *e; /* the elements, in the order written */
	size_t n;                 /* how many; 0: the empty list */
};
enum hostlist_verdict {
	HOSTLIST_OK,          /* neither denied nor outside the allow list */
	HOSTLIST_DENIED,      /* the host or the address is on the deny list */
	HOSTLIST_NOT_ALLOWED, /* an allow list is set and does not have it */
};
int hostlist_parse(
    struct hostlist *hl, const char *text, char *err, size_t errlen);
void hostlist_clear(struct hostlist *hl);
int hostlist_match(const struct hostlist *hl, const char *host, const char *ip);
enum hostlist_verdict hostlist_check(const struct hostlist *allow,
    const struct hostlist *deny, const char *host, const char *ip);
int hostlist_url_host(const char *url, char *host, size_t len);
int hostlist_canon(const char *host, char *out, size_t len);
int hostlist_url_canon(const char *url, char *out, size_t len);
const char *hostlist_verdict_text(enum hostlist_verdict v);

/* receiver.c: the receiver's URL kept from tenants, and its signatures. */
struct receiver_url {
	char host[256];  /* one spelling per address (receiver.c) */
	int port;        /* the scheme's when none is written */
	char path[1024]; /* decoded, dot segments removed, "/" at least */
};
#define RECEIVER_SIG_LEN 96 /* "t=<time>,v1=<64 hex>" and its NUL */
int receiver_url_parse(const char *url, struct receiver_url *u);
int receiver_url_reaches(const struct receiver_url *r,
    const struct receiver_url *u, const char *const *r_ips, const char *ip);
int receiver_reaches(const char *receiver, const char *url);
int receiver_sign(const char *secret, int64_t t, const char *body, size_t len,
    char *out, size_t outlen);

/* config.c: /etc/cronvisor/cronvisor.conf and its environment overrides. */
#define CONFIG_PATH "/etc/cronvisor/cronvisor.conf"
struct config {
	char *database_url;     /* libpq conninfo or URI */
	char *redis_url;        /* redis target default server */
	char *redis_key_prefix; /* before an owner's keys on redis_url */
	char *events_stream;    /* Redis stream of the events, "" = none */
	int64_t events_stream_maxlen;   /* its MAXLEN ~ */
	int64_t events_retention_hours; /* the database keeps an event */
	char *smtp_url;                 /* e-mail notifications, "" = none */
	char *smtp_from;                /* their sender */
	int64_t notify_timeout_seconds; /* one delivery at most */
	char *receiver_url;             /* where target-less schedules POST */
	char *receiver_secret;    /* signs the receiver's events, "" = no */
	char *agent_callback_url; /* the API as agents reach it, "" = none */
	int64_t max_concurrent_requests; /* agent requests in flight, all */
	char *datasource_role;           /* data-source queries run as it */
	int64_t datasource_row_limit;    /* rows a string expands to at most */
	int64_t datasource_timeout_ms;   /* a data-source query at most */
	int64_t fanout_batch_size;       /* batchSize's default */
	int64_t fanout_stagger_ms;       /* staggerDelay's default */
	char *supervisor_name;           /* this supervisor's name, "" = host */
	enum log_level log_level;        /* how much to log */
	int64_t max_concurrent_runs;     /* runs in flight per supervisor */
	int64_t claim_batch;             /* schedules claimed per transaction */
	int64_t claim_ahead_ms;    /* claim this long before the instant */
	int64_t db_timeout_ms;     /* statement/connect/keepalive limit */
	int64_t heartbeat_seconds; /* how often a supervisor heartbeats */
	int64_t lease_seconds;     /* heartbeat age that declares it dead */
	int64_t shutdown_grace_seconds;  /* SIGTERM: how long runs may finish */
	int64_t kill_grace_seconds;      /* SIGTERM to SIGKILL at a timeout */
	int64_t output_tail_bytes;       /* output kept per run */
	int64_t default_timeout_seconds; /* per-run timeout if none given */
	char *default_timezone;          /* zone of schedules without one */
	int64_t limit_cpu_seconds;       /* default and maximum RLIMIT_CPU */
	int64_t limit_memory_mb;         /* default and maximum RLIMIT_AS */
	int64_t limit_nofile;            /* default and maximum RLIMIT_NOFILE */
	int64_t limit_nproc;             /* default and maximum RLIMIT_NPROC */
	int64_t limit_fsize_mb;          /* default and maximum RLIMIT_FSIZE */
	char *api_listen;                /* unix:/path or 127.0.0.1:port */
	char *api_socket_mode;           /* octal mode of the API socket */
	char *api_socket_group;          /* group of the API socket, "" = own */
	int64_t api_threads;             /* FastCGI worker threads */
	int64_t api_max_body_bytes;      /* largest request body accepted */
	int64_t api_io_timeout_seconds; /* one FastCGI read or write, at most */
	char *metrics_allow;         /* hostlist.c: /metrics without a token */
	char *metrics_token;         /* /metrics with it from anywhere */
	char *http_allow_hosts;      /* hostlist.c: "" = any host */
	char *http_deny_hosts;       /* hostlist.c: refused, wins */
	int64_t http_max_redirects;  /* redirects an HTTP target follows */
	char *run_users;             /* runuser.c: owner:user,… */
	char *run_user_default;      /* runuser.c: other owners, "" = none */
	int64_t owner_max_running;   /* an owner's runs in flight, 0: half */
	int64_t owner_max_schedules; /* an owner's schedules, 0: any */
	int64_t owner_max_triggers_per_minute; /* non-admins; 0: any */
	int64_t max_timeout_seconds;           /* non-admins' largest timeout */
};
void config_defaults(struct config *cf);
int config_parse(struct config *cf, const char *text, size_t len,
    const char *source, char *err, size_t errlen);
int config_env(struct config *cf, char *err, size_t errlen);
int config_load(struct config *cf, const char *path, int must_exist, char *err,
    size_t errlen);
void config_print(const struct config *cf, FILE *fp);
void config_clear(struct config *cf);
int config_daemon(int argc, char **argv, void (*usage)(FILE *),
    struct config *cf, const char **path, int *debug);

/*
 * redis.c: the Redis server of a URL (redis://, unix://), parsed and
 * connected to with hiredis.
 */
struct redisContext;
struct redis_url {
	int is_unix;        /* 1: path, else host and port */
	char host[256];     /* a name or an address, without [] */
	int port;           /* 6379 if none */
	char path[108];     /* a unix socket's (sun_path) */
	char user[128];     /* "" = none (AUTH PASSWORD) */
	char password[512]; /* "" = no AUTH */
	int db;             /* SELECT it unless 0 */
};
int redis_url_parse(
    const char *url, struct redis_url *u, char *err, size_t errlen);
struct redisContext *redis_connect(const struct redis_url *u, const char *addr,
    int64_t timeout_ms, char *err, size_t errlen);
struct redisContext *redis_open(
    const char *url, int64_t timeout_ms, char *err, size_t errlen);
int redis_host_local(const char *host);

/*
 * db.c: the thin wrapper over libpq (the exception to "nothing here touches
 * a network"): one struct db per connection, text parameters, opaque rows,
 * the SQLSTATE and kind of the last failure, LISTEN/NOTIFY for event loops.
 */
struct db;
struct db_rows;
enum db_err {
	DB_ERR_NONE,       /* the last call succeeded */
	DB_ERR_CONNECTION, /* connection lost or refused: db_reset() */
	DB_ERR_RETRY,      /* serialization failure, deadlock: run it again */
	DB_ERR_UNIQUE,     /* unique_violation (23505) */
	DB_ERR_CONSTRAINT, /* another integrity violation (class 23) */
	DB_ERR_OTHER,      /* anything else */
};
#define DB_WAIT_READ  1 /* db_set_wait(): the socket readable */
#define DB_WAIT_WRITE 2 /* writable */
struct db *db_open(const char *conninfo, char *err, size_t errlen);
void db_configure(int64_t timeout_ms);
void db_set_wait(struct db *db,
    int (*wait)(void *arg, int fd, int events, int64_t timeout_ms), void *arg);
int db_wait_poll(void *arg, int fd, int events, int64_t timeout_ms);
void db_close(struct db *db);
int db_ok(const struct db *db);
int db_reset(struct db *db, char *err, size_t errlen);
int db_session(struct db *db, const char *sql, char *err, size_t errlen);
int db_exec(struct db *db, const char *sql, int nparams,
    const char *const *params, char *err, size_t errlen);
struct db_rows *db_query(struct db *db, const char *sql, int nparams,
    const char *const *params, char *err, size_t errlen);
struct db_rows *db_query_once(struct db *db, const char *sql, int nparams,
    const char *const *params, char *err, size_t errlen);
int db_rows_count(const struct db_rows *rows);
int db_rows_columns(const struct db_rows *rows);
const char *db_rows_value(const struct db_rows *rows, int row, int col);
void db_rows_free(struct db_rows *rows);
void db_nest(struct db *db, int on);
int db_begin(struct db *db, char *err, size_t errlen);
int db_commit(struct db *db, char *err, size_t errlen);
int db_rollback(struct db *db);
const char *db_sqlstate(const struct db *db);
enum db_err db_error(const struct db *db);
int db_fd(const struct db *db);
int db_listen(struct db *db, const char *channel, char *err, size_t errlen);
int db_unlisten(struct db *db, const char *channel, char *err, size_t errlen);
int db_notify(struct db *db, const char *channel, const char *payload,
    char *err, size_t errlen);
int db_notifies(struct db *db,
    void (*fn)(const char *channel, const char *payload, void *arg), void *arg,
    char *err, size_t errlen);

/*
 * migrate.c: the migrations of sql/, compiled in, applied in order, then
 * sql/functions.sql.
 */
struct migration {
	int version;      /* NNN of sql/NNN_name.sql, >= 1 */
	const char *name; /* "NNN_name", for messages */
	const char *sql;  /* the file's text */
};
extern const struct migration migrate_list[]; /* generated, by version */
extern const size_t migrate_count;            /* entries in migrate_list */
extern const char migrate_functions[];        /* generated: functions.sql */
struct migrate_entry {
	int version;         /* the migration's number */
	char name[64];       /* "NNN_name" as recorded or known */
	char applied_at[40]; /* when it was applied, UTC; "" = pending */
	int known;           /* 1: this cronvisor has it; 0: database only */
};
int migrate_latest(void);
int migrate_check(struct db *db, char *err, size_t errlen);
int migrate_run(struct db *db,
    void (*applied)(const struct migration *m, void *arg), void *arg, char *err,
    size_t errlen);
int migrate_status(struct db *db, struct migrate_entry **out, size_t *n,
    char *err, size_t errlen);

/* timefmt.c: RFC 3339 instants and durations, in and out. */
int timefmt_utc(int64_t t, char *buf, size_t len);
int timefmt_local(int64_t t, const struct tz *tz, char *buf, size_t len);
int timefmt_utc_ms(int64_t ms, char *buf, size_t len);
int timefmt_local_ms(int64_t ms, const struct tz *tz, char *buf, size_t len);
int timefmt_parse(
    const char *s, const struct tz *tz, int64_t *out, char *err, size_t errlen);
int timefmt_parse_ms(
    const char *s, const struct tz *tz, int64_t *out, char *err, size_t errlen);
int timefmt_duration(const char *s, int64_t *out, char *err, size_t errlen);

/*
 * agent.c: the agent document of the API (docs/agents.md) and its
 * version document.  Pure; uses the schedule document's errors.
 */
struct schedule_error;
enum agent_auth {
	AGENT_AUTH_NONE,   /* no credentials */
	AGENT_AUTH_BEARER, /* Authorization: Bearer <secret> */
	AGENT_AUTH_BASIC,  /* Authorization: Basic <username:secret> */
	AGENT_AUTH_HMAC,   /* a signature of the body keyed by the secret */
};
#define AGENT_TIMEOUT_DEF         300000 /* ms, the seed's httpClient.timeout */
#define AGENT_HEALTH_INTERVAL_DEF 60     /* seconds between health probes */
#define AGENT_URL_MAX             2048   /* characters of an endpoint */
struct agent_doc {
	char *agent_id;                  /* the slug */
	char *name;                      /* 1-200 characters */
	char *description;               /* at most 10000, NULL = "" */
	char *endpoint;                  /* http(s) URL */
	enum agent_auth auth_type;       /* none */
	char *auth_username;             /* basic only */
	char *auth_secret;               /* write-only; NULL: none */
	int64_t timeout_ms;              /* 1 ms to a year, 300000 */
	int64_t max_concurrent_requests; /* 0: no limit of its own */
	int64_t heartbeat_seconds;       /* or SCHEDULE_UNSET: none needed */
	char *health_url;                /* NULL: no probes */
	int64_t health_interval_seconds; /* 5-86400, 60 */
	int when_unhealthy_go;           /* 1: jobs go to an unhealthy agent */
	struct json_t *input_schema;     /* NULL: params are not checked */
	int enabled;                     /* 1 */
};
struct agent_version {
	char *version;               /* MAJOR.MINOR.PATCH[-pre|+build] */
	char *endpoint;              /* http(s) URL */
	char *description;           /* NULL = "" */
	struct json_t *input_schema; /* NULL: none */
};
void agent_init(struct agent_doc *d);
void agent_clear(struct agent_doc *d);
int agent_slug_ok(const char *s);
int agent_version_ok(const char *s);
int agent_parse(const char *json, size_t len, struct agent_doc *out,
    struct schedule_error *e);
int agent_patch(struct agent_doc *d, const char *json, size_t len,
    struct schedule_error *e);
const char *agent_secret_name(const char *type);
int agent_replace(struct agent_doc *d, const char *json, size_t len,
    struct schedule_error *e);
int agent_from_row(
    struct json_t *row, struct agent_doc *d, struct schedule_error *e);
int agent_schema(struct json_t *v, const char *field, struct json_t **out,
    struct schedule_error *e);
struct json_t *agent_columns(const struct agent_doc *d);
struct json_t *agent_to_json(const struct agent_doc *d);
int agent_version_parse(const char *json, size_t len, struct agent_version *v,
    struct schedule_error *e);
void agent_version_clear(struct agent_version *v);
struct agent_report {
	char *status; /* "completed" or "failed"; NULL: a heartbeat */
	char *result; /* compact JSON, or NULL */
	char *error;  /* {"message", "retryable"} as compact JSON, or NULL */
	char *token;  /* the body's callback token, or NULL */
};
int agent_report_parse(const char *body, size_t len, int heartbeat,
    struct agent_report *r, struct schedule_error *e);
void agent_report_clear(struct agent_report *r);

/*
 * schedule.c: the schedule document of the API (ARCHITECTURE.md), parsed,
 * validated, patched and written back, with what it means for the
 * schedules row.  Pure: no database; jansson for the JSON.
 */
struct json_t;
enum schedule_target {
	SCHEDULE_TARGET_RECEIVER, /* no target: the configured receiver */
	SCHEDULE_TARGET_EXEC,     /* a command */
	SCHEDULE_TARGET_HTTP,     /* an HTTP request */
	SCHEDULE_TARGET_AGENT,    /* a job for an agent (docs/agents.md) */
	SCHEDULE_TARGET_PIPELINE, /* a pipeline (docs/orchestration.md) */
	SCHEDULE_TARGET_REDIS,    /* XADD, LPUSH or PUBLISH to Redis */
};
#define REDIS_KEY_MAX       512    /* bytes of a redis target's key */
#define REDIS_MAXLEN_DEF    10000  /* entries kept without a maxlen */
#define REDIS_MAXLEN_TENANT 100000 /* a non-admin's maxlen at most */
enum schedule_overlap {
	SCHEDULE_OVERLAP_SKIP,       /* record the slot as skipped */
	SCHEDULE_OVERLAP_ALLOW,      /* run it anyway */
	SCHEDULE_OVERLAP_BUFFER_ONE, /* run it when the previous run ends */
};
/* Bits of schedule_doc.present, one per top-level field, in this order. */
enum schedule_field {
	SCHEDULE_F_NAME,            /* name */
	SCHEDULE_F_DESCRIPTION,     /* description */
	SCHEDULE_F_KIND,            /* kind */
	SCHEDULE_F_INTERVAL,        /* interval_seconds */
	SCHEDULE_F_ANCHOR,          /* anchor */
	SCHEDULE_F_CRON,            /* cron */
	SCHEDULE_F_TIMEZONE,        /* timezone */
	SCHEDULE_F_AT,              /* at */
	SCHEDULE_F_START_AT,        /* start_at */
	SCHEDULE_F_TOTAL_REPEATS,   /* total_repeats */
	SCHEDULE_F_MAX_RETRIES,     /* max_retries */
	SCHEDULE_F_BACKOFF,         /* backoff */
	SCHEDULE_F_RETRY_DELAY,     /* retry_delay_seconds */
	SCHEDULE_F_TIMEOUT,         /* timeout_seconds */
	SCHEDULE_F_OVERLAP,         /* overlap */
	SCHEDULE_F_CATCH_UP,        /* catch_up */
	SCHEDULE_F_MAX_CATCH_UP,    /* max_catch_up_runs */
	SCHEDULE_F_DEADLINE,        /* starting_deadline_seconds */
	SCHEDULE_F_JITTER,          /* jitter_seconds */
	SCHEDULE_F_DST_GAP,         /* dst_gap */
	SCHEDULE_F_DST_FOLD,        /* dst_fold */
	SCHEDULE_F_HISTORY_LIMIT,   /* history_limit */
	SCHEDULE_F_TARGET,          /* target */
	SCHEDULE_F_LIMITS,          /* limits */
	SCHEDULE_F_PAYLOAD,         /* trigger_payload */
	SCHEDULE_F_WORKFLOW_ID,     /* workflow_id */
	SCHEDULE_F_TRIGGER_NODE_ID, /* trigger_node_id */
	SCHEDULE_F_PRIORITY,        /* priority */
	SCHEDULE_F_ORGANIZATION_ID, /* organization_id */
	SCHEDULE_F_ENVIRONMENT_ID,  /* environment_id */
	SCHEDULE_F_COUNT,           /* number of fields */
};
#define SCHEDULE_TIMING_FIELDS                                                 \
	((1u << SCHEDULE_F_KIND) | (1u << SCHEDULE_F_INTERVAL) |               \
	    (1u << SCHEDULE_F_ANCHOR) | (1u << SCHEDULE_F_CRON) |              \
	    (1u << SCHEDULE_F_TIMEZONE) | (1u << SCHEDULE_F_AT) |              \
	    (1u << SCHEDULE_F_START_AT) | (1u << SCHEDULE_F_DST_GAP) |         \
	    (1u << SCHEDULE_F_DST_FOLD) | (1u << SCHEDULE_F_JITTER))
#define SCHEDULE_UNSET INT64_MIN /* an optional number or time not given */
struct schedule_limits {
	int64_t cpu_seconds; /* RLIMIT_CPU, 0: the configured default */
	int64_t memory_mb;   /* RLIMIT_AS in MiB, 0: the default */
	int64_t nofile;      /* RLIMIT_NOFILE, 0: the default */
	int64_t nproc;       /* RLIMIT_NPROC, 0: the default */
	int64_t fsize_mb;    /* RLIMIT_FSIZE in MiB, 0: the default */
};
/* A field of the document the input spelled as a seed does (spelling.c). */
struct schedule_spelling {
	const char *native; /* its path: "at", "target.agent" (static) */
	const char *given;  /* the input's: "startAt", "agentId" (static) */
};
#define SCHEDULE_SPELLINGS 24 /* more than spelling.c notes at once */
struct schedule_doc {
	char *name;                    /* 1-200 characters */
	char *description;             /* at most 10000 characters, "" */
	enum sched_kind kind;          /* interval, cron or once */
	int64_t interval_seconds;      /* INTERVAL: 1-3162240000, else UNSET */
	int anchor_completion;         /* INTERVAL: 1 = fixed delay */
	char *cron;                    /* CRON: the expression, else NULL */
	char *timezone;                /* IANA zone name, "UTC" */
	int64_t at;                    /* ONCE: the instant (ms), else UNSET */
	int64_t start_at;              /* no slot before it (ms), or UNSET */
	int64_t total_repeats;         /* >= 0, 0 = forever */
	int64_t max_retries;           /* 0-1000, 3 */
	enum backoff backoff;          /* exponential */
	int64_t retry_delay_seconds;   /* 1-31536000, or UNSET (derived) */
	int64_t timeout_seconds;       /* 1-31536000, 600 */
	enum schedule_overlap overlap; /* skip */
	enum catch_up catch_up;        /* latest */
	int64_t max_catch_up_runs;     /* 1-1000, 10 */
	int64_t starting_deadline_seconds; /* >= 0, or UNSET (none) */
	int64_t jitter_seconds;            /* >= 0, 0 */
	enum dst_gap dst_gap;              /* auto */
	enum dst_fold dst_fold;            /* auto */
	int64_t history_limit;             /* 1-100000, 100 */
	enum schedule_target target_type;  /* what runs */
	struct json_t *target; /* validated target object, NULL: receiver */
	struct schedule_limits limits;  /* resource limits, 0 = default */
	struct json_t *trigger_payload; /* an object, {} by default */
	char *workflow_id;              /* NULL or text (numbers as text) */
	char *trigger_node_id;          /* NULL or text */
	int64_t priority;               /* -1000000-1000000, 0: higher first */
	char *organization_id;          /* NULL or text (seed 002) */
	char *environment_id;           /* NULL or text (seed 002) */
	uint32_t present; /* bit SCHEDULE_F_x: the input named field x */
	uint32_t nulled;  /* the same, for the fields a patch set to null */
	int enable;       /* seed 004's enabled: 1 true, -1 false, 0 none */
	struct schedule_spelling spelled[SCHEDULE_SPELLINGS]; /* seeds' names */
	int nspelled;                                         /* in use */
};
struct schedule_error {
	char code[32];           /* invalid_json, unknown_field, ... */
	char message[CV_ERRLEN]; /* for people */
	char field[128];         /* dotted path, "" for the whole body */
};

/* apply.c: the body of POST /apply (docs/apply.md). */
#define APPLY_SET_MAX   100  /* characters of a set's name */
#define APPLY_ITEMS_MAX 1000 /* documents of one kind in one apply */
#define APPLY_HASH_LEN  64   /* hex digits of a document's SHA-256 */
enum apply_kind {
	APPLY_AGENT,    /* in the order they are made: a pipeline needs its */
	APPLY_PIPELINE, /* agents, a schedule its agent or pipeline */
	APPLY_SCHEDULE,
	APPLY_KINDS
};
struct apply_item {
	struct json_t *doc;            /* as given (the request's) */
	char *key;                     /* agent_id, pipeline_id or name */
	char hash[APPLY_HASH_LEN + 1]; /* of its canonical text */
};
struct apply_req {
	struct json_t *root;                   /* the body */
	const char *set;                       /* in root */
	int prune;                             /* delete the set's others */
	int dry_run;                           /* roll it all back */
	struct apply_item *items[APPLY_KINDS]; /* per kind, in body order */
	size_t n[APPLY_KINDS];
};
const char *apply_list_name(enum apply_kind k);
int apply_set_ok(const char *s);
int apply_parse(const char *json, size_t len, struct apply_req *out,
    struct schedule_error *e);
void apply_clear(struct apply_req *r);
#define SCHEDULE_PARAMS 30 /* columns schedule_params() fills */
struct schedule_params {
	const char *columns[SCHEDULE_PARAMS]; /* schedules column names */
	char *values[SCHEDULE_PARAMS];        /* text values, NULL = SQL NULL */
};
/* The pieces of document parsing that agent.c shares. */
int doc_fail(struct schedule_error *e, const char *code, const char *field,
    const char *fmt, ...) CV_PRINTF(4, 5);
struct json_t *doc_load(const char *json, size_t len, struct schedule_error *e);
int doc_check_url(struct json_t *v, const char *path, struct schedule_error *e);
int doc_int(struct json_t *v, const char *field, int64_t min, int64_t max,
    int64_t *out, struct schedule_error *e);
void schedule_init(struct schedule_doc *d);
void schedule_clear(struct schedule_doc *d);
int schedule_parse(const char *json, size_t len, struct schedule_doc *out,
    struct schedule_error *e);
int schedule_patch(struct schedule_doc *d, const char *json, size_t len,
    struct schedule_error *e);
int schedule_from_row(
    struct json_t *row, struct schedule_doc *out, struct schedule_error *e);
int schedule_equal(const struct schedule_doc *a, const struct schedule_doc *b);
int schedule_json_storable(
    struct json_t *v, const char *field, struct schedule_error *e);
int schedule_timing(
    const struct schedule_doc *d, struct timing *tm, char *err, size_t errlen);
int schedule_first_slot(
    const struct schedule_doc *d, int64_t now, struct slot *out);
int schedule_params(const struct schedule_doc *d, struct schedule_params *p);
void schedule_params_clear(struct schedule_params *p);
struct json_t *schedule_to_json(const struct schedule_doc *d);
struct json_t *schedule_slot_json(
    const struct timing *tm, const struct slot *sl);
struct json_t *schedule_fire_times(const struct schedule_doc *d, int64_t now,
    const int64_t *pending, int64_t n);

/*
 * spelling.c: the seeds' own spellings of the schedule document (seed 004's
 * repeat, cronExpression, interval in ms, retryConfig, targetType, ...;
 * seed 002's scheduleType, scheduledAt, ...) rewritten into the native
 * one before schedule.c reads it.  Pure.
 */
int spelling_apply(struct json_t *root, const struct schedule_doc *base,
    struct schedule_doc *d, struct schedule_error *e);
const char *spelling_field(
    const struct schedule_doc *d, const char *path, char *buf, size_t len);
void spelling_error(const struct schedule_doc *d, struct schedule_error *e);

/*
 * pipeline.c: the pipeline document of the API (docs/orchestration.md),
 * a graph of agent steps, in its native form.  Pure.
 */
#define PIPELINE_STEPS_MAX 100 /* steps of a pipeline */
struct json_t *pipeline_parse(const char *json, size_t len,
    const struct json_t *base, struct schedule_error *e);

/*
 * dag.c: what a pipeline's run does next, step by step, for one context
 * (docs/orchestration.md, "When a step runs").  Pure.
 */
enum dag_state {
	DAG_WAITING = 1, /* not started: its dependencies have not all ended */
	DAG_RUNNING,     /* started */
	DAG_COMPLETED,   /* ended well */
	DAG_FAILED,      /* ended badly, retries spent */
	DAG_NOT_RUN,     /* will never run (why[] says why) */
};
enum dag_when {
	DAG_WHEN_SUCCESS, /* every dependency completed */
	DAG_WHEN_DONE,    /* every dependency ended */
	DAG_WHEN_FAILURE, /* every dependency ended, one of them failed */
};
#define DAG_WHY_LEN 160
struct dag_step {
	const char *id;               /* step_id, for the reasons */
	int deps[PIPELINE_STEPS_MAX]; /* indexes of the steps it waits for */
	int ndeps;                    /* entries in deps */
	enum dag_when when;           /* run_when */
	int parallel;                 /* 0: runs alone */
};
struct dag {
	struct dag_step steps[PIPELINE_STEPS_MAX]; /* in the pipeline's order */
	int nsteps;                                /* entries in steps */
	int fail_fast;                             /* a failure ends it */
};
int dag_when(const char *s);
int dag_advance(const struct dag *g, enum dag_state *st, int *start,
    char (*why)[DAG_WHY_LEN]);
int dag_outcome(const struct dag *g, const enum dag_state *st);
int dag_load(struct dag *g, const struct json_t *steps, int fail_fast);

/*
 * datasource.c: seed 004's data-source strings (db:<table>:<filter>:
 * <field>[?options]) and the parameterised SELECT of one over a
 * registered table (docs/orchestration.md, "Fan-out").  Pure.
 */
#define DS_NAME_MAX     63       /* characters of a table or column name */
#define DS_STRING_MAX   8192     /* bytes of a data-source string */
#define DS_FILTER_BYTES 4096     /* bytes of its JSON filter */
#define DS_DEPTH_MAX    8        /* nesting of the filter */
#define DS_NODES_MAX    256      /* conditions in the filter */
#define DS_PARAMS_MAX   1000     /* values in the query */
#define DS_VALUE_MAX    1000     /* bytes of one value */
#define DS_BATCH_MAX    10000    /* batchSize at most */
#define DS_STAGGER_MAX  3600000  /* staggerDelay at most (ms) */
#define DS_FAILURES_MAX 10000000 /* maxFailures at most */
#define DS_COLUMNS_MAX  100      /* columns of a registration */
struct ds_spec {
	char table[DS_NAME_MAX + 1]; /* the registered table's name */
	int all;                     /* the filter is "all" */
	char *value;                 /* else the key's value (decoded) */
	char field[DS_NAME_MAX + 1]; /* the column whose values expand */
	int64_t batch_size;          /* batchSize, -1: the default */
	int64_t stagger_ms;          /* staggerDelay, -1: the default */
	int64_t max_failures;        /* maxFailures, -1: none */
	int64_t max_failures_pct;    /* maxFailuresPercent, -1: none */
	struct json_t *filter;       /* an array of filter objects */
};
struct ds_column {
	const char *name; /* as the string names it */
	const char *sql;  /* the quoted identifier */
	const char *type; /* its SQL type, for the casts */
};
struct ds_table {
	const char *name;                /* as the string names it */
	const char *relation;            /* the quoted, qualified relation */
	const char *key;                 /* the name of its key column */
	const struct ds_column *columns; /* what may be read */
	int ncolumns;
};
struct ds_query {
	char *sql;     /* SELECT …: JSON text of each value */
	char **params; /* $1.. as text */
	int nparams;
};
int ds_is_source(const char *s);
int ds_parse(const char *s, struct ds_spec *d, char *err, size_t errlen);
void ds_spec_clear(struct ds_spec *d);
int ds_compile(const struct ds_spec *d, const struct ds_table *t, int64_t limit,
    struct ds_query *q, char *err, size_t errlen);
void ds_query_clear(struct ds_query *q);
int ds_table_load(struct ds_table *t, struct ds_column *c, const char *name,
    const char *relation, const char *key, struct json_t *columns);
struct json_t *ds_registration_parse(
    const char *json, size_t len, struct schedule_error *e);

/*
 * jschema.c: JSON Schema (a documented subset of draft 2020-12) over
 * jansson, for an AI agent's job parameters against its input_schema.
 * Pure.
 */
#define JSCHEMA_DEPTH_MAX 32 /* nesting of a schema or an instance */
struct jschema_error {
	char path[256];          /* where: "" the whole, "tickers[3].id" */
	char message[CV_ERRLEN]; /* what, for people */
};
int jschema_check(const struct json_t *schema, struct jschema_error *e);
int jschema_validate(const struct json_t *schema, const struct json_t *instance,
    struct jschema_error *e);

#endif /* CRONVISOR_H */
