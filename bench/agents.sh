#!/bin/sh
# bench/agents.sh BUILD_DIR [--quick]: issue 19's measured step
# (bench/agents.py): 10,000 one-shot agent schedules due together
# (--quick 1,000) against bench/stubagent answering 200, then 202, beside a
# BullMQ worker of concurrency 50 POSTing the same requests to the same
# stub with a keep-alive agent; then each accepted job's report sent twice
# through nginx.  Invocations/s and CPU per invocation, completions/s, the
# checks; prints the table and writes bench/out/agents.json.  Runs as root
# for the cgroups (CPU of all processes), like bench/run; options for
# agents.py go through CVBENCH_AGENTS_ARGS (e.g. "--concurrency 8").
set -eu
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: bench/agents.sh BUILD_DIR [--quick]" >&2; exit 2; }
command -v wrk >/dev/null || { echo "bench/agents.sh: no wrk (scripts/deps)" >&2; exit 1; }
jobs=10000
[ "${2:-}" = "--quick" ] && jobs=1000
# cronvisor's runners run as cronvisor-run (run_user_default), as installed.
. scripts/stack-lib.sh
stack_run_user
# In the background so that a TERM to this script reaches it at once; it
# stops everything it started on TERM or INT.
# shellcheck disable=SC2086
python3 bench/agents.py --build "$1" --jobs "$jobs" ${CVBENCH_AGENTS_ARGS:-} &
child=$!
trap 'kill -TERM "$child" 2>/dev/null; wait "$child"; exit 143' TERM HUP
trap 'kill -INT "$child" 2>/dev/null; wait "$child"; exit 130' INT
wait "$child"
