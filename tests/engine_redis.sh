#!/bin/sh
# engine_redis.sh: redis targets (docs/schedules.md, "redis") end to end,
# schedules made through nginx and run by the real cronvisord against two
# real Redis servers on loopback ports: the configured one (redis_url) and
# a schedule's own.  Counted by what Redis holds: an xadd on the
# configured server lands in its owner's namespace, once per run, the
# run's output its entry id and the entry the run's event; seed 002's
# consumer group reads them; an lpush with a body of its own, its output
# the list's length; a publish a subscriber gets; a schedule's own server
# takes its key as written; an admin's raw_key; an unreachable server
# fails with the reason and is retried, a WRONGTYPE is final; a name that
# leads to the configured server is refused at run time; and every
# refusal at save (non-admin raw_key, unix socket, the configured server
# by URL, a denied host, bad members) changes nothing.
# Usage: engine_redis.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
rdir=$(mktemp -d /tmp/cvredis.XXXXXX) || exit 1
freeport() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
p1=$(freeport)
p2=$(freeport)
closed=$(freeport)
for p in "$p1" "$p2"; do
	redis-server --port "$p" --bind 127.0.0.1 --save "" --appendonly no \
		--dir "$rdir" >"$rdir/redis-$p.log" 2>&1 &
	echo $! >>"$rdir/pids"
done
CV_HARNESS_CONF="redis_url = \"redis://127.0.0.1:$p1\""
export CV_HARNESS_CONF
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"
extra="$extra $(cat "$rdir/pids")"
trap 'api_cleanup; rm -rf "$rdir"' EXIT
A=$CV_TOKEN_ALICE_EDITOR
B=$CV_TOKEN_BOB_EDITOR
ADM=$CV_TOKEN_ADMIN
r1() { redis-cli -p "$p1" "$@"; }
r2() { redis-cli -p "$p2" "$@"; }
up() { r1 ping >/dev/null 2>&1 && r2 ping >/dev/null 2>&1; }
ok "both servers answer" "$(wait_until 10 up && echo yes)" yes

# sched TOKEN NAME TARGET [MORE]: a schedule every second; prints its id.
sched() {
	send POST /schedules "$1" "{\"name\": \"$2\", \"interval_seconds\": 1, \"max_retries\": 0, \"target\": $3${4:+, $4}}"
	[ "$code" = 201 ] || echo "schedule $2: $code $resp" >&2
	j .id
}
pause() { call POST "/schedules/$1/pause" "$2"; }
runs() { sql "SELECT count(*) FROM runs WHERE schedule_id = '$1' AND status = '${2:-succeeded}'"; }

# --- xadd on the configured server: the owner's namespace ----------------------
sx=$(sched "$A" xadd '{"type": "redis", "command": "xadd", "key": "reports"}')
wait_for 20 "SELECT count(*) >= 3 FROM runs WHERE schedule_id = '$sx' AND status = 'succeeded'"
pause "$sx" "$A"
wait_for 10 "SELECT count(*) = 0 FROM runs WHERE schedule_id = '$sx' AND status = 'running'"
n=$(runs "$sx")
ok "xadd: one entry per run, in alice's namespace" "$(r1 XLEN cronvisor:alice:reports)" "$n"
ok "xadd: nothing under the bare key" "$(r1 EXISTS reports)" 0
first=$(sql "SELECT output FROM runs WHERE schedule_id = '$sx' AND status = 'succeeded' ORDER BY started_at LIMIT 1")
rid=$(sql "SELECT id FROM runs WHERE schedule_id = '$sx' AND status = 'succeeded' ORDER BY started_at LIMIT 1")
ok "xadd: the run's output is its entry's id" "$(r1 XRANGE cronvisor:alice:reports - + COUNT 1 | head -1)" "$first"
ok "xadd: the entry names the run" "$(r1 XRANGE cronvisor:alice:reports "$first" "$first" | sed -n 5p)" "$rid"
ok "xadd: its body is the run's event" "$(r1 XRANGE cronvisor:alice:reports "$first" "$first" | sed -n 3p | jq -r '[.scheduled_job_id, .run_id, .owner] | join(" ")')" "$sx $rid alice"
ok "xadd: every run's entry once" "$(r1 XRANGE cronvisor:alice:reports - + | awk 'NR % 5 == 0' | sort -u | wc -l)" "$n"
r1 XGROUP CREATE cronvisor:alice:reports workers 0 >/dev/null
ok "seed 002: a consumer group reads every entry" "$(r1 XREADGROUP GROUP workers w1 COUNT 1000 STREAMS cronvisor:alice:reports '>' | grep -c '^run_id$')" "$n"

