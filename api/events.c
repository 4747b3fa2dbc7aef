/*
 * events.c: GET /api/v1/events, the live events as server-sent events
 * (docs/events.md).  The caller's own schedules' events (an admin's: every
 * owner's, or ?owner=), in seq order, from after=SEQ (or the Last-Event-ID
 * header a reconnecting EventSource sends; without either, from now on),
 * each as
 *
 *	id: SEQ
 *	event: TYPE
 *	data: {"seq": SEQ, "type": TYPE, "at": ..., ...}
 *
 * then, unless follow=false, whatever is numbered later (the sequencer's
 * NOTIFY cronvisor_sequenced wakes the stream), with a comment line every
 * EVS_KEEPALIVE_S to keep proxies from timing out, for EVS_MAX_S at most:
 * the client reconnects with Last-Event-ID and misses nothing.  A stream
 * holds one of the API's threads: at most half of them stream at once,
 * and one owner at most a quarter (each at least 1); past that a 429.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"

#define EVS_PAGE        500 /* events read per statement */
#define EVS_KEEPALIVE_S 5   /* a comment line when nothing came for so long */
#define EVS_MAX_S       300 /* a stream ends after; the client reconnects */

/* The streams open, by owner ("" for an admin's of every owner). */
static struct {
	pthread_mutex_t mu;
	int total;
	struct {
		char owner[API_OWNER_MAX * 4 + 1];
		int n;
	} by[64];
} evs = {.mu = PTHREAD_MUTEX_INITIALIZER};

/*
 * Takes a place for a stream of owner under the limits of api_threads
 * threads.  Returns 1, or 0 with the 429 in rs.
 */
static int
evs_take(const char *owner, int64_t threads, struct response *rs)
{
	int total_max = threads / 2 > 1 ? (int)(threads / 2) : 1;
	int owner_max = threads / 4 > 1 ? (int)(threads / 4) : 1;
	int slot = -1, free_slot = -1, ok = 0;

	pthread_mutex_lock(&evs.mu);
	for (int i = 0; i < 64; i++) {
		if (evs.by[i].n > 0 && strcmp(evs.by[i].owner, owner) == 0)
			slot = i;
		else if (evs.by[i].n == 0 && free_slot == -1)
			free_slot = i;
	}
	if (evs.total < total_max && (slot != -1 || free_slot != -1) &&
	    (slot == -1 || evs.by[slot].n < owner_max)) {
		if (slot == -1) {
			slot = free_slot;
			snprintf(evs.by[slot].owner, sizeof(evs.by[slot].owner),
			    "%s", owner);
		}
		evs.by[slot].n++;
		evs.total++;
		ok = 1;
	}
	pthread_mutex_unlock(&evs.mu);
	if (!ok) {
		api_error(rs, 429, "too_many_streams", NULL,
		    "too many event streams are open (%d in all, %d of one "
		    "owner at most); close one or retry later",
		    total_max, owner_max);
		rs->retry_after = 5; /* after api_error(), which clears rs */
	}
	return ok;
}

static void
evs_give(const char *owner)
{
	pthread_mutex_lock(&evs.mu);
	for (int i = 0; i < 64; i++)
		if (evs.by[i].n > 0 && strcmp(evs.by[i].owner, owner) == 0) {
			evs.by[i].n--;
			evs.total--;
			break;
		}
	pthread_mutex_unlock(&evs.mu);
}

/* A seq from text: 0..2^62; -1 if it is not one. */
static int64_t
evs_seq(const char *s)
{
	char *end;
	long long v;

	if (s == NULL || *s < '0' || *s > '9' || strlen(s) > 19)
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < 0 || v > (1LL << 62))
		return -1;
	return v;
}

/* Sends the page of events after *after; how many, or -1 (gone or failed). */
static int
evs_page(struct request *rq, const char *owner, int64_t *after, char *err,
    size_t errlen, int *db_failed)
{
	char a[24], lim[16], *buf = NULL;
	const char *p[3] = {a, lim, owner};
	struct db_rows *rows;
	size_t len = 0;
	FILE *fp;
	int n, rc;

	snprintf(a, sizeof(a), "%lld", (long long)*after);
	snprintf(lim, sizeof(lim), "%d", EVS_PAGE);
	rows = db_query(rq->db,
	    owner != NULL ? SQL_events_after_owner : SQL_events_after,
	    owner != NULL ? 3 : 2, p, err, errlen);
	if (rows == NULL) {
		*db_failed = 1;
		return -1;
	}
	if ((n = db_rows_count(rows)) == 0) {
		db_rows_free(rows);
		return 0;
	}
	if ((fp = open_memstream(&buf, &len)) == NULL) {
		db_rows_free(rows);
		return -1;
	}
	for (int i = 0; i < n; i++)
		fprintf(fp, "id: %s\nevent: %s\ndata: %s\n\n",
		    db_rows_value(rows, i, EVENTS_ROW_COL_SEQ),
		    db_rows_value(rows, i, EVENTS_ROW_COL_TYPE),
		    db_rows_value(rows, i, EVENTS_ROW_COL_JSON));
	*after =
	    strtoll(db_rows_value(rows, n - 1, EVENTS_ROW_COL_SEQ), NULL, 10);
	db_rows_free(rows);
	if (fclose(fp) != 0) {
		free(buf);
		return -1;
	}
	rc = rq->emit(rq->emit_ctx, buf, len);
	free(buf);
	return rc == -1 ? -1 : n;
}

