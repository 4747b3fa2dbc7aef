#!/bin/sh
# engine_dbfaults.sh: the real cronvisord while its database does not
# answer, against the fixture's PostgreSQL (CTest fixture "pg").
#
#  1. Its backend stopped: the supervisor's own backend(s) get SIGSTOP for
#     8 s (db_timeout_ms = 2000).  Meanwhile a run with timeout_seconds 2
#     is killed at its deadline and its runner reaped (no zombie left under
#     cronvisord), the loss of the database is logged; after SIGCONT the
#     supervisor says "database is back" and a 1 s schedule fires again
#     within a few seconds.  No slot ran twice, no result is lost.
#  2. A silent blackhole: supervisor A reaches PostgreSQL through
#     tests/helpers/tcprelay.py, B directly (heartbeat_seconds 1,
#     lease_seconds 4, kill_grace_seconds 1, db_timeout_ms 1500).  A holds
#     runs of an overlap: allow schedule when the relay starts dropping
#     every byte (SIGUSR1).  A must stop its runs before lease_seconds
#     have passed since its last heartbeat, so that B's retries of the same
#     slots never overlap them (the commands' own stamps); no slot
#     completes twice.  After SIGUSR2, A says "database is back",
#     heartbeats and completes runs again.
#     2b. The same cut with A alone: its run is stopped within the lease
#     and recorded interrupted, with an error naming the lease.
#  3. PostgreSQL restarted (pg-harness.sh restart, hence RUN_SERIAL): the
#     supervisor reconnects by itself, no slot runs twice, nothing is lost.
#
# Every command of these schedules is tests' stamp.sh, which appends
# "SLOT RUN-ID SECONDS.MS EVENT" (EVENT start, end, or killed on SIGTERM)
# to a file of its schedule: duplicates, overlaps and lost results are
# counted from what the commands did, the rows only say how it was
# recorded.  Every wait is bounded; each scenario ends in a line of
# figures.  Usage: engine_dbfaults.sh CRONVISORD CRONVISORCTL PG-HARNESS
# PG-DIR
set -u
harness=$3
pgdir=$4
here=$(cd "$(dirname "$0")" && pwd)
set -- "$1" "$2" "$pgdir/conninfo"
prefix=engine_dbfaults
. "$here/harness.sh"

pids=""   # every supervisor and the relay: cleanup kills them
relay=""
thawer=""
watchdog=""

# harness.sh's cleanup, and what this test adds: a backend left
# stopped is resumed, every process it started is killed.
cleanup() {
	# The watchdog and the thawer are subshells: stopped first, so that
	# their sleep is killed with them and no new one starts.
	for p in $watchdog $thawer; do
		kill -STOP "$p" 2>/dev/null || continue
		pkill -9 -P "$p"
		kill -9 "$p"
	done
	[ -f "$work/frozen" ] && kill -CONT $(cat "$work/frozen") 2>/dev/null
	for p in $pid $pids; do kill -9 "$p" 2>/dev/null; done
	q postgres "DROP DATABASE IF EXISTS $name WITH (FORCE)" >/dev/null 2>&1
	[ -n "${KEEP:-}" ] && echo "kept $work" || rm -rf "$work"
}
trap 'exit 1' INT TERM HUP

# A test killed with SIGKILL (a CTest time-out) runs no trap: this
# watchdog then does cleanup's work from the files, and ends.
(
	while kill -0 $$ 2>/dev/null; do sleep 0.5; done
	[ -f "$work/frozen" ] && kill -CONT $(cat "$work/frozen")
	[ -f "$work/pids" ] && kill -9 $(cat "$work/pids")
	q postgres "DROP DATABASE IF EXISTS $name WITH (FORCE)"
	rm -rf "$work"
) >/dev/null 2>&1 &
watchdog=$!

# track PID: a process cleanup (and the watchdog) must kill.
track() {
	pids="$pids $1"
	echo "$1" >>"$work/pids"
}

