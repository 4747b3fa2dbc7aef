# api-lib.sh: what the REST API tests share, on top of itest-lib.sh.
# A test script sets -u, then:
#
#   . "$(dirname "$0")/api-lib.sh"
#   api_up CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
#
# api_up starts tests/api-harness.sh in a fresh directory ($work, whose
# *.log files itest-lib.sh's ok shows on failure), sources its env, sets
# base and name for itest-lib.sh's sql, and installs the trap that stops
# the harness (and kills the pids a test adds to $extra, its own children,
# which it takes out of $extra once it has reaped them) on every exit.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/itest-lib.sh"
tmp=""
work=""
extra=""

api_cleanup() {
	for p in $extra; do
		kill -KILL "$p" 2>/dev/null
	done
	# a test may have stopped the supervisor (SIGSTOP) when it ended
	[ -n "${CV_SUPERVISOR_PID:-}" ] && kill -CONT "$CV_SUPERVISOR_PID" 2>/dev/null
	[ -n "$work" ] && "$here/api-harness.sh" stop "$work"
	[ -n "$tmp" ] && rm -rf "$tmp"
}

api_up() {
	CRONVISORD=$1 CRONVISOR_API=$2 CRONVISORCTL=$3
	export CRONVISORD CRONVISOR_API CRONVISORCTL
	trap api_cleanup EXIT
	trap 'exit 129' HUP
	trap 'exit 130' INT
	trap 'exit 143' TERM
	tmp=$(mktemp -d /tmp/cvapi.XXXXXX) || exit 1
	work=$tmp/h
	"$here/api-harness.sh" start "$work" "$4" || exit 1
	. "$work/env"
	base=$CV_PG_BASE
	name=$CV_DB
}

# call METHOD PATH TOKEN [CURL-ARGS...]: one request through nginx (PATH
# under /api/v1; TOKEN "" for none).  Sets code (000 if curl failed) and
# resp (the body); $tmp/headers has the response headers.
call() {
	c_m=$1 c_p=$2 c_t=$3
	shift 3
	if [ -n "$c_t" ]; then
		set -- -H "Authorization: Bearer $c_t" "$@"
	fi
	code=$(curl -sS -o "$tmp/resp" -D "$tmp/headers" -w '%{http_code}' \
		--connect-timeout 3 --max-time 20 -X "$c_m" "$@" \
		"$CV_API_URL$c_p" 2>"$tmp/curl.err") || code=000
	resp=$(cat "$tmp/resp" 2>/dev/null)
}

# send METHOD PATH TOKEN BODY [CONTENT-TYPE [CURL-ARGS...]]: call with a
# body (BODY "@FILE": that file's bytes).
send() {
	s_m=$1 s_p=$2 s_t=$3 s_b=$4 s_ct=${5:-application/json}
	shift 4
	[ $# -gt 0 ] && shift
	call "$s_m" "$s_p" "$s_t" -H "Content-Type: $s_ct" --data-binary "$s_b" "$@"
}

# j FILTER: jq -r FILTER of the last response ("" if it is not JSON).
j() { printf '%s' "$resp" | jq -r "$1" 2>/dev/null; }

# ok_status NAME WANT: the last call answered WANT.
ok_status() {
	if [ "$code" != "$2" ]; then
		ok "$1" "$code $resp" "$2"
	else
		ok "$1" "$code" "$2"
	fi
}

# ok_error NAME STATUS CODE FIELD: the last call answered an error of this
# status, code and field ("null" for none), in the documented shape
# {"error": {"code", "message", "field"}}.
ok_error() {
	ok "$1" "$code $(j '.error.code') $(j '.error.field // "null"')" "$2 $3 $4"
	ok "$1: error shape" "$(j '.error | [keys[], (.message | type)] | join(",")')" \
		"code,field,message,string"
}

# snap: a digest of every schedule, trigger, trigger key and run row:
# equal before and after a refused request means nothing changed.
snap() {
	sql "SELECT (SELECT count(*) || ':' || coalesce(md5(string_agg(s::text, ',' ORDER BY id)), '') FROM schedules s)
	     || '/' || (SELECT count(*) FROM triggers) || '/' || (SELECT count(*) FROM trigger_keys)
	     || '/' || (SELECT count(*) FROM runs)"
}

# api_healthy: true when GET /health through nginx answers 200.
api_healthy() {
	[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$CV_API_URL/health")" = 200 ]
}

# wait_api SECONDS FILTER PATH TOKEN: polls GET PATH until jq FILTER of the
# answer is "true"; 1 on time-out (the last answer stays in resp).
wait_api() {
	w_i=0
	while [ "$w_i" -lt $(($1 * 10)) ]; do
		call GET "$3" "$4"
		[ "$(j "$2")" = true ] && return 0
		sleep 0.1
		w_i=$((w_i + 1))
	done
	return 1
}

# at_in SECONDS: an RFC 3339 instant SECONDS from now, in UTC.
at_in() { date -u -d "@$(($(date +%s) + $1))" +%Y-%m-%dT%H:%M:%SZ; }

# soon [MS]: the RFC 3339 instant MS (1000) ms from now, to the millisecond,
# in UTC (now itself may be past by the time the API reads it, on a loaded
# machine).  date, not python3, whose start alone takes up to a second on
# some machines (a pyenv shim): several seconds over a test.
soon() {
	s_ms=$(($(date +%s%3N) + ${1:-1000}))
	date -u -d "@$((s_ms / 1000)).$(printf %03d $((s_ms % 1000)))" \
		+%Y-%m-%dT%H:%M:%S.%3NZ
}

# stub_agent_up: starts tests/helpers/stubagent.py (its request log in
# $tmp/agent.log) and sets AURL to its address.
stub_agent_up() {
	python3 "$here/helpers/stubagent.py" "$tmp/agent.port" "$tmp/agent.log" \
		>"$work/stubagent.log" 2>&1 &
	extra="$extra $!"
	wait_until 5 test -f "$tmp/agent.port"
	AURL="http://127.0.0.1:$(cat "$tmp/agent.port")"
}

# stub_agent ID PATH [MORE-JSON]: an agent of alice's ($A) at the stub's
# PATH.
stub_agent() {
	send POST /agents "$A" "{\"agent_id\": \"$1\", \"name\": \"$1\", \"endpoint\": \"$AURL$2\"${3:+, $3}}"
	[ "$code" = 201 ] || echo "agent $1: $code $resp" >&2
}

# api_finish: stops the API and the supervisor cleanly and checks that
# their logs hold no sanitizer report (ASan, LSan, UBSan builds); the last
# step of a test before summary.
api_finish() {
	ok "no sanitizer report from cronvisor-api or cronvisord" \
		"$("$here/api-harness.sh" finish "$work")" ""
}
