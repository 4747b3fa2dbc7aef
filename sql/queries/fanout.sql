-- fanout.sql: the statements of supervisor/fanout.c, which expands a
-- fan-out slot into its jobs and records the ends of those jobs'
-- attempts (docs/orchestration.md, "Fan-out"; sql/013_fanout.sql).

-- name: fanout_source
-- Registration $1, if owner $2 may use it: the quoted relation, the key's
-- name and the columns (JSON), as api/datasources.c reads them.
SELECT relation_sql, key_column, columns::text
FROM data_sources
WHERE name = $1 AND (owners = '{}' OR $2 = ANY (owners));

-- name: fanout_plan
-- The plan of fanout attempt $1 (still running under lease $2): a job per
-- distinct value of $3 (a JSON array, in the query's order), its params
-- the target's with param $4 set to the value, in batches of $5 whose
-- batch k is ready k × $6 ms after the attempt's start (the firing).  A
-- pipeline's ($9 its steps in order, each with what the first decision
-- of a context made of it: start, or why it never runs; $10 its id): a
-- context per value ([null] when no param expands, $4 NULL) in batches
-- of $5 contexts, and in each a job per step, its params the target's,
-- then the step's, then the value; its seq context × steps + step; a
-- step that starts is ready when its batch is, one that waits for others
-- has no ready_at, one that never runs is skipped with why.  A job that
-- exists already (a retry of the slot) and failed (or was skipped) is
-- pending again (its seq kept: its attempts' ids stay its own; a
-- pipeline's waits, and the caller decides its contexts again); one that
-- completed is left alone; a value new since gets a context and seq
-- after all the execution has.  The execution records $7 (its metadata
-- members: fanout, pipeline) and how many jobs it has; the attempt waits
-- (no lease) with output $8 until its jobs end.  Returns the execution,
-- the jobs written, whether the attempt was ours and how many jobs
-- existed already.
WITH r AS (
    SELECT runs.id, runs.schedule_id, runs.started_at, x.id AS xid,
           s.priority, s.target
    FROM runs JOIN executions x ON x.run_id = runs.id
    JOIN schedules s ON s.id = runs.schedule_id
    WHERE runs.id = $1 AND runs.supervisor_id = $2
      AND runs.status = 'running'
    FOR UPDATE OF runs),
d AS (
    SELECT e.value::jsonb AS item, min(e.k) AS k
    FROM json_array_elements($3::json) WITH ORDINALITY AS e(value, k)
    GROUP BY e.value::jsonb),
o AS (
    SELECT item, (row_number() OVER (ORDER BY k) - 1)::integer AS seq
    FROM d),
-- Where a re-plan's new values start: after every context and seq the
-- execution has (a job's seq names its attempts' run ids).
b AS (
    SELECT coalesce(max(j.context) + 1, 0) AS c0,
           coalesce(max(j.seq) + 1, 0) AS s0
    FROM r LEFT JOIN jobs j ON j.execution_id = r.xid),
-- A fan-out's one "step": the target's agent.
st AS (
    SELECT e.value AS s, (e.k - 1)::integer AS i,
           (count(*) OVER ())::integer AS n
    FROM jsonb_array_elements(coalesce($9::jsonb, '[{"start": true}]'))
         WITH ORDINALITY AS e(value, k)),
ins AS (
    INSERT INTO jobs (execution_id, schedule_id, job_key, agent_id, status,
                      priority, params, item, seq, batch, ready_at,
                      pipeline_id, pipeline_step_id, context, step,
                      timeout_ms, retry, wait_reason, finished_at)
    SELECT r.xid, r.schedule_id,
           md5(o.item::text) || coalesce('/' || (st.s ->> 'step_id'), ''),
           coalesce(st.s ->> 'agent_id', r.target ->> 'agent'),
           CASE WHEN st.s ->> 'why' IS NULL THEN 'pending'
                ELSE 'skipped' END,
           r.priority,
           coalesce(r.target -> 'params', '{}')
               || coalesce(st.s -> 'params', '{}')
               || CASE WHEN $4::text IS NULL THEN '{}'::jsonb
                       ELSE jsonb_build_object($4::text, o.item) END,
           o.item,
           CASE WHEN $9::jsonb IS NULL THEN b.s0 + o.seq
                ELSE (b.c0 + o.seq) * st.n + st.i END,
           o.seq / $5::integer,
           CASE WHEN (st.s ->> 'start')::boolean
                THEN r.started_at + make_interval(
                         secs => (o.seq / $5::integer) * $6::bigint
                                 / 1000.0) END,
           $10::text, st.s ->> 'step_id',
           CASE WHEN $9::jsonb IS NOT NULL THEN b.c0 + o.seq END,
           CASE WHEN $9::jsonb IS NOT NULL THEN st.i END,
           (st.s ->> 'timeout_ms')::bigint,
           CASE WHEN jsonb_typeof(st.s -> 'retry') = 'object'
                THEN st.s -> 'retry' END,
           st.s ->> 'why',
           CASE WHEN st.s ->> 'why' IS NOT NULL THEN now() END
    FROM r, b, o, st
    ON CONFLICT (execution_id, job_key) DO UPDATE
    SET status = 'pending', error = NULL, result = NULL, wait_reason = NULL,
        finished_at = NULL, spent = 0, updated_at = now(),
        ready_at = CASE WHEN jobs.context IS NULL
                        THEN excluded.ready_at END,
        batch = excluded.batch
    WHERE jobs.status IN ('failed', 'skipped')
    RETURNING jobs.id, (xmax = 0) AS fresh),
x AS (
    UPDATE executions x
    SET jobs_created = x.jobs_created
                       + (SELECT count(*) FROM ins WHERE fresh),
        -- planned_at: when the plan was written (its jobs inserted),
        -- to the microsecond
        metadata = x.metadata || $7::jsonb
                   || jsonb_build_object('planned_at',
                                         cronvisor_time(clock_timestamp())),
        updated_at = now()
    FROM r WHERE x.id = r.xid
    RETURNING x.id),
w AS (
    UPDATE runs SET status = 'waiting', expires_at = NULL, output = $8
    FROM r WHERE runs.id = r.id
    RETURNING runs.id)
SELECT x.id, (SELECT count(*) FROM ins), (SELECT count(*) FROM w),
       (SELECT count(*) FROM ins WHERE NOT fresh)
FROM x;

-- name: fanout_settle
-- Executions $1 (a JSON array of ids) after jobs of theirs ended, $2 the
-- jobs that failed for good (cronvisor_execution_settle()).
SELECT cronvisor_execution_settle(
    ARRAY(SELECT value::uuid FROM json_array_elements_text($1::json)),
    ARRAY(SELECT value::uuid FROM json_array_elements_text($2::json)));

-- name: fanout_ended
-- Fanout attempts that ended without their jobs (the expansion failed,
-- or the attempt was lost, interrupted or crashed before it wrote its
-- plan), $1 a JSON array of {id, error}: an execution of theirs still
-- running with no job open fails, with the error.  A retry of the slot,
-- if one follows, makes it running again (cronvisor_run_job()).
WITH v AS (
    SELECT * FROM json_to_recordset($1::json) AS v(id text, error text))
UPDATE executions x
SET status = 'failed', finished_at = now(), updated_at = now(),
    errors = x.errors || jsonb_build_array(jsonb_build_object(
                 'message', v.error, 'at', cronvisor_time(now())))
FROM v
WHERE x.run_id = v.id AND x.status = 'running'
  AND NOT EXISTS (SELECT 1 FROM jobs j
                  WHERE j.execution_id = x.id
                    AND j.status IN ('pending', 'running'));

-- name: fanout_pipeline
-- Pipeline $2 of owner $1, as a schedule's slot (its attempt $3) runs
-- it: its steps (the native form), fail_fast and enabled.  A retry of a
-- slot whose execution has a plan already keeps the steps it was made
-- with (metadata.pipeline): a pipeline changed since changes the next
-- slot, not this one.
SELECT coalesce(x.metadata #> '{pipeline,steps}', p.steps)::text,
       coalesce((x.metadata #>> '{pipeline,fail_fast}')::boolean,
                p.fail_fast),
       p.enabled
FROM pipelines p
LEFT JOIN executions x ON x.run_id = $3 AND x.metadata ? 'pipeline'
WHERE p.owner = $1 AND p.pipeline_id = $2;

-- name: fanout_graphs
-- The pipelines (metadata.pipeline: steps, fail_fast) of executions $1 (a
-- JSON array of ids), locked in id order as every writer of executions
-- does: the contexts read next are those every end before committed.
SELECT x.id, x.metadata -> 'pipeline' -> 'steps',
       coalesce((x.metadata #>> '{pipeline,fail_fast}')::boolean, false)
FROM executions x
WHERE x.id IN (SELECT value::uuid FROM json_array_elements_text($1::json))
  AND x.metadata ? 'pipeline'
ORDER BY x.id
FOR UPDATE;

-- name: fanout_contexts
-- The steps of contexts $1 (a JSON array of {x: execution, c: context;
-- c null: all of them}) as common/dag.c reads them: by execution,
-- context and step, each job with its status, whether it is ready and
-- how many attempts it had.  A context named is read through
-- jobs_context (an OR of the two cases read every job of the execution for
-- each context: a pipeline of 1,000 contexts spent 47 ms a statement on
-- it, most of the time between a step and the next).
WITH v AS (
    SELECT DISTINCT x, c FROM json_to_recordset($1::json) AS v(x uuid, c integer))
SELECT j.execution_id, j.context, j.step, j.id, j.status,
       j.ready_at IS NOT NULL, j.attempts
FROM v JOIN jobs j ON j.execution_id = v.x AND j.context = v.c
WHERE v.c IS NOT NULL
UNION ALL
SELECT j.execution_id, j.context, j.step, j.id, j.status,
       j.ready_at IS NOT NULL, j.attempts
FROM v JOIN jobs j ON j.execution_id = v.x
WHERE v.c IS NULL AND j.context IS NOT NULL
ORDER BY 1, 2, 3;

-- name: fanout_advance
-- What dag.c decided for waiting steps, $1 a JSON array of {id, why}: a
-- step that starts (why null) is ready from its context's batch's planned
-- start (the past, once a step it depends on ended): claims take jobs by
-- ready_at, then seq, so a context's next step goes before the first
-- steps of the contexts behind it (depth first: a context done soonest,
-- its next request not queued behind a whole fan-out); one that never runs is
-- skipped, with why (fail_fast also skips a step that was ready but
-- never sent).  Steps no longer waiting (or sent) are left alone.  Supervisors
-- wake to claim what became ready.  Returns how many started.
WITH v AS MATERIALIZED (
    SELECT * FROM json_to_recordset($1::json) AS v(id uuid, why text)),
u AS (
    UPDATE jobs j
    SET status = CASE WHEN v.why IS NULL THEN 'pending' ELSE 'skipped' END,
        ready_at = CASE WHEN v.why IS NULL
                        THEN coalesce(f.started_at, now()) + make_interval(
                                 secs => j.batch * coalesce(
                                     (x.metadata #>> '{fanout,stagger_ms}')::bigint,
                                     0) / 1000.0) END,
        wait_reason = v.why,
        finished_at = CASE WHEN v.why IS NOT NULL THEN now() END,
        updated_at = now()
    FROM v, executions x LEFT JOIN runs f ON f.id = x.run_id
    WHERE j.id = v.id AND x.id = j.execution_id
      -- each job by its key, whatever the plan (a generic plan read every
      -- pending job of the execution and parsed the array for each)
      AND j.id = ANY (ARRAY(SELECT id FROM v))
      AND j.status = 'pending'
      AND (j.ready_at IS NULL OR (v.why IS NOT NULL AND j.attempts = 0))
    RETURNING v.why IS NULL AS started)
SELECT count(*) FILTER (WHERE started),
       (SELECT count(*) FROM (SELECT pg_notify('cronvisor_wake', '')
                              WHERE EXISTS (SELECT 1 FROM u WHERE started)) n)
FROM u;
