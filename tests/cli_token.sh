#!/bin/sh
# cli_token.sh: drives "cronvisorctl token create|list|revoke" against a
# database of its own on the fixture's PostgreSQL (CTest fixture "pg",
# tests/pg-harness.sh): create prints the token once, the database holds
# only sha256() of it, list never shows it, revoke stamps it, and bad
# options fail with messages that name them.
# Usage: cli_token.sh PATH/TO/cronvisorctl CONNINFO-FILE
set -u
set -- "" "$1" "$2"
prefix=cli_token
. "$(dirname "$0")/harness.sh"
db_setup || exit 1

# create: the token alone on stdout, the warning on stderr
tok=$("$ctl" token create --owner alice --role editor --note "ci bot" \
	--database "$url" 2>"$work/err")
ok create-rc $? 0
ok create-shape "$(printf '%s' "$tok" | grep -cE '^cvt_[A-Za-z0-9_-]{43}$')" 1
ok create-once "$(grep -c 'only time it is shown' "$work/err")" 1

# the database: sha256 of the token, its prefix, never the token
ok stored-hash "$(sql "SELECT count(*) FROM tokens
	WHERE hash = sha256(convert_to('$tok', 'UTF8'))")" 1
ok stored-row "$(sql "SELECT prefix || ' ' || owner || ' ' || role || ' ' || note
	FROM tokens")" "$(printf '%.12s' "$tok") alice editor ci bot"
ok not-stored "$(sql "SELECT count(*) FROM tokens t
	WHERE position('$tok' IN row_to_json(t)::text) > 0
	   OR position(convert_to('$tok', 'UTF8') IN t.hash) > 0")" 0
ok hash-len "$(sql "SELECT length(hash) FROM tokens")" 32

# two tokens differ; --json; CRONVISOR_DATABASE_URL over the file's
printf 'database_url = "host=/nonexistent"\n' >"$work/empty.conf"
tok2=$(env CRONVISOR_DATABASE_URL="$url" "$ctl" token create --owner bob \
	--role viewer -f "$work/empty.conf" 2>"$work/err")
ok env-url $? 0
ok distinct "$([ "$tok" != "$tok2" ] && [ -n "$tok2" ] && echo yes)" yes
js=$("$ctl" token create --owner root --role admin --json \
	--database "$url" 2>/dev/null)
ok json "$(printf '%s' "$js" | jq -r '[.id, .owner, .role,
	(.token | test("^cvt_[A-Za-z0-9_-]{43}$"))] | join(" ")')" "3 root admin true"
jtok=$(printf '%s' "$js" | jq -r .token)
ok json-hash "$(sql "SELECT owner FROM tokens
	WHERE hash = sha256(convert_to('$jtok', 'UTF8'))")" root
check json-global 0 '"role": "viewer"' -- \
	"$ctl" --json token create --owner x --role viewer --database "$url"

# list: every token, no hash, no token
check list 0 "alice  editor" -- "$ctl" token list --database "$url"
lacks list-no-token "$tok"
lacks list-no-token2 "$tok2"
check list-header 0 "ID  PREFIX        OWNER  ROLE    CREATED" -- \
	"$ctl" token list --database "$url"
ok list-json "$("$ctl" token list --json --database "$url" |
	jq -r '(map(.owner) | join(",")) + " " + (.[0] | keys | join(","))')" \
	"alice,bob,root,x created_at,id,note,owner,prefix,revoked_at,role"

# revoke
check revoke 0 "revoked token 2" -- "$ctl" token revoke 2 --database "$url"
ok revoked "$(sql "SELECT revoked_at IS NOT NULL FROM tokens WHERE id = 2")" t
ok others "$(sql "SELECT count(*) FROM tokens WHERE revoked_at IS NOT NULL")" 1
check revoke-again 0 "token 2 was already revoked at 20" -- \
	"$ctl" token revoke --database "$url" 2
check list-revoked 0 "bob    viewer  20" -- "$ctl" token list --database "$url"
check revoke-unknown 1 "no token 99" -- "$ctl" token revoke 99 --database "$url"
check revoke-bad-id 2 "token revoke ID" -- "$ctl" token revoke x1 --database "$url"
check revoke-no-id 2 "token revoke takes one token id" -- \
	"$ctl" token revoke --database "$url"

# bad options: exit 2, the option named, nothing stored
n=$(sql "SELECT count(*) FROM tokens")
check bad-role 2 '--role: must be admin, editor or viewer, not "root"' -- \
	"$ctl" token create --owner a --role root --database "$url"
check no-role 2 "--role admin|editor|viewer is required" -- \
	"$ctl" token create --owner a --database "$url"
check no-owner 2 "--owner NAME is required" -- \
	"$ctl" token create --role admin --database "$url"
check empty-owner 2 "--owner: must be 1 to 200 characters, not 0" -- \
	"$ctl" token create --owner "" --role admin --database "$url"
long=$(printf '%0201d' 0)
check long-owner 2 "--owner: must be 1 to 200 characters, not 201" -- \
	"$ctl" token create --owner "$long" --role admin --database "$url"
check owner-200 0 "cvt_" -- "$ctl" token create --owner "$(printf '%0200d' 0)" \
	--role viewer --database "$url"
check owner-utf8 0 "cvt_" -- "$ctl" token create --owner "$(printf 'é%.0s' $(seq 200))" \
	--role viewer --database "$url"
ok stored-count "$(sql "SELECT count(*) FROM tokens")" $((n + 2))
check list-owner 2 "token list does not take --owner" -- \
	"$ctl" token list --owner a --database "$url"
check bad-sub 2 'unknown token command "frob"' -- "$ctl" token frob
check help 0 "usage: cronvisorctl token create" -- "$ctl" token create --help
check no-db 1 "cannot connect to the database" -- \
	"$ctl" token create --owner a --role admin --database "host=/nonexistent"

# a database without the tokens table says what to do
db_create "${name}_old" || exit 1
check unmigrated 1 "cronvisorctl db migrate" -- \
	"$ctl" token list --database "$base dbname=${name}_old"

summary cli_token
