/*
 * db.c: the one thin wrapper over libpq.  Everything else in cronvisor talks
 * to PostgreSQL through these calls and never sees a PGconn or a PGresult:
 * commands and queries with text parameters, transactions, the error of the
 * last call as a message, a SQLSTATE and a coarse kind (lost connection,
 * retryable conflict, unique violation, other), reconnection, and the
 * non-blocking LISTEN/NOTIFY half the supervisor's event loop needs.  Error
 * messages never carry the connection's password: libpq echoes pieces of a
 * malformed conninfo in its messages, so every message is scrubbed of the
 * password before it leaves this file.  One struct db is one connection and
 * must be used by one thread at a time; distinct ones are independent.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "cronvisor.h"
#include "sql_queries.h"

#define DB_MASK        "***" /* what a password becomes in messages */
#define DB_SLACK_MS    1000  /* a statement's wait beyond the server's */
#define DB_SECRETS_MAX 4     /* password spellings scrubbed */
#define DB_STMT_MAX    128   /* statements prepared per connection */

/*
 * A statement prepared on the connection.  PostgreSQL spends most of a
 * short statement's time parsing and planning it; the supervisor and the
 * API run the same hundred or so statements again and again, so each is
 * prepared once per connection (named cv<index>) and executed by name;
 * past DB_STMT_MAX, a statement is run unnamed, parsed and planned each
 * time (as db_query_once() runs one on purpose).
 */
struct db_stmt {
	char *sql;     /* its text, the key */
	unsigned hash; /* of sql */
};

struct db {
	PGconn *conn;     /* the connection, never NULL */
	char *conninfo;   /* as given, to scrub messages of its password */
	char sqlstate[6]; /* SQLSTATE of the last failure, "" after success */
	enum db_err kind; /* what the last failure was */
	char **channels;  /* channels LISTENed to, re-LISTENed by db_reset */
	size_t nchannels; /* entries in channels */
	struct db_stmt stmts[DB_STMT_MAX]; /* prepared on this connection */
	size_t nstmts;                     /* entries in stmts */
	char *session; /* db_session()'s statements, run again by db_reset */
	/* Asynchronous use (db_set_wait()): how to wait for the socket. */
	int (*wait)(void *arg, int fd, int events, int64_t timeout_ms);
	void *wait_arg; /* its first argument */
	int broken;     /* a statement's answer was given up: db_reset() */
	int nested; /* db_nest(): transactions are savepoints of the caller's */
	int depth;  /* savepoints db_begin() opened while nested */
};

/*
 * The time limit of every connection this process opens (db_configure()):
 * the statement timeout, the TCP user timeout, the keepalives that find a
 * peer gone quiet, the connect timeout, and in asynchronous use how long
 * a statement's answer is waited for.
 */
static int64_t db_timeout_ms = 10000;

struct db_rows {
	PGresult *res; /* a PGRES_TUPLES_OK or PGRES_COMMAND_OK result */
	int nrows;     /* rows in res */
	int ncols;     /* columns in res */
};

static int db_listen_again(
    struct db *db, const char *channel, char *err, size_t errlen);

/* Sends libpq's NOTICEs (CREATE ... IF NOT EXISTS and the like) to debug. */
static void
db_notice(void *arg, const char *msg)
{
	size_t n = strlen(msg);

	(void)arg;
	while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
		n--;
	log_debug("database: %.*s", (int)n, msg);
}

/* Replaces every occurrence of secret (if long enough) in s by DB_MASK. */
static void
db_scrub_one(char *s, size_t size, const char *secret, size_t slen)
{
	size_t mlen = strlen(DB_MASK);
	char *p = s;

	if (slen == 0)
		return;
	while ((p = strstr(p, secret)) != NULL) {
		size_t off = (size_t)(p - s), tail = strlen(p + slen);

		if (off + mlen >= size) {
			*p = '\0';
			return;
		}
		if (off + mlen + tail >= size)
			tail = size - 1 - off - mlen;
		memmove(p + mlen, p + slen, tail);
		p[mlen + tail] = '\0';
		memcpy(p, DB_MASK, mlen);
		p += mlen;
	}
}

/*
 * Adds the raw (undecoded) password spellings found in conninfo to sec:
 * "password=VALUE" of a conninfo or a URI query, and the "user:PASS@" of a
 * URI.  Works on text libpq could not parse, too.
 */
