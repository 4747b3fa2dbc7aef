#!/bin/sh
# engine_fanout.sh: fan-out over the rows of a table (docs/orchestration.md,
# "Fan-out"), end to end: schedules made through nginx, the real cronvisord
# expanding their data-source param when the slot fires and sending one
# request per value to a stub agent (tests/helpers/stubagent.py) in batches
# with a stagger.  Counted by what the agent saw (its request log, with the
# time of each request to the microsecond): every value once, with the
# schedule's other params; no batch before its planned start (the firing
# plus k × staggerDelay), to the millisecond; 202s completed by reports
# (one alone too); an agent's max_concurrent_requests never passed; an
# agent that fails half the items (partial, their errors recorded); one
# that fails them all (failed, the schedule dead); maxFailures and
# maxFailuresPercent; job-level retries; retry-failed (roles, owners,
# refusals, the second attempts) through the API and cronvisorctl; a
# table dropped, a registration deleted and a table over the row limit
# between save and fire (the execution's error, nothing sent); no values
# (success, no job); a schedule deleted between two batches (the rest not
# sent, the schedule gone); a kill -9 of the supervisor between two
# batches (the plan kept: the rest go, none early, none twice, none
# lost); a batch's requests from one runner, and that runner killed -9
# with its requests in flight (each crashed, retried once, completed
# once); a settle of 100,000 failed jobs (bounded, 1,000 errors kept);
# and the execution's record (jobs created and enqueued, the
# expansion's metadata).
# Usage: engine_fanout.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
CV_HARNESS_CONF="datasource_row_limit = 30"
# A lease of 3 s fences a supervisor whose claims and expansions a loaded
# machine slows past 2 s; its interrupted attempts then go again, which
# would spoil the counts of requests this test checks.
CV_HARNESS_LEASE=8
export CV_HARNESS_CONF CV_HARNESS_LEASE
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"
A=$CV_TOKEN_ALICE_EDITOR
ADM=$CV_TOKEN_ADMIN

stub_agent_up

# 14 tickers T01..T14 (the odd ones enabled), a table of 40 (over the row
# limit) and one that will be dropped.
sql "CREATE TABLE ticker (id text PRIMARY KEY, enabled boolean, price numeric);
     INSERT INTO ticker SELECT 'T' || lpad(g::text, 2, '0'), g % 2 = 1, g * 1.5
     FROM generate_series(1, 14) g;
     CREATE TABLE big (id int PRIMARY KEY);
     INSERT INTO big SELECT generate_series(1, 40);
     CREATE TABLE doomed (id text PRIMARY KEY);
     INSERT INTO doomed VALUES ('D1'), ('D2');
     GRANT SELECT ON ticker, big, doomed TO cronvisor_reader" >/dev/null
for reg in '{"name": "ticker", "relation": "ticker", "key": "id", "columns": ["id", "enabled", "price"]}' \
	'{"name": "big", "relation": "big", "key": "id", "columns": ["id"]}' \
	'{"name": "doomed", "relation": "doomed", "key": "id", "columns": ["id"]}' \
	'{"name": "gone", "relation": "doomed", "key": "id", "columns": ["id"]}'; do
	send POST /data-sources "$ADM" "$reg"
	[ "$code" = 201 ] || echo "register: $code $resp" >&2
done

