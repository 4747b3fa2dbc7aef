#!/bin/sh
# engine_trigger.sh: the real cronvisord against the fixture's PostgreSQL
# (CTest fixture "pg", tests/pg-harness.sh) serving what the REST API asks
# of it, with the rows inserted with SQL exactly as the API writes them:
# trigger-now requests (a `triggers` row, whose insert NOTIFYs) and the
# deletion of a schedule with runs in flight (deleted_at set, paused,
# nothing due).  Every wait is bounded.  Checks: a triggered run starts
# within a second of the request under its own id sched-<id8>-t<N>, with
# CRONVISOR_TRIGGERED=1 and the request's payload in CRONVISOR_PAYLOAD
# (a slot run has 0 and the schedule's payload); a triggered success or
# failure leaves the schedule's counters and status alone and a failure is
# not retried; a paused schedule can be triggered; overlap skip records a
# trigger during a run as skipped; a slot held back by buffer_one while a
# triggered run runs starts when it ends, and so does a once schedule's
# slot (whatever its overlap); a deleted schedule's request is
# dropped; a schedule deleted during a run goes, with its runs, once that
# run is recorded; a triggered run lost to kill -9 or interrupted by a stop
# is not retried; two supervisors share 200 requests, each run once.
# Usage: engine_trigger.sh CRONVISORD CRONVISORCTL CONNINFO-FILE
set -u
prefix=engine_trigger
. "$(dirname "$0")/harness.sh"

# later NAME COLUMNS VALUES: an active schedule whose next slot is an hour
# away (only requests make it run meanwhile); prints its id.
later() {
	sql "INSERT INTO schedules (name, owner, next_run_at, next_slot_at, $2)
	     VALUES ('$1', 'test', now() + interval '1 hour',
	             now() + interval '1 hour', $3) RETURNING id"
}

# paused NAME COLUMNS VALUES: a paused schedule; prints its id.
paused() {
	sql "INSERT INTO schedules (name, owner, status, $2)
	     VALUES ('$1', 'test', 'paused', $3) RETURNING id"
}

# trig SCHEDULE PAYLOAD-SQL: a trigger-now request as POST .../trigger
# inserts it (PAYLOAD-SQL NULL: the schedule's payload); prints its id.
trig() {
	sql "INSERT INTO triggers (schedule_id, payload, requested_by)
	     VALUES ('$1', $2, 'test') RETURNING id"
}

# run_of SCHEDULE REQUEST: the id of the run a request makes.
run_of() {
	echo "sched-$(echo "$1" | cut -c1-8)-t$2"
}

# soft_delete SCHEDULE: DELETE /schedules/{id} with runs in flight.
soft_delete() {
	sql "UPDATE schedules SET deleted_at = now(), status = 'paused',
	     next_run_at = NULL, retry_pending = false, updated_at = now()
	     WHERE id = '$1'" >/dev/null
}

# state SCHEDULE: what a triggered run must not change.
state() {
	sql "SELECT status, current_repeat, current_retry, run_count,
	     error_count, retry_pending, next_run_at FROM schedules
	     WHERE id = '$1'"
}

# envvar RUN VAR: VAR as the run's command saw it.
envvar() {
	sed -n "s/^$2=//p" "$work/$1.env" 2>/dev/null
}

db_setup || exit 1
start trigger-test

# A slot run, then triggered runs with and without a payload of their own:
# each command writes its environment to $work/<run id>.env.
envcmd=$(exec_target "env > $work/\$CRONVISOR_RUN_ID.env")
envs=$(add envs "kind, interval_seconds, trigger_payload, target" \
	"'interval', 3600, '{\"report\": \"daily\"}', '$envcmd'")
