#!/bin/sh
# api_seedbody.sh: the seeds' own schedule bodies through the whole stack
# of tests/api-harness.sh (curl and cronvisorctl → nginx → cronvisor-api →
# PostgreSQL, with the real cronvisord), with default_timezone set to seed
# 004's America/New_York.  Checks: seed 004's cron, once and interval
# bodies (repeat, cronExpression, interval in ms, startAt, targetType,
# agentId, params, retryConfig, timeout in ms, priority, enabled) are
# created and read back as the native document, enabled: false creates a
# paused schedule and a PATCH of enabled pauses and resumes; seed 002's
# cron and datetime bodies keep organizationId and environmentId, the
# receiver's event carries them, and a new future scheduledAt makes a done
# datetime schedule fire again; every refusal names the field as the seed
# spells it and changes nothing.
# Usage: api_seedbody.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
CV_HARNESS_CONF="default_timezone = America/New_York"
export CV_HARNESS_CONF
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"
ctl=$3
A=$CV_TOKEN_ALICE_EDITOR

send POST /agents "$A" '{"agent_id": "query-strategy", "name": "Query strategy", "endpoint": "https://agents.example.test/qs"}'
ok_status "agent query-strategy: 201" 201
send POST /agents "$A" '{"agent_id": "typed", "name": "Typed", "endpoint": "https://agents.example.test/typed", "input_schema": {"type": "object", "properties": {"tickerId": {"type": "string"}}}}'
ok_status "agent typed: 201" 201
# The table seed 004's data-source strings read (db:ticker:…), registered.
sql "CREATE TABLE ticker (id text PRIMARY KEY, enabled boolean);
     INSERT INTO ticker VALUES ('AAPL', true), ('MSFT', false);
     GRANT SELECT ON ticker TO cronvisor_reader" >/dev/null
send POST /data-sources "$CV_TOKEN_ADMIN" '{"name": "ticker", "relation": "ticker", "key": "id", "columns": ["id", "enabled"]}'
ok_status "data source ticker: 201" 201

# --- seed 004 -----------------------------------------------------------
# The example of seed 004's "Query Strategy Agent Schedule", as the brief
# of issue 19 gives it, every member of the seed's Schedule type used.
send POST /schedules "$A" '{"name": "Weekly Entity Graph Refresh", "repeat": "repeating", "cronExpression": "0 2 * * 0", "targetType": "agent", "agentId": "query-strategy", "params": {"refreshEntityGraph": true}, "retryConfig": {"maxRetries": 3, "backoff": "exponential", "delay": 2000}, "timeout": 30000, "priority": 5, "enabled": true}'
ok_status "seed 004 cron: 201" 201
weekly=$(j .id)
call GET "/schedules/$weekly" "$A"
ok "seed 004 cron: read back natively" \
	"$(j '[.kind, .cron, .timezone, .max_retries, .backoff, .retry_delay_seconds, .timeout_seconds, .priority, .status, (.next_run_at != null)] | map(tostring) | join(",")')" \
	"cron,0 2 * * 0,America/New_York,3,exponential,2,900,5,active,true"
ok "seed 004 cron: the agent target, timeout in ms" "$(printf '%s' "$resp" | jq -S -c .target)" \
	'{"agent":"query-strategy","params":{"refreshEntityGraph":true},"timeout_ms":30000,"type":"agent"}'
ok "seed 004 cron: no seed spelling in the answer" \
	"$(j '[has("repeat"), has("cronExpression"), has("targetType"), has("retryConfig"), has("enabled")] | any')" false
# Sunday 02:00 in New York, the configured default zone.
ok "seed 004 cron: fires on Sunday 02:00 New York" \
	"$(j '.next_fire_times[0].local | test("T02:00:00-0[45]:00$")')" true

start=$(at_in 3600)
send POST /schedules "$A" '{"name": "One-time Data Collection for AAPL", "repeat": "once", "startAt": "'"$start"'", "targetType": "agent", "agentId": "query-strategy", "params": {"tickerId": "db:ticker:AAPL:id", "source": "news"}}'
ok_status "seed 004 once: 201" 201
ok "seed 004 once: startAt is the instant" \
	"$(j '[.kind, .at, .start_at, .next_run_at, .target.params.source] | map(tostring) | join(",")')" \
	"once,$start,null,$start,news"

