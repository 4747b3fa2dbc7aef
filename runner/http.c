/*
 * http.c: an http target, made by libcurl in the runner itself, and the
 * one file that speaks libcurl's and jansson's error dialects.  The
 * request runs on a curl multi handle so that the runner's loop stays the
 * same as for a command: curl_multi_poll() waits on curl's sockets and on
 * the runner's signalfd together, so SIGALRM (the timeout) and SIGTERM (a
 * stop) end the request at once, with no signal handler and no longjmp.
 *
 * Choices an operator should know:
 *  - Only http and https, also for the URL given: libcurl would otherwise
 *    read file:// URLs, as the runner's user.
 *  - No proxy unless the run names one.  libcurl reads http_proxy and
 *    friends from the environment by default, and the supervisor's
 *    environment (a systemd unit, a shell) is not the schedule's choice;
 *    a proxy picked up by accident would see every payload.
 *  - Redirects are not followed unless http_max_redirects says so: a 3xx
 *    is then a failure that names the Location.  Following one turns a
 *    POST into a GET (libcurl's browser rules for 301-303) and carries the
 *    payload to another host; the schedule should name the final URL.
 *  - Every host is checked against http_allow_hosts and http_deny_hosts
 *    (common/hostlist.c), three times: the URL's host before anything
 *    happens; every address libcurl is about to connect to, in its
 *    open-socket callback, with the host of the URL of that moment (so a
 *    redirect hop and a name that resolves to a denied address are both
 *    refused before a connection exists); and every request before it is
 *    sent, in the pre-request callback, with the address of the
 *    connection (which covers a reused one).  A refusal fails the run and
 *    is not retried: the same URL would be refused again.
 *  - Success is a 2xx.  Any other status fails and may be retried, unless
 *    the body is JSON with "retryable": false (seed 002's receivers say so
 *    for requests they will never accept).
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "http.h"

#define HTTP_HEAD_MAX 16384 /* response bytes kept to read a verdict */

/* One request in flight. */
struct http_call {
	CURL *easy;                   /* the request */
	CURLM *multi;                 /* its multi handle, for polling */
	struct curl_slist *hdrs;      /* request headers */
	struct tail tail;             /* the response body's tail */
	char head[HTTP_HEAD_MAX];     /* the start of the response body */
	size_t headlen;               /* bytes in head */
	uint64_t total;               /* response body bytes in all */
	char errbuf[CURL_ERROR_SIZE]; /* libcurl's message for a failure */
	CURLcode code;                /* how the transfer ended */
	int added;                    /* 1: on its multi handle */
	int64_t t0;                   /* clock_us() when it began */
	int timed_out;                /* 1: SIGALRM ended it */
	int interrupted;              /* 1: SIGTERM ended it */
	struct hostlist allow;        /* http_allow_hosts, parsed */
	struct hostlist deny;         /* http_deny_hosts, parsed */
	char refused[1024];           /* why a host was refused, "" if not */
	struct receiver_url recv;     /* spec->receiver_url, parsed */
	int has_recv;                 /* 1: recv is set */
	int recv_resolved;            /* 1: recv_ips is filled */
	char recv_addr[8][INET6_ADDRSTRLEN]; /* the receiver's addresses */
	const char *recv_ips[9];             /* them, NULL-terminated */
};

/*
 * Copies the host of url into host (len bytes) as libcurl reads it
 * (percent escapes decoded, IPv6 in brackets); falls back to the plain
 * reading of hostlist_url_host().  Returns 0, or -1 if there is none.
 */
static int
http_host(const char *url, char *host, size_t len)
{
	CURLU *u = curl_url();
	char *h = NULL;
	int rc = -1;

	if (u != NULL && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &h, CURLU_URLDECODE) == CURLUE_OK &&
	    h[0] != '\0' && strlen(h) < len) {
		memcpy(host, h, strlen(h) + 1);
		rc = 0;
	}
	curl_free(h);
	curl_url_cleanup(u);
	return rc == 0 ? 0 : hostlist_url_host(url, host, len);
}

/*
 * Resolves the receiver's host once, for http_receiver(): its addresses
 * as inet_ntop() writes them, as http_opensocket() does.  A name that
 * does not resolve leaves the list empty (the host still counts).
 */
