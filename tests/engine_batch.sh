#!/bin/sh
# engine_batch.sh: many runs claimed and finished together.  A claim writes
# the runs of all its one-slot schedules in one statement, and a loop turn
# writes the results of the runs that ended by then in one statement (and
# the schedules' next states in one more); these checks make 54 schedules
# due at the same instant, so that both happen with mixed outcomes, and
# check every schedule's end state as one run at a time would leave it:
#   20 once schedules whose output needs quoting (quote, backslash,
#      newline) and cleaning (a byte that is not UTF-8): done, output kept;
#   10 failing interval schedules with one fixed 1 s retry: the retry is
#      due a second after the batch, then dead;
#   10 interval schedules with `anchor: completion` and 2 repeats: done;
#   12 more once schedules of `exit 0`;
#    3 runs of one schedule in one batch (`catch_up: all`, `overlap:
#      allow`, three missed slots): written one by one, counted three times;
#    1 schedule whose slot has a run row already (written by hand): its
#      claim inserts nothing, starts nothing, and moves it to its next slot.
# Then 10 runs that end together while their schedules were paused,
# deleted or their runs taken over by another supervisor, and 6 that end
# together, two of them triggered beside a slot run of their schedule.
# Usage: engine_batch.sh CRONVISORD CRONVISORCTL CONNINFO-FILE
set -u
prefix=engine_batch
. "$(dirname "$0")/harness.sh"

db_setup || exit 1
# The supervisor's session has every plan it runs sent to it as a NOTICE
# (auto_explain), which it logs at debug level: the plans are checked below.
# Every schedule has one owner: no per-owner limit (engine_fair.sh).
explain="options='-c session_preload_libraries=auto_explain
	-c auto_explain.log_min_duration=0 -c auto_explain.log_level=notice'"
cat >"$work/conf" <<EOF
database_url = "$url $(echo $explain)"
supervisor_name = "batch-test"
heartbeat_seconds = 1
lease_seconds = 3
log_level = "debug"
owner_max_running = 100000
EOF

# What the quoted runs print: a"b\c, a newline, and the byte 0xff.
cat >"$work/quoted.sh" <<'EOF'
printf 'a"b\\c\n\377'
EOF

# All due at one instant, 3 s from now, in one transaction: the supervisor
# starts before it and sees them all due together.
marker="$work/before-ran"
sql "BEGIN;
CREATE TEMP TABLE t AS SELECT date_trunc('second', now()) + interval '3 s' AS at;
INSERT INTO schedules (name, owner, kind, at, next_run_at, next_slot_at, target)
	SELECT 'quoted-' || i, 'test', 'once', at, at, at,
	'{\"type\":\"exec\",\"argv\":[\"/bin/sh\",\"$work/quoted.sh\"]$as_root}'::jsonb
	FROM t, generate_series(1, 20) i;
INSERT INTO schedules (name, owner, kind, interval_seconds, max_retries, backoff,
	retry_delay_seconds, next_run_at, next_slot_at, target)
	SELECT 'failing-' || i, 'test', 'interval', 3600, 1, 'fixed', 1, at, at,
	'$(exec_target "exit 3")'::jsonb FROM t, generate_series(1, 10) i;
INSERT INTO schedules (name, owner, kind, interval_seconds, anchor, total_repeats,
	next_run_at, next_slot_at, target)
	SELECT 'anchor-' || i, 'test', 'interval', 1, 'completion', 2, at, at,
	'{\"type\":\"exec\",\"argv\":[\"/bin/true\"]}'::jsonb FROM t, generate_series(1, 10) i;
INSERT INTO schedules (name, owner, kind, at, next_run_at, next_slot_at, target)
	SELECT 'plain-' || i, 'test', 'once', at, at, at,
	'$(exec_target "exit 0")'::jsonb FROM t, generate_series(1, 12) i;
