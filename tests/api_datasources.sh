#!/bin/sh
# api_datasources.sh: the tables data-source strings may read and the
# preview of a string (docs/orchestration.md, "Fan-out"), through the
# whole stack of tests/api-harness.sh (curl → nginx → cronvisor-api →
# PostgreSQL).  Checks: only an admin registers; the database is asked
# whether the relation and each column exist and whether the read-only
# role may read them, and every refusal names the member and writes
# nothing; owners see only the registrations given to them; a preview
# counts, samples and plans the batches of the seed's strings, refuses
# unregistered columns, unknown operators and hostile strings (which
# change nothing), and runs as the read-only role, in a time limit, under
# the row limit.
# Usage: api_datasources.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
CV_HARNESS_CONF="datasource_timeout_ms = 1000
datasource_row_limit = 20
fanout_batch_size = 6
fanout_stagger_ms = 250"
export CV_HARNESS_CONF
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"
A=$CV_TOKEN_ALICE_EDITOR
AV=$CV_TOKEN_ALICE_VIEWER
B=$CV_TOKEN_BOB_EDITOR
ADM=$CV_TOKEN_ADMIN

# 25 tickers: T01..T25, the odd ones enabled, active 1 for the first ten,
# created one day apart from 2024-01-01; and AAPL, enabled.
sql "CREATE TABLE ticker (id text PRIMARY KEY, enabled boolean, active int,
	status text, created_at timestamptz, secret text);
     INSERT INTO ticker SELECT 'T' || lpad(g::text, 2, '0'), g % 2 = 1,
	CASE WHEN g <= 10 THEN 1 ELSE 0 END, CASE WHEN g % 3 = 0 THEN 'halted' ELSE 'active' END,
	timestamptz '2024-01-01 00:00:00+00' + (g - 1) * interval '1 day', 'hush'
     FROM generate_series(1, 25) g;
     INSERT INTO ticker VALUES ('AAPL', true, 1, 'active', '2023-06-01', 'hush');
     GRANT SELECT (id, enabled, active, status, created_at) ON ticker TO cronvisor_reader;
     CREATE VIEW slow AS SELECT id, pg_sleep(0.2) IS NULL AS z FROM ticker;
     GRANT SELECT ON slow TO cronvisor_reader" >/dev/null

# --- registration: an admin's, checked against the database ----------------
REG='{"name": "ticker", "relation": "public.ticker", "key": "id",
	"columns": ["id", "enabled", "active", "status", {"name": "createdAt", "column": "created_at"}]}'
send POST /data-sources "$A" "$REG"
ok_error "register: an editor may not" 403 forbidden null
send POST /data-sources "$ADM" "$REG"
ok_status "register: an admin, 201" 201
ok "register: what the database said" "$(j '[.name, .relation, .key, (.columns | map(.name + ":" + .type) | join(" ")), (.owners | length)] | map(tostring) | join(",")')" \
	"ticker,public.ticker,id,id:text enabled:boolean active:integer status:text createdAt:timestamp with time zone,0"
