#!/bin/sh
# bench/peers/setup.sh: installs what the peers of bench/run need, once:
# redis-server and Debian's python3-rq (apt, as root), BullMQ at the version
# package-lock.json pins (npm ci into bench/peers/node_modules, redone only
# when the lock file changes).  Node and npm come from the machine, else
# from Debian.
set -eu
cd "$(dirname "$0")"
need=""
command -v redis-server >/dev/null 2>&1 || need="$need redis-server"
command -v redis-cli >/dev/null 2>&1 || need="$need redis-tools"
{ command -v rq >/dev/null 2>&1 && /usr/bin/python3 -c 'import rq' 2>/dev/null; } ||
	need="$need python3-rq"
command -v node >/dev/null 2>&1 || need="$need nodejs"
command -v npm >/dev/null 2>&1 || need="$need npm"
if [ -n "$need" ]; then
	[ "$(id -u)" = 0 ] || { echo "bench/peers/setup.sh: as root, install:$need" >&2; exit 1; }
	echo "bench/peers/setup.sh: apt-get install$need" >&2
	export DEBIAN_FRONTEND=noninteractive
	# shellcheck disable=SC2086 # $need is a list of package names
	timeout 600 apt-get install -y --no-install-recommends $need >/dev/null ||
		{ timeout 300 apt-get update >/dev/null &&
		  timeout 600 apt-get install -y --no-install-recommends $need >/dev/null; }
fi
if ! cmp -s package-lock.json node_modules/.cvbench-lock 2>/dev/null; then
	echo "bench/peers/setup.sh: npm ci (BullMQ)" >&2
	# npm ci refuses a lock file without the optional per-platform
	# packages of msgpackr-extract, which some registry mirrors leave out;
	# npm install --no-save then installs the same locked versions and
	# leaves package-lock.json as it is.
	timeout 600 npm ci --no-audit --no-fund --loglevel=silent >/dev/null 2>&1 ||
		timeout 600 npm install --no-save --no-audit --no-fund --loglevel=error >/dev/null
	cp package-lock.json node_modules/.cvbench-lock
fi
