#!/bin/sh
# bench/engine.sh BUILD_DIR [N]: cronvisord against a private PostgreSQL,
# beside the bare fork/exec/wait loop in the same run (only ratios measured
# together mean anything on a shared machine):
#   burst   N one-shot schedules due at the same second, each /bin/true,
#           results recorded durably: runs per second from the due second
#           to the last result, and how late the runs were claimed;
#   spread  ten 1-second interval schedules for 12 s: claim lag per slot
#           (started_at - slot_at), p50/p95/p99/max; never negative.
# Prints a table and writes bench/out/engine.json.
set -eu
cd "$(dirname "$0")/.."
build=$1
n=${2:-1000}
dir=/tmp/cvbench-$$
pid=""
cleanup() {
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" || true
	tests/pg-harness.sh stop "$dir" >/dev/null 2>&1 || true
}
trap cleanup EXIT
tests/pg-harness.sh start "$dir" >/dev/null
url="$(cat "$dir/conninfo") dbname=cronvisor_test"
sql() { psql "$url" -X -qAt -v ON_ERROR_STOP=1 -c "$1"; }
"$build/cronvisorctl" db migrate --database "$url" >/dev/null
printf 'database_url = "%s"\nlog_level = warn\n' "$url" >"$dir/conf"
"$build/cronvisord" -f "$dir/conf" 2>"$dir/cvd.log" &
pid=$!

# burst
due=$(($(date +%s) + 3))
sql "INSERT INTO schedules (name, owner, kind, at, next_run_at, next_slot_at, target)
     SELECT 'burst' || g, 'bench', 'once', to_timestamp($due), to_timestamp($due),
            to_timestamp($due), '{\"type\":\"exec\",\"argv\":[\"/bin/true\"]}'
     FROM generate_series(1, $n) g" >/dev/null
i=0
until [ "$(sql "SELECT count(*) FROM runs WHERE status <> 'running'")" -ge "$n" ]; do
	i=$((i + 1))
	[ $i -lt 1200 ] || { echo "burst did not finish" >&2; exit 1; }
	sleep 0.1
done
burst=$(sql "SELECT round($n / extract(epoch FROM max(finished_at) - to_timestamp($due)))::int,
                    count(*) FILTER (WHERE status = 'succeeded'),
                    round(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM started_at - slot_at) * 1000)::numeric, 1),
                    round(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM started_at - slot_at) * 1000)::numeric, 1)
             FROM runs")
sql "DELETE FROM runs; DELETE FROM schedules" >/dev/null

# spread
start=$(($(date +%s) + 2))
sql "INSERT INTO schedules (name, owner, kind, interval_seconds, start_at, next_run_at, next_slot_at, target)
     SELECT 'tick' || g, 'bench', 'interval', 1, to_timestamp($start), to_timestamp($start),
            to_timestamp($start), '{\"type\":\"exec\",\"argv\":[\"/bin/true\"]}'
     FROM generate_series(1, 10) g" >/dev/null
sleep 14
spread=$(sql "SELECT count(*),
                     round(percentile_cont(0.5) WITHIN GROUP (ORDER BY l)::numeric, 2),
                     round(percentile_cont(0.95) WITHIN GROUP (ORDER BY l)::numeric, 2),
                     round(percentile_cont(0.99) WITHIN GROUP (ORDER BY l)::numeric, 2),
                     round(max(l)::numeric, 2), round(min(l)::numeric, 2)
              FROM (SELECT extract(epoch FROM started_at - slot_at) * 1000 AS l
                    FROM runs WHERE status <> 'skipped') x")
fe=$("$build/bench/forkexec" "$n" | awk '{print $2}' | tr '\n' ' ')

set -- $(echo "$burst" | tr '|' ' ') $fe
rate=$1 ok=$2 b50=$3 b99=$4 fe1=$5 fe2=$6
set -- $(echo "$spread" | tr '|' ' ')
printf '%-44s %10s\n' "measure" "value"
printf '%-44s %10s\n' "burst: runs/s ($ok of $n succeeded)" "$rate"
printf '%-44s %10s\n' "bare fork/exec/wait, 1 in flight: runs/s" "$fe1"
printf '%-44s %10s\n' "bare fork/exec/wait, 2 in flight: runs/s" "$fe2"
printf '%-44s %10s\n' "burst / bare (2 in flight)" "$(echo "$rate $fe2" | awk '{printf "%.3f", $1 / $2}')"
printf '%-44s %10s\n' "burst claim lag p50 / p99 (ms)" "$b50 / $b99"
printf '%-44s %10s\n' "spread: slots" "$1"
printf '%-44s %10s\n' "spread claim lag p50/p95/p99/max (ms)" "$2/$3/$4/$5"
printf '%-44s %10s\n' "spread claim lag min (ms, never < 0)" "$6"
mkdir -p bench/out
cat >bench/out/engine.json <<JSON
{"burst": {"runs": $n, "succeeded": $ok, "runs_per_second": $rate, "lag_ms_p50": $b50, "lag_ms_p99": $b99},
 "forkexec": {"one_in_flight": $fe1, "two_in_flight": $fe2},
 "spread": {"slots": $1, "lag_ms_p50": $2, "lag_ms_p95": $3, "lag_ms_p99": $4, "lag_ms_max": $5, "lag_ms_min": $6}}
JSON
echo "wrote bench/out/engine.json"
