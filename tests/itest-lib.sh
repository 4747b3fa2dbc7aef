# itest-lib.sh: what the shell tests share.  The database helpers need
# base (the fixture's conninfo), name (the test's own database) and work
# (its scratch directory, where supervisors write *.log) set first.
pass=0
fail=0

# q DATABASE SQL, sql SQL: one statement, unaligned output.
q() { psql "$base dbname=$1" -X -qAt -v ON_ERROR_STOP=1 -c "$2"; }
sql() { q "$name" "$1"; }

# ok NAME GOT WANT: one check; a failure shows the logs' tails.
ok() {
	if [ "$2" = "$3" ]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		printf 'FAIL %s: got "%s", want "%s"\n' "$1" "$2" "$3"
		tail -n 15 "$work"/*.log
	fi
}

# add NAME COLUMNS VALUES: inserts a schedule due now; prints its id.
add() {
	sql "INSERT INTO schedules (name, owner, next_run_at, next_slot_at, $2)
	     VALUES ('$1', 'test', now(), now(), $3) RETURNING id"
}

# as_root: as root, a target member that runs the command as root, as
# only an admin's schedule may (without it a root supervisor runs it as
# the owner's unprivileged user, who cannot reach the test's $work).
as_root=""
[ "$(id -u)" != 0 ] || as_root=',"run_as":"root"'

# exec_target CMD: the target JSON of /bin/sh -c CMD, run as root as above.
exec_target() {
	printf '{"type":"exec","argv":["/bin/sh","-c","%s"]%s}' "$1" "$as_root"
}

# wait_for SECONDS SQL: polls until the query returns "t"; 1 on time-out.
wait_for() {
	i=0
	while [ "$i" -lt $(($1 * 10)) ]; do
		[ "$(sql "$2" 2>/dev/null)" = t ] && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# wait_until SECONDS COMMAND...: runs the command every 0.1 s until it
# succeeds; 1 on time-out.
wait_until() {
	w_n=$(($1 * 10))
	shift
	until "$@"; do
		[ "$w_n" -le 0 ] && return 1
		sleep 0.1
		w_n=$((w_n - 1))
	done
}

# gone PID: true when process PID has exited.  wait_gone SECONDS PID:
# polls until it has; 1 on time-out.
gone() { ! kill -0 "$1" 2>/dev/null; }
wait_gone() { wait_until "$1" gone "$2"; }

# check NAME WANT-EXIT WANT-SUBSTRING -- COMMAND...: runs the command and
# checks its exit status and that its stdout+stderr contain the substring;
# the output stays in $out.
check() {
	check_name=$1 want_rc=$2 want=$3
	shift 4
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" -eq "$want_rc" ] && printf '%s' "$out" | grep -qF -- "$want"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		printf 'FAIL %s: exit %s (want %s), output:\n%s\n(want "%s")\n' \
			"$check_name" "$rc" "$want_rc" "$out" "$want"
	fi
}

# lacks NAME SUBSTRING: the last check's output must not contain it.
lacks() {
	if printf '%s' "$out" | grep -qF -- "$2"; then
		fail=$((fail + 1))
		printf 'FAIL %s: output shows "%s":\n%s\n' "$1" "$2" "$out"
	else
		pass=$((pass + 1))
	fi
}

# summary TEST: the closing line, and the exit status.
summary() {
	echo "$1: $pass passed, $fail failed"
	[ "$fail" -eq 0 ]
}
