/*
 * token.c: "cronvisorctl token create|list|revoke", the API's bearer
 * tokens, made straight in the database as "db migrate" works (there is no
 * token yet to ask the API with).  A token is "cvt_" and 43 base64url
 * characters of 32 bytes from getrandom(); it is printed once and the
 * database keeps only sha256() of it, computed by PostgreSQL, and its first
 * 12 characters to tell tokens apart in lists.
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "cronvisorctl.h"
#include "sql_queries.h"

#define TOKEN_BYTES           32       /* random bytes in a token */
#define TOKEN_PREFIX          "cvt_"   /* what every token starts with */
#define TOKEN_LEN             (4 + 43) /* "cvt_" + base64url of 32 bytes */
#define TOKEN_OWNER_MAX       200      /* most characters of an owner */
#define TOKEN_UNDEFINED_TABLE "42P01"  /* SQLSTATE: no tokens table */

/* The options of the token commands. */
struct token_opts {
	const char *owner;     /* --owner */
	const char *role;      /* --role */
	const char *note;      /* --note, "" */
	struct db_where where; /* --database, -f FILE */
};

/* Prints the usage of the token commands on fp. */
static void
token_usage(FILE *fp)
{
	fprintf(fp,
	    "usage: cronvisorctl token create --owner NAME "
	    "--role admin|editor|viewer\n"
	    "           [--note TEXT] [--database URL] [-f FILE] [--json]\n"
	    "       cronvisorctl token list [--database URL] [-f FILE] "
	    "[--json]\n"
	    "       cronvisorctl token revoke ID [--database URL] [-f FILE]\n"
	    "\n"
	    "create makes an API token for OWNER and prints it once: the\n"
	    "database keeps only its SHA-256.  admin may do anything for every\n"
	    "owner, editor read and change its owner's schedules, viewer read\n"
	    "them.  list shows the tokens (never the token itself), revoke\n"
	    "stops one from working.  The database is URL, or else\n"
	    "CRONVISOR_DATABASE_URL, or else database_url of FILE (default\n"
	    "%s).  --database-file PATH reads URL from PATH's\n"
	    "first line: --database shows in ps to every local user.\n",
	    CONFIG_PATH);
}

/*
 * Writes "cvt_" and the unpadded base64url (RFC 4648 §5) of TOKEN_BYTES
 * fresh random bytes into buf[TOKEN_LEN + 1].  None of the libraries
 * cronvisorctl links offers base64url, and the encoding is a dozen lines.
 * Returns 0, or -1 with errno set by getrandom().
 */
static int
token_generate(char *buf)
{
	static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	                          "abcdefghijklmnopqrstuvwxyz0123456789-_";
	unsigned char r[TOKEN_BYTES + 1] = {0}; /* one byte of zero padding */
	size_t n = strlen(TOKEN_PREFIX);

	/* Up to 256 bytes, getrandom() does not return short once the pool
	 * is initialised; anything else is treated as a failure. */
	if (getrandom(r, TOKEN_BYTES, 0) != TOKEN_BYTES)
		return -1;
	memcpy(buf, TOKEN_PREFIX, n);
	/* Character j holds bits 6j to 6j+5 of the bytes, big-endian. */
	for (size_t j = 0; n + j < TOKEN_LEN; j++) {
		size_t bit = 6 * j;
		unsigned v = (unsigned)r[bit / 8] << 8 | r[bit / 8 + 1];
		buf[n + j] = b64[v >> (10 - bit % 8) & 63];
	}
	buf[TOKEN_LEN] = '\0';
	explicit_bzero(r, sizeof(r));
	return 0;
}

/* Reports a failed query, with the way out when the schema is old. */
static int
token_db_error(struct db *db, const char *err)
{
	const char *st = db_sqlstate(db);

	if (st != NULL && strcmp(st, TOKEN_UNDEFINED_TABLE) == 0)
		log_warnx("%s; run 'cronvisorctl db migrate' first", err);
	else
		log_warnx("%s", err);
	return CTL_EXIT_FAIL;
}