ok "register: no quoted name shown" "$(j '[.columns[] | has("sql")] | any')" false
bad() { # NAME FIELD CODE BODY [MESSAGE-PART]
	send POST /data-sources "$ADM" "$4"
	ok_error "register refused: $1" 400 "$3" "$2"
	[ $# -lt 5 ] || ok "register refused: $1: says $5" "$(j '.error.message' | grep -c -F -- "$5")" 1
}
bad "no such relation" relation invalid_field '{"name": "x", "relation": "nope", "key": "id", "columns": ["id"]}' 'no table or view "nope"'
bad "SQL as the relation" relation invalid_field '{"name": "x", "relation": "ticker; DROP TABLE ticker", "key": "id", "columns": ["id"]}'
bad "a quoted relation" relation invalid_field '{"name": "x", "relation": "\"ticker\"", "key": "id", "columns": ["id"]}'
bad "a sequence is no table" relation invalid_field '{"name": "x", "relation": "pg_catalog.pg_class_oid_index", "key": "id", "columns": ["id"]}' "not a table or a view"
bad "a column that is not there" "columns[1]" invalid_field '{"name": "x", "relation": "ticker", "key": "id", "columns": ["id", "colour"]}' 'has no column "colour"'
bad "a column the role may not read" "columns[1]" invalid_field '{"name": "x", "relation": "ticker", "key": "id", "columns": ["id", "secret"]}' "GRANT SELECT (secret) ON public.ticker TO cronvisor_reader"
bad "a key not registered" key invalid_field '{"name": "x", "relation": "ticker", "key": "status", "columns": ["id"]}'
bad "a name twice" "columns[1]" invalid_field '{"name": "x", "relation": "ticker", "key": "id", "columns": ["id", {"name": "id", "column": "status"}]}'
bad "a bad name" name invalid_field '{"name": "x-y", "relation": "ticker", "key": "id", "columns": ["id"]}'
bad "no columns" columns invalid_field '{"name": "x", "relation": "ticker", "key": "id", "columns": []}'
bad "an unknown member" colour unknown_field '{"name": "x", "relation": "ticker", "key": "id", "columns": ["id"], "colour": 1}'
bad "an owner of nothing" "owners[0]" invalid_field '{"name": "x", "relation": "ticker", "key": "id", "columns": ["id"], "owners": [""]}'
send POST /data-sources "$ADM" "$REG"
ok_error "register: the same name again" 409 conflict name
ok "register: nothing else written" "$(sql "SELECT count(*) FROM data_sources")" 1
send POST /data-sources "$ADM" '{"name": "alices", "relation": "ticker", "key": "id", "columns": ["id"], "owners": ["alice"]}'
ok_status "register: one for alice only" 201
send POST /data-sources "$ADM" '{"name": "slow", "relation": "slow", "key": "id", "columns": ["id"]}'
ok_status "register: a slow view" 201

# --- who sees which ------------------------------------------------------------
call GET /data-sources "$AV"
ok "list: alice's viewer sees both" "$(j '[.data_sources[].name] | join(",")')" "alices,slow,ticker"
call GET /data-sources "$B"
ok "list: bob does not see alice's" "$(j '[.data_sources[].name] | join(",")')" "slow,ticker"
call GET /data-sources/alices "$B"
ok_error "get: alice's is 404 to bob" 404 not_found null
call GET /data-sources/ticker "$B"
ok_status "get: a shared one" 200

# --- previews --------------------------------------------------------------------
pv() { send POST /data-sources/preview "$1" "$(jq -cn --arg s "$2" '{source: $s}')"; }
pv "$AV" 'db:ticker:all:id?enabled=true&batchSize=4&staggerDelay=500'
ok_status "preview: the seed's string, 200" 200
ok "preview: 14 enabled tickers (AAPL too) in 4 batches 500 ms apart" \
	"$(j '[.count, .over_limit, .batch_size, .stagger_ms, .batches, (.plan | map((.offset_ms | tostring) + "/" + (.jobs | tostring)) | join(" "))] | map(tostring) | join(",")')" \
	"14,false,4,500,4,0/4 500/4 1000/4 1500/2"
ok "preview: the values in key order" "$(j '.sample[:3] | join(",")')" "AAPL,T01,T03"
pv "$AV" 'db:ticker:AAPL:id'
ok "preview: one value, the configured batch and stagger" "$(j '[.count, (.sample | join(",")), .batch_size, .stagger_ms] | map(tostring) | join(",")')" "1,AAPL,6,250"
pv "$AV" 'db:ticker:NOPE:id'
ok "preview: a value with no row, none" "$(j .count)" 0
pv "$AV" 'db:ticker:all:id?enabled=true&active=1'
ok "preview: two equalities" "$(j '.sample | join(",")')" "AAPL,T01,T03,T05,T07,T09"
pv "$AV" 'db:ticker:all:id?filter={"enabled":true,"status":"active","createdAt":{"$gte":"2024-01-10"}}'
ok "preview: the seed's JSON filter" "$(j '.sample | join(",")')" "T11,T13,T17,T19,T23,T25"
pv "$AV" 'db:ticker:all:createdAt?filter={"id":{"$in":["T01","T02"]}}'
ok "preview: any column's values, typed" "$(j '.sample | join(",")')" "2024-01-01T00:00:00+00:00,2024-01-02T00:00:00+00:00"
pv "$AV" 'db:ticker:all:active?filter={"$or":[{"id":"T01"},{"$not":{"active":{"$lte":0}}}]}'
ok "preview: numbers stay numbers" "$(j '[.count, (.sample[0] | type)] | map(tostring) | join(",")')" "11,number"
pv "$AV" 'db:ticker:all:id'
ok "preview: over the row limit (20 of 26)" "$(j '[.count, .over_limit, .limit] | map(tostring) | join(",")')" "20,true,20"
perr() { # NAME TOKEN SOURCE CODE [MESSAGE-PART]
	pv "$2" "$3"
	ok_error "preview refused: $1" 400 "$4" source
	[ $# -lt 5 ] || ok "preview refused: $1: says $5" "$(j '.error.message' | grep -c -F -- "$5")" 1
}
perr "an unregistered column" "$AV" 'db:ticker:all:secret' invalid_field 'field "secret": not a registered column'
perr "an unregistered filter column" "$AV" 'db:ticker:all:id?secret=hush' invalid_field '"secret" is not a registered column'
perr "an unknown operator" "$AV" 'db:ticker:all:id?filter={"id":{"$regex":"^T"}}' invalid_field 'unknown operator "$regex"'
perr "an unregistered table" "$AV" 'db:pg_authid:all:rolname' invalid_field 'table "pg_authid" is not registered'
perr "another owner's table" "$B" 'db:alices:all:id' invalid_field 'table "alices" is not registered'
perr "a malformed string" "$AV" 'db:ticker:all' invalid_field "expected db:<table>:<filter>:<field>"
perr "SQL in the table" "$AV" 'db:ticker;DROP TABLE ticker:all:id' invalid_field "table"
perr "SQL in the field" "$AV" 'db:ticker:all:id);DROP TABLE ticker;--' invalid_field "field"
perr "a bad batchSize" "$AV" 'db:ticker:all:id?batchSize=0' invalid_field "batchSize"
perr "too deep" "$AV" "db:ticker:all:id?filter=$(printf '{"$not":%.0s' $(seq 9))"'{"id":"a"}'"$(printf '}%.0s' $(seq 9))" invalid_field "nested deeper"
for s in "db:ticker:x') OR 1=1; DROP TABLE ticker; --:id" \
	'db:ticker:all:id?status=active%27%3B%20DROP%20TABLE%20ticker%3B--' \
	'db:ticker:all:id?filter={"status":"\u0027; DELETE FROM ticker; --"}'; do
	pv "$AV" "$s"
	ok_status "preview: hostile values are only values ($s)" 200
	ok "preview: and match nothing ($s)" "$(j .count)" 0
done
ok "preview: the table is whole" "$(sql "SELECT count(*) FROM ticker")" 26
send POST /data-sources/preview "$AV" '{"source": "db:ticker:all:id", "x": 1}'
ok_error "preview: a member that is not source" 400 invalid_field source

# --- it runs as the read-only role, within the time limit -----------------------------
sql "REVOKE SELECT (status) ON ticker FROM cronvisor_reader" >/dev/null
pv "$AV" 'db:ticker:all:status'
ok_error "preview: a grant revoked since" 400 source_failed source
ok "preview: says the role may not read it" "$(j '.error.message' | grep -c 'permission denied')" 1
pv "$AV" 'db:slow:all:id'
ok_error "preview: a query past datasource_timeout_ms" 400 source_failed source
ok "preview: says it timed out" "$(j '.error.message' | grep -c 'statement timeout')" 1
call GET /data-sources "$AV"
ok_status "after the failures the API still answers" 200

# --- a schedule's next firing --------------------------------------------------------------
send POST /agents "$A" '{"agent_id": "qs", "name": "qs", "endpoint": "https://agents.example.test/qs"}'
SCHED='{"name": "fan", "kind": "interval", "interval_seconds": 3600,
	"target": {"type": "agent", "agent": "qs",
	  "params": {"tickerId": "db:ticker:all:id?enabled=true&batchSize=5&staggerDelay=1000", "refresh": true}}}'
send POST /schedules/preview "$AV" "$SCHED"
ok_status "schedule preview (unsaved): 200" 200
ok "schedule preview: the param, its values and batches" \
	"$(j '[.param, .count, .batches, (.plan | map(.jobs | tostring) | join("+"))] | map(tostring) | join(",")')" "tickerId,14,3,5+5+4"
ok "schedule preview: batch 0 starts at the first firing, each 1 s after" \
	"$(j '[(.plan[0].starts_at == .first_fire), ((.plan[2].starts_at | sub("[.][0-9]+Z$"; "Z") | fromdate) - (.first_fire | sub("[.][0-9]+Z$"; "Z") | fromdate))] | map(tostring) | join(",")')" "true,2"
send POST /schedules/preview "$AV" '{"name": "two", "kind": "interval", "interval_seconds": 60,
	"target": {"type": "agent", "agent": "qs", "params": {"a": "db:ticker:all:id", "b": "db:ticker:all:status"}}}'
