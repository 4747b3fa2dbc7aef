/*
 * notify.c: the delivery of failure notifications (docs/operations.md,
 * "Notifications"), done by the leading events worker (events.c) after it
 * numbered the events that queued them.  Each round takes the due ones
 * (events_notify_claim: each leased for the time a delivery may take, so
 * that a worker that dies while sending leaves it to be sent again, with
 * the same message id), sends them side by side on one curl multi handle
 * through the runner's HTTP code (runner/http.c: the host lists checked
 * for every address it connects to, no redirects, no proxy), and records
 * each outcome (events_notify_done: delivered, or again after 10 s
 * doubled, failed after eight tries).
 *
 * A webhook is signed as Standard Webhooks say: webhook-id (the message
 * id, the same on every retry), webhook-timestamp (Unix seconds) and
 * webhook-signature "v1,<base64 of HMAC-SHA256 over id.timestamp.body>",
 * keyed by the channel's secret (whsec_<base64 of the key>).  Slack gets
 * {"text": ...}; e-mail goes over SMTP (smtp_url) as a short text.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "cronvisord.h"
#include "http.h"

#define NOTIFY_BATCH 20 /* deliveries per round */

/* One delivery in flight. */
struct note {
	int64_t id;
	char **headers;
	char *body;
	struct run_spec spec;
	struct result res;
	struct http_call *call;
	char url[2048];
};

/* The human line of a notification's payload (Slack, e-mail subject). */
static void
notify_line(json_t *payload, char *buf, size_t len)
{
	json_t *d = json_object_get(payload, "data");
	const char *kind = json_string_value(json_object_get(d, "kind"));
	const char *name =
	    json_string_value(json_object_get(d, "schedule_name"));
	json_int_t failed =
	    json_integer_value(json_object_get(d, "failed_jobs"));
	json_int_t jobs =
	    json_integer_value(json_object_get(d, "jobs_created"));

	kind = kind ? kind : "?";
	name = name ? name : "?";
	if (strcmp(kind, "dead") == 0)
		snprintf(buf, len,
		    "cronvisor: schedule \"%s\" is dead (its retries are spent)",
		    name);
	else if (strcmp(kind, "recovery") == 0)
		snprintf(buf, len, "cronvisor: schedule \"%s\" succeeded again",
		    name);
	else
		snprintf(buf, len,
		    "cronvisor: schedule \"%s\": an execution ended %s (%lld of "
		    "%lld jobs failed)",
		    name, kind, (long long)failed, (long long)jobs);
}

/*
 * The Standard Webhooks signature of body under secret (whsec_...), into
 * out: "v1,BASE64".  0, or -1 if the secret is not one.
 */
static int
notify_sign(const char *secret, const char *msg, int64_t ts, const char *body,
    char *out, size_t len)
{
	unsigned char key[256], mac[EVP_MAX_MD_SIZE];
	unsigned int maclen = 0;
	char *text = NULL;
	int klen, n;

	if (strncmp(secret, "whsec_", 6) != 0 || strlen(secret + 6) > 340)
		return -1;
	klen = EVP_DecodeBlock(
	    key, (const unsigned char *)secret + 6, (int)strlen(secret + 6));
	if (klen <= 0)
		return -1;
	/* EVP_DecodeBlock counts the padding's zero bytes too. */
	for (const char *p = secret + strlen(secret);
	     p > secret + 6 && p[-1] == '='; p--)
		klen--;
	if ((n = asprintf(&text, "%s.%lld.%s", msg, (long long)ts, body)) < 0)
		return -1;
	HMAC(EVP_sha256(), key, klen, (unsigned char *)text, (size_t)n, mac,
	    &maclen);
	free(text);
	explicit_bzero(key, sizeof(key));
	if (len < 4 + 4 * ((maclen + 2) / 3) + 1)
		return -1;
	memcpy(out, "v1,", 3);
	EVP_EncodeBlock((unsigned char *)out + 3, mac, (int)maclen);
	return 0;
}

