/*
 * sched.c: a schedules row as the supervisor works with it.  The claim
 * query selects the column list {{sched}} of sql/queries/sched.sql, whose
 * positions are enum sched_col (sql_queries.h); sched_load() turns one
 * row into a struct sched (the timing of common/slot.c, the retry and
 * catch-up policies, the state counters), and sched_spec() turns a
 * schedule and one of its runs
 * into the struct run_spec the runner executes: the exec command, the HTTP
 * request, or the configured receiver's POST for schedules without a
 * target.  What the API stored was validated when it was written; a row
 * that still does not make sense (written by hand with SQL) is an error for
 * that schedule, never for the supervisor.
 */
#include <grp.h>
#include <jansson.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cronvisord.h"

#define SCHED_PATH                                                             \
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* Reads an integer column; NULL gives def. */
static int64_t
col_int(const struct db_rows *rows, int row, int col, int64_t def)
{
	const char *v = db_rows_value(rows, row, col);

	return v ? strtoll(v, NULL, 10) : def;
}

/* Copies a text column into a new string ("" for NULL). */
static char *
col_str(const struct db_rows *rows, int row, int col)
{
	const char *v = db_rows_value(rows, row, col);

	return strdup(v ? v : "");
}

static int
lookup(const char *v, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (strcmp(v, names[i]) == 0)
			return i;
	return 0;
}

/*
 * Fills the timing of s from the row; 0, or -1 with err set.  at and
 * start_at come in epoch milliseconds (slot_set_ms()).
 */
static int
load_timing(const struct db_rows *rows, int row, struct sched *s, char *err,
    size_t errlen)
{
	static const char *const gaps[] = {"auto", "shift", "skip"};
	static const char *const folds[] = {"auto", "first", "both"};
	const char *kind = db_rows_value(rows, row, SCHED_COL_KIND);
	struct timing *tm = &s->tm;

	tm->kind = strcmp(kind, "interval") == 0 ? SCHED_KIND_INTERVAL
	    : strcmp(kind, "once") == 0          ? SCHED_KIND_ONCE
	                                         : SCHED_KIND_CRON;
	tm->start_at = CV_TIME_MIN;
	slot_set_ms(tm, col_int(rows, row, SCHED_COL_AT, INT64_MIN),
	    col_int(rows, row, SCHED_COL_START, INT64_MIN));
	tm->gap = (enum dst_gap)lookup(
	    db_rows_value(rows, row, SCHED_COL_GAP), gaps, 3);
	tm->fold = (enum dst_fold)lookup(
	    db_rows_value(rows, row, SCHED_COL_FOLD), folds, 3);
	if ((tm->tz = tz_get(
	         db_rows_value(rows, row, SCHED_COL_TZ), err, errlen)) == NULL)
		return -1;
	switch (tm->kind) {
	case SCHED_KIND_INTERVAL:
		tm->interval = col_int(rows, row, SCHED_COL_INTERVAL, 60);
		/* Without a start, slots are counted from the pending one. */
		if (tm->start_at == CV_TIME_MIN)
			tm->start_at = col_int(rows, row, SCHED_COL_NEXT_SLOT,
			    col_int(rows, row, SCHED_COL_NEXT_RUN, 0));
		return 0;
	case SCHED_KIND_ONCE:
		if (db_rows_value(rows, row, SCHED_COL_AT) == NULL)
			tm->at = 0;
		return 0;
	case SCHED_KIND_CRON:
		break;
	}
	return cron_parse(
	    db_rows_value(rows, row, SCHED_COL_CRON), &tm->cron, err, errlen);
}

/*
 * Loads row `row` of a query that selects {{sched}} (first) into s, which
 * the caller clears with sched_clear().  Returns 0, or -1 with err saying
 * what is wrong with the row (s is then cleared already).
 */