wait_for 10 "SELECT run_count = 1 FROM schedules WHERE id = '$envs'"
slotrun=$(sql "SELECT id FROM runs WHERE schedule_id = '$envs'")
ok slot-triggered-env "$(envvar "$slotrun" CRONVISOR_TRIGGERED)" "0"
ok slot-payload-env "$(envvar "$slotrun" CRONVISOR_PAYLOAD)" '{"report":"daily"}'
before=$(state "$envs")
t1=$(trig "$envs" "'{\"report\": \"manual\", \"rows\": [1, 2]}'")
r1=$(run_of "$envs" "$t1")
wait_for 10 "SELECT status = 'succeeded' FROM runs WHERE id = '$r1'"
ok trigger-run "$(sql "SELECT status, triggered, attempt,
	repeat_number = (SELECT slot_seq FROM schedules WHERE id = '$envs'),
	started_at - slot_at < interval '1 second', slot_at <> date_trunc('second', slot_at)
	FROM runs WHERE id = '$r1'")" "succeeded|t|0|t|t|t"
ok trigger-consumed "$(sql "SELECT count(*) FROM triggers")" "0"
ok trigger-env "$(envvar "$r1" CRONVISOR_TRIGGERED)" "1"
ok trigger-payload-env "$(envvar "$r1" CRONVISOR_PAYLOAD)" '{"rows":[1,2],"report":"manual"}'
ok trigger-run-id-env "$(envvar "$r1" CRONVISOR_RUN_ID)" "$r1"
t2=$(trig "$envs" NULL)
r2=$(run_of "$envs" "$t2")
wait_for 10 "SELECT status = 'succeeded' FROM runs WHERE id = '$r2'"
ok trigger-default-payload "$(envvar "$r2" CRONVISOR_PAYLOAD):$(envvar "$r2" CRONVISOR_TRIGGERED)" '{"report":"daily"}:1'
ok trigger-success-state "$(state "$envs")" "$before"
ok trigger-last-run "$(sql "SELECT last_run_at >= (SELECT started_at FROM runs WHERE id = '$r2') FROM schedules WHERE id = '$envs'")" "t"

# A triggered failure: recorded, not retried, no counter moves.
failing=$(later failing "kind, interval_seconds, max_retries, backoff, retry_delay_seconds, target" \
	"'interval', 3600, 2, 'fixed', 1, '$(exec_target "echo oops >&2; exit 3")'")
before=$(state "$failing")
t3=$(trig "$failing" NULL)
r3=$(run_of "$failing" "$t3")
wait_for 10 "SELECT status = 'failed' FROM runs WHERE id = '$r3'"
sleep 2.5 # a retry would have come after 1 s
ok trigger-failure "$(sql "SELECT string_agg(id || ':' || status || ':' || exit_code, ',') FROM runs WHERE schedule_id = '$failing'")" "$r3:failed:3"
ok trigger-failure-state "$(state "$failing")" "$before"
ok trigger-failure-running "$(sql "SELECT running FROM schedules WHERE id = '$failing'")" "0"

# A paused schedule runs when triggered, and stays paused.
sleeper=$(paused sleeper "kind, interval_seconds, target" \
	"'interval', 60, '$(exec_target "echo paused-run")'")
before=$(state "$sleeper")
t4=$(trig "$sleeper" NULL)
r4=$(run_of "$sleeper" "$t4")
wait_for 10 "SELECT status = 'succeeded' FROM runs WHERE id = '$r4'"
ok trigger-paused "$(sql "SELECT output FROM runs WHERE id = '$r4'")" "paused-run"
ok trigger-paused-state "$(state "$sleeper")" "$before"

# overlap skip: a request while a run is in flight is recorded skipped.
busy=$(add busy "kind, interval_seconds, target" \
	"'interval', 3600, '$(exec_target "sleep 3")'")
wait_for 10 "SELECT running = 1 FROM schedules WHERE id = '$busy'"
t5=$(trig "$busy" NULL)
r5=$(run_of "$busy" "$t5")
wait_for 10 "SELECT count(*) = 1 FROM runs WHERE id = '$r5'"
ok trigger-skipped "$(sql "SELECT status, triggered, note FROM runs WHERE id = '$r5'")" \
	"skipped|t|triggered while a run was in flight (overlap: skip)"
ok trigger-skipped-running "$(sql "SELECT running FROM schedules WHERE id = '$busy'")" "1"

# buffer_one: the slot that comes due during a triggered run waits for
# its end, then runs.
buf=$(sql "INSERT INTO schedules (name, owner, next_run_at, next_slot_at,
	kind, interval_seconds, overlap, target) VALUES ('buf', 'test',
	now() + interval '1 second', now() + interval '1 second', 'interval',
	3600, 'buffer_one', '$(exec_target "sleep 2")') RETURNING id")
