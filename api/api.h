/*
 * api.h: the table of contents of cronvisor-api, the REST API that nginx
 * serves over FastCGI.  server.c owns the process (socket, threads,
 * signals, one database connection per thread); http.c turns a FastCGI
 * request into a struct request and a struct response back into bytes;
 * auth.c finds who a bearer token belongs to; route.c maps method and path
 * to a handler; schedules.c, runs.c and health.c are the handlers.
 * Handlers never see FastCGI: only the request and the response below.
 */
#ifndef API_H
#define API_H

#include <stddef.h>
#include <stdint.h>

#include "cronvisor.h"
#include "sql_queries.h"

struct json_t;
struct db;
struct db_rows;

#define API_PREFIX        "/api/v1" /* every route lives under it */
#define API_MAX_SEGS      6         /* path segments after the prefix */
#define API_OWNER_MAX     200       /* characters of an owner name */
#define API_LIST_MAX      500       /* largest ?limit= of a list */
#define API_LIST_DEF      100       /* ?limit= when none is given */
#define API_PREVIEW_MAX   100       /* largest ?preview= */
#define API_PREVIEW_FIRES 5         /* POST /schedules/preview's fire times */
#define API_ID_LEN        36        /* a schedule id: a UUID in text */

enum role {
	ROLE_VIEWER, /* reads its owner's schedules and runs */
	ROLE_EDITOR, /* and writes them */
	ROLE_ADMIN,  /* everything, every owner */
};

/* Who is asking: the token's owner and role (auth.c). */
struct principal {
	int64_t token_id;                  /* tokens.id */
	char owner[API_OWNER_MAX * 4 + 1]; /* UTF-8, up to 200 characters */
	enum role role;                    /* what it may do */
};

/* One request, as a handler sees it (built by http.c). */
struct request {
	const char *method;        /* "GET", "POST", ... */
	char *segs[API_MAX_SEGS];  /* path after API_PREFIX, split on '/', */
	int nsegs;                 /*   percent-decoded, no empty segments */
	const char *query;         /* raw query string, "" if none */
	char *body;                /* NUL-terminated, "" if none */
	size_t body_len;           /* its length in bytes */
	const char *idem_key;      /* the Idempotency-Key header, or NULL */
	const char *authorization; /* the Authorization header, "" if none */
	struct principal who;      /* the caller (routes that need auth) */
	int may;                   /* who.role >= the route's min_role */
	int replace;   /* an apply's PATCH: the body is the whole document */
	struct db *db; /* this thread's connection */
	const struct config *cf;   /* the configuration in force */
	const char *last_event_id; /* the Last-Event-ID header, or NULL */
	/* Writes len bytes to the client at once (a stream's handler, which
	 * then sets streamed); -1 when the client is gone. */
	int (*emit)(void *ctx, const char *buf, size_t len);
	void *emit_ctx;
	int (*stopping)(void); /* 1: the server is stopping */
};

/* One response (sent by http.c): a status and a JSON body. */
struct response {
	int status;          /* HTTP status */
	struct json_t *body; /* owned; NULL: no body (204) */
	char *raw;           /* owned; a body already serialized, or NULL */
	char allow[64];      /* 405: the Allow header */
	int retry_after;     /* 429, 503: seconds for Retry-After, 0: none */
	int streamed;        /* 1: the handler sent all of it (emit) */
};

/*
 * What a handler returns: 0 when *rs is filled, API_DB_FAILED when a
 * database call failed (the server answers 503 if the connection is gone,
 * else 500, and logs err), -1 only for out-of-memory.
 */
#define API_DB_FAILED (-2)
typedef int (*api_handler)(
    struct request *rq, struct response *rs, char *err, size_t errlen);

/* http.c: requests, responses, errors. */
int api_error(struct response *rs, int status, const char *code,
    const char *field, const char *fmt, ...) CV_PRINTF(5, 6);
int api_json(struct response *rs, int status, struct json_t *body);
int api_raw(struct response *rs, int status, char *json_text);
int query_get(const char *query, const char *name, char *buf, size_t len);
int query_check(
    const char *query, const char *const *allowed, struct response *rs);
int api_percent_decode(char *s);
int api_split_path(char *path, char **segs, int max);

/* auth.c: bearer tokens. */
int auth_principal(struct db *db, const char *authorization,
    struct principal *who, char *err, size_t errlen);

/* route.c: method and path to handler. */
int route_dispatch(
    struct request *rq, struct response *rs, char *err, size_t errlen);

