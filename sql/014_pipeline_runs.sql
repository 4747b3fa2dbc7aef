-- 014_pipeline_runs.sql: schedules that run pipelines (docs/orchestration.md,
-- "When a pipeline runs").  A pipeline's slot is a fanout attempt, as a
-- fan-out's is: it writes a job per context (one per expanded value, or
-- one) and step, then waits for them.  A step's job waits, pending with
-- no ready_at, until the steps it depends on have ended; the supervisor
-- that ends one decides its context again (common/dag.c) and makes the
-- steps that may start ready, or records those that never will as
-- skipped, with why.

ALTER TABLE jobs
    ADD COLUMN context    integer,  -- a pipeline's: the context's place
    ADD COLUMN step       integer,  -- the step's place in the pipeline
    ADD COLUMN timeout_ms bigint,   -- the step's own timeout, if any
    ADD COLUMN retry      jsonb;    -- the step's own retry, if any
ALTER TABLE jobs DROP CONSTRAINT jobs_status_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_status_check
    CHECK (status IN ('pending', 'running', 'completed', 'failed',
                      'skipped'));
-- A context's steps, read each time one of them ends.
CREATE INDEX jobs_context ON jobs (execution_id, context, step)
    WHERE context IS NOT NULL;

-- A pipeline's execution whose steps wait to be decided by a supervisor:
-- the API's retry-failed makes failed steps wait again, and the next
-- claim decides their contexts (common/dag.c runs in the supervisor).
ALTER TABLE executions ADD COLUMN redecide boolean NOT NULL DEFAULT false;
CREATE INDEX executions_redecide ON executions (id) WHERE redecide;
