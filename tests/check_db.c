/*
 * check_db.c: common/db.c and common/migrate.c against a real PostgreSQL,
 * the private one tests/pg-harness.sh starts as the CTest fixture "pg"
 * (CRONVISOR_TEST_PG names the file holding its conninfo).  Every test
 * gets a database of its own, created from the fixture's and dropped at
 * the end, so the tests neither see nor disturb each other: the migration
 * tests, the schema's constraints, and the wrapper itself (errors and
 * their SQLSTATE, NULLs, parameters, transactions, LISTEN/NOTIFY, and a
 * connection killed under it).
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cronvisor.h"
#include "cvtest.h"

static char base_ci[512];  /* the fixture's conninfo */
static char test_ci[600];  /* conninfo of this test's database */
static char test_name[64]; /* this test's database */
static struct db *tdb;     /* a connection to it */
static char err[1024];
static char expect[256]; /* an expected value or message */

/* Runs sql on db, failing the test on error. */
static void
must(struct db *db, const char *sql)
{
	ck_assert_msg(db_exec(db, sql, 0, NULL, err, sizeof(err)) >= 0,
	    "%s: %s", sql, err);
}

/* Returns the single value sql yields, as a malloc'd string or NULL. */
static char *
value(struct db *db, const char *sql)
{
	struct db_rows *r = db_query(db, sql, 0, NULL, err, sizeof(err));
	const char *v;
	char *copy;

	ck_assert_msg(r != NULL, "%s: %s", sql, err);
	ck_assert_int_eq(db_rows_count(r), 1);
	v = db_rows_value(r, 0, 0);
	copy = v != NULL ? strdup(v) : NULL;
	db_rows_free(r);
	return copy;
}

/* Checks that sql yields the single value want. */
static void
value_is(struct db *db, const char *sql, const char *want)
{
	char *v = value(db, sql);

	ck_assert_msg(v != NULL && strcmp(v, want) == 0, "%s: got %s, want %s",
	    sql, v ? v : "NULL", want);
	free(v);
}

/* Creates this test's database and connects tdb to it. */
static void
setup(void)
{
	const char *path = getenv("CRONVISOR_TEST_PG");
	struct db *admin;
	char sql[128];
	FILE *fp;

	ck_assert_msg(path != NULL,
	    "CRONVISOR_TEST_PG is not set: run "
	    "under ctest (fixture pg)");
	ck_assert_msg((fp = fopen(path, "r")) != NULL, "cannot read %s", path);
	ck_assert(fgets(base_ci, sizeof(base_ci), fp) != NULL);
	fclose(fp);
	base_ci[strcspn(base_ci, "\n")] = '\0';
	snprintf(test_name, sizeof(test_name), "cvtest_%ld", (long)getpid());
	snprintf(test_ci, sizeof(test_ci), "%s dbname=%s", base_ci, test_name);
	admin = db_open(base_ci, err, sizeof(err));
	ck_assert_msg(admin != NULL, "%s", err);
	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s", test_name);
	must(admin, sql);
	snprintf(sql, sizeof(sql), "CREATE DATABASE %s", test_name);
	must(admin, sql);
	db_close(admin);
	tdb = db_open(test_ci, err, sizeof(err));
	ck_assert_msg(tdb != NULL, "%s", err);
}

/* Drops this test's database (only reached when the test passed). */
static void
teardown(void)
{
	struct db *admin;
	char sql[128];

	db_close(tdb);
	tdb = NULL;
	if ((admin = db_open(base_ci, err, sizeof(err))) == NULL)
		return;
	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s WITH (FORCE)",
	    test_name);
	db_exec(admin, sql, 0, NULL, NULL, 0);
	db_close(admin);
}

static void
count_applied(const struct migration *m, void *arg)
{
	/* In version order, each the migration compiled in at that place. */
	ck_assert_int_eq(m->version, migrate_list[*(int *)arg].version);
	ck_assert_str_eq(m->name, migrate_list[*(int *)arg].name);
	(*(int *)arg)++;
}

