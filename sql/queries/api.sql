-- api.sql: the statements of cronvisor-api (api/): tokens (auth.c), the
-- health check (health.c), schedules (schedules.c) and their runs
-- (runs.c).  A caller that is not an admin sees its owner's schedules
-- only: the statements that take the caller's scope as a parameter read
-- "($n::text IS NULL OR owner = $n)", NULL for an admin.  A schedule with
-- deleted_at set is gone for the API (it waits for its runs in flight).

-- name: api_auth
-- The token of a bearer ($1, the token text), unless revoked: only its
-- SHA-256 is stored.
SELECT id, owner, role FROM tokens
WHERE hash = sha256(convert_to($1, 'UTF8')) AND revoked_at IS NULL;

-- name: api_health
-- The database's time and the supervisors that did not stop, $1
-- lease_seconds telling the live ones: one row even without supervisors,
-- for the time (LEFT JOIN).
SELECT cronvisor_time(now()), s.name, s.host, s.version, s.pid,
       cronvisor_time(s.started_at), cronvisor_time(s.heartbeat),
       s.heartbeat > now() - make_interval(secs => $1::bigint)
FROM (SELECT 1) AS one
LEFT JOIN supervisors AS s ON s.stopped_at IS NULL
ORDER BY s.name, s.id;

-- columns: api_schedule
cronvisor_schedule_json(s)::text,    -- json
running,                             -- running
status,                              -- status
retry_pending,                       -- retry
extract(epoch FROM next_slot_at),    -- next_slot
next_run_at IS NULL                  -- no_next_run

-- name: api_schedule_load
-- Schedule $1 as the API shows it, with what its handlers decide by (the
-- next slot in epoch seconds, with the fraction), if visible to scope $2.
SELECT {{api_schedule}} FROM schedules s
WHERE id = $1 AND deleted_at IS NULL AND ($2::text IS NULL OR owner = $2);

-- name: api_schedule_lock
-- api_schedule_load, the row locked until the caller's transaction ends.
SELECT {{api_schedule}} FROM schedules s
WHERE id = $1 AND deleted_at IS NULL AND ($2::text IS NULL OR owner = $2)
FOR UPDATE;

-- name: api_schedule_insert
-- A new schedule of owner $1: $2 and $3 its next_run_at and next_slot_at
-- (epoch seconds with a fraction), $4...$33 the fields of the document in
-- the order of schedule_params() (common/schedule.c, enum
-- schedule_field; check_schedule.c holds the two to each other), $34 the
-- Idempotency-Key and $35 the body it hashes (both NULL without a key).
-- No row back when the owner already has a schedule of that key.
INSERT INTO schedules AS s (
    owner, next_run_at, next_slot_at, idempotency_key, idempotency_hash,
    name, description, kind, interval_seconds, anchor, cron, timezone, at,
    start_at, total_repeats, max_retries, backoff, retry_delay_seconds,
    timeout_seconds, overlap, catch_up, max_catch_up_runs,
    starting_deadline_seconds, jitter_seconds, dst_gap, dst_fold,
    history_limit, target, limits, trigger_payload, workflow_id,
    trigger_node_id, priority, organization_id, environment_id)
VALUES (
    $1, to_timestamp($2), to_timestamp($3), $34::text,
    sha256(convert_to($35::text, 'UTF8')),
    $4, $5, $6, $7, $8, $9, $10, $11,
    $12, $13, $14, $15, $16,
    $17, $18, $19, $20,
    $21, $22, $23, $24,
    $25, $26, $27, $28, $29,
    $30, $31, $32, $33)
ON CONFLICT (owner, idempotency_key) WHERE idempotency_key IS NOT NULL
DO NOTHING
RETURNING cronvisor_schedule_json(s)::text;

-- name: api_schedule_update
-- Every field of schedule $1's document, $4...$33 as in
-- api_schedule_insert; $2 and $3 its next_run_at and next_slot_at (epoch
-- seconds with a fraction), the row's kept when NULL.  The hash of the
-- document it was applied from is forgotten (an apply sets it after).
UPDATE schedules s
SET name = $4, description = $5, kind = $6, interval_seconds = $7,
    anchor = $8, cron = $9, timezone = $10, at = $11, start_at = $12,
    total_repeats = $13, max_retries = $14, backoff = $15,
    retry_delay_seconds = $16, timeout_seconds = $17, overlap = $18,
    catch_up = $19, max_catch_up_runs = $20,
    starting_deadline_seconds = $21, jitter_seconds = $22, dst_gap = $23,
    dst_fold = $24, history_limit = $25, target = $26, limits = $27,
    trigger_payload = $28, workflow_id = $29, trigger_node_id = $30,
    priority = $31, organization_id = $32, environment_id = $33,
    next_run_at = CASE WHEN $2::float8 IS NULL THEN next_run_at
                       ELSE to_timestamp($2::float8) END,
    next_slot_at = CASE WHEN $3::float8 IS NULL THEN next_slot_at
                        ELSE to_timestamp($3::float8) END,
    config_hash = '', updated_at = now()
