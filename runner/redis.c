/*
 * redis.c: the redis target of a run (docs/schedules.md, "Redis
 * targets"), in the runner child: one XADD (with MAXLEN ~), LPUSH or
 * PUBLISH of the run's body to its key, on the configured server or the
 * schedule's own.  redis_target_open() connects while the runner still
 * has the supervisor's identity (the configured server may be a unix
 * socket only that user may open); for the schedule's own server it
 * first resolves the host and checks every address against the host lists
 * (http_allow_hosts, http_deny_hosts) and against the configured server,
 * which a schedule reaches only through its owner's namespace, and then
 * connects to the address it checked (no second lookup to be steered);
 * that server's run_id must not be the configured server's (the same
 * server by any other address: ::1, ::ffff:127.0.0.1, a LAN address).
 * The runner may grow by 64 MiB at most for the replies (RLIMIT_AS).
 * redis_target_run() sends the command at the run's start time: Redis's
 * reply is the run's output (the stream entry's id, the list's length,
 * how many subscribers got it); an unreachable or refusing server is a
 * failure a retry may mend, a type error one it cannot.  Both take at
 * most the run's timeout.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "http.h"
#include "runner.h"

struct redis_target {
	redisContext *c;
};

static void redis_fail(struct result *res, enum result_status st, int retryable,
    const char *fmt, ...) CV_PRINTF(4, 5);

static void
redis_fail(struct result *res, enum result_status st, int retryable,
    const char *fmt, ...)
{
	char msg[RESULT_ERROR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	res->status = st;
	res->retryable = retryable;
	free(res->error);
	res->error = strdup(msg);
}

/*
 * An address as the comparison of servers sees it, into out: a
 * v4-mapped IPv6 address as its IPv4 address, every loopback address
 * (127.0.0.0/8, ::1) and every unspecified one (0.0.0.0, ::, which reach
 * the local host's listeners) as "loopback", anything else as written.
 */
static void
redis_addr_class(const char *ip, char *out, size_t len)
{
	static const unsigned char mapped[12] = {
	    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	unsigned char a6[16];

	if (redis_host_local(ip))
		snprintf(out, len, "loopback");
	else if (inet_pton(AF_INET6, ip, a6) == 1 &&
	    memcmp(a6, mapped, 12) == 0)
		inet_ntop(AF_INET, a6 + 12, out, (socklen_t)len);
	else if (snprintf(out, len, "%s", ip) >= (int)len)
		out[0] = '\0'; /* no address is that long */
}

/*
 * 1 if host (port) resolves to an address of ips (n of them, with
 * their_port), else 0: compared by class (redis_addr_class()), so that
 * ::1, ::ffff:127.0.0.1 and 0.0.0.0 are the loopback 127.0.0.1 is.
 */
static int
redis_same_server(const char *host, int port, char ips[][INET6_ADDRSTRLEN],
    int n, int their_port)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai, *p;
	char ip[INET6_ADDRSTRLEN], a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];
	int same = 0;

	if (port != their_port || getaddrinfo(host, NULL, &hints, &ai) != 0)
		return 0;
	for (p = ai; p != NULL && !same; p = p->ai_next) {
		const void *ad = p->ai_family == AF_INET
		    ? (void *)&((struct sockaddr_in *)p->ai_addr)->sin_addr
		    : (void *)&((struct sockaddr_in6 *)p->ai_addr)->sin6_addr;

		if (inet_ntop(p->ai_family, ad, ip, sizeof(ip)) == NULL)
			continue;
		redis_addr_class(ip, a, sizeof(a));
		for (int i = 0; i < n && !same; i++) {
			redis_addr_class(ips[i], b, sizeof(b));
			same = strcmp(a, b) == 0;
		}
	}
	freeaddrinfo(ai);
	return same;
}

/*
 * The run_id of the server c is connected to (INFO server), into out
 * (41 bytes); "" when it does not say (an error reply, a server that
 * wants a password it was not given).
 */
static void
redis_run_id(redisContext *c, char *out, size_t len)
{
	redisReply *r = redisCommand(c, "INFO server");
	const char *p;

	out[0] = '\0';
	if (r != NULL && r->type == REDIS_REPLY_STRING &&
	    (p = strstr(r->str, "run_id:")) != NULL)
		snprintf(out, len, "%.*s", (int)strcspn(p + 7, "\r\n"), p + 7);
	if (r != NULL)
		freeReplyObject(r);
}

/*
 * The address of u's host to connect to, into addr: every address it
 * resolves to allowed by the host lists and none the configured server's.
 * 0, or -1 with res set (refused: not retryable; unresolved: retryable).
 */