ok_error "schedule preview: two data-source params" 400 invalid_field null
ok "schedule preview: says which" "$(j '.error.message' | grep -c 'a and b are both data-source strings')" 1
send POST /schedules/preview "$AV" '{"name": "plain", "kind": "interval", "interval_seconds": 60,
	"target": {"type": "agent", "agent": "qs", "params": {"a": 1}}}'
ok "schedule preview: nothing to expand, one job" "$(j '[.param, .jobs] | map(tostring) | join(",")')" "null,1"
send POST /schedules/preview "$AV" '{"name": "bad", "kind": "interval", "interval_seconds": 60,
	"target": {"type": "agent", "agent": "qs", "params": {"t": "db:ticker:all:secret"}}}'
ok_error "schedule preview: a refused string names the param" 400 invalid_field target.params.t
send POST /schedules/preview "$AV" '{"name": "bad", "kind": "interval"}'
ok_error "schedule preview: a bad schedule" 400 missing_field interval_seconds
send POST /schedules "$A" "$SCHED"
ok_status "schedule: saved" 201
sid=$(j .id)
next=$(j .next_run_at)
send POST "/schedules/$sid/preview" "$AV" ""
ok "schedule preview (saved): its next firing" "$(j '[.count, .first_fire] | map(tostring) | join(",")')" "14,$next"
send POST "/schedules/$sid/preview" "$B" ""
ok_error "schedule preview (saved): another owner's is 404" 404 not_found null
ok "schedule preview: nothing was created" "$(sql "SELECT count(*) FROM executions")" 0

