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
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisorctl.h"

#define API_PREFIX    "/api/v1"
#define API_REPLY_MAX (64 * 1024 * 1024) /* largest answer read, bytes */

/* An answer being read, grown as curl hands over its pieces. */
struct api_buf {
	char *data;   /* the bytes so far, NUL-terminated, or NULL */
	size_t len;   /* bytes in data */
	int overflow; /* 1: the answer was longer than API_REPLY_MAX */
};

static int api_curl_ready; /* curl_global_init() has run */

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
	if (ctl.token == NULL || ctl.token[0] == '\0') {
		log_warnx(
		    "no API token: pass --token TOKEN or set "
		    "CRONVISOR_TOKEN; an administrator makes one with "
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

	if (msg == NULL)
		log_warnx("%s: HTTP %ld, and not an answer of the cronvisor "
		          "API%s",
		    url, status, hint);
	else if (field != NULL && field[0] != '\0')
		log_warnx("%s (field: %s)%s", msg, field, hint);
	else
		log_warnx("%s%s", msg, hint);
}

/*
 * Sets up one easy handle for the request; returns it or NULL.  hdrs is
 * filled with the header list the caller frees after the transfer.
 */
static CURL *
api_handle(const char *method, const char *url, const char *body,
    struct api_buf *b, char *errbuf, struct curl_slist **hdrs)
{
	char auth[4096];
	CURL *h;

	if (!api_curl_ready) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
			return NULL;
		api_curl_ready = 1;
	}
	if ((h = curl_easy_init()) == NULL)
		return NULL;
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", ctl.token);
	*hdrs = curl_slist_append(NULL, auth);
	*hdrs = curl_slist_append(*hdrs, "Accept: application/json");
	*hdrs = curl_slist_append(
	    *hdrs, body ? "Content-Type: application/json" : "Content-Type:");
	*hdrs = curl_slist_append(*hdrs, "Expect:");
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
	return h;
}

/*
 * Sends one request and reads its answer.  url is the full URL; body is
 * the JSON text or NULL.  Returns 0 with *out set to the parsed answer
 * (NULL when it had no body; the caller decrefs), or -1 after a message.
 */
static int
api_send(const char *method, const char *url, const char *body, json_t **out)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	struct api_buf b = {NULL, 0, 0};
	struct curl_slist *hdrs = NULL;
	json_t *reply = NULL;
	json_error_t je;
	long status = 0;
	CURLcode rc;
	CURL *h;
	int ret = -1;

	if ((h = api_handle(method, url, body, &b, errbuf, &hdrs)) == NULL) {
		log_warnx("cannot set up libcurl");
		return -1;
	}
	rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	if (b.overflow)
		log_warnx("%s: the answer is larger than %d bytes", url,
		    API_REPLY_MAX);
	else if (rc != CURLE_OK)
		log_warnx("cannot reach the API at %s%s%s: %s", url,
		    ctl.unix_socket && *ctl.unix_socket ? " through " : "",
		    ctl.unix_socket && *ctl.unix_socket ? ctl.unix_socket : "",
		    errbuf[0] ? errbuf : curl_easy_strerror(rc));
	else if (b.len > 0 &&
	    (reply = json_loadb(b.data, b.len, 0, &je)) == NULL &&
	    status / 100 == 2)
		log_warnx("%s: the answer is not JSON: %s", url, je.text);
	else if (status / 100 != 2)
		api_error(status, url, reply);
	else {
		*out = reply;
		reply = NULL;
		ret = 0;
	}
	json_decref(reply);
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(h);
	free(b.data);
	return ret;
}

/*
 * Sends method to path (under /api/v1, e.g. "/schedules") with the query
 * entries that have a value and the body text (NULL: none; sent as it is,
 * so a file the user gives reaches the API byte for byte).  Returns 0
 * with *out the answer's JSON (NULL for an empty answer, such as a 204;
 * the caller owns it), API_DRY when --dry-run printed the request instead
 * ("METHOD PATH" and the compact body on the next line), or -1 after a
 * message on stderr.
 */
int
api_request(const char *method, const char *path, const struct api_query *q,
    size_t nq, const char *text, json_t **out)
{
	char *p, *url = NULL;
	size_t blen;
	int ret = -1;

	*out = NULL;
	if ((p = api_path(path, q, nq)) == NULL) {
		log_warnx("out of memory");
		return -1;
	}
	if (ctl.dry_run) {
		printf("%s %s\n", method, p);
		if (text != NULL)
			printf("%s\n", text);
		ret = API_DRY;
		goto done;
	}
	if (api_check_options() == -1)
		goto done;
	blen = strlen(ctl.url);
	while (blen > 0 && ctl.url[blen - 1] == '/')
		blen--;
	if (asprintf(&url, "%.*s%s", (int)blen, ctl.url, p) == -1) {
		url = NULL;
		log_warnx("out of memory");
		goto done;
	}
	ret = api_send(method, url, text, out);
done:
	free(url);
	free(p);
	return ret;
}

/*
 * Like api_request() with a JSON body (NULL: none), encoded compactly.
 */
int
api_request_json(const char *method, const char *path,
    const struct api_query *q, size_t nq, const json_t *body, json_t **out)
{
	char *text = NULL;
	int ret;

	*out = NULL;
	if (body != NULL && (text = json_dumps(body, JSON_COMPACT)) == NULL) {
		log_warnx("cannot encode the request body");
		return -1;
	}
	ret = api_request(method, path, q, nq, text, out);
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

/* Prints one JSON document on stdout, indented, for --json. */
void
api_print_json(const json_t *doc)
{
	json_dumpf(doc, stdout, JSON_INDENT(2));
	putchar('\n');
}

/* Releases what curl_global_init() set up, if it ran; once, at exit. */
void
api_cleanup(void)
{
	if (api_curl_ready)
		curl_global_cleanup();
	api_curl_ready = 0;
}
