#!/bin/sh
# hostile.sh: hostile runs end to end through the real cronvisord, with
# schedules inserted with SQL (as engine.sh does) and the command
# tests/helpers/cvhelper.c.  Each case asserts the recorded outcome, then
# that nothing is left behind — no process carrying the schedule's
# CRONVISOR_SCHEDULE_ID (read from /proc/PID/environ), no child or zombie
# of the supervisor (/proc/PID/task/*/children), its descriptor count back
# at the baseline (/proc/PID/fd) — and that the supervisor is healthy (its
# heartbeat moves, a plain schedule still runs).
#
# Cases: a fork bomb under limits.nproc (run_as a user made for the test:
# RLIMIT_NPROC counts per real uid and does not bind root), a memory hog
# under limits.memory_mb, CPU spinners past limits.cpu_seconds (SIGXCPU,
# and SIGKILL when SIGXCPU is ignored), a SIGTERM ignorer past its timeout,
# a grandchild escaping with setsid and a double fork, 1 GiB on stdout
# (the supervisor's VmHWM and the runner's VmRSS stay small), broken result
# frames (cronvisord-faults, the test-only build of runner/child.c), a run
# whose supervisor is killed -9 (the runner's parent-death signal stops it;
# the restarted supervisor records it lost and retries), and the privilege
# checks: run_as drops to the user with no groups, no capabilities and
# no_new_privs, a run without run_as runs as the owner's user
# (cronvisor-run) with no capabilities and no_new_privs too,
# and argv is never given to a shell.
#
# Checks that need root (the fork bomb's own uid, run_as) print a SKIP line
# and are counted as skipped, never as passed, when not run as root; the
# test then exits 77, which CTest reports as skipped (SKIP_RETURN_CODE),
# not passed, and scripts/test fails.
# Usage: hostile.sh CRONVISORD CRONVISORD-FAULTS CRONVISORCTL CVHELPER CONNINFO
set -u
cvdf=$2
helper=$4
set -- "$1" "$3" "$5"
prefix=hostile
. "$(dirname "$0")/harness.sh"
user=""
skipped=0
mark="HOSTILE_TEST=$$" # in the environment of every command of this test

# Every process a run of this test started (it carries the mark), by pid.
ours() {
	grep -lsa -- "$1" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3
}

# What cleanup (harness.sh) does besides: the runs' processes and the
# test's user go.
cleanup_more() {
	for p in $(ours "$mark"); do kill -9 "$p" 2>/dev/null; done
	[ -n "$user" ] && userdel "$user" >/dev/null 2>&1
}

skip() {
	skipped=$((skipped + 1))
	echo "SKIP $1: $2"
}

# up BINARY: supervisor hostile-test, that build of cronvisord, started;
# waits until it heartbeats.
up() {
	start hostile-test "$1"
	wait_for 10 "SELECT count(*) = 1 FROM supervisors WHERE pid = $pid AND stopped_at IS NULL" ||
		echo "supervisor $pid did not start"
}

# down CASE: stops it (SIGTERM, bounded; SIGKILL if it hangs); exit 0.
down() {
	stop hostile-test
	ok "$1-stop" "$rc" "0"
}

# The supervisor's children but one runner helper (cronvisor-runner, whose
# name is cut to 15 characters; the runners it forks are named cronvisord):
# a second helper counts, and so does anything but one events worker
# (cronvisord-ev).
kids() {
	n=0 h=0 e=0
	for c in $(cat /proc/"$pid"/task/*/children 2>/dev/null); do
		if [ "$(cat /proc/"$c"/comm 2>/dev/null)" = cronvisor-runne ] && [ $h -eq 0 ]; then
			h=1
		elif [ "$(cat /proc/"$c"/comm 2>/dev/null)" = cronvisord-ev ] && [ $e -eq 0 ]; then
			e=1 # the events worker (supervisor/events.c), one
		else
			n=$((n + 1))
		fi
	done
	echo "$n"
}
zombies() {
	n=0
	for c in $(cat /proc/"$pid"/task/*/children 2>/dev/null); do
		[ "$(awk '{print $3}' /proc/"$c"/stat 2>/dev/null)" = Z ] && n=$((n + 1))
	done
	echo "$n"
}
fds() { ls /proc/"$pid"/fd 2>/dev/null | wc -l; }
kb() { awk -v k="$2:" '$1 == k {print $2}' /proc/"$1"/status 2>/dev/null; }

