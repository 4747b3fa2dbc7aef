/*
 * api.c: the HTTP client of cronvisorctl's API commands, and the one file
 * that speaks libcurl.  A command names a method, a path under /api/v1, a
 * query and a JSON body; api_request() sends it with the token, reads the
 * JSON answer and turns every failure into one line on stderr: the API's
 * own error message and field, or the URL and curl's reason when the API
 * could not be reached.  With --dry-run it prints the request instead of
 * sending it, so that what the command line builds can be tested without
 * a server.
 */
#include <sys/random.h>

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cronvisorctl.h"

#define API_PREFIX         "/api/v1"
#define API_REPLY_MAX      (64 * 1024 * 1024) /* largest answer read, bytes */
#define API_AGAIN          2                  /* api_verdict(): worth a retry */
#define API_RETRY_FIRST_MS 200                /* pause before the first retry */

/* An answer being read, grown as curl hands over its pieces. */
struct api_buf {
	char *data;   /* the bytes so far, NUL-terminated, or NULL */
	size_t len;   /* bytes in data */
	int overflow; /* 1: the answer was longer than API_REPLY_MAX */
};

static int api_curl_ready;     /* curl_global_init() has run */
static char api_lasterr[2048]; /* the last failure's message, "" = none */

/* Logs a failure of a request and keeps its text for api_last_error(). */
static void api_say(const char *fmt, ...) CV_PRINTF(1, 2);

static void
api_say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(api_lasterr, sizeof(api_lasterr), fmt, ap);
	va_end(ap);
	log_warnx("%s", api_lasterr);
}

/* What the last request that failed said ("" if none did). */
const char *
api_last_error(void)
{
	return api_lasterr;
}
/* Set by a command that knows where a field is better than the API
 * (apply: in which file): the field of an error answer, told so in buf;
 * NULL to keep it. */
const char *(*api_field_where)(const char *field, char *buf, size_t len);

static CURL *api_easy; /* api_send()'s handle, kept for keep-alive */

/* curl's write callback: appends to the api_buf; refuses past the cap. */
static size_t
api_write(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct api_buf *b = arg;
	size_t n = size * nmemb;
	char *p;

	if (n > API_REPLY_MAX - b->len) {
		b->overflow = 1;
		return 0;
	}
	if ((p = realloc(b->data, b->len + n + 1)) == NULL)
		return 0;
	memcpy(p + b->len, ptr, n);
	b->data = p;
	b->len += n;
	b->data[b->len] = '\0';
	return n;
}

/*
 * Builds "/api/v1" + path + "?name=value&…" for the query entries whose
 * value is not NULL, values percent-encoded by curl.  Returns a string the
 * caller frees, or NULL when out of memory.
 */
static char *
api_path(const char *path, const struct api_query *q, size_t nq)
{
	char *s = NULL, *esc;
	size_t len = 0;
	FILE *fp;
	int sep = '?';

	if ((fp = open_memstream(&s, &len)) == NULL)
		return NULL;
	fprintf(fp, "%s%s", API_PREFIX, path);
	for (size_t i = 0; i < nq; i++) {
		if (q[i].value == NULL)
			continue;
		if ((esc = curl_easy_escape(NULL, q[i].value, 0)) == NULL)
			break;
		fprintf(fp, "%c%s=%s", sep, q[i].name, esc);
		curl_free(esc);
		sep = '&';
	}
	if (fclose(fp) != 0) {
		free(s);
		return NULL;
	}
	return s;
}

/*
 * Checks that --url and --token are there and usable before anything is
 * sent.  Returns 0, or -1 after a message saying how to give them.
 */