INSERT INTO schedules (name, owner, kind, interval_seconds, catch_up, overlap,
	next_run_at, next_slot_at, target)
	SELECT 'three', 'test', 'interval', 3600, 'all', 'allow', at,
	at - interval '7201 s', '{\"type\":\"exec\",\"argv\":[\"/bin/true\"]}'::jsonb FROM t;
INSERT INTO schedules (name, owner, kind, interval_seconds, next_run_at, next_slot_at, target)
	SELECT 'before', 'test', 'interval', 3600, at, at,
	'$(exec_target "touch $marker")'::jsonb FROM t;
INSERT INTO runs (id, schedule_id, repeat_number, attempt, slot_at, status, finished_at)
	SELECT 'sched-' || id8 || '-by-hand', id, 0, 0, next_slot_at, 'succeeded', now()
	FROM schedules WHERE name = 'before';
COMMIT" >/dev/null || exit 1
ok created "$(sql "SELECT count(*) FROM schedules")" 54

start
wait_for 30 "SELECT count(*) = 52 FROM schedules WHERE status IN ('done', 'dead')" ||
	echo "timed out: $(sql "SELECT status, count(*) FROM schedules GROUP BY 1")"
wait_for 10 "SELECT running = 0 AND run_count = 3 FROM schedules WHERE name = 'three'"

ok quoted "$(sql "SELECT count(*) FILTER (WHERE s.status = 'done' AND r.status = 'succeeded'
	AND r.output = E'a\"b\\\\c\\n?'), count(*) FROM schedules s JOIN runs r ON r.schedule_id = s.id
	WHERE s.name LIKE 'quoted-%'")" "20|20"
ok failing "$(sql "SELECT count(*) FILTER (WHERE status = 'dead' AND current_retry = 2
	AND error_count = 2 AND last_error = 'exited with status 3' AND running = 0
	AND next_run_at IS NULL), count(*) FROM schedules WHERE name LIKE 'failing-%'")" "10|10"
ok failing-runs "$(sql "SELECT string_agg(DISTINCT x, ',') FROM (SELECT string_agg(r.attempt
	|| ':' || r.status || ':' || r.exit_code, ',' ORDER BY r.attempt) AS x FROM runs r
	JOIN schedules s ON s.id = r.schedule_id WHERE s.name LIKE 'failing-%' GROUP BY s.id) y")" \
	"0:failed:3,1:failed:3"
# The retry waits its delay from the failure, not from the batch's start.
ok failing-delay "$(sql "SELECT bool_and(b.started_at >= a.finished_at + interval '0.95 s')
	FROM runs a JOIN runs b ON b.schedule_id = a.schedule_id AND b.attempt = 1
	JOIN schedules s ON s.id = a.schedule_id WHERE a.attempt = 0 AND s.name LIKE 'failing-%'")" "t"
ok anchor "$(sql "SELECT count(*) FILTER (WHERE status = 'done' AND run_count = 2
	AND current_repeat = 2 AND running = 0), count(*) FROM schedules WHERE name LIKE 'anchor-%'")" "10|10"
# anchor: completion: the second run starts an interval after the first ended.
ok anchor-gap "$(sql "SELECT bool_and(b.started_at >= a.finished_at + interval '0.95 s')
	FROM runs a JOIN runs b ON b.schedule_id = a.schedule_id AND b.repeat_number = 1
	JOIN schedules s ON s.id = a.schedule_id WHERE a.repeat_number = 0 AND s.name LIKE 'anchor-%'")" "t"
ok plain "$(sql "SELECT count(*) FILTER (WHERE s.status = 'done' AND s.run_count = 1
	AND r.status = 'succeeded' AND r.exit_code = 0), count(*)
	FROM schedules s JOIN runs r ON r.schedule_id = s.id WHERE s.name LIKE 'plain-%'")" "12|12"
