# engine-lib.sh: the start of a test of the real cronvisord against the
# fixture's PostgreSQL (engine.sh, engine_ahead.sh).  The script sets -u
# and prefix, then sources this with its own arguments in place:
#
#   CRONVISORD CRONVISORCTL CONNINFO-FILE
#
# It sets cvd, ctl, base, name (prefix_PID, the test's own database), url
# and work (a scratch directory), sources itest-lib.sh, and defines start
# (a supervisor on $work/conf, its pid in $pid) and the EXIT trap that
# kills it, drops the database and removes $work.
cvd=$1
ctl=$2
base=$(cat "$3") || exit 1
name=${prefix}_$$
url="$base dbname=$name"
work=$(mktemp -d)
. "$(dirname "$0")/itest-lib.sh"
pid=""

cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	q postgres "DROP DATABASE IF EXISTS $name WITH (FORCE)" >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT

start() {
	"$cvd" -f "$work/conf" >>"$work/cvd.log" 2>&1 &
	pid=$!
}
