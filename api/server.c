/*
 * server.c: the cronvisor-api process.  It reads the configuration, binds
 * the FastCGI socket itself (libfcgi's FCGX_OpenSocket silently unlinks a
 * live socket, follows the umask and knows no IPv6), starts api_threads
 * workers, and then does nothing but wait for signals.  Each worker blocks
 * in FCGX_Accept_r on the shared socket, owns one PostgreSQL connection
 * (opened at its first request, reset at the next request after a lost
 * one, retried at most once a second while the database is away so that
 * requests get a quick 503), and turns one request into one response
 * through http.c and route.c.  Signals are blocked in every thread and
 * taken by sigwait() in main: TERM and INT stop the workers (libfcgi's
 * shutdown flag, then shutdown() on the listening socket wakes the
 * accepts; requests in progress complete), HUP reloads the log level.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <fcgiapp.h>

#include "api.h"

#define SERVER_BACKLOG         128  /* listen() backlog */
#define SERVER_DB_RETRY_MS     1000 /* least time between reconnects */
#define SERVER_JOIN_SECS       30   /* how long requests in progress may take */
#define SERVER_ACCEPT_PAUSE_MS 100  /* after a failed accept */

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
	int listen_fd;           /* the FastCGI socket */
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

/* Milliseconds on the monotonic clock, for reconnect pacing. */
static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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
	int64_t now = now_ms();
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
		w->db_retry_ms = now_ms() + SERVER_DB_RETRY_MS;
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
	if (http_request(fr, &api.cf, &rq, &buf, &rs) == 0 &&
	    (r = route_match(rq.method, rq.segs, rq.nsegs, &rs)) != NULL) {
		if (worker_db(w) == 0)
			rq.db = w->db;
		if (rq.db == NULL && !r->db_optional) {
			log_warnx("503: the database is unavailable");
			api_error(&rs, 503, "unavailable", NULL,
			    "the database cannot be reached; retry later");
		} else {
			authz = FCGX_GetParam("HTTP_AUTHORIZATION", fr->envp);
			rc = route_serve(r, &rq, authz != NULL ? authz : "",
			    &rs, err, sizeof(err));
			request_result(w, rc, &rs, err);
		}
		worker_db_after(w, rc);
	}
	if (http_send(fr->out, &rs) == -1)
		log_debug("the client went away before the response");
	http_response_clear(&rs);
	http_request_clear(&rq, &buf);
	explicit_bzero(&rq.who, sizeof(rq.who));
	log_prefix(NULL);
}

/*
 * A worker: accepts and serves requests until the server stops.  A failed
 * accept while not stopping (out of descriptors, say) is logged and
 * retried after a pause rather than losing the thread.
 */
static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	FCGX_Request fr;

	if (FCGX_InitRequest(&fr, api.listen_fd, 0) != 0) {
		log_warnx("FCGX_InitRequest failed");
		return NULL;
	}
	while (!atomic_load(&api.stopping)) {
		if (FCGX_Accept_r(&fr) < 0) {
			if (atomic_load(&api.stopping))
				break;
			log_warn("accept");
			nanosleep(&(struct timespec){0,
			              SERVER_ACCEPT_PAUSE_MS * 1000000L},
			    NULL);
			continue;
		}
		request_handle(w, &fr);
		FCGX_Finish_r(&fr);
	}
	FCGX_Free(&fr, 1);
	db_close(w->db);
	w->db = NULL;
	return NULL;
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

/* Opens the FastCGI socket api_listen names and listens on it. */
static void
setup_listen(void)
{
	const char *l = api.cf.api_listen;

	if (strncmp(l, "unix:", 5) == 0 && l[5] == '/')
		api.listen_fd = listen_unix(l + 5);
	else
		api.listen_fd = listen_tcp(l);
	if (listen(api.listen_fd, SERVER_BACKLOG) == -1)
		fatal("listen on %s", l);
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
 * Stops the workers: libfcgi's shutdown flag and ours, then shutdown() on
 * the listening socket, which makes every blocked accept() return; requests
 * in progress finish.  A worker still busy after SERVER_JOIN_SECS is
 * abandoned with a warning.  Returns 0, or -1 if one was abandoned.
 */
static int
stop_workers(void)
{
	struct timespec deadline;
	int rc = 0, e;

	atomic_store(&api.stopping, 1);
	FCGX_ShutdownPending();
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

/* Waits for signals until TERM or INT. */
static void
wait_signals(const sigset_t *set)
{
	int sig;

	for (;;) {
		if (sigwait(set, &sig) != 0)
			continue;
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
	log_init("cronvisor-api", LOG_LEVEL_INFO);
	api.config_path = CONFIG_PATH;
	if ((rc = config_daemon(
	         argc, argv, usage, &api.cf, &api.config_path, NULL)) != -1)
		return rc;
	log_setlevel(api.cf.log_level);
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
		config_clear(&api.cf);
		tz_cache_clear();
	}
	return 0;
}
