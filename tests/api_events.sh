#!/bin/sh
# api_events.sh: live events (docs/events.md) end to end, through the whole
# stack of tests/api-harness.sh (curl → nginx → cronvisor-api → PostgreSQL,
# the real cronvisord and its events worker) and a Redis server of its own
# on a unix socket (events_stream).  Checks: schedules that run make
# events numbered 1..N with no gap, each once, in the order of what
# happened (a run started before it ended, each run once, its status),
# and GET /events?after=0&follow=false sends every one of them as the
# database has them; tenants see their own owner's only (403 for
# another's, admin's ?owner= filter); refusals naming the query parameter
# or header (after, follow, an unknown one, Last-Event-ID), 401 without a
# token; resuming with Last-Event-ID; a live stream through nginx that
# shows a pause and a resume as they happen (and the API's own FastCGI
# answer: X-Accel-Buffering: no, one response only); the stream limits of
# api_threads (429 too_many_streams with Retry-After, per owner and in
# all, a place free again once a client left); the Redis stream: entry
# ids SEQ-0 equal to the database's seqs, a consumer group reading all,
# 1,200 events of one statement (published in several pipelines, sent in
# pages), and after a Redis restart that lost everything every event
# there again and a consumer resuming after its last seq getting exactly
# the rest;
# kill -9 of the supervisor: its events worker goes with it, a new
# supervisor's worker takes over, and seqs stay 1..M with no gap or
# duplicate, in the database, the API and Redis; a deleted schedule's
# event; events no longer kept announced as a gap.
# Usage: api_events.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
. "$(dirname "$0")/api-lib.sh"

# --- a Redis of our own (no persistence: a restart loses the stream) -----
rdir=$(mktemp -d /tmp/cvredis.XXXXXX) || exit 1
rsock=$rdir/r.sock
stream=cvtest:events
rpid=""
# R ARGS...: redis-cli on our socket; RJ: the same, as JSON.
R() { redis-cli -s "$rsock" "$@" 2>/dev/null; }
RJ() { redis-cli -s "$rsock" --json "$@" 2>/dev/null; }
rping() { [ "$(R ping)" = PONG ]; }
# unextra PID: takes a reaped pid out of $extra.
unextra() {
	u_new=""
	for u_p in $extra; do
		[ "$u_p" = "$1" ] || u_new="$u_new $u_p"
	done
	extra=$u_new
}
# redis_up: starts an empty Redis on $rsock (rpid), waits until it answers.
redis_up() {
	redis-server --port 0 --unixsocket "$rsock" --unixsocketperm 700 \
		--save "" --appendonly no --daemonize no --dir "$rdir" \
		</dev/null >>"$rdir/redis.log" 2>&1 &
	rpid=$!
	extra="$extra $rpid"
	wait_until 10 rping || { echo "redis did not answer in 10 s" >&2; tail -n 20 "$rdir/redis.log" >&2; }
}
trap 'kill -KILL $rpid 2>/dev/null; rm -rf "$rdir"' EXIT
redis_up
CV_HARNESS_CONF="redis_url = \"unix://$rsock\"
events_stream = \"$stream\""
export CV_HARNESS_CONF
api_up "$1" "$2" "$3" "$4"
trap 'api_cleanup; rm -rf "$rdir"' EXIT
ADM=$CV_TOKEN_ADMIN
A=$CV_TOKEN_ALICE_EDITOR
AV=$CV_TOKEN_ALICE_VIEWER
B=$CV_TOKEN_BOB_EDITOR
BV=$CV_TOKEN_BOB_VIEWER
true_tgt='"target": {"type": "exec", "argv": ["/bin/true"]}'

