-- datasources.sql: the statements of api/datasources.c (docs/orchestration.md,
-- "Fan-out"): registered tables and the preview of a data-source string.

-- columns: datasources_row
name,                                         -- name
relation,                                     -- relation
relation_sql,                                 -- relation_sql
key_column,                                   -- key
columns::text,                                -- columns
to_jsonb(owners)::text,                       -- owners
description,                                  -- description
created_by,                                   -- created_by
cronvisor_time(created_at)                    -- created_at

-- name: datasources_relation
-- The relation $1 ("table" or "schema.table", plain identifiers, checked
-- by the API) as its oid, quoted qualified name and kind, and whether the
-- role $2 exists; no row when there is no such relation.
SELECT c.oid::text, format('%I.%I', n.nspname, c.relname), c.relkind::text,
       EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $2)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.oid = to_regclass($1);

-- name: datasources_columns
-- The columns of relation $1 (an oid): name, quoted identifier, type, and
-- whether the role $2 may read it.
SELECT a.attname::text, quote_ident(a.attname), format_type(a.atttypid, a.atttypmod),
       has_column_privilege($2, $1::oid, a.attnum, 'SELECT')
FROM pg_attribute a
WHERE a.attrelid = $1::oid AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum;

-- name: datasources_insert
-- A registration: $1 name, $2 relation as given, $3 its quoted name, $4
-- the key's name, $5 the columns (JSON), $6 the owners (JSON array), $7
-- the description, $8 who.  No row back when the name is taken.
INSERT INTO data_sources (name, relation, relation_sql, key_column, columns,
                          owners, description, created_by)
SELECT $1, $2, $3, $4, $5::jsonb,
       ARRAY(SELECT jsonb_array_elements_text($6::jsonb)), $7, $8
ON CONFLICT DO NOTHING
RETURNING {{datasources_row}};

-- name: datasources_get
-- Registration $1, if owner $2 may use it (NULL: an admin, any).
SELECT {{datasources_row}}
FROM data_sources
WHERE name = $1 AND ($2::text IS NULL OR owners = '{}' OR $2 = ANY (owners));

-- name: datasources_list
-- The registrations owner $1 may use (NULL: an admin, all), by name.
SELECT {{datasources_row}}
FROM data_sources
WHERE $1::text IS NULL OR owners = '{}' OR $1 = ANY (owners)
ORDER BY name;

-- name: datasources_delete
DELETE FROM data_sources WHERE name = $1 RETURNING 1;

-- name: datasources_snapshot
-- The preview's transaction: one snapshot, read only.
BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY;

-- name: datasources_savepoint
-- The check of a schedule being saved, in its transaction.
SAVEPOINT cronvisor_source;

-- name: datasources_back
-- And its end: the role and the time limit go with it.
ROLLBACK TO SAVEPOINT cronvisor_source;

-- name: datasources_as_reader
-- Within it, the read-only role $1 and a time limit of $2 ms, and the
-- planner's defaults: the supervisor's session plans its own statements
-- with nested loops and indexes only (cronvisord_session), which a
-- registered view's joins may not suit.
SELECT set_config('role', $1, true), set_config('statement_timeout', $2, true),
       set_config('enable_seqscan', 'on', true),
       set_config('enable_bitmapscan', 'on', true),
       set_config('enable_hashjoin', 'on', true),
       set_config('enable_mergejoin', 'on', true),
       set_config('plan_cache_mode', 'auto', true);

-- name: datasources_schedule
-- Schedule $1 (not deleted) if owner $2 may see it (NULL: an admin): its
-- target and when it fires next (epoch ms, NULL: never).
SELECT target::text, floor(extract(epoch FROM next_run_at) * 1000)::bigint
FROM schedules
WHERE id = $1::uuid AND deleted_at IS NULL
  AND ($2::text IS NULL OR owner = $2);