static void
http_receiver_ips(struct http_call *c)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res, *a;
	int n = 0;

	c->recv_resolved = 1;
	if (getaddrinfo(c->recv.host, NULL, &hints, &res) != 0)
		return;
	for (a = res; a != NULL && n < 8; a = a->ai_next) {
		const void *in = a->ai_family == AF_INET
		    ? (const void *)&((struct sockaddr_in *)(void *)a->ai_addr)
		          ->sin_addr
		    : (const void *)&((struct sockaddr_in6 *)(void *)a->ai_addr)
		          ->sin6_addr;

		if ((a->ai_family == AF_INET || a->ai_family == AF_INET6) &&
		    inet_ntop(a->ai_family, in, c->recv_addr[n],
		        sizeof(c->recv_addr[n])) != NULL) {
			c->recv_ips[n] = c->recv_addr[n];
			n++;
		}
	}
	c->recv_ips[n] = NULL;
	freeaddrinfo(res);
}

/*
 * 1 (with the reason in c->refused) if url, connecting to ip (NULL: not
 * known yet), leads to the receiver of a run that may not reach it: the
 * same port and path, and the receiver's host in any spelling or any
 * name that resolves to one of its addresses.
 */
static int
http_receiver(struct http_call *c, const char *url, const char *ip)
{
	struct receiver_url u;

	if (!c->has_recv || receiver_url_parse(url, &u) == -1)
		return 0;
	if (ip != NULL && !c->recv_resolved)
		http_receiver_ips(c);
	if (!receiver_url_reaches(&c->recv, &u, c->recv_ips, ip))
		return 0;
	snprintf(c->refused, sizeof(c->refused),
	    "refused: the URL leads to the receiver (receiver_url), which "
	    "takes events of schedules without a target only");
	return 1;
}

/*
 * The allow/deny verdict on the request of the moment: the host of url
 * (NULL: libcurl's effective URL, which follows the redirects) and ip,
 * the address connected to (NULL: not known yet).  Returns 0 if it may
 * go on, else -1 with the reason in c->refused.
 */
static int
http_guard(struct http_call *c, const char *url, const char *ip)
{
	char host[512];
	enum hostlist_verdict v;

	if (url == NULL &&
	    (curl_easy_getinfo(c->easy, CURLINFO_EFFECTIVE_URL, &url) !=
	            CURLE_OK ||
	        url == NULL))
		url = "";
	if (http_host(url, host, sizeof(host)) == -1) {
		snprintf(c->refused, sizeof(c->refused),
		    "refused: no host in the URL");
		return -1;
	}
	if ((v = hostlist_check(&c->allow, &c->deny, host, ip)) == HOSTLIST_OK)
		return http_receiver(c, url, ip) ? -1 : 0;
	if (ip != NULL)
		snprintf(c->refused, sizeof(c->refused),
		    "refused: host \"%.255s\" (address %s) %s", host, ip,
		    hostlist_verdict_text(v));
	else
		snprintf(c->refused, sizeof(c->refused),
		    "refused: host \"%.255s\" %s", host,
		    hostlist_verdict_text(v));
	return -1;
}

/*
 * libcurl's open-socket callback: the last moment before a connection,
 * with the address it is for.  A refused address gets no socket, which
 * libcurl takes as a failed connect (and tries the name's next address,
 * if it has one).
 */
static curl_socket_t
http_opensocket(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct http_call *c = arg;
	char ip[INET6_ADDRSTRLEN] = "";
	const void *in = NULL;

	(void)purpose;
	if (a->family == AF_INET)
		in = &((const struct sockaddr_in *)(const void *)&a->addr)
		          ->sin_addr;
	else if (a->family == AF_INET6)
		in = &((const struct sockaddr_in6 *)(const void *)&a->addr)
		          ->sin6_addr;
	if (in == NULL || inet_ntop(a->family, in, ip, sizeof(ip)) == NULL) {
		snprintf(c->refused, sizeof(c->refused),
		    "refused: not an IP address to connect to");
		return CURL_SOCKET_BAD;
	}
	if (http_guard(c, NULL, ip) == -1)
		return CURL_SOCKET_BAD;
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* libcurl's pre-request callback: each request, on the connection used. */
static int
http_prereq(void *arg, char *primary_ip, char *local_ip, int primary_port,
    int local_port)
{
	struct http_call *c = arg;

	(void)local_ip;
	(void)primary_port;
	(void)local_port;
	return http_guard(c, NULL, primary_ip) == 0 ? CURL_PREREQFUNC_OK
	                                            : CURL_PREREQFUNC_ABORT;
}

/* libcurl's body callback: the tail for the output, the head to parse. */
static size_t
http_write(char *p, size_t size, size_t n, void *arg)
{
	struct http_call *c = arg;
	size_t len = size * n, room = HTTP_HEAD_MAX - c->headlen;

	tail_add(&c->tail, p, len);
	memcpy(c->head + c->headlen, p, len < room ? len : room);
	c->headlen += len < room ? len : room;
	c->total += len;
	return len;
}

/*
 * The method and body: POST if there is a body, GET if not, by default;
 * a GET or HEAD sends no body (the run's event is not sent with them).
 */
static int
http_method(CURL *h, const struct run_spec *spec)
{
	const char *m = spec->method;
	int rc = 0;

	if (m != NULL && strcmp(m, "GET") == 0)
		return curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	if (m != NULL && strcmp(m, "HEAD") == 0)
		return curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	if (spec->body != NULL || (m != NULL && strcmp(m, "POST") == 0)) {
		rc |= curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)(spec->body != NULL ? spec->body_len : 0));
		rc |= curl_easy_setopt(h, CURLOPT_POSTFIELDS,
		    spec->body != NULL ? spec->body : "");
	}
	if (m == NULL || strcmp(m, "POST") == 0)
		return rc;
	return rc | curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, m);
}

