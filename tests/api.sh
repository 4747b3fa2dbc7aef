#!/bin/sh
# api.sh: the REST API (docs/api.md) through the whole stack of
# tests/api-harness.sh: curl → nginx with packaging/nginx/cronvisor.conf →
# FastCGI → cronvisor-api → PostgreSQL, with the real cronvisord running
# what the API schedules.  Checks: validation refusals (each status, code
# and field, and nothing changed), seed 000's body, the CRUD lifecycle with
# previews, filters and cursor paging, pause/resume states, error shapes
# (401, 404, 405), batch delete all-or-nothing, trigger-now, run history of
# exec targets that succeed, fail and time out and of a receiver schedule,
# and the API as its own process (a busy socket refused, SIGTERM, its own
# body limit).  Tenant isolation is tests/api_tenants.sh.
# Usage: api.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"
A=$CV_TOKEN_ALICE_EDITOR
far='"kind": "cron", "cron": "0 0 1 1 *"'
tgt='"target": {"type": "exec", "argv": ["/bin/true"]}'

# --- validation: every refusal changes nothing ---------------------------
send POST /schedules "$A" "{\"name\": \"v\", $far, $tgt}"
ok_status "validation: base schedule created" 201
v=$(j .id)
vupd=$(j .updated_at)
before=$(snap)
# refused NAME STATUS CODE FIELD BODY [CONTENT-TYPE]: POST BODY is refused
# as stated, and no row changed.
refused() {
	send POST /schedules "$A" "$5" "${6:-application/json}"
	ok_error "$1" "$2" "$3" "$4"
	ok "$1: nothing changed" "$(snap)" "$before"
}
refused "interval_seconds 0" 400 invalid_field interval_seconds \
	"{\"name\": \"x\", \"interval_seconds\": 0, $tgt}"
refused "interval_seconds -5" 400 invalid_field interval_seconds \
	"{\"name\": \"x\", \"interval_seconds\": -5, $tgt}"
refused "max_retries -1" 400 invalid_field max_retries \
	"{\"name\": \"x\", \"interval_seconds\": 60, \"max_retries\": -1, $tgt}"
refused "cron 61 * * * *" 400 invalid_field cron \
	"{\"name\": \"x\", \"kind\": \"cron\", \"cron\": \"61 * * * *\", $tgt}"
refused "unknown zone" 400 invalid_field timezone \
	"{\"name\": \"x\", $far, \"timezone\": \"Mars/Olympus_Mons\", $tgt}"
refused "unknown field" 400 unknown_field colour \
	"{\"name\": \"x\", $far, \"colour\": \"red\", $tgt}"
refused "duplicate key" 400 invalid_json null \
	"{\"name\": \"x\", \"name\": \"y\", $far, $tgt}"
refused "wrong type interval_seconds \"5\"" 400 invalid_field interval_seconds \
	"{\"name\": \"x\", \"interval_seconds\": \"5\", $tgt}"
refused "missing name" 400 missing_field name "{$far, $tgt}"
refused "malformed JSON" 400 invalid_json null "{\"name\": \"x\", $far"
refused "trailing garbage" 400 invalid_json null "{\"name\": \"x\", $far, $tgt} x"
refused "empty body" 400 invalid_json null ""
printf '{"name": "bad \377\376 bytes", "kind": "cron", "cron": "0 0 1 1 *", "target": {"type": "exec", "argv": ["/bin/true"]}}' >"$tmp/notutf8"
refused "non-UTF-8 bytes" 400 invalid_json null "@$tmp/notutf8"
refused "content type text/plain" 415 unsupported_media_type null \
	"{\"name\": \"x\", $far, $tgt}" text/plain
# 2 MB, past nginx's client_max_body_size 1m: nginx's own 413, which the
# snippet gives the API's error shape.
{
	printf '{"name": "big", "kind": "cron", "cron": "0 0 1 1 *", "description": "'
	head -c 2000000 /dev/zero | tr '\0' a
	printf '"}'
} >"$tmp/big"
refused "2 MB body (nginx)" 413 payload_too_large null "@$tmp/big"
# The same refusals on PATCH leave the row as it was.
for b in '{"interval_seconds": 0}' '{"colour": 1}' '{"cron": "61 * * * *"}' \
	'{"max_retries": -1}' '{"timezone": "Nowhere/Land"}'; do
	send PATCH "/schedules/$v" "$A" "$b"
	ok "PATCH $b: 400" "$code" 400
	ok "PATCH $b: nothing changed" "$(snap)" "$before"
done
call GET "/schedules/$v" "$A"
ok "refused PATCHes kept updated_at" "$(j .updated_at)" "$vupd"

# --- seed 000's body exactly ---------------------------------------------
call POST /schedules/ "$A" -H 'Content-Type: application/json' --data-binary \
	'{"name": "Daily report", "workflow_id": 1, "trigger_node_id": "trigger_schedule_abc123", "interval_seconds": 86400, "total_repeats": 0, "max_retries": 3, "timeout_seconds": 600, "trigger_payload": {"report_type": "daily"}}'