static size_t
db_raw_secrets(const char *ci, char sec[][256], size_t n)
{
	const char *p, *e;

	if ((p = strstr(ci, "password=")) != NULL && n < DB_SECRETS_MAX) {
		p += strlen("password=");
		if (*p == '\'')
			p++;
		e = p + strcspn(p, " \t\n'&");
		snprintf(sec[n++], 256, "%.*s", (int)(e - p), p);
	}
	if ((p = strstr(ci, "://")) != NULL && n < DB_SECRETS_MAX) {
		p += 3;
		e = p + strcspn(p, "/?");
		const char *at = memchr(p, '@', (size_t)(e - p));
		const char *colon = memchr(p, ':', (size_t)(e - p));
		if (at != NULL && colon != NULL && colon < at)
			snprintf(sec[n++], 256, "%.*s", (int)(at - colon - 1),
			    colon + 1);
	}
	return n;
}

/*
 * Scrubs every spelling of conninfo's password from the message s (size
 * bytes): the decoded value libpq parsed and the raw text.
 */
static void
db_scrub(char *s, size_t size, const char *conninfo)
{
	char sec[DB_SECRETS_MAX][256];
	PQconninfoOption *opts, *o;
	size_t n = 0;

	if (conninfo == NULL || s == NULL || size == 0)
		return;
	if ((opts = PQconninfoParse(conninfo, NULL)) != NULL) {
		for (o = opts; o->keyword != NULL; o++)
			if (strcmp(o->keyword, "password") == 0 &&
			    o->val != NULL)
				snprintf(
				    sec[n++], sizeof(sec[0]), "%s", o->val);
		PQconninfoFree(opts);
	}
	n = db_raw_secrets(conninfo, sec, n);
	for (size_t i = 0; i < n; i++)
		db_scrub_one(s, size, sec[i], strlen(sec[i]));
}

/* Copies libpq's multi-line message into err as one line, scrubbed. */
static void
db_message(char *err, size_t errlen, const char *prefix, const char *msg,
    const char *conninfo)
{
	size_t o;

	if (err == NULL || errlen == 0)
		return;
	snprintf(err, errlen, "%s%s", prefix, msg != NULL ? msg : "");
	/* libpq's "...failed: FATAL:  x\n\tHint..." becomes one line. */
	for (size_t i = o = 0; err[i] != '\0'; i++) {
		char c = err[i] == '\n' || err[i] == '\t' ? ' ' : err[i];

		if (c != ' ' || (o > 0 && err[o - 1] != ' '))
			err[o++] = c;
	}
	while (o > 0 && err[o - 1] == ' ')
		o--;
	err[o] = '\0';
	db_scrub(err, errlen, conninfo);
}

/* The kind of failure a SQLSTATE (and the connection's state) means. */
static enum db_err
db_classify(const char *state, int conn_bad)
{
	if (conn_bad || strncmp(state, "08", 2) == 0 ||
	    strcmp(state, "57P01") == 0 || strcmp(state, "57P02") == 0 ||
	    strcmp(state, "57P03") == 0)
		return DB_ERR_CONNECTION;
	if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0)
		return DB_ERR_RETRY;
	if (strcmp(state, "23505") == 0)
		return DB_ERR_UNIQUE;
	if (strncmp(state, "23", 2) == 0)
		return DB_ERR_CONSTRAINT;
	return DB_ERR_OTHER;
}

/*
 * Records a failed call: its SQLSTATE (a connection lost without one is
 * 08006, connection_failure), its kind, and "message: detail (SQLSTATE
 * xxxxx)" in err.  res may be NULL.  Returns -1.
 */
static int
db_fail(struct db *db, const PGresult *res, char *err, size_t errlen)
{
	const char *state = NULL, *msg = NULL, *detail = NULL;
	int bad = PQstatus(db->conn) == CONNECTION_BAD;
	char text[1024];

	if (res != NULL) {
		state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
		msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
		detail = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);
	}
	/*
	 * A failure without a SQLSTATE was made by libpq itself, not sent by
	 * the server: the connection broke (an immediate shutdown of the
	 * server leaves PQstatus() at CONNECTION_OK until the next call), so
	 * it is treated as lost and the caller reconnects.
	 */
	if (state == NULL || strlen(state) != 5) {
		state = "08006";
		bad = 1;
	}
	if (msg == NULL)
		msg = PQerrorMessage(db->conn);
	if (msg == NULL || *msg == '\0')
		msg = "unexpected result from the server";
	memcpy(db->sqlstate, state, 6);
	db->kind = db_classify(state, bad);
	snprintf(text, sizeof(text), "%s%s%s (SQLSTATE %s)", msg,
	    detail != NULL ? ": " : "", detail != NULL ? detail : "", state);
	db_message(err, errlen, "", text, db->conninfo);
	return -1;
}

