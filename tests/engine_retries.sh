#!/bin/sh
# engine_retries.sh: one retry chain per slot, with the real cronvisord
# against the fixture's PostgreSQL.  Each command appends its run id and
# the time (its own clock, to the ns) to a stamp file, so that what ran is
# counted by what the commands saw, not by rows.
#  1. overlap: allow, interval 1 s, every first attempt fails after 1.5 s
#     and every retry succeeds, retry_delay 3 s, total_repeats 4: the runs
#     of two slots are in flight together and fail together; each keeps
#     its own retry chain (a slot's failed first attempt is always
#     followed by its retry, each started 3 s after its own failure, none
#     twice), no new slot starts while a retry waits, and the schedule is
#     done after 4 successes with no retry left behind.  Before, the
#     second failure replaced the first one's retry: that slot was never
#     run again.
#  2. Every attempt failing, max_retries 1: the first slot's first
#     attempt fails after 1.2 s, the second slot's (started meanwhile)
#     after 3 s, so its retry is due 2.8 s after the first slot's; the
#     first slot's retry fails, the schedule is dead, and the other
#     slot's waiting retry goes with it (never run, no row left).
#  3. A run whose error text is cut inside a character (a command path of
#     150 two-byte characters, "cannot execute …" cut at 255 bytes): its
#     result and the schedule's last_error are written, the same text,
#     the cut byte as '?'.
# Usage: engine_retries.sh CRONVISORD CRONVISORCTL CONNINFO-FILE
set -u
prefix=engine_retries
. "$(dirname "$0")/harness.sh"

db_setup || exit 1
start a

# cmd NAME RETRY [FIRST]: a stamp, then a first attempt fails after 1.5 s
# (or as the case items FIRST say) and a retry runs RETRY.
cmd() {
	echo "echo \$CRONVISOR_RUN_ID \$(date +%s.%N) >> $work/$1.stamps; case \$CRONVISOR_RUN_ID in ${3:-}*-rc0) sleep 1.5; exit 1;; esac; $2"
}
: >"$work/chains.stamps" >"$work/dead.stamps"
chmod 666 "$work"/*.stamps

chains=$(add chains "kind, interval_seconds, overlap, total_repeats, max_retries, backoff, retry_delay_seconds, target" \
	"'interval', 1, 'allow', 4, 2, 'fixed', 3, '$(exec_target "$(cmd chains "exit 0")")'")
dead=$(add dead "kind, interval_seconds, overlap, max_retries, backoff, retry_delay_seconds, target" \
	"'interval', 1, 'allow', 1, 'fixed', 3, '$(exec_target "$(cmd dead "exit 2" "*-n0-rc0) sleep 1.2; exit 1;; *-n[1-9]*-rc0) sleep 3; exit 1;; ")")'")
long=/nonexistent/$(printf 'é%.0s' $(seq 150))
cut=$(sql "INSERT INTO schedules (name, owner, kind, at, next_run_at, next_slot_at, max_retries, target)
	VALUES ('cut', 'test', 'once', now(), now(), now(), 0,
	        '{\"type\":\"exec\",\"argv\":[\"$long\"]$as_root}') RETURNING id")

wait_for 40 "SELECT status = 'done' FROM schedules WHERE id = '$chains'" ||
	echo "chains: not done within 40 s"
wait_for 30 "SELECT status = 'dead' AND running = 0 FROM schedules WHERE id = '$dead'" ||
	echo "dead: not dead within 30 s"
# Runs of the dead schedule still in flight have ended; nothing more may
# start: a retry that was waiting would be due 3 s after its failure.
sleep 4

# stamps FILE RC: the repeats (n<k>) whose attempt RC stamped, sorted.
stamps() {
	sed -n "s/^sched-[0-9a-f]*-\(n[0-9]*\)-rc$2 .*/\1/p" "$work/$1.stamps" | sort
}

# 1.
ok chains-done "$(sql "SELECT status || ':' || current_repeat || ':' || retry_pending FROM schedules WHERE id = '$chains'")" "done:4:false"
ok chains-two-at-once "$(sql "SELECT count(*) > 0 FROM runs a JOIN runs b ON a.schedule_id = b.schedule_id AND a.id < b.id AND a.attempt = 0 AND b.attempt = 0 AND a.status = 'failed' AND b.status = 'failed' AND a.started_at < b.finished_at AND b.started_at < a.finished_at WHERE a.schedule_id = '$chains'")" "t"
ok chains-each-retried "$(stamps chains 0 | tr '\n' ' ')" "$(stamps chains 1 | tr '\n' ' ')"
n0=$(stamps chains 0 | wc -l)
ok chains-first-attempts "$([ "$n0" -ge 4 ] && echo yes)" "yes"
ok chains-none-twice "$(cut -d' ' -f1 "$work/chains.stamps" | sort | uniq -d | wc -l)" "0"
ok chains-no-third-attempt "$(stamps chains 2 | wc -l)" "0"
ok chains-backoff-each "$(sql "SELECT count(*) || ':' || bool_and(extract(epoch FROM r.started_at - f.finished_at) >= 2.95) FROM runs f JOIN runs r ON r.schedule_id = f.schedule_id AND r.slot_at = f.slot_at AND r.attempt = 1 WHERE f.schedule_id = '$chains' AND f.attempt = 0")" "$n0:true"
# No slot of the schedule started while one of its retries waited.
ok chains-no-slot-meanwhile "$(sql "SELECT count(*) FROM runs n, runs f, runs r WHERE n.schedule_id = '$chains' AND f.schedule_id = n.schedule_id AND r.schedule_id = n.schedule_id AND n.attempt = 0 AND n.started_at IS NOT NULL AND f.attempt = 0 AND f.status = 'failed' AND r.attempt = 1 AND r.slot_at = f.slot_at AND n.started_at > f.finished_at AND n.started_at < r.started_at")" "0"
ok chains-no-rows-left "$(sql "SELECT count(*) FROM retries")" "0"

# 2.
ok dead-status "$(sql "SELECT status || ':' || current_retry || ':' || retry_pending FROM schedules WHERE id = '$dead'")" "dead:2:false"
ok dead-one-retry "$(stamps dead 1 | wc -l)" "1"
ok dead-first-attempts "$([ "$(stamps dead 0 | wc -l)" -ge 2 ] && echo yes)" "yes"
ok dead-no-rows-left "$(sql "SELECT count(*) FROM retries WHERE schedule_id = '$dead'")" "0"
ok dead-rows "$(sql "SELECT count(*) FROM runs WHERE schedule_id = '$dead' AND status = 'running'")" "0"

# 3.
wait_for 10 "SELECT status = 'dead' FROM schedules WHERE id = '$cut'" ||
	echo "cut: not dead within 10 s"
ok cut-run "$(sql "SELECT status || ':' || (error LIKE 'cannot execute /nonexistent/éé%') || ':' || right(error, 1) FROM runs WHERE schedule_id = '$cut'")" "failed:true:?"
ok cut-last-error "$(sql "SELECT status || ':' || (last_error = (SELECT error FROM runs WHERE schedule_id = '$cut')) FROM schedules WHERE id = '$cut'")" "dead:true"

stop a
ok stopped "$rc" "0"
summary engine_retries