ok_status "seed 000 body: 201" 201
ok "seed 000: fields" "$(j '[.name, .kind, .interval_seconds, .workflow_id, .trigger_node_id, .trigger_payload.report_type, .owner, .status, (.next_run_at != null)] | map(tostring) | join(",")')" \
	"Daily report,interval,86400,1,trigger_schedule_abc123,daily,alice,active,true"
seed=$(j .id)

# --- CRUD -----------------------------------------------------------------
send POST /schedules "$A" "{\"name\": \"crud\", $far, \"max_retries\": 5, $tgt}"
ok_status "create: 201" 201
id=$(j .id)
ok "create: next_run_at is next New Year" "$(j .next_run_at)" "$(($(date -u +%Y) + 1))-01-01T00:00:00Z"
ok "create: an id" "$(j '.id | length > 0')" "true"
call GET "/schedules/$id" "$A"
ok_status "get: 200" 200
ok "get: document" "$(j '[.name, .cron, .timezone, .max_retries, .status, (.next_fire_times | length)] | map(tostring) | join(",")')" \
	"crud,0 0 1 1 *,UTC,5,active,5"
call GET "/schedules/$id/" "$A"
ok_status "get with trailing slash: 200" 200
call GET "/schedules/$id?preview=3" "$A"
ok "get ?preview=3: three fire times with utc/local/note" \
	"$(j '[(.next_fire_times | length), (.next_fire_times[0] | [has("utc"), has("local"), has("note")] | map(tostring) | join(" "))] | map(tostring) | join(",")')" \
	"3,true true true"
y=$(date -u +%Y)
# The names are checked above; these check the values.
ok "preview: next Januaries" "$(j '[.next_fire_times[] | .utc | .[0:10]] | join(" ")')" \
	"$((y + 1))-01-01 $((y + 2))-01-01 $((y + 3))-01-01"
call GET "/schedules/$id?preview=101" "$A"
ok_error "preview=101" 400 invalid_query preview

# PATCH: the name, then the timing (next_run_at computed again).
send PATCH "/schedules/$id" "$A" '{"name": "crud-renamed"}'
ok_status "patch name: 200" 200
ok "patch name: changed, timing kept" "$(j '[.name, .cron] | join(",")')" "crud-renamed,0 0 1 1 *"
send PATCH "/schedules/$id" "$A" '{"kind": "interval", "interval_seconds": 7200, "cron": null}'
ok_status "patch timing: 200" 200
nra=$(date -u -d "$(j .next_run_at)" +%s 2>/dev/null || echo 0)
d=$((nra - $(date +%s)))
ok "patch timing: next_run_at within the next 2 h" "$([ "$d" -ge -5 ] && [ "$d" -le 7205 ] && echo yes || echo "no ($d s)")" yes
send PATCH "/schedules/$id" "$A" '{"max_retries": null, "timezone": null}'
ok_status "patch null: 200" 200
ok "patch null: defaults back" "$(j '[.max_retries, .timezone] | map(tostring) | join(",")')" "3,UTC"
# timeout_seconds: the configured default (900 in this harness), whether
# left out of a create or set back to null
ok "create without a timeout: default_timeout_seconds" "$(j .timeout_seconds)" 900
send PATCH "/schedules/$id" "$A" '{"timeout_seconds": 60}'
ok "patch timeout" "$code $(j .timeout_seconds)" "200 60"
send PATCH "/schedules/$id" "$A" '{"timeout_seconds": null}'
ok "patch timeout null: default_timeout_seconds" "$code $(j .timeout_seconds)" "200 900"

# List: filters, and limit + cursor paging covering every row once.
for i in 1 2 3 4 5 6 7; do
	send POST /schedules/ "$A" "{\"name\": \"page-$i\", \"workflow_id\": $((40 + i % 2)), $far, $tgt}"
	[ "$code" = 201 ] || ok "create page-$i" "$code $resp" 201
	[ $i = 3 ] && p3=$(j .id)
done
call POST "/schedules/$p3/pause" "$A"
mine="owner = 'alice' AND deleted_at IS NULL"
call GET /schedules "$A"
ok_status "list: 200" 200
ok "list: all of alice's" "$(j '[.schedules[].id] | sort | join(" ")')" \
	"$(sql "SELECT string_agg(id::text, ' ' ORDER BY id::text) FROM schedules WHERE $mine")"
ok "list: next_cursor null on the last page" "$(j .next_cursor)" null
call GET /schedules/ "$A"
ok_status "list with trailing slash: 200" 200
lf() { # lf NAME QUERY SQL-CONDITION: the filter gives exactly those rows
	call GET "/schedules?$2" "$A"
	ok "list $1" "$code $(j '[.schedules[].id] | sort | join(" ")')" \
		"200 $(sql "SELECT string_agg(id::text, ' ' ORDER BY id::text) FROM schedules WHERE $mine AND $3")"
}
lf "status=paused" status=paused "status = 'paused'"
lf "status=active" status=active "status = 'active'"
lf "kind=cron" kind=cron "kind = 'cron'"
lf "kind=interval" kind=interval "kind = 'interval'"
lf "workflow_id=41" workflow_id=41 "workflow_id = '41'"
lf "name=page-" name=page- "name LIKE 'page-%'"
lf "name=page- & workflow_id=40 & status=active" "name=page-&workflow_id=40&status=active" \
	"name LIKE 'page-%' AND workflow_id = '40' AND status = 'active'"