static int
api_check_options(void)
{
	if (ctl.url == NULL || ctl.url[0] == '\0') {
		log_warnx("no API URL: pass --url URL or set CRONVISOR_URL "
		          "(e.g. http://127.0.0.1:8080)");
		return -1;
	}
	/* read once; kept in ctl (reachable) until exit */
	if (ctl.token_file != NULL &&
	    (ctl.token = ctl_read_secret("API token", ctl.token_file)) == NULL)
		return -1;
	ctl.token_file = NULL;
	if (ctl.token == NULL || ctl.token[0] == '\0') {
		log_warnx(
		    "no API token: set CRONVISOR_TOKEN or pass --token-file "
		    "FILE; an administrator makes one with "
		    "'cronvisorctl token create --owner NAME --role ROLE'");
		return -1;
	}
	for (const char *p = ctl.token; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f) {
			log_warnx("the API token holds a space or a control "
			          "character; is it the whole token?");
			return -1;
		}
	return 0;
}

/*
 * Reports a non-2xx answer: the API's error document as "message (field:
 * F)", or, when the answer is not one (a proxy's page), the status and the
 * URL.  A 401 also says where tokens come from.
 */
static void
api_error(long status, const char *url, json_t *reply)
{
	json_t *e = json_object_get(reply, "error");
	const char *msg = json_string_value(json_object_get(e, "message"));
	const char *field = json_string_value(json_object_get(e, "field"));
	const char *hint = status == 401
	    ? " (check the token; 'cronvisorctl token create' makes one)"
	    : "";

	char where[512];

	if (msg != NULL && field != NULL && field[0] != '\0' &&
	    api_field_where != NULL &&
	    api_field_where(field, where, sizeof(where)) != NULL)
		api_say("%s: %s%s", where, msg, hint);
	else if (msg == NULL)
		api_say("%s: HTTP %ld, and not an answer of the cronvisor "
		        "API%s",
		    url, status, hint);
	else if (field != NULL && field[0] != '\0')
		api_say("%s (field: %s)%s", msg, field, hint);
	else
		api_say("%s%s", msg, hint);
}

/*
 * Sets handle h up for one request, from a clean state (curl_easy_reset()
 * keeps the connection cache, so the next request to the same server
 * reuses the kept-alive connection).  key is the Idempotency-Key header's
 * value, or NULL for none.  hdrs is filled with the header list the caller
 * frees after the transfer.  Returns 0, or -1 when out of memory.
 */
static int
api_setup(CURL *h, const char *method, const char *url, const char *body,
    const char *key, struct api_buf *b, char *errbuf, struct curl_slist **hdrs)
{
	char line[4096];

	curl_easy_reset(h);
	snprintf(line, sizeof(line), "Authorization: Bearer %s", ctl.token);
	*hdrs = curl_slist_append(NULL, line);
	*hdrs = curl_slist_append(*hdrs, "Accept: application/json");
	*hdrs = curl_slist_append(
	    *hdrs, body ? "Content-Type: application/json" : "Content-Type:");
	*hdrs = curl_slist_append(*hdrs, "Expect:");
	if (key != NULL) {
		/* a header line: nothing that would end it */
		if (strpbrk(key, "\r\n") != NULL)
			return -1;
		snprintf(line, sizeof(line), "Idempotency-Key: %s", key);
		*hdrs = curl_slist_append(*hdrs, line);
	}
	if (*hdrs == NULL)
		return -1;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, *hdrs);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "cronvisorctl/" CV_VERSION);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 120L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, api_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
	if (ctl.unix_socket != NULL && ctl.unix_socket[0] != '\0')
		curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, ctl.unix_socket);
	/* A POST without a body still sends an empty one (curl would read
	 * stdin otherwise); PATCH and DELETE are POST or GET renamed. */
	if (strcmp(method, "GET") == 0) {
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	} else if (strcmp(method, "POST") == 0) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
	} else {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
		if (body != NULL)
			curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	}
	return 0;
}

/* curl_global_init(), once; 0, or -1 after a message. */
static int
api_init(void)
{
	if (!api_curl_ready) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
			log_warnx("cannot set up libcurl");
			return -1;
		}
		api_curl_ready = 1;
	}
	return 0;
}