WHERE id = $1
RETURNING cronvisor_schedule_json(s)::text;

-- name: api_schedule_by_key
-- Owner $1's schedule of Idempotency-Key $2, whether body $3 is the one
-- it was created with, and whether it was deleted.
SELECT cronvisor_schedule_json(s)::text,
       idempotency_hash = sha256(convert_to($3::text, 'UTF8')),
       deleted_at IS NOT NULL
FROM schedules s
WHERE owner = $1 AND idempotency_key = $2;

-- name: api_owner_full
-- Whether owner $1 has $2 (owner_max_schedules) schedules already,
-- deleted ones left out; it counts no further than that.
SELECT count(*) >= $2::bigint
FROM (SELECT 1 FROM schedules
      WHERE owner = $1 AND deleted_at IS NULL LIMIT $2::bigint) x;

-- columns: api_listed
-- A schedule of GET /schedules (put_item() in api/list.c): its whole
-- JSON only when it has no kept document (by its id: a whole-row
-- reference to s would build every row's tuple), else the kept document
-- ($1: masked) and the state, instants in µs since the epoch.
CASE WHEN doc_text IS NULL THEN cronvisor_schedule_text(id) END, -- row
(extract(epoch FROM created_at) * 1000000)::bigint,    -- created
id,                                                    -- id
CASE WHEN $1::boolean THEN coalesce(doc_masked, doc_text) ELSE doc_text END, -- doc
owner,                                                 -- owner
status,                                                -- status
current_repeat,                                        -- repeat
current_retry,                                         -- retry
run_count,                                             -- runs
error_count,                                           -- errors
last_error,                                            -- last_error
(extract(epoch FROM last_run_at) * 1000000)::bigint,   -- last_run
(extract(epoch FROM next_run_at) * 1000000)::bigint,   -- next_run
running,                                               -- running
apply_set,                                             -- apply_set
(extract(epoch FROM updated_at) * 1000000)::bigint     -- updated

-- name: api_schedule_list
-- A page of GET /schedules (issue 22): these columns, to which
-- list_sql() in api/list.c adds its order's sort key (for the next
-- cursor), FROM schedules, the conditions of the filters the query gives
-- (each only when given: "a value or none" would keep a generic plan off
-- the order's index), the cursor's keyset condition, and ORDER BY the
-- expression of the order's index, LIMIT $2.  $1: whether the caller is
-- shown masked documents.
SELECT {{api_listed}};

-- name: api_schedule_doc
-- Schedule $1's document as the API shows it, $2 plain and $3 masked
-- (NULL: as plain), kept for its lists (021_schedule_doc.sql).
UPDATE schedules SET doc_text = $2, doc_masked = $3 WHERE id = $1;

-- name: api_schedule_revive
-- A done schedule active again, at repeat and counters unchanged.
UPDATE schedules
SET status = 'active', current_retry = 0, retry_pending = false
WHERE id = $1;

-- name: api_delete_keys
-- The deletion of schedules $1 (an array of ids, locked by the caller):
-- their trigger keys go at once,
DELETE FROM trigger_keys WHERE schedule_id = ANY($1::uuid[]);

-- name: api_delete_idle
-- the schedules with nothing in flight too,
DELETE FROM schedules WHERE id = ANY($1::uuid[]) AND running = 0;

-- name: api_delete_busy
-- and the others are hidden and paused until the supervisor records the
-- last run in flight and deletes them.
UPDATE schedules
SET deleted_at = now(), status = 'paused', next_run_at = NULL,
    retry_pending = false, updated_at = now()
WHERE id = ANY($1::uuid[]);

-- name: api_schedule_resume
-- $2 and $3 the next_run_at and next_slot_at (epoch seconds with a
-- fraction).  The retries a schedule in a retry chain waits for are due
-- at once (a pending retry runs now).
WITH due AS (
    UPDATE retries SET due_at = least(due_at, now()) WHERE schedule_id = $1)
UPDATE schedules s
SET status = 'active', next_run_at = to_timestamp($2::float8),
    next_slot_at = to_timestamp($3::float8), updated_at = now()
WHERE id = $1
RETURNING cronvisor_schedule_json(s)::text;

-- name: api_schedule_pause
UPDATE schedules s
SET status = 'paused', next_run_at = NULL, updated_at = now()
WHERE id = $1
RETURNING cronvisor_schedule_json(s)::text;

-- name: api_trigger_by_key
-- The trigger requester $1 made with Idempotency-Key $2 within the last
-- day (at any time if $5), whether it was for schedule $3 and body $4,
-- and whether that schedule has been deleted since.
SELECT k.trigger_id, cronvisor_time(k.created_at), s.id8,
       k.schedule_id = $3::uuid
           AND k.hash = sha256(convert_to($4::text, 'UTF8')),
       s.deleted_at IS NOT NULL
FROM trigger_keys k JOIN schedules s ON s.id = k.schedule_id
WHERE k.requested_by = $1 AND k.key = $2
  AND ($5::boolean OR k.created_at > now() - interval '1 day');

-- name: api_trigger_keyed
-- A trigger of schedule $1 (payload $2, requester $3, scope $4) with
-- Idempotency-Key $5 of body $6: the key and the request taken in one
-- statement, so that of two requests sent at once only one triggers a
-- run.  A key older than a day counts as new: its row is taken over.
-- One row whatever happens: the request's id and time and the
-- schedule's id8 when taken (NULL when not), and whether the schedule
-- exists for the caller.
WITH k AS (
    INSERT INTO trigger_keys (requested_by, key, hash, schedule_id,
                              trigger_id)
    SELECT $3, $5, sha256(convert_to($6::text, 'UTF8')), id,
           nextval(pg_get_serial_sequence('triggers', 'id'))
    FROM schedules
    WHERE id = $1 AND deleted_at IS NULL
      AND ($4::text IS NULL OR owner = $4)
    ON CONFLICT (requested_by, key) DO UPDATE
    SET hash = EXCLUDED.hash, schedule_id = EXCLUDED.schedule_id,
        trigger_id = EXCLUDED.trigger_id, created_at = now()
    WHERE trigger_keys.created_at <= now() - interval '1 day'
    RETURNING schedule_id, trigger_id),
t AS (
    INSERT INTO triggers (id, schedule_id, payload, requested_by)
    SELECT trigger_id, schedule_id, $2::jsonb, $3 FROM k
    RETURNING id, cronvisor_time(created_at) AS at)
SELECT t.id, t.at, s.id8, s.id IS NOT NULL
FROM (VALUES (1)) v
LEFT JOIN t ON true
LEFT JOIN schedules s ON s.id = $1 AND s.deleted_at IS NULL
                     AND ($4::text IS NULL OR s.owner = $4);

-- name: api_trigger_count
-- One more trigger request of owner $1 in this minute, while fewer than
-- $2 (owner_max_triggers_per_minute); the owner's rows of earlier
-- minutes go.  No row: at the limit, nothing counted.
WITH old AS (
    DELETE FROM trigger_counts
    WHERE owner = $1 AND minute < date_trunc('minute', now()))
INSERT INTO trigger_counts AS c (owner, minute, n)
VALUES ($1, date_trunc('minute', now()), 1)
ON CONFLICT (owner, minute) DO UPDATE SET n = c.n + 1
WHERE c.n < $2::bigint
RETURNING n;

-- name: api_trigger
-- A trigger-now request of schedule $1 (payload $2, requester $3, scope
-- $4), whose insert trigger wakes the supervisors.  No row: no such
-- schedule for the caller.
INSERT INTO triggers (schedule_id, payload, requested_by)
SELECT id, $2::jsonb, $3 FROM schedules
WHERE id = $1 AND deleted_at IS NULL AND ($4::text IS NULL OR owner = $4)
RETURNING id, cronvisor_time(created_at),
          (SELECT id8 FROM schedules WHERE id = $1);

-- name: api_batch_lock
-- The schedules of $1 (an array of ids) the caller (scope $2) can see,
-- locked in id order.
SELECT id FROM schedules
WHERE id = ANY($1::uuid[]) AND deleted_at IS NULL
  AND ($2::text IS NULL OR owner = $2)
ORDER BY id
FOR UPDATE;

-- name: api_runs_list
-- A page of the runs of schedule $1 (scope $2), newest first, $3 a status
-- or NULL; after the cursor ($4 created_at in µs since the epoch, $5 the
-- id), $6 rows at most.  No row at all, not even the schedule's, is a
-- 404; the schedule's one row with NULLs when it has no run (that
-- matches).
WITH s AS (
    SELECT id FROM schedules
    WHERE id = $1 AND deleted_at IS NULL
      AND ($2::text IS NULL OR owner = $2))
