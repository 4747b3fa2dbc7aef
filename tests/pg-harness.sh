#!/bin/sh
# pg-harness.sh: a private, throwaway PostgreSQL for the integration tests.
#
#   pg-harness.sh start DIR          initdb a cluster in DIR/pg, start it
#                                    listening on a unix socket in DIR only
#                                    (no TCP, fsync off), create the database
#                                    cronvisor_test, write its conninfo to
#                                    DIR/conninfo
#                                    (its passfile= names DIR/pgpass; the
#                                    socket is 0700, CV_PG_SOCKET_MODE if set)
#   pg-harness.sh stop DIR           stop it at once (-m immediate), remove DIR
#   pg-harness.sh sql DIR DB SQL     run SQL in database DB of that server
#   pg-harness.sh restart DIR [SECS] checkpoint, stop it at once (-m
#                                    immediate, as a crash would), wait SECS
#                                    seconds (default 0), start it again
#
# As root the cluster runs as nobody (initdb refuses root), through setpriv,
# which execs and so leaves no orphan behind.  DIR must be short (the socket
# path is limited to 107 bytes) and reachable by nobody.  start removes what
# an earlier, interrupted run left in DIR first; stop only removes a DIR
# this script made (it holds a marker file).  Every client must give the
# password of postgres (scram-sha-256), which DIR/pgpass holds (0600, the
# caller's), and the socket is 0700, the cluster's user's: no other local
# user, and no run of the supervisor under test, is the superuser.
set -eu

usage() {
	echo "usage: pg-harness.sh start|stop DIR | restart DIR [SECS] | sql DIR DB SQL" >&2
	exit 2
}
[ $# -ge 2 ] || usage
cmd=$1
dir=$2
marker=.cronvisor-pg-harness

# The directory of initdb and pg_ctl: pg_config's, else the newest installed.
pgbin() {
	b=$(pg_config --bindir 2>/dev/null || true)
	if [ -n "$b" ] && [ -x "$b/initdb" ]; then
		echo "$b"
		return
	fi
	b=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	if [ -z "$b" ] || [ ! -x "$b/initdb" ]; then
		echo "pg-harness.sh: no PostgreSQL server found (install postgresql)" >&2
		exit 1
	fi
	echo "$b"
}

bin=$(pgbin)
if [ "$(id -u)" = 0 ]; then
	as="setpriv --reuid=nobody --regid=nogroup --clear-groups --"
else
	as=""
fi

psql_do() { # psql_do DATABASE SQL
	"$bin/psql" -X -q -v ON_ERROR_STOP=1 \
		"host=$dir user=postgres passfile=$dir/pgpass dbname=$1" -c "$2" >/dev/null
}

stop() {
	if [ -f "$dir/pg/postmaster.pid" ]; then
		pid=$(head -n 1 "$dir/pg/postmaster.pid")
		if ! $as "$bin/pg_ctl" -D "$dir/pg" -m immediate -w -t 30 \
			stop >/dev/null 2>&1; then
			kill -9 "$pid" 2>/dev/null || true
		fi
	fi
	if [ -d "$dir" ]; then
		if [ ! -f "$dir/$marker" ]; then
			echo "pg-harness.sh: $dir was not made by pg-harness.sh; left alone" >&2
			exit 1
		fi
		rm -rf "$dir"
	fi
}

fail() {
	echo "pg-harness.sh: $*" >&2
	[ -f "$dir/pg.log" ] && tail -n 20 "$dir/pg.log" >&2
	stop
	exit 1
}

pg_start() {
	$as "$bin/pg_ctl" -D "$dir/pg" -l "$dir/pg.log" -w -t 30 -o \
		"-c listen_addresses='' -k $dir -c unix_socket_permissions=${CV_PG_SOCKET_MODE:-0700} -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
		start >/dev/null 2>&1
}

# The server goes away as in a crash and comes back with its data.  The
# cluster runs with synchronous_commit=off, under which a crash also loses
# the last commits a client was told about (a fault of its own, not a
# restart's): the checkpoint first makes every commit durable.
restart() {
	[ -f "$dir/$marker" ] && [ -d "$dir/pg" ] || {
		echo "pg-harness.sh: $dir: no harness cluster" >&2
		exit 1
	}
	psql_do postgres "CHECKPOINT" ||
		{ echo "pg-harness.sh: checkpoint failed" >&2; exit 1; }
	$as "$bin/pg_ctl" -D "$dir/pg" -m immediate -w -t 30 stop >/dev/null 2>&1 ||
		{ echo "pg-harness.sh: pg_ctl stop failed" >&2; exit 1; }
	sleep "${1:-0}"
	pg_start || { echo "pg-harness.sh: pg_ctl start failed" >&2; exit 1; }
}

start() {
	case $dir in
	/*) ;;
	*) dir=$(pwd)/$dir ;;
	esac
	[ ${#dir} -le 90 ] || { echo "pg-harness.sh: $dir: too long for a socket path" >&2; exit 1; }
	stop
	mkdir -p "$dir"
	: >"$dir/$marker"
	chmod 755 "$dir"
	[ -z "$as" ] || chown nobody:nogroup "$dir"
	pw=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
	(umask 077 && printf '*:*:*:postgres:%s\n' "$pw" >"$dir/pgpass" &&
		printf '%s\n' "$pw" >"$dir/initdb.pw")
	[ -z "$as" ] || chown nobody:nogroup "$dir/initdb.pw"
	$as "$bin/initdb" -D "$dir/pg" -U postgres -A scram-sha-256 \
		--pwfile="$dir/initdb.pw" -E UTF8 \
		--locale=C.UTF-8 --no-sync >"$dir/initdb.log" 2>&1 ||
		fail "initdb failed: $(tail -n 5 "$dir/initdb.log")"
	rm -f "$dir/initdb.pw"
	pg_start || fail "pg_ctl start failed"
	psql_do postgres "CREATE DATABASE cronvisor_test" ||
		fail "cannot create the database"
	echo "host=$dir user=postgres passfile=$dir/pgpass dbname=cronvisor_test" >"$dir/conninfo.tmp"
	mv "$dir/conninfo.tmp" "$dir/conninfo"
	echo "pg-harness.sh: PostgreSQL up in $dir ($(cat "$dir/conninfo"))"
	run_user
}

# As root, the user the tests' supervisors run commands as when a schedule
# names none (run_user_default, cronvisor-run, which the packages make):
# made here once, before any test, and kept.
run_user() {
	. "$(dirname "$0")/../scripts/stack-lib.sh"
	stack_run_user || fail "cannot make the user cronvisor-run"
}

case $cmd in
start) start ;;
stop) stop ;;
restart)
	[ $# -le 3 ] || usage
	restart "${3:-0}"
	;;
sql)
	[ $# -eq 4 ] || usage
	psql_do "$3" "$4"
	;;
*) usage ;;
esac