none_left() { [ -z "$(ours "$1")" ]; }
no_kids() { [ "$(kids)" -eq 0 ]; }
at_base() { [ "$(fds)" -eq "$fdbase" ]; }

# target ARGV-JSON [EXTRA]: an exec target carrying the mark.
target() {
	printf '{"type":"exec","argv":%s,"env":{"HOSTILE_TEST":"%s"}%s}' \
		"$1" "$$" "${2:-}"
}

# once NAME TIMEOUT LIMITS TARGET [RETRIES]: a one-shot schedule due now.
once() {
	add "$1" "kind, at, max_retries, retry_delay_seconds, timeout_seconds, limits, target" \
		"'once', now(), ${5:-0}, 1, $2, '$3', '$4'"
}

# finished ID SECS: waits until schedule ID is done or dead.
finished() {
	wait_for "$2" "SELECT status IN ('done', 'dead') FROM schedules WHERE id = '$1'" ||
		echo "schedule $1 did not finish in $2 s"
}

# run_of ID COLUMNS: the columns of the schedule's only (or first) run.
run_of() {
	sql "SELECT $2 FROM runs WHERE schedule_id = '$1' ORDER BY attempt LIMIT 1"
}

# healthy CASE: the supervisor lives, heartbeats and runs a plain schedule.
plain_n=0
healthy() {
	ok "$1-alive" "$(kill -0 "$pid" 2>/dev/null && echo alive)" "alive"
	hb=$(sql "SELECT heartbeat FROM supervisors WHERE pid = $pid AND stopped_at IS NULL")
	wait_for 5 "SELECT heartbeat > '$hb' FROM supervisors WHERE pid = $pid AND stopped_at IS NULL"
	ok "$1-heartbeat" "$?" "0"
	plain_n=$((plain_n + 1))
	s=$(once "plain-$plain_n" 10 '{}' "$(target '["/bin/echo","plain"]')")
	finished "$s" 10
	ok "$1-plain-run" "$(run_of "$s" "status || ':' || output")" "succeeded:plain"
}

# clean CASE SCHEDULE-ID: nothing of the run is left, the supervisor is
# healthy and holds as many descriptors as it did at the baseline.
clean() {
	wait_until 10 none_left "CRONVISOR_SCHEDULE_ID=$2"
	ok "$1-no-process" "$(ours "CRONVISOR_SCHEDULE_ID=$2" | wc -l)" "0"
	ok "$1-no-zombie" "$(zombies)" "0"
	wait_until 10 no_kids
	ok "$1-no-child" "$(kids)" "0"
	wait_until 5 at_base
	ok "$1-fds" "$(fds)" "$fdbase"
	echo "figure $1: supervisor fds $(fds) (baseline $fdbase), VmRSS $(kb "$pid" VmRSS) kB, VmHWM $(kb "$pid" VmHWM) kB"
	healthy "$1"
}

db_setup || exit 1
shutdown_grace_seconds=5 owner_max_running= conf hostile-test
chmod 755 "$work"
tail_bytes=16384 # output_tail_bytes, by default

if [ "$(id -u)" -eq 0 ]; then
	user=cvh$$
	useradd --system --no-create-home --user-group --shell /usr/sbin/nologin "$user" ||
		{ echo "cannot create the test user $user"; user=""; exit 1; }
	uid=$(id -u "$user")
	gid=$(id -g "$user")
fi

up "$cvd"
healthy warmup
fdbase=$(fds)
echo "figure baseline: supervisor fds $fdbase, VmRSS $(kb "$pid" VmRSS) kB, VmHWM $(kb "$pid" VmHWM) kB"

