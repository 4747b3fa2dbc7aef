-- Live events (docs/events.md): every transition of a run, a job, an
-- execution and a schedule, written by the statement that made it (the
-- triggers below, in its transaction: committed with it or not at all),
-- then numbered after the commit by the one sequencer of the cluster
-- (cronvisor_events_sequence(), called by the events worker of the
-- supervisor that holds the leader lock): seq is gap-free and in the
-- order of numbering, so a consumer that saw seq N resumes with N + 1.
-- id is the order of insertion only (a sequence: gaps, and not the order
-- of commit).
CREATE TABLE events (
    id          bigserial PRIMARY KEY,
    seq         bigint UNIQUE,                 -- NULL until numbered
    at          timestamptz NOT NULL DEFAULT now(),
    type        text NOT NULL,                 -- run.started, job.status, ...
    owner       text NOT NULL,                 -- whose schedule
    schedule_id uuid,                          -- no foreign key: kept after it
    subject     text NOT NULL,                 -- the run, job, execution or schedule
    data        jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX events_unnumbered ON events (id) WHERE seq IS NULL;
CREATE INDEX events_owner ON events (owner, seq) WHERE seq IS NOT NULL;

-- The sequencer's counter: the last seq given, one row.
CREATE TABLE events_state (
    one      boolean PRIMARY KEY DEFAULT true CHECK (one),
    last_seq bigint NOT NULL DEFAULT 0 CHECK (last_seq >= 0)
);
INSERT INTO events_state DEFAULT VALUES;

-- The triggers' functions, defined for real by functions.sql (applied
-- right after the migrations, in the same run).
CREATE FUNCTION cronvisor_events_runs() RETURNS trigger
LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE FUNCTION cronvisor_events_jobs() RETURNS trigger
LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE FUNCTION cronvisor_events_executions() RETURNS trigger
LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE FUNCTION cronvisor_events_schedules() RETURNS trigger
LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;

-- One trigger per statement, over all the rows it wrote (transition
-- tables): a claim of 256 jobs writes its events in one INSERT.
CREATE TRIGGER runs_events_insert AFTER INSERT ON runs
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION cronvisor_events_runs();
CREATE TRIGGER runs_events_update AFTER UPDATE ON runs
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION cronvisor_events_runs();
CREATE TRIGGER jobs_events_insert AFTER INSERT ON jobs
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION cronvisor_events_jobs();
CREATE TRIGGER jobs_events_update AFTER UPDATE ON jobs
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION cronvisor_events_jobs();
CREATE TRIGGER executions_events_insert AFTER INSERT ON executions
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION cronvisor_events_executions();
CREATE TRIGGER executions_events_update AFTER UPDATE ON executions
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION cronvisor_events_executions();
CREATE TRIGGER schedules_events_insert AFTER INSERT ON schedules
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION cronvisor_events_schedules();
CREATE TRIGGER schedules_events_update AFTER UPDATE ON schedules
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION cronvisor_events_schedules();
CREATE TRIGGER schedules_events_delete AFTER DELETE ON schedules
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION cronvisor_events_schedules();
