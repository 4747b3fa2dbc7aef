# bench/stack.sh: sourced by bench/api.sh and bench/plans.sh (POSIX sh).
# shellcheck shell=sh
# bench_stack_up NAME BUILD_DIR: a private PostgreSQL in /tmp/NAME-pg-PID
# ($pg) and the API stack of tests/api-harness.sh in /tmp/NAME-api-PID
# ($h) with BUILD_DIR's programs, both stopped when the script exits.
bench_stack_up() {
	pg=/tmp/$1-pg-$$
	h=/tmp/$1-api-$$
	trap bench_stack_down EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	tests/pg-harness.sh start "$pg" >/dev/null
	CRONVISORD=$2/cronvisord CRONVISOR_API=$2/cronvisor-api \
		CRONVISORCTL=$2/cronvisorctl \
		tests/api-harness.sh start "$h" "$pg/conninfo" >/dev/null 2>&1
}

bench_stack_down() {
	tests/api-harness.sh stop "$h" >/dev/null 2>&1 || true
	tests/pg-harness.sh stop "$pg" >/dev/null 2>&1 || true
}
