-- finish.sql: the statements of supervisor/finish.c, which writes the
-- results of runs and moves their schedules on.  A run row is updated
-- only while it is still `running` under the lease given (the fencing
-- token): a result whose run is no longer ours changes nothing.  Times of
-- slots are epoch ms (slot_ms()): a slot keeps the milliseconds of the
-- instant the user gave.

-- name: finish_runs
-- The results of runs of distinct schedules, one or many, in one
-- statement: $1 the lease, $2 a JSON array of the results (run_row() in
-- finish.c).  The schedules' rows come back locked in id order (the order
-- every batch locks them in), each with the id of its run after its
-- columns (at SCHED_COL_COUNT); a run no longer ours has no row (a
-- schedule row goes only once no run of it is in flight).  finished_at is
-- when the run ended (`ended`, µs, on the supervisor's clock, the one it
-- claims by), not when its result could be written: the database may have
-- been away meanwhile.  A run declared lost has no end of its own (NULL):
-- it ends when it is declared.  v is MATERIALIZED so that the JSON is read
-- once: inlined, it was read again for every run of ours in flight.
WITH v AS MATERIALIZED (
    SELECT * FROM json_to_recordset($2::json)
        AS v(id text, status text, duration bigint, exit_code integer,
             signal integer, http_status integer, cpu_user bigint,
             cpu_sys bigint, rss bigint, output text, error text,
             pid integer, ended bigint, result jsonb)),
r AS (
    UPDATE runs
    SET status = v.status,
        finished_at = greatest(runs.started_at,
                               coalesce(to_timestamp(v.ended::float8 / 1e6),
                                        now())),
        duration_ms = v.duration, exit_code = v.exit_code,
        signal = v.signal, http_status = v.http_status,
        cpu_user_ms = v.cpu_user, cpu_sys_ms = v.cpu_sys,
        max_rss_kb = v.rss, output = v.output, error = v.error, pid = v.pid,
        result = coalesce(v.result, runs.result)
    FROM v
    WHERE runs.id = v.id AND runs.supervisor_id = $1
      AND runs.status = 'running'
    RETURNING runs.id AS run_id, runs.schedule_id AS run_schedule)
SELECT {{sched}}, r.run_id
FROM schedules JOIN r ON schedules.id = r.run_schedule
ORDER BY schedules.id
FOR UPDATE OF schedules;

-- name: finish_lock
-- The schedules of $1, a JSON array of ids, locked in id order.
SELECT 1 FROM schedules
WHERE id IN (SELECT value::uuid FROM json_array_elements_text($1::json))
ORDER BY id
FOR UPDATE;

-- name: finish_states
-- The new state of schedules, one or many: $1 a JSON array (state_row()
-- in finish.c, what decide_finish() in decide.c said).  next_run_at is
-- now() + delay when there is a delay (anchor: completion), and
-- next_slot_at too with slot_too.  A row with queue adds a retry of its
-- slot (retry_slot, retry_repeat, attempt = retry) due after retry_delay
-- seconds; with from_retries next_run_at is the earliest retry (the new
-- one counted: the retries subquery sees the table as it was before this
-- statement).  A schedule no longer active loses the retries it had.
-- The error texts are PostgreSQL text already (finish_text()).
WITH v AS MATERIALIZED (
    SELECT * FROM json_to_recordset($1::json)
        AS v(id uuid, status text, repeat bigint, retry bigint,
             retry_pending boolean, next_slot bigint, next_run bigint,
             counts_run bigint, counts_error bigint, error text,
             delay bigint, slot_too boolean, queue boolean,
             retry_slot bigint, retry_repeat bigint, retry_delay bigint,
             from_retries boolean)),
queued AS (
    INSERT INTO retries (schedule_id, slot_at, repeat_number, attempt,
                         due_at)
    SELECT id, to_timestamp(retry_slot::float8 / 1e3), retry_repeat, retry,
           now() + make_interval(secs => retry_delay)
    FROM v WHERE queue
    ON CONFLICT (schedule_id, slot_at) DO UPDATE
    SET repeat_number = excluded.repeat_number, attempt = excluded.attempt,
        due_at = excluded.due_at),
dropped AS (
    DELETE FROM retries USING v
    WHERE retries.schedule_id = v.id AND v.status <> 'active')
