-- agents.sql: the statements of cronvisor-api's agent registry
-- (api/agents.c, docs/agents.md).  An agent is addressed by its owner and
-- its slug: the caller's owner, or the one an admin names with ?owner=.
-- The secret of an agent's auth is written here and read back only by
-- agents_load (for a PATCH that keeps it); every answer goes through
-- cronvisor_agent_json(), which leaves it out.

-- name: agents_insert
-- A new agent of owner $1, created by $2, its columns $3 (agent_columns()
-- in common/agent.c, read by jsonb_populate_record); no row back when the
-- owner has one of that id.  An agent with a health URL is probed at once.
INSERT INTO agents (owner, created_by, agent_id, name, description, endpoint,
                    auth_type, auth_username, auth_secret, timeout_ms,
                    max_concurrent_requests, heartbeat_seconds, health_url,
                    health_interval_seconds, when_unhealthy, input_schema,
                    enabled, health_next_at)
SELECT $1, $2, c.agent_id, c.name, c.description, c.endpoint, c.auth_type,
       c.auth_username, c.auth_secret, c.timeout_ms,
       c.max_concurrent_requests, c.heartbeat_seconds, c.health_url,
       c.health_interval_seconds, c.when_unhealthy, c.input_schema,
       c.enabled, CASE WHEN c.health_url IS NOT NULL THEN now() END
FROM jsonb_populate_record(NULL::agents, $3::jsonb) c
ON CONFLICT DO NOTHING
RETURNING cronvisor_agent_json(agents)::text;

-- name: agents_get
SELECT cronvisor_agent_json(a)::text
FROM agents a WHERE owner = $1 AND agent_id = $2;

-- name: agents_load
-- Agent $2 of owner $1 with every column (its secret too), locked, for a
-- PATCH; common/agent.c reads it back (agent_from_row()).
SELECT to_jsonb(a)::text
FROM agents a WHERE owner = $1 AND agent_id = $2
FOR UPDATE;

-- name: agents_update
-- Agent $2 of owner $1 gets the columns $3.  A new health URL or interval
-- forgets the last probe and probes again at once; the hash of the
-- document it was applied from is forgotten (an apply sets it after).
UPDATE agents a
SET (name, description, endpoint, auth_type, auth_username, auth_secret,
     timeout_ms, max_concurrent_requests, heartbeat_seconds, health_url,
     health_interval_seconds, when_unhealthy, input_schema, enabled,
     healthy, health_error, health_next_at, updated_at, config_hash) = (
    SELECT c.name, c.description, c.endpoint, c.auth_type, c.auth_username,
           c.auth_secret, c.timeout_ms, c.max_concurrent_requests,
           c.heartbeat_seconds, c.health_url, c.health_interval_seconds,
           c.when_unhealthy, c.input_schema, c.enabled,
           CASE WHEN c.health_url IS NOT DISTINCT FROM a.health_url
                THEN a.healthy END,
           CASE WHEN c.health_url IS NOT DISTINCT FROM a.health_url
                THEN a.health_error END,
           CASE WHEN c.health_url IS NULL THEN NULL
                WHEN c.health_url IS DISTINCT FROM a.health_url
                  OR c.health_interval_seconds <> a.health_interval_seconds
                  OR (c.enabled AND NOT a.enabled)
                THEN now() ELSE a.health_next_at END,
           now(), ''
    FROM jsonb_populate_record(NULL::agents, $3::jsonb) c)
WHERE owner = $1 AND agent_id = $2
RETURNING cronvisor_agent_json(a)::text;

-- name: agents_list
-- A page of agents, by owner and id: $1 an owner or NULL (an admin's list
-- of all), $2 enabled or NULL for both, after the cursor ($3 owner, $4
-- agent_id; NULL: from the start), $5 rows at most.
SELECT cronvisor_agent_json(a)::text, a.owner, a.agent_id
FROM agents a
WHERE ($1::text IS NULL OR owner = $1)
  AND ($2::boolean IS NULL OR enabled = $2)
  AND ($3::text IS NULL OR (owner, agent_id) > ($3, $4::text))
ORDER BY owner, agent_id
LIMIT $5;

-- name: agents_lock
-- Agent $2 of owner $1, locked for its deletion (agents_delete follows).
SELECT 1 FROM agents WHERE owner = $1 AND agent_id = $2 FOR UPDATE;

-- name: agents_delete
-- Deletes agent $2 of owner $1 unless a schedule (not deleted) targets
-- it or a pipeline has a step of it.  One row: how many went (0 or 1),
-- how many schedules and pipelines use it, and whether it exists (after).
WITH u AS (
    SELECT (SELECT count(*) FROM schedules
            WHERE owner = $1 AND deleted_at IS NULL
              AND target ->> 'type' = 'agent' AND target ->> 'agent' = $2)
         + (SELECT count(*) FROM pipelines
            WHERE owner = $1
              AND steps @> jsonb_build_array(
                      jsonb_build_object('agent_id', $2::text))) AS n),
d AS (
    DELETE FROM agents
    WHERE owner = $1 AND agent_id = $2 AND (SELECT n FROM u) = 0
    RETURNING 1)
SELECT (SELECT count(*) FROM d), (SELECT n FROM u),
       EXISTS (SELECT 1 FROM agents WHERE owner = $1 AND agent_id = $2)
       AND (SELECT count(*) FROM d) = 0;

-- name: agents_version_insert
-- Version $3 of agent $2 of owner $1: endpoint $4, input schema $5 (JSON
-- or NULL), description $6, created by $7.  No row: it exists.
INSERT INTO agent_versions (owner, agent_id, version, endpoint, input_schema,
                            description, created_by)