/*
 * Sets up the request, to run on multi (not added yet); returns 0, or -1
 * (out of memory, bad option).
 */
static int
http_setup(struct http_call *c, const struct run_spec *spec, CURLM *multi)
{
	CURL *h;
	int rc = 0;

	c->multi = multi;
	if ((c->easy = h = curl_easy_init()) == NULL)
		return -1;
	for (size_t i = 0; spec->headers != NULL && spec->headers[i]; i++) {
		struct curl_slist *l =
		    curl_slist_append(c->hdrs, spec->headers[i]);
		if (l == NULL)
			return -1;
		c->hdrs = l;
	}
	rc |= curl_easy_setopt(h, CURLOPT_URL, spec->url);
	rc |= curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	rc |= curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	rc |=
	    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)spec->timeout * 1000);
	rc |= curl_easy_setopt(
	    h, CURLOPT_PROXY, spec->proxy != NULL ? spec->proxy : "");
	rc |= curl_easy_setopt(
	    h, CURLOPT_FOLLOWLOCATION, spec->max_redirects > 0 ? 1L : 0L);
	rc |= curl_easy_setopt(h, CURLOPT_MAXREDIRS, spec->max_redirects);
	rc |= curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	rc |= curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, http_opensocket);
	rc |= curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, c);
	rc |= curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, http_prereq);
	rc |= curl_easy_setopt(h, CURLOPT_PREREQDATA, c);
	rc |= curl_easy_setopt(h, CURLOPT_USERAGENT, "cronvisor/" CV_VERSION);
	rc |= curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->hdrs);
	rc |= curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->errbuf);
	rc |= curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, http_write);
	rc |= curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
	rc |= curl_easy_setopt(h, CURLOPT_PRIVATE, c);
	rc |= http_method(h, spec);
	return rc != 0 ? -1 : 0;
}

/*
 * Drives a single call's transfer until it ends, or until the signalfd
 * brings SIGALRM or SIGTERM.  Returns 0, or -1 if the multi interface
 * itself failed.
 */
static int
http_loop(struct http_call *c, int sfd)
{
	struct curl_waitfd wfd;
	struct CURLMsg *msg;
	int running = 1, alarm_seen = 0, term = 0, chld = 0, left;

	while (running) {
		if (curl_multi_perform(c->multi, &running) != CURLM_OK)
			return -1;
		if (!running)
			break;
		wfd = (struct curl_waitfd){sfd, CURL_WAIT_POLLIN, 0};
		if (curl_multi_poll(c->multi, &wfd, 1, 1000, NULL) != CURLM_OK)
			return -1;
		if (wfd.revents != 0 &&
		    child_signals(sfd, &alarm_seen, &term, &chld) == -1)
			return -1;
		if (alarm_seen || term) {
			c->timed_out = alarm_seen;
			c->interrupted = !alarm_seen;
			return 0;
		}
	}
	c->code = CURLE_OK;
	while ((msg = curl_multi_info_read(c->multi, &left)) != NULL)
		if (msg->msg == CURLMSG_DONE)
			c->code = msg->data.result;
	return 0;
}

/*
 * Returns 0 if the response body is JSON saying "retryable": false, else
 * 1.  Only a body that arrived whole is parsed, and only if it says it is
 * JSON or looks like an object.
 */
static int
http_retryable(struct http_call *c)
{
	const char *ct = NULL;
	json_error_t jerr;
	json_t *root;
	size_t i = 0;
	int rc = 1;

	if (c->total > HTTP_HEAD_MAX)
		return 1;
	(void)curl_easy_getinfo(c->easy, CURLINFO_CONTENT_TYPE, &ct);
	while (i < c->headlen && strchr(" \t\r\n", c->head[i]) != NULL)
		i++;
	if ((ct == NULL || strstr(ct, "json") == NULL) &&
	    (i == c->headlen || c->head[i] != '{'))
		return 1;
	root = json_loadb(c->head, c->headlen, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL)
		return 1;
	if (json_is_false(json_object_get(root, "retryable")))
		rc = 0;
	json_decref(root);
	return rc;
}