# sched NAME AGENT PARAMS [MORE-JSON]: a once schedule of alice's, due in
# $due_ms ms; prints its id.
due_ms=1500
sched() {
	send POST /schedules "$A" "{\"name\": \"$1\", \"at\": \"$(soon "$due_ms")\", \"target\": {\"type\": \"agent\", \"agent\": \"$2\", \"params\": $3}${4:+, $4}}"
	[ "$code" = 201 ] || echo "schedule $1: $code $resp" >&2
	j .id
}
# reqs PATH SCHEDULE: the requests the agent got on PATH for SCHEDULE's
# jobs, one JSON line each.
reqs() { jq -c "select(.path == \"$1\" and .body.scheduleId == \"$2\")" "$tmp/agent.log" 2>/dev/null; }
# xstate SCHEDULE: the schedule's status, its execution's status, jobs
# created and enqueued.
xstate() { sql "SELECT s.status || ' ' || x.status || ' ' || x.jobs_created || ' ' || x.jobs_enqueued FROM schedules s JOIN executions x ON x.schedule_id = s.id WHERE s.id = '$1' ORDER BY x.created_at DESC LIMIT 1"; }
# early SCHEDULE PATH [MS]: "lateness-ok" when no request came before its
# batch's planned start (the firing plus batch × stagger, ms) and none
# later than MS (1500) after it, else the offenders.  (Lateness is
# measured, against the spread lag, by bench/run; here it only bounds a
# loaded machine's.)
early() {
	reqs "$2" "$1" | jq -r '[.headers["X-Job-Id"], (.at * 1000 | floor | tostring)] | join(" ")' >"$tmp/at.$1"
	sql "SELECT j.id || ' ' || floor(extract(epoch FROM f.started_at) * 1000 + j.batch * (x.metadata -> 'fanout' ->> 'stagger_ms')::bigint)::bigint FROM jobs j JOIN executions x ON x.id = j.execution_id JOIN runs f ON f.id = x.run_id WHERE j.schedule_id = '$1'" >"$tmp/plan.$1"
	awk 'NR == FNR { plan[$1] = $2; next }
	     { d = $2 - plan[$1]; if (!($1 in plan) || d < 0 || d > late) bad = bad " " $1 ":" d }
	     END { print bad == "" ? "lateness-ok" : "bad" bad }' late="${3:-1500}" "$tmp/plan.$1" "$tmp/at.$1"
}

# --- 14 values, batches of 4, 500 ms apart ------------------------------------------
stub_agent fan /ok
s1=$(sched fan fan '{"tickerId": "db:ticker:all:id?batchSize=4&staggerDelay=500", "flag": true}' '"max_retries": 0')
wait_for 30 "SELECT status = 'done' FROM schedules WHERE id = '$s1'"
ok "fan: done, success, 14 created, 14 enqueued" "$(xstate "$s1")" "done success 14 14"
ok "fan: the agent saw each value once" "$(reqs /ok "$s1" | jq -r '.body.params.tickerId' | sort | uniq -c | awk '$1 == 1' | wc -l)" 14
ok "fan: fourteen requests in all" "$(reqs /ok "$s1" | wc -l)" 14
ok "fan: the other params go with each value" "$(reqs /ok "$s1" | jq -r '.body.params.flag' | sort -u)" true
ok "fan: 4 batches of 4, 4, 4, 2" "$(sql "SELECT string_agg(n::text, ',' ORDER BY batch) FROM (SELECT batch, count(*) n FROM jobs WHERE schedule_id = '$s1' GROUP BY batch) b")" "4,4,4,2"
ok "fan: batch k ready k × 500 ms after the firing, to the ms" "$(sql "SELECT bool_and(extract(epoch FROM j.ready_at - f.started_at) * 1000 = j.batch * 500) FROM jobs j JOIN executions x ON x.id = j.execution_id JOIN runs f ON f.id = x.run_id WHERE j.schedule_id = '$s1'")" t
ok "fan: the firing is the slot's instant, to the ms" "$(sql "SELECT f.started_at = s.at FROM runs f JOIN schedules s ON s.id = f.schedule_id WHERE f.schedule_id = '$s1' AND f.kind = 'fanout'")" t
ok "fan: no request before its batch's start, none 5 s late" "$(early "$s1" /ok 5000)" lateness-ok
# (the order of batches is their planned times: a loaded machine that
# makes one late sends it with the next, never before its time)
ok "fan: the firing's attempt is the fan-out's, succeeded" "$(sql "SELECT kind || ' ' || status || ' ' || (output::jsonb ->> 'status') || ' ' || (output::jsonb ->> 'completed') || ' ' || (output::jsonb ->> 'expansion') FROM runs WHERE schedule_id = '$s1' AND kind <> 'job'")" "fanout succeeded success 14 tickerId expanded to 14 values in 4 batches of 4, 500 ms apart"
ok "fan: 14 job attempts, succeeded" "$(sql "SELECT count(*) || ' ' || string_agg(DISTINCT status, ',') FROM runs WHERE schedule_id = '$s1' AND kind = 'job'")" "14 succeeded"
ok "fan: a job attempt's id names its value's place" "$(sql "SELECT count(*) FROM runs r JOIN jobs j ON j.id = r.job_id WHERE r.schedule_id = '$s1' AND r.id = 'sched-' || left('$s1', 8) || '-n0-j' || j.seq || '-rc0'")" 14
x1=$(sql "SELECT id FROM executions WHERE schedule_id = '$s1'")
call GET "/executions/$x1" "$A"
ok "fan: the execution's metadata" "$(j '.metadata.fanout | [.param, .table, .field, .values, .batches, .batch_size, .stagger_ms] | map(tostring) | join(",")')" "tickerId,ticker,id,14,4,4,500"
ok "fan: the execution's counts" "$(j '[.jobs.completed, .jobs.failed] | map(tostring) | join(",")')" "14,0"
call GET "/executions/$x1/jobs?limit=100" "$A"
ok "fan: each job has its value as its param" "$(j '[.jobs[] | .params.tickerId == .item] | all')" true

