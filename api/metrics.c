/*
 * metrics.c: GET /metrics, the Prometheus text exposition (format 0.0.4)
 * of docs/operations.md, "Metrics".  Outside /api/v1 and outside its
 * tokens: answered to a client whose address (REMOTE_ADDR, as nginx saw
 * it) is on metrics_allow (loopback by default), or that presents
 * metrics_token as its bearer token; anyone else gets a 403 (401 without
 * a token when one is set).  Counters come from metric_counts (the
 * sequencer's, so every supervisor's work counts once), gauges from the
 * tables as they are now; every label value comes from a fixed set, so
 * the series stay few whatever the number of schedules.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "api.h"

/* The families, in the order they are written. */
static const struct family {
	const char *name; /* without _bucket, _sum, _count */
	const char *type; /* counter, gauge, histogram */
	const char *help;
} families[] = {
    {"cronvisor_runs_total", "counter",
        "Runs ended (attempts), by kind, status and target type."},
    {"cronvisor_slots_not_run_total", "counter",
        "Slots recorded without running (skipped, missed, expired), by "
        "why."},
    {"cronvisor_retries_total", "counter",
        "Attempts after a slot's or a job's first that ran."},
    {"cronvisor_jobs_total", "counter", "Jobs of executions ended, by status."},
    {"cronvisor_executions_total", "counter", "Executions ended, by status."},
    {"cronvisor_schedules_dead_total", "counter",
        "Schedules that became dead (out of retries)."},
    {"cronvisor_callbacks_total", "counter",
        "Agents' reports (callbacks) by result."},
    {"cronvisor_notifications_total", "counter",
        "Notification deliveries by result (delivered, retried, failed)."},
    {"cronvisor_run_duration_seconds", "histogram",
        "How long runs took, by target type."},
    {"cronvisor_firing_lag_seconds", "histogram",
        "How late a slot's first attempt started after its instant."},
    {"cronvisor_runs_in_flight", "gauge",
        "Runs running or waiting for an agent's report, by kind."},
    {"cronvisor_agent_requests_in_flight", "gauge",
        "Agent requests in flight, across every supervisor."},
    {"cronvisor_schedules", "gauge", "Schedules by status."},
    {"cronvisor_due_slots", "gauge",
        "Active schedules whose next run is due and not yet started."},
    {"cronvisor_oldest_due_seconds", "gauge",
        "How long the oldest due and not yet started schedule waits."},
    {"cronvisor_jobs_ready", "gauge",
        "Jobs whose time came and that wait for a place."},
    {"cronvisor_oldest_ready_job_seconds", "gauge",
        "How long the oldest of those waits."},
    {"cronvisor_supervisors_alive", "gauge",
        "Supervisors whose heartbeat is within lease_seconds."},
    {"cronvisor_events_last_seq", "gauge",
        "The seq of the last event numbered."},
    {"cronvisor_notifications_pending", "gauge",
        "Notifications waiting to be delivered."},
    {"cronvisor_events_unnumbered", "gauge",
        "Events written and not yet numbered (the events worker's "
        "backlog)."},
    {"cronvisor_build_info", "gauge",
        "The version of cronvisor-api answering, as a label; always 1."},
};
#define NFAMILIES (sizeof(families) / sizeof(families[0]))

/* The family of a series name (a histogram's by its suffixes), or -1. */
static int
metrics_family(const char *name)
{
	for (size_t i = 0; i < NFAMILIES; i++) {
		size_t n = strlen(families[i].name);

		if (strncmp(name, families[i].name, n) != 0)
			continue;
		if (name[n] == '\0' ||
		    (strcmp(families[i].type, "histogram") == 0 &&
		        (strcmp(name + n, "_bucket") == 0 ||
		            strcmp(name + n, "_sum") == 0 ||
		            strcmp(name + n, "_count") == 0)))
			return (int)i;
	}
	return -1;
}

/* Writes value as Prometheus reads it: an integer when it is one. */
static void
metrics_value(FILE *fp, const char *text)
{
	double v = strtod(text, NULL);

	if (v == (double)(long long)v && v < 9e15 && v > -9e15)
		fprintf(fp, "%lld", (long long)v);
	else
		fprintf(fp, "%.9g", v);
}

/* The rows of one family from rows (name, labels, value), as text. */
static void
metrics_rows(FILE *fp, const struct db_rows *rows, size_t fam, int *written)
{
	int n = db_rows_count(rows);

	for (int i = 0; i < n; i++) {
		const char *name = db_rows_value(rows, i, 0);
		const char *labels = db_rows_value(rows, i, 1);

		if (metrics_family(name) != (int)fam)
			continue;
		fprintf(fp, "%s%s%s%s ", name, labels[0] ? "{" : "", labels,
		    labels[0] ? "}" : "");
		metrics_value(fp, db_rows_value(rows, i, 2));
		fputc('\n', fp);
		(*written)++;
	}
}

