-- Schedules, agents and pipelines as code (`cronvisorctl apply`,
-- docs/apply.md): the apply set a thing was last applied as (NULL: made
-- by hand, or by a request of its own since), and the SHA-256 of the
-- document it was applied from, which tells an unchanged document from a
-- changed one without reading the thing back.  An API write of its own
-- (a PATCH) forgets the hash, so that the next apply restores the file's
-- version.  schedules.config_hash (001) was kept for this; '' is none.
ALTER TABLE schedules ADD COLUMN apply_set text
    CHECK (length(apply_set) BETWEEN 1 AND 100);
ALTER TABLE agents ADD COLUMN apply_set text
    CHECK (length(apply_set) BETWEEN 1 AND 100);
ALTER TABLE agents ADD COLUMN config_hash text NOT NULL DEFAULT '';
ALTER TABLE pipelines ADD COLUMN apply_set text
    CHECK (length(apply_set) BETWEEN 1 AND 100);
ALTER TABLE pipelines ADD COLUMN config_hash text NOT NULL DEFAULT '';

-- An apply reads its set's things, and a schedule by name.
CREATE INDEX schedules_apply_set ON schedules (owner, apply_set, name)
    WHERE deleted_at IS NULL;
CREATE INDEX agents_apply_set ON agents (owner, apply_set)
    WHERE apply_set IS NOT NULL;
CREATE INDEX pipelines_apply_set ON pipelines (owner, apply_set)
    WHERE apply_set IS NOT NULL;
