#!/bin/sh
# ui_console.sh: the console (api/ui, docs/ui.md) in a real browser
# (issue 22).  The harness starts PostgreSQL's test database, the
# supervisor, the API and nginx with the shipped snippet (which serves
# the console from the checkout), and a stub agent; this makes what the
# pages must show (a hostile name and output, a run that failed, bob's
# schedule, a fan-out with failed jobs, a pipeline's execution), and
# tests/helpers/ui_console.py drives headless Chromium through it with
# Selenium: sign-in, the overview, search, the create form with a bad
# field, pause, resume, run now, a run's output, the cron preview, edit,
# live updates, bulk pause and delete, a viewer, another tenant, dark, a
# phone.  Screenshots of every page go to $CV_UI_SHOTS (default
# ui-screenshots in the current directory, the test's under ctest).
# Usage: ui_console.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"
A=$CV_TOKEN_ALICE_EDITOR
shots=${CV_UI_SHOTS:-$PWD/ui-screenshots}
rm -rf "$shots"
mkdir -p "$shots"

# The nginx snippet's headers, as a browser gets them.
hdrs=$(curl -sS -D - -o /dev/null "$CRONVISOR_URL/admin/scheduler/schedules")
hdr() { printf '%s\n' "$hdrs" | tr -d '\r' | sed -n "s/^$1: //Ip"; }
ok "a deep link is the console's page" "$(printf '%s' "$hdrs" | head -n 1 | tr -d '\r')" "HTTP/1.1 200 OK"
ok "CSP: only the console's own script, no framing" \
	"$(hdr Content-Security-Policy | grep -o "script-src 'self';\|frame-ancestors 'none'" | tr '\n' ' ')" \
	"script-src 'self'; frame-ancestors 'none' "
ok "X-Frame-Options" "$(hdr X-Frame-Options)" DENY
ok "nosniff" "$(hdr X-Content-Type-Options)" nosniff
ok "no referrer" "$(hdr Referrer-Policy)" no-referrer
ok "no inline script in the page" "$(curl -sS "$CRONVISOR_URL/admin/" | grep -c '<script>\|<script type="module">\| on[a-z]*=')" 0
for f in static/js/app.js lib/bootstrap5/css/bootstrap.min.css lib/chart.js/chart.min.js; do
	ok "$f is served" "$(curl -sS -o /dev/null -w '%{http_code}' "$CRONVISOR_URL/admin/$f")" 200
done
ok "nothing outside the console's files (nginx refuses the path)" \
	"$(curl -sS --path-as-is -o "$work/trav" -w '%{http_code}' "$CRONVISOR_URL/admin/static/../../../etc/passwd") $(grep -c '^root:' "$work/trav")" "400 0"

# What the pages show.
hostile='<img src=x onerror="window.__xss=1">&amp; "quoted"'
send POST /schedules "$A" "$(jq -nc --arg n "$hostile" --arg at "$(soon 300)" '{name: $n, at: $at, max_retries: 0, target: {type: "exec", argv: ["/bin/sh", "-c", "echo \"<script>window.__xss=2</script>\"; exit 3"]}}')"
hid=$(j .id)
send POST /schedules "$CV_TOKEN_BOB_EDITOR" '{"name": "bob-private-7f3a", "interval_seconds": 86400}'
bid=$(j .id)

stub_agent_up
stub_agent half /half
stub_agent okay /ok '"health": {"url": "'"$AURL"'/health", "interval_seconds": 5}'
for v in 1.0.0 1.1.0; do
	send POST /agents/okay/versions "$A" "{\"version\": \"$v\", \"endpoint\": \"$AURL/ok\"}"
	ok_status "version $v of okay" 201
