#!/bin/sh
# cli_api.sh: drives cronvisorctl's API commands end to end against the
# whole stack (tests/api-harness.sh: nginx, cronvisor-api, cronvisord on
# the fixture's PostgreSQL): create by flags and by file, list and get as
# tables and --json, update, pause/resume and their invalid_state error,
# trigger and the run it leaves, delete, and how errors are shown.  The
# requests --dry-run prints are checked first, without a server.
# Usage: cli_api.sh CRONVISORD CRONVISOR-API CRONVISORCTL CONNINFO-FILE
set -u
ctl=$3
. "$(dirname "$0")/api-lib.sh"

# --- what the command line builds (no server) ---
check dry-create 0 'POST /api/v1/schedules
{"name":"n","kind":"interval","interval_seconds":300,"max_retries":2,"timeout_seconds":5400,"trigger_payload":{"a":[1]},"workflow_id":7,"target":{"type":"exec","argv":["/bin/echo","a b","--x"]}}' -- \
	"$ctl" --dry-run schedules create --name n --every 5m --retries 2 \
	--timeout 1h30m --payload '{"a":[1]}' --workflow 7 --exec -- /bin/echo "a b" --x
check dry-http 0 'POST /api/v1/schedules?owner=bob
{"name":"h","kind":"cron","cron":"0 9 * * 1-5","timezone":"Europe/Paris","target":{"type":"http","method":"PUT","url":"https://x.test/h","headers":{"X-A":"b c"},"body":{"k":1}}}' -- \
	"$ctl" schedules create --name h --cron '0 9 * * 1-5' --tz Europe/Paris \
	--http PUT https://x.test/h --header 'X-A:  b c' --body '{"k":1}' --owner bob --dry-run
check dry-update 0 'PATCH /api/v1/schedules/abc
{"kind":"once","at":"2026-12-24T18:00:00+01:00","jitter_seconds":0,"workflow_id":"wf"}' -- \
	"$ctl" --dry-run schedules update abc --at 2026-12-24T18:00:00+01:00 \
	--jitter 0 --workflow wf
check dry-list 0 'GET /api/v1/schedules?status=active&name=a%20b&limit=5' -- \
	"$ctl" --dry-run schedules list --limit 5 --name 'a b' --status active
check dry-batch 0 'POST /api/v1/schedules/batch-delete
{"ids":["a","b"]}' -- "$ctl" --dry-run schedules delete a b
check dry-trigger 0 'POST /api/v1/schedules/a/trigger
{"payload":{"x":1}}' -- "$ctl" --dry-run schedules trigger a --payload '{"x":1}'
check dry-runs 0 'GET /api/v1/schedules/a/runs?status=failed' -- \
	"$ctl" --dry-run runs list a --status failed
check bad-dur 2 '--every: "5q" is not a duration' -- \
	"$ctl" --dry-run schedules create --name x --every 5q
check two-timings 2 "give only one of --every, --cron and --at" -- \
	"$ctl" --dry-run schedules create --name x --every 5m --at 2030-01-01T00:00:00Z
check bad-payload 2 "--payload: not JSON" -- \
	"$ctl" --dry-run schedules create --name x --every 5m --payload '{'
check exec-no-argv 2 "--exec needs the command after --" -- \
	"$ctl" --dry-run schedules create --name x --every 5m --exec
check no-id 2 "usage: cronvisorctl schedules get ID" -- "$ctl" schedules get
check wrong-flag 2 "schedules list does not take --every" -- \
	"$ctl" schedules list --every 5m
check help 0 "--http METHOD URL" -- "$ctl" schedules create --help
check runs-help 0 "usage: cronvisorctl runs list" -- "$ctl" runs --help
check dry-import 0 'POST /api/v1/schedules?owner=bob
{"name":"i1","interval_seconds":60}
POST /api/v1/schedules?owner=bob
{"name":"i2"}' -- sh -c 'printf "%s\n\n%s\n" "{\"name\":\"i1\",\"interval_seconds\":60}" \
	"{\"name\":\"i2\"}" | "$1" --dry-run schedules import - --owner bob' sh "$ctl"
check import-help 0 "Idempotency-Key" -- "$ctl" schedules import --help
check import-parallel 2 "--parallel" -- "$ctl" schedules import f --parallel 33

# --- against the stack ---
api_up "$1" "$2" "$3" "$4"
export CRONVISOR_URL CRONVISOR_TOKEN

