#!/bin/sh
# bench/api.sh BUILD_DIR [SECONDS]: requests per second through the whole
# API stack of tests/api-harness.sh (nginx with packaging/nginx/cronvisor.conf
# → FastCGI → cronvisor-api with 4 threads → PostgreSQL, cronvisord
# running), measured with wrk beside nginx serving a small static file in
# the same run (only ratios measured together mean anything on a shared
# machine).  Cases, each SECONDS long (default 10), wrk -t2 -c32:
#   static        GET a 17-byte file, nginx alone
#   GET one       GET /api/v1/schedules/{id}
#   GET list 100  GET /api/v1/schedules?limit=100 (the owner has exactly 100)
#   POST create   POST /api/v1/schedules (bench/api_create.lua)
# and then, each as long, the two 1,000-client cases of issue 17 (wrk -t2
# -c1000 with bench/api_load.lua, which sorts the answers): GET one schedule,
# and POST create with an Idempotency-Key per request; for these, served per
# second (2xx), p50, p99, the share of 503 and the answers that were neither
# 2xx nor 503 with Retry-After (a 502, say: must be 0).
# Prints two tables and writes bench/out/api.json.
set -eu
cd "$(dirname "$0")/.."
build=$1
secs=${2:-10}
command -v wrk >/dev/null || { echo "bench/api.sh: no wrk (scripts/deps)" >&2; exit 1; }
. bench/stack.sh
bench_stack_up cvbench "$build"
. "$h/env"

# The reading owner (alice) gets exactly 100 schedules; bob creates.
for i in $(seq 1 100); do
	curl -sf -o "$h/one.json" --max-time 10 -X POST "$CV_API_URL/schedules" \
		-H "Authorization: Bearer $CV_TOKEN_ALICE_EDITOR" \
		-H 'Content-Type: application/json' --data-binary \
		"{\"name\": \"bench-$i\", \"kind\": \"cron\", \"cron\": \"0 0 1 1 *\", \"target\": {\"type\": \"exec\", \"argv\": [\"/bin/true\"]}}" ||
		{ echo "bench/api.sh: cannot create schedules" >&2; exit 1; }
done
id=$(jq -r .id "$h/one.json")
n=$(curl -sf --max-time 10 "$CV_API_URL/schedules?limit=100" \
	-H "Authorization: Bearer $CV_TOKEN_ALICE_EDITOR" | jq '.schedules | length')
[ "$n" = 100 ] || { echo "bench/api.sh: list has $n schedules, not 100" >&2; exit 1; }

# run NAME WRK-ARGS...: one wrk run; appends "NAME|req/s|p50|p99|non-2xx|errors"
# to $h/results (latencies as wrk prints them).
run() {
	name=$1
	shift
	wrk -t2 -c32 -d"${secs}s" --timeout 10s --latency "$@" >"$h/wrk.out" 2>&1 ||
		{ cat "$h/wrk.out" >&2; exit 1; }
	awk -v name="$name" '
		/Requests\/sec:/ { rps = $2 }
		/^ +50%/ { p50 = $2 }
		/^ +99%/ { p99 = $2 }
		/Non-2xx or 3xx responses:/ { bad = $NF }
		/Socket errors:/ { err = $4 + $6 + $8 + $10 }
		END { printf "%s|%s|%s|%s|%d|%d\n", name, rps, p50, p99, bad, err }
	' "$h/wrk.out" >>"$h/results"
}
# load NAME WRK-ARGS...: one 1,000-client wrk run with bench/api_load.lua;
# appends "NAME|served/s|p50|p99|share of 503|bad answers|socket errors"
# to $h/load.
load() {
	name=$1
	shift
	wrk -t2 -c1000 -d"${secs}s" --timeout 10s --latency -s bench/api_load.lua \
		"$@" >"$h/wrk.out" 2>&1 || { cat "$h/wrk.out" >&2; exit 1; }
	awk -v name="$name" -v secs="$secs" '
		/^ +50%/ { p50 = $2 }
		/^ +99%/ { p99 = $2 }
		/Socket errors:/ { err = $4 + $6 + $8 + $10 }
		/^CVLOAD/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); c[kv[1]] = kv[2] } }
		END {
			all = c["ok"] + c["busy"] + c["busy_bad"] + c["other"]
			printf "%s|%.0f|%s|%s|%.3f|%d|%d\n", name, c["ok"] / secs, p50, p99,
				all ? (c["busy"] + c["busy_bad"]) / all : 0,
				c["busy_bad"] + c["other"], err
		}
	' "$h/wrk.out" >>"$h/load"
}
auth="Authorization: Bearer $CV_TOKEN_ALICE_EDITOR"
: >"$h/results"
run "static file (nginx alone)" "$CV_STATIC_URL"
run "GET one schedule" -H "$auth" "$CV_API_URL/schedules/$id"
run "GET list of 100" -H "$auth" "$CV_API_URL/schedules?limit=100"
CV_BENCH_TOKEN=$CV_TOKEN_BOB_EDITOR run "POST create" \
	-s bench/api_create.lua "$CV_API_URL/schedules"
