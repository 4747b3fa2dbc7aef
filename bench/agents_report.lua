-- bench/agents_report.lua: the wrk script of bench/agents.py's callbacks
-- step.  Every line of $CV_REPORTS_FILE ("JOB-ID TOKEN", a job that waits
-- for its agent's report) is reported "completed" TWICE through nginx:
-- POST /api/v1/jobs/JOB-ID/complete with "Authorization: Bearer TOKEN".
-- Thread k of $CV_REPORTS_THREADS takes lines k+1, k+1+T, ...; the two
-- reports of a line are the thread's next two requests, which wrk hands to
-- two of its connections, so they race: one is recorded ("recorded"), the
-- other must be answered 200 "already recorded" and change nothing
-- (docs/agents.md, "Reporting back").
--
-- A thread whose reports are all answered writes
-- $CV_REPORTS_DONE/done-<k>: "first_us last_us answered recorded already
-- other" (the time of its first request and of its last answer,
-- CLOCK_REALTIME in microseconds, and its answers by kind; "other" is any
-- other answer, each status also counted in "codes") and stops.  Requests
-- asked for after its last line are GETs of nginx's static file, not
-- counted.  wrk itself waits for its -d: bench/agents.py ends it with
-- SIGINT once every thread has written its file.
local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } cvts;
int clock_gettime(int, cvts *);
]]
local ts = ffi.new("cvts")

local function now_us()
	ffi.C.clock_gettime(0, ts)
	return tonumber(ts.tv_sec) * 1000000 + math.floor(tonumber(ts.tv_nsec) / 1000)
end

local counter = 0

function setup(thread)
	thread:set("tid", counter)
	counter = counter + 1
end

function init(args)
	local nthreads = tonumber(os.getenv("CV_REPORTS_THREADS"))
	lines = {}
	local i = 0
	for l in io.lines(os.getenv("CV_REPORTS_FILE")) do
		if i % nthreads == tid then
			local job, token = l:match("^(%S+) (%S+)$")
			lines[#lines + 1] = {job, "Bearer " .. token}
		end
		i = i + 1
	end
	sent = 0
	answered, recorded, already, other = 0, 0, 0, 0
	codes = {}
	first, last = 0, 0
	finished = false
	-- wrk calls thread 0's request() once after init, to check it, and
	-- never sends what it returns
	checked = tid ~= 0
	body = '{"status": "completed", "result": {"bench": true}}'
end

function request()
	if not checked then
		checked = true
		return wrk.format("GET", "/static.json")
	end
	if sent >= 2 * #lines then
		return wrk.format("GET", "/static.json")
	end
	if sent == 0 then
		first = now_us()
	end
	local l = lines[math.floor(sent / 2) + 1]
	sent = sent + 1
	return wrk.format("POST", "/api/v1/jobs/" .. l[1] .. "/complete", {
		["Content-Type"] = "application/json",
		["Authorization"] = l[2],
	}, body)
end

local function finish()
	finished = true
	local f = io.open(os.getenv("CV_REPORTS_DONE") .. "/done-" .. tid, "w")
	local c = {}
	for k, v in pairs(codes) do
		c[#c + 1] = k .. "=" .. v
	end
	f:write(string.format("%d %d %d %d %d %d %s\n", first, last, answered,
		recorded, already, other, table.concat(c, ",")))
	f:close()
	wrk.thread:stop()
end

function response(status, headers, body)
	if body:find('"static"', 1, true) then -- a GET after the last line
		if #lines == 0 and not finished then
			finish()
		end
		return
	end
	last = now_us()
	answered = answered + 1
	codes[status] = (codes[status] or 0) + 1
	if status == 200 and body:find('"already recorded"', 1, true) then
		already = already + 1
	elseif status == 200 and body:find('"recorded"', 1, true) then
		recorded = recorded + 1
	else
		other = other + 1
	end
	if answered >= 2 * #lines and not finished then
		finish()
	end
end
