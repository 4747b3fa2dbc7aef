#!/bin/sh
# chaos.sh: the crash and failover suite (issue 6, part 1).  Real
# processes against a real PostgreSQL, every wait bounded, each scenario
# ending in one line of figures:
#
#   chaos: scenario=NAME slots_expected=N runs_observed=N duplicates=N
#          lost_results=N leaked=N errors=N ... result=PASS|FAIL
#
# and exiting 1 on any duplicate, lost result, leaked process or error.
# The invariants behind the figures are written down in chaos-lib.sh.
#
#   chaos.sh SCENARIO BINDIR PGDIR
#
# BINDIR holds cronvisord, cronvisor-api and cronvisorctl; PGDIR is a
# tests/pg-harness.sh directory (its conninfo is used, and pgkill and api
# restart that server: run them alone, RUN_SERIAL).  Scenarios:
#
#   kill9   one supervisor, killed with -9 every 1-4 s and restarted
#   multi2  two supervisors, killed (-9 and SIGTERM) and restarted in turns
#   multi3  three of them
#   pgkill  PostgreSQL stopped (-m immediate) and restarted while runs are
#           in flight that end during the outage: their results are written
#           when it is back, with the time they ended
#   drain   SIGTERM: a short run finishes within the grace, a long one is
#           interrupted and retried by the restarted supervisor
#   api     the API through nginx while PostgreSQL restarts and nginx
#           reloads (tests/chaos/api_load.py counts the answers)
#   regress the supervisor's defects these scenarios found, each provoked
#           on purpose (see scn_regress)
#
# Environment: CHAOS_SECONDS (how long the faults go on, default 20),
# CHAOS_SCHEDULES (the load, default 120), KEEP=1 keeps the work directory.
set -u
[ $# -eq 3 ] || { echo "usage: chaos.sh SCENARIO BINDIR PGDIR" >&2; exit 2; }
scenario=$1
bindir=$2
pgdir=$3
here=$(cd "$(dirname "$0")" && pwd)
harness=$here/../pg-harness.sh
cvd=$bindir/cronvisord
ctl=$bindir/cronvisorctl
apibin=$bindir/cronvisor-api
base=$(cat "$pgdir/conninfo") || exit 1
base=${base% dbname=*}
name=chaos_${scenario}_$$
url="$base dbname=$name"
work=$(mktemp -d /tmp/chaos.XXXXXX)
tag=chaos-$$-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
seconds=${CHAOS_SECONDS:-20}
nsched=${CHAOS_SCHEDULES:-120}
. "$here/../itest-lib.sh"
. "$here/chaos-lib.sh"
all_pids=""
api_dir=""
keepdb=""
expected=0 observed=0 dups=0 lostres=0 leaked=0 errors=0 kills=0
n_lost=0 n_intr=0 n_missed=0 n_skipped=0 n_retries=0 settle_at=""

cleanup() {
	for p in $all_pids; do kill -9 "$p" 2>/dev/null; done
	[ -n "$api_dir" ] && "$here/../api-harness.sh" stop "$api_dir" >/dev/null 2>&1
	[ -z "$keepdb" ] && q postgres "DROP DATABASE IF EXISTS $name WITH (FORCE)" >/dev/null 2>&1
	[ -n "${KEEP:-}" ] && echo "kept $work" || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# pg_wait SECONDS: until the server answers again.
pg_wait() {
	i=0
	until q postgres "SELECT 1" >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt $(($1 * 10)) ] || return 1
		sleep 0.1
	done
}

setup_db() {
	pg_wait 30 || { echo "chaos: PostgreSQL does not answer" >&2; exit 1; }
	q postgres "CREATE DATABASE $name" >/dev/null || exit 1
	# The fixture's server runs with synchronous_commit off, under which a
	# crash loses commits a client was told about: not the fault under
	# test.  (fsync stays off: the machine itself does not crash.)
	q postgres "ALTER DATABASE $name SET synchronous_commit = on" >/dev/null || exit 1
	"$ctl" db migrate --database "$url" >/dev/null || exit 1
}

# finish_load NAMES...: settle, stop the supervisors cleanly, account.
finish_load() {
	settle
	for s in "$@"; do
		sv_check_alive "$s"
		sv_term "$s"
	done
	account
	leaks
}

# --- kill9 -------------------------------------------------------------
scn_kill9() {
	setup_db
	sv_start s1
	load "$nsched"
	end=$(($(date +%s) + seconds))
	while [ "$(date +%s)" -lt "$end" ]; do
		sleep "$(rand 10 40 | sed 's/\(.\)$/.\1/')"
		sv_check_alive s1
		sv_kill9 s1
		sv_start s1
	done
	finish_load s1
	report kill9
}

# --- multi2 / multi3 ---------------------------------------------------
scn_multi() {
	m=$1
	setup_db
	names=""
	for k in $(seq 1 "$m"); do
		maxruns=200 sv_start "m$k"
		names="$names m$k"
	done
	load "$nsched"
	end=$(($(date +%s) + seconds))
	turn=0
	while [ "$(date +%s)" -lt "$end" ]; do
		sleep "$(rand 10 30 | sed 's/\(.\)$/.\1/')"
		k=$((turn % m + 1))
		for s in $names; do sv_check_alive "$s"; done
		if [ $((turn / m % 2)) -eq 0 ]; then
			sv_kill9 "m$k"
		else
			sv_term "m$k"
			kills=$((kills + 1))
		fi
		sv_start "m$k"
		turn=$((turn + 1))
	done
	# shellcheck disable=SC2086
	finish_load $names
	report "multi$m"
}

# --- pgkill ------------------------------------------------------------
# Each round starts runs that take 2 s, waits until they run, and stops
# PostgreSQL for 4 s: they end while it is away.  Their rows must end
# succeeded, with the output, finished_at when they ended (before the
# server came back, at least 2 s after started_at) - not when written.
# The supervisor's lease outlasts the outage: with lease_seconds 3 it
# would stop those runs first (self-fencing, tests/engine_dbfaults.sh).
scn_pgkill() {
	setup_db
	lease=15
	sv_start s1
	lease=
	pid0=$(sv_pid s1)
	load "$nsched"
	end=$(($(date +%s) + seconds))
	round=0 bad_ft=0 bad_st=0 inflight=0
	while [ "$(date +%s)" -lt "$end" ] || [ $round -eq 0 ]; do
		round=$((round + 1))
		sql "INSERT INTO schedules (name, owner, kind, at, next_run_at,
		     next_slot_at, max_retries, target) SELECT 'flight$round-' || g,
		     'test', 'once', now(), now(), now(), 0,
		     jsonb_build_object('type', 'exec', 'env',
		     jsonb_build_object('CHAOS_TAG', '$tag'), 'argv',
		     jsonb_build_array('/bin/sh', '-c', 'sleep 2; echo finished'))
		     FROM generate_series(1, 5) g" >/dev/null
		wait_for 10 "SELECT count(*) = 5 FROM runs r JOIN schedules s ON s.id = r.schedule_id WHERE s.name LIKE 'flight$round-%' AND r.status = 'running'" ||
			{ echo "chaos: round $round: runs did not start" >&2; errors=$((errors + 1)); }
		"$harness" restart "$pgdir" 4 >/dev/null ||
			{ echo "chaos: the PostgreSQL restart failed" >&2; errors=$((errors + 1)); }
		back=$(date +%s.%N)
		pg_wait 30 || { echo "chaos: PostgreSQL did not come back" >&2; errors=$((errors + 1)); }
		if ! wait_for 30 "SELECT count(*) = 5 FROM schedules WHERE name LIKE 'flight$round-%' AND status <> 'active'"; then
			echo "chaos: round $round: results not written after the restart" >&2
			sql "SELECT s.name, r.id, r.status FROM runs r JOIN schedules s ON s.id = r.schedule_id WHERE s.name LIKE 'flight$round-%'" >&2
		fi
		inflight=$((inflight + 5))
		bad_st=$((bad_st + $(sql "SELECT 5 - count(*) FROM runs r JOIN schedules s ON s.id = r.schedule_id WHERE s.name LIKE 'flight$round-%' AND r.status = 'succeeded' AND r.output = 'finished
'")))
		bad_ft=$((bad_ft + $(sql "SELECT count(*) FROM runs r JOIN schedules s ON s.id = r.schedule_id WHERE s.name LIKE 'flight$round-%' AND NOT (r.finished_at < to_timestamp($back) AND r.finished_at >= r.started_at + interval '1.9 s')")))
		sleep 2
		sv_check_alive s1
	done
	[ "$(sv_pid s1)" = "$pid0" ] || { echo "chaos: the supervisor was restarted" >&2; errors=$((errors + 1)); }
	lostres=$((lostres + bad_st))
	errors=$((errors + bad_ft))
	[ $bad_ft -eq 0 ] || sql "SELECT r.id, r.started_at, r.finished_at, r.duration_ms FROM runs r JOIN schedules s ON s.id = r.schedule_id WHERE s.name LIKE 'flight%' ORDER BY r.started_at" >&2
	finish_load s1
	report pgkill "pg_restarts=$round inflight_results=$inflight inflight_not_succeeded=$bad_st inflight_bad_finished_at=$bad_ft"
}

# --- drain -------------------------------------------------------------
# Each round: a short run (1 s) and a long one (30 s at attempt 0, quick
# at attempt 1) in flight, SIGTERM with a 3 s grace: the supervisor exits
# within grace + kill grace + margin, the short run succeeded, the long one
# interrupted; the restarted supervisor retries it and it succeeds.
scn_drain() {
	grace=3
	setup_db
	sv_start s1
	load "$nsched"
	end=$(($(date +%s) + seconds))
	round=0 slow_exit=0 bad=0
	while [ "$(date +%s)" -lt "$end" ] || [ $round -eq 0 ]; do
		round=$((round + 1))
		sql "INSERT INTO schedules (name, owner, kind, at, next_run_at,
		     next_slot_at, max_retries, retry_delay_seconds, target)
		     SELECT 'drain$round-' || w, 'test', 'once', now(), now(), now(), 1, 1,
		     jsonb_build_object('type', 'exec', 'env',
		     jsonb_build_object('CHAOS_TAG', '$tag'), 'argv',
		     jsonb_build_array('/bin/sh', '-c', CASE w WHEN 'short' THEN 'sleep 1'
		     ELSE 'case \$CRONVISOR_RUN_ID in *-rc0) exec sleep 30;; esac' END))
		     FROM unnest(ARRAY['short', 'long']) w" >/dev/null
		wait_for 10 "SELECT count(*) = 2 FROM runs r JOIN schedules s ON s.id = r.schedule_id WHERE s.name LIKE 'drain$round-%' AND r.status = 'running'" ||
			{ echo "chaos: round $round: runs did not start" >&2; errors=$((errors + 1)); }
		sv_check_alive s1
		sv_term s1 20
		[ "$term_ms" -le $(((grace + 1 + 3) * 1000)) ] || slow_exit=$((slow_exit + 1))
		got=$(sql "SELECT string_agg(split_part(s.name, '-', 2) || ':' || r.attempt || ':' || r.status, ',' ORDER BY s.name DESC) FROM runs r JOIN schedules s ON s.id = r.schedule_id WHERE s.name LIKE 'drain$round-%'")
		[ "$got" = "short:0:succeeded,long:0:interrupted" ] ||
			{ echo "chaos: round $round: after SIGTERM: $got" >&2; bad=$((bad + 1)); }
		leaks
		sv_start s1
		wait_for 20 "SELECT status = 'done' FROM schedules WHERE name = 'drain$round-long'"
		got=$(sql "SELECT string_agg(r.attempt || ':' || r.status, ',' ORDER BY r.attempt) FROM runs r JOIN schedules s ON s.id = r.schedule_id WHERE s.name = 'drain$round-long'")
		[ "$got" = "0:interrupted,1:succeeded" ] ||
			{ echo "chaos: round $round: long run: $got" >&2; bad=$((bad + 1)); }
	done
	errors=$((errors + slow_exit))
	lostres=$((lostres + bad))
	finish_load s1
	report drain "drain_rounds=$round drain_slow_exits=$slow_exit drain_bad=$bad"
}

# --- api ---------------------------------------------------------------
# The stack of tests/api-harness.sh on this server; api_load.py hammers
# it through nginx while PostgreSQL restarts and nginx reloads.
scn_api() {
	export CRONVISORD="$cvd" CRONVISOR_API="$apibin" CRONVISORCTL="$ctl"
	pg_wait 30 || exit 1
	api_dir=$work/h
	"$here/../api-harness.sh" start "$api_dir" "$pgdir/conninfo" >/dev/null 2>&1 ||
		{ echo "chaos: the API stack did not start" >&2; exit 1; }
	. "$api_dir/env"
	name=$CV_DB
	keepdb=1 # api-harness.sh stop drops it
	# As setup_db; the API's and supervisor's sessions take it after the
	# first restart, which comes before the load.
	q postgres "ALTER DATABASE $name SET synchronous_commit = on" >/dev/null
	"$harness" restart "$pgdir" 0 >/dev/null || exit 1
	: >"$work/reloads"
	: >"$work/reloads.back"
	python3 "$here/api_load.py" "$CV_API_URL" "$CV_TOKEN_ALICE_EDITOR" \
		"$seconds" "$work/reloads" "$work/api.json" >"$work/api_load.log" 2>&1 &
	loadpid=$!
	all_pids="$all_pids $loadpid"
	end=$(($(date +%s) + seconds - 2))
	restarts=0 reloads=0
	while [ "$(date +%s)" -lt "$end" ]; do
		sleep 1.5
		"$harness" restart "$pgdir" 3 >/dev/null ||
			{ echo "chaos: the PostgreSQL restart failed" >&2; errors=$((errors + 1)); }
		date +%s.%N >>"$work/reloads.back"
		restarts=$((restarts + 1))
		sleep 1.5
		date +%s.%N >>"$work/reloads"
		nginx -p "$api_dir" -c "$api_dir/nginx.conf" -e "$api_dir/nginx.log" -s reload 2>>"$work/reload.err" ||
			{ echo "chaos: nginx -s reload failed" >&2; errors=$((errors + 1)); }
		reloads=$((reloads + 1))
	done
	i=0
	while kill -0 "$loadpid" 2>/dev/null && [ $i -lt $(((seconds + 40) * 10)) ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill -0 "$loadpid" 2>/dev/null && { echo "chaos: api_load.py hangs" >&2; errors=$((errors + 1)); kill -9 "$loadpid"; }
	wait "$loadpid"
	[ -s "$work/api.json" ] || { echo "chaos: api_load.py wrote nothing" >&2; cat "$work/api_load.log" >&2; exit 1; }
	pg_wait 30
	kill -0 "$CV_API_PID" 2>/dev/null || { echo "chaos: cronvisor-api died" >&2; errors=$((errors + 1)); }
	[ "$(cat "$api_dir/api.pid")" = "$CV_API_PID" ] || errors=$((errors + 1))
	kill -0 "$CV_SUPERVISOR_PID" 2>/dev/null || { echo "chaos: cronvisord died" >&2; errors=$((errors + 1)); }
	# Every create was sent with its name as Idempotency-Key and sent
	# again while its outcome was open (a 503 may come after the commit
	# went through): every 201 has exactly one complete row, no name has
	# two, and a row without a 201 only where the outcome was still open
	# at the end (counted apart).
	python3 - "$work/api.json" >"$work/names" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for n in d["created"]:
    print("c " + n)
for n in d["unknown"]:
    print("u " + n)
for n in d["refused"]:
    print("r " + n)
EOF
	psql "$CV_PG_BASE dbname=$CV_DB" -X -qAt -v ON_ERROR_STOP=1 -c "CREATE TABLE chaos_names (k text, name text)" >/dev/null
	sed 's/^\(.\) \(.*\)$/\1\t\2/' "$work/names" |
		psql "$CV_PG_BASE dbname=$CV_DB" -X -qAt -v ON_ERROR_STOP=1 -c "COPY chaos_names FROM STDIN" >/dev/null
	set -- $(psql "$CV_PG_BASE dbname=$CV_DB" -X -qAt -v ON_ERROR_STOP=1 -c "
	  WITH s AS (SELECT * FROM schedules WHERE name LIKE 'chaosapi-%')
	  SELECT (SELECT count(*) FROM chaos_names c WHERE k = 'c' AND
	          NOT EXISTS (SELECT 1 FROM s WHERE s.name = c.name)),
	         (SELECT count(*) - count(DISTINCT name) FROM s),
	         (SELECT count(*) FROM s WHERE NOT EXISTS (SELECT 1 FROM chaos_names c WHERE c.name = s.name AND k IN ('c', 'u'))),
	         (SELECT count(*) FROM s JOIN chaos_names c ON c.name = s.name AND k = 'u'),
	         (SELECT count(*) FROM s WHERE NOT (owner = 'alice' AND kind = 'interval'
	          AND interval_seconds = 3600 AND status = 'active' AND next_run_at IS NOT NULL
	          AND target->>'type' = 'exec' AND created_at IS NOT NULL
	          AND idempotency_key = name))" | tr '|' ' ')
	[ $# -eq 5 ] || { echo "chaos: the API accounting failed" >&2; errors=$((errors + 1)); set -- 0 0 0 0 0; }
	missing=$1 twice=$2 phantom=$3 inflight_rows=$4 incomplete=$5
	lostres=$((lostres + missing))
	dups=$((dups + twice + phantom))
	errors=$((errors + incomplete))
	figures=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join("%s=%s" % kv for kv in sorted(d["figures"].items())))' "$work/api.json")
	bad=$(python3 -c '
import json, sys
f = json.load(open(sys.argv[1]))["figures"]
print(f["api_500"] + f["api_other"] + f["api_timeout"] + f["api_reset_unexplained"] + f["api_503_unclear"])' "$work/api.json")
	errors=$((errors + bad))
	[ "$bad" -eq 0 ] || tail -n 20 "$work/api_load.log" >&2
	expected=$(grep -c '^c ' "$work/names")
	observed=$(psql "$CV_PG_BASE dbname=$CV_DB" -X -qAt -c "SELECT count(*) FROM schedules WHERE name LIKE 'chaosapi-%'")
	"$here/../api-harness.sh" stop "$api_dir" >/dev/null 2>&1
	api_dir=""
	leaks
	report api "pg_restarts=$restarts nginx_reloads=$reloads $figures created_missing=$missing created_twice=$twice rows_without_201=$phantom rows_reply_lost=$inflight_rows rows_incomplete=$incomplete"
}

# --- regress -------------------------------------------------------------
# The defects the scenarios above found, each provoked on purpose:
#  1. after a retry chain the schedule resumed at the slot after the retried
#     one, whose row (skipped) already stood: the missed row that starts
#     there was dropped by the unique (schedule, slot, attempt), and with it
#     the slots it counts (a gap in the accounting);
#  2. catch_up: all fired a plan's slots side by side: two failures in
#     flight kept one retry (the schedule holds one pending item), and a
#     claim could start more runs than max_concurrent_runs;
#  3. a run `running` under the supervisor's own live lease without a job
#     (its claim's COMMIT went through while the connection failed) stayed
#     running for ever: it is declared lost and retried;
#  4. a supervisor retired by another (stopped_at set) went on running and
#     claiming while its runs were declared lost and retried elsewhere: it
#     stops its runners and exits 1.
# (finished_at of a result written after an outage: pgkill.)
scn_regress() {
	setup_db
	bad=0
	maxruns=3 sv_start r1
	t="jsonb_build_object('CHAOS_TAG', '$tag')"
	# As root the command writes $work/r1 as root (run_as): its owner's
	# user could not.
	ra=NULL
	[ "$(id -u)" != 0 ] || ra="'root'"
	sql "INSERT INTO schedules (name, owner, kind, interval_seconds, start_at,
	     next_run_at, next_slot_at, max_retries, backoff, retry_delay_seconds,
	     catch_up, max_catch_up_runs, overlap, target)
	     SELECT 'chaosR1', 'test', 'interval', 1, t, t, t, 2, 'fixed', 1, 'latest', 1, 'skip',
	       jsonb_build_object('type', 'exec', 'env', $t, 'run_as', $ra, 'argv', jsonb_build_array('/bin/sh', '-c',
	       '[ -e $work/r1 ] && exit 0; : >$work/r1; sleep 2.5; exit 1'))
	     FROM (SELECT date_trunc('second', now()) + interval '1s' AS t) x
	     UNION ALL
	     SELECT 'chaosR2' || g, 'test', 'interval', 1, t, t, t, 0, 'fixed', 1, 'all', 5,
	       CASE g WHEN 1 THEN 'skip' ELSE 'allow' END,
	       jsonb_build_object('type', 'exec', 'env', $t, 'argv', jsonb_build_array('/bin/sleep', '0.8'))
	     FROM generate_series(1, 3) g,
	     (SELECT date_trunc('second', now()) - interval '20s' AS t) x" >/dev/null
	sleep 8
	settle
	# 2: chaosR21 (overlap skip) never ran two at once; nothing ever ran
	# more than max_concurrent_runs (3) at once.
	over=$(sql "SELECT count(*) FROM runs a JOIN runs b ON a.schedule_id = b.schedule_id AND a.id < b.id
	     JOIN schedules s ON s.id = a.schedule_id WHERE s.name = 'chaosR21'
	     AND a.started_at < b.finished_at AND b.started_at < a.finished_at")
	[ "$over" = 0 ] || { echo "chaos: regress 2: catch_up all ran $over pairs side by side" >&2; bad=$((bad + 1)); }
	most=$(sql "SELECT coalesce(max((SELECT count(*) FROM runs b WHERE b.started_at <= a.started_at
	     AND b.finished_at > a.started_at)), 0) FROM runs a WHERE a.started_at IS NOT NULL")
	[ "$most" -le 3 ] || { echo "chaos: regress 2: $most runs at once, max_concurrent_runs 3" >&2; bad=$((bad + 1)); }
	# 3: a running row of our own without a job.
	sid=$(sql "SELECT id FROM supervisors WHERE name = 'r1' AND stopped_at IS NULL")
	o=$(sql "INSERT INTO schedules (name, owner, kind, at, next_run_at, next_slot_at, running,
	     max_retries, retry_delay_seconds, target) VALUES ('orphanR3', 'test', 'once', now(), NULL,
	     now(), 1, 1, 1, jsonb_build_object('type', 'exec', 'env', $t, 'argv', jsonb_build_array('/bin/true')))
	     RETURNING id8")
	sql "INSERT INTO runs (id, schedule_id, repeat_number, attempt, slot_at, status, supervisor_id, started_at)
	     SELECT 'sched-$o-n0-rc0', id, 0, 0, next_slot_at, 'running', $sid, now() FROM schedules
	     WHERE name = 'orphanR3'" >/dev/null
	wait_for 10 "SELECT status = 'done' FROM schedules WHERE name = 'orphanR3'"
	got=$(sql "SELECT string_agg(r.attempt || ':' || r.status, ',' ORDER BY r.attempt) FROM runs r JOIN schedules s ON s.id = r.schedule_id WHERE s.name = 'orphanR3'")
	[ "$got" = "0:lost,1:succeeded" ] || { echo "chaos: regress 3: orphan run: $got" >&2; bad=$((bad + 1)); }
	# 4: r1 retired under a run in flight.
	sql "INSERT INTO schedules (name, owner, kind, at, next_run_at, next_slot_at, max_retries,
	     retry_delay_seconds, target) VALUES ('retiredR4', 'test', 'once', now(), now(), now(), 1, 1,
	     jsonb_build_object('type', 'exec', 'env', $t, 'argv', jsonb_build_array('/bin/sh', '-c',
	     'case \$CRONVISOR_RUN_ID in *-rc0) exec sleep 30;; esac')))" >/dev/null
	wait_for 10 "SELECT count(*) = 1 FROM runs r JOIN schedules s ON s.id = r.schedule_id WHERE s.name = 'retiredR4' AND r.status = 'running'"
	sql "UPDATE supervisors SET stopped_at = now() WHERE id = $sid" >/dev/null
	p=$(sv_pid r1)
	i=0
	while kill -0 "$p" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	if kill -0 "$p" 2>/dev/null; then
		echo "chaos: regress 4: a retired supervisor goes on" >&2
		bad=$((bad + 1))
		sv_kill9 r1
	else
		wait "$p"
		rc=$?
		eval "pid_r1="
		[ $rc -eq 1 ] || { echo "chaos: regress 4: exit status $rc, want 1" >&2; bad=$((bad + 1)); }
	fi
	leaks
	sv_start r2
	wait_for 15 "SELECT status = 'done' FROM schedules WHERE name = 'retiredR4'"
	got=$(sql "SELECT string_agg(r.attempt || ':' || r.status, ',' ORDER BY r.attempt) FROM runs r JOIN schedules s ON s.id = r.schedule_id WHERE s.name = 'retiredR4'")
	# Lost (a peer) or interrupted (the retired one, on its way out):
	# whichever wrote first; the other is fenced out.
	case $got in
	0:lost,1:succeeded | 0:interrupted,1:succeeded) ;;
	*) echo "chaos: regress 4: retired run: $got" >&2; bad=$((bad + 1)) ;;
	esac
	errors=$((errors + bad))
	finish_load r2
	report regress "regress_failed=$bad"
}

case $scenario in
kill9) scn_kill9 ;;
multi2) scn_multi 2 ;;
multi3) scn_multi 3 ;;
pgkill) scn_pgkill ;;
drain) scn_drain ;;
api) scn_api ;;
regress) scn_regress ;;
*) echo "chaos.sh: unknown scenario $scenario" >&2; exit 2 ;;
esac