START_TEST(test_migrate_applies)
{
	int n = 0;

	setup();
	ck_assert_int_ge(migrate_count, 1);
	ck_assert_int_eq(migrate_list[0].version, 1);
	ck_assert_int_eq(migrate_run(tdb, count_applied, &n, err, sizeof(err)),
	    (int)migrate_count);
	ck_assert_int_eq(n, (int)migrate_count);
	value_is(tdb,
	    "SELECT split_part(string_agg(version || ':' || name, ',' "
	    "ORDER BY version), ',', 1) FROM cronvisor_migrations",
	    "1:001_init");
	value_is(tdb,
	    "SELECT to_regclass('schedules') IS NOT NULL AND "
	    "to_regclass('runs') IS NOT NULL AND "
	    "to_regclass('supervisors') IS NOT NULL",
	    "t");
	teardown();
}
END_TEST

START_TEST(test_migrate_idempotent)
{
	struct migrate_entry *e;
	size_t n;

	setup();
	ck_assert_int_eq(migrate_status(tdb, &e, &n, err, sizeof(err)), 0);
	ck_assert_int_eq(n, migrate_count);
	ck_assert_str_eq(e[0].applied_at, "");
	free(e);
	ck_assert_int_eq(
	    migrate_run(tdb, NULL, NULL, err, sizeof(err)), (int)migrate_count);
	ck_assert_int_eq(migrate_run(tdb, NULL, NULL, err, sizeof(err)), 0);
	snprintf(expect, sizeof(expect), "%zu", migrate_count);
	value_is(tdb, "SELECT count(*) FROM cronvisor_migrations", expect);
	ck_assert_int_eq(migrate_status(tdb, &e, &n, err, sizeof(err)), 0);
	ck_assert_int_eq(n, migrate_count);
	ck_assert_str_eq(e[0].name, "001_init");
	ck_assert_int_eq(e[0].known, 1);
	ck_assert_int_eq((int)strlen(e[0].applied_at), 20);
	free(e);
	teardown();
}
END_TEST

/* A child of the concurrency test: waits for the start signal, migrates,
 * exits with the number applied (or 100 on error).  Never returns. */
static _Noreturn void
migrate_child(int gate)
{
	struct db *db = db_open(test_ci, err, sizeof(err));
	char c;
	int n;

	if (db == NULL)
		_exit(100);
	(void)read(gate, &c, 1);
	n = migrate_run(db, NULL, NULL, err, sizeof(err));
	db_close(db);
	_exit(n < 0 ? 100 : n);
}

START_TEST(test_migrate_concurrent)
{
	int gate[2], st, sum = 0;
	pid_t pid[2];

	setup();
	ck_assert_int_eq(pipe(gate), 0);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_ge(pid[i] = fork(), 0);
		if (pid[i] == 0) {
			close(gate[1]);
			migrate_child(gate[0]);
		}
	}
	close(gate[0]);
	usleep(200 * 1000); /* let both connect, then open the gate */
	close(gate[1]);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(waitpid(pid[i], &st, 0), pid[i]);
		ck_assert(WIFEXITED(st));
		ck_assert_int_lt(WEXITSTATUS(st), 100);
		sum += WEXITSTATUS(st);
	}
	ck_assert_int_eq(sum, (int)migrate_count);
	snprintf(expect, sizeof(expect), "%zu", migrate_count);
	value_is(tdb, "SELECT count(*) FROM cronvisor_migrations", expect);
	teardown();
}
END_TEST

