#!/bin/sh
# engine_pipelines.sh: schedules that run pipelines (docs/orchestration.md,
# "When a pipeline runs"), end to end: pipelines and schedules made through
# nginx, the real cronvisord running their steps against a stub agent
# (tests/helpers/stubagent.py), counted by what the agent saw (its request
# log, with the time of each request to the microsecond): a chain whose
# steps go out one after the other, each once, after the one it depends on
# ended (with the params merged schedule, then step, then value); an
# independent step beside it; a 202 step completed by its report; a
# pipeline fanned out over a table (a context per value) whose first step
# fails for half the values: their dependents recorded as not run with
# why, a failure handler (run_when failure) run for those only, the
# execution partial; retry-failed after the agent was fixed (the steps not
# run go then); fail_fast; a step that runs alone; a step's own retry; the
# execution's steps through the API; refusals when saved (an unknown,
# another owner's or a disabled pipeline; a pipeline in use); and a kill
# -9 of the supervisor while a step waits for its report (the next step
# goes once, after it).
# Usage: engine_pipelines.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
CV_HARNESS_LEASE=8
export CV_HARNESS_LEASE
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"
A=$CV_TOKEN_ALICE_EDITOR
AV=$CV_TOKEN_ALICE_VIEWER
B=$CV_TOKEN_BOB_EDITOR

stub_agent_up
stub_agent okay /ok
stub_agent slow /slow
stub_agent later /async
stub_agent bad /bad
stub_agent half /half
stub_agent flaky /flaky

sql "CREATE TABLE ticker (id text PRIMARY KEY);
     INSERT INTO ticker VALUES ('T1'), ('T2'), ('T3'), ('T4');
     GRANT SELECT ON ticker TO cronvisor_reader" >/dev/null
send POST /data-sources "$CV_TOKEN_ADMIN" '{"name": "ticker", "relation": "ticker", "key": "id", "columns": ["id"]}'
[ "$code" = 201 ] || echo "register: $code $resp" >&2

# pipeline ID STEPS [MORE-JSON]: a pipeline of alice's.
pipeline() {
	more=${3-}
	send POST /pipelines "$A" "{\"pipeline_id\": \"$1\", \"name\": \"$1\", \"steps\": $2${more:+, $more}}"
	[ "$code" = 201 ] || echo "pipeline $1: $code $resp" >&2
}
# sched NAME PIPELINE PARAMS: a once schedule of alice's that
# runs PIPELINE, due soon, no retries of its slot; prints its id.
sched() {
	send POST /schedules "$A" "{\"name\": \"$1\", \"at\": \"$(soon 1500)\", \"max_retries\": 0, \"targetType\": \"pipeline\", \"pipelineId\": \"$2\", \"params\": $3}"
	[ "$code" = 201 ] || echo "schedule $1: $code $resp" >&2
	j .id
}
# reqs SCHEDULE [STEP]: the requests the agent got for SCHEDULE's jobs
# (of STEP, by the step param each step sends), one JSON line each.
reqs() {
	step=${2-}
	jq -c "select(.body.scheduleId == \"$1\"${step:+ and .body.params.step == \"$step\"})" "$tmp/agent.log" 2>/dev/null
}
# at SCHEDULE STEP [VALUE]: when the agent got STEP's request (of the
# context of VALUE), in ms.
at() {
	value=${3-}
	reqs "$1" "$2" | jq -r "select(${value:+.body.params.tickerId == \"$value\" and }true) | .at * 1000 | floor" | head -1
}
# xstate SCHEDULE: the schedule's status and its execution's status.
xstate() { sql "SELECT s.status || ' ' || x.status FROM schedules s JOIN executions x ON x.schedule_id = s.id WHERE s.id = '$1' ORDER BY x.created_at DESC LIMIT 1"; }
# jstate SCHEDULE: each job's step, context value and status, sorted.
jstate() { sql "SELECT string_agg(pipeline_step_id || ':' || coalesce(item #>> '{}', '-') || ':' || status, ' ' ORDER BY context, step) FROM jobs WHERE schedule_id = '$1'"; }

