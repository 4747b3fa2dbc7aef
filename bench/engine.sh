#!/bin/sh
# bench/engine.sh BUILD_DIR [BURST [SPREAD]]: cronvisord alone beside the
# limit (bench/forkexec), without the peers: the burst and spread workloads
# of bench/workloads.py (burst: BURST one-shot schedules due at one instant,
# default 1000; spread: SPREAD one-shot schedules due 10 ms apart, default
# 200; every run executes bench/stamp), against a private PostgreSQL with
# default settings (durable commits), with CPU per run.  Prints the table
# and writes bench/out/engine.json.  bench/run runs the same workloads with
# the peers.  Options for workloads.py go through CVBENCH_ARGS (e.g.
# CVBENCH_ARGS="--max-concurrent 8 --claim-batch 50").
set -eu
cd "$(dirname "$0")/.."
# shellcheck disable=SC2086
exec python3 bench/workloads.py --build "$1" --burst "${2:-1000}" --spread "${3:-200}" \
	--systems limit,cronvisor --out bench/out/engine.json ${CVBENCH_ARGS:-}