START_TEST(test_migrate_newer_refused)
{
	/* One version past the newest this build knows. */
	int future = migrate_list[migrate_count - 1].version + 1;
	char sql[160], v[16];

	setup();
	must(tdb,
	    "CREATE TABLE cronvisor_migrations (version integer "
	    "PRIMARY KEY, name text NOT NULL, applied_at timestamptz "
	    "NOT NULL DEFAULT now())");
	snprintf(sql, sizeof(sql),
	    "INSERT INTO cronvisor_migrations VALUES (%d, '%03d_future')",
	    future, future);
	must(tdb, sql);
	ck_assert_int_eq(migrate_run(tdb, NULL, NULL, err, sizeof(err)), -1);
	snprintf(expect, sizeof(expect),
	    "database schema version %d is newer than this cronvisor (%d); "
	    "upgrade cronvisor",
	    future, future - 1);
	ck_assert_msg(strstr(err, expect), "%s", err);
	value_is(tdb, "SELECT to_regclass('schedules') IS NULL", "t");
	snprintf(v, sizeof(v), "%d", future);
	value_is(tdb,
	    "SELECT string_agg(version::text, ',') "
	    "FROM cronvisor_migrations",
	    v);
	teardown();
}
END_TEST

/* Rows the schema must refuse, with the SQLSTATE it refuses them with. */
static const struct {
	const char *what;  /* for the message */
	const char *sql;   /* the insert or update */
	const char *state; /* 23514 check_violation, 23505 unique */
} bad_rows[] = {
    {"negative interval",
        "INSERT INTO schedules (name, owner, kind, "
        "interval_seconds) VALUES ('a','o','interval',-5)",
        "23514"},
    {"unknown status", "UPDATE schedules SET status = 'sleeping'", "23514"},
    {"cron without cron",
        "INSERT INTO schedules (name, owner, kind) "
        "VALUES ('a','o','cron')",
        "23514"},
    {"once without at",
        "INSERT INTO schedules (name, owner, kind) "
        "VALUES ('a','o','once')",
        "23514"},
    {"paused with next_run_at",
        "UPDATE schedules SET status = 'paused', "
        "next_run_at = now()",
        "23514"},
    {"run with unknown status",
        "INSERT INTO runs (id, schedule_id, "
        "repeat_number, attempt, slot_at, status) VALUES "
        "('sched-abcdef01-n0-rc1', 'abcdef01-0000-4000-8000-000000000001', "
        "0, 1, '2026-01-01T00:00:00Z', 'pondering')",
        "23514"},
    {"running without supervisor",
        "INSERT INTO runs (id, schedule_id, "
        "repeat_number, attempt, slot_at, status) VALUES "
        "('sched-abcdef01-n0-rc1', 'abcdef01-0000-4000-8000-000000000001', "
        "0, 1, '2026-01-01T00:00:00Z', 'running')",
        "23514"},
    {"duplicate slot",
        "INSERT INTO runs (id, schedule_id, repeat_number, "
        "attempt, slot_at, status) VALUES ('sched-abcdef01-n9-rc0', "
        "'abcdef01-0000-4000-8000-000000000001', 9, 0, '2026-01-01T00:00:00Z', "
        "'missed')",
        "23505"},
    {"duplicate id8",
        "INSERT INTO schedules (id, name, owner, kind, "
        "interval_seconds) VALUES ('abcdef01-ffff-4000-8000-000000000002', "
        "'b', 'o', 'interval', 60)",
        "23505"},
};

START_TEST(test_constraints)
{
	size_t i;

	setup();
	ck_assert_int_eq(
	    migrate_run(tdb, NULL, NULL, err, sizeof(err)), (int)migrate_count);
	must(tdb,
	    "INSERT INTO schedules (id, name, owner, kind, "
	    "interval_seconds, next_run_at) VALUES "
	    "('abcdef01-0000-4000-8000-000000000001', 'a', 'o', "
	    "'interval', 60, now())");
	must(tdb,
	    "INSERT INTO runs (id, schedule_id, repeat_number, attempt, "
	    "slot_at, status) VALUES ('sched-abcdef01-n0-rc0', "
	    "'abcdef01-0000-4000-8000-000000000001', 0, 0, "
	    "'2026-01-01T00:00:00Z', 'skipped')");
	value_is(tdb, "SELECT id8 FROM schedules", "abcdef01");
	for (i = 0; i < sizeof(bad_rows) / sizeof(bad_rows[0]); i++) {
		int rc =
		    db_exec(tdb, bad_rows[i].sql, 0, NULL, err, sizeof(err));
		ck_assert_msg(rc == -1, "%s was accepted", bad_rows[i].what);
		ck_assert_msg(strcmp(db_sqlstate(tdb), bad_rows[i].state) == 0,
		    "%s: %s", bad_rows[i].what, err);
		ck_assert_int_eq(db_error(tdb),
		    bad_rows[i].state[4] == '5' ? DB_ERR_UNIQUE
		                                : DB_ERR_CONSTRAINT);
	}
	value_is(tdb, "SELECT count(*) FROM schedules", "1");
	value_is(tdb, "SELECT count(*) FROM runs", "1");
	teardown();
}
END_TEST

