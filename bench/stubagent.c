/*
 * stubagent.c: the agent of bench/agents.py (issue 19's "Measured"), a
 * small HTTP/1.1 server on a loopback port that answers every POST at once
 * and does nothing else, so that its own CPU stays small beside the
 * systems that call it.  The same stub serves cronvisor's runners (one
 * connection per request) and the BullMQ worker (keep-alive connections),
 * and its CPU is counted apart from theirs.
 *
 *   stubagent PORT-FILE [LOG-FILE]
 *
 * It listens on 127.0.0.1 (a port the kernel picks), writes the port to
 * PORT-FILE (through a temporary file and rename), and answers by path:
 *
 *   /ok      200 {"answer": 42}          (the job ends with that result)
 *   /async   202 {"accepted": true}      (the job waits for a report; the
 *                                          stub never reports: bench/agents.py
 *                                          sends the reports itself)
 *   other    404
 *
 * With LOG-FILE, one line per request: "PATH JOB-ID TOKEN MICROSECONDS",
 * the job id from X-Job-Id, the token from the body's "token" member (the
 * callback's; "-" when absent), the time the request was complete
 * (CLOCK_REALTIME).  Lines are written once per loop turn, not per request.
 * The body of the first request to /ok and to /async is also written whole
 * to LOG-FILE.ok and LOG-FILE.async: what cronvisor sent, which
 * bench/peers/bullmq_agent.js copies so that BullMQ sends the same.
 * SIGTERM or SIGINT (through a signalfd) flushes the log and exits 0.
 *
 * Requests are parsed only as far as this needs: the request line, the
 * headers Content-Length, Connection and X-Job-Id, and a body of at most
 * BUF_MAX minus the head.  No chunked bodies: neither client sends them.
 */
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define BUF_MAX 65536  /* one request, head and body */
#define LOG_MAX 262144 /* log bytes kept before a write */

struct conn {
	int fd;            /* the client's socket */
	size_t len;        /* bytes in buf */
	char buf[BUF_MAX]; /* what came and is not answered yet */
};

static struct {
	const char *logname;  /* LOG-FILE, or NULL */
	int saved[2];         /* the first body of /ok, /async was saved */
	int logfd;            /* LOG-FILE, or -1 */
	size_t loglen;        /* bytes in logbuf */
	char logbuf[LOG_MAX]; /* lines not written yet */
} stub = {.logfd = -1};

static const char ok_answer[] = "HTTP/1.1 200 OK\r\n"
                                "Content-Type: application/json\r\n"
                                "Content-Length: 14\r\n\r\n"
                                "{\"answer\": 42}";
static const char async_answer[] = "HTTP/1.1 202 Accepted\r\n"
                                   "Content-Type: application/json\r\n"
                                   "Content-Length: 18\r\n\r\n"
                                   "{\"accepted\": true}";
static const char none_answer[] = "HTTP/1.1 404 Not Found\r\n"
                                  "Content-Length: 0\r\n\r\n";

static _Noreturn void
die(const char *what)
{
	perror(what);
	exit(1);
}

