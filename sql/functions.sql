-- functions.sql: the live definition of every SQL function of cronvisor.
-- `cronvisorctl db migrate` applies this file after the numbered
-- migrations, every time, in the same session and under the same lock,
-- in a transaction of its own (common/migrate.c): what is here is what
-- the database runs, whichever migration created or last changed a
-- function.  Migrations are history and keep the definitions they had; a
-- change to a function is made here, and only a new function's first
-- definition (or a change of its arguments or result type, which CREATE
-- OR REPLACE cannot make) needs a migration, which this file then
-- follows.  So every statement here is CREATE OR REPLACE, over the
-- schema of the newest migration.

-- Supervisors sleep until the earliest next_run_at; whatever moves a
-- schedule's next_run_at (the API, cronvisorctl, a hand-written UPDATE)
-- wakes them in the same transaction (trigger schedules_wake, 001).
-- Identical notifications of one transaction are folded into one by
-- PostgreSQL.
CREATE OR REPLACE FUNCTION cronvisor_wake() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = 'active' AND NEW.next_run_at IS NOT NULL AND
       (TG_OP = 'INSERT' OR NEW.next_run_at IS DISTINCT FROM OLD.next_run_at
        OR NEW.status IS DISTINCT FROM OLD.status) THEN
        PERFORM pg_notify('cronvisor_wake', '');
    END IF;
    RETURN NULL;
END $$;

-- A trigger-now request wakes the supervisors (trigger triggers_wake,
-- 002).
CREATE OR REPLACE FUNCTION cronvisor_trigger_wake() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('cronvisor_wake', '');
    RETURN NULL;
END $$;