# --- helpers -----------------------------------------------------------------
# ev QUERY TOKEN [CURL-ARGS...]: GET /events QUERY; resp is the stream.
ev() {
	e_q=$1 e_t=$2
	shift 2
	call GET "/events$e_q" "$e_t" "$@"
}
# ids: the ids of the events in resp, space-separated; types: their event
# lines; datas: their data lines, one JSON object a line.
ids() { printf '%s\n' "$resp" | sed -n 's/^id: //p' | tr '\n' ' ' | sed 's/ $//'; }
types() { printf '%s\n' "$resp" | sed -n 's/^event: //p' | tr '\n' ' ' | sed 's/ $//'; }
datas() { printf '%s\n' "$resp" | sed -n 's/^data: //p'; }
# span FROM TO: FROM..TO space-separated ("" if TO < FROM).
span() { [ "$2" -lt "$1" ] || seq -s ' ' "$1" "$2"; }
last_seq() { sql "SELECT last_seq FROM events_state"; }
# dbseqs WHERE: the numbered events' seqs matching WHERE, space-separated.
dbseqs() { sql "SELECT coalesce(string_agg(seq::text, ' ' ORDER BY seq), '') FROM events WHERE seq IS NOT NULL AND ($1)"; }
# quiet: every event numbered and nothing in flight that would make more.
quiet() {
	wait_for 20 "SELECT NOT EXISTS (SELECT 1 FROM events WHERE seq IS NULL)
	  AND NOT EXISTS (SELECT 1 FROM runs WHERE status IN ('running', 'waiting'))
	  AND NOT EXISTS (SELECT 1 FROM executions WHERE status = 'running')
	  AND NOT EXISTS (SELECT 1 FROM jobs WHERE status IN ('pending', 'running'))"
}
# rlast: the seq of the Redis stream's last entry (0: none, -1: no answer).
rlast() {
	r_l=$(RJ XREVRANGE "$stream" + - COUNT 1 | jq -r '.[0][0] // "0-0"' 2>/dev/null)
	echo "${r_l%-0}" | grep -E '^[0-9]+$' || echo -1
}
caught_up() { [ "$(rlast)" = "$(last_seq)" ]; }
# reached: the stream has at least what the database had a moment ago.
reached() { r_db=$(last_seq); [ "$(rlast)" -ge "$r_db" ]; }
# rids: the entry ids of the whole Redis stream, seqs only (the "-0" cut
# off only where it is there), space-separated.
rids() { RJ XRANGE "$stream" - + | jq -r 'map(.[0] | sub("-0$"; "")) | join(" ")'; }
# opens QUERY TOKEN: GET /events QUERY answers 200.
opens() { ev "$1" "$2"; [ "$code" = 200 ]; }
# fcgi URI TOKEN: the API's own answer to GET URI on its FastCGI socket,
# headers and body as it wrote them (nginx hides X-Accel-* from clients).
fcgi() {
	python3 - "$CV_SOCKET" "$2" "$1" <<'EOF'
# One request (BEGIN_REQUEST as responder, PARAMS, empty STDIN), then the
# STDOUT records until END_REQUEST, written out as they came.
import socket, struct, sys
path, token, uri = sys.argv[1:4]
def rec(t, content, rid=1):
    return struct.pack('>BBHHBx', 1, t, rid, len(content), 0) + content
def nv(k, v):
    k, v = k.encode(), v.encode()
    def ln(n):
        return bytes([n]) if n < 128 else struct.pack('>I', n | 0x80000000)
    return ln(len(k)) + ln(len(v)) + k + v
q = uri.split('?', 1)[1] if '?' in uri else ''
params = b''.join(nv(k, v) for k, v in [
    ('REQUEST_METHOD', 'GET'), ('REQUEST_URI', uri), ('QUERY_STRING', q),
    ('CONTENT_TYPE', ''), ('CONTENT_LENGTH', ''),
    ('HTTP_AUTHORIZATION', 'Bearer ' + token)])
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(path)
s.sendall(rec(1, struct.pack('>HB5x', 1, 0)) + rec(4, params) + rec(4, b'') + rec(5, b''))
buf, out = b'', b''
while True:
    d = s.recv(65536)
    if not d:
        break
    buf += d
    while len(buf) >= 8:
        _, t, _, n, p = struct.unpack('>BBHHB', buf[:7])
        if len(buf) < 8 + n + p:
            break
        if t == 6:
            out += buf[8:8 + n]
        buf = buf[8 + n + p:]
        if t == 3:
            sys.stdout.buffer.write(out)
            sys.exit(0)
sys.stdout.buffer.write(out)
EOF
}
# act ID TOKEN ACTION: POST /schedules/ID/ACTION, 200 expected.
act() {
	call POST "/schedules/$1/$3" "$2"
	[ "$code" = 200 ] || echo "$3 $1: $code $resp" >&2
}

