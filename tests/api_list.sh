#!/bin/sh
# api_list.sh: GET /schedules reads each schedule's kept document
# (021_schedule_doc.sql) and writes its state around it without building
# it (issue 22); this proves that every item is exactly what GET
# /schedules/{id} shows, which still builds it: for schedules of every
# kind and target, secrets (masked for a viewer, shown to an editor),
# names in other scripts and quotes, instants with and without
# milliseconds, state moved by real runs, a pause, a PATCH, an apply, and
# a document column written by hand (the kept document forgotten, the
# item built as before); and pages joined by the cursor are the list.
# Usage: api_list.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"
A=$CV_TOKEN_ALICE_EDITOR
V=$CV_TOKEN_ALICE_VIEWER

mk() {
	send POST /schedules "$A" "$1"
	[ "$code" = 201 ] || echo "create: $code $resp" >&2
	j .id
}
s1=$(mk '{"name": "cron in Berlin", "cron": "30 2 * * *", "timezone": "Europe/Berlin", "description": "quotes \" and \\\\ and \u00e9\u4e2d"}')
s2=$(mk "{\"name\": \"once, ms\", \"kind\": \"once\", \"at\": \"$(at_in 86400 | sed 's/Z$/.250Z/')\"}")
s3=$(mk "{\"name\": \"http secrets\", \"interval_seconds\": 86400, \"target\": {\"type\": \"http\", \"url\": \"$CV_STATIC_URL\", \"headers\": {\"Authorization\": \"Bearer sekrit\"}}}")
s4=$(mk '{"name": "exec env", "interval_seconds": 86400, "max_retries": 0, "target": {"type": "exec", "argv": ["/bin/true"], "env": {"TOKEN": "t0p"}}}')
s5=$(mk '{"name": "redis pw", "interval_seconds": 86400, "target": {"type": "redis", "url": "redis://user:pw@127.0.0.1:1/0", "command": "publish", "key": "k"}}')
s6=$(mk '{"repeat": "repeating", "interval": 86400000, "name": "seed spelling", "workflowId": "wf-1", "workflowEntityId": "n1", "organizationId": "org-1", "timeout": 30000, "retryConfig": {"maxRetries": 2, "backoff": "linear", "delay": 2000}, "trigger_payload": {"b": 1, "a": [true, null, 1.5]}}')
s7=$(mk '{"name": "runs", "interval_seconds": 1, "target": {"type": "exec", "argv": ["/bin/true"]}}')
wait_for 20 "SELECT run_count >= 2 FROM schedules WHERE id = '$s7'"
call POST "/schedules/$s7/pause" "$A"
wait_for 10 "SELECT running = 0 FROM schedules WHERE id = '$s7'"
send PATCH "/schedules/$s4" "$A" '{"description": "patched", "max_retries": 2}'
ok "every write keeps the document" \
	"$(sql "SELECT count(*) FROM schedules WHERE doc_text IS NULL")" 0
ok "a masked copy only where there are secrets to mask (3 of 7)" \
	"$(sql "SELECT count(*) FROM schedules WHERE doc_masked IS NOT NULL")" 3
sql "UPDATE schedules SET description = 'by hand' WHERE id = '$s1'" >/dev/null
ok "a document column written by hand forgets it" \
	"$(sql "SELECT (doc_text IS NULL)::text || (doc_masked IS NULL)::text FROM schedules WHERE id = '$s1'")" truetrue
ok "a state write by the supervisor keeps it" \
	"$(sql "SELECT doc_text IS NOT NULL FROM schedules WHERE id = '$s7'")" t
ok "the kept document holds no state" \
	"$(sql "SELECT count(*) FROM schedules WHERE doc_text ~ '\"(status|run_count|id|owner)\"'")" 0

# same TOKEN: every item of the list equals GET /schedules/ID, byte for
# byte once keys are sorted.
same() {
	call GET "/schedules?limit=100" "$1"
	printf '%s' "$resp" >"$tmp/list.json"
	n=$(jq '.schedules | length' "$tmp/list.json")
	bad=0
	for id in $(jq -r '.schedules[].id' "$tmp/list.json"); do
		call GET "/schedules/$id" "$1"
		a=$(printf '%s' "$resp" | jq -cS 'del(.next_fire_times)')
		b=$(jq -cS --arg id "$id" '.schedules[] | select(.id == $id)' "$tmp/list.json")
		if [ "$a" != "$b" ]; then
			bad=$((bad + 1))
			echo "differs: $id" >&2
			echo "  get:  $a" >&2
			echo "  list: $b" >&2
		fi
	done
	echo "$n $bad"
}
ok "an editor's list is what GET shows, item by item" "$(same "$A")" "7 0"
ok "a viewer's list is what GET shows, item by item" "$(same "$V")" "7 0"
ok "the viewer's list masks the secrets" \
	"$(jq -r '[.schedules[] | .target.headers.Authorization, .target.env.TOKEN, .target.url] | map(select(. != null)) | join(" ")' "$tmp/list.json" | grep -c -e sekrit -e t0p -e ':pw@')" 0
call GET "/schedules?limit=100" "$A"
ok "the editor's shows them" "$(printf '%s' "$resp" | grep -c -e 'Bearer sekrit')" 1
ok "an instant with milliseconds keeps them" "$(j ".schedules[] | select(.id == \"$s2\") | .at" | grep -c '\.250Z$')" 1
ok "the run counts and last run come from the state" \
	"$(j ".schedules[] | select(.id == \"$s7\") | [.status, (.run_count >= 2), (.last_run_at != null)] | map(tostring) | join(\",\")")" "paused,true,true"
ok "the row written by hand shows its new value" "$(j ".schedules[] | select(.id == \"$s1\") | .description")" "by hand"

# pages by the cursor: the same schedules, in the same order
call GET "/schedules?limit=100" "$A"
all=$(j '[.schedules[].id] | join(" ")')
got="" cur=""
for i in 1 2 3 4 5; do
	call GET "/schedules?limit=2${cur:+&cursor=$cur}" "$A"
	got="$got $(j '[.schedules[].id] | join(" ")')"
	cur=$(j '.next_cursor // empty')
	[ -z "$cur" ] && break
done
ok "pages of 2 joined by the cursor are the list" "$(echo $got)" "$all"

api_finish
summary api_list
