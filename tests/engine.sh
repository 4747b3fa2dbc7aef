#!/bin/sh
# engine.sh: the real cronvisord against the fixture's PostgreSQL (CTest
# fixture "pg", tests/pg-harness.sh), with schedules inserted with SQL as an
# operator could.  Every wait is bounded; every run really forks, execs and
# times out.  Checks: repeats end done, failures retry with backoff and end
# dead, a timeout kills the command, a one-shot fires once, pause stops
# runs, a memory hog and 100 MB of output fail or pass cleanly with the
# supervisor unharmed, overlap buffer_one waits instead of skipping, SIGHUP
# reloads (a bad file changes nothing), retention keeps history_limit runs,
# SIGTERM stops the supervisor cleanly, and after kill -9 a restarted
# supervisor declares the orphaned run lost and retries it.
# Usage: engine.sh CRONVISORD CRONVISORCTL CONNINFO-FILE
set -u
prefix=engine
. "$(dirname "$0")/harness.sh"

db_setup || exit 1
cat >"$work/conf" <<EOF
database_url = "$url"
supervisor_name = "engine-test"
heartbeat_seconds = 1
lease_seconds = 3
shutdown_grace_seconds = 5
kill_grace_seconds = 1
EOF

ok config-check "$("$cvd" -n -f "$work/conf" | grep -c '^heartbeat_seconds = 1$')" "1"
ok config-check-bad "$("$cvd" -n -f /nonexistent/cronvisor.conf 2>&1; echo "exit $?")" "cronvisord: cannot read /nonexistent/cronvisor.conf: No such file or directory
exit 1"

start
# catch_up all: on a loaded machine a slot claimed more than its 1 s late
# still runs as the next repeat instead of leaving a missed row; overlap
# allow: a run that outlasts its second there (the sanitizer build under
# load) does not leave a skipped row for the next slot either, and no
# more runs than the repeats still needed are ever in flight
repeat=$(add repeat "kind, interval_seconds, total_repeats, catch_up, overlap, target" \
	"'interval', 1, 3, 'all', 'allow', '{\"type\":\"exec\",\"argv\":[\"/bin/echo\",\"hello\"]}'")
failing=$(add failing "kind, interval_seconds, max_retries, backoff, retry_delay_seconds, target" \
	"'interval', 3600, 2, 'fixed', 1, '{\"type\":\"exec\",\"argv\":[\"/bin/sh\",\"-c\",\"echo oops >&2; exit 3\"]}'")
# Its sleep's argument is this test's own, so that pgrep below cannot see
# another test's sleep.
nap=30.$$
slow=$(add slow "kind, interval_seconds, max_retries, timeout_seconds, target" \
	"'interval', 3600, 0, 1, '{\"type\":\"exec\",\"argv\":[\"/bin/sh\",\"-c\",\"echo started; sleep $nap\"]}'")
once=$(add once "kind, at, target" \
	"'once', now(), '{\"type\":\"exec\",\"argv\":[\"/bin/true\"]}'")

wait_for 20 "SELECT status = 'done' FROM schedules WHERE id = '$repeat'"
ok repeat-done "$(sql "SELECT status, current_repeat, run_count FROM schedules WHERE id = '$repeat'")" "done|3|3"
ok repeat-runs "$(sql "SELECT string_agg(id || ':' || status || ':' || output, ',' ORDER BY id) FROM runs WHERE schedule_id = '$repeat'" | sed "s/sched-[0-9a-f]*-//g")" \
	"n0-rc0:succeeded:hello
,n1-rc0:succeeded:hello
,n2-rc0:succeeded:hello"
# total_repeats with runs in flight: never more runs than the count
# (overlap allow, catch_up all), and no slot skipped after the last one
# (overlap skip): each run outlasts the 1 s interval
past="date_trunc('second', now()) - interval '30s'"
rep_allow=$(add rep_allow "kind, interval_seconds, total_repeats, overlap, target" \
	"'interval', 1, 2, 'allow', '$(exec_target "sleep 2.5")'")