static int notify_header(char ***v, size_t *n, const char *fmt, ...)
    CV_PRINTF(3, 4);

static int
notify_header(char ***v, size_t *n, const char *fmt, ...)
{
	char **grown = realloc(*v, (*n + 2) * sizeof(**v));
	va_list ap;
	int r;

	if (grown == NULL)
		return -1;
	*v = grown;
	va_start(ap, fmt);
	r = vasprintf(&grown[*n], fmt, ap);
	va_end(ap);
	if (r < 0)
		return -1;
	grown[++*n] = NULL;
	return 0;
}

static void
notify_free(struct note *n)
{
	for (size_t i = 0; n->headers != NULL && n->headers[i] != NULL; i++)
		free(n->headers[i]);
	free(n->headers);
	free(n->body);
	result_clear(&n->res);
}

/* The e-mail of a notification: headers and text, CRLF lines. */
static char *
notify_mail(const struct config *cf, const char *to, const char *msg,
    json_t *payload, const char *line)
{
	char date[64], *text = NULL, *pretty;
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S +0000", &tm);
	pretty = json_dumps(payload, JSON_INDENT(2));
	if (asprintf(&text,
	        "Date: %s\r\nFrom: %s\r\nTo: %s\r\nMessage-ID: <%s@cronvisor>\r\n"
	        "Subject: %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
	        "\r\n%s\r\n\r\n%s\r\n",
	        date, cf->smtp_from, to, msg, line, line,
	        pretty ? pretty : "") < 0)
		text = NULL;
	free(pretty);
	return text;
}

/*
 * Sends an e-mail at once (SMTP is not on the multi handle: a local relay
 * answers in milliseconds, and smtp_url has the same time limit).
 * Returns 0, or -1 with err set.
 */
static int
notify_smtp(const struct config *cf, const char *to, const char *mail,
    char *err, size_t errlen)
{
	struct curl_slist *rcpt = NULL;
	char *list = strdup(to), *save = NULL, ebuf[CURL_ERROR_SIZE] = "";
	CURL *h = curl_easy_init();
	FILE *fp = fmemopen((void *)mail, strlen(mail), "r");
	CURLcode rc;

	if (h == NULL || list == NULL || fp == NULL) {
		snprintf(err, errlen, "out of memory");
		rc = CURLE_OUT_OF_MEMORY;
		goto out;
	}
	for (char *a = strtok_r(list, ", ", &save); a != NULL;
	     a = strtok_r(NULL, ", ", &save))
		rcpt = curl_slist_append(rcpt, a);
	curl_easy_setopt(h, CURLOPT_URL, cf->smtp_url);
	curl_easy_setopt(h, CURLOPT_MAIL_FROM, cf->smtp_from);
	curl_easy_setopt(h, CURLOPT_MAIL_RCPT, rcpt);
	curl_easy_setopt(h, CURLOPT_READDATA, fp);
	curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)cf->notify_timeout_seconds);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "smtp,smtps");
	if ((rc = curl_easy_perform(h)) != CURLE_OK)
		snprintf(err, errlen, "smtp: %s",
		    ebuf[0] ? ebuf : curl_easy_strerror(rc));
out:
	if (fp != NULL)
		fclose(fp);
	curl_slist_free_all(rcpt);
	curl_easy_cleanup(h);
	free(list);
	return rc == CURLE_OK ? 0 : -1;
}

/* Records one outcome; -1 if the database failed. */
static int
notify_done(
    struct db *db, int64_t id, int ok, int64_t status, const char *error)
{
	char sid[24], st[16], e[CV_ERRLEN];
	const char *p[4] = {sid, ok ? "delivered" : "retry",
	    status > 0 ? st : NULL, ok ? NULL : error};

	snprintf(sid, sizeof(sid), "%lld", (long long)id);
	snprintf(st, sizeof(st), "%lld", (long long)status);
	return db_exec(db, SQL_events_notify_done, 4, p, e, sizeof(e)) == -1
	    ? -1
	    : 0;
}