/* Checks --owner and --role; returns 0 or CTL_EXIT_USAGE. */
static int
token_check(const struct token_opts *o)
{
	size_t n = 0;

	if (o->owner == NULL)
		return ctl_usage_error("--owner NAME is required");
	if (o->role == NULL)
		return ctl_usage_error(
		    "--role admin|editor|viewer is required");
	for (const char *p = o->owner; *p; p++)
		n += ((unsigned char)*p & 0xc0) != 0x80;
	if (n < 1 || n > TOKEN_OWNER_MAX)
		return ctl_usage_error("--owner: must be 1 to %d characters, "
		                       "not %zu",
		    TOKEN_OWNER_MAX, n);
	if (strcmp(o->role, "admin") != 0 && strcmp(o->role, "editor") != 0 &&
	    strcmp(o->role, "viewer") != 0)
		return ctl_usage_error("--role: must be admin, editor or "
		                       "viewer, not \"%s\"",
		    o->role);
	return 0;
}

/* "token create": makes, stores and prints one token. */
static int
token_create(struct db *db, const struct token_opts *o)
{
	char token[TOKEN_LEN + 1], err[CV_ERRLEN * 2];
	const char *params[4] = {token, o->owner, o->role, o->note};
	struct db_rows *rows;
	json_t *doc;

	if (token_generate(token) == -1) {
		log_warn("getrandom");
		return CTL_EXIT_FAIL;
	}
	if ((rows = db_query(
	         db, SQL_token_create, 4, params, err, sizeof(err))) == NULL) {
		explicit_bzero(token, sizeof(token));
		return token_db_error(db, err);
	}
	if (ctl.json) {
		doc = json_pack("{sIssssss}", "id",
		    (json_int_t)strtoll(db_rows_value(rows, 0, 0), NULL, 10),
		    "token", token, "owner", o->owner, "role", o->role);
		api_print_json(doc);
		json_decref(doc);
	} else {
		printf("%s\n", token);
	}
	fflush(stdout);
	log_info("token %s for %s (%s): this is the only time it is shown; "
	         "the database keeps only its SHA-256",
	    db_rows_value(rows, 0, 0), o->owner, o->role);
	db_rows_free(rows);
	explicit_bzero(token, sizeof(token));
	return CTL_EXIT_OK;
}

/* "token list": every token, without its hash, oldest first. */
static int
token_list(struct db *db)
{
	static const char *const hdr[] = {
	    "ID", "PREFIX", "OWNER", "ROLE", "CREATED", "REVOKED", "NOTE"};
	static const char *const keys[] = {"id", "prefix", "owner", "role",
	    "created_at", "revoked_at", "note"};
	char err[CV_ERRLEN * 2];
	struct db_rows *rows;
	struct table *t;
	json_t *list, *o;

	if ((rows = db_query(db, SQL_token_list, 0, NULL, err, sizeof(err))) ==
	    NULL)
		return token_db_error(db, err);
	t = table_new(hdr, 7);
	list = json_array();
	for (int r = 0; r < db_rows_count(rows); r++) {
		const char *row[7];
		o = json_object();
		for (int c = 0; c < 7; c++) {
			row[c] = db_rows_value(rows, r, c);
			json_object_set_new(o, keys[c],
			    row[c] == NULL ? json_null()
			        : c == 0
			        ? json_integer(strtoll(row[c], NULL, 10))
			        : json_string(row[c]));
		}
		json_array_append_new(list, o);
		table_add(t, row);
	}
	if (ctl.json)
		api_print_json(list);
	else
		table_print(t, stdout);
	json_decref(list);
	table_free(t);
	db_rows_free(rows);
	return CTL_EXIT_OK;
}