# --- lpush with a body of its own; bob's namespace ------------------------------------
sl=$(sched "$B" push '{"type": "redis", "command": "lpush", "key": "reports", "body": {"hello": "world"}}')
wait_for 20 "SELECT count(*) >= 2 FROM runs WHERE schedule_id = '$sl' AND status = 'succeeded'"
pause "$sl" "$B"
wait_for 10 "SELECT count(*) = 0 FROM runs WHERE schedule_id = '$sl' AND status = 'running'"
ok "lpush: bob's key, one item per run" "$(r1 LLEN cronvisor:bob:reports)" "$(runs "$sl")"
ok "lpush: the body as given" "$(r1 LINDEX cronvisor:bob:reports 0)" '{"hello":"world"}'
ok "lpush: the outputs are the list's lengths" "$(sql "SELECT string_agg(output, ',' ORDER BY started_at) FROM runs WHERE schedule_id = '$sl' AND status = 'succeeded'")" "$(seq -s, 1 "$(runs "$sl")")"
ok "lpush: alice's stream untouched by bob" "$(r1 XLEN cronvisor:alice:reports)" "$n"
st=$(sched "$B" trimmed '{"type": "redis", "command": "lpush", "key": "short", "maxlen": 2, "body": "t"}')
wait_for 20 "SELECT count(*) >= 4 FROM runs WHERE schedule_id = '$st' AND status = 'succeeded'"
pause "$st" "$B"
wait_for 10 "SELECT count(*) = 0 FROM runs WHERE schedule_id = '$st' AND status = 'running'"
ok "lpush with maxlen 2: the list keeps two of $(runs "$st")" "$(r1 LLEN cronvisor:bob:short)" 2

# --- publish: a subscriber gets it ---------------------------------------------------------
r1 SUBSCRIBE cronvisor:alice:news >"$rdir/sub.out" 2>&1 &
subpid=$!
extra="$extra $subpid"
subscribed() { grep -q '^subscribe$' "$rdir/sub.out"; }
wait_until 10 subscribed
sp=$(sched "$A" pub '{"type": "redis", "command": "publish", "key": "news", "body": "extra!"}')
wait_for 20 "SELECT count(*) >= 1 FROM runs WHERE schedule_id = '$sp' AND status = 'succeeded'"
pause "$sp" "$A"
got() { grep -q '^extra!$' "$rdir/sub.out"; }
ok "publish: the subscriber got the body" "$(wait_until 10 got && echo yes)" yes
ok "publish: the output is the number of receivers" "$(sql "SELECT output FROM runs WHERE schedule_id = '$sp' AND status = 'succeeded' ORDER BY started_at LIMIT 1")" 1
kill "$subpid" 2>/dev/null

# --- a schedule's own server: the key as written -------------------------------------------
so=$(sched "$A" own "{\"type\": \"redis\", \"command\": \"lpush\", \"key\": \"mine\", \"url\": \"redis://127.0.0.1:$p2\", \"body\": \"x\"}")
wait_for 20 "SELECT count(*) >= 1 FROM runs WHERE schedule_id = '$so' AND status = 'succeeded'"
pause "$so" "$A"
wait_for 10 "SELECT count(*) = 0 FROM runs WHERE schedule_id = '$so' AND status = 'running'"
ok "own server: the key as written" "$(r2 LLEN mine)" "$(runs "$so")"
ok "own server: nothing on the configured one" "$(r1 EXISTS mine cronvisor:alice:mine)" 0

