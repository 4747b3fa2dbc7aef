#!/bin/sh
# api_pipelines.sh: pipelines (docs/orchestration.md) through the whole
# stack of tests/api-harness.sh (curl → nginx → cronvisor-api →
# PostgreSQL).  Checks: create (native and seed 004's spellings), get,
# list with its filters and pages, patch and delete; every field's errors
# naming the field, cycles named, unknown agents named by step, nothing
# written by a refused request; an agent a pipeline uses is not deleted;
# every role and tenant on every route (a viewer writes nothing, another
# tenant sees nothing, an admin reaches an owner's with ?owner=).
# Usage: api_pipelines.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"
A=$CV_TOKEN_ALICE_EDITOR
AV=$CV_TOKEN_ALICE_VIEWER
B=$CV_TOKEN_BOB_EDITOR
ADM=$CV_TOKEN_ADMIN

for ag in data-collection analysis content-generation; do
	send POST /agents "$A" "{\"agent_id\": \"$ag\", \"name\": \"$ag\", \"endpoint\": \"https://agents.example.test/$ag\"}"
	ok_status "setup: alice's agent $ag" 201
done
send POST /agents "$B" '{"agent_id": "bob-only", "name": "b", "endpoint": "https://agents.example.test/b"}'
ok_status "setup: bob's agent" 201

# --- create, get, list ---------------------------------------------------------
send POST /pipelines "$A" '{"id": "newsletter", "name": "Newsletter Generation Pipeline",
	"steps": [
	  {"stepId": "collect", "agentId": "data-collection", "parallel": false,
	   "params": {"source": "news"},
	   "retryConfig": {"maxRetries": 2, "backoff": "linear", "delay": 1500}, "timeout": 60000},
	  {"stepId": "analyze", "agentId": "analysis", "dependsOn": ["collect"], "parallel": false},
	  {"stepId": "generate", "agentId": "content-generation", "dependsOn": ["analyze"],
	   "parallel": false, "runWhen": "done"}],
	"enabled": true}'
ok_status "create: seed 004's pipeline, 201" 201
ok "create: the answer, native" "$(j '[.pipeline_id, .owner, (.steps | length), .steps[0].retry.delay_ms, .steps[0].timeout_ms, .steps[2].run_when, .steps[2].depends_on[0], .fail_fast, .enabled] | map(tostring) | join(",")')" \
	"newsletter,alice,3,1500,60000,done,analyze,false,true"
ok "create: created_by says who" "$(j '.created_by | test("^alice [(]token [0-9]+[)]$")')" true
ok "create: times in ms" "$(j '.created_at | test("^[0-9-]+T[0-9:]+[.][0-9]{3}Z$")')" true
send POST /pipelines "$A" '{"pipeline_id": "fanin", "name": "Fan-in", "fail_fast": true, "steps": [
	  {"step_id": "join", "agent_id": "analysis", "depends_on": ["left", "right"]},
	  {"step_id": "left", "agent_id": "data-collection"},
	  {"step_id": "right", "agent_id": "data-collection"}]}'
ok_status "create: a diamond's half, native" 201
send POST /pipelines "$A" '{"pipeline_id": "newsletter", "name": "again", "steps": [{"step_id": "a", "agent_id": "analysis"}]}'
ok_error "create: the same id again" 409 conflict pipeline_id
send POST /pipelines "$B" '{"pipeline_id": "newsletter", "name": "bob'"'"'s", "steps": [{"step_id": "a", "agent_id": "bob-only"}]}'
ok_status "create: another owner may use the same id" 201
call GET /pipelines/newsletter "$A"
ok_status "get: 200" 200
ok "get: its steps in order" "$(j '[.steps[].step_id] | join(",")')" "collect,analyze,generate"
call GET /pipelines "$A"
ok "list: alice's two" "$(j '[.pipelines[].pipeline_id] | join(",")')" "fanin,newsletter"
call GET "/pipelines?limit=1" "$A"
ok "list: a page of one" "$(j '[.pipelines[].pipeline_id] | join(",")')" fanin
call GET "/pipelines?limit=1&cursor=$(j .next_cursor)" "$A"
ok "list: the next page" "$(j '[.pipelines[].pipeline_id] | join(",")')" newsletter
call GET "/pipelines?agent=content-generation" "$A"
ok "list: ?agent= the ones with a step of it" "$(j '[.pipelines[].pipeline_id] | join(",")')" newsletter
call GET "/pipelines?enabled=false" "$A"
ok "list: none disabled" "$(j '.pipelines | length')" 0
call GET "/pipelines?agent=Bad_Id" "$A"
ok_error "list: a bad ?agent=" 400 invalid_query agent
call GET "/pipelines?colour=red" "$A"
ok_error "list: an unknown parameter" 400 invalid_query colour
call GET /pipelines "$ADM"
ok "list: the admin sees every owner's" "$(j '[.pipelines[] | .owner + "/" + .pipeline_id] | join(",")')" \
	"alice/fanin,alice/newsletter,bob/newsletter"

