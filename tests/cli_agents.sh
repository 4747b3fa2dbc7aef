#!/bin/sh
# cli_agents.sh: drives "cronvisorctl agents …" end to end against the
# whole stack (tests/api-harness.sh: nginx, cronvisor-api, cronvisord on
# the fixture's PostgreSQL): create from flags (secrets from files and
# stdin) and from a file, list as a table and --json, show, update,
# versions, deploy, promote, rollback, deployments, health, delete; the
# usage errors (exit 2), the API's errors (exit 1, its message and
# field), a viewer's 403, an admin's --owner; and "cronvisorctl
# pipelines …" (create from a file and stdin, list, show, update,
# delete).  The requests --dry-run prints are checked without a server.  No secret may show in any output
# or in any log of the stack.
# Usage: cli_agents.sh CRONVISORD CRONVISOR-API CRONVISORCTL CONNINFO-FILE
set -u
ctl=$3
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"
# No supervisor: the agents' health below is written as a prober would
# write it (a live one would probe agents.example.test and record it).
kill -TERM "$CV_SUPERVISOR_PID"
wait_gone 10 "$CV_SUPERVISOR_PID"

SECRET=cli-bearer-5e3a9c1d7b
HSECRET=cli-hmac-2b8f6e4a90
PSECRET=cli-basic-pw-71c0d9
umask 077
printf '%s\n' "$SECRET" >"$tmp/bearer"
printf '  %s  \nsecond line\n' "$HSECRET" >"$tmp/hmac"
printf '{"type": "object", "required": ["tickerId"],
  "properties": {"tickerId": {"type": "string"}}}\n' >"$tmp/schema.json"

# c NAME WANT-EXIT WANT-SUBSTRING -- COMMAND...: itest-lib.sh's check, and
# its output kept for the secret check at the end.
: >"$tmp/outputs"
c() {
	check "$@"
	printf '%s\n' "$out" >>"$tmp/outputs"
}
# col: a table's lines with runs of blanks squeezed, for exact checks.
col() { tr -s ' '; }
# exact NAME WANT: the last check's whole output is WANT (check's own test
# is a substring, and grep -F takes each line of a multi-line one apart).
exact() { ok "$1" "$out" "$2"; }

# --- what the command line builds (no server: no URL, no token) ---
noenv() { env -u CRONVISOR_URL -u CRONVISOR_TOKEN -u CRONVISOR_TOKEN_FILE "$@"; }
c dry-create 0 'POST /api/v1/agents?owner=bob' -- \
	noenv "$ctl" --dry-run agents create --id qs --name "Query strategy" \
	--endpoint https://x.test/qs --description d --timeout-ms 3000 \
	--max-concurrent 4 --bearer-token-file "$tmp/bearer" \
	--health-url https://x.test/h --health-interval 5m \
	--schema-file "$tmp/schema.json" --disabled --owner bob
exact dry-create-exact 'POST /api/v1/agents?owner=bob
{"agent_id":"qs","name":"Query strategy","description":"d","endpoint":"https://x.test/qs","auth":{"type":"bearer","token":"***"},"timeout_ms":3000,"max_concurrent_requests":4,"health":{"url":"https://x.test/h","interval_seconds":300},"input_schema":{"type":"object","required":["tickerId"],"properties":{"tickerId":{"type":"string"}}},"enabled":false}'
lacks dry-create-secret "$SECRET"
c dry-basic 0 '"auth":{"type":"basic","username":"svc","password":"***"}' -- \
	sh -c 'printf "%s\n" "$2" | "$1" --dry-run agents create --id b \
	--name b --endpoint http://b.test/ --basic svc --password-file -' \
	sh "$ctl" "$PSECRET"
lacks dry-basic-secret "$PSECRET"
c dry-hmac 0 '"auth":{"type":"hmac","secret":"***"}' -- \
	noenv "$ctl" agents create --id h --name h --endpoint http://h.test/ \
	--hmac-secret-file "$tmp/hmac" --dry-run
lacks dry-hmac-secret "$HSECRET"
printf '{"agent_id": "f", "name": "f", "endpoint": "http://f.test/",
  "auth": {"type": "bearer", "token": "%s"}}' "$SECRET" >"$tmp/agent.json"
