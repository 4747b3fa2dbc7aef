#!/bin/sh
# db_upgrade.sh: the history a database had before a migration reads the
# same after it.  A database of its own on the fixture's PostgreSQL gets
# the migrations before 007 (psql, one file at a time, as common/migrate.c
# applies them), a history written the way the supervisor wrote it (a slot
# that succeeded, a retry chain that ended, one waiting for its retry, a
# run in flight, a trigger-now run, skipped slots), then 007_executions
# (and the migrations after it) and functions.sql; every slot that ran must be one execution with one job,
# in the state its runs say, and each run an attempt of it.  Before 022,
# events as the sequencer left them: 022 counts those that say a run or
# an execution ended into the overview's rollup.
# Usage: db_upgrade.sh CONNINFO-FILE
set -u
base=$(cat "$1") || exit 1
name=db_upgrade_$$
sqldir=$(cd "$(dirname "$0")/../sql" && pwd)
work=$(mktemp -d)
. "$(dirname "$0")/itest-lib.sh"
trap 'rm -rf "$work"; q postgres "DROP DATABASE IF EXISTS $name WITH (FORCE)" >/dev/null' EXIT
q postgres "CREATE DATABASE $name" >/dev/null || exit 1
apply() { psql "$base dbname=$name" -X -q -v ON_ERROR_STOP=1 -1 -f "$1" >/dev/null; }
for f in "$sqldir"/00[1-6]_*.sql; do
	apply "$f" || { echo "db_upgrade: $f failed"; exit 1; }
