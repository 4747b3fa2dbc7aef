-- claim.sql: the statements of supervisor/claim.c, which turns due
-- schedules and trigger-now requests into runs, in one transaction per
-- claim.  Times of slots are epoch ms (slot_ms()): a slot keeps the
-- milliseconds of the instant the user gave.

-- name: claim_due
-- The due schedules, shared fairly between their owners: the first $4
-- due (by next_run_at, through schedules_due) are ranked within their
-- owner (the higher priority first, then by next_run_at), and the claim
-- takes the first of every owner, then the second of every owner, and so
-- on, each rank by priority and next_run_at.  A schedule whose agent has
-- no request to spare (max_concurrent_requests $5 in all, or its own;
-- cronvisor_agents_blocked(), computed once per claim) is passed over:
-- it stays due, and the claim that follows the end of a request takes
-- it, the highest priority first.  An owner
-- with a thousand schedules due cannot push another's one schedule out
-- of the batch.  The ranking picks twice as many as the claim may take
-- ($1; rows a peer holds are skipped), and only those are read again, by
-- their primary key, and locked: joined to every due row instead, a
-- claim of one row would read them all.
-- Due by $2, claim_ahead_ms from now ($3): a schedule with a run in
-- flight only by now, so that its overlap policy is decided at the
-- instant, when that run may have ended, and not a little before.  The
-- outer WHERE is the inner one again, checked on the row locked (a peer
-- may have moved it).
WITH blocked AS MATERIALIZED (SELECT * FROM cronvisor_agents_blocked($5))
SELECT {{sched}}
FROM unnest(ARRAY(
    SELECT due_id
    FROM (SELECT d.id AS due_id, d.next_run_at AS due_at, d.priority AS prio,
                 row_number() OVER (PARTITION BY d.owner
                                    ORDER BY d.priority DESC, d.next_run_at,
                                             d.id) AS due_rank
          FROM (SELECT id, owner, next_run_at, priority FROM schedules
                WHERE status = 'active' AND deleted_at IS NULL
                  AND next_run_at <= to_timestamp($2)
                  AND (running = 0 OR next_run_at <= to_timestamp($3))
                  AND NOT (target ->> 'type' = 'agent'
                           AND (EXISTS (SELECT 1 FROM blocked
                                        WHERE b_owner IS NULL)
                                OR (owner, coalesce(target ->> 'agent', '')) IN
                                   (SELECT b_owner, b_agent FROM blocked)))
                ORDER BY next_run_at LIMIT $4) d) r
    ORDER BY due_rank, prio DESC, due_at LIMIT 2 * $1::int))
    WITH ORDINALITY AS k(due_id, due_pos)
JOIN schedules ON schedules.id = k.due_id
WHERE status = 'active' AND deleted_at IS NULL
  AND next_run_at <= to_timestamp($2)
  AND (running = 0 OR next_run_at <= to_timestamp($3))
ORDER BY k.due_pos LIMIT $1
FOR UPDATE OF schedules SKIP LOCKED;

-- name: claim_owners
-- Runs in flight per owner, on every supervisor, from the rows that say
-- so (runs_running): a supervisor killed with runs in flight holds them
-- until a peer declares them lost, and leaks nothing after.
SELECT s.owner, count(*)
FROM runs r JOIN schedules s ON s.id = r.schedule_id
WHERE r.status = 'running'
GROUP BY s.owner;

-- name: claim_owner_wait
-- A run that may not be skipped, while its owner is at its limit: due
-- again $2 seconds later, and last_error ($3) says why it waits.
UPDATE schedules
SET next_run_at = now() + make_interval(secs => $2::int), last_error = $3,
    updated_at = now()
WHERE id = $1;

-- columns: claim_retry
floor(extract(epoch FROM slot_at))::bigint,           -- slot
(extract(epoch FROM slot_at) * 1000000)::bigint,      -- slot_us
repeat_number,                                        -- repeat
attempt,                                              -- attempt
(extract(epoch FROM due_at) * 1e6)::bigint            -- due_us

