-- 011_pipelines.sql: pipelines (seed 004's Pipeline, docs/orchestration.md):
-- a named graph of agent steps, owned by a tenant, its id a slug unique
-- within the owner.  The steps are kept in the native form common/pipeline.c
-- writes (checked there: ids, dependencies, no cycle; the API checks that
-- each step's agent exists).

CREATE TABLE pipelines (
    owner       text NOT NULL CHECK (length(owner) BETWEEN 1 AND 200),
    pipeline_id text NOT NULL
                CHECK (pipeline_id ~ '^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$'),
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    description text NOT NULL DEFAULT '' CHECK (length(description) <= 10000),
    steps       jsonb NOT NULL
                CHECK (jsonb_typeof(steps) = 'array'
                       AND jsonb_array_length(steps) BETWEEN 1 AND 100),
    fail_fast   boolean NOT NULL DEFAULT false,
    enabled     boolean NOT NULL DEFAULT true,
    created_by  text NOT NULL,
    updated_by  text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner, pipeline_id)
);
-- Which pipelines use an agent (an agent in use is not deleted).
CREATE INDEX pipelines_steps ON pipelines USING gin (steps jsonb_path_ops);