c dry-file 0 'POST /api/v1/agents' -- \
	noenv "$ctl" --dry-run agents create --file "$tmp/agent.json"
exact dry-file-exact 'POST /api/v1/agents
{"agent_id":"f","name":"f","endpoint":"http://f.test/","auth":{"type":"bearer","token":"***"}}'
lacks dry-file-secret "$SECRET"
c dry-deploy 0 'POST /api/v1/agents/qs/deploy' -- \
	noenv "$ctl" --dry-run agents deploy qs 1.2.0 --env production
exact dry-deploy-exact 'POST /api/v1/agents/qs/deploy
{"version":"1.2.0","environment":"production"}'
c dry-promote 0 'POST /api/v1/agents/qs/promote?owner=alice' -- \
	noenv "$ctl" agents promote qs --from staging --to production \
	--owner alice --dry-run
exact dry-promote-exact 'POST /api/v1/agents/qs/promote?owner=alice
{"from":"staging","to":"production"}'
c dry-rollback 0 'POST /api/v1/agents/qs/rollback' -- \
	noenv "$ctl" --dry-run agents rollback qs --env staging
exact dry-rollback-exact 'POST /api/v1/agents/qs/rollback
{"environment":"staging"}'
c dry-version 0 'POST /api/v1/agents/qs/versions' -- \
	noenv "$ctl" --dry-run agents add-version qs --version 1.0.0 \
	--endpoint http://v.test/1 --description first
exact dry-version-exact 'POST /api/v1/agents/qs/versions
{"version":"1.0.0","endpoint":"http://v.test/1","description":"first"}'
c dry-list 0 'GET /api/v1/agents?owner=bob&enabled=false&limit=5' -- \
	noenv "$ctl" --dry-run agents list --enabled false --limit 5 --owner bob
c dry-delete 0 'DELETE /api/v1/agents/qs' -- \
	noenv "$ctl" --dry-run agents delete qs

# --- usage errors: exit 2, naming the problem ---
c no-sub 2 "usage: cronvisorctl agents list|show|create" -- "$ctl" agents
c unknown-sub 2 'unknown agents command "frob"' -- "$ctl" agents frob
c help 0 "Secrets are read from files (- reads stdin; the first line), never" -- \
	"$ctl" agents create --help
c show-no-id 2 "agents show: missing the agent id" -- "$ctl" agents show
c show-two 2 'agents show: unexpected "b"' -- "$ctl" agents show a b
c bad-id 2 '"a/b" is not an id' -- "$ctl" agents show a/b
c deploy-no-env 2 "agents deploy needs --env" -- "$ctl" agents deploy qs 1.0.0
c deploy-no-version 2 "agents deploy: missing the version" -- \
	"$ctl" agents deploy qs --env production
c promote-no-to 2 "agents promote needs --to" -- \
	"$ctl" agents promote qs --from staging
c update-no-file 2 "agents update needs --file" -- "$ctl" agents update qs
c wrong-flag 2 "agents list does not take --env" -- \
	"$ctl" agents list --env production
c bad-enabled 2 '--enabled: "yes" is not true or false' -- \
	"$ctl" agents list --enabled yes
c create-missing 2 "agents create needs --id, --name and --endpoint, or --file" -- \
	"$ctl" agents create --id qs --name q
c file-and-flags 2 "--file and --name: the file is the whole document" -- \
	"$ctl" agents create --file "$tmp/agent.json" --name other
c two-auths 2 "give only one of --bearer-token-file, --basic and --hmac-secret-file" -- \
	"$ctl" agents create --id a --name a --endpoint http://a.test/ \
	--bearer-token-file "$tmp/bearer" --hmac-secret-file "$tmp/hmac"
c basic-no-pw 2 "--basic USER and --password-file PATH go together" -- \
	"$ctl" agents create --id a --name a --endpoint http://a.test/ --basic u
c two-stdins 2 "only one file may be - (stdin)" -- \
	"$ctl" agents create --id a --name a --endpoint http://a.test/ \
	--bearer-token-file - --schema-file -
c interval-no-url 2 "--health-interval needs --health-url" -- \
	"$ctl" agents create --id a --name a --endpoint http://a.test/ \
	--health-interval 60
