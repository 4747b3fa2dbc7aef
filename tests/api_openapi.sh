#!/bin/sh
# api_openapi.sh: the OpenAPI description (api/openapi.json, GET
# /api/v1/openapi.json) against the running API: served without a token
# through nginx, byte for byte the file; every route of api/route.c's
# table there with its method and its least role (x-cronvisor-role), and
# nothing there that the table lacks; every error code the code can answer
# (api_error() and the documents' checks in api/ and common/) in its
# Error schema; every field of the answers of the running API (a schedule,
# a run, an execution, a job, an agent, a version, deployments, health
# probes, a pipeline, a data source, a preview, health, the overview) in
# its schema; and the document valid by a standard validator
# (@seriousme/openapi-schema-validator from npm, at the version
# tests/openapi/package-lock.json pins).
# Usage: api_openapi.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"
src=$(cd "$here/.." && pwd)
doc=$src/api/openapi.json
A=$CV_TOKEN_ALICE_EDITOR
ADM=$CV_TOKEN_ADMIN

# --- served --------------------------------------------------------------------
call GET /openapi.json ""
ok "GET /openapi.json without a token: 200" "$code" 200
ok "it is the file" "$(printf '%s' "$resp" | jq -S . | cmp -s - "$(jq -S . "$doc" >"$tmp/doc.json"; echo "$tmp/doc.json")" && echo same)" same
ok "as JSON" "$(tr -d '\r' <"$tmp/headers" | grep -i '^content-type:' | cut -d' ' -f2)" application/json
call GET "/openapi.json?x=1" ""
ok_error "an unknown parameter" 400 invalid_query x

# --- routes -------------------------------------------------------------------------
# the table: METHOD PATTERN ROLE (a route without a token: none)
sed -n '/^static const struct route route_table\[\] = {/,/^};/p' "$src/api/route.c" |
	tr -d '\n' | sed 's/},/}\n/g' |
	sed -n 's/.*{"\([A-Z]*\)", "\([^"]*\)",[[:space:]]*[a-z_]*,[[:space:]]*\([01]\),[[:space:]]*ROLE_\([A-Z]*\).*/\1 \2 \3 \4/p' |
	awk '{ print tolower($1), $2, ($3 == 0 ? "none" : tolower($4)) }' | sort >"$tmp/table"
ok "the route table read ($(wc -l <"$tmp/table") routes)" "$(($(wc -l <"$tmp/table") >= 45))" 1
jq -r '.paths | to_entries[] | select(.key != "/metrics") | .key as $p | .value | to_entries[] |
	select(.key | test("^(get|post|put|patch|delete)$")) |
	"\(.key) \($p) \(.value["x-cronvisor-role"] // "none")"' "$doc" | sort >"$tmp/documented"
ok "every route documented, with its role" "$(comm -23 "$tmp/table" "$tmp/documented" | tr '\n' ';')" ""
ok "nothing documented that is no route" "$(comm -13 "$tmp/table" "$tmp/documented" | tr '\n' ';')" ""
ok "GET /metrics documented at the root" "$(jq -r '.paths["/metrics"].servers[0].url + " " + (.paths["/metrics"].get.responses | has("200") | tostring)' "$doc")" "/ true"