# --- an admin's raw_key -------------------------------------------------------------------------
send POST /schedules "$ADM" '{"name": "raw", "interval_seconds": 1, "max_retries": 0, "target": {"type": "redis", "command": "lpush", "key": "ops:raw", "raw_key": true, "body": "r"}}'
ok "admin raw_key: 201" "$code" 201
sr=$(j .id)
wait_for 20 "SELECT count(*) >= 1 FROM runs WHERE schedule_id = '$sr' AND status = 'succeeded'"
pause "$sr" "$ADM"
wait_for 10 "SELECT count(*) = 0 FROM runs WHERE schedule_id = '$sr' AND status = 'running'"
ok "admin raw_key: the key as written" "$(r1 LLEN ops:raw)" "$(runs "$sr")"

# --- failures ------------------------------------------------------------------------------------------
send POST /schedules "$A" "{\"name\": \"down\", \"at\": \"$(soon 500)\", \"max_retries\": 1, \"backoff\": \"fixed\", \"retry_delay_seconds\": 1, \"target\": {\"type\": \"redis\", \"command\": \"xadd\", \"key\": \"k\", \"url\": \"redis://127.0.0.1:$closed\"}}"
sd=$(j .id)
wait_for 20 "SELECT status = 'dead' FROM schedules WHERE id = '$sd'"
ok "unreachable: dead after its retry" "$(sql "SELECT status FROM schedules WHERE id = '$sd'")" dead
ok "unreachable: two attempts, both failed" "$(runs "$sd" failed)" 2
ok "unreachable: the error says why" "$(sql "SELECT error ~ 'redis: 127.0.0.1 port $closed: Connection refused' FROM runs WHERE schedule_id = '$sd' LIMIT 1")" t
r2 SET astring v >/dev/null
send POST /schedules "$A" "{\"name\": \"wrongtype\", \"at\": \"$(soon 500)\", \"max_retries\": 3, \"target\": {\"type\": \"redis\", \"command\": \"lpush\", \"key\": \"astring\", \"url\": \"redis://127.0.0.1:$p2\"}}"
sw=$(j .id)
wait_for 20 "SELECT status = 'dead' FROM schedules WHERE id = '$sw'"
ok "WRONGTYPE: final, one attempt of four allowed" "$(runs "$sw" failed)" 1
ok "WRONGTYPE: Redis's words" "$(sql "SELECT error LIKE 'redis: LPUSH: WRONGTYPE%' FROM runs WHERE schedule_id = '$sw'")" t
# 2130706433 is 127.0.0.1 as one number: a name to the API, which saves
# it; the runner resolves it and refuses it by address
send POST /schedules "$A" "{\"name\": \"sneaky\", \"at\": \"$(soon 500)\", \"max_retries\": 3, \"target\": {\"type\": \"redis\", \"command\": \"lpush\", \"key\": \"x\", \"url\": \"redis://2130706433:$p1\"}}"
ok "another spelling of the configured server: saved (the API sees a name)" "$code" 201
sn=$(j .id)
wait_for 20 "SELECT status = 'dead' FROM schedules WHERE id = '$sn'"
ok "... refused at run time, not retried" "$(runs "$sn" failed)" 1
ok "... and says so" "$(sql "SELECT error FROM runs WHERE schedule_id = '$sn'")" "refused: 2130706433 leads to the configured Redis server (redis_url), whose keys are kept apart by owner"
ok "... nothing written there" "$(r1 EXISTS x)" 0