/*
 * A status worth sending the same request again for: the proxy could not
 * reach the API (502, 504) or the API could not reach its database (503).
 * Only requests with an Idempotency-Key are sent again.
 */
static int
api_retryable(long status)
{
	return status == 502 || status == 503 || status == 504;
}

/*
 * Judges one finished transfer: curl's code rc, the answer's status and
 * bytes in b.  A failure worth another try (transport, api_retryable())
 * returns API_AGAIN without a message unless last is set.  Every other
 * failure is reported on stderr, after label (NULL: none) when given.
 * Returns 0 with *out the answer's JSON (NULL for an empty answer; the
 * caller owns it), API_AGAIN, or -1.
 */
static int
api_verdict(CURLcode rc, long status, struct api_buf *b, const char *url,
    const char *errbuf, const char *label, int last, json_t **out)
{
	json_t *reply = NULL;
	json_error_t je;
	int ret = -1;

	*out = NULL;
	if (!last && !b->overflow && (rc != CURLE_OK || api_retryable(status)))
		return API_AGAIN;
	if (label != NULL)
		log_prefix("%s", label);
	if (b->overflow)
		api_say("%s: the answer is larger than %d bytes", url,
		    API_REPLY_MAX);
	else if (rc != CURLE_OK)
		api_say("cannot reach the API at %s%s%s: %s", url,
		    ctl.unix_socket && *ctl.unix_socket ? " through " : "",
		    ctl.unix_socket && *ctl.unix_socket ? ctl.unix_socket : "",
		    errbuf[0] ? errbuf : curl_easy_strerror(rc));
	else if (b->len > 0 &&
	    (reply = json_loadb(b->data, b->len, 0, &je)) == NULL &&
	    status / 100 == 2)
		api_say("%s: the answer is not JSON: %s", url, je.text);
	else if (status / 100 != 2)
		api_error(status, url, reply);
	else {
		*out = reply;
		reply = NULL;
		ret = 0;
	}
	if (label != NULL)
		log_prefix(NULL);
	json_decref(reply);
	return ret;
}

/* The pause before try number n (1: the first retry): 0.2 s doubling. */
static long
api_backoff_ms(int n)
{
	return API_RETRY_FIRST_MS << (n - 1);
}

/*
 * Sends one request and reads its answer, over the process's one kept-
 * alive handle.  url is the full URL; body is the JSON text or NULL.  With
 * an idempotency key the request is sent again, with the same key, after
 * a transport failure or a 502/503/504, up to API_RETRIES times with
 * growing pauses.  Returns 0 with *out set to the parsed answer (NULL
 * when it had no body; the caller decrefs), or -1 after a message.
 */
static int
api_send(const char *method, const char *url, const char *body, const char *key,
    json_t **out)
{
	char errbuf[CURL_ERROR_SIZE];
	struct api_buf b = {NULL, 0, 0};
	struct curl_slist *hdrs = NULL;
	struct timespec ts;
	long status, ms;
	CURLcode rc;
	CURL *h;
	int ret, n = 0;

	api_lasterr[0] = '\0';
	if (api_init() == -1)
		return -1;
	if (api_easy == NULL && (api_easy = curl_easy_init()) == NULL) {
		log_warnx("cannot set up libcurl");
		return -1;
	}
	h = api_easy;
	for (;;) {
		errbuf[0] = '\0';
		status = 0;
		if (api_setup(h, method, url, body, key, &b, errbuf, &hdrs) ==
		    -1)
			fatalx("out of memory");
		rc = curl_easy_perform(h);
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
		curl_slist_free_all(hdrs);
		ret = api_verdict(rc, status, &b, url, errbuf, NULL,
		    key == NULL || n == API_RETRIES, out);
		free(b.data);
		b = (struct api_buf){NULL, 0, 0};
		if (ret != API_AGAIN)
			return ret;
		ms = api_backoff_ms(++n);
		log_debug("%s: %s; again in %ld ms", url,
		    rc != CURLE_OK ? "unreachable" : "unavailable", ms);
		ts.tv_sec = ms / 1000;
		ts.tv_nsec = (ms % 1000) * 1000000L;
		while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
			;
	}
}