call GET "/schedules?colour=red" "$A"
ok_error "list ?colour=red" 400 invalid_query colour
call GET "/schedules?limit=0" "$A"
ok_error "list ?limit=0" 400 invalid_query limit
call GET "/schedules?limit=501" "$A"
ok_error "list ?limit=501" 400 invalid_query limit
call GET "/schedules?status=sleeping" "$A"
ok_error "list ?status=sleeping" 400 invalid_query status
all="" pages=0 q="limit=3"
while [ $pages -lt 20 ]; do
	call GET "/schedules?$q" "$A"
	[ "$code" = 200 ] || break
	pages=$((pages + 1))
	all="$all $(j '.schedules[].id')"
	ok "paging: page $pages has at most 3" "$(j '.schedules | length <= 3')" true
	cur=$(j .next_cursor)
	[ "$cur" = null ] && break
	q="limit=3&cursor=$(printf '%s' "$cur" | jq -sRr @uri)"
done
total=$(sql "SELECT count(*) FROM schedules WHERE $mine")
ok "paging: pages of 3" "$pages" "$(((total + 2) / 3))"
ok "paging: every row once, oldest first" "$(echo $all)" \
	"$(sql "SELECT string_agg(id::text, ' ' ORDER BY created_at, id) FROM schedules WHERE $mine")"

# DELETE, then it is gone.
call DELETE "/schedules/$id" "$A"
ok_status "delete: 204" 204
ok "delete: no body" "$resp" ""
call GET "/schedules/$id" "$A"
ok_error "get after delete" 404 not_found null
call DELETE "/schedules/$id/" "$A"
ok_error "delete again (trailing slash)" 404 not_found null

# --- Idempotency-Key: a create sent again gets the first one's schedule --
idem_doc="{\"name\": \"idem\", $far, $tgt}"
send POST /schedules "$A" "$idem_doc" application/json -H 'Idempotency-Key: idem-1'
ok_status "idempotent create: 201" 201
idem_id=$(j .id)
send POST /schedules "$A" "$idem_doc" application/json -H 'Idempotency-Key: idem-1'
ok_status "idempotent create again: 201" 201
ok "idempotent create again: the first schedule" "$(j .id)" "$idem_id"
ok "idempotent create again: one row" "$(sql "SELECT count(*) FROM schedules WHERE name = 'idem'")" 1
ok "idempotent create: the key is not in the reply" "$(j 'has("idempotency_key") or has("idempotency_hash")')" false
send POST /schedules "$A" "{\"name\": \"idem-other\", $far, $tgt}" application/json -H 'Idempotency-Key: idem-1'
ok_error "same key, another body" 422 idempotency_conflict Idempotency-Key
ok "same key, another body: nothing written" "$(sql "SELECT count(*) FROM schedules WHERE name = 'idem-other'")" 0
# The key is the owner's: Bob's idem-1 is a schedule of his own.
send POST /schedules "$CV_TOKEN_BOB_EDITOR" "$idem_doc" application/json -H 'Idempotency-Key: idem-1'
ok_status "another owner's same key: 201" 201
ok "another owner's same key: a new schedule" "$([ "$(j .id)" != "$idem_id" ] && j .owner)" bob
# Checked before the document: a once schedule's instant may have passed.
send POST /schedules "$A" "{\"name\": \"idem\", $far, $tgt, \"bogus\": 1}" application/json -H 'Idempotency-Key: idem-2'
ok_error "idempotent create, bad document" 400 unknown_field bogus
ok "bad document: no key kept" "$(sql "SELECT count(*) FROM schedules WHERE idempotency_key = 'idem-2'")" 0
send POST /schedules "$A" "$idem_doc" application/json -H "Idempotency-Key: $(printf 'k%.0s' $(seq 256))"
ok_error "key of 256 characters" 400 invalid_header Idempotency-Key
send POST /schedules "$A" "$idem_doc" application/json -H "$(printf 'Idempotency-Key: a\tb')"
ok_error "key with a tab" 400 invalid_header Idempotency-Key
printf '{"name": "idem-\377"}' >"$tmp/latin1"
send POST /schedules "$A" "@$tmp/latin1" application/json -H 'Idempotency-Key: idem-3'
ok_error "idempotent create, body not UTF-8" 400 invalid_json null
# Several at once with one key: one schedule, every reply 201 with its id.
for i in 1 2 3 4 5 6; do
	curl -sS -o "$tmp/par-$i" -w '%{http_code}\n' -X POST -H "Authorization: Bearer $A" \
		-H 'Content-Type: application/json' -H 'Idempotency-Key: idem-par' \
		--data-binary "{\"name\": \"idem-par\", $far, $tgt}" "$CV_API_URL/schedules" >"$tmp/par-code-$i" &
