#!/bin/sh
# api_load.sh: the API under load and under idle connections, through the
# whole stack of tests/api-harness.sh (nginx with the shipped snippets →
# FastCGI → cronvisor-api with 4 threads → PostgreSQL), issue 17:
#
#   * the socket's listen backlog is the system's net.core.somaxconn;
#   * idle connections: api_threads + 2 raw connections to the FastCGI
#     socket, each sending one byte and then nothing, do not stop the API:
#     GET /health through nginx answers 200 within the read deadline
#     (api_io_timeout_seconds = 2 here) and a margin, and the API closes
#     every one of them;
#   * 1,000 concurrent clients for 3 s against GET /schedules/{id}, then
#     against POST /schedules (tests/helpers/apiload.py): every answer 2xx
#     or 503 with Retry-After in the API's error shape, none 502; each
#     create with its own Idempotency-Key, sent again as cronvisorctl does
#     when its answer was not 201 and replayed for a sample of those that
#     were: one row per key, as many rows as keys created;
#   * the API unreachable (its socket renamed): nginx answers a quick 503
#     with Retry-After in the API's error shape, not a 502.
#
# Correctness only: the machine is shared, so no throughput is asserted
# (bench/README.md has the figures).
# Usage: api_load.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
CV_HARNESS_CONF="api_io_timeout_seconds = 2"
export CV_HARNESS_CONF
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"
load="$here/helpers/apiload.py"
threads=$(sed -n 's/^api_threads = //p' "$CV_CONF")
deadline=2

# --- the listen backlog is the system's -------------------------------------
# ss shows a listening socket's backlog in its Send-Q column.
ok "backlog: net.core.somaxconn" \
	"$(ss -xlnH src "$CV_SOCKET" 2>/dev/null | awk '{print $4; exit}')" \
	"$(cat /proc/sys/net/core/somaxconn)"

# --- a few idle connections do not stop the API ----------------------------
# Each connection sends one byte (not even a FastCGI record header) and
# waits; the helper prints "connected" once all are, then how many the API
# closed within 10 s.
nidle=$((threads + 2))
python3 - "$CV_SOCKET" "$nidle" 10 >"$tmp/idle.out" 2>&1 <<'EOF' &
import socket, sys, time
path, n, hold = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
conns = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.sendall(b"\x01")
    conns.append(s)
print("connected", flush=True)
end = time.monotonic() + hold
closed = 0
for s in conns:
    s.settimeout(max(0.1, end - time.monotonic()))
    try:
        if s.recv(1) == b"":
            closed += 1
    except OSError:
        pass
print("closed", closed, flush=True)
EOF
idle=$!
extra="$extra $idle"
i=0
while [ $i -lt 50 ] && ! grep -q connected "$tmp/idle.out"; do
	sleep 0.1
	i=$((i + 1))
done
ok "idle: $nidle connections made" "$(head -n 1 "$tmp/idle.out")" connected
sleep 0.5 # the workers are blocked in them by now
t0=$(date +%s%N)
hcode=$(curl -s -o /dev/null -w '%{http_code}' --max-time $((deadline + 8)) \
	"$CV_API_URL/health")
took=$((($(date +%s%N) - t0) / 1000000))
ok "idle: GET /health through nginx answers" "$hcode" 200
ok "idle: within the deadline and a margin ($took ms)" \
	"$([ "$took" -le $(((deadline + 3) * 1000)) ] && echo yes)" yes
wait "$idle"
extra=""
ok "idle: the API closed every such connection" \
	"$(sed -n 's/^closed //p' "$tmp/idle.out")" "$nidle"

# --- 1,000 concurrent clients ----------------------------------------------
send POST /schedules "$CV_TOKEN_ALICE_EDITOR" \
	'{"name": "read-me", "kind": "cron", "cron": "0 0 1 1 *", "target": {"type": "exec", "argv": ["/bin/true"]}}'
ok_status "load: the schedule to read" 201
id=$(j .id)

# ok_load NAME FILE: apiload.py's summary FILE shows answers, no bad one
# (so no 502), and no transport error.
ok_load() {
	echo "$1: $(cat "$2")"
	ok "$1: answers" "$(jq '.answers > 0' "$2")" true
	ok "$1: every answer 2xx or 503 with Retry-After" "$(jq -c .bad "$2")" "[]"
	ok "$1: no 502" "$(jq '.by_status["502"] // 0' "$2")" 0
	ok "$1: no transport error" "$(jq .transport_errors "$2")" 0
}

python3 "$load" "$CV_API_URL/schedules/$id" "$CV_TOKEN_ALICE_EDITOR" \
	--clients 1000 --seconds 3 --out "$tmp/get.json"
ok_load "load: GET one schedule, 1000 clients" "$tmp/get.json"

python3 "$load" "$CV_API_URL/schedules" "$CV_TOKEN_BOB_EDITOR" \
	--clients 1000 --seconds 3 --create ld --out "$tmp/post.json"
ok_load "load: POST create, 1000 clients" "$tmp/post.json"
ok "load: every key created in the end" "$(jq -c .not_created "$tmp/post.json")" "[]"
ok "load: replays answer the first schedule" \
	"$(jq -c .replay_mismatch "$tmp/post.json")" "[]"
ok "load: one row per key, as many as keys created" \
	"$(sql "SELECT count(*) || ' ' || count(DISTINCT name) FROM schedules
	        WHERE owner = 'bob' AND name LIKE 'ld-%'")" \
	"$(jq -r '"\(.created) \(.created)"' "$tmp/post.json")"
ok "load: each row carries the key of its name" \
	"$(sql "SELECT count(*) FROM schedules WHERE owner = 'bob'
	        AND name LIKE 'ld-%' AND idempotency_key IS DISTINCT FROM name")" 0

# --- the API unreachable: a quick 503, not a 502 ---------------------------
mv "$CV_SOCKET" "$CV_SOCKET.away"
python3 "$load" "$CV_API_URL/schedules/$id" "$CV_TOKEN_ALICE_EDITOR" \
	--clients 100 --seconds 1 --out "$tmp/away.json"
mv "$CV_SOCKET.away" "$CV_SOCKET"
ok_load "unreachable: GET, 100 clients" "$tmp/away.json"
ok "unreachable: nginx answered 503" "$(jq '.by_status["503"] > 0' "$tmp/away.json")" true
call GET "/schedules/$id" "$CV_TOKEN_ALICE_EDITOR"
ok_status "back: GET answers" 200

api_finish
summary api_load
