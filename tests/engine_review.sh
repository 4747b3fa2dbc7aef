#!/bin/sh
# engine_review.sh: findings of the security review (issue 17, part 5) in
# the supervisor and the runner, with the real cronvisord against the
# fixture's PostgreSQL and tests/helpers/httpd.py as the receiver,
# schedules inserted with SQL (as a row the API would refuse can only be):
#  1. the receiver's event carries its owner and an X-Cronvisor-Signature
#     that the receiver checks (HMAC-SHA256 of "<t>.<body>" with the
#     configured receiver_secret; t near now); the secret is in no log;
#  2. a tenant's http target aimed at the receiver (as written, and in
#     other spellings: localhost, 0x7f000001, dot segments) fails
#     "refused", without retries, and the receiver gets nothing;
#  3. a row whose target, trigger_payload or limits jansson cannot read
#     (1e19 or 1e400 in jsonb) fails with that error, is not retried, and
#     never reaches the receiver (a target that does not read used to be
#     taken for "no target": its event went to receiver_url, succeeded).
# Usage: engine_review.sh CRONVISORD CRONVISORCTL PG-DIR
set -u
set -- "$1" "$2" "$3/conninfo"
prefix=engine_review
. "$(dirname "$0")/harness.sh"
secret='s3cret-of-the-operator'

db_setup || exit 1
serve_http
recv="http://127.0.0.1:$port/recv"
owner_max_running= conf a "receiver_url = \"$recv\"" \
	"receiver_secret = \"$secret\"" "log_level = debug"
start a

# tadd NAME OWNER COLUMNS VALUES: a schedule of OWNER due now; its id.
tadd() {
	sql "INSERT INTO schedules (name, owner, next_run_at, next_slot_at, $3)
	     VALUES ('$1', '$2', now(), now(), $4) RETURNING id"
}
http_target() { printf '{"type":"http","url":"%s"}' "$1"; }

# 1. The receiver's event.
r_ok=$(tadd recv-ok alice "kind, at, workflow_id, trigger_payload" \
	"'once', now(), 'wf-1', '{\"k\": 1}'")
# 2. Tenants' targets at the receiver, in several spellings.
n=0
for u in "$recv" "http://localhost:$port/recv/x" "http://0x7f000001:$port/recv" \
	"http://127.0.0.1:$port/a/../RECV" "http://127.0.0.1:$port/%72ecv"; do
	n=$((n + 1))
	tadd "fake-$n" mallory "kind, at, max_retries, target" \
		"'once', now(), 3, '$(http_target "$u")'" >/dev/null
done
beside=$(tadd beside mallory "kind, at, target" \
	"'once', now(), '$(http_target "http://localhost:$port/ok")'")
# 3. Rows jansson cannot read.
tadd bad-body mallory "kind, at, max_retries, target" \
	"'once', now(), 3, '{\"type\":\"http\",\"url\":\"http://127.0.0.1:$port/ok\",\"body\":{\"x\":1e19}}'" >/dev/null
tadd bad-huge mallory "kind, at, max_retries, target" \
	"'once', now(), 3, '{\"type\":\"http\",\"url\":\"http://127.0.0.1:$port/ok\",\"body\":{\"x\":1e400}}'" >/dev/null
tadd bad-payload mallory "kind, at, max_retries, trigger_payload" \
	"'once', now(), 3, '{\"x\": 1e19}'" >/dev/null
tadd bad-limits mallory "kind, at, max_retries, limits" \
	"'once', now(), 3, '{\"nofile\": 1e19}'" >/dev/null

wait_for 30 "SELECT count(*) = 0 FROM schedules WHERE status = 'active'" ||
	ok "every schedule ended" "$(sql "SELECT string_agg(name || ':' || status, ',') FROM schedules WHERE status = 'active'")" ""
ok "receiver run" "$(sql "SELECT status FROM runs WHERE schedule_id = '$r_ok'")" succeeded
ok "beside the receiver" "$(sql "SELECT status FROM runs WHERE schedule_id = '$beside'")" succeeded
ok "targets at the receiver: refused, once each" \
	"$(sql "SELECT string_agg(DISTINCT s.status || ':' || r.status || ':' || (r.error LIKE 'refused: the URL leads to the receiver%'), ',') || ' ' || count(*) FROM runs r JOIN schedules s ON s.id = r.schedule_id WHERE s.name LIKE 'fake-%'")" \
	"dead:failed:true 5"
ok "unreadable rows: failed once each, with the error" \
	"$(sql "SELECT string_agg(s.name || '=' || s.status || ':' || r.status || ':' || split_part(r.error, ':', 1), ',' ORDER BY s.name) FROM runs r JOIN schedules s ON s.id = r.schedule_id WHERE s.name LIKE 'bad-%'")" \
	"bad-body=dead:failed:target,bad-huge=dead:failed:target,bad-limits=dead:failed:limits,bad-payload=dead:failed:trigger_payload"
ok "unreadable rows: the error says why" \
	"$(sql "SELECT count(*) FROM runs r JOIN schedules s ON s.id = r.schedule_id WHERE s.name LIKE 'bad-%' AND r.error LIKE '%the stored value cannot be read%'")" 4

# What the receiver (and the /ok endpoint) got: only the real event,
# signed, with its owner, and beside's request.
ok "the receiver's requests" "$(python3 - "$work/http.req" "$secret" "$r_ok" <<'PY'
import hashlib, hmac, json, sys, time
reqs = [json.loads(l) for l in open(sys.argv[1])]
out = []
recv = [r for r in reqs if r["path"].lower().startswith("/recv")
        or r["path"].startswith("/%72")]
out.append("recv=%d" % len(recv))
out.append("ok=%d" % len([r for r in reqs if r["path"] == "/ok"]))
for r in recv:
    ev = json.loads(r["body"])
    sig = r["headers"].get("x-cronvisor-signature", "")
    parts = dict(p.split("=", 1) for p in sig.split(",") if "=" in p)
    t = parts.get("t", "0")
    want = hmac.new(sys.argv[2].encode(), (t + "." + r["body"]).encode(),
                    hashlib.sha256).hexdigest()
    out.append("owner=%s id=%s sig=%s fresh=%s" % (
        ev.get("owner"), ev.get("scheduledEventId") == sys.argv[3],
        hmac.compare_digest(want, parts.get("v1", "")),
        abs(time.time() - int(t)) < 60))
print(" ".join(out))
PY
)" "recv=1 ok=1 owner=alice id=True sig=True fresh=True"
ok "the secret is in no log" "$(grep -c "$secret" "$work/a.log")" 0
check "config check masks the secret" 0 'receiver_secret = ***' -- \
	"$ctl" config check -f "$work/a.conf"
lacks "config check shows no secret" "$secret"

summary engine_review
