# chaos-lib.sh: what the scenarios of tests/chaos/chaos.sh share: the load
# (interval schedules with mixed outcomes), starting and stopping
# supervisors, the settling at the end, the accounting of every slot and
# the scan of /proc for what a run left behind.  Sourced by chaos.sh after
# it set work, base, name, url, cvd, ctl, tag and the itest-lib.sh helpers.
#
# The accounting (account()) checks these invariants over the schedules of
# the load (name LIKE 'chaos%'), whose slots are whole seconds anchored at
# start_at, interval_seconds apart:
#
#  1. Coverage.  Let first = start_at and last = the latest slot any row of
#     the schedule names (a run, or the end of a missed/expired range).
#     Every slot first, first+i, ..., last is covered exactly once, by
#       - a run of attempt 0 of that slot (whatever its status: it ran), or
#       - a `skipped` row of that slot (overlap: skip, its note says why), or
#       - a `missed` row: the claim's catch-up policy dropped
#         count slots after downtime; the row's slot_at is the first of
#         them and its note says "<count> slots from <a> to <b> not run
#         (catch_up: <policy>)": it covers count consecutive slots, or
#       - an `expired` row, likewise with "<count> slots from <a> past
#         starting_deadline_seconds".
#     A slot covered by nothing is a lost result; covered twice, a
#     duplicate.  (catch_up is chosen per schedule, by index: latest, all
#     with max_catch_up_runs 3, none; all three fit the rule above.)
#  2. No two runs share (schedule, slot, attempt) - the unique index makes
#     it impossible, counted anyway (duplicates).
#  3. Retries chain on their slot: attempt k > 0 exists only if attempt
#     k-1 of the same slot ended in a retryable failure (failed, timed_out,
#     lost, interrupted, crashed) - else an error; and such a failure at
#     attempt k < max_retries has its attempt k+1 - else its result was
#     lost (lost_results).  (settle() pauses a schedule only when it has
#     no run in flight and no retry pending, so no chain ends by a pause;
#     except the few it has to pause in flight after 10 s, listed in
#     chaos_forced, whose runs ending from 10 s before may end a chain.)
#  4. A run of a supervisor killed with -9 or interrupted is `lost` or
#     `interrupted` (then retried, by 3); no run stays `running` once
#     everything settled (each such row counts as a lost result).
#  5. No process of a run survives: every command of the load carries
#     CHAOS_TAG=<tag> in its environment, inherited by whatever it forks,
#     and no process in /proc has it, nor a command line naming the work
#     directory (a runner outliving its supervisor), once the supervisors
#     stopped (leaked).
#  6. The history is whole: no schedule of the load has as many rows as
#     its history_limit (the supervisor prunes beyond it, and 1-4 could
#     not be checked over what is gone) - else an error.
#
# Every figure that fails prints what it counts and the first offending
# rows (account_detail).

# log_of NAME: the log of supervisor NAME.
# sv_start NAME [CONF-LINES]: starts supervisor NAME; pid in pid_NAME.
# Every schedule here has one owner: no per-owner limit of runs in flight
# (engine_fair.sh tests it).
sv_start() {
	[ -f "$work/$1.conf" ] || cat >"$work/$1.conf" <<EOF
database_url = "$url"
supervisor_name = "$1"
heartbeat_seconds = 1
lease_seconds = ${lease:-3}
shutdown_grace_seconds = ${grace:-2}
kill_grace_seconds = 1
max_concurrent_runs = ${maxruns:-400}
owner_max_running = 100000
${2:-}
EOF
	"$cvd" -f "$work/$1.conf" </dev/null >>"$work/$1.log" 2>&1 &
	eval "pid_$1=$!"
	all_pids="$all_pids $!"
	echo "$1" >>"$work/started"
}

# sv_pid NAME: the pid of supervisor NAME.
sv_pid() { eval "echo \${pid_$1:-}"; }

# sv_kill9 NAME: kill -9, reaped.
sv_kill9() {
	p=$(sv_pid "$1")
	[ -n "$p" ] || return 0
	kill -9 "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	eval "pid_$1="
	kills=$((kills + 1))
}