# --- a chain, a step beside it, a 202 step ---------------------------------------
pipeline chain '[
  {"step_id": "collect", "agent_id": "slow", "params": {"step": "collect", "sleep_ms": 400, "who": "step"}},
  {"step_id": "analyze", "agent_id": "okay", "depends_on": ["collect"], "params": {"step": "analyze"}},
  {"step_id": "write", "agent_id": "later", "depends_on": ["analyze"], "params": {"step": "write", "delay_ms": 300}},
  {"step_id": "publish", "agent_id": "okay", "depends_on": ["write"], "params": {"step": "publish"}},
  {"step_id": "side", "agent_id": "okay", "params": {"step": "side"}}]'
s1=$(sched chain chain '{"who": "schedule", "topic": "news"}')
wait_for 30 "SELECT status = 'done' FROM schedules WHERE id = '$s1'"
ok "chain: done, success" "$(xstate "$s1")" "done success"
ok "chain: each step once" "$(reqs "$s1" | jq -r .body.params.step | sort | tr '\n' ' ')" "analyze collect publish side write "
ok "chain: analyze after collect ended (its 400 ms)" "$(($(at "$s1" analyze) - $(at "$s1" collect) >= 400))" 1
ok "chain: write after analyze" "$(($(at "$s1" write) >= $(at "$s1" analyze)))" 1
ok "chain: publish after write's report (300 ms)" "$(($(at "$s1" publish) - $(at "$s1" write) >= 300))" 1
ok "chain: side went beside collect, not after it" "$(sql "SELECT (SELECT min(r.started_at) FROM runs r JOIN jobs j ON j.id = r.job_id WHERE j.schedule_id = '$s1' AND j.pipeline_step_id = 'side') < (SELECT max(r.finished_at) FROM runs r JOIN jobs j ON j.id = r.job_id WHERE j.schedule_id = '$s1' AND j.pipeline_step_id = 'collect')")" t
ok "chain: params merge schedule, then step" "$(reqs "$s1" collect | jq -r '[.body.params.who, .body.params.topic] | join(",")')" "step,news"
ok "chain: the schedule's params reach every step" "$(reqs "$s1" | jq -r .body.params.topic | sort -u)" news
ok "chain: five jobs completed" "$(jstate "$s1")" "collect:-:completed analyze:-:completed write:-:completed publish:-:completed side:-:completed"
x1=$(sql "SELECT id FROM executions WHERE schedule_id = '$s1'")
call GET "/executions/$x1" "$A"
ok "chain: the execution's steps" "$(j '[.pipeline.pipeline_id, (.pipeline.contexts | tostring), ([.pipeline.steps[] | .step_id + "=" + (.jobs.completed | tostring)] | join(","))] | join(" ")')" "chain 1 collect=1,analyze=1,write=1,publish=1,side=1"
ok "chain: the execution's counts" "$(j '[.status, .jobs.completed, .jobs.skipped] | map(tostring) | join(",")')" "success,5,0"
ok "chain: the firing's attempt succeeded" "$(sql "SELECT kind || ' ' || status FROM runs WHERE schedule_id = '$s1' AND kind <> 'job'")" "fanout succeeded"

# --- fanned out over a table; half the first steps fail ---------------------------
pipeline scored '[
  {"step_id": "fetch", "agent_id": "half", "params": {"step": "fetch"}},
  {"step_id": "score", "agent_id": "okay", "depends_on": ["fetch"], "params": {"step": "score"}},
  {"step_id": "alert", "agent_id": "okay", "depends_on": ["fetch"], "run_when": "failure", "params": {"step": "alert"}}]'
