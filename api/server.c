/*
 * server.c: the cronvisor-api process.  It reads the configuration, binds
 * the FastCGI socket itself (libfcgi's FCGX_OpenSocket silently unlinks a
 * live socket, follows the umask and knows no IPv6) with the system's
 * listen backlog, starts api_threads workers, and then does nothing but
 * wait for signals and close kept connections left idle too long.
 *
 * Connections are accepted here, not by libfcgi, so that no worker is ever
 * tied to a connection that sends nothing.  libfcgi's own model pins a
 * thread to a connection from accept until the peer closes it: with
 * nginx's fastcgi_keep_conn every thread waited on a kept connection while
 * new connections queued behind them, and a client that sent one byte held
 * a thread for ever (issue 17).  Here every worker waits in epoll_wait() on
 * one shared epoll set holding the listening socket and every kept
 * connection between two requests (EPOLLONESHOT: one worker per event); the
 * worker that gets one serves one request on it through libfcgi and puts
 * the connection back into the set if nginx keeps it.  Every accepted
 * connection has SO_RCVTIMEO and SO_SNDTIMEO of api_io_timeout_seconds, so
 * a read or a write inside libfcgi waits that long at most, and a kept
 * connection idle SERVER_IDLE_SECS is closed.
 *
 * Each worker owns one PostgreSQL connection (opened at its first request,
 * reset at the next request after a lost one, retried at most once a
 * second while the database is away so that requests get a quick 503) and
 * turns one request into one response through http.c and route.c.
 * Signals are blocked in every thread and taken by sigtimedwait() in main:
 * TERM and INT stop the workers (an eventfd in the epoll set wakes them;
 * requests in progress complete), HUP reloads the log level.
 */
#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <fcgiapp.h>

#include "api.h"

#define SERVER_DB_RETRY_MS     1000  /* least time between reconnects */
#define SERVER_JOIN_SECS       30    /* time requests in progress may take */
#define SERVER_ACCEPT_PAUSE_MS 100   /* after a failed accept */
#define SERVER_IDLE_SECS       75    /* a kept connection idle so long closes */
#define SERVER_MAX_FDS         65536 /* most descriptors the table follows */
#define SERVER_DRAIN_MAX       65536 /* unread body a kept connection drops */

/*
 * What a connection's descriptor is doing, in server.conns[fd].  Only
 * CONN_IDLE matters: a worker woken for the descriptor, or the sweep of
 * idle connections, takes it from CONN_IDLE to CONN_BUSY with a
 * compare-and-swap, so exactly one of them goes on with it.  A descriptor
 * that libfcgi closed keeps CONN_BUSY until accept() hands the number out
 * again, which sets it.
 */
enum conn_state {
	CONN_BUSY, /* served by a worker, or closed */
	CONN_IDLE, /* kept between two requests, waiting in the epoll set */
};

/* One descriptor's entry in server.conns. */
struct conn {
	atomic_int state;        /* enum conn_state */
	atomic_llong idle_since; /* monotonic ms it became CONN_IDLE */
};

/* One worker thread: its FastCGI request and its database connection. */
struct worker {
	pthread_t thread;    /* the thread */
	int started;         /* 1: thread is running and must be joined */
	struct db *db;       /* its connection, NULL until first needed */
	int db_down;         /* 1: the last connect or a call lost it */
	int64_t db_retry_ms; /* no reconnect before this (monotonic ms) */
};

/* The process's one mutable global. */
struct server {
	struct config cf;        /* the configuration in force */
	const char *config_path; /* -f, or CONFIG_PATH */
	int listen_fd;           /* the FastCGI socket, non-blocking */
	int epoll_fd;            /* listen_fd, stop_fd and kept connections */
	int stop_fd;             /* eventfd, readable once stopping */
	struct conn *conns;      /* indexed by descriptor, nconns of them */
	int nconns;              /* RLIMIT_NOFILE, at most SERVER_MAX_FDS */
	char *unix_path;         /* its path for a unix socket, else NULL */
	dev_t unix_dev;          /* the socket file we made, to remove */
	ino_t unix_ino;          /*   only that file at exit */
	struct worker *workers;  /* api_threads of them */
	atomic_int stopping;     /* 1: TERM or INT arrived */
};

