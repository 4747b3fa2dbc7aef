#!/bin/sh
# cli_apply.sh: `cronvisorctl apply` and POST /apply (docs/apply.md),
# schedules, agents and pipelines as code, against the real API through
# nginx and the real supervisor: a directory of YAML and JSON files made
# to exist (rows, their set and hash); applied again, nothing is written
# (updated_at, run counts and a hand-made pause kept); a changed file
# replaces the document as a whole (a field it drops goes back to its
# default) and keeps the schedule's id, status and counts; a PATCH by hand
# is undone by the next apply; --dry-run prints the plan and changes
# nothing; --prune deletes what the set no longer names, and only that
# set's; a bad file (any of YAML, $env, keys, sets, field values, and a
# refusal found late, after creates in the same transaction) changes
# nothing and names the file, the document and the field; a hand-made
# schedule of the same name is taken in, two are refused as ambiguous;
# tenants (bob's set of the same name, ?owner=, a viewer, an admin's
# --owner); two applies of one set at once make one of each thing; a
# secret from $env is stored, never shown, and a new value is an update.
# Usage: cli_apply.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"
A=$CV_TOKEN_ALICE_EDITOR
B=$CV_TOKEN_BOB_EDITOR
CRONVISOR_URL=${CV_API_URL%/api/v1}
export CRONVISOR_URL
d=$tmp/conf
mkdir -p "$d"

