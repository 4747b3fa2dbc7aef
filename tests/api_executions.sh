#!/bin/sh
# api_executions.sh: executions and jobs (docs/executions.md) through the
# whole stack of tests/api-harness.sh (curl → nginx → cronvisor-api →
# PostgreSQL, with the real cronvisord forking the runs).  Checks: a slot
# that runs is one execution with one job whose attempts are the slot's
# runs (a retry chain: the execution running and its job pending between
# attempts, then success, 3 attempts); retries exhausted end the job
# failed with the error and the execution failed with it in errors, the
# schedule dead; a trigger-now run is an execution of its own; skipped
# slots make none; instants keep their milliseconds; the lists filter,
# page and refuse bad queries naming the parameter; another tenant sees
# nothing of them; history_limit prunes executions as it prunes runs;
# cronvisorctl shows all of it.
# Usage: api_executions.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
ctl=$3
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"
A=$CV_TOKEN_ALICE_EDITOR
AV=$CV_TOKEN_ALICE_VIEWER
B=$CV_TOKEN_BOB_EDITOR

# create NAME JSON-REST: POST /schedules as alice; prints the id.
create() {
	send POST /schedules "$A" "{\"name\": \"$1\", $2}"
	[ "$code" = 201 ] || echo "create $1: $code $resp" >&2
	j .id
}
# The instant 2.437 s from now (RFC 3339, ms).
soon=$(python3 -c 'import time, datetime as d
t = (int(time.time()) + 2) * 1000 + 437
print(d.datetime.fromtimestamp(t // 1000, d.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + ".%03dZ" % (t % 1000))')

# --- a retry chain: one execution, one job, three attempts --------------
# (runs drop privileges: the file they count in is everyone's)
chmod 0711 "$tmp" && mkdir -m 1777 "$tmp/w" && : >"$tmp/w/count" && chmod 0666 "$tmp/w/count"
chain=$(create chain "\"at\": \"$soon\", \"max_retries\": 3, \"backoff\": \"fixed\", \"retry_delay_seconds\": 2, \"target\": {\"type\": \"exec\", \"argv\": [\"/bin/sh\", \"-c\", \"n=\$(wc -l <$tmp/w/count); echo x >>$tmp/w/count; echo attempt \$n; [ \$n -ge 2 ]\"]}")
# always fails: retries exhausted
bad=$(create bad "\"at\": \"$soon\", \"max_retries\": 1, \"backoff\": \"fixed\", \"retry_delay_seconds\": 1, \"target\": {\"type\": \"exec\", \"argv\": [\"/bin/sh\", \"-c\", \"echo no >&2; exit 3\"]}")
# Between the first attempt and the second: running, its job pending.
wait_for 20 "SELECT count(*) = 1 FROM runs WHERE schedule_id = '$chain' AND status = 'failed'"
call GET "/executions?schedule_id=$chain" "$A"
ok_status "chain: list answered" 200
ok "chain: one execution so far" "$(j '.executions | length')" 1
x=$(j '.executions[0].id')
ok "chain: between attempts the execution runs" "$(j '.executions[0].status')" running
call GET "/executions/$x/jobs" "$A"
ok "chain: its one job waits for its retry" "$(j '[.jobs[] | .status] | join(",")')" pending
ok "chain: the job's error says it will be retried" "$(j '.jobs[0].error.retryable')" true
wait_for 30 "SELECT status = 'done' FROM schedules WHERE id = '$chain'"
call GET "/executions?schedule_id=$chain" "$A"
ok "chain: still one execution" "$(j '.executions | length')" 1
ok "chain: it succeeded" "$(j '.executions[0] | [.status, .jobs_created, .jobs_enqueued, (.errors | length), (.finished_at != null)] | map(tostring) | join(",")')" "success,1,1,0,true"
ok "chain: slot_at keeps its ms" "$(j '.executions[0].slot_at')" "$soon"
call GET "/executions/$x" "$A"
ok_status "chain: get answered" 200
ok "chain: get counts its jobs by status" "$(j '.jobs | [.pending, .running, .completed, .failed] | map(tostring) | join(",")')" "0,0,1,0"
ok "chain: get names the schedule" "$(j '.schedule_name')" chain
call GET "/executions/$x/jobs" "$A"
jid=$(j '.jobs[0].id')
ok "chain: the job completed after 3 attempts" "$(j '.jobs[0] | [.status, .attempt_count, .execution_id == "'"$x"'", .job_id == .id, .error == null] | map(tostring) | join(",")')" "completed,3,true,true,true"
call GET "/jobs/$jid" "$A"
ok_status "chain: job get answered" 200
ok "chain: its attempts are the slot's runs, in order" "$(j '[.attempts[] | "\(.attempt):\(.status)"] | join(" ")')" "0:failed 1:failed 2:succeeded"
ok "chain: each attempt names the job" "$(j '[.attempts[] | .job_id == "'"$jid"'"] | all')" true
ok "chain: the last attempt's output" "$(j '.attempts[2].output')" "attempt 2"
ok "chain: the job's result" "$(j '.result.exit_code')" 0
ok "chain: runs rows point at the job" "$(sql "SELECT count(*) FROM runs WHERE schedule_id = '$chain' AND job_id = '$jid'")" 3

# --- retries exhausted ------------------------------------------------
wait_for 20 "SELECT status = 'dead' FROM schedules WHERE id = '$bad'"
call GET "/executions?schedule_id=$bad&status=failed" "$A"
ok "bad: one failed execution" "$(j '.executions | length')" 1
ok "bad: its errors hold the last attempt's error, timed to the ms" "$(j '.executions[0].errors | length == 1 and (.[0].message | test("exit")) and (.[0].at | test("Z$"))')" true
bx=$(j '.executions[0].id')
call GET "/executions/$bx/jobs?status=failed" "$A"
ok "bad: its job failed, not retryable, 2 attempts" "$(j '.jobs[0] | [.status, .error.retryable, .attempt_count] | map(tostring) | join(",")')" "failed,false,2"
call GET "/executions/$bx/jobs?status=completed" "$A"
ok "bad: no completed job" "$(j '.jobs | length')" 0

# --- a trigger-now run, and slots that did not run ----------------------
sk=$(create skip "\"interval_seconds\": 1, \"overlap\": \"skip\", \"max_retries\": 0, \"target\": {\"type\": \"exec\", \"argv\": [\"/bin/sleep\", \"2.2\"]}")
wait_for 20 "SELECT count(*) >= 2 FROM runs WHERE schedule_id = '$sk' AND status = 'skipped'"
send POST "/schedules/$sk/pause" "$A" '{}'
wait_for 20 "SELECT count(*) = 0 FROM runs WHERE schedule_id = '$sk' AND status = 'running'"
ok "skip: an execution per run, none per skipped slot" \
	"$(sql "SELECT (SELECT count(*) FROM executions WHERE schedule_id = '$sk') = (SELECT count(*) FROM runs WHERE schedule_id = '$sk' AND status NOT IN ('skipped', 'missed', 'expired'))")" t
ok "skip: skipped slots have no job" "$(sql "SELECT count(*) FROM runs WHERE schedule_id = '$sk' AND status = 'skipped' AND job_id IS NOT NULL")" 0
# A once schedule due in a year, run now twice: two executions of their own.
tr=$(create trig "\"at\": \"2099-01-01T00:00:00Z\", \"target\": {\"type\": \"exec\", \"argv\": [\"/bin/true\"]}")
send POST "/schedules/$tr/trigger" "$A" '{}'
ok_status "trigger: accepted" 202
wait_for 20 "SELECT count(*) = 1 FROM runs WHERE schedule_id = '$tr' AND triggered AND status = 'succeeded'"
send POST "/schedules/$tr/trigger" "$A" '{}'
wait_for 20 "SELECT count(*) = 2 FROM runs WHERE schedule_id = '$tr' AND triggered AND status = 'succeeded'"
call GET "/executions?schedule_id=$tr" "$A"
ok "trigger: each run now is an execution of its own, triggered, success" "$(j '[.executions[] | select(.triggered and .status == "success")] | length')" 2

# --- lists: filters, pages, bad queries ---------------------------------
call GET "/executions?limit=1" "$A"
ok "page: one per page" "$(j '.executions | length')" 1
c1=$(j .next_cursor)
first=$(j '.executions[0].id')
call GET "/executions?limit=1&cursor=$c1" "$A"
ok "page: the next page goes on" "$(j '.executions[0].id != "'"$first"'" and (.executions | length) == 1')" true
n_all=$(sql "SELECT count(*) FROM executions")
call GET "/executions?limit=500" "$A"
ok "page: all of alice's" "$(j '.executions | length')" "$n_all"
call GET "/executions?status=done" "$A"
ok_error "bad: an unknown status" 400 invalid_query status
call GET "/executions?schedule_id=nope" "$A"
ok_error "bad: a schedule_id that is no id" 400 invalid_query schedule_id
call GET "/executions?limit=0" "$A"
ok_error "bad: limit 0" 400 invalid_query limit
call GET "/executions?cursor=zz" "$A"
ok_error "bad: a cursor not given out" 400 invalid_query cursor
call GET "/executions?sort=x" "$A"
ok_status "bad: an unknown parameter" 400
call GET "/executions/$x/jobs?status=succeeded" "$A"
ok_error "bad: a run status is not a job status" 400 invalid_query status
call GET "/executions/not-an-id" "$A"
ok_error "bad: no such execution" 404 not_found null
call GET "/jobs/00000000-0000-0000-0000-000000000000" "$A"
ok_error "bad: no such job" 404 not_found null
call GET "/executions" ""
ok_status "bad: no token" 401

# --- tenants ------------------------------------------------------------
call GET "/executions/$x" "$AV"
ok_status "tenant: alice's viewer reads it" 200
call GET "/executions/$x" "$B"
ok_error "tenant: bob gets 404 for alice's execution" 404 not_found null
call GET "/executions/$x/jobs" "$B"
ok_error "tenant: and for its jobs" 404 not_found null
call GET "/jobs/$jid" "$B"
ok_error "tenant: and for its job" 404 not_found null
call GET "/executions?schedule_id=$chain" "$B"
ok "tenant: bob's list of alice's schedule is empty" "$(j '.executions | length')" 0
call GET "/executions?limit=500" "$B"
ok "tenant: bob's list has none of alice's" "$(j '.executions | length')" 0
call GET "/executions?limit=500" "$CV_TOKEN_ADMIN"
ok "tenant: the admin sees them all" "$(j '.executions | length')" "$n_all"
call POST "/executions" "$A"
ok_status "tenant: executions cannot be written" 405

# --- retention ---------------------------------------------------------
keep=$(create keep "\"interval_seconds\": 1, \"history_limit\": 2, \"max_retries\": 0, \"target\": {\"type\": \"exec\", \"argv\": [\"/bin/true\"]}")
wait_for 20 "SELECT run_count >= 5 FROM schedules WHERE id = '$keep'"
send POST "/schedules/$keep/pause" "$A" '{}'
wait_for 20 "SELECT count(*) <= 2 FROM executions WHERE schedule_id = '$keep' AND status <> 'running'"
ok "retention: history_limit 2 keeps 2 ended executions" "$(sql "SELECT count(*) <= 2 FROM executions WHERE schedule_id = '$keep' AND status <> 'running'")" t
ok "retention: their jobs went with them" "$(sql "SELECT count(*) FROM jobs j WHERE schedule_id = '$keep' AND NOT EXISTS (SELECT 1 FROM executions x WHERE x.id = j.execution_id)")" 0

# --- cronvisorctl ---------------------------------------------------------
CRONVISOR_TOKEN=$A
export CRONVISOR_URL CRONVISOR_TOKEN
check ctl-list 0 "$x" -- "$ctl" executions list --schedule "$chain"
check ctl-list-status 0 "success" -- "$ctl" executions list --schedule "$chain" --status success
check ctl-show 0 "schedule_name" -- "$ctl" executions show "$x"
check ctl-jobs 0 "$jid" -- "$ctl" executions jobs "$x"
check ctl-job 0 "attempt 2" -- "$ctl" jobs show "$jid"
check ctl-json 0 '"attempt_count": 3' -- "$ctl" --json jobs show "$jid"
check ctl-bad-status 1 "status" -- "$ctl" executions list --status nope
check ctl-usage 2 "takes one id" -- "$ctl" executions show
check ctl-usage-opt 2 "takes no such option" -- "$ctl" executions jobs "$x" --schedule "$chain"
check ctl-help 0 "usage: cronvisorctl executions list" -- "$ctl" jobs --help

api_finish
summary api_executions
