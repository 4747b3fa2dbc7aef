-- sched.sql: the columns of a schedules row as the supervisor reads it
-- (supervisor/sched.c, sched_load()).  {{sched}} in a statement selects
-- them; C reads each by its SCHED_COL_<KEY>.  at and start_at come in
-- epoch ms, rounded up (the API stores whole ms; a row written by hand
-- with µs then fires no earlier than it says); next_run_at and
-- next_slot_at in whole seconds, and next_run_at again in µs.

-- columns: sched
id,                                                  -- id
id8,                                                 -- id8
name,                                                -- name
kind,                                                -- kind
interval_seconds,                                    -- interval
anchor,                                              -- anchor
cron,                                                -- cron
timezone,                                            -- tz
ceil(extract(epoch FROM at) * 1000)::bigint,         -- at
ceil(extract(epoch FROM start_at) * 1000)::bigint,   -- start
dst_gap,                                             -- gap
dst_fold,                                            -- fold
jitter_seconds,                                      -- jitter
total_repeats,                                       -- repeats
max_retries,                                         -- retries
backoff,                                             -- backoff
retry_delay_seconds,                                 -- delay
timeout_seconds,                                     -- timeout
overlap,                                             -- overlap
catch_up,                                            -- catch_up
max_catch_up_runs,                                   -- max_catch_up
starting_deadline_seconds,                           -- deadline
target,                                              -- target
limits,                                              -- limits
trigger_payload,                                     -- payload
current_repeat,                                      -- repeat
current_retry,                                       -- retry
floor(extract(epoch FROM next_run_at))::bigint,      -- next_run
floor(extract(epoch FROM next_slot_at))::bigint,     -- next_slot
running,                                             -- running
slot_seq,                                            -- slot_seq
workflow_id,                                         -- workflow
trigger_node_id,                                     -- node
status,                                              -- status
retry_pending,                                       -- retry_pending
deleted_at IS NOT NULL,                              -- deleted
(extract(epoch FROM next_run_at) * 1e6)::bigint,     -- next_run_us
owner,                                               -- owner
organization_id,                                     -- organization
environment_id                                       -- environment
