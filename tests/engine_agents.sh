#!/bin/sh
# engine_agents.sh: schedules that target agents (docs/agents.md), end to
# end: the API through nginx, the real cronvisord forking the requests, a
# stub agent (tests/helpers/stubagent.py) that answers and reports back
# through nginx.  Checks, counted by what the agent saw (its request log):
# a 200 ends the job with the agent's answer as its result; a 202 leaves
# the job running until the agent's report completes it (the same report
# twice changes nothing); a failed report with retryable false is final,
# with true retried; a silent agent's job times out at its deadline and is
# retried; 503 and 429 (after its Retry-After) are retried, 400 is final;
# params outside the input schema fail before any request; the request's
# headers, body, auth and HMAC signature; a wrong, a superseded and a
# missing token; a kill -9 of the supervisor while jobs wait for their
# reports loses none and sends none twice.
# Usage: engine_agents.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"
A=$CV_TOKEN_ALICE_EDITOR
ADM=$CV_TOKEN_ADMIN

stub_agent_up

# sched NAME AGENT PARAMS [MORE-JSON]: a once schedule of alice's, due now,
# targeting AGENT; prints its id.
sched() {
	send POST /schedules "$A" "{\"name\": \"$1\", \"at\": \"$(soon)\", \"target\": {\"type\": \"agent\", \"agent\": \"$2\", \"params\": $3}${4:+, $4}}"
	[ "$code" = 201 ] || echo "schedule $1: $code $resp" >&2
	j .id
}
# seen PATH: requests the agent got on PATH.
seen() { grep -c "\"path\": \"$1\"" "$tmp/agent.log" 2>/dev/null || echo 0; }
# job_of SCHEDULE: the id of its (first) execution's job.
job_of() { sql "SELECT j.id FROM jobs j WHERE j.schedule_id = '$1' ORDER BY j.created_at LIMIT 1"; }
state() { sql "SELECT s.status || ' ' || x.status || ' ' || j.status || ' ' || (SELECT count(*) FROM runs r WHERE r.job_id = j.id) FROM schedules s JOIN executions x ON x.schedule_id = s.id JOIN jobs j ON j.execution_id = x.id WHERE s.id = '$1' ORDER BY x.created_at LIMIT 1"; }

# --- 200: the answer is the result ------------------------------------------
stub_agent sync /ok "\"auth\": {\"type\": \"bearer\", \"token\": \"tok-sync-123\"}"
s_ok=$(sched ok sync '{"tickerId": "AAPL"}' '"max_retries": 0')
wait_for 20 "SELECT status = 'done' FROM schedules WHERE id = '$s_ok'"
ok "200: done, success, completed, 1 attempt" "$(state "$s_ok")" "done success completed 1"
jid=$(job_of "$s_ok")
call GET "/jobs/$jid" "$A"
ok "200: the job's result is the agent's answer" "$(j '.result.answer')" 42
ok "200: the job records its agent, params and version" "$(j '[.agent_id, .params.tickerId, (.agent_version // "none")] | join(",")')" "sync,AAPL,none"
ok "200: enqueued" "$(j '.enqueued_at != null')" true
line=$(grep '"path": "/ok"' "$tmp/agent.log" | head -1)
ok "request: X-Job-Id is the job" "$(printf '%s' "$line" | jq -r '.headers["X-Job-Id"]')" "$jid"
ok "request: X-Execution-Id is its execution" "$(printf '%s' "$line" | jq -r '.headers["X-Execution-Id"]')" "$(sql "SELECT execution_id FROM jobs WHERE id = '$jid'")"
ok "request: the first attempt is 1" "$(printf '%s' "$line" | jq -r '.headers["X-Attempt"] + "/" + (.body.attempt | tostring)')" "1/1"
ok "request: Idempotency-Key is the job" "$(printf '%s' "$line" | jq -r '.headers["Idempotency-Key"]')" "$jid"
ok "request: bearer auth" "$(printf '%s' "$line" | jq -r '.headers.Authorization')" "Bearer tok-sync-123"
ok "request: the params" "$(printf '%s' "$line" | jq -r '.body.params.tickerId')" AAPL
ok "request: a callback URL of the API" "$(printf '%s' "$line" | jq -r '.body.callback.url')" "$CV_API_URL/jobs/$jid/complete"
ok "request: a token and a deadline with ms" "$(printf '%s' "$line" | jq -r '(.body.callback.token | test("^[0-9a-f]{64}$")) and (.body.callback.deadline | test("Z$"))')" true
ok "request: only the token's hash is stored" "$(sql "SELECT count(*) FROM runs WHERE callback_hash = sha256(convert_to('$(printf '%s' "$line" | jq -r '.body.callback.token')', 'UTF8'))")" 1
ok "logs: no secret, no token" "$(cat "$work"/*.log | grep -c -e tok-sync-123 -e "$(printf '%s' "$line" | jq -r '.body.callback.token')")" 0