# --- a schedule is checked when saved ----------------------------------------------------------
# save NAME PARAMS: a schedule of alice's whose agent target has PARAMS.
save() {
	send POST /schedules "$A" "{\"name\": \"$1\", \"kind\": \"interval\", \"interval_seconds\": 3600, \"target\": {\"type\": \"agent\", \"agent\": \"qs\", \"params\": $2}}"
}
n0=$(sql "SELECT count(*) FROM schedules")
save unreg '{"t": "db:nope:all:id"}'
ok_error "save: an unregistered table" 400 invalid_field target.params.t
ok "save: says which" "$(j .error.message)" 'table "nope" is not registered'
save col '{"t": "db:ticker:all:secret"}'
ok_error "save: an unregistered column" 400 invalid_field target.params.t
save op '{"t": "db:ticker:all:id?filter={\"id\":{\"$regex\":\"T\"}}"}'
ok_error "save: an unknown operator" 400 invalid_field target.params.t
save type '{"t": "db:ticker:all:id?enabled=maybe"}'
ok_error "save: a bad value type" 400 source_failed target.params.t
ok "save: the database's reason" "$(j .error.message | grep -c 'invalid input syntax for type boolean')" 1
save date '{"t": "db:ticker:all:id?filter={\"createdAt\":{\"$gte\":\"yesterday-ish\"}}"}'
ok_error "save: a bad date" 400 source_failed target.params.t
save malformed '{"t": "db:ticker:all"}'
ok_error "save: a malformed string" 400 invalid_field target.params.t
save sqli '{"t": "db:ticker;DROP TABLE ticker:all:id"}'
ok_error "save: SQL as the table" 400 invalid_field target.params.t
save two '{"a": "db:ticker:all:id", "b": "db:ticker:all:status"}'
ok_error "save: two data-source params" 400 invalid_field null
send POST /agents "$B" '{"agent_id": "qs", "name": "qs", "endpoint": "https://agents.example.test/qs"}'
send POST /schedules "$B" '{"name": "bobs", "kind": "interval", "interval_seconds": 3600, "target": {"type": "agent", "agent": "qs", "params": {"t": "db:alices:all:id"}}}'
ok_error "save: another owner's registration is not registered" 400 invalid_field target.params.t
ok "save: nothing was saved" "$(sql "SELECT count(*) FROM schedules")" "$n0"
send POST /schedules "$A" "$SCHED"
pid=$(j .id)
send PATCH "/schedules/$pid" "$A" '{"target": {"type": "agent", "agent": "qs", "params": {"t": "db:ticker:all:secret"}}}'
ok_error "save: a PATCH is checked too" 400 invalid_field target.params.t
call GET "/schedules/$pid" "$A"
ok "save: the PATCH changed nothing" "$(j .target.params.tickerId)" 'db:ticker:all:id?enabled=true&batchSize=5&staggerDelay=1000'
send PATCH "/schedules/$pid" "$A" '{"target": {"type": "agent", "agent": "qs", "params": {"t": "db:ticker:all:id?active=1"}}}'
ok_status "save: a good PATCH" 200
# the read-only role could not have written it: the check's savepoint
# gave the transaction its own role back
ok "save: written in the same transaction as the check" "$(j .target.params.t)" 'db:ticker:all:id?active=1'

