-- 010_seed_ids.sql: seed 002's organizationId and environmentId, kept with
-- the schedule (the document's organization_id and environment_id,
-- docs/schedules.md) and carried by the event it sends the receiver.  Like
-- workflow_id, each is an identifier of the caller's, 1 to 255 characters
-- or NULL; the API checks the length.
ALTER TABLE schedules
    ADD COLUMN organization_id text,
    ADD COLUMN environment_id text;
