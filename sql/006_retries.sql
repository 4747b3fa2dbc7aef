-- 006_retries.sql: one retry chain per slot.  A slot run that fails with
-- retries left queues a row here (supervisor/finish.c), due after its
-- backoff; the claim starts each row as that slot's next attempt and
-- deletes it.  Runs of several slots in flight (overlap: allow) that fail
-- together each keep their own chain, where the schedule's one pending
-- retry (next_slot_at, retry_repeat) kept only the last.
-- schedules.retry_pending now says that a chain is under way (a row
-- waits or a retry runs): no new slot starts meanwhile, and next_run_at is
-- the earliest row's due_at.

CREATE TABLE retries (
    schedule_id   uuid NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    slot_at       timestamptz NOT NULL,   -- the slot run again
    repeat_number bigint NOT NULL CHECK (repeat_number >= 0),
    attempt       integer NOT NULL CHECK (attempt > 0),
    due_at        timestamptz NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (schedule_id, slot_at)
);

-- The retry each schedule was waiting for, as its row.
INSERT INTO retries (schedule_id, slot_at, repeat_number, attempt, due_at)
SELECT id, next_slot_at, retry_repeat, greatest(current_retry, 1),
       coalesce(next_run_at, now())
FROM schedules
WHERE retry_pending AND next_slot_at IS NOT NULL;

ALTER TABLE schedules DROP COLUMN retry_repeat;
