#!/bin/sh
# cli_db.sh: drives "cronvisorctl db migrate" and "cronvisorctl db status"
# against a database of its own on the fixture's PostgreSQL (CTest fixture
# "pg", tests/pg-harness.sh) and checks what they print and how they exit,
# including that a wrong URL fails clearly without echoing its password.
# Usage: cli_db.sh PATH/TO/cronvisorctl PATH/TO/pg-harness.sh CONNINFO-FILE
set -u
ctl=$1
harness=$2
base=$(cat "$3") || exit 1
pgdir=$(dirname "$3")
name=cli_db_$$
url="$base dbname=$name"
. "$(dirname "$0")/itest-lib.sh"

sql() { "$harness" sql "$pgdir" "$1" "$2"; }
# The newest schema version: the number of the last migration in sql/.
v=$(ls "$(dirname "$0")/../sql" | sed -n 's/^0*\([0-9][0-9]*\)_.*\.sql$/\1/p' | sort -n | tail -n 1)

sql postgres "DROP DATABASE IF EXISTS $name" &&
	sql postgres "CREATE DATABASE $name" || exit 1
conf=$(mktemp)
trap 'rm -f "$conf"; sql postgres "DROP DATABASE IF EXISTS $name WITH (FORCE)"' EXIT

check status-fresh 0 "001_init                         pending" -- \
	"$ctl" db status --database "$url"
check migrate 0 "applied 001_init" -- "$ctl" db migrate --database "$url"
check migrate-again 0 "schema is up to date (version $v)" -- \
	"$ctl" db migrate --database "$url"
# sql/functions.sql is the live definition of the SQL functions: every
# migrate applies it, with or without a migration to apply.
sql "$name" "CREATE OR REPLACE FUNCTION cronvisor_time(t timestamptz) RETURNS text
	LANGUAGE sql IMMUTABLE AS \$\$ SELECT 'stale' \$\$" || exit 1
check functions-stale 0 stale -- \
	q "$name" "SELECT cronvisor_time('2026-01-02 03:04:05.678+00')"
check functions-migrate 0 "schema is up to date (version $v)" -- \
	"$ctl" db migrate --database "$url"
check functions-live 0 2026-01-02T03:04:05.678Z -- \
	q "$name" "SELECT cronvisor_time('2026-01-02 03:04:05.678+00')"
check status 0 "001_init                         applied 20" -- \
	"$ctl" db status --database "$url"
check status-sum 0 "schema version $v; this cronvisorctl knows $v; 0 pending" -- \
	"$ctl" db status --database "$url"
printf 'database_url = "%s"\n' "$url" >"$conf"
check from-config 0 "schema is up to date (version $v)" -- \
	"$ctl" db migrate -f "$conf"
check from-env 0 "schema is up to date (version $v)" -- \
	env CRONVISOR_DATABASE_URL="$url" "$ctl" db migrate -f "$conf"
printf 'database_url = "host=/nonexistent"\n' >"$conf"
check env-wins 0 "schema is up to date (version $v)" -- \
	env CRONVISOR_DATABASE_URL="$url" "$ctl" db migrate -f "$conf"
check missing-config 1 "/nonexistent/x.conf" -- \
	"$ctl" db migrate -f /nonexistent/x.conf

# --database shows in ps: a warning says so; --database-file keeps it off
check argv-warns 0 "--database on the command line shows in ps" -- \
	"$ctl" db status --database "$url"
printf '%s\n' "$url" >"$conf"
check from-file 0 "schema is up to date (version $v)" -- \
	"$ctl" db migrate --database-file "$conf"
lacks from-file-quiet "shows in ps"
: >"$conf"
check empty-file 1 "no database URL on its first line" -- \
	"$ctl" db migrate --database-file "$conf"
check missing-file 1 "cannot read the database URL from /nonexistent/u" -- \
	"$ctl" db migrate --database-file /nonexistent/u

# errors: a clear message, exit 1, no password
check bad-socket 1 "cannot connect to the database" -- \
	"$ctl" db migrate --database "postgresql://bob:hunter2pw@/x?host=/nonexistent"
lacks bad-socket-pw hunter2pw
check bad-port 1 "cannot connect to the database" -- \
	"$ctl" db migrate --database "postgresql://bob:hunter2pw@localhost:99x/db"
lacks bad-port-pw hunter2pw
check no-such-db 1 'database "no_such_db" does not exist' -- \
	"$ctl" db status --database "$base dbname=no_such_db"
check bad-password 1 'password authentication failed for user "postgres"' -- \
	"$ctl" db status --database "$base dbname=no_such_db password=hunter2pw"
lacks bad-password-pw hunter2pw
# one version past the newest this build knows
f=$((v + 1))
fname=$(printf '%03d_future' "$f")
sql "$name" "INSERT INTO cronvisor_migrations VALUES ($f, '$fname')"
check newer 1 "database schema version $f is newer than this cronvisor ($v); upgrade cronvisor" -- \
	"$ctl" db migrate --database "$url"
check newer-status 1 "$fname                       applied" -- \
	"$ctl" db status --database "$url"
check bad-sub 2 'unknown db command "frob"' -- "$ctl" db frob
check extra-arg 2 "db migrate takes no arguments" -- \
	"$ctl" db migrate --database "$url" extra
check help 0 "usage: cronvisorctl db migrate" -- "$ctl" db --help

# The harness's PostgreSQL asks for the password (scram), which only the
# caller's pgpass holds, and another local user cannot reach its socket.
check pg-password 2 "password" -- \
	psql "host=$pgdir user=postgres dbname=postgres passfile=/dev/null" -X -c "SELECT 1"
if [ "$(id -u)" = 0 ]; then
	for u in daemon nobody; do
		check "pg-refuses-$u" 2 "" -- setpriv --reuid="$u" --regid="$(id -g "$u")" \
			--clear-groups -- psql "host=$pgdir user=postgres dbname=postgres" -X -c "SELECT 1"
	done
fi

summary cli_db