check create 0 "kind:                      interval" -- \
	"$ctl" schedules create --name every5 --every 5m --exec -- /bin/echo hello
id1=$(printf '%s\n' "$out" | sed -n 's/^id: *//p')
ok create-id "$(sql "SELECT name || ' ' || interval_seconds FROM schedules
	WHERE id = '$id1'")" "every5 300"
# a create carries an Idempotency-Key (sent again with it after a 503)
ok create-key "$(sql "SELECT length(idempotency_key) FROM schedules
	WHERE id = '$id1'")" 32
check create-cron 0 "timezone:                  Europe/Paris" -- \
	"$ctl" schedules create --name paris --cron '0 9 * * 1-5' \
	--tz Europe/Paris --exec -- /bin/true
id2=$(printf '%s\n' "$out" | sed -n 's/^id: *//p')
printf '{"name": "from-file", "interval_seconds": 3600, "target":
  {"type": "exec", "argv": ["/bin/true"]}, "trigger_payload": {"k": "v"}}' \
	>"$tmp/s.json"
check create-file 0 "name:                      from-file" -- \
	"$ctl" schedules create --file "$tmp/s.json"
id3=$(printf '%s\n' "$out" | sed -n 's/^id: *//p')
ok create-stdin "$("$ctl" schedules create --json --file - <"$tmp/s.json" |
	jq -r '.name + " " + (.interval_seconds | tostring)')" "from-file 3600"

# list: the table and the JSON
check list 0 "ID                                    NAME       KIND      TIMING" -- \
	"$ctl" schedules list
check list-row 0 "$id1  every5     interval  every 5m" -- "$ctl" schedules list
check list-cron 0 "cron 0 9 * * 1-5 Europe/Paris  active" -- "$ctl" schedules list
ok list-json "$("$ctl" schedules list --json | jq -r '.schedules | length')" 4
ok list-filter "$("$ctl" --json schedules list --kind cron |
	jq -r '[.schedules[].name] | join(",")')" paris
ok list-all "$("$ctl" schedules list --limit 1 --all --json |
	jq -r '(.schedules | length | tostring) + " " + (.next_cursor | tostring)')" "4 null"
check list-more 0 "more schedules follow" -- "$ctl" schedules list --limit 1

# get
check get 0 "next_fire_times:" -- "$ctl" schedules get "$id2" --preview 3
ok get-lines "$(printf '%s\n' "$out" | grep -c '^    20..-..-..T09:00:00+01:00\|local 20')" 3
ok get-json "$("$ctl" schedules get "$id2" --preview 2 --json |
	jq -r '[.cron, (.next_fire_times | length)] | join(" ")')" "0 9 * * 1-5 2"

# update: only the fields given; a timing flag changes the kind
check update 0 "name:                      renamed" -- \
	"$ctl" schedules update "$id2" --name renamed --every 90s --retries 1
ok update-db "$(sql "SELECT name || ' ' || kind || ' ' || interval_seconds || ' ' ||
	max_retries || ' ' || coalesce(cron, '-') FROM schedules WHERE id = '$id2'")" \
	"renamed interval 90 1 -"
check update-timing 0 "every 1m30s" -- "$ctl" schedules list --name ren

# pause / resume and the invalid_state error
check pause 0 "schedule $id1 is paused" -- "$ctl" schedules pause "$id1"
check pause-again 1 "cronvisorctl: only active schedules can be paused" -- \
	"$ctl" schedules pause "$id1"
check pause-field 1 "(field: status)" -- "$ctl" schedules pause "$id1"
check resume 0 "schedule $id1 is active" -- "$ctl" schedules resume "$id1"
check resume-again 1 "cronvisorctl: only paused schedules can be resumed" -- \
	"$ctl" schedules resume "$id1"

# trigger, then the run shows up
check trigger 0 "triggered $id1: run sched-" -- \
	"$ctl" schedules trigger "$id1" --payload '{"why":"test"}'
run=$(printf '%s\n' "$out" | sed -n 's/.*: run //p')
# the trigger carried an Idempotency-Key (sent again with it after a 503)
ok trigger-key "$(sql "SELECT length(key) || ' ' || requested_by FROM trigger_keys
	WHERE schedule_id = '$id1'")" "32 admin"
wait_until 10 sh -c '"$1" runs list "$2" 2>/dev/null | grep -q "^$3  succeeded"' \
	- "$ctl" "$id1" "$run"
