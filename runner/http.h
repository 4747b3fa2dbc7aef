/*
 * http.h: the HTTP requests of http.c one by one, for a runner that makes
 * many of them on one curl multi handle (batch.c).
 */
#ifndef RUNNER_HTTP_H
#define RUNNER_HTTP_H

#include <curl/curl.h>

#include "runner.h"

enum http_how {
	HTTP_DONE,      /* the transfer ended by itself */
	HTTP_TIMED_OUT, /* the run's timeout cut it short */
	HTTP_STOPPED,   /* the runner was told to stop */
};
struct http_call;
struct http_call *http_open(
    const struct run_spec *spec, CURLM *multi, struct result *res);
int http_begin(struct http_call *c);
struct http_call *http_of(CURL *easy);
void http_end(struct http_call *c, const struct run_spec *spec, CURLcode code,
    enum http_how how, struct result *res);
void http_cpu(int64_t *user_us, int64_t *sys_us, int64_t *max_rss_kb);

#endif