# cv TOKEN ARGS...: cronvisorctl apply as TOKEN; output in $tmp/out,
# errors in $tmp/err, exit status in rc.
cv() {
	c_t=$1
	shift
	CRONVISOR_TOKEN=$c_t "$CRONVISORCTL" apply "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}
# state: every schedule, agent and pipeline row of alice's, to compare.
state() {
	sql "SELECT (SELECT coalesce(md5(string_agg(s::text, ',' ORDER BY id)), '') FROM schedules s WHERE owner = 'alice')
	     || (SELECT coalesce(md5(string_agg(a::text, ',' ORDER BY agent_id)), '') FROM agents a WHERE owner = 'alice')
	     || (SELECT coalesce(md5(string_agg(p::text, ',' ORDER BY pipeline_id)), '') FROM pipelines p WHERE owner = 'alice')"
}
sched() { sql "SELECT $2 FROM schedules WHERE owner = 'alice' AND name = '$1' AND deleted_at IS NULL"; }

cat >"$d/10-agents.yaml" <<EOF
# the agents first: the pipeline and a schedule use them
set: reports
agents:
  - agent_id: writer
    name: Writer
    endpoint: http://127.0.0.1:9/run
    auth: {type: bearer, token: {\$env: WRITER_TOKEN}}
pipelines:
  - id: digest            # seed 004's spelling
    name: Digest
    steps:
      - {stepId: draft, agentId: writer}
      - {stepId: polish, agentId: writer, dependsOn: [draft]}
EOF
cat >"$d/20-schedules.yaml" <<EOF
schedules:
  - name: nightly-report
    description: no            # YAML 1.2: a string, not false
    cron: "30 2 * * *"
    timezone: Europe/Berlin
    target: &rx {type: http, url: "$CV_STATIC_URL"}
  - name: often
    interval_seconds: 1
    target: *rx
EOF
cat >"$d/30-more.json" <<EOF
{"schedules": [{"name": "weekly", "cron": "0 6 * * 1", "max_retries": 7,
  "description": "from JSON", "target": {"type": "http", "url": "$CV_STATIC_URL"}}]}
EOF
echo 'not read: neither .json nor .yaml' >"$d/README.md"
export WRITER_TOKEN=tok-one

# --- dry run, then the first apply -----------------------------------------
s0=$(state)
cv "$A" -f "$d" --dry-run
ok "dry run: exit 0" "$rc $(cat "$tmp/err")" "0 "
ok "dry run: the plan" "$(grep -c '^create ' "$tmp/out"):$(tail -n 1 "$tmp/out")" \
	"5:dry run, nothing changed: set reports of alice: 5 to create, 0 to update, 0 unchanged, 0 to delete"
ok "dry run: nothing written" "$(state)" "$s0"
cv "$A" -f "$d"
ok "apply: exit 0" "$rc $(cat "$tmp/err")" "0 "
ok "apply: the summary" "$(tail -n 1 "$tmp/out")" \
	"set reports of alice: 5 created, 0 updated, 0 unchanged, 0 deleted"
ok "apply: the things, in the set, with their hashes" \
	"$(sql "SELECT string_agg(x, ' ' ORDER BY x) FROM (
	     SELECT 'a:' || agent_id || ':' || apply_set || ':' || length(config_hash) AS x FROM agents WHERE owner = 'alice'
	     UNION ALL SELECT 'p:' || pipeline_id || ':' || apply_set || ':' || length(config_hash) FROM pipelines WHERE owner = 'alice'
	     UNION ALL SELECT 's:' || name || ':' || apply_set || ':' || length(config_hash) FROM schedules WHERE owner = 'alice') t")" \
	"a:writer:reports:64 p:digest:reports:64 s:nightly-report:reports:64 s:often:reports:64 s:weekly:reports:64"
ok "apply: YAML read as YAML 1.2 (no is a string), JSON as JSON" \
	"$(sched nightly-report "description || '/' || cron || '/' || timezone")|$(sched weekly "description || '/' || max_retries")" \
	"no/30 2 * * */Europe/Berlin|from JSON/7"
ok "apply: the alias is the anchor's target" "$(sched often "target ->> 'url'")" "$CV_STATIC_URL"
ok "apply: the secret from \$env is stored" "$(sql "SELECT auth_secret FROM agents WHERE agent_id = 'writer'")" "tok-one"
call GET /agents/writer "$A"
ok "apply: the API never shows it" "$(j '.auth.secret_set'):$(printf '%s' "$resp" | grep -c tok-one):$(j .apply_set)" "true:0:reports"
call GET "/schedules/$(sched weekly id)" "$A"
ok "GET /schedules/ID shows the set" "$(j .apply_set)" "reports"

# --- again: nothing written, state kept -------------------------------------
wait_for 20 "SELECT run_count >= 2 FROM schedules WHERE name = 'often'"
call POST "/schedules/$(sched weekly id)/pause" "$A"
ok "paused by hand" "$code" 200
rc_often=$(sched often run_count)
# the rows' versions (xmin) of all but often, which runs meanwhile
xmins="SELECT (SELECT string_agg(name || xmin::text, ',' ORDER BY name) FROM schedules WHERE owner = 'alice' AND name <> 'often')
       || (SELECT xmin::text FROM agents WHERE agent_id = 'writer') || (SELECT xmin::text FROM pipelines WHERE pipeline_id = 'digest')"
s1=$(sql "$xmins")
cv "$A" -f "$d"
ok "again: all unchanged" "$rc $(tail -n 1 "$tmp/out")" \
	"0 set reports of alice: 0 created, 0 updated, 5 unchanged, 0 deleted"
ok "again: no row written" "$(sql "$xmins")" "$s1"
ok "again: the pause and the run count kept" \
	"$(sched weekly status):$(test "$(sched often run_count)" -ge "$rc_often" && echo kept)" "paused:kept"
cv "$A" -f "$d"
ok "a third time: still all unchanged (safe from CI again and again)" "$rc $(grep -c '^unchanged ' "$tmp/out")" "0 5"

# --- a changed file ----------------------------------------------------------
id_w=$(sched weekly id)
runs_w=$(sched weekly run_count)
cat >"$d/30-more.json" <<EOF
{"schedules": [{"name": "weekly", "cron": "0 7 * * 1",
  "target": {"type": "http", "url": "$CV_STATIC_URL"}}]}
EOF
cv "$A" -f "$d" --dry-run
ok "changed: the dry run plans one update" "$rc $(grep '^update' "$tmp/out" | tr -s ' ')" \
	"0 update schedule weekly ($id_w)"
ok "changed: the dry run wrote nothing" "$(sched weekly "cron || '/' || max_retries")" "0 6 * * 1/7"
cv "$A" -f "$d"
ok "changed: one update" "$rc $(tail -n 1 "$tmp/out")" \
	"0 set reports of alice: 0 created, 1 updated, 4 unchanged, 0 deleted"
ok "changed: replaced as a whole: the dropped fields take their defaults" \
	"$(sched weekly "cron || '/' || max_retries || '/' || description || '/'")" "0 7 * * 1/3//"
ok "changed: same id, still paused, counts kept" \
	"$(sched weekly "id || '/' || status || '/' || run_count")" "$id_w/paused/$runs_w"

# --- a PATCH by hand is undone by the next apply -----------------------------
send PATCH "/schedules/$id_w" "$A" '{"cron": "0 9 * * 1"}'
ok "PATCH by hand" "$code $(sched weekly "cron || '/' || config_hash")" "200 0 9 * * 1/"
cv "$A" -f "$d"
ok "the next apply restores the file's version" "$rc $(grep '^update' "$tmp/out" | awk '{print $3}'):$(sched weekly cron)" \
	"0 weekly:0 7 * * 1"
send PATCH /agents/writer "$A" '{"timeout_ms": 5000}'
cv "$A" -f "$d"
ok "an agent PATCHed by hand is restored too" "$(grep '^update' "$tmp/out" | awk '{print $2 ":" $3}'):$(sql "SELECT timeout_ms FROM agents WHERE agent_id = 'writer'")" \
	"agent:writer:300000"

# --- a new secret is an update; the old is not shown --------------------------
WRITER_TOKEN=tok-two cv "$A" -f "$d"
ok "a new secret in \$env updates the agent" "$(grep '^update' "$tmp/out" | awk '{print $3}'):$(sql "SELECT auth_secret FROM agents WHERE agent_id = 'writer'")" \
	"writer:tok-two"
ok "no secret in the output" "$(cat "$tmp/out" "$tmp/err" | grep -c tok-)" 0
sed 's/auth: {type: bearer, token: {\$env: WRITER_TOKEN}}/auth: {type: bearer}/' "$d/10-agents.yaml" >"$tmp/nosecret.yaml"
cv "$A" -f "$tmp/nosecret.yaml" -f "$d/20-schedules.yaml" -f "$d/30-more.json"
ok "a file without the secret: the agent keeps the stored one" \
	"$rc $(grep '^update' "$tmp/out" | awk '{print $3}'):$(sql "SELECT auth_secret FROM agents WHERE agent_id = 'writer'")" "0 writer:tok-two"
printf 'set: reports\nagents:\n  - {agent_id: fresh, name: F, endpoint: "http://127.0.0.1:9/", auth: {type: bearer}}\n' >"$tmp/fresh.yaml"
cv "$A" -f "$tmp/fresh.yaml" -f "$d/20-schedules.yaml"
ok "a new agent without its secret: refused at its field" "$rc $(grep -c "fresh.yaml: agents\[0\].auth.token" "$tmp/err")" "1 1"
printf 'set: reports\nschedules:\n  - {name: leak, description: {$env: CRONVISOR_TOKEN}, interval_seconds: 60}\n' >"$tmp/leak.yaml"
cv "$A" -f "$tmp/leak.yaml"
ok "\$env outside a secret: refused, the value never sent or shown" \
	"$rc $(grep -c 'leak.yaml: schedules\[0\].description: \$env stands only for a secret' "$tmp/err"):$(cat "$tmp/out" "$tmp/err" | grep -c -- "$A")" "1 1:0"
printf 'set: reports\nschedules:\n  - {name: hdr, interval_seconds: 3600, target: {type: http, url: "%s", headers: {X-Key: {$env: WRITER_TOKEN}}}}\n' "$CV_STATIC_URL" >"$tmp/hdr.yaml"
cv "$A" -f "$tmp/hdr.yaml" --dry-run
ok "\$env in a header value: taken" "$rc $(grep -c '^create    schedule hdr' "$tmp/out")" "0 1"

# --- prune --------------------------------------------------------------------
export WRITER_TOKEN=tok-two
mv "$d/30-more.json" "$tmp/30-more.json"
cv "$A" -f "$d"
ok "without --prune, a document gone from the files stays" "$rc $(sched weekly count\(\*\))" "0 1"
cv "$A" -f "$d" --prune --dry-run
ok "--prune --dry-run plans the delete" "$(grep '^delete' "$tmp/out" | awk '{print $2 ":" $3}'):$(sched weekly count\(\*\))" "schedule:weekly:1"
# bob's set of the same name, and alice's other set and hand-made ones,
# are not the set's: prune spares them
send POST /schedules "$B" '{"name": "bobs", "interval_seconds": 3600}'
printf 'set: reports\nschedules:\n  - {name: bobs, interval_seconds: 3600}\n' >"$tmp/bob.yaml"
cv "$B" -f "$tmp/bob.yaml"
ok "bob applies a set of the same name" "$rc $(sql "SELECT count(*) FROM schedules WHERE owner = 'bob' AND apply_set = 'reports'")" "0 1"
printf 'set: other\nschedules:\n  - {name: other-one, interval_seconds: 3600}\n' >"$tmp/other.yaml"
cv "$A" -f "$tmp/other.yaml"
send POST /schedules "$A" '{"name": "by-hand", "interval_seconds": 3600}'
cv "$A" -f "$d" --prune
ok "--prune deletes what the set no longer names" "$rc $(grep -c '^delete' "$tmp/out"):$(sched weekly count\(\*\))" "0 1:0"
ok "--prune spares bob's set, alice's other set and hand-made ones" \
	"$(sql "SELECT count(*) FROM schedules WHERE deleted_at IS NULL AND name IN ('bobs', 'other-one', 'by-hand')")" 3
# prune of everything but the agent: the pipeline goes, then the agent
printf 'set: reports\n' >"$tmp/empty.yaml"
cv "$A" -f "$tmp/empty.yaml" --prune --dry-run
ok "files that name nothing: --prune refuses" "$rc $(grep -c -- '--prune would delete the whole set reports; --prune-all means that' "$tmp/err")" "1 1"
cv "$A" -f "$tmp/empty.yaml" --prune-all --dry-run
ok "an empty set with --prune-all plans to delete all of it, schedules first" "$(grep '^delete' "$tmp/out" | awk '{print $2}' | tr '\n' ' ')" \
	"schedule schedule pipeline agent "
mv "$tmp/30-more.json" "$d/30-more.json"

# --- bad files change nothing, and say where -----------------------------------
s2=$(state)
bad() { # NAME WANT-IN-STDERR
	ok "$1: exit 1" "$rc" 1
	ok "$1: the message" "$(grep -c -F -- "$2" "$tmp/err")" 1
	ok "$1: nothing changed" "$(state)" "$s2"
}
cp -r "$d" "$tmp/bad"
cat >"$tmp/bad/20-schedules.yaml" <<EOF
schedules:
  - name: nightly-report
    cron: "30 2 * * *"
  - name: often
    interval_seconds: soon
EOF
cv "$A" -f "$tmp/bad"
bad "a bad field" "$tmp/bad/20-schedules.yaml: schedules[1].interval_seconds: schedule \"often\": expected an integer"
cat >"$tmp/bad/20-schedules.yaml" <<EOF
schedules:
  - {name: nightly-report, cron: "30 2 * * *"}
  - {name: brand-new, interval_seconds: 60}
  - {name: often, interval_seconds: 60, target: {type: http, url: "http://169.254.169.254/"}}
EOF
cv "$A" -f "$tmp/bad"
bad "refused late, after a create and an update in the same apply" \
	"$tmp/bad/20-schedules.yaml: schedules[2].target.url: schedule \"often\": host \"169.254.169.254\" is denied"
ok "refused late: the schedule it would have created is not there" "$(sched brand-new count\(\*\))" 0
printf 'schedules:\n  - name: x\n   interval_seconds: 5\n' >"$tmp/bad/20-schedules.yaml"
cv "$A" -f "$tmp/bad"
bad "not YAML" "$tmp/bad/20-schedules.yaml: line 3, column"
printf 'schedules:\n  - {name: x, name: y, interval_seconds: 5}\n' >"$tmp/bad/20-schedules.yaml"
cv "$A" -f "$tmp/bad"
bad "a key twice" "the key \"name\" appears twice"
printf 'schedule:\n  - {name: x, interval_seconds: 5}\n' >"$tmp/bad/20-schedules.yaml"
cv "$A" -f "$tmp/bad"
bad "an unknown key" "$tmp/bad/20-schedules.yaml: schedule: unknown key"
printf 'set: elsewhere\nschedules: []\n' >"$tmp/bad/20-schedules.yaml"
cv "$A" -f "$tmp/bad"
bad "two sets" "set \"elsewhere\", but $tmp/bad/10-agents.yaml says \"reports\""
rm "$tmp/bad/20-schedules.yaml"
env -u WRITER_TOKEN CRONVISOR_TOKEN="$A" "$CRONVISORCTL" apply -f "$tmp/bad" >"$tmp/out" 2>"$tmp/err"
rc=$?
bad "an unset \$env" "$tmp/bad/10-agents.yaml: agents[0].auth.token: the environment variable WRITER_TOKEN is not set"
printf 'schedules:\n  - {name: a, interval_seconds: 5}\n  - {name: a, interval_seconds: 6}\n' >"$tmp/noset.yaml"
cv "$A" -f "$tmp/noset.yaml"
bad "no set" "name the set: --set NAME"
cv "$A" -f "$tmp/noset.yaml" --set reports
bad "a name twice in the set" "$tmp/noset.yaml: schedules[1].name: schedule \"a\": \"a\" is named twice in the set"
printf 'set: reports\nschedules:\n  - {name: a, interval_seconds: 5, foo: 1}\n' >"$tmp/bad.yaml"
cv "$A" -f "$tmp/bad.yaml"
bad "an unknown field" "$tmp/bad.yaml: schedules[0].foo: schedule \"a\": unknown field"
printf 'a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\n' >"$tmp/laughs.yaml"
cv "$A" -f "$tmp/laughs.yaml"
bad "aliases that expand past the limit" "more than 1,000,000 nodes"
cv "$A" -f "$tmp/none.yaml" --set reports
ok "a missing file: exit 1, named" "$rc $(grep -c "none.yaml" "$tmp/err")" "1 1"

# --- API refusals ---------------------------------------------------------------
body='{"set": "reports", "schedules": [{"name": "z", "interval_seconds": 5}]}'
send POST /apply "$CV_TOKEN_ALICE_VIEWER" "$body"
ok_error "a viewer may not apply" 403 forbidden null
send POST "/apply?owner=alice" "$B" "$body"
ok_error "bob may not apply as alice" 403 forbidden owner
send POST /apply "$A" '{"schedules": []}'
ok_error "no set" 400 missing_field set
send POST /apply "$A" '{"set": "a b", "schedules": []}'
ok_error "a set with a blank" 400 invalid_field set
send POST /apply "$A" '{"set": "x", "prune": "yes"}'
ok_error "prune not a boolean" 400 invalid_field prune
send POST /apply "$A" '{"set": "x", "jobs": []}'
ok_error "an unknown member" 400 unknown_field jobs
send POST /apply "$A" '{"set": "x", "schedules": {}}'
ok_error "schedules not a list" 400 invalid_field schedules
send POST /apply "$A" '{"set": "x", "agents": [{"agent_id": "Bad Id", "name": "n", "endpoint": "http://127.0.0.1:9/"}]}'
ok_error "an agent's bad id" 400 invalid_field "agents[0].agent_id"
ok "nothing changed by the refusals" "$(state)" "$s2"
# an agent of another set is not taken over
printf 'set: other\nagents:\n  - {agent_id: writer, name: W, endpoint: "http://127.0.0.1:9/run"}\n' >"$tmp/steal.yaml"
cv "$A" -f "$tmp/steal.yaml"
bad "an agent of another set" "$tmp/steal.yaml: agents[0].agent_id: agent \"writer\" belongs to the apply set \"reports\""
# an admin applies for alice
cv "$CV_TOKEN_ADMIN" -f "$tmp/other.yaml" --owner alice
ok "an admin applies alice's set with --owner" "$rc $(tail -n 1 "$tmp/out")" \
	"0 set other of alice: 0 created, 0 updated, 1 unchanged, 0 deleted"

# --- a hand-made schedule of the name is taken in; two are ambiguous --------------
id_h=$(sched by-hand id)
printf 'set: other\nschedules:\n  - {name: other-one, interval_seconds: 3600}\n  - {name: by-hand, interval_seconds: 1800}\n' >"$tmp/other.yaml"
cv "$A" -f "$tmp/other.yaml"
ok "a hand-made schedule of the name is taken in, same id" \
	"$rc $(grep by-hand "$tmp/out" | tr -s ' ') $(sched by-hand "apply_set || interval_seconds")" \
	"0 update schedule by-hand ($id_h) other1800"
send POST /schedules "$A" '{"name": "twice", "interval_seconds": 3600}'
send POST /schedules "$A" '{"name": "twice", "interval_seconds": 3600}'
printf 'set: other\nschedules:\n  - {name: twice, interval_seconds: 60}\n' >"$tmp/twice.yaml"
s2=$(state)
cv "$A" -f "$tmp/twice.yaml"
bad "two hand-made schedules of the name" "$tmp/twice.yaml: schedules[0].name: schedule \"twice\": owner alice has several schedules of this name in no apply set"

# --- two applies of one set at once: one of each ----------------------------------
printf 'set: race\nschedules:\n' >"$tmp/race.yaml"
for i in 1 2 3 4 5 6 7 8; do printf '  - {name: race-%s, interval_seconds: 3600}\n' $i >>"$tmp/race.yaml"; done
for i in 1 2 3 4; do
	CRONVISOR_TOKEN=$A "$CRONVISORCTL" apply -f "$tmp/race.yaml" >"$tmp/race.$i" 2>&1 &
	extra="$extra $!"
done
wait
extra=""
ok "four applies at once: all succeed" "$(cat "$tmp"/race.* | grep -c '^set race of alice')" 4
ok "four applies at once: 8 created once, then unchanged" \
	"$(cat "$tmp"/race.* | grep -c '^create '):$(cat "$tmp"/race.* | grep -c '^unchanged ')" "8:24"
ok "four applies at once: one schedule of each name" \
	"$(sql "SELECT count(*) || '/' || count(DISTINCT name) FROM schedules WHERE apply_set = 'race'")" "8/8"

# --- --json ---------------------------------------------------------------------
CRONVISOR_TOKEN=$A "$CRONVISORCTL" apply --json -f "$d" >"$tmp/out" 2>"$tmp/err"
ok "--json: the API's answer" "$(jq -r '[.set, .owner, .dry_run, .counts.create, .counts.unchanged, (.changes | length)] | join(",")' "$tmp/out")" \
	"reports,alice,false,1,4,5"

api_finish
summary cli_apply
