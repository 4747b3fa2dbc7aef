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
-- older than $1 hours (events_retention_hours); how many went.  Ended
-- notifications older than that too, 10,000 at a time.  The
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
    RETURNING 1),
-- Notifications delivered or failed for good go after as long.
notes AS (
    DELETE FROM notifications
    WHERE id IN (SELECT id FROM notifications
                 WHERE status <> 'pending'
                   AND created_at < now() - make_interval(hours => $1::integer)
                 ORDER BY id LIMIT 10000))
SELECT count(*) FROM gone;

-- columns: events_note
n.id,                                   -- id
n.msg_id,                               -- msg
c.type,                                 -- type
coalesce(c.url, ''),                    -- url
coalesce(c.email_to, ''),               -- to
coalesce(c.secret, ''),                 -- secret
n.payload::text,                        -- payload
n.attempts,                             -- attempts
extract(epoch FROM now())::bigint       -- now

-- name: events_notify_claim
-- Up to $1 notifications due, the oldest first, each taken for $2 seconds
-- (its next_at moved on: a worker that dies while sending leaves it to
-- be sent again then, with the same msg_id), with their channels.
WITH due AS (
    SELECT id FROM notifications
    WHERE status = 'pending' AND next_at <= now()
    ORDER BY next_at LIMIT $1::integer
    FOR UPDATE SKIP LOCKED),
took AS (
    UPDATE notifications n
    SET next_at = now() + make_interval(secs => $2::float8),
        attempts = n.attempts + 1
    FROM due WHERE n.id = due.id
    RETURNING n.*)
SELECT {{events_note}}
FROM took n JOIN notification_channels c
    ON c.owner = n.owner AND c.channel_id = n.channel_id;

-- name: events_notify_orphans
-- Pending notifications whose channel is gone or disabled fail.
UPDATE notifications n
SET status = 'failed', last_error = 'the channel was deleted or disabled'
WHERE n.status = 'pending'
  AND NOT EXISTS (SELECT 1 FROM notification_channels c
                  WHERE c.owner = n.owner AND c.channel_id = n.channel_id
                    AND c.enabled);

-- name: events_notify_done
-- A delivery's outcome: $1 id, $2 'delivered' or 'retry', $3 the HTTP
-- status (or NULL), $4 the error (or NULL).  A retry waits 10 s doubled
-- at each attempt (at most an hour); the eighth failed attempt is final.
-- Counted for the metrics (cronvisor_notifications_total: delivered,
-- retried, failed).
WITH n AS (
    UPDATE notifications
    SET status = CASE WHEN $2 = 'delivered' THEN 'delivered'
                      WHEN attempts >= 8 THEN 'failed' ELSE 'pending' END,
        delivered_at = CASE WHEN $2 = 'delivered' THEN now() END,
        next_at = CASE WHEN $2 = 'delivered' THEN next_at
                       ELSE now() + make_interval(secs =>
                                least(3600, 10 * 2 ^ (attempts - 1))) END,
        http_status = $3::integer,
        last_error = $4
    WHERE id = $1::bigint
    RETURNING status)
INSERT INTO metric_counts AS m (name, labels, value)
SELECT 'cronvisor_notifications_total',
       format('result="%s"', CASE status WHEN 'pending' THEN 'retried'
                                         ELSE status END), 1
FROM n
ON CONFLICT (name, labels) DO UPDATE SET value = m.value + 1;
