-- 013_fanout.sql: executions of many jobs (docs/orchestration.md,
-- "Fan-out").  A schedule whose agent target has a data-source param
-- expands it when its slot fires: the slot's attempt (kind 'fanout')
-- reads the values and writes the plan, a job per value whose ready_at is
-- its batch's planned start, then waits (status waiting, no lease) until
-- its jobs have ended.  The attempts of those jobs are runs too (kind
-- 'job'), claimed when their ready_at comes, each under a lease like any
-- run; the end of the last one reports the fanout attempt, which then
-- ends as its execution did and moves its schedule on.

ALTER TABLE runs ADD COLUMN kind text NOT NULL DEFAULT 'slot'
    CHECK (kind IN ('slot', 'fanout', 'job'));

-- A job's attempts share their execution's slot: a slot's attempts stay
-- unique on (schedule, slot, attempt), a job's on (job, attempt).
CREATE UNIQUE INDEX runs_slot_attempt ON runs (schedule_id, slot_at, attempt)
    WHERE NOT triggered AND kind <> 'job';
DROP INDEX runs_slot;
ALTER INDEX runs_slot_attempt RENAME TO runs_slot;
CREATE UNIQUE INDEX runs_job_attempt ON runs (job_id, attempt)
    WHERE kind = 'job';

ALTER TABLE jobs
    ADD COLUMN seq      integer,      -- the value's place in the expansion
    ADD COLUMN batch    integer,      -- its batch
    ADD COLUMN item     jsonb,        -- the value
    ADD COLUMN ready_at timestamptz,  -- pending: when it may start
    ADD COLUMN attempts integer NOT NULL DEFAULT 0,  -- runs it had
    ADD COLUMN spent    integer NOT NULL DEFAULT 0;  -- failures counted
-- An execution's jobs still open (whether it has ended).
CREATE INDEX jobs_open ON jobs (execution_id)
    WHERE status IN ('pending', 'running');
-- The claim's: pending jobs by when they may start.
CREATE INDEX jobs_ready ON jobs (ready_at)
    WHERE status = 'pending' AND ready_at IS NOT NULL;

-- The fanout attempt that waits for the execution's jobs.
ALTER TABLE executions ADD COLUMN run_id text;
CREATE INDEX executions_run ON executions (run_id) WHERE run_id IS NOT NULL;