static void
log_flush(void)
{
	size_t off = 0;
	ssize_t n;

	while (off < stub.loglen) {
		n = write(stub.logfd, stub.logbuf + off, stub.loglen - off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			die("stubagent: log");
		off += (size_t)n;
	}
	stub.loglen = 0;
}

/*
 * The value of header name in head (len bytes, the request line and the
 * headers), copied into out (at most outlen - 1 bytes); 0 if found.
 */
static int
header(const char *head, size_t len, const char *name, char *out, size_t outlen)
{
	size_t nl = strlen(name), i = 0, j;

	while (i < len) {
		const char *eol = memchr(head + i, '\n', len - i);
		size_t end = eol ? (size_t)(eol - head) : len;

		if (end - i > nl + 1 && strncasecmp(head + i, name, nl) == 0 &&
		    head[i + nl] == ':') {
			for (j = i + nl + 1; j < end && head[j] == ' '; j++)
				;
			while (end > j &&
			    (head[end - 1] == '\r' || head[end - 1] == ' '))
				end--;
			if (end - j >= outlen)
				end = j + outlen - 1;
			memcpy(out, head + j, end - j);
			out[end - j] = '\0';
			return 0;
		}
		i = end + 1;
	}
	return -1;
}

/* The body's "token": "..." value into out, or "-". */
static void
body_token(const char *body, size_t len, char *out, size_t outlen)
{
	const char *p = memmem(body, len, "\"token\"", 7), *end = body + len;
	size_t n = 0;

	strcpy(out, "-");
	if (p == NULL)
		return;
	for (p += 7; p < end && (*p == ' ' || *p == ':'); p++)
		;
	if (p >= end || *p != '"')
		return;
	for (p++; p < end && *p != '"' && n + 1 < outlen; p++)
		out[n++] = *p;
	out[n] = '\0';
}

/* Writes the first body of path (which 0 /ok, 1 /async) to LOG-FILE.name. */
static void
save_body(int which, const char *name, const char *body, size_t blen)
{
	char fn[4096];
	FILE *f;

	if (stub.logname == NULL || stub.saved[which])
		return;
	stub.saved[which] = 1;
	snprintf(fn, sizeof(fn), "%s.%s", stub.logname, name);
	if ((f = fopen(fn, "w")) == NULL)
		die(fn);
	if (fwrite(body, 1, blen, f) != blen || fclose(f) == EOF)
		die(fn);
}

static void
log_request(const char *path, const char *head, size_t hlen, const char *body,
    size_t blen)
{
	char job[80] = "-", token[160];
	struct timespec ts;
	int n;

	if (stub.logfd == -1)
		return;
	(void)header(head, hlen, "X-Job-Id", job, sizeof(job));
	body_token(body, blen, token, sizeof(token));
	clock_gettime(CLOCK_REALTIME, &ts);
	if (stub.loglen + 512 > LOG_MAX)
		log_flush();
	n = snprintf(stub.logbuf + stub.loglen, LOG_MAX - stub.loglen,
	    "%s %s %s %lld\n", path, job, token,
	    (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
	stub.loglen += (size_t)n;
}

static void
conn_close(int ep, struct conn *c)
{
	epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c);
}

/*
 * Answers every complete request in c->buf.  Returns 0 to keep the
 * connection, -1 to close it (Connection: close, HTTP/1.0, a request too
 * large or malformed, a failed write).  The answers are small: a write
 * that does not take one whole closes the connection instead of queueing.
 */
static int
serve(struct conn *c)
{
	char cl[32], conn[32], path[64];
	const char *answer;
	size_t hlen, blen, alen;
	char *eoh, *sp;
	int keep;

	while ((eoh = memmem(c->buf, c->len, "\r\n\r\n", 4)) != NULL) {
		hlen = (size_t)(eoh - c->buf) + 4;
		blen = header(c->buf, hlen, "Content-Length", cl, sizeof(cl))
		    ? 0
		    : strtoul(cl, NULL, 10);
		if (hlen + blen > BUF_MAX)
			return -1;
		if (c->len < hlen + blen)
			return 0;
		keep = memmem(c->buf, hlen, " HTTP/1.1\r\n", 11) != NULL &&
		    (header(c->buf, hlen, "Connection", conn, sizeof(conn)) ||
		        strcasecmp(conn, "close") != 0);
		if ((sp = memchr(c->buf, ' ', hlen)) == NULL)
			return -1;
		snprintf(path, sizeof(path), "%.*s",
		    (int)strcspn(sp + 1, " ?\r\n"), sp + 1);
		if (strcmp(path, "/ok") == 0) {
			answer = ok_answer, alen = sizeof(ok_answer) - 1;
			save_body(0, "ok", c->buf + hlen, blen);
		} else if (strcmp(path, "/async") == 0) {
			answer = async_answer, alen = sizeof(async_answer) - 1;
			save_body(1, "async", c->buf + hlen, blen);
		} else
			answer = none_answer, alen = sizeof(none_answer) - 1;
		log_request(path, c->buf, hlen, c->buf + hlen, blen);
		if (send(c->fd, answer, alen, MSG_NOSIGNAL) != (ssize_t)alen)
			return -1;
		memmove(c->buf, c->buf + hlen + blen, c->len - hlen - blen);
		c->len -= hlen + blen;
		if (!keep)
			return -1;
	}
	return c->len < BUF_MAX ? 0 : -1;
}

/* Reads what c's socket has; -1 when it ended or failed. */
static int
readable(struct conn *c)
{
	ssize_t n;

	for (;;) {
		n = recv(c->fd, c->buf + c->len, BUF_MAX - c->len, 0);
		if (n > 0) {
			c->len += (size_t)n;
			if (serve(c) == -1)
				return -1;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		return n == -1 && errno == EAGAIN ? 0 : -1;
	}
}

static int
listener(const char *portfile)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof(sa);
	char tmp[4096];
	FILE *f;
	int fd, one = 1;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	         0)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 ||
	    listen(fd, 4096) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) == -1)
		die("stubagent: listen");
	snprintf(tmp, sizeof(tmp), "%s.tmp", portfile);
	if ((f = fopen(tmp, "w")) == NULL)
		die(tmp);
	fprintf(f, "%u\n", ntohs(sa.sin_port));
	if (fclose(f) == EOF || rename(tmp, portfile) == -1)
		die(portfile);
	return fd;
}

static void
accept_all(int ep, int lfd)
{
	struct epoll_event ev = {.events = EPOLLIN};
	struct conn *c;
	int fd, one = 1;

	while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) !=
	    -1) {
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if ((c = malloc(sizeof(*c))) == NULL)
			die("stubagent: malloc");
		c->fd = fd;
		c->len = 0;
		ev.data.ptr = c;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == -1)
			die("stubagent: epoll_ctl");
	}
}

int
main(int argc, char **argv)
{
	struct epoll_event ev = {.events = EPOLLIN}, evs[64];
	int ep, lfd, sfd, i, n;
	sigset_t ss;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: stubagent PORT-FILE [LOG-FILE]\n");
		return 2;
	}
	if (argc == 3)
		stub.logname = argv[2];
	if (argc == 3 &&
	    (stub.logfd = open(argv[2],
	         O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) == -1)
		die(argv[2]);
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	if (sigprocmask(SIG_BLOCK, &ss, NULL) == -1 ||
	    (sfd = signalfd(-1, &ss, SFD_CLOEXEC)) == -1 ||
	    (ep = epoll_create1(EPOLL_CLOEXEC)) == -1)
		die("stubagent: setup");
	lfd = listener(argv[1]);
	ev.data.ptr = &lfd;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) == -1)
		die("stubagent: epoll_ctl");
	ev.data.ptr = &sfd;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev) == -1)
		die("stubagent: epoll_ctl");
	for (;;) {
		if ((n = epoll_wait(ep, evs, 64, -1)) == -1) {
			if (errno == EINTR)
				continue;
			die("stubagent: epoll_wait");
		}
		for (i = 0; i < n; i++) {
			if (evs[i].data.ptr == &sfd) {
				if (stub.logfd != -1)
					log_flush();
				return 0;
			}
			if (evs[i].data.ptr == &lfd)
				accept_all(ep, lfd);
			else if (readable(evs[i].data.ptr) == -1)
				conn_close(ep, evs[i].data.ptr);
		}
		if (stub.logfd != -1 && stub.loglen > 0)
			log_flush();
	}
}
