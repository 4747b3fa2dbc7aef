#!/bin/sh
# api_instants.sh: instants and one-shots through the whole stack of
# tests/api-harness.sh (curl → nginx → cronvisor-api → PostgreSQL, with
# the real cronvisord).  Checks: a done once schedule comes back with a
# new future `at` (active, counts kept, a new run id, done again after its
# run), a past `at` or a dead schedule refused, and no PATCH accepted and
# ignored on a done or dead schedule (a change to what only slots use is
# refused naming the field).
# Usage: api_instants.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"
A=$CV_TOKEN_ALICE_EDITOR

# --- a done once schedule comes back with a new at ------------------------
send POST /schedules "$A" '{"name": "one-shot", "at": "'"$(at_in 1)"'", "target": {"type": "exec", "argv": ["/bin/echo", "hi"]}}'
ok_status "once: created" 201
o=$(j .id)
wait_api 20 '.status == "done"' "/schedules/$o" "$A"
ok "once: done after its run" "$(j '[.status, .run_count, .next_run_at] | map(tostring) | join(" ")')" "done 1 null"
call GET "/schedules/$o/runs" "$A"
r1=$(j '.runs[0].id')

before=$(snap)
send PATCH "/schedules/$o" "$A" '{"at": "2020-01-01T00:00:00Z"}'
ok_error "done: a past at" 400 invalid_field at
ok "done: a past at changes nothing" "$(snap)" "$before"
for b in '{"max_retries": 5}' '{"total_repeats": 3}' \
	'{"timezone": "Europe/Paris"}' '{"kind": "interval", "interval_seconds": 60, "at": null}'; do
	send PATCH "/schedules/$o" "$A" "$b"
	f=$(printf '%s' "$b" | jq -r 'keys_unsorted[0]')
	ok_error "done: PATCH $b refused, not ignored" 400 invalid_state "$f"
	ok "done: PATCH $b changes nothing" "$(snap)" "$before"
done
send PATCH "/schedules/$o" "$A" '{"description": "still done"}'
ok "done: a field runs do not need is changed" "$code $(j .status) $(j .description)" "200 done still done"

at2=$(at_in 2)
send PATCH "/schedules/$o" "$A" '{"at": "'"$at2"'"}'
ok "done + future at: active at that slot, counts kept" \
	"$code $(j '[.status, .at, .next_run_at, .run_count] | map(tostring) | join(" ")')" \
	"200 active $at2 $at2 1"
wait_api 20 '.status == "done"' "/schedules/$o" "$A"
ok "revived: done again after its second run" "$(j '[.status, .run_count] | map(tostring) | join(" ")')" "done 2"
call GET "/schedules/$o/runs" "$A"
ok "revived: two runs, distinct ids, the new one at the new at" \
	"$(j '[(.runs | length), (.runs | map(.id) | unique | length), (.runs | map(.status) | unique | join(",")), (.runs | map(.id) | index("'"$r1"'") != null), (.runs | map(.slot_at) | index("'"$at2"'") != null)] | map(tostring) | join(" ")')" \
	"2 2 succeeded true true"

# --- a dead one stays dead ------------------------------------------------
send POST /schedules "$A" '{"name": "dies", "at": "'"$(at_in 1)"'", "max_retries": 0, "target": {"type": "exec", "argv": ["/bin/false"]}}'
ok_status "dead: created" 201
d=$(j .id)
wait_api 20 '.status == "dead"' "/schedules/$d" "$A"
ok "dead: after its failed run" "$(j .status)" dead
before=$(snap)
send PATCH "/schedules/$d" "$A" '{"at": "'"$(at_in 60)"'"}'
ok_error "dead: a new at refused" 400 invalid_state at
ok "dead: nothing changed" "$(snap)" "$before"
call POST "/schedules/$d/resume" "$A"
ok_error "dead: resume refused as before" 400 invalid_state status

api_finish
summary api_instants
