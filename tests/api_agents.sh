#!/bin/sh
# api_agents.sh: the agent registry (docs/agents.md) through the whole
# stack of tests/api-harness.sh (curl → nginx → cronvisor-api →
# PostgreSQL).  Checks: create, get, list, patch and delete with every
# field's errors naming the field; secrets are write-only (never in an
# answer, kept by a PATCH that does not send them, not in the logs);
# input schemas are checked when saved; versions, deploy, promote and
# rollback with who and when; every role and tenant on every route (a
# viewer writes nothing, another tenant sees nothing, an admin reaches an
# owner's agent with ?owner=).
# Usage: api_agents.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"
A=$CV_TOKEN_ALICE_EDITOR
AV=$CV_TOKEN_ALICE_VIEWER
B=$CV_TOKEN_BOB_EDITOR
ADM=$CV_TOKEN_ADMIN
SECRET=s3cr3t-bearer-0f9d8c7b
HSECRET=hmac-key-77aa66bb55cc

# --- create, get, list ---------------------------------------------------
send POST /agents "$A" "{\"agent_id\": \"query-strategy\", \"name\": \"Query strategy\",
	\"endpoint\": \"https://agents.example.test/qs\",
	\"auth\": {\"type\": \"bearer\", \"token\": \"$SECRET\"},
	\"timeout_ms\": 30000, \"max_concurrent_requests\": 5,
	\"health\": {\"url\": \"https://agents.example.test/qs/health\", \"interval_seconds\": 30},
	\"input_schema\": {\"type\": \"object\", \"required\": [\"tickerId\"],
		\"properties\": {\"tickerId\": {\"type\": \"string\", \"minLength\": 1}}}}"
ok_status "create: 201" 201
ok "create: the answer" "$(j '[.agent_id, .owner, .auth.type, .auth.secret_set, .timeout_ms, .max_concurrent_requests, .health.interval_seconds, .health.when_unhealthy, .enabled] | map(tostring) | join(",")')" \
	"query-strategy,alice,bearer,true,30000,5,30,wait,true"
ok "create: no secret in the answer" "$(printf '%s' "$resp" | grep -c "$SECRET")" 0
ok "create: created_by says who" "$(j '.created_by | test("^alice [(]token [0-9]+[)]$")')" true
send POST /agents "$A" '{"agent_id": "query-strategy", "name": "again", "endpoint": "https://x.test/"}'
ok_error "create: the same id again" 409 conflict agent_id
send POST /agents "$B" '{"agent_id": "query-strategy", "name": "bob'"'"'s", "endpoint": "https://bob.test/qs"}'
ok_status "create: another owner may use the same id" 201
send POST /agents "$A" "{\"agent_id\": \"signer\", \"name\": \"Signer\", \"endpoint\": \"http://127.0.0.1:9/s\",
	\"auth\": {\"type\": \"hmac\", \"secret\": \"$HSECRET\"}}"
ok_status "create: an hmac agent" 201
call GET /agents/query-strategy "$A"
ok_status "get: 200" 200
ok "get: its schema" "$(j '.input_schema.required[0]')" tickerId
call GET /agents "$A"
ok "list: alice's two" "$(j '[.agents[].agent_id] | join(",")')" "query-strategy,signer"
call GET "/agents?limit=1" "$A"
ok "list: a page of one" "$(j '.agents | length')" 1
call GET "/agents?limit=1&cursor=$(j .next_cursor)" "$A"
ok "list: the next page" "$(j '[.agents[].agent_id] | join(",")')" signer
call GET "/agents?enabled=false" "$A"
ok "list: none disabled" "$(j '.agents | length')" 0
call GET /agents "$ADM"
ok "list: the admin sees every owner's" "$(j '[.agents[] | .owner + "/" + .agent_id] | join(",")')" \
	"alice/query-strategy,alice/signer,bob/query-strategy"
call GET "/agents?owner=bob" "$ADM"
ok "list: the admin's ?owner=" "$(j '[.agents[] | .owner] | join(",")')" bob

