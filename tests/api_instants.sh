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

# --- instants to the millisecond; never early ------------------------------
# ms_times N GAP_MS LEAD_S: N RFC 3339 instants GAP_MS apart from LEAD_S
# seconds from now, each 437 ms past a second to begin with.
ms_times() {
	python3 -c 'import sys, time, datetime as d
n, gap, lead = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
base = (int(time.time()) + lead) * 1000 + 437
for i in range(n):
    t = base + i * gap
    print(d.datetime.fromtimestamp(t // 1000, d.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + ".%03dZ" % (t % 1000))' "$@"
}
# The 100 creates go out from one curl, in parallel: a process per create
# would take longer than the lead on a loaded machine.
ms_times 100 10 15 >"$tmp/times"
while read -r t; do
	printf 'next\nurl = "%s/schedules"\nrequest = "POST"\nheader = "Authorization: Bearer %s"\nheader = "Content-Type: application/json"\ndata = "{\\"name\\": \\"ms-%s\\", \\"at\\": \\"%s\\", \\"max_retries\\": 0, \\"target\\": {\\"type\\": \\"exec\\", \\"argv\\": [\\"/bin/date\\", \\"+%%s.%%N\\"]}}"\noutput = "/dev/null"\nwrite-out = "%%{http_code}\\n"\n' \
		"$CV_API_URL" "$A" "$t" "$t"
done <"$tmp/times" | sed 1d >"$tmp/creates"
ok "ms: 100 creates answered 201" \
	"$(curl -sS -Z --parallel-max 8 -K "$tmp/creates" | sort | uniq -c | awk '{print $1, $2}')" "100 201"
ok "ms: each stored and shown with its ms (at, next_run_at)" \
	"$(sql "SELECT count(*) FROM schedules WHERE name LIKE 'ms-%' AND name = 'ms-' || cronvisor_time(at) AND at = next_run_at AND at = next_slot_at")" 100
call GET "/schedules/$(sql "SELECT id FROM schedules WHERE name LIKE 'ms-%' LIMIT 1")" "$A"
ok "ms: the API shows at and next_run_at to the ms" "$(j '"ms-" + .at == .name and .at == .next_run_at and (.at | test("[.][0-9]{2}7Z$"))')" true
wait_for 40 "SELECT count(*) = 100 FROM schedules WHERE name LIKE 'ms-%' AND status IN ('done', 'dead')"
# The command's own clock (its output) against the instant asked for (in
# the name: not what was stored, which could be cut); slot_at and
# started_at against it with PostgreSQL's µs.
set -- $(sql "SELECT count(*), count(*) FILTER (WHERE r.status = 'succeeded'),
	count(*) FILTER (WHERE r.slot_at <> w.want OR s.at <> w.want),
	count(*) FILTER (WHERE extract(milliseconds FROM r.slot_at)::int % 1000 % 10 <> 7),
	count(*) FILTER (WHERE r.started_at < w.want),
	count(*) FILTER (WHERE r.output::numeric < extract(epoch FROM w.want)),
	round(max(r.output::numeric - extract(epoch FROM w.want)) * 1000)
	FROM runs r JOIN schedules s ON s.id = r.schedule_id,
	LATERAL (SELECT substr(s.name, 4)::timestamptz AS want) w
	WHERE s.name LIKE 'ms-%'" | tr '|' ' ')
ok "ms: 100 runs, succeeded" "$1 $2" "100 100"
ok "ms: every slot_at is its at, to the ms" "$3 $4" "0 0"
ok "ms: no started_at before its instant" "$5" 0
ok "ms: no command started before its instant (latest $7 ms after)" "$6" 0
r=$(sql "SELECT r.id || ' ' || cronvisor_time(s.at) FROM runs r JOIN schedules s ON s.id = r.schedule_id WHERE s.name LIKE 'ms-%' LIMIT 1")
call GET "/runs/${r%% *}" "$A"
ok "ms: the run shows slot_at with its ms" "$(j .slot_at)" "${r#* }"

# A finer fraction is refused naming the field, and changes nothing.
before=$(snap)
send POST /schedules "$A" '{"name": "fine", "at": "2099-01-01T00:00:00.4361Z"}'
ok_error "ms: at .4361 refused" 400 invalid_field at
send POST /schedules "$A" '{"name": "fine", "interval_seconds": 60, "start_at": "2099-01-01T00:00:00.0001Z"}'
ok_error "ms: start_at .0001 refused" 400 invalid_field start_at
ok "ms: nothing changed" "$(snap)" "$before"

# Interval slots keep start_at's ms; a PATCH keeps them too.
set -- $(ms_times 1 0 3)
send POST /schedules "$A" '{"name": "ms-grid", "interval_seconds": 1, "start_at": "'"$1"'", "target": {"type": "exec", "argv": ["/bin/date", "+%s.%N"]}}'
ok "ms: interval from a start_at with ms" "$code $(j .start_at) $(j .next_run_at)" "201 $1 $1"
g=$(j .id)
wait_for 20 "SELECT count(*) >= 3 FROM runs WHERE schedule_id = '$g' AND status = 'succeeded'"
ok "ms: interval slots at start_at + k s, with its ms, none early" 	"$(sql "SELECT count(*) >= 3, bool_and(extract(milliseconds FROM r.slot_at)::int % 1000 = 437),
	bool_and(r.slot_at >= s.start_at), bool_and(r.output::numeric >= extract(epoch FROM r.slot_at))
	FROM runs r JOIN schedules s ON s.id = r.schedule_id WHERE s.id = '$g' AND r.status = 'succeeded'")" "t|t|t|t"
set -- $(ms_times 1 0 600)
s2=$(printf '%s' "$1" | sed 's/437Z$/123Z/')
send PATCH "/schedules/$g" "$A" '{"start_at": "'"$s2"'"}'
ok "ms: PATCH start_at keeps its ms" "$code $(j .start_at) $(j .next_run_at)" "200 $s2 $s2"
send PATCH "/schedules/$g" "$A" '{"kind": "once", "interval_seconds": null, "start_at": null, "at": "'"$1"'"}'
ok "ms: PATCH at keeps its ms" "$code $(j .at) $(j .next_run_at)" "200 $1 $1"
call DELETE "/schedules/$g" "$A"

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