done
wait
ok "parallel creates of one key: all 201" "$(cat "$tmp"/par-code-* | sort -u | tr '\n' ' ')" "201 "
ok "parallel creates of one key: one id" "$(cat "$tmp"/par-[1-6] | jq -r .id | sort -u | wc -l)" 1
ok "parallel creates of one key: one row" "$(sql "SELECT count(*) FROM schedules WHERE name = 'idem-par'")" 1
call DELETE "/schedules/$idem_id" "$A"
ok_status "delete the key's schedule: 204" 204
# The key lives as long as its schedule: once that is gone, it is free.
send POST /schedules "$A" "$idem_doc" application/json -H 'Idempotency-Key: idem-1'
ok_status "the key's schedule deleted: a new one" 201
ok "the key's schedule deleted: another id" "$([ "$(j .id)" != "$idem_id" ] && echo yes)" yes

# --- pause / resume -------------------------------------------------------
tb=$(date +%s)
send POST /schedules "$A" "{\"name\": \"pr\", \"interval_seconds\": 3600, $tgt}"
# The first slot is one interval after the second in which the API
# computed it: between the request's sending and the row's created_at.
nx=$(date -u -d "$(j .next_run_at)" +%s)
ok "interval: first run one interval after creation ($tb, $nx, $(j .created_at))" \
	"$([ "$nx" -ge $((tb + 3600)) ] && [ "$nx" -le $(($(date -u -d "$(j .created_at)" +%s) + 3600)) ] && echo yes)" yes
pr=$(j .id)
call GET "/schedules/$pr?preview=2" "$A"
ok "interval preview: first fire time is next_run_at, then one interval on" \
	"$(j '[.next_fire_times[] | .utc] | join(" ")')" \
	"$(j .next_run_at) $(date -u -d "@$(($(date -u -d "$(j .next_run_at)" +%s) + 3600))" +%Y-%m-%dT%H:%M:%SZ)"
call POST "/schedules/$pr/pause" "$A"
ok_status "pause: 200" 200
ok "pause: paused, next_run_at cleared" "$(j '[.status, .next_run_at] | map(tostring) | join(",")')" "paused,null"
before=$(snap)
call POST "/schedules/$pr/pause" "$A"
ok_error "pause of paused" 400 invalid_state status
ok "pause of paused: nothing changed" "$(snap)" "$before"
call POST "/schedules/$pr/resume" "$A"
ok_status "resume: 200" 200
ok "resume: active, next_run_at set" "$(j '[.status, (.next_run_at != null)] | map(tostring) | join(",")')" "active,true"
nra=$(date -u -d "$(j .next_run_at)" +%s 2>/dev/null || echo 0)
d=$((nra - $(date +%s)))
ok "resume: next run one interval on" "$([ "$d" -ge 3590 ] && [ "$d" -le 3605 ] && echo yes || echo "no ($d s)")" yes
before=$(snap)
call POST "/schedules/$pr/resume/" "$A"
ok_error "resume of active" 400 invalid_state status
ok "resume of active: nothing changed" "$(snap)" "$before"

# --- errors ---------------------------------------------------------------
call GET /schedules ""
ok_error "no token" 401 unauthorized null
call GET /schedules "cvt_not_a_token"
ok_error "bad token" 401 unauthorized null
call GET /schedules "" -H 'Authorization: Basic YWxpY2U6eA=='
ok_error "Basic instead of Bearer" 401 unauthorized null
call GET /nope "$A"
ok_error "unknown route" 404 not_found null
call GET "/schedules/$seed/nope" "$A"
ok_error "unknown sub-route" 404 not_found null
call GET /schedules/00000000-0000-4000-8000-000000000000 "$A"
ok_error "unknown id" 404 not_found null
call GET /schedules/not-a-uuid "$A"
ok_error "malformed id" 404 not_found null
call GET /runs/sched-00000000-n0-rc0 "$A"
ok_error "unknown run" 404 not_found null
call PUT /schedules "$A" -H 'Content-Type: application/json' --data-binary '{}'
ok_error "PUT /schedules" 405 method_not_allowed null
ok "405: Allow header" "$(tr -d '\r' <"$tmp/headers" | sed -n 's/^[Aa]llow: *//p' | tr -d ' ')" "GET,POST"
call DELETE /schedules "$A"
ok_error "DELETE /schedules" 405 method_not_allowed null
call GET /health ""
ok_status "health without a token: 200" 200
ok "health: database ok, our supervisor alive" \
	"$(j '[.status, .database, ([.supervisors[] | select(.name == "api-harness" and .alive)] | length)] | map(tostring) | join(",")')" \
	"ok,ok,1"

# --- batch delete ---------------------------------------------------------
ids=""
for i in 1 2 3; do
	send POST /schedules "$A" "{\"name\": \"bd-$i\", $far, $tgt}"
	ids="$ids $(j .id)"
