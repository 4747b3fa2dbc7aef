#!/bin/sh
# api_review.sh: findings of the security review (issue 17, part 5) at the
# API, through the whole stack of tests/api-harness.sh:
#  1. numbers that would not come back from PostgreSQL as jansson read them
#     (1e19, 2^64, -0.0, ...) in trigger_payload, target.body and a
#     trigger's payload: 400 naming the number, nothing written; a row
#     already holding one (written with SQL) does not take its list page,
#     its GET or the other rows down, and its PATCH is a clear 409;
#  2. a tenant's http target aimed at the receiver (receiver_url, in other
#     spellings too): 400 naming target.url, nothing written;
#  3. target.headers and target.env values: masked for viewers, shown to
#     editors; a PATCH sending the mask back keeps the stored value.
# Usage: api_review.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"
E=$CV_TOKEN_ALICE_EDITOR
V=$CV_TOKEN_ALICE_VIEWER
A=$CV_TOKEN_ADMIN
far='"kind": "cron", "cron": "0 0 1 1 *"'
jc() { printf '%s' "$resp" | jq -cS "$1" 2>/dev/null; } # compact, keys sorted

# refused NAME FIELD BODY: POST /schedules answers 400 naming FIELD and
# writes nothing.
refused() {
	before=$(snap)
	send POST /schedules "$E" "$3"
	ok_error "$1" 400 invalid_field "$2"
	ok "$1: nothing written" "$(snap)" "$before"
}

# 1. Numbers.
for n in 1e19 1E+19 1e17 -1.5e300 -0.0 18446744073709551616 \
	9223372036854775808 -9223372036854775809000; do
	refused "trigger_payload.x = $n" trigger_payload.x \
		"{\"name\": \"num\", $far, \"trigger_payload\": {\"x\": $n}}"
done
refused "nested in trigger_payload" "trigger_payload.a[1].b" \
	"{\"name\": \"num\", $far, \"trigger_payload\": {\"a\": [1, {\"b\": 1e19}]}}"
refused "in target.body" "target.body.v[0]" \
	"{\"name\": \"num\", $far, \"target\": {\"type\": \"http\", \"url\": \"http://example.invalid/\", \"body\": {\"v\": [1e19]}}}"
before=$(snap)
send POST /schedules "$E" "{\"name\": \"num\", $far, \"trigger_payload\": {\"x\": 1e400}}"
ok_error "1e400: refused whole" 400 invalid_json null
ok "1e400: nothing written" "$(snap)" "$before"
send POST /schedules "$E" "{\"name\": \"fine\", $far, \"trigger_payload\": {\"x\": 9.99e16, \"y\": 9223372036854775807, \"z\": 1e-300, \"w\": 0.1}}"
ok_status "numbers that come back: 201" 201
# jq reads numbers as doubles: the text of the answer says what came back.
ok "numbers that come back: as given" \
	"$(printf '%s' "$resp" | grep -o '"[wxyz]": *[-0-9.e]*' | tr -d ' ' | sort | tr '\n' ' ')" \
	'"w":0.10000000000000001 "x":99900000000000000.0 "y":9223372036854775807 "z":1e-300 '
fine=$(j .id)
before=$(snap)
send POST "/schedules/$fine/trigger" "$E" '{"payload": {"x": 1e19}}'
ok_error "trigger payload 1e19" 400 invalid_field payload.x
ok "trigger payload 1e19: nothing written" "$(snap)" "$before"