/*
 * The full URL of path under /api/v1 with query q: "--url" + "/api/v1" +
 * path + "?…".  Returns a string the caller frees, or NULL after a
 * message.
 */
static char *
api_url(const char *path, const struct api_query *q, size_t nq)
{
	char *p, *url;
	size_t blen;

	if ((p = api_path(path, q, nq)) == NULL) {
		log_warnx("out of memory");
		return NULL;
	}
	blen = strlen(ctl.url);
	while (blen > 0 && ctl.url[blen - 1] == '/')
		blen--;
	if (asprintf(&url, "%.*s%s", (int)blen, ctl.url, p) == -1) {
		url = NULL;
		log_warnx("out of memory");
	}
	free(p);
	return url;
}

/*
 * Sends method to path (under /api/v1, e.g. "/schedules") with the query
 * entries that have a value and the body text (NULL: none; sent as it is,
 * so a file the user gives reaches the API byte for byte).  key, when not
 * NULL, goes out as the Idempotency-Key header and makes the request one
 * that is sent again after a transport failure or a 502/503/504 (see
 * api_send()).  Returns 0 with *out the answer's JSON (NULL for an empty
 * answer, such as a 204; the caller owns it), API_DRY when --dry-run
 * printed the request instead ("METHOD PATH" and the compact body on the
 * next line), or -1 after a message on stderr.
 */
int
api_request_key(const char *method, const char *path, const struct api_query *q,
    size_t nq, const char *text, const char *key, json_t **out)
{
	char *p, *url;
	int ret;

	*out = NULL;
	if (ctl.dry_run) {
		if ((p = api_path(path, q, nq)) == NULL) {
			log_warnx("out of memory");
			return -1;
		}
		printf("%s %s\n", method, p);
		if (text != NULL)
			printf("%s\n", text);
		free(p);
		return API_DRY;
	}
	if (api_check_options() == -1 || (url = api_url(path, q, nq)) == NULL)
		return -1;
	ret = api_send(method, url, text, key, out);
	free(url);
	return ret;
}

/* api_request_key() without a key: sent once. */
int
api_request(const char *method, const char *path, const struct api_query *q,
    size_t nq, const char *text, json_t **out)
{
	return api_request_key(method, path, q, nq, text, NULL, out);
}

/*
 * Like api_request_key() with a JSON body (NULL: none), encoded compactly;
 * key NULL: sent once.
 */
int
api_request_json(const char *method, const char *path,
    const struct api_query *q, size_t nq, const json_t *body, const char *key,
    json_t **out)
{
	char *text = NULL;
	int ret;

	*out = NULL;
	if (body != NULL && (text = json_dumps(body, JSON_COMPACT)) == NULL) {
		log_warnx("cannot encode the request body");
		return -1;
	}
	ret = api_request_key(method, path, q, nq, text, key, out);
	free(text);
	return ret;
}

/*
 * GETs a listing (path answers {key: [...], "next_cursor": …}) with the
 * query q[0..nq-1] (at most API_QUERY_MAX entries); with all, follows
 * next_cursor to the last page.  Returns 0 with *out one document holding
 * every item read and the last next_cursor, API_DRY, or -1 after a
 * message.
 */