t6=$(trig "$buf" NULL)
r6=$(run_of "$buf" "$t6")
wait_for 15 "SELECT count(*) = 1 FROM runs WHERE schedule_id = '$buf' AND NOT triggered AND status = 'succeeded'"
ok buffer-one-after-trigger "$(sql "SELECT count(*) FILTER (WHERE triggered) || ':' ||
	bool_and(r.started_at >= (SELECT finished_at FROM runs WHERE id = '$r6')) FILTER (WHERE NOT triggered)
	FROM runs r WHERE schedule_id = '$buf' AND status = 'succeeded'")" "1:true"
ok buffer-one-state "$(sql "SELECT current_repeat, run_count, running FROM schedules WHERE id = '$buf'")" "1|1|0"

# A once schedule (overlap skip) whose only slot comes due during a
# triggered run: the slot waits for that run instead of being skipped
# (which would leave the schedule active with nothing due), then runs.
one=$(sql "INSERT INTO schedules (name, owner, next_run_at, next_slot_at,
	kind, at, target) VALUES ('once-during-trigger', 'test',
	now() + interval '1 second', now() + interval '1 second', 'once',
	now() + interval '1 second', '$(exec_target "sleep 2")') RETURNING id")
trig "$one" NULL >/dev/null
wait_for 15 "SELECT status = 'done' FROM schedules WHERE id = '$one'"
ok once-after-trigger "$(sql "SELECT string_agg(status || ':' || triggered, ',' ORDER BY triggered)
	FROM runs WHERE schedule_id = '$one'")" "succeeded:false,succeeded:true"

# A deleted schedule (a run still in flight, so the row is kept) drops a
# request; once its run is recorded the schedule and its runs are gone.
gone=$(add gone "kind, interval_seconds, overlap, target" \
	"'interval', 3600, 'allow', '$(exec_target "sleep 2; echo finished")'")
wait_for 10 "SELECT running = 1 FROM schedules WHERE id = '$gone'"
gonerun=$(sql "SELECT id FROM runs WHERE schedule_id = '$gone'")
soft_delete "$gone"
t7=$(trig "$gone" NULL)
r7=$(run_of "$gone" "$t7")
wait_for 5 "SELECT count(*) = 0 FROM triggers WHERE id = $t7"
ok deleted-trigger-dropped "$(sql "SELECT count(*) FROM runs WHERE id = '$r7'"):$(sql "SELECT running FROM schedules WHERE id = '$gone'")" "0:1"
wait_for 10 "SELECT count(*) = 0 FROM schedules WHERE id = '$gone'"
ok deleted-gone "$(sql "SELECT (SELECT count(*) FROM schedules WHERE id = '$gone') || ':' || (SELECT count(*) FROM runs WHERE schedule_id = '$gone')")" "0:0"
ok deleted-run-recorded "$(grep -c "run $gonerun schedule \"gone\": succeeded" "$work/trigger-test.log")" "1"
ok deleted-by-finish "$(grep -c "run $gonerun: the last run in flight of deleted schedule $gone is recorded" "$work/trigger-test.log")" "1"

# The safety net: a deleted schedule with nothing in flight goes at the
# next heartbeat.
idle=$(paused idle "kind, interval_seconds, target" "'interval', 60, '$(exec_target true)'")
sql "UPDATE schedules SET deleted_at = now() WHERE id = '$idle'" >/dev/null
wait_for 5 "SELECT count(*) = 0 FROM schedules WHERE id = '$idle'"
ok deleted-idle-pruned "$(sql "SELECT count(*) FROM schedules WHERE id = '$idle'")" "0"

# A deleted schedule whose triggered run is in flight goes once that run
# is recorded.
tgone=$(paused tgone "kind, interval_seconds, target" "'interval', 60, '$(exec_target "sleep 2")'")
t8=$(trig "$tgone" NULL)
r8=$(run_of "$tgone" "$t8")
wait_for 10 "SELECT count(*) = 1 FROM runs WHERE id = '$r8' AND status = 'running'"
soft_delete "$tgone"
wait_for 10 "SELECT count(*) = 0 FROM schedules WHERE id = '$tgone'"
ok deleted-after-trigger "$(sql "SELECT count(*) FROM runs WHERE schedule_id = '$tgone'"):$(grep -c "run $r8: the last run in flight of deleted schedule" "$work/trigger-test.log")" "0:1"