# --- 1. a schedule of alice's runs: seqs 1..N, each once, in order ------------
send POST /schedules "$A" "{\"name\": \"tick\", \"interval_seconds\": 1, \"total_repeats\": 3, \"max_retries\": 0, $true_tgt}"
ok_status "tick: created" 201
tick=$(j .id)
wait_for 20 "SELECT status = 'done' FROM schedules WHERE id = '$tick'"
ok "tick: done after its 3 runs" "$(sql "SELECT status || ' ' || (SELECT count(*) FROM runs WHERE schedule_id = s.id AND status = 'succeeded') FROM schedules s WHERE id = '$tick'")" "done 3"
quiet
ok "tick: every event numbered, nothing in flight" "$?" 0
n=$(last_seq)
ev "?after=0&follow=false" "$ADM"
ok_status "all: 200" 200
ok "all: text/event-stream" "$(grep -i '^content-type:' "$tmp/headers" | tr -d '\r' | cut -d' ' -f2-)" text/event-stream
ok "all: the body starts with retry: 2000" "$(printf '%s\n' "$resp" | head -n 1)" "retry: 2000"
ok "all: some events (created, 3 x started/ended, done)" "$([ "$n" -ge 8 ] && echo yes || echo "no: $n")" yes
ok "all: seqs 1..N, each once, in order" "$(ids)" "$(span 1 "$n")"
ok "all: the body ends with the last event's data" "$(printf '%s\n' "$resp" | tail -n 1 | cut -c 1-7)" 'data: {'
ok "all: nothing but events after retry" "$(printf '%s\n' "$resp" | sed 1d | grep -v -e '^id: [0-9]*$' -e '^event: [a-z.]*$' -e '^data: {.*}$' -e '^$' | head -n 3)" ""
ok "all: as many as the database numbered" "$(datas | wc -l | tr -d ' ')" "$(sql "SELECT count(*) FROM events WHERE seq IS NOT NULL")"
ok "all: the counter is the last seq" "$(sql "SELECT max(seq) FROM events")" "$n"
ok "all: each data's seq is its id" "$(datas | jq -r .seq | tr '\n' ' ' | sed 's/ $//')" "$(ids)"
ok "all: each data's type is its event" "$(datas | jq -r .type | tr '\n' ' ' | sed 's/ $//')" "$(types)"
ok "all: the types the database has, in seq order" "$(types)" "$(sql "SELECT string_agg(type, ' ' ORDER BY seq) FROM events")"
D=$(datas | jq -sc .)
# tk FILTER: jq FILTER over tick's events, in seq order.
tk() { printf '%s' "$D" | jq -r --arg t "$tick" "[.[] | select(.schedule_id == \$t)] | $1"; }
ok "tick: schedule.created once, active, its name, alice's" "$(tk 'map(select(.type == "schedule.created") | [.data.status, .data.name, .owner, .subject == $t] | map(tostring) | join(",")) | join(";")')" "active,tick,alice,true"
ok "tick: schedule.created is its first event" "$(tk '.[0].type')" schedule.created
ok "tick: each run started, then ended, once each" "$(tk 'map(select(.type | startswith("run."))) | group_by(.subject) | map(map(.type) | join(">")) | unique | join(";")')" "run.started>run.ended"
ok "tick: the runs are the database's" "$(tk 'map(select(.type == "run.ended") | .subject) | sort | join(" ")')" "$(sql "SELECT string_agg(id, ' ' ORDER BY id COLLATE \"C\") FROM runs WHERE schedule_id = '$tick'")"
ok "tick: run.started running, run.ended succeeded from running, exit 0" "$(tk 'map(select(.type | startswith("run.")) | [.type, .data.status, (.data.from // "-"), (.data.exit_code // "-")] | map(tostring) | join(":")) | unique | join(" ")')" "run.ended:succeeded:running:0 run.started:running:-:-"
ok "tick: 3 runs ended" "$(tk 'map(select(.type == "run.ended")) | length')" 3
ok "tick: schedule.status active > done once" "$(tk 'map(select(.type == "schedule.status") | .data.from + ">" + .data.status) | join(";")')" "active>done"
ok "tick: executions end in success" "$(tk 'map(select(.type == "execution.status" and .data.status != "running") | .data.status) | unique | join(",")')" success
ok "tick: every event alice's, with an instant" "$(tk 'map([.owner, (.at | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$"))] | map(tostring) | join(",")) | unique | join(";")')" "alice,true"

