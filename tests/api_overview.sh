#!/bin/sh
# api_overview.sh: GET /overview (docs/api.md; issue 22, the console's
# first view) after real runs through the real supervisor: exec targets
# that succeed and that fail until their schedule is dead, a once that is
# done.  The schedules by status, the runs and executions of the last hour
# and day by status and the day's 24 hourly entries (every one present,
# each with every status) are exactly what the tables say; the recent
# failures are the newest failed runs; the oldest due schedule shows while
# the supervisor is stopped.  bob never sees alice's (nor she his), a
# viewer may read it, an admin sees every owner's, or one's with ?owner=
# (refused to anyone else), and only an admin is shown the supervisors.
# The rollup counts each run once with two supervisors running, its sums
# equal to the runs and executions that ended, and forgets buckets older
# than two days.
# Usage: api_overview.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"
A=$CV_TOKEN_ALICE_EDITOR
V=$CV_TOKEN_ALICE_VIEWER
B=$CV_TOKEN_BOB_EDITOR
ADM=$CV_TOKEN_ADMIN

create() { # create TOKEN NAME MORE-JSON: prints the new schedule's id
	send POST /schedules "$1" "{\"name\": \"$2\", $3}"
	[ "$code" = 201 ] || echo "create $2: $code $resp" >&2
	j .id
}
OK1='"interval_seconds": 1, "max_retries": 0, "target": {"type": "exec", "argv": ["/bin/true"]}'
# three failed attempts (exit 3), then the schedule is dead
BAD='"interval_seconds": 1, "max_retries": 2, "backoff": "fixed", "retry_delay_seconds": 1, "target": {"type": "exec", "argv": ["/bin/sh", "-c", "exit 3"]}'
# ids IDS...: an SQL list of the ids given.
ids() { printf "'%s'," "$@" | sed 's/,$//'; }
# settled: nothing running, every event numbered (the rollup is moved as
# they are).
settled() {
	wait_for 30 "SELECT count(*) = 0 FROM runs WHERE status IN ('running', 'waiting')" &&
		wait_for 10 "SELECT count(*) = 0 FROM events WHERE seq IS NULL"
}
# by_status WHERE: "status=n,..." of the runs that ended, by SQL.
by_status() {
	sql "SELECT coalesce(string_agg(status || '=' || n, ',' ORDER BY status), '')
	     FROM (SELECT r.status, count(*) AS n FROM runs r JOIN schedules s ON s.id = r.schedule_id
	           WHERE r.status NOT IN ('running', 'waiting') AND $1 GROUP BY r.status) x"
}
x_status() {
	sql "SELECT coalesce(string_agg(status || '=' || n, ',' ORDER BY status), '')
	     FROM (SELECT x.status, count(*) AS n FROM executions x JOIN schedules s ON s.id = x.schedule_id
	           WHERE x.status <> 'running' AND $1 GROUP BY x.status) x"
}
# counts FILTER: "key=n,..." of the object at FILTER of the last answer.
counts() { j "$1 | to_entries | map(\"\(.key)=\(.value)\") | join(\",\")"; }
sched_counts() {
	sql "SELECT 'active=' || count(*) FILTER (WHERE status = 'active') || ',paused=' || count(*) FILTER (WHERE status = 'paused')
	     || ',done=' || count(*) FILTER (WHERE status = 'done') || ',dead=' || count(*) FILTER (WHERE status = 'dead')
	     || ',total=' || count(*) FROM schedules WHERE deleted_at IS NULL AND $1"
}
# failures WHERE: the ids of the ten newest failed runs, by SQL.
failures() {
	sql "SELECT coalesce(string_agg(id, ' ' ORDER BY finished_at DESC, id DESC), '') FROM (
	     SELECT r.id, r.finished_at FROM runs r JOIN schedules s ON s.id = r.schedule_id
	     WHERE r.status IN ('failed', 'timed_out', 'lost', 'crashed', 'protocol_error') AND $1
	     ORDER BY r.finished_at DESC, r.id DESC LIMIT 10) f"
}

