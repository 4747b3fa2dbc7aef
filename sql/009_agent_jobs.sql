-- 009_agent_jobs.sql: schedules that invoke agents (docs/agents.md).  An
-- agent job's attempt is a run: the supervisor POSTs to the agent from a
-- forked runner, as it does for an http target.  An agent that answers
-- 202 leaves the attempt `waiting` (no lease: a supervisor that dies
-- meanwhile loses nothing) until it reports through the API with the
-- attempt's token (cronvisor_job_report(), functions.sql), or until the
-- attempt expires (its deadline, or a heartbeat it owed).  Any supervisor
-- then takes the attempt back (`running` under its lease) and records its
-- end as it records any run's.

ALTER TABLE schedules ADD COLUMN priority integer NOT NULL DEFAULT 0
    CHECK (priority BETWEEN -1000000 AND 1000000);

ALTER TABLE runs DROP CONSTRAINT runs_status_check;
ALTER TABLE runs ADD CONSTRAINT runs_status_check CHECK (status IN (
    'running', 'waiting', 'succeeded', 'failed', 'timed_out', 'lost',
    'interrupted', 'crashed', 'protocol_error', 'skipped', 'missed',
    'expired'));
ALTER TABLE runs
    ADD COLUMN result        jsonb,       -- what the agent returned
    ADD COLUMN callback_hash bytea,       -- sha256 of the attempt's token
    ADD COLUMN deadline_at   timestamptz, -- the attempt may not end later
    ADD COLUMN heartbeat_seconds integer, -- owed while waiting, or NULL
    ADD COLUMN heartbeat_at  timestamptz, -- the last one
    ADD COLUMN expires_at    timestamptz, -- waiting: deadline or heartbeat
    ADD COLUMN report        jsonb,       -- {status, result, error}
    ADD COLUMN reported_at   timestamptz;
-- The attempts a supervisor takes back: reported, or expired.
CREATE INDEX runs_waiting ON runs (expires_at) WHERE status = 'waiting';

-- The first definition of cronvisor_job_report(); functions.sql has the
-- live one.  It runs as its owner, so that an agent's database role may
-- report through it with EXECUTE and no grant on any table.
CREATE FUNCTION cronvisor_job_report(p_job uuid, p_token text, p_kind text,
    p_status text, p_result jsonb, p_error jsonb)
RETURNS text LANGUAGE sql SECURITY DEFINER AS $$ SELECT 'unauthorized' $$;
REVOKE ALL ON FUNCTION cronvisor_job_report(uuid, text, text, text, jsonb,
    jsonb) FROM PUBLIC;
