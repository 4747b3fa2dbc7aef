-- bench/scale_create.lua: the wrk script of bench/scale.sh's "create
-- through the API" step.  Every line of $CV_SCALE_FILE (JSON lines, from
-- bench/scale.py gen) is POSTed once to /api/v1/schedules with the bearer
-- token $CV_BENCH_TOKEN and the Idempotency-Key "$CV_SCALE_KEY-LINE": thread
-- k of $CV_SCALE_THREADS sends lines k+1, k+1+T, ...  A thread whose lines
-- are all answered stops (or 10 s after its last answer: a POST lost to a
-- socket error is never answered); connections that ask for a request
-- after its last line get a GET of nginx's static file (not counted).
-- wrk itself still waits for its -d: bench/scale.sh runs it with a long
-- one and ends it with SIGINT once the schedules are in the database.
local threads = {}
local counter = 0

function setup(thread)
	thread:set("tid", counter)
	counter = counter + 1
	table.insert(threads, thread)
end

function init(args)
	nthreads = counter
	lines = {}
	local i = 0
	for l in io.lines(os.getenv("CV_SCALE_FILE")) do
		if i % tonumber(os.getenv("CV_SCALE_THREADS")) == tid then
			lines[#lines + 1] = {i + 1, l}
		end
		i = i + 1
	end
	nextl = 1
	-- wrk calls thread 0's request() once after init, to check it, and
	-- never sends what it returns
	checked = tid ~= 0
	last = os.time()
	answered = 0
	created = 0
	failed = 0
	auth = "Bearer " .. os.getenv("CV_BENCH_TOKEN")
end

function request()
	if not checked then
		checked = true
		return wrk.format("GET", "/static.json")
	end
	if nextl > #lines then
		return wrk.format("GET", "/static.json")
	end
	local l = lines[nextl]
	nextl = nextl + 1
	return wrk.format("POST", "/api/v1/schedules", {
		["Content-Type"] = "application/json",
		["Authorization"] = auth,
		["Idempotency-Key"] = os.getenv("CV_SCALE_KEY") .. "-" .. l[1],
	}, l[2])
end

function response(status, headers, body)
	if body:find('"static"', 1, true) then -- a GET after the last line
		-- a POST lost to a socket error is never answered: give up on
		-- it after 10 s (the line is then missing from the database)
		if os.time() - last > 10 then
			wrk.thread:stop()
		end
		return
	end
	last = os.time()
	answered = answered + 1
	if status == 201 then
		created = created + 1
	else
		failed = failed + 1
	end
	if answered >= #lines then
		wrk.thread:stop()
	end
end

function done(summary, latency, requests)
	local c, f = 0, 0
	for _, t in ipairs(threads) do
		c = c + t:get("created")
		f = f + t:get("failed")
	end
	io.write(string.format("scale_created %d\nscale_failed %d\n", c, f))
end
