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
-- value that has a job in the execution already (a retry of the slot)
-- gets it back pending when it failed (its seq kept: its attempts' ids
-- stay its own), and is left alone otherwise.  The
-- execution records $7 (the expansion's metadata) and how many jobs it
-- has; the attempt waits (no lease) with output $8 until its jobs end.
-- Returns the execution, the jobs written and whether any is open.
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
ins AS (
    INSERT INTO jobs (execution_id, schedule_id, job_key, agent_id, status,
                      priority, params, item, seq, batch, ready_at)
    SELECT r.xid, r.schedule_id, md5(o.item::text), r.target ->> 'agent',
           'pending', r.priority,
           coalesce(r.target -> 'params', '{}')
               || jsonb_build_object($4::text, o.item),
           o.item, o.seq, o.seq / $5::integer,
           r.started_at + make_interval(
               secs => (o.seq / $5::integer) * $6::bigint / 1000.0)
    FROM r, o
    ON CONFLICT (execution_id, job_key) DO UPDATE
    SET status = 'pending', ready_at = excluded.ready_at,
        batch = excluded.batch, error = NULL, result = NULL,
        finished_at = NULL, spent = 0, updated_at = now()
    WHERE jobs.status = 'failed'
    RETURNING jobs.id, (xmax = 0) AS fresh),
x AS (
    UPDATE executions x
    SET jobs_created = x.jobs_created
                       + (SELECT count(*) FROM ins WHERE fresh),
        metadata = x.metadata || jsonb_build_object('fanout', $7::jsonb),
        updated_at = now()
    FROM r WHERE x.id = r.xid
    RETURNING x.id),
w AS (
    UPDATE runs SET status = 'waiting', expires_at = NULL, output = $8
    FROM r WHERE runs.id = r.id
    RETURNING runs.id)
SELECT x.id, (SELECT count(*) FROM ins), (SELECT count(*) FROM w)
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
