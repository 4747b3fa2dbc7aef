-- health.sql: the statements of supervisor/health.c, the agents' health
-- probes (docs/agents.md, "Health").  One supervisor probes an agent at a
-- time: health_claim moves the agent's next probe on before the probe
-- runs, under a row lock that the others skip.

-- name: health_claim
-- Up to $1 agents whose probe is due, moved to their next probe time:
-- this supervisor probes them now, and no other does before that time.
WITH due AS (
    SELECT owner, agent_id FROM agents
    WHERE health_url IS NOT NULL AND enabled AND health_next_at <= now()
    ORDER BY health_next_at
    LIMIT $1
    FOR UPDATE SKIP LOCKED)
UPDATE agents a
SET health_next_at = now() + make_interval(secs => a.health_interval_seconds)
FROM due
WHERE a.owner = due.owner AND a.agent_id = due.agent_id
RETURNING a.owner, a.agent_id, a.health_url, a.auth_type, a.auth_username,
          a.auth_secret;

-- name: health_next
-- When the next probe of any agent is due (CLOCK_REALTIME ms), or NULL.
SELECT ceil(extract(epoch FROM health_next_at) * 1000)::bigint
FROM agents
WHERE health_url IS NOT NULL AND enabled AND health_next_at IS NOT NULL
ORDER BY health_next_at
LIMIT 1;

-- name: health_write
-- The probes $1 (a JSON array of {owner, agent, url, ok, http_status,
-- latency_ms, error, at (unix ms)}): each kept in agent_health, the
-- agent's latest state set from it (unless its health URL changed
-- meanwhile, or a later probe was written first), and its history cut to
-- the newest 100.  An agent that became healthy again wakes the
-- supervisors: its jobs waited for it.  Returns how many did.
WITH p AS (
    SELECT * FROM json_to_recordset($1::json)
        AS p(owner text, agent text, url text, ok boolean, http_status integer,
             latency_ms bigint, error text, at bigint)),
kept AS (
    INSERT INTO agent_health (owner, agent_id, checked_at, ok, http_status,
                              latency_ms, error)
    SELECT p.owner, p.agent, to_timestamp(p.at / 1000.0), p.ok,
           nullif(p.http_status, 0), p.latency_ms, p.error
    FROM p JOIN agents a ON a.owner = p.owner AND a.agent_id = p.agent
    RETURNING id, owner, agent_id),
upd AS (
    -- o: the agent as it was (the statement's snapshot), a: as it becomes
    UPDATE agents a
    SET healthy = p.ok, health_error = p.error,
        health_checked_at = to_timestamp(p.at / 1000.0)
    FROM p, agents o
    WHERE a.owner = p.owner AND a.agent_id = p.agent
      AND o.owner = a.owner AND o.agent_id = a.agent_id
      AND a.health_url IS NOT DISTINCT FROM p.url
      AND (a.health_checked_at IS NULL
           OR a.health_checked_at <= to_timestamp(p.at / 1000.0))
    RETURNING a.owner, a.healthy, o.healthy AS was),
-- The statement does not see the rows it inserts: the newest 99 it
-- sees and the one it adds (one probe per agent and interval) are kept.
cut AS (
    DELETE FROM agent_health h
    USING (SELECT DISTINCT owner, agent FROM p) d
    WHERE h.owner = d.owner AND h.agent_id = d.agent
      AND h.id < (SELECT x.id FROM agent_health x
                  WHERE x.owner = d.owner AND x.agent_id = d.agent
                  ORDER BY x.id DESC OFFSET 98 LIMIT 1)
    RETURNING h.id),
back AS (
    SELECT owner FROM upd WHERE healthy AND was IS FALSE)
SELECT (SELECT count(*) FROM back),
       (SELECT count(*) FROM (SELECT pg_notify('cronvisor_wake', '')
                              FROM back LIMIT 1) n),
       (SELECT count(*) FROM kept), (SELECT count(*) FROM cut);