int
sched_load(const struct db_rows *rows, int row, struct sched *s, char *err,
    size_t errlen)
{
	static const char *const backoffs[] = {
	    "exponential", "linear", "fixed"};
	static const char *const overlaps[] = {"skip", "allow", "buffer_one"};
	static const char *const catchups[] = {"latest", "all", "none"};

	memset(s, 0, sizeof(*s));
	snprintf(
	    s->id, sizeof(s->id), "%s", db_rows_value(rows, row, SCHED_COL_ID));
	snprintf(s->id8, sizeof(s->id8), "%s",
	    db_rows_value(rows, row, SCHED_COL_ID8));
	s->name = col_str(rows, row, SCHED_COL_NAME);
	s->target = col_str(rows, row, SCHED_COL_TARGET);
	s->limits = col_str(rows, row, SCHED_COL_LIMITS);
	s->payload = col_str(rows, row, SCHED_COL_PAYLOAD);
	s->workflow_id = col_str(rows, row, SCHED_COL_WORKFLOW);
	s->trigger_node_id = col_str(rows, row, SCHED_COL_NODE);
	s->owner = col_str(rows, row, SCHED_COL_OWNER);
	s->organization_id = col_str(rows, row, SCHED_COL_ORGANIZATION);
	s->environment_id = col_str(rows, row, SCHED_COL_ENVIRONMENT);
	if (load_timing(rows, row, s, err, errlen) == -1) {
		sched_clear(s);
		return -1;
	}
	s->anchor_completion =
	    strcmp(db_rows_value(rows, row, SCHED_COL_ANCHOR), "completion") ==
	    0;
	s->jitter = col_int(rows, row, SCHED_COL_JITTER, 0);
	s->pol.total_repeats = s->tm.kind == SCHED_KIND_ONCE
	    ? 1
	    : col_int(rows, row, SCHED_COL_REPEATS, 0);
	s->pol.max_retries = col_int(rows, row, SCHED_COL_RETRIES, 3);
	s->pol.backoff = (enum backoff)lookup(
	    db_rows_value(rows, row, SCHED_COL_BACKOFF), backoffs, 3);
	s->pol.delay = col_int(rows, row, SCHED_COL_DELAY,
	    s->tm.kind == SCHED_KIND_INTERVAL ? s->tm.interval : 60);
	s->timeout = col_int(rows, row, SCHED_COL_TIMEOUT, 600);
	s->overlap = (enum schedule_overlap)lookup(
	    db_rows_value(rows, row, SCHED_COL_OVERLAP), overlaps, 3);
	s->cu.mode = (enum catch_up)lookup(
	    db_rows_value(rows, row, SCHED_COL_CATCH_UP), catchups, 3);
	s->cu.max_runs = col_int(rows, row, SCHED_COL_MAX_CATCH_UP, 10);
	s->cu.deadline = col_int(rows, row, SCHED_COL_DEADLINE, -1);
	s->repeat = col_int(rows, row, SCHED_COL_REPEAT, 0);
	s->retry = col_int(rows, row, SCHED_COL_RETRY, 0);
	s->next_run_at = col_int(rows, row, SCHED_COL_NEXT_RUN, CV_NEVER);
	s->next_slot_at =
	    col_int(rows, row, SCHED_COL_NEXT_SLOT, s->next_run_at);
	s->running = col_int(rows, row, SCHED_COL_RUNNING, 0);
	s->slot_seq = col_int(rows, row, SCHED_COL_SLOT_SEQ, 0);
	s->active =
	    strcmp(db_rows_value(rows, row, SCHED_COL_STATUS), "active") == 0;
	s->retry_pending =
	    strcmp(db_rows_value(rows, row, SCHED_COL_RETRY_PENDING), "t") == 0;
	s->deleted =
	    strcmp(db_rows_value(rows, row, SCHED_COL_DELETED), "t") == 0;
	s->next_run_us = col_int(rows, row, SCHED_COL_NEXT_RUN_US, 0);
	return 0;
}

/*
 * Makes payload (JSON text, not NULL) the payload of the runs s makes from
 * now on: a trigger-now request's replaces the schedule's trigger_payload
 * for its one run.  Returns 0, or -1 (out of memory; s is unchanged).
 */
int
sched_set_payload(struct sched *s, const char *payload)
{
	char *copy = strdup(payload);

	if (copy == NULL)
		return -1;
	free(s->payload);
	s->payload = copy;
	return 0;
}

/* Frees what sched_load() allocated; s may be zeroed or cleared already. */
void
sched_clear(struct sched *s)
{
	free(s->name);
	free(s->target);
	free(s->limits);
	free(s->payload);
	free(s->workflow_id);
	free(s->trigger_node_id);
	free(s->owner);
	free(s->organization_id);
	free(s->environment_id);
	memset(s, 0, sizeof(*s));
}

/* Adds one string to a NULL-terminated vector of the spec buffer. */
static int vec_add(char ***vec, size_t *n, const char *fmt, ...)
    CV_PRINTF(3, 4);