# --- 202 and a report --------------------------------------------------------------
stub_agent async /async "\"auth\": {\"type\": \"hmac\", \"secret\": \"hmac-secret-77\"}"
s_as=$(sched async async '{"delay_ms": 2000}' '"max_retries": 0')
wait_for 20 "SELECT count(*) = 1 FROM runs WHERE schedule_id = '$s_as' AND status = 'waiting'"
ok "202: the attempt waits, the job runs" "$(state "$s_as")" "active running running 1"
wait_for 20 "SELECT status = 'done' FROM schedules WHERE id = '$s_as'"
ok "202: the report completes it" "$(state "$s_as")" "done success completed 1"
call GET "/jobs/$(job_of "$s_as")" "$A"
ok "202: the result is the report's" "$(j '.result.done')" true
ok "202: one request" "$(seen /async)" 1
line=$(grep '"path": "/async"' "$tmp/agent.log" | head -1)
ok "hmac: the signature verifies" "$(printf '%s' "$line" | python3 -c 'import hmac, hashlib, json, sys
e = json.load(sys.stdin); sig = e["headers"]["X-Cronvisor-Signature"]
t = sig.split(",")[0][2:]; v = sig.split(",")[1][3:]
print(hmac.compare_digest(v, hmac.new(b"hmac-secret-77", (t + "." + e["raw"]).encode(), hashlib.sha256).hexdigest()))')" True

# --- the same report twice; wrong, superseded and missing tokens ---------------------
stub_agent twice /async-twice
s_tw=$(sched twice twice '{"delay_ms": 100}' '"max_retries": 0')
wait_for 20 "SELECT status = 'done' FROM schedules WHERE id = '$s_tw'"
wait_until 10 sh -c "[ \$(grep -c '\"report\": \"complete\"' $tmp/agent.log) -ge 3 ]"
ok "twice: the second report was answered 200 and changed nothing" "$(grep '"report": "complete"' "$tmp/agent.log" | jq -r 'select(.body.result.job == "'"$(job_of "$s_tw")"'") | .code' | sort | tr '\n' ' ')" "200 200 "
ok "twice: one attempt, completed" "$(state "$s_tw")" "done success completed 1"
j1=$(job_of "$s_ok")
send POST "/jobs/$j1/complete" "" '{"status": "completed", "token": "0000000000000000000000000000000000000000000000000000000000000000"}'
ok_error "token: a wrong one is 401" 401 unauthorized null
send POST "/jobs/$j1/complete" "" '{"status": "completed"}'
ok_error "token: none is 401" 401 unauthorized null
send POST "/jobs/00000000-0000-0000-0000-000000000000/complete" "" '{"status": "completed", "token": "x"}'
ok_error "token: an unknown job is 401 too" 401 unauthorized null
send POST "/jobs/$j1/complete" "" '{"status": "done", "token": "x"}'
ok_error "report: a bad status" 400 invalid_field status
send POST "/jobs/$j1/complete" "" '{"status": "failed", "error": "oops", "token": "x"}'
ok_error "report: a bad error" 400 invalid_field error
send POST "/jobs/$j1/complete" "" '{"status": "completed", "token": "x", "extra": 1}'
ok_error "report: an unknown member" 400 unknown_field extra