now() { date +%s.%3N; }
# lt A B: true when A < B (decimal numbers).
# stamps_clean PREFIX: what account() found: no overlapping attempts, no
# slot completed twice, no lost result.
stamps_clean() {
	ok "$1-overlaps" "$overlaps" "0"
	ok "$1-completed-twice" "$dup_completed" "0"
	ok "$1-lost" "$lost" "0"
}
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }
# ms A B: B - A in whole milliseconds.
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%d", (b - a) * 1000 }'; }

# The command of every schedule: stamp.sh FILE SECONDS RETRY-SECONDS, which
# sleeps SECONDS at attempt 0 (run id *-rc0), RETRY-SECONDS at a retry.
cat >"$work/stamp.sh" <<'EOF'
#!/bin/sh
f=$1
s=$2
case $CRONVISOR_RUN_ID in *-rc0) ;; *) s=$3 ;; esac
st() { echo "$CRONVISOR_SLOT $CRONVISOR_RUN_ID $(date +%s.%3N) $1" >>"$f"; }
trap 'trap "" TERM; st killed; exit 143' TERM
st start
if [ "$s" != 0 ]; then
	sleep "$s" &
	wait $!
fi
st end
EOF
# stamp_target NAME SECONDS [RETRY-SECONDS]: the target running stamp.sh
# into NAME.st (a retry as long as the first attempt unless told).
stamp_target() {
	: >>"$work/$1.st"
	printf '{"type":"exec","argv":["/bin/sh","%s","%s","%s","%s"]%s}' \
		"$work/stamp.sh" "$work/$1.st" "$2" "${3:-$2}" "$as_root"
}
# stamps NAME EVENT: how many EVENT stamps NAME.st has.
stamps() { awk -v e="$2" '$4 == e { n++ } END { print n + 0 }' "$work/$1.st"; }
# stamps_ge NAME EVENT N: true when NAME.st has at least N EVENT stamps.
stamps_ge() { [ "$(stamps "$1" "$2")" -ge "$3" ]; }
# first_after NAME EVENT T: the first EVENT stamp of NAME at or after T.
first_after() {
	awk -v e="$2" -v t="$3" '$4 == e && $3 >= t { print $3; exit }' \
		"$work/$1.st"
}
has_after() { [ -n "$(first_after "$@")" ]; }

# mark LOG: its length in lines now; since LOG MARK: the lines after it.
mark() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }
since() { tail -n "+$(($2 + 1))" "$1" 2>/dev/null; }
# lost_lines LOG MARK: the lines since MARK, up to the first "database
# is back", that say the database failed ("database: ..."; a run's line
# that names the database is not one); back_lines LOG MARK: the
# "database is back" lines since MARK.
lost_lines() {
	since "$1" "$2" |
		awk '/database is back/ { exit } /database: / { n++ } END { print n + 0 }'
}
back_lines() { since "$1" "$2" | grep -c "database is back"; }
# logged_lost LOG MARK: a line since MARK names the database, other than
# its return (the loss, as the supervisor words it).
logged_lost() { since "$1" "$2" | grep "database" | grep -vq "database is back"; }
logged_back() { [ "$(back_lines "$1" "$2")" -ge 1 ]; }

# no_zombie PID: no child of PID is a zombie (every runner reaped).
no_zombie() { ! ps --ppid "$1" -o stat= | grep -q Z; }

# conf FILE NAME URL [LINES]: a supervisor's configuration.
conf() {
	cat >"$1" <<EOF
database_url = "$3"
supervisor_name = "$2"
heartbeat_seconds = 1
shutdown_grace_seconds = 1
kill_grace_seconds = 1
owner_max_running = 100000
${4:-}
EOF
}

# startn NAME: supervisor NAME on $work/NAME.conf, logging to NAME.log;
# its pid in pid_NAME.
startn() {
	spawn "$work/$1.log" "$cvd" -f "$work/$1.conf"
	eval "pid_$1=$last"
	track "$last"
}

# up NAME PID: supervisor NAME registered and running; if not, nothing
# after it would mean anything: the test ends there, failed.
up() {
	wait_for 15 "SELECT count(*) = 1 FROM supervisors WHERE name = '$1' AND stopped_at IS NULL"
	up_fail=$fail
	ok "$1-up" "$(kill -0 "$2" 2>/dev/null && sql "SELECT count(*) FROM supervisors WHERE name = '$1' AND stopped_at IS NULL")" "1"
	[ "$fail" -eq "$up_fail" ] || { summary engine_dbfaults; exit 1; }
}