ok unharmed "$(kill -0 "$pid_trigger_test" && echo alive)" "alive"

# kill -9 during a triggered run: the restarted supervisor declares it
# lost and does not retry it.
crash=$(later crash "kind, interval_seconds, max_retries, retry_delay_seconds, target" \
	"'interval', 3600, 3, 1, '$(exec_target "sleep 3")'")
before=$(state "$crash")
t9=$(trig "$crash" NULL)
r9=$(run_of "$crash" "$t9")
wait_for 10 "SELECT count(*) = 1 FROM runs WHERE id = '$r9' AND status = 'running'"
crash trigger-test
start trigger-test
wait_for 15 "SELECT status = 'lost' FROM runs WHERE id = '$r9'"
sleep 2.5 # a retry would have come after 1 s
ok lost-not-retried "$(sql "SELECT string_agg(id || ':' || status, ',') FROM runs WHERE schedule_id = '$crash'")" "$r9:lost"
ok lost-state "$(state "$crash")" "$before"
ok lost-running "$(sql "SELECT running FROM schedules WHERE id = '$crash'")" "0"

# A stop interrupts a triggered run; it is not retried either.
stopped=$(later stopped "kind, interval_seconds, max_retries, retry_delay_seconds, target" \
	"'interval', 3600, 3, 1, '$(exec_target "sleep 30")'")
before=$(state "$stopped")
t10=$(trig "$stopped" NULL)
r10=$(run_of "$stopped" "$t10")
wait_for 10 "SELECT count(*) = 1 FROM runs WHERE id = '$r10' AND status = 'running'"
stop trigger-test
ok sigterm-exit "$rc" "0"
start trigger-test
sleep 2.5
ok interrupted-not-retried "$(sql "SELECT string_agg(id || ':' || status, ',') FROM runs WHERE schedule_id = '$stopped'")" "$r10:interrupted"
ok interrupted-state "$(state "$stopped")" "$before"

# Two supervisors and 200 requests for four schedules at once: every
# request makes exactly one run, nobody deadlocks.
start trigger-test-b
wait_for 10 "SELECT count(*) = 1 FROM supervisors WHERE name = 'trigger-test-b' AND stopped_at IS NULL"
# Each run takes a moment, so that one supervisor's 64 run slots fill and
# the other takes its share.
sql "INSERT INTO schedules (name, owner, status, kind, interval_seconds, overlap, target)
	SELECT 'many' || i, 'test', 'paused', 'interval', 60, 'allow', '$(exec_target "sleep 0.2")'
	FROM generate_series(1, 4) i" >/dev/null
sql "INSERT INTO triggers (schedule_id, payload, requested_by)
     SELECT id, jsonb_build_object('n', i), 'test' FROM schedules, generate_series(1, 50) i
     WHERE name LIKE 'many%'" >/dev/null
wait_for 30 "SELECT count(*) = 200 FROM runs r JOIN schedules s ON s.id = r.schedule_id WHERE s.name LIKE 'many%' AND r.status = 'succeeded'"
ok many-runs "$(sql "SELECT count(*) || ':' || count(DISTINCT r.id) || ':' || bool_and(triggered) || ':' || count(DISTINCT supervisor_id)
	FROM runs r JOIN schedules s ON s.id = r.schedule_id WHERE s.name LIKE 'many%'")" "200:200:true:2"
ok many-consumed "$(sql "SELECT count(*) FROM triggers")" "0"
ok many-idle "$(sql "SELECT sum(running) || ':' || sum(run_count) FROM schedules WHERE name LIKE 'many%'")" "0:0"
ok many-no-deadlock "$(cat "$work"/trigger-test*.log | grep -c -i deadlock)" "0"
stop trigger-test
ok second-exit "$rc" "0"
stop trigger-test-b
ok b-exit "$rc" "0"

summary engine_trigger
