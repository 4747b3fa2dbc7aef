-- events.sql: the statements of supervisor/events.c (the events worker)
-- and of api/events.c (the event streams): docs/events.md.

-- name: events_lead
-- The leader lock of the events worker, held by its session: one worker
-- of the cluster numbers and publishes; another takes over when that
-- session ends (its supervisor stopped or died).
SELECT pg_try_advisory_lock(hashtext('cronvisor_events_leader'));

-- name: events_number
-- Numbers up to $1 events (cronvisor_events_sequence()); how many.
SELECT cronvisor_events_sequence($1::integer);

-- name: events_last
-- The last seq given.
SELECT last_seq FROM events_state;

-- columns: events_row
e.seq,                                                  -- seq
e.type,                                                 -- type
cronvisor_event_json(e)::text                           -- json

-- name: events_after
-- Up to $2 numbered events after seq $1, in order (the worker's publish,
-- and an admin's stream).
SELECT {{events_row}} FROM events e
WHERE e.seq > $1::bigint
ORDER BY e.seq
LIMIT $2::integer;

-- name: events_after_owner
-- The same, of owner $3's schedules only (a tenant's stream).
SELECT {{events_row}} FROM events e
WHERE e.owner = $3 AND e.seq > $1::bigint AND e.seq IS NOT NULL
ORDER BY e.seq
LIMIT $2::integer;

-- name: events_bounds
-- The oldest seq kept (NULL: none) and the last given.
SELECT (SELECT min(seq) FROM events WHERE seq IS NOT NULL),
       (SELECT last_seq FROM events_state);

-- name: events_prune
-- The oldest numbered events, up to 10,000, as far as the last of them
-- older than $1 hours (events_retention_hours); how many went.  The
-- leader runs it every minute, and again at once while it takes that
-- many.  By seq, not by time: a run's event is dated by its start, which
-- may be a little ahead of its numbering.
WITH cut AS (
    SELECT max(seq) AS s
    FROM (SELECT seq, at FROM events WHERE seq IS NOT NULL
          ORDER BY seq LIMIT 10000) o
    WHERE at < now() - make_interval(hours => $1::integer)),
gone AS (
    DELETE FROM events
    WHERE seq IS NOT NULL AND seq <= (SELECT s FROM cut)
    RETURNING 1)
SELECT count(*) FROM gone;
