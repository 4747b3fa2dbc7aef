-- overview.sql: the statement of api/overview.c, GET /overview
-- (docs/api.md), the web console's first view (issue 22).  Each part is
-- read through an index, never by counting runs: the counts of runs and
-- executions come from outcome_counts, the sequencer's rollup
-- (022_console.sql).

-- name: overview_get
-- The overview of owner $1's schedules (NULL: every owner's), as its
-- JSON text: $2 lease_seconds (a supervisor is alive while its heartbeat
-- is younger, as GET /health and the metrics say), $3 whether the live
-- supervisors are listed (an admin's: their hosts are the operator's).
-- Buckets are 5 minutes of epoch time; "hour" is the last 12 of them (the
-- current one included), "series" the last 24 hours of epoch time (the
-- current one included), oldest first, every one present, each with
-- every status the day has (0 where it had none), and "day" their sum.
WITH t AS (
    SELECT to_timestamp(floor(extract(epoch FROM now()) / 300) * 300)
               - interval '55 minutes' AS hour,
           to_timestamp(floor(extract(epoch FROM now()) / 3600) * 3600)
               - interval '23 hours' AS day),
k AS MATERIALIZED (
    SELECT c.bucket, c.what, c.status, c.n
    FROM outcome_counts c, t
    WHERE c.owner = coalesce($1::text, '') AND c.bucket >= t.day),
h AS (
    SELECT at FROM t, generate_series(t.day, t.day + interval '23 hours',
                                      interval '1 hour') AS g(at)),
-- the day's runs by hour, and every status the day has in every hour
kh AS (
    SELECT to_timestamp(floor(extract(epoch FROM bucket) / 3600) * 3600)
               AS at, status, sum(n) AS n
    FROM k WHERE what = 'run'
    GROUP BY 1, 2),
hs AS (
    SELECT h.at, st.status, coalesce(kh.n, 0) AS n
    FROM h CROSS JOIN (SELECT DISTINCT status FROM kh) AS st
    LEFT JOIN kh ON kh.at = h.at AND kh.status = st.status),
-- the last hour's and the day's counts, of runs and of executions
hd AS (
    SELECT what, span, coalesce(json_object_agg(status, n ORDER BY status)
                                FILTER (WHERE n IS NOT NULL), '{}') AS o
    FROM (SELECT k.what, k.status,
                 sum(k.n) FILTER (WHERE k.bucket >= t.hour) AS hour,
                 sum(k.n) AS day
          FROM k, t GROUP BY k.what, k.status) a
    CROSS JOIN LATERAL (VALUES ('hour', a.hour), ('day', a.day)) v(span, n)
    GROUP BY what, span),
f AS (
    SELECT r.id, r.schedule_id, s.name, r.status, r.finished_at,
           r.exit_code, r.http_status, left(r.error, 1000) AS error
    FROM runs r JOIN schedules s ON s.id = r.schedule_id
    WHERE r.status IN ('failed', 'timed_out', 'lost', 'crashed',
                       'protocol_error')
      AND r.finished_at >= now() - interval '24 hours'
      AND s.deleted_at IS NULL AND ($1::text IS NULL OR s.owner = $1)
    ORDER BY r.finished_at DESC, r.id DESC
    LIMIT 10)
SELECT json_build_object(
    'schedules', (
        SELECT json_build_object(
                   'active', coalesce(sum(n) FILTER (WHERE status = 'active'), 0),
                   'paused', coalesce(sum(n) FILTER (WHERE status = 'paused'), 0),
                   'done', coalesce(sum(n) FILTER (WHERE status = 'done'), 0),
                   'dead', coalesce(sum(n) FILTER (WHERE status = 'dead'), 0),
                   'total', coalesce(sum(n), 0))
        FROM (SELECT status, count(*) AS n FROM schedules
              WHERE deleted_at IS NULL AND ($1::text IS NULL OR owner = $1)
              GROUP BY status) c),
    'supervisors', (
        SELECT json_build_object(
                   'alive', count(*),
                   'list', CASE WHEN $3::boolean
                                THEN coalesce(json_agg(json_build_object(
                                         'name', name, 'host', host,
                                         'version', version,
                                         'started_at',
                                         cronvisor_time(started_at),
                                         'heartbeat',
                                         cronvisor_time(heartbeat))
                                     ORDER BY name, id), '[]')
                                ELSE '[]' END)
        FROM supervisors
        WHERE stopped_at IS NULL
          AND heartbeat > now() - make_interval(secs => $2::float8)),
    'runs', json_build_object(
        'hour', coalesce((SELECT o FROM hd WHERE what = 'run' AND span = 'hour'),
                         '{}'),
        'day', coalesce((SELECT o FROM hd WHERE what = 'run' AND span = 'day'),
                        '{}'),
        'series', (
            SELECT json_agg(e ORDER BY at)
            FROM (SELECT h.at,
                         (SELECT json_object_agg(key, v ORDER BY o, key)
                          FROM (SELECT 0 AS o, 'at' AS key,
                                       to_json(cronvisor_time(h.at)) AS v
                                UNION ALL
                                SELECT 1, hs.status, to_json(hs.n)
                                FROM hs WHERE hs.at = h.at) kv) AS e
                  FROM h) y)),
    'executions', json_build_object(
        'hour', coalesce((SELECT o FROM hd
                          WHERE what = 'execution' AND span = 'hour'), '{}'),
        'day', coalesce((SELECT o FROM hd
                         WHERE what = 'execution' AND span = 'day'), '{}')),
    'oldest_due', (
        SELECT json_build_object(
                   'schedule_id', id, 'name', name,
                   'next_run_at', cronvisor_time(next_run_at),
                   'late_ms', floor(extract(epoch FROM now() - next_run_at)
                                    * 1000)::bigint)
        FROM schedules
        WHERE status = 'active' AND next_run_at < now()
          AND deleted_at IS NULL AND ($1::text IS NULL OR owner = $1)
        ORDER BY next_run_at, id
        LIMIT 1),
    'recent_failures', (
        SELECT coalesce(json_agg(json_build_object(
                   'run_id', id, 'schedule_id', schedule_id,
                   'schedule_name', name, 'status', status,
                   'finished_at', cronvisor_time(finished_at),
                   'exit_code', exit_code, 'http_status', http_status,
                   'error', error)
                   ORDER BY finished_at DESC, id DESC), '[]')
        FROM f))::text;