# sv_term NAME [SECONDS]: SIGTERM, a bounded wait (then -9, an error); the
# exit status in rc, the time it took in term_ms.
sv_term() {
	p=$(sv_pid "$1")
	[ -n "$p" ] || return 0
	t0=$(now_ms)
	kill -TERM "$p" 2>/dev/null
	i=0
	while kill -0 "$p" 2>/dev/null && [ $i -lt $((${2:-15} * 10)) ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if kill -0 "$p" 2>/dev/null; then
		echo "chaos: supervisor $1 did not stop in ${2:-15} s" >&2
		errors=$((errors + 1))
		kill -9 "$p" 2>/dev/null
	fi
	wait "$p"
	rc=$?
	term_ms=$(($(now_ms) - t0))
	eval "pid_$1="
	[ "$rc" -eq 0 ] || {
		echo "chaos: supervisor $1 exited with $rc after SIGTERM" >&2
		errors=$((errors + 1))
	}
}

# sv_check_alive NAME: an error if supervisor NAME died by itself.
sv_check_alive() {
	p=$(sv_pid "$1")
	if [ -n "$p" ] && ! kill -0 "$p" 2>/dev/null; then
		echo "chaos: supervisor $1 (pid $p) died:" >&2
		tail -n 5 "$work/$1.log" >&2
		errors=$((errors + 1))
		wait "$p" 2>/dev/null
		eval "pid_$1="
		return 1
	fi
	return 0
}

now_ms() { date +%s%3N; }

# rand LO HI: a pseudo-random integer in [LO, HI].
rand() { od -An -N2 -tu2 /dev/urandom | awk -v lo="$1" -v hi="$2" '{ print lo + $1 % (hi - lo + 1) }'; }

# load N [PREFIX]: N interval schedules of one second starting two seconds
# from now, mixed outcomes by index i:
#   i%4 = 0  ok:      /bin/true
#   i%4 = 1  flaky:   attempt 0 of every third slot fails (exit 3),
#                     retried (max_retries 3, fixed 1 s)
#   i%4 = 2  timeout: attempt 0 of every fifth slot sleeps past its 1 s
#                     timeout, retried
#   i%4 = 3  slow:    sleeps 1.3 s every slot: overlap skip rows
# catch_up by i%3: latest, all (max 3), none.  The accounting needs every
# row of the load, so history_limit is the most there is: with the default
# (100) the supervisor prunes the oldest rows of a schedule once it has
# more (about 90 s of faults), which look like lost slots and retries
# without their first attempt (invariant 6).
load() {
	sql "INSERT INTO schedules (name, owner, kind, interval_seconds, start_at,
	     next_run_at, next_slot_at, max_retries, backoff, retry_delay_seconds,
	     timeout_seconds, catch_up, max_catch_up_runs, history_limit, target)
	     SELECT '${2:-chaos}' || g, 'test', 'interval', 1, t, t, t, 3, 'fixed', 1,
	     CASE WHEN g % 4 = 2 THEN 1 ELSE 20 END,
	     (ARRAY['latest', 'all', 'none'])[g % 3 + 1], 3, 100000,
	     jsonb_build_object('type', 'exec', 'env',
	       jsonb_build_object('CHAOS_TAG', '$tag'), 'argv',
	       CASE g % 4
	       WHEN 0 THEN jsonb_build_array('/bin/true')
	       WHEN 1 THEN jsonb_build_array('/bin/sh', '-c',
	         'case \$CRONVISOR_RUN_ID in *-rc0) [ \$((CRONVISOR_SLOT % 3)) -ne 0 ];; esac')
	       WHEN 2 THEN jsonb_build_array('/bin/sh', '-c',
	         'case \$CRONVISOR_RUN_ID in *-rc0) [ \$((CRONVISOR_SLOT % 5)) -ne 0 ] || sleep 5;; esac')
	       ELSE jsonb_build_array('/bin/sleep', '1.3') END)
	     FROM generate_series(1, $1) g,
	     (SELECT date_trunc('second', now()) + interval '2s' AS t) x" >/dev/null
}