# --- known work ------------------------------------------------------------------
agood=$(create "$A" a-good "$OK1")
abad=$(create "$A" a-bad "$BAD")
aonce=$(create "$A" a-once "\"kind\": \"once\", \"at\": \"$(soon 1000)\", \"target\": {\"type\": \"exec\", \"argv\": [\"/bin/true\"]}")
aidle=$(create "$A" a-idle '"interval_seconds": 3600, "target": {"type": "exec", "argv": ["/bin/true"]}')
bgood=$(create "$B" b-good "$OK1")
bbad=$(create "$B" b-bad "$(printf '%s' "$BAD" | sed 's/exit 3/exit 4/')")
wait_for 30 "SELECT status = 'dead' FROM schedules WHERE id = '$abad'" || echo "a-bad never became dead" >&2
wait_for 30 "SELECT status = 'dead' FROM schedules WHERE id = '$bbad'" || echo "b-bad never became dead" >&2
wait_for 30 "SELECT status = 'done' FROM schedules WHERE id = '$aonce'" || echo "a-once never ran" >&2
wait_for 30 "SELECT (SELECT count(*) FROM runs WHERE schedule_id = '$agood' AND status = 'succeeded') >= 3
	     AND (SELECT count(*) FROM runs WHERE schedule_id = '$bgood' AND status = 'succeeded') >= 3" ||
	echo "a-good and b-good did not run three times" >&2
call POST "/schedules/$agood/pause" "$A"
call POST "/schedules/$bgood/pause" "$B"
ok "the work settled" "$(settled && echo yes)" yes

# --- alice's overview ------------------------------------------------------------
call GET /overview "$A"
ok_status "GET /overview: 200" 200
printf '%s' "$resp" >"$tmp/alice.json"
ok "the members" "$(j 'keys_unsorted | join(",")')" "schedules,supervisors,runs,executions,oldest_due,recent_failures"
ok "schedules by status" "$(counts .schedules)" "active=1,paused=1,done=1,dead=1,total=4"
ok "schedules as the table" "$(counts .schedules)" "$(sched_counts "owner = 'alice'")"
want=$(by_status "s.owner = 'alice'")
ok "runs of the hour by status" "$(counts .runs.hour)" "$want"
ok "runs of the day by status" "$(counts .runs.day)" "$want"
ok "alice's runs: three failed, and some succeeded" "$(printf '%s' "$want" | grep -cE '(^|,)failed=3,.*succeeded=[1-9]')" 1
want=$(x_status "s.owner = 'alice'")
ok "executions of the hour by status" "$(counts .executions.hour)" "$want"
ok "executions of the day by status" "$(counts .executions.day)" "$want"
ok "alice's executions: one failed, and some succeeded" "$(printf '%s' "$want" | grep -cE '(^|,)failed=1,.*success=[1-9]')" 1
ok "series: 24 entries" "$(j '.runs.series | length')" 24
ok "series: one hour apart, on the hour" \
	"$(j '[.runs.series[].at | fromdateiso8601] | . as $a | [range(1; length) | $a[.] - $a[. - 1]] | unique | map(tostring) | join(",")')/$(j '[.runs.series[].at | select(endswith(":00:00Z") | not)] | length')" "3600/0"
last=$(j '.runs.series[-1].at')
ok "series: the last is this hour" "$(sql "SELECT now() - '$last'::timestamptz BETWEEN interval '0' AND interval '1 hour'")" t
ok "series: every entry has every status of the day" \
	"$(j '[.runs.series[] | keys | join(",")] | unique | join(";")')" "$(j '["at"] + (.runs.day | keys) | sort | join(",")')"
ok "series: its sums are the day" \
	"$(j '.runs as $r | $r.day | keys | map(. as $k | "\($k)=\([$r.series[][$k]] | add)") | join(",")')" \
	"$(counts .runs.day)"
ok "series: zeros where an hour had none" "$(j '[.runs.series[] | select(.succeeded == 0)] | length >= 22')" true
ok "recent failures: the newest failed runs" "$(j '[.recent_failures[].run_id] | join(" ")')" "$(failures "s.owner = 'alice'")"
ok "recent failures: three, of a-bad" "$(j '[.recent_failures[] | "\(.schedule_id == "'"$abad"'") \(.schedule_name) \(.status) \(.exit_code) \(.http_status)"] | unique | join(";")'):$(j '.recent_failures | length')" \
	"true a-bad failed 3 null:3"
ok "recent failures: the fields" "$(j '.recent_failures[0] | keys_unsorted | join(",")')" \
	"run_id,schedule_id,schedule_name,status,finished_at,exit_code,http_status,error"