int
api_list(const char *path, const struct api_query *q, size_t nq,
    const char *key, int all, json_t **out)
{
	struct api_query qc[API_QUERY_MAX + 1];
	json_t *page, *items = NULL, *cursor;
	int ret;

	*out = NULL;
	if (nq > API_QUERY_MAX)
		fatalx("api_list: %zu query parameters", nq);
	memcpy(qc, q, nq * sizeof(*q));
	qc[nq].name = "cursor";
	qc[nq].value = NULL;
	for (;;) {
		if ((ret = api_request("GET", path, qc, nq + 1, NULL, &page)) !=
		    0)
			break;
		if (!json_is_array(json_object_get(page, key))) {
			log_warnx(
			    "%s: the answer has no \"%s\" list", path, key);
			json_decref(page);
			ret = -1;
			break;
		}
		if (items == NULL)
			items = json_incref(json_object_get(page, key));
		else
			json_array_extend(items, json_object_get(page, key));
		cursor = json_object_get(page, "next_cursor");
		if (!all || !json_is_string(cursor)) {
			*out = json_pack("{sOsO}", key, items, "next_cursor",
			    cursor ? cursor : json_null());
			json_decref(page);
			break;
		}
		free((char *)qc[nq].value);
		qc[nq].value = strdup(json_string_value(cursor));
		json_decref(page);
		if (qc[nq].value == NULL)
			fatal("strdup");
	}
	free((char *)qc[nq].value);
	json_decref(items);
	return ret;
}

/*
 * Fills buf (at least API_KEY_LEN bytes) with 32 random hex digits from
 * getrandom(): the unique part of Idempotency-Keys.  Returns 0, or -1
 * after a message.
 */
int
api_key(char *buf)
{
	unsigned char r[16];

	/* Up to 256 bytes, getrandom() does not return short once the pool
	 * is initialised; it may block before that, which is right. */
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		log_warn("getrandom");
		return -1;
	}
	for (size_t i = 0; i < sizeof(r); i++)
		snprintf(buf + 2 * i, 3, "%02x", r[i]);
	return 0;
}

/* One request of api_batch() in flight or waiting to be sent again. */
struct api_slot {
	CURL *h;                      /* its own handle and connection */
	struct curl_slist *hdrs;      /* headers of the transfer in flight */
	struct api_buf buf;           /* the answer being read */
	char errbuf[CURL_ERROR_SIZE]; /* curl's reason */
	struct api_item it;           /* the request; it.body NULL: idle */
	int tries;                    /* sends so far */
	int waiting;                  /* 1: sent again at due */
	struct timespec due;          /* CLOCK_MONOTONIC */
};

/* Milliseconds from now until t on CLOCK_MONOTONIC (<= 0: past). */
static long
api_ms_until(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (t->tv_sec - now.tv_sec) * 1000 +
	    (t->tv_nsec - now.tv_nsec) / 1000000;
}

/* Sends the slot's request (again) on the multi handle m. */
static void
api_slot_send(
    CURLM *m, struct api_slot *s, const struct api_batch *b, const char *url)
{
	s->waiting = 0;
	s->tries++;
	s->errbuf[0] = '\0';
	if (api_setup(s->h, b->method, url, s->it.body, s->it.key, &s->buf,
	        s->errbuf, &s->hdrs) == -1 ||
	    curl_multi_add_handle(m, s->h) != CURLM_OK)
		fatalx("out of memory");
}

/*
 * Takes the slot's finished transfer off m and judges it: done, failed
 * (reported after the item's label) or, while tries remain, waiting to be
 * sent again.  A transport failure that outlived its retries and a 401 or
 * 403 stop the batch (b->stopped): the next requests would fail alike.
 */