-- name: claim_retries
-- The retries of schedule $1 (locked by the claim) due by $2 (µs, the
-- claim's now plus claim_ahead_ms), the earliest first: one per slot
-- whose run failed with retries left (finish.sql), each run as that
-- slot's next attempt.
SELECT {{claim_retry}}
FROM retries
WHERE schedule_id = $1 AND due_at <= to_timestamp($2::float8 / 1e6)
ORDER BY due_at, slot_at;

-- name: claim_retry_taken
-- A retry started: its row goes ($2 its slot_us, compared as an integer:
-- a time through float8 may come back a microsecond off).
DELETE FROM retries
WHERE schedule_id = $1
  AND (extract(epoch FROM slot_at) * 1000000)::bigint = $2::bigint;

-- name: claim_retry_wait
-- A retry whose owner is at its limit: due again $3 seconds later, and
-- the schedule's last_error ($4) says why it waits.
WITH w AS (
    UPDATE retries SET due_at = now() + make_interval(secs => $3::int)
    WHERE schedule_id = $1
      AND (extract(epoch FROM slot_at) * 1000000)::bigint = $2::bigint)
UPDATE schedules SET last_error = $4, updated_at = now()
WHERE id = $1;

-- name: claim_retry_update
-- A schedule in a retry chain after the claim: $2 runs started, and
-- next_run_at the earliest retry left (NULL: none waits; the retries in
-- flight decide what comes next when they end).
UPDATE schedules
SET running = running + $2,
    next_run_at = (SELECT min(due_at) FROM retries WHERE schedule_id = $1),
    last_run_at = CASE WHEN $2 > 0 THEN now() ELSE last_run_at END,
    updated_at = now()
WHERE id = $1;

-- columns: claim_trigger
t.id,                                        -- id
t.schedule_id,                               -- schedule
t.payload::text,                             -- payload
floor(extract(epoch FROM t.created_at))::bigint  -- created

-- name: claim_triggers
-- Pending trigger-now requests, oldest first, at most $1, each locked
-- together with its schedule and both SKIP LOCKED: a request or a
-- schedule another supervisor holds is left to it, so that two
-- supervisors never wait on each other (no deadlock) and never claim one
-- request twice.
SELECT {{claim_trigger}}
FROM triggers t JOIN schedules s ON s.id = t.schedule_id
ORDER BY t.id LIMIT $1
FOR UPDATE OF t, s SKIP LOCKED;

-- name: claim_trigger_sched
-- The schedule of a request, read again (an earlier request of the same
-- claim may have started a run of it).
SELECT {{sched}} FROM schedules WHERE id = $1;

-- name: claim_trigger_run
-- Records the run $2 of request $1: slot_at is the request's created_at
-- as PostgreSQL has it (microseconds kept, no round trip through the
-- client), attempt 0, triggered, status $4 (running under lease $5, or
-- ended now), note $6, error $7.  Requests of one transaction share their
-- time; triggered runs are left out of the uniqueness of (schedule, slot,
-- attempt) for that (sql/002_api.sql), their id is what makes them unique.
INSERT INTO runs (id, schedule_id, repeat_number, attempt, slot_at, status,
                  supervisor_id, started_at, finished_at, note, error,
                  triggered)
SELECT $2::text, t.schedule_id, $3::bigint, 0, t.created_at, $4::text,
       CASE WHEN $4::text = 'running' THEN $5::bigint END,
       CASE WHEN $4::text = 'running' THEN now() END,
       CASE WHEN $4::text <> 'running' THEN now() END, $6::text, $7::text,
       true
FROM triggers t WHERE t.id = $1
ON CONFLICT DO NOTHING
RETURNING id;

-- name: claim_trigger_delete
-- A request taken, whatever became of it.
DELETE FROM triggers WHERE id = $1;

-- name: claim_trigger_start
UPDATE schedules
SET running = running + 1, last_run_at = now(), updated_at = now()
WHERE id = $1;

-- name: claim_insert_run
-- One run row: $1 its id, $2 the schedule, $3 repeat, $4 attempt, $5 the
-- slot, $6 the status (running under lease $7, or a slot that did not
-- run, ended now, with note $8).  A run claimed ahead of its instant ($9,
-- µs; NULL: now) starts at the instant: its runner waits for it.  No row
-- back: the slot was claimed before.
-- This and claim_update are the general form; claim_fires, the batch, is
-- not used with one row instead: it inserts only a first attempt that
-- runs, and moves the schedule on in the same statement, by a plan fixed
-- before the insert.  The rows written here are a retry's (its attempt,
-- and slot_seq left alone), the slots that did not run (skipped, missed,
-- expired: no lease, ended now, a note), and the slots of a plan that
-- fires several (catch_up: all, overlap: allow), where whether a row went
-- in decides what the next slot of the plan does, and claim_update's
-- values come after all of them.
INSERT INTO runs (id, schedule_id, repeat_number, attempt, slot_at, status,
                  supervisor_id, started_at, finished_at, note)