# --- failures, a silent agent, params outside the schema, heartbeats --------------------
# Each of these has its agent and its schedule, due together, and nothing
# here depends on another: all are created first, then each is waited for
# and checked in turn (one after the other, the waits added up to most
# of this test's time).
stub_agent afail /async-fail
stub_agent flaky /flaky
stub_agent limited /limited
stub_agent bad /bad
stub_agent silent /silent
stub_agent schema /ok '"input_schema": {"type": "object", "required": ["tickerId"], "properties": {"tickerId": {"type": "string"}}}'
stub_agent beat /beat '"heartbeat_seconds": 2'
stub_agent quiet /silent '"heartbeat_seconds": 1'
# params outside the schema fail before any request
send POST /schedules "$A" "{\"name\": \"badp\", \"at\": \"2099-01-01T00:00:00Z\", \"target\": {\"type\": \"agent\", \"agent\": \"schema\", \"params\": {\"tickerId\": 7}}}"
ok_error "schema: refused when saved, naming the param" 400 invalid_field target.params.tickerId
send POST /schedules "$A" "{\"name\": \"nop\", \"at\": \"2099-01-01T00:00:00Z\", \"target\": {\"type\": \"agent\", \"agent\": \"nope\"}}"
ok_error "schema: an unknown agent is refused" 400 invalid_field target.agent
send POST /schedules "$A" "{\"name\": \"schemaok\", \"at\": \"$(date -u -d '+3 seconds' +%Y-%m-%dT%H:%M:%S.000Z)\", \"max_retries\": 2, \"target\": {\"type\": \"agent\", \"agent\": \"schema\", \"params\": {\"tickerId\": \"MSFT\"}}}"
s_sc=$(j .id)
sql "UPDATE schedules SET target = '{\"type\": \"agent\", \"agent\": \"schema\", \"params\": {\"tickerId\": 9}}' WHERE id = '$s_sc'" >/dev/null
s_ff=$(sched ffinal afail '{"retryable": false, "delay_ms": 50}' '"max_retries": 3, "retry_delay_seconds": 1, "backoff": "fixed"')
s_fr=$(sched fretry afail '{"retryable": true, "delay_ms": 50}' '"max_retries": 1, "retry_delay_seconds": 1, "backoff": "fixed"')
s_fl=$(sched flaky flaky '{"fail_times": 2}' '"max_retries": 3, "retry_delay_seconds": 1, "backoff": "fixed"')
s_li=$(sched limited limited '{"retry_after": 3}' '"max_retries": 2, "retry_delay_seconds": 1, "backoff": "fixed"')
s_bd=$(sched bad bad '{}' '"max_retries": 3')
send POST /schedules "$A" "{\"name\": \"silent\", \"at\": \"$(soon)\", \"max_retries\": 1, \"retry_delay_seconds\": 1, \"backoff\": \"fixed\", \"target\": {\"type\": \"agent\", \"agent\": \"silent\", \"timeout_ms\": 1500}}"
s_si=$(j .id)
s_hb=$(sched beat beat '{"beat_ms": 700, "beats": 4}' '"max_retries": 0')
s_qt=$(sched quiet quiet '{}' '"max_retries": 0')

# failures: final and retried
wait_for 20 "SELECT status = 'dead' FROM schedules WHERE id = '$s_ff'"
ok "retryable false: dead after one attempt" "$(state "$s_ff")" "dead failed failed 1"
call GET "/jobs/$(job_of "$s_ff")" "$A"
ok "retryable false: the agent's message" "$(j '.error.message | test("the model gave up")')" true
wait_for 20 "SELECT status = 'dead' FROM schedules WHERE id = '$s_fr'"
ok "retryable true: retried once, then dead" "$(state "$s_fr")" "dead failed failed 2"
wait_for 30 "SELECT status = 'done' FROM schedules WHERE id = '$s_fl'"
ok "503: retried until it succeeds" "$(state "$s_fl")" "done success completed 3"
ok "503: the same job in every request" "$(grep '"path": "/flaky"' "$tmp/agent.log" | jq -r '.headers["X-Job-Id"] + ":" + .headers["X-Attempt"]' | sort | tr '\n' ' ')" "$(job_of "$s_fl"):1 $(job_of "$s_fl"):2 $(job_of "$s_fl"):3 "
wait_for 30 "SELECT status = 'done' FROM schedules WHERE id = '$s_li'"
ok "429: retried" "$(state "$s_li")" "done success completed 2"
gap=$(grep '"path": "/limited"' "$tmp/agent.log" | jq -s '.[1].at - .[0].at')
ok "429: after its Retry-After of 3 s, not the 1 s backoff (gap $gap s)" "$(echo "$gap >= 2.9" | bc)" 1
wait_for 20 "SELECT status = 'dead' FROM schedules WHERE id = '$s_bd'"
ok "400: final at once" "$(state "$s_bd")" "dead failed failed 1"