done
set -- $ids
before=$(snap)
send POST /schedules/batch-delete "$A" "{\"ids\": [\"$1\", \"$2\", \"00000000-0000-4000-8000-000000000000\", \"$3\"]}"
ok_error "batch-delete with an unknown id" 404 not_found "ids[2]"
ok "batch-delete with an unknown id: nothing deleted" "$(snap)" "$before"
send POST /schedules/batch-delete "$A" '{"ids": []}'
ok_error "batch-delete of no ids" 400 invalid_field ids
send POST /schedules/batch-delete "$A" "{\"ids\": [\"$1\", \"$2\", \"$3\"]}"
ok_status "batch-delete: 200" 200
ok "batch-delete: reports the ids" "$(j '[.count, (.deleted | sort | join(" "))] | map(tostring) | join(",")')" \
	"3,$(printf '%s\n' "$1" "$2" "$3" | sort | tr '\n' ' ' | sed 's/ $//')"
call GET "/schedules/$2" "$A"
ok_error "batch-deleted schedule" 404 not_found null

# --- trigger now, run history ---------------------------------------------
send POST /schedules "$A" "{\"name\": \"trig\", $far, \"target\": {\"type\": \"exec\", \"argv\": [\"/bin/echo\", \"triggered\"]}}"
tr=$(j .id)
call POST "/schedules/$tr/trigger" "$A"
ok_status "trigger: 202" 202
run=$(j .run_id)
ok "trigger: run_id and schedule_id" "$(j '[(.run_id | length > 0), .schedule_id] | map(tostring) | join(",")')" "true,$tr"
wait_api 20 '.status == "succeeded"' "/runs/$run" "$A"
ok "trigger: the supervisor ran it" "$code $(j '[.status, .exit_code, .output, .schedule_id] | map(tostring) | join(",")')" \
	"200 succeeded,0,triggered
,$tr"
call GET "/schedules/$tr" "$A"
ok "trigger: counters did not move, status kept" "$(j '[.status, .current_repeat, .current_retry] | map(tostring) | join(",")')" "active,0,0"

# --- Idempotency-Key on trigger: sent again, the first answer, no second run
send POST /schedules "$A" "{\"name\": \"ktrig\", $far, \"target\": {\"type\": \"exec\", \"argv\": [\"/bin/true\"]}}"
ktr=$(j .id)
ktrig() { # ktrig TOKEN SCHEDULE KEY [BODY]: a trigger with that key
	send POST "/schedules/$2/trigger" "$1" "${4:-}" application/json -H "Idempotency-Key: $3"
}
ktrig "$A" "$ktr" tk-1 '{"payload": {"n": 1}}'
ok_status "keyed trigger: 202" 202
first=$(j '[.run_id, .trigger_id, .requested_at] | map(tostring) | join(",")')
ktrig "$A" "$ktr" tk-1 '{"payload": {"n": 1}}'
ok_status "keyed trigger again: 202" 202
ok "keyed trigger again: the first answer" "$(j '[.run_id, .trigger_id, .requested_at] | map(tostring) | join(",")')" "$first"
wait_api 20 '.status == "succeeded"' "/runs/$(echo "$first" | cut -d, -f1)" "$A"
ok "keyed trigger: its run ran" "$code $(j .status)" "200 succeeded"
ok "keyed trigger: one run, no request pending" "$(sql "SELECT (SELECT count(*) FROM runs WHERE schedule_id = '$ktr' AND triggered)
	+ (SELECT count(*) FROM triggers WHERE schedule_id = '$ktr')")" 1
before=$(snap)
ktrig "$A" "$ktr" tk-1 '{"payload": {"n": 2}}'
ok_error "same trigger key, another body" 422 idempotency_conflict Idempotency-Key
ktrig "$A" "$tr" tk-1 '{"payload": {"n": 1}}'
ok_error "same trigger key, another schedule" 422 idempotency_conflict Idempotency-Key
ktrig "$CV_TOKEN_BOB_EDITOR" "$ktr" tk-1 '{"payload": {"n": 1}}'
ok_error "another requester's key: alice's schedule is not found" 404 not_found null
ktrig "$A" "$ktr" "$(printf 'k%.0s' $(seq 256))"
ok_error "trigger key of 256 characters" 400 invalid_header Idempotency-Key
ok "refused keyed triggers: nothing changed" "$(snap)" "$before"
# A key is forgotten after a day: the same request triggers again.  The
# supervisor is stopped meanwhile, so that its heartbeat cannot remove the
# expired rows first: the trigger itself takes its key's row over.
ktrig "$A" "$ktr" tk-old
ok_status "keyed trigger tk-old: 202" 202
ktrig "$A" "$ktr" tk-2 '{"payload": {"n": 1}}'
ok_status "keyed trigger tk-2: 202" 202
kill -STOP "$CV_SUPERVISOR_PID"
sql "UPDATE trigger_keys SET created_at = created_at - interval '25 hours' WHERE key IN ('tk-1', 'tk-old', 'tk-2')" >/dev/null
ktrig "$A" "$ktr" tk-1 '{"payload": {"n": 1}}'
ok_status "keyed trigger a day later: 202" 202
ok "keyed trigger a day later: a new trigger" "$([ "$(j .trigger_id)" != "$(echo "$first" | cut -d, -f2)" ] && echo new)" new
ok "keyed trigger a day later: the key's row taken over" "$(sql "SELECT count(*), min(trigger_id) = $(j .trigger_id),
	min(created_at) > now() - interval '1 minute' FROM trigger_keys WHERE key = 'tk-1'")" "1|t|t"