static struct server api;

/* Prints the usage to fp. */
static void
usage(FILE *fp)
{
	fprintf(fp,
	    "usage: cronvisor-api [-nh] [-f FILE]\n"
	    "  -f FILE  configuration file (default %s)\n"
	    "  -n       check the configuration, print it and exit\n"
	    "  -h       this help\n",
	    CONFIG_PATH);
}

/*
 * Makes sure w has a working connection: opens it the first time, resets
 * it after a loss.  While the database is away it tries at most once per
 * SERVER_DB_RETRY_MS and fails at once in between, so requests get a
 * quick 503 and never wait past libpq's connect_timeout.  Logs the moves
 * between up and down, not every failure.  Returns 0, or -1.
 */
static int
worker_db(struct worker *w)
{
	char err[CV_ERRLEN];
	int64_t now = clock_ms();
	int ok;

	if (w->db != NULL && !w->db_down && db_ok(w->db))
		return 0;
	if (w->db_down && now < w->db_retry_ms)
		return -1;
	err[0] = '\0';
	if (w->db == NULL)
		ok = (w->db = db_open(api.cf.database_url, err, sizeof(err))) !=
		    NULL;
	else
		ok = db_reset(w->db, err, sizeof(err)) == 0;
	/* An old schema (installed, not migrated) is unavailable too. */
	if (ok && migrate_check(w->db, err, sizeof(err)) == -1)
		ok = 0;
	if (!ok) {
		if (!w->db_down)
			log_warnx("database: %s", err);
		w->db_down = 1;
		w->db_retry_ms = clock_ms() + SERVER_DB_RETRY_MS;
		return -1;
	}
	if (w->db_down)
		log_info("database is back");
	w->db_down = 0;
	return 0;
}

/*
 * Notes, after a request, whether w's connection was lost (see
 * api_db_lost()): the next request resets it.  A transaction a failed handler
 * left open is rolled back.
 */
static void
worker_db_after(struct worker *w, int rc)
{
	if (w->db == NULL || w->db_down)
		return;
	if (api_db_lost(w->db)) {
		log_warnx("database connection lost; reconnecting at the next "
		          "request");
		w->db_down = 1;
		w->db_retry_ms = 0;
	} else if (rc != 0)
		db_rollback(w->db);
}

/*
 * Sets the thread's log prefix to the method and raw path of the request,
 * with anything unprintable escaped so that a URI cannot forge log lines.
 * The query is left out: it is the client's text and may be long.
 */
static void
request_prefix(const char *method, const char *uri)
{
	char path[120];
	size_t o = 0;

	for (;
	     uri != NULL && *uri != '\0' && *uri != '?' && o + 5 < sizeof(path);
	     uri++) {
		unsigned char c = (unsigned char)*uri;

		if (c < 0x20 || c >= 0x7f)
			o += (size_t)snprintf(
			    path + o, sizeof(path) - o, "\\x%02x", c);
		else
			path[o++] = (char)c;
	}
	path[o] = '\0';
	log_prefix("%.16s %s", method != NULL ? method : "-", path);
}

/*
 * Turns what the handler (or the route) returned into the final answer:
 * API_DB_FAILED is a 503 when the connection went away and a 500
 * otherwise, -1 (out of memory) or an unfilled response a 500.  Every 5xx
 * decided here is logged with its internal error text.
 */
static void
request_result(struct worker *w, int rc, struct response *rs, const char *err)
{
	if (rs->streamed) {
		/* the answer went out (emit): a failure now only ended it */
		if (rc == API_DB_FAILED)
			log_warnx("stream ended: database: %s", err);
		else if (rc == -1)
			log_warnx("stream ended: out of memory");
		return;
	}
	if (rc == API_DB_FAILED) {
		if (api_db_lost(w->db)) {
			log_warnx("503: database: %s", err);
			api_error(rs, 503, "unavailable", NULL,
			    "the database cannot be reached; retry later");
		} else
			api_error(
			    rs, 500, "internal", NULL, "database: %s", err);
	} else if (rc == -1)
		api_error(rs, 500, "internal", NULL, "out of memory%s%s",
		    err[0] ? ": " : "", err);
	else if (rs->status == 0)
		api_error(rs, 500, "internal", NULL,
		    "the handler gave no answer%s%s", err[0] ? ": " : "", err);
}