check runs-list 0 "$run  succeeded" -- "$ctl" runs list "$id1"
check runs-header 0 "ID                 STATUS     SLOT" -- "$ctl" runs list "$id1"
check runs-show 0 "    hello" -- "$ctl" runs show "$run"
ok runs-show-status "$("$ctl" runs show "$run" | awk '$1 == "status:" { print $2 }')" succeeded
ok runs-json "$("$ctl" runs show "$run" --json | jq -r '.exit_code')" 0
ok runs-list-json "$("$ctl" runs list "$id1" --json | jq -r '.runs[0].id')" "$run"

# terminal controls: refused in names at the door; a name from before that
# rule and a run's output reach the terminal escaped (ESC as \x1b), and
# --json keeps JSON's own escape
esc=$(printf '\033')
check name-esc 1 "must not contain control characters (field: name)" -- \
	"$ctl" schedules create --name "a${esc}[2Jb" --every 5m --exec -- /bin/true
check desc-esc 1 "(field: description)" -- sh -c 'printf "%s" \
	"{\"name\":\"d\",\"description\":\"x\\u001b[2J\"}" | "$1" schedules create --file -' sh "$ctl"
idc=$("$ctl" schedules create --json --name ctl --every 1h --exec -- \
	/usr/bin/printf 'out\033[31mred\r\nline2\n' | jq -r .id)
sql "UPDATE schedules SET name = E'old\\033[31mname\\ncronvisord: forged'
	WHERE id = '$idc'" >/dev/null
check get-esc 0 'old\x1b[31mname' -- "$ctl" schedules get "$idc"
lacks get-esc-raw "$esc"
check list-esc 0 'old\x1b[31mname' -- "$ctl" schedules list
lacks list-esc-raw "$esc"
runc=$("$ctl" schedules trigger "$idc" | sed -n 's/.*: run //p')
wait_until 10 sh -c '"$1" runs list "$2" 2>/dev/null | grep -q "^$3  succeeded"' \
	- "$ctl" "$idc" "$runc"
check show-esc 0 '    out\x1b[31mred\r' -- "$ctl" runs show "$runc"
lacks show-esc-raw "$esc"
ok show-esc-json "$("$ctl" runs show "$runc" --json | jq -c '.output')" \
	'"out\u001b[31mred\r\nline2\n"'