# stop PID: SIGTERM and a bounded wait, then SIGKILL.
stop() {
	kill -TERM "$1" 2>/dev/null
	wait_gone 10 "$1" || kill -9 "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

pause_all() {
	sql "UPDATE schedules SET status = 'paused', next_run_at = NULL
	     WHERE status = 'active' ${1:-}" >/dev/null
}
# settle SECONDS: pauses every schedule (a pending retry first runs) and
# waits until no run is in flight.
settle() {
	wait_for 10 "SELECT count(*) = 0 FROM schedules WHERE status = 'active' AND retry_pending"
	pause_all
	wait_for "$1" "SELECT count(*) = 0 FROM runs WHERE status = 'running'"
}

cat >"$work/account.py" <<'EOF'
import math, os, sys
rows = {}
for line in open(sys.argv[1]):
    line = line.strip()
    if line:
        rid, status = line.split("|")
        rows[rid] = status
runs, bad = {}, 0
for f in sys.argv[2:]:
    tag = os.path.basename(f)
    for line in open(f):
        p = line.split()
        if len(p) != 4 or p[3] not in ("start", "end", "killed"):
            bad += 1
            continue
        slot, rid, ts, ev = p
        # CRONVISOR_SLOT is in whole seconds: a slot is that of a schedule.
        slot = rid.split("-")[1] + "@" + slot
        r = runs.setdefault(rid, {"tag": tag, "slot": slot, "start": None,
                                  "end": None, "killed": None, "starts": 0})
        r[ev] = float(ts)
        if ev == "start":
            r["starts"] += 1
slots = {}
for rid, r in runs.items():
    slots.setdefault((r["tag"], r["slot"]), []).append((rid, r))
fired = sum(1 for v in slots.values() if any(r["start"] for _, r in v))
dup_started = dup_completed = overlaps = lost = unended = 0
for key, v in sorted(slots.items()):
    started = [x for x in v if x[1]["start"] is not None]
    if len(started) > 1 or any(r["starts"] > 1 for _, r in v):
        dup_started += 1
        print("started twice: %s %s: %s" % (key + (sorted(x[0] for x in v),)),
              file=sys.stderr)
    if sum(1 for _, r in v if r["end"] is not None) > 1:
        dup_completed += 1
        print("completed twice: %s %s" % key, file=sys.stderr)
    started.sort(key=lambda x: x[1]["start"])
    for i, (ia, a) in enumerate(started):
        a_end = a["end"] or a["killed"] or math.inf
        for ib, b in started[i + 1:]:
            if b["start"] < a_end:
                overlaps += 1
                print("overlap: %s %s: %s [%.3f, %s] and %s from %.3f" % (
                    key + (ia, a["start"], a_end, ib, b["start"])),
                    file=sys.stderr)
for rid, r in sorted(runs.items()):
    st = rows.get(rid)
    if r["start"] is not None and r["end"] is None and r["killed"] is None:
        unended += 1
        print("unended: %s" % rid, file=sys.stderr)
    if st is None or st == "running" or (r["end"] is not None and
                                          st != "succeeded"):
        lost += 1
        print("lost: %s (row: %s, ended: %s)" % (rid, st, r["end"]),
              file=sys.stderr)
print("fired=%d dup_started=%d dup_completed=%d overlaps=%d lost=%d "
      "unended=%d badlines=%d" % (fired, dup_started, dup_completed,
                                  overlaps, lost, unended, bad))
EOF
# account NAME...: the figures of the stamps of schedules NAME against
# the rows, as shell assignments: fired (slots with a start), dup_started
# (slots whose command started under two run ids, or one id started
# twice), dup_completed (slots with two ends), overlaps (two attempts of a
# slot whose [start, end or killed] intervals overlap; no end counts as
# still running), lost (a stamped run without a row, still running, or
# whose command ended while its row says anything but succeeded) and
# unended (a start without end nor killed).  Details go to account.txt.
account() {
	sql "SELECT id || '|' || status FROM runs" >"$work/rows" || return 1
	files=""
	for n in "$@"; do files="$files $work/$n.st"; done
	a_out=$(python3 "$work/account.py" "$work/rows" $files 2>>"$work/account.txt")
	case $a_out in
	fired=*) echo "$a_out" ;;
	*) echo "fired=error dup_started=error dup_completed=error overlaps=error lost=error unended=error" ;;
	esac
}

