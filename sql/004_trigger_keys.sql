-- Idempotent trigger-now requests.  A client that sends POST
-- /schedules/{id}/trigger with an Idempotency-Key header can send it again
-- after a lost reply or a 503 and gets the first request's answer (the
-- same trigger id and run id) instead of a second run.  A key is its
-- requester's (triggers.requested_by) and is kept for a day: the API
-- ignores older ones, and the supervisors delete them at their
-- heartbeat.  The hash is sha256 of the
-- first request's body; the same key for another schedule or body is
-- refused, not replayed.  The trigger's id is taken here first and given
-- to its triggers row, which the supervisor deletes when it claims it.
CREATE TABLE trigger_keys (
    requested_by text NOT NULL,
    key          text NOT NULL,
    hash         bytea NOT NULL,
    schedule_id  uuid NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    trigger_id   bigint NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (requested_by, key),
    CHECK (key <> '' AND length(key) <= 255)
);
CREATE INDEX trigger_keys_created ON trigger_keys (created_at);
CREATE INDEX trigger_keys_schedule ON trigger_keys (schedule_id);
