#!/bin/sh
# bench/scale.sh BUILD_DIR [--quick]: the million-schedule step of issue 7.
#
# A private PostgreSQL with default settings (fsync, synchronous_commit,
# full_page_writes on, as bench/workloads.py's), the API stack of
# tests/api-harness.sh on it (nginx → cronvisor-api, 4 threads; the
# harness's own cronvisord is stopped at once), then:
#
#  1. 1,000 schedules (cronvisorctl schedules import); with them: the
#     supervisor's start (process start to its "started" line and to its
#     first claim, of a probe due at once), its RSS (VmRSS/VmHWM, idle and
#     after the spread), EXPLAIN (ANALYZE, BUFFERS) of its queries that
#     read schedules (bench/scale.py explain), and the spread workload of
#     bench/workloads.py (SPREAD one-shot jobs 10 ms apart, with the other
#     schedules present: --database);
#  2. SAMPLE schedules created through the API by wrk (-t2 -c16,
#     bench/scale_create.lua: one POST per line, with an Idempotency-Key)
#     and SAMPLE through `cronvisorctl schedules import` (--parallel 4),
#     each timed; then SQL copies of those rows (new ids and names, the
#     same timing, target and next run) up to TOTAL schedules;
#  3. VACUUM ANALYZE, and the measures of 1 again with TOTAL schedules.
#
# Every schedule is active, half interval, half cron in nine zones (from
# bench/scale.py gen), with its next run spread over the day but not in
# the first two hours, the quiet window the measures run in.
#
#   bench/scale.sh BUILD           TOTAL 1,000,000, SAMPLE 100,000, SPREAD 1,000
#   bench/scale.sh BUILD --quick   TOTAL 50,000, SAMPLE 5,000, SPREAD 200
#   CV_SCALE_TOTAL, CV_SCALE_SAMPLE, CV_SCALE_SPREAD override them.
#
# Prints the figures and writes bench/out/scale.json.  Everything started
# is stopped, and the temporary directory removed, on every exit.
set -eu
cd "$(dirname "$0")/.."
src=$(pwd)
build=$(cd "$1" && pwd)
total=1000000
sample=100000
spread=1000
if [ "${2:-}" = "--quick" ]; then
	total=50000
	sample=5000
	spread=200
fi
total=${CV_SCALE_TOTAL:-$total}
sample=${CV_SCALE_SAMPLE:-$sample}
spread=${CV_SCALE_SPREAD:-$spread}
base=1000
[ $((base + 2 * sample)) -le "$total" ] ||
	{ echo "bench/scale.sh: TOTAL must be at least 1000 + 2 SAMPLE" >&2; exit 2; }
command -v wrk >/dev/null || { echo "bench/scale.sh: no wrk (scripts/deps)" >&2; exit 1; }