# --- every field's errors -----------------------------------------------------
bad() { # NAME FIELD CODE BODY
	send POST /agents "$A" "$4"
	ok_error "invalid: $1" 400 "$3" "$2"
}
E='"endpoint": "https://x.test/a"'
bad "no agent_id" agent_id missing_field "{\"name\": \"n\", $E}"
bad "agent_id with upper case" agent_id invalid_field "{\"agent_id\": \"Query\", \"name\": \"n\", $E}"
bad "agent_id ending in -" agent_id invalid_field "{\"agent_id\": \"q-\", \"name\": \"n\", $E}"
bad "agent_id with a slash" agent_id invalid_field "{\"agent_id\": \"a/b\", \"name\": \"n\", $E}"
bad "agent_id of 65" agent_id invalid_field "{\"agent_id\": \"$(printf 'a%.0s' $(seq 65))\", \"name\": \"n\", $E}"
bad "agent_id a number" agent_id invalid_field "{\"agent_id\": 7, \"name\": \"n\", $E}"
bad "no name" name missing_field "{\"agent_id\": \"a\", $E}"
bad "empty name" name invalid_field "{\"agent_id\": \"a\", \"name\": \"\", $E}"
bad "no endpoint" endpoint missing_field '{"agent_id": "a", "name": "n"}'
bad "ftp endpoint" endpoint invalid_field '{"agent_id": "a", "name": "n", "endpoint": "ftp://x.test/"}'
bad "endpoint without host" endpoint invalid_field '{"agent_id": "a", "name": "n", "endpoint": "http:///x"}'
bad "endpoint with a space" endpoint invalid_field '{"agent_id": "a", "name": "n", "endpoint": "http://x.test/a b"}'
bad "auth not an object" auth invalid_field "{\"agent_id\": \"a\", \"name\": \"n\", $E, \"auth\": \"bearer\"}"
bad "auth without type" auth.type missing_field "{\"agent_id\": \"a\", \"name\": \"n\", $E, \"auth\": {}}"
bad "auth of an unknown type" auth.type invalid_field "{\"agent_id\": \"a\", \"name\": \"n\", $E, \"auth\": {\"type\": \"oauth\"}}"
bad "bearer without token" auth.token missing_field "{\"agent_id\": \"a\", \"name\": \"n\", $E, \"auth\": {\"type\": \"bearer\"}}"
bad "basic without username" auth.username missing_field "{\"agent_id\": \"a\", \"name\": \"n\", $E, \"auth\": {\"type\": \"basic\", \"password\": \"p\"}}"
bad "basic username with :" auth.username invalid_field "{\"agent_id\": \"a\", \"name\": \"n\", $E, \"auth\": {\"type\": \"basic\", \"username\": \"a:b\", \"password\": \"p\"}}"
bad "hmac with a token" auth.token unknown_field "{\"agent_id\": \"a\", \"name\": \"n\", $E, \"auth\": {\"type\": \"hmac\", \"token\": \"t\"}}"
bad "a token with a newline" auth.token invalid_field "{\"agent_id\": \"a\", \"name\": \"n\", $E, \"auth\": {\"type\": \"bearer\", \"token\": \"a\\nb\"}}"
bad "timeout 0" timeout_ms invalid_field "{\"agent_id\": \"a\", \"name\": \"n\", $E, \"timeout_ms\": 0}"
bad "timeout as text" timeout_ms invalid_field "{\"agent_id\": \"a\", \"name\": \"n\", $E, \"timeout_ms\": \"30s\"}"
bad "timeout 1.5" timeout_ms invalid_field "{\"agent_id\": \"a\", \"name\": \"n\", $E, \"timeout_ms\": 1.5}"
bad "negative concurrency" max_concurrent_requests invalid_field "{\"agent_id\": \"a\", \"name\": \"n\", $E, \"max_concurrent_requests\": -1}"
bad "health without url" health.url missing_field "{\"agent_id\": \"a\", \"name\": \"n\", $E, \"health\": {\"interval_seconds\": 30}}"
bad "health interval 1" health.interval_seconds invalid_field "{\"agent_id\": \"a\", \"name\": \"n\", $E, \"health\": {\"url\": \"http://x.test/h\", \"interval_seconds\": 1}}"
bad "when_unhealthy maybe" health.when_unhealthy invalid_field "{\"agent_id\": \"a\", \"name\": \"n\", $E, \"health\": {\"url\": \"http://x.test/h\", \"when_unhealthy\": \"maybe\"}}"
bad "enabled yes" enabled invalid_field "{\"agent_id\": \"a\", \"name\": \"n\", $E, \"enabled\": \"yes\"}"
bad "an unknown field" colour unknown_field "{\"agent_id\": \"a\", \"name\": \"n\", $E, \"colour\": 1}"
bad "an endpoint on a denied host" endpoint invalid_field '{"agent_id": "a", "name": "n", "endpoint": "http://169.254.169.254/latest"}'
bad "a health URL on a denied host" health.url invalid_field "{\"agent_id\": \"a\", \"name\": \"n\", $E, \"health\": {\"url\": \"http://[fe80::1]/h\"}}"
bad "a schema that is a string" input_schema invalid_field "{\"agent_id\": \"a\", \"name\": \"n\", $E, \"input_schema\": \"object\"}"
bad "a schema keyword not supported" input_schema.properties.x.pattern invalid_field "{\"agent_id\": \"a\", \"name\": \"n\", $E, \"input_schema\": {\"properties\": {\"x\": {\"pattern\": \"^a\"}}}}"
bad "a schema type that does not exist" input_schema.type invalid_field "{\"agent_id\": \"a\", \"name\": \"n\", $E, \"input_schema\": {\"type\": \"text\"}}"
send POST /agents "$A" '{"agent_id": "a", "name": "n",'
ok_error "invalid: not JSON" 400 invalid_json null
send POST /agents "$A" '{"agent_id": "a", "agent_id": "b", "name": "n", "endpoint": "http://x.test/"}'
ok_error "invalid: a member twice" 400 invalid_json null
ok "invalid: nothing was written" "$(sql "SELECT count(*) FROM agents")" 3