/*
 * Sets up the HTTP delivery of row i (webhook or slack) into n; 0, or -1
 * with the reason recorded by the caller (err).
 */
static int
notify_http(const struct config *cf, const struct db_rows *rows, int i,
    json_t *payload, struct note *n, char *err, size_t errlen)
{
	const char *type = db_rows_value(rows, i, EVENTS_NOTE_COL_TYPE);
	const char *msg = db_rows_value(rows, i, EVENTS_NOTE_COL_MSG);
	int64_t now =
	    strtoll(db_rows_value(rows, i, EVENTS_NOTE_COL_NOW), NULL, 10);
	size_t nh = 0;
	char sig[128], line[512];

	if (strcmp(type, "slack") == 0) {
		json_t *o;

		notify_line(payload, line, sizeof(line));
		o = json_pack("{s:s}", "text", line);
		n->body = o ? json_dumps(o, JSON_COMPACT) : NULL;
		json_decref(o);
	} else
		n->body =
		    strdup(db_rows_value(rows, i, EVENTS_NOTE_COL_PAYLOAD));
	if (n->body == NULL ||
	    notify_header(&n->headers, &nh, "Content-Type: application/json") ||
	    notify_header(
	        &n->headers, &nh, "User-Agent: cronvisor/%s", CV_VERSION))
		return log_errbuf(err, errlen, "out of memory");
	if (strcmp(type, "webhook") == 0) {
		if (notify_sign(db_rows_value(rows, i, EVENTS_NOTE_COL_SECRET),
		        msg, now, n->body, sig, sizeof(sig)) == -1)
			return log_errbuf(err, errlen,
			    "the channel's secret is not whsec_...");
		if (notify_header(&n->headers, &nh, "webhook-id: %s", msg) ||
		    notify_header(&n->headers, &nh, "webhook-timestamp: %lld",
		        (long long)now) ||
		    notify_header(
		        &n->headers, &nh, "webhook-signature: %s", sig))
			return log_errbuf(err, errlen, "out of memory");
	}
	snprintf(n->url, sizeof(n->url), "%s",
	    db_rows_value(rows, i, EVENTS_NOTE_COL_URL));
	n->spec.target = RUN_TARGET_HTTP;
	n->spec.run_id = msg;
	n->spec.schedule = "notification";
	n->spec.url = n->url;
	n->spec.method = "POST";
	n->spec.headers = (const char *const *)n->headers;
	n->spec.body = n->body;
	n->spec.body_len = strlen(n->body);
	n->spec.allow_hosts = cf->http_allow_hosts;
	n->spec.deny_hosts = cf->http_deny_hosts;
	n->spec.timeout = cf->notify_timeout_seconds;
	n->spec.output_tail = 1024;
	return 0;
}

/*
 * One round: the due notifications sent and their outcomes recorded.
 * Returns how many were taken (NOTIFY_BATCH: more may wait), or -1 if the
 * database failed (err set).
 */