# a silent agent times out, retried
wait_for 30 "SELECT status = 'dead' FROM schedules WHERE id = '$s_si'"
ok "silent: timed out twice, dead" "$(sql "SELECT string_agg(status, ',' ORDER BY attempt) FROM runs WHERE schedule_id = '$s_si'")" "timed_out,timed_out"
ok "silent: said why" "$(sql "SELECT error FROM runs WHERE schedule_id = '$s_si' ORDER BY attempt LIMIT 1")" "the agent did not report by the job's deadline"
# (quiet's agent is at /silent too: the silent job's requests are counted)
ok "silent: two requests" "$(grep '"path": "/silent"' "$tmp/agent.log" | jq -r '.headers["X-Job-Id"]' | grep -c -x "$(job_of "$s_si")")" 2

# params changed behind the API fail at fire time
wait_for 20 "SELECT status = 'dead' FROM schedules WHERE id = '$s_sc'"
ok "schema: params changed behind the API fail at fire time, final" "$(state "$s_sc")" "dead failed failed 1"
ok "schema: the error names the param" "$(sql "SELECT error FROM runs WHERE schedule_id = '$s_sc'")" "params.tickerId: must be a string (the agent's input schema)"

# heartbeats
wait_for 20 "SELECT status = 'done' FROM schedules WHERE id = '$s_hb'"
ok "heartbeat: kept alive past its 2 s, completed" "$(state "$s_hb")" "done success completed 1"
ok "heartbeat: each answered 200" "$(grep '"report": "heartbeat"' "$tmp/agent.log" | jq -r .code | sort -u)" 200
wait_for 20 "SELECT status = 'dead' FROM schedules WHERE id = '$s_qt'"
ok "heartbeat: none sent, timed out well before the deadline" "$(sql "SELECT error || ' ' || (finished_at < deadline_at - interval '60 s') FROM runs WHERE schedule_id = '$s_qt'")" "the agent sent no heartbeat for 1 s true"

# --- a report through the database, with EXECUTE only -----------------------------------
stub_agent dbrep /silent
s_db=$(sched dbrep dbrep '{}' '"max_retries": 0')
wait_for 20 "SELECT count(*) = 1 FROM runs WHERE schedule_id = '$s_db' AND status = 'waiting'"
jdb=$(job_of "$s_db")
tdb=$(grep '"path": "/silent"' "$tmp/agent.log" | jq -r 'select(.headers["X-Job-Id"] == "'"$jdb"'") | .body.callback.token')
role=agent_rep_$$
q postgres "DROP ROLE IF EXISTS $role" >/dev/null 2>&1
q "$name" "CREATE ROLE $role LOGIN PASSWORD 'pw-$$'; GRANT CONNECT ON DATABASE $name TO $role; GRANT EXECUTE ON FUNCTION cronvisor_job_report(uuid, text, text, text, jsonb, jsonb) TO $role" >/dev/null
asrole() { PGPASSWORD=pw-$$ psql "$base dbname=$name user=$role passfile=/dev/null" -X -qAt -c "$1" 2>&1; }
ok "db: the role reads no table" "$(asrole "SELECT count(*) FROM runs" | grep -c 'permission denied')" 1
ok "db: a wrong token" "$(asrole "SELECT cronvisor_job_report('$jdb', 'nope', 'complete', 'completed', NULL, NULL)")" unauthorized
ok "db: the report" "$(asrole "SELECT cronvisor_job_report('$jdb', '$tdb', 'complete', 'completed', '{\"via\": \"db\"}', NULL)")" ok
wait_for 20 "SELECT status = 'done' FROM schedules WHERE id = '$s_db'"
ok "db: the job completed with the result" "$(sql "SELECT status || ' ' || (result ->> 'via') FROM jobs WHERE id = '$jdb'")" "completed db"
q "$name" "REVOKE ALL ON DATABASE $name FROM $role; REVOKE EXECUTE ON FUNCTION cronvisor_job_report(uuid, text, text, text, jsonb, jsonb) FROM $role; DROP ROLE $role" >/dev/null