-- Times as the API shows them: RFC 3339 in UTC, milliseconds when the
-- instant has a fraction of a second.
CREATE OR REPLACE FUNCTION cronvisor_time(t timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') ||
           CASE WHEN date_trunc('second', t) = t THEN ''
                ELSE to_char(t AT TIME ZONE 'UTC', '.MS') END || 'Z'
$$;

-- A schedules row as JSON: its columns under their own names (which are
-- the schedule document's), times formatted, internal columns left out.
-- The API reads the document fields back through common/schedule.c.
CREATE OR REPLACE FUNCTION cronvisor_schedule_json(s schedules) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT (to_jsonb(s) - ARRAY['id8', 'next_slot_at', 'slot_seq', 'running',
                                'retry_pending', 'config_hash',
                                'deleted_at', 'idempotency_key',
                                'idempotency_hash', 'doc_text', 'doc_masked'])
        || jsonb_build_object(
               'at', cronvisor_time(s.at),
               'start_at', cronvisor_time(s.start_at),
               'last_run_at', cronvisor_time(s.last_run_at),
               'next_run_at', cronvisor_time(s.next_run_at),
               'created_at', cronvisor_time(s.created_at),
               'updated_at', cronvisor_time(s.updated_at),
               'runs_in_flight', s.running)
$$;

-- Schedule p's whole JSON as text, for a list's row that keeps no
-- document (api_listed in sql/queries/api.sql).  PL/pgSQL, so that the
-- list's statement does not take it in: planned in the statement, its
-- subquery and cronvisor_schedule_json() cost more than the rest of a
-- list's planning, which the API does for most lists (issue 22).
CREATE OR REPLACE FUNCTION cronvisor_schedule_text(p uuid) RETURNS text
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT cronvisor_schedule_json(x)::text
            FROM schedules x WHERE x.id = p);
END $$;

-- A document column written without doc_text (021_schedule_doc.sql):
-- the kept document is stale, forgotten.
CREATE OR REPLACE FUNCTION cronvisor_schedule_doc_stale() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.doc_text IS NOT DISTINCT FROM OLD.doc_text THEN
        NEW.doc_text := NULL;
        NEW.doc_masked := NULL;
    END IF;
    RETURN NEW;
END
$$;

-- A runs row as the API returns it (docs/schedules.md, "Runs");
-- supervisor is the name of the supervisor that ran it.
CREATE OR REPLACE FUNCTION cronvisor_run_json(r runs) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT (to_jsonb(r) - ARRAY['supervisor_id', 'pid', 'created_at',
                                'callback_hash', 'expires_at'])
        || jsonb_build_object(
               'slot_at', cronvisor_time(r.slot_at),
               'started_at', cronvisor_time(r.started_at),
               'finished_at', cronvisor_time(r.finished_at),
               'deadline_at', cronvisor_time(r.deadline_at),
               'heartbeat_at', cronvisor_time(r.heartbeat_at),
               'reported_at', cronvisor_time(r.reported_at),
               'supervisor', (SELECT name FROM supervisors
                              WHERE id = r.supervisor_id))
$$;

-- A run's job (trigger runs_job, 007): the insert of a run that starts
-- (not a slot that did not run) finds its job, or makes its execution and
-- job.  A run given a job_id is an attempt of that job (an agent's,
-- made first).  A retry of a slot (attempt > 0) is an attempt of the
-- slot's job; a trigger-now run is an execution of its own.  A run whose
-- (schedule, slot, attempt) exists already is refused by runs' unique key
-- (ON CONFLICT DO NOTHING in the claim): it touches no job either.
CREATE OR REPLACE FUNCTION cronvisor_run_job() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    x uuid;
    j uuid;
BEGIN
    IF NEW.status IN ('skipped', 'missed', 'expired') THEN
        RETURN NEW;
    END IF;
    IF NEW.job_id IS NULL THEN
        -- The attempt of a slot whose agent target has a data-source
        -- param expands it (013_fanout.sql): its execution has no job
        -- until the expansion writes them.
        -- A pipeline's always does (014_pipeline_runs.sql).
        IF NEW.kind = 'slot' AND (EXISTS (
               SELECT 1 FROM schedules s,
                             jsonb_each(CASE WHEN jsonb_typeof(s.target -> 'params')
                                                  = 'object'
                                             THEN s.target -> 'params' END) p
               WHERE s.id = NEW.schedule_id AND s.target ->> 'type' = 'agent'
                 AND jsonb_typeof(p.value) = 'string'
                 AND left(p.value #>> '{}', 3) = 'db:') OR EXISTS (
               SELECT 1 FROM schedules s
               WHERE s.id = NEW.schedule_id
                 AND s.target ->> 'type' = 'pipeline')) THEN
            NEW.kind := 'fanout';
        END IF;
        IF NOT NEW.triggered THEN
            IF EXISTS (SELECT 1 FROM runs
                       WHERE schedule_id = NEW.schedule_id
                         AND slot_at = NEW.slot_at
                         AND attempt = NEW.attempt AND NOT triggered
                         AND kind <> 'job') THEN
                RETURN NEW;
            END IF;
            SELECT id INTO x FROM executions
            WHERE schedule_id = NEW.schedule_id AND slot_at = NEW.slot_at
              AND trigger_run IS NULL;
        END IF;
        IF NEW.kind = 'fanout' THEN
            IF x IS NULL THEN
                INSERT INTO executions (schedule_id, slot_at, trigger_run,
                                        run_id)
                VALUES (NEW.schedule_id, NEW.slot_at,
                        CASE WHEN NEW.triggered THEN NEW.id END, NEW.id);
            ELSE
                UPDATE executions
                SET run_id = NEW.id, status = 'running', finished_at = NULL,
                    updated_at = now()
                WHERE id = x;
            END IF;
            RETURN NEW;
        END IF;
        IF x IS NULL THEN
            INSERT INTO executions (schedule_id, slot_at, trigger_run,
                                    jobs_created, jobs_enqueued)
            VALUES (NEW.schedule_id, NEW.slot_at,
                    CASE WHEN NEW.triggered THEN NEW.id END, 1, 1)
            RETURNING id INTO x;
            INSERT INTO jobs (execution_id, schedule_id, status, enqueued_at)
            VALUES (x, NEW.schedule_id, 'running', now())
            RETURNING id INTO j;
            NEW.job_id := j;
            RETURN NEW;
        END IF;
        SELECT id INTO NEW.job_id FROM jobs
        WHERE execution_id = x AND job_key = '';
        IF NEW.job_id IS NULL THEN
            -- The slot fanned out before its target was changed: its
            -- retry is a job of its own in the same execution.
            INSERT INTO jobs (execution_id, schedule_id, status, enqueued_at)
            VALUES (x, NEW.schedule_id, 'running', now())
            RETURNING id INTO NEW.job_id;
            UPDATE executions SET jobs_created = jobs_created + 1,
                                  status = 'running', finished_at = NULL
            WHERE id = x;
        END IF;
    END IF;
    -- A claim of fan-out jobs that says so (claim_jobs_lock) moves the
    -- jobs of the attempts it inserts itself, in one set: row by row here
    -- cost a plan of plpgsql, two lookups and an update each.
    IF NEW.kind = 'job'
       AND current_setting('cronvisor.claim_moves_jobs', true) = 'on' THEN
        RETURN NEW;
    END IF;
    -- An attempt whose row exists already is refused by the insert's
    -- ON CONFLICT: it touches its job no more than it touches the table.
    -- (Two lookups, each by its index: an OR of the two is a scan.)
    IF NEW.kind = 'job' AND (
           EXISTS (SELECT 1 FROM runs WHERE id = NEW.id) OR
           EXISTS (SELECT 1 FROM runs
                   WHERE job_id = NEW.job_id AND attempt = NEW.attempt
                     AND kind = 'job')) THEN
        RETURN NEW;
    END IF;
    IF NEW.status = 'running' THEN
        UPDATE jobs SET status = 'running', finished_at = NULL,
                        wait_reason = NULL, updated_at = now()
        WHERE id = NEW.job_id;
    END IF;
    RETURN NEW;
END $$;

-- An executions row as the API returns it (docs/executions.md), with
-- its jobs counted by status.
CREATE OR REPLACE FUNCTION cronvisor_execution_json(x executions) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT (to_jsonb(x) - ARRAY['trigger_run'])
        || jsonb_build_object(
               'slot_at', cronvisor_time(x.slot_at),
               'created_at', cronvisor_time(x.created_at),
               'updated_at', cronvisor_time(x.updated_at),
               'finished_at', cronvisor_time(x.finished_at),
               'triggered', x.trigger_run IS NOT NULL)
$$;

CREATE OR REPLACE FUNCTION cronvisor_execution_counts(x uuid) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
               'pending', count(*) FILTER (WHERE status = 'pending'),
               'running', count(*) FILTER (WHERE status = 'running'),
               'completed', count(*) FILTER (WHERE status = 'completed'),
               'failed', count(*) FILTER (WHERE status = 'failed'),
               'skipped', count(*) FILTER (WHERE status = 'skipped'))
    FROM jobs WHERE execution_id = x
$$;

-- A pipeline's execution, step by step (docs/orchestration.md): each step
-- of its pipeline with its jobs (one per context) counted by status;
-- NULL for an execution that is not a pipeline's.
CREATE OR REPLACE FUNCTION cronvisor_execution_steps(x executions)
RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
               'pipeline_id', x.metadata #>> '{pipeline,pipeline_id}',
               'fail_fast', (x.metadata #>> '{pipeline,fail_fast}')::boolean,
               'contexts', (x.metadata #>> '{pipeline,contexts}')::bigint,
               'steps', coalesce((
                   SELECT jsonb_agg(jsonb_build_object(
                              'step_id', st.value ->> 'step_id',
                              'agent_id', st.value ->> 'agent_id',
                              'depends_on', coalesce(st.value -> 'depends_on',
                                                     '[]'),
                              'jobs', (
                                  SELECT jsonb_build_object(
                                      'pending', count(*) FILTER (WHERE j.status = 'pending'),
                                      'running', count(*) FILTER (WHERE j.status = 'running'),
                                      'completed', count(*) FILTER (WHERE j.status = 'completed'),
                                      'failed', count(*) FILTER (WHERE j.status = 'failed'),
                                      'skipped', count(*) FILTER (WHERE j.status = 'skipped'))
                                  FROM jobs j
                                  WHERE j.execution_id = x.id
                                    AND j.context IS NOT NULL
                                    AND j.step = st.k - 1))
                          ORDER BY st.k)
                   FROM jsonb_array_elements(x.metadata #> '{pipeline,steps}')
                        WITH ORDINALITY AS st(value, k)), '[]'))
    WHERE x.metadata ? 'pipeline'
$$;

-- A jobs row as the API returns it; attempts is how many runs it had.
-- A pending job of an agent that is unhealthy, whose jobs wait for it
-- (when_unhealthy: wait), says so in wait_reason; a pipeline step's says
-- why it waits, or why it was not run (skipped).
CREATE OR REPLACE FUNCTION cronvisor_job_json(j jobs) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT (to_jsonb(j) - ARRAY['job_key'])
        || jsonb_build_object(
               'job_id', j.id,
               'enqueued_at', cronvisor_time(j.enqueued_at),
               'ready_at', cronvisor_time(j.ready_at),
               'created_at', cronvisor_time(j.created_at),
               'updated_at', cronvisor_time(j.updated_at),
               'finished_at', cronvisor_time(j.finished_at),
               'attempt_count', (SELECT count(*) FROM runs r
                                 WHERE r.job_id = j.id),
               -- A pipeline's step: why it waits or was not run.
               'step_id', j.pipeline_step_id,
               'wait_reason', coalesce(
                   CASE WHEN j.status = 'pending' AND j.agent_id IS NOT NULL THEN (
                       SELECT 'agent ' || a.agent_id
                              || ' is unhealthy (when_unhealthy: wait), probed at '
                              || cronvisor_time(a.health_checked_at) || ': '
                              || coalesce(a.health_error,
                                          'its health probe failed')
                       FROM schedules s JOIN agents a ON a.owner = s.owner
                       WHERE s.id = j.schedule_id AND a.agent_id = j.agent_id
                         AND a.enabled AND a.health_url IS NOT NULL
                         AND a.healthy IS FALSE AND a.when_unhealthy = 'wait')
                   END,
                   j.wait_reason,
                   CASE WHEN j.status = 'pending' AND j.context IS NOT NULL
                             AND j.ready_at IS NULL
                        THEN 'waiting for the steps it depends on' END))
$$;

-- An agents row as the API returns it (docs/agents.md): never its
-- secret, only whether one is set; its deployed versions by environment.
CREATE OR REPLACE FUNCTION cronvisor_agent_json(a agents) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'agent_id', a.agent_id, 'owner', a.owner, 'name', a.name,
        'description', a.description, 'endpoint', a.endpoint,
        'auth', jsonb_strip_nulls(jsonb_build_object(
            'type', a.auth_type, 'username', a.auth_username,
            'secret_set', CASE WHEN a.auth_type <> 'none'
                               THEN a.auth_secret IS NOT NULL END)),
        'timeout_ms', a.timeout_ms,
        'max_concurrent_requests', a.max_concurrent_requests,
        'heartbeat_seconds', a.heartbeat_seconds,
        'health', CASE WHEN a.health_url IS NOT NULL THEN jsonb_build_object(
            'url', a.health_url,
            'interval_seconds', a.health_interval_seconds,
            'when_unhealthy', a.when_unhealthy) END,
        'input_schema', a.input_schema, 'enabled', a.enabled,
        'healthy', a.healthy, 'health_error', a.health_error,
        'health_checked_at', cronvisor_time(a.health_checked_at),
        'deployments', coalesce((
            SELECT jsonb_object_agg(d.environment, d.version)
            FROM agent_deployments d
            WHERE d.owner = a.owner AND d.agent_id = a.agent_id), '{}'),
        'apply_set', a.apply_set, 'created_by', a.created_by,
        'created_at', cronvisor_time(a.created_at),
        'updated_at', cronvisor_time(a.updated_at))
$$;

-- A pipeline as the API shows it (docs/orchestration.md).
CREATE OR REPLACE FUNCTION cronvisor_pipeline_json(p pipelines) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'pipeline_id', p.pipeline_id, 'owner', p.owner, 'name', p.name,
        'description', p.description, 'steps', p.steps,
        'fail_fast', p.fail_fast, 'enabled', p.enabled,
        'apply_set', p.apply_set, 'created_by', p.created_by, 'updated_by', p.updated_by,
        'created_at', cronvisor_time(p.created_at),
        'updated_at', cronvisor_time(p.updated_at))
$$;

CREATE OR REPLACE FUNCTION cronvisor_agent_version_json(v agent_versions)
RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'agent_id', v.agent_id, 'version', v.version,
        'endpoint', v.endpoint, 'input_schema', v.input_schema,
        'description', v.description, 'created_by', v.created_by,
        'created_at', cronvisor_time(v.created_at),
        'environments', coalesce((
            SELECT jsonb_agg(d.environment ORDER BY d.environment)
            FROM agent_deployments d
            WHERE d.owner = v.owner AND d.agent_id = v.agent_id
              AND d.version = v.version), '[]'))
