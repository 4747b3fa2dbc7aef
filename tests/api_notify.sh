#!/bin/sh
# api_notify.sh: failure notifications (docs/operations.md,
# "Notifications") end to end: channels made through nginx, the real
# cronvisord's events worker delivering to a webhook receiver (the stub
# agent's request log) and a real SMTP sink (Debian's aiosmtpd, a
# Maildir).  Checked by what they received: a schedule that becomes dead
# sends one signed webhook (Standard Webhooks: the signature verified
# here with the channel's secret), one Slack text and one e-mail; a
# fan-out whose items half fail sends one digest, not one message per
# item; a recovery after failure; a channel limited to other schedules or
# kinds sends nothing; a receiver that fails is retried with the same
# webhook-id and the delivery's attempts show it; deliveries visible
# through the API, by tenant; bad channels refused by field; secrets
# shown once.
# Usage: api_notify.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
mdir=$(mktemp -d /tmp/cvmail.XXXXXX) || exit 1
sport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
/usr/bin/python3 -m aiosmtpd -n -l "127.0.0.1:$sport" \
	-c aiosmtpd.handlers.Mailbox "$mdir/box" >"$mdir/smtp.log" 2>&1 &
smtp=$!
CV_HARNESS_CONF="smtp_url = \"smtp://127.0.0.1:$sport\"
smtp_from = \"cronvisor@test.invalid\""
export CV_HARNESS_CONF
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"
extra="$extra $smtp"
trap 'api_cleanup; rm -rf "$mdir"' EXIT
A=$CV_TOKEN_ALICE_EDITOR
AV=$CV_TOKEN_ALICE_VIEWER
B=$CV_TOKEN_BOB_EDITOR

stub_agent_up
mails() { /usr/bin/python3 -c 'import mailbox, sys; print(len(mailbox.Maildir(sys.argv[1], create=False)))' "$mdir/box" 2>/dev/null || echo 0; }
subjects() { /usr/bin/python3 -c 'import mailbox, sys; [print(m["Subject"]) for m in mailbox.Maildir(sys.argv[1], create=False)]' "$mdir/box" 2>/dev/null; }
hooks() { h_n=$(grep -c "\"path\": \"$1\"" "$tmp/agent.log" 2>/dev/null); echo "${h_n:-0}"; }

# --- channels ----------------------------------------------------------------------
send POST /notification-channels "$A" "{\"channel_id\": \"hook\", \"type\": \"webhook\", \"url\": \"$AURL/ok\"}"
ok "webhook channel: 201" "$code" 201
secret=$(j .secret)
ok "its secret, made and shown once" "$(printf '%s' "$secret" | grep -c '^whsec_')" 1
ok "default kinds" "$(j '.kinds | join(",")')" "dead,failed,partial"
call GET /notification-channels/hook "$A"
ok "later: the secret masked" "$(j .secret)" "***"
call GET /notification-channels/hook "$AV"
ok "a viewer sees it, masked" "$code:$(j .secret)" "200:***"
send POST /notification-channels "$A" "{\"channel_id\": \"slack\", \"type\": \"slack\", \"url\": \"$AURL/ok/services/T0/B0/sekrit\", \"kinds\": [\"dead\"]}"
ok "slack channel: 201" "$code" 201
call GET /notification-channels/slack "$A"
ok "slack: the URL's path masked" "$(j .url | grep -c sekrit)" 0
send POST /notification-channels "$A" '{"channel_id": "mail", "type": "email", "to": "ops@example.test, oncall@example.test", "kinds": ["dead", "recovery"]}'
ok "email channel: 201" "$code" 201
send POST /notification-channels "$A" "{\"channel_id\": \"other\", \"type\": \"webhook\", \"url\": \"$AURL/ok/other\", \"schedule_ids\": [\"00000000-0000-4000-8000-000000000000\"]}"
ok "a channel for another schedule only: 201" "$code" 201
send POST /notification-channels "$B" "{\"channel_id\": \"bobs\", \"type\": \"webhook\", \"url\": \"$AURL/ok/bob\"}"
ok "bob's channel: 201" "$code" 201

