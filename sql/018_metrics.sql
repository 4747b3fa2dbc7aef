-- Counters of the Prometheus metrics (docs/operations.md, "Metrics"):
-- one row per series, moved by the sequencer in the transaction that
-- numbers the events they count (cronvisor_events_sequence()), so that
-- each event is counted once, by whichever supervisor leads, and a total
-- survives restarts.  labels is the series' label set as exposed
-- (`status="failed",target="exec"`), from fixed sets of values only.
CREATE TABLE metric_counts (
    name   text NOT NULL,
    labels text NOT NULL DEFAULT '',
    value  double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (name, labels)
);

-- What the sequencer counts of each event it numbers.
CREATE TYPE cronvisor_event_head AS (type text, subject text, data jsonb);