# --- kill -9 while jobs wait for their reports ----------------------------------------------
stub_agent waits /silent
before=$(seen /silent)
for i in 1 2 3 4 5; do
	eval "s_k$i=\$(sched kill$i waits '{}' '\"max_retries\": 2, \"retry_delay_seconds\": 1')"
done
wait_for 20 "SELECT count(*) = 5 FROM runs r JOIN schedules s ON s.id = r.schedule_id WHERE s.name LIKE 'kill%' AND r.status = 'waiting'"
kill -9 "$CV_SUPERVISOR_PID"
# the reports come while no supervisor runs
grep '"path": "/silent"' "$tmp/agent.log" | jq -c 'select(.body.params == {}) | [.headers["X-Job-Id"], .body.callback.token]' |
	while read -r pair; do
		jj=$(printf '%s' "$pair" | jq -r '.[0]') tt=$(printf '%s' "$pair" | jq -r '.[1]')
		[ "$(sql "SELECT s.name LIKE 'kill%' FROM jobs j JOIN schedules s ON s.id = j.schedule_id WHERE j.id = '$jj'")" = t ] || continue
		send POST "/jobs/$jj/complete" "" "{\"status\": \"completed\", \"token\": \"$tt\", \"result\": {\"k\": 1}}"
		echo "$code"
	done >"$tmp/kill.codes"
ok "kill -9: the API took the 5 reports without a supervisor" "$(sort "$tmp/kill.codes" | uniq -c | awk '{print $1, $2}')" "5 200"
"$CRONVISORD" -f "$CV_CONF" </dev/null >>"$work/cvd.log" 2>&1 &
sv1=$!
extra="$extra $sv1"
wait_for 30 "SELECT count(*) = 5 FROM schedules WHERE name LIKE 'kill%' AND status = 'done'"
ok "kill -9: all 5 completed by the new supervisor" "$(sql "SELECT count(*) FROM jobs j JOIN schedules s ON s.id = j.schedule_id WHERE s.name LIKE 'kill%' AND j.status = 'completed' AND j.result ->> 'k' = '1'")" 5
ok "kill -9: none sent twice" "$(($(seen /silent) - before))" 5
ok "kill -9: one attempt each, none lost" "$(sql "SELECT string_agg(DISTINCT r.status, ',') || ' ' || count(*) FROM runs r JOIN schedules s ON s.id = r.schedule_id WHERE s.name LIKE 'kill%'")" "succeeded 5"

# --- an agent's max_concurrent_requests, over two supervisors --------------------------
sed 's/^supervisor_name = .*/supervisor_name = "second"/' "$CV_CONF" >"$tmp/second.conf"
"$CRONVISORD" -f "$tmp/second.conf" </dev/null >>"$work/cvd2.log" 2>&1 &
sv2=$!
extra="$extra $sv2"
stub_agent lim /slow '"max_concurrent_requests": 2'
for i in 1 2 3 4 5 6; do
	sched "lim$i" lim '{"sleep_ms": 1200}' '"max_retries": 0' >/dev/null