bad() {
	send POST /notification-channels "$A" "$1"
	ok_error "$2" "$3" "$4" "$5"
}
bad '{"type": "webhook", "url": "http://h/"}' "no id" 400 missing_field channel_id
bad '{"channel_id": "Bad_Id", "type": "webhook", "url": "http://h/"}' "a bad id" 400 invalid_field channel_id
bad '{"channel_id": "x", "type": "sms"}' "a bad type" 400 invalid_field type
bad '{"channel_id": "x", "type": "webhook"}' "no url" 400 missing_field url
bad '{"channel_id": "x", "type": "webhook", "url": "ftp://h/"}' "not http" 400 invalid_field url
bad '{"channel_id": "x", "type": "webhook", "url": "http://169.254.169.254/"}' "a denied host" 400 invalid_field url
bad '{"channel_id": "x", "type": "webhook", "url": "http://h/", "secret": "nope"}' "a bad secret" 400 invalid_field secret
bad '{"channel_id": "x", "type": "email", "to": "nobody"}' "a bad address" 400 invalid_field to
bad '{"channel_id": "x", "type": "email", "to": "a@b.c\r\nBcc: x@y.z"}' "a header in to" 400 invalid_field to
bad '{"channel_id": "x", "type": "email"}' "no to" 400 missing_field to
bad '{"channel_id": "x", "type": "webhook", "url": "http://h/", "kinds": ["sad"]}' "a bad kind" 400 invalid_field "kinds[0]"
bad '{"channel_id": "x", "type": "webhook", "url": "http://h/", "schedule_ids": ["x"]}' "a bad schedule id" 400 invalid_field "schedule_ids[0]"
bad '{"channel_id": "x", "type": "webhook", "url": "http://h/", "colour": 1}' "an unknown field" 400 unknown_field colour
send POST /notification-channels "$A" "{\"channel_id\": \"hook\", \"type\": \"webhook\", \"url\": \"$AURL/ok\"}"
ok_error "the same id again" 409 conflict channel_id
send POST /notification-channels "$AV" "{\"channel_id\": \"v\", \"type\": \"webhook\", \"url\": \"$AURL/ok\"}"
ok "a viewer cannot create" "$code" 403
call DELETE /notification-channels/other "$AV"
ok "a viewer cannot delete" "$code" 403
call GET /notification-channels/bobs "$A"
ok "bob's channel does not exist for alice" "$code" 404
call GET /notification-channels "$A"
ok "alice lists her four" "$(j '[.channels[].channel_id] | join(",")')" "hook,mail,other,slack"

