-- 002_api.sql: what the REST API needs: tokens (stored only as their
-- SHA-256), trigger-now requests the supervisors claim, deletion that waits
-- for the runs in flight, and the JSON shapes of schedules and runs.

-- A bearer token belongs to an owner and has a role: admin (every owner),
-- editor (reads and writes its owner's schedules), viewer (reads them).
-- The token text itself is never stored: only sha256() of it, computed by
-- PostgreSQL; `prefix` (its first characters) tells tokens apart in lists.
CREATE TABLE tokens (
    id           bigserial PRIMARY KEY,
    hash         bytea NOT NULL UNIQUE CHECK (length(hash) = 32),
    prefix       text NOT NULL,
    owner        text NOT NULL CHECK (length(owner) BETWEEN 1 AND 200),
    role         text NOT NULL CHECK (role IN ('admin', 'editor', 'viewer')),
    note         text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    revoked_at   timestamptz
);

-- POST /schedules/{id}/trigger: one run now, outside the slot sequence.
-- A supervisor claims the row (FOR UPDATE SKIP LOCKED, with its schedule),
-- inserts the run sched-<id8>-t<id> and deletes the row, in one
-- transaction.  payload NULL: the schedule's trigger_payload.
CREATE TABLE triggers (
    id           bigserial PRIMARY KEY,
    schedule_id  uuid NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    payload      jsonb,
    requested_by text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX triggers_schedule ON triggers (schedule_id);

-- A triggered run has no slot: its slot_at is the request's time, which
-- the requests of one transaction share.  Only slot runs are unique on
-- (schedule, slot, attempt); a triggered run is unique by its id.
ALTER TABLE runs DROP CONSTRAINT runs_schedule_id_slot_at_attempt_key;
CREATE UNIQUE INDEX runs_slot ON runs (schedule_id, slot_at, attempt)
    WHERE NOT triggered;

CREATE FUNCTION cronvisor_trigger_wake() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('cronvisor_wake', '');
    RETURN NULL;
END $$;
CREATE TRIGGER triggers_wake AFTER INSERT ON triggers
    FOR EACH ROW EXECUTE FUNCTION cronvisor_trigger_wake();

-- DELETE of a schedule with runs in flight: the row stays, hidden from the
-- API, paused and with nothing due, until the last of them is recorded;
-- the supervisor that records it deletes the row (and its history).
ALTER TABLE schedules ADD COLUMN deleted_at timestamptz;
ALTER TABLE schedules ADD CHECK (deleted_at IS NULL OR status <> 'active');

-- The heartbeat's sweep of deleted schedules whose last run ended.
CREATE INDEX schedules_deleted ON schedules (id) WHERE deleted_at IS NOT NULL;

-- An admin's list of every owner's schedules pages in creation order.
CREATE INDEX schedules_created ON schedules (created_at, id);

-- Times as the API shows them: RFC 3339 in UTC, milliseconds when the
-- instant has a fraction of a second.
CREATE FUNCTION cronvisor_time(t timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') ||
           CASE WHEN date_trunc('second', t) = t THEN ''
                ELSE to_char(t AT TIME ZONE 'UTC', '.MS') END || 'Z'
$$;

-- A schedules row as JSON: its columns under their own names (which are
-- the schedule document's), times formatted, internal columns left out.
-- The API reads the document fields back through common/schedule.c.
CREATE FUNCTION cronvisor_schedule_json(s schedules) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT (to_jsonb(s) - ARRAY['id8', 'next_slot_at', 'slot_seq', 'running',
                                'retry_pending', 'retry_repeat', 'config_hash',
                                'deleted_at'])
        || jsonb_build_object(
               'at', cronvisor_time(s.at),
               'start_at', cronvisor_time(s.start_at),
               'last_run_at', cronvisor_time(s.last_run_at),
               'next_run_at', cronvisor_time(s.next_run_at),
               'created_at', cronvisor_time(s.created_at),
               'updated_at', cronvisor_time(s.updated_at),
               'runs_in_flight', s.running)
$$;

-- A runs row as the API returns it (ARCHITECTURE.md, "A run"); supervisor
-- is the name of the supervisor that ran it.
CREATE FUNCTION cronvisor_run_json(r runs) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT (to_jsonb(r) - ARRAY['supervisor_id', 'pid', 'created_at'])
        || jsonb_build_object(
               'slot_at', cronvisor_time(r.slot_at),
               'started_at', cronvisor_time(r.started_at),
               'finished_at', cronvisor_time(r.finished_at),
               'supervisor', (SELECT name FROM supervisors
                              WHERE id = r.supervisor_id))
$$;