/* Forgets the previous call's failure. */
static void
db_succeed(struct db *db)
{
	db->sqlstate[0] = '\0';
	db->kind = DB_ERR_NONE;
}

/*
 * Connects to the database conninfo names (a libpq conninfo string or a
 * postgresql:// URI), and blocks until connected or failed.  Every
 * connection gets the time limit of db_configure() (10 s by default) as
 * its statement_timeout, its tcp_user_timeout (unacknowledged data) and
 * its connect_timeout (whole seconds, at least 2), its
 * idle_in_transaction_session_timeout (a client cut off in the middle of
 * a transaction, whose backend no keepalive ends over a unix socket or a
 * proxy, holds its row locks no longer than that), and TCP keepalives
 * that give up on a silent peer within about the same time (idle a half
 * of it, then three probes a quarter apart); the conninfo may set any of
 * these itself (an `options` of its own replaces both timeouts).
 * Returns the connection, owned by the caller and released with db_close(); or
 * NULL with the reason in err, which never contains the password.
 */
struct db *
db_open(const char *conninfo, char *err, size_t errlen)
{
	char ct[24], idle[24], intvl[24], user[24], opts[128];
	const char *keys[] = {"connect_timeout", "keepalives",
	    "keepalives_idle", "keepalives_interval", "keepalives_count",
	    "tcp_user_timeout", "options", "fallback_application_name",
	    "dbname", NULL};
	const char *vals[] = {
	    ct, "1", idle, intvl, "3", user, opts, "cronvisor", conninfo, NULL};
	int64_t t = db_timeout_ms;
	struct db *db;

	/* libpq counts the connect timeout in whole seconds, at least 2. */
	snprintf(ct, sizeof(ct), "%lld",
	    (long long)((t + 999) / 1000 < 2 ? 2 : (t + 999) / 1000));
	snprintf(idle, sizeof(idle), "%lld",
	    (long long)(t / 2000 < 1 ? 1 : t / 2000));
	snprintf(intvl, sizeof(intvl), "%lld",
	    (long long)(t / 4000 < 1 ? 1 : t / 4000));
	snprintf(user, sizeof(user), "%lld", (long long)t);
	snprintf(opts, sizeof(opts),
	    "-c statement_timeout=%lld -c idle_in_transaction_session_timeout="
	    "%lld",
	    (long long)t, (long long)t);
	if ((db = calloc(1, sizeof(*db))) == NULL ||
	    (db->conninfo = strdup(conninfo)) == NULL) {
		free(db);
		return log_errbuf(err, errlen, "out of memory"), NULL;
	}
	if ((db->conn = PQconnectdbParams(keys, vals, 1)) == NULL) {
		db_close(db);
		return log_errbuf(err, errlen, "out of memory"), NULL;
	}
	PQsetNoticeProcessor(db->conn, db_notice, NULL);
	if (PQstatus(db->conn) != CONNECTION_OK) {
		db_message(err, errlen, "cannot connect to the database: ",
		    PQerrorMessage(db->conn), conninfo);
		db_close(db);
		return NULL;
	}
	return db;
}

/*
 * Sets the time limit of the connections db_open() opens from now on, in
 * ms (the configuration's db_timeout_ms); <= 0 leaves it.
 */
void
db_configure(int64_t timeout_ms)
{
	if (timeout_ms > 0)
		db_timeout_ms = timeout_ms;
}

/*
 * Makes db asynchronous: its socket is non-blocking, and every call waits
 * for an answer through wait(arg, fd, events, timeout_ms), which returns 0
 * once fd is ready for events (DB_WAIT_READ, and DB_WAIT_WRITE while
 * output waits to be sent; ready for either will do) or -1 when
 * timeout_ms passed first.  The caller's wait may run other work (an
 * event loop) meanwhile; it must not use db.  An answer not there within
 * the time limit (db_configure()) and a second is given up: the call
 * fails as a lost connection, and the connection is unusable until
 * db_reset(), which reconnects through wait() as well.
 */
