-- 007_executions.sql: executions and jobs (seed 004's ScheduleExecution
-- and AgentJobExecution, docs/executions.md).  A slot that runs, or a
-- trigger-now request, is one execution; an execution has jobs; a job has
-- attempts, which are the runs of 001.  A command or HTTP schedule's
-- execution has one job, whose attempts are its slot's run and retries.
-- The rows are made by the insert of a job's first run (the trigger
-- runs_job, cronvisor_run_job() in functions.sql), so every statement that
-- starts a run makes them, and are ended with the run's result
-- (finish_jobs, sql/queries/finish.sql).

CREATE TABLE executions (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    schedule_id  uuid NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    slot_at      timestamptz NOT NULL,  -- the slot, or a trigger's time
    trigger_run  text,                  -- a trigger-now request's run
    status       text NOT NULL DEFAULT 'running'
                 CHECK (status IN ('running', 'success', 'partial', 'failed')),
    jobs_created integer NOT NULL DEFAULT 0 CHECK (jobs_created >= 0),
    jobs_enqueued integer NOT NULL DEFAULT 0 CHECK (jobs_enqueued >= 0),
    errors       jsonb NOT NULL DEFAULT '[]',   -- [{message, at}]
    metadata     jsonb NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz,
    CHECK (jsonb_typeof(errors) = 'array'),
    CHECK (jsonb_typeof(metadata) = 'object')
);
-- A slot is one execution; a trigger-now run is one of its own.
CREATE UNIQUE INDEX executions_slot ON executions (schedule_id, slot_at)
    WHERE trigger_run IS NULL;
CREATE UNIQUE INDEX executions_trigger ON executions (trigger_run)
    WHERE trigger_run IS NOT NULL;
CREATE INDEX executions_schedule ON executions (schedule_id, created_at DESC, id DESC);
CREATE INDEX executions_recent ON executions (created_at DESC, id DESC);

CREATE TABLE jobs (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    execution_id     uuid NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    schedule_id      uuid NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    job_key          text NOT NULL DEFAULT '',  -- unique within the execution
    agent_id         text,
    agent_version    text,
    pipeline_id      text,
    pipeline_step_id text,
    status           text NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'running', 'completed', 'failed')),
    priority         integer NOT NULL DEFAULT 0,
    enqueued_at      timestamptz,
    dependencies     uuid[] NOT NULL DEFAULT '{}',
    params           jsonb NOT NULL DEFAULT '{}',
    result           jsonb,
    error            jsonb,                      -- {message, retryable}
    wait_reason      text,                       -- why a pending job waits
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz,
    UNIQUE (execution_id, job_key)
);
CREATE INDEX jobs_execution ON jobs (execution_id, created_at, id);

-- A run is an attempt of a job.  Slots that did not run (skipped,
-- missed, expired) have no job.  No foreign key: history retention
-- deletes runs and executions each by its own count (prune.sql).
ALTER TABLE runs ADD COLUMN job_id uuid;
CREATE INDEX runs_job ON runs (job_id, attempt) WHERE job_id IS NOT NULL;

-- The history before this migration: one execution and one job per slot
-- that ran (and per trigger-now run), ended as its last attempt ended.
WITH x AS (
    SELECT r.schedule_id, r.slot_at,
           CASE WHEN r.triggered THEN r.id END AS trigger_run,
           min(r.created_at) AS created_at,
           max(r.finished_at) AS finished_at,
           bool_or(r.status = 'running') AS running,
           bool_or(NOT r.triggered AND EXISTS (
               SELECT 1 FROM retries q
               WHERE q.schedule_id = r.schedule_id
                 AND q.slot_at = r.slot_at)) AS waiting,
           bool_or(r.status = 'succeeded') AS ok,
           (array_agg(r.error ORDER BY r.attempt DESC))[1] AS last_error
    FROM runs r
    WHERE r.status NOT IN ('skipped', 'missed', 'expired')
    GROUP BY r.schedule_id, r.slot_at, CASE WHEN r.triggered THEN r.id END),
e AS (
    INSERT INTO executions (schedule_id, slot_at, trigger_run, status,
                            jobs_created, jobs_enqueued, errors,
                            created_at, updated_at, finished_at)
    SELECT schedule_id, slot_at, trigger_run,
           CASE WHEN running OR waiting THEN 'running'
                WHEN ok THEN 'success' ELSE 'failed' END, 1, 1,
           CASE WHEN running OR waiting OR ok OR last_error IS NULL
                THEN '[]'::jsonb
                ELSE jsonb_build_array(jsonb_build_object(
                         'message', last_error,
                         'at', cronvisor_time(finished_at))) END,
           created_at, coalesce(finished_at, created_at),
           CASE WHEN NOT (running OR waiting) THEN finished_at END
    FROM x
    RETURNING id, schedule_id, slot_at, trigger_run, status, created_at,
              finished_at, errors),
w AS (
    SELECT e.*, x.running
    FROM e JOIN x ON x.schedule_id = e.schedule_id AND x.slot_at = e.slot_at
                 AND x.trigger_run IS NOT DISTINCT FROM e.trigger_run)
INSERT INTO jobs (execution_id, schedule_id, status, enqueued_at, error,
                  created_at, updated_at, finished_at)
SELECT id, schedule_id,
       CASE WHEN running THEN 'running' WHEN status = 'running' THEN 'pending'
            WHEN status = 'success' THEN 'completed' ELSE 'failed' END,
       created_at,
       CASE WHEN status = 'failed'
            THEN jsonb_build_object('message', errors -> 0 -> 'message',
                                    'retryable', false) END,
       created_at, coalesce(finished_at, created_at), finished_at
FROM w;

UPDATE runs r SET job_id = j.id
FROM executions e JOIN jobs j ON j.execution_id = e.id
WHERE r.schedule_id = e.schedule_id AND r.slot_at = e.slot_at
  AND r.status NOT IN ('skipped', 'missed', 'expired')
  AND CASE WHEN r.triggered THEN e.trigger_run = r.id
           ELSE e.trigger_run IS NULL END;

-- The first definition of cronvisor_run_job(); functions.sql has the
-- live one.
CREATE FUNCTION cronvisor_run_job() RETURNS trigger
LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER runs_job BEFORE INSERT ON runs
    FOR EACH ROW EXECUTE FUNCTION cronvisor_run_job();
