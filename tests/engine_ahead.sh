#!/bin/sh
# engine_ahead.sh: claim_ahead_ms.  The supervisor claims a slot before its
# instant and forks the runner, which waits for the instant: the target
# starts at it, never before, and the run's started_at is the instant.  A
# runner still waiting when the supervisor's shutdown grace is over (0
# here) ends interrupted, its target never started, and the slot runs
# once the supervisor is back.
# A wide claim_ahead_ms (900) makes "claimed ahead" visible: the run row is
# written well before the instant.  Timing bounds are generous (a loaded
# machine), except "never early", which has none.
# Usage: engine_ahead.sh CRONVISORD CRONVISORCTL CONNINFO-FILE
set -u
prefix=engine_ahead
. "$(dirname "$0")/harness.sh"

stop() {
	kill -TERM "$pid"
	wait "$pid"
	ok "stop $1: exit" "$?" 0
	pid=""
}

db_setup || exit 1
cat >"$work/conf" <<EOF
database_url = "$url"
supervisor_name = "ahead-test"
heartbeat_seconds = 1
lease_seconds = 3
shutdown_grace_seconds = 0
kill_grace_seconds = 1
claim_ahead_ms = 900
EOF
ok config "$("$cvd" -n -f "$work/conf" | grep -c '^claim_ahead_ms = 900$')" 1

# once_at NAME OFFSET CMD: a once schedule at now() + OFFSET seconds (with
# a fraction), running /bin/sh -c CMD; prints its id.
once_at() {
	sql "INSERT INTO schedules (name, owner, kind, at, next_run_at,
	     next_slot_at, max_retries, target)
	     SELECT '$1', 'test', 'once', t, t, t, 1, '$(exec_target "$3")'::jsonb
	     FROM (SELECT now() + interval '$2 seconds' AS t) x RETURNING id"
}

# --- five instants with fractions of a second: started at, never before -
start
for off in 2.137 2.5 2.913 3.251 3.608; do
	once_at "ahead-$off" "$off" 'date +%s.%N' >/dev/null
done
wait_for 20 "SELECT count(*) = 5 FROM schedules WHERE name LIKE 'ahead-%' AND status = 'done'"
# started: the command's own clock (its output) minus the instant, in ms.
set -- $(sql "SELECT count(*),
	count(*) FILTER (WHERE r.status = 'succeeded'),
	count(*) FILTER (WHERE r.output::numeric < extract(epoch FROM s.at)),
	count(*) FILTER (WHERE r.started_at < s.at),
	count(*) FILTER (WHERE r.created_at < s.at - interval '300 ms'),
	round(max(r.output::numeric - extract(epoch FROM s.at)) * 1000)
	FROM runs r JOIN schedules s ON s.id = r.schedule_id
	WHERE s.name LIKE 'ahead-%'" | tr '|' ' ')
ok "five runs, succeeded" "$1 $2" "5 5"
ok "no command started before its instant" "$3" 0
ok "no started_at before its instant" "$4" 0
ok "claimed ahead (row written > 300 ms before the instant)" "$5" 5
ok "started within 500 ms of the instant (max $6 ms)" "$([ "${6:-99999}" -lt 500 ] && echo yes)" yes

# --- jitter: a first run (next_run_at without it) starts at next_run_at -
# Its runner does not wait out the slot's jitter (up to 30 min here),
# which the supervisor's deadline would have killed as a time-out.
jit=$(sql "INSERT INTO schedules (name, owner, kind, interval_seconds,
	jitter_seconds, start_at, next_run_at, next_slot_at, max_retries,
	timeout_seconds, target)
	SELECT 'jittered', 'test', 'interval', 3600, 1800, t, t, t, 0, 5,
	'$(exec_target 'date +%s.%N')'::jsonb
	FROM (SELECT date_trunc('second', now()) + interval '2 seconds' AS t) x
	RETURNING id")
wait_for 15 "SELECT count(*) = 1 FROM runs WHERE schedule_id = '$jit' AND status <> 'running'"
ok "jitter: the first run succeeded at its next_run_at" \
	"$(sql "SELECT r.status, r.output::numeric >= extract(epoch FROM s.start_at),
	r.output::numeric - extract(epoch FROM s.start_at) < 2
	FROM runs r JOIN schedules s ON s.id = r.schedule_id WHERE s.id = '$jit'" | tr '\n' ' ')" \
	"succeeded|t|t "

# --- a runner waiting when the grace is over: interrupted, then runs ----
w=$(once_at waiting 1.6 "echo started >>$work/waiting.out")
wait_for 10 "SELECT count(*) = 1 FROM runs WHERE schedule_id = '$w' AND status = 'running'"
ok "waiting: claimed before its instant" \
	"$(sql "SELECT now() < at FROM schedules WHERE id = '$w'")" t
stop waiting
ok "waiting: recorded interrupted" \
	"$(sql "SELECT status FROM runs WHERE schedule_id = '$w' AND attempt = 0")" interrupted
ok "waiting: its command never started" "$(cat "$work/waiting.out" 2>/dev/null)" ""
start
wait_for 15 "SELECT status = 'done' FROM schedules WHERE id = '$w'"
ok "waiting: ran once the supervisor was back" \
	"$(sql "SELECT string_agg(attempt || ':' || status, ',' ORDER BY attempt) FROM runs WHERE schedule_id = '$w'"):$(cat "$work/waiting.out" 2>/dev/null)" \
	"0:interrupted,1:succeeded:started"
stop end

summary engine_ahead
