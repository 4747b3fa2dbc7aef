# harness.sh: the one harness of the shell tests that run cronvisord or
# cronvisorctl against the fixture's PostgreSQL (CTest fixture "pg").  The
# script sets -u and prefix, then sources this with its own arguments in
# place (a script whose usage differs does `set --` first):
#
#   CRONVISORD CRONVISORCTL CONNINFO-FILE
#
# (CRONVISORD "" for a test that starts no supervisor.)  It sets cvd, ctl,
# base, name (prefix_PID, the test's own database), url, work (a scratch
# directory) and here (tests/), sources itest-lib.sh, and provides:
#
#   db_setup              creates the database $name (a leftover of that
#                         name dropped first) and runs cronvisorctl db
#                         migrate on it; 1 on failure
#   db_create NAME        another (empty) database, dropped by cleanup
#   conf NAME [LINE...]   $work/NAME.conf, supervisor NAME's configuration:
#                         the test defaults, then the LINEs (see conf)
#   spawn LOG CMD...      CMD in the background, output appended to LOG,
#                         killed with the test (below); its pid in $last
#   start [NAME [BINARY]] supervisor NAME on $work/NAME.conf (written by
#                         conf NAME when missing), logging to $work/NAME.log,
#                         its pid in pid_NAME (every character of NAME
#                         but letters, digits and _ as _) and in $pid.
#                         Without NAME: on $work/conf, logging to
#                         $work/cvd.log, its pid in $pid.  BINARY: another
#                         build than $cvd.
#   stop [NAME]           SIGTERM to supervisor NAME (or $pid), up to 15 s
#                         for it to exit, then SIGKILL; its exit status in
#                         $rc (and returned), the CPU ticks it used
#                         meanwhile in $stop_ticks
#   crash [NAME]          kill -9 and reap supervisor NAME (or $pid)
#   serve_http            tests/helpers/httpd.py, recording requests in
#                         $work/http.req; its port in $port, pid in $httpd
#   ticks PID             a process's CPU time in clock ticks
#   cleanup               (the EXIT trap) kills every process spawn
#                         started, runs cleanup_more if the script defines
#                         it, drops $name and the db_create databases,
#                         removes $work (kept, and said, when KEEP is set).
#                         INT, TERM and HUP exit through it.
#
# A test killed with SIGKILL (a CTest time-out) runs no trap: every process
# spawn starts has a parent-death signal (setpriv --pdeathsig KILL, from
# util-linux, Essential in Debian), so it dies with the test's shell.  The
# signal comes when the process that forked it ends: call spawn, start and
# serve_http in the test's own shell, never inside $(...) or a pipeline.
cvd=$1
ctl=$2
base=$(cat "$3") || exit 1
name=${prefix}_$$
url="$base dbname=$name"
work=$(mktemp -d) || exit 1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/itest-lib.sh"
pid=""
pids=""  # every process spawn started and no stop or crash reaped
dbs=""   # the databases of db_create

cleanup() {
	for h_p in $pids; do kill -9 "$h_p" 2>/dev/null; done
	! command -v cleanup_more >/dev/null 2>&1 || cleanup_more
	for h_d in $name $dbs; do
		q postgres "DROP DATABASE IF EXISTS $h_d WITH (FORCE)" >/dev/null 2>&1
	done
	if [ -n "${KEEP:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

db_create() {
	q postgres "DROP DATABASE IF EXISTS $1 WITH (FORCE)" >/dev/null 2>&1
	[ "$1" = "$name" ] || dbs="$dbs $1"
	q postgres "CREATE DATABASE $1" >/dev/null
}
db_setup() {
	db_create "$name" &&
		CRONVISOR_DATABASE_URL="$url" "$ctl" db migrate >/dev/null
}

# conf NAME [LINE...]: database_url = "$url", supervisor_name = "NAME",
# heartbeat_seconds = 1, lease_seconds = 3, shutdown_grace_seconds = 1,
# kill_grace_seconds = 1 and owner_max_running = 100000 (every schedule of
# a test has one owner: no per-owner limit, engine_fair.sh tests it), then
# each LINE.  A key may be set only once (cronvisord refuses a second), so
# a default is changed by a variable of the key's name, e.g.
# `lease_seconds=15 conf d`; set to "", the key is left out.  A variable
# receiver_url adds that key.
conf() {
	h_n=$1
	shift
	{
		echo "supervisor_name = \"$h_n\""
		h_key database_url "\"${database_url-$url}\""
		h_key heartbeat_seconds "${heartbeat_seconds-1}"
		h_key lease_seconds "${lease_seconds-3}"
		h_key shutdown_grace_seconds "${shutdown_grace_seconds-1}"
		h_key kill_grace_seconds "${kill_grace_seconds-1}"
		h_key owner_max_running "${owner_max_running-100000}"
		h_key receiver_url "${receiver_url:+\"$receiver_url\"}"
		for h_l in "$@"; do printf '%s\n' "$h_l"; done
	} >"$work/$h_n.conf"
}
h_key() { [ -z "$2" ] || [ "$2" = '""' ] || echo "$1 = $2"; }

spawn() {
	h_log=$1
	shift
	setpriv --pdeathsig KILL -- "$@" >>"$h_log" 2>&1 &
	last=$!
	pids="$pids $last"
}

# h_var NAME: the variable holding supervisor NAME's pid.
h_var() { echo "pid_$(printf '%s' "$1" | tr -c 'A-Za-z0-9_' _)"; }

start() {
	if [ -n "${1:-}" ]; then
		[ -f "$work/$1.conf" ] || conf "$1"
		spawn "$work/$1.log" "${2:-$cvd}" -f "$work/$1.conf"
		eval "$(h_var "$1")=$last"
	else
		spawn "$work/cvd.log" "$cvd" -f "$work/conf"
	fi
	pid=$last
}

# h_pid [NAME]: supervisor NAME's pid (or $pid) in h_p, forgotten: stop and
# crash reap it.
h_pid() {
	if [ -n "${1:-}" ]; then
		eval "h_p=\${$(h_var "$1"):-}"
		eval "$(h_var "$1")="
	else
		h_p=$pid
	fi
	[ "$h_p" != "$pid" ] || pid=""
	h_l=""
	for h_x in $pids; do [ "$h_x" = "$h_p" ] || h_l="$h_l $h_x"; done
	pids=$h_l
}

ticks() { awk '{ print $14 + $15 }' /proc/"$1"/stat; }

stop() {
	h_pid "${1:-}"
	h_t0=$(ticks "$h_p" 2>/dev/null || echo 0)
	h_t=$h_t0
	kill -TERM "$h_p" 2>/dev/null
	h_i=0
	while kill -0 "$h_p" 2>/dev/null && [ "$h_i" -lt 150 ]; do
		h_t=$(ticks "$h_p" 2>/dev/null || echo "$h_t")
		sleep 0.1
		h_i=$((h_i + 1))
	done
	kill -9 "$h_p" 2>/dev/null
	wait "$h_p"
	rc=$?
	stop_ticks=$((h_t - h_t0))
	return "$rc"
}

crash() {
	h_pid "${1:-}"
	kill -9 "$h_p"
	wait "$h_p" 2>/dev/null
}

serve_http() {
	spawn "$work/httpd.log" python3 "$here/helpers/httpd.py" "$work/port" \
		"$work/http.req"
	httpd=$last
	wait_until 5 test -f "$work/port"
	port=$(cat "$work/port") || exit 1
}