# --- 2. tenants ------------------------------------------------------------------
send POST /schedules "$B" "{\"name\": \"bobonce\", \"at\": \"$(soon 1500)\", \"max_retries\": 0, $true_tgt}"
ok_status "bob: once schedule created" 201
bobonce=$(j .id)
send POST /schedules "$B" "{\"name\": \"bobfar\", \"kind\": \"cron\", \"cron\": \"0 0 1 1 *\", $true_tgt}"
ok_status "bob: far schedule created" 201
bobfar=$(j .id)
wait_for 20 "SELECT status = 'done' FROM schedules WHERE id = '$bobonce'"
quiet
ev "?after=0&follow=false" "$B"
ok_status "bob: 200" 200
ok "bob: his events only, all of them, in order" "$(ids)" "$(dbseqs "owner = 'bob'")"
ok "bob: owner bob throughout" "$(datas | jq -r .owner | sort -u)" bob
ok "bob: his once schedule ran and ended succeeded" "$(datas | jq -r --arg s "$bobonce" 'select(.schedule_id == $s and .type == "run.ended") | .data.status')" succeeded
ok "bob: none of tick's" "$(datas | jq -r --arg s "$tick" 'select(.schedule_id == $s) | .seq' | wc -l | tr -d ' ')" 0
ev "?after=0&follow=false" "$AV"
ok_status "alice viewer: 200" 200
ok "alice viewer: alice's events only, all of them" "$(ids)" "$(dbseqs "owner = 'alice'")"
ok "alice viewer: owner alice throughout" "$(datas | jq -r .owner | sort -u)" alice
ev "?after=0&follow=false&owner=alice" "$A"
ok "alice editor: ?owner=alice, her own" "$code $(ids)" "200 $(dbseqs "owner = 'alice'")"
ev "?after=0&follow=false&owner=bob" "$A"
ok_error "alice: ?owner=bob refused" 403 forbidden owner
ev "?after=0&follow=false&owner=alice" "$BV"
ok_error "bob viewer: ?owner=alice refused" 403 forbidden owner
ev "?after=0&follow=false&owner=alice" "$ADM"
ok "admin: ?owner=alice, hers only" "$code $(ids)" "200 $(dbseqs "owner = 'alice'")"
ev "?after=0&follow=false&owner=bob" "$ADM"
ok "admin: ?owner=bob, his only" "$code $(ids)" "200 $(dbseqs "owner = 'bob'")"
ev "?after=0&follow=false&owner=nobody" "$ADM"
ok "admin: ?owner=nobody, none" "$code $(ids)" "200 "
ev "?after=0&follow=false" "$ADM"
ok "admin: every owner's" "$(datas | jq -r .owner | sort -u | tr '\n' ' ')" "alice bob "

# --- 3. refusals -------------------------------------------------------------------
last=$(last_seq)
for a in -1 abc 1e3 1.0 %201 '' 0x10 99999999999999999999 $((last + 1)); do
	ev "?after=$a&follow=false" "$ADM"
	ok_error "after=$a" 400 invalid_query after
done
for f in yes TRUE 1 ''; do
	ev "?follow=$f" "$ADM"
	ok_error "follow=$f" 400 invalid_query follow
done
ev "?x=1&follow=false" "$ADM"
ok_error "unknown parameter x" 400 invalid_query x
ev "?after=0&follow=false&owner=" "$ADM"
ok_error "owner= empty" 400 invalid_query owner
ev "?follow=false" "$ADM" -H "Last-Event-ID: abc"
ok_error "Last-Event-ID: abc" 400 invalid_header Last-Event-ID
ev "?follow=false" "$ADM" -H "Last-Event-ID: $((last + 1))"
ok_error "Last-Event-ID past the last" 400 invalid_header Last-Event-ID
ev "?after=0&follow=false" ""
ok_error "no token" 401 unauthorized null
ev "?after=0&follow=false" "not-a-token"
ok_error "a bad token" 401 unauthorized null

# --- 4. resuming ------------------------------------------------------------------
k=$((last - 3))
ev "?follow=false" "$ADM" -H "Last-Event-ID: $k"
ok "Last-Event-ID K: the events after K only" "$code $(ids)" "200 $(span $((k + 1)) "$last")"
ev "?follow=false" "$AV" -H "Last-Event-ID: $k"
ok "Last-Event-ID K, a tenant: its events after K" "$code $(ids)" "200 $(dbseqs "owner = 'alice' AND seq > $k")"
ev "?follow=false" "$ADM" -H "Last-Event-ID: 0"
ok "Last-Event-ID 0: all" "$(ids)" "$(span 1 "$last")"
ev "?after=$((last - 1))&follow=false" "$ADM" -H "Last-Event-ID: 0"
ok "after wins over Last-Event-ID" "$(ids)" "$last"
ev "?after=$last&follow=false" "$ADM"
ok "after the last: none (not an error)" "$code $(ids)" "200 "
ev "?follow=false" "$ADM"
ok "neither: from now on (nothing yet)" "$code $resp" "200 retry: 2000"

# --- 5. live, through nginx ------------------------------------------------------
out=$(fcgi "/api/v1/events?after=0&follow=false" "$ADM" | tr -d '\r')
ok "fastcgi: the API asks nginx not to buffer the stream" "$(printf '%s\n' "$out" | grep -c '^X-Accel-Buffering: no$')" 1
ok "fastcgi: text/event-stream, 200" "$(printf '%s\n' "$out" | sed -n '1,2p' | tr '\n' ' ')" "Status: 200 OK Content-Type: text/event-stream "
ok "fastcgi: one response only" "$(printf '%s\n' "$out" | grep -c '^Status: ')" 1
# A schedule of alice's that keeps running (every second), for what follows.
send POST /schedules "$A" "{\"name\": \"keep\", \"interval_seconds\": 1, \"max_retries\": 0, $true_tgt}"
ok_status "keep: created" 201
keep=$(j .id)
# Bob's stream has bob's few events only: nothing would fill a buffer of
# nginx's; the admin's has keep's as well.
curl -sN --max-time 240 -H "Authorization: Bearer $B" "$CV_API_URL/events" \
	>"$tmp/live-bob.sse" 2>>"$work/curl.log" &