/* rq->emit: writes to the FastCGI stream and flushes; -1 if it failed. */
static int
server_emit(void *ctx, const char *buf, size_t len)
{
	FCGX_Stream *out = ctx;

	if (len > INT32_MAX || FCGX_PutStr(buf, (int)len, out) != (int)len ||
	    FCGX_FFlush(out) != 0 || FCGX_GetError(out) != 0)
		return -1;
	return 0;
}

/* rq->stopping */
static int
server_stopping(void)
{
	return atomic_load(&api.stopping);
}

/* 1 if the request's path is /metrics (any query), served apart. */
static int
metrics_path(const char *uri)
{
	return uri != NULL && strcspn(uri, "?") == 8 &&
	    strncmp(uri, "/metrics", 8) == 0;
}

/* GET /metrics (api/metrics.c): outside the API's routes and tokens. */
static void
metrics_request(
    struct worker *w, FCGX_Request *fr, struct request *rq, struct response *rs)
{
	const char *method = FCGX_GetParam("REQUEST_METHOD", fr->envp);
	const char *authz = FCGX_GetParam("HTTP_AUTHORIZATION", fr->envp);
	char err[CV_ERRLEN] = "";
	int rc;

	rq->method = method != NULL ? method : "";
	rq->cf = &api.cf;
	rq->query = "";
	rq->authorization = authz != NULL ? authz : "";
	rq->emit = server_emit;
	rq->emit_ctx = fr->out;
	rq->stopping = server_stopping;
	if (worker_db(w) == 0)
		rq->db = w->db;
	rc = metrics_serve(
	    rq, FCGX_GetParam("REMOTE_ADDR", fr->envp), rs, err, sizeof(err));
	request_result(w, rc, rs, err);
	worker_db_after(w, rc);
}

/* Handles one accepted FastCGI request from start to response. */
static void
request_handle(struct worker *w, FCGX_Request *fr)
{
	struct request rq;
	struct response rs;
	const struct route *r;
	const char *authz;
	char err[CV_ERRLEN] = "", *buf = NULL;
	int rc = 0;

	memset(&rq, 0, sizeof(rq));
	memset(&rs, 0, sizeof(rs));
	request_prefix(FCGX_GetParam("REQUEST_METHOD", fr->envp),
	    FCGX_GetParam("REQUEST_URI", fr->envp));
	if (metrics_path(FCGX_GetParam("REQUEST_URI", fr->envp)))
		metrics_request(w, fr, &rq, &rs);
	else if (http_request(fr, &api.cf, &rq, &buf, &rs) == 0 &&
	    (r = route_match(rq.method, rq.segs, rq.nsegs, &rs)) != NULL) {
		if (worker_db(w) == 0)
			rq.db = w->db;
		if (rq.db == NULL && !r->db_optional) {
			log_warnx("503: the database is unavailable");
			api_error(&rs, 503, "unavailable", NULL,
			    "the database cannot be reached; retry later");
		} else {
			authz = FCGX_GetParam("HTTP_AUTHORIZATION", fr->envp);
			rq.authorization = authz != NULL ? authz : "";
			rq.last_event_id =
			    FCGX_GetParam("HTTP_LAST_EVENT_ID", fr->envp);
			rq.emit = server_emit;
			rq.emit_ctx = fr->out;
			rq.stopping = server_stopping;
			rc = route_serve(r, &rq, authz != NULL ? authz : "",
			    &rs, err, sizeof(err));
			request_result(w, rc, &rs, err);
		}
		worker_db_after(w, rc);
	}
	if (!rs.streamed && http_send(fr->out, &rs) == -1)
		log_debug("the client went away before the response");
	http_response_clear(&rs);
	http_request_clear(&rq, &buf);
	explicit_bzero(&rq.who, sizeof(rq.who));
	log_prefix(NULL);
}

