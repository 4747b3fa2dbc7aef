#!/bin/sh
# valgrind.sh: cronvisord and cronvisor-api under valgrind memcheck over a
# short run of the whole stack (tests/api-harness.sh): a handful of runs of
# exec and http targets, the receiver, a failure, a timeout, a refused
# host and an interval schedule, then SIGTERM.  Passes only if valgrind
# reports no invalid access, no use of uninitialised memory, no definite
# leak (all of them counted in "ERROR SUMMARY" through
# --errors-for-leak-kinds) and exit code 0 (--error-exitcode=99 makes any
# error 99), in the supervisor, in every runner it forked and in the API
# (CV_VALGRIND_API=0 leaves the API out); and if the supervisor holds no
# run's descriptor at exit (--track-fds=yes).
#
# Runners fork without exec, so they stay under valgrind; each writes its
# own log (%p).  The runner helper (cronvisor-runner, which forks the
# runners of exec runs) is execve'd by the supervisor, and
# --trace-children=yes puts it under valgrind too, with the runners it
# forks; the exec targets (/bin/echo, /bin/sleep) are skipped
# (--trace-children-skip): they are not cronvisor's code.  A runner under
# valgrind takes a second or two, so the runs are few and the timeouts
# generous.
#
# valgrind cannot run a binary built with AddressSanitizer: for such a
# build the test says so loudly and exits 77, which CTest reports as
# skipped (SKIP_RETURN_CODE), never as passed.
# Usage: valgrind.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
cvd_real=$1
if ! command -v valgrind >/dev/null 2>&1; then
	echo "valgrind.sh: SKIPPED: valgrind is not installed (scripts/deps installs it)" >&2
	exit 77
fi
if grep -qa -e __asan_init -e __ubsan_handle "$cvd_real"; then
	echo "valgrind.sh: SKIPPED: $cvd_real is built with sanitizers;" \
		"valgrind needs a build without -DCV_SANITIZE=ON" >&2
	exit 77
fi
here=$(cd "$(dirname "$0")" && pwd)
vgtmp=$(mktemp -d /tmp/cvvg.XXXXXX) || exit 1

# vg_wrap NAME PROGRAM: $vgtmp/NAME, the wrapper the harness starts in
# PROGRAM's place: valgrind as its child, so that its exit status can be
# kept in $vgtmp/NAME.rc (its pid in $vgtmp/NAME.pid, its log in
# $vgtmp/NAME.PID.log); SIGTERM and SIGHUP are passed on.
vg_wrap() {
	cat >"$vgtmp/$1" <<EOF
#!/bin/sh
valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite \\
	--errors-for-leak-kinds=definite --error-exitcode=99 --track-fds=yes \\
	--trace-children=yes --trace-children-skip='/bin/*,/usr/bin/*' \\
	--child-silent-after-fork=no --num-callers=30 \\
	--suppressions=$here/valgrind.supp --log-file=$vgtmp/$1.%p.log \\
	"$2" "\$@" &
child=\$!
echo "\$child" >$vgtmp/$1.pid
trap 'kill -TERM \$child' TERM
trap 'kill -HUP \$child' HUP
while :; do
	wait \$child
	rc=\$?
	kill -0 \$child 2>/dev/null || break
done
echo "\$rc" >$vgtmp/$1.rc
exit "\$rc"
EOF
	chmod +x "$vgtmp/$1"
}
vg_wrap cronvisord "$cvd_real"
api=$2
# cronvisor-api runs under valgrind as well, unless CV_VALGRIND_API=0.
if [ "${CV_VALGRIND_API:-1}" = 1 ]; then
	vg_wrap cronvisor-api "$2"
	api=$vgtmp/cronvisor-api
fi