ok three "$(sql "SELECT s.status || ':' || s.run_count || ':' || s.running || ':' || s.slot_seq
	|| ':' || (s.next_slot_at = t0.at + interval '3599 s') || ':' || string_agg(r.status, ',')
	FROM schedules s JOIN runs r ON r.schedule_id = s.id,
	(SELECT min(slot_at) + interval '7201 s' AS at FROM runs r2 JOIN schedules s2
	 ON s2.id = r2.schedule_id WHERE s2.name = 'three') t0
	WHERE s.name = 'three' GROUP BY s.id, t0.at")" "active:3:0:3:true:succeeded,succeeded,succeeded"
ok before "$(sql "SELECT s.status || ':' || s.running || ':' || s.slot_seq || ':' || s.run_count
	|| ':' || (s.next_slot_at - r.slot_at = interval '3600 s') || ':' || count(*) OVER ()
	FROM schedules s JOIN runs r ON r.schedule_id = s.id WHERE s.name = 'before'")" "active:0:0:0:true:1"
ok before-not-run "$(test -e "$marker" && echo ran || echo "not run")" "not run"

# Both batch paths were taken, with more than one row each.
ok claimed-together "$(grep -Eo '[0-9]+ runs claimed in one statement' "$work/cvd.log" |
	awk '$1 >= 10 { n++ } END { print (n > 0) }')" 1
# Results are gathered while runs end within 2 ms of each other (20 ms at
# most, cronvisord.c): under the sanitizers the 54 runs end some 15 ms apart
# on two cores, so the batches of results are smaller than the claim's.
ok finished-together "$(grep -Eo '[0-9]+ results in one statement' "$work/cvd.log" |
	awk '$1 >= 3 { n++ } END { print (n > 0) }')" 1
ok no-db-errors "$(grep 'database:' "$work/cvd.log" | grep -vc 'database: NOTICE:  duration: ')" 0
# Runs that end together while their schedules changed under them: 3
# paused, 3 deleted (the API's soft delete), 2 whose runs another
# supervisor took over (their runners stopped, their results refused,
# then declared lost, no retry), 2 left alone.  Each as one run at a time
# leaves it.
sql "INSERT INTO supervisors (name, host, pid, version) VALUES ('thief', 'elsewhere', 1, 'test')" >/dev/null
thief=$(sql "SELECT id FROM supervisors WHERE name = 'thief'")
sql "BEGIN;
CREATE TEMP TABLE t AS SELECT date_trunc('second', now()) + interval '2 s' AS at;
INSERT INTO schedules (name, owner, kind, interval_seconds, max_retries, next_run_at, next_slot_at, target)
	SELECT 'late-' || i, 'test', 'interval', 3600, 0, at, at,
	(CASE WHEN i IN (7, 8) THEN '$(exec_target "sleep 30")'
	 ELSE '$(exec_target "sleep 2")' END)::jsonb FROM t, generate_series(1, 10) i;
COMMIT" >/dev/null || exit 1
wait_for 15 "SELECT count(*) = 10 FROM runs r JOIN schedules s ON s.id = r.schedule_id
	WHERE s.name LIKE 'late-%' AND r.status = 'running'"
late() { sql "SELECT string_agg(id::text, ' ') FROM schedules WHERE name IN ($1)"; }
taken=$(late "'late-7', 'late-8'")
sql "UPDATE schedules SET status = 'paused', next_run_at = NULL WHERE name IN ('late-1', 'late-2', 'late-3');
	UPDATE schedules SET deleted_at = now(), status = 'paused', next_run_at = NULL
	WHERE name IN ('late-4', 'late-5', 'late-6');
	UPDATE runs SET supervisor_id = $thief WHERE schedule_id IN
	(SELECT id FROM schedules WHERE name IN ('late-7', 'late-8'))" >/dev/null
wait_for 20 "SELECT count(*) = 2 FROM schedules WHERE name IN ('late-7', 'late-8') AND status = 'dead'" ||
	echo "timed out: $(sql "SELECT name, status FROM schedules WHERE name LIKE 'late-%'")"
