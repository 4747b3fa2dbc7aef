-- Idempotent creates.  A client that sends POST /schedules with an
-- Idempotency-Key header can send it again after a lost reply or a 503
-- (the database went away while it committed: the row may or may not
-- exist) and gets the schedule of the first request instead of a second
-- one.  The key is the owner's; the hash is sha256 of the first request's
-- body, so the same key with another body is refused, not replayed.
ALTER TABLE schedules ADD COLUMN idempotency_key text,
                      ADD COLUMN idempotency_hash bytea;
ALTER TABLE schedules ADD CHECK ((idempotency_key IS NULL) = (idempotency_hash IS NULL));
CREATE UNIQUE INDEX schedules_idempotency ON schedules (owner, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- As in 002, with the two new columns left out of the API's view.
CREATE OR REPLACE FUNCTION cronvisor_schedule_json(s schedules) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT (to_jsonb(s) - ARRAY['id8', 'next_slot_at', 'slot_seq', 'running',
                                'retry_pending', 'retry_repeat', 'config_hash',
                                'deleted_at', 'idempotency_key',
                                'idempotency_hash'])
        || jsonb_build_object(
               'at', cronvisor_time(s.at),
               'start_at', cronvisor_time(s.start_at),
               'last_run_at', cronvisor_time(s.last_run_at),
               'next_run_at', cronvisor_time(s.next_run_at),
               'created_at', cronvisor_time(s.created_at),
               'updated_at', cronvisor_time(s.updated_at),
               'runs_in_flight', s.running)
$$;