static int
redis_checked_addr(const struct run_spec *spec, const struct redis_url *u,
    char *addr, size_t len, struct result *res)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai, *p;
	char ips[16][INET6_ADDRSTRLEN], err[CV_ERRLEN];
	struct hostlist al, dl;
	struct redis_url mine;
	int n = 0, rc = 0, r;

	if ((r = getaddrinfo(u->host, NULL, &hints, &ai)) != 0) {
		redis_fail(res, RESULT_FAILED, 1, "redis: %s: %s", u->host,
		    gai_strerror(r));
		return -1;
	}
	for (p = ai; p != NULL && n < 16; p = p->ai_next) {
		const void *a = p->ai_family == AF_INET
		    ? (void *)&((struct sockaddr_in *)p->ai_addr)->sin_addr
		    : (void *)&((struct sockaddr_in6 *)p->ai_addr)->sin6_addr;

		if (inet_ntop(p->ai_family, a, ips[n], sizeof(ips[n])) != NULL)
			n++;
	}
	freeaddrinfo(ai);
	if (hostlist_parse(&al, spec->allow_hosts ? spec->allow_hosts : "", err,
	        sizeof(err)) == -1 ||
	    hostlist_parse(&dl, spec->deny_hosts ? spec->deny_hosts : "", err,
	        sizeof(err)) == -1) {
		redis_fail(
		    res, RESULT_ERROR, 0, "redis: the host lists: %s", err);
		return -1;
	}
	for (int i = 0; i < n && rc == 0; i++) {
		enum hostlist_verdict v =
		    hostlist_check(&al, &dl, u->host, ips[i]);

		if (v != HOSTLIST_OK) {
			redis_fail(res, RESULT_ERROR, 0, "refused: %s %s",
			    ips[i], hostlist_verdict_text(v));
			rc = -1;
		}
	}
	hostlist_clear(&al);
	hostlist_clear(&dl);
	if (rc == 0 && spec->redis_default != NULL &&
	    redis_url_parse(spec->redis_default, &mine, err, sizeof(err)) ==
	        0 &&
	    !mine.is_unix &&
	    redis_same_server(mine.host, mine.port, ips, n, u->port)) {
		redis_fail(res, RESULT_ERROR, 0,
		    "refused: %s leads to the configured Redis server "
		    "(redis_url), whose keys are kept apart by owner",
		    u->host);
		rc = -1;
	}
	if (rc == 0 && n == 0) {
		redis_fail(
		    res, RESULT_FAILED, 1, "redis: %s: no address", u->host);
		rc = -1;
	}
	if (rc == 0)
		snprintf(addr, len, "%s", ips[0]);
	return rc;
}

/*
 * Connects to spec's server (see the top); returns the connection, or
 * NULL with res set.
 */
void *
redis_target_open(const struct run_spec *spec, struct result *res)
{
	struct redis_target *t;
	struct redis_url u;
	char err[CV_ERRLEN], addr[INET6_ADDRSTRLEN], theirs[48] = "",
	                                             ours[48] = "";
	redisContext *dc;
	struct rlimit rl;
	long pages;
	FILE *fp;

	/*
	 * What a server sends back is kept whole by hiredis: the runner may
	 * grow by 64 MiB at most (a hostile server's endless reply fails the
	 * run instead of the machine).
	 */
	if ((fp = fopen("/proc/self/statm", "r")) != NULL) {
		if (fscanf(fp, "%ld", &pages) == 1 && pages > 0) {
			rl.rlim_cur = rl.rlim_max =
			    (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) +
			    (64u << 20);
			(void)setrlimit(RLIMIT_AS, &rl);
		}
		fclose(fp);
	}

	if (redis_url_parse(spec->url, &u, err, sizeof(err)) == -1) {
		redis_fail(res, RESULT_ERROR, 0, "redis: the URL: %s", err);
		return NULL;
	}
	if (spec->redis_checked && u.is_unix) {
		redis_fail(res, RESULT_ERROR, 0,
		    "refused: a schedule's own server may not be a unix socket");
		return NULL;
	}
	if (spec->redis_checked &&
	    redis_checked_addr(spec, &u, addr, sizeof(addr), res) == -1) {
		explicit_bzero(&u, sizeof(u));
		return NULL;
	}
	/* The configured server's identity, to know it by any address. */
	if (spec->redis_checked && spec->redis_default != NULL &&
	    (dc = redis_open(spec->redis_default, 2000, err, sizeof(err))) !=
	        NULL) {
		redis_run_id(dc, theirs, sizeof(theirs));
		redisFree(dc);
	}
	if ((t = calloc(1, sizeof(*t))) == NULL ||
	    (t->c = redis_connect(&u, spec->redis_checked ? addr : NULL,
	         spec->timeout * 1000, err, sizeof(err))) == NULL) {
		redis_fail(res, RESULT_FAILED, 1, "redis: %s",
		    t == NULL ? "out of memory" : err);
		free(t);
		t = NULL;
	} else if (theirs[0] != '\0') {
		redis_run_id(t->c, ours, sizeof(ours));
		if (strcmp(ours, theirs) == 0) {
			redis_fail(res, RESULT_ERROR, 0,
			    "refused: %s leads to the configured Redis server "
			    "(redis_url), whose keys are kept apart by owner",
			    u.host);
			redisFree(t->c);
			free(t);
			t = NULL;
		}
	}
	explicit_bzero(&u, sizeof(u));
	return t;
}

