#!/bin/sh
# engine_health.sh: agents' health probes (docs/agents.md, "Health"), end
# to end: the API through nginx, two real cronvisord, a stub agent whose
# health answer the test sets (tests/helpers/stubagent.py, /health/NAME).
# Checks, counted by what the agent saw (its request log): a new agent is
# probed at once, with its auth; a failed probe makes it unhealthy with
# the error, kept in its history; its jobs then wait, due, without a
# request, a trigger-now run is skipped with why, and a pending retry
# says why on the job; they go as soon as a probe succeeds (not at the
# next poll); `when_unhealthy: go` sends them anyway; one supervisor of
# two probes an agent per interval; disabled agents and agents without a
# health URL are not probed; the history keeps the newest 100.
# Usage: engine_health.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"
A=$CV_TOKEN_ALICE_EDITOR

stub_agent_up

# A second supervisor on the same database: probes are shared out.
sed 's/^supervisor_name = .*/supervisor_name = "second"/' "$CV_CONF" >"$tmp/second.conf"
"$CRONVISORD" -f "$tmp/second.conf" </dev/null >>"$work/cvd2.log" 2>&1 &
extra="$extra $!"

# health_of NAME CODE: the stub's /health/NAME answers CODE from now on.
health_of() {
	curl -sS -X PUT --max-time 5 -d "{\"code\": $2}" "$AURL/health/$1" >/dev/null
}
# agent ID PATH HEALTH-JSON [MORE-JSON]: an agent of alice's at the stub's
# PATH, with bearer auth.
agent() {
	send POST /agents "$A" "{\"agent_id\": \"$1\", \"name\": \"$1\", \"endpoint\": \"$AURL$2\",
		\"auth\": {\"type\": \"bearer\", \"token\": \"tok-$1\"}, \"health\": $3${4:+, $4}}"
	[ "$code" = 201 ] || echo "agent $1: $code $resp" >&2
}
probes() { c=$(grep -c "\"path\": \"/health/$1\"" "$tmp/agent.log" 2>/dev/null); echo "${c:-0}"; }
seen() { c=$(grep -c "\"path\": \"$1\", \"headers\"" "$tmp/agent.log" 2>/dev/null); echo "${c:-0}"; }
healthy() { sql "SELECT coalesce(healthy::text, 'null') FROM agents WHERE agent_id = '$1'"; }
# sched NAME AGENT [MORE-JSON]: a once schedule of alice's targeting AGENT,
# due in a second (in $in_ms ms when set); prints its id.
sched() {
	send POST /schedules "$A" "{\"name\": \"$1\", \"at\": \"$(soon "${in_ms:-1000}")\", \"target\": {\"type\": \"agent\", \"agent\": \"$2\", \"params\": {}}${3:+, $3}}"
	[ "$code" = 201 ] || echo "schedule $1: $code $resp" >&2
	j .id
}

# --- a new agent is probed at once, with its auth ---------------------------------
health_of hp 200
agent hp /ok "{\"url\": \"$AURL/health/hp\", \"interval_seconds\": 5}"
wait_for 5 "SELECT healthy IS TRUE FROM agents WHERE agent_id = 'hp'"
ok "new agent: probed within 5 s, healthy" "$(healthy hp)" true
ok "probe: a GET with the agent's bearer token" "$(grep '"path": "/health/hp"' "$tmp/agent.log" | head -1 | jq -r '.method + " " + .headers.Authorization')" "GET Bearer tok-hp"
call GET /agents/hp/health "$A"
ok "GET health: healthy, one probe, 200, latency, checked_at with its time" \
	"$(j '[.healthy, (.probes | length), .probes[0].ok, .probes[0].http_status, (.probes[0].latency_ms | type), (.checked_at | test("T.*Z$"))] | map(tostring) | join(" ")')" \
	"true 1 true 200 number true"
ok "GET agent: healthy, no error" "$(call GET /agents/hp "$A"; j '[.healthy, .health_error] | map(tostring) | join(" ")')" "true null"

