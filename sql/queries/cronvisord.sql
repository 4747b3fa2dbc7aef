-- cronvisord.sql: the statements of supervisor/cronvisord.c, the loop.

-- name: cronvisord_session
-- Run at every connect, and again after each reconnect (db_session()).
-- The plans of the supervisor's statements.  Every one of them reaches
-- its rows through an index: a claim reads the due index in order and
-- stops at its limit; a batch of results or of fires looks up the rows it
-- names (a JSON array, which the planner guesses at 100 rows) by primary
-- key.  Left to the statistics, right after many schedules were created
-- and before autovacuum analyzed them, the planner thinks the tables
-- small: it joined each batch to a sequential scan of every schedule, and
-- had each claim read every due schedule (a bitmap scan) to sort them and
-- keep the first 100.  In a burst of 3,000 runs that was some 150 scans of
-- all the rows and their dead versions, and a claim cost more the more
-- were due.  Without sequential and bitmap scans the planner uses the
-- indexes whatever the statistics say.  A statement no index suits walks
-- a whole index instead of the table: only the retirement of a previous
-- incarnation (supervisors by name, once at start) is one.  And no JIT:
-- a plan that must scan a table anyway carries the planner's penalty for
-- a disabled scan, a cost far above jit_above_cost, and each execution of
-- it was compiled by LLVM first (70 to 170 ms of CPU for a statement
-- that reads one row: a trigger's check of one run made every attempt of
-- a fan-out job cost that much).  None of these statements gains from it.
-- And one plan per prepared statement (generic), made once per session:
-- with the scans above off, the indexes decide the plan whatever the
-- parameters are, and a custom plan for each execution made the planning
-- of a claim of fan-out jobs (its CTEs, joins and window functions) cost
-- 3 to 6 ms of CPU each time, ten times its execution: it was most of
-- the wait between a pipeline's step and the next.  A generic plan is
-- made once, while the tables may still be small: nested loops only, so
-- that a batch of rows (a JSON array) joins the table it names row by row
-- through its key, as the plans of a large table do.  Left free, a plan
-- made over a few hundred runs hashed a scan of every run into each
-- batch, for as long as the session lived (claim_agents cost twice as
-- much per job at 10,000 jobs as at 1,000).
SET enable_seqscan = off; SET enable_bitmapscan = off; SET jit = off;
SET plan_cache_mode = force_generic_plan;
SET enable_hashjoin = off; SET enable_mergejoin = off;

-- name: cronvisord_next_due
-- The earliest next_run_at, $1 ms (claim_ahead_ms) earlier when nothing
-- of that schedule is in flight (claim.c claims it ahead only then), or
-- the earliest time an agent attempt waiting for its report expires (or
-- its report came: claim_reports), or the earliest a fan-out job may
-- start, $1 ms earlier (claim_jobs), in epoch ms; and whether trigger-now
-- requests wait.  A schedule or a job whose agent has no request to
-- spare ($2 the global max_concurrent_requests) is not due, nor a job of
-- an owner at its limit ($3, owner_max_running): the end of a request or
-- a run brings the claim that takes it.
WITH blocked AS MATERIALIZED (SELECT * FROM cronvisor_agents_blocked($2))
SELECT least(
           (SELECT ceil(extract(epoch FROM next_run_at) * 1000)::bigint
                   - CASE WHEN running = 0 THEN $1::bigint ELSE 0 END
            FROM schedules
            WHERE status = 'active' AND deleted_at IS NULL
              AND next_run_at IS NOT NULL
              AND NOT (target ->> 'type' = 'agent'
                       AND (EXISTS (SELECT 1 FROM blocked WHERE b_owner IS NULL)
                            OR (owner, coalesce(target ->> 'agent', '')) IN
                               (SELECT b_owner, b_agent FROM blocked)))
            ORDER BY next_run_at LIMIT 1),
           (SELECT ceil(extract(epoch FROM expires_at) * 1000)::bigint
            FROM runs WHERE status = 'waiting'
            ORDER BY expires_at LIMIT 1),
           (SELECT ceil(extract(epoch FROM j.ready_at) * 1000)::bigint - $1
            FROM jobs j
            WHERE j.status = 'pending' AND j.ready_at IS NOT NULL
              AND NOT EXISTS (SELECT 1 FROM blocked WHERE b_owner IS NULL)
              AND NOT EXISTS (
                  SELECT 1 FROM schedules s JOIN blocked b
                      ON b.b_owner = s.owner AND b.b_agent = j.agent_id
                  WHERE s.id = j.schedule_id)
              AND NOT EXISTS (
                  SELECT 1 FROM schedules s
                  WHERE s.id = j.schedule_id AND s.owner IN (
                      SELECT o.owner
                      FROM runs r JOIN schedules o ON o.id = r.schedule_id
                      WHERE r.status = 'running'
                      GROUP BY o.owner HAVING count(*) >= $3::bigint))
            ORDER BY j.ready_at LIMIT 1)),
       EXISTS (SELECT 1 FROM triggers);