# the supervisor's log: the name's newline cannot forge a line of its own
ok log-forged "$(grep -c '^cronvisord: forged' "$work/cvd.log")" 0
ok log-escaped "$(grep -c 'schedule "old\\x1b\[31mname\\ncronvisord: forged": succeeded' \
	"$work/cvd.log")" 1
"$ctl" schedules delete "$idc" >/dev/null

# errors: the API's message and field, exit 1
check bad-cron 1 "(field: cron)" -- \
	"$ctl" schedules create --name bad --cron '0 25 * * *' --exec -- /bin/true
check bad-cron-prefix 1 "cronvisorctl: " -- \
	"$ctl" schedules create --name bad --cron '61 * * * *'
check unknown-field 1 "(field: every)" -- \
	sh -c 'echo "{\"name\":\"x\",\"every\":3}" | "$1" schedules create --file -' sh "$ctl"
check not-found 1 "cronvisorctl: " -- \
	"$ctl" schedules get 00000000-0000-0000-0000-000000000000
check no-token 1 "cronvisorctl token create" -- \
	env CRONVISOR_TOKEN= "$ctl" schedules list
check bad-token 1 "token create" -- "$ctl" schedules list --token cvt_nope
check viewer 1 "cronvisorctl: " -- \
	"$ctl" --token "$CV_TOKEN_ALICE_VIEWER" schedules pause "$id1"
check no-server 1 "cannot reach the API at http://127.0.0.1:1/api/v1/schedules:" -- \
	"$ctl" schedules list --url http://127.0.0.1:1
check no-socket 1 "through /nonexistent/sock" -- \
	"$ctl" schedules list --unix-socket /nonexistent/sock
check global-after 0 "renamed" -- \
	env -u CRONVISOR_URL -u CRONVISOR_TOKEN "$ctl" schedules list \
	--url "$CRONVISOR_URL" --token "$CRONVISOR_TOKEN"
check global-before 0 "renamed" -- \
	env -u CRONVISOR_URL -u CRONVISOR_TOKEN "$ctl" --url "$CRONVISOR_URL" \
	--token "$CRONVISOR_TOKEN" schedules list
check token-warns 0 "--token on the command line shows in ps to every local user" -- \
	"$ctl" schedules list --token "$CRONVISOR_TOKEN"
printf '%s\n' "$CRONVISOR_TOKEN" >"$tmp/token"
check token-file 0 "renamed" -- \
	env -u CRONVISOR_TOKEN "$ctl" schedules list --token-file "$tmp/token"
lacks token-file-quiet "shows in ps"
check token-file-env 0 "renamed" -- \
	env -u CRONVISOR_TOKEN CRONVISOR_TOKEN_FILE="$tmp/token" "$ctl" schedules list
check token-file-missing 1 "cannot read the API token from /nonexistent/t" -- \
	"$ctl" schedules list --token-file /nonexistent/t

# delete: one, then several at once (all or nothing)
check delete 0 "deleted $id1" -- "$ctl" schedules delete "$id1"
check deleted 1 "cronvisorctl: " -- "$ctl" schedules get "$id1"
check delete-some 1 "(field: ids[1])" -- \
	"$ctl" schedules delete "$id2" 00000000-0000-0000-0000-000000000000
ok delete-none "$("$ctl" schedules list --json | jq -r '.schedules | length')" 3
ok delete-batch "$("$ctl" schedules delete "$id2" "$id3" --json | jq -r .count)" 2
ok delete-left "$("$ctl" schedules list --json | jq -r '[.schedules[].name] | join(",")')" \
	from-file

# import: one schedule per line, failed lines named by number and field
imp=$tmp/imp.jsonl
{
	echo '{"name": "imp-1", "kind": "interval", "interval_seconds": 60, "target": {"type": "exec", "argv": ["/bin/true"]}}'
	echo
	echo '{"name": "imp-3", "kind": "cron", "cron": "0 25 * * *", "target": {"type": "exec", "argv": ["/bin/true"]}}'
	echo '{"name": "imp-4", "kind": "cron", "cron": "*/5 * * * *", "timezone": "Europe/Berlin", "target": {"type": "exec", "argv": ["/bin/true"]}}'
	echo '{"name": "imp-5", "kind": "interval", "interval_seconds": 60, "every": 3}'
	echo 'not json'
	echo '{"name": "imp-7", "kind": "interval", "interval_seconds": 7, "target": {"type": "exec", "argv": ["/bin/true"]}}'
} >"$imp"
check import 1 "$imp: 3 created, 3 failed" -- "$ctl" schedules import "$imp"
check import-line 1 "cronvisorctl: $imp:3: hour: 25 is out of range 0-23 (field: cron)" -- \
	"$ctl" schedules import "$imp" --key-prefix again
check import-field 1 "cronvisorctl: $imp:5: unknown field (field: every)" -- \
	"$ctl" schedules import "$imp" --key-prefix again
check import-json 1 "cronvisorctl: $imp:6: not a JSON object" -- \
	"$ctl" schedules import "$imp" --key-prefix again
lacks import-good ":7:"
ok import-rows "$(sql "SELECT string_agg(name || ' ' || count, ',' ORDER BY name) FROM
	(SELECT name, count(*) FROM schedules WHERE name LIKE 'imp-%' GROUP BY name) x")" \
	"imp-1 2,imp-4 2,imp-7 2"
ok import-keys "$(sql "SELECT string_agg(idempotency_key, ',' ORDER BY name)
	FROM schedules WHERE idempotency_key LIKE 'again-%'")" "again-1,again-4,again-7"
# the same lines with the same prefix: created once
sed -n '1p;4p;7p' "$imp" >"$tmp/good.jsonl"
check import-once 0 "$tmp/good.jsonl: 3 created, 0 failed" -- \
	"$ctl" schedules import "$tmp/good.jsonl" --key-prefix once --parallel 1
ok import-again "$("$ctl" schedules import "$tmp/good.jsonl" --key-prefix once --json)" \
	'{"created": 3, "failed": 0, "lines": 3}'
ok import-dedup "$(sql "SELECT count(*) FROM schedules WHERE idempotency_key LIKE 'once-%'")" 3
# an unreachable API: sent again 5 times (6.2 s), then the import stops
check import-down 1 "stopped after line" -- \
	"$ctl" schedules import "$tmp/good.jsonl" --url http://127.0.0.1:1 --parallel 1
ok import-down-why "$(printf '%s\n' "$out" | grep -c "good.jsonl:1: cannot reach the API")" 1
check import-missing 1 "nope.jsonl" -- "$ctl" schedules import "$tmp/nope.jsonl"

api_finish
summary cli_api
