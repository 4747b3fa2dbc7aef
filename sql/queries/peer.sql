-- peer.sql: the statements of supervisor/peer.c, this supervisor among
-- the others: its row in `supervisors` (whose id is the lease of its
-- runs), its heartbeat, and the runs of supervisors that are gone.

-- name: peer_register
INSERT INTO supervisors (name, host, pid, version)
VALUES ($1, $2, $3, $4)
RETURNING id;

-- name: peer_retire
-- A restart of this supervisor ($1 name, $2 host, $3 the new id): its
-- previous incarnation is over.
UPDATE supervisors SET stopped_at = now()
WHERE name = $1 AND host = $2 AND stopped_at IS NULL AND id <> $3;

-- name: peer_heartbeat
-- No row: this supervisor was retired (a restart of the same name).
UPDATE supervisors SET heartbeat = now()
WHERE id = $1 AND stopped_at IS NULL;

-- name: peer_stop
UPDATE supervisors SET stopped_at = now() WHERE id = $1;

-- columns: peer_run
r.id,                                          -- id
r.schedule_id,                                 -- schedule
r.repeat_number,                               -- repeat
r.attempt,                                     -- attempt
floor(extract(epoch FROM r.slot_at))::bigint,  -- slot
r.supervisor_id,                               -- lease
s.name,                                        -- supervisor
r.triggered,                                   -- triggered
r.kind,                                        -- kind
coalesce((SELECT spent FROM jobs WHERE id = r.job_id), 0), -- spent
(SELECT retry::text FROM jobs WHERE id = r.job_id) -- retry

-- name: peer_reported
-- Runs in flight of supervisors other than $1 that stopped or whose
-- heartbeat is older than $2 seconds, whose agent reported already (it
-- was quicker than the supervisor's write of its 202): not lost, they
-- wait, expired at once, for a claim to take the report (claim_reports),
-- rather than go to a retry that would send the job again.
UPDATE runs r SET status = 'waiting', expires_at = now()
FROM supervisors s
WHERE s.id = r.supervisor_id AND r.status = 'running'
  AND r.report IS NOT NULL AND s.id <> $1
  AND (s.stopped_at IS NOT NULL
       OR s.heartbeat < now() - make_interval(secs => $2))
RETURNING r.id;

-- name: peer_lost
-- Runs in flight of supervisors other than $1 that stopped or whose
-- heartbeat is older than $2 seconds, 100 at a time.
SELECT {{peer_run}}
FROM runs r JOIN supervisors s ON s.id = r.supervisor_id
WHERE r.status = 'running' AND s.id <> $1
  AND (s.stopped_at IS NOT NULL
       OR s.heartbeat < now() - make_interval(secs => $2))
LIMIT 100;

-- name: peer_own
-- Runs this supervisor's lease ($1) holds in the database.
SELECT {{peer_run}}
FROM runs r JOIN supervisors s ON s.id = r.supervisor_id
WHERE r.status = 'running' AND r.supervisor_id = $1;