ok "recent failures: newest first" "$(j '[.recent_failures[].finished_at] | . == (sort | reverse)')" true
ok "nothing is due" "$(j .oldest_due)" null
ok "supervisors: one alive, not listed for an editor" "$(j '"\(.supervisors.alive) \(.supervisors.list)"')" "1 []"
ok "no id of bob's in alice's" "$(grep -c -e "$bgood" -e "$bbad" -e b-bad -e b-good "$tmp/alice.json")" 0

call GET /overview "$V"
ok_status "a viewer may read it" 200
ok "the viewer's is the editor's" "$(printf '%s' "$resp" | jq -cS 'del(.oldest_due)')" "$(jq -cS 'del(.oldest_due)' "$tmp/alice.json")"

# --- bob's, an admin's -----------------------------------------------------------------
call GET /overview "$B"
printf '%s' "$resp" >"$tmp/bob.json"
ok "bob: his schedules" "$(counts .schedules)" "$(sched_counts "owner = 'bob'")"
ok "bob: his runs" "$(counts .runs.day)" "$(by_status "s.owner = 'bob'")"
ok "bob: his executions" "$(counts .executions.day)" "$(x_status "s.owner = 'bob'")"
ok "bob: his failures" "$(j '[.recent_failures[].run_id] | join(" ")')" "$(failures "s.owner = 'bob'")"
ok "bob: b-bad's three failures, exit 4" "$(j '[.recent_failures[] | "\(.schedule_name) \(.exit_code)"] | unique | join(";")'):$(j '.recent_failures | length')" "b-bad 4:3"
ok "no id or name of alice's in bob's" "$(grep -c -e "$agood" -e "$abad" -e "$aonce" -e "$aidle" -e a-bad -e a-good "$tmp/bob.json")" 0
call GET "/overview?owner=bob" "$A"
ok_error "?owner= of an editor" 403 forbidden owner
call GET "/overview?owner=alice" "$V"
ok_error "?owner= of a viewer, even its own" 403 forbidden owner

call GET /overview "$ADM"
printf '%s' "$resp" >"$tmp/admin.json"
ok "admin: every owner's schedules" "$(counts .schedules)" "$(sched_counts true)"
ok "admin: every owner's runs" "$(counts .runs.day)" "$(by_status true)"
ok "admin: every owner's executions" "$(counts .executions.day)" "$(x_status true)"
ok "admin: every owner's failures" "$(j '[.recent_failures[].run_id] | join(" ")')" "$(failures true)"
ok "admin: the supervisors listed" "$(j '"\(.supervisors.alive) \(.supervisors.list | length) \(.supervisors.list[0] | keys_unsorted | join(","))"')" \
	"1 1 name,host,version,started_at,heartbeat"
ok "admin: the supervisor's name" "$(j '.supervisors.list[0].name')" "$(sql "SELECT name FROM supervisors WHERE stopped_at IS NULL")"
call GET "/overview?owner=bob" "$ADM"
ok_status "admin: ?owner=bob" 200
ok "admin: ?owner=bob is bob's" "$(printf '%s' "$resp" | jq -cS 'del(.supervisors, .oldest_due)')" "$(jq -cS 'del(.supervisors, .oldest_due)' "$tmp/bob.json")"
call GET "/overview?owner=nobody" "$ADM"
ok "admin: an owner without schedules" "$(counts .schedules) $(counts .runs.day) $(j '.recent_failures | length')" \
	"active=0,paused=0,done=0,dead=0,total=0  0"
call GET "/overview?owner=" "$ADM"
ok_error "admin: ?owner= empty" 400 invalid_query owner
call GET "/overview?x=1" "$A"
ok_error "an unknown parameter" 400 invalid_query x
call GET /overview ""
ok_status "no token: 401" 401
call POST /overview "$A"
ok_status "POST: 405" 405