done
# lim1 to lim6 only: name LIKE 'lim%' counted the schedule "limited" above too
# (done long before), and a wait for 6 could end with one of these running.
wait_for 40 "SELECT count(*) = 6 FROM schedules WHERE name ~ '^lim[1-6]$' AND status = 'done'"
ok "limit: all 6 jobs completed" "$(sql "SELECT count(*) FROM jobs j JOIN schedules s ON s.id = j.schedule_id WHERE s.name ~ '^lim[1-6]$' AND j.status = 'completed'")" 6
ok "limit: the agent got each once" "$(seen /slow)" 6
ok "limit: never more than 2 at once at the agent, and 2 at times" "$(grep '"path": "/slow"' "$tmp/agent.log" | jq -s 'map(.inflight) | max')" 2
ok "limit: with both supervisors alive and claiming" "$(sql "SELECT count(*) FROM supervisors WHERE stopped_at IS NULL AND heartbeat > now() - interval '3 s'")" 2

# --- priority: the highest first when they wait for a request ---------------------------
stub_agent prio /slow '"max_concurrent_requests": 1'
sched blocker prio '{"sleep_ms": 5000}' '"max_retries": 0' >/dev/null
wait_for 20 "SELECT count(*) = 1 FROM runs r JOIN schedules s ON s.id = r.schedule_id WHERE s.name = 'blocker' AND r.status = 'running'"
# All three due at one instant, 1.5 s from now, while the blocker runs.
at=$(soon 1500)
for pr in 1 10 5; do
	send POST /schedules "$A" "{\"name\": \"p$pr\", \"at\": \"$at\", \"max_retries\": 0, \"priority\": $pr, \"target\": {\"type\": \"agent\", \"agent\": \"prio\", \"params\": {\"p\": $pr, \"sleep_ms\": 100}}}"
	[ "$code" = 201 ] || echo "p$pr: $code $resp" >&2
done
ok "priority: the three waited while the blocker ran" "$(sql "SELECT count(*) FROM runs r JOIN schedules s ON s.id = r.schedule_id WHERE s.name IN ('p1', 'p5', 'p10') AND r.started_at < (SELECT finished_at FROM runs r2 JOIN schedules s2 ON s2.id = r2.schedule_id WHERE s2.name = 'blocker')")" 0
wait_for 40 "SELECT count(*) = 4 FROM schedules WHERE name IN ('blocker', 'p1', 'p5', 'p10') AND status = 'done'"
ok "priority: 10, 5, then 1 once the blocker ended" "$(grep '"path": "/slow"' "$tmp/agent.log" | jq -r 'select(.body.params.p != null) | .body.params.p' | tr '\n' ' ')" "10 5 1 "

# --- the agent reported, then its supervisor died before writing the 202 ---------------
# The stub reports first and answers 202 a second later; the test stops the
# supervisor that sent the request in that second (its run still
# `running`, the report stored), then kills it.  The other supervisor
# takes the report over once the lease has run out, rather than declaring
# the run lost and sending the job again.
stub_agent early /report-first
s_e=$(sched early early '{"sleep_ms": 1500}' '"max_retries": 2, "retry_delay_seconds": 1')
wait_for 20 "SELECT count(*) = 1 FROM runs WHERE schedule_id = '$s_e' AND status = 'running' AND reported_at IS NOT NULL"
owner=$(sql "SELECT s.name FROM runs r JOIN supervisors s ON s.id = r.supervisor_id WHERE r.schedule_id = '$s_e'")
if [ "$owner" = second ]; then victim=$sv2; else victim=$sv1; fi
kill -STOP "$victim"
ok "reported first: the run still running, its report stored" "$(sql "SELECT status || ' ' || (report ->> 'status') FROM runs WHERE schedule_id = '$s_e'")" "running completed"
kill -KILL "$victim"
wait_for 20 "SELECT status = 'done' FROM schedules WHERE id = '$s_e'"
ok "reported first: completed with the report by the other supervisor" "$(state "$s_e")" "done success completed 1"
ok "reported first: the result is the report's" "$(sql "SELECT result ->> 'first' FROM jobs WHERE schedule_id = '$s_e'")" true
ok "reported first: one request, not a retry" "$(seen /report-first)" 1

api_finish
summary engine_agents