lb=$!
extra="$extra $lb"
curl -sN --max-time 240 -H "Authorization: Bearer $ADM" "$CV_API_URL/events?follow=true" \
	>"$tmp/live-adm.sse" 2>>"$work/curl.log" &
la=$!
extra="$extra $la"
wait_until 10 grep -q '^retry: 2000' "$tmp/live-bob.sse"
ok "live: bob's stream began at once" "$?" 0
wait_until 10 grep -q '^retry: 2000' "$tmp/live-adm.sse"
ok "live: the admin's stream began at once" "$?" 0
# live_has FILE STATUS: FILE shows bobfar's schedule.status STATUS.
live_has() {
	sed -n 's/^data: //p' "$1" 2>/dev/null |
		jq -en --arg s "$bobfar" --arg st "$2" 'any(inputs; .type == "schedule.status" and .schedule_id == $s and .data.status == $st)' >/dev/null 2>&1
}
t0=$(date +%s%3N)
act "$bobfar" "$B" pause
wait_until 10 live_has "$tmp/live-bob.sse" paused
ok "live: the pause reached bob's stream within 10 s" "$?" 0
echo "api_events: the pause reached the stream in $(($(date +%s%3N) - t0)) ms"
ok "live: while it still streams" "$(kill -0 "$lb" 2>/dev/null && echo open)" open
act "$bobfar" "$B" resume
wait_until 10 live_has "$tmp/live-bob.sse" active
ok "live: the resume reached bob's stream within 10 s" "$?" 0
wait_until 30 live_has "$tmp/live-adm.sse" active
r=$?
ok "live: and the admin's" "$r" 0
if [ "$r" != 0 ]; then
	# what the admin's stream had, against the database, to tell a late
	# stream from a lost event
	echo "api_events: admin's stream: $(grep -c '^id: ' "$tmp/live-adm.sse") events, last id $(sed -n 's/^id: //p' "$tmp/live-adm.sse" | tail -1), last line '$(tail -c 200 "$tmp/live-adm.sse" | tail -1)'; curl alive: $(kill -0 "$la" 2>/dev/null && echo yes || echo no)"
	sed -n 's/^data: //p' "$tmp/live-adm.sse" | jq -c --arg s "$bobfar" 'select(.schedule_id == $s)' 2>&1 | tail -n 5
	echo "api_events: the database: resume at seq $(dbseqs "schedule_id = '$bobfar' AND type = 'schedule.status'"); last $(sql "SELECT last_seq FROM events_state")"
fi
ok "live: bob's stream, exactly the pause and the resume" "$(sed -n 's/^data: //p' "$tmp/live-bob.sse" | jq -r '[.type, .data.from, .data.status, .owner] | join(",")' | tr '\n' ' ')" \
	"schedule.status,active,paused,bob schedule.status,paused,active,bob "