/* list.c: what every list shares, and GET /schedules. */
/*
 * LIST_ONCE: the lists whose statements say "a value or none" ($2 IS NULL
 * OR x.schedule_id = $2, a cursor or none, an owner or every owner: the
 * executions, a schedule's runs, an execution's jobs, the notifications,
 * the overview) run unprepared, each planned for its values
 * (db_query_once()): a plan PostgreSQL keeps for a prepared statement
 * (a generic plan, from its sixth run on) is made without them, can use
 * no index for such a condition, and would read every row of the table
 * or of the parent from the start for each page.  GET /schedules, the
 * busiest, writes a statement per request's conditions instead
 * (list_sql()).
 */
/* Bytes of a list cursor: a tag, a name of 200 characters in hex, an id. */
#define API_LIST_CURSOR_MAX (4 + 200 * 4 * 2 + 1 + API_ID_LEN + 1)

/* GET /schedules' filters (list.c, list_filters()), in this order. */
enum list_filter {
	LIST_F_STATUS,
	LIST_F_KIND,
	LIST_F_WORKFLOW,
	LIST_F_NAME, /* a prefix of the name */
	LIST_F_OWNER,
	LIST_F_Q, /* a substring of the name, any case */
	LIST_F_TARGET,
	LIST_FILTERS /* how many */
};

/* What GET /schedules' query asks (schedules_list_query()). */
struct list_query {
	char sql[4096];    /* the statement, for the filters given */
	const char *p[11]; /* its parameters, $1..$np */
	int np;
	int once; /* a filter besides the owner: not prepared */
	const char *f[LIST_FILTERS]; /* the filters, NULL for none */
	int64_t limit;               /* rows of the page */
	const struct list_order *order;
	char val[LIST_FILTERS][1024];  /* the filters' values */
	char like[2 * 1024 + 3];       /* q as a LIKE pattern */
	char key[API_LIST_CURSOR_MAX]; /* the cursor's sort key */
	char id[API_ID_LEN + 1];       /* the cursor's id */
	char lim[24];                  /* limit + 1, as text */
};
int schedules_list_query(
    struct request *rq, struct response *rs, struct list_query *q);
int schedules_list_cursor(const struct list_query *q, const char *key,
    const char *id, char *out, size_t outlen);