ok "keyed trigger a day later: another expired key left to the supervisor" \
	"$(sql "SELECT count(*) FROM trigger_keys WHERE key = 'tk-old'")" 1
# an expired key may come back for another schedule and body: it is new
ktrig "$A" "$tr" tk-2 '{"payload": {"n": 3}}'
ok_status "expired key, another schedule and body: 202" 202
t2=$(j '[.schedule_id, .trigger_id] | map(tostring) | join(",")')
ok "expired key, another schedule and body: a trigger of that schedule" "$(echo "$t2" | cut -d, -f1)" "$tr"
ktrig "$A" "$tr" tk-2 '{"payload": {"n": 3}}'
ok "expired key taken over: sent again, the new answer" "$code $(j '[.schedule_id, .trigger_id] | map(tostring) | join(",")')" "202 $t2"
ktrig "$A" "$ktr" tk-2 '{"payload": {"n": 1}}'
ok_error "expired key taken over: its first use is a conflict now" 422 idempotency_conflict Idempotency-Key
# An expired key nobody sends again goes at the supervisor's next heartbeat
# (1 s here), with no request to the API.
kill -CONT "$CV_SUPERVISOR_PID"
wait_for 10 "SELECT count(*) = 0 FROM trigger_keys WHERE key = 'tk-old'"
ok "expired key removed by the supervisor's heartbeat" "$?" 0
ok "a fresh key stays" "$(sql "SELECT count(*) FROM trigger_keys WHERE key = 'tk-1'")" 1
# An expired key's row held by another transaction (as an API request
# taking it over or deleting its schedule holds it) is skipped, not waited
# for: the other expired key still goes, and the held one after.
# The holder ages the keys and takes the lock on one connection, right
# after each other: a heartbeat between the two (1 s apart here) would
# remove tk-h1 before it is held.
ktrig "$A" "$ktr" tk-h1
ktrig "$A" "$ktr" tk-h2
mkfifo "$tmp/hold" || exit 1
psql "$base dbname=$name" -X -q -v ON_ERROR_STOP=1 <"$tmp/hold" >/dev/null 2>&1 &
holder=$!
exec 8>"$tmp/hold"
echo "UPDATE trigger_keys SET created_at = created_at - interval '25 hours' WHERE key IN ('tk-h1', 'tk-h2');
BEGIN; SELECT FROM trigger_keys WHERE key = 'tk-h1' FOR UPDATE;" >&8
wait_for 10 "SELECT count(*) = 1 FROM pg_stat_activity WHERE state = 'idle in transaction'
	AND query LIKE 'SELECT FROM trigger_keys%'"
ok "held key: its row locked" "$?" 0
wait_for 10 "SELECT count(*) = 0 FROM trigger_keys WHERE key = 'tk-h2'"
ok "held key: the other expired key removed meanwhile" "$?" 0
ok "held key: kept while held" "$(sql "SELECT count(*) FROM trigger_keys WHERE key = 'tk-h1'")" 1
echo "COMMIT;" >&8
exec 8>&-
wait "$holder"
wait_for 10 "SELECT count(*) = 0 FROM trigger_keys WHERE key = 'tk-h1'"
ok "held key: removed once let go" "$?" 0
# Two requests of one key at once, both held at the statement that takes
# the key (the triggers table locked by a session of this test) and let go
# together: one trigger, and both are answered with it.
tcount() {
	sql "SELECT (SELECT count(*) FROM runs WHERE schedule_id = '$ktr' AND triggered)
		+ (SELECT count(*) FROM triggers WHERE schedule_id = '$ktr')"
}
t0=$(tcount)
mkfifo "$tmp/lock" || exit 1
psql "$base dbname=$name" -X -q -v ON_ERROR_STOP=1 <"$tmp/lock" >/dev/null 2>&1 &
locker=$!
exec 8>"$tmp/lock"
echo "BEGIN; LOCK TABLE triggers IN SHARE MODE;" >&8
wait_for 10 "SELECT count(*) = 1 FROM pg_locks WHERE relation = 'triggers'::regclass
	AND mode = 'ShareLock' AND granted"
for i in 1 2; do
	curl -sS -o "$tmp/kt$i" --max-time 20 -X POST -H "Authorization: Bearer $A" \
		-H 'Idempotency-Key: tk-race' "$CV_API_URL/schedules/$ktr/trigger" &
