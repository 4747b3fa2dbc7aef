-- bench/api_create.lua: the wrk script of bench/api.sh's "POST create"
-- case: every request creates one schedule (a cron schedule that first
-- fires next New Year, so the supervisor has nothing to run meanwhile).
-- The bearer token comes from the environment, CV_BENCH_TOKEN.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("CV_BENCH_TOKEN")
wrk.body = '{"name": "bench-create", "kind": "cron", "cron": "0 0 1 1 *", ' ..
    '"timezone": "Europe/Berlin", "max_retries": 3, ' ..
    '"target": {"type": "exec", "argv": ["/bin/true"]}}'