# settle: stops creating load and waits, bounded, until nothing is active
# or running.  A schedule is paused only when it has no run in flight and
# no retry pending (again and again, until all are): a result that comes
# in after the pause would only update the counters, and a failure would
# not be retried - which invariant 3 could not tell from a lost retry.
# The waits are counted on the clock, not in turns of the loop (each turn
# is a psql, slow on a loaded machine).  Sets settle_at.
settle() {
	settle_at=$(sql "SELECT now()")
	sql "CREATE TABLE IF NOT EXISTS chaos_forced (id uuid, at timestamptz)" >/dev/null
	t0=$(now_ms)
	forced=0
	while [ $(($(now_ms) - t0)) -lt 60000 ]; do
		[ "$(sql "UPDATE schedules SET status = 'paused', next_run_at = NULL
		     WHERE status = 'active' AND NOT retry_pending AND running = 0;
		     SELECT NOT EXISTS (SELECT 1 FROM schedules WHERE status = 'active')
		     AND NOT EXISTS (SELECT 1 FROM runs WHERE status = 'running')" 2>/dev/null)" = t ] &&
			return 0
		# A catch_up: all schedule whose runs last longer than its
		# interval runs back to back (claim.c) and may never be idle,
		# and on a slow machine a flaky one may always be running or
		# waiting for a retry: every 10 s, such a schedule is paused in
		# flight, and the chain of its last runs is allowed to end
		# there (chaos_forced, invariant 3).  Only a schedule with a run
		# in flight or a retry not yet due: an idle one with no retry
		# pending after a failure, or whose retry is overdue, is a lost
		# retry, for the accounting to see, not to excuse.
		if [ $(($(now_ms) - t0)) -ge $((forced + 10000)) ]; then
			forced=$((forced + 10000))
			sql "WITH p AS (UPDATE schedules SET status = 'paused',
			     next_run_at = NULL WHERE status = 'active'
			     AND (running > 0 OR (retry_pending
			          AND next_run_at > now() - interval '2 s'))
			     RETURNING id) INSERT INTO chaos_forced SELECT id, now() FROM p" >/dev/null 2>&1
		fi
		sleep 0.1
	done
	echo "chaos: the load did not settle in 60 s; what was left:" >&2
	sql "SELECT 'schedule', name, status, running, retry_pending, catch_up,
	       next_run_at::text FROM schedules WHERE status = 'active'
	     UNION ALL
	     SELECT 'run', s.name, r.status, r.attempt, r.pid IS NOT NULL,
	       r.slot_at::text, r.supervisor_id::text
	     FROM runs r JOIN schedules s ON s.id = r.schedule_id
	     WHERE r.status = 'running' LIMIT 40" >&2 2>&1 || true
	errors=$((errors + 1))
}

