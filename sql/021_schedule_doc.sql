-- A schedule's document as the API shows it, kept with the row so that a
-- list is read, not built (GET /schedules, issue 22): doc_text is the
-- document's JSON object as common/schedule.c writes it, doc_masked the
-- same with the target's secrets masked (for viewers), NULL when that is
-- doc_text (no secrets: most schedules).  The API writes both in the
-- transaction of every change it makes.  A write of any
-- document column without them (by hand, or code that does not know of
-- them) makes them NULL, and the API builds that row's document as before.
ALTER TABLE schedules ADD COLUMN doc_text text;
ALTER TABLE schedules ADD COLUMN doc_masked text;

CREATE FUNCTION cronvisor_schedule_doc_stale() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.doc_text IS NOT DISTINCT FROM OLD.doc_text THEN
        NEW.doc_text := NULL;
        NEW.doc_masked := NULL;
    END IF;
    RETURN NEW;
END
$$;

-- Fires when an UPDATE names a document column (the supervisor's never
-- do: they write the state).
CREATE TRIGGER schedules_doc_stale
    BEFORE UPDATE OF name, description, kind, interval_seconds, anchor, cron,
        timezone, at, start_at, total_repeats, max_retries, backoff,
        retry_delay_seconds, timeout_seconds, overlap, catch_up,
        max_catch_up_runs, starting_deadline_seconds, jitter_seconds, dst_gap,
        dst_fold, history_limit, target, limits, trigger_payload, workflow_id,
        trigger_node_id, priority, organization_id, environment_id
    ON schedules FOR EACH ROW EXECUTE FUNCTION cronvisor_schedule_doc_stale();
