/*
 * db.c: "cronvisorctl db migrate" brings the database's schema up to the
 * one compiled into this binary (common/migrate.c), and "cronvisorctl db
 * status" lists which migrations are applied and which are pending.  Both
 * find the database in --database, or else in the configuration the
 * daemons read (-f FILE or /etc/cronvisor/cronvisor.conf, then
 * CRONVISOR_DATABASE_URL), and never print its password.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cronvisorctl.h"

/* Prints the usage of the db commands on fp. */
static void
db_usage(FILE *fp)
{
	fprintf(fp,
	    "usage: cronvisorctl db migrate [--database URL] [-f FILE]\n"
	    "       cronvisorctl db status [--database URL] [-f FILE]\n"
	    "\n"
	    "migrate applies the migrations this cronvisorctl carries that\n"
	    "the database lacks, each in its own transaction, and refuses a\n"
	    "database newer than itself; status lists them.  The database is\n"
	    "URL (a libpq conninfo or postgresql:// URI), or else database_url\n"
	    "from FILE (default %s, which may be absent)\n"
	    "and CRONVISOR_DATABASE_URL.  --database-file PATH reads URL from\n"
	    "PATH's first line: --database shows in ps to every local user.\n",
	    CONFIG_PATH);
}

/* Parses the options after "db SUB"; returns -1 done (help), 0, or 2. */
static int
db_parse(int argc, char **argv, struct db_where *o)
{
	static const struct option opts[] = {
	    DB_WHERE_OPTS,
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	db_where_init(o);
	optind = 1;
	while ((c = getopt_long(argc, argv, "d:f:h", opts, NULL)) != -1)
		switch (c) {
		case 'd':
		case 'D':
		case 'f':
			db_where_option(o, c, optarg);
			break;
		case 'h':
			db_usage(stdout);
			return -1;
		default:
			return CTL_EXIT_USAGE;
		}
	if (optind != argc)
		return ctl_usage_error("db %s takes no arguments", argv[0]);
	return 0;
}

/* No --database, the default configuration file. */
void
db_where_init(struct db_where *w)
{
	*w = (struct db_where){NULL, NULL, CONFIG_PATH, 0};
}

/*
 * Takes option c of DB_WHERE_OPTS (--database, --database-file or -f)
 * into w.
 */
void
db_where_option(struct db_where *w, int c, const char *arg)
{
	if (c == 'd') {
		ctl_argv_secret(
		    "--database", "CRONVISOR_DATABASE_URL or --database-file");
		w->url = arg;
	} else if (c == 'D') {
		w->url = NULL;
		w->url_file = arg;
	} else {
		w->path = arg;
		w->must_exist = 1;
	}
}

/*
 * Connects to the database an operator's command names: w->url
 * (--database, or the first line of --database-file) if not NULL, else
 * CRONVISOR_DATABASE_URL, else
 * database_url of the configuration file w->path (which must exist if
 * -f named it).  Shared with token.c.  Returns the connection, or NULL
 * after a message on stderr.
 */
struct db *
db_connect(const struct db_where *w)
{
	struct config cf;
	struct db *db;
	char err[CV_ERRLEN * 2];
	char *file_url = NULL;

	if (w->url_file != NULL &&
	    (file_url = ctl_read_secret("database URL", w->url_file)) == NULL)
		return NULL;
	if (w->url != NULL || file_url != NULL) {
		if ((db = db_open(file_url ? file_url : w->url, err,
		         sizeof(err))) == NULL)
			log_warnx("%s", err);
		free(file_url);
		return db;
	}
	config_defaults(&cf);
	if (config_load(&cf, w->path, w->must_exist, err, sizeof(err)) == -1) {
		log_warnx("%s", err);
		config_clear(&cf);
		return NULL;
	}
	db_configure(cf.db_timeout_ms);
	if ((db = db_open(cf.database_url, err, sizeof(err))) == NULL)
		log_warnx("%s", err);
	config_clear(&cf);
	return db;
}

/* Reports one migration migrate_run() has committed. */
static void
db_applied(const struct migration *m, void *arg)
{
	(void)arg;
	printf("applied %s\n", m->name);
	fflush(stdout);
}

/* "db migrate": applies what is missing. */
static int
db_migrate(struct db *db)
{
	char err[CV_ERRLEN * 2];
	int n;

	if ((n = migrate_run(db, db_applied, NULL, err, sizeof(err))) == -1) {
		log_warnx("%s", err);
		return CTL_EXIT_FAIL;
	}
	if (n == 0)
		printf("schema is up to date (version %d)\n", migrate_latest());
	else
		printf("schema is at version %d\n", migrate_latest());
	return CTL_EXIT_OK;
}

/* "db status": one line per migration, then a summary. */
static int
db_status(struct db *db)
{
	struct migrate_entry *e;
	char err[CV_ERRLEN * 2];
	size_t n, pending = 0;
	int version = 0;

	if (migrate_status(db, &e, &n, err, sizeof(err)) == -1) {
		log_warnx("%s", err);
		return CTL_EXIT_FAIL;
	}
	for (size_t i = 0; i < n; i++) {
		if (e[i].applied_at[0] != '\0')
			version = e[i].version;
		else
			pending++;
		printf("%-32s %s%s%s\n", e[i].name,
		    e[i].applied_at[0] ? "applied " : "pending",
		    e[i].applied_at,
		    e[i].known ? "" : "  (unknown to this cronvisorctl)");
	}
	printf("schema version %d; this cronvisorctl knows %d; %zu pending\n",
	    version, migrate_latest(), pending);
	free(e);
	return version > migrate_latest() ? CTL_EXIT_FAIL : CTL_EXIT_OK;
}

/* Entry point of "cronvisorctl db"; argv[0] is "db". */
int
db_main(int argc, char **argv)
{
	struct db_where o;
	struct db *db;
	int rc, migrate;

	if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0) {
		db_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? CTL_EXIT_USAGE : CTL_EXIT_OK;
	}
	if (strcmp(argv[1], "migrate") != 0 && strcmp(argv[1], "status") != 0)
		return ctl_usage_error("unknown db command \"%s\"", argv[1]);
	migrate = strcmp(argv[1], "migrate") == 0;
	if ((rc = db_parse(argc - 1, argv + 1, &o)) != 0)
		return rc == -1 ? CTL_EXIT_OK : rc;
	if ((db = db_connect(&o)) == NULL)
		return CTL_EXIT_FAIL;
	rc = migrate ? db_migrate(db) : db_status(db);
	db_close(db);
	return rc;
}