/* The outcome of a transfer that got a response. */
static void
http_response(struct http_call *c, struct result *res, char *msg, size_t len)
{
	long status = res->http_status;
	const char *loc = NULL;
	curl_off_t ra = 0;

	if (status >= 200 && status <= 299) {
		res->status = RESULT_OK;
		return;
	}
	res->status = RESULT_FAILED;
	res->retryable = http_retryable(c);
	/* Retry-After (seconds or a date), for a 429 or 503 to be honoured. */
	if (curl_easy_getinfo(c->easy, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK &&
	    ra > 0)
		res->retry_after = ra < 86400 ? (int64_t)ra : 86400;
	(void)curl_easy_getinfo(c->easy, CURLINFO_REDIRECT_URL, &loc);
	if (status >= 300 && status <= 399 && loc != NULL)
		snprintf(msg, len,
		    "HTTP %ld (redirects are not followed; "
		    "Location: %.1024s)",
		    status, loc);
	else
		snprintf(msg, len, "HTTP %ld", status);
}

/* Sets res from how the call ended; msg receives the error text. */
static void
http_outcome(struct http_call *c, const struct run_spec *spec,
    struct result *res, char *msg, size_t len)
{
	const char *why =
	    c->errbuf[0] != '\0' ? c->errbuf : curl_easy_strerror(c->code);
	long status = 0;

	/* A status line may have come before the transfer failed. */
	(void)curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status);
	res->http_status = status >= 100 && status <= 599 ? status : 0;
	res->retryable = 1;
	if (c->timed_out ||
	    (!c->interrupted && c->code == CURLE_OPERATION_TIMEDOUT)) {
		res->status = RESULT_TIMEOUT;
		snprintf(msg, len, "timed out after %lld s",
		    (long long)spec->timeout);
	} else if (c->interrupted) {
		res->status = RESULT_ERROR;
		snprintf(msg, len, "interrupted: the runner was told to stop");
	} else if (c->code != CURLE_OK && c->refused[0] != '\0') {
		res->status = RESULT_ERROR;
		res->retryable = 0;
		snprintf(msg, len, "%s", c->refused);
	} else if (c->code == CURLE_TOO_MANY_REDIRECTS) {
		res->status = RESULT_FAILED;
		res->retryable = 0;
		snprintf(msg, len,
		    "more than %ld redirects (http_max_redirects)",
		    spec->max_redirects);
	} else if (c->code == CURLE_OK) {
		http_response(c, res, msg, len);
	} else if (c->code == CURLE_UNSUPPORTED_PROTOCOL ||
	    c->code == CURLE_URL_MALFORMAT) {
		res->status = RESULT_ERROR;
		res->retryable = 0;
		snprintf(msg, len, "bad URL: %s", why);
	} else {
		res->status = RESULT_FAILED;
		snprintf(msg, len, "%s", why);
	}
}

static int64_t
http_us(const struct timeval *tv)
{
	return (int64_t)tv->tv_sec * 1000000 + tv->tv_usec;
}

/* The process's CPU time so far, user and system, in µs. */
void
http_cpu(int64_t *user_us, int64_t *sys_us, int64_t *max_rss_kb)
{
	struct rusage r;

	getrusage(RUSAGE_SELF, &r);
	*user_us = http_us(&r.ru_utime);
	*sys_us = http_us(&r.ru_stime);
	*max_rss_kb = r.ru_maxrss;
}

/*
 * Parses the run's host lists into c and checks the URL's own host, before
 * any name is resolved.  Returns 0, or -1 with the reason in msg.
 */
static int
http_precheck(
    struct http_call *c, const struct run_spec *spec, char *msg, size_t len)
{
	char why[CV_ERRLEN];

	if (hostlist_parse(&c->allow,
	        spec->allow_hosts ? spec->allow_hosts : "", why,
	        sizeof(why)) == -1 ||
	    hostlist_parse(&c->deny, spec->deny_hosts ? spec->deny_hosts : "",
	        why, sizeof(why)) == -1) {
		snprintf(msg, len, "bad host list: %s", why);
		return -1;
	}
	c->recv_ips[0] = NULL;
	c->has_recv = spec->receiver_url != NULL &&
	    receiver_url_parse(spec->receiver_url, &c->recv) == 0;
	if (http_guard(c, spec->url, NULL) == -1) {
		snprintf(msg, len, "%s", c->refused);
		return -1;
	}
	return 0;
}