# A row that holds such a number already (an older version let it in).
send POST /schedules "$E" "{\"name\": \"stored-bad\", $far}"
bad=$(j .id)
sql "UPDATE schedules SET trigger_payload = '{\"x\": 1e19}' WHERE id = '$bad'" >/dev/null
call GET "/schedules?limit=500" "$E"
ok "list with an unreadable row: 200" "$code" 200
ok "list: the unreadable row marked" \
	"$(j "[.schedules[] | select(.id == \"$bad\") | [.owner, .name, (.unreadable | startswith(\"the stored schedule cannot be read\"))]] | tostring")" \
	'[["alice","stored-bad",true]]'
ok "list: the other rows whole" "$(j "[.schedules[] | select(.id == \"$fine\") | .name] | tostring")" \
	'["fine"]'
ok "list: the other rows whole, numbers too" "$(printf '%s' "$resp" | grep -c '"y": *9223372036854775807')" 1
call GET "/schedules?owner=alice" "$A"
ok "admin list with an unreadable row: 200" "$code" 200
call GET "/schedules/$bad" "$E"
ok "GET of the unreadable row: 200, marked" "$code $(j '.unreadable != null')" "200 true"
before=$(snap)
send PATCH "/schedules/$bad" "$E" '{"description": "x"}'
ok_error "PATCH of the unreadable row" 409 unreadable null
ok "PATCH of the unreadable row: nothing written" "$(snap)" "$before"
call DELETE "/schedules/$bad" "$E"
ok "DELETE of the unreadable row" "$code" 204

# 2. The receiver is not a tenant's target.
r=$CV_RECEIVER_URL # http://127.0.0.1:PORT/receiver
port=${r#http://127.0.0.1:}
port=${port%%/*}
for u in "$r" "$r/x?y=1" "http://127.0.0.1:$port/./receiver" \
	"http://127.0.0.1:$port/a/../receiver" "HTTP://127.0.0.1:$port/%72eceiver" \
	"http://127.0.0.1.:$port/receiver" "http://0x7f000001:$port/receiver" \
	"http://2130706433:$port/receiver" "http://127.1:$port/receiver"; do
	refused "http target $u" target.url \
		"{\"name\": \"fake-event\", $far, \"target\": {\"type\": \"http\", \"url\": \"$u\"}}"
done
send POST /schedules "$E" "{\"name\": \"near\", $far, \"target\": {\"type\": \"http\", \"url\": \"http://127.0.0.1:$port/receivers-not\"}}"
ok_status "a path beside the receiver's: 201" 201
send POST /schedules "$E" "{\"name\": \"near\", $far, \"target\": {\"type\": \"http\", \"url\": \"http://127.0.0.1:$port/landing\"}}"
ok_status "another path on the receiver's host: 201" 201
near=$(j .id)
before=$(snap)
send PATCH "/schedules/$near" "$E" "{\"target\": {\"type\": \"http\", \"url\": \"$r\"}}"
ok_error "PATCH to the receiver" 400 invalid_field target.url
ok "PATCH to the receiver: nothing written" "$(snap)" "$before"

# 3. Secrets of targets.
send POST /schedules "$E" "{\"name\": \"secret\", $far, \"target\": {\"type\": \"http\", \"url\": \"http://example.invalid/\", \"headers\": {\"Authorization\": \"Bearer s3cr3t\", \"X-Other\": \"o\"}}}"
ok_status "http target with headers: 201" 201
hs=$(j .id)
send POST /schedules "$E" "{\"name\": \"secret-env\", $far, \"target\": {\"type\": \"exec\", \"argv\": [\"/bin/true\"], \"env\": {\"PASSWORD\": \"hunter2\"}}}"
es=$(j .id)
call GET "/schedules/$hs" "$V"
ok "viewer: headers masked" "$(jc .target.headers)" '{"Authorization":"***","X-Other":"***"}'
call GET "/schedules/$es" "$V"
ok "viewer: env masked" "$(jc .target.env)" '{"PASSWORD":"***"}'
call GET "/schedules?name=secret" "$V"
ok "viewer: masked in the list" "$(printf '%s' "$resp" | grep -c 's3cr3t\|hunter2')" 0
call GET "/schedules/$hs" "$E"
ok "editor: headers shown" "$(jc .target.headers)" '{"Authorization":"Bearer s3cr3t","X-Other":"o"}'
call GET "/schedules/$hs" "$V"
send PATCH "/schedules/$hs" "$E" "{\"target\": $(printf '%s' "$resp" | jq -c '.target | .headers["X-Other"] = "new"')}"
ok_status "PATCH of what a viewer saw: 200" 200
ok "PATCH: the masked value kept, the new one taken" "$(sql "SELECT target->'headers' FROM schedules WHERE id = '$hs'")" \
	'{"X-Other": "new", "Authorization": "Bearer s3cr3t"}'
before=$(snap)
send PATCH "/schedules/$hs" "$E" '{"target": {"type": "http", "url": "http://example.invalid/", "headers": {"X-New": "***"}}}'
ok_error "PATCH: a mask for no stored value" 400 invalid_field target.headers.X-New
ok "PATCH: a mask for no stored value: nothing written" "$(snap)" "$before"
send POST /schedules "$E" "{\"name\": \"mask\", $far, \"target\": {\"type\": \"exec\", \"argv\": [\"/bin/true\"], \"env\": {\"K\": \"***\"}}}"
ok_error "create: a mask for no stored value" 400 invalid_field target.env.K
ok "create: a mask for no stored value: nothing written" "$(snap)" "$before"

api_finish
summary api_review