void
db_set_wait(struct db *db,
    int (*wait)(void *arg, int fd, int events, int64_t timeout_ms), void *arg)
{
	db->wait = wait;
	db->wait_arg = arg;
	PQsetnonblocking(db->conn, wait != NULL);
}

/* Waits for the socket until deadline; -1 (and broken) when it passed. */
static int
db_await(struct db *db, int events, int64_t deadline)
{
	int64_t left = deadline - clock_ms();

	if (left <= 0 ||
	    db->wait(db->wait_arg, PQsocket(db->conn), events, left) == -1) {
		db->broken = 1;
		return -1;
	}
	return 0;
}

/*
 * The answer to what was just sent (sent: the PQsend call's return), in
 * asynchronous use: output flushed as the socket takes it, then results
 * read as they come.  Returns the first failed result, else the last one;
 * or NULL when nothing could be sent or read (the connection is gone, or
 * broken: no answer in time).
 */
static PGresult *
db_answer(struct db *db, int sent)
{
	int64_t deadline = clock_ms() + db_timeout_ms + DB_SLACK_MS;
	PGresult *keep = NULL, *r;
	ExecStatusType st;
	int f;

	if (!sent)
		return NULL;
	while ((f = PQflush(db->conn)) == 1)
		if (db_await(db, DB_WAIT_READ | DB_WAIT_WRITE, deadline) ==
		        -1 ||
		    PQconsumeInput(db->conn) == 0)
			return NULL;
	if (f == -1)
		return NULL;
	for (;;) {
		while (PQisBusy(db->conn))
			if (db_await(db, DB_WAIT_READ, deadline) == -1 ||
			    PQconsumeInput(db->conn) == 0) {
				PQclear(keep);
				return NULL;
			}
		if ((r = PQgetResult(db->conn)) == NULL)
			return keep;
		st = keep != NULL ? PQresultStatus(keep) : PGRES_COMMAND_OK;
		if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
			PQclear(keep);
			keep = r;
		} else {
			PQclear(r);
		}
	}
}

/*
 * PQresetStart() and its polls, in asynchronous use: the socket may
 * change from one poll to the next.  Returns 0 when connected, or -1.
 */
static int
db_reset_async(struct db *db)
{
	int64_t t = db_timeout_ms < 2000 ? 2000 : db_timeout_ms;
	int64_t deadline = clock_ms() + t;
	PostgresPollingStatusType st = PGRES_POLLING_WRITING;

	if (PQresetStart(db->conn) == 0)
		return -1;
	while (st != PGRES_POLLING_OK) {
		if (st == PGRES_POLLING_FAILED ||
		    db_await(db,
		        st == PGRES_POLLING_WRITING ? DB_WAIT_WRITE
		                                    : DB_WAIT_READ,
		        deadline) == -1)
			return -1;
		st = PQresetPoll(db->conn);
	}
	PQsetnonblocking(db->conn, 1);
	return 0;
}

/*
 * Blocks in poll() for db_set_wait()'s callers that have no loop of their
 * own at that moment (a start, a stop): the same contract as wait().
 */
int
db_wait_poll(void *arg, int fd, int events, int64_t timeout_ms)
{
	struct pollfd pfd = {.fd = fd,
	    .events = (short)((events & DB_WAIT_READ ? POLLIN : 0) |
	        (events & DB_WAIT_WRITE ? POLLOUT : 0))};
	int64_t end = clock_ms() + timeout_ms, left;
	int r;

	(void)arg;
	while ((left = end - clock_ms()) > 0) {
		r = poll(&pfd, 1, left > 60000 ? 60000 : (int)left);
		if (r > 0)
			return 0;
		if (r == -1 && errno != EINTR)
			return -1;
	}
	return -1;
}

/* Closes the connection and frees db; NULL is fine. */
/* Forgets the prepared statements: the connection that had them is gone. */
static void
db_stmts_clear(struct db *db)
{
	for (size_t i = 0; i < db->nstmts; i++)
		free(db->stmts[i].sql);
	db->nstmts = 0;
}

