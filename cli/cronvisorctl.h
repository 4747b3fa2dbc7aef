/*
 * cronvisorctl.h: the table of contents of the operator's command line.
 * Each subcommand lives in its own file and takes the arguments after its
 * name; it returns the process exit status (0 ok, 1 failure, 2 usage).
 */
#ifndef CRONVISORCTL_H
#define CRONVISORCTL_H

#include <getopt.h>

#include "cronvisor.h"

#define CTL_EXIT_OK    0 /* the command did what was asked */
#define CTL_EXIT_FAIL  1 /* it could not: bad input, unknown zone, … */
#define CTL_EXIT_USAGE 2 /* the command line itself was wrong */

/*
 * The options every API command takes, before or after its name; they
 * live in the process's one global, ctl.  CTL_GLOBAL_OPTIONS goes into
 * each API command's getopt_long table, and ctl_global_option() handles
 * the codes it returns.
 */
struct ctl {
	const char *url;         /* --url or CRONVISOR_URL: base URL */
	const char *token;       /* --token or CRONVISOR_TOKEN */
	const char *token_file;  /* --token-file or CRONVISOR_TOKEN_FILE */
	const char *unix_socket; /* --unix-socket or CRONVISOR_UNIX_SOCKET */
	int json;                /* --json: print the API's JSON as it is */
	int dry_run;             /* --dry-run: print requests, send nothing */
};
extern struct ctl ctl;
#define CTL_OPT_URL    0x100 /* --url */
#define CTL_OPT_TOKEN  0x101 /* --token */
#define CTL_OPT_SOCKET 0x102 /* --unix-socket */
#define CTL_OPT_JSON   0x103 /* --json */
#define CTL_OPT_DRY    0x104 /* --dry-run */
#define CTL_OPT_TFILE  0x105 /* --token-file */
#define CTL_GLOBAL_OPTIONS                                                     \
	{"url", required_argument, NULL, CTL_OPT_URL},                         \
	    {"token", required_argument, NULL, CTL_OPT_TOKEN},                 \
	    {"token-file", required_argument, NULL, CTL_OPT_TFILE},            \
	    {"unix-socket", required_argument, NULL, CTL_OPT_SOCKET},          \
	    {"json", no_argument, NULL, CTL_OPT_JSON},                         \
	{                                                                      \
		"dry-run", no_argument, NULL, CTL_OPT_DRY                      \
	}
#define CTL_GLOBAL_USAGE                                                       \
	"global options (before or after the command):\n"                      \
	"  --url URL           the API's base URL (CRONVISOR_URL),\n"          \
	"                      e.g. http://127.0.0.1:8080\n"                   \
	"  --token TOKEN       the API token (CRONVISOR_TOKEN); it shows in\n" \
	"                      ps: prefer the variable or --token-file\n"      \
	"  --token-file FILE   read the API token from FILE\n"                 \
	"                      (CRONVISOR_TOKEN_FILE)\n"                       \
	"  --unix-socket PATH  connect through this unix socket\n"             \
	"                      (CRONVISOR_UNIX_SOCKET)\n"                      \
	"  --json              print the API's JSON, for scripts\n"

/* cronvisorctl.c */
#define CTL_INPUT_MAX (16 * 1024 * 1024) /* largest file or stdin read */
int ctl_usage_error(const char *fmt, ...) CV_PRINTF(1, 2);
int ctl_check_id(const char *id);
int ctl_global_option(int c, const char *arg);
char *ctl_read_input(const char *opt, const char *path);
size_t ctl_first_line(char *buf);
char *ctl_read_secret(const char *what, const char *path);
void ctl_argv_secret(const char *opt, const char *instead);
int ctl_parse_int(
    const char *opt, const char *s, int64_t min, int64_t max, int64_t *out);

/* cmd.c: a command made of subcommands ("schedules list", "agents show") */
#define CMD_BIT(o) (1ull << (o)) /* the bit of command option o in a mask */