send POST /schedules "$A" '{"name": "hourly", "repeat": "repeating", "interval": 60000, "startAt": "'"$start"'", "targetType": "agent", "agentId": "query-strategy", "retryConfig": {"maxRetries": 2, "backoff": "linear", "delay": 1000}, "timeout": 1500, "enabled": false}'
ok_status "seed 004 interval, enabled false: 201" 201
iv=$(j .id)
ok "seed 004 interval: created paused" \
	"$(j '[.kind, .interval_seconds, .start_at, .backoff, .retry_delay_seconds, .max_retries, .target.timeout_ms, .status, .next_run_at] | map(tostring) | join(",")')" \
	"interval,60,$start,linear,1,2,1500,paused,null"
call GET "/schedules/$iv" "$A"
ok "seed 004 interval: paused when read again" "$(j .status)" paused
send PATCH "/schedules/$iv" "$A" '{"enabled": true, "params": {"tickerId": "MSFT"}}'
ok "PATCH enabled true: resumed from its start" \
	"$code $(j '[.status, .next_run_at, .target.agent, .target.params.tickerId, .target.timeout_ms] | map(tostring) | join(",")')" \
	"200 active,$start,query-strategy,MSFT,1500"
send PATCH "/schedules/$iv" "$A" '{"enabled": false}'
ok "PATCH enabled false: paused" "$code $(j '[.status, .next_run_at] | map(tostring) | join(",")')" "200 paused,null"
send PATCH "/schedules/$iv" "$A" '{"enabled": false, "priority": 9}'
ok "PATCH enabled false of a paused schedule: stays paused" "$code $(j '[.status, .priority] | map(tostring) | join(",")')" "200 paused,9"

# --- refusals name the field as the seed spells it -------------------------
before=$(snap)
refused() { # refused NAME CODE FIELD BODY: POST BODY is a 400, nothing changes
	send POST /schedules "$A" "$4"
	ok_error "$1" 400 "$2" "$3"
	ok "$1: nothing changed" "$(snap)" "$before"
}
agent='"targetType": "agent", "agentId": "query-strategy"'
refused "startAt in the past" invalid_field startAt \
	'{"name": "x", "repeat": "once", "startAt": "2024-01-15T10:00:00Z", '"$agent"'}'
refused "scheduledAt in the past" invalid_field scheduledAt \
	'{"name": "x", "scheduleType": "datetime", "scheduledAt": "2024-01-15T10:00:00Z"}'
refused "unknown agentId" invalid_field agentId \
	'{"name": "x", "repeat": "repeating", "interval": 60000, "targetType": "agent", "agentId": "no-such-agent"}'
refused "params the agent's schema refuses" invalid_field params.tickerId \
	'{"name": "x", "repeat": "repeating", "interval": 60000, "targetType": "agent", "agentId": "typed", "params": {"tickerId": 5}}'
refused "interval of 1.5 s" invalid_field interval \
	'{"name": "x", "repeat": "repeating", "interval": 1500, '"$agent"'}'
refused "retryConfig.delay of 0.5 s" invalid_field retryConfig.delay \
	'{"name": "x", "repeat": "repeating", "interval": 60000, "retryConfig": {"delay": 500}, '"$agent"'}'
refused "cronExpression and cron" invalid_field cronExpression \
	'{"name": "x", "cronExpression": "0 2 * * 0", "cron": "0 2 * * 0", '"$agent"'}'
refused "repeat and kind disagree" invalid_field repeat \
	'{"name": "x", "repeat": "once", "kind": "cron", "cron": "0 2 * * 0", '"$agent"'}'
refused "a pipeline the owner does not have" invalid_field pipelineId \
	'{"name": "x", "repeat": "repeating", "interval": 60000, "targetType": "pipeline", "pipelineId": "p"}'
refused "targetType pipeline without pipelineId" missing_field pipelineId \
	'{"name": "x", "repeat": "repeating", "interval": 60000, "targetType": "pipeline"}'
refused "bad cronExpression" invalid_field cronExpression \
	'{"name": "x", "scheduleType": "cron", "cronExpression": "61 * * * *"}'