# The common part of the accounting's queries (invariants 1-4 and 6): the
# load's schedules (s) and runs (r), the slots the rows cover (cov), the
# slots expected (e) and how often each is covered (m), and the offending
# rows by kind.
acct_with="
	WITH s AS (SELECT id, name, start_at, interval_seconds AS iv,
	           max_retries, history_limit FROM schedules
	           WHERE name LIKE 'chaos%'),
	r AS (SELECT r.* FROM runs r JOIN s ON s.id = r.schedule_id
	      WHERE NOT r.triggered),
	cov AS (
	  SELECT schedule_id, slot_at AS slot FROM r
	  WHERE attempt = 0 AND status NOT IN ('missed', 'expired')
	  UNION ALL
	  SELECT r.schedule_id, r.slot_at + make_interval(secs => g * s.iv)
	  FROM r JOIN s ON s.id = r.schedule_id,
	  generate_series(0, coalesce(substring(r.note FROM '([0-9]+) slots?')::int, 1) - 1) g
	  WHERE r.status IN ('missed', 'expired')),
	b AS (SELECT s.id, s.start_at AS lo, max(c.slot) AS hi, s.iv FROM s
	      JOIN cov c ON c.schedule_id = s.id GROUP BY s.id, s.start_at, s.iv),
	e AS (SELECT b.id, gs AS slot FROM b,
	      generate_series(b.lo, b.hi, make_interval(secs => b.iv)) gs),
	m AS (SELECT e.id, e.slot, count(c.slot) AS n FROM e
	      LEFT JOIN cov c ON c.schedule_id = e.id AND c.slot = e.slot
	      GROUP BY e.id, e.slot),
	stray AS (SELECT c.* FROM cov c JOIN b ON b.id = c.schedule_id
	      WHERE c.slot < b.lo OR extract(epoch FROM c.slot - b.lo)::bigint % b.iv <> 0),
	dupatt AS (SELECT schedule_id, slot_at, attempt, count(*) AS n FROM r
	      WHERE status NOT IN ('missed', 'expired', 'skipped')
	      GROUP BY schedule_id, slot_at, attempt HAVING count(*) > 1),
	orphan AS (SELECT * FROM r WHERE attempt > 0 AND NOT EXISTS (
	      SELECT 1 FROM r p WHERE p.schedule_id = r.schedule_id
	      AND p.slot_at = r.slot_at AND p.attempt = r.attempt - 1
	      AND p.status IN ('failed', 'timed_out', 'lost', 'interrupted', 'crashed'))),
	broken AS (SELECT r.* FROM r JOIN s ON s.id = r.schedule_id
	      WHERE r.status IN ('failed', 'timed_out', 'lost', 'interrupted', 'crashed')
	      AND r.attempt < s.max_retries AND NOT EXISTS (SELECT 1 FROM chaos_forced f
	      WHERE f.id = r.schedule_id AND r.finished_at >= f.at - interval '10 s')
	      AND NOT EXISTS (SELECT 1 FROM r n WHERE n.schedule_id = r.schedule_id
	      AND n.slot_at = r.slot_at AND n.attempt = r.attempt + 1)),
	pruned AS (SELECT s.id, s.name, s.history_limit, count(r.id) AS n FROM s
	      JOIN r ON r.schedule_id = s.id GROUP BY s.id, s.name, s.history_limit
	      HAVING count(r.id) >= s.history_limit)"