s2=$(sched scored scored '{"tickerId": "db:ticker:all:id?batchSize=2&staggerDelay=300"}')
wait_for 30 "SELECT status <> 'active' FROM schedules WHERE id = '$s2'"
ok "fan: partial (the schedule goes on: only failed is a failure)" "$(xstate "$s2")" "done partial"
ok "fan: a context per value, each step's state" "$(jstate "$s2")" "fetch:T1:failed score:T1:skipped alert:T1:completed fetch:T2:completed score:T2:completed alert:T2:skipped fetch:T3:failed score:T3:skipped alert:T3:completed fetch:T4:completed score:T4:completed alert:T4:skipped"
ok "fan: the agent saw fetch for each value" "$(reqs "$s2" fetch | jq -r .body.params.tickerId | sort | tr '\n' ' ')" "T1 T2 T3 T4 "
ok "fan: score only where fetch completed" "$(reqs "$s2" score | jq -r .body.params.tickerId | sort | tr '\n' ' ')" "T2 T4 "
ok "fan: alert only where fetch failed" "$(reqs "$s2" alert | jq -r .body.params.tickerId | sort | tr '\n' ' ')" "T1 T3 "
# (against the plan: a first batch sent late makes the gap between the
# two shorter, never the second early)
fire=$(sql "SELECT floor(extract(epoch FROM started_at) * 1000)::bigint FROM runs WHERE schedule_id = '$s2' AND kind = 'fanout'")
ok "fan: the second batch's fetches not before the firing + 300 ms" "$(($(at "$s2" fetch T3) >= fire + 300 && $(at "$s2" fetch T4) >= fire + 300))" 1
ok "fan: why score was not run" "$(sql "SELECT DISTINCT wait_reason FROM jobs WHERE schedule_id = '$s2' AND pipeline_step_id = 'score' AND status = 'skipped'")" "run_when success: step fetch failed"
ok "fan: why alert was not run" "$(sql "SELECT DISTINCT wait_reason FROM jobs WHERE schedule_id = '$s2' AND pipeline_step_id = 'alert' AND status = 'skipped'")" "run_when failure: no step it depends on failed"
x2=$(sql "SELECT id FROM executions WHERE schedule_id = '$s2'")
call GET "/executions/$x2/jobs?status=skipped&limit=100" "$A"
ok "fan: skipped jobs through the API, with why" "$(j '[.jobs[] | .step_id + ":" + .wait_reason] | sort | unique | join(";")')" "alert:run_when failure: no step it depends on failed;score:run_when success: step fetch failed"
out=$(env CRONVISOR_URL="$CRONVISOR_URL" CRONVISOR_TOKEN="$A" "$CRONVISORCTL" executions jobs "$x2" --status skipped 2>&1)
ok "fan: cronvisorctl executions jobs shows the steps not run, with why" "$(printf '%s\n' "$out" | grep -c ' skipped  *score  *[0-9]  *okay .*run_when success: step fetch failed')" 2
out=$(env CRONVISOR_URL="$CRONVISOR_URL" CRONVISOR_TOKEN="$A" "$CRONVISORCTL" executions show "$x2" --json 2>&1)
ok "fan: cronvisorctl executions show has the steps" "$(printf '%s' "$out" | jq -r '[.pipeline.steps[].step_id] | join(",")')" "fetch,score,alert"
call GET "/executions/$x2" "$A"
ok "fan: the execution's counts" "$(j '[.jobs.completed, .jobs.failed, .jobs.skipped, .pipeline.contexts] | map(tostring) | join(",")')" "6,2,4,4"
ok "fan: the errors name the failed jobs" "$(j '.errors | length')" 2

# retry-failed once the agent is fixed: the failed fetches go again and
# the steps not run in their contexts are decided anew.
send PATCH /agents/half "$A" "{\"endpoint\": \"$AURL/ok\"}"
send POST "/executions/$x2/retry-failed" "$A" ''
ok_status "retry-failed: 200" 200
ok "retry-failed: two jobs" "$(j .retried)" 2
wait_for 30 "SELECT status <> 'running' FROM executions WHERE id = '$x2'"
ok "retry-failed: success now" "$(sql "SELECT status FROM executions WHERE id = '$x2'")" success
ok "retry-failed: score went for T1 and T3, once each" "$(reqs "$s2" score | jq -r .body.params.tickerId | sort | tr '\n' ' ')" "T1 T2 T3 T4 "
ok "retry-failed: alert did not go again" "$(reqs "$s2" alert | wc -l)" 2
send PATCH /agents/half "$A" "{\"endpoint\": \"$AURL/half\"}"

# retry-failed of a failed step and of its failure handler, failed too:
# the step goes first, and the handler is decided after it (not run,
# once the step completed), never beside it.
stub_agent broken /bad
stub_agent mend /bad
pipeline handled '[
  {"step_id": "work", "agent_id": "mend", "params": {"step": "work"}},
  {"step_id": "onfail", "agent_id": "broken", "depends_on": ["work"], "run_when": "failure", "params": {"step": "onfail"}}]'
