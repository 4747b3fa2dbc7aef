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

-- A run's job (trigger runs_job, 007): the insert of a run that starts
-- (not a slot that did not run) finds its job, or makes its execution and
-- job.  A run given a job_id is an attempt of that job (an agent's,
-- made first).  A retry of a slot (attempt > 0) is an attempt of the
-- slot's job; a trigger-now run is an execution of its own.  A run whose
-- (schedule, slot, attempt) exists already is refused by runs' unique key
-- (ON CONFLICT DO NOTHING in the claim): it touches no job either.
CREATE OR REPLACE FUNCTION cronvisor_run_job() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    x uuid;
    j uuid;
BEGIN
    IF NEW.status IN ('skipped', 'missed', 'expired') THEN
        RETURN NEW;
    END IF;
    IF NEW.job_id IS NULL THEN
        IF NOT NEW.triggered THEN
            IF EXISTS (SELECT 1 FROM runs
                       WHERE schedule_id = NEW.schedule_id
                         AND slot_at = NEW.slot_at
                         AND attempt = NEW.attempt AND NOT triggered) THEN
                RETURN NEW;
            END IF;
            SELECT id INTO x FROM executions
            WHERE schedule_id = NEW.schedule_id AND slot_at = NEW.slot_at
              AND trigger_run IS NULL;
        END IF;
        IF x IS NULL THEN
            INSERT INTO executions (schedule_id, slot_at, trigger_run,
                                    jobs_created, jobs_enqueued)
            VALUES (NEW.schedule_id, NEW.slot_at,
                    CASE WHEN NEW.triggered THEN NEW.id END, 1, 1)
            RETURNING id INTO x;
            INSERT INTO jobs (execution_id, schedule_id, status, enqueued_at)
            VALUES (x, NEW.schedule_id, 'running', now())
            RETURNING id INTO j;
            NEW.job_id := j;
            RETURN NEW;
        END IF;
        SELECT id INTO NEW.job_id FROM jobs
        WHERE execution_id = x AND job_key = '';
    END IF;
    IF NEW.status = 'running' THEN
        UPDATE jobs SET status = 'running', finished_at = NULL,
                        wait_reason = NULL, updated_at = now()
        WHERE id = NEW.job_id;
    END IF;
    RETURN NEW;
END $$;

-- An executions row as the API returns it (docs/executions.md), with
-- its jobs counted by status.
CREATE OR REPLACE FUNCTION cronvisor_execution_json(x executions) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT (to_jsonb(x) - ARRAY['trigger_run'])
        || jsonb_build_object(
               'slot_at', cronvisor_time(x.slot_at),
               'created_at', cronvisor_time(x.created_at),
               'updated_at', cronvisor_time(x.updated_at),
               'finished_at', cronvisor_time(x.finished_at),
               'triggered', x.trigger_run IS NOT NULL)
$$;

CREATE OR REPLACE FUNCTION cronvisor_execution_counts(x uuid) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
               'pending', count(*) FILTER (WHERE status = 'pending'),
               'running', count(*) FILTER (WHERE status = 'running'),
               'completed', count(*) FILTER (WHERE status = 'completed'),
               'failed', count(*) FILTER (WHERE status = 'failed'))
    FROM jobs WHERE execution_id = x
$$;

-- A jobs row as the API returns it; attempts is how many runs it had.
CREATE OR REPLACE FUNCTION cronvisor_job_json(j jobs) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT (to_jsonb(j) - ARRAY['job_key'])
        || jsonb_build_object(
               'job_id', j.id,
               'enqueued_at', cronvisor_time(j.enqueued_at),
               'created_at', cronvisor_time(j.created_at),
               'updated_at', cronvisor_time(j.updated_at),
               'finished_at', cronvisor_time(j.finished_at),
               'attempt_count', (SELECT count(*) FROM runs r
                                 WHERE r.job_id = j.id))
$$;