# account: the figures of invariants 1-4 and 6 over the load's runs
# (schedules named chaos%), added to the scenario's totals; each failing
# figure is printed with what it counts (account_detail).
account() {
	sql "CREATE TABLE IF NOT EXISTS chaos_forced (id uuid, at timestamptz)" >/dev/null 2>&1
	set -- $(sql "$acct_with
	SELECT (SELECT count(*) FROM m),
	  (SELECT count(*) FROM r WHERE status NOT IN ('skipped', 'missed', 'expired')),
	  (SELECT count(*) FILTER (WHERE n > 1) FROM m),
	  (SELECT count(*) FROM dupatt),
	  (SELECT count(*) FILTER (WHERE n = 0) FROM m),
	  (SELECT count(*) FROM broken),
	  (SELECT count(*) FROM r WHERE status = 'running'),
	  (SELECT count(*) FROM orphan),
	  (SELECT count(*) FROM stray),
	  (SELECT count(*) FROM pruned),
	  (SELECT count(*) FROM r WHERE status = 'lost'),
	  (SELECT count(*) FROM r WHERE status = 'interrupted'),
	  (SELECT count(*) FROM r WHERE status = 'missed'),
	  (SELECT count(*) FROM r WHERE status = 'skipped'),
	  (SELECT count(*) FROM r WHERE attempt > 0)" | tr '|' ' ')
	if [ $# -ne 15 ]; then
		echo "chaos: error: the accounting query failed" >&2
		errors=$((errors + 1))
		return
	fi
	a_twice=$3 a_dupatt=$4 a_uncovered=$5 a_broken=$6 a_running=$7
	a_orphan=$8 a_stray=$9 a_pruned=${10}
	expected=$((expected + $1))
	observed=$((observed + $2))
	dups=$((dups + a_twice + a_dupatt))
	lostres=$((lostres + a_uncovered + a_broken + a_running))
	errors=$((errors + a_orphan + a_stray + a_pruned))
	n_lost=$((n_lost + ${11}))
	n_intr=$((n_intr + ${12}))
	n_missed=$((n_missed + ${13}))
	n_skipped=$((n_skipped + ${14}))
	n_retries=$((n_retries + ${15}))
	[ $((a_twice + a_dupatt + a_uncovered + a_broken + a_running + a_orphan +
		a_stray + a_pruned)) -eq 0 ] || account_detail
}

# account_what FIGURE COUNT WHAT SQL: when COUNT is not 0, one line saying
# what the figure counts, then the first rows of SQL (after acct_with).
account_what() {
	[ "$2" -ne 0 ] || return 0
	echo "chaos: $1 +$2: $3:" >&2
	sql "$acct_with $4 LIMIT 10" >&2
}

# account_detail: the offending slots and rows, for the log of a failure.
account_detail() {
	account_what duplicates "$a_twice" "slots covered twice (schedule, slot, times)" \
		"SELECT s.name, m.slot, m.n FROM m JOIN s ON s.id = m.id WHERE m.n > 1 ORDER BY m.slot"
	account_what duplicates "$a_dupatt" "runs sharing (schedule, slot, attempt)" \
		"SELECT s.name, d.slot_at, d.attempt, d.n FROM dupatt d JOIN s ON s.id = d.schedule_id"
	account_what lost_results "$a_uncovered" "slots no row covers (schedule, uncovered, first, last)" \
		"SELECT s.name, count(*), min(m.slot), max(m.slot) FROM m JOIN s ON s.id = m.id
		 WHERE m.n = 0 GROUP BY s.name ORDER BY count(*) DESC"
	account_what lost_results "$a_broken" "retryable failures without their next attempt" \
		"SELECT id, status, finished_at, error FROM broken ORDER BY finished_at"
	account_what lost_results "$a_running" "runs still running after the settling" \
		"SELECT id, supervisor_id, started_at FROM r WHERE status = 'running'"
	account_what errors "$a_orphan" "retries whose previous attempt did not fail retryably" \
		"SELECT o.id, o.status, o.slot_at, p.status AS previous FROM orphan o
		 LEFT JOIN r p ON p.schedule_id = o.schedule_id AND p.slot_at = o.slot_at
		 AND p.attempt = o.attempt - 1 ORDER BY o.slot_at"
	account_what errors "$a_stray" "rows covering a slot off the schedule's grid" \
		"SELECT s.name, st.slot FROM stray st JOIN s ON s.id = st.schedule_id"
	account_what errors "$a_pruned" "schedules whose history reached history_limit (pruned, not checkable)" \
		"SELECT name, n, history_limit FROM pruned"
	[ -n "${KEEP:-}" ] && echo "chaos: database $name kept" && keepdb=1
	return 0
}

# leaks: invariant 5; adds to leaked and prints what it found.
leaks() {
	n=$(python3 - "$tag" "$work" <<'EOF'
import os, sys
tag = ("CHAOS_TAG=" + sys.argv[1]).encode()
work = sys.argv[2].encode()
me = os.getpid()
n = 0
for p in os.listdir("/proc"):
    if not p.isdigit() or int(p) == me:
        continue
    try:
        env = open("/proc/%s/environ" % p, "rb").read().split(b"\0")
        cmd = open("/proc/%s/cmdline" % p, "rb").read()
    except OSError:
        continue
    if tag in env or work in cmd:
        n += 1
        sys.stderr.write("leaked: pid %s: %s\n" % (p, cmd.replace(b"\0", b" ").decode("utf-8", "replace")))
print(n)
EOF
)
	leaked=$((leaked + ${n:-1}))
}

# report SCENARIO [EXTRA]: the one line of figures; the exit status.
report() {
	verdict=PASS
	[ $((dups + lostres + leaked + errors)) -eq 0 ] || verdict=FAIL
	echo "chaos: scenario=$1 slots_expected=$expected runs_observed=$observed duplicates=$dups lost_results=$lostres leaked=$leaked errors=$errors kills=$kills lost_runs=$n_lost interrupted=$n_intr missed_rows=$n_missed skipped_rows=$n_skipped retries=$n_retries${2:+ $2} result=$verdict"
	[ "$verdict" = PASS ]
}
