-- notify.sql: the statements of api/notify.c, the notification channels
-- and the deliveries of the API (docs/operations.md, "Notifications").

-- name: notify_channels_list
-- A page of channels, by owner and id: $1 an owner or NULL (an admin's
-- list of all), $2 enabled or NULL for both, after the cursor ($3 owner,
-- $4 channel_id; NULL: from the start), $5 rows at most.
SELECT cronvisor_channel_json(c, false)::text, c.owner, c.channel_id
FROM notification_channels c
WHERE ($1::text IS NULL OR owner = $1)
  AND ($2::boolean IS NULL OR enabled = $2)
  AND ($3::text IS NULL OR (owner, channel_id) > ($3, $4::text))
ORDER BY owner, channel_id
LIMIT $5;

-- name: notify_channel_get
SELECT cronvisor_channel_json(c, false)::text
FROM notification_channels c WHERE owner = $1 AND channel_id = $2;

-- name: notify_channel_insert
-- A new channel of owner $1 made by $2 from the checked document $3 (its
-- secret given or made); no row if the owner has its id.  The answer
-- shows the secret, once.
INSERT INTO notification_channels AS c (owner, created_by, channel_id, type,
    url, email_to, secret, kinds, schedule_ids, enabled)
SELECT $1, $2, d ->> 'channel_id', d ->> 'type', d ->> 'url', d ->> 'to',
       d ->> 'secret',
       ARRAY(SELECT jsonb_array_elements_text(d -> 'kinds')),
       CASE WHEN jsonb_typeof(d -> 'schedule_ids') = 'array'
            THEN ARRAY(SELECT jsonb_array_elements_text(d -> 'schedule_ids'))::uuid[]
       END,
       (d ->> 'enabled')::boolean
FROM (SELECT $3::jsonb AS d) x
ON CONFLICT (owner, channel_id) DO NOTHING
RETURNING cronvisor_channel_json(c, true)::text;

-- name: notify_channel_delete
-- Deletes channel $2 of owner $1; its pending deliveries fail with it.
WITH gone AS (
    DELETE FROM notification_channels
    WHERE owner = $1 AND channel_id = $2
    RETURNING owner, channel_id),
f AS (
    UPDATE notifications n
    SET status = 'failed', last_error = 'the channel was deleted'
    FROM gone
    WHERE n.owner = gone.owner AND n.channel_id = gone.channel_id
      AND n.status = 'pending')
SELECT count(*) FROM gone;

-- name: notify_list
-- A page of deliveries, newest first: $1 an owner or NULL (an admin's),
-- $2 a status or NULL, $3 a channel or NULL, before the cursor $4 (an id;
-- NULL: from the newest), $5 rows at most.  The id twice: the cursor is
-- "ID_ID" (api_page()).
SELECT jsonb_build_object(
           'id', n.id, 'msg_id', n.msg_id, 'owner', n.owner,
           'channel_id', n.channel_id, 'kind', n.kind,
           'schedule_id', n.schedule_id, 'subject', n.subject,
           'event_seq', n.event_seq, 'payload', n.payload,
           'status', n.status, 'attempts', n.attempts,
           'next_at', CASE WHEN n.status = 'pending'
                           THEN cronvisor_time(n.next_at) END,
           'http_status', n.http_status, 'last_error', n.last_error,
           'created_at', cronvisor_time(n.created_at),
           'delivered_at', cronvisor_time(n.delivered_at))::text,
       n.id, n.id
FROM notifications n
WHERE ($1::text IS NULL OR owner = $1)
  AND ($2::text IS NULL OR status = $2)
  AND ($3::text IS NULL OR channel_id = $3)
  AND ($4::bigint IS NULL OR id < $4)
ORDER BY id DESC
LIMIT $5;
