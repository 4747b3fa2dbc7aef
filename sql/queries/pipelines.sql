-- pipelines.sql: the statements of api/pipelines.c (docs/orchestration.md).
-- A document ($3 below) is the native one common/pipeline.c returns.

-- name: pipelines_insert
-- A new pipeline of owner $1, created by $2, its document $3; no row back
-- when the owner has one of that id.
INSERT INTO pipelines (owner, pipeline_id, name, description, steps,
                       fail_fast, enabled, created_by, updated_by)
SELECT $1, d ->> 'pipeline_id', d ->> 'name', d ->> 'description',
       d -> 'steps', (d ->> 'fail_fast')::boolean,
       (d ->> 'enabled')::boolean, $2, $2
FROM (SELECT $3::jsonb AS d) x
ON CONFLICT DO NOTHING
RETURNING cronvisor_pipeline_json(pipelines)::text;

-- name: pipelines_get
SELECT cronvisor_pipeline_json(p)::text
FROM pipelines p WHERE owner = $1 AND pipeline_id = $2;

-- name: pipelines_load
-- Pipeline $2 of owner $1 as its document, locked, for a PATCH.
SELECT jsonb_build_object('pipeline_id', pipeline_id, 'name', name,
                          'description', description, 'steps', steps,
                          'fail_fast', fail_fast, 'enabled', enabled)::text
FROM pipelines WHERE owner = $1 AND pipeline_id = $2
FOR UPDATE;

-- name: pipelines_update
-- Pipeline $2 of owner $1 gets the document $3, changed by $4; the hash
-- of the document it was applied from is forgotten (an apply sets it).
UPDATE pipelines
SET name = d ->> 'name', description = d ->> 'description',
    steps = d -> 'steps', fail_fast = (d ->> 'fail_fast')::boolean,
    enabled = (d ->> 'enabled')::boolean, updated_by = $4,
    updated_at = now(), config_hash = ''
FROM (SELECT $3::jsonb AS d) x
WHERE owner = $1 AND pipeline_id = $2
RETURNING cronvisor_pipeline_json(pipelines)::text;

-- name: pipelines_list
-- A page of pipelines, by owner and id: $1 an owner or NULL (an admin's
-- list of all), $2 enabled or NULL for both, $3 an agent id or NULL (the
-- pipelines with a step of that agent), after the cursor ($4 owner, $5
-- pipeline_id; NULL: from the start), $6 rows at most.
SELECT cronvisor_pipeline_json(p)::text, p.owner, p.pipeline_id
FROM pipelines p
WHERE ($1::text IS NULL OR owner = $1)
  AND ($2::boolean IS NULL OR enabled = $2)
  AND ($3::text IS NULL
       OR steps @> jsonb_build_array(jsonb_build_object('agent_id', $3::text)))
  AND ($4::text IS NULL OR (owner, pipeline_id) > ($4, $5::text))
ORDER BY owner, pipeline_id
LIMIT $6;

-- name: pipelines_lock
-- Pipeline $2 of owner $1, locked for its deletion (pipelines_delete
-- follows, in the same transaction).
SELECT 1 FROM pipelines WHERE owner = $1 AND pipeline_id = $2 FOR UPDATE;

-- name: pipelines_delete
-- Deletes pipeline $2 of owner $1 unless a schedule (not deleted) runs
-- it.  One row: how many went (0 or 1), how many schedules use it, and
-- whether it exists (after).
WITH u AS (
    SELECT count(*) AS n FROM schedules
    WHERE owner = $1 AND deleted_at IS NULL
      AND target ->> 'type' = 'pipeline' AND target ->> 'pipeline' = $2),
d AS (
    DELETE FROM pipelines
    WHERE owner = $1 AND pipeline_id = $2 AND (SELECT n FROM u) = 0
    RETURNING 1)
SELECT (SELECT count(*) FROM d), (SELECT n FROM u),
       EXISTS (SELECT 1 FROM pipelines WHERE owner = $1 AND pipeline_id = $2)
       AND (SELECT count(*) FROM d) = 0;

-- name: pipelines_agents_missing
-- The agent ids of the JSON array $2 that owner $1 has no agent of, in
-- the array's order.  The agents it has are locked (FOR SHARE) until the
-- caller's transaction ends: one cannot be deleted while the pipeline
-- that names it is saved (agents_lock).
WITH held AS (
    SELECT agent_id FROM agents
    WHERE owner = $1
      AND agent_id IN (SELECT jsonb_array_elements_text($2::jsonb))
    FOR SHARE)
SELECT a.id
FROM jsonb_array_elements_text($2::jsonb) WITH ORDINALITY AS a(id, n)
WHERE a.id NOT IN (SELECT agent_id FROM held)
ORDER BY a.n;

-- name: pipelines_target
-- What the save of a schedule of owner $1 that runs pipeline $2 checks:
-- whether the pipeline exists and is enabled.  Its row is locked (FOR
-- SHARE) until the save's transaction ends: it is not deleted under the
-- schedule.
SELECT enabled FROM pipelines WHERE owner = $1 AND pipeline_id = $2
FOR SHARE;