rep_skip=$(add rep_skip "kind, interval_seconds, total_repeats, target" \
	"'interval', 1, 2, '$(exec_target "sleep 2.5")'")
rep_all=$(sql "INSERT INTO schedules (name, owner, next_run_at, next_slot_at, kind, interval_seconds, total_repeats, overlap, catch_up, max_catch_up_runs, target)
	VALUES ('rep_all', 'test', $past, $past, 'interval', 1, 2, 'allow', 'all', 5, '$(exec_target "sleep 1")') RETURNING id")
wait_for 30 "SELECT count(*) = 3 FROM schedules WHERE id IN ('$rep_allow', '$rep_skip', '$rep_all') AND status = 'done'"
# current_repeat, succeeded runs, rows after the last success, other rows
for r in "allow:$rep_allow" "skip:$rep_skip" "all:$rep_all"; do
	ok "repeats-${r%%:*}" "$(sql "SELECT s.current_repeat || ':' ||
		count(*) FILTER (WHERE r.status = 'succeeded') || ':' ||
		count(*) FILTER (WHERE r.status <> 'missed' AND r.slot_at > (SELECT max(slot_at) FROM runs WHERE schedule_id = s.id AND status = 'succeeded')) || ':' ||
		count(*) FILTER (WHERE r.status NOT IN ('succeeded', 'skipped', 'missed'))
		FROM schedules s JOIN runs r ON r.schedule_id = s.id WHERE s.id = '${r#*:}' GROUP BY s.current_repeat")" "2:2:0:0"
done
wait_for 20 "SELECT status = 'dead' FROM schedules WHERE id = '$failing'"
ok failing-dead "$(sql "SELECT status, current_retry, error_count, last_error FROM schedules WHERE id = '$failing'")" "dead|3|3|exited with status 3"
ok failing-runs "$(sql "SELECT string_agg(attempt || ':' || status || ':' || exit_code, ',' ORDER BY attempt) FROM runs WHERE schedule_id = '$failing'")" \
	"0:failed:3,1:failed:3,2:failed:3"
ok failing-backoff "$(sql "SELECT bool_and(gap >= 0.95) FROM (SELECT extract(epoch FROM started_at - lag(finished_at) OVER (ORDER BY attempt)) AS gap FROM runs WHERE schedule_id = '$failing') x WHERE gap IS NOT NULL")" "t"
wait_for 20 "SELECT status = 'dead' FROM schedules WHERE id = '$slow'"
ok slow-timeout "$(sql "SELECT status, output, duration_ms < 5000 FROM runs WHERE schedule_id = '$slow'")" "timed_out|started
|t"
ok slow-gone "$(pgrep -f "sleep $nap" | wc -l)" "0"
wait_for 10 "SELECT status = 'done' FROM schedules WHERE id = '$once'"
ok once-done "$(sql "SELECT count(*) || ':' || min(status) FROM runs WHERE schedule_id = '$once'")" "1:succeeded"

# pause: no run starts while paused
ticker=$(add ticker "kind, interval_seconds, target" \
	"'interval', 1, '{\"type\":\"exec\",\"argv\":[\"/bin/true\"]}'")
wait_for 10 "SELECT count(*) >= 2 FROM runs WHERE schedule_id = '$ticker' AND status = 'succeeded'"
sql "UPDATE schedules SET status = 'paused', next_run_at = NULL WHERE id = '$ticker'" >/dev/null
sleep 1
n1=$(sql "SELECT count(*) FROM runs WHERE schedule_id = '$ticker'")
sleep 2.5
ok paused "$(sql "SELECT count(*) FROM runs WHERE schedule_id = '$ticker'")" "$n1"

# hostile commands fail cleanly and leave the supervisor unharmed
hog=$(add hog "kind, interval_seconds, max_retries, limits, target" \
	"'interval', 3600, 0, '{\"memory_mb\": 64}', '{\"type\":\"exec\",\"argv\":[\"python3\",\"-c\",\"x = bytearray(512 * 1024 * 1024)\"]}'")
flood=$(add flood "kind, interval_seconds, total_repeats, target" \
	"'interval', 3600, 1, '{\"type\":\"exec\",\"argv\":[\"/bin/sh\",\"-c\",\"head -c 100000000 /dev/zero; echo end\"]}'")
wait_for 20 "SELECT status = 'dead' FROM schedules WHERE id = '$hog'"
ok memory-limit "$(sql "SELECT status, exit_code FROM runs WHERE schedule_id = '$hog'")" "failed|1"
wait_for 30 "SELECT status = 'done' FROM schedules WHERE id = '$flood'"
ok big-output "$(sql "SELECT status, length(output) <= 16384, right(output, 4) FROM runs WHERE schedule_id = '$flood'")" "succeeded|t|end"
# output that is not UTF-8 (a surrogate, an overlong form, a NUL) is kept
# with its bad bytes as '?', and the result is not lost
bytes=$(add bytes "kind, at, target" \
	"'once', now(), '{\"type\":\"exec\",\"argv\":[\"/bin/sh\",\"-c\",\"printf \\\\\\\\355\\\\\\\\240\\\\\\\\200ok\\\\\\\\300\\\\\\\\257\\\\\\\\000end\"]}'")
wait_for 10 "SELECT status = 'done' FROM schedules WHERE id = '$bytes'"
ok not-utf8 "$(sql "SELECT status || ':' || output FROM runs WHERE schedule_id = '$bytes'")" "succeeded:???ok???end"
# a row that cannot be run (a zone this machine does not know) is made
# dead with the reason instead of being claimed again and again
nozone=$(add nozone "kind, interval_seconds, timezone, cron, target" \
	"'cron', NULL, 'Nowhere/Land', '* * * * *', '{\"type\":\"exec\",\"argv\":[\"/bin/true\"]}'")
wait_for 10 "SELECT status = 'dead' FROM schedules WHERE id = '$nozone'"
ok unrunnable "$(sql "SELECT status || ':' || last_error FROM schedules WHERE id = '$nozone'")" 'dead:unknown time zone "Nowhere/Land"'
ok unharmed "$(kill -0 "$pid" && echo alive)" "alive"

# The runner helper (runner/zygote.c) forks the runners of exec runs, and
# a runner is the supervisor's child all the same: the supervisor reaps
# it.  Killed, the helper is replaced at the next exec run; a run it had
# started goes on.
helper=$(pgrep -P "$pid" -x cronvisor-runne)
ok helper-running "$(echo "$helper" | grep -c .)" "1"
doze=2.$$
zap=$(add zap "kind, at, target" \
	"'once', now(), '{\"type\":\"exec\",\"argv\":[\"/bin/sleep\",\"$doze\"]}'")
i=0
until target=$(pgrep -f "sleep $doze") || [ $i -ge 100 ]; do sleep 0.1; i=$((i + 1)); done
runner=$(ps -o ppid= -p "$target" | tr -d ' ')
ok helper-runner "$(cat /proc/"$runner"/comm):$(tr '\0' ' ' </proc/"$runner"/cmdline):$(ps -o ppid= -p "$runner" | tr -d ' ')" \
	"cronvisord:cronvisor-runner --helper :$pid"
kill -9 "$helper"
wait_for 10 "SELECT status = 'done' FROM schedules WHERE id = '$zap'"
ok helper-killed-run-ends "$(sql "SELECT status FROM runs WHERE schedule_id = '$zap'")" "succeeded"
ok helper-death-logged "$(grep -c "runner helper $helper: " "$work/cvd.log")" "1"
sleep 1.2 # a dead helper is replaced a second after it was reaped (logged)
after=$(add after "kind, at, target" "'once', now(), '{\"type\":\"exec\",\"argv\":[\"/bin/true\"]}'")
wait_for 10 "SELECT status = 'done' FROM schedules WHERE id = '$after'"
ok helper-replaced "$(pgrep -P "$pid" -x cronvisor-runne | grep -vx "$helper" | grep -c .)" "1"
ok helper-restarted "$([ "$(grep -c 'runner helper [0-9]* started' "$work/cvd.log")" -ge 2 ] && echo yes)" "yes"
# A run too large for one message to the helper (eleven arguments of
# 100 kB: more than the helper takes) is forked by the supervisor itself,
# and runs all the same.
wide=$(add wide "kind, at, target" \
	"'once', now(), jsonb_build_object('type', 'exec', 'argv', jsonb_build_array('/bin/sh', '-c', 'echo \$#') || (SELECT jsonb_agg(repeat('x', 100000)) FROM generate_series(1, 11)))")
wait_for 10 "SELECT status = 'done' FROM schedules WHERE id = '$wide'"
ok helper-too-large "$(sql "SELECT status || ':' || output FROM runs WHERE schedule_id = '$wide'")" "succeeded:10"
ok helper-too-large-refused "$(grep -c 'could not start run .*: Message too long' "$work/cvd.log")" "1"
# A command starts with no signal blocked or ignored, whoever forked its
# runner: the helper (which reset its dispositions once, at its start, so
# that its runners need not) or the supervisor (which ignores SIGPIPE).
clean=$(printf 'SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000')
sigs=$(add sigs "kind, at, target" \
	"'once', now(), '{\"type\":\"exec\",\"argv\":[\"/bin/grep\",\"-E\",\"^Sig(Blk|Ign)\",\"/proc/self/status\"]}'")
sigwide=$(add sigwide "kind, at, target" \
	"'once', now(), jsonb_build_object('type', 'exec', 'argv', jsonb_build_array('/bin/sh', '-c', 'grep -E \"^Sig(Blk|Ign)\" /proc/self/status') || (SELECT jsonb_agg(repeat('x', 100000)) FROM generate_series(1, 11)))")
wait_for 10 "SELECT count(*) = 2 FROM schedules WHERE id IN ('$sigs', '$sigwide') AND status = 'done'"
ok signals-helper "$(sql "SELECT output FROM runs WHERE schedule_id = '$sigs'")" "$clean"
ok signals-forked "$(sql "SELECT output FROM runs WHERE schedule_id = '$sigwide'")" "$clean"
ok signals-forked-by-supervisor "$(grep -c 'could not start run .*: Message too long' "$work/cvd.log")" "2"

# overlap buffer_one: a slot due while the run runs waits for it
buf=$(add buf "kind, interval_seconds, overlap, target" \
	"'interval', 1, 'buffer_one', '{\"type\":\"exec\",\"argv\":[\"/bin/sleep\",\"1.5\"]}'")
wait_for 15 "SELECT count(*) >= 3 FROM runs WHERE schedule_id = '$buf' AND status = 'succeeded'"
sql "UPDATE schedules SET status = 'paused', next_run_at = NULL WHERE id = '$buf'" >/dev/null
ok buffer-one "$(sql "SELECT count(*) FILTER (WHERE status = 'skipped') || ':' || bool_and(NOT EXISTS (SELECT 1 FROM runs r2 WHERE r2.schedule_id = r.schedule_id AND r2.id <> r.id AND r2.started_at < r.finished_at AND r2.finished_at > r.started_at)) FROM runs r WHERE schedule_id = '$buf' AND status <> 'running'")" "0:true"

# SIGHUP: a bad file changes nothing, a good one is taken
cp "$work/conf" "$work/conf.good"
echo "max_concurrent_runs = 0" >>"$work/conf"
kill -HUP "$pid"
wait_until 5 grep -q "keeping the running configuration" "$work/cvd.log"
ok hup-bad "$(grep -c "max_concurrent_runs: 0 is out of range" "$work/cvd.log")" "1"
cp "$work/conf.good" "$work/conf"
kill -HUP "$pid"
wait_until 5 grep -q "configuration reloaded" "$work/cvd.log"
ok hup-good "$(grep -c "configuration reloaded" "$work/cvd.log")" "1"

# retention: a schedule keeps its newest history_limit runs
keep=$(add keep "kind, interval_seconds, history_limit, target" \
	"'interval', 1, 2, '{\"type\":\"exec\",\"argv\":[\"/bin/true\"]}'")
wait_for 15 "SELECT run_count >= 4 FROM schedules WHERE id = '$keep'"
sql "UPDATE schedules SET status = 'paused', next_run_at = NULL WHERE id = '$keep'" >/dev/null
wait_for 5 "SELECT count(*) = 2 FROM runs WHERE schedule_id = '$keep'"
ok retention "$(sql "SELECT count(*) || ':' || (max(repeat_number) = max(s.run_count) - 1) FROM runs JOIN schedules s ON s.id = schedule_id WHERE schedule_id = '$keep'")" "2:true"

# SIGTERM: a clean stop, recorded
kill -TERM "$pid"
wait_gone 10 "$pid"
wait "$pid"
ok sigterm-exit "$?" "0"
pid=""
ok stopped "$(sql "SELECT count(*) FROM supervisors WHERE stopped_at IS NULL")" "0"

# kill -9 in the middle of a run, then a restart: the run is lost, retried
start
crash=$(add crash "kind, at, max_retries, retry_delay_seconds, target" \
	"'once', now(), 1, 1, '{\"type\":\"exec\",\"argv\":[\"/bin/sleep\",\"2\"]}'")
wait_for 10 "SELECT count(*) = 1 FROM runs WHERE schedule_id = '$crash' AND status = 'running'"
kill -9 "$pid"
wait "$pid" 2>/dev/null
start
wait_for 20 "SELECT status = 'done' FROM schedules WHERE id = '$crash'"
ok crash-recovered "$(sql "SELECT string_agg(attempt || ':' || status, ',' ORDER BY attempt) FROM runs WHERE schedule_id = '$crash'")" \
	"0:lost,1:succeeded"

# A wedged (stopped) helper under a claim of 32 runs of 100 kB each: the
# requests that no longer fit in the socket's buffer are forked by the
# supervisor at once instead of waiting for room, the first answer is
# waited for 2 s, then the helper is dropped and the rest forked here.
# Every run runs once.
helper=$(pgrep -P "$pid" -x cronvisor-runne)
kill -STOP "$helper"
sql "INSERT INTO schedules (name, owner, kind, at, next_run_at, next_slot_at, target)
	SELECT 'wedge-' || i, 'test', 'once', now(), now(), now(),
	jsonb_build_object('type', 'exec', 'argv', jsonb_build_array('/bin/sh',
	'-c', 'echo \$0', 'w' || i, repeat('x', 100000)))
	FROM generate_series(1, 32) i" >/dev/null
wait_for 20 "SELECT count(*) = 32 FROM schedules WHERE name LIKE 'wedge-%' AND status = 'done'"
ok wedged-helper-runs "$(sql "SELECT count(*) FILTER (WHERE r.status = 'succeeded'
	AND r.output = replace(s.name, 'wedge-', 'w') || E'\n'), count(*)
	FROM schedules s JOIN runs r ON r.schedule_id = s.id WHERE s.name LIKE 'wedge-%'")" "32|32"
ok wedged-helper-dropped "$(grep -c "runner helper $helper: no answer" "$work/cvd.log")" "1"
kill -TERM "$pid"
wait "$pid"
ok second-exit "$?" "0"
pid=""

summary engine