# --- a filter, and 202s completed by reports --------------------------------------
stub_agent later /async
s2=$(sched later later '{"tickerId": "db:ticker:all:id?enabled=true&batchSize=3&staggerDelay=0", "delay_ms": 100}' '"max_retries": 0')
wait_for 30 "SELECT status = 'done' FROM schedules WHERE id = '$s2'"

ok "202: the 7 enabled values, reported, success" "$(xstate "$s2")" "done success 7 7"
ok "202: the agent saw the odd ones only" "$(reqs /async "$s2" | jq -r '.body.params.tickerId' | sort | tr '\n' ' ')" "T01 T03 T05 T07 T09 T11 T13 "
ok "202: each job completed with its report's result" "$(sql "SELECT count(*) FROM jobs WHERE schedule_id = '$s2' AND status = 'completed' AND (result ->> 'done')::boolean")" 7

# --- one value whose agent answers 202: its attempt waits alone -------------------------
s2b=$(sched lone later '{"tickerId": "db:ticker:T05:id", "delay_ms": 300}' '"max_retries": 0')
wait_for 30 "SELECT status = 'done' FROM schedules WHERE id = '$s2b'"
ok "202 alone: success, one attempt" "$(xstate "$s2b") $(sql "SELECT count(*) FROM runs WHERE schedule_id = '$s2b' AND kind = 'job'")" "done success 1 1 1"

# --- an agent's max_concurrent_requests holds a batch back ------------------------------
send POST /agents "$A" "{\"agent_id\": \"narrow\", \"name\": \"narrow\", \"endpoint\": \"$AURL/slow\", \"max_concurrent_requests\": 2}"
s2c=$(sched narrow narrow '{"tickerId": "db:ticker:all:id?filter={\"enabled\":true}&batchSize=7&staggerDelay=0", "sleep_ms": 300}' '"max_retries": 0')
wait_for 30 "SELECT status = 'done' FROM schedules WHERE id = '$s2c'"
ok "limit: all 7 completed" "$(xstate "$s2c")" "done success 7 7"
ok "limit: never more than 2 requests at once" "$(reqs /slow "$s2c" | jq -s 'map(.inflight) | max')" 2