/* The stream itself, once the headers went: until done, gone or time. */
static int
evs_run(struct request *rq, const char *owner, int64_t after, int follow,
    char *err, size_t errlen)
{
	int64_t start = clock_ms(), quiet = start;
	int n, db_failed = 0;

	for (;;) {
		if ((n = evs_page(
		         rq, owner, &after, err, errlen, &db_failed)) == -1)
			break;
		if (n > 0)
			quiet = clock_ms();
		int64_t now = clock_ms();

		/* however busy, a stream ends after EVS_MAX_S (it resumes) */
		if (now - start >= EVS_MAX_S * 1000 || rq->stopping())
			break;
		if (n == EVS_PAGE)
			continue;
		if (!follow)
			break;

		if (now - quiet >= EVS_KEEPALIVE_S * 1000) {
			if (rq->emit(rq->emit_ctx, ": keep-alive\n\n", 14) ==
			    -1)
				break;
			quiet = now;
		}
		/* Wait for the sequencer (or a second: the server may stop). */
		if (db_notifies(rq->db, NULL, NULL, err, errlen) == 0) {
			struct pollfd pfd = {
			    .fd = db_fd(rq->db), .events = POLLIN};

			(void)poll(&pfd, 1, 1000);
			if (db_notifies(rq->db, NULL, NULL, err, errlen) ==
			    -1) {
				db_failed = 1;
				break;
			}
		}
	}
	return db_failed ? -1 : 0;
}

int
events_stream(struct request *rq, struct response *rs, char *err, size_t errlen)
{
	static const char *const allowed[] = {"after", "follow", "owner", NULL};
	static const char head[] = "Status: 200 OK\r\n"
	                           "Content-Type: text/event-stream\r\n"
	                           "Cache-Control: no-store\r\n"
	                           "X-Accel-Buffering: no\r\n"
	                           "\r\n"
	                           "retry: 2000\n\n";
	char buf[API_OWNER_MAX * 4 + 1], follow_s[8];
	const char *owner = api_scope(rq), *from = NULL;
	struct db_rows *rows;
	int64_t after = -1, oldest, last;
	int follow = 1, r, rc;

	if (query_check(rq->query, allowed, rs) == -1)
		return 0;
	if ((r = query_get(rq->query, "after", buf, sizeof(buf))) != 0) {
		if (r == -1 || (after = evs_seq(buf)) == -1)
			return api_error(rs, 400, "invalid_query", "after",
			    "must be an event's seq: a whole number from 0");
	} else if (rq->last_event_id != NULL && rq->last_event_id[0] != '\0') {
		if ((after = evs_seq(rq->last_event_id)) == -1)
			return api_error(rs, 400, "invalid_header",
			    "Last-Event-ID",
			    "must be an event's seq: a whole number from 0");
		from = "Last-Event-ID";
	}
	if ((r = query_get(rq->query, "follow", follow_s, sizeof(follow_s))) !=
	    0) {
		if (r == 1 && strcmp(follow_s, "true") == 0)
			follow = 1;
		else if (r == 1 && strcmp(follow_s, "false") == 0)
			follow = 0;
		else
			return api_error(rs, 400, "invalid_query", "follow",
			    "must be true or false");
	}
	if ((r = query_get(rq->query, "owner", buf, sizeof(buf))) != 0) {
		if (r == -1 || buf[0] == '\0')
			return api_error(rs, 400, "invalid_query", "owner",
			    "must be an owner's name");
		if (owner != NULL && strcmp(owner, buf) != 0)
			return api_error(rs, 403, "forbidden", "owner",
			    "a token of role %s sees its own owner's events only",
			    rq->who.role == ROLE_EDITOR ? "editor" : "viewer");
		owner = buf;
	}
	if ((rows = db_query(
	         rq->db, SQL_events_bounds, 0, NULL, err, errlen)) == NULL)
		return API_DB_FAILED;
	oldest = db_rows_value(rows, 0, 0) != NULL
	    ? strtoll(db_rows_value(rows, 0, 0), NULL, 10)
	    : -1;
	last = strtoll(db_rows_value(rows, 0, 1), NULL, 10);
	db_rows_free(rows);
	if (after > last) {
		/* the count of every owner's events is an admin's to know */
		char at[40] = "";

		if (rq->who.role == ROLE_ADMIN)
			snprintf(at, sizeof(at), ", seq %lld", (long long)last);
		return api_error(rs, 400,
		    from != NULL ? "invalid_header" : "invalid_query",
		    from != NULL ? from : "after", "is past the last event%s",
		    at);
	}
	if (after == -1)
		after = last; /* from now on */
	if (!evs_take(owner != NULL ? owner : "", rq->cf->api_threads, rs))
		return 0;
	rs->streamed = 1;
	rc = 0;
	if (rq->emit(rq->emit_ctx, head, sizeof(head) - 1) == 0) {
		/* Events the database no longer keeps: say so first. */
		if (oldest != -1 && after + 1 < oldest) {
			char gap[160];
			int n = snprintf(gap, sizeof(gap),
			    "event: gap\ndata: {\"after\": %lld, \"oldest\": "
			    "%lld}\n\n",
			    (long long)after, (long long)oldest);

			(void)rq->emit(rq->emit_ctx, gap, (size_t)n);
		}
		if (follow &&
		    db_listen(rq->db, "cronvisor_sequenced", err, errlen) == -1)
			rc = -1;
		else {
			rc = evs_run(rq, owner, after, follow, err, errlen);
			if (follow)
				(void)db_unlisten(
				    rq->db, "cronvisor_sequenced", err, errlen);
		}
	}
	evs_give(owner != NULL ? owner : "");
	/* The answer went out: a database failure only ended it (and is
	 * logged, and the connection checked, as any other). */
	return rc == -1 ? API_DB_FAILED : 0;
}