db_setup || exit 1
t0=$(now)
# took: seconds since the test began.
took() { awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.0f s", b - a }'; }

# --- 1. the supervisor's backend stopped --------------------------------
echo "== 1. backend stopped (SIGSTOP 8 s, db_timeout_ms 2000)" >>"$work/account.txt"
app=cvd_s1_$$
# A lease far longer than the freeze: no self-fencing here, only waiting.
conf "$work/conf" s1 "$url application_name=$app" \
	"lease_seconds = 20
db_timeout_ms = 2000"
start
track "$pid"
up s1 "$pid"
tick=$(add tick "kind, interval_seconds, target" \
	"'interval', 1, '$(stamp_target tick 0)'")
wait_until 10 stamps_ge tick start 2
ok s1-ticking "$?" "0"
slow=$(add slow "kind, at, max_retries, timeout_seconds, target" \
	"'once', now(), 0, 2, '$(stamp_target slow 30)'")
wait_until 10 stamps_ge slow start 1
ok s1-slow-started "$?" "0"
bpids=$(q postgres "SELECT string_agg(pid::text, ' ') FROM pg_stat_activity
	WHERE datname = '$name' AND application_name = '$app'")
ok s1-backend-found "$([ -n "$bpids" ] && echo yes)" "yes"
log_mark=$(mark "$work/cvd.log")
t_freeze=$(now)
echo "$bpids" >"$work/frozen"
kill -STOP $bpids
# The thaw does not depend on this shell: 8 s later, whatever happens.
(
	sleep 8
	kill -CONT $bpids
	now >"$work/thawed"
) >/dev/null 2>&1 &
thawer=$!
# While frozen (no query of this test reaches the database meanwhile):
# the run is killed at its deadline, its runner reaped, the loss logged.
wait_until 5 stamps_ge slow killed 1
t_killed=$(awk '$4 == "killed" { print $3; exit }' "$work/slow.st")
t_slow=$(awk '$4 == "start" { print $3; exit }' "$work/slow.st")
ok s1-killed-at-deadline "$([ -n "$t_killed" ] && [ "$(ms "$t_slow" "$t_killed")" -ge 1800 ] && [ "$(ms "$t_slow" "$t_killed")" -le 4000 ] && echo yes || echo "killed ${t_killed:-never}, started $t_slow")" "yes"
ok s1-killed-while-frozen "$([ ! -f "$work/thawed" ] && [ -n "$t_killed" ] && echo yes)" "yes"
wait_until 3 no_zombie "$pid"
ok s1-reaped-while-frozen "$(no_zombie "$pid" && [ ! -f "$work/thawed" ] && echo yes || ps --ppid "$pid" -o pid=,stat=,args= | tr '\n' ';')" "yes"
ok s1-slow-gone "$(pgrep -f "$work/slow.st" | wc -l)" "0"
wait_until 6 logged_lost "$work/cvd.log" "$log_mark"
ok s1-loss-logged-while-frozen "$(logged_lost "$work/cvd.log" "$log_mark" && [ ! -f "$work/thawed" ] && echo yes)" "yes"
ok s1-alive-while-frozen "$(kill -0 "$pid" 2>/dev/null && echo yes)" "yes"
wait "$thawer"
thawer=""
rm -f "$work/frozen"
t_thaw=$(cat "$work/thawed")
wait_until 10 logged_back "$work/cvd.log" "$log_mark"
ok s1-database-is-back "$(logged_back "$work/cvd.log" "$log_mark" && echo yes)" "yes"
wait_until 6 has_after tick start "$t_thaw"
t_resume=$(first_after tick start "$t_thaw")
ok s1-fires-after-thaw "$([ -n "$t_resume" ] && [ "$(ms "$t_thaw" "$t_resume")" -le 3000 ] && echo yes || echo "first start after the thaw: ${t_resume:-none}")" "yes"
settle 15
ok s1-nothing-running "$(sql "SELECT count(*) FROM runs WHERE status = 'running'")" "0"
ok s1-slow-row "$(sql "SELECT string_agg(status, ',') FROM runs WHERE schedule_id = '$slow'")" "timed_out"
eval "$(account tick slow)"
ok s1-dups "$dup_started" "0"
ok s1-lost "$lost" "0"
echo "scenario 1 (backend stopped 8 s): $fired slots fired, $dup_started duplicates by stamps, $lost lost results; loss logged $(lost_lines "$work/cvd.log" "$log_mark") times, killed $(ms "$t_slow" "$t_killed") ms after its start, fired again $(ms "$t_thaw" "${t_resume:-$t_thaw}") ms after the thaw [$(took)]"
stop "$pid"

# --- 2. a silent blackhole between supervisor A and PostgreSQL -----------
echo "== 2. blackhole" >>"$work/account.txt"
# The relay forwards to where the fixture's conninfo points: its host= is
# a unix socket directory (pg-harness.sh) or a TCP host.
pghost=$(printf '%s\n' $base | sed -n 's/^host=//p')
pgport=$(printf '%s\n' $base | sed -n 's/^port=//p')
case $pghost in
/*) target="$pghost/.s.PGSQL.${pgport:-5432}" ;;
*) target="${pghost:-localhost}:${pgport:-5432}" ;;
esac
python3 "$here/helpers/tcprelay.py" --port-file "$work/relay.port" "$target" \
	>/dev/null 2>>"$work/relay.log" &
relay=$!
track "$relay"
wait_until 10 test -s "$work/relay.port"
rport=$(cat "$work/relay.port")
aurl="$(printf '%s\n' $base | grep -v '^host=\|^port=' | tr '\n' ' ')host=127.0.0.1 port=$rport sslmode=disable dbname=$name"
# The relay's upstream is a unix socket, where no TCP keepalive ever ends
# the backend of a connection cut in the middle of a transaction: what
# frees A's row locks for B is the idle_in_transaction_session_timeout
# every connection of cronvisor sets to db_timeout_ms (common/db.c).
lease="lease_seconds = 4
db_timeout_ms = 1500"
conf "$work/a.conf" s2a "$aurl" "$lease"
conf "$work/b.conf" s2b "$url" "$lease"
startn a
up s2a "$pid_a"
a_id=$(sql "SELECT id FROM supervisors WHERE name = 's2a' AND stopped_at IS NULL")
# Runs of 9 s, one a second, retried 1 s after a failure: A's first runs
# are still going when B could retry them (lease 4 s + heartbeat + retry).
ov=$(add ov "kind, interval_seconds, overlap, max_retries, backoff, retry_delay_seconds, timeout_seconds, target" \
	"'interval', 1, 'allow', 3, 'fixed', 1, 60, '$(stamp_target ov 9)'")
wait_until 10 stamps_ge ov start 2
ok s2-a-holds-runs "$?" "0"
a_mark=$(mark "$work/a.log")
kill -USR1 "$relay"
t_cut=$(now)
startn b
up s2b "$pid_b"
b_id=$(sql "SELECT id FROM supervisors WHERE name = 's2b' AND stopped_at IS NULL")
wait_until 8 logged_lost "$work/a.log" "$a_mark"
ok s2-a-loss-logged "$(logged_lost "$work/a.log" "$a_mark" && echo yes)" "yes"
# B declares A's runs lost and retries (one of) their slots.
retried="SELECT count(*) FROM runs l JOIN runs r ON r.schedule_id = l.schedule_id AND r.slot_at = l.slot_at AND r.attempt = l.attempt + 1 WHERE l.supervisor_id = $a_id AND r.supervisor_id = $b_id AND r.started_at IS NOT NULL"
wait_for 20 "SELECT ($retried) > 0"
ok s2-b-retried "$(sql "SELECT ($retried) > 0")" "t"
a_runs=$(sql "SELECT string_agg(id, ' ') FROM runs WHERE schedule_id = '$ov' AND supervisor_id = $a_id")
# Every command A started has ended, one way or the other (A's commands
# left alone end 9 s after their start).
a_ended() {
	for r in $a_runs; do
		awk -v r="$r" '$2 == r && $4 == "start" { s = 1 }
			$2 == r && $4 != "start" { e = 1 }
			END { exit !(s == 0 || e == 1) }' "$work/ov.st" || return 1
	done
}
wait_until 15 a_ended
# A's last heartbeat, which B's takeover went by (A cannot write one now).
hb_a=$(sql "SELECT extract(epoch FROM heartbeat) FROM supervisors WHERE id = $a_id")
# Each of A's runs was killed (not ended), before lease_seconds had passed
# since that heartbeat.
fence=$(awk -v runs=" $a_runs " -v lim="$hb_a" '
	index(runs, " " $2 " ") { if ($4 == "start") s[$2] = $3; else x[$2] = $4 " " $3 }
	END {
		for (r in s) {
			split(x[r], e, " ")
			if (e[1] != "killed" || e[2] >= lim + 4)
				printf "%s:%s@%.3f ", r, (e[1] == "" ? "running" : e[1]), e[2] - lim
		}
	}' "$work/ov.st")
ok s2-a-stopped-within-lease "${fence:-yes}" "yes"
ok s2-a-held "$(echo "$a_runs" | wc -w | awk '{ print ($1 >= 2) }')" "1"
kill -USR2 "$relay"
t_back=$(now)
# Ten quick schedules due 97 ms apart, which A and B both race for.
sql "INSERT INTO schedules (name, owner, next_run_at, next_slot_at, kind,
     interval_seconds, target) SELECT 'quick' || g, 'test',
     now() + g * interval '97 ms', now() + g * interval '97 ms', 'interval', 1,
     '$(stamp_target quick 0)' FROM generate_series(1, 10) g" >/dev/null
wait_until 15 logged_back "$work/a.log" "$a_mark"
ok s2-a-database-is-back "$(logged_back "$work/a.log" "$a_mark" && echo yes)" "yes"
wait_for 10 "SELECT heartbeat > to_timestamp($t_back) FROM supervisors WHERE id = $a_id"
ok s2-a-heartbeats-again "$(sql "SELECT heartbeat > to_timestamp($t_back) FROM supervisors WHERE id = $a_id")" "t"
wait_for 15 "SELECT count(*) > 0 FROM runs WHERE supervisor_id = $a_id AND status = 'succeeded' AND started_at > to_timestamp($t_back)"
ok s2-a-claims-again "$?" "0"
ok s2-a-alive "$(kill -0 "$pid_a" 2>/dev/null && echo yes)" "yes"
settle 25
ok s2-nothing-running "$(sql "SELECT count(*) FROM runs WHERE status = 'running'")" "0"
eval "$(account ov quick)"
stamps_clean s2
ok s2-unended "$unended" "0"
echo "scenario 2 (blackhole, A through the relay, B direct): $fired slots fired, $dup_completed duplicates by stamps (completed twice), $overlaps overlapping attempts, $lost lost results; A held $(echo "$a_runs" | wc -w) runs, stopped by $(awk -v h="$hb_a" -v runs=" $a_runs " 'index(runs, " " $2 " ") && $4 != "start" { d = $3 - h; if (d > m) m = d } END { printf "%.3f", m }' "$work/ov.st") s after its last heartbeat (lease 4 s), loss logged $(lost_lines "$work/a.log" "$a_mark") times [$(took)]"
stop "$pid_b"

# --- 2b. the same cut, A alone: its run interrupted, naming the lease -----
# Nobody takes A's run over: A itself records it, once it can.  A retry
# of it (max_retries 1) must not overlap the first attempt either; it
# sleeps 1 s, not 6 (whether it overlaps is told by when it starts).
echo "== 2b. fencing alone" >>"$work/account.txt"
fence1=$(add fence1 "kind, at, max_retries, retry_delay_seconds, target" \
	"'once', now(), 1, 1, '$(stamp_target fence1 6 1)'")
wait_until 10 stamps_ge fence1 start 1
ok s2b-started "$?" "0"
kill -USR1 "$relay"
wait_until 8 stamps_ge fence1 killed 1
hb_a=$(sql "SELECT extract(epoch FROM heartbeat) FROM supervisors WHERE id = $a_id")
t_killed=$(awk '$4 == "killed" { print $3; exit }' "$work/fence1.st")
ok s2b-stopped-within-lease "$([ -n "$t_killed" ] && lt "$t_killed" "$(awk -v h="$hb_a" 'BEGIN { printf "%.6f", h + 4 }')" && echo yes || echo "killed ${t_killed:-never}, last heartbeat $hb_a")" "yes"
kill -USR2 "$relay"
first="SELECT status || ':' || (coalesce(error, '') ILIKE '%lease%') FROM runs WHERE schedule_id = '$fence1' AND attempt = 0"
wait_for 15 "SELECT count(*) = 0 FROM runs WHERE schedule_id = '$fence1' AND attempt = 0 AND status = 'running'"
ok s2b-interrupted "$(sql "$first")" "interrupted:true"
settle 12
ok s2b-nothing-running "$(sql "SELECT count(*) FROM runs WHERE status = 'running'")" "0"
eval "$(account fence1)"
stamps_clean s2b
echo "scenario 2b (the cut with A alone): its run killed $([ -n "$t_killed" ] && awk -v h="$hb_a" -v k="$t_killed" 'BEGIN { printf "%.3f s", k - h }' || echo never) after its last heartbeat (lease 4 s), recorded $(sql "SELECT string_agg(attempt || ':' || status || ' (' || coalesce(error, '') || ')', ', ' ORDER BY attempt) FROM runs WHERE schedule_id = '$fence1'"); $overlaps overlapping attempts, $dup_completed duplicates by stamps, $lost lost results [$(took)]"
stop "$pid_a"
kill "$relay" 2>/dev/null

# --- 3. PostgreSQL restarted --------------------------------------------
echo "== 3. restart" >>"$work/account.txt"
conf "$work/conf" s3 "$url" "lease_seconds = 20
db_timeout_ms = 2000"
log_mark=$(mark "$work/cvd.log")
start
track "$pid"
up s3 "$pid"
tick3=$(add tick3 "kind, interval_seconds, target" \
	"'interval', 1, '$(stamp_target tick3 0)'")
long3=$(add long3 "kind, at, max_retries, target" \
	"'once', now(), 0, '$(stamp_target long3 3)'")
wait_until 10 stamps_ge long3 start 1
wait_until 10 stamps_ge tick3 start 2
ok s3-running "$?" "0"
"$harness" restart "$pgdir" 2 || echo "harness restart failed"
t_up=$(now)
wait_until 15 logged_back "$work/cvd.log" "$log_mark"
ok s3-database-is-back "$(logged_back "$work/cvd.log" "$log_mark" && echo yes)" "yes"
wait_until 8 has_after tick3 start "$t_up"
ok s3-fires-again "$?" "0"
wait_for 15 "SELECT status = 'done' FROM schedules WHERE id = '$long3'"
ok s3-long-row "$(sql "SELECT string_agg(status, ',') FROM runs WHERE schedule_id = '$long3'")" "succeeded"
ok s3-alive "$(kill -0 "$pid" 2>/dev/null && echo yes)" "yes"
settle 15
ok s3-nothing-running "$(sql "SELECT count(*) FROM runs WHERE status = 'running'")" "0"
eval "$(account tick3 long3)"
ok s3-dups "$dup_started" "0"
ok s3-lost "$lost" "0"
echo "scenario 3 (PostgreSQL restarted): $fired slots fired, $dup_started duplicates by stamps, $lost lost results [$(took)]"
stop "$pid"
pid=""

[ "$fail" -eq 0 ] || cat "$work/account.txt"
summary engine_dbfaults
