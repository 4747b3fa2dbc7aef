-- 001_init.sql: cronvisor's first schema: schedules, their runs, and the
-- supervisors that run them.  Migrations are forward-only and applied in
-- order by `cronvisorctl db migrate`, each in its own transaction, which
-- records it in cronvisor_migrations.  Constraints here reject rows that
-- cannot be right (a negative interval, an unknown status) whatever wrote
-- them; the API's validation gives the friendly message first.

CREATE TABLE schedules (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    -- The first eight hex digits name the schedule in run ids
    -- (sched-<id8>-n<repeat>-rc<retry>, seed 000), so they are unique too:
    -- an insert that collides is retried with a new id.
    id8             text GENERATED ALWAYS AS (left(id::text, 8)) STORED UNIQUE,
    name            text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    description     text NOT NULL DEFAULT '' CHECK (length(description) <= 10000),
    owner           text NOT NULL CHECK (length(owner) BETWEEN 1 AND 200),
    workflow_id     text,
    trigger_node_id text,

    -- timing
    kind             text NOT NULL CHECK (kind IN ('interval', 'cron', 'once')),
    interval_seconds bigint CHECK (interval_seconds BETWEEN 1 AND 3162240000),
    anchor           text NOT NULL DEFAULT 'slot'
                     CHECK (anchor IN ('slot', 'completion')),
    cron             text CHECK (length(cron) BETWEEN 1 AND 127),
    timezone         text NOT NULL DEFAULT 'UTC' CHECK (length(timezone) <= 255),
    at               timestamptz,
    start_at         timestamptz,
    dst_gap          text NOT NULL DEFAULT 'auto'
                     CHECK (dst_gap IN ('auto', 'shift', 'skip')),
    dst_fold         text NOT NULL DEFAULT 'auto'
                     CHECK (dst_fold IN ('auto', 'first', 'both')),
    jitter_seconds   bigint NOT NULL DEFAULT 0 CHECK (jitter_seconds >= 0),

    -- repeat, retry, timeout, overlap, catch-up
    total_repeats             bigint NOT NULL DEFAULT 0 CHECK (total_repeats >= 0),
    max_retries               integer NOT NULL DEFAULT 3
                              CHECK (max_retries BETWEEN 0 AND 1000),
    backoff                   text NOT NULL DEFAULT 'exponential'
                              CHECK (backoff IN ('exponential', 'linear', 'fixed')),
    retry_delay_seconds       bigint CHECK (retry_delay_seconds BETWEEN 1 AND 31536000),
    timeout_seconds           integer NOT NULL DEFAULT 600
                              CHECK (timeout_seconds BETWEEN 1 AND 31536000),
    overlap                   text NOT NULL DEFAULT 'skip'
                              CHECK (overlap IN ('skip', 'allow', 'buffer_one')),
    catch_up                  text NOT NULL DEFAULT 'latest'
                              CHECK (catch_up IN ('latest', 'all', 'none')),
    max_catch_up_runs         integer NOT NULL DEFAULT 10
                              CHECK (max_catch_up_runs BETWEEN 1 AND 1000),
    starting_deadline_seconds bigint CHECK (starting_deadline_seconds >= 0),
    history_limit             integer NOT NULL DEFAULT 100
                              CHECK (history_limit BETWEEN 1 AND 100000),

    -- what runs: NULL target = the configured receiver (seed 002)
    target          jsonb CHECK (target IS NULL OR jsonb_typeof(target) = 'object'),
    limits          jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(limits) = 'object'),
    trigger_payload jsonb NOT NULL DEFAULT '{}',

    -- state (seed 000's ScheduledJob)
    status         text NOT NULL DEFAULT 'active'
                   CHECK (status IN ('active', 'paused', 'done', 'dead')),
    current_repeat bigint NOT NULL DEFAULT 0 CHECK (current_repeat >= 0),
    current_retry  integer NOT NULL DEFAULT 0 CHECK (current_retry >= 0),
    next_run_at    timestamptz,  -- when the next run is due; NULL unless active
    next_slot_at   timestamptz,  -- the slot that run belongs to (a retry's slot)
    last_run_at    timestamptz,
    run_count      bigint NOT NULL DEFAULT 0 CHECK (run_count >= 0),
    error_count    bigint NOT NULL DEFAULT 0 CHECK (error_count >= 0),
    last_error     text NOT NULL DEFAULT '',
    running        integer NOT NULL DEFAULT 0 CHECK (running >= 0),
    -- repeat number n of the next slot run (sched-<id8>-n<n>-rc<rc>); each
    -- claimed slot takes one, its retries keep it
    slot_seq       bigint NOT NULL DEFAULT 0 CHECK (slot_seq >= 0),
    -- a retry of next_slot_at is pending, for the run numbered retry_repeat
    retry_pending  boolean NOT NULL DEFAULT false,
    retry_repeat   bigint NOT NULL DEFAULT 0 CHECK (retry_repeat >= 0),
    config_hash    text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),

    CHECK (kind <> 'interval' OR interval_seconds IS NOT NULL),
    CHECK (kind <> 'cron' OR cron IS NOT NULL),
    CHECK (kind <> 'once' OR at IS NOT NULL),
    CHECK (status = 'active' OR next_run_at IS NULL)
);