# --- not probed: disabled, no health URL (made now, checked near the end) ------------
agent hd /ok "{\"url\": \"$AURL/health/hd\", \"interval_seconds\": 5}" '"enabled": false'
send POST /agents "$A" "{\"agent_id\": \"hn\", \"name\": \"hn\", \"endpoint\": \"$AURL/ok\"}"

# --- a failed probe: unhealthy, the error kept ---------------------------------------
health_of hp 503
wait_for 12 "SELECT healthy IS FALSE FROM agents WHERE agent_id = 'hp'"
ok "503: unhealthy at the next probe" "$(healthy hp)" false
call GET /agents/hp/health "$A"
ok "503: the probe's error and status kept, newest first" \
	"$(j '[.probes[0].ok, .probes[0].http_status, (.probes[0].error | test("503")), .probes[1].ok] | map(tostring) | join(" ")')" \
	"false 503 true true"
ok "503: the agent says why" "$(call GET /agents/hp "$A"; j '.health_error | test("503")')" true
ok "logs: no agent secret" "$(cat "$work"/*.log | grep -c tok-hp)" 0

# The window in which the probes of hp are counted (two supervisors, below)
# opens here: the tests in between change what its probes answer, not when
# they come.
win0=$(date +%s.%N)

# --- its jobs wait, due, while it is unhealthy ----------------------------------------
s_w=$(sched waits hp)
# a retry of a job whose first attempt failed, while the agent was healthy
health_of hr 200
agent hr /flaky "{\"url\": \"$AURL/health/hr\", \"interval_seconds\": 5}"
wait_for 5 "SELECT healthy IS TRUE FROM agents WHERE agent_id = 'hr'"
s_r=$(sched retried hr '"max_retries": 3, "retry_delay_seconds": 12')
wait_for 10 "SELECT count(*) = 1 FROM runs WHERE schedule_id = '$s_r' AND status = 'failed'"
health_of hr 500
wait_for 12 "SELECT healthy IS FALSE FROM agents WHERE agent_id = 'hr'"
ok "retry: the agent turned unhealthy before the retry" "$(sql "SELECT count(*) FROM runs WHERE schedule_id = '$s_r'")" 1
jid=$(sql "SELECT id FROM jobs WHERE schedule_id = '$s_r'")
call GET "/jobs/$jid" "$A"
ok "retry: the pending job says why it waits" "$(j '[.status, (.wait_reason | test("^agent hr is unhealthy \\(when_unhealthy: wait\\), probed at .*Z: .*500"))] | map(tostring) | join(" ")')" "pending true"
# the waiting schedule is due, yet no request went
sleep_s=$(sql "SELECT greatest(0, extract(epoch FROM next_run_at + interval '2 s' - now()))::numeric(6,3) FROM schedules WHERE id = '$s_w'")
sleep "$sleep_s"
ok "wait: 2 s past due, no request, no run" "$(seen /ok) $(sql "SELECT count(*) FROM runs WHERE schedule_id = '$s_w'") $(sql "SELECT status || ' ' || (next_run_at <= now()) FROM schedules WHERE id = '$s_w'")" "0 0 active true"
# a trigger-now run of an unhealthy agent's schedule is skipped, with why
s_trig=$(in_ms=3600000 sched trig hp)
send POST "/schedules/$s_trig/trigger" "$A" '{}'
ok_status "trigger: accepted" 202
wait_for 10 "SELECT count(*) = 1 FROM runs WHERE schedule_id = '$s_trig'"
ok "trigger: skipped, the reason names the agent and its error" \
	"$(sql "SELECT status || ' ' || (note ~ '^agent hp is unhealthy \(when_unhealthy: wait\): .*503') FROM runs WHERE schedule_id = '$s_trig'")" "skipped true"