# --- a schedule becomes dead: one message per channel that wants it ---------------------
send POST /schedules "$A" "{\"name\": \"doomed\", \"at\": \"$(soon 500)\", \"max_retries\": 1, \"backoff\": \"fixed\", \"retry_delay_seconds\": 1, \"target\": {\"type\": \"exec\", \"argv\": [\"/bin/false\"]}}"
sd=$(j .id)
wait_for 20 "SELECT status = 'dead' FROM schedules WHERE id = '$sd'"
delivered() { [ "$(sql "SELECT count(*) FROM notifications WHERE status = 'delivered'")" -ge "$1" ]; }
# dead: hook, slack, mail; the slot's failed execution: hook
ok "dead and failed: four deliveries" "$(wait_until 20 delivered 4 && echo 4)" 4
hook_dead() { grep '"path": "/ok"' "$tmp/agent.log" | jq -c 'select(.body.type == "cronvisor.schedule.dead")'; }
ok "the webhook got the dead schedule once" "$(hook_dead | wc -l)" 1
line=$(hook_dead)
ok "... naming it" "$(printf '%s' "$line" | jq -r '.body.data | [.schedule_id, .schedule_name, .owner] | join(" ")')" "$sd doomed alice"
verify() {
	printf '%s' "$1" | SECRET=$2 /usr/bin/python3 -c '
import base64, hashlib, hmac, json, os, sys
r = json.load(sys.stdin)
h = r["headers"]
key = base64.b64decode(os.environ["SECRET"][len("whsec_"):])
mac = hmac.new(key, ("%s.%s.%s" % (h["webhook-id"], h["webhook-timestamp"], r["raw"])).encode(), hashlib.sha256).digest()
ok = h["webhook-signature"] == "v1," + base64.b64encode(mac).decode()
print("valid" if ok else "invalid")'
}
ok "... signed as Standard Webhooks say" "$(verify "$line" "$secret")" valid
ok "... not with another key" "$(verify "$line" "whsec_$(printf 'another key of 24 bytes!' | base64)")" invalid
ok "... its webhook-id the message id" "$(printf '%s' "$line" | jq -r '.headers["webhook-id"]')" "$(sql "SELECT msg_id FROM notifications WHERE channel_id = 'hook' AND kind = 'dead'")"
ok "the failed execution: one message on hook" "$(grep '"path": "/ok"' "$tmp/agent.log" | jq -r '.body.type' | grep -c '^cronvisor.schedule.failed$')" 1
ok "Slack got one text" "$(grep -c '"path": "/ok/services/T0/B0/sekrit"' "$tmp/agent.log")" 1
ok "... saying so" "$(grep '"path": "/ok/services/T0/B0/sekrit"' "$tmp/agent.log" | jq -r .body.text)" 'cronvisor: schedule "doomed" is dead (its retries are spent)'
got_mail() { [ "$(mails)" -ge 1 ]; }
ok "one e-mail" "$(wait_until 10 got_mail && mails)" 1
ok "... to both, from the sender" "$(/usr/bin/python3 -c 'import mailbox, sys; m = list(mailbox.Maildir(sys.argv[1], create=False))[0]; print(m["To"], "|", m["From"], "|", m["Subject"])' "$mdir/box")" 'ops@example.test, oncall@example.test | cronvisor@test.invalid | cronvisor: schedule "doomed" is dead (its retries are spent)'
ok "the channel for other schedules: nothing" "$(hooks /ok/other)" 0
ok "bob's channel: nothing of alice's" "$(hooks /ok/bob)" 0

# --- a fan-out whose half fails: one digest ----------------------------------------------
send POST /agents "$A" "{\"agent_id\": \"half\", \"name\": \"half\", \"endpoint\": \"$AURL/half\"}"
sql "CREATE TABLE nt (id text PRIMARY KEY); INSERT INTO nt SELECT 'T' || g FROM generate_series(1, 10) g; GRANT SELECT ON nt TO cronvisor_reader" >/dev/null
send POST /data-sources "$CV_TOKEN_ADMIN" '{"name": "nt", "relation": "nt", "key": "id", "columns": ["id"]}'
before=$(hooks /ok)
send POST /schedules "$A" "{\"name\": \"fan\", \"at\": \"$(soon 500)\", \"max_retries\": 0, \"target\": {\"type\": \"agent\", \"agent\": \"half\", \"params\": {\"tickerId\": \"db:nt:all:id?batchSize=10&staggerDelay=0\"}}}"
sf=$(j .id)
wait_for 30 "SELECT status = 'partial' FROM executions WHERE schedule_id = '$sf'"
digest() { [ "$(grep '"path": "/ok"' "$tmp/agent.log" | jq -r '.body.type' | grep -c '^cronvisor.schedule.partial$')" -ge 1 ]; }
ok "a partial fan-out: a digest" "$(wait_until 20 digest && echo yes)" yes
ok "... one message for its five failed jobs" "$(grep '"path": "/ok"' "$tmp/agent.log" | jq -c 'select(.body.type == "cronvisor.schedule.partial") | .body.data | [.failed_jobs, .jobs_created, (.errors | length)]')" "[5,10,5]"