done
send POST /agents/okay/deploy "$A" '{"version": "1.0.0", "environment": "production"}'
ok_status "1.0.0 of okay in production" 200
sql "CREATE TABLE nt (id text PRIMARY KEY); INSERT INTO nt SELECT 'T' || g FROM generate_series(1, 10) g; GRANT SELECT ON nt TO cronvisor_reader;
     CREATE TABLE nt3 (id text PRIMARY KEY); INSERT INTO nt3 VALUES ('T2'), ('T4'), ('T6'); GRANT SELECT ON nt3 TO cronvisor_reader" >/dev/null
send POST /data-sources "$CV_TOKEN_ADMIN" '{"name": "nt", "relation": "nt", "key": "id", "columns": ["id"]}'
send POST /data-sources "$CV_TOKEN_ADMIN" '{"name": "nt3", "relation": "nt3", "key": "id", "columns": ["id"]}'
send POST /schedules "$A" "{\"name\": \"fan-out\", \"at\": \"$(soon 500)\", \"max_retries\": 0, \"target\": {\"type\": \"agent\", \"agent\": \"half\", \"params\": {\"tickerId\": \"db:nt:all:id?batchSize=4&staggerDelay=100\"}}}"
fan=$(j .id)
send POST /pipelines "$A" '{"pipeline_id": "collect-analyze", "name": "collect, then analyze", "steps": [{"step_id": "collect", "agent_id": "okay"}, {"step_id": "analyze", "agent_id": "half", "depends_on": ["collect"]}]}'
ok_status "a pipeline" 201
send POST /schedules "$A" "{\"name\": \"piped\", \"at\": \"$(soon 500)\", \"max_retries\": 0, \"target\": {\"type\": \"pipeline\", \"pipeline\": \"collect-analyze\", \"params\": {\"tickerId\": \"db:nt3:all:id\"}}}"
pipe=$(j .id)
wait_for 30 "SELECT status = 'partial' FROM executions WHERE schedule_id = '$fan'"
wait_for 30 "SELECT status <> 'running' FROM executions WHERE schedule_id = '$pipe'"
wait_for 30 "SELECT count(*) > 0 FROM agent_health WHERE agent_id = 'okay'"
wait_for 30 "SELECT status = 'dead' FROM schedules WHERE id = '$hid'"
# two pages of the list's 50
for n in $(seq 10 61); do
	send POST /schedules "$A" "{\"name\": \"page-$n\", \"interval_seconds\": 86400}"
done
fanx=$(sql "SELECT id FROM executions WHERE schedule_id = '$fan'")
pipex=$(sql "SELECT id FROM executions WHERE schedule_id = '$pipe'")

out=$work/ui.out
HOSTILE=$hostile HOSTILE_ID=$hid BOB_ID=$bid BOB_NAME=bob-private-7f3a \
	FAN_EXEC=$fanx PIPE_EXEC=$pipex PIPE_ID=collect-analyze CV_UI_SHOTS=$shots \
	CRONVISOR_URL=$CRONVISOR_URL CV_TOKEN_ALICE_EDITOR=$A \
	CV_TOKEN_ALICE_VIEWER=$CV_TOKEN_ALICE_VIEWER \
	timeout 300 /usr/bin/python3 "$here/helpers/ui_console.py" >"$out" 2>"$work/ui.log"
ok "the browser walk-through exited cleanly" "$?" 0
checks=$(grep -c "$(printf '^CHECK\t')" "$out")
ok "the walk-through made its 67 checks" "$checks" 67
tab=$(printf '\t')
while IFS="$tab" read -r tag name got want; do
	[ "$tag" = CHECK ] && ok "$name" "$got" "$want"
done <"$out"
ok "a screenshot of each page" "$(ls "$shots"/*.png 2>/dev/null | wc -l | tr -d ' ')" \
	"$(ls "$shots"/*.png 2>/dev/null | grep -vc failed-)"
ok "... 15 of them" "$(ls "$shots"/[0-9]*.png 2>/dev/null | wc -l | tr -d ' ')" 15
[ "$fail" -eq 0 ] || grep -v "^#[0-9]" "$work/ui.log" | tail -n 40
api_finish
summary ui_console