# --- patch: secrets kept, fields checked -----------------------------------
send PATCH /agents/query-strategy "$A" '{"description": "refreshes the entity graph", "auth": {"type": "bearer"}}'
ok_status "patch: 200" 200
ok "patch: the description" "$(j .description)" "refreshes the entity graph"
ok "patch: the secret kept when not sent" "$(sql "SELECT auth_secret FROM agents WHERE owner = 'alice' AND agent_id = 'query-strategy'")" "$SECRET"
send PATCH /agents/query-strategy "$A" '{"auth": {"type": "bearer", "token": "***"}}'
ok_status "patch: *** stands for the stored secret" 200
ok "patch: and keeps it" "$(sql "SELECT auth_secret FROM agents WHERE owner = 'alice' AND agent_id = 'query-strategy'")" "$SECRET"
send PATCH /agents/query-strategy "$A" '{"auth": {"type": "basic", "username": "u"}}'
ok_error "patch: a new type needs its secret" 400 missing_field auth.password
send PATCH /agents/query-strategy "$A" '{"agent_id": "other"}'
ok_error "patch: the id cannot change" 400 invalid_field agent_id
send PATCH /agents/query-strategy "$A" '{"timeout_ms": -5}'
ok_error "patch: a bad value" 400 invalid_field timeout_ms
send PATCH /agents/query-strategy "$A" '{"health": null, "input_schema": null, "enabled": false}'
ok "patch: null removes health and schema" "$(j '[.health, .input_schema, .enabled] | map(tostring) | join(",")')" "null,null,false"
send PATCH /agents/query-strategy "$A" '{"enabled": true}'
ok "patch: after a failed patch nothing else changed" "$(sql "SELECT timeout_ms FROM agents WHERE owner = 'alice' AND agent_id = 'query-strategy'")" 30000
call GET /agents/query-strategy "$A"
ok "get: no secret" "$(printf '%s' "$resp" | grep -c "$SECRET")" 0