c bad-timeout 2 '--timeout-ms: "5s" is not a whole number' -- \
	"$ctl" agents create --id a --name a --endpoint http://a.test/ \
	--timeout-ms 5s
c argv-secret 2 "--bearer-token: a secret on the command line shows in ps" -- \
	"$ctl" agents create --id a --name a --endpoint http://a.test/ \
	--bearer-token "$SECRET"
lacks argv-secret-not-echoed "$SECRET"
c argv-password 2 "use --password-file PATH" -- \
	"$ctl" agents create --id a --name a --endpoint http://a.test/ \
	--basic u --password="$PSECRET"
lacks argv-password-not-echoed "$PSECRET"
c no-secret-file 1 "--bearer-token-file $tmp/nope:" -- \
	"$ctl" agents create --id a --name a --endpoint http://a.test/ \
	--bearer-token-file "$tmp/nope"
: >"$tmp/empty"
c empty-secret 1 "no secret on its first line" -- \
	"$ctl" agents create --id a --name a --endpoint http://a.test/ \
	--hmac-secret-file "$tmp/empty"
printf '{"type": ' >"$tmp/bad.json"
c bad-schema 1 "--schema-file $tmp/bad.json: not JSON" -- \
	"$ctl" agents create --id a --name a --endpoint http://a.test/ \
	--schema-file "$tmp/bad.json"

# --- against the stack, as alice's editor ---
export CRONVISOR_URL
CRONVISOR_TOKEN=$CV_TOKEN_ALICE_EDITOR
export CRONVISOR_TOKEN
secret_of() { # AGENT: its stored secret, straight from the database
	sql "SELECT auth_secret FROM agents WHERE owner = 'alice' AND agent_id = '$1'"
}

c create 0 '"type":"bearer","secret_set":true' -- \
	"$ctl" agents create --id query-strategy --name "Query strategy" \
	--endpoint https://agents.example.test/qs --bearer-token-file "$tmp/bearer" \
	--timeout-ms 30000 --max-concurrent 5 \
	--health-url https://agents.example.test/qs/health --health-interval 30 \
	--schema-file "$tmp/schema.json" --description "Refreshes a ticker"
ok create-owner "$(printf '%s\n' "$out" | grep '^owner:' | col)" "owner: alice"
ok create-health "$(printf '%s\n' "$out" | grep '^health:' | col)" \
	'health: {"url":"https://agents.example.test/qs/health","when_unhealthy":"wait","interval_seconds":30}'
lacks create-no-secret "$SECRET"
ok create-stored "$(secret_of query-strategy)" "$SECRET"
ok create-db "$(sql "SELECT timeout_ms || ' ' || max_concurrent_requests || ' ' ||
	health_interval_seconds || ' ' || (input_schema->'required'->>0)
	FROM agents WHERE agent_id = 'query-strategy'")" "30000 5 30 tickerId"
printf '{"agent_id": "signer", "name": "Signer", "endpoint": "http://127.0.0.1:9/s",
  "auth": {"type": "hmac", "secret": "%s"}}' "$HSECRET" >"$tmp/signer.json"
c create-file 0 '{"type":"hmac","secret_set":true}' -- \
	"$ctl" agents create --file "$tmp/signer.json"
lacks create-file-no-secret "$HSECRET"
ok create-file-stored "$(secret_of signer)" "$HSECRET"
c create-stdin-secret 0 '{"type":"basic","username":"svc","secret_set":true}' -- \
	sh -c 'printf "%s\n" "$2" | "$1" agents create --id basic-one --name B \
	--endpoint http://b.test/ --basic svc --password-file - --disabled' \
	sh "$ctl" "$PSECRET"
lacks create-stdin-no-secret "$PSECRET"
ok create-stdin-stored "$(secret_of basic-one)" "$PSECRET"
ok create-json "$(printf '{"agent_id": "plain", "name": "P", "endpoint": "http://p.test/"}' |
	"$ctl" agents create --file - --json | jq -r '.agent_id + " " + .auth.type')" \
	"plain none"

# the API's errors: its message and field, exit 1
c duplicate 1 'cronvisorctl: this owner has an agent "signer" already (field: agent_id)' -- \
	"$ctl" agents create --file "$tmp/signer.json"