void
db_close(struct db *db)
{
	if (db == NULL)
		return;
	if (db->conn != NULL)
		PQfinish(db->conn);
	for (size_t i = 0; i < db->nchannels; i++)
		free(db->channels[i]);
	free(db->channels);
	db_stmts_clear(db);
	free(db->session);
	free(db->conninfo);
	free(db);
}

/* Returns 1 if the connection is up as far as libpq knows, else 0. */
int
db_ok(const struct db *db)
{
	return !db->broken && PQstatus(db->conn) == CONNECTION_OK;
}

/*
 * Closes and reopens the connection with the same parameters (blocking),
 * then LISTENs again to every channel db_listen() added: a new session has
 * none.  Any transaction in progress is lost.  Returns 0, or -1 with the
 * reason in err (db stays usable for another db_reset()).
 */
int
db_reset(struct db *db, char *err, size_t errlen)
{
	db_stmts_clear(db);
	db->broken = 0;
	if (db->wait == NULL)
		PQreset(db->conn);
	else if (db_reset_async(db) == -1)
		db->broken = 0; /* PQstatus() says it */
	if (PQstatus(db->conn) != CONNECTION_OK) {
		db_fail(db, NULL, NULL, 0);
		db_message(err, errlen, "cannot reconnect to the database: ",
		    PQerrorMessage(db->conn), db->conninfo);
		return -1;
	}
	db_succeed(db);
	if (db->session != NULL &&
	    db_exec(db, db->session, 0, NULL, err, errlen) == -1)
		return -1;
	for (size_t i = 0; i < db->nchannels; i++)
		if (db_listen_again(db, db->channels[i], err, errlen) == -1)
			return -1;
	return 0;
}

/*
 * Runs sql (statements without parameters, such as SETs) now and again in
 * every session db_reset() opens, so that the settings of the connection
 * outlive a reconnect.  Returns 0, or -1 with the message in err.
 */
int
db_session(struct db *db, const char *sql, char *err, size_t errlen)
{
	char *copy;

	if ((copy = strdup(sql)) == NULL)
		return log_errbuf(err, errlen, "out of memory");
	if (db_exec(db, sql, 0, NULL, err, errlen) == -1) {
		free(copy);
		return -1;
	}
	free(db->session);
	db->session = copy;
	return 0;
}

/*
 * Runs sql with nparams text parameters ($1...; a NULL entry is SQL NULL),
 * as a statement prepared on the connection (see struct db_stmt).
 * Without parameters sql may hold several statements (a migration file)
 * and runs as it is.
 * Returns the result of a successful command or query, or NULL after
 * db_fail().
 */
/*
 * The name of sql prepared on db (in name, 16 bytes), preparing it the
 * first time; 0, or 1 when it is not prepared (the cache is full: run it
 * unnamed), or -1 with *res holding the failed preparation.
 */
static int
db_prepared(
    struct db *db, const char *sql, int nparams, char *name, PGresult **res)
{
	unsigned h = 2166136261u;
	size_t i;