s7=$(sched handled handled '{}')
wait_for 30 "SELECT status <> 'active' FROM schedules WHERE id = '$s7'"
ok "handler: both failed" "$(xstate "$s7") $(jstate "$s7")" "dead failed work:-:failed onfail:-:failed"
send PATCH /agents/mend "$A" "{\"endpoint\": \"$AURL/ok\"}"
x7=$(sql "SELECT id FROM executions WHERE schedule_id = '$s7'")
send POST "/executions/$x7/retry-failed" "$A" ''
ok "handler: retry-failed retried both" "$code $(j .retried)" "200 2"
wait_for 30 "SELECT status <> 'running' FROM executions WHERE id = '$x7'"
ok "handler: the step completed, the handler not run again" "$(sql "SELECT status FROM executions WHERE id = '$x7'") $(jstate "$s7") $(reqs "$s7" onfail | wc -l)" "success work:-:completed onfail:-:skipped 1"

# --- fail_fast --------------------------------------------------------------------
pipeline fast '[
  {"step_id": "a", "agent_id": "bad", "params": {"step": "a"}},
  {"step_id": "b", "agent_id": "slow", "params": {"step": "b", "sleep_ms": 600}},
  {"step_id": "c", "agent_id": "okay", "depends_on": ["b"], "params": {"step": "c"}}]' '"fail_fast": true'
s3=$(sched fast fast '{}')
wait_for 30 "SELECT status <> 'active' FROM schedules WHERE id = '$s3'"
ok "fail_fast: partial (b had been sent and completed)" "$(xstate "$s3") $(jstate "$s3")" "done partial a:-:failed b:-:completed c:-:skipped"
ok "fail_fast: c never sent, with why" "$(reqs "$s3" c | wc -l) $(sql "SELECT wait_reason FROM jobs WHERE schedule_id = '$s3' AND pipeline_step_id = 'c'")" "0 fail_fast: step a failed"

# fail_fast also stops a step that was ready but not sent yet (its agent
# at its limit), not only the steps waiting for others.
send POST /agents "$A" "{\"agent_id\": \"single\", \"name\": \"single\", \"endpoint\": \"$AURL/slow\", \"max_concurrent_requests\": 1}"
pipeline held '[
  {"step_id": "b1", "agent_id": "single", "params": {"step": "b1", "sleep_ms": 1500}},
  {"step_id": "b2", "agent_id": "single", "params": {"step": "b2", "sleep_ms": 10}},
  {"step_id": "a", "agent_id": "bad", "params": {"step": "a"}}]' '"fail_fast": true'
s8=$(sched held held '{}')
wait_for 30 "SELECT status <> 'active' FROM schedules WHERE id = '$s8'"
ok "fail_fast: a step held back by its agent's limit is not run" "$(jstate "$s8") $(reqs "$s8" b2 | wc -l)" "b1:-:completed b2:-:skipped a:-:failed 0"

# --- a step that runs alone --------------------------------------------------------
pipeline alone '[
  {"step_id": "p1", "agent_id": "slow", "params": {"step": "p1", "sleep_ms": 400}},
  {"step_id": "p2", "agent_id": "slow", "parallel": false, "params": {"step": "p2", "sleep_ms": 400}},
  {"step_id": "p3", "agent_id": "slow", "params": {"step": "p3", "sleep_ms": 400}}]'
s4=$(sched alone alone '{}')
wait_for 30 "SELECT status = 'done' FROM schedules WHERE id = '$s4'"
ok "alone: success" "$(xstate "$s4")" "done success"
ok "alone: p2 after p1 ended" "$(($(at "$s4" p2) - $(at "$s4" p1) >= 400))" 1
ok "alone: p3 after p2 ended" "$(($(at "$s4" p3) - $(at "$s4" p2) >= 400))" 1

# --- a step's own retry ----------------------------------------------------------
pipeline retried '[
  {"step_id": "r", "agent_id": "flaky", "params": {"step": "r", "fail_times": 2},
   "retry": {"max_retries": 2, "backoff": "fixed", "delay_ms": 200}}]'