# --- versions, deploy, promote, rollback ---------------------------------------
ver() { send POST /agents/query-strategy/versions "$A" "{\"version\": \"$1\", \"endpoint\": \"https://agents.example.test/qs/v$1\"}"; }
ver 1.0.0
ok_status "version: 201" 201
ok "version: the answer" "$(j '[.version, .endpoint, (.environments | length)] | map(tostring) | join(",")')" "1.0.0,https://agents.example.test/qs/v1.0.0,0"
ver 1.1.0
ver 2.0.0-rc.1
ok_status "version: a pre-release" 201
ver 1.0.0
ok_error "version: the same again" 409 conflict version
send POST /agents/query-strategy/versions "$A" '{"version": "1.0", "endpoint": "https://x.test/"}'
ok_error "version: not MAJOR.MINOR.PATCH" 400 invalid_field version
send POST /agents/query-strategy/versions "$A" '{"version": "3.0.0", "endpoint": "http://169.254.169.254/v3"}'
ok_error "version: an endpoint on a denied host" 400 invalid_field endpoint
send PATCH /agents/query-strategy "$A" '{"endpoint": "http://0.0.0.0:80/x"}'
ok_error "patch: an endpoint on a denied host" 400 invalid_field endpoint
send POST /agents/query-strategy/versions "$A" '{"version": "3.0.0"}'
ok_error "version: no endpoint" 400 missing_field endpoint
send POST /agents/query-strategy/versions "$A" '{"version": "3.0.0", "endpoint": "https://x.test/", "input_schema": {"oneOf": []}}'
ok_error "version: a schema refused" 400 invalid_field input_schema.oneOf
dep() { send POST "/agents/query-strategy/$1" "$A" "$2"; }
dep deploy '{"version": "1.0.0", "environment": "production"}'
ok_status "deploy: 200" 200
ok "deploy: production runs 1.0.0" "$(j '.deployments.production.version')" 1.0.0
dep deploy '{"version": "1.1.0", "environment": "staging"}'
dep promote '{"from": "staging", "to": "production"}'
ok_status "promote: 200" 200
ok "promote: production runs what staging runs" "$(j '.deployments.production.version')" 1.1.0
ok "promote: logged with who" "$(j '.history[0] | [.action, .environment, .version, .previous, (.by | test("^alice"))] | map(tostring) | join(",")')" "promote,production,1.1.0,1.0.0,true"
dep rollback '{"environment": "production"}'
ok_status "rollback: 200" 200
ok "rollback: back to 1.0.0" "$(j '.deployments.production.version')" 1.0.0
ok "rollback: logged" "$(j '.history[0] | [.action, .version, .previous] | join(",")')" "rollback,1.0.0,1.1.0"
dep rollback '{"environment": "production"}'
ok_error "rollback: nothing before 1.0.0" 409 nothing_to_roll_back environment
dep rollback '{"environment": "development"}'
ok_error "rollback: nothing deployed there" 409 nothing_to_roll_back environment
dep deploy '{"version": "9.9.9", "environment": "production"}'
ok_error "deploy: a version that does not exist" 404 not_found version
dep deploy '{"version": "1.0.0", "environment": "prod"}'
ok_error "deploy: an unknown environment" 400 invalid_field environment
dep deploy '{"version": "1.0.0"}'
ok_error "deploy: no environment" 400 missing_field environment
dep deploy '{"version": "1.0.0", "environment": "staging", "force": true}'
ok_error "deploy: an unknown member" 400 unknown_field force
dep promote '{"from": "development", "to": "production"}'
ok_error "promote: nothing in development" 409 nothing_deployed from
dep promote '{"from": "staging", "to": "staging"}'
ok_error "promote: to itself" 400 invalid_field to
call GET /agents/query-strategy/versions "$A"
ok "versions: newest first, with where each runs" "$(j '[.versions[] | .version + ":" + (.environments | join("+"))] | join(" ")')" "2.0.0-rc.1: 1.1.0:staging 1.0.0:production"
call GET /agents/query-strategy "$A"
ok "get: deployments by environment" "$(j '.deployments | [.production, .staging] | join(",")')" "1.0.0,1.1.0"
call GET /agents/query-strategy/deployments "$A"
ok "deployments: 4 entries in the log" "$(j '.history | length')" 4
ok "deployments: each with a time in ms or s" "$(j '[.history[] | .at | test("^[0-9-]+T[0-9:.]+Z$")] | all')" true