int schedules_list(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int api_read_cursor(const char *query, char *us, size_t uslen, char *id,
    size_t idlen, int uuid, struct response *rs);
int api_page(struct response *rs, struct db_rows *rows, int64_t limit,
    const char *key, struct json_t *(*item)(const char *));

/* schedules.c */
struct json_t *schedule_out_as(const char *row_text, int mask);
int schedules_create(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int schedules_get(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int schedules_update(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int schedules_delete(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int schedules_pause(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int schedules_resume(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int schedules_trigger(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int schedules_batch_delete(
    struct request *rq, struct response *rs, char *err, size_t errlen);

/* apply.c */
int apply_post(
    struct request *rq, struct response *rs, char *err, size_t errlen);

int api_parse_id(const char *seg, char *out);
struct schedule_error;
int api_doc_error(struct response *rs, const struct schedule_error *e);
int api_url_denied(const struct request *rq, const char *url, const char *field,
    struct response *rs);
/* runs.c */
int runs_of_schedule(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int runs_get(struct request *rq, struct response *rs, char *err, size_t errlen);

/* executions.c */
const char *api_scope(const struct request *rq);
int api_list_limit(const char *query, int64_t *limit, struct response *rs);
int api_query_enum(const char *query, const char *name, const char *const *set,
    const char *what, char *buf, size_t len, struct response *rs);
struct json_t *api_row_item(const char *text);
int api_sub_list(struct request *rq, struct response *rs, const char *sql,
    const char *parent, const char *status, const char *us, const char *id,
    int64_t limit, const char *key, const char *what, char *err, size_t errlen);
int executions_list(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int executions_get(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int executions_retry_failed(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int executions_jobs(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int jobs_get(struct request *rq, struct response *rs, char *err, size_t errlen);

/* agents.c, and what pipelines.c shares of it */
int api_req_owner(struct request *rq, struct response *rs, char *buf,
    size_t len, const char *hidden);
void api_whom(const struct request *rq, char *buf, size_t len);
int api_reply_text(struct response *rs, int status, struct db_rows *rows);
int api_no_body(const struct request *rq, struct response *rs);
int api_write_reply(struct request *rq, struct response *rs, const char *sql,
    int n, const char *const *p, char *err, size_t errlen);
struct json_t *api_slug_load(struct request *rq, struct response *rs,
    const char *sql, const char *const *p, const char *what, int *r, char *err,
    size_t errlen);
int api_slug_list(struct request *rq, struct response *rs, const char *sql,
    const char *key, const char *extra, char *err, size_t errlen);
int agents_list(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int agents_create(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int agents_get(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int agents_update(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int agents_delete(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int agents_versions(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int agents_version_create(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int agents_deploy(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int agents_promote(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int agents_rollback(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int agents_deployments(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int agents_health(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int jobs_complete(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int jobs_heartbeat(
    struct request *rq, struct response *rs, char *err, size_t errlen);

/* datasources.c */
int datasources_list(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int datasources_create(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int datasources_get(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int datasources_delete(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int datasources_preview(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int datasources_refused(struct request *rq, struct response *rs,
    struct json_t *target, const char *owner, char *err, size_t errlen);
int schedules_preview(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int schedules_preview_saved(
    struct request *rq, struct response *rs, char *err, size_t errlen);

/* pipelines.c */
int pipelines_list(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int pipelines_create(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int pipelines_get(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int pipelines_update(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int pipelines_delete(
    struct request *rq, struct response *rs, char *err, size_t errlen);

/* events.c */
int events_stream(
    struct request *rq, struct response *rs, char *err, size_t errlen);

/* notify.c */
int notify_channels_list(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int notify_channels_create(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int notify_channels_get(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int notify_channels_delete(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int notify_list(
    struct request *rq, struct response *rs, char *err, size_t errlen);

/* overview.c */
int overview_get(
    struct request *rq, struct response *rs, char *err, size_t errlen);

/* metrics.c */
int metrics_serve(struct request *rq, const char *addr, struct response *rs,
    char *err, size_t errlen);

/* health.c */
int health_get(
    struct request *rq, struct response *rs, char *err, size_t errlen);
int health_openapi(
    struct request *rq, struct response *rs, char *err, size_t errlen);
extern const char api_openapi_json[]; /* api/openapi.json, embedded */

/*
 * Added with server.c, http.c, auth.c and route.c: the pieces the server
 * wires together, declared here so that tests and the fuzz target reach
 * the pure parts without FastCGI or a database.
 */
struct FCGX_Request;
struct FCGX_Stream;

/* http.c: the FastCGI side and its pure parsing steps. */
#define API_QUERY_PARAMS_MAX 64 /* query parameters a request may have */
#define API_QUERY_NAME_MAX   64 /* bytes of a decoded parameter name */
int http_target(const char *request_uri, char **buf, struct request *rq,
    struct response *rs);
int http_body_length(const char *content_length, const char *content_type,
    int64_t max, size_t *len, struct response *rs);
int http_is_json(const char *content_type);
int http_request(struct FCGX_Request *fr, const struct config *cf,
    struct request *rq, char **buf, struct response *rs);
void http_request_clear(struct request *rq, char **buf);
int http_format(const struct response *rs, char **out, size_t *len);
int http_send(struct FCGX_Stream *out, const struct response *rs);
void http_response_clear(struct response *rs);
const char *http_reason(int status);
int api_db_lost(struct db *db);

/* auth.c */
#define AUTH_TOKEN_MAX 200 /* characters of a bearer token */
int auth_bearer(const char *authorization, char *token, size_t len);
int auth_role_parse(const char *name, enum role *out);
const char *auth_role_name(enum role role);
int auth_me(struct request *rq, struct response *rs, char *err, size_t errlen);

/* route.c: the route table and its two halves, match and serve. */
struct route {
	const char *method;  /* "GET", "POST", "PATCH", "DELETE" */
	const char *pattern; /* "/schedules/{id}/runs": segments, {id} any */
	api_handler handler; /* what answers it */
	int auth;            /* 1: needs a bearer token */
	enum role min_role;  /* least role that may call it (auth routes) */
	int hide;            /* 1: a lesser role reaches the handler, which
	                        answers 404 for a schedule it may not see
	                        before 403 (rq->may says) */
	int db_optional;     /* 1: called with rq->db NULL when it is away */
};
const struct route *route_match(
    const char *method, char *const *segs, int nsegs, struct response *rs);
int route_serve(const struct route *r, struct request *rq,
    const char *authorization, struct response *rs, char *err, size_t errlen);

#endif /* API_H */