done
# (today's functions.sql needs 007's tables: the first definitions the
# migrations made are what this history needs)
sql "INSERT INTO supervisors (id, name, host, pid, version) VALUES (7, 'old', 'h', 1, '0')" >/dev/null
s=$(sql "INSERT INTO schedules (name, owner, kind, interval_seconds, target)
	VALUES ('s', 'o', 'interval', 60, '{\"type\":\"exec\",\"argv\":[\"/bin/true\"]}') RETURNING id")
run() { # id slot attempt status [triggered]
	sql "INSERT INTO runs (id, schedule_id, repeat_number, attempt, slot_at, status, supervisor_id, started_at, finished_at, error, triggered)
	VALUES ('sched-$(echo "$s" | cut -c1-8)-$1', '$s', 0, $3, '$2', '$4', 7, '$2',
	CASE WHEN '$4' NOT IN ('running') THEN '$2'::timestamptz + interval '1 s' END,
	CASE WHEN '$4' IN ('failed', 'timed_out') THEN 'exit 3' END, ${5:-false})" >/dev/null
}
run n0-rc0 '2026-01-01 00:00:00.437+00' 0 succeeded
run n1-rc0 '2026-01-01 00:01:00+00' 0 failed
run n1-rc1 '2026-01-01 00:01:00+00' 1 timed_out
run n2-rc0 '2026-01-01 00:02:00+00' 0 failed
run n2-rc1 '2026-01-01 00:02:00+00' 1 succeeded
run n3-rc0 '2026-01-01 00:03:00+00' 0 failed
run n4-rc0 '2026-01-01 00:04:00+00' 0 running
run n5-rc0 '2026-01-01 00:05:00+00' 0 skipped
run n6-rc0 '2026-01-01 00:06:00+00' 0 missed
run t1 '2026-01-01 00:04:30+00' 0 succeeded true
run t2 '2026-01-01 00:04:30+00' 0 failed true
sql "INSERT INTO retries (schedule_id, slot_at, repeat_number, attempt, due_at)
	VALUES ('$s', '2026-01-01 00:03:00+00', 0, 1, now())" >/dev/null
# Events as the sequencer left them before 022 (which counts the numbered
# ones of the last two days that ended into outcome_counts): runs that
# ended an hour ago, one three days ago, one not yet numbered (the new
# sequencer counts it), executions that ended and one that runs.
events_021() {
	sql "INSERT INTO events (seq, at, type, owner, schedule_id, subject, data)
	     SELECT seq, now() - at, type, 'o', '$s', 'x', jsonb_build_object('status', st)
	     FROM (VALUES (1, interval '1 hour', 'run.ended', 'succeeded'),
	                  (2, interval '1 hour', 'run.ended', 'succeeded'),
	                  (3, interval '1 hour', 'run.ended', 'failed'),
	                  (4, interval '3 days', 'run.ended', 'failed'),
	                  (NULL, interval '1 minute', 'run.ended', 'failed'),
	                  (5, interval '1 hour', 'run.started', 'running'),
	                  (6, interval '1 hour', 'execution.status', 'success'),
	                  (7, interval '1 hour', 'execution.status', 'running')) v(seq, at, type, st)" >/dev/null
}
# 007 and every migration after it, then today's functions.sql
for f in "$sqldir"/0*.sql; do
	case ${f##*/} in 00[1-6]_*) continue ;; 022_*) events_021 ;; esac
	apply "$f" || { echo "db_upgrade: $f failed"; exit 1; }
done
apply "$sqldir/functions.sql" || { echo "db_upgrade: functions.sql failed"; exit 1; }

# Each slot's execution: status, its job's status, attempts, errors.
st() {
	sql "SELECT x.status || ' ' || j.status || ' ' || (SELECT count(*) FROM runs r WHERE r.job_id = j.id)
	     || ' ' || jsonb_array_length(x.errors) || ' ' || (x.finished_at IS NOT NULL)
	FROM executions x JOIN jobs j ON j.execution_id = x.id
	WHERE x.schedule_id = '$s' AND x.slot_at = '$1' AND $2"
}
ok "a slot that succeeded" "$(st '2026-01-01 00:00:00.437+00' 'x.trigger_run IS NULL')" "success completed 1 0 true"
ok "a chain that failed" "$(st '2026-01-01 00:01:00+00' 'x.trigger_run IS NULL')" "failed failed 2 1 true"
ok "a chain that succeeded" "$(st '2026-01-01 00:02:00+00' 'x.trigger_run IS NULL')" "success completed 2 0 true"
ok "a chain waiting for its retry" "$(st '2026-01-01 00:03:00+00' 'x.trigger_run IS NULL')" "running pending 1 0 false"
ok "a run in flight" "$(st '2026-01-01 00:04:00+00' 'x.trigger_run IS NULL')" "running running 1 0 false"
ok "a trigger-now run that succeeded" "$(st '2026-01-01 00:04:30+00' "x.trigger_run LIKE '%-t1'")" "success completed 1 0 true"
ok "a trigger-now run that failed" "$(st '2026-01-01 00:04:30+00' "x.trigger_run LIKE '%-t2'")" "failed failed 1 1 true"
ok "the failed chain's error" "$(sql "SELECT x.errors -> 0 ->> 'message' FROM executions x WHERE x.slot_at = '2026-01-01 00:01:00+00'")" "exit 3"
ok "skipped and missed slots: no execution, no job" "$(sql "SELECT count(*) FROM executions WHERE slot_at >= '2026-01-01 00:05:00+00'")/$(sql "SELECT count(*) FROM runs WHERE job_id IS NOT NULL AND status IN ('skipped', 'missed')")" "0/0"
ok "7 executions, 7 jobs, 9 runs with a job" "$(sql "SELECT (SELECT count(*) FROM executions) || '/' || (SELECT count(*) FROM jobs) || '/' || (SELECT count(*) FROM runs WHERE job_id IS NOT NULL)")" "7/7/9"
ok "the ms of a slot kept" "$(sql "SELECT cronvisor_execution_json(x) ->> 'slot_at' FROM executions x WHERE slot_at < '2026-01-01 00:00:01+00'")" "2026-01-01T00:00:00.437Z"
# After the upgrade a retry of the waiting chain is an attempt of its job.
sql "INSERT INTO runs (id, schedule_id, repeat_number, attempt, slot_at, status, supervisor_id, started_at)
	VALUES ('sched-$(echo "$s" | cut -c1-8)-n3-rc1', '$s', 0, 1, '2026-01-01 00:03:00+00', 'running', 7, now())" >/dev/null
ok "a retry after it joins its job" "$(st '2026-01-01 00:03:00+00' 'x.trigger_run IS NULL')" "running running 2 0 false"
ok "022 counted the numbered events of two days that ended" \
	"$(sql "SELECT string_agg(owner || ':' || what || ':' || status || '=' || n, ' ' ORDER BY owner, what, status) FROM outcome_counts")" \
	":execution:success=1 :run:failed=1 :run:succeeded=2 o:execution:success=1 o:run:failed=1 o:run:succeeded=2"
summary db_upgrade