# --- health (no probe yet) --------------------------------------------------------
call GET /agents/signer/health "$A"
ok_status "health: 200" 200
ok "health: nothing probed without a health URL" "$(j '[.url, .healthy, (.probes | length)] | map(tostring) | join(",")')" "null,null,0"

# --- roles and tenants on every route ------------------------------------------------
for route in "GET /agents/query-strategy" "GET /agents/query-strategy/versions" \
	"GET /agents/query-strategy/deployments" "GET /agents/query-strategy/health" \
	"PATCH /agents/query-strategy" "DELETE /agents/query-strategy" \
	"POST /agents/query-strategy/versions" "POST /agents/query-strategy/deploy" \
	"POST /agents/query-strategy/promote" "POST /agents/query-strategy/rollback"; do
	set -- $route
	send "$1" "$2?owner=alice" "$B" '{"enabled": false}'
	ok_error "tenant: bob's $1 $2 of alice's is 404" 404 not_found null
done
for route in "PATCH /agents/query-strategy" "DELETE /agents/query-strategy" \
	"POST /agents/query-strategy/versions" "POST /agents/query-strategy/deploy" \
	"POST /agents/query-strategy/promote" "POST /agents/query-strategy/rollback"; do
	set -- $route
	send "$1" "$2" "$AV" '{"environment": "production"}'
	ok_error "role: alice's viewer may not $1 $2" 403 forbidden null
	send "$1" "/agents/nope${2#/agents/query-strategy}" "$AV" '{}'
	ok_error "role: a viewer's $1 of a missing agent is 404" 404 not_found null
done
send POST /agents "$AV" '{"agent_id": "v", "name": "n", "endpoint": "http://x.test/"}'
ok_error "role: a viewer may not create" 403 forbidden null
send POST "/agents?owner=bob" "$A" '{"agent_id": "v", "name": "n", "endpoint": "http://x.test/"}'
ok_error "tenant: an editor may not create for another owner" 403 forbidden owner
call GET "/agents?owner=bob" "$A"
ok_error "tenant: nor list another owner's" 403 forbidden owner
call GET /agents/query-strategy "$AV"
ok "role: the viewer reads alice's" "$code $(j .name)" "200 Query strategy"
call GET /agents/query-strategy "$B"
ok "tenant: bob's own query-strategy, not alice's" "$(j .endpoint)" "https://bob.test/qs"
call GET "/agents/query-strategy?owner=alice" "$ADM"
ok "tenant: the admin reaches alice's with ?owner=" "$(j .owner)" alice
send POST "/agents?owner=carol" "$ADM" '{"agent_id": "c", "name": "n", "endpoint": "http://x.test/"}'
ok "tenant: the admin creates for another owner" "$code $(j .owner)" "201 carol"
call GET /agents/Bad_Slug "$A"
ok_error "route: a bad slug is 404" 404 not_found null
call GET /agents ""
ok_status "route: no token" 401

# --- delete --------------------------------------------------------------------------
send POST /schedules "$A" '{"name": "uses", "interval_seconds": 3600, "target": {"type": "exec", "argv": ["/bin/true"]}}'
sid=$(j .id)
sql "UPDATE schedules SET status = 'paused', next_run_at = NULL, target = '{\"type\": \"agent\", \"agent\": \"signer\"}' WHERE id = '$sid'" >/dev/null
call DELETE /agents/signer "$A"
ok_error "delete: refused while a schedule targets it" 409 agent_in_use null
sql "DELETE FROM schedules WHERE id = '$sid'" >/dev/null
call DELETE /agents/signer "$A"
ok_status "delete: 204" 204
call GET /agents/signer "$A"
ok_error "delete: gone" 404 not_found null
call DELETE /agents/query-strategy "$A"
ok "delete: versions, deployments and log go with it" "$(sql "SELECT (SELECT count(*) FROM agent_versions WHERE owner = 'alice') + (SELECT count(*) FROM agent_deployments WHERE owner = 'alice') + (SELECT count(*) FROM agent_deploy_log WHERE owner = 'alice')")" 0

# --- secrets never in the logs ----------------------------------------------------------
ok "logs: no secret in any log" "$(cat "$work"/*.log | grep -c -e "$SECRET" -e "$HSECRET")" 0

api_finish
summary api_agents