VALUES ($1, $2, $3, $4, to_timestamp($5::float8 / 1e3), $6,
        CASE WHEN $6 = 'running' THEN $7::bigint END,
        CASE WHEN $6 = 'running'
             THEN greatest(now(), to_timestamp($9::float8 / 1e6)) END,
        CASE WHEN $6 <> 'running' THEN now() END, $8)
ON CONFLICT DO NOTHING
RETURNING id;

-- name: claim_update
-- The schedule's pending item after the claim: next_run_at $2 and
-- next_slot_at $3 (epoch ms, NULL for none), slot_seq $4, and $5 runs
-- started.
UPDATE schedules
SET next_run_at = to_timestamp($2::float8 / 1e3),
    next_slot_at = to_timestamp($3::float8 / 1e3), slot_seq = $4,
    running = running + $5, retry_pending = false,
    last_run_at = CASE WHEN $5 > 0 THEN now() ELSE last_run_at END,
    updated_at = now()
WHERE id = $1;

-- name: claim_fires
-- claim_insert_run of a slot run and claim_update of its schedule, for
-- the common claim of one slot (fire_one()), for every such schedule of
-- the claim in one statement: $1 the lease, $2 a JSON array of rows: the
-- run id, the schedule, the repeat (= slot_seq before), the slot, the
-- start (µs, null: now), the next_run_at and next_slot_at after it,
-- anchor: completion (both NULL once the run is in flight).  The counters
-- move by the rows inserted (none: the slot was claimed before).  Returns
-- the ids of the runs inserted.
WITH v AS (
    SELECT * FROM json_to_recordset($2::json)
        AS v(id text, sid uuid, rep bigint, slot bigint, start bigint,
             next_run bigint, next_slot bigint, anchor boolean)),
ins AS (
    INSERT INTO runs (id, schedule_id, repeat_number, attempt, slot_at,
                      status, supervisor_id, started_at)
    SELECT id, sid, rep, 0, to_timestamp(slot::float8 / 1e3), 'running',
           $1::bigint, greatest(now(), to_timestamp(start::float8 / 1e6))
    FROM v
    ON CONFLICT DO NOTHING
    RETURNING id, schedule_id),
up AS (
    UPDATE schedules
    SET next_run_at = CASE WHEN f.fired AND f.anchor THEN NULL
                           ELSE to_timestamp(f.next_run::float8 / 1e3) END,
        next_slot_at = CASE WHEN f.fired AND f.anchor THEN NULL
                            ELSE to_timestamp(f.next_slot::float8 / 1e3) END,
        slot_seq = f.rep + f.fired::int,
        running = running + f.fired::int,
        retry_pending = false,
        last_run_at = CASE WHEN f.fired THEN now() ELSE last_run_at END,
        updated_at = now()
    -- (IN: a hashed subplan; a join of the two CTEs would be a nested
    -- loop, cronvisord_session: claim_batch squared)
    FROM (SELECT v.*, v.id IN (SELECT id FROM ins) AS fired FROM v) f
    WHERE schedules.id = f.sid)
SELECT id FROM ins;

-- name: claim_shelve
-- A schedule whose row cannot be run is made dead, with why ($2).
UPDATE schedules
SET status = 'dead', next_run_at = NULL, last_error = $2, updated_at = now()
WHERE id = $1;