/* Releases what c holds, and c. */
static void
http_free(struct http_call *c)
{
	if (c == NULL)
		return;
	if (c->multi != NULL && c->easy != NULL && c->added)
		curl_multi_remove_handle(c->multi, c->easy);
	if (c->easy != NULL)
		curl_easy_cleanup(c->easy);
	curl_slist_free_all(c->hdrs);
	tail_clear(&c->tail);
	hostlist_clear(&c->allow);
	hostlist_clear(&c->deny);
	free(c);
}

/*
 * The request of spec, checked and set up to run on multi once
 * http_begin() adds it.  Returns it, or NULL with res the run's result (a
 * refused host, which is not retried, or a failure to set it up).
 */
struct http_call *
http_open(const struct run_spec *spec, CURLM *multi, struct result *res)
{
	char msg[RESULT_ERROR_MAX] = "";
	size_t cap = spec->output_tail;
	struct http_call *c;

	if ((c = calloc(1, sizeof(*c))) == NULL ||
	    tail_init(&c->tail,
	        cap < RESULT_OUTPUT_MAX ? cap : RESULT_OUTPUT_MAX) == -1) {
		snprintf(msg, sizeof(msg), "cannot set up the HTTP request");
	} else if (http_precheck(c, spec, msg, sizeof(msg)) == -1) {
		res->status = RESULT_ERROR;
		res->retryable = 0;
	} else if (http_setup(c, spec, multi) == -1) {
		snprintf(msg, sizeof(msg), "cannot set up the HTTP request");
	} else {
		return c;
	}
	free(res->error);
	res->error = strdup(msg);
	http_free(c);
	return NULL;
}

/* Starts c's transfer on its multi handle: 0, or -1. */
int
http_begin(struct http_call *c)
{
	c->t0 = clock_us();
	if (curl_multi_add_handle(c->multi, c->easy) != CURLM_OK)
		return -1;
	c->added = 1;
	return 0;
}

/* The call a finished transfer of a multi handle belongs to. */
struct http_call *
http_of(CURL *easy)
{
	struct http_call *c = NULL;

	(void)curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&c);
	return c;
}

/*
 * Ends c, whose transfer ended with code (how: HTTP_DONE), or was cut
 * short by the run's timeout (HTTP_TIMED_OUT) or a stop (HTTP_STOPPED),
 * or never started (HTTP_STOPPED too): fills res with the outcome, the
 * response body's tail as output and the duration, and frees c.
 */
void
http_end(struct http_call *c, const struct run_spec *spec, CURLcode code,
    enum http_how how, struct result *res)
{
	char msg[RESULT_ERROR_MAX] = "";

	c->code = code;
	c->timed_out = how == HTTP_TIMED_OUT;
	c->interrupted = how == HTTP_STOPPED;
	http_outcome(c, spec, res, msg, sizeof(msg));
	if (tail_take(&c->tail, res) == -1)
		log_warn("http: keeping the response");
	res->duration_us = c->added ? clock_us() - c->t0 : 0;
	if (msg[0] != '\0') {
		free(res->error);
		res->error = strdup(msg);
	}
	http_free(c);
}

/*
 * Makes the request of spec from the runner child and fills res
 * (initialised by the caller): status, HTTP status, the response body's
 * tail as output, duration, and the runner's own CPU and memory use (the
 * request runs in this process).  Returns when the transfer is over or
 * was cut short by SIGALRM or SIGTERM on sfd.
 */
void
http_run(const struct run_spec *spec, int sfd, struct result *res)
{
	int64_t u0, s0, u1, s1, rss;
	struct http_call *c;
	CURLM *multi;

	http_cpu(&u0, &s0, &rss);
	if ((multi = curl_multi_init()) == NULL) {
		free(res->error);
		res->error = strdup("cannot set up the HTTP request");
	} else if ((c = http_open(spec, multi, res)) != NULL) {
		if (http_begin(c) == -1 || http_loop(c, sfd) == -1) {
			http_free(c);
			free(res->error);
			res->error = strdup("libcurl's multi interface failed");
		} else {
			http_end(c, spec, c->code,
			    c->timed_out         ? HTTP_TIMED_OUT
			        : c->interrupted ? HTTP_STOPPED
			                         : HTTP_DONE,
			    res);
		}
	}
	if (multi != NULL)
		curl_multi_cleanup(multi);
	http_cpu(&u1, &s1, &rss);
	res->cpu_user_us = u1 - u0;
	res->cpu_sys_us = s1 - s0;
	res->max_rss_kb = rss;
}