. "$here/api-lib.sh"
# api-lib.sh's trap removes $tmp; $vgtmp goes with it.
api_up "$vgtmp/cronvisord" "$api" "$3" "$4"
trap 'api_cleanup; rm -rf "$vgtmp"' EXIT
T=$CV_TOKEN_ADMIN
far='"kind": "cron", "cron": "0 0 1 1 *"'
port=${CV_API_URL#http://127.0.0.1:}
port=${port%%/*}

# run TARGET-JSON [EXTRA]: a schedule triggered once; waits for its run
# to end and prints "status error".
run() {
	send POST /schedules "$T" "{\"name\": \"vg\", $far, $1${2:-}}"
	[ "$code" = 201 ] || { echo "create $code $resp"; return; }
	r_id=$(j .id)
	call POST "/schedules/$r_id/trigger" "$T"
	r_run=$(j .run_id)
	wait_api 60 '.status != null and .status != "running"' "/runs/$r_run" "$T" ||
		{ echo "timeout $resp"; return; }
	j '.status + " " + (.error // "")'
}
tgt_exec() { printf '"target": {"type": "exec", "argv": %s}' "$1"; }
tgt_http() { printf '"target": {"type": "http", "url": "%s"}' "$1"; }

# valgrind refuses setrlimit(RLIMIT_NOFILE) below its own reserve of
# descriptors (EPERM): the runs inherit the limit instead.  Every other
# limit still applies.
{ cat "$CV_CONF"; echo "limit_nofile = 0"; } >"$vgtmp/conf" &&
	cat "$vgtmp/conf" >"$CV_CONF"
kill -HUP "$CV_SUPERVISOR_PID"
wait_until 30 grep -q 'configuration reloaded' "$work/cvd.log"
ok "supervisor reloaded with limit_nofile = 0" "$(grep -c 'configuration reloaded' "$work/cvd.log")" 1

ok "exec echo" "$(run "$(tgt_exec '["/bin/echo", "hello"]')")" "succeeded "
ok "exec echo again" "$(run "$(tgt_exec '["/bin/echo", "again"]')")" "succeeded "
ok "exec failure" "$(run "$(tgt_exec '["/bin/false"]')")" "failed exited with status 1"
ok "exec not found" "$(run "$(tgt_exec '["/nonexistent/cmd"]')" | cut -d' ' -f1)" failed
ok "exec timeout" "$(run "$(tgt_exec '["/bin/sleep", "30"]')" ', "timeout_seconds": 1' | cut -d' ' -f1)" timed_out
ok "the receiver" "$(run '"workflow_id": "w1"')" "succeeded "
ok "http 200" "$(run "$(tgt_http "http://127.0.0.1:$port/landing")")" "succeeded "
ok "http 404" "$(run "$(tgt_http "http://127.0.0.1:$port/nothing-here")")" "failed HTTP 404"
ok "http redirect not followed" "$(run "$(tgt_http "http://127.0.0.1:$port/redirect-to/localhost")" | cut -c1-15)" "failed HTTP 302"
ok "http refused (API)" "$(run "$(tgt_http "http://169.254.169.254/")" | cut -d' ' -f1-2)" \
	"create 400"
ok "http connection refused" "$(run "$(tgt_http "http://127.0.0.1:1/")" | cut -d' ' -f1)" failed

# An interval schedule: the claim and reschedule path a few times.
send POST /schedules "$T" "{\"name\": \"every\", \"interval_seconds\": 1, $(tgt_exec '["/bin/true"]')}"
iv=$(j .id)
wait_api 60 '.run_count >= 3' "/schedules/$iv" "$T"
ok "interval schedule ran" "$(j '.run_count >= 3')" true
call DELETE "/schedules/$iv" "$T"

# SIGTERM, and up to 120 s for valgrind's leak check.
pid=$(cat "$vgtmp/cronvisord.pid")
kill -TERM "$CV_SUPERVISOR_PID"
wait_until 120 test -s "$vgtmp/cronvisord.rc"
ok "cronvisord under valgrind exited 0 on SIGTERM" "$(cat "$vgtmp/cronvisord.rc" 2>/dev/null)" 0
ok "supervisor log written" "$(test -s "$vgtmp/cronvisord.$pid.log" && echo yes)" yes
ok "supervisor: ERROR SUMMARY" \
	"$(grep -o 'ERROR SUMMARY: [0-9]* errors' "$vgtmp/cronvisord.$pid.log")" "ERROR SUMMARY: 0 errors"
ok "supervisor: no definite leak" "$(grep -c 'definitely lost: [1-9]' "$vgtmp/cronvisord.$pid.log")" 0
# At exit the supervisor still holds its loop's descriptors (signalfd,
# timerfd, epoll: the process's lifetime, closed by exit) and what it
# inherited; none made for a run (result pipes) or a connection may be
# left.
ok "supervisor: no run's or connection's descriptor open at exit" \
	"$(awk '/Open (file descriptor|AF_)/ { blk = 1; bad = 0; next }
		blk && /pipe2|socket|spawn_|job_|accept/ { bad = 1 }
		blk && /== *$/ { n += bad; blk = 0 }
		END { print n + 0 }' "$vgtmp/cronvisord.$pid.log")" 0
ok "supervisor: the loop's descriptors were tracked" \
	"$(grep -c 'by 0x.*setup_loop' "$vgtmp/cronvisord.$pid.log")" 3
# A runner ends with an ERROR SUMMARY; the child that becomes an exec
# target leaves valgrind at its execve, with no summary: it must report
# nothing before it.
nrun=0
nexec=0
for f in "$vgtmp"/cronvisord.*.log; do
	[ "$f" = "$vgtmp/cronvisord.$pid.log" ] && continue
	if grep -q 'ERROR SUMMARY' "$f"; then
		nrun=$((nrun + 1))
		ok "runner $(basename "$f"): ERROR SUMMARY" \
			"$(grep -o 'ERROR SUMMARY: [0-9]* errors' "$f")" "ERROR SUMMARY: 0 errors"
	else
		nexec=$((nexec + 1))
		ok "target $(basename "$f"): no report before its execve" \
			"$(grep -cE '== (Invalid|Conditional|Use of|Syscall param|Mismatched|Source and|Warning)' "$f")" 0
	fi
done
ok "runners were checked" "$([ "$nrun" -ge 10 ] && echo yes || echo "$nrun")" yes
ok "exec targets were checked" "$([ "$nexec" -ge 4 ] && echo yes || echo "$nexec")" yes
if [ "$api" != "$2" ]; then
	apid=$(cat "$vgtmp/cronvisor-api.pid")
	kill -TERM "$(cat "$work/api.pid")"
	wait_until 120 test -s "$vgtmp/cronvisor-api.rc"
	ok "cronvisor-api under valgrind exited 0 on SIGTERM" \
		"$(cat "$vgtmp/cronvisor-api.rc" 2>/dev/null)" 0
	ok "cronvisor-api: ERROR SUMMARY" \
		"$(grep -o 'ERROR SUMMARY: [0-9]* errors' "$vgtmp/cronvisor-api.$apid.log")" \
		"ERROR SUMMARY: 0 errors"
fi
if [ "$fail" -gt 0 ]; then
	for f in "$vgtmp"/cronvisord.*.log; do
		grep -q 'ERROR SUMMARY: 0 errors' "$f" && [ "$f" != "$vgtmp/cronvisord.$pid.log" ] && continue
		echo "--- $f"
		head -n 150 "$f"
	done
fi
echo "valgrind: supervisor, $nrun runners and $nexec exec'd targets checked"
api_finish
summary valgrind