static void
api_slot_done(CURLM *m, struct api_slot *s, CURLcode rc, struct api_batch *b,
    const char *url)
{
	json_t *ans;
	long status = 0, ms;
	int ret;

	curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &status);
	curl_multi_remove_handle(m, s->h);
	curl_slist_free_all(s->hdrs);
	s->hdrs = NULL;
	ret = api_verdict(rc, status, &s->buf, url, s->errbuf, s->it.label,
	    s->tries > API_RETRIES, &ans);
	free(s->buf.data);
	s->buf = (struct api_buf){NULL, 0, 0};
	if (ret == API_AGAIN) {
		ms = api_backoff_ms(s->tries);
		clock_gettime(CLOCK_MONOTONIC, &s->due);
		s->due.tv_sec += ms / 1000;
		s->due.tv_nsec += (ms % 1000) * 1000000L;
		if (s->due.tv_nsec >= 1000000000L) {
			s->due.tv_sec++;
			s->due.tv_nsec -= 1000000000L;
		}
		s->waiting = 1;
		return;
	}
	json_decref(ans);
	if (ret == 0)
		b->done++;
	else
		b->failed++;
	if (ret != 0 && (rc != CURLE_OK || status == 401 || status == 403))
		b->stopped = 1;
	free(s->it.body);
	s->it.body = NULL;
	s->tries = 0;
}

/*
 * Fills the idle slots from b->next() (until it runs dry or the batch
 * stopped), sends those whose retry is due.  Returns how many slots hold
 * a request; *wait_ms is lowered to the nearest retry's pause.
 */
static int
api_batch_feed(CURLM *m, struct api_slot *slots, struct api_batch *b,
    const char *url, int *eof, long *wait_ms)
{
	struct api_slot *s;
	int busy = 0;
	long ms;

	for (int i = 0; i < b->parallel; i++) {
		s = &slots[i];
		if (s->it.body == NULL && !*eof && !b->stopped) {
			if (b->next(b->arg, &s->it) == 1)
				api_slot_send(m, s, b, url);
			else
				*eof = 1;
		} else if (s->waiting && (ms = api_ms_until(&s->due)) <= 0) {
			api_slot_send(m, s, b, url);
		} else if (s->waiting && ms < *wait_ms) {
			*wait_ms = ms;
		}
		busy += s->it.body != NULL;
	}
	return busy;
}

/*
 * Sends the requests b->next() hands out, b->method to b->path with
 * query b->q, up to b->parallel at once (each on its own kept-alive
 * connection), each with its Idempotency-Key and the retries of
 * api_send().  A failed request is reported on stderr after its label and
 * the batch goes on, except after a failure every later request would
 * share (unreachable API, bad token: b->stopped is set and nothing more is
 * sent).  Counts answers in b->done and b->failed.  With --dry-run, prints
 * every request as api_request() does.  Returns 0 when every request
 * succeeded, -1 otherwise.
 */
int
api_batch(struct api_batch *b)
{
	struct api_slot slots[API_PARALLEL_MAX] = {0};
	struct api_item it;
	CURLMsg *msg;
	json_t *ans;
	char *url = NULL;
	int eof = 0, left, finished = 0;
	long wait_ms;
	CURLM *m = NULL;

	if (b->parallel < 1 || b->parallel > API_PARALLEL_MAX)
		fatalx("api_batch: parallel %d", b->parallel);
	if (ctl.dry_run) {
		while (b->next(b->arg, &it) == 1) {
			api_request_key(b->method, b->path, b->q, b->nq,
			    it.body, it.key, &ans);
			free(it.body);
		}
		return 0;
	}
	if (api_check_options() == -1 || api_init() == -1 ||
	    (url = api_url(b->path, b->q, b->nq)) == NULL)
		return -1;
	if ((m = curl_multi_init()) == NULL)
		fatalx("out of memory");
	for (int i = 0; i < b->parallel; i++)
		if ((slots[i].h = curl_easy_init()) == NULL)
			fatalx("out of memory");
	for (;;) {
		wait_ms = 1000;
		if (api_batch_feed(m, slots, b, url, &eof, &wait_ms) == 0)
			break;
		curl_multi_perform(m, &left);
		finished = 0;
		while ((msg = curl_multi_info_read(m, &left)) != NULL) {
			for (int i = 0;
			     msg->msg == CURLMSG_DONE && i < b->parallel; i++)
				if (slots[i].h == msg->easy_handle) {
					api_slot_done(m, &slots[i],
					    msg->data.result, b, url);
					finished = 1;
					break;
				}
		}
		/* A freed slot is fed at once; else wait for the sockets or
		 * the nearest retry. */
		if (!finished && wait_ms > 0)
			curl_multi_poll(m, NULL, 0, (int)wait_ms, NULL);
	}
	for (int i = 0; i < b->parallel; i++)
		curl_easy_cleanup(slots[i].h);
	curl_multi_cleanup(m);
	free(url);
	return b->failed == 0 && !b->stopped ? 0 : -1;
}