/* Error replies a retry cannot mend. */
static int
redis_final(const char *msg)
{
	static const char *const final[] = {
	    "WRONGTYPE", "NOPERM", "NOAUTH", "WRONGPASS", "ERR syntax", NULL};

	for (int i = 0; final[i]; i++)
		if (strncmp(msg, final[i], strlen(final[i])) == 0)
			return 1;
	return 0;
}

/* Sends the command on conn (from redis_target_open()) and fills res. */
void
redis_target_run(void *conn, const struct run_spec *spec, struct result *res)
{
	struct redis_target *t = conn;
	int64_t u0, s0, u1, s1, rss, start = clock_us();
	const char *cmd = spec->redis_command, *argv[10];
	size_t lens[10];
	char maxlen[24], out[64];
	redisReply *r;
	int n = 0;

	http_cpu(&u0, &s0, &rss);
	if (strcmp(cmd, "xadd") == 0) {
		snprintf(maxlen, sizeof(maxlen), "%lld",
		    (long long)spec->redis_maxlen);
		argv[n++] = "XADD";
		argv[n++] = spec->redis_key;
		argv[n++] = "MAXLEN";
		argv[n++] = "~";
		argv[n++] = maxlen;
		argv[n++] = "*";
		argv[n++] = "body";
		argv[n++] = spec->body;
		argv[n++] = "run_id";
		argv[n++] = spec->run_id != NULL ? spec->run_id : "";
	} else {
		argv[n++] = strcmp(cmd, "lpush") == 0 ? "LPUSH" : "PUBLISH";
		argv[n++] = spec->redis_key;
		argv[n++] = spec->body;
	}
	for (int i = 0; i < n; i++)
		lens[i] =
		    argv[i] == spec->body ? spec->body_len : strlen(argv[i]);
	r = redisCommandArgv(t->c, n, argv, lens);
	if (r == NULL) {
		int timeout = t->c->err == REDIS_ERR_IO &&
		    (errno == EAGAIN || errno == ETIMEDOUT);

		redis_fail(res, timeout ? RESULT_TIMEOUT : RESULT_FAILED, 1,
		    "redis: %s", timeout ? "no answer in time" : t->c->errstr);
	} else if (r->type == REDIS_REPLY_ERROR) {
		redis_fail(res, RESULT_FAILED, !redis_final(r->str),
		    "redis: %s: %.1000s", argv[0], r->str);
	} else {
		if (r->type == REDIS_REPLY_INTEGER)
			snprintf(
			    out, sizeof(out), "%lld", (long long)r->integer);
		else if (r->type == REDIS_REPLY_STRING ||
		    r->type == REDIS_REPLY_STATUS)
			snprintf(out, sizeof(out), "%.*s", (int)r->len, r->str);
		else
			snprintf(out, sizeof(out), "(reply type %d)", r->type);
		res->status = RESULT_OK;
		/* A list keeps its newest maxlen items, as a stream does. */
		if (strcmp(cmd, "lpush") == 0) {
			char stop[24];
			const char *trim[4] = {
			    "LTRIM", spec->redis_key, "0", stop};
			redisReply *tr;

			snprintf(stop, sizeof(stop), "%lld",
			    (long long)spec->redis_maxlen - 1);
			tr = redisCommandArgv(t->c, 4, trim, NULL);
			if (tr == NULL || tr->type == REDIS_REPLY_ERROR)
				redis_fail(res, RESULT_FAILED, 1,
				    "redis: LTRIM after the LPUSH: %.1000s",
				    tr ? tr->str : t->c->errstr);
			if (tr != NULL)
				freeReplyObject(tr);
		}
		free(res->output);
		res->output = strdup(out);
		res->output_len = res->output != NULL ? strlen(out) : 0;
	}
	if (r != NULL)
		freeReplyObject(r);
	res->duration_us = clock_us() - start;
	http_cpu(&u1, &s1, &rss);
	res->cpu_user_us = u1 - u0;
	res->cpu_sys_us = s1 - s0;
	res->max_rss_kb = rss;
}
