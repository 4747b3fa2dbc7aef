#!/bin/sh
# engine_upgrade.sh: every runner helper cronvisord starts is the
# cronvisor-runner it found at its own start.  A package upgrade renames a
# new /usr/lib/cronvisor/cronvisor-runner over the old one before it
# restarts cronvisord, and a helper started in between (the old one died)
# must still read what this cronvisord sends.  Here cronvisord runs from a
# copy in a scratch directory; its helper's file is replaced by another
# program, the helper is killed, and the next exec run must get a helper
# started from the original file (now deleted), and go through it.
# Usage: engine_upgrade.sh CRONVISORD CRONVISORCTL CONNINFO-FILE
set -u
prefix=engine_upgrade
. "$(dirname "$0")/harness.sh"

db_setup || exit 1
mkdir "$work/bin" &&
	cp "$cvd" "$(dirname "$cvd")/cronvisor-runner" "$work/bin/" || exit 1
cvd=$work/bin/cronvisord
printf 'database_url = "%s"\nsupervisor_name = "upgrade-test"\nheartbeat_seconds = 1\nlease_seconds = 3\n' \
	"$url" >"$work/conf"

# parent NAME: a once schedule due now whose command prints the command
# line of its runner (the command's parent): the helper's for a runner the
# helper forked, cronvisord's for one cronvisord forked.  Waits for it and
# prints that output.
parent() {
	sql "INSERT INTO schedules (name, owner, kind, at, next_run_at, next_slot_at, target)
		VALUES ('$1', 'test', 'once', now(), now(), now(),
		'$(exec_target "xargs -0 echo </proc/\$PPID/cmdline")'::jsonb)" >/dev/null
	wait_for 10 "SELECT status = 'done' FROM schedules WHERE name = '$1'"
	sql "SELECT r.output FROM runs r JOIN schedules s ON s.id = r.schedule_id WHERE s.name = '$1'"
}
# helper: the helper's pid, waiting up to 5 s for one
helper() {
	wait_until 5 pgrep -P "$pid" -x cronvisor-runne >/dev/null
	pgrep -P "$pid" -x cronvisor-runne
}

start
h1=$(helper)
ok helper-started "$(echo "$h1" | grep -c .)" 1
ok through-helper "$(parent first)" "cronvisor-runner --helper"
# The upgrade: a new file renamed over the helper's (here another program,
# which would exit at once), then the helper dies.
cp /bin/sleep "$work/bin/cronvisor-runner.new" &&
	mv "$work/bin/cronvisor-runner.new" "$work/bin/cronvisor-runner" || exit 1
kill -9 "$h1"
# A dead helper is replaced a second after the supervisor reaped it, at the
# next exec run.
wait_until 10 grep -q "runner helper $h1: killed" "$work/cvd.log"
sleep 1.2
ok after-upgrade "$(parent second)" "cronvisor-runner --helper"
h2=$(helper)
ok helper-replaced "$(echo "$h2" | grep -c .):$([ "$h2" != "$h1" ] && echo new)" "1:new"
ok helper-old-file "$(readlink "/proc/$h2/exe")" "$work/bin/cronvisor-runner (deleted)"
ok helper-stays "$(grep -c "runner helper $h2: " "$work/cvd.log")" 0
kill -TERM "$pid"
wait "$pid"
ok exit "$?" 0
pid=""

summary engine_upgrade