# --- healthy again: they go at once --------------------------------------------------
health_of hp 200
health_of hr 200
wait_for 12 "SELECT count(*) = 1 FROM runs WHERE schedule_id = '$s_w' AND status = 'succeeded'"
ok "healthy again: the waiting job ran, one request" "$(seen /ok) $(sql "SELECT status FROM schedules WHERE id = '$s_w'")" "1 done"
ok_gap=$(jq -s -r '([.[] | select(.path == "/ok")] | first | .at) as $r
	| ([.[] | select(.path == "/health/hp" and .at < $r)] | last | .at) as $p | (($r - $p) * 1000 | floor)' "$tmp/agent.log")
ok "healthy again: the request came within 1.5 s of the probe before it (${ok_gap} ms), not at a 30 s poll" \
	"$(echo "$ok_gap >= 0 && $ok_gap < 1500" | bc)" 1
wait_for 15 "SELECT status = 'done' FROM schedules WHERE id = '$s_r'"
ok "retry: went once the agent was healthy, then done" "$(sql "SELECT string_agg(status, ',' ORDER BY attempt) FROM runs WHERE schedule_id = '$s_r'")" "failed,succeeded"
ok "retry: no wait reason once done" "$(call GET "/jobs/$jid" "$A"; j '[.status, .wait_reason] | map(tostring) | join(" ")')" "completed null"

# --- when_unhealthy: go ---------------------------------------------------------------
health_of hg 500
agent hg /text "{\"url\": \"$AURL/health/hg\", \"interval_seconds\": 5, \"when_unhealthy\": \"go\"}"
wait_for 5 "SELECT healthy IS FALSE FROM agents WHERE agent_id = 'hg'"
s_g=$(sched goes hg)
wait_for 10 "SELECT status = 'done' FROM schedules WHERE id = '$s_g'"
ok "go: sent although unhealthy" "$(healthy hg) $(seen /text) $(sql "SELECT status FROM schedules WHERE id = '$s_g'")" "false 1 done"

# --- one supervisor of two probes each agent per interval -----------------------------
# The probes of hp in the 11 s from win0 (by the stub's clock), once they
# have passed.
sleep "$(awk -v a="$win0" -v b="$(date +%s.%N)" 'BEGIN { d = a + 11 - b; printf "%.3f", d > 0 ? d : 0 }')"
n=$(jq -s --argjson a "$win0" '[.[] | select(.path == "/health/hp" and .at >= $a and .at < $a + 11)] | length' "$tmp/agent.log")
ok "two supervisors: 2 or 3 probes of a 5 s agent in 11 s, not 4 or more ($n)" \
	"$(test "$n" -ge 2 && test "$n" -le 3 && echo yes)" yes
ok "two supervisors: no two probes of one agent less than 4 s apart" \
	"$(jq -s -r '[.[] | select(.path == "/health/hp") | .at] | [range(1; length) as $i | .[$i] - .[$i - 1]] | map(select(. < 4)) | length' "$tmp/agent.log")" 0

# --- not probed: disabled, no health URL (made at the start) --------------------------
ok "disabled: not probed" "$(probes hd) $(healthy hd)" "0 null"
ok "no health URL: healthy stays null" "$(healthy hn)" null
# enabled: probed at once
send PATCH /agents/hd "$A" '{"enabled": true}'
wait_for 5 "SELECT healthy IS TRUE FROM agents WHERE agent_id = 'hd'"
ok "enabled again: probed at once" "$(healthy hd) $(probes hd)" "true 1"

# --- the history keeps the newest 100 -------------------------------------------------
sql "INSERT INTO agent_health (owner, agent_id, checked_at, ok, error)
	SELECT owner, agent_id, now() - interval '1 day' + i * interval '1 s', false, 'old ' || i
	FROM agents, generate_series(1, 150) i WHERE agent_id = 'hd'" >/dev/null
before=$(sql "SELECT max(id) FROM agent_health WHERE agent_id = 'hd'")
wait_for 12 "SELECT count(*) > 0 FROM agent_health WHERE agent_id = 'hd' AND id > $before"
ok "history: 100 kept after the next probe" "$(sql "SELECT count(*) FROM agent_health WHERE agent_id = 'hd'")" 100
ok "history: the newest kept" "$(sql "SELECT min(id) > $before - 99 FROM agent_health WHERE agent_id = 'hd'")" t
call GET /agents/hd/health "$A"
ok "history: GET shows 100, newest first" "$(j '[(.probes | length), .probes[0].ok, .probes[1].error] | map(tostring) | join(" ")')" "100 true old 150"

api_finish
summary engine_health