# --- error codes ---------------------------------------------------------------------------
grep -ohE 'api_error\([a-z>-]*rs, [0-9]+, "[a-z_]+"' "$src"/api/*.c | sed 's/.*"\([a-z_]*\)"$/\1/' >"$tmp/codes"
grep -ohE '(doc_fail|ds_fail|pipe_fail|agent_fail|fail)\([a-z]+, "[a-z_]+"' "$src"/common/*.c | sed 's/.*"\([a-z_]*\)"$/\1/' >>"$tmp/codes"
sort -u "$tmp/codes" -o "$tmp/codes"
jq -r '.components.schemas.Error.properties.error.properties.code.enum[]' "$doc" | sort -u >"$tmp/enum"
ok "error codes found in the code ($(wc -l <"$tmp/codes"))" "$(($(wc -l <"$tmp/codes") >= 25))" 1
ok "every error code documented" "$(comm -23 "$tmp/codes" "$tmp/enum" | tr '\n' ' ')" ""

# --- the fields of the answers ---------------------------------------------------------------
# fields OBJECT-JSON SCHEMA: the keys of the object its schema lacks.
fields() {
	printf '%s' "$1" | jq -r 'keys[]' | sort >"$tmp/keys"
	jq -r --arg s "$2" '.components.schemas[$s].properties | keys[]' "$doc" | sort >"$tmp/props"
	comm -23 "$tmp/keys" "$tmp/props" | tr '\n' ' '
}
stub_agent_up
send POST /agents "$A" "{\"agent_id\": \"oa\", \"name\": \"OA\", \"endpoint\": \"$AURL/ok\"}"
agent=$resp
send POST /agents/oa/versions "$A" "{\"version\": \"1.0.0\", \"endpoint\": \"$AURL/ok\"}"
version=$resp
send POST /agents/oa/deploy "$A" '{"version": "1.0.0", "environment": "staging"}'
deploy=$resp
send POST /pipelines "$A" '{"pipeline_id": "op", "name": "OP", "steps": [{"step_id": "a", "agent_id": "oa"}]}'
pipe=$resp
send POST /data-sources "$ADM" '{"name": "oas", "relation": "pg_class", "key": "oid", "columns": ["oid"]}'
dsrc=$resp
send POST /schedules "$A" '{"name": "oa", "interval_seconds": 1, "max_retries": 0, "target": {"type": "agent", "agent": "oa"}}'
sid=$(j .id)
wait_for 20 "SELECT count(*) >= 1 FROM runs WHERE schedule_id = '$sid' AND status = 'succeeded'"
call POST "/schedules/$sid/pause" "$A"
call GET "/schedules/$sid" "$A"
ok "a schedule's fields" "$(fields "$resp" Schedule)" ""
call GET "/schedules/$sid/runs?limit=1" "$A"
ok "a run's fields" "$(fields "$(j '.runs[0]')" Run)" ""
call GET "/executions?schedule_id=$sid&limit=1" "$A"
xid=$(j '.executions[0].id')
call GET "/executions/$xid" "$A"
ok "an execution's fields" "$(fields "$resp" Execution)" ""
call GET "/executions/$xid/jobs" "$A"
ok "a job's fields" "$(fields "$(j '.jobs[0]')" Job)" ""
ok "an agent's fields" "$(fields "$agent" Agent)" ""
ok "a version's fields" "$(fields "$version" AgentVersion)" ""
ok "deployments' fields" "$(fields "$deploy" Deployments)" ""
call GET /agents/oa/health "$A"
ok "health probes' fields" "$(fields "$resp" AgentHealth)" ""
ok "a pipeline's fields" "$(fields "$pipe" Pipeline)" ""
ok "a data source's fields" "$(fields "$dsrc" DataSource)" ""
call POST "/schedules/$sid/preview" "$A"
ok "a preview's fields" "$(fields "$resp" Preview)" ""
call GET /health ""
ok "health's fields" "$(fields "$resp" Health)" ""
call GET /overview "$ADM"
ok "an overview's fields" "$(fields "$resp" Overview)" ""
call GET /schedules/nope "$A"
ok "an error's fields" "$(fields "$resp" Error)" ""

# --- a standard validator ----------------------------------------------------------------------
cp "$src/tests/openapi/package.json" "$src/tests/openapi/package-lock.json" \
	"$src/tests/openapi/validate.mjs" "$tmp/"
(cd "$tmp" && timeout 300 npm ci --no-audit --no-fund >"$work/npm.log" 2>&1)
ok "npm ci of the validator" "$?" 0
ok "valid OpenAPI 3.1" "$(node "$tmp/validate.mjs" "$doc" 2>&1)" "valid OpenAPI 3.1"

api_finish
summary api_openapi
