/*
 * health.c: the agents' health probes (docs/agents.md, "Health").  A
 * probe is a GET of the agent's health URL, with the agent's auth, made
 * by a forked runner under the same isolation and host lists as the
 * agent's requests: it is a job of the loop like a run's (started,
 * reaped and timed out the same way), whose end is written here rather
 * than by finish.c.  health_claim() takes the agents whose probe is due
 * and moves their next probe on in the same statement, so that one
 * supervisor probes an agent at a time; health_write() keeps the probes'
 * results (the agent's latest state, and its last 100 probes).  An agent
 * that is unhealthy and `when_unhealthy: "wait"` gets no request until a
 * probe succeeds (cronvisor_agents_blocked() and claim.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisord.h"

#define HEALTH_TIMEOUT_S 10  /* a probe's answer must come within, s */
#define HEALTH_OUTPUT    256 /* bytes of its answer the runner keeps */

static int64_t probes; /* probes started, for their ids */

/* The probe job of row `row` of health_claim (owner, agent, url, auth). */
static struct job *
probe_job(
    const struct db_rows *rows, int row, const struct config *cf, int64_t sv_id)
{
	const char *owner = db_rows_value(rows, row, 0);
	struct job *j = calloc(1, sizeof(*j));
	struct spec_buf *sb;
	struct run_spec *spec;
	size_t n = 0;

	if (j == NULL)
		return NULL;
	j->fd = -1;
	j->probe = 1;
	if ((j->name = strdup(db_rows_value(rows, row, 1))) == NULL ||
	    (j->owner = strdup(owner)) == NULL ||
	    (j->probe_url = strdup(db_rows_value(rows, row, 2))) == NULL) {
		job_free(j);
		return NULL;
	}
	snprintf(j->run_id, sizeof(j->run_id), "probe-%lld-%lld",
	    (long long)sv_id, (long long)++probes);
	sb = &j->sb;
	spec = &j->spec;
	if ((sb->url = strdup(j->probe_url)) == NULL ||
	    (sb->method = strdup("GET")) == NULL ||
	    (sb->body = strdup("")) == NULL ||
	    sched_header(sb, &n, "Accept", "application/json, */*") == -1 ||
	    agent_auth(sb, &n, db_rows_value(rows, row, 3),
	        db_rows_value(rows, row, 4), db_rows_value(rows, row, 5),
	        sb->body) == -1) {
		job_free(j);
		return NULL;
	}
	spec->run_id = j->run_id;
	spec->schedule = j->name;
	spec->timeout = HEALTH_TIMEOUT_S;
	spec->kill_grace = cf->kill_grace_seconds;
	spec->output_tail = HEALTH_OUTPUT;
	spec->target = RUN_TARGET_HTTP;
	spec->url = sb->url;
	spec->method = sb->method;
	spec->headers = (const char *const *)sb->headers;
	spec->body = NULL; /* a GET (sb->body, "", is what hmac signs) */
	spec->max_redirects = (long)cf->http_max_redirects;
	/* Its owner's run user and host lists: a denied URL fails the probe. */
	if (sched_http_common(owner, cf, sb, spec, j->spawn_error,
	        sizeof(j->spawn_error)) == -1 &&
	    j->spawn_error[0] == '\0')
		snprintf(j->spawn_error, sizeof(j->spawn_error),
		    "the probe could not be prepared");
	return j;
}

/*
 * Claims up to limit due probes into *jobs (a list by next, to start in
 * the loop) and sets *next_ms to when the next one is due (CLOCK_REALTIME
 * ms, INT64_MAX: none).  Returns how many, or -1 with err set.
 */
int
health_claim(struct db *db, const struct config *cf, int64_t sv_id, int limit,
    struct job **jobs, int64_t *next_ms, char *err, size_t errlen)
{
	char lim[24];
	const char *p[1] = {lim};
	struct db_rows *rows;
	const char *v;
	int n = 0;

	*jobs = NULL;
	*next_ms = INT64_MAX;
	if (limit > 0) {
		snprintf(lim, sizeof(lim), "%d", limit);
		if ((rows = db_query(
		         db, SQL_health_claim, 1, p, err, errlen)) == NULL)
			return -1;
		for (int i = 0; i < db_rows_count(rows); i++) {
			struct job *j = probe_job(rows, i, cf, sv_id);

			if (j == NULL) {
				log_warnx("agent %s: its probe could not be "
				          "prepared: out of memory",
				    db_rows_value(rows, i, 1));
				continue;
			}
			j->next = *jobs;
			*jobs = j;
			n++;
		}
		db_rows_free(rows);
	}
	if ((rows = db_query(db, SQL_health_next, 0, NULL, err, errlen)) ==
	    NULL)
		return -1;
	if (db_rows_count(rows) > 0 && (v = db_rows_value(rows, 0, 0)) != NULL)
		*next_ms = strtoll(v, NULL, 10);
	db_rows_free(rows);
	return n;
}

/* The row health_write keeps of probe j; NULL out of memory. */
static json_t *
probe_row(const struct job *j)
{
	int ok = j->verdict.status == RUN_SUCCEEDED;

	if (ok)
		log_debug("agent %s of %s: healthy (HTTP %lld in %lld ms)",
		    j->name, j->owner, (long long)j->res.http_status,
		    (long long)(j->res.duration_us / 1000));
	else
		log_info("agent %s of %s: health probe failed: %s", j->name,
		    j->owner, j->verdict.error);
	return json_pack("{s:s, s:s, s:s, s:b, s:I, s:I, s:s?, s:I}", "owner",
	    j->owner, "agent", j->name, "url", j->probe_url, "ok", ok,
	    "http_status", (json_int_t)j->res.http_status, "latency_ms",
	    (json_int_t)(j->res.duration_us / 1000), "error",
	    ok ? NULL : j->verdict.error, "at",
	    (json_int_t)(j->ended_us / 1000));
}

/*
 * Writes the ended probes of v (n of them) in one statement and marks
 * them done.  A probe the supervisor stopped (it stops, or its lease ran
 * out) says nothing of the agent: it is dropped.  0, or -1 with err set
 * (they stay ended, written at the next turn).
 */
int
health_write(
    struct db *db, struct job *const *v, size_t n, char *err, size_t errlen)
{
	json_t *arr = json_array(), *o;
	struct db_rows *rows;
	const char *back;

	for (size_t i = 0; arr != NULL && i < n; i++) {
		if (v[i]->cause != REAP_EXITED && v[i]->cause != REAP_DEADLINE)
			continue;
		if ((o = probe_row(v[i])) == NULL ||
		    json_array_append_new(arr, o) == -1) {
			json_decref(arr);
			arr = NULL;
		}
	}
	if (arr == NULL)
		return log_errbuf(err, errlen, "out of memory");
	if (json_array_size(arr) > 0) {
		if ((rows = batch_query(
		         db, SQL_health_write, NULL, arr, err, errlen)) == NULL)
			return -1;
		if ((back = db_rows_value(rows, 0, 0)) != NULL &&
		    strcmp(back, "0") != 0)
			log_info(
			    "%s agents healthy again: their jobs go", back);
		db_rows_free(rows);
	} else {
		json_decref(arr);
	}
	for (size_t i = 0; i < n; i++)
		job_state(v[i], JOB_DONE);
	return 0;
}