wait_for 10 "SELECT count(*) = 7 FROM schedules WHERE name LIKE 'late-%'"
ok late-paused "$(sql "SELECT count(*) FILTER (WHERE s.status = 'paused' AND s.running = 0
	AND s.run_count = 1 AND s.next_run_at IS NULL AND r.status = 'succeeded'), count(*)
	FROM schedules s JOIN runs r ON r.schedule_id = s.id WHERE s.name IN ('late-1', 'late-2', 'late-3')")" "3|3"
ok late-deleted "$(sql "SELECT count(*) FROM schedules WHERE name IN ('late-4', 'late-5', 'late-6')"):$(
	grep -c "the last run in flight of deleted schedule" "$work/cvd.log")" "0:3"
ok late-taken "$(sql "SELECT string_agg(DISTINCT s.status || ':' || r.status || ':' || s.run_count, ',')
	FROM schedules s JOIN runs r ON r.schedule_id = s.id WHERE s.name IN ('late-7', 'late-8')")" "dead:lost:0"
refused=0
for id in $taken; do
	grep -q "run sched-$(printf '%.8s' "$id")-n0-rc0: no longer ours (lease lost)" "$work/cvd.log" &&
		refused=$((refused + 1))
done
ok late-taken-refused "$refused" 2
# Their runners (sleep 30) were stopped at the next heartbeat, which found
# the rows no longer ours, and the log says so, not "shutdown".
stopped=0
for id in $taken; do
	grep -q "run sched-$(printf '%.8s' "$id")-n0-rc0 schedule \"late-[78]\": interrupted: stopped: another supervisor declared the run lost" \
		"$work/cvd.log" && stopped=$((stopped + 1))
done
ok late-taken-stopped "$stopped:$(grep -c 'supervisor shutdown' "$work/cvd.log")" "2:0"
ok late-alone "$(sql "SELECT count(*) FILTER (WHERE s.status = 'active' AND s.running = 0
	AND s.run_count = 1 AND s.next_run_at = s.next_slot_at AND r.status = 'succeeded'), count(*)
	FROM schedules s JOIN runs r ON r.schedule_id = s.id WHERE s.name IN ('late-9', 'late-10')")" "2|2"

# Triggered runs ending in one batch with slot runs, two of them beside a
# slot run of their own schedule: all six runs read one FIFO and end when
# it closes.  The test holds the FIFO open for writing from before they
# start, so that a command's open never waits, and each command says it
# has it open (a file of its own) before it reads; once all six have, the
# test closes its end and every one of them sees the end of the FIFO at
# once.  A triggered run moves only `running`; the slot runs move their
# schedules on as if alone.  Such a batch locks its schedules first and
# writes the triggered runs and the second run of a schedule one by one,
# in the same transaction.
fifo="$work/barrier"
mkfifo "$fifo" && mkdir "$work/ready" || exit 1
exec 9<>"$fifo"
sql "BEGIN;
CREATE TEMP TABLE t AS SELECT date_trunc('second', now()) + interval '2 s' AS at;
INSERT INTO schedules (name, owner, kind, interval_seconds, overlap, next_run_at, next_slot_at, target)
	SELECT 'mixed-' || i, 'test', 'interval', 3600, 'allow', at, at,
	'$(exec_target "exec 3<$fifo; touch $work/ready/\$\$; cat <&3 >/dev/null; echo ran")'::jsonb
	FROM t, generate_series(1, 4) i;
COMMIT" >/dev/null || exit 1
holding() { [ "$(ls "$work/ready" | wc -l)" -ge "$1" ]; }
ready() { # ready N: waits up to 15 s for N commands holding the FIFO
	wait_until 15 holding "$1"
	ls "$work/ready" | wc -l
}
ok mixed-slots-ready "$(ready 4)" 4
sql "INSERT INTO triggers (schedule_id, requested_by)
	SELECT id, 'test' FROM schedules WHERE name IN ('mixed-1', 'mixed-2')" >/dev/null