/* "token revoke ID": stamps revoked_at; revoking twice is not an error. */
static int
token_revoke(struct db *db, const char *id)
{
	char err[CV_ERRLEN * 2];
	struct db_rows *rows;
	int64_t v;

	if (ctl_parse_int("token revoke ID", id, 1, INT64_MAX, &v) != 0)
		return CTL_EXIT_USAGE;
	if ((rows = db_query(db, SQL_token_revoke, 1, &id, err, sizeof(err))) ==
	    NULL)
		return token_db_error(db, err);
	if (db_rows_count(rows) == 1) {
		printf("revoked token %s (%s…, owner %s)\n", id,
		    db_rows_value(rows, 0, 0), db_rows_value(rows, 0, 1));
		db_rows_free(rows);
		return CTL_EXIT_OK;
	}
	db_rows_free(rows);
	if ((rows = db_query(
	         db, SQL_token_revoked_at, 1, &id, err, sizeof(err))) == NULL)
		return token_db_error(db, err);
	if (db_rows_count(rows) == 0) {
		log_warnx("no token %s", id);
		db_rows_free(rows);
		return CTL_EXIT_FAIL;
	}
	printf("token %s was already revoked at %s\n", id,
	    db_rows_value(rows, 0, 0));
	db_rows_free(rows);
	return CTL_EXIT_OK;
}

/* Parses the options after "token SUB"; returns -1 (help), 0 or 2. */
static int
token_parse(int argc, char **argv, struct token_opts *o)
{
	static const struct option opts[] = {
	    {"owner", required_argument, NULL, 'o'},
	    {"role", required_argument, NULL, 'r'},
	    {"note", required_argument, NULL, 'n'},
	    DB_WHERE_OPTS,
	    {"help", no_argument, NULL, 'h'},
	    {"json", no_argument, NULL, CTL_OPT_JSON},
	    {NULL, 0, NULL, 0},
	};
	const char *sub = argv[0];
	int create = strcmp(sub, "create") == 0, c;

	static char prog[64];

	/* getopt_long's messages start with argv[0]: name the command. */
	snprintf(prog, sizeof(prog), "cronvisorctl token %s", argv[0]);
	argv[0] = prog;
	memset(o, 0, sizeof(*o));
	o->note = "";
	db_where_init(&o->where);
	optind = 1;
	while ((c = getopt_long(argc, argv, "d:f:h", opts, NULL)) != -1) {
		if (!create && (c == 'o' || c == 'r' || c == 'n'))
			return ctl_usage_error("token %s does not take --%s",
			    sub,
			    c == 'o'       ? "owner"
			        : c == 'r' ? "role"
			                   : "note");
		switch (c) {
		case 'o':
			o->owner = optarg;
			break;
		case 'r':
			o->role = optarg;
			break;
		case 'n':
			o->note = optarg;
			break;
		case 'd':
		case 'D':
		case 'f':
			db_where_option(&o->where, c, optarg);
			break;
		case 'h':
			token_usage(stdout);
			return -1;
		case CTL_OPT_JSON:
			ctl.json = 1;
			break;
		default:
			return CTL_EXIT_USAGE;
		}
	}
	if (optind != argc - (strcmp(sub, "revoke") == 0))
		return ctl_usage_error("token %s takes %s", sub,
		    strcmp(sub, "revoke") == 0 ? "one token id"
		                               : "no arguments");
	return create ? token_check(o) : 0;
}

/* Entry point of "cronvisorctl token"; argv[0] is "token". */
int
token_main(int argc, char **argv)
{
	struct token_opts o;
	const char *sub;
	struct db *db;
	int rc;

	if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0) {
		token_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? CTL_EXIT_USAGE : CTL_EXIT_OK;
	}
	if (strcmp(argv[1], "create") != 0 && strcmp(argv[1], "list") != 0 &&
	    strcmp(argv[1], "revoke") != 0) {
		ctl_usage_error("unknown token command \"%s\"", argv[1]);
		token_usage(stderr);
		return CTL_EXIT_USAGE;
	}
	sub = argv[1]; /* token_parse() renames it, for getopt's messages */
	if ((rc = token_parse(argc - 1, argv + 1, &o)) != 0) {
		if (rc == -1)
			return CTL_EXIT_OK;
		token_usage(stderr);
		return rc;
	}
	if ((db = db_connect(&o.where)) == NULL)
		return CTL_EXIT_FAIL;
	if (strcmp(sub, "create") == 0)
		rc = token_create(db, &o);
	else if (strcmp(sub, "list") == 0)
		rc = token_list(db);
	else
		rc = token_revoke(db, argv[argc - 1]);
	db_close(db);
	return rc;
}
