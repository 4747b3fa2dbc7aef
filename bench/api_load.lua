-- bench/api_load.lua: the wrk script of bench/api.sh's 1,000-client cases
-- (issue 17).  It sorts every answer: 2xx, 503 with a Retry-After header,
-- 503 without one, anything else (a 502 among them), and prints the
-- counts in one line, "CVLOAD ok=N busy=N busy_bad=N other=N", at the end.
-- The bearer token comes from CV_BENCH_TOKEN.  With CV_BENCH_CREATE=PREFIX
-- every request creates a schedule named PREFIX-THREAD-N and carries that
-- name as its Idempotency-Key; without it every request is a GET of the
-- URL.
local threads = {}

function setup(thread)
    thread:set("tid", #threads + 1)
    table.insert(threads, thread)
end

function init(args)
    n, ok, busy, busy_bad, other = 0, 0, 0, 0, 0
    prefix = os.getenv("CV_BENCH_CREATE")
    auth = "Bearer " .. os.getenv("CV_BENCH_TOKEN")
end

function request()
    local h = {["Authorization"] = auth}
    if prefix == nil then
        return wrk.format("GET", nil, h)
    end
    n = n + 1
    local key = prefix .. "-" .. tid .. "-" .. n
    h["Content-Type"] = "application/json"
    h["Idempotency-Key"] = key
    return wrk.format("POST", nil, h, '{"name": "' .. key ..
        '", "kind": "cron", "cron": "0 0 1 1 *", ' ..
        '"target": {"type": "exec", "argv": ["/bin/true"]}}')
end

function response(status, headers, body)
    if status >= 200 and status < 300 then
        ok = ok + 1
    elseif status == 503 and headers["Retry-After"] ~= nil then
        busy = busy + 1
    elseif status == 503 then
        busy_bad = busy_bad + 1
    else
        other = other + 1
    end
end

function done(summary, latency, requests)
    local t = {ok = 0, busy = 0, busy_bad = 0, other = 0}
    for _, th in ipairs(threads) do
        for k, _ in pairs(t) do
            t[k] = t[k] + th:get(k)
        end
    end
    io.write(string.format("CVLOAD ok=%d busy=%d busy_bad=%d other=%d\n",
        t.ok, t.busy, t.busy_bad, t.other))
end
