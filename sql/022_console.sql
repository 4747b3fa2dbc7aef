-- What the web console's views need, as indexed queries (issue 22: "add
-- what the views need (counts by status, search) as indexed queries";
-- lists must stay fast with 100,000 schedules): GET /schedules sorted by
-- name or next run and searched by a substring of the name, and GET
-- /overview's counts (docs/api.md).

-- GET /schedules?sort=: each order is the scan of an index, of every
-- owner's schedules (an admin's list) and of one owner's, read from where
-- the cursor left off.  created_at has schedules_created and
-- schedules_owner (001, 002).  A schedule without a next run (not active)
-- sorts as if at +infinity: the expression is the statements' ORDER BY.
CREATE INDEX schedules_name ON schedules (name, id) WHERE deleted_at IS NULL;
CREATE INDEX schedules_owner_name ON schedules (owner, name, id)
    WHERE deleted_at IS NULL;
CREATE INDEX schedules_next
    ON schedules ((coalesce(next_run_at, 'infinity'::timestamptz)), id)
    WHERE deleted_at IS NULL;
CREATE INDEX schedules_owner_next
    ON schedules (owner, (coalesce(next_run_at, 'infinity'::timestamptz)), id)
    WHERE deleted_at IS NULL;
-- GET /overview's schedules by status, read from the index alone.
CREATE INDEX schedules_owner_status ON schedules (owner, status)
    WHERE deleted_at IS NULL;

-- GET /schedules?q=: a substring of the name in any case, through a
-- trigram index of lower(name) when pg_trgm can be had.  It is a contrib
-- extension (Debian's postgresql-NN ships it; elsewhere it may be a
-- package of its own) and trusted since PostgreSQL 13, so the database's
-- owner may create it; when it cannot be created the migration goes on
-- without it, and a search scans the schedules instead (the same
-- answers, slower).  docs/operations.md says how to add it later.
DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'pg_trgm cannot be created (%): a search scans', SQLERRM;
END $$;
-- Named with the extension's schema: it need not be on the search_path.
DO $$
DECLARE
    nsp text;
BEGIN
    SELECT n.nspname INTO nsp
    FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
    WHERE e.extname = 'pg_trgm';
    IF nsp IS NOT NULL THEN
        EXECUTE format('CREATE INDEX schedules_name_trgm ON schedules '
                       'USING gin (lower(name) %I.gin_trgm_ops) '
                       'WHERE deleted_at IS NULL', nsp);
    END IF;
END $$;

-- GET /overview's recent failures: the runs that ended so, newest first,
-- without reading the others (runs can be millions).
CREATE INDEX runs_failed ON runs (finished_at DESC)
    WHERE status IN ('failed', 'timed_out', 'lost', 'crashed',
                     'protocol_error');

-- Runs and executions that ended, counted by owner, 5-minute bucket (of
-- when they ended) and status, for GET /overview: counting them from
-- runs would read every run of the last day (and runs are pruned by
-- history_limit: the counts would shrink).  Moved by the sequencer in the
-- transaction that numbers the events they come from
-- (cronvisor_events_outcomes(), called by cronvisor_events_sequence()),
-- so that each is counted once, whichever supervisor leads; buckets older
-- than two days go there too.  Owner '' is every owner's total (an
-- owner's name is 1 to 200 characters), so that an admin's overview
-- reads one row per bucket and status however many owners there are.
CREATE TABLE outcome_counts (
    owner  text NOT NULL,
    bucket timestamptz NOT NULL,            -- a multiple of 5 minutes
    what   text NOT NULL CHECK (what IN ('run', 'execution')),
    status text NOT NULL,                   -- the run's or execution's
    n      bigint NOT NULL CHECK (n >= 0),
    PRIMARY KEY (owner, bucket, what, status)
);
CREATE INDEX outcome_counts_bucket ON outcome_counts (bucket);

-- The sequencer's view of an event grows the instant it happened at: a
-- run is counted in the bucket it ended in, however late it is numbered.
ALTER TYPE cronvisor_event_head ADD ATTRIBUTE at timestamptz;

-- What the events still kept say of the last two days, so that an
-- overview after the upgrade shows them.  Only the numbered ones: the
-- others are counted when they are numbered, by functions.sql's
-- sequencer, installed right after this.
INSERT INTO outcome_counts (owner, bucket, what, status, n)
SELECT o, bucket, what, status, count(*)
FROM (SELECT owner,
             to_timestamp(floor(extract(epoch FROM at) / 300) * 300) AS bucket,
             CASE type WHEN 'run.ended' THEN 'run' ELSE 'execution' END AS what,
             data ->> 'status' AS status
      FROM events
      WHERE seq IS NOT NULL AND at >= now() - interval '2 days'
        AND (type = 'run.ended'
             OR (type = 'execution.status'
                 AND data ->> 'status' IN ('success', 'partial', 'failed'))))
     AS e
CROSS JOIN LATERAL (VALUES (e.owner), ('')) AS w(o)
WHERE status IS NOT NULL
GROUP BY o, bucket, what, status;