lacks duplicate-no-secret "$HSECRET"
c bad-endpoint 1 "cronvisorctl: expected an http or https URL (field: endpoint)" -- \
	"$ctl" agents create --id e --name e --endpoint ftp://e.test/
c not-found 1 "cronvisorctl: no such agent" -- "$ctl" agents show nope

# list: the table and the JSON
c list 0 "AGENT" -- "$ctl" agents list
ok list-header "$(printf '%s\n' "$out" | head -n 1 | col)" \
	"AGENT OWNER NAME ENDPOINT AUTH ENABLED HEALTHY DEPLOYED"
ok list-row "$(printf '%s\n' "$out" | grep '^query-strategy ' | col)" \
	"query-strategy alice Query strategy https://agents.example.test/qs bearer yes - -"
ok list-disabled "$(printf '%s\n' "$out" | grep '^basic-one ' | col)" \
	"basic-one alice B http://b.test/ basic no - -"
lacks list-no-secret "$SECRET"
ok list-json "$("$ctl" agents list --json | jq -r '[.agents[].agent_id] | join(",")')" \
	"basic-one,plain,query-strategy,signer"
ok list-enabled "$("$ctl" agents list --enabled false --json |
	jq -r '[.agents[].agent_id] | join(",")')" "basic-one"
c list-more 0 "more agents follow: --all lists them all" -- \
	"$ctl" agents list --limit 1
ok list-all "$("$ctl" agents list --limit 1 --all --json | jq -r '.agents | length')" 4

# show
c show 0 "name:                    Query strategy" -- "$ctl" agents show query-strategy
ok show-auth "$(printf '%s\n' "$out" | grep '^auth:' | col)" \
	'auth: {"type":"bearer","secret_set":true}'
ok show-schema "$(printf '%s\n' "$out" | grep '^input_schema:' | col)" \
	'input_schema: {"type":"object","required":["tickerId"],"properties":{"tickerId":{"type":"string"}}}'
lacks show-no-secret "$SECRET"
c show-json 0 '"secret_set": true' -- "$ctl" agents show query-strategy --json
ok show-json-auth "$(printf '%s\n' "$out" | jq -c .auth)" \
	'{"type":"bearer","secret_set":true}'
lacks show-json-no-secret "$SECRET"

# update: a JSON patch; an auth of the same type without its secret keeps it
printf '{"description": "refreshes the entity graph", "enabled": false,
  "auth": {"type": "bearer"}}' >"$tmp/patch.json"
c update 0 "description:             refreshes the entity graph" -- \
	"$ctl" agents update query-strategy --file "$tmp/patch.json"
ok update-enabled "$(printf '%s\n' "$out" | grep '^enabled:' | col)" "enabled: false"
ok update-secret-kept "$(secret_of query-strategy)" "$SECRET"
c update-stdin 0 "enabled:                 true" -- \
	sh -c 'echo "{\"enabled\": true}" | "$1" agents update query-strategy --file -' \
	sh "$ctl"
c update-bad 1 "(field: timeout_ms)" -- \
	sh -c 'echo "{\"timeout_ms\": -5}" | "$1" agents update query-strategy --file -' \
	sh "$ctl"

# versions
c add-version 0 "version:      1.0.0" -- \
	"$ctl" agents add-version query-strategy --version 1.0.0 \
	--endpoint https://agents.example.test/qs/v1.0.0
ok add-version-envs "$(printf '%s\n' "$out" | grep '^environments:' | col)" "environments: -"
c add-version-2 0 "description:  faster graph walk" -- \
	"$ctl" agents add-version query-strategy --version 1.1.0 \
	--endpoint https://agents.example.test/qs/v1.1.0 \
	--schema-file "$tmp/schema.json" --description "faster graph walk"
c add-version-again 1 "cronvisorctl: version 1.0.0 exists; versions cannot change (field: version)" -- \
	"$ctl" agents add-version query-strategy --version 1.0.0 \
	--endpoint https://agents.example.test/qs/other
c add-version-bad 1 "(field: version)" -- \
	"$ctl" agents add-version query-strategy --version 1.0 \
	--endpoint https://agents.example.test/qs/other