static int
vec_add(char ***vec, size_t *n, const char *fmt, ...)
{
	char **v, *s;
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -1;
	if ((v = realloc(*vec, (*n + 2) * sizeof(*v))) == NULL) {
		free(s);
		return -1;
	}
	v[(*n)++] = s;
	v[*n] = NULL;
	*vec = v;
	return 0;
}

static void
vec_free(char **vec)
{
	for (size_t i = 0; vec && vec[i]; i++)
		free(vec[i]);
	free(vec);
}

/* Frees what sched_spec() allocated into sb. */
void
sched_spec_clear(struct spec_buf *sb)
{
	vec_free(sb->argv);
	vec_free(sb->env);
	vec_free(sb->headers);
	free(sb->body);
	free(sb->cwd);
	free(sb->url);
	free(sb->method);
	free(sb->key);
	free(sb->aux);
	memset(sb, 0, sizeof(*sb));
}

/*
 * Adds CRONVISOR_PAYLOAD: the run's payload as compact JSON.  PostgreSQL
 * writes jsonb with a space after every ':' and ','; jansson rewrites it
 * without.  A payload jansson cannot read (an integer past 64 bits, which
 * jsonb keeps) is passed as PostgreSQL wrote it rather than altered.
 */
static int
env_payload(const struct sched *s, struct spec_buf *sb, size_t *n)
{
	json_t *v = json_loads(s->payload, JSON_DECODE_ANY, NULL);
	char *text = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	int r = vec_add(
	    &sb->env, n, "CRONVISOR_PAYLOAD=%s", text ? text : s->payload);

	free(text);
	json_decref(v);
	return r;
}

/*
 * 1 if the schedule's env (a JSON object) sets the variable that "NAME=…"
 * entry e names: its value replaces the default rather than following it
 * (a command would see the first PATH, the default, and not find its own).
 */
static int
env_overridden(json_t *env, const char *e)
{
	char name[256];
	size_t n = strcspn(e, "=");

	if (n >= sizeof(name))
		return 0;
	memcpy(name, e, n);
	name[n] = '\0';
	return json_object_get(env, name) != NULL;
}

/*
 * The environment every command gets, merged by name with the schedule's
 * own: a variable the schedule sets replaces the default of that name.
 */
static int
exec_env(const struct sched *s, const struct job *j, json_t *env,
    struct spec_buf *sb)
{
	size_t n = 0, m = 0;
	const char *k;
	json_t *v;

	if (vec_add(&sb->env, &n, SCHED_PATH) == -1 ||
	    vec_add(&sb->env, &n, "HOME=/") == -1 ||
	    vec_add(&sb->env, &n, "CRONVISOR_RUN_ID=%s", j->run_id) == -1 ||
	    vec_add(&sb->env, &n, "CRONVISOR_SCHEDULE_ID=%s", s->id) == -1 ||
	    vec_add(&sb->env, &n, "CRONVISOR_SLOT=%lld", (long long)j->slot) ==
	        -1 ||
	    vec_add(&sb->env, &n, "CRONVISOR_TRIGGERED=%d",
	        j->triggered ? 1 : 0) == -1 ||
	    env_payload(s, sb, &n) == -1)
		return -1;
	/* Drop the defaults the schedule overrides, keeping the order. */
	for (size_t i = 0; i < n; i++) {
		if (env_overridden(env, sb->env[i]))
			free(sb->env[i]);
		else
			sb->env[m++] = sb->env[i];
	}
	sb->env[m] = NULL;
	n = m;
	json_object_foreach(env, k, v)
	{
		if (!json_is_string(v) ||
		    vec_add(&sb->env, &n, "%s=%s", k, json_string_value(v)) ==
		        -1)
			return -1;
	}
	return 0;
}

/* The overflow ids: the user of HTTP runs whose owner has none. */
#define SCHED_NOBODY 65534

#define SCHED_USERS    16    /* users whose ids are remembered */
#define SCHED_USERS_MS 10000 /* for this long after a lookup */

/*
 * The users looked up lately.  getpwnam() reads /etc/passwd (and asks
 * the other NSS sources) on every call, 30-140 µs here, in the
 * supervisor's loop: a burst of 2,000 runs of one owner would spend a
 * quarter of a second on the same name.  A user is remembered for
 * SCHED_USERS_MS, so that one made or removed is seen that much later.
 */