	for (const char *p = sql; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	for (i = 0; i < db->nstmts; i++)
		if (db->stmts[i].hash == h &&
		    strcmp(db->stmts[i].sql, sql) == 0)
			break;
	snprintf(name, 16, "cv%zu", i);
	if (i < db->nstmts)
		return 0;
	if (i == DB_STMT_MAX || (db->stmts[i].sql = strdup(sql)) == NULL)
		return 1;
	*res = db->wait != NULL
	    ? db_answer(db, PQsendPrepare(db->conn, name, sql, nparams, NULL))
	    : PQprepare(db->conn, name, sql, nparams, NULL);
	if (*res == NULL || PQresultStatus(*res) != PGRES_COMMAND_OK) {
		free(db->stmts[i].sql);
		return -1;
	}
	PQclear(*res);
	*res = NULL;
	db->stmts[i].hash = h;
	db->nstmts++;
	return 0;
}

/*
 * The failure of a call on a connection whose answer was given up (no
 * answer within the time limit): lost, until db_reset().  Returns NULL.
 */
static PGresult *
db_gone(struct db *db, char *err, size_t errlen)
{
	memcpy(db->sqlstate, "08006", 6);
	db->kind = DB_ERR_CONNECTION;
	log_errbuf(err, errlen,
	    "no answer from the database within %lld ms (db_timeout_ms); "
	    "the connection is given up (SQLSTATE 08006)",
	    (long long)(db_timeout_ms + DB_SLACK_MS));
	return NULL;
}

static PGresult *
db_run(struct db *db, const char *sql, int nparams, const char *const *params,
    int prepare, char *err, size_t errlen)
{
	PGresult *res = NULL;
	ExecStatusType st;
	char name[16];
	int r;

	if (db->broken)
		return db_gone(db, err, errlen);
	if (db->wait != NULL) {
		if (nparams == 0)
			res = db_answer(db, PQsendQuery(db->conn, sql));
		else if ((r = prepare
		                 ? db_prepared(db, sql, nparams, name, &res)
		                 : 1) == 0)
			res = db_answer(db,
			    PQsendQueryPrepared(db->conn, name, nparams, params,
			        NULL, NULL, 0));
		else if (r == 1)
			res = db_answer(db,
			    PQsendQueryParams(db->conn, sql, nparams, NULL,
			        params, NULL, NULL, 0));
		if (db->broken)
			return PQclear(res), db_gone(db, err, errlen);
	} else if (nparams == 0)
		res = PQexec(db->conn, sql);
	else if ((r = prepare ? db_prepared(db, sql, nparams, name, &res)
	                      : 1) == 0)
		res = PQexecPrepared(
		    db->conn, name, nparams, params, NULL, NULL, 0);
	else if (r == 1)
		res = PQexecParams(
		    db->conn, sql, nparams, NULL, params, NULL, NULL, 0);
	st = res != NULL ? PQresultStatus(res) : PGRES_FATAL_ERROR;
	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
		db_succeed(db);
		return res;
	}
	db_fail(db, res, err, errlen);
	PQclear(res);
	return NULL;
}

/*
 * Runs a command (or several, without parameters) and discards any rows.
 * params holds nparams strings for $1..., NULL for SQL NULL.  Returns the
 * number of rows the command touched (0 for commands that touch none), or
 * -1 with the message in err and the SQLSTATE in db_sqlstate().
 */
int
db_exec(struct db *db, const char *sql, int nparams, const char *const *params,
    char *err, size_t errlen)
{
	PGresult *res;
	int n;

	if ((res = db_run(db, sql, nparams, params, 1, err, errlen)) == NULL)
		return -1;
	n = atoi(PQcmdTuples(res));
	PQclear(res);
	return n;
}

/* db_query() and db_query_once(): prepare says which. */
static struct db_rows *
db_rows_of(struct db *db, const char *sql, int nparams,
    const char *const *params, int prepare, char *err, size_t errlen)
{
	struct db_rows *rows;
	PGresult *res;

	if ((res = db_run(db, sql, nparams, params, prepare, err, errlen)) ==
	    NULL)
		return NULL;
	if ((rows = malloc(sizeof(*rows))) == NULL) {
		PQclear(res);
		return log_errbuf(err, errlen, "out of memory"), NULL;
	}
	rows->res = res;
	rows->nrows = PQntuples(res);
	rows->ncols = PQnfields(res);
	return rows;
}

/*
 * Runs a query, as db_exec() does, and returns its rows, owned by the
 * caller and released with db_rows_free(); or NULL with the message in
 * err and the SQLSTATE in db_sqlstate().
 */
struct db_rows *
db_query(struct db *db, const char *sql, int nparams, const char *const *params,
    char *err, size_t errlen)
{
	return db_rows_of(db, sql, nparams, params, 1, err, errlen);
}

/*
 * db_query() of a statement that is not prepared on the connection (parsed
 * and planned for its values each time): one of many texts, each run
 * rarely, which would fill the connection's statements (DB_STMT_MAX) for
 * the others.
 */
struct db_rows *
db_query_once(struct db *db, const char *sql, int nparams,
    const char *const *params, char *err, size_t errlen)
{
	return db_rows_of(db, sql, nparams, params, 0, err, errlen);
}

/* Returns the number of rows. */
int
db_rows_count(const struct db_rows *rows)
{
	return rows->nrows;
}

/* Returns the number of columns. */
int
db_rows_columns(const struct db_rows *rows)
{
	return rows->ncols;
}

/*
 * Returns the value at (row, col) as text, owned by rows and valid until
 * db_rows_free(); NULL for SQL NULL and for a place outside the result.
 */
const char *
db_rows_value(const struct db_rows *rows, int row, int col)
{
	if (row < 0 || row >= rows->nrows || col < 0 || col >= rows->ncols)
		return NULL;
	if (PQgetisnull(rows->res, row, col))
		return NULL;
	return PQgetvalue(rows->res, row, col);
}

