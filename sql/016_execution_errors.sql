-- 016_execution_errors.sql: the errors a settle adds to an execution
-- (cronvisor_execution_settle, functions.sql), found by a join with the
-- jobs that failed rather than a search of their array for every job (a
-- deleted plan of 100,000 jobs failed at once took longer than the
-- statement timeout, and the claim that failed them was rolled back at
-- every try), and at most 1,000 per execution: the first ones, in the
-- order of their jobs.  The live definition is in functions.sql.
CREATE FUNCTION cronvisor_execution_errors(x executions, p_failed uuid[])
RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'message', j.error -> 'message', 'job_id', j.id,
               'at', cronvisor_time(j.finished_at)) ORDER BY j.seq), '[]')
    FROM (SELECT j.* FROM unnest(p_failed) f(id)
          JOIN jobs j ON j.id = f.id
          WHERE j.execution_id = x.id
          ORDER BY j.seq
          LIMIT greatest(0, 1000 - jsonb_array_length(x.errors))) j
$$;
