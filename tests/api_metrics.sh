#!/bin/sh
# api_metrics.sh: GET /metrics (docs/operations.md, "Metrics") through the
# shipped nginx snippet, scraped by a real Prometheus (Debian's), checked
# by promtool and against the database: after known work (runs that
# succeed, runs that fail and are retried until their schedule is dead,
# slots skipped by overlap) every counter equals what the runs table says,
# Prometheus' own query API returns the same totals, and a cluster of
# three supervisors (one of them killed with -9 on the way) still shows
# one exact total; the gauges (supervisors alive, a due slot waiting while
# every supervisor is stopped); access by address (metrics_allow: a
# loopback source outside it is refused, 403) and by metrics_token (a
# wrong one is refused, the right one passes); and the number of series
# unchanged by 100,000 more schedules.
# Usage: api_metrics.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
CV_HARNESS_CONF='metrics_allow = 127.0.0.1,::1
metrics_token = "metrics-tok-5150"'
export CV_HARNESS_CONF
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"
A=$CV_TOKEN_ALICE_EDITOR
murl=${CV_API_URL%/api/v1}/metrics

# scrape [CURL-ARGS...]: GET /metrics into $tmp/metrics; sets code.
scrape() {
	code=$(curl -sS -o "$tmp/metrics" -D "$tmp/mheaders" -w '%{http_code}' \
		--max-time 10 "$@" "$murl" 2>"$tmp/curl.err") || code=000
}
# metric SERIES: its value in the last scrape ("" when absent), SERIES as
# exposed, e.g. 'cronvisor_retries_total' or 'cronvisor_jobs_total{status="failed"}'.
metric() {
	awk -v s="$1" '$1 == s { print $2 }' "$tmp/metrics"
}
# sum_of PREFIX: the sum of every series whose name and labels start so.
sum_of() {
	awk -v p="$1" 'index($1, p) == 1 { n += $2 } END { print n + 0 }' "$tmp/metrics"
}
create() {
	send POST /schedules "$A" "{\"name\": \"$1\", $2}"
	[ "$code" = 201 ] || echo "create $1: $code $resp" >&2
	j .id
}

