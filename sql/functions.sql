-- functions.sql: the live definition of every SQL function of cronvisor.
-- `cronvisorctl db migrate` applies this file after the numbered
-- migrations, every time, in the same session and under the same lock,
-- in a transaction of its own (common/migrate.c): what is here is what
-- the database runs, whichever migration created or last changed a
-- function.  Migrations are history and keep the definitions they had; a
-- change to a function is made here, and only a new function's first
-- definition (or a change of its arguments or result type, which CREATE
-- OR REPLACE cannot make) needs a migration, which this file then
-- follows.  So every statement here is CREATE OR REPLACE, over the
-- schema of the newest migration.

-- Supervisors sleep until the earliest next_run_at; whatever moves a
-- schedule's next_run_at (the API, cronvisorctl, a hand-written UPDATE)
-- wakes them in the same transaction (trigger schedules_wake, 001).
-- Identical notifications of one transaction are folded into one by
-- PostgreSQL.
CREATE OR REPLACE FUNCTION cronvisor_wake() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = 'active' AND NEW.next_run_at IS NOT NULL AND
       (TG_OP = 'INSERT' OR NEW.next_run_at IS DISTINCT FROM OLD.next_run_at
        OR NEW.status IS DISTINCT FROM OLD.status) THEN
        PERFORM pg_notify('cronvisor_wake', '');
    END IF;
    RETURN NULL;
END $$;

-- A trigger-now request wakes the supervisors (trigger triggers_wake,
-- 002).
CREATE OR REPLACE FUNCTION cronvisor_trigger_wake() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('cronvisor_wake', '');
    RETURN NULL;
END $$;

-- Times as the API shows them: RFC 3339 in UTC, milliseconds when the
-- instant has a fraction of a second.
CREATE OR REPLACE FUNCTION cronvisor_time(t timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') ||
           CASE WHEN date_trunc('second', t) = t THEN ''
                ELSE to_char(t AT TIME ZONE 'UTC', '.MS') END || 'Z'
$$;

-- A schedules row as JSON: its columns under their own names (which are
-- the schedule document's), times formatted, internal columns left out.
-- The API reads the document fields back through common/schedule.c.
CREATE OR REPLACE FUNCTION cronvisor_schedule_json(s schedules) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT (to_jsonb(s) - ARRAY['id8', 'next_slot_at', 'slot_seq', 'running',
                                'retry_pending', 'config_hash',
                                'deleted_at', 'idempotency_key',
                                'idempotency_hash'])
        || jsonb_build_object(
               'at', cronvisor_time(s.at),
               'start_at', cronvisor_time(s.start_at),
               'last_run_at', cronvisor_time(s.last_run_at),
               'next_run_at', cronvisor_time(s.next_run_at),
               'created_at', cronvisor_time(s.created_at),
               'updated_at', cronvisor_time(s.updated_at),
               'runs_in_flight', s.running)
$$;

-- A runs row as the API returns it (docs/schedules.md, "Runs");
-- supervisor is the name of the supervisor that ran it.
CREATE OR REPLACE FUNCTION cronvisor_run_json(r runs) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT (to_jsonb(r) - ARRAY['supervisor_id', 'pid', 'created_at'])
        || jsonb_build_object(
               'slot_at', cronvisor_time(r.slot_at),
               'started_at', cronvisor_time(r.started_at),
               'finished_at', cronvisor_time(r.finished_at),
               'supervisor', (SELECT name FROM supervisors
                              WHERE id = r.supervisor_id))
$$;