SELECT cronvisor_run_json(r)::text,
       (extract(epoch FROM r.created_at) * 1000000)::bigint, r.id
FROM s
LEFT JOIN LATERAL (
    SELECT * FROM runs r
    WHERE r.schedule_id = s.id
      AND ($3::text IS NULL OR r.status = $3)
      AND ($4::bigint IS NULL
           OR (r.created_at, r.id) < ('epoch'::timestamptz
                                      + $4::bigint * interval '1 microsecond',
                                      $5::text))
    ORDER BY r.created_at DESC, r.id DESC
    LIMIT $6) r ON true
ORDER BY r.created_at DESC, r.id DESC;

-- name: api_runs_get
-- Run $1, if its schedule is visible to scope $2.
SELECT cronvisor_run_json(r)::text
FROM runs r JOIN schedules s ON s.id = r.schedule_id
WHERE r.id = $1 AND s.deleted_at IS NULL
  AND ($2::text IS NULL OR s.owner = $2);

-- name: api_savepoint
-- A create's insert undoes only itself when it collides (the first eight
-- digits of a new id taken): it is tried again with another id, inside
-- the caller's transaction.
SAVEPOINT write_doc;

-- name: api_savepoint_undo
ROLLBACK TO SAVEPOINT write_doc;

-- name: api_executions_list
-- A page of executions (scope $1: an owner, or NULL for all), newest
-- first, of schedule $2 or of all, with status $3 or any; after the
-- cursor ($4 created_at in µs since the epoch, $5 the id), $6 rows at
-- most.
SELECT cronvisor_execution_json(x)::text,
       (extract(epoch FROM x.created_at) * 1000000)::bigint, x.id