-- columns: claim_agent
w.run,                                               -- run
w.job_id,                                            -- job
w.execution_id,                                      -- execution
w.agent IS NOT NULL,                                 -- found
coalesce(w.enabled, false),                          -- enabled
w.version IS NULL OR w.v_endpoint IS NOT NULL,       -- version_found
w.version,                                           -- version
CASE WHEN w.version IS NULL THEN w.a_endpoint ELSE w.v_endpoint END, -- endpoint
w.auth_type,                                         -- auth
w.auth_username,                                     -- username
w.auth_secret,                                       -- secret
(CASE WHEN w.version IS NULL THEN w.a_schema ELSE w.v_schema END)::text, -- schema
w.timeout_ms,                                        -- timeout_ms
w.heartbeat_seconds,                                 -- heartbeat
(CASE WHEN w.kind = 'job' THEN w.job_params ELSE coalesce(w.target -> 'params', '{}') END)::text, -- params
cronvisor_time(w.deadline),                          -- deadline
w.schedule_id,                                       -- schedule
w.attempt,                                           -- attempt
w.owner                                              -- owner

-- name: claim_agents
-- The agent attempts this claim inserted, $1 a JSON array of {run, token,
-- env}: each job gets its agent, its version (the one deployed in env; a
-- retry keeps the one its first attempt used), its params and priority;
-- each run the SHA-256 of its callback token, its deadline (its start and
-- the step's timeout_ms, else the target's, else the agent's) and the
-- heartbeat it owes.
-- A first attempt's job is enqueued only once the agent accepts it.  What
-- the request needs comes back, a row per run (claim.c, agent.c).
WITH v AS MATERIALIZED (
    SELECT * FROM json_to_recordset($1::json)
        AS v(run text, token text, env text)),
w AS MATERIALIZED (
    SELECT v.run, v.token, runs.job_id, runs.attempt, runs.schedule_id,
           runs.kind, j.params AS job_params, k.ak,
           s.owner, s.target, s.priority, j.execution_id,
           a.agent_id AS agent, a.enabled, a.auth_type, a.auth_username,
           a.auth_secret, a.heartbeat_seconds, a.endpoint AS a_endpoint,
           a.input_schema AS a_schema,
           coalesce(j.timeout_ms, (s.target ->> 'timeout_ms')::bigint,
                    a.timeout_ms, 300000) AS timeout_ms,
           coalesce(j.agent_version, d.version) AS version,
           av.endpoint AS v_endpoint, av.input_schema AS v_schema,
           greatest(runs.started_at, now())
           + make_interval(secs => coalesce(j.timeout_ms,
                                            (s.target ->> 'timeout_ms')::bigint,
                                            a.timeout_ms, 300000) / 1000.0)
               AS deadline
    FROM v
    JOIN runs ON runs.id = v.run
    JOIN schedules s ON s.id = runs.schedule_id
    JOIN jobs j ON j.id = runs.job_id
    -- A job of a fan-out or pipeline names its agent (a step's own).
    CROSS JOIN LATERAL (
        SELECT CASE WHEN runs.kind = 'job' AND j.agent_id IS NOT NULL
                    THEN j.agent_id ELSE s.target ->> 'agent' END AS ak) k
    LEFT JOIN agents a
      ON a.owner = s.owner AND a.agent_id = k.ak
    LEFT JOIN agent_deployments d
      ON d.owner = s.owner AND d.agent_id = k.ak
     AND d.environment = v.env
    LEFT JOIN agent_versions av
      ON av.owner = s.owner AND av.agent_id = k.ak
     AND av.version = coalesce(j.agent_version, d.version)),
uj AS (
    UPDATE jobs
    SET agent_id = w.ak, agent_version = w.version,
        params = CASE WHEN w.kind = 'job' THEN jobs.params
                      ELSE coalesce(w.target -> 'params', '{}') END,
        priority = CASE WHEN w.kind = 'job' THEN jobs.priority
                        ELSE w.priority END,
        enqueued_at = CASE WHEN w.attempt = 0 AND w.kind <> 'job' THEN NULL
                           ELSE jobs.enqueued_at END,
        updated_at = now()
    FROM w WHERE jobs.id = w.job_id
      -- a fan-out's or a pipeline's job has its agent, params and
      -- priority: it changes only when it gets its version
      AND (w.kind <> 'job' OR jobs.agent_id IS DISTINCT FROM w.ak
           OR jobs.agent_version IS DISTINCT FROM w.version)
    RETURNING jobs.execution_id, w.attempt, w.kind),
ux AS (
    UPDATE executions x
    SET jobs_enqueued = greatest(x.jobs_enqueued - 1, 0)
    FROM uj WHERE x.id = uj.execution_id AND uj.attempt = 0
      AND uj.kind <> 'job'),
ur AS (
    UPDATE runs
    SET callback_hash = sha256(convert_to(w.token, 'UTF8')),
        deadline_at = w.deadline, heartbeat_seconds = w.heartbeat_seconds
    FROM w WHERE runs.id = w.run)
SELECT {{claim_agent}} FROM w;

-- columns: claim_report
r.id,                                                  -- id
r.schedule_id,                                         -- schedule
s.name,                                                -- name
floor(extract(epoch FROM r.slot_at))::bigint,          -- slot
r.repeat_number,                                       -- repeat
r.attempt,                                             -- attempt
r.triggered,                                           -- triggered
r.report::text,                                        -- report
r.deadline_at <= now(),                                -- past_deadline
r.heartbeat_seconds,                                   -- heartbeat
r.http_status,                                         -- http
greatest((extract(epoch FROM now() - r.started_at) * 1e6)::bigint, 0), -- duration_us
r.kind,                                                -- kind
coalesce((SELECT spent FROM jobs WHERE id = r.job_id), 0), -- spent
(SELECT retry::text FROM jobs WHERE id = r.job_id) -- retry

-- name: claim_reports
-- Agent attempts waiting for their report (status waiting, no lease)
-- whose report came (the report sets expires_at to its time) or that
-- expired (their deadline, or a heartbeat they owed), $2 at most, the
-- earliest first: taken back under lease $1 (running again), each to end
-- now as its report says, or timed out, through the path every run's end
-- takes (finish.c).  SKIP LOCKED: a peer takes the others.
WITH w AS (
    SELECT id FROM runs
    WHERE status = 'waiting' AND expires_at <= now()
    ORDER BY expires_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED)
UPDATE runs r
SET status = 'running', supervisor_id = $1
FROM w, schedules s
WHERE r.id = w.id AND s.id = r.schedule_id
RETURNING {{claim_report}};

-- name: claim_agent_load
-- Agent requests in flight (agent jobs' runs that are running, on every
-- supervisor), by owner and agent: the claim's room (claim.c).
SELECT s.owner, j.agent_id, count(*)
FROM runs r JOIN jobs j ON j.id = r.job_id
JOIN schedules s ON s.id = r.schedule_id
WHERE r.status = 'running' AND j.agent_id IS NOT NULL
GROUP BY s.owner, j.agent_id;

-- name: claim_agent_limit
-- The max_concurrent_requests of agent $2 of owner $1 (0: none), and
-- whether its jobs wait for it to be healthy again (its last probe failed
-- and when_unhealthy is wait), with the probe's error.
SELECT max_concurrent_requests,
       enabled AND health_url IS NOT NULL AND healthy IS FALSE
           AND when_unhealthy = 'wait',
       coalesce(health_error, 'its health probe failed')
FROM agents
WHERE owner = $1 AND agent_id = $2;

-- columns: claim_job
ins.id,                                                -- id
ins.schedule_id,                                       -- schedule
s.name,                                                -- name
floor(extract(epoch FROM ins.slot_at))::bigint,        -- slot
ins.repeat_number,                                     -- repeat
ins.attempt,                                           -- attempt
(extract(epoch FROM ins.started_at) * 1e6)::bigint,    -- start_us
coalesce(s.target ->> 'environment', 'production'),    -- env
s.owner,                                               -- owner
coalesce((SELECT spent FROM jobs WHERE id = ins.job_id), 0), -- spent
(SELECT retry::text FROM jobs WHERE id = ins.job_id) -- retry

-- name: claim_jobs
-- Fan-out jobs whose time came (ready_at by $2, epoch seconds: the
-- claim's horizon, claim_ahead_ms ahead), $3 at most, the earliest first
-- (then the higher priority, then the order of their values), each
-- started as an attempt (kind job, under lease $1, its id the fanout
-- attempt's with -j<seq>-rc<attempt>).  Within the limits every
-- supervisor shares, counted from the runs in flight: $4 agent requests
-- in all (max_concurrent_requests), each agent's own, $5 runs of one
-- owner (owner_max_running); an agent whose jobs wait while it is
-- unhealthy gets none.  A job whose schedule is being deleted is left to
-- claim_jobs_drop.  The candidates are the earliest jobs of agents and
-- owners not at their limit (those wait without holding the others up),
-- locked (SKIP LOCKED: a peer takes others), four times as many as may
-- go (the room under $3 and $4), so that the limits within the batch do
-- not starve the rest.  The
-- claim holds claim_jobs_lock first: the runs in flight it counts are
-- those every other claim committed.  The jobs of the attempts inserted
-- become running here (mv), in one set, when claim_jobs_lock said so; else
-- the insert's trigger moves them.
WITH blocked AS MATERIALIZED (SELECT * FROM cronvisor_agents_blocked($4)),
full_owners AS MATERIALIZED (
    SELECT s.owner AS f_owner
    FROM runs r JOIN schedules s ON s.id = r.schedule_id
    WHERE r.status = 'running'
    GROUP BY s.owner HAVING count(*) >= $5::bigint),
busy AS MATERIALIZED (
    SELECT s.owner AS b_owner, j.agent_id AS b_agent, count(*) AS b_n
    FROM runs r JOIN jobs j ON j.id = r.job_id
    JOIN schedules s ON s.id = r.schedule_id
    WHERE r.status = 'running' AND j.agent_id IS NOT NULL
    GROUP BY s.owner, j.agent_id),
room AS MATERIALIZED (
    SELECT greatest(0, least($3::bigint,
                             $4::bigint - (SELECT coalesce(sum(b_n), 0)
                                           FROM busy))) AS n),
c AS MATERIALIZED (
    SELECT j.id FROM jobs j JOIN schedules s ON s.id = j.schedule_id
    WHERE j.status = 'pending' AND j.ready_at <= to_timestamp($2::float8)
      AND s.deleted_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM blocked WHERE b_owner IS NULL)
      AND NOT EXISTS (SELECT 1 FROM blocked
                      WHERE b_owner = s.owner AND b_agent = j.agent_id)
      AND NOT EXISTS (SELECT 1 FROM full_owners WHERE f_owner = s.owner)
    ORDER BY j.ready_at, j.seq
    LIMIT 4 * (SELECT n FROM room)
    FOR UPDATE OF j SKIP LOCKED),
owners AS MATERIALIZED (
    SELECT s.owner AS o_owner, count(*) AS o_n
    FROM runs r JOIN schedules s ON s.id = r.schedule_id
    WHERE r.status = 'running'
    GROUP BY s.owner),
k AS (
    SELECT j.id, j.seq, j.attempts, j.ready_at, j.priority, x.slot_at,
           x.run_id AS xrun, f.repeat_number, j.schedule_id,
           row_number() OVER (PARTITION BY s.owner, j.agent_id
                              ORDER BY j.ready_at, j.priority DESC, j.seq)
               - CASE WHEN a.max_concurrent_requests > 0
                      THEN a.max_concurrent_requests - coalesce(b.b_n, 0)
                      ELSE $3::int END AS over_agent,
           row_number() OVER (PARTITION BY s.owner
                              ORDER BY j.ready_at, j.priority DESC, j.seq)
               - ($5::bigint - coalesce(o.o_n, 0)) AS over_owner
    FROM c JOIN jobs j ON j.id = c.id
    JOIN executions x ON x.id = j.execution_id
    JOIN runs f ON f.id = x.run_id
    JOIN schedules s ON s.id = j.schedule_id
    LEFT JOIN agents a ON a.owner = s.owner AND a.agent_id = j.agent_id
    LEFT JOIN busy b ON b.b_owner = s.owner AND b.b_agent = j.agent_id
    LEFT JOIN owners o ON o.o_owner = s.owner
    WHERE s.deleted_at IS NULL
      AND NOT coalesce(a.enabled AND a.health_url IS NOT NULL
                       AND a.healthy IS FALSE AND a.when_unhealthy = 'wait',
                       false)),
pick AS (
    SELECT * FROM k
    WHERE over_agent <= 0 AND over_owner <= 0
    ORDER BY ready_at, priority DESC, seq
    LIMIT (SELECT n FROM room)),
ins AS (
    INSERT INTO runs (id, schedule_id, repeat_number, attempt, slot_at,
                      status, supervisor_id, started_at, kind, job_id)
    SELECT regexp_replace(p.xrun, '-rc[0-9]+$', '') || '-j' || p.seq
               || '-rc' || p.attempts,
           p.schedule_id, p.repeat_number, p.attempts, p.slot_at, 'running',
           $1::bigint, greatest(now(), p.ready_at), 'job', p.id
    FROM pick p
    ON CONFLICT DO NOTHING
    RETURNING *),
mv AS (
    UPDATE jobs SET status = 'running', finished_at = NULL,
                    wait_reason = NULL, updated_at = now()
    FROM ins
    WHERE jobs.id = ins.job_id
      AND current_setting('cronvisor.claim_moves_jobs', true) = 'on')
SELECT {{claim_job}}
FROM ins JOIN schedules s ON s.id = ins.schedule_id;

-- name: claim_jobs_lock
-- Before claim_jobs, when a fan-out job is due by $1 (epoch seconds): the
-- claims of jobs go one at a time over all supervisors (a transaction
-- lock, held to the claim's commit), so that two never count the same
-- room under an agent's or an owner's limit.
-- It also says, for this transaction, that claim_jobs moves the jobs of
-- the attempts it inserts itself, in one set (cronvisor.claim_moves_jobs,
-- read by cronvisor_run_job(), which moves them one by one for a
-- supervisor that does not say so: an older one, mid-upgrade).
SELECT set_config('cronvisor.claim_moves_jobs', 'on', true),
       pg_advisory_xact_lock(hashtext('cronvisor_claim_jobs'))
WHERE EXISTS (SELECT 1 FROM jobs
              WHERE status = 'pending'
                AND ready_at <= to_timestamp($1::float8));

-- name: claim_redecide
-- Pipelines' executions whose contexts wait to be decided again (the
-- API's retry-failed), 100 at most, locked in id order (one a peer holds
-- waits for the next claim); their mark is cleared: the caller decides
-- them in this transaction (pipeline_advance()).
UPDATE executions SET redecide = false
WHERE id IN (SELECT id FROM executions WHERE redecide
             ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED)
RETURNING id;

-- name: claim_jobs_drop_lock
-- Before claim_jobs_drop: the running executions of schedules being
-- deleted, locked in id order as every writer of executions locks them
-- before their jobs (a pipeline step's end decides its context with its
-- execution locked, then writes the steps that wait).
SELECT x.id FROM schedules s JOIN executions x ON x.schedule_id = s.id
WHERE s.deleted_at IS NOT NULL AND x.status = 'running'
ORDER BY x.id
FOR UPDATE OF x;

-- name: claim_jobs_drop
-- The pending jobs of schedules being deleted (deleted_at set) fail (a
-- pipeline's steps waiting for others too), so
-- that their executions end and the fanout attempts that wait for them
-- let the schedules go.  Returns their executions and the jobs (failed),
-- to settle (fanout_settle).
-- At most 1,000 a claim: a deleted plan of 100,000 jobs failed in one
-- statement held the claim (and every other schedule's firing) for
-- seconds; the claims that follow take the rest (claim_drops_more()).
UPDATE jobs j
SET status = 'failed', ready_at = NULL, finished_at = now(),
    updated_at = now(),
    error = '{"message": "its schedule was deleted", "retryable": false}'
WHERE j.id IN (
    SELECT d.id FROM schedules s JOIN executions x ON x.schedule_id = s.id
    JOIN jobs d ON d.execution_id = x.id
    WHERE s.deleted_at IS NOT NULL AND x.status = 'running'
      AND d.status = 'pending'
      AND (d.ready_at IS NOT NULL OR d.context IS NOT NULL)
    LIMIT 1000)
RETURNING j.execution_id, j.id, true;
