-- prune.sql: the statements of supervisor/prune.c, run at the heartbeat:
-- history retention, the safety net of deleted schedules, and old trigger
-- Idempotency-Keys.  Each deletes at most 1000 rows per schedule (or in
-- all) at a time, so that a backlog goes over several heartbeats instead
-- of in one long statement.

-- name: prune_runs
-- Every noted schedule ($1, a JSON array of ids) in one statement: up to
-- 1000 finished runs of each (not one in flight or waiting for an agent's
-- report or a fan-out's jobs, nor a fan-out job's attempt), older than its newest history_limit runs,
-- and as many ended executions, older than its newest history_limit.
-- Returns the schedules that had that many to delete (more may be left
-- for the next heartbeat).
WITH n AS (
    SELECT DISTINCT value::uuid AS sid
    FROM json_array_elements_text($1::json)),
gone AS (
    DELETE FROM runs
    WHERE id IN (
        SELECT x.id
        FROM n JOIN schedules s ON s.id = n.sid
        CROSS JOIN LATERAL (
            SELECT created_at, id FROM runs
            WHERE schedule_id = n.sid AND kind <> 'job'
            ORDER BY created_at DESC, id DESC
            OFFSET s.history_limit LIMIT 1) e
        CROSS JOIN LATERAL (
            SELECT r.id FROM runs r
            WHERE r.schedule_id = n.sid AND r.kind <> 'job'
              AND r.status NOT IN ('running', 'waiting')
              AND (r.created_at, r.id) <= (e.created_at, e.id)
            LIMIT 1000) x)
    RETURNING schedule_id),
-- The same for executions (their jobs go with them): those ended, older
-- than the newest history_limit.
xgone AS (
    DELETE FROM executions
    WHERE id IN (
        SELECT x.id
        FROM n JOIN schedules s ON s.id = n.sid
        CROSS JOIN LATERAL (
            SELECT created_at, id FROM executions
            WHERE schedule_id = n.sid
            ORDER BY created_at DESC, id DESC
            OFFSET s.history_limit LIMIT 1) e
        CROSS JOIN LATERAL (
            SELECT x.id FROM executions x
            WHERE x.schedule_id = n.sid AND x.status <> 'running'
              AND (x.created_at, x.id) <= (e.created_at, e.id)
            LIMIT 1000) x)
    RETURNING schedule_id, id),
-- The attempts of a fan-out's jobs go with their execution (they count
-- toward no history_limit: a fan-out of 1,000 values has 1,000 of them).
jgone AS (
    DELETE FROM runs
    WHERE kind = 'job' AND job_id IN (
        SELECT j.id FROM jobs j WHERE j.execution_id IN (SELECT id FROM xgone)))
SELECT schedule_id FROM gone
GROUP BY schedule_id
HAVING count(*) >= 1000
UNION
SELECT schedule_id FROM xgone
GROUP BY schedule_id
HAVING count(*) >= 1000;

-- name: prune_deleted
-- READ COMMITTED re-checks the condition on a row a concurrent
-- transaction changed, so a schedule whose run a claim just started is
-- not deleted.
DELETE FROM schedules WHERE deleted_at IS NOT NULL AND running = 0;

-- name: prune_keys
-- Trigger Idempotency-Keys are answered for a day (api/schedules.c): the
-- API does not answer with older ones (a request sending one again takes
-- its row over), and this removes the rest, the oldest 1000 per
-- heartbeat through the index on created_at.  It skips the rows an API
-- request holds (taking one over, deleting a schedule's keys): it never
-- waits for one, so the two can never deadlock.
DELETE FROM trigger_keys
WHERE (requested_by, key) IN (
    SELECT requested_by, key FROM trigger_keys
    WHERE created_at <= now() - interval '1 day'
    ORDER BY created_at
    FOR UPDATE SKIP LOCKED
    LIMIT 1000);