-- The claim query reads due active schedules in next_run_at order.
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE status = 'active';
CREATE INDEX schedules_owner ON schedules (owner, created_at, id);
CREATE INDEX schedules_workflow ON schedules (workflow_id) WHERE workflow_id IS NOT NULL;

CREATE TABLE supervisors (
    id         bigserial PRIMARY KEY,   -- also the fencing token of its leases
    name       text NOT NULL,           -- host/pid or the configured name
    host       text NOT NULL,
    pid        integer NOT NULL CHECK (pid > 0),
    version    text NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    heartbeat  timestamptz NOT NULL DEFAULT now(),
    stopped_at timestamptz
);
CREATE INDEX supervisors_alive ON supervisors (heartbeat) WHERE stopped_at IS NULL;

CREATE TABLE runs (
    id            text PRIMARY KEY CHECK (id ~ '^sched-[0-9a-f]{8}-'),
    schedule_id   uuid NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    repeat_number bigint NOT NULL CHECK (repeat_number >= 0),
    attempt       integer NOT NULL CHECK (attempt >= 0),
    slot_at       timestamptz NOT NULL,
    status        text NOT NULL CHECK (status IN ('running', 'succeeded', 'failed',
                      'timed_out', 'lost', 'interrupted', 'crashed', 'protocol_error',
                      'skipped', 'missed', 'expired')),
    supervisor_id bigint REFERENCES supervisors (id),  -- the lease: fencing token
    pid           integer,
    started_at    timestamptz,
    finished_at   timestamptz,
    duration_ms   bigint CHECK (duration_ms >= 0),
    exit_code     integer,
    signal        integer CHECK (signal BETWEEN 1 AND 64),
    http_status   integer CHECK (http_status BETWEEN 100 AND 599),
    cpu_user_ms   bigint CHECK (cpu_user_ms >= 0),
    cpu_sys_ms    bigint CHECK (cpu_sys_ms >= 0),
    max_rss_kb    bigint CHECK (max_rss_kb >= 0),
    output        text NOT NULL DEFAULT '',
    error         text,
    note          text,          -- why a slot did not run, how many were dropped
    triggered     boolean NOT NULL DEFAULT false,  -- run now, outside the slots
    created_at    timestamptz NOT NULL DEFAULT now(),
    -- A slot can never be claimed twice.
    UNIQUE (schedule_id, slot_at, attempt),
    CHECK (status <> 'running' OR supervisor_id IS NOT NULL),
    CHECK (finished_at IS NULL OR started_at IS NULL OR finished_at >= started_at)
);
CREATE INDEX runs_schedule ON runs (schedule_id, created_at DESC);
CREATE INDEX runs_running ON runs (supervisor_id) WHERE status = 'running';

-- Supervisors sleep until the earliest next_run_at; whatever moves a
-- schedule's next_run_at (the API, cronvisorctl, a hand-written UPDATE)
-- wakes them in the same transaction.  Identical notifications of one
-- transaction are folded into one by PostgreSQL.
CREATE FUNCTION cronvisor_wake() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = 'active' AND NEW.next_run_at IS NOT NULL AND
       (TG_OP = 'INSERT' OR NEW.next_run_at IS DISTINCT FROM OLD.next_run_at
        OR NEW.status IS DISTINCT FROM OLD.status) THEN
        PERFORM pg_notify('cronvisor_wake', '');
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER schedules_wake AFTER INSERT OR UPDATE OF next_run_at, status
    ON schedules FOR EACH ROW EXECUTE FUNCTION cronvisor_wake();