# deploy, promote, rollback: the deployments they leave
c deploy 0 "production  1.0.0  alice (token " -- \
	"$ctl" agents deploy query-strategy 1.0.0 --env production
c deploy-staging 0 "staging     1.1.0  alice (token " -- \
	"$ctl" agents deploy query-strategy 1.1.0 --env staging
ok deploy-lines "$(printf '%s\n' "$out" | awk '{print $1, $2}')" \
	"$(printf 'production 1.0.0\nstaging 1.1.0')"
ok deploy-when "$(printf '%s\n' "$out" | awk '{print ($NF ~ /^20[0-9-]+T[0-9:.]+Z$/)}' | sort -u)" 1
c promote 0 "production  1.1.0  alice (token " -- \
	"$ctl" agents promote query-strategy --from staging --to production
c rollback 0 "production  1.0.0  alice (token " -- \
	"$ctl" agents rollback query-strategy --env production
c rollback-again 1 "cronvisorctl: query-strategy has no earlier version to go back to in production (field: environment)" -- \
	"$ctl" agents rollback query-strategy --env production
c deploy-missing 1 "cronvisorctl: agent query-strategy has no version 9.9.9 (field: version)" -- \
	"$ctl" agents deploy query-strategy 9.9.9 --env production
c deploy-bad-env 1 "(field: environment)" -- \
	"$ctl" agents deploy query-strategy 1.0.0 --env prod
c promote-nothing 1 "(field: from)" -- \
	"$ctl" agents promote query-strategy --from development --to staging
ok deploy-json "$("$ctl" agents deploy query-strategy 1.1.0 --env development --json |
	jq -r '.deployments.development.version')" 1.1.0

# deployments: the lines, then the log, newest first
c deployments 0 "ENVIRONMENT" -- "$ctl" agents deployments query-strategy
ok deployments-lines "$(printf '%s\n' "$out" | sed '/^$/q' | awk 'NF {print $1, $2}')" \
	"$(printf 'production 1.0.0\nstaging 1.1.0\ndevelopment 1.1.0')"
ok deployments-header "$(printf '%s\n' "$out" | grep '^AT ' | col)" \
	"AT ENVIRONMENT ACTION VERSION PREVIOUS BY"
ok deployments-log "$(printf '%s\n' "$out" | sed '1,/^AT /d' | awk '{print $2 "/" $3 "/" $4 "/" $5}' | tr '\n' ' ')" \
	"development/deploy/1.1.0/- production/rollback/1.0.0/1.1.0 production/promote/1.1.0/1.0.0 staging/deploy/1.1.0/- production/deploy/1.0.0/- "
ok deployments-json "$("$ctl" agents deployments query-strategy --json | jq -r '.history | length')" 5
c list-deployed 0 "query-strategy" -- "$ctl" agents list
ok list-deployed-col "$(printf '%s\n' "$out" | grep '^query-strategy ' | awk '{print $(NF-2), $(NF-1), $NF}')" \
	"production=1.0.0 staging=1.1.0 development=1.1.0"

# versions: newest first, with where each runs
c versions 0 "VERSION" -- "$ctl" agents versions query-strategy
ok versions-header "$(printf '%s\n' "$out" | head -n 1 | col)" \
	"VERSION ENDPOINT ENVIRONMENTS CREATED"
ok versions-rows "$(printf '%s\n' "$out" | sed 1d | awk '{print $1, $2, $3}')" \
	"$(printf '1.1.0 https://agents.example.test/qs/v1.1.0 development,staging\n1.0.0 https://agents.example.test/qs/v1.0.0 production')"
ok versions-json "$("$ctl" agents versions query-strategy --json | jq -r '.versions | length')" 2

# health: nothing probed yet, then two probes written as the prober would
c health 0 "no probe yet" -- "$ctl" agents health query-strategy
ok health-url "$(printf '%s\n' "$out" | grep '^url:' | col)" \
	"url: https://agents.example.test/qs/health"