/*
 * One subcommand, what cmd.c needs of it.  A group's own table entry
 * (struct sched_cmd, struct agents_cmd) starts with one and goes on with
 * what only that group reads, such as the function that runs it; cmd.c
 * walks the table by the entry's size and hands the group back a pointer
 * to the struct cmd of the entry it found, which the group casts back.
 */
struct cmd {
	const char *name;        /* "list", "show", …: the word after GROUP */
	unsigned long long opts; /* CMD_BIT()s of the options it takes */
	int min_pos, max_pos;    /* how many positional arguments */
	const char *usage;       /* its usage text; its first line sums it up */
};

/*
 * A command made of subcommands, "cronvisorctl GROUP SUB [ARGS]": its
 * table, its getopt_long options and the three steps that differ from
 * one group to the next.  The command options (those of the group, not
 * CTL_GLOBAL_OPTIONS) have the codes base + 0 .. base + count - 1 in
 * options and are numbered 0 .. count - 1 everywhere else.
 */
struct cmd_group {
	const char *name;             /* "agents", after cronvisorctl */
	const char *synopsis;         /* the summary's first lines */
	const struct cmd *cmds;       /* the struct cmd of the first entry */
	size_t ncmds;                 /* entries in the table */
	size_t size;                  /* bytes from one entry to the next */
	const struct option *options; /* getopt_long's, with the global ones */
	int base;                     /* code of the command option 0 */
	int count;                    /* how many command options there are */
	int help;                     /* the command option that is --help */
	unsigned long long always;    /* CMD_BIT()s of those all subs take */
	/* Stores command option opt, which the subcommand takes, in args
	 * (optarg is its value); may take the next word of argv as well
	 * (optind++).  Returns 0 or CTL_EXIT_USAGE after a message. */
	int (*option)(int opt, int argc, char **argv, void *args);
	/* Fills args from c's command line (argv[0] is c's name), mostly by
	 * cmd_getopt().  Returns 0, -1 for --help, or CTL_EXIT_USAGE. */
	int (*parse)(const struct cmd_group *g, const struct cmd *c, int argc,
	    char **argv, void *args);
	/* Runs c with what parse() filled; returns the exit status. */
	int (*run)(const struct cmd *c, void *args);
};
/* The .cmds, .ncmds and .size of a cmd_group, from its table t. */
#define CMD_TABLE(t)                                                           \
	.cmds = &(t)[0].cmd, .ncmds = sizeof(t) / sizeof((t)[0]),              \
	.size = sizeof((t)[0])
int cmd_main(const struct cmd_group *g, void *args, int argc, char **argv);
int cmd_getopt(const struct cmd_group *g, const struct cmd *c, int argc,
    char **argv, void *args);
int cmd_check_pos(const struct cmd_group *g, const struct cmd *c, char **pos,
    int npos, const char *missing);
const char *cmd_optname(const struct option *options, int code);

/* apply.c: schedules, agents and pipelines as code */
int apply_main(int argc, char **argv);

/* next.c: preview fire times */
int next_main(int argc, char **argv);
void next_usage(FILE *fp);

/* config.c: print the effective configuration */
int config_main(int argc, char **argv);

/* db.c: apply and list the schema migrations */
int db_main(int argc, char **argv);
/* Where the database commands (db, token) find their database. */
struct db_where {
	const char *url;      /* --database or --database-file, or NULL */
	const char *url_file; /* --database-file: read into url */
	const char *path;     /* -f FILE, the configuration (CONFIG_PATH) */
	int must_exist;       /* 1: -f was given, the file must exist */
};
/* clang-format off */
#define DB_WHERE_OPTS \
	{"database", required_argument, NULL, 'd'}, \
	{"database-file", required_argument, NULL, 'D'}, \
	{"file", required_argument, NULL, 'f'}
/* clang-format on */
void db_where_init(struct db_where *w);
void db_where_option(struct db_where *w, int c, const char *arg);
struct db *db_connect(const struct db_where *w);