s5=$(sched retried retried '{}')
wait_for 30 "SELECT status <> 'active' FROM schedules WHERE id = '$s5'"
ok "step retry: success on the third attempt (the schedule's retries: 0)" "$(xstate "$s5") $(reqs "$s5" r | wc -l)" "done success 3"
ok "step retry: 200 ms apart at least" "$(reqs "$s5" r | jq -r '.at * 1000 | floor' | awk 'NR > 1 && $1 - p < 200 { bad = 1 } { p = $1 } END { print bad ? "early" : "ok" }')" ok

# --- refusals when saved ----------------------------------------------------------
send POST /schedules "$A" "{\"name\": \"x\", \"interval\": 60000, \"targetType\": \"pipeline\", \"pipelineId\": \"nope\"}"
ok_error "save: an unknown pipeline" 400 invalid_field pipelineId
send POST /schedules "$B" "{\"name\": \"x\", \"interval\": 60000, \"target\": {\"type\": \"pipeline\", \"pipeline\": \"chain\"}}"
ok_error "save: another owner's pipeline" 400 invalid_field target.pipeline
send PATCH /pipelines/alone "$A" '{"enabled": false}'
send POST /schedules "$A" "{\"name\": \"x\", \"interval\": 60000, \"target\": {\"type\": \"pipeline\", \"pipeline\": \"alone\"}}"
ok_error "save: a disabled pipeline" 400 invalid_field target.pipeline
send POST /schedules "$A" "{\"name\": \"x\", \"interval\": 60000, \"targetType\": \"pipeline\", \"pipelineId\": \"chain\", \"agentId\": \"okay\"}"
ok_error "save: an agent and a pipeline" 400 invalid_field pipelineId
send POST /schedules "$AV" "{\"name\": \"x\", \"interval\": 60000, \"targetType\": \"pipeline\", \"pipelineId\": \"chain\"}"
ok_status "save: a viewer may not" 403
send POST /schedules "$A" "{\"name\": \"x\", \"interval\": 60000, \"targetType\": \"pipeline\", \"pipelineId\": \"chain\", \"params\": {\"t\": \"db:nope:all:id\"}}"
ok_error "save: a data-source param checked for a pipeline too" 400 invalid_field params.t
send POST /schedules "$A" "{\"name\": \"uses\", \"interval\": 3600000, \"targetType\": \"pipeline\", \"pipelineId\": \"chain\", \"enabled\": false}"
ok_status "save: a pipeline target" 201
ok "save: answered in the native form" "$(j '[.target.type, .target.pipeline] | join(" ")')" "pipeline chain"
call DELETE /pipelines/chain "$A"
ok_error "delete: a pipeline in use" 409 pipeline_in_use null

# --- kill -9 while a step waits for its report ---------------------------------------
pipeline crash '[
  {"step_id": "a", "agent_id": "okay", "params": {"step": "a"}},
  {"step_id": "b", "agent_id": "later", "depends_on": ["a"], "params": {"step": "b", "delay_ms": 2500}},
  {"step_id": "c", "agent_id": "okay", "depends_on": ["b"], "params": {"step": "c"}}]'
s6=$(sched crash crash '{}')
wait_for 30 "SELECT count(*) = 1 FROM runs r JOIN jobs j ON j.id = r.job_id WHERE r.schedule_id = '$s6' AND j.pipeline_step_id = 'b' AND r.status = 'waiting'"
kill -9 "$CV_SUPERVISOR_PID"
wait_gone 10 "$CV_SUPERVISOR_PID"
"$CRONVISORD" -f "$CV_CONF" </dev/null >>"$work/cvd.log" 2>&1 &
extra="$extra $!"
wait_for 30 "SELECT status = 'done' FROM schedules WHERE id = '$s6'"
ok "kill -9: success" "$(xstate "$s6")" "done success"
ok "kill -9: each step once" "$(reqs "$s6" | jq -r .body.params.step | sort | tr '\n' ' ')" "a b c "
ok "kill -9: c after b's report" "$(($(at "$s6" c) - $(at "$s6" b) >= 2500))" 1

api_finish
summary engine_pipelines