/* Pauses after a failed accept or epoll_wait, so that it does not spin. */
static void
pause_briefly(void)
{
	nanosleep(
	    &(struct timespec){0, SERVER_ACCEPT_PAUSE_MS * 1000000L}, NULL);
}

/*
 * Puts the kept connection fd back into the epoll set, idle since now, to
 * wait for its next request (EPOLLONESHOT: the event goes to one worker and
 * disarms it).  The state is set before the descriptor is armed, so a
 * worker woken for it always finds CONN_IDLE.  fd is closed if it cannot
 * be armed.
 */
static void
conn_park(int fd)
{
	struct epoll_event ev = {
	    .events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT, .data.fd = fd};

	atomic_store(&api.conns[fd].idle_since, clock_ms());
	atomic_store(&api.conns[fd].state, CONN_IDLE);
	if (epoll_ctl(api.epoll_fd, EPOLL_CTL_MOD, fd, &ev) == 0 ||
	    (errno == ENOENT &&
	        epoll_ctl(api.epoll_fd, EPOLL_CTL_ADD, fd, &ev) == 0))
		return;
	log_warn("epoll_ctl");
	if (atomic_exchange(&api.conns[fd].state, CONN_BUSY) == CONN_IDLE)
		close(fd);
}

/*
 * Accepts one connection from the non-blocking listening socket (several
 * workers may wake for the same one: the others get EAGAIN) and gives it
 * the read and write deadline (a unix socket's connections do not inherit
 * SO_RCVTIMEO and SO_SNDTIMEO from the listening socket).  Returns its
 * descriptor, in CONN_BUSY, or -1 when there was none to take.
 */
static int
conn_accept(void)
{
	struct timeval tv = {.tv_sec = (time_t)api.cf.api_io_timeout_seconds};
	int fd;

	if ((fd = accept4(api.listen_fd, NULL, NULL, SOCK_CLOEXEC)) == -1) {
		if (errno != EAGAIN && errno != EWOULDBLOCK &&
		    errno != ECONNABORTED && errno != EINTR &&
		    !atomic_load(&api.stopping)) {
			/* Out of descriptors, say: it stays readable. */
			log_warn("accept");
			pause_briefly();
		}
		return -1;
	}
	if (fd >= api.nconns) {
		log_warnx("accept: descriptor %d is past the %d this server "
		          "follows; connection closed",
		    fd, api.nconns);
		close(fd);
		return -1;
	}
	/* TCP_NODELAY as libfcgi's accept sets it: a response goes out in
	 * several writes, and Nagle would hold the last one for an ACK. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == -1 ||
	    (api.unix_path == NULL &&
	        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){1},
	            sizeof(int)) == -1)) {
		log_warn("setsockopt on an accepted connection");
		close(fd);
		return -1;
	}
	atomic_store(&api.conns[fd].state, CONN_BUSY);
	return fd;
}

/*
 * Reads and drops what is left of the request's body (a request refused
 * before its body was read), so that a kept connection starts its next
 * request at a record boundary.  More than SERVER_DRAIN_MAX bytes, or a
 * read error, and the connection is not kept.
 */
static void
request_drain(FCGX_Request *fr)
{
	char trash[4096];
	size_t dropped = 0;
	int n;

	while ((n = FCGX_GetStr(trash, sizeof(trash), fr->in)) > 0)
		if ((dropped += (size_t)n) > SERVER_DRAIN_MAX)
			break;
	if (n != 0 || FCGX_GetError(fr->in) != 0)
		fr->keepConnection = 0;
}

/*
 * Serves one request on the connection fd (in CONN_BUSY, owned by the
 * caller), then parks it if nginx keeps it (FCGI_KEEP_CONN) or lets
 * libfcgi close it.  A connection with nothing to read yet is parked
 * without waiting.  libfcgi is handed the descriptor through fr's ipcFd
 * and keepConnection, the fields FCGX_Accept_r itself uses for a kept
 * connection (fcgiapp.h marks them internal: the ABI of libfcgi 2.4 has
 * not moved in twenty years, and tests/api_load.sh checks the behaviour).
 * fr's listen socket is -1, so where libfcgi would accept another
 * connection after a broken one (EOF, a protocol error, a read past the
 * deadline) it fails instead and the worker goes back to epoll_wait.
 * detached makes libfcgi close at once rather than linger up to 2 s
 * reading what the peer still sends.
 */
static void
conn_serve(struct worker *w, FCGX_Request *fr, int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};

	if (poll(&pfd, 1, 0) == 0) {
		conn_park(fd);
		return;
	}
	fr->ipcFd = fd;
	fr->keepConnection = 1; /* FCGX_Accept_r's first Finish keeps fd */
	fr->detached = 1;
	if (FCGX_Accept_r(fr) < 0)
		return; /* libfcgi closed it */
	request_handle(w, fr);
	request_drain(fr);
	fr->detached = 1;
	FCGX_Finish_r(fr);
	if (fr->ipcFd >= 0) {
		fd = fr->ipcFd;
		fr->ipcFd = -1;
		conn_park(fd);
	}
}