START_TEST(test_errors_carry_sqlstate)
{
	setup();
	ck_assert_int_eq(
	    db_exec(tdb, "SELECT 1/0", 0, NULL, err, sizeof(err)), -1);
	ck_assert_str_eq(db_sqlstate(tdb), "22012");
	ck_assert_int_eq(db_error(tdb), DB_ERR_OTHER);
	ck_assert_msg(
	    strstr(err, "division by zero (SQLSTATE 22012)"), "%s", err);
	ck_assert_ptr_null(db_query(tdb, "SELEC 1", 0, NULL, err, sizeof(err)));
	ck_assert_str_eq(db_sqlstate(tdb), "42601");
	must(tdb, "SELECT 1");
	ck_assert_str_eq(db_sqlstate(tdb), "");
	ck_assert_int_eq(db_error(tdb), DB_ERR_NONE);
	teardown();
}
END_TEST

START_TEST(test_values_and_params)
{
	const char *params[3] = {"h\xc3\xa9 'x'", "41", NULL};
	struct db_rows *r;

	setup();
	r = db_query(tdb,
	    "SELECT $1::text, $2::int + 1, $3::text IS NULL, "
	    "NULL::text, ''::text",
	    3, params, err, sizeof(err));
	ck_assert_msg(r != NULL, "%s", err);
	ck_assert_int_eq(db_rows_count(r), 1);
	ck_assert_int_eq(db_rows_columns(r), 5);
	ck_assert_str_eq(db_rows_value(r, 0, 0), "h\xc3\xa9 'x'");
	ck_assert_str_eq(db_rows_value(r, 0, 1), "42");
	ck_assert_str_eq(db_rows_value(r, 0, 2), "t");
	ck_assert_ptr_null(db_rows_value(r, 0, 3));
	ck_assert_str_eq(db_rows_value(r, 0, 4), "");
	ck_assert_ptr_null(db_rows_value(r, 1, 0));
	ck_assert_ptr_null(db_rows_value(r, 0, 5));
	ck_assert_ptr_null(db_rows_value(r, -1, 0));
	db_rows_free(r);
	must(tdb, "CREATE TABLE t (n int)");
	ck_assert_int_eq(db_exec(tdb,
	                     "INSERT INTO t SELECT generate_series"
	                     "(1, $1::int)",
	                     1, params + 1, err, sizeof(err)),
	    41);
	r = db_query(
	    tdb, "SELECT n FROM t WHERE n > 100", 0, NULL, err, sizeof(err));
	ck_assert_int_eq(db_rows_count(r), 0);
	db_rows_free(r);
	teardown();
}
END_TEST

