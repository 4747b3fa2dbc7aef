#!/bin/sh
# api-harness.sh: the whole local stack of the REST API, in one directory,
# for the API's integration tests and benchmarks:
#
#   nginx (loopback port) ── packaging/nginx/cronvisor*.conf ── FastCGI ──▶
#   cronvisor-api (unix socket DIR/api.sock) ──▶ PostgreSQL (the CTest
#   fixture's server, a database of this run's own) ◀── cronvisord
#   (heartbeat 1 s, lease 3 s) ── receiver POSTs ──▶ nginx /receiver (200)
#
#   api-harness.sh start DIR [CONNINFO-FILE]
#   api-harness.sh stop DIR
#
# CONNINFO-FILE is the fixture's (tests/pg-harness.sh writes DIR/conninfo);
# without the argument it comes from $CV_PG_CONNINFO.  $CV_HARNESS_CONF, if
# set, is more "key = value" lines for the daemons' configuration (a
# test's own settings, such as api_io_timeout_seconds); $CV_HARNESS_LEASE,
# if set, the supervisor's lease_seconds instead of 3.  The programs come
# from $CRONVISORD, $CRONVISOR_API and $CRONVISORCTL, else from the build
# directory $CV_BUILD_DIR.  DIR must be short (a unix socket lives in it)
# and is made by start; start refuses a DIR that exists.
#
# start creates the database cv_api_<random>, migrates it, starts the three
# processes (each pid in DIR/*.pid), makes the tokens (admin for "admin",
# editor and viewer for "alice" and "bob"), waits until GET /api/v1/health
# answers 200, and writes DIR/env: shell assignments to source (see the end
# of start).  Logs: DIR/api.log, DIR/cvd.log, DIR/nginx.log,
# DIR/receiver.log (one line per POST the receiver got).  Every wait is
# bounded; on any failure start stops what it started and exits 1.
#
# stop kills exactly the processes start started (by their pid files, and
# only if the pid is still that program running on DIR), drops the
# database, removes DIR.  It works after a partial start and twice.
set -u