# --- fork bomb: stopped by limits.nproc, which counts per real uid ---
if [ -n "$user" ]; then
	s=$(once forkbomb 30 '{"nproc": 20}' \
		"$(target "[\"$helper\",\"forkbomb\",\"10\"]" ",\"run_as\":\"$user\"")")
	max=0
	i=0
	while [ $i -lt 300 ] && [ "$(sql "SELECT status IN ('done', 'dead') FROM schedules WHERE id = '$s'")" != t ]; do
		n=$(ps -U "$user" -o pid= 2>/dev/null | wc -l)
		[ "$n" -gt "$max" ] && max=$n
		sleep 0.1
		i=$((i + 1))
	done
	ok forkbomb-outcome "$(run_of "$s" "status || ':' || exit_code || ':' || output")" \
		"failed:4:fork refused: Resource temporarily unavailable"
	echo "figure forkbomb: at most $max processes of uid $uid seen (nproc 20)"
	ok forkbomb-bounded "$([ "$max" -le 20 ] && echo yes)" "yes"
	clean forkbomb "$s"
	ok forkbomb-user-empty "$(ps -U "$user" -o pid= | wc -l)" "0"
else
	skip forkbomb "not root: RLIMIT_NPROC counts every process of the test's own uid (and not root's), so a bomb needs a dedicated uid via run_as, which needs root; the runner's nproc limit itself is covered by check_runner's forks test"
fi

# --- memory hog: limits.memory_mb makes its allocation fail cleanly ---
s=$(once memhog 30 '{"memory_mb": 64}' "$(target "[\"$helper\",\"alloc\",\"512\"]")")
finished "$s" 20
ok memhog-outcome "$(run_of "$s" "status || ':' || exit_code || ':' || output")" \
	"failed:3:allocation failed"
clean memhog "$s"

# --- CPU spinners: SIGXCPU at the soft limit, SIGKILL at the hard one ---
s=$(once spin 30 '{"cpu_seconds": 1}' "$(target "[\"$helper\",\"spin\"]")")
finished "$s" 20
ok spin-outcome "$(run_of "$s" "status || ':' || signal || ':' || error || ':' || (duration_ms < 10000)")" \
	"failed:24:killed by signal 24 (CPU time limit exceeded):true"
clean spin "$s"
s=$(once spin-noxcpu 30 '{"cpu_seconds": 1}' "$(target "[\"$helper\",\"spin\",\"noxcpu\"]")")
finished "$s" 20
ok spin-noxcpu-outcome "$(run_of "$s" "status || ':' || signal || ':' || (duration_ms < 10000)")" \
	"failed:9:true"
clean spin-noxcpu "$s"

# --- SIGTERM ignored past the timeout: timed out, killed after the grace ---
s=$(once ignoreterm 1 '{}' "$(target "[\"$helper\",\"ignoreterm\",\"60\"]")")
finished "$s" 20
ok ignoreterm-outcome "$(run_of "$s" "status || ':' || signal || ':' || output || ':' || (duration_ms BETWEEN 1000 AND 4000)")" \
	"timed_out:9:started
:true"
clean ignoreterm "$s"

# --- a grandchild escaping with setsid and a double fork ---
s=$(once escape-exit 10 '{}' "$(target "[\"$helper\",\"escape\",\"exit\"]")")
finished "$s" 20
ok escape-exit-outcome "$(run_of "$s" "status || ':' || (output LIKE 'grandchild %')")" "succeeded:true"
gc=$(run_of "$s" output | awk '{print $2}')
clean escape-exit "$s"
ok escape-exit-grandchild-gone "$(cat /proc/"${gc:-0}"/environ 2>/dev/null | grep -ac "CRONVISOR_SCHEDULE_ID=$s")" "0"
s=$(once escape-wait 2 '{}' "$(target "[\"$helper\",\"escape\",\"wait\"]")")
finished "$s" 20
ok escape-wait-outcome "$(run_of "$s" "status || ':' || (output LIKE 'grandchild %')")" "timed_out:true"
clean escape-wait "$s"

# --- 1 GiB on stdout: the tail is kept, nobody's memory grows with it ---
hwm0=$(kb "$pid" VmHWM)
s=$(once flood 120 '{}' "$(target "[\"$helper\",\"flood\",\"1024\"]")")
rmax=0
i=0
while [ $i -lt 1200 ] && [ "$(sql "SELECT status IN ('done', 'dead') FROM schedules WHERE id = '$s'")" != t ]; do
	for r in $(cat /proc/"$pid"/task/*/children 2>/dev/null); do
		v=$(kb "$r" VmRSS)
		[ -n "$v" ] && [ "$v" -gt "$rmax" ] && rmax=$v
	done
	sleep 0.1
	i=$((i + 1))
done
hwm1=$(kb "$pid" VmHWM)
ok flood-outcome "$(run_of "$s" "status || ':' || length(output) || ':' || right(output, 13)")" \
	"succeeded:$tail_bytes:END-OF-FLOOD"
echo "figure flood: supervisor VmHWM $hwm0 kB before, $hwm1 kB after; runner VmRSS at most $rmax kB; $(run_of "$s" "duration_ms") ms"
ok flood-supervisor-memory "$([ $((hwm1 - hwm0)) -lt 16384 ] && echo bounded)" "bounded"
ok flood-runner-memory "$([ "$rmax" -lt $((hwm1 + 65536)) ] && echo bounded)" "bounded"
clean flood "$s"

# --- the fault names mean nothing to the real supervisor ---
s=$(once cv-test-fault-garbage 10 '{}' "$(target '["/bin/echo","fine"]')")
finished "$s" 10
ok fault-name-inert "$(run_of "$s" "status || ':' || output")" "succeeded:fine"
clean fault-name-inert "$s"

# --- the privilege drop and no shell, read from /proc of a running job ---
# proc_status ID FIELD...: fields of /proc/PID/status of the job's process
proc_status() {
	wait_until 10 sh -c "[ -n \"\$(grep -lsa -- 'CRONVISOR_SCHEDULE_ID=$1' /proc/[0-9]*/environ)\" ]"
	p=$(ours "CRONVISOR_SCHEDULE_ID=$1" | head -n 1)
	shift
	for f in "$@"; do
		awk -v k="$f:" '$1 == k {$1 = ""; sub(/^ /, ""); print}' /proc/"$p"/status 2>/dev/null
	done | paste -sd '|'
}
if [ -n "$user" ]; then
	s=$(once run-as 30 '{}' "$(target "[\"$helper\",\"sleep\",\"3\"]" ",\"run_as\":\"$user\"")")
	ok run-as-status "$(proc_status "$s" Uid Gid Groups NoNewPrivs CapInh CapPrm CapEff CapAmb)" \
		"$uid $uid $uid $uid|$gid $gid $gid $gid||1|0000000000000000|0000000000000000|0000000000000000|0000000000000000"
	finished "$s" 10
	ok run-as-outcome "$(run_of "$s" status)" "succeeded"
	clean run-as "$s"
	# A set-user-ID root copy of id(1): without no_new_privs it would
	# print 0.
	cp /usr/bin/id "$work/suid-id" && chmod 4755 "$work/suid-id"
	s=$(once run-as-suid 30 '{}' "$(target "[\"$work/suid-id\",\"-u\"]" ",\"run_as\":\"$user\"")")
	finished "$s" 20
	ok run-as-no-setuid-gain "$(run_of "$s" "status || ':' || output")" "succeeded:$uid"
	clean run-as-suid "$s"
else
	skip run-as "not root: run_as needs a root supervisor (check_runner covers the refusal)"
fi
# Without run_as a root supervisor runs the job as its owner's user
# (run_user_default: cronvisor-run), with no capabilities; one that is not
# root runs it as itself.  Either way no set-user-ID program or file
# capability can add to what it has.
if [ "$(id -u)" -eq 0 ]; then
	ru=$(id -u cronvisor-run)
	want="$ru $ru $ru $ru|1|0000000000000000"
else
	want="$(id -u) $(id -u) $(id -u) $(id -u)|1|$(kb "$pid" CapEff)"
fi
s=$(once no-run-as 30 '{}' "$(target "[\"$helper\",\"sleep\",\"3\"]")")
ok no-run-as-status "$(proc_status "$s" Uid NoNewPrivs CapEff)" "$want"
finished "$s" 10
clean no-run-as "$s"
s=$(once no-shell 10 '{}' "$(target '["/bin/echo","$(id)",";","rm -rf /","`id`","|","&&","*"]')")
finished "$s" 10
ok no-shell "$(run_of "$s" "status || ':' || output")" 'succeeded:$(id) ; rm -rf / `id` | && *'
clean no-shell "$s"
down cronvisord

# --- broken result frames, by the test-only cronvisord-faults ---
# The hook is compiled into that binary only, never into cronvisord.
ok fault-hook-absent "$(grep -c cv-test-fault- "$cvd")" "0"
ok fault-hook-present "$(grep -c cv-test-fault- "$cvdf")" "1"
up "$cvdf"
healthy faults-warmup
fdbase=$(fds)
for mode in close garbage badpack truncate; do
	s=$(once "cv-test-fault-$mode" 10 '{}' "$(target '["/bin/echo","ran"]')")
	finished "$s" 15
	ok "fault-$mode" "$(run_of "$s" "status")" "protocol_error"
	echo "figure fault-$mode: recorded $(run_of "$s" "status || ': ' || error")"
	clean "fault-$mode" "$s"
done
ok fault-close-error "$(sql "SELECT error FROM runs r JOIN schedules s ON s.id = r.schedule_id WHERE s.name = 'cv-test-fault-close'")" \
	"the runner exited without a result"
down cronvisord-faults

# --- a run that outlives its supervisor (kill -9 while it runs) ---
# The runner has PR_SET_PDEATHSIG(SIGTERM): it stops the command's tree as
# at a timeout (SIGTERM, kill grace, SIGKILL; this command ignores SIGTERM)
# and nothing of the run survives the supervisor by more than the grace.
# The restarted supervisor declares the orphaned run lost and retries it.
up "$cvd"
healthy restart
fdbase=$(fds)
# As root (run_as: its owner's user could not write $work/outlive).
s=$(once outlive 30 '{}' "$(target "[\"$helper\",\"outlive\",\"4\",\"$work/outlive\"]" "$as_root")" 1)
wait_until 10 sh -c "[ -n \"\$(grep -lsa -- 'CRONVISOR_SCHEDULE_ID=$s' /proc/[0-9]*/environ)\" ]"
run0=$(run_of "$s" id)
runner=$(cat /proc/"$pid"/task/*/children)
crash hostile-test
t0=$(date +%s%N)
wait_until 10 none_left "CRONVISOR_SCHEDULE_ID=$s"
t1=$(date +%s%N)
ok outlive-killed "$(ours "CRONVISOR_SCHEDULE_ID=$s" | wc -l)" "0"
echo "figure outlive: the run's processes were gone $(((t1 - t0) / 1000000)) ms after kill -9 (kill grace 1 s)"
st=$(awk '{print $3}' /proc/"$runner"/stat 2>/dev/null)
ok outlive-runner-gone "$(case $st in "" | Z) echo gone ;; *) echo "state $st" ;; esac)" "gone"
up "$cvd"
finished "$s" 30
ok outlive-lost-retried "$(sql "SELECT string_agg(attempt || ':' || status, ',' ORDER BY attempt) FROM runs WHERE schedule_id = '$s'")" \
	"0:lost,1:succeeded"
ok outlive-never-finished "$(grep -c "finished $run0\$" "$work/outlive")" "0"
ok outlive-retry-finished "$(grep -c "^finished " "$work/outlive")" "1"
fdbase=$(fds)
clean outlive "$s"
down cronvisord-restarted

echo "hostile: $pass passed, $fail failed, $skipped skipped"
[ "$fail" -eq 0 ] || exit 1
[ "$skipped" -eq 0 ] || exit 77