ok "live: ids match the data" "$(sed -n 's/^id: //p' "$tmp/live-bob.sse" | tr '\n' ' ')" "$(sed -n 's/^data: //p' "$tmp/live-bob.sse" | jq -r .seq | tr '\n' ' ')"
ok "live: bob's are the database's" "$(sed -n 's/^id: //p' "$tmp/live-bob.sse" | tr '\n' ' ' | sed 's/ $//')" "$(dbseqs "owner = 'bob' AND schedule_id = '$bobfar' AND type = 'schedule.status'")"
aids=$(sed -n 's/^id: //p' "$tmp/live-adm.sse" | tr '\n' ' ' | sed 's/ $//')
afirst=${aids%% *}
alast=${aids##* }
ok "live: the admin's stream, every seq once, in order" "$aids" "$(span "${afirst:-1}" "${alast:-0}")"
ok "live: the admin's stream, from now (not from the start)" "$([ "${afirst:-0}" -gt "$last" ] && echo yes || echo "no: $afirst")" yes
kill "$lb" "$la" 2>/dev/null
wait "$lb" "$la" 2>/dev/null
unextra "$lb"
unextra "$la"
# A stream whose client left notices at its next write: give bob's
# one an event (the admin's gets keep's).
act "$bobfar" "$B" pause
act "$bobfar" "$B" resume

# --- 6. limits ---------------------------------------------------------------------
threads=$(sed -n 's/^api_threads *= *\([0-9][0-9]*\).*/\1/p' "$CV_CONF" | tail -n 1)
threads=${threads:-8}
total_max=$((threads / 2 > 1 ? threads / 2 : 1))
owner_max=$((threads / 4 > 1 ? threads / 4 : 1))
echo "api_events: api_threads $threads: $total_max streams in all, $owner_max per owner"
wait_until 20 opens "?follow=false" "$B"
ok "limits: bob's place free again after his client left" "$?" 0
wait_until 20 opens "?follow=false" "$ADM"
ok "limits: the admin's place free again after its client left" "$?" 0
# bg_stream NAME TOKEN: a follow stream in the background; its pid to
# $extra and $streams.  Then up to 10 s for its first line.
streams=""
bg_stream() {
	curl -sN --max-time 60 -H "Authorization: Bearer $2" "$CV_API_URL/events" \
		>"$tmp/$1.sse" 2>>"$work/curl.log" &
	streams="$streams $!"
	extra="$extra $!"
	wait_until 10 grep -q '^retry: 2000' "$tmp/$1.sse"
}
i=0
while [ $i -lt $owner_max ]; do
	bg_stream "alice$i" "$A"
	ok "limits: alice's stream $((i + 1)) of $owner_max" "$?" 0
	i=$((i + 1))
done
ev "?follow=false" "$AV"
ok_error "limits: one more of alice's" 429 too_many_streams null
ok "limits: with Retry-After" "$(grep -i '^retry-after:' "$tmp/headers" | tr -d '\r' | cut -d' ' -f2)" 5
ev "?after=0&follow=false&owner=alice" "$ADM"
ok_error "limits: the admin's ?owner=alice counts as alice's" 429 too_many_streams null
if [ $total_max -gt $owner_max ]; then
	i=0
	while [ $i -lt $((total_max - owner_max)) ]; do
		bg_stream "bob$i" "$B"
		ok "limits: bob's stream $((i + 1)), up to $total_max in all" "$?" 0
		i=$((i + 1))
	done
	ev "?follow=false" "$ADM"
	ok_error "limits: one more in all (the admin's)" 429 too_many_streams null
fi
call GET "/schedules?limit=1" "$A"
ok "limits: the rest of the API still answers" "$code" 200
for p in $streams; do
	kill "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	unextra "$p"
done
act "$bobfar" "$B" pause
act "$bobfar" "$B" resume
wait_until 20 opens "?follow=false" "$AV"
ok "limits: once they left, alice's stream opens again" "$?" 0
if [ $total_max -gt $owner_max ]; then
	wait_until 20 opens "?follow=false" "$B"
	ok "limits: and bob's" "$?" 0
fi
streams=""
bg_stream again "$A"
ok "limits: a follow stream of alice's opens again" "$?" 0
wait_until 10 grep -q '^id: ' "$tmp/again.sse"
ok "limits: and gets keep's next events" "$?" 0
for p in $streams; do
	kill "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	unextra "$p"
done

# --- 7. the Redis stream ---------------------------------------------------------
act "$keep" "$A" pause
# 1,200 events in one statement (schedules of carol's, paused): numbered
# at once, published in more than one pipeline, sent in pages.
sql "INSERT INTO schedules (name, owner, status, kind, cron)
     SELECT 'bulk' || g, 'carol', 'paused', 'cron', '0 0 1 1 *'
     FROM generate_series(1, 1200) g" >/dev/null
quiet
ok "redis: quiet after keep's pause" "$?" 0
wait_until 15 caught_up
ok "redis: the stream caught up with the database" "$?" 0
n=$(last_seq)
ok "redis: ids 1-0..N-0 (the database's seqs), each once" "$(RJ XRANGE "$stream" - + | jq -r 'map(.[0]) | join(" ")')" "$(span 1 "$n" | sed 's/\([0-9][0-9]*\)/\1-0/g')"
ok "redis: XLEN is N" "$(R XLEN "$stream")" "$n"
ok "redis: fields seq, type, event" "$(RJ XRANGE "$stream" - + | jq -c 'map([.[1][0], .[1][2], .[1][4]]) | unique')" '[["seq","type","event"]]'
ok "redis: each entry's seq field is its id" "$(RJ XRANGE "$stream" - + | jq -r 'map(select(.[0] != .[1][1] + "-0")) | length')" 0
ok "redis: each entry's event JSON has its seq and type" "$(RJ XRANGE "$stream" - + | jq -r 'map(select((.[1][5] | fromjson) as $e | ($e.seq | tostring) != .[1][1] or $e.type != .[1][3])) | length')" 0
ok "redis: the types the database has, in seq order" "$(RJ XRANGE "$stream" - + | jq -r 'map(.[1][3]) | join(" ")')" "$(sql "SELECT string_agg(type, ' ' ORDER BY seq) FROM events")"
ok "redis: the same JSON as the API's" "$(RJ XRANGE "$stream" - + | jq -c 'map(.[1][5] | fromjson) | .[-1]')" "$(ev "?after=$((n - 1))&follow=false" "$ADM"; datas | jq -c .)"
ok "redis: XGROUP CREATE" "$(R XGROUP CREATE "$stream" g 0)" OK
ok "redis: the group reads every entry" "$(RJ XREADGROUP GROUP g c COUNT 100000 STREAMS "$stream" '>' | jq -r --arg s "$stream" '.[$s] | map(.[0] | sub("-0$"; "")) | join(" ")')" "$(span 1 "$n")"
ok "redis: then nothing more" "$(RJ XREADGROUP GROUP g c COUNT 100000 STREAMS "$stream" '>')" null
# Restart Redis empty while keep runs: the events meanwhile wait in the
# database; the worker puts every one back (it lost them all).
seen=$n
act "$keep" "$A" resume
kill -KILL "$rpid"
wait "$rpid" 2>/dev/null
unextra "$rpid"
wait_for 15 "SELECT last_seq >= $seen + 4 FROM events_state"
ok "redis: down; keep goes on, its events numbered" "$?" 0
redis_up
wait_until 25 reached
ok "redis: caught up with the database again" "$?" 0
act "$keep" "$A" pause
quiet
wait_until 15 caught_up
ok "redis: caught up after keep's pause" "$?" 0
m=$(last_seq)
ok "redis: more events than before the restart" "$([ "$m" -gt "$seen" ] && echo yes || echo "no: $m")" yes
ok "redis: after the restart, every event again, 1..M, each once" "$(rids)" "$(span 1 "$m")"
echo "api_events: Redis restarted empty after $seen events; XREAD then read 1..$m, each once"
ok "redis: each entry's seq field is its id" "$(RJ XRANGE "$stream" - + | jq -r 'map(select(.[0] != .[1][1] + "-0")) | length')" 0
ok "redis: a consumer resuming after its last seq gets exactly the rest" "$(RJ XREAD COUNT 100000 STREAMS "$stream" "$seen-0" | jq -r --arg s "$stream" '.[$s] | map(.[0] | sub("-0$"; "")) | join(" ")')" "$(span $((seen + 1)) "$m")"
ok "redis: the outage logged once" "$(grep -c 'events stream: .*retrying' "$work/cvd.log")" 1

# --- 8. kill -9 of the supervisor ---------------------------------------------------
# workers: the events workers of this test's configuration.
workers() { pgrep -f -- "--events-worker -f $CV_CONF" | tr '\n' ' ' | sed 's/ $//'; }
no_workers() { [ -z "$(workers)" ]; }
some_workers() { [ -n "$(workers)" ]; }
# leads N: the log tells of N workers that took the lead.
leads() { [ "$(grep -c 'leading the events of the cluster' "$work/cvd.log")" -ge "$1" ]; }
act "$keep" "$A" resume
w=$(workers)
ok "kill -9: one events worker, the supervisor's child" "$w $(ps -o ppid= -p "${w:-0}" 2>/dev/null | tr -d ' ')" "$w $CV_SUPERVISOR_PID"
before=$(sql "SELECT count(*) FROM runs WHERE schedule_id = '$keep' AND status = 'succeeded'")
wait_for 10 "SELECT count(*) > $before FROM runs WHERE schedule_id = '$keep' AND status = 'succeeded'"
kill -9 "$CV_SUPERVISOR_PID"
wait_gone 10 "$CV_SUPERVISOR_PID"
ok "kill -9: the supervisor is gone" "$?" 0
wait_until 5 no_workers
ok "kill -9: its events worker went with it" "$(workers)" ""
# Started as the harness starts it, not as this shell's child (a zombie
# would look alive to the harness's stop), which then stops it at the end
# (SIGTERM: its worker with it).
("$CRONVISORD" -f "$CV_CONF" </dev/null >>"$work/cvd.log" 2>&1 &
	echo $! >"$work/cvd.pid")
np=$(cat "$work/cvd.pid")
extra="$extra $np"
wait_until 10 some_workers
w=$(workers)
ok "kill -9: the new supervisor's worker" "$w $(ps -o ppid= -p "${w:-0}" 2>/dev/null | tr -d ' ')" "$w $np"
after=$(sql "SELECT count(*) FROM runs WHERE schedule_id = '$keep' AND status = 'succeeded'")
wait_for 30 "SELECT count(*) >= $after + 2 FROM runs WHERE schedule_id = '$keep' AND status = 'succeeded'"
ok "kill -9: keep runs again" "$?" 0
wait_until 10 leads 2
ok "kill -9: the new worker leads" "$?" 0
act "$keep" "$A" pause
quiet
ok "kill -9: quiet after keep's pause" "$?" 0
wait_until 15 caught_up
ok "kill -9: the Redis stream caught up" "$?" 0
m2=$(last_seq)
ok "kill -9: more events since" "$([ "$m2" -gt "$m" ] && echo yes || echo "no: $m2")" yes
ok "kill -9: seqs 1..M, no gap, no duplicate" "$(sql "SELECT count(*) = max(seq) AND count(DISTINCT seq) = count(*) AND max(seq) = (SELECT last_seq FROM events_state) FROM events WHERE seq IS NOT NULL")" t
ok "kill -9: every event numbered" "$(sql "SELECT count(*) FROM events WHERE seq IS NULL")" 0
ev "?after=0&follow=false" "$ADM"
ok "kill -9: the API sends 1..M" "$(ids)" "$(span 1 "$m2")"
ev "?after=0&follow=false&owner=carol" "$ADM"
ok "bulk: carol's 1,200, in pages, as the database has them" "$(ids)" "$(dbseqs "owner = 'carol'")"
ok "bulk: 1,200 schedule.created" "$(datas | jq -r .type | sort | uniq -c | awk '{print $1, $2}')" "1200 schedule.created"
ok "kill -9: Redis has 1..M, each once" "$(rids)" "$(span 1 "$m2")"
ok "kill -9: each entry's seq field is its id" "$(RJ XRANGE "$stream" - + | jq -r 'map(select(.[0] != .[1][1] + "-0")) | length')" 0

# --- schedules deleted: idle (the row goes at once), busy (hidden until
# its run ended) ---------------------------------------------------------------
send POST /schedules "$B" "{\"name\": \"bobslow\", \"at\": \"$(soon 1000)\", \"max_retries\": 0, \"target\": {\"type\": \"exec\", \"argv\": [\"/bin/sleep\", \"2\"]}}"
ok_status "delete: bobslow created" 201
bobslow=$(j .id)
wait_for 10 "SELECT EXISTS (SELECT 1 FROM runs WHERE schedule_id = '$bobslow' AND status = 'running')"
ok "delete: bobslow's run is running" "$?" 0
call DELETE "/schedules/$bobslow" "$B"
ok "delete: bobslow while it runs" "$code" 204
call DELETE "/schedules/$bobfar" "$B"
ok "delete: bobfar, idle" "$code" 204
wait_for 10 "SELECT NOT EXISTS (SELECT 1 FROM schedules WHERE id IN ('$bobslow', '$bobfar'))"
ok "delete: both rows gone (bobslow's once its run ended)" "$?" 0
quiet
ev "?after=$m2&follow=false" "$B"
# dl ID: the schedule.deleted events of schedule ID in resp.
dl() { datas | jq -r --arg s "$1" 'select(.type == "schedule.deleted" and .schedule_id == $s) | [.subject == $s, .data.name, .data.from, .data.status] | map(tostring) | join(",")'; }
ok "delete: bob sees bobslow's schedule.deleted once" "$(dl "$bobslow")" "true,bobslow,active,paused"
ok "delete: hidden, then its run ended" "$(datas | jq -r --arg s "$bobslow" 'select(.schedule_id == $s and (.type == "schedule.deleted" or .type == "run.ended")) | .type' | tr '\n' ' ')" "schedule.deleted run.ended "
ok "delete: bob sees bobfar's schedule.deleted once" "$(dl "$bobfar" | cut -d, -f1-2)" "true,bobfar"
# What retention deletes, by hand: the oldest three.
sql "DELETE FROM events WHERE seq <= 3" >/dev/null
ml=$(last_seq)
ev "?after=0&follow=false" "$ADM"
ok "gap: announced first" "$(printf '%s\n' "$resp" | sed -n '3,4p' | tr '\n' '|')" 'event: gap|data: {"after": 0, "oldest": 4}|'
ok "gap: then 4..M" "$(ids)" "$(span 4 "$ml")"
ev "?after=3&follow=false" "$ADM"
ok "gap: none right before the oldest kept" "$(types | tr ' ' '\n' | grep -c '^gap$')" 0

ok "api.log: no internal error" "$(grep -c 'internal error' "$work/api.log")" 0
api_finish
summary api_events
