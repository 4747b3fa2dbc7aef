-- apply.sql: the statements of api/apply.c, POST /apply (docs/apply.md),
-- which makes an owner's set of agents, pipelines and schedules exist as
-- its files say.  The things are written by the API's own handlers, in
-- the apply's transaction; these find them and mark them as the set's.

-- name: apply_lock
-- One apply of owner $1's set $2 at a time (until the transaction ends);
-- a row lock it waits for (a run being recorded, a PATCH) holds it back
-- 5 s at most.  The rows themselves are locked by the handlers that
-- write them, not here: what is unchanged stays unlocked, also in a dry
-- run.
SELECT pg_advisory_xact_lock(hashtextextended('cronvisor_apply:' || $1 || ':' || $2, 0)),
       set_config('lock_timeout', '5s', true);

-- name: apply_agent_state
-- Owner $1's agent $2: the set it was applied as and from what.
SELECT coalesce(apply_set, ''), config_hash
FROM agents WHERE owner = $1 AND agent_id = $2;

-- name: apply_pipeline_state
SELECT coalesce(apply_set, ''), config_hash
FROM pipelines WHERE owner = $1 AND pipeline_id = $2;

-- name: apply_schedule_state
-- Owner $1's schedules named $3 that are set $2's or no set's, the set's
-- first: id, set ('' none), hash.  Three at most: one of the set
-- is the one; else one of no set is taken in; more are ambiguous.
SELECT id, coalesce(apply_set, ''), config_hash
FROM schedules
WHERE owner = $1 AND name = $3 AND deleted_at IS NULL
  AND (apply_set = $2 OR apply_set IS NULL)
ORDER BY apply_set IS NULL, created_at, id
LIMIT 3;

-- name: apply_agent_mark
-- Agent $2 of owner $1 is set $3's, as document $4 (its hash) says.
UPDATE agents SET apply_set = $3, config_hash = $4
WHERE owner = $1 AND agent_id = $2;

-- name: apply_pipeline_mark
UPDATE pipelines SET apply_set = $3, config_hash = $4
WHERE owner = $1 AND pipeline_id = $2;

-- name: apply_schedule_mark
-- Schedule $1 is set $2's, as document $3 (its hash) says.
UPDATE schedules SET apply_set = $2, config_hash = $3 WHERE id = $1;

-- name: apply_agent_rest
-- Owner $1's agents of set $2 that the apply does not name ($3, a JSON
-- array of their ids).
SELECT agent_id FROM agents
WHERE owner = $1 AND apply_set = $2
  AND agent_id NOT IN (SELECT jsonb_array_elements_text($3::jsonb))
ORDER BY agent_id;

-- name: apply_pipeline_rest
SELECT pipeline_id FROM pipelines
WHERE owner = $1 AND apply_set = $2
  AND pipeline_id NOT IN (SELECT jsonb_array_elements_text($3::jsonb))
ORDER BY pipeline_id;

-- name: apply_schedule_rest
-- Owner $1's schedules of set $2 whose names the apply does not give ($3,
-- a JSON array): id and name.
SELECT id, name FROM schedules
WHERE owner = $1 AND apply_set = $2 AND deleted_at IS NULL
  AND name NOT IN (SELECT jsonb_array_elements_text($3::jsonb))
ORDER BY name, id;