done
wait_for 10 "SELECT count(*) = 2 FROM pg_stat_activity WHERE wait_event_type = 'Lock'
	AND query LIKE 'WITH k AS%INSERT INTO trigger_keys%'"
held=$?
echo "COMMIT;" >&8
exec 8>&-
wait
ok "one key at once: both held at the insert" "$held" 0
ok "one key at once: both answered with one trigger" "$(jq -r '.trigger_id | type' "$tmp/kt1"):$(
	[ "$(jq -r .trigger_id "$tmp/kt1")" = "$(jq -r .trigger_id "$tmp/kt2")" ] && echo same)" "number:same"
ok "one key at once: one trigger" "$(($(tcount) - t0))" 1
# Deleting the schedule forgets its keys at once, even while it waits for
# a run in flight to go.
call DELETE "/schedules/$ktr" "$A"
ok "keys of a deleted schedule: gone" "$code $(sql "SELECT count(*) FROM trigger_keys WHERE schedule_id = '$ktr'")" "204 0"
ktrig "$A" "$ktr" tk-race
ok_error "keyed trigger of a deleted schedule" 404 not_found null

exec_doc() { # exec_doc NAME EXTRA CMD: a one-shot in 2 s running sh -c CMD
	printf '{"name": "%s", "kind": "once", "at": "%s", %s "target": {"type": "exec", "argv": ["/bin/sh", "-c", "%s"]}}' \
		"$1" "$(at_in 2)" "$2" "$3"
}
send POST /schedules "$A" "$(exec_doc good '' 'echo fine')"
good=$(j .id)
send POST /schedules "$A" "$(exec_doc bad '"max_retries": 0,' 'echo oops >&2; exit 3')"
bad=$(j .id)
send POST /schedules "$A" "$(exec_doc slow '"max_retries": 0, "timeout_seconds": 1,' 'echo started; sleep 30')"
slow=$(j .id)
nrecv=$(grep -c '^POST /receiver 200 .*application/json' "$CV_RECEIVER_LOG")
send POST /schedules "$A" "{\"name\": \"recv\", \"kind\": \"once\", \"at\": \"$(at_in 2)\", \"workflow_id\": 7, \"trigger_node_id\": \"n7\", \"max_retries\": 0}"
recv=$(j .id)
ok_status "receiver schedule (no target): 201" 201
wait_api 20 '.status == "done"' "/schedules/$good" "$A"
ok "exec success: schedule done" "$(j .status)" done
wait_api 20 '.status == "dead"' "/schedules/$bad" "$A"
ok "exec exit 3: schedule dead" "$(j '[.status, .error_count] | map(tostring) | join(",")')" "dead,1"
wait_api 20 '.status == "dead"' "/schedules/$slow" "$A"
ok "exec timeout: schedule dead" "$(j .status)" dead
wait_api 20 '.status == "done"' "/schedules/$recv" "$A"
ok "receiver: schedule done" "$(j .status)" done
# hist SCHEDULE: its runs, as "status exit_code http_status output" lines
hist() {
	call GET "/schedules/$1/runs" "$A"
	[ "$code" = 200 ] || { echo "HTTP $code $resp"; return; }
	j '.runs[] | [.status, .exit_code, .http_status, (.output // "" | rtrimstr("\n"))] | map(tostring) | join(" ")'
}
ok "runs of success" "$(hist "$good")" "succeeded 0 null fine"
ok "runs of exit 3" "$(hist "$bad")" "failed 3 null oops"
ok "runs of timeout" "$(hist "$slow")" "timed_out null null started"
ok "runs of receiver" "$(hist "$recv")" 'succeeded null 200 {"ok": true}'

# A new timing while a retry runs (next_run_at NULL, a run in flight)
# leaves what comes next to the end of that run: no slot starts beside the
# retry chain (none is skipped), and the chain goes on to its end.  The
# same for a resume while a run is in flight.
send POST /schedules "$A" '{"name": "retrying", "interval_seconds": 3600, "max_retries": 2, "backoff": "fixed", "retry_delay_seconds": 1, "start_at": "'"$(at_in 1)"'", "target": {"type": "exec", "argv": ["/bin/sh", "-c", "sleep 2; exit 1"]}}'
rt=$(j .id)
wait_api 20 '.runs | any(.attempt == 1 and .status == "running")' "/schedules/$rt/runs" "$A"
ok "retry in flight" "$code $(j '[.runs[] | select(.status == "running") | .attempt] | map(tostring) | join(",")')" "200 1"
send PATCH "/schedules/$rt" "$A" '{"start_at": "'"$(at_in 1)"'"}'
ok "PATCH of the timing during a retry: 200, nothing due yet" "$code $(j .next_run_at)" "200 null"
wait_api 25 '.status == "dead"' "/schedules/$rt" "$A"
ok "the retry chain ran to its end" "$(j '[.status, .error_count] | map(tostring) | join(",")')" "dead,3"
call GET "/schedules/$rt/runs" "$A"
ok "no slot started beside the retry chain" "$(j '[.runs[] | "\(.attempt):\(.status)"] | reverse | join(",")')" \
	"0:failed,1:failed,2:failed"

