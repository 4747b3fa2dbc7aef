/*
 * migrate.c: brings a database's schema up to the one this cronvisor was
 * built with.  The migrations are the files sql/NNN_name.sql, compiled into
 * migrate_list[] at build time (cmake/embed_sql.cmake), so a binary always
 * carries exactly the schema it was written against.  They are forward-only:
 * each missing one is applied, in version order, in its own transaction
 * together with its row in cronvisor_migrations, so a failure leaves the
 * database at the last complete version.  Then sql/functions.sql, the live
 * definition of every SQL function (migrate_functions[]), is applied on
 * every run, in a transaction of its own: a function is changed there, not
 * by a migration.  A session advisory lock serialises concurrent runs (two
 * hosts upgrading at once: the second waits, then finds nothing to do), and
 * a database that is already newer than this binary is refused before
 * anything changes: an old binary must not run against a schema it does
 * not know.  The statements are those of sql/queries/migrate.sql.
 */
#include <stdlib.h>
#include <string.h>

#include "cronvisor.h"
#include "sql_queries.h"

/* The advisory lock key: "cronvisr" in ASCII, as a bigint. */
#define MIGRATE_LOCK_KEY "7165064483209180018"

/* Returns the highest version this cronvisor knows, 0 if it knows none. */
int
migrate_latest(void)
{
	return migrate_count > 0 ? migrate_list[migrate_count - 1].version : 0;
}

/*
 * Checks that the database's schema is the one this cronvisor was built
 * for, as the daemons do before they work on it: new binaries on an old
 * schema (installed, not yet migrated) or old binaries on a newer one
 * would misread it.  Returns 0, or -1 with what to do in err.
 */
int
migrate_check(struct db *db, char *err, size_t errlen)
{
	struct db_rows *rows;
	const char *v;
	int have, want = migrate_latest();

	if ((rows = db_query(db, SQL_migrate_version, 0, NULL, err, errlen)) ==
	    NULL) {
		if (strcmp(db_sqlstate(db), "42P01") == 0)
			return log_errbuf(err, errlen,
			    "the database has no cronvisor schema; run "
			    "'cronvisorctl db migrate'");
		return -1;
	}
	v = db_rows_value(rows, 0, 0);
	have = v ? atoi(v) : 0;
	db_rows_free(rows);
	if (have < want)
		return log_errbuf(err, errlen,
		    "the database schema is at version %d, this cronvisor "
		    "needs %d; run 'cronvisorctl db migrate'",
		    have, want);
	if (have > want)
		return log_errbuf(err, errlen,
		    "database schema version %d is newer than this cronvisor "
		    "(%d); upgrade cronvisor",
		    have, want);
	return 0;
}

/* Takes (lock != 0) or releases the migration lock, waiting for it. */
static int
migrate_lock(struct db *db, int lock, char *err, size_t errlen)
{
	const char *key[1] = {MIGRATE_LOCK_KEY};

	if (db_exec(db, lock ? SQL_migrate_lock : SQL_migrate_unlock, 1, key,
	        err, errlen) == -1)
		return -1;
	return 0;
}

/*
 * Reads the versions recorded in cronvisor_migrations, ascending, into
 * *out (malloc'd, *n entries).  Returns 0 or -1.
 */
static int
migrate_applied(struct db *db, int **out, size_t *n, char *err, size_t errlen)
{
	struct db_rows *rows;
	int count;

	rows = db_query(db, SQL_migrate_versions, 0, NULL, err, errlen);
	if (rows == NULL)
		return -1;
	count = db_rows_count(rows);
	if ((*out = calloc((size_t)count + 1, sizeof(**out))) == NULL) {
		db_rows_free(rows);
		return log_errbuf(err, errlen, "out of memory");
	}
	for (int i = 0; i < count; i++)
		(*out)[i] = atoi(db_rows_value(rows, i, 0));
	*n = (size_t)count;
	db_rows_free(rows);
	return 0;
}

/* Returns 1 if version is among the n versions v, else 0. */
static int
migrate_has(const int *v, size_t n, int version)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == version)
			return 1;
	return 0;
}

/*
 * Applies migration m and records it, in one transaction.  Returns 0; or
 * -1 with "NNN_name: problem" in err and the transaction rolled back.
 */
static int
migrate_one(struct db *db, const struct migration *m, char *err, size_t errlen)
{
	char version[16], why[CV_ERRLEN];
	const char *params[2] = {version, m->name};

	snprintf(version, sizeof(version), "%d", m->version);
	if (db_begin(db, why, sizeof(why)) == -1)
		goto fail;
	if (db_exec(db, m->sql, 0, NULL, why, sizeof(why)) == -1 ||
	    db_exec(db, SQL_migrate_record, 2, params, why, sizeof(why)) ==
	        -1 ||
	    db_commit(db, why, sizeof(why)) == -1) {
		db_rollback(db);
		goto fail;
	}
	return 0;
fail:
	return log_errbuf(err, errlen, "migration %s: %s", m->name, why);
}

/*
 * Applies sql/functions.sql, in a transaction of its own.  Returns 0; or
 * -1 with "sql/functions.sql: problem" in err and the transaction rolled
 * back (the migrations committed before stay).
 */
static int
migrate_functions_apply(struct db *db, char *err, size_t errlen)
{
	char why[CV_ERRLEN];

	if (db_begin(db, why, sizeof(why)) == -1)
		goto fail;
	if (db_exec(db, migrate_functions, 0, NULL, why, sizeof(why)) == -1 ||
	    db_commit(db, why, sizeof(why)) == -1) {
		db_rollback(db);
		goto fail;
	}
	return 0;
fail:
	return log_errbuf(err, errlen, "sql/functions.sql: %s", why);
}