FROM executions x JOIN schedules s ON s.id = x.schedule_id
WHERE s.deleted_at IS NULL AND ($1::text IS NULL OR s.owner = $1)
  AND ($2::uuid IS NULL OR x.schedule_id = $2)
  AND ($3::text IS NULL OR x.status = $3)
  AND ($4::bigint IS NULL
       OR (x.created_at, x.id) < ('epoch'::timestamptz
                                  + $4::bigint * interval '1 microsecond',
                                  $5::uuid))
ORDER BY x.created_at DESC, x.id DESC
LIMIT $6;

-- name: api_executions_get
-- Execution $1, if its schedule is visible to scope $2, with its jobs
-- counted by status, its schedule's name and, a pipeline's, its steps;
-- a fan-out's, its batches: each planned at the fan-out run's start plus
-- its place times the stagger (sql/queries/fanout.sql), when its first
-- job first started, and its jobs counted by status (the console's
-- "planned against actual", issue 22; a pipeline's batches are of
-- contexts, each with its steps' jobs); NULL for any other execution.
SELECT (cronvisor_execution_json(x)
        || jsonb_build_object('jobs', cronvisor_execution_counts(x.id),
                              'schedule_name', s.name,
                              'pipeline', cronvisor_execution_steps(x),
                              'batches', CASE WHEN x.metadata ? 'fanout' THEN (
            SELECT coalesce(jsonb_agg(jsonb_build_object(
                       'batch', b.batch,
                       'planned_at', cronvisor_time(fr.started_at
                           + make_interval(secs => b.batch
                               * (x.metadata #>> '{fanout,stagger_ms}')::bigint
                               / 1000.0)),
                       'first_started_at', cronvisor_time(b.first),
                       'jobs', b.jobs) ORDER BY b.batch), '[]')
            FROM (SELECT j.batch, min(a.started_at) AS first,
                         jsonb_build_object(
                             'pending', count(*) FILTER (WHERE j.status = 'pending'),
                             'running', count(*) FILTER (WHERE j.status = 'running'),
                             'completed', count(*) FILTER (WHERE j.status = 'completed'),
                             'failed', count(*) FILTER (WHERE j.status = 'failed'),
                             'skipped', count(*) FILTER (WHERE j.status = 'skipped'))
                             AS jobs
                  FROM jobs j
                  LEFT JOIN LATERAL (SELECT min(r.started_at) AS started_at
                                     FROM runs r WHERE r.job_id = j.id) a ON true
                  WHERE j.execution_id = x.id AND j.batch IS NOT NULL
                  GROUP BY j.batch) b
            LEFT JOIN runs fr ON fr.id = x.run_id) END))::text
FROM executions x JOIN schedules s ON s.id = x.schedule_id
WHERE x.id = $1 AND s.deleted_at IS NULL
  AND ($2::text IS NULL OR s.owner = $2);

-- name: api_executions_retry
-- POST /executions/{id}/retry-failed: the failed jobs of execution $1
-- (its schedule visible to scope $2, not deleted) pending again, ready
-- now, with their retry budget back (spent 0; attempts count on, so each
-- new attempt has an id of its own), and the execution running again.
-- Only a fan-out's or pipeline's execution (a pipeline's steps not run
-- in the contexts of the jobs retried wait again): a one-job execution
-- answers kind 'one'.
-- Returns the execution's kind ('fanout', 'one') and the jobs retried;
-- no row: not found.  The supervisors are woken when any was.
WITH x AS (
    SELECT x.id, x.run_id IS NOT NULL AS fan
    FROM executions x JOIN schedules s ON s.id = x.schedule_id
    WHERE x.id = $1 AND s.deleted_at IS NULL
      AND ($2::text IS NULL OR s.owner = $2)
    FOR UPDATE OF x),
j AS (
    UPDATE jobs
    SET status = 'pending',
        ready_at = CASE WHEN jobs.context IS NULL THEN now() END,
        error = NULL, result = NULL,
        finished_at = NULL, spent = 0, updated_at = now()
    FROM x
    WHERE x.fan AND jobs.execution_id = x.id AND jobs.status = 'failed'
    RETURNING jobs.id, jobs.context),
-- A pipeline's failed steps, and its steps not run in their contexts,
-- wait again: the next claim decides those contexts anew (redecide),
-- so that a step goes only once the steps it depends on allow it.
k AS (
    UPDATE jobs
    SET status = 'pending', ready_at = NULL, wait_reason = NULL,
        finished_at = NULL, updated_at = now()
    FROM x
    WHERE jobs.execution_id = x.id AND jobs.status = 'skipped'
      AND jobs.context IN (SELECT context FROM j)),
u AS (
    UPDATE executions e
    SET status = 'running', finished_at = NULL, updated_at = now(),
        redecide = EXISTS (SELECT 1 FROM j WHERE j.context IS NOT NULL)
    FROM x
    WHERE e.id = x.id AND (SELECT count(*) FROM j) > 0
    RETURNING e.*),
w AS (
    SELECT pg_notify('cronvisor_wake', '') FROM x
    WHERE (SELECT count(*) FROM j) > 0)
SELECT CASE WHEN x.fan THEN 'fanout' ELSE 'one' END,
       (SELECT count(*) FROM j), (SELECT count(*) FROM u),
       (SELECT count(*) FROM w)
FROM x;

-- name: api_jobs_list
-- A page of the jobs of execution $1 (scope $2), oldest first, $3 a
-- status or NULL; after the cursor ($4 created_at in µs, $5 the id), $6
-- rows at most.  No row at all is a 404; the execution's one row with
-- NULLs when it has no job (that matches).
WITH x AS (
    SELECT x.id FROM executions x JOIN schedules s ON s.id = x.schedule_id
    WHERE x.id = $1 AND s.deleted_at IS NULL
      AND ($2::text IS NULL OR s.owner = $2))
SELECT cronvisor_job_json(j)::text,
       (extract(epoch FROM j.created_at) * 1000000)::bigint, j.id
FROM x
LEFT JOIN LATERAL (
    SELECT * FROM jobs j
    WHERE j.execution_id = x.id
      AND ($3::text IS NULL OR j.status = $3)
      AND ($4::bigint IS NULL
           OR (j.created_at, j.id) > ('epoch'::timestamptz
                                      + $4::bigint * interval '1 microsecond',
                                      $5::uuid))
    ORDER BY j.created_at, j.id
    LIMIT $6) j ON true
ORDER BY j.created_at, j.id;

-- name: api_jobs_get
-- Job $1, if its schedule is visible to scope $2, with its attempts (its
-- runs, the first first; at most the last 100).
SELECT (cronvisor_job_json(j)
        || jsonb_build_object('attempts', coalesce((
               SELECT jsonb_agg(cronvisor_run_json(r) ORDER BY r.attempt)
               FROM (SELECT * FROM runs r WHERE r.job_id = j.id
                     ORDER BY r.attempt DESC LIMIT 100) r), '[]')))::text
FROM jobs j JOIN schedules s ON s.id = j.schedule_id
WHERE j.id = $1 AND s.deleted_at IS NULL
  AND ($2::text IS NULL OR s.owner = $2);