/*
 * A worker: waits in the shared epoll set and serves one request per
 * event, a new connection or a kept one with its next request, until the
 * server stops.
 */
static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	struct epoll_event ev;
	FCGX_Request fr;
	int fd, n;

	if (FCGX_InitRequest(&fr, -1, 0) != 0) {
		log_warnx("FCGX_InitRequest failed");
		return NULL;
	}
	while (!atomic_load(&api.stopping)) {
		if ((n = epoll_wait(api.epoll_fd, &ev, 1, -1)) == -1) {
			if (errno != EINTR) {
				log_warn("epoll_wait");
				pause_briefly();
			}
			continue;
		}
		if (n == 0 || ev.data.fd == api.stop_fd)
			continue;
		if (ev.data.fd == api.listen_fd) {
			if ((fd = conn_accept()) == -1)
				continue;
		} else {
			fd = ev.data.fd;
			if (!atomic_compare_exchange_strong(
			        &api.conns[fd].state, &(int){CONN_IDLE},
			        CONN_BUSY))
				continue; /* the sweep took it */
		}
		conn_serve(w, &fr, fd);
		/*
		 * Then one connection from the backlog, if one waits: the
		 * listening socket is one entry of the epoll set beside every
		 * kept connection, and would otherwise get one turn in as many,
		 * leaving new connections (nginx makes them when all it keeps
		 * are busy) to wait seconds behind the kept ones.
		 */
		if (!atomic_load(&api.stopping) && (fd = conn_accept()) != -1)
			conn_serve(w, &fr, fd);
	}
	FCGX_Free(&fr, 1);
	db_close(w->db);
	w->db = NULL;
	return NULL;
}

/*
 * Closes the kept connections idle for SERVER_IDLE_SECS: nginx closes its
 * own after its keepalive_timeout (60 s in the shipped snippet), so these
 * are connections nginx forgot or another local client's.  Called from
 * main once a second.
 */
static void
conn_sweep(void)
{
	int64_t old = clock_ms() - SERVER_IDLE_SECS * 1000;

	for (int fd = 0; fd < api.nconns; fd++) {
		struct conn *c = &api.conns[fd];

		if (atomic_load(&c->state) != CONN_IDLE ||
		    atomic_load(&c->idle_since) > old)
			continue;
		if (atomic_compare_exchange_strong(
		        &c->state, &(int){CONN_IDLE}, CONN_BUSY))
			close(fd);
	}
}

/*
 * Whether something listens on the unix socket path: connect() succeeds
 * (or its backlog is full, EAGAIN).  A refused connection is a stale file.
 */
static int
unix_in_use(const struct sockaddr_un *sun)
{
	int fd, rc;

	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		fatal("socket");
	rc = connect(fd, (const struct sockaddr *)sun, sizeof(*sun));
	rc = rc == 0 || errno == EAGAIN;
	close(fd);
	return rc;
}

/*
 * Applies api_socket_mode and api_socket_group to the socket file.  An
 * unknown group or a refused chown (not root, and not a member of the
 * group) is a startup error that says so.
 */