$$;

-- An agent's report on a job (docs/agents.md, "Reporting back"), through
-- the API or called by the agent itself with a database role that may
-- EXECUTE only this: p_kind 'complete' (p_status completed or failed,
-- p_result, p_error {message, retryable}) or 'heartbeat'.  The token is
-- the attempt's: only its SHA-256 is stored, and a token of an earlier
-- attempt of the job is refused as superseded.  The answer says what
-- happened: ok (recorded, the supervisors are woken), duplicate (this
-- very report was recorded before: nothing changes), unauthorized (no
-- attempt of the job has this token), superseded (a later attempt
-- exists), conflict (another report was recorded), ended (the attempt
-- ended without it: timed out, or stopped).  It runs as its owner (SECURITY
-- DEFINER) with a fixed search_path.
CREATE OR REPLACE FUNCTION cronvisor_job_report(p_job uuid, p_token text,
    p_kind text, p_status text, p_result jsonb, p_error jsonb)
RETURNS text LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public AS $$
DECLARE
    r runs;
    latest integer;
    rep jsonb;
BEGIN
    IF p_job IS NULL OR p_token IS NULL OR length(p_token) > 200 THEN
        RETURN 'unauthorized';
    END IF;
    -- Read without a lock: a report, once recorded, never changes, so a
    -- repeated one (an agent's retry) is answered without a row lock, a
    -- transaction id and a durable commit of its own; the UPDATE below
    -- checks again on the row it locks.
    SELECT * INTO r FROM runs
    WHERE job_id = p_job AND callback_hash = sha256(convert_to(p_token, 'UTF8'));
    IF NOT FOUND THEN
        RETURN 'unauthorized';
    END IF;
    SELECT max(attempt) INTO latest FROM runs WHERE job_id = p_job;
    IF r.attempt < latest THEN
        RETURN 'superseded';
    END IF;
    IF p_kind = 'heartbeat' THEN
        IF r.status NOT IN ('running', 'waiting') OR r.reported_at IS NOT NULL THEN
            RETURN 'ended';
        END IF;
        UPDATE runs
        SET heartbeat_at = now(),
            expires_at = CASE WHEN status = 'waiting' THEN least(deadline_at,
                now() + make_interval(secs => coalesce(heartbeat_seconds, 0)))
                ELSE expires_at END
        WHERE id = r.id AND heartbeat_seconds IS NOT NULL
          AND status IN ('running', 'waiting') AND reported_at IS NULL;
        IF NOT FOUND AND r.heartbeat_seconds IS NOT NULL THEN
            RETURN 'ended'; -- it ended since it was read
        END IF;
        RETURN 'ok';
    END IF;
    IF p_kind <> 'complete' OR p_status NOT IN ('completed', 'failed') THEN
        RETURN 'invalid';
    END IF;
    rep := jsonb_build_object('status', p_status, 'result', p_result,
                              'error', p_error);
    IF r.report IS NULL AND r.status IN ('running', 'waiting') THEN
        -- expires_at = now(): a waiting attempt is taken back at once
        -- (claim_reports reads the waiting ones in expires_at order).
        UPDATE runs SET report = rep, reported_at = now(), result = p_result,
                        expires_at = now()
        WHERE id = r.id AND report IS NULL
          AND status IN ('running', 'waiting');
        IF NOT FOUND THEN -- another report, or the attempt's end, came first
            SELECT * INTO r FROM runs WHERE id = r.id;
            IF NOT FOUND THEN -- and its schedule went with its runs
                RETURN 'ended';
            END IF;
        END IF;
    END IF;
    IF r.report IS NOT NULL THEN
        RETURN CASE WHEN r.report = rep THEN 'duplicate' ELSE 'conflict' END;
    END IF;
    IF r.status NOT IN ('running', 'waiting') THEN
        RETURN 'ended';
    END IF;
    -- 'report': the supervisors gather reports for a moment and take
    -- them back together (cronvisord.c, REPORT_GATHER_MS).
    PERFORM pg_notify('cronvisor_wake', 'report');
    RETURN 'ok';
END $$;
REVOKE ALL ON FUNCTION cronvisor_job_report(uuid, text, text, text, jsonb,
    jsonb) FROM PUBLIC;

-- The agents that take no request now, as (owner, agent_id) rows, for
-- the claim and the supervisor's next wake (claim.sql, cronvisord.sql),
-- computed once per statement rather than once per due schedule (with a
-- backlog of thousands due for a saturated agent, a count per row made
-- every claim cost as much as the backlog): one row of NULLs when the
-- requests in flight in all reach p_max (the global
-- max_concurrent_requests: every agent waits), each agent whose own
-- max_concurrent_requests is reached, counted from the attempts that run
-- (a supervisor killed with requests in flight holds them until a peer
-- declares them lost), and each whose last health probe failed while its
-- jobs wait for it (when_unhealthy: wait; a probe that succeeds wakes the
-- supervisors).
CREATE OR REPLACE FUNCTION cronvisor_agents_blocked(p_max bigint)
RETURNS TABLE (b_owner text, b_agent text)
LANGUAGE sql STABLE AS $$
    WITH inflight AS MATERIALIZED (
        SELECT s.owner AS f_owner, j.agent_id AS f_agent, count(*) AS f_n
        FROM runs r JOIN jobs j ON j.id = r.job_id
        JOIN schedules s ON s.id = r.schedule_id
        WHERE r.status = 'running' AND j.agent_id IS NOT NULL
        GROUP BY s.owner, j.agent_id)
    SELECT NULL::text, NULL::text
    WHERE (SELECT coalesce(sum(f_n), 0) FROM inflight) >= p_max
    UNION ALL
    SELECT a.owner, a.agent_id
    FROM inflight i JOIN agents a
        ON a.owner = i.f_owner AND a.agent_id = i.f_agent
    WHERE a.max_concurrent_requests > 0 AND i.f_n >= a.max_concurrent_requests
    UNION ALL
    SELECT a.owner, a.agent_id FROM agents a
    WHERE a.enabled AND a.health_url IS NOT NULL AND a.healthy IS FALSE
      AND a.when_unhealthy = 'wait'
$$;

-- The executions p_exec after some of their jobs ended (p_failed:
-- the jobs that failed for good just now, whose errors join the
-- execution's): running while a job is pending or running; then success
-- when every job completed (none: no value), failed when none did or
-- more failed than the fan-out tolerates (its string's maxFailures or
-- maxFailuresPercent, in metadata.fanout), partial otherwise.  A fan-out's execution that ended reports its fanout
-- attempt (its result: the counts and the expansion's summary), which waits for it
-- (013_fanout.sql): a supervisor takes that attempt back (claim_reports)
-- and ends it as the execution ended, which moves the schedule on.
-- Returns how many ended.
-- The errors of the jobs p_failed (some just failed for good) that an
-- execution records, in the order of its jobs: at most 1,000 in all, the
-- first ones (016_execution_errors.sql).  A join with the array, not a
-- search of it for every job: 100,000 failed at once (a deleted plan)
-- were a quadratic search.
CREATE OR REPLACE FUNCTION cronvisor_execution_errors(x executions,
    p_failed uuid[]) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'message', j.error -> 'message', 'job_id', j.id,
               'at', cronvisor_time(j.finished_at)) ORDER BY j.seq), '[]')
    FROM (SELECT j.* FROM unnest(p_failed) f(id)
          JOIN jobs j ON j.id = f.id
          WHERE j.execution_id = x.id
          ORDER BY j.seq
          LIMIT greatest(0, 1000 - jsonb_array_length(x.errors))) j