UPDATE schedules
SET status = v.status, current_repeat = v.repeat, current_retry = v.retry,
    retry_pending = v.retry_pending,
    next_slot_at = CASE WHEN v.slot_too
                        THEN now() + make_interval(secs => v.delay)
                        ELSE to_timestamp(v.next_slot::float8 / 1e3) END,
    next_run_at = CASE
        WHEN v.from_retries
        THEN least((SELECT min(r.due_at) FROM retries r
                    WHERE r.schedule_id = v.id),
                   CASE WHEN v.queue
                        THEN now() + make_interval(secs => v.retry_delay)
                   END)
        WHEN v.delay IS NULL THEN to_timestamp(v.next_run::float8 / 1e3)
        ELSE now() + make_interval(secs => v.delay) END,
    run_count = run_count + v.counts_run,
    error_count = error_count + v.counts_error,
    last_error = coalesce(v.error, last_error),
    running = greatest(running - 1, 0), updated_at = now()
FROM v
WHERE schedules.id = v.id;

-- name: finish_triggered
-- The end of a triggered run.  It also releases a slot held back because
-- this run was in flight: the schedule is active, nothing is due
-- (next_run_at NULL), a slot is pending, no retry waits, and no other run
-- is in flight.  That is a slot of `overlap: buffer_one`, the slot of a
-- once schedule (claim.c), or the slot a resume or a new timing left for
-- the end of the runs in flight (api/schedules.c).  A slot run's end
-- releases it in decide(); a retry or an `anchor: completion` run in
-- flight also leaves next_run_at NULL, but counts in running.  `running`
-- on the right is the value before this update.
UPDATE schedules
SET running = greatest(running - 1, 0),
    next_run_at = CASE WHEN status = 'active' AND next_run_at IS NULL
                            AND next_slot_at IS NOT NULL
                            AND NOT retry_pending AND running <= 1
                       THEN next_slot_at ELSE next_run_at END,
    updated_at = now()
WHERE id = $1
RETURNING deleted_at IS NOT NULL;

-- name: finish_drop
-- A deleted schedule goes once no run of it is in flight.
DELETE FROM schedules
WHERE id = $1 AND deleted_at IS NOT NULL AND running = 0;

-- name: finish_counts
-- A schedule no longer active, or whose row cannot be read: one run in
-- flight fewer, and its counters ($2 runs, $3 errors, $4 last_error).
UPDATE schedules
SET running = greatest(running - 1, 0), run_count = run_count + $2,
    error_count = error_count + $3, last_error = coalesce($4, last_error),
    updated_at = now()
WHERE id = $1;

-- name: finish_chain
-- For the end of a retry of schedule $1: the latest slot with a row (a
-- run of any attempt, or a slot that did not run), whole seconds, NULL
-- when none; and the retries of other slots that wait (retries rows) or
-- run (the run just recorded is no longer `running`).
SELECT (SELECT floor(extract(epoch FROM max(slot_at)))::bigint
        FROM runs WHERE schedule_id = $1 AND NOT triggered
          AND kind <> 'job'),
       (SELECT count(*) FROM retries WHERE schedule_id = $1)
       + (SELECT count(*) FROM runs
          WHERE schedule_id = $1 AND status = 'running' AND attempt > 0
            AND NOT triggered AND kind <> 'job');

