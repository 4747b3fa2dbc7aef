-- metrics.sql: the statements of api/metrics.c, GET /metrics
-- (docs/operations.md, "Metrics").

-- name: metrics_counts
-- The counters the sequencer keeps (metric_counts), a histogram's buckets
-- in the order of their bounds.
SELECT name, labels, value
FROM metric_counts
ORDER BY name,
         regexp_replace(labels, ',?le="[^"]*"', ''),
         CASE substring(labels FROM 'le="([^"]*)"')
             WHEN '+Inf' THEN 'Infinity'::float8
             ELSE substring(labels FROM 'le="([^"]*)"')::float8 END
         NULLS FIRST;

-- name: metrics_gauges
-- What is so now, across every supervisor: $1 lease_seconds (a supervisor
-- whose heartbeat is older is not alive).  Every name here is a gauge;
-- a name with no row is 0.
SELECT 'cronvisor_runs_in_flight',
       format('kind="%s",status="%s"', kind, status), count(*)::float8
FROM runs WHERE status IN ('running', 'waiting')
GROUP BY kind, status
UNION ALL
SELECT 'cronvisor_agent_requests_in_flight', '', count(*)
FROM runs r JOIN jobs j ON j.id = r.job_id
WHERE r.status = 'running' AND j.agent_id IS NOT NULL
UNION ALL
SELECT 'cronvisor_schedules', format('status="%s"', status), count(*)
FROM schedules WHERE deleted_at IS NULL
GROUP BY status
UNION ALL
SELECT 'cronvisor_due_slots', '', count(*)
FROM schedules WHERE status = 'active' AND next_run_at <= now()
UNION ALL
SELECT 'cronvisor_oldest_due_seconds', '',
       coalesce(extract(epoch FROM now() - min(next_run_at)), 0)
FROM schedules WHERE status = 'active' AND next_run_at <= now()
UNION ALL
SELECT 'cronvisor_jobs_ready', '', count(*)
FROM jobs WHERE status = 'pending' AND ready_at <= now()
UNION ALL
SELECT 'cronvisor_oldest_ready_job_seconds', '',
       coalesce(extract(epoch FROM now() - min(ready_at)), 0)
FROM jobs WHERE status = 'pending' AND ready_at <= now()
UNION ALL
SELECT 'cronvisor_supervisors_alive', '', count(*)
FROM supervisors
WHERE stopped_at IS NULL
  AND heartbeat > now() - make_interval(secs => $1::float8)
UNION ALL
SELECT 'cronvisor_events_last_seq', '', last_seq FROM events_state
UNION ALL
SELECT 'cronvisor_events_unnumbered', '', count(*)
FROM events WHERE seq IS NULL
UNION ALL
SELECT 'cronvisor_notifications_pending', '', count(*)
FROM notifications WHERE status = 'pending';