/* The body of migrate_run(), run while holding the lock. */
static int
migrate_locked(struct db *db,
    void (*applied)(const struct migration *m, void *arg), void *arg, char *err,
    size_t errlen)
{
	int *have = NULL, count = 0;
	size_t n = 0;

	if (db_exec(db, SQL_migrate_table, 0, NULL, err, errlen) == -1 ||
	    migrate_applied(db, &have, &n, err, errlen) == -1)
		return -1;
	if (n > 0 && have[n - 1] > migrate_latest()) {
		log_errbuf(err, errlen,
		    "database schema version %d is newer than this "
		    "cronvisor (%d); upgrade cronvisor",
		    have[n - 1], migrate_latest());
		free(have);
		return -1;
	}
	for (size_t i = 0; i < migrate_count; i++) {
		const struct migration *m = &migrate_list[i];

		if (migrate_has(have, n, m->version))
			continue;
		if (migrate_one(db, m, err, errlen) == -1) {
			free(have);
			return -1;
		}
		if (applied != NULL)
			applied(m, arg);
		count++;
	}
	free(have);
	/*
	 * Every time, not only after a migration: a new cronvisor may bring a
	 * new definition of a function and no migration at all.
	 */
	return migrate_functions_apply(db, err, errlen) == -1 ? -1 : count;
}

/*
 * Applies every migration this cronvisor knows that db lacks, in version
 * order, each in its own transaction, then sql/functions.sql in one more,
 * under a session advisory lock held for the whole run (concurrent
 * callers wait for each other).  Creates cronvisor_migrations if missing.
 * Calls applied(m, arg), if not NULL, after each migration m is committed.
 * Refuses, changing nothing, a database whose version is higher than
 * migrate_latest().  Returns the number of migrations applied (0: already
 * up to date; the functions do not count), or -1 with the reason in err;
 * the migrations committed before a failure stay.
 */
int
migrate_run(struct db *db,
    void (*applied)(const struct migration *m, void *arg), void *arg, char *err,
    size_t errlen)
{
	char why[CV_ERRLEN];
	int rc;

	/*
	 * A migration may rewrite a large table, and the lock may be held by
	 * another migration for as long: no statement time limit here.
	 */
	if (db_exec(db, SQL_migrate_no_timeout, 0, NULL, err, errlen) == -1 ||
	    migrate_lock(db, 1, err, errlen) == -1)
		return -1;
	rc = migrate_locked(db, applied, arg, err, errlen);
	/* A lost connection has released the lock with the session. */
	if (db_ok(db) && migrate_lock(db, 0, why, sizeof(why)) == -1 &&
	    rc != -1)
		rc = log_errbuf(err, errlen, "%s", why);
	return rc;
}

/* Fills e from the known migration m (may be NULL) and a recorded row. */
static void
migrate_entry_fill(struct migrate_entry *e, const struct migration *m,
    const struct db_rows *rows, int row)
{
	const char *at;

	memset(e, 0, sizeof(*e));
	if (m != NULL) {
		e->version = m->version;
		e->known = 1;
		snprintf(e->name, sizeof(e->name), "%s", m->name);
	}
	if (row < 0)
		return;
	e->version = atoi(db_rows_value(rows, row, 0));
	if (m == NULL)
		snprintf(e->name, sizeof(e->name), "%s",
		    db_rows_value(rows, row, 1));
	at = db_rows_value(rows, row, 2);
	snprintf(e->applied_at, sizeof(e->applied_at), "%s", at ? at : "");
}

/* Merges the known migrations and the recorded rows, both by version. */
static void
migrate_merge(const struct db_rows *rows, struct migrate_entry *out, size_t *n)
{
	int nrows = rows != NULL ? db_rows_count(rows) : 0, r = 0;
	size_t k = 0;

	*n = 0;
	while (k < migrate_count || r < nrows) {
		int rv = r < nrows ? atoi(db_rows_value(rows, r, 0)) : 0;
		const struct migration *m =
		    k < migrate_count ? &migrate_list[k] : NULL;

		if (r < nrows && (m == NULL || rv < m->version))
			migrate_entry_fill(&out[(*n)++], NULL, rows, r++);
		else if (r < nrows && rv == m->version)
			migrate_entry_fill(&out[(*n)++], m, rows, r++), k++;
		else
			migrate_entry_fill(&out[(*n)++], m, NULL, -1), k++;
	}
}

/*
 * Lists every migration this cronvisor knows or db has recorded, by
 * version: applied ones with their time, pending ones with applied_at "",
 * and ones only the database knows with known 0.  Changes nothing.  On
 * success *out (malloc'd, the caller frees it) holds *n entries; returns
 * 0, or -1 with the reason in err.
 */
int
migrate_status(struct db *db, struct migrate_entry **out, size_t *n, char *err,
    size_t errlen)
{
	struct db_rows *rows = NULL, *exists;
	int have;

	exists = db_query(db, SQL_migrate_exists, 0, NULL, err, errlen);
	if (exists == NULL)
		return -1;
	have = strcmp(db_rows_value(exists, 0, 0), "t") == 0;
	db_rows_free(exists);
	if (have &&
	    (rows = db_query(db, SQL_migrate_status, 0, NULL, err, errlen)) ==
	        NULL)
		return -1;
	*out =
	    calloc(migrate_count + (size_t)(rows ? db_rows_count(rows) : 0) + 1,
	        sizeof(**out));
	if (*out == NULL) {
		db_rows_free(rows);
		return log_errbuf(err, errlen, "out of memory");
	}
	migrate_merge(rows, *out, n);
	db_rows_free(rows);
	return 0;
}