# --- a receiver that fails: retried with the same id ----------------------------------------
send POST /notification-channels "$A" "{\"channel_id\": \"flaky\", \"type\": \"webhook\", \"url\": \"$AURL/bad\", \"kinds\": [\"failed\"]}"
send POST /schedules "$A" "{\"name\": \"fails\", \"at\": \"$(soon 500)\", \"max_retries\": 0, \"target\": {\"type\": \"exec\", \"argv\": [\"/bin/false\"]}}"
sx=$(j .id)
twice() { [ "$(hooks /bad)" -ge 2 ]; }
ok "a failing receiver: tried again (10 s later)" "$(wait_until 30 twice && echo yes)" yes
ok "... with the same webhook-id" "$(grep '"path": "/bad"' "$tmp/agent.log" | jq -r '.headers["webhook-id"]' | sort -u | wc -l)" 1
call GET "/notifications?channel=flaky" "$A"
ok "the deliveries through the API: pending, attempts and the error" "$(j '.notifications[0] | [.status, (.attempts >= 2), .http_status, (.last_error | test("HTTP 400"))] | map(tostring) | join(" ")')" "pending true 400 true"

# --- recovery: partial, then fixed -------------------------------------------------------------
send POST /agents "$A" "{\"agent_id\": \"mend\", \"name\": \"mend\", \"endpoint\": \"$AURL/half\"}"
send POST /schedules "$A" '{"name": "mends", "interval_seconds": 2, "max_retries": 0, "target": {"type": "agent", "agent": "mend", "params": {"tickerId": "db:nt:all:id?batchSize=10&staggerDelay=0"}}}'
sm=$(j .id)
wait_for 30 "SELECT count(*) >= 1 FROM executions WHERE schedule_id = '$sm' AND status = 'partial'"
send PATCH /agents/mend "$A" "{\"endpoint\": \"$AURL/ok\"}"
wait_for 30 "SELECT count(*) >= 2 FROM executions WHERE schedule_id = '$sm' AND status = 'success'"
call POST "/schedules/$sm/pause" "$A"
recovered() { [ "$(subjects | grep -c 'schedule "mends" succeeded again')" -ge 1 ]; }
ok "recovery: an e-mail once it succeeded after a partial" "$(wait_until 20 recovered && echo yes)" yes
ok "... one, not one per success" "$(subjects | grep -c 'schedule "mends" succeeded again')" 1

# --- tenants and the API --------------------------------------------------------------------------
call GET /notifications "$B"
ok "bob sees none of alice's deliveries" "$(j '[.notifications[] | select(.owner != "bob")] | length')" 0
call GET "/notifications?status=delivered&limit=2" "$A"
ok "a page of two, and a cursor" "$(j '(.notifications | length | tostring) + " " + (.next_cursor != null | tostring)')" "2 true"
cur=$(j .next_cursor)
call GET "/notifications?status=delivered&limit=2&cursor=$cur" "$A"
ok "the next page" "$code:$(j '.notifications | length > 0')" "200:true"
call GET "/notifications?status=lost" "$A"
ok_error "a bad status" 400 invalid_query status
call GET "/notifications?cursor=abc" "$A"
ok_error "a bad cursor" 400 invalid_query cursor
call DELETE /notification-channels/flaky "$A"
ok "delete: 204" "$code" 204
ok "... its pending delivery failed with it" "$(sql "SELECT status || ':' || last_error FROM notifications WHERE channel_id = 'flaky' LIMIT 1")" "failed:the channel was deleted"
curl -s "${CV_API_URL%/api/v1}/metrics" >"$tmp/metrics"
ok "metrics: deliveries counted as the table says" "$(awk '$1 == "cronvisor_notifications_total{result=\"delivered\"}" { print $2 }' "$tmp/metrics")" "$(sql "SELECT count(*) FROM notifications WHERE status = 'delivered'")"
ok "metrics: retries counted" "$(awk '$1 == "cronvisor_notifications_total{result=\"retried\"}" { print ($2 >= 1) }' "$tmp/metrics")" 1
ok "every message once: no msg_id twice" "$(sql "SELECT count(*) = count(DISTINCT msg_id) FROM notifications")" t
echo "api_notify: notifications by kind and status: $(sql "SELECT string_agg(kind || ' ' || status || ' ' || n, ', ' ORDER BY kind, status) FROM (SELECT kind, status, count(*) AS n FROM notifications GROUP BY 1, 2) t")"
ok "no secret in any log" "$(cat "$work"/*.log | grep -c -e "$secret" -e sekrit)" 0

api_finish
summary api_notify