# --- every field's errors, nothing written ----------------------------------------
bad() { # NAME FIELD CODE BODY [MESSAGE-PART]
	send POST /pipelines "$A" "$4"
	ok_error "invalid: $1" 400 "$3" "$2"
	[ $# -lt 5 ] || ok "invalid: $1: says $5" "$(j '.error.message' | grep -c -F -- "$5")" 1
}
S='"steps": [{"step_id": "a", "agent_id": "analysis"}]'
bad "no pipeline_id" pipeline_id missing_field "{\"name\": \"n\", $S}"
bad "pipeline_id with upper case" pipeline_id invalid_field "{\"pipeline_id\": \"Pipe\", \"name\": \"n\", $S}"
bad "pipeline_id with SQL" pipeline_id invalid_field "{\"pipeline_id\": \"x'; DROP TABLE pipelines; --\", \"name\": \"n\", $S}"
bad "id and pipeline_id both" pipeline_id invalid_field "{\"id\": \"p\", \"pipeline_id\": \"p\", \"name\": \"n\", $S}" "given twice"
bad "no name" name missing_field "{\"pipeline_id\": \"p\", $S}"
bad "no steps" steps missing_field '{"pipeline_id": "p", "name": "n"}'
bad "empty steps" steps invalid_field '{"pipeline_id": "p", "name": "n", "steps": []}'
bad "a step without agent" "steps[0].agent_id" missing_field '{"pipeline_id": "p", "name": "n", "steps": [{"step_id": "a"}]}'
bad "an unknown agent, named by step" "steps[1].agentId" unknown_agent '{"pipeline_id": "p", "name": "n", "steps": [{"step_id": "a", "agent_id": "analysis"}, {"stepId": "b", "agentId": "nope"}]}' 'no agent "nope"'
bad "another owner's agent" "steps[0].agent_id" unknown_agent '{"pipeline_id": "p", "name": "n", "steps": [{"step_id": "a", "agent_id": "bob-only"}]}'
bad "a duplicate step id" "steps[1].step_id" invalid_field '{"pipeline_id": "p", "name": "n", "steps": [{"step_id": "a", "agent_id": "analysis"}, {"step_id": "a", "agent_id": "analysis"}]}' "duplicate step id"
bad "an unknown dependency" "steps[0].depends_on[0]" invalid_field '{"pipeline_id": "p", "name": "n", "steps": [{"step_id": "a", "agent_id": "analysis", "depends_on": ["zz"]}]}' 'no step "zz"'
bad "a cycle, named" "steps[0].depends_on" invalid_field '{"pipeline_id": "p", "name": "n", "steps": [{"step_id": "a", "agent_id": "analysis", "depends_on": ["c"]}, {"step_id": "b", "agent_id": "analysis", "depends_on": ["a"]}, {"step_id": "c", "agent_id": "analysis", "depends_on": ["b"]}]}' "a cycle: a depends on c depends on b depends on a"
bad "an unknown step member" "steps[0].image" unknown_field '{"pipeline_id": "p", "name": "n", "steps": [{"step_id": "a", "agent_id": "analysis", "image": "x"}]}'
bad "a bad run_when" "steps[0].run_when" invalid_field '{"pipeline_id": "p", "name": "n", "steps": [{"step_id": "a", "agent_id": "analysis", "run_when": "always"}]}'
bad "a bad backoff" "steps[0].retryConfig.backoff" invalid_field '{"pipeline_id": "p", "name": "n", "steps": [{"step_id": "a", "agent_id": "analysis", "retryConfig": {"maxRetries": 1, "backoff": "random"}}]}'
bad "a timeout of 0" "steps[0].timeout" invalid_field '{"pipeline_id": "p", "name": "n", "steps": [{"step_id": "a", "agent_id": "analysis", "timeout": 0}]}'
bad "params not an object" "steps[0].params" invalid_field '{"pipeline_id": "p", "name": "n", "steps": [{"step_id": "a", "agent_id": "analysis", "params": "x"}]}'
bad "an unknown member" colour unknown_field "{\"pipeline_id\": \"p\", \"name\": \"n\", $S, \"colour\": 1}"
big=$(seq 0 100 | sed 's/.*/{"step_id": "s&", "agent_id": "analysis"}/' | paste -sd, -)
bad "101 steps" steps invalid_field "{\"pipeline_id\": \"p\", \"name\": \"n\", \"steps\": [$big]}" "1 to 100"
send POST /pipelines "$A" '{"pipeline_id": "p", "name": "n",'
ok_error "invalid: not JSON" 400 invalid_json null
ok "invalid: nothing was written" "$(sql "SELECT count(*) FROM pipelines")" 3

# --- patch -------------------------------------------------------------------------
send PATCH /pipelines/fanin "$A" '{"description": "two sources, one analysis", "enabled": false}'
ok_status "patch: 200" 200
ok "patch: the members named, the steps kept" "$(j '[.description, .enabled, (.steps | length), .fail_fast, (.updated_by | test("^alice"))] | map(tostring) | join(",")')" \
	"two sources, one analysis,false,3,true,true"
send PATCH /pipelines/fanin "$A" '{"steps": [{"step_id": "only", "agent_id": "analysis", "depends_on": ["only"]}]}'
ok_error "patch: a step that depends on itself" 400 invalid_field "steps[0].depends_on[0]"
send PATCH /pipelines/fanin "$A" '{"steps": [{"step_id": "only", "agent_id": "nope"}]}'
ok_error "patch: an unknown agent" 400 unknown_agent "steps[0].agent_id"
send PATCH /pipelines/fanin "$A" '{"id": "other"}'
ok_error "patch: the id cannot change" 400 invalid_field id
ok "patch: refused ones changed nothing" "$(sql "SELECT jsonb_array_length(steps) || ',' || enabled FROM pipelines WHERE owner = 'alice' AND pipeline_id = 'fanin'")" "3,false"
send PATCH /pipelines/fanin "$A" '{"steps": [{"step_id": "only", "agent_id": "analysis"}], "enabled": true}'
ok "patch: steps replaced whole" "$(j '[.steps[].step_id, (.enabled | tostring)] | join(",")')" "only,true"
send PATCH /pipelines/nope "$A" '{"enabled": false}'
ok_error "patch: no such pipeline" 404 not_found null

# --- an agent in use ------------------------------------------------------------------
call DELETE /agents/content-generation "$A"
ok_error "agent delete: refused while a pipeline has a step of it" 409 agent_in_use null

# --- an agent deleted while a pipeline that names it is saved ------------------------
# A pipeline's save holds its agents FOR SHARE until it commits; the
# delete locks the agent first and counts its users after: it waits, then
# sees the pipeline.  (Counted from an older snapshot, it deleted the
# agent under the pipeline.)
send POST /agents "$A" '{"agent_id": "racy", "name": "r", "endpoint": "https://agents.example.test/r"}'
sql "BEGIN;
     SELECT 1 FROM agents WHERE owner = 'alice' AND agent_id = 'racy' FOR SHARE;
     SELECT pg_sleep(1.5);
     INSERT INTO pipelines (owner, pipeline_id, name, steps, created_by, updated_by)
     VALUES ('alice', 'racy-pipe', 'r', '[{\"step_id\": \"a\", \"agent_id\": \"racy\"}]', 't', 't');
     COMMIT" >/dev/null &
saver=$!
wait_for 10 "SELECT count(*) = 1 FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND datname = current_database()" ||
	echo "the saver did not get to its sleep" >&2
call DELETE /agents/racy "$A"
ok_error "race: the agent's delete waits and sees the pipeline" 409 agent_in_use null
wait "$saver"
ok "race: the agent is still there" "$(sql "SELECT count(*) FROM agents WHERE agent_id = 'racy'")" 1
sql "DELETE FROM pipelines WHERE pipeline_id = 'racy-pipe'" >/dev/null

# A schedule saved while its agent is being deleted: the save reads the
# agent FOR SHARE, waits for the delete, and finds no agent.  (Read
# without the lock, it saw the agent's last version and was saved.)
send POST /agents "$A" '{"agent_id": "racy2", "name": "r", "endpoint": "https://agents.example.test/r"}'
sql "BEGIN;
     DELETE FROM agents WHERE owner = 'alice' AND agent_id = 'racy2';
     SELECT pg_sleep(1.5);
     COMMIT" >/dev/null &
deleter=$!
wait_for 10 "SELECT count(*) = 1 FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND datname = current_database()" ||
	echo "the deleter did not get to its sleep" >&2
send POST /schedules "$A" '{"name": "racy", "kind": "interval", "interval_seconds": 60, "target": {"type": "agent", "agent": "racy2"}}'
ok_error "race: a schedule saved under the agent's delete is refused" 400 invalid_field target.agent
wait "$deleter"
ok "race: no schedule targets the deleted agent" "$(sql "SELECT count(*) FROM schedules WHERE target ->> 'agent' = 'racy2'")" 0

# --- roles and tenants on every route ------------------------------------------------
for route in "GET /pipelines/newsletter" "PATCH /pipelines/newsletter" "DELETE /pipelines/fanin"; do
	set -- $route
	send "$1" "$2?owner=alice" "$B" '{"enabled": false}'
	ok_error "tenant: bob's $1 $2 of alice's is 404" 404 not_found null
done
call GET /pipelines/fanin "$B"
ok_error "tenant: bob's own namespace has no fanin" 404 not_found null
call GET "/pipelines?owner=alice" "$B"
ok_error "tenant: bob may not list alice's" 403 forbidden owner
send POST "/pipelines?owner=alice" "$B" "{\"pipeline_id\": \"x\", \"name\": \"n\", $S}"
ok_error "tenant: bob may not create in alice's name" 403 forbidden owner
call GET /pipelines/newsletter "$AV"
ok_status "viewer: may read" 200
for route in "PATCH /pipelines/newsletter" "DELETE /pipelines/newsletter"; do
	set -- $route
	send "$1" "$2" "$AV" '{"enabled": false}'
	ok_error "viewer: $1 $2 is 403" 403 forbidden null
done
send POST /pipelines "$AV" "{\"pipeline_id\": \"x\", \"name\": \"n\", $S}"
ok_error "viewer: POST /pipelines is 403" 403 forbidden null
call GET /pipelines ""
ok_status "no token: 401" 401
call GET "/pipelines/newsletter?owner=bob" "$ADM"
ok "admin: bob's by ?owner=" "$(j '[.owner, .steps[0].agent_id] | join(",")')" "bob,bob-only"
send PATCH "/pipelines/newsletter?owner=bob" "$ADM" '{"description": "by the admin"}'
ok "admin: patches bob's" "$(j .description)" "by the admin"
ok "tenants: alice's newsletter untouched" "$(sql "SELECT description FROM pipelines WHERE owner = 'alice' AND pipeline_id = 'newsletter'")" ""

# --- delete ---------------------------------------------------------------------------
call DELETE /pipelines/fanin "$A"
ok_status "delete: 204" 204
call GET /pipelines/fanin "$A"
ok_error "delete: gone" 404 not_found null
call DELETE /pipelines/fanin "$A"
ok_error "delete: again, 404" 404 not_found null
call DELETE /pipelines/newsletter "$A"
call DELETE /agents/content-generation "$A"
ok_status "agent delete: allowed once no pipeline uses it" 204

api_finish
summary api_pipelines
