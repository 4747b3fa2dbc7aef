-- migrate.sql: the statements of common/migrate.c, which applies the
-- numbered migrations of sql/ and then sql/functions.sql, under a session
-- advisory lock, and reports where a database stands.

-- name: migrate_table
-- The record of the migrations applied, made by the first migrate.
CREATE TABLE IF NOT EXISTS cronvisor_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now());

-- name: migrate_version
SELECT max(version) FROM cronvisor_migrations;

-- name: migrate_versions
SELECT version FROM cronvisor_migrations ORDER BY version;

-- name: migrate_record
INSERT INTO cronvisor_migrations (version, name) VALUES ($1, $2);

-- name: migrate_lock
-- $1 the lock's key.  The lock is the session's: a lost connection
-- releases it.
SELECT pg_advisory_lock($1::bigint);

-- name: migrate_unlock
SELECT pg_advisory_unlock($1::bigint);

-- name: migrate_no_timeout
-- A migration may rewrite a large table, and the lock may be held by
-- another migration for as long: no statement time limit, nor one on a
-- transaction left idle meanwhile.
SET statement_timeout = 0;
SET idle_in_transaction_session_timeout = 0;

-- name: migrate_exists
-- Whether the database has a record of migrations at all.
SELECT to_regclass('cronvisor_migrations') IS NOT NULL;

-- name: migrate_status
SELECT version, name,
       to_char(applied_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
FROM cronvisor_migrations
ORDER BY version;