START_TEST(test_transactions)
{
	setup();
	must(tdb, "CREATE TABLE t (n int PRIMARY KEY)");
	ck_assert_int_eq(db_begin(tdb, err, sizeof(err)), 0);
	must(tdb, "INSERT INTO t VALUES (1)");
	ck_assert_int_eq(db_rollback(tdb), 0);
	value_is(tdb, "SELECT count(*) FROM t", "0");
	ck_assert_int_eq(db_begin(tdb, err, sizeof(err)), 0);
	must(tdb, "INSERT INTO t VALUES (2)");
	ck_assert_int_eq(db_commit(tdb, err, sizeof(err)), 0);
	value_is(tdb, "SELECT count(*) FROM t", "1");
	/* A failed statement dooms the transaction: COMMIT must say so. */
	ck_assert_int_eq(db_begin(tdb, err, sizeof(err)), 0);
	must(tdb, "INSERT INTO t VALUES (3)");
	ck_assert_int_eq(
	    db_exec(tdb, "INSERT INTO t VALUES (2)", 0, NULL, err, sizeof(err)),
	    -1);
	ck_assert_int_eq(db_error(tdb), DB_ERR_UNIQUE);
	ck_assert_int_eq(db_commit(tdb, err, sizeof(err)), -1);
	ck_assert_str_eq(db_sqlstate(tdb), "25P02");
	value_is(tdb, "SELECT string_agg(n::text, ',') FROM t", "2");
	/* db_rollback keeps the failure that led to it. */
	ck_assert_int_eq(db_begin(tdb, err, sizeof(err)), 0);
	db_exec(tdb, "SELECT 1/0", 0, NULL, NULL, 0);
	ck_assert_int_eq(db_rollback(tdb), 0);
	ck_assert_str_eq(db_sqlstate(tdb), "22012");
	teardown();
}
END_TEST

struct seen {
	int n;            /* notifications seen */
	char channel[64]; /* the last one's channel */
	char payload[64]; /* and payload */
};

static void
on_notify(const char *channel, const char *payload, void *arg)
{
	struct seen *s = arg;

	s->n++;
	snprintf(s->channel, sizeof(s->channel), "%s", channel);
	snprintf(s->payload, sizeof(s->payload), "%s", payload);
}

/* Waits up to ms for db's socket to be readable, then drains it. */
static int
wait_notifies(struct db *db, int ms, struct seen *s)
{
	struct pollfd p = {.fd = db_fd(db), .events = POLLIN};

	if (poll(&p, 1, ms) < 0)
		return -1;
	return db_notifies(db, on_notify, s, err, sizeof(err));
}

START_TEST(test_listen_notify)
{
	struct seen s = {0};
	struct db *other;

	setup();
	other = db_open(test_ci, err, sizeof(err));
	ck_assert_msg(other != NULL, "%s", err);
	ck_assert_int_eq(db_listen(tdb, "cronvisor_wake", err, sizeof(err)), 0);
	ck_assert_int_eq(db_listen(tdb, "Wake Up", err, sizeof(err)), 0);
	ck_assert_int_eq(db_begin(other, err, sizeof(err)), 0);
	ck_assert_int_eq(
	    db_notify(other, "cronvisor_wake", "s1", err, sizeof(err)), 0);
	ck_assert_int_eq(wait_notifies(tdb, 200, &s), 0); /* not committed */
	ck_assert_int_eq(db_commit(other, err, sizeof(err)), 0);
	ck_assert_int_eq(wait_notifies(tdb, 5000, &s), 1);
	ck_assert_str_eq(s.channel, "cronvisor_wake");
	ck_assert_str_eq(s.payload, "s1");
	ck_assert_int_eq(
	    db_notify(other, "Wake Up", NULL, err, sizeof(err)), 0);
	ck_assert_int_eq(wait_notifies(tdb, 5000, &s), 1);
	ck_assert_str_eq(s.channel, "Wake Up");
	ck_assert_str_eq(s.payload, "");
	/* Its own notification is not delivered to the connection. */
	ck_assert_int_eq(
	    db_notify(tdb, "cronvisor_wake", "mine", err, sizeof(err)), 0);
	ck_assert_int_eq(
	    db_notify(other, "cronvisor_wake", "theirs", err, sizeof(err)), 0);
	ck_assert_int_eq(wait_notifies(tdb, 5000, &s), 1);
	ck_assert_str_eq(s.payload, "theirs");
	db_close(other);
	teardown();
}
END_TEST