/* Frees rows and every value taken from them; NULL is fine. */
void
db_rows_free(struct db_rows *rows)
{
	if (rows == NULL)
		return;
	PQclear(rows->res);
	free(rows);
}

/*
 * Makes the transactions that db_begin() starts from now on (on 1, until
 * 0) savepoints inside the transaction the caller has open: their commit
 * releases the savepoint and their rollback undoes only it, and the
 * caller's own COMMIT or ROLLBACK decides (an apply runs the API's
 * handlers inside one transaction so).
 */
void
db_nest(struct db *db, int on)
{
	db->nested = on;
	db->depth = 0;
}

/* Starts a transaction.  Returns 0, or -1 with the message in err. */
int
db_begin(struct db *db, char *err, size_t errlen)
{
	if (db->nested) {
		if (db_exec(db, "SAVEPOINT cv_nest", 0, NULL, err, errlen) ==
		    -1)
			return -1;
		db->depth++;
		return 0;
	}
	return db_exec(db, "BEGIN", 0, NULL, err, errlen) == -1 ? -1 : 0;
}

/*
 * Commits the transaction.  PostgreSQL answers COMMIT of a transaction that
 * had already failed with ROLLBACK and no error; that is a failure here
 * (SQLSTATE 25P02, in_failed_sql_transaction).  Returns 0 if committed,
 * or -1 with the message in err.
 */
int
db_commit(struct db *db, char *err, size_t errlen)
{
	PGresult *res;
	int rolled_back;

	if (db->nested) {
		if (db->depth == 0)
			return 0;
		db->depth--;
		return db_exec(db, "RELEASE SAVEPOINT cv_nest", 0, NULL, err,
		           errlen) == -1
		    ? -1
		    : 0;
	}
	if ((res = db_run(db, "COMMIT", 0, NULL, 1, err, errlen)) == NULL)
		return -1;
	rolled_back = strcmp(PQcmdStatus(res), "ROLLBACK") == 0;
	PQclear(res);
	if (!rolled_back)
		return 0;
	memcpy(db->sqlstate, "25P02", 6);
	db->kind = DB_ERR_OTHER;
	return log_errbuf(err, errlen,
	    "the transaction had failed and was rolled back "
	    "(SQLSTATE 25P02)");
}

/*
 * Rolls the transaction back.  Meant for error paths: it keeps the SQLSTATE
 * and kind of the failure that led here, and a lost connection (which has
 * rolled back already) is not a second error.  Returns 0 or -1.
 */
int
db_rollback(struct db *db)
{
	char state[6];
	enum db_err kind = db->kind;
	int rc = 0;

	memcpy(state, db->sqlstate, sizeof(state));
	if (db->nested) {
		/* Outside a savepoint of its own: the caller's to undo. */
		if (db->depth > 0) {
			db->depth--;
			if (db_ok(db) &&
			    (db_exec(db, "ROLLBACK TO SAVEPOINT cv_nest", 0,
			         NULL, NULL, 0) == -1 ||
			        db_exec(db, "RELEASE SAVEPOINT cv_nest", 0,
			            NULL, NULL, 0) == -1))
				rc = -1;
		}
	} else if (db_ok(db) && db_exec(db, "ROLLBACK", 0, NULL, NULL, 0) == -1)
		rc = -1;
	memcpy(db->sqlstate, state, sizeof(state));
	db->kind = kind;
	return rc;
}

/* Returns the SQLSTATE of the last failed call ("23505"), "" after success. */
const char *
db_sqlstate(const struct db *db)
{
	return db->sqlstate;
}

/* Returns what the last failed call's failure was; DB_ERR_NONE after one
 * that succeeded. */
enum db_err
db_error(const struct db *db)
{
	return db->kind;
}

/* Returns the connection's socket, to watch for input with epoll; -1 if
 * the connection is down.  It changes after db_reset(). */
int
db_fd(const struct db *db)
{
	return PQsocket(db->conn);
}