/* token.c: API tokens, straight in the database */
int token_main(int argc, char **argv);

/* api.c: the HTTP client of the REST API (libcurl, jansson) */
#define API_DRY          1  /* api_request(): --dry-run, nothing was sent */
#define API_QUERY_MAX    16 /* most query parameters of api_list() */
#define API_RETRIES      5  /* resends of a request with an Idempotency-Key */
#define API_KEY_LEN      33 /* api_key(): 32 hex digits and a NUL */
#define API_PARALLEL_MAX 32 /* most requests in flight of api_batch() */
struct json_t;
struct api_query {
	const char *name;  /* query parameter name */
	const char *value; /* its value, NULL: leave the parameter out */
};
extern const char *(*api_field_where)(const char *field, char *buf, size_t len);
int api_request(const char *method, const char *path,
    const struct api_query *query, size_t nquery, const char *body,
    struct json_t **out);
int api_request_json(const char *method, const char *path,
    const struct api_query *query, size_t nquery, const struct json_t *body,
    const char *key, struct json_t **out);
int api_list_print(const char *path, const struct api_query *q, size_t nq,
    const char *key, int all, void (*table)(const struct json_t *));
int api_show_print(const char *path, const char *const *order);
int api_delete_print(
    const char *path, const char *owner, const char *what, const char *id);
int api_list(const char *path, const struct api_query *query, size_t nquery,
    const char *key, int all, struct json_t **out);
int api_request_key(const char *method, const char *path,
    const struct api_query *query, size_t nquery, const char *body,
    const char *key, struct json_t **out);
void api_print_json(const struct json_t *doc);
int api_output(int rc, struct json_t *doc, void (*show)(const struct json_t *));
void api_set(struct json_t *obj, const char *key, struct json_t *v);
void api_cleanup(void);
int api_key(char *buf);
const char *api_last_error(void);

/* mcp.c: the Model Context Protocol server */
int mcp_main(int argc, char **argv);
void mcp_line(const char *line, size_t n);
extern FILE *mcp_out;

/* One request of api_batch(), handed out by its source. */
struct api_item {
	char *body;      /* the JSON text (malloc'd; api_batch() frees it) */
	char key[128];   /* its Idempotency-Key */
	char label[256]; /* what messages about it start with: "FILE:LINE" */
};

/* A batch of requests of one method and path, and how it went. */
struct api_batch {
	const char *method;        /* "POST" */
	const char *path;          /* under /api/v1 */
	const struct api_query *q; /* query of every request */
	size_t nq;                 /* entries in q */
	int parallel;              /* requests in flight, 1..32 */
	int (*next)(void *arg, struct api_item *it); /* 1: filled; 0: end */
	void *arg;                                   /* next()'s */
	size_t done;                                 /* requests answered 2xx */
	size_t failed; /* requests that failed (reported) */
	int stopped;   /* 1: stopped early (see api_batch()) */
};
int api_batch(struct api_batch *b);

/* table.c: aligned tables and key: value listings for people */
struct table;
struct table *table_new(const char *const *headers, size_t ncols);
void table_add(struct table *t, const char *const *cells);
void table_print(const struct table *t, FILE *fp);
void table_free(struct table *t);
const char *table_text(const struct json_t *v, char *buf, size_t len);
void table_kv(const struct json_t *obj, const char *const *order, FILE *fp);
const char *table_duration(int64_t seconds, char *buf, size_t len);

/* schedules.c: the schedules commands of the API */
int schedules_main(int argc, char **argv);

/* runs.c: the runs commands of the API */
int runs_main(int argc, char **argv);

/* executions.c: the executions and jobs commands of the API */
int executions_main(int argc, char **argv);
int jobs_main(int argc, char **argv);

/* agents.c: the agent registry commands of the API */
int agents_main(int argc, char **argv);

/* pipelines.c */
int pipelines_main(int argc, char **argv);

/* datasources.c */
int datasources_main(int argc, char **argv);
void ds_print_preview(const struct json_t *x);

#endif