/* Kills tdb's backend from a second connection, as a restart would. */
static void
kill_backend(void)
{
	char *pid = value(tdb, "SELECT pg_backend_pid()");
	const char *params[1] = {pid};
	struct db *other = db_open(test_ci, err, sizeof(err));

	ck_assert_msg(other != NULL, "%s", err);
	ck_assert_int_eq(db_exec(other, "SELECT pg_terminate_backend($1::int)",
	                     1, params, err, sizeof(err)),
	    1);
	db_close(other);
	free(pid);
}

START_TEST(test_connection_loss)
{
	struct seen s = {0};
	struct db *other;
	int rc = 0;

	setup();
	ck_assert_int_eq(db_listen(tdb, "cronvisor_wake", err, sizeof(err)), 0);
	kill_backend();
	ck_assert_int_eq(
	    db_exec(tdb, "SELECT 1", 0, NULL, err, sizeof(err)), -1);
	ck_assert_int_eq(db_error(tdb), DB_ERR_CONNECTION);
	ck_assert_msg(
	    strstr(err, "(SQLSTATE 57P01)") || strstr(err, "(SQLSTATE 08006)"),
	    "%s", err);
	ck_assert_int_eq(db_ok(tdb), 0);
	ck_assert_int_eq(db_reset(tdb, err, sizeof(err)), 0);
	ck_assert_int_eq(db_ok(tdb), 1);
	value_is(tdb, "SELECT 41 + 1", "42");
	/* The LISTEN came back with the new session. */
	other = db_open(test_ci, err, sizeof(err));
	ck_assert_int_eq(
	    db_notify(other, "cronvisor_wake", "back", err, sizeof(err)), 0);
	ck_assert_int_eq(wait_notifies(tdb, 5000, &s), 1);
	ck_assert_str_eq(s.payload, "back");
	db_close(other);
	/*
	 * An idle LISTEN connection notices the loss in db_notifies, as an
	 * event loop would: the server's FATAL message may come in one read
	 * and the end of the stream in the next.
	 */
	kill_backend();
	for (int i = 0; i < 50 && rc != -1; i++)
		rc = wait_notifies(tdb, 100, &s);
	ck_assert_int_eq(rc, -1);
	ck_assert_int_eq(db_error(tdb), DB_ERR_CONNECTION);
	ck_assert_int_eq(db_reset(tdb, err, sizeof(err)), 0);
	teardown();
}
END_TEST

START_TEST(test_no_password_in_errors)
{
	static const char *bad[] = {
	    "host=/nonexistent user=bob password=s3cretpw",
	    "host=/nonexistent user=bob password='s3cret pw'",
	    "postgresql://bob:s3cretpw@/db?host=/nonexistent",
	    "postgresql://bob:s3cret%20pw@localhost:99x/db",
	    "postgresql://bob:s3cretpw@localhost/db?port=s3cretpw",
	    "host=/nonexistent password=s3cretpw port=s3cretpw",
	    "postgresql://bob:s3cretpw@h/db?bogus",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct db *db = db_open(bad[i], err, sizeof(err));

		ck_assert_ptr_null(db);
		ck_assert_msg(strstr(err, "cannot connect") != NULL, "%s", err);
		ck_assert_msg(strstr(err, "s3cret") == NULL, "%s", err);
	}
}
END_TEST

static Suite *
db_suite(void)
{
	Suite *s = suite_create("db");
	TCase *tc = tcase_create("migrate");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_migrate_applies);
	tcase_add_test(tc, test_migrate_idempotent);
	tcase_add_test(tc, test_migrate_concurrent);
	tcase_add_test(tc, test_migrate_newer_refused);
	tcase_add_test(tc, test_constraints);
	suite_add_tcase(s, tc);
	tc = tcase_create("wrapper");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_errors_carry_sqlstate);
	tcase_add_test(tc, test_values_and_params);
	tcase_add_test(tc, test_transactions);
	tcase_add_test(tc, test_listen_notify);
	tcase_add_test(tc, test_connection_loss);
	tcase_add_test(tc, test_no_password_in_errors);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	log_init("check_db", LOG_LEVEL_WARN);
	return cvtest_run(db_suite());
}