# --- half the items fail: partial, with their errors ----------------------------
stub_agent half /half
s3=$(sched half half '{"tickerId": "db:ticker:all:id?batchSize=10&staggerDelay=0"}' '"max_retries": 0')
wait_for 30 "SELECT status = 'done' FROM schedules WHERE id = '$s3'"
ok "half: partial, the schedule goes on (done)" "$(xstate "$s3")" "done partial 14 7"
ok "half: 7 completed, 7 failed" "$(sql "SELECT string_agg(status || ':' || n, ' ' ORDER BY status) FROM (SELECT status, count(*) n FROM jobs WHERE schedule_id = '$s3' GROUP BY status) q")" "completed:7 failed:7"
ok "half: the execution records the 7 errors, by job" "$(sql "SELECT jsonb_array_length(errors) || ' ' || bool_and(e ->> 'job_id' IS NOT NULL) FROM executions, jsonb_array_elements(errors) e WHERE schedule_id = '$s3' GROUP BY errors")" "7 true"
ok "half: a 400 is final (one request per value)" "$(reqs /half "$s3" | wc -l)" 14

# --- all fail: failed, and the schedule dead ------------------------------------
stub_agent nope /bad
s4=$(sched nope nope '{"tickerId": "db:ticker:all:id?filter={\"enabled\":true}&batchSize=10&staggerDelay=0"}' '"max_retries": 2, "retry_delay_seconds": 1')
wait_for 30 "SELECT status = 'dead' FROM schedules WHERE id = '$s4'"
ok "all fail: failed, the schedule dead" "$(xstate "$s4")" "dead failed 7 0"
ok "all fail: each value sent once (400 is final)" "$(reqs /bad "$s4" | wc -l)" 7
ok "all fail: the schedule says why" "$(sql "SELECT last_error FROM schedules WHERE id = '$s4'")" "every job of the execution failed (7)"

# --- job retries: 503 once, then 200 ----------------------------------------------
stub_agent flaky /flaky
s5=$(sched flaky flaky '{"tickerId": "db:ticker:T03:id", "fail_times": 1}' '"max_retries": 2, "retry_delay_seconds": 1, "backoff": "fixed"')
wait_for 30 "SELECT status = 'done' FROM schedules WHERE id = '$s5'"
ok "retry: one value (the key filter), success" "$(xstate "$s5")" "done success 1 1"
ok "retry: two attempts of the job" "$(sql "SELECT string_agg(status, ',' ORDER BY attempt) FROM runs WHERE schedule_id = '$s5' AND kind = 'job'")" "failed,succeeded"
ok "retry: the second a second after the first" "$(sql "SELECT extract(epoch FROM b.started_at - a.finished_at) BETWEEN 0.99 AND 2.5 FROM runs a, runs b WHERE a.schedule_id = '$s5' AND b.schedule_id = a.schedule_id AND a.kind = 'job' AND b.kind = 'job' AND a.attempt = 0 AND b.attempt = 1")" t
ok "retry: the agent saw X-Attempt 1 then 2" "$(reqs /flaky "$s5" | jq -r '.headers["X-Attempt"]' | tr '\n' ' ')" "1 2 "