static struct sched_user {
	char name[RUNUSER_NAME_MAX + 1]; /* "" if the slot is free */
	uid_t uid;                       /* its ids */
	gid_t gid;
	int64_t at_ms; /* clock_ms() of the lookup */
} sched_users[SCHED_USERS];

/*
 * Looks name up, through sched_users.  Returns 1 with *uid and *gid set,
 * or 0 if there is no such user.
 */
static int
sched_getpw(const char *name, uid_t *uid, gid_t *gid)
{
	int64_t now = clock_ms();
	struct sched_user *u, *old = sched_users;
	struct passwd *pw;

	for (u = sched_users; u < sched_users + SCHED_USERS; u++) {
		if (u->name[0] != '\0' && strcmp(u->name, name) == 0 &&
		    now - u->at_ms < SCHED_USERS_MS) {
			*uid = u->uid;
			*gid = u->gid;
			return 1;
		}
		if (u->at_ms < old->at_ms)
			old = u;
	}
	if ((pw = getpwnam(name)) == NULL)
		return 0;
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	if (strlen(name) < sizeof(old->name)) {
		snprintf(old->name, sizeof(old->name), "%s", name);
		old->uid = *uid;
		old->gid = *gid;
		old->at_ms = now;
	}
	return 1;
}

/*
 * The user run j runs as, into spec (run_as, uid, gid).  An admin's
 * target.run_as (user, NULL if none) is taken as it is, root included.
 * Else the owner's user (runuser.c): an exec run whose owner has none, or
 * whose user does not exist or is root, fails with err saying so; an HTTP
 * run, which needs no user of its own, then gets the overflow ids.  A
 * supervisor that is not root switches to no implicit user: its runs are
 * its own unprivileged user already, and it could not.  0, or -1 with err.
 */
static int
sched_user(const struct sched *s, const struct config *cf, const char *user,
    int exec, struct run_spec *spec, char *err, size_t errlen)
{
	char buf[RUNUSER_NAME_MAX + 1];
	const char *name = user;
	uid_t uid;
	gid_t gid;
	int found;

	if (name == NULL) {
		name = runuser_for(cf->run_users, cf->run_user_default,
		    s->owner, buf, sizeof(buf));
		if (name == NULL && exec)
			return log_errbuf(err, errlen,
			    "target: owner \"%s\" has no user to run as "
			    "(run_users names none and run_user_default is "
			    "empty); only an admin's target.run_as can give "
			    "one",
			    s->owner);
		if (geteuid() != 0)
			return 0;
	}
	found = name ? sched_getpw(name, &uid, &gid) : 0;
	if (found && (user != NULL || uid != 0)) {
		spec->uid = uid;
		spec->gid = gid;
	} else if (!exec && user == NULL) {
		spec->uid = SCHED_NOBODY;
		spec->gid = SCHED_NOBODY;
	} else if (!found) {
		return log_errbuf(err, errlen, "%s: no user \"%s\"",
		    user ? "target.run_as" : "run user", name);
	} else {
		return log_errbuf(err, errlen,
		    "run user \"%s\" of owner \"%s\" is root: only an "
		    "admin's target.run_as may run a command as root",
		    name, s->owner);
	}
	spec->run_as = 1;
	return 0;
}

/* The exec part of a spec; 0, or -1 with err set. */
static int
exec_spec(const struct sched *s, const struct job *j, json_t *t,
    const struct config *cf, struct spec_buf *sb, struct run_spec *spec,
    char *err, size_t errlen)
{
	json_t *argv = json_object_get(t, "argv"), *a;
	const char *cwd = json_string_value(json_object_get(t, "cwd"));
	const char *user = json_string_value(json_object_get(t, "run_as"));
	size_t n = 0, i;

	if (!json_is_array(argv) || json_array_size(argv) == 0)
		return log_errbuf(err, errlen,
		    "target.argv: expected a "
		    "non-empty array of strings");
	json_array_foreach(argv, i, a)
	{
		if (!json_is_string(a) ||
		    vec_add(&sb->argv, &n, "%s", json_string_value(a)) == -1)
			return log_errbuf(err, errlen,
			    "target.argv: expected "
			    "strings");
	}
	if (exec_env(s, j, json_object_get(t, "env"), sb) == -1)
		return log_errbuf(err, errlen, "target.env: expected strings");
	if (cwd && (sb->cwd = strdup(cwd)) == NULL)
		return log_errbuf(err, errlen, "out of memory");
	if (sched_user(s, cf, user, 1, spec, err, errlen) == -1)
		return -1;
	spec->target = RUN_TARGET_EXEC;
	spec->argv = sb->argv;
	spec->env = sb->env;
	spec->cwd = sb->cwd;
	return 0;
}