/*
 * May this client read the metrics?  1, or 0 with the error in rs: its
 * address on metrics_allow, or metrics_token as its bearer token.
 */
static int
metrics_allowed(const struct request *rq, const char *addr, struct response *rs)
{
	const char *tok = rq->cf->metrics_token;
	const char *auth = rq->authorization;
	struct hostlist hl;
	char err[CV_ERRLEN];
	int ok = 0;

	if (tok != NULL && tok[0] != '\0' && strncmp(auth, "Bearer ", 7) == 0 &&
	    strlen(auth + 7) == strlen(tok) &&
	    CRYPTO_memcmp(auth + 7, tok, strlen(tok)) == 0)
		return 1;
	if (addr != NULL && addr[0] != '\0' && rq->cf->metrics_allow != NULL &&
	    hostlist_parse(&hl, rq->cf->metrics_allow, err, sizeof(err)) == 0) {
		ok = hl.n > 0 && hostlist_match(&hl, addr, addr);
		hostlist_clear(&hl);
	}
	if (ok)
		return 1;
	if (tok != NULL && tok[0] != '\0' && auth[0] == '\0')
		api_error(rs, 401, "unauthorized", NULL,
		    "the metrics need Authorization: Bearer <metrics_token> "
		    "from this address");
	else
		api_error(rs, 403, "forbidden", NULL,
		    "this address may not read the metrics (metrics_allow, "
		    "metrics_token)");
	return 0;
}

/*
 * GET /metrics for the client at addr.  Returns what a handler returns
 * (api_handler); the exposition itself goes out through rq->emit.
 */
int
metrics_serve(struct request *rq, const char *addr, struct response *rs,
    char *err, size_t errlen)
{
	static const char head[] = "Status: 200 OK\r\n"
	                           "Content-Type: text/plain; version=0.0.4; "
	                           "charset=utf-8\r\n"
	                           "Cache-Control: no-store\r\n"
	                           "\r\n";
	struct db_rows *counts, *gauges;
	char lease[24], *buf = NULL;
	const char *p[1] = {lease};
	size_t len = 0;
	FILE *fp;
	int rc;

	if (strcmp(rq->method, "GET") != 0 && strcmp(rq->method, "HEAD") != 0) {
		snprintf(rs->allow, sizeof(rs->allow), "GET, HEAD");
		return api_error(
		    rs, 405, "method_not_allowed", NULL, "GET /metrics only");
	}
	if (!metrics_allowed(rq, addr, rs))
		return 0;
	if (rq->db == NULL)
		return api_error(rs, 503, "unavailable", NULL,
		    "the database cannot be reached; retry later");
	snprintf(
	    lease, sizeof(lease), "%lld", (long long)rq->cf->lease_seconds);
	if ((counts = db_query(
	         rq->db, SQL_metrics_counts, 0, NULL, err, errlen)) == NULL)
		return API_DB_FAILED;
	if ((gauges = db_query(
	         rq->db, SQL_metrics_gauges, 1, p, err, errlen)) == NULL) {
		db_rows_free(counts);
		return API_DB_FAILED;
	}
	if ((fp = open_memstream(&buf, &len)) == NULL) {
		db_rows_free(counts);
		db_rows_free(gauges);
		return -1;
	}
	for (size_t i = 0; i < NFAMILIES; i++) {
		int written = 0;

		fprintf(fp, "# HELP %s %s\n# TYPE %s %s\n", families[i].name,
		    families[i].help, families[i].name, families[i].type);
		metrics_rows(fp, counts, i, &written);
		metrics_rows(fp, gauges, i, &written);
		if (strcmp(families[i].name, "cronvisor_build_info") == 0)
			fprintf(fp, "cronvisor_build_info{version=\"%s\"} 1\n",
			    CV_VERSION);
		else if (written == 0 && strcmp(families[i].type, "gauge") == 0)
			fprintf(fp, "%s 0\n", families[i].name);
	}
	db_rows_free(counts);
	db_rows_free(gauges);
	if (fclose(fp) != 0) {
		free(buf);
		return -1;
	}
	rs->streamed = 1;
	rc = rq->emit(rq->emit_ctx, head, sizeof(head) - 1);
	if (rc == 0 && strcmp(rq->method, "GET") == 0)
		(void)rq->emit(rq->emit_ctx, buf, len);
	free(buf);
	return 0;
}
