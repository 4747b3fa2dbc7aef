-- 015_jobs_ready.sql: the claim's candidates among pending jobs by
-- ready_at, then seq (claim_jobs): a pipeline context's next step, ready
-- from its batch's planned start, goes before the steps of the contexts
-- after it (depth first), and a fan-out's values go in their order.
DROP INDEX jobs_ready;
CREATE INDEX jobs_ready ON jobs (ready_at, seq)
    WHERE status = 'pending' AND ready_at IS NOT NULL;
