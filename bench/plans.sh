#!/bin/sh
# bench/plans.sh BUILD_DIR: what a plan PostgreSQL keeps for a prepared
# statement (a generic plan, made without the parameters' values) costs
# the API's lists whose statements say "a value or none", against the
# plan made for the values (a custom plan, what db_query_once() gets):
# a page 40,000 jobs into an execution of 50,000, and a schedule's
# executions among 50,000 of 200 schedules.  Prints, for each, the scan
# each plan reads and its time (EXPLAIN ANALYZE).  The API runs these
# lists unprepared (LIST_ONCE in api/api.h); this shows why.
set -eu
cd "$(dirname "$0")/.."
build=$(cd "$1" && pwd)
. bench/stack.sh
bench_stack_up cvplans "$build"
u="$(sed 's/dbname=[^ ]*//' "$pg/conninfo") dbname=$(cat "$h/dbname")"
psql "$u" -X -qAt -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
INSERT INTO schedules (id, name, owner, kind, interval_seconds, status, next_run_at)
SELECT format('%s-0000-4000-8000-000000000001',
              lpad(to_hex(g + 2147483648), 8, '0'))::uuid,
       'plans ' || g, 'own' || (g % 10), 'interval', 3600, 'active',
       now() + interval '1 day'
FROM generate_series(1, 200) g;
INSERT INTO executions (id, schedule_id, slot_at, status, created_at)
SELECT gen_random_uuid(),
       format('%s-0000-4000-8000-000000000001',
              lpad(to_hex(1 + g % 200 + 2147483648), 8, '0'))::uuid,
       now() - g * interval '1 second', 'success',
       now() - g * interval '1 second'
FROM generate_series(1, 50000) g;
INSERT INTO jobs (id, execution_id, schedule_id, job_key, status, created_at)
SELECT gen_random_uuid(), x.id, x.schedule_id, 'k' || g, 'completed',
       now() - interval '1 hour' + g * interval '1 ms'
FROM generate_series(1, 50000) g,
     (SELECT id, schedule_id FROM executions ORDER BY created_at LIMIT 1) x;
ANALYZE;
SQL
# sqlof FILE NAME: statement NAME of sql/queries/FILE
sqlof() {
	python3 -c '
import re, sys
blocks, cur = {}, None
for line in open("sql/queries/" + sys.argv[1]):
    m = re.match(r"-- (name|columns): *(\w+) *$", line)
    if m:
        cur = blocks.setdefault(m.group(2), [])
    elif cur is not None and not re.match(r"\s*--", line):
        cur.append(line)
print("".join(blocks[sys.argv[2]]).strip().rstrip(";"))' "$1" "$2"
}
q() { psql "$u" -X -qAt -v ON_ERROR_STOP=1 -c "$1"; }
x=$(q "SELECT execution_id FROM jobs LIMIT 1")
owner=$(q "SELECT s.owner FROM executions x JOIN schedules s ON s.id = x.schedule_id WHERE x.id = '$x'")
cur=$(q "SELECT (extract(epoch FROM created_at) * 1000000)::bigint || ', ''' || id || ''''
         FROM jobs WHERE execution_id = '$x' ORDER BY created_at, id OFFSET 40000 LIMIT 1")
sid=$(q "SELECT schedule_id FROM executions ORDER BY created_at LIMIT 1 OFFSET 7")
# plan MODE STATEMENT ARGS: the scan of jobs or executions the plan reads:
# its index, its Index Cond, the time it took (EXPLAIN ANALYZE's actual
# time, in ms), then the statement's time
plan() {
	printf 'SET plan_cache_mode = force_%s_plan;\nPREPARE p AS %s;\nEXPLAIN (ANALYZE, COSTS OFF) EXECUTE p(%s);\n' \
		"$1" "$2" "$3" | psql "$u" -X -qAt -v ON_ERROR_STOP=1 |
		awk '/Scan using (jobs|executions)_[a-z]+ on (jobs|executions)/ {
			     ix = $0; sub(/.*Scan using /, "", ix); sub(/ on .*/, "", ix)
			     t = $0; sub(/.*actual time=[0-9.]*\.\./, "", t); sub(/ .*/, "", t)
			     s = ix; c = "-"; w = 1; next }
		     w && /Index Cond:/ { c = $0; sub(/.*Index Cond: /, "", c) }
		     { w = 0 }
		     /Execution Time/ { e = $3 }
		     END { printf "%s, %s ms to the page; %s ms in all; Index Cond %s\n", s, t, e, c }'
}
printf '%-26s %-8s %s\n' list plan "the scan"
for mode in generic custom; do
	printf '%-26s %-8s %s\n' "jobs, a page 40,000 in" "$mode" \
		"$(plan "$mode" "$(sqlof api.sql api_jobs_list)" "'$x', '$owner', NULL, $cur, 101")"
done
for mode in generic custom; do
	printf '%-26s %-8s %s\n' "a schedule's executions" "$mode" \
		"$(plan "$mode" "$(sqlof api.sql api_executions_list)" "NULL, '$sid', NULL, NULL, NULL, 101")"
done