-- name: finish_jobs
-- The jobs of runs ended by this transaction, $1 a JSON array of {id}
-- (a slot's attempt, after its schedule moved on) or {id, again, delay,
-- spent} (a fan-out job's attempt, with what follows: fanout_next()).  A
-- job whose run succeeded is completed with its result; one that goes
-- again waits, pending (a slot's when a retry of its slot is queued, a
-- retries row; a fan-out job's when again, ready after delay ms, with the
-- failures it has counted); any other failed, with the run's error.
-- Returns each job's execution, the job, whether it failed and its
-- pipeline context (pipeline_advance_rows() decides those again), for
-- cronvisor_execution_settle() (fanout_settle), which ends the executions
-- that have no job left pending or running.
WITH v AS MATERIALIZED (
    SELECT * FROM json_to_recordset($1::json)
        AS v(id text, again boolean, delay bigint, spent integer)),
r AS MATERIALIZED (
    SELECT runs.job_id, runs.status, runs.error, runs.http_status,
           runs.exit_code, runs.finished_at, runs.result,
           runs.kind = 'job' AS fan, v.delay, v.spent,
           coalesce(v.again, runs.kind = 'slot' AND NOT runs.triggered
                             AND EXISTS (
               SELECT 1 FROM retries q
               WHERE q.schedule_id = runs.schedule_id
                 AND q.slot_at = runs.slot_at)) AS again
    FROM v JOIN runs ON runs.id = v.id
    WHERE runs.job_id IS NOT NULL
      AND runs.status NOT IN ('running', 'waiting'))
UPDATE jobs
SET status = CASE WHEN r.status = 'succeeded' THEN 'completed'
                  WHEN r.again THEN 'pending' ELSE 'failed' END,
    ready_at = CASE WHEN r.fan AND r.status <> 'succeeded' AND r.again
                    THEN now() + make_interval(secs => r.delay / 1000.0)
                    ELSE jobs.ready_at END,
    attempts = jobs.attempts + r.fan::int,
    spent = coalesce(r.spent, jobs.spent),
    result = CASE WHEN r.status = 'succeeded'
                  THEN coalesce(r.result, jsonb_strip_nulls(
                           jsonb_build_object(
                               'exit_code', r.exit_code,
                               'http_status', r.http_status)))
                  ELSE jobs.result END,
    enqueued_at = CASE WHEN r.status = 'succeeded'
                       THEN coalesce(jobs.enqueued_at, now())
                       ELSE jobs.enqueued_at END,
    error = CASE WHEN r.status = 'succeeded' THEN NULL
                 ELSE jsonb_build_object(
                          'message', coalesce(r.error, r.status),
                          'retryable', r.again) END,
    finished_at = CASE WHEN r.again AND r.status <> 'succeeded' THEN NULL
                       ELSE r.finished_at END,
    updated_at = now()
FROM r
WHERE jobs.id = r.job_id
RETURNING jobs.execution_id, jobs.id, jobs.status = 'failed', jobs.context;

-- name: finish_waiting
-- Attempts under lease $1 that their agents accepted (202), $2 a JSON
-- array of rows: the run id, the answer's status, its duration in ms and
-- its text.  Each waits for the agent's report without a lease (status
-- waiting: a supervisor that dies now loses nothing), in flight for its
-- schedule, until it expires at its deadline or at the heartbeat it owes.
-- A report that came already (the agent was quicker than this statement)
-- makes it expire at once.  Its job is enqueued, and its execution counts
-- it (one more, when the job was not enqueued before: a count of the
-- execution's jobs at every 202 was quadratic in a fan-out's size).
-- One statement for a batch: a burst of 202s ended one statement per
-- attempt before.  Returns the ids of the runs that were ours to write.
WITH v AS (
    SELECT * FROM json_to_recordset($2::json)
        AS v(id text, st bigint, ms bigint, out text)),
r AS (
    UPDATE runs
    SET status = 'waiting', http_status = v.st, duration_ms = v.ms,
        output = v.out,
        expires_at = CASE
            WHEN reported_at IS NOT NULL THEN reported_at
            WHEN heartbeat_seconds IS NULL THEN deadline_at
            ELSE least(deadline_at,
                       now() + make_interval(secs => heartbeat_seconds)) END
    FROM v
    WHERE runs.id = v.id AND runs.supervisor_id = $1
      AND runs.status = 'running'
    RETURNING runs.id, runs.job_id),
pre AS MATERIALIZED (
    SELECT jobs.execution_id,
           count(*) FILTER (WHERE jobs.enqueued_at IS NULL) AS fresh
    FROM r JOIN jobs ON jobs.id = r.job_id
    GROUP BY jobs.execution_id),
j AS (
    UPDATE jobs SET enqueued_at = coalesce(enqueued_at, now()),
                    updated_at = now()
    FROM r WHERE jobs.id = r.job_id),
x AS (
    UPDATE executions x
    SET jobs_enqueued = x.jobs_enqueued + pre.fresh, updated_at = now()
    FROM pre
    WHERE x.id = pre.execution_id)
SELECT id FROM r;