# --- a password in target.url is a viewer's ***
send POST /schedules "$A" "{\"name\": \"secret\", \"interval_seconds\": 60, \"enabled\": false, \"target\": {\"type\": \"redis\", \"command\": \"publish\", \"key\": \"k\", \"url\": \"redis://ops:s3cret-9@127.0.0.1:$p2/1\"}}"
sec=$(j .id)
call GET "/schedules/$sec" "$CV_TOKEN_ALICE_VIEWER"
ok "viewer: the URL's password masked" "$(j .target.url)" "redis://ops:***@127.0.0.1:$p2/1"
call GET "/schedules?limit=500" "$CV_TOKEN_ALICE_VIEWER"
ok "viewer: masked in the list too" "$(printf '%s' "$resp" | grep -c s3cret-9)" 0
call GET "/schedules/$sec" "$A"
ok "editor: the URL as stored" "$(j .target.url)" "redis://ops:s3cret-9@127.0.0.1:$p2/1"
call DELETE "/schedules/$sec" "$A"

# --- refused at save: nothing created ---------------------------------------------------------------
before=$(sql "SELECT count(*) FROM schedules")
bad() {
	send POST /schedules "$A" "{\"name\": \"bad\", \"interval_seconds\": 60, \"target\": $1}"
	ok_error "$2" "$3" "$4" "$5"
}
bad '{"type": "redis", "command": "lpush", "key": "k", "raw_key": true}' "raw_key: an admin's" 403 forbidden target.raw_key
bad '{"type": "redis", "command": "lpush", "key": "k", "url": "unix:///tmp/r.sock"}' "unix socket: an admin's" 403 forbidden target.url
bad "{\"type\": \"redis\", \"command\": \"lpush\", \"key\": \"k\", \"url\": \"redis://127.0.0.1:$p1\"}" "the configured server by URL" 400 invalid_field target.url
for spelling in "[::1]" "[::ffff:127.0.0.1]" "0.0.0.0" "127.0.0.2" "LOCALHOST"; do
	bad "{\"type\": \"redis\", \"command\": \"lpush\", \"key\": \"k\", \"url\": \"redis://$spelling:$p1\"}" "the configured server as $spelling" 400 invalid_field target.url
done
bad '{"type": "redis", "command": "lpush", "key": "k", "url": "redis://169.254.169.254:6379"}' "a denied host" 400 invalid_field target.url
bad '{"type": "redis", "command": "lpush", "key": "k", "url": "rediss://h"}' "TLS" 400 invalid_field target.url
bad '{"type": "redis", "command": "del", "key": "k"}' "an unknown command" 400 invalid_field target.command
bad '{"type": "redis", "command": "LPUSH", "key": "k"}' "a command in capitals" 400 invalid_field target.command
bad '{"type": "redis", "key": "k"}' "no command" 400 missing_field target.command
bad '{"type": "redis", "command": "xadd"}' "no key" 400 missing_field target.key
bad '{"type": "redis", "command": "xadd", "key": ""}' "an empty key" 400 invalid_field target.key
bad "{\"type\": \"redis\", \"command\": \"xadd\", \"key\": \"$(head -c 513 /dev/zero | tr '\0' k)\"}" "a key of 513 bytes" 400 invalid_field target.key
bad '{"type": "redis", "command": "publish", "key": "k", "maxlen": 5}' "maxlen on publish" 400 invalid_field target.maxlen
bad '{"type": "redis", "command": "xadd", "key": "k", "maxlen": 100001}' "maxlen past a tenant's" 400 invalid_field target.maxlen
bad '{"type": "redis", "command": "xadd", "key": "k", "maxlen": 0}' "maxlen 0" 400 invalid_field target.maxlen
bad '{"type": "redis", "command": "xadd", "key": "k", "maxlen": "5"}' "maxlen a string" 400 invalid_field target.maxlen
bad '{"type": "redis", "command": "xadd", "key": "k", "db": 2}' "an unknown member" 400 unknown_field target.db
bad '{"type": "redis", "command": "xadd", "key": "k", "url": "redis://:pw@h:99999"}' "a bad port" 400 invalid_field target.url
ok "a bad URL's error hides its password" "$(printf '%s' "$resp" | grep -c pw)" 0
ok "refusals created nothing" "$(sql "SELECT count(*) FROM schedules")" "$before"

api_finish
summary engine_redis