ok health-none "$(printf '%s\n' "$out" | grep '^healthy:' | col)" "healthy: -"
sql "INSERT INTO agent_health (owner, agent_id, checked_at, ok, http_status, latency_ms, error)
	VALUES ('alice', 'query-strategy', '2026-01-02 03:04:05+00', true, 200, 12, NULL),
	       ('alice', 'query-strategy', '2026-01-02 03:05:05+00', false, 503, 40, 'HTTP 503');
	UPDATE agents SET healthy = false, health_error = 'HTTP 503',
	       health_checked_at = '2026-01-02 03:05:05+00'
	WHERE owner = 'alice' AND agent_id = 'query-strategy'" >/dev/null
c health-probed 0 "CHECKED" -- "$ctl" agents health query-strategy
ok health-state "$(printf '%s\n' "$out" | grep -e '^healthy:' -e '^error:' -e '^checked_at:' | col)" \
	"$(printf 'healthy: no\nerror: HTTP 503\nchecked_at: 2026-01-02T03:05:05Z')"
ok health-probes "$(printf '%s\n' "$out" | sed '1,/^CHECKED/d' | col)" \
	"$(printf '2026-01-02T03:05:05Z no 503 40ms HTTP 503\n2026-01-02T03:04:05Z yes 200 12ms -')"
ok health-json "$("$ctl" agents health query-strategy --json | jq -r '.probes | length')" 2
c list-unhealthy 0 "query-strategy" -- "$ctl" agents list
ok list-unhealthy-col "$(printf '%s\n' "$out" | grep '^query-strategy ' | col | cut -d' ' -f7-8)" \
	"yes no"

# a viewer reads, and gets the API's 403 when it writes
c viewer-list 0 "query-strategy" -- \
	env CRONVISOR_TOKEN="$CV_TOKEN_ALICE_VIEWER" "$ctl" agents list
c viewer-deploy 1 "cronvisorctl: a viewer token may read agents, not change them" -- \
	env CRONVISOR_TOKEN="$CV_TOKEN_ALICE_VIEWER" "$ctl" agents deploy \
	query-strategy 1.0.0 --env staging
c viewer-create 1 "cronvisorctl: a token of role viewer may not do this" -- \
	env CRONVISOR_TOKEN="$CV_TOKEN_ALICE_VIEWER" "$ctl" agents create \
	--id v --name v --endpoint http://v.test/
c viewer-delete 1 "cronvisorctl: a viewer token may read agents, not change them" -- \
	env CRONVISOR_TOKEN="$CV_TOKEN_ALICE_VIEWER" "$ctl" agents delete signer

# --owner: an admin's, refused to anyone else; other tenants see nothing
printf '%s\n' "$CV_TOKEN_ADMIN" >"$tmp/admin.token"
adm() { env -u CRONVISOR_TOKEN CRONVISOR_TOKEN_FILE="$tmp/admin.token" "$@"; }
ok owner-list "$(adm "$ctl" agents list --owner alice --json | jq -r '[.agents[].agent_id] | join(",")')" \
	"basic-one,plain,query-strategy,signer"
c owner-create 0 "owner:                   bob" -- \
	adm "$ctl" agents create --id bobs --name Bob --endpoint http://bob.test/ \
	--owner bob
c owner-show 0 "name:                    Query strategy" -- \
	adm "$ctl" agents show query-strategy --owner alice
c owner-deploy 0 "admin (token " -- \
	adm "$ctl" agents deploy query-strategy 1.0.0 --env staging --owner alice
ok owner-deploy-line "$(printf '%s\n' "$out" | grep '^staging ' | col | cut -d' ' -f1-3)" \
	"staging 1.0.0 admin"
c owner-all 0 "bobs" -- adm "$ctl" agents list
ok owner-all-owners "$(printf '%s\n' "$out" | sed 1d | awk '{print $2}' | sort -u | tr '\n' ' ')" "alice bob "
c owner-editor 1 "cronvisorctl: only an admin may name another owner (field: owner)" -- \
	"$ctl" agents list --owner bob
c owner-other 1 "cronvisorctl: no such agent" -- \
	env CRONVISOR_TOKEN="$CV_TOKEN_BOB_EDITOR" "$ctl" agents show query-strategy

# delete
c delete 0 "deleted agent signer" -- "$ctl" agents delete signer
c deleted 1 "cronvisorctl: no such agent" -- "$ctl" agents show signer
ok delete-json "$("$ctl" agents delete plain --json | jq -r .deleted)" plain
c delete-again 1 "cronvisorctl: no such agent" -- "$ctl" agents delete plain
ok delete-left "$("$ctl" agents list --json | jq -r '[.agents[].agent_id] | join(",")')" \
	"basic-one,query-strategy"