static void
unix_permissions(const char *path)
{
	const char *group = api.cf.api_socket_group;
	mode_t mode = (mode_t)strtol(api.cf.api_socket_mode, NULL, 8);
	struct group gr, *res = NULL;
	char buf[4096];
	int e;

	if (chmod(path, mode) == -1)
		fatal("chmod %s to %s (api_socket_mode)", path,
		    api.cf.api_socket_mode);
	if (group[0] == '\0')
		return;
	if ((e = getgrnam_r(group, &gr, buf, sizeof(buf), &res)) != 0 ||
	    res == NULL) {
		unlink(path);
		if (e != 0)
			errno = e, fatal("api_socket_group \"%s\"", group);
		fatalx("api_socket_group: no group named \"%s\"", group);
	}
	if (chown(path, (uid_t)-1, gr.gr_gid) == -1) {
		e = errno;
		unlink(path);
		errno = e;
		fatal("api_socket_group: cannot give %s to group \"%s\" (run "
		      "as root or as a member of it, or set api_socket_group "
		      "to \"\")",
		    path, group);
	}
}

/*
 * Binds the unix socket at path without ever taking it from a running
 * server: a path something listens on is a startup error, a stale socket
 * file is removed, anything else that is not a socket is left alone and
 * refused.  The socket is born 0600 (umask) and then gets its configured
 * mode and group, so there is no moment when others may connect.
 */
static int
listen_unix(const char *path)
{
	struct sockaddr_un sun;
	struct stat st;
	mode_t old;
	int fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path))
		fatalx("api_listen: socket path %s is too long", path);
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			fatalx(
			    "api_listen: %s exists and is not a socket", path);
		if (unix_in_use(&sun))
			fatalx("another process is listening on %s", path);
		log_info("removing the stale socket %s", path);
		if (unlink(path) == -1 && errno != ENOENT)
			fatal("unlink %s", path);
	} else if (errno != ENOENT)
		fatal("api_listen: %s", path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		fatal("socket");
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		umask(old);
		fatal("api_listen: bind %s", path);
	}
	umask(old);
	if (stat(path, &st) == -1)
		fatal("stat %s", path);
	api.unix_dev = st.st_dev;
	api.unix_ino = st.st_ino;
	if ((api.unix_path = strdup(path)) == NULL)
		fatal("strdup");
	unix_permissions(path);
	return fd;
}

/*
 * Binds a loopback TCP socket: "127.0.0.1:PORT", "localhost:PORT" (taken
 * as 127.0.0.1, without asking a resolver) or "[::1]:PORT".
 */