# --- cronvisorctl data-sources ----------------------------------------------------------
ctl=$3
asv() { env CRONVISOR_URL="$CRONVISOR_URL" CRONVISOR_TOKEN="$AV" "$ctl" "$@"; }
out=$(asv data-sources preview 'db:ticker:all:id?enabled=true&batchSize=4&staggerDelay=500' 2>&1)
ok "cli: preview counts" "$(printf '%s\n' "$out" | sed -n 1p | tr -s ' ')" "values: 14"
ok "cli: preview's batches" "$(printf '%s\n' "$out" | grep -c '^[0-3] ')" 4
out=$(asv data-sources list 2>&1)
ok "cli: list" "$(printf '%s\n' "$out" | awk 'NR > 1 {print $1}' | tr '\n' ' ')" "alices slow ticker "
out=$(asv data-sources show ticker 2>&1)
ok "cli: show's columns and types" "$(printf '%s\n' "$out" | grep '^createdAt ' | tr -s ' ')" "createdAt created_at timestamp with time zone"
out=$(asv data-sources preview 'db:ticker:all:secret' 2>&1)
ok "cli: a refusal names the field, exit 1" "$?:$(printf '%s' "$out" | grep -c 'not a registered column.*(field: source)')" "1:1"
out=$(asv schedules preview "$sid" 2>&1)
ok "cli: schedules preview ID" "$(printf '%s\n' "$out" | sed -n '1p;3p' | tr -s ' ' | tr '\n' '|')" "param: tickerId|values: 14|"
ok "cli: schedules preview's batches start at" "$(printf '%s\n' "$out" | grep -c '^[0-2] .*Z$')" 3
printf '%s' "$SCHED" >"$tmp/sched.json"
out=$(asv schedules preview --file "$tmp/sched.json" 2>&1)
ok "cli: schedules preview --file" "$(printf '%s\n' "$out" | sed -n 3p | tr -s ' ')" "values: 14"
out=$(asv schedules preview 2>&1)
ok "cli: schedules preview needs one of them" "$?:$(printf '%s' "$out" | grep -c 'a schedule id or --file')" "2:1"
printf '{"name": "again", "relation": "ticker", "key": "id", "columns": ["id"]}' >"$tmp/reg.json"
out=$(asv data-sources create --file "$tmp/reg.json" 2>&1)
ok "cli: a viewer may not register" "$(printf '%s' "$out" | grep -c 'may not do this')" 1
out=$(env CRONVISOR_URL="$CRONVISOR_URL" CRONVISOR_TOKEN="$ADM" "$ctl" data-sources create --file "$tmp/reg.json" 2>&1)
ok "cli: an admin registers" "$(printf '%s\n' "$out" | grep '^name:' | tr -s ' ')" "name: again"
out=$(env CRONVISOR_URL="$CRONVISOR_URL" CRONVISOR_TOKEN="$ADM" "$ctl" data-sources delete again 2>&1)
ok "cli: and deletes" "$out" "deleted data source again"

# --- delete ------------------------------------------------------------------------
call DELETE /data-sources/ticker "$A"
ok_error "delete: an editor may not" 403 forbidden null
call DELETE /data-sources/ticker "$ADM"
ok_status "delete: an admin, 204" 204
call DELETE /data-sources/ticker "$ADM"
ok_error "delete: again, 404" 404 not_found null
pv "$AV" 'db:ticker:all:id'
ok_error "preview: no longer registered" 400 invalid_field source

api_finish
summary api_datasources