VALUES ($1, $2, $3, $4, $5::jsonb, coalesce($6, ''), $7)
ON CONFLICT DO NOTHING
RETURNING cronvisor_agent_version_json(agent_versions)::text;

-- name: agents_versions
-- The versions of agent $2 of owner $1, the newest first (at most 500).
SELECT cronvisor_agent_version_json(v)::text
FROM agent_versions v
WHERE owner = $1 AND agent_id = $2
ORDER BY created_at DESC, version DESC
LIMIT 500;

-- name: agents_version_exists
SELECT 1 FROM agent_versions
WHERE owner = $1 AND agent_id = $2 AND version = $3;

-- name: agents_deployed
-- The version deployed in environment $3 of agent $2 of owner $1, if any.
SELECT version FROM agent_deployments
WHERE owner = $1 AND agent_id = $2 AND environment = $3;

-- name: agents_deploy
-- Deploys version $4 of agent $2 of owner $1 in environment $3, recorded
-- in the log as action $5 by $6 with the version it replaced.  The row of
-- the environment is locked first, so that two deploys at once are
-- logged one after the other.  Returns the version replaced (NULL: none).
WITH old AS (
    SELECT version FROM agent_deployments
    WHERE owner = $1 AND agent_id = $2 AND environment = $3
    FOR UPDATE),
up AS (
    INSERT INTO agent_deployments (owner, agent_id, environment, version,
                                   deployed_by)
    VALUES ($1, $2, $3, $4, $6)
    ON CONFLICT (owner, agent_id, environment) DO UPDATE
    SET version = excluded.version, deployed_by = excluded.deployed_by,
        deployed_at = now()
    RETURNING 1),
log AS (
    INSERT INTO agent_deploy_log (owner, agent_id, environment, action,
                                  version, previous, by_whom)
    SELECT $1, $2, $3, $5, $4, (SELECT version FROM old), $6
    FROM up)
SELECT (SELECT version FROM old);

-- name: agents_rollback_target
-- What a rollback of environment $3 of agent $2 of owner $1 goes back
-- to: the version the latest deploy or promote of the current one
-- replaced.  A rollback is not such an entry, so rolling back again goes
-- one further back.  No row, or NULL: nothing to go back to.
SELECT l.previous
FROM agent_deploy_log l
JOIN agent_deployments d
  ON d.owner = l.owner AND d.agent_id = l.agent_id
 AND d.environment = l.environment
WHERE l.owner = $1 AND l.agent_id = $2 AND l.environment = $3
  AND l.action IN ('deploy', 'promote') AND l.version = d.version
ORDER BY l.id DESC
LIMIT 1;

-- name: agents_deployments
-- The deployments of agent $2 of owner $1 by environment, and the log,
-- the newest first (the last 100).
SELECT jsonb_build_object(
    'agent_id', $2::text,
    'deployments', coalesce((
        SELECT jsonb_object_agg(d.environment, jsonb_build_object(
                   'version', d.version, 'deployed_by', d.deployed_by,
                   'deployed_at', cronvisor_time(d.deployed_at)))
        FROM agent_deployments d
        WHERE d.owner = $1 AND d.agent_id = $2), '{}'),
    'history', coalesce((
        SELECT jsonb_agg(jsonb_build_object(
                   'environment', l.environment, 'action', l.action,
                   'version', l.version, 'previous', l.previous,
                   'by', l.by_whom, 'at', cronvisor_time(l.at))
                   ORDER BY l.id DESC)
        FROM (SELECT * FROM agent_deploy_log
              WHERE owner = $1 AND agent_id = $2
              ORDER BY id DESC LIMIT 100) l), '[]'))::text;

-- name: agents_health
-- The health of agent $2 of owner $1: the latest probe and the last 100.
SELECT jsonb_build_object(
    'agent_id', a.agent_id, 'url', a.health_url, 'healthy', a.healthy,
    'error', a.health_error,
    'checked_at', cronvisor_time(a.health_checked_at),
    'next_at', cronvisor_time(a.health_next_at),
    'probes', coalesce((
        SELECT jsonb_agg(jsonb_build_object(
                   'checked_at', cronvisor_time(h.checked_at), 'ok', h.ok,
                   'http_status', h.http_status,
                   'latency_ms', h.latency_ms, 'error', h.error)
                   ORDER BY h.id DESC)
        FROM (SELECT * FROM agent_health
              WHERE owner = a.owner AND agent_id = a.agent_id
              ORDER BY id DESC LIMIT 100) h), '[]'))::text
FROM agents a
WHERE a.owner = $1 AND a.agent_id = $2;

-- name: agents_target
-- What the save of a schedule of owner $1 that targets agent $2 in
-- environment $3 checks: whether the agent exists and is enabled, the
-- input schema its params must satisfy (the deployed version's, or the
-- agent's own when no version is deployed there) and that version.  The
-- agent's row is locked (FOR SHARE) until the save's transaction ends:
-- it is not deleted under the schedule (agents_lock).
SELECT a.enabled,
       CASE WHEN d.version IS NOT NULL THEN v.input_schema
            ELSE a.input_schema END::text,
       d.version
FROM agents a
LEFT JOIN agent_deployments d
  ON d.owner = a.owner AND d.agent_id = a.agent_id AND d.environment = $3
LEFT JOIN agent_versions v
  ON v.owner = d.owner AND v.agent_id = d.agent_id AND v.version = d.version
WHERE a.owner = $1 AND a.agent_id = $2
FOR SHARE OF a;

-- name: agents_report
-- An agent's report on job $1 with token $2: $3 'complete' or
-- 'heartbeat', $4 the status, $5 the result and $6 the error (JSON or
-- NULL).  One row: cronvisor_job_report()'s answer (functions.sql).
SELECT cronvisor_job_report($1::uuid, $2, $3, $4, $5::jsonb, $6::jsonb);