created=$(psql "$CRONVISOR_DATABASE_URL" -X -qAt -c \
	"SELECT count(*) FROM schedules WHERE owner = 'bob'")
: >"$h/load"
CV_BENCH_TOKEN=$CV_TOKEN_ALICE_EDITOR load "GET one schedule" \
	"$CV_API_URL/schedules/$id"
CV_BENCH_TOKEN=$CV_TOKEN_BOB_EDITOR CV_BENCH_CREATE=load load "POST create" \
	"$CV_API_URL/schedules"
# Each create's name is its Idempotency-Key: a name twice is a create applied
# twice.
twice=$(psql "$CRONVISOR_DATABASE_URL" -X -qAt -c \
	"SELECT count(*) - count(DISTINCT name) FROM schedules WHERE name LIKE 'load-%'")

static=$(head -n 1 "$h/results" | cut -d'|' -f2)
printf '%-28s %10s %8s %10s %10s %8s\n' case "req/s" "vs file" "p50" "p99" "non-2xx"
json=""
while IFS='|' read -r name rps p50 p99 bad err; do
	ratio=$(echo "$rps $static" | awk '{printf "%.3f", $1 / $2}')
	printf '%-28s %10s %8s %10s %10s %8s\n' "$name" "$rps" "$ratio" "$p50" "$p99" "$((bad + err))"
	json="$json${json:+, }{\"case\": \"$name\", \"rps\": $rps, \"ratio_to_static\": $ratio, \"p50\": \"$p50\", \"p99\": \"$p99\", \"non_2xx\": $bad, \"socket_errors\": $err}"
done <"$h/results"
echo
printf '%-28s %10s %10s %10s %8s %6s %8s\n' "1,000 clients" "served/s" "p50" "p99" \
	"503" "bad" "errors"
ljson=""
while IFS='|' read -r name rps p50 p99 share bad err; do
	printf '%-28s %10s %10s %10s %8s %6s %8s\n' "$name" "$rps" "$p50" "$p99" \
		"$share" "$bad" "$err"
	ljson="$ljson${ljson:+, }{\"case\": \"$name\", \"served_per_second\": $rps, \"p50\": \"$p50\", \"p99\": \"$p99\", \"share_503\": $share, \"bad\": $bad, \"socket_errors\": $err}"
done <"$h/load"
echo "1,000 clients, POST create: $twice creates applied twice"
mkdir -p bench/out
printf '{"seconds": %s, "wrk": "-t2 -c32", "api_threads": 4, "created": %s, "cases": [%s], "clients_1000": {"wrk": "-t2 -c1000", "applied_twice": %s, "cases": [%s]}}\n' \
	"$secs" "$created" "$json" "$twice" "$ljson" >bench/out/api.json.tmp
mv bench/out/api.json.tmp bench/out/api.json
echo "POST create: $created schedules created (201s); wrote bench/out/api.json"