# --- the oldest due, while the supervisor is stopped ------------------------------------
kill -STOP "$CV_SUPERVISOR_PID"
sql "UPDATE schedules SET next_run_at = now() - interval '5 seconds', next_slot_at = now() - interval '5 seconds' WHERE id = '$aidle'" >/dev/null
call GET /overview "$A"
ok "oldest due: a-idle" "$(j '"\(.oldest_due.schedule_id) \(.oldest_due.name)"')" "$aidle a-idle"
ok "oldest due: its fields" "$(j '.oldest_due | keys_unsorted | join(",")')" "schedule_id,name,next_run_at,late_ms"
ok "oldest due: 5 s late or more" "$(j '.oldest_due.late_ms >= 5000 and .oldest_due.late_ms < 60000')" true
call GET /overview "$B"
ok "oldest due: not bob's" "$(j .oldest_due)" null
call GET /overview "$ADM"
ok "oldest due: the admin's" "$(j .oldest_due.schedule_id)" "$aidle"
kill -CONT "$CV_SUPERVISOR_PID"
ok "oldest due: gone once it ran" "$(wait_api 20 '.oldest_due == null' /overview "$A" && echo gone)" gone
ok "a-idle ran once" "$(wait_for 20 "SELECT count(*) = 1 FROM runs WHERE schedule_id = '$aidle' AND status = 'succeeded'" && echo yes)" yes

# --- two supervisors: each run counted once -------------------------------------------------
grep -v '^supervisor_name' "$CV_CONF" >"$tmp/cvd2.conf"
echo "supervisor_name = overview-2" >>"$tmp/cvd2.conf"
"$CRONVISORD" -f "$tmp/cvd2.conf" </dev/null >>"$work/cvd2.log" 2>&1 &
s2=$!
extra="$extra $s2"
two() { call GET /overview "$ADM"; [ "$(j .supervisors.alive)" = 2 ]; }
ok "two supervisors alive" "$(wait_until 20 two && echo 2)" 2
many=""
for i in 1 2 3 4 5 6; do
	many="$many $(create "$A" "many$i" "$OK1")"
done
wait_for 40 "SELECT count(DISTINCT supervisor_id) >= 2 AND count(*) >= 30 FROM runs WHERE schedule_id IN ($(ids $many)) AND status = 'succeeded'" ||
	echo "the many schedules did not run on both supervisors" >&2
for s in $many; do call POST "/schedules/$s/pause" "$A"; done
ok "the cluster's work settled" "$(settled && echo yes)" yes
ok "runs by both supervisors" "$(sql "SELECT count(DISTINCT supervisor_id) FROM runs WHERE schedule_id IN ($(ids $many))")" 2
rollup() { sql "SELECT coalesce(sum(n), 0) FROM outcome_counts WHERE owner = '$1' AND what = '$2'"; }
ended() { sql "SELECT count(*) FROM runs r JOIN schedules s ON s.id = r.schedule_id WHERE r.status NOT IN ('running', 'waiting') AND $1"; }
xended() { sql "SELECT count(*) FROM executions x JOIN schedules s ON s.id = x.schedule_id WHERE x.status <> 'running' AND $1"; }
ok "rollup: every run once" "$(rollup '' run)" "$(ended true)"
ok "rollup: alice's runs once" "$(rollup alice run)" "$(ended "s.owner = 'alice'")"
ok "rollup: bob's runs once" "$(rollup bob run)" "$(ended "s.owner = 'bob'")"
ok "rollup: every execution once" "$(rollup '' execution)" "$(xended true)"
ok "rollup: the owners' add up to the total" \
	"$(sql "SELECT sum(n) FILTER (WHERE owner <> '') = sum(n) FILTER (WHERE owner = '') FROM outcome_counts")" t
call GET /overview "$A"
ok "alice's overview after the cluster's work" "$(counts .runs.day)" "$(by_status "s.owner = 'alice'")"
echo "runs counted: $(ended true) ($(ended "s.owner = 'alice'") of alice's), over $(sql "SELECT count(*) FROM outcome_counts") rollup rows"

# --- old buckets go --------------------------------------------------------------------------
sql "INSERT INTO outcome_counts (owner, bucket, what, status, n)
     SELECT 'alice', to_timestamp(floor(extract(epoch FROM now()) / 300) * 300) - i, 'run', 'succeeded', 987654
     FROM (VALUES (interval '3 days'), (interval '25 hours')) v(i)" >/dev/null
call GET /overview "$A"
ok "a bucket older than a day is not in the day" "$(counts .runs.day)" "$(by_status "s.owner = 'alice'")"
call POST "/schedules/$aidle/trigger" "$A"
ok "the next events prune the buckets older than two days" \
	"$(wait_for 20 "SELECT count(*) = 0 FROM outcome_counts WHERE bucket < now() - interval '2 days'" && echo gone)" gone
ok "one of a day and more is kept" "$(sql "SELECT count(*) FROM outcome_counts WHERE n = 987654")" 1

api_finish
summary api_overview