ok mixed-all-ready "$(ready 6)" 6
locked=$(grep -c 'schedules locked first' "$work/cvd.log")
# The six end within moments of each other, yet a slow machine may see
# the first end alone and write it before the others end.  The test
# holds the jobs table locked (a finish writes its runs' jobs; nothing
# else the supervisor does meanwhile writes that table) until all six
# have ended in the supervisor (its log says so), so that whatever a first
# write took, the rest wait together for the next one.
mkfifo "$work/lock" || exit 1
psql "$url" -X -q -v ON_ERROR_STOP=1 <"$work/lock" >/dev/null 2>&1 9>&- &
locker=$!
exec 8>"$work/lock"
echo "BEGIN; LOCK TABLE jobs IN SHARE MODE;" >&8
wait_for 10 "SELECT count(*) = 1 FROM pg_locks WHERE relation = 'jobs'::regclass
	AND mode = 'ShareLock' AND granted"
ok mixed-lock-held "$?" 0
exec 9>&-
ended() { [ "$(grep -c 'schedule "mixed-[0-9]": ended' "$work/cvd.log")" -ge 6 ]; }
wait_until 15 ended
ok mixed-all-ended "$(grep -c 'schedule "mixed-[0-9]": ended' "$work/cvd.log")" 6
echo "COMMIT;" >&8
exec 8>&-
wait "$locker"
wait_for 15 "SELECT count(*) = 0 FROM runs r JOIN schedules s ON s.id = r.schedule_id
	WHERE s.name LIKE 'mixed-%' AND r.status = 'running'"
ok mixed-runs "$(sql "SELECT string_agg(s.name || ':' || r.triggered || ':' || r.status || ':' || r.output,
	' ' ORDER BY s.name, r.triggered) FROM schedules s JOIN runs r ON r.schedule_id = s.id
	WHERE s.name LIKE 'mixed-%'")" "$(printf 'mixed-1:false:succeeded:ran\n mixed-1:true:succeeded:ran\n mixed-2:false:succeeded:ran\n mixed-2:true:succeeded:ran\n mixed-3:false:succeeded:ran\n mixed-4:false:succeeded:ran\n')"
ok mixed-schedules "$(sql "SELECT string_agg(DISTINCT s.status || ':' || s.running || ':' || s.run_count
	|| ':' || s.current_repeat || ':' || (s.next_run_at = r.slot_at + interval '3600 s'), ',')
	FROM schedules s JOIN runs r ON r.schedule_id = s.id AND NOT r.triggered WHERE s.name LIKE 'mixed-%'")" \
	"active:0:1:1:true"
ok mixed-batch "$(grep -c 'schedules locked first' "$work/cvd.log" | awk -v b="$locked" '{ print ($1 > b) }')" 1

# Every row the supervisor read or wrote, in both parts, it reached through
# an index: no statement scanned all the schedules or all the runs (a burst's batches
# each did, while the statistics still said the tables were small), nor
# read every due schedule to sort them for a claim of a few.
plans=$(grep -c 'database: NOTICE:  duration: ' "$work/cvd.log")
ok plans-logged "$(test "$plans" -ge 20 && grep -q 'Update on schedules' "$work/cvd.log" &&
	echo yes)" yes
ok plans-use-indexes "$(grep -E 'Seq Scan on (schedules|runs)|Bitmap Heap Scan on (schedules|runs)' \
	"$work/cvd.log" | sort | uniq -c)" ""
# And every join row by row (a generic plan, made once while the tables
# were small, that hashes a whole table into each batch would do so for
# the session's life: cronvisord_session).
ok plans-nested-loops "$(grep -E '(Hash|Merge) ([A-Z][a-z]+ )*Join' \
	"$work/cvd.log" | sed 's/(cost=.*//' | sort | uniq -c)" ""

summary engine_batch