int
notify_round(struct db *db, const struct config *cf, char *err, size_t errlen)
{
	char lim[16], lease[24];
	const char *p[2] = {lim, lease};
	struct note notes[NOTIFY_BATCH];
	struct db_rows *rows;
	CURLM *multi;
	int n, running = 0, rc = 0;

	if (db_exec(db, SQL_events_notify_orphans, 0, NULL, err, errlen) == -1)
		return -1;
	snprintf(lim, sizeof(lim), "%d", NOTIFY_BATCH);
	snprintf(lease, sizeof(lease), "%lld",
	    (long long)cf->notify_timeout_seconds + 60);
	if ((rows = db_query(db, SQL_events_notify_claim, 2, p, err, errlen)) ==
	    NULL)
		return -1;
	if ((n = db_rows_count(rows)) == 0) {
		db_rows_free(rows);
		return 0;
	}
	memset(notes, 0, sizeof(notes));
	multi = curl_multi_init();
	for (int i = 0; i < n; i++) {
		struct note *t = &notes[i];
		const char *type = db_rows_value(rows, i, EVENTS_NOTE_COL_TYPE);
		json_t *payload = json_loads(
		    db_rows_value(rows, i, EVENTS_NOTE_COL_PAYLOAD), 0, NULL);
		char why[CV_ERRLEN] = "", line[512];

		t->id = strtoll(
		    db_rows_value(rows, i, EVENTS_NOTE_COL_ID), NULL, 10);
		result_init(&t->res);
		if (strcmp(type, "email") == 0) {
			char *mail;

			notify_line(payload, line, sizeof(line));
			mail = notify_mail(cf,
			    db_rows_value(rows, i, EVENTS_NOTE_COL_TO),
			    db_rows_value(rows, i, EVENTS_NOTE_COL_MSG),
			    payload, line);
			if (cf->smtp_url[0] == '\0')
				snprintf(why, sizeof(why),
				    "no smtp_url is configured");
			else if (mail == NULL)
				snprintf(why, sizeof(why), "out of memory");
			else if (notify_smtp(cf,
			             db_rows_value(rows, i, EVENTS_NOTE_COL_TO),
			             mail, why, sizeof(why)) == 0)
				why[0] = '\0';
			free(mail);
			t->id = -t->id; /* done: recorded below */
			if (notify_done(db, -t->id, why[0] == '\0', 0, why) ==
			    -1)
				rc = -1;
		} else if (multi == NULL ||
		    notify_http(cf, rows, i, payload, t, why, sizeof(why)) ==
		        -1 ||
		    (t->call = http_open(&t->spec, multi, &t->res)) == NULL ||
		    http_begin(t->call) == -1) {
			if (why[0] == '\0')
				snprintf(why, sizeof(why), "%s",
				    t->res.error ? t->res.error
				                 : "cannot start the request");
			t->id = -t->id;
			if (notify_done(db, -t->id, 0, 0, why) == -1)
				rc = -1;
		}
		json_decref(payload);
	}
	db_rows_free(rows);
	/* The requests, side by side, within their own time limits. */
	do {
		if (multi == NULL ||
		    curl_multi_perform(multi, &running) != CURLM_OK)
			break;
		if (running > 0 &&
		    curl_multi_poll(multi, NULL, 0, 1000, NULL) != CURLM_OK)
			break;
	} while (running > 0);
	for (CURLMsg *m; multi != NULL &&
	     (m = curl_multi_info_read(multi, &running)) != NULL;) {
		struct http_call *c;

		if (m->msg != CURLMSG_DONE ||
		    (c = http_of(m->easy_handle)) == NULL)
			continue;
		for (int i = 0; i < n; i++)
			if (notes[i].call == c) {
				http_end(c, &notes[i].spec, m->data.result,
				    HTTP_DONE, &notes[i].res);
				notes[i].call = NULL;
				if (notify_done(db, notes[i].id,
				        notes[i].res.status == RESULT_OK,
				        notes[i].res.http_status,
				        notes[i].res.error ? notes[i].res.error
				                           : "failed") == -1)
					rc = -1;
				notes[i].id = -notes[i].id;
			}
	}
	for (int i = 0; i < n; i++) {
		/* a request the loop above left (curl's multi failed) */
		if (notes[i].call != NULL) {
			http_end(notes[i].call, &notes[i].spec,
			    CURLE_ABORTED_BY_CALLBACK, HTTP_STOPPED,
			    &notes[i].res);
			if (notify_done(db, notes[i].id, 0, 0,
			        "the transfer was cut short") == -1)
				rc = -1;
		}
		notify_free(&notes[i]);
	}
	if (multi != NULL)
		curl_multi_cleanup(multi);
	if (rc == -1)
		log_errbuf(err, errlen, "recording a delivery failed");
	return rc == -1 ? -1 : n;
}
