# itest-lib.sh: what the shell integration tests share.  Source it after
# setting base (the fixture's conninfo), name (the test's own database) and
# work (its scratch directory, where supervisors write *.log).
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

# summary TEST: the closing line, and the exit status.
summary() {
	echo "$1: $pass passed, $fail failed"
	[ "$fail" -eq 0 ]
}