/* s as a JSON string, or null when it is "" (a column that is NULL). */
static json_t *
text_or_null(const char *s)
{
	return s[0] ? json_string(s) : json_null();
}

/*
 * The event an HTTP target receives: seed 000's event data with the run's
 * identity, merged into seed 002's trigger body for the default receiver.
 * Its payload is s->payload, which for a triggered run with a payload of
 * its own is that one (claim.c sets it with sched_set_payload()).
 */
static char *
event_body(const struct sched *s, const struct job *j, int receiver)
{
	json_t *payload = json_loads(s->payload, 0, NULL), *ev;
	char slot[40];
	char *out;

	timefmt_utc(j->slot, slot, sizeof(slot));
	ev = json_pack("{s:s, s:s, s:s, s:I, s:o, s:s, s:I, s:s}",
	    "scheduled_job_id", s->id, "scheduled_job_name", s->name, "owner",
	    s->owner, "repeat_number", (json_int_t)j->repeat, "payload",
	    payload ? payload : json_object(), "run_id", j->run_id, "attempt",
	    (json_int_t)j->attempt, "slot_at", slot);
	if (ev && receiver) {
		json_object_set_new(
		    ev, "type", json_string("workflow_trigger"));
		json_object_set_new(
		    ev, "triggerType", json_string("scheduled"));
		json_object_set_new(
		    ev, "organizationId", text_or_null(s->organization_id));
		json_object_set_new(
		    ev, "environmentId", text_or_null(s->environment_id));
		json_object_set_new(
		    ev, "workflowId", text_or_null(s->workflow_id));
		json_object_set_new(
		    ev, "triggerNodeId", text_or_null(s->trigger_node_id));
		json_object_set_new(ev, "scheduledEventId", json_string(s->id));
		json_object_set_new(ev, "timestamp", json_string(slot));
	}
	out = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
	json_decref(ev);
	return out;
}

/*
 * What an http or a redis target sends: its body, a string as it is and
 * anything else as compact JSON, or else the run's event (event_body()).
 * NULL: out of memory.
 */
static char *
target_body(
    const struct sched *s, const struct job *j, json_t *body, int receiver)
{
	if (body && json_is_string(body))
		return strdup(json_string_value(body));
	if (body)
		return json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
	return event_body(s, j, receiver);
}

/*
 * Copies the host lists of cf behind the body's terminating NUL, in the
 * body's own allocation, and points the spec at them.  A SIGHUP may
 * replace cf between the claim and the fork, so the spec may not point
 * into it; sharing sb->body keeps the copies' lifetime that of the rest
 * of sb without a field of its own (sched_spec_clear() frees body).
 */
static int
host_lists(const struct config *cf, int receiver, struct spec_buf *sb,
    struct run_spec *spec, char *err, size_t errlen)
{
	const char *allow = cf->http_allow_hosts ? cf->http_allow_hosts : "";
	const char *deny = cf->http_deny_hosts ? cf->http_deny_hosts : "";
	const char *recv =
	    receiver || cf->receiver_url == NULL ? "" : cf->receiver_url;
	size_t b = spec->body_len, a = strlen(allow), d = strlen(deny);
	size_t r = strlen(recv);
	char *p = realloc(sb->body, b + 1 + a + 1 + d + 1 + r + 1);

	if (p == NULL)
		return log_errbuf(err, errlen, "out of memory");
	memcpy(p + b + 1, allow, a + 1);
	memcpy(p + b + 1 + a + 1, deny, d + 1);
	memcpy(p + b + 1 + a + 1 + d + 1, recv, r + 1);
	sb->body = p;
	spec->body = p;
	spec->allow_hosts = p + b + 1;
	spec->deny_hosts = p + b + 1 + a + 1;
	/* A target's run may not reach the receiver (runner/http.c). */
	spec->receiver_url = r > 0 ? p + b + 1 + a + 1 + d + 1 : NULL;
	return 0;
}

/*
 * Adds the X-Cronvisor-Signature header of the receiver's event body to
 * sb->headers (n in use) when receiver_secret is set (receiver.c).  The
 * secret itself stays in the supervisor's memory: only the signature
 * goes into the spec.
 */