# --- tolerated failures ------------------------------------------------------------------
s11=$(sched tol6 half '{"tickerId": "db:ticker:all:id?batchSize=14&staggerDelay=0&maxFailures=6"}' '"max_retries": 0')
s12=$(sched tol50 half '{"tickerId": "db:ticker:all:id?batchSize=14&staggerDelay=0&maxFailuresPercent=50"}' '"max_retries": 0')
wait_for 30 "SELECT count(*) = 2 FROM schedules WHERE id IN ('$s11', '$s12') AND status IN ('done', 'dead')"
ok "maxFailures=6: 7 failed is past it: failed, dead" "$(xstate "$s11")" "dead failed 14 7"
ok "maxFailures=6: the schedule says why" "$(sql "SELECT last_error FROM schedules WHERE id = '$s11'")" "7 of the execution's 14 jobs failed, more than it tolerates"
ok "maxFailuresPercent=50: 7 of 14 is not past it: partial" "$(xstate "$s12")" "done partial 14 7"
ok "tolerance: in the execution's metadata" "$(sql "SELECT (metadata #>> '{fanout,max_failures}') || ',' || coalesce(metadata #>> '{fanout,max_failures_percent}', 'null') FROM executions WHERE schedule_id = '$s11'")" "6,null"

# --- retry-failed ---------------------------------------------------------------------------
s13=$(sched again flaky '{"tickerId": "db:ticker:all:id?filter={\"id\":{\"$in\":[\"T01\",\"T02\",\"T03\"]}}&staggerDelay=0", "fail_times": 1}' '"max_retries": 0')
wait_for 30 "SELECT status = 'dead' FROM schedules WHERE id = '$s13'"

ok "retry-failed: every job failed once (503, no retries)" "$(xstate "$s13")" "dead failed 3 0"
x13=$(sql "SELECT id FROM executions WHERE schedule_id = '$s13'")
send POST "/executions/$x13/retry-failed" "$CV_TOKEN_ALICE_VIEWER" ""
ok_error "retry-failed: a viewer may not" 403 forbidden null
send POST "/executions/$x13/retry-failed" "$CV_TOKEN_BOB_EDITOR" ""
ok_error "retry-failed: another owner's is not found" 404 not_found null
send POST "/executions/$x1/retry-failed" "$A" ""
ok_error "retry-failed: nothing failed" 409 nothing_failed null
s_one=$(sched plain fan '{"tickerId": "T01"}' '"max_retries": 0')
wait_for 30 "SELECT status = 'done' FROM schedules WHERE id = '$s_one'"
send POST "/executions/$(sql "SELECT id FROM executions WHERE schedule_id = '$s_one'")/retry-failed" "$A" ""
ok_error "retry-failed: a one-job execution is refused" 409 not_fanout null
send POST "/executions/$x13/retry-failed" "$A" ""
ok_status "retry-failed: 200" 200
ok "retry-failed: 3 retried, the execution running again" "$(j '[.retried, .status] | map(tostring) | join(",")')" "3,running"
wait_for 30 "SELECT status = 'success' FROM executions WHERE id = '$x13'"
ok "retry-failed: the second attempts succeeded" "$(sql "SELECT string_agg(status || ':' || attempts, ',' ORDER BY seq) FROM jobs WHERE execution_id = '$x13'")" "completed:2,completed:2,completed:2"
ok "retry-failed: each value sent twice, attempts 1 then 2" "$(reqs /flaky "$s13" | jq -r '.body.params.tickerId + "/" + .headers["X-Attempt"]' | sort | tr '\n' ' ')" "T01/1 T01/2 T02/1 T02/2 T03/1 T03/2 "
ok "retry-failed: the schedule stays as it was (dead)" "$(sql "SELECT status FROM schedules WHERE id = '$s13'")" dead
out=$(env CRONVISOR_URL="$CRONVISOR_URL" CRONVISOR_TOKEN="$A" "$CRONVISORCTL" executions retry-failed "$x13" 2>&1)
ok "cronvisorctl executions retry-failed: refused when none failed (exit 1)" "$? $(printf '%s' "$out" | grep -c 'has no failed job')" "1 1"

# --- no values: success, no job ------------------------------------------------------
s6=$(sched none fan '{"tickerId": "db:ticker:NOPE:id"}' '"max_retries": 0')
wait_for 30 "SELECT status = 'done' FROM schedules WHERE id = '$s6'"
ok "none: success with no job" "$(xstate "$s6")" "done success 0 0"

# --- between save and fire: a table dropped, a registration deleted, too many rows -----
before=$(wc -l <"$tmp/agent.log")
# (due 5 s later: the drop and the delete come before they fire, even on
# a loaded machine)
due_ms=5000
s7=$(sched dropped fan '{"tickerId": "db:doomed:all:id"}' '"max_retries": 3')
s8=$(sched unreg fan '{"tickerId": "db:gone:all:id"}' '"max_retries": 3')
sql "DROP TABLE doomed" >/dev/null
call DELETE /data-sources/gone "$ADM"
s9=$(sched big fan '{"tickerId": "db:big:all:id"}' '"max_retries": 3')
due_ms=1500
ok "between save and fire: the drop came before the firing" "$(sql "SELECT count(*) FROM runs WHERE schedule_id IN ('$s7', '$s8', '$s9')")" 0
wait_for 30 "SELECT count(*) = 3 FROM schedules WHERE id IN ('$s7', '$s8', '$s9') AND status = 'dead'"
ok "dropped: failed, dead at once (not retryable)" "$(xstate "$s7")" "dead failed 0 0"
ok "dropped: the execution's error says why" "$(sql "SELECT errors -> 0 ->> 'message' FROM executions WHERE schedule_id = '$s7'" | grep -c 'target.params.tickerId: the query of doomed failed: .*doomed.* does not exist')" 1
ok "unregistered: failed, not registered" "$(sql "SELECT x.status || ' ' || (x.errors -> 0 ->> 'message') FROM executions x WHERE schedule_id = '$s8'")" 'failed target.params.tickerId: table "gone" is not registered'
ok "over the limit: failed, says the limit" "$(sql "SELECT x.status || ' ' || (x.errors -> 0 ->> 'message') FROM executions x WHERE schedule_id = '$s9'")" "failed target.params.tickerId: big has more than 30 values (datasource_row_limit)"
ok "between save and fire: one attempt each" "$(sql "SELECT count(*) FROM runs WHERE schedule_id IN ('$s7', '$s8', '$s9')")" 3
ok "between save and fire: nothing sent" "$(($(wc -l <"$tmp/agent.log") - before))" 0

# --- a schedule deleted between two batches --------------------------------------------
s14=$(sched deleted fan '{"tickerId": "db:ticker:all:id?batchSize=2&staggerDelay=1500"}' '"max_retries": 0')
wait_for 30 "SELECT count(*) = 2 FROM jobs WHERE schedule_id = '$s14' AND status = 'completed'"
call DELETE "/schedules/$s14" "$A"
ok_status "deleted: 204 while its fan-out runs" 204
wait_for 30 "SELECT count(*) = 0 FROM schedules WHERE id = '$s14'"
ok "deleted: the rest were not sent, and the schedule went" "$(reqs /ok "$s14" | wc -l) $(sql "SELECT count(*) FROM schedules WHERE id = '$s14'")" "2 0"

# --- one runner per batch, and a batch runner killed ------------------------------
# A batch's requests go from one runner (runner/batch.c): each of fan's 4
# batches had one pid.
ok "batch runner: each of fan's 4 batches from one runner" "$(sql "SELECT count(*) || ' ' || bool_and(n = 1) FROM (SELECT j.batch, count(DISTINCT r.pid) n FROM runs r JOIN jobs j ON j.id = r.job_id WHERE r.schedule_id = '$s1' GROUP BY j.batch) b")" "4 true"
# A batch runner killed with its 3 requests in flight: each attempt
# crashed and went again once, each job completed once.
stub_agent slowpoke /slow
s15=$(sched crashing slowpoke '{"tickerId": "db:ticker:all:id?filter={\"id\":{\"$in\":[\"T01\",\"T02\",\"T03\"]}}&batchSize=3&staggerDelay=0", "sleep_ms": 2500}' '"max_retries": 1, "retry_delay_seconds": 1, "backoff": "fixed"')
slow_seen() { [ "$(reqs /slow "$s15" | wc -l)" -ge 3 ]; }
wait_until 20 slow_seen
rp=$(pgrep -P "$CV_SUPERVISOR_PID" -x cronvisord)
ok "batch runner: one runner for the 3 requests in flight" "$(echo "$rp" | wc -w)" 1
kill -9 $rp
wait_for 30 "SELECT status = 'done' FROM schedules WHERE id = '$s15'"
ok "batch runner killed: success, 3 jobs" "$(xstate "$s15")" "done success 3 3"
ok "batch runner killed: each job's attempts crashed, then succeeded" "$(sql "SELECT count(*) || ' ' || string_agg(DISTINCT a, ' ') FROM (SELECT string_agg(r.status, ',' ORDER BY r.attempt) a FROM runs r WHERE r.schedule_id = '$s15' AND r.kind = 'job' GROUP BY r.job_id) q")" "3 crashed,succeeded"
ok "batch runner killed: the crash names the signal" "$(sql "SELECT DISTINCT error FROM runs WHERE schedule_id = '$s15' AND status = 'crashed'")" "the runner was killed by signal 9 (Killed)"
ok "batch runner killed: the agent saw each value twice" "$(reqs /slow "$s15" | jq -r '.body.params.tickerId' | sort | uniq -c | awk '$1 == 2' | wc -l) $(reqs /slow "$s15" | wc -l)" "3 6"

# --- kill -9 between two batches --------------------------------------------------
s10=$(sched killed fan '{"tickerId": "db:ticker:all:id?batchSize=5&staggerDelay=1500"}' '"max_retries": 0')
wait_for 30 "SELECT count(*) = 5 FROM jobs WHERE schedule_id = '$s10' AND status = 'completed'"
# batch 1 is due 1.5 s after the firing: the kill comes before it
ok "kill -9: between batches (5 done, 9 pending)" "$(sql "SELECT count(*) FILTER (WHERE status = 'completed') || ' ' || count(*) FILTER (WHERE status = 'pending' AND ready_at > now()) FROM jobs WHERE schedule_id = '$s10'")" "5 9"
kill -9 "$CV_SUPERVISOR_PID"
wait_gone 10 "$CV_SUPERVISOR_PID"
"$CRONVISORD" -f "$CV_CONF" </dev/null >>"$work/cvd.log" 2>&1 &
sv1=$!
extra="$extra $sv1"
wait_for 30 "SELECT status = 'done' FROM schedules WHERE id = '$s10'"
ok "kill -9: success, all 14" "$(xstate "$s10")" "done success 14 14"
ok "kill -9: each value seen once" "$(reqs /ok "$s10" | jq -r '.body.params.tickerId' | sort | uniq -c | awk '$1 == 1' | wc -l) $(reqs /ok "$s10" | wc -l)" "14 14"
# (those due while no supervisor ran go late, at once after the restart)
ok "kill -9: none before its planned time" "$(early "$s10" /ok 20000)" lateness-ok

# --- a settle of 100,000 jobs failed at once (a deleted plan's) -----------------------
# The failed jobs are joined, not searched for every job (that was
# quadratic: minutes, past the statement timeout, and the claim that
# failed them rolled back at every try); the execution keeps the first
# 1,000 errors, in the order of its jobs.
big=$(sql "INSERT INTO executions (schedule_id, slot_at) VALUES ('$s1', '2001-01-01') RETURNING id")
sql "INSERT INTO jobs (execution_id, schedule_id, job_key, seq, status, error, finished_at) SELECT '$big', '$s1', 'k' || g, g, 'failed', jsonb_build_object('message', 'no ' || g), now() FROM generate_series(1, 100000) g" >/dev/null
ok "100,000 failed: settled within a 10 s statement timeout" "$(sql "SET statement_timeout = '10s'; SELECT cronvisor_execution_settle(ARRAY['$big'::uuid], ARRAY(SELECT id FROM jobs WHERE execution_id = '$big'))")" 0
ok "100,000 failed: failed, the first 1,000 errors in order" "$(sql "SELECT status || ' ' || jsonb_array_length(errors) || ' ' || (errors -> 0 ->> 'message') || ' ' || (errors -> 999 ->> 'message') FROM executions WHERE id = '$big'")" "failed 1000 no 1 no 1000"
sql "DELETE FROM executions WHERE id = '$big'" >/dev/null

api_finish
summary engine_fanout