send POST /schedules "$A" '{"name": "paused-while-running", "interval_seconds": 3600, "start_at": "'"$(at_in 1)"'", "anchor": "completion", "overlap": "allow", "target": {"type": "exec", "argv": ["/bin/sh", "-c", "sleep 3"]}}'
pr=$(j .id)
wait_api 20 '.runs_in_flight == 1' "/schedules/$pr" "$A"
call POST "/schedules/$pr/pause" "$A"
call POST "/schedules/$pr/resume" "$A"
ok "resume with a run in flight: active, nothing due until it ends" "$code $(j '[.status, .next_run_at] | map(tostring) | join(",")')" "200 active,null"
wait_api 20 '.runs_in_flight == 0 and .next_run_at != null' "/schedules/$pr" "$A"
ok "its end scheduled the next run one interval later" "$(j '[.current_repeat, .runs_in_flight] | map(tostring) | join(",")')" "1,0"
call GET "/schedules/$pr/runs" "$A"
ok "one run only, no overlap" "$(j '.runs | length')" 1
call GET "/schedules/$bad/runs" "$A"
r=$(j '.runs[0].id')
call GET "/runs/$r" "$A"
ok "GET /runs/{id}: the failed run" "$code $(j '[.id, .schedule_id, .status, .exit_code, .attempt] | map(tostring) | join(",")')" \
	"200 $r,$bad,failed,3,0"
ok "GET /runs/{id}: every documented field" "$(j '[\"id\",\"schedule_id\",\"repeat_number\",\"attempt\",\"slot_at\",\"status\",\"started_at\",\"finished_at\",\"duration_ms\",\"exit_code\",\"signal\",\"http_status\",\"output\",\"error\",\"supervisor\",\"note\"] - keys | join(",")')" ""
call GET "/schedules/$slow/runs" "$A"
call GET "/runs/$(j '.runs[0].id')" "$A"
ok "GET /runs/{id}: the timed-out run" "$(j '[.status, (.duration_ms < 5000)] | map(tostring) | join(",")')" "timed_out,true"
call GET "/schedules/$bad/runs?status=failed&limit=1" "$A"
ok "runs ?status=failed&limit=1" "$code $(j '.runs | length')" "200 1"
ok "receiver got the event, as JSON" "$(grep -c '^POST /receiver 200 .*application/json' "$CV_RECEIVER_LOG")" $((nrecv + 1))
call POST "/schedules/$good/pause" "$A"
ok_error "pause of done" 400 invalid_state status

# --- the API is a process of its own --------------------------------------
# A second server on the same socket refuses, and the first keeps serving.
"$CRONVISOR_API" -f "$CV_CONF" >"$work/api2.log" 2>&1 </dev/null &
p2=$!
extra="$extra $p2"
if ! wait_gone 5 "$p2"; then
	ok "second API on a busy socket: refused within 5 s" running exited
	kill -KILL "$p2"
	wait "$p2" 2>/dev/null
else
	wait "$p2"
	ok "second API on a busy socket: exits non-zero" "$([ $? -ne 0 ] && echo yes)" yes
fi
extra=""
call GET "/schedules/$seed" "$A"
ok "first API still serves" "$code $(kill -0 "$CV_API_PID" 2>/dev/null && echo alive)" "200 alive"
# SIGTERM: gone within 2 s (the harness started it: its exit status is
# checked below on one this script starts).
kill -TERM "$CV_API_PID"
wait_gone 2 "$CV_API_PID"
ok "SIGTERM: the API exits within 2 s" "$?" 0
call GET /health ""
ok_error "no API: nginx answers 503 in the API's shape" 503 unavailable null
ok "no API: with Retry-After" "$(grep -ci '^Retry-After: 1' "$tmp/headers")" 1
# A new server with a 1 KiB body limit (the lowest): its own 413.
CRONVISOR_API_MAX_BODY_BYTES=1024 "$CRONVISOR_API" -f "$CV_CONF" \
	>>"$work/api3.log" 2>&1 </dev/null &
p3=$!
extra="$extra $p3"
wait_until 10 api_healthy
ok "restarted API serves within 10 s" "$?" 0
before=$(snap)
printf '{"name": "big", %s, "description": "%s"}' "$far" "$(head -c 2000 /dev/zero | tr '\0' a)" >"$tmp/2k"
send POST /schedules "$A" "@$tmp/2k"
ok_error "2 KB body over api_max_body_bytes 1024" 413 payload_too_large null
ok "2 KB body: nothing changed" "$(snap)" "$before"
kill -TERM "$p3"
if ! wait_gone 2 "$p3"; then
	ok "SIGTERM: exit 0 within 2 s" running "exit 0"
else
	wait "$p3"
	ok "SIGTERM: exit 0 within 2 s" "exit $?" "exit 0"
fi
extra=""
ok "supervisor unharmed" "$(kill -0 "$CV_SUPERVISOR_PID" 2>/dev/null && echo alive)" alive

api_finish
summary api