static int
sign_event(const struct config *cf, struct spec_buf *sb, size_t *n)
{
	char sig[RECEIVER_SIG_LEN];

	if (cf->receiver_secret == NULL || cf->receiver_secret[0] == '\0')
		return 0;
	if (receiver_sign(cf->receiver_secret, (int64_t)time(NULL), sb->body,
	        strlen(sb->body), sig, sizeof(sig)) == -1)
		return -1;
	return vec_add(&sb->headers, n, "X-Cronvisor-Signature: %s", sig);
}

/* The HTTP part of a spec (t NULL: the receiver); 0, or -1 with err. */
static int
http_spec(const struct sched *s, const struct job *j, json_t *t,
    const struct config *cf, struct spec_buf *sb, struct run_spec *spec,
    char *err, size_t errlen)
{
	const char *url =
	    t ? json_string_value(json_object_get(t, "url")) : cf->receiver_url;
	const char *method =
	    t ? json_string_value(json_object_get(t, "method")) : "POST";
	json_t *hdrs = t ? json_object_get(t, "headers") : NULL, *v;
	json_t *body = t ? json_object_get(t, "body") : NULL;
	const char *k;
	size_t n = 0;

	if (url == NULL || url[0] == '\0')
		return log_errbuf(err, errlen,
		    t ? "target.url: missing"
		      : "the schedule has no target and no receiver_url is "
		        "configured");
	if ((sb->url = strdup(url)) == NULL ||
	    (sb->method = strdup(method ? method : "POST")) == NULL)
		return log_errbuf(err, errlen, "out of memory");
	sb->body = target_body(s, j, body, t == NULL);
	if (sb->body == NULL ||
	    vec_add(&sb->headers, &n, "Content-Type: application/json") ||
	    vec_add(&sb->headers, &n, "X-Job-Id: %s", s->id) ||
	    vec_add(&sb->headers, &n, "X-Execution-Id: %s", j->run_id) ||
	    (t == NULL && sign_event(cf, sb, &n) == -1))
		return log_errbuf(err, errlen, "out of memory");
	json_object_foreach(hdrs, k, v)
	{
		if (!json_is_string(v) ||
		    vec_add(&sb->headers, &n, "%s: %s", k,
		        json_string_value(v)) == -1)
			return log_errbuf(err, errlen,
			    "target.headers: "
			    "expected strings");
	}
	spec->target = RUN_TARGET_HTTP;
	spec->url = sb->url;
	spec->method = sb->method;
	spec->headers = (const char *const *)sb->headers;
	spec->body = sb->body;
	spec->body_len = strlen(sb->body);
	spec->max_redirects = (long)cf->http_max_redirects;
	if (sched_user(s, cf, NULL, 0, spec, err, errlen) == -1)
		return -1;
	return host_lists(cf, t == NULL, sb, spec, err, errlen);
}

/*
 * 1 if s targets an agent, with its environment in env (len bytes;
 * "production" unless the target names another), else 0.
 */
int
sched_agent_env(const struct sched *s, char *env, size_t len)
{
	const char *e;
	json_t *t, *ty;
	int agent;

	/* jsonb text: a target of another type never holds "agent". */
	if (s->target[0] == '\0' || strstr(s->target, "\"agent\"") == NULL ||
	    (t = json_loads(s->target, 0, NULL)) == NULL)
		return 0;
	ty = json_object_get(t, "type");
	agent =
	    json_is_string(ty) && strcmp(json_string_value(ty), "agent") == 0;
	e = json_string_value(json_object_get(t, "environment"));
	snprintf(env, len, "%s", e ? e : "production");
	json_decref(t);
	return agent;
}

/*
 * 1 when target (a schedule's, JSON) is an agent target one of whose
 * params is a data-source string, or a pipeline target: its slots fan
 * out (fanout.c, pipeline.c).  The same
 * rule as cronvisor_run_job() in sql/functions.sql, which marks their
 * attempts.
 */
int
sched_fanout(const char *target)
{
	json_t *t, *ty, *v;
	const char *k;
	int fan = 0;

	if (target[0] == '\0' ||
	    (strstr(target, "db:") == NULL &&
	        strstr(target, "\"pipeline\"") == NULL) ||
	    (t = json_loads(target, 0, NULL)) == NULL)
		return 0;
	ty = json_object_get(t, "type");
	/* A pipeline's slot always expands: into one context, or more. */
	if (json_is_string(ty) &&
	    strcmp(json_string_value(ty), "pipeline") == 0)
		fan = 1;
	else if (json_is_string(ty) &&
	    strcmp(json_string_value(ty), "agent") == 0)
		json_object_foreach(json_object_get(t, "params"), k, v) fan |=
		    ds_is_source(json_string_value(v));
	json_decref(t);
	return fan;
}