/* Runs VERB (LISTEN or UNLISTEN) on channel, quoted.  0, or -1. */
static int
db_channel(struct db *db, const char *verb, const char *channel, char *err,
    size_t errlen)
{
	char *quoted, *sql;
	int rc;

	if ((quoted = PQescapeIdentifier(db->conn, channel, strlen(channel))) ==
	    NULL)
		return db_fail(db, NULL, err, errlen);
	if (asprintf(&sql, "%s %s", verb, quoted) == -1) {
		PQfreemem(quoted);
		return log_errbuf(err, errlen, "out of memory");
	}
	PQfreemem(quoted);
	rc = db_exec(db, sql, 0, NULL, err, errlen) == -1 ? -1 : 0;
	free(sql);
	return rc;
}

/* LISTENs to channel on the current session. */
static int
db_listen_again(struct db *db, const char *channel, char *err, size_t errlen)
{
	return db_channel(db, "LISTEN", channel, err, errlen);
}

/*
 * LISTENs to channel (any name; it is quoted) and remembers it, so that
 * db_reset() LISTENs again.  Notifications then arrive through
 * db_notifies().  Returns 0, or -1 with the message in err.
 */
int
db_listen(struct db *db, const char *channel, char *err, size_t errlen)
{
	char **grown, *copy;

	if (db_listen_again(db, channel, err, errlen) == -1)
		return -1;
	for (size_t i = 0; i < db->nchannels; i++)
		if (strcmp(db->channels[i], channel) == 0)
			return 0;
	grown = realloc(db->channels, (db->nchannels + 1) * sizeof(*grown));
	if (grown == NULL || (copy = strdup(channel)) == NULL) {
		if (grown != NULL)
			db->channels = grown;
		return log_errbuf(err, errlen, "out of memory");
	}
	db->channels = grown;
	db->channels[db->nchannels++] = copy;
	return 0;
}

/*
 * UNLISTENs channel and forgets it, then drops the notifications already
 * received (a connection shared by several users, as the API's, must not
 * keep a queue that nobody reads).  Returns 0, or -1 with err set.
 */
int
db_unlisten(struct db *db, const char *channel, char *err, size_t errlen)
{
	int rc;

	for (size_t i = 0; i < db->nchannels; i++)
		if (strcmp(db->channels[i], channel) == 0) {
			free(db->channels[i]);
			db->channels[i] = db->channels[--db->nchannels];
			break;
		}
	rc = db_channel(db, "UNLISTEN", channel, err, errlen);
	if (rc == 0 && db_notifies(db, NULL, NULL, err, errlen) == -1)
		rc = -1;
	return rc;
}

/*
 * Sends payload (may be NULL: empty) on channel with pg_notify(), inside
 * the caller's transaction if one is open, so it is delivered on commit.
 * Returns 0, or -1 with the message in err.
 */
int
db_notify(struct db *db, const char *channel, const char *payload, char *err,
    size_t errlen)
{
	const char *params[2] = {channel, payload != NULL ? payload : ""};

	if (db_exec(db, SQL_db_notify, 2, params, err, errlen) == -1)
		return -1;
	return 0;
}

/*
 * Reads whatever the server has sent without blocking (libpq's socket is
 * always non-blocking underneath; call this when db_fd() is readable, or
 * at any time) and calls fn(channel, payload, arg) once per notification
 * received, in order, except those this connection sent itself (a
 * supervisor's own claims move next_run_at, which wakes every supervisor
 * but need not wake it: it re-arms its timer after each claim).  The
 * strings are valid only during the call.
 * Returns the number of notifications delivered, or -1 with the message in
 * err if the connection was lost (db_error() says DB_ERR_CONNECTION).
 */
int
db_notifies(struct db *db,
    void (*fn)(const char *channel, const char *payload, void *arg), void *arg,
    char *err, size_t errlen)
{
	PGnotify *n;
	int count = 0;

	if (db->broken) {
		db_gone(db, err, errlen);
		return -1;
	}
	if (PQconsumeInput(db->conn) == 0 ||
	    PQstatus(db->conn) != CONNECTION_OK) {
		db_fail(db, NULL, NULL, 0);
		db_message(err, errlen,
		    "database connection lost: ", PQerrorMessage(db->conn),
		    db->conninfo);
		return -1;
	}
	while ((n = PQnotifies(db->conn)) != NULL) {
		if (n->be_pid != PQbackendPID(db->conn)) {
			if (fn != NULL)
				fn(n->relname, n->extra, arg);
			count++;
		}
		PQfreemem(n);
	}
	db_succeed(db);
	return count;
}