usage() {
	echo "usage: api-harness.sh start DIR [CONNINFO-FILE] | stop DIR | finish DIR" >&2
	exit 2
}
[ $# -ge 2 ] || usage
cmd=$1
dir=$2
case $dir in
/*) ;;
*) dir=$(pwd)/$dir ;;
esac
marker=.cronvisor-api-harness
src=$(cd "$(dirname "$0")/.." && pwd)
# stack_*: the pieces this harness shares with scripts/dev-up.
. "$src/scripts/stack-lib.sh"

say() { echo "api-harness.sh: $*" >&2; }

# alive PIDFILE WORD: the pid in PIDFILE if that process runs and its
# command line mentions WORD (DIR), so a recycled pid is never signalled.
alive() { stack_pid "$1" "$2"; }

# kill_wait PID: SIGTERM, up to 5 s, then SIGKILL and up to 2 s more.
kill_wait() { stack_kill_wait "$1" say; }

# stop_proc NAME: stops the process of DIR/NAME.pid, removes the file.
stop_proc() { stack_stop "$dir/$1.pid" "$dir" "" say >/dev/null || true; }

stop() {
	[ -d "$dir" ] || return 0
	if [ ! -f "$dir/$marker" ]; then
		say "$dir was not made by api-harness.sh; left alone"
		return 1
	fi
	stop_proc nginx
	stop_proc api
	stop_proc cvd
	if [ -s "$dir/base" ] && [ -s "$dir/dbname" ]; then
		psql "$(cat "$dir/base") dbname=postgres" -X -qAt -v ON_ERROR_STOP=1 \
			-c "DROP DATABASE IF EXISTS $(cat "$dir/dbname") WITH (FORCE)" \
			>/dev/null 2>&1 || say "could not drop database $(cat "$dir/dbname")"
	fi
	rm -rf "$dir"
}

# finish: stops cronvisor-api and cronvisord with SIGTERM (so that a
# sanitizer build writes its leak report on the way out) and prints every
# sanitizer report line of their logs; nothing when they are clean.
finish() {
	stop_proc api
	stop_proc cvd
	grep -h -e 'ERROR: AddressSanitizer' -e 'ERROR: LeakSanitizer' \
		-e 'runtime error:' "$dir/api.log" "$dir/cvd.log" 2>/dev/null
	return 0
}

fail() {
	say "$*"
	for f in "$dir"/*.log; do
		[ -s "$f" ] || continue
		echo "--- $f" >&2
		tail -n 15 "$f" >&2
	done
	stop
	exit 1
}

# poll SECONDS COMMAND...: runs COMMAND every 0.1 s until it succeeds;
# 1 if it never did.
poll() { stack_poll "$@"; }

# api_listening: the API's socket is there, or the API is gone (poll stops).
api_listening() {
	[ -S "$dir/api.sock" ] || ! alive "$dir/api.pid" "$dir" >/dev/null
}
http_code_is() { stack_http_code_is "$@"; } # http_code_is WANT URL

supervisor_alive() { # supervisor_alive HEALTH-URL
	curl -sf --max-time 2 "$1" |
		jq -e '.supervisors | any(.name == "api-harness" and .alive)'
}

# free_port: a loopback TCP port nobody listens on right now.
free_port() { stack_free_port; }

# token OWNER ROLE: a new token, made as an operator makes one.
token() {
	t=$("$ctl" token create --owner "$1" --role "$2" --database "$url" \
		2>>"$dir/ctl.log") && [ -n "$t" ] || return 1
	echo "$t"
}

# The daemons read CRONVISOR_* variables as configuration that overrides
# their file: the caller's (a sourced env of another harness) must not leak.
clean_env() { stack_clean_env; }

write_conf() {
	stack_write_conf "$dir/cronvisor.conf" "$url" "$port" "$dir/api.sock" \
		api-harness "log_level = info
heartbeat_seconds = 1
lease_seconds = ${CV_HARNESS_LEASE:-3}
shutdown_grace_seconds = 5
kill_grace_seconds = 1
default_timeout_seconds = 900${CV_HARNESS_CONF:+
$CV_HARNESS_CONF}"
}

# nginx, as the current user, with the shipped snippet, the stand-in
# receiver (DIR/receiver.log) and DIR/static.json (bench/api.sh's yardstick).
write_nginx() {
	stack_write_nginx "$dir" "$port" "$dir/api.sock" "$dir/nginx.pid" \
		"$dir/nginx.log" "$dir/receiver.log" "$src" 2>>"$dir/nginx.log" ||
		fail "cannot write nginx's configuration: $(tail -n 1 "$dir/nginx.log")"
}

start() {
	[ $# -le 1 ] || usage
	cfile=${1:-${CV_PG_CONNINFO:-}}
	[ -n "$cfile" ] && [ -r "$cfile" ] ||
		{ say "no conninfo file (argument or \$CV_PG_CONNINFO)"; exit 1; }
	b=${CV_BUILD_DIR:-}
	cvd=${CRONVISORD:-$b/cronvisord}
	api=${CRONVISOR_API:-$b/cronvisor-api}
	ctl=${CRONVISORCTL:-$b/cronvisorctl}
	for p in "$cvd" "$api" "$ctl"; do
		[ -x "$p" ] || { say "$p: not an executable"; exit 1; }
	done
	[ ${#dir} -le 80 ] || { say "$dir: too long for a socket path"; exit 1; }
	[ ! -e "$dir" ] || { say "$dir exists"; exit 1; }
	mkdir -p "$dir" && : >"$dir/$marker" || exit 1
	clean_env

	base=$(cat "$cfile")
	db=cv_api_$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
	url="$base dbname=$db"
	# Recorded before the database exists: stop drops it whatever happens.
	echo "$base" >"$dir/base"
	echo "$db" >"$dir/dbname"
	psql "$base dbname=postgres" -X -qAt -v ON_ERROR_STOP=1 \
		-c "CREATE DATABASE $db" >/dev/null 2>"$dir/psql.log" ||
		fail "cannot create database $db"
	"$ctl" db migrate --database "$url" >"$dir/ctl.log" 2>&1 ||
		fail "cronvisorctl db migrate failed"

	port=$(free_port) || fail "no free port"
	write_conf
	"$api" -f "$dir/cronvisor.conf" </dev/null >>"$dir/api.log" 2>&1 &
	echo $! >"$dir/api.pid"
	# until it has exec'd: before, its command line is still this shell's,
	# which alive() would read as a process that exited (a busy machine)
	stack_exec_wait "$dir/api.pid" "$dir/cronvisor.conf" cronvisor-api \
		>/dev/null || fail "cronvisor-api exited or did not start in 10 s"
	poll 10 api_listening || fail "cronvisor-api made no socket in 10 s"
	alive "$dir/api.pid" "$dir" >/dev/null || fail "cronvisor-api exited"

	# A port free a moment ago may be taken by now: a few tries.
	tries=0
	while :; do
		write_nginx
		write_conf
		nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/nginx.log" \
			</dev/null >>"$dir/nginx.log" 2>&1 &
		ngx=$!
		# With daemon off the master is this pid; nginx rewrites the file
		# with the same number once it runs.
		echo "$ngx" >"$dir/nginx.pid"
		if poll 10 http_code_is 200 "http://127.0.0.1:$port/static.json"; then
			break
		fi
		kill_wait "$ngx"
		tries=$((tries + 1))
		grep -q 'Address already in use' "$dir/nginx.log" && [ $tries -lt 5 ] ||
			fail "nginx did not serve in 10 s"
		port=$(free_port) || fail "no free port"
	done
	# The supervisor last: its receiver_url needs nginx's port.
	"$cvd" -f "$dir/cronvisor.conf" </dev/null >>"$dir/cvd.log" 2>&1 &
	echo $! >"$dir/cvd.pid"

	admin=$(token admin admin) || fail "cannot make the admin token"
	ae=$(token alice editor) || fail "cannot make a token"
	av=$(token alice viewer) || fail "cannot make a token"
	be=$(token bob editor) || fail "cannot make a token"
	bv=$(token bob viewer) || fail "cannot make a token"

	poll 15 http_code_is 200 "http://127.0.0.1:$port/api/v1/health" ||
		fail "GET /api/v1/health did not answer 200 in 15 s"
	poll 10 supervisor_alive "http://127.0.0.1:$port/api/v1/health" ||
		fail "GET /api/v1/health does not show the supervisor alive in 10 s"
	alive "$dir/api.pid" "$dir" >/dev/null || fail "cronvisor-api died"
	alive "$dir/cvd.pid" "$dir" >/dev/null || fail "cronvisord died"

	cat >"$dir/env.tmp" <<EOF
CRONVISOR_URL='http://127.0.0.1:$port'
CRONVISOR_TOKEN='$admin'
CRONVISOR_DATABASE_URL='$url'
CV_API_URL='http://127.0.0.1:$port/api/v1'
CV_STATIC_URL='http://127.0.0.1:$port/static.json'
CV_RECEIVER_URL='http://127.0.0.1:$port/receiver'
CV_RECEIVER_LOG='$dir/receiver.log'
CV_TOKEN_ADMIN='$admin'
CV_TOKEN_ALICE_EDITOR='$ae'
CV_TOKEN_ALICE_VIEWER='$av'
CV_TOKEN_BOB_EDITOR='$be'
CV_TOKEN_BOB_VIEWER='$bv'
CV_API_PID=$(cat "$dir/api.pid")
CV_SUPERVISOR_PID=$(cat "$dir/cvd.pid")
CV_NGINX_PID=$(cat "$dir/nginx.pid")
CV_SOCKET='$dir/api.sock'
CV_CONF='$dir/cronvisor.conf'
CV_DB='$db'
CV_PG_BASE='$base'
CV_DIR='$dir'
EOF
	mv "$dir/env.tmp" "$dir/env"
	say "up in $dir: http://127.0.0.1:$port/api/v1, database $db"
}

case $cmd in
start)
	shift 2
	start "$@"
	;;
stop)
	[ $# -eq 2 ] || usage
	stop
	;;
finish)
	[ $# -eq 2 ] || usage
	finish
	;;
*) usage ;;
esac