/*
 * The agent s targets, into buf (len bytes), or NULL when it targets none.
 */
const char *
sched_agent(const struct sched *s, char *buf, size_t len)
{
	const char *a;
	json_t *t;

	if (s->target[0] == '\0' || strstr(s->target, "\"agent\"") == NULL ||
	    (t = json_loads(s->target, 0, NULL)) == NULL)
		return NULL;
	a = strcmp(json_string_value(json_object_get(t, "type"))
	            ? json_string_value(json_object_get(t, "type"))
	            : "",
	        "agent") == 0
	    ? json_string_value(json_object_get(t, "agent"))
	    : NULL;
	if (a != NULL)
		snprintf(buf, len, "%s", a);
	json_decref(t);
	return a != NULL ? buf : NULL;
}

/*
 * What every HTTP spec of owner's runs needs besides its request: the
 * user it runs as and the host lists (an agent's request, agent.c).  0,
 * or -1 with err.
 */
int
sched_http_common(const char *owner, const struct config *cf,
    struct spec_buf *sb, struct run_spec *spec, char *err, size_t errlen)
{
	struct sched s;

	memset(&s, 0, sizeof(s));
	s.owner = (char *)(owner ? owner : "");
	if (sched_user(&s, cf, NULL, 0, spec, err, errlen) == -1)
		return -1;
	return host_lists(cf, 0, sb, spec, err, errlen);
}

/* A header "name: value" added to sb->headers (n in use); 0 or -1. */
int
sched_header(
    struct spec_buf *sb, size_t *n, const char *name, const char *value)
{
	return vec_add(&sb->headers, n, "%s: %s", name, value);
}

/* A limit: the schedule's value if it set one, else the default. */
static int64_t
limit(json_t *limits, const char *key, int64_t def)
{
	json_t *v = json_object_get(limits, key);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : def;
}

/*
 * The JSON column text of what (a column name, for the message) as a new
 * reference; NULL with err if jansson cannot read it.
 */
static json_t *
stored_json(const char *text, const char *what, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *v = json_loads(text, JSON_DECODE_ANY, &jerr);

	if (v == NULL)
		log_errbuf(err, errlen,
		    "%s: the stored value cannot be read (%s); the run cannot "
		    "start",
		    what, jerr.text);
	return v;
}

/* 0 if stored_json() reads text ("" counts as readable), else -1. */
static int
stored_check(const char *text, const char *what, char *err, size_t errlen)
{
	json_t *v;

	if (text[0] == '\0')
		return 0;
	if ((v = stored_json(text, what, err, errlen)) == NULL)
		return -1;
	json_decref(v);
	return 0;
}

/*
 * The key a redis target writes: as given on its own server or with
 * raw_key (an admin's), else in its owner's namespace of the configured
 * server, redis_key_prefix + the owner (':' and '%' percent-encoded, so
 * that no two owners share one) + ':' + the key.  NULL: out of memory.
 */
static char *
redis_key(const char *prefix, const char *owner, const char *key, int raw)
{
	size_t n = strlen(prefix) + 3 * strlen(owner) + 1 + strlen(key) + 1;
	char *out, *o;

	if (raw)
		return strdup(key);
	if ((out = malloc(n)) == NULL)
		return NULL;
	o = out + sprintf(out, "%s", prefix);
	for (const char *p = owner; *p; p++)
		o += *p == ':'  ? sprintf(o, "%%3A")
		    : *p == '%' ? sprintf(o, "%%25")
		                : sprintf(o, "%c", *p);
	sprintf(o, ":%s", key);
	return out;
}