refused "a field no seed has" unknown_field createdBy \
	'{"name": "x", "repeat": "repeating", "interval": 60000, '"$agent"', "createdBy": "admin"}'
send PATCH "/schedules/$weekly" "$A" '{"cronExpression": "0 3 * * 0", "cron": "0 3 * * 0"}'
ok_error "PATCH of two spellings" 400 invalid_field cronExpression
send PATCH "/schedules/$weekly" "$A" '{"agentId": "no-such-agent"}'
ok_error "PATCH of an unknown agentId" 400 invalid_field agentId
ok "refused PATCHes: nothing changed" "$(snap)" "$before"

# --- seed 002 -------------------------------------------------------------
send POST /schedules "$A" '{"name": "every five", "scheduleType": "cron", "cronExpression": "*/5 * * * *", "timezone": "UTC", "organizationId": "org-uuid", "environmentId": "env-uuid", "workflowId": "wf-1", "workflowEntityId": "ent-1"}'
ok_status "seed 002 cron: 201" 201
call GET "/schedules/$(j .id)" "$A"
ok "seed 002 cron: read back natively" \
	"$(j '[.kind, .cron, .timezone, .organization_id, .environment_id, .workflow_id, .trigger_node_id, .status] | map(tostring) | join(",")')" \
	"cron,*/5 * * * *,UTC,org-uuid,env-uuid,wf-1,ent-1,active"
call GET "/schedules?workflow_id=wf-1" "$A"
ok "seed 002 cron: found by its workflowId" "$(j '.schedules | length')" 1

# The datetime body through cronvisorctl, which sends a file as it is.
at1=$(at_in 2)
printf '{"name": "datetime", "scheduleType": "datetime", "scheduledAt": "%s", "timezone": "UTC", "organizationId": "org-7", "environmentId": "env-3", "workflowId": "wf-9", "workflowEntityId": "ent-9"}\n' \
	"$at1" >"$tmp/seed002.json"
resp=$(CRONVISOR_URL=$CRONVISOR_URL CRONVISOR_TOKEN=$A "$ctl" --json schedules create --file "$tmp/seed002.json" 2>"$tmp/ctl.err")
ok "seed 002 datetime by cronvisorctl: created" \
	"$(j '[.kind, .at, .organization_id, .environment_id] | map(tostring) | join(",")')" \
	"once,$at1,org-7,env-3"
dt=$(j .id)
wait_api 20 '.status == "done"' "/schedules/$dt" "$A"
ok "seed 002 datetime: fired and done" "$(j '[.status, .next_run_at] | map(tostring) | join(",")')" "done,null"

# events ID: the bodies the stand-in receiver got from schedule ID, one
# JSON object a line (the log line ends in the body, JSON-escaped).
events() {
	sed -n 's|^POST /receiver 200 [0-9]* application/json ||p' "$CV_RECEIVER_LOG" |
		while IFS= read -r b; do printf '"%s"\n' "$b"; done |
		jq -c --arg id "$1" 'fromjson | select(.scheduledEventId == $id)'
}
ok "the receiver's event: seed 002's trigger" \
	"$(events "$dt" | jq -r '[.type, .triggerType, .organizationId, .environmentId, .workflowId, .triggerNodeId, .timestamp] | join(",")')" \
	"workflow_trigger,scheduled,org-7,env-3,wf-9,ent-9,$at1"

# A new future scheduledAt makes the done datetime schedule active again.
at2=$(at_in 2)
send PATCH "/schedules/$dt" "$A" '{"scheduledAt": "'"$at2"'"}'
ok "PATCH a new scheduledAt: active again" "$code $(j '[.status, .at, .next_run_at] | map(tostring) | join(",")')" \
	"200 active,$at2,$at2"
wait_api 20 '.status == "done"' "/schedules/$dt" "$A"
ok "fired again, done again" "$(j .status)" done
ok "the receiver got both events" "$(events "$dt" | jq -r .timestamp | tr '\n' ' ')" "$at1 $at2 "
send PATCH "/schedules/$dt" "$A" '{"scheduledAt": "2024-01-15T10:00:00Z"}'
ok_error "PATCH a past scheduledAt" 400 invalid_field scheduledAt

api_finish
summary api_seedbody
