#!/bin/sh
# api_limits.sh: the per-owner limits of the API through the whole stack
# of tests/api-harness.sh (docs/configuration.md, "Tenants"), with the API
# restarted on owner_max_schedules = 3, owner_max_triggers_per_minute = 2
# and max_timeout_seconds = 100:
#  * a non-admin's timeout_seconds above 100 is 400 naming timeout_seconds,
#    on create and on PATCH, and changes nothing; an admin's is accepted;
#  * the fourth schedule of an owner is 429 too_many_schedules and changes
#    nothing; another owner still creates;
#  * the third trigger of an owner within a minute is 429 with
#    Retry-After, and triggers nothing; an admin is not limited.
# Usage: api_limits.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"

kill -TERM "$CV_API_PID"
wait_gone 10 "$CV_API_PID"
cat >>"$CV_CONF" <<EOF
owner_max_schedules = 3
owner_max_triggers_per_minute = 2
max_timeout_seconds = 100
EOF
rm -f "$CV_SOCKET"
"$CRONVISOR_API" -f "$CV_CONF" </dev/null >>"$CV_DIR/api.log" 2>&1 &
echo $! >"$CV_DIR/api.pid"
wait_until 10 api_healthy || ok "API restarted" no yes

far='"kind": "cron", "cron": "0 0 1 1 *"'
tgt='"target": {"type": "exec", "argv": ["/bin/true"]}'
doc() { echo "{\"name\": \"$1\", $far, $tgt${2:-}}"; }

# max_timeout_seconds
before=$(snap)
send POST /schedules "$CV_TOKEN_ALICE_EDITOR" "$(doc long ', "timeout_seconds": 101')"
ok_error "editor timeout 101" 400 invalid_field timeout_seconds
ok "editor timeout 101: nothing changed" "$(snap)" "$before"
send POST /schedules "$CV_TOKEN_ALICE_EDITOR" "$(doc a1 ', "timeout_seconds": 100')"
ok_status "editor timeout 100" 201
a1=$(j .id)
before=$(snap)
send PATCH "/schedules/$a1" "$CV_TOKEN_ALICE_EDITOR" '{"timeout_seconds": 31536000}'
ok_error "editor PATCH timeout a year" 400 invalid_field timeout_seconds
ok "editor PATCH: nothing changed" "$(snap)" "$before"
send PATCH "/schedules/$a1" "$CV_TOKEN_ADMIN" '{"timeout_seconds": 31536000}'
ok "admin PATCH timeout a year" "$code $(j .timeout_seconds)" "200 31536000"

# owner_max_schedules: alice has one, two more are allowed.
send POST /schedules "$CV_TOKEN_ALICE_EDITOR" "$(doc a2)"
ok_status "alice's second" 201
send POST /schedules "$CV_TOKEN_ALICE_EDITOR" "$(doc a3)"
ok_status "alice's third" 201
before=$(snap)
send POST /schedules "$CV_TOKEN_ALICE_EDITOR" "$(doc a4)"
ok_error "alice's fourth" 429 too_many_schedules null
ok "alice's fourth: message names the limit" \
	"$(j .error.message | grep -c 'owner_max_schedules')" 1
send POST "/schedules?owner=alice" "$CV_TOKEN_ADMIN" "$(doc a4)"
ok_error "alice's fourth, by an admin" 429 too_many_schedules null
ok "alice's fourth: nothing changed" "$(snap)" "$before"
send POST /schedules "$CV_TOKEN_BOB_EDITOR" "$(doc b1)"
ok_status "bob's first" 201
# A deleted schedule does not count.
call DELETE "/schedules/$(sql "SELECT id FROM schedules WHERE name = 'a3'")" "$CV_TOKEN_ALICE_EDITOR"
ok_status "alice deletes one" 204
send POST /schedules "$CV_TOKEN_ALICE_EDITOR" "$(doc a4)"
ok_status "alice's fourth after a delete" 201

# owner_max_triggers_per_minute: three within one calendar minute.
[ "$(date +%S | sed 's/^0//')" -gt 45 ] && sleep $((61 - $(date +%S | sed 's/^0//')))
call POST "/schedules/$a1/trigger" "$CV_TOKEN_ALICE_EDITOR"
ok_status "alice's first trigger" 202
call POST "/schedules/$a1/trigger" "$CV_TOKEN_ALICE_EDITOR" -H 'Idempotency-Key: k2'
ok_status "alice's second trigger" 202
before=$(snap)
call POST "/schedules/$a1/trigger" "$CV_TOKEN_ALICE_EDITOR"
ok_error "alice's third trigger" 429 too_many_requests null
retry=$(tr -d '\r' <"$tmp/headers" | sed -n 's/^Retry-After: //p')
ok "Retry-After within the minute" "$([ "${retry:-0}" -ge 1 ] && [ "$retry" -le 60 ] && echo yes)" yes
call POST "/schedules/$a1/trigger" "$CV_TOKEN_ALICE_EDITOR" -H 'Idempotency-Key: k3'
ok_error "alice's third trigger, keyed" 429 too_many_requests null
ok "alice's third trigger: nothing changed" "$(snap)" "$before"
call POST "/schedules/$a1/trigger" "$CV_TOKEN_ADMIN"
ok_status "an admin's trigger" 202
call POST "/schedules/$(sql "SELECT id FROM schedules WHERE name = 'b1'")/trigger" "$CV_TOKEN_BOB_EDITOR"
ok_status "bob's trigger" 202

api_finish
summary api_limits