/* Prints one JSON document on stdout, indented, for --json. */
void
api_print_json(const json_t *doc)
{
	json_dumpf(doc, stdout, JSON_INDENT(2));
	putchar('\n');
}

/*
 * Prints the answer doc of a request (rc from api_request()) and frees
 * it: as JSON with --json, else with show(); nothing after --dry-run or
 * a failure (reported already).  Returns the exit status.
 */
int
api_output(int rc, json_t *doc, void (*show)(const json_t *))
{
	if (rc == 0 && doc != NULL) {
		if (ctl.json)
			api_print_json(doc);
		else
			show(doc);
	}
	json_decref(doc);
	return rc == -1 ? CTL_EXIT_FAIL : CTL_EXIT_OK;
}

/* Sets key of obj to a new value v (stolen); fatal when out of memory. */
void
api_set(json_t *obj, const char *key, json_t *v)
{
	if (v == NULL || json_object_set_new(obj, key, v) == -1)
		fatalx("out of memory");
}

/* Releases what curl_global_init() set up, if it ran; once, at exit. */
void
api_cleanup(void)
{
	if (api_easy != NULL)
		curl_easy_cleanup(api_easy);
	api_easy = NULL;
	if (api_curl_ready)
		curl_global_cleanup();
	api_curl_ready = 0;
}

/* A list (GET path with q), printed by table; --all pages. */
int
api_list_print(const char *path, const struct api_query *q, size_t nq,
    const char *key, int all, void (*table)(const struct json_t *))
{
	json_t *doc;
	int rc;

	if ((rc = api_list(path, q, nq, key, all, &doc)) != 0)
		return rc == API_DRY ? CTL_EXIT_OK : CTL_EXIT_FAIL;
	if (ctl.json) {
		api_print_json(doc);
	} else {
		table(json_object_get(doc, key));
		if (json_is_string(json_object_get(doc, "next_cursor")))
			log_info("more %s follow: --all lists them all", key);
	}
	json_decref(doc);
	return CTL_EXIT_OK;
}

/* One object (GET path) as "key: value" lines in order. */
int
api_show_print(const char *path, const char *const *order)
{
	json_t *doc;
	int rc;

	if ((rc = api_request("GET", path, NULL, 0, NULL, &doc)) != 0)
		return rc == API_DRY ? CTL_EXIT_OK : CTL_EXIT_FAIL;
	if (ctl.json)
		api_print_json(doc);
	else if (doc != NULL)
		table_kv(doc, order, stdout);
	json_decref(doc);
	return CTL_EXIT_OK;
}

/*
 * DELETE path (with ?owner= when owner is not NULL), whose 204 has no
 * body: prints "deleted WHAT ID", or {"deleted": ID} with --json.
 * Returns the exit status.
 */
int
api_delete_print(
    const char *path, const char *owner, const char *what, const char *id)
{
	const struct api_query q[] = {{"owner", owner}};
	json_t *doc;
	int rc;

	rc = api_request("DELETE", path, q, 1, NULL, &doc);
	json_decref(doc);
	if (rc != 0)
		return rc == API_DRY ? CTL_EXIT_OK : CTL_EXIT_FAIL;
	if (ctl.json) {
		doc = json_pack("{ss}", "deleted", id);
		api_print_json(doc);
		json_decref(doc);
	} else
		printf("deleted %s %s\n", what, id);
	return CTL_EXIT_OK;
}