static int
listen_tcp(const char *spec)
{
	const char *colon = strrchr(spec, ':');
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	size_t hlen = colon != NULL ? (size_t)(colon - spec) : 0;
	socklen_t slen;
	char *end;
	long port;
	int fd, on = 1;

	port = colon != NULL ? strtol(colon + 1, &end, 10) : 0;
	if (colon == NULL || colon[1] == '\0' || *end != '\0' || port < 1 ||
	    port > 65535)
		fatalx("api_listen: \"%s\" is not unix:/PATH, 127.0.0.1:PORT, "
		       "[::1]:PORT or localhost:PORT",
		    spec);
	memset(&ss, 0, sizeof(ss));
	if ((hlen == 9 && strncmp(spec, "127.0.0.1", 9) == 0) ||
	    (hlen == 9 && strncmp(spec, "localhost", 9) == 0)) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		slen = sizeof(*sin);
	} else if (hlen == 5 && strncmp(spec, "[::1]", 5) == 0) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		sin6->sin6_addr = in6addr_loopback;
		slen = sizeof(*sin6);
	} else
		fatalx(
		    "api_listen: \"%s\" is not a loopback address (unix:/PATH, "
		    "127.0.0.1:PORT, [::1]:PORT or localhost:PORT)",
		    spec);
	if ((fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		fatal("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	if (bind(fd, (struct sockaddr *)&ss, slen) == -1)
		fatal("api_listen: bind %s", spec);
	return fd;
}

/*
 * The listen backlog: the system's most, net.core.somaxconn (4096 on
 * current kernels), which listen() would cap a larger number to anyway.
 * Connections nginx makes while every worker is busy wait there; past it
 * nginx's connect() fails with EAGAIN and nginx answers 502, which the
 * shipped snippet turns into 503 with Retry-After.
 */
static int
listen_backlog(void)
{
	FILE *fp;
	int n = 0;

	if ((fp = fopen("/proc/sys/net/core/somaxconn", "re")) != NULL) {
		if (fscanf(fp, "%d", &n) != 1)
			n = 0;
		fclose(fp);
	}
	return n > 0 ? n : SOMAXCONN;
}

/*
 * Opens the FastCGI socket api_listen names and listens on it, and makes
 * the epoll set the workers wait in, the stop eventfd and the table of
 * connections.
 */
static void
setup_listen(void)
{
	const char *l = api.cf.api_listen;
	struct epoll_event ev = {.events = EPOLLIN};
	struct rlimit rl;
	int backlog = listen_backlog();

	if (strncmp(l, "unix:", 5) == 0 && l[5] == '/')
		api.listen_fd = listen_unix(l + 5);
	else
		api.listen_fd = listen_tcp(l);
	if (listen(api.listen_fd, backlog) == -1)
		fatal("listen on %s", l);
	if (fcntl(api.listen_fd, F_SETFL,
	        fcntl(api.listen_fd, F_GETFL) | O_NONBLOCK) == -1)
		fatal("fcntl");
	api.nconns = SERVER_MAX_FDS;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < SERVER_MAX_FDS)
		api.nconns = (int)rl.rlim_cur;
	if ((api.conns = calloc((size_t)api.nconns, sizeof(*api.conns))) ==
	    NULL)
		fatal("calloc");
	if ((api.epoll_fd = epoll_create1(EPOLL_CLOEXEC)) == -1 ||
	    (api.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) == -1)
		fatal("epoll_create1");
	ev.data.fd = api.listen_fd;
	if (epoll_ctl(api.epoll_fd, EPOLL_CTL_ADD, api.listen_fd, &ev) == -1)
		fatal("epoll_ctl");
	ev.data.fd = api.stop_fd;
	if (epoll_ctl(api.epoll_fd, EPOLL_CTL_ADD, api.stop_fd, &ev) == -1)
		fatal("epoll_ctl");
	log_debug("listen backlog %d, read and write deadline %llds", backlog,
	    (long long)api.cf.api_io_timeout_seconds);
}

/* Removes the socket file, if it is still the one this process made. */
static void
remove_socket(void)
{
	struct stat st;

	if (api.unix_path == NULL)
		return;
	if (lstat(api.unix_path, &st) == 0 && st.st_dev == api.unix_dev &&
	    st.st_ino == api.unix_ino && unlink(api.unix_path) == -1)
		log_warn("unlink %s", api.unix_path);
	free(api.unix_path);
	api.unix_path = NULL;
}

/*
 * Blocks the signals main takes with sigwait() (and SIGPIPE and SIGUSR1,
 * on which libfcgi's handlers would stop the accept loops behind our back)
 * before any thread exists, so every thread inherits the mask.
 */
static void
setup_signals(sigset_t *wait_set)
{
	sigset_t block;

	sigemptyset(wait_set);
	sigaddset(wait_set, SIGTERM);
	sigaddset(wait_set, SIGINT);
	sigaddset(wait_set, SIGHUP);
	block = *wait_set;
	sigaddset(&block, SIGPIPE);
	sigaddset(&block, SIGUSR1);
	if (pthread_sigmask(SIG_BLOCK, &block, NULL) != 0)
		fatalx("pthread_sigmask failed");
	signal(SIGPIPE, SIG_IGN);
}

/* Starts the workers. */
static void
start_workers(void)
{
	int e;

	if ((api.workers = calloc(
	         (size_t)api.cf.api_threads, sizeof(*api.workers))) == NULL)
		fatal("calloc");
	for (int64_t i = 0; i < api.cf.api_threads; i++) {
		struct worker *w = &api.workers[i];

		if ((e = pthread_create(&w->thread, NULL, worker_main, w)) != 0)
			errno = e, fatal("pthread_create");
		w->started = 1;
	}
}

/*
 * Stops the workers: libfcgi's shutdown flag and ours, then the stop
 * eventfd, which stays readable and so wakes every worker in epoll_wait(),
 * and shutdown() on the listening socket, which refuses new connections;
 * requests in progress finish.  A worker still busy after SERVER_JOIN_SECS is
 * abandoned with a warning.  Returns 0, or -1 if one was abandoned.
 */
static int
stop_workers(void)
{
	struct timespec deadline;
	int rc = 0, e;

	atomic_store(&api.stopping, 1);
	FCGX_ShutdownPending();
	if (eventfd_write(api.stop_fd, 1) == -1)
		log_warn("eventfd_write");
	if (shutdown(api.listen_fd, SHUT_RDWR) == -1)
		log_warn("shutdown of the listening socket");
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += SERVER_JOIN_SECS;
	for (int64_t i = 0; i < api.cf.api_threads; i++) {
		if (!api.workers[i].started)
			continue;
		if ((e = pthread_timedjoin_np(
		         api.workers[i].thread, NULL, &deadline)) != 0) {
			log_warnx("a worker is still busy after %ds; exiting "
			          "without it",
			    SERVER_JOIN_SECS);
			rc = -1;
			break;
		}
	}
	close(api.listen_fd);
	return rc;
}

/* Reads the configuration again on SIGHUP; only its log level applies. */
static void
reload(void)
{
	struct config cf;
	char err[CV_ERRLEN];

	memset(&cf, 0, sizeof(cf));
	config_defaults(&cf);
	if (config_load(&cf, api.config_path,
	        strcmp(api.config_path, CONFIG_PATH) != 0, err,
	        sizeof(err)) == -1) {
		log_warnx("reload: %s; keeping the running configuration", err);
		config_clear(&cf);
		return;
	}
	log_setlevel(cf.log_level);
	log_info("reloaded: log level %s (other settings need a restart)",
	    log_level_name(cf.log_level));
	config_clear(&cf);
}

/*
 * Waits for signals until TERM or INT, and closes idle kept connections
 * once a second meanwhile.
 */
static void
wait_signals(const sigset_t *set)
{
	struct timespec tick = {1, 0};
	int sig;

	for (;;) {
		if ((sig = sigtimedwait(set, NULL, &tick)) == -1) {
			if (errno == EAGAIN)
				conn_sweep();
			continue;
		}
		if (sig == SIGHUP) {
			reload();
			continue;
		}
		log_info("stopping on signal %d", sig);
		return;
	}
}

/*
 * cronvisor-api [-nh] [-f FILE]: reads the configuration, binds the
 * socket, starts the workers and waits for a stop signal.  Exits 0 after a
 * clean stop, 1 on a startup error, 2 on a usage error.
 */
int
main(int argc, char **argv)
{
	sigset_t set;
	int rc;

	io_fix_stdio();
	/*
	 * Each request's answers (a page of 100 schedules is some 60 KiB)
	 * are allocated and freed by the worker threads: memory kept by
	 * malloc for the next request, not handed back to the kernel and
	 * faulted in again (madvise and TLB shootdowns across the threads
	 * cost more than the page itself).
	 */
	mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024);
	mallopt(M_MMAP_THRESHOLD, 4 * 1024 * 1024);
	log_init("cronvisor-api", LOG_LEVEL_INFO);
	api.config_path = CONFIG_PATH;
	if ((rc = config_daemon(
	         argc, argv, usage, &api.cf, &api.config_path, NULL)) != -1)
		return rc;
	log_setlevel(api.cf.log_level);
	db_configure(api.cf.db_timeout_ms);
	setup_signals(&set);
	if (FCGX_Init() != 0)
		fatalx("FCGX_Init failed");
	setup_listen();
	start_workers();
	log_info("listening on %s with %lld threads (version %s)",
	    api.cf.api_listen, (long long)api.cf.api_threads, CV_VERSION);
	wait_signals(&set);
	rc = stop_workers();
	remove_socket();
	log_info("stopped");
	if (rc == 0) {
		free(api.workers);
		free(api.conns);
		config_clear(&api.cf);
		tz_cache_clear();
	}
	return 0;
}