d=/tmp/cvscale-$$
h=$d/h
pgbin=$(pg_config --bindir 2>/dev/null || true)
[ -x "$pgbin/initdb" ] || pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
as=""
[ "$(id -u)" != 0 ] || as="setpriv --reuid=nobody --regid=nogroup --clear-groups --"
wrkpid=""
cleanup() {
	[ -z "$wrkpid" ] || kill "$wrkpid" 2>/dev/null || true
	[ ! -d "$h" ] || tests/api-harness.sh stop "$h" >/dev/null 2>&1 || true
	if [ -f "$d/pg/postmaster.pid" ]; then
		$as "$pgbin/pg_ctl" -D "$d/pg" -m fast -w -t 60 stop >/dev/null 2>&1 ||
			kill -9 "$(head -n 1 "$d/pg/postmaster.pid")" 2>/dev/null || true
	fi
	rm -rf "$d"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

say() { echo "scale: $*" >&2; }
now() { date +%s.%N; }
since() { echo "$(now) $1" | awk '{printf "%.2f", $1 - $2}'; }

mkdir -p "$d"
chmod 755 "$d"
[ -z "$as" ] || chown nobody:nogroup "$d"
$as "$pgbin/initdb" -D "$d/pg" -U postgres -A trust -E UTF8 --locale=C.UTF-8 \
	--no-sync >"$d/initdb.log" 2>&1 || { cat "$d/initdb.log" >&2; exit 1; }
$as "$pgbin/pg_ctl" -D "$d/pg" -l "$d/pg.log" -w -t 60 \
	-o "-c listen_addresses='' -k $d" start >/dev/null
echo "host=$d user=postgres" >"$d/conninfo"
# One owner holds the million: no per-owner limit on schedules.
CRONVISORD=$build/cronvisord CRONVISOR_API=$build/cronvisor-api \
	CRONVISORCTL=$build/cronvisorctl CV_HARNESS_CONF="owner_max_schedules = 0" \
	tests/api-harness.sh start "$h" "$d/conninfo" 2>/dev/null
. "$h/env"
export CRONVISOR_URL
url=$CRONVISOR_DATABASE_URL
# Only the supervisors this script starts may claim.
kill "$CV_SUPERVISOR_PID"
while kill -0 "$CV_SUPERVISOR_PID" 2>/dev/null; do sleep 0.1; done
psql "$url" -X -qAt -c "DELETE FROM supervisors" >/dev/null
ctl=$build/cronvisorctl
sql() { psql "$url" -X -qAt -v ON_ERROR_STOP=1 -c "$1"; }

# measure LABEL: start time, RSS, plans and the spread with what is there.
measure() {
	sql "VACUUM ANALYZE schedules" >/dev/null
	sql "CHECKPOINT" >/dev/null
	python3 bench/scale.py start --build "$build" --database "$url" \
		--label "$1" --out "$d/start-$1.json" >&2
	python3 bench/scale.py explain --src "$src" --database "$url" \
		--at "$(($(date +%s) + 7200 + 3600))" --out "$d/explain-$1.json" >&2
	python3 bench/workloads.py --build "$build" --database "$url" \
		--systems cronvisor --burst 0 --spread "$spread" \
		--out "$d/spread-$1.json" >&2
}

say "1,000 schedules"
python3 bench/scale.py gen --count $base --first 0 --out "$d/base.jsonl"
CRONVISOR_TOKEN=$CV_TOKEN_ALICE_EDITOR "$ctl" schedules import "$d/base.jsonl" >&2
measure 1k

say "$sample schedules through the API (wrk -t2 -c16)"
python3 bench/scale.py gen --count "$sample" --first $base --out "$d/api.jsonl"
t0=$(now)
CV_SCALE_FILE=$d/api.jsonl CV_SCALE_THREADS=2 CV_BENCH_TOKEN=$CV_TOKEN_BOB_EDITOR \
	CV_SCALE_KEY=scale-$$ wrk -t2 -c16 -d3600s --timeout 30s \
	-s bench/scale_create.lua "$CRONVISOR_URL" >"$d/wrk.out" 2>&1 &
wrkpid=$!
last=0
stall=$(now)
while :; do
	n=$(sql "SELECT count(*) FROM schedules WHERE owner = 'bob'")
	[ "$n" -lt "$sample" ] || break
	[ "$n" = "$last" ] || { last=$n; stall=$(now); }
	if [ "$(since "$stall" | cut -d. -f1)" -ge 20 ]; then
		say "wrk: no progress for 20 s at $n schedules"
		break
	fi
	sleep 0.2
done
api_secs=$(since "$t0")
api_n=$n
kill -INT "$wrkpid"
wait "$wrkpid" || true
wrkpid=""
say "API: $api_n in $api_secs s"

say "$sample schedules through cronvisorctl schedules import --parallel 4"
python3 bench/scale.py gen --count "$sample" --first $((base + sample)) --out "$d/import.jsonl"
t0=$(now)
CRONVISOR_TOKEN=$CV_TOKEN_ALICE_EDITOR "$ctl" schedules import "$d/import.jsonl" \
	--parallel 4 --json >"$d/import.out" || true
import_secs=$(since "$t0")
cat "$d/import.out" >&2

say "SQL copies up to $total"
cols=$(sql "SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position)
	FROM information_schema.columns WHERE table_name = 'schedules'
	AND is_generated = 'NEVER' AND column_name NOT IN
	('id', 'name', 'idempotency_key', 'idempotency_hash')")
t0=$(now)
round=0
while :; do
	have=$(sql "SELECT count(*) FROM schedules")
	[ "$have" -lt "$total" ] || break
	round=$((round + 1))
	# ON CONFLICT: a new id whose first 8 hex digits (id8) exist is dropped;
	# the next round makes up for it.
	sql "INSERT INTO schedules (id, name, $cols)
		SELECT gen_random_uuid(), name || '-c$round-' || k, $cols
		FROM schedules s, generate_series(1, 1 + ($total - $have) / $have) k
		WHERE s.owner IN ('alice', 'bob') AND s.name NOT LIKE '%-c%'
		LIMIT $total - $have ON CONFLICT DO NOTHING" >/dev/null
done
copy_secs=$(since "$t0")
say "copied up to $have in $copy_secs s"

measure large

sql "SELECT pg_total_relation_size('schedules'), pg_relation_size('schedules'),
	pg_relation_size('schedules_due'),
	(SELECT count(*) FROM schedules WHERE status = 'active'),
	(SELECT string_agg(kind || '=' || c, ' ') FROM (SELECT kind, count(*) c
	 FROM schedules GROUP BY kind) x),
	(SELECT min(next_run_at) - now() FROM schedules),
	(SELECT max(next_run_at) - now() FROM schedules)" >"$d/sizes"

mkdir -p bench/out
python3 - "$d" "$total" "$sample" "$spread" "$api_n" "$api_secs" "$import_secs" "$copy_secs" <<'EOF'
import json, os, sys
d, total, sample, spread, api_n, api_s, imp_s, copy_s = sys.argv[1:]
def load(f):
    with open(os.path.join(d, f)) as fh:
        return json.load(fh)
sz = open(os.path.join(d, "sizes")).read().strip().split("|")
imp = json.loads(open(os.path.join(d, "import.out")).read() or "{}")
wrk = open(os.path.join(d, "wrk.out")).read()
R = {"schedules": int(total), "sample_per_path": int(sample),
     "create": {
         "api_wrk": {"how": "wrk -t2 -c16, one POST per line with an Idempotency-Key, through nginx",
                     "created": int(api_n), "seconds": float(api_s),
                     "per_second": round(int(api_n) / float(api_s), 1), "wrk": wrk[-600:]},
         "cronvisorctl_import": {"how": "cronvisorctl schedules import FILE --parallel 4",
                                 "created": imp.get("created"), "failed": imp.get("failed"),
                                 "seconds": float(imp_s),
                                 "per_second": round((imp.get("created") or 0) / float(imp_s), 1)},
         "sql_copies": {"how": "INSERT ... SELECT of the API-made rows with new ids and names",
                        "rows": int(total) - 2 * int(sample) - 1000, "seconds": float(copy_s)}},
     "table_bytes": int(sz[0]), "heap_bytes": int(sz[1]), "due_index_bytes": int(sz[2]),
     "active": int(sz[3]), "kinds": sz[4], "next_run_from_now": [sz[5], sz[6]]}
for lab in ("1k", "large"):
    st, ex, sp = load("start-%s.json" % lab), load("explain-%s.json" % lab), load("spread-%s.json" % lab)
    c = sp["cronvisor"]
    R[lab] = {"start": st, "explain": [{k: v for k, v in x.items()} for x in ex["cases"]],
              "spread": c["spread"], "supervisor_after_spread_kb": c.get("supervisor_memory_kb")}
R["queries"] = load("explain-large.json")["queries"]
with open("bench/out/scale.json.tmp", "w") as f:
    json.dump(R, f, indent=1)
os.replace("bench/out/scale.json.tmp", "bench/out/scale.json")
def row(lab):
    x = R[lab]
    s = x["spread"]
    cl = {(e["case"], e["plan_mode"]): e["execution_ms"] for e in x["explain"]}
    return ("%-4s start→ready %7.1f ms, →first claim %7.1f ms; RSS idle %6d kB (HWM %d), after spread %s; "
            "claim none due %.3f ms, 100 due %.3f ms, sweep %.1f ms; spread p50 %.2f p99 %.2f max %.2f ms, "
            "claim lag p50 %.2f ms"
            % (lab, x["start"]["start_to_ready_ms"], x["start"]["start_to_first_claim_ms"],
               x["start"]["VmRSS_kb"], x["start"]["VmHWM_kb"], x["supervisor_after_spread_kb"],
               cl[("claim, nothing due (now)", "generic")], cl[("claim, many due (LIMIT 100)", "generic")],
               cl[("deleted-schedule sweep (every heartbeat)", "custom")],
               s["lag_ms_p50"], s["lag_ms_p99"], s["lag_ms_max"], s["claim_lag_ms"]["lag_ms_p50"]))
print("create: API %s/s (%s in %s s), import %s/s, SQL copies %s rows in %s s"
      % (R["create"]["api_wrk"]["per_second"], api_n, api_s,
         R["create"]["cronvisorctl_import"]["per_second"], R["create"]["sql_copies"]["rows"], copy_s))
print(row("1k"))
print(row("large"))
print("wrote bench/out/scale.json")
EOF