# --- Prometheus, scraping nginx every second ----------------------------------
nport=${murl#http://}
nport=${nport%/metrics}
pport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$tmp/prom.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: cronvisor
    metrics_path: /metrics
    static_configs:
      - targets: ["$nport"]
EOF
prometheus --config.file="$tmp/prom.yml" --storage.tsdb.path="$tmp/prom" \
	--web.listen-address="127.0.0.1:$pport" >"$work/prometheus.log" 2>&1 &
prom_pid=$!
extra="$extra $prom_pid"
purl="http://127.0.0.1:$pport"
# promq QUERY: the first value of an instant query, "" if none.
promq() {
	curl -sS --max-time 5 -G "$purl/api/v1/query" --data-urlencode "query=$1" 2>/dev/null |
		jq -r '.data.result[0].value[1] // ""' 2>/dev/null
}
prom_ready() { curl -sf --max-time 2 "$purl/-/ready" >/dev/null 2>&1; }
ok "prometheus starts" "$(wait_until 30 prom_ready && echo up)" up

# --- known work ------------------------------------------------------------------
good=$(create good '"interval_seconds": 1, "max_retries": 0, "target": {"type": "exec", "argv": ["/bin/true"]}')
bad=$(create bad '"interval_seconds": 1, "max_retries": 2, "backoff": "fixed", "retry_delay_seconds": 1, "target": {"type": "exec", "argv": ["/bin/false"]}')
over=$(create over '"interval_seconds": 1, "overlap": "skip", "max_retries": 0, "target": {"type": "exec", "argv": ["/bin/sleep", "2.5"]}')
wait_for 30 "SELECT status = 'dead' FROM schedules WHERE id = '$bad'" ||
	echo "bad never became dead" >&2
wait_for 30 "SELECT count(*) >= 4 FROM runs WHERE schedule_id = '$good' AND status = 'succeeded'"
wait_for 30 "SELECT count(*) >= 1 FROM runs WHERE schedule_id = '$over' AND status = 'skipped'"
for id in "$good" "$over"; do call POST "/schedules/$id/pause" "$A"; done
wait_for 30 "SELECT count(*) = 0 FROM runs WHERE status = 'running'"
ok "every event numbered" "$(wait_for 10 "SELECT count(*) = 0 FROM events WHERE seq IS NULL" && echo yes)" yes

scrape
ok "200 from loopback without a token" "$code" 200
ok "content type" "$(tr -d '\r' <"$tmp/mheaders" | grep -i '^content-type:' | cut -d' ' -f2-)" "text/plain; version=0.0.4; charset=utf-8"
promtool check metrics <"$tmp/metrics" >"$tmp/promtool.out" 2>&1
ok "promtool check metrics passes" "$?:$(cat "$tmp/promtool.out")" "0:"

db_count() { sql "SELECT count(*) FROM runs WHERE $1"; }
ok "runs succeeded = the runs table" \
	"$(metric 'cronvisor_runs_total{kind="slot",status="succeeded",target="exec"}')" \
	"$(db_count "status = 'succeeded' AND kind = 'slot'")"
ok "runs failed = the runs table (3 of bad)" \
	"$(metric 'cronvisor_runs_total{kind="slot",status="failed",target="exec"}')" \
	"$(db_count "status = 'failed'")"
ok "bad failed three times" "$(db_count "status = 'failed' AND schedule_id = '$bad'")" 3
ok "retries: the two of bad" "$(metric cronvisor_retries_total)" 2
ok "dead: one" "$(metric cronvisor_schedules_dead_total)" 1
ok "skipped by overlap = the runs table" \
	"$(metric 'cronvisor_slots_not_run_total{reason="overlap",status="skipped"}')" \
	"$(db_count "status = 'skipped'")"
ok "duration count = runs with a duration" \
	"$(metric 'cronvisor_run_duration_seconds_count{target="exec"}')" \
	"$(db_count "duration_ms IS NOT NULL")"
ok "duration +Inf bucket = count" \
	"$(metric 'cronvisor_run_duration_seconds_bucket{target="exec",le="+Inf"}')" \
	"$(metric 'cronvisor_run_duration_seconds_count{target="exec"}')"
ok "a sleep of 2.5 s is above the 1 s bucket" \
	"$(($(metric 'cronvisor_run_duration_seconds_bucket{target="exec",le="+Inf"}') - $(metric 'cronvisor_run_duration_seconds_bucket{target="exec",le="1"}')))" \
	"$(db_count "duration_ms > 1000")"
ok "firing lag: one per first attempt that ran" \
	"$(metric cronvisor_firing_lag_seconds_count)" \
	"$(db_count "kind = 'slot' AND attempt = 0 AND NOT triggered AND status NOT IN ('skipped', 'missed', 'expired')")"
ok "executions: as the table" \
	"$(sum_of 'cronvisor_executions_total{')" \
	"$(sql "SELECT count(*) FROM executions WHERE status <> 'running'")"
ok "schedules gauge: one dead" "$(metric 'cronvisor_schedules{status="dead"}')" 1
ok "schedules gauge: two paused" "$(metric 'cronvisor_schedules{status="paused"}')" 2
ok "one supervisor alive" "$(metric cronvisor_supervisors_alive)" 1
ok "build info" "$(grep -c '^cronvisor_build_info{version="[^"]*"} 1$' "$tmp/metrics")" 1
ok "no id in any label" "$(grep -v '^#' "$tmp/metrics" | grep -c -e "$good" -e "$bad" -e "sched-" -e alice)" 0

# --- Prometheus scraped it: the same totals through its query API ------------------
want=$(db_count "status = 'failed'")
prom_failed() { [ "$(promq 'sum(cronvisor_runs_total{status="failed"})')" = "$want" ]; }
ok "prometheus: failed runs as the table" "$(wait_until 20 prom_failed && echo "$want")" "$want"
prom_up() { [ "$(promq 'up{job="cronvisor"}')" = 1 ]; }
ok "prometheus: the target is up" "$(wait_until 10 prom_up && echo 1)" 1

# --- access --------------------------------------------------------------------------
scrape --interface 127.0.0.2
ok "a loopback address outside metrics_allow, no token: 401" "$code" 401
ok "401 in the API's error shape" "$(jq -r .error.code "$tmp/metrics")" unauthorized
scrape --interface 127.0.0.2 -H "Authorization: Bearer metrics-tok-5150x"
ok "a wrong token: 403" "$code" 403
scrape --interface 127.0.0.2 -H "Authorization: Bearer $CV_TOKEN_ADMIN"
ok "an API token is not the metrics token: 403" "$code" 403
scrape --interface 127.0.0.2 -H "Authorization: Bearer metrics-tok-5150"
ok "the metrics token from anywhere: 200" "$code" 200
code=$(curl -sS -o /dev/null -w '%{http_code}' -X POST "$murl")
ok "POST: 405" "$code" 405
ok "the token is not in any log" "$(cat "$work"/*.log | grep -c metrics-tok-5150)" 0

# --- three supervisors, one killed: one exact total ----------------------------------
# (each its own supervisor_name: a second of the same name retires the first)
for n in 2 3; do
	grep -v '^supervisor_name' "$CV_CONF" >"$tmp/cvd$n.conf"
	echo "supervisor_name = metrics-$n" >>"$tmp/cvd$n.conf"
done
"$CRONVISORD" -f "$tmp/cvd2.conf" </dev/null >>"$work/cvd2.log" 2>&1 &
s2=$!
"$CRONVISORD" -f "$tmp/cvd3.conf" </dev/null >>"$work/cvd3.log" 2>&1 &
s3=$!
extra="$extra $s2 $s3"
three() { scrape; [ "$(metric cronvisor_supervisors_alive)" = 3 ]; }
ok "three supervisors alive" "$(wait_until 20 three && echo 3)" 3
many=""
for i in 1 2 3 4 5 6; do
	many="$many $(create "many$i" '"interval_seconds": 1, "max_retries": 0, "target": {"type": "exec", "argv": ["/bin/true"]}')"
done
wait_for 30 "SELECT count(DISTINCT supervisor_id) >= 2 FROM runs WHERE schedule_id IN ($(printf "'%s'," $many | sed 's/,$//')) AND status = 'succeeded'"
kill -9 "$s2"
wait_gone 10 "$s2"
wait_for 30 "SELECT count(*) >= 30 FROM runs WHERE schedule_id IN ($(printf "'%s'," $many | sed 's/,$//')) AND status = 'succeeded'"
for id in $many; do call POST "/schedules/$id/pause" "$A"; done
# the killed one's runs in flight are declared lost at its lease's end
wait_for 30 "SELECT count(*) = 0 FROM runs WHERE status = 'running'"
wait_for 10 "SELECT count(*) = 0 FROM events WHERE seq IS NULL"
scrape
ok "cluster: succeeded runs, one total" \
	"$(metric 'cronvisor_runs_total{kind="slot",status="succeeded",target="exec"}')" \
	"$(db_count "status = 'succeeded' AND kind = 'slot'")"
ok "cluster: every run ended, counted once" \
	"$(sum_of 'cronvisor_runs_total{')" \
	"$(db_count "status NOT IN ('running', 'waiting')")"
ok "cluster: runs by more than one supervisor" \
	"$(sql "SELECT count(DISTINCT supervisor_id) >= 2 FROM runs WHERE schedule_id IN ($(printf "'%s'," $many | sed 's/,$//'))")" t

# --- a due slot while every supervisor is stopped -------------------------------------
kill -STOP "$CV_SUPERVISOR_PID" "$s3"
due=$(create due '"interval_seconds": 60, "max_retries": 0, "target": {"type": "exec", "argv": ["/bin/true"]}')
sql "UPDATE schedules SET next_run_at = now() - interval '3 seconds' WHERE id = '$due'" >/dev/null
scrape
ok "due slots: one" "$(metric cronvisor_due_slots)" 1
ok "oldest due: 3 s or more" "$(metric cronvisor_oldest_due_seconds | awk '{ print ($1 >= 3) }')" 1
kill -CONT "$CV_SUPERVISOR_PID" "$s3"
wait_for 20 "SELECT count(*) = 1 FROM runs WHERE schedule_id = '$due'"

# --- 100,000 schedules add no series ----------------------------------------------------
before=$(grep -vc '^#' "$tmp/metrics")
sql "INSERT INTO schedules (id, name, owner, kind, interval_seconds, target, status)
     SELECT format('%s-0000-4000-8000-000000000000',
                   lpad(to_hex(g + 2147483648), 8, '0'))::uuid,
            'bulk' || g, 'owner' || (g % 1000), 'interval', 3600,
            '{\"type\": \"exec\", \"argv\": [\"/bin/true\"]}', 'paused'
     FROM generate_series(1, 100000) g" >/dev/null
t0=$(date +%s%3N)
scrape
t1=$(date +%s%3N)
ok "100,000 schedules more: 200" "$code" 200
ok "100,000 schedules more: the same series" "$(grep -vc '^#' "$tmp/metrics")" "$before"
ok "100,000 schedules more: counted as paused" "$(metric 'cronvisor_schedules{status="paused"}')" "$(sql "SELECT count(*) FROM schedules WHERE status = 'paused' AND deleted_at IS NULL")"
ok "100,000 schedules more: a scrape under 2 s ($((t1 - t0)) ms)" "$((t1 - t0 < 2000))" 1
echo "series: $before; scrape with 100,000 more schedules: $((t1 - t0)) ms"

api_finish
summary api_metrics