# pipelines (cronvisorctl pipelines …, docs/orchestration.md)
printf '{"id": "chain", "name": "Chain", "steps": [
  {"stepId": "one", "agentId": "query-strategy", "timeout": 5000},
  {"stepId": "two", "agentId": "basic-one", "dependsOn": ["one"], "runWhen": "done"}]}\n' >"$tmp/pipe.json"
c pipe-create 0 "chain" -- "$ctl" pipelines create --file "$tmp/pipe.json"
ok pipe-create-steps "$(printf '%s\n' "$out" | grep '^two ' | col)" "two basic-one one done yes -"
c pipe-create-stdin 0 "solo" -- sh -c "printf '%s' '{\"pipeline_id\": \"solo\", \"name\": \"Solo\", \"steps\": [{\"step_id\": \"s\", \"agent_id\": \"query-strategy\"}]}' | \"$ctl\" pipelines create --file -"
c pipe-list 0 "chain" -- "$ctl" pipelines list
ok pipe-list-rows "$(printf '%s\n' "$out" | sed 1d | awk '{print $1 "/" $4}' | tr '\n' ' ')" "chain/2 solo/1 "
ok pipe-list-agent "$("$ctl" pipelines list --agent basic-one --json | jq -r '[.pipelines[].pipeline_id] | join(",")')" chain
c pipe-show 0 "RUN WHEN" -- "$ctl" pipelines show chain
ok pipe-show-fail-fast "$(printf '%s\n' "$out" | grep '^fail_fast:' | col)" "fail_fast: false"
printf '{"steps": [{"step_id": "a", "agent_id": "query-strategy", "depends_on": ["b"]},
  {"step_id": "b", "agent_id": "query-strategy", "depends_on": ["a"]}]}\n' >"$tmp/cycle.json"
c pipe-cycle 1 "a cycle: a depends on b depends on a (field: steps[0].depends_on)" -- \
	"$ctl" pipelines update chain --file "$tmp/cycle.json"
printf '{"description": "two steps"}\n' >"$tmp/desc.json"
c pipe-update 0 "two steps" -- "$ctl" pipelines update chain --file "$tmp/desc.json"
c pipe-needs-file 2 "pipelines create needs --file" -- "$ctl" pipelines create
c pipe-bad-enabled 2 "is not true or false" -- "$ctl" pipelines list --enabled maybe
c pipe-in-use 1 "pipeline(s) use this agent" -- "$ctl" agents delete basic-one
c pipe-other 1 "cronvisorctl: no such pipeline" -- \
	env CRONVISOR_TOKEN="$CV_TOKEN_BOB_EDITOR" "$ctl" pipelines show chain
c pipe-viewer 1 "may read pipelines, not change them" -- \
	env CRONVISOR_TOKEN="$CV_TOKEN_ALICE_VIEWER" "$ctl" pipelines delete chain
c pipe-admin 0 "STEP" -- adm "$ctl" pipelines show chain --owner alice
ok pipe-admin-owner "$(printf '%s\n' "$out" | grep '^owner:' | col)" "owner: alice"
c pipe-delete 0 "deleted pipeline chain" -- "$ctl" pipelines delete chain
ok pipe-delete-json "$("$ctl" pipelines delete solo --json | jq -r .deleted)" solo
c pipe-gone 1 "cronvisorctl: no such pipeline" -- "$ctl" pipelines show chain

# transport errors
c no-server 1 "cannot reach the API at http://127.0.0.1:1/api/v1/agents:" -- \
	"$ctl" agents list --url http://127.0.0.1:1
c no-token 1 "no API token" -- env CRONVISOR_TOKEN= "$ctl" agents list

# no secret in any output, nor in any log of the stack
ok outputs-no-secret "$(grep -c -e "$SECRET" -e "$HSECRET" -e "$PSECRET" "$tmp/outputs")" 0
ok logs-no-secret "$(cat "$work"/*.log | grep -c -e "$SECRET" -e "$HSECRET" -e "$PSECRET")" 0

api_finish
summary cli_agents