$$;

CREATE OR REPLACE FUNCTION cronvisor_execution_settle(p_exec uuid[],
    p_failed uuid[]) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    -- Locked first (in id order, as every writer does), so that the
    -- counts below, a statement of their own, see every job end that
    -- committed before: two transactions ending the last two jobs each
    -- see the other's.
    PERFORM 1 FROM executions WHERE id = ANY (p_exec) ORDER BY id
    FOR UPDATE;
    -- One still open: only the errors of the jobs that failed, no count
    -- (a fan-out of 100,000 jobs would count them all at every end).
    UPDATE executions x
    SET errors = x.errors || cronvisor_execution_errors(x, p_failed),
        status = 'running', finished_at = NULL, updated_at = now()
    WHERE x.id = ANY (p_exec)
      AND EXISTS (SELECT 1 FROM jobs j
                  WHERE j.execution_id = x.id
                    AND j.status IN ('pending', 'running'));
    WITH t AS (
        SELECT e.id AS xid,
               count(j.id) FILTER (WHERE j.status IN ('pending', 'running')) AS open,
               count(j.id) FILTER (WHERE j.status = 'completed') AS ok,
               count(j.id) FILTER (WHERE j.status = 'failed') AS bad,
               count(j.id) FILTER (WHERE j.enqueued_at IS NOT NULL) AS enq
        FROM executions e LEFT JOIN jobs j ON j.execution_id = e.id
        WHERE e.id = ANY (p_exec)
          AND NOT EXISTS (SELECT 1 FROM jobs o
                          WHERE o.execution_id = e.id
                            AND o.status IN ('pending', 'running'))
        GROUP BY e.id),
    x AS (
        UPDATE executions x
        SET status = CASE WHEN t.open > 0 THEN 'running'
                          WHEN t.bad = 0 THEN 'success'
                          WHEN t.ok = 0 THEN 'failed'
                          WHEN t.bad > (x.metadata #>> '{fanout,max_failures}')::bigint
                          THEN 'failed'
                          WHEN t.bad * 100 > (x.metadata #>> '{fanout,max_failures_percent}')::bigint
                                             * (t.ok + t.bad)
                          THEN 'failed'
                          ELSE 'partial' END,
            errors = x.errors || cronvisor_execution_errors(x, p_failed),
            jobs_enqueued = t.enq,
            finished_at = CASE WHEN t.open > 0 THEN NULL ELSE now() END,
            updated_at = now()
        FROM t
        WHERE x.id = t.xid
        RETURNING x.id, x.run_id, x.status, t.ok, t.bad, t.open)
    UPDATE runs r
    SET report = jsonb_build_object(
            'status', CASE WHEN x.status = 'failed' THEN 'failed'
                           ELSE 'completed' END,
            'result', jsonb_build_object('execution_id', x.id,
                                         'status', x.status,
                                         'completed', x.ok, 'failed', x.bad,
                                         'expansion', r.output),
            'error', CASE WHEN x.status = 'failed' THEN jsonb_build_object(
                'message', CASE WHEN x.ok = 0
                                THEN 'every job of the execution failed ('
                                     || x.bad || ')'
                                ELSE x.bad || ' of the execution''s '
                                     || x.ok + x.bad || ' jobs failed, '
                                     || 'more than it tolerates' END,
                'retryable', false) END),
        reported_at = now(), expires_at = now()
    FROM x
    WHERE x.open = 0 AND r.id = x.run_id AND r.status = 'waiting';
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        PERFORM pg_notify('cronvisor_wake', 'report');
    END IF;
    RETURN n;
END $$;

-- Live events (017_events.sql, docs/events.md).  Each trigger runs once
-- per statement, over the rows it wrote, and writes one event per
-- transition: a run started, waiting, or ended (inserted ended: a skipped,
-- missed or expired slot); a job, an execution or a schedule whose status
-- changed (a job inserted pending is not one: its execution's
-- jobs_created says so); a schedule created, or deleted.  No NOTIFY: the
-- sequencer looks for new events every 50 ms (a notification would cost
-- every busy transaction a lock at its commit).
-- A run's or a job's event keeps its status and the one before (and a
-- failed job its error): what else the streams show of it is read from
-- its row when the event is read (cronvisor_event_json()), so that the
-- transactions that move thousands of jobs build no JSON for them.
CREATE OR REPLACE FUNCTION cronvisor_events_runs() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO events (at, type, owner, schedule_id, subject, data)
        SELECT coalesce(CASE WHEN n.status IN ('running', 'waiting')
                             THEN n.started_at ELSE n.finished_at END, now()),
               CASE n.status WHEN 'running' THEN 'run.started'
                             WHEN 'waiting' THEN 'run.waiting'
                             ELSE 'run.ended' END,
               s.owner, n.schedule_id, n.id,
               jsonb_build_object('status', n.status)
        FROM new_rows n JOIN schedules s ON s.id = n.schedule_id;
    ELSE
        INSERT INTO events (at, type, owner, schedule_id, subject, data)
        SELECT coalesce(CASE WHEN n.status IN ('running', 'waiting')
                             THEN now() ELSE n.finished_at END, now()),
               CASE n.status WHEN 'running' THEN 'run.started'
                             WHEN 'waiting' THEN 'run.waiting'
                             ELSE 'run.ended' END,
               s.owner, n.schedule_id, n.id,
               jsonb_build_object('status', n.status, 'from', o.status)
        FROM new_rows n JOIN old_rows o ON o.id = n.id
        JOIN schedules s ON s.id = n.schedule_id
        WHERE n.status IS DISTINCT FROM o.status;
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION cronvisor_events_jobs() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO events (type, owner, schedule_id, subject, data)
        SELECT 'job.status', s.owner, n.schedule_id, n.id::text,
               jsonb_build_object('status', n.status)
               || CASE WHEN n.status = 'failed' AND n.error IS NOT NULL
                       THEN jsonb_build_object('error', n.error)
                       ELSE '{}' END
        FROM new_rows n JOIN schedules s ON s.id = n.schedule_id
        WHERE n.status <> 'pending';
    ELSE
        INSERT INTO events (type, owner, schedule_id, subject, data)
        SELECT 'job.status', s.owner, n.schedule_id, n.id::text,
               jsonb_build_object('status', n.status, 'from', o.status)
               || CASE WHEN n.status = 'failed' AND n.error IS NOT NULL
                       THEN jsonb_build_object('error', n.error)
                       ELSE '{}' END
        FROM new_rows n JOIN old_rows o ON o.id = n.id
        JOIN schedules s ON s.id = n.schedule_id
        WHERE n.status IS DISTINCT FROM o.status;
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION cronvisor_event_execution(n executions,
                                                     from_status text)
RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object(
        'status', n.status, 'from', from_status,
        'slot_at', cronvisor_time(n.slot_at), 'run_id', n.run_id,
        'jobs_created', n.jobs_created, 'jobs_enqueued', n.jobs_enqueued,
        'finished_at', cronvisor_time(n.finished_at)))
$$;

CREATE OR REPLACE FUNCTION cronvisor_events_executions() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO events (type, owner, schedule_id, subject, data)
        SELECT 'execution.status', s.owner, n.schedule_id, n.id::text,
               cronvisor_event_execution(n, NULL)
        FROM new_rows n JOIN schedules s ON s.id = n.schedule_id;
    ELSE
        INSERT INTO events (type, owner, schedule_id, subject, data)
        SELECT 'execution.status', s.owner, n.schedule_id, n.id::text,
               cronvisor_event_execution(n, o.status)
        FROM new_rows n JOIN old_rows o ON o.id = n.id
        JOIN schedules s ON s.id = n.schedule_id
        WHERE n.status IS DISTINCT FROM o.status;
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION cronvisor_events_schedules() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO events (type, owner, schedule_id, subject, data)
        SELECT 'schedule.created', n.owner, n.id, n.id::text,
               jsonb_build_object('status', n.status, 'name', n.name)
        FROM new_rows n;
    ELSIF TG_OP = 'DELETE' THEN
        -- A row deleted at once (no run in flight); one soft-deleted
        -- first (deleted_at) had its event then.
        INSERT INTO events (type, owner, schedule_id, subject, data)
        SELECT 'schedule.deleted', o.owner, o.id, o.id::text,
               jsonb_build_object('status', o.status, 'name', o.name)
        FROM old_rows o
        WHERE o.deleted_at IS NULL;
    ELSE
        INSERT INTO events (type, owner, schedule_id, subject, data)
        SELECT CASE WHEN n.deleted_at IS NOT NULL AND o.deleted_at IS NULL
                    THEN 'schedule.deleted' ELSE 'schedule.status' END,
               n.owner, n.id, n.id::text,
               jsonb_strip_nulls(jsonb_build_object(
                   'status', n.status, 'from', o.status, 'name', n.name,
                   'last_error', nullif(left(n.last_error, 1000), '')))
        FROM new_rows n JOIN old_rows o ON o.id = n.id
        WHERE n.status IS DISTINCT FROM o.status
           OR (n.deleted_at IS NOT NULL AND o.deleted_at IS NULL);
    END IF;
    RETURN NULL;
END $$;

-- An event as the streams carry it (docs/events.md): a run's and a job's
-- with what their rows say now of what does not change (a run's end, once
-- it ended); nothing more of one whose row is gone (history retention).
CREATE OR REPLACE FUNCTION cronvisor_event_json(e events) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('seq', e.seq, 'type', e.type,
                              'at', cronvisor_time(e.at), 'owner', e.owner,
                              'schedule_id', e.schedule_id,
                              'subject', e.subject,
                              'data', coalesce(d.more, '{}') || e.data)
    FROM (SELECT CASE
              WHEN e.type LIKE 'run.%' THEN (
                  SELECT jsonb_strip_nulls(jsonb_build_object(
                             'kind', r.kind, 'attempt', r.attempt,
                             'repeat', r.repeat_number,
                             'slot_at', cronvisor_time(r.slot_at),
                             'job_id', r.job_id,
                             'started_at', cronvisor_time(r.started_at),
                             'triggered', r.triggered,
                             'supervisor_id', r.supervisor_id))
                         || CASE WHEN e.type = 'run.ended'
                                 THEN jsonb_strip_nulls(jsonb_build_object(
                                      'finished_at', cronvisor_time(r.finished_at),
                                      'duration_ms', r.duration_ms,
                                      'exit_code', r.exit_code,
                                      'signal', r.signal,
                                      'http_status', r.http_status,
                                      'error', left(r.error, 1000),
                                      'note', left(r.note, 1000)))
                                 ELSE '{}' END
                  FROM runs r WHERE r.id = e.subject)
              WHEN e.type = 'job.status' THEN (
                  SELECT jsonb_strip_nulls(jsonb_build_object(
                             'execution_id', j.execution_id,
                             'agent_id', j.agent_id,
                             'step_id', j.pipeline_step_id,
                             'context', j.context))
                  FROM jobs j WHERE j.id = e.subject::uuid)
          END AS more) d
$$;

-- The sequencer (docs/events.md): numbers up to p_max events not yet
-- numbered, in the order they were inserted, from the last seq given on;
-- returns how many.  The counter's row lock makes it one at a time
-- (the events worker of one supervisor calls it, holding the leader lock,
-- but a second caller would only wait); nothing else writes an event
-- once inserted but the prune, which takes numbered ones only.  Every row
-- it numbers commits with the counter, so a reader sees seqs with no gap.
-- The same transaction counts what the events say into metric_counts
-- (cronvisor_events_count()) and outcome_counts
-- (cronvisor_events_outcomes()) and queues the notifications they ask for
-- (cronvisor_events_notify()): each event once, whoever leads.  Readers
-- waiting for more (the API's event streams) are told the new last seq.
CREATE OR REPLACE FUNCTION cronvisor_events_sequence(p_max integer)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    last bigint;
    n bigint;
    batch cronvisor_event_head[];
BEGIN
    SELECT last_seq INTO last FROM events_state FOR UPDATE;
    WITH c AS (SELECT id FROM events WHERE seq IS NULL
               ORDER BY id LIMIT p_max),
    k AS (SELECT id, row_number() OVER (ORDER BY id) AS k FROM c),
    nb AS (UPDATE events e SET seq = last + k.k FROM k WHERE e.id = k.id
           RETURNING e.type, e.subject, e.data, e.seq, e.owner,
                     e.schedule_id, e.at),
    heads AS (SELECT coalesce(array_agg(
                  (nb.type, nb.subject, nb.data, nb.seq, nb.owner,
                   nb.schedule_id, nb.at)::cronvisor_event_head), '{}') AS a
              FROM nb)
    SELECT a INTO batch FROM heads;
    n := cronvisor_events_count(batch);
    PERFORM cronvisor_events_notify(batch);
    IF n > 0 THEN
        PERFORM cronvisor_events_outcomes(batch);
        UPDATE events_state SET last_seq = last + n;
        PERFORM pg_notify('cronvisor_sequenced', (last + n)::text);
    END IF;
    RETURN n;
END $$;

-- The notifications a batch of events being numbered asks for
-- (docs/operations.md, "Notifications"): a schedule that became dead
-- (kind dead), an execution that ended failed or partial (failed,
-- partial: one message per execution, however many of its jobs failed),
-- or success after its schedule's previous execution had not (recovery),
-- each to every enabled channel of the schedule's owner that wants that
-- kind and that schedule; one message per event and channel (msg_id).
-- Returns how many.
CREATE OR REPLACE FUNCTION cronvisor_events_notify(nb cronvisor_event_head[])
RETURNS bigint
LANGUAGE sql AS $$
    WITH b AS (SELECT * FROM unnest(nb)
               WHERE (type = 'schedule.status' AND data ->> 'status' = 'dead')
                  OR (type = 'execution.status'
                      AND data ->> 'status' IN ('failed', 'partial', 'success'))),
    k AS (
        SELECT b.*, s.name AS sname, s.last_error, s.error_count,
               x.id AS xid, x.slot_at, x.run_id, x.jobs_created,
               x.errors, x.status AS xstatus,
               CASE WHEN b.type = 'schedule.status' THEN 'dead'
                    WHEN b.data ->> 'status' IN ('failed', 'partial')
                    THEN b.data ->> 'status'
                    ELSE 'recovery' END AS kind
        FROM b JOIN schedules s ON s.id = b.schedule_id
        LEFT JOIN executions x
            ON b.type = 'execution.status' AND x.id = b.subject::uuid),
    r AS (
        SELECT k.* FROM k
        WHERE k.kind <> 'recovery'
           OR (SELECT p.status FROM executions p
               WHERE p.schedule_id = k.schedule_id AND p.id <> k.xid
                 AND p.finished_at IS NOT NULL
                 AND p.created_at <= (SELECT created_at FROM executions
                                      WHERE id = k.xid)
               ORDER BY p.created_at DESC, p.id DESC LIMIT 1)
              IN ('failed', 'partial')),
    ins AS (
        INSERT INTO notifications (msg_id, owner, channel_id, kind,
                                   schedule_id, subject, event_seq, payload)
        SELECT 'msg_' || r.seq || '_' || c.channel_id, c.owner, c.channel_id,
               r.kind, r.schedule_id, r.subject, r.seq,
               jsonb_build_object(
                   'type', 'cronvisor.schedule.' || r.kind,
                   'timestamp', cronvisor_time(now()),
                   'data', jsonb_strip_nulls(jsonb_build_object(
                       'kind', r.kind, 'owner', r.owner,
                       'schedule_id', r.schedule_id,
                       'schedule_name', r.sname,
                       'execution_id', r.xid, 'run_id', r.run_id,
                       'slot_at', cronvisor_time(r.slot_at),
                       'status', coalesce(r.xstatus, 'dead'),
                       'jobs_created', r.jobs_created,
                       'failed_jobs', CASE WHEN r.xid IS NOT NULL THEN
                           (SELECT count(*) FROM jobs j
                            WHERE j.execution_id = r.xid
                              AND j.status = 'failed') END,
                       'errors', CASE WHEN r.xid IS NOT NULL
                                      THEN (SELECT coalesce(jsonb_agg(e), '[]')
                                            FROM (SELECT e FROM jsonb_array_elements(r.errors) e
                                                  LIMIT 5) x5) END,
                       'last_error', nullif(left(r.last_error, 1000), ''),
                       'error_count', r.error_count,
                       'event_seq', r.seq)))
        FROM r JOIN notification_channels c
            ON c.owner = r.owner AND c.enabled AND r.kind = ANY(c.kinds)
           AND (c.schedule_ids IS NULL OR r.schedule_id = ANY(c.schedule_ids))
        ON CONFLICT (msg_id) DO NOTHING
        RETURNING 1)
    SELECT count(*) FROM ins
$$;

-- The metrics' counters moved by a batch of events being numbered (their
-- type, subject, data); returns how many events.  Labels take values from
-- fixed sets only (a run's status and kind, its schedule's target type,
-- why a slot did not run), never an id or a name.
CREATE OR REPLACE FUNCTION cronvisor_events_count(
    nb cronvisor_event_head[])
RETURNS bigint
LANGUAGE sql AS $$
    WITH b AS (SELECT * FROM unnest(nb)),
    re AS (
        SELECT r.status, r.kind, r.attempt, r.note,
               CASE WHEN s.target ->> 'type' IN ('exec', 'http', 'agent',
                                                 'pipeline', 'redis')
                    THEN s.target ->> 'type'
                    WHEN s.target IS NULL OR s.target = 'null'::jsonb
                    THEN 'receiver' ELSE 'other' END AS target,
               r.duration_ms / 1000.0 AS secs,
               CASE WHEN r.kind = 'slot' AND r.attempt = 0
                         AND NOT r.triggered
                         AND r.status NOT IN ('skipped', 'missed', 'expired')
                         AND r.duration_ms IS NOT NULL
                    THEN greatest(0, extract(epoch FROM r.finished_at - r.slot_at)
                                     - r.duration_ms / 1000.0) END AS lag
        FROM b JOIN runs r ON r.id = b.subject
        JOIN schedules s ON s.id = r.schedule_id
        WHERE b.type = 'run.ended'),
    d(le) AS (VALUES (0.005), (0.01), (0.05), (0.1), (0.25), (0.5), (1),
                     (2.5), (5), (10), (30), (60), (300), (1800), (3600),
                     ('Infinity'::numeric)),
    l(le) AS (VALUES (0.001), (0.0025), (0.005), (0.01), (0.025), (0.05),
                     (0.1), (0.25), (0.5), (1), (2.5), (5), (10), (30),
                     (60), ('Infinity'::numeric)),
    c(name, labels, v) AS (
        SELECT 'cronvisor_runs_total',
               format('kind="%s",status="%s",target="%s"', kind, status,
                      target),
               count(*)
        FROM re GROUP BY 1, 2
        UNION ALL
        SELECT 'cronvisor_slots_not_run_total',
               format('reason="%s",status="%s"',
                      CASE WHEN note ILIKE '%at its limit%' THEN 'owner_limit'
                           WHEN note ILIKE '%overlap%'
                                OR note ILIKE '%still running%'
                           THEN 'overlap'
                           WHEN status = 'missed' THEN 'catch_up'
                           WHEN status = 'expired' THEN 'too_late'
                           ELSE 'other' END, status),
               count(*)
        FROM re WHERE status IN ('skipped', 'missed', 'expired')
        GROUP BY 1, 2
        UNION ALL
        SELECT 'cronvisor_retries_total', '', count(*)
        FROM re WHERE attempt > 0 AND status NOT IN ('skipped', 'missed',
                                                     'expired')
        HAVING count(*) > 0
        UNION ALL
        SELECT 'cronvisor_jobs_total',
               format('status="%s"', b.data ->> 'status'), count(*)
        FROM b WHERE b.type = 'job.status'
          AND b.data ->> 'status' IN ('completed', 'failed', 'skipped')
        GROUP BY 1, 2
        UNION ALL
        SELECT 'cronvisor_executions_total',
               format('status="%s"', b.data ->> 'status'), count(*)
        FROM b WHERE b.type = 'execution.status'
          AND b.data ->> 'status' IN ('success', 'partial', 'failed')
        GROUP BY 1, 2
        UNION ALL
        SELECT 'cronvisor_schedules_dead_total', '', count(*)
        FROM b WHERE b.type = 'schedule.status'
          AND b.data ->> 'status' = 'dead'
        HAVING count(*) > 0
        UNION ALL
        SELECT 'cronvisor_callbacks_total', 'result="accepted"', count(*)
        FROM b WHERE b.type = 'run.ended' AND b.data ->> 'from' = 'waiting'
        HAVING count(*) > 0
        UNION ALL
        SELECT 'cronvisor_run_duration_seconds_bucket',
               format('target="%s",le="%s"', re.target,
                      CASE WHEN d.le = 'Infinity' THEN '+Inf'
                           ELSE d.le::text END),
               count(*)
        FROM re JOIN d ON re.secs <= d.le
        WHERE re.secs IS NOT NULL
        GROUP BY 1, 2
        UNION ALL
        SELECT 'cronvisor_run_duration_seconds_sum',
               format('target="%s"', target), sum(secs)
        FROM re WHERE secs IS NOT NULL GROUP BY 1, 2
        UNION ALL
        SELECT 'cronvisor_run_duration_seconds_count',
               format('target="%s"', target), count(*)
        FROM re WHERE secs IS NOT NULL GROUP BY 1, 2
        UNION ALL
        SELECT 'cronvisor_firing_lag_seconds_bucket',
               format('le="%s"', CASE WHEN l.le = 'Infinity' THEN '+Inf'
                                      ELSE l.le::text END),
               count(*)
        FROM re JOIN l ON re.lag <= l.le
        WHERE re.lag IS NOT NULL
        GROUP BY 1, 2
        UNION ALL
        SELECT 'cronvisor_firing_lag_seconds_sum', '', sum(lag)
        FROM re WHERE lag IS NOT NULL HAVING count(*) > 0
        UNION ALL
        SELECT 'cronvisor_firing_lag_seconds_count', '', count(*)
        FROM re WHERE lag IS NOT NULL HAVING count(*) > 0),
    up AS (
        INSERT INTO metric_counts AS m (name, labels, value)
        SELECT name, labels, v FROM c
        ON CONFLICT (name, labels)
        DO UPDATE SET value = m.value + excluded.value)
    SELECT count(*) FROM b
$$;

-- The runs and executions that ended, of a batch of events being
-- numbered, counted into outcome_counts (022_console.sql) for GET
-- /overview: a run.ended event is a run that ended (any status but
-- running and waiting: the slots that did not run too), an
-- execution.status event of success, partial or failed an execution that
-- ended; each counted in the 5-minute bucket of its instant, under its
-- owner and under '' (every owner).  Buckets older than two days go: the
-- overview reads the last 24 hours, and the index on bucket makes this a
-- probe when there is nothing to remove; an event numbered that late
-- (the sequencer was stopped for days) is not counted, so that the
-- statement never writes a row it deletes.  Returns how many counts
-- moved.
CREATE OR REPLACE FUNCTION cronvisor_events_outcomes(
    nb cronvisor_event_head[])
RETURNS bigint
LANGUAGE sql AS $$
    WITH o AS (
        SELECT owner,
               to_timestamp(floor(extract(epoch FROM at) / 300) * 300)
                   AS bucket,
               CASE type WHEN 'run.ended' THEN 'run' ELSE 'execution' END
                   AS what,
               data ->> 'status' AS status
        FROM unnest(nb)
        WHERE data ->> 'status' IS NOT NULL
          AND (type = 'run.ended'
               OR (type = 'execution.status'
                   AND data ->> 'status' IN ('success', 'partial',
                                             'failed')))),
    c AS (
        SELECT w.owner, o.bucket, o.what, o.status, count(*) AS n
        FROM o CROSS JOIN LATERAL (VALUES (o.owner), ('')) AS w(owner)
        WHERE o.bucket >= now() - interval '2 days'
        GROUP BY 1, 2, 3, 4),
    old AS (
        DELETE FROM outcome_counts
        WHERE bucket < now() - interval '2 days'),
    up AS (
        INSERT INTO outcome_counts AS k (owner, bucket, what, status, n)
        SELECT owner, bucket, what, status, n FROM c
        ON CONFLICT (owner, bucket, what, status)
        DO UPDATE SET n = k.n + excluded.n
        RETURNING 1)
    SELECT count(*) FROM up
$$;

-- A notification channel as the API returns it (docs/operations.md):
-- its secret as *** unless shown (the answer to its create, once), and a
-- Slack URL's path too (the path of an incoming webhook is its secret).
CREATE OR REPLACE FUNCTION cronvisor_channel_json(c notification_channels,
                                                  show_secret boolean)
RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'channel_id', c.channel_id, 'owner', c.owner, 'type', c.type,
        'url', CASE WHEN c.type = 'slack' AND NOT show_secret
                    THEN regexp_replace(c.url, '^(https?://[^/]*/).*$', '\1***')
                    ELSE c.url END,
        'to', c.email_to,
        'secret', CASE WHEN c.secret IS NULL THEN NULL
                       WHEN show_secret THEN c.secret ELSE '***' END,
        'kinds', to_jsonb(c.kinds), 'schedule_ids', to_jsonb(c.schedule_ids),
        'enabled', c.enabled, 'created_by', c.created_by,
        'created_at', cronvisor_time(c.created_at),
        'updated_at', cronvisor_time(c.updated_at))
$$;