/* The redis part of a spec (docs/schedules.md); 0, or -1 with err. */
static int
redis_spec(const struct sched *s, const struct job *j, json_t *t,
    const struct config *cf, struct spec_buf *sb, struct run_spec *spec,
    char *err, size_t errlen)
{
	const char *url = json_string_value(json_object_get(t, "url"));
	const char *key = json_string_value(json_object_get(t, "key"));
	const char *cmd = json_string_value(json_object_get(t, "command"));
	json_t *body = json_object_get(t, "body");
	json_t *maxlen = json_object_get(t, "maxlen");
	int raw = json_is_true(json_object_get(t, "raw_key"));

	if (key == NULL || cmd == NULL)
		return log_errbuf(err, errlen, "target: no command or key");
	if (url == NULL && (cf->redis_url == NULL || cf->redis_url[0] == '\0'))
		return log_errbuf(err, errlen,
		    "target.url: none, and no redis_url is configured");
	if ((sb->url = strdup(url ? url : cf->redis_url)) == NULL ||
	    (sb->method = strdup(cmd)) == NULL ||
	    (sb->key =
	            redis_key(cf->redis_key_prefix ? cf->redis_key_prefix : "",
	                s->owner, key, raw || url != NULL)) == NULL ||
	    (sb->aux = strdup(cf->redis_url ? cf->redis_url : "")) == NULL)
		return log_errbuf(err, errlen, "out of memory");
	sb->body = target_body(s, j, body, 0);
	if (sb->body == NULL)
		return log_errbuf(err, errlen, "out of memory");
	spec->target = RUN_TARGET_REDIS;
	spec->url = sb->url;
	spec->redis_command = sb->method;
	spec->redis_key = sb->key;
	spec->redis_maxlen =
	    maxlen ? json_integer_value(maxlen) : REDIS_MAXLEN_DEF;
	spec->body = sb->body;
	spec->body_len = strlen(sb->body);
	/* The schedule's own server: host lists, and never redis_url's
	 * (unless an admin said raw_key). */
	spec->redis_checked = url != NULL && !raw;
	spec->redis_default =
	    url != NULL && !raw && sb->aux[0] ? sb->aux : NULL;
	if (sched_user(s, cf, NULL, 0, spec, err, errlen) == -1)
		return -1;
	return host_lists(cf, 1, sb, spec, err, errlen);
}

/*
 * Builds the run_spec of run j of schedule s into *spec, with the strings
 * and vectors it points to in sb (free with sched_spec_clear()).  Returns
 * 0, or -1 with err saying why the run cannot start.
 */
int
sched_spec(const struct sched *s, const struct job *j, const struct config *cf,
    struct spec_buf *sb, struct run_spec *spec, char *err, size_t errlen)
{
	json_t *t = NULL, *lim = NULL;
	const char *type;
	int r;

	memset(sb, 0, sizeof(*sb));
	memset(spec, 0, sizeof(*spec));
	/*
	 * A column jansson cannot read (a number no int64 or double holds,
	 * written by hand) fails the run with that error.  Above all a target
	 * that does not read is never taken for "no target": that would post
	 * the schedule's event to the receiver and call it a success.
	 */
	if ((s->target[0] &&
	        (t = stored_json(s->target, "target", err, errlen)) == NULL) ||
	    (s->limits[0] &&
	        (lim = stored_json(s->limits, "limits", err, errlen)) ==
	            NULL) ||
	    stored_check(s->payload, "trigger_payload", err, errlen) == -1) {
		json_decref(t);
		json_decref(lim);
		return -1;
	}
	type = json_string_value(json_object_get(t, "type"));
	spec->run_id = j->run_id;
	spec->schedule = s->name;
	spec->timeout = s->timeout;
	spec->kill_grace = cf->kill_grace_seconds;
	spec->output_tail = (size_t)cf->output_tail_bytes;
	spec->limits.cpu_seconds =
	    limit(lim, "cpu_seconds", cf->limit_cpu_seconds);
	spec->limits.memory_mb = limit(lim, "memory_mb", cf->limit_memory_mb);
	spec->limits.nofile = limit(lim, "nofile", cf->limit_nofile);
	spec->limits.nproc = limit(lim, "nproc", cf->limit_nproc);
	spec->limits.fsize_mb = limit(lim, "fsize_mb", cf->limit_fsize_mb);
	if (t && type && strcmp(type, "exec") == 0)
		r = exec_spec(s, j, t, cf, sb, spec, err, errlen);
	else if (t == NULL || (type && strcmp(type, "http") == 0))
		r = http_spec(s, j, t, cf, sb, spec, err, errlen);
	else if (type && strcmp(type, "redis") == 0)
		r = redis_spec(s, j, t, cf, sb, spec, err, errlen);
	else
		r = log_errbuf(err, errlen,
		    "target.type: \"%s\" is not exec, http "
		    "or redis",
		    type ? type : "");
	json_decref(t);
	json_decref(lim);
	if (r == -1)
		sched_spec_clear(sb);
	return r;
}
