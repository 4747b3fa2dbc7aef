#!/bin/sh
# docs_check.sh: keeps the documentation true to the code.
#
#   docs_check.sh CRONVISORCTL SOURCE_DIR
#
# Checks, and fails naming every miss:
#  1. every key `cronvisorctl config check` prints for an empty file and a
#     clean environment (the defaults, from common/config.c's table) has a
#     row in the table of docs/configuration.md, `| `key` | default | ...`,
#     with the same default (an empty string is written `""`);
#  2. every route of api/route.c's route_table has a heading in
#     docs/api.md naming it as `METHOD /path`;
#  3. every command `cronvisorctl --help` lists ("schedules create", "db
#     migrate", "version", ...) appears as `cronvisorctl COMMAND` in
#     README.md or docs/cli.md.
set -u

[ $# -eq 2 ] || {
	echo "usage: docs_check.sh CRONVISORCTL SOURCE_DIR" >&2
	exit 2
}
ctl=$1
src=$2
conf_md=$src/docs/configuration.md
api_md=$src/docs/api.md
route_c=$src/api/route.c
fails=0

miss() {
	echo "docs_check: $*" >&2
	fails=$((fails + 1))
}

for f in "$conf_md" "$api_md" "$route_c" "$src/README.md" "$src/docs/cli.md"; do
	[ -r "$f" ] || {
		echo "docs_check: cannot read $f" >&2
		exit 1
	}
done

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
: >"$tmp/empty.conf"

# 1. Configuration keys and their defaults.  The CRONVISOR_* variables of
# whoever runs the test would change the "defaults": drop them.
for v in $(env | sed -n 's/^\(CRONVISOR_[A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$v"
done
if ! "$ctl" config check -f "$tmp/empty.conf" >"$tmp/config" 2>"$tmp/err"; then
	echo "docs_check: cronvisorctl config check failed:" >&2
	cat "$tmp/err" >&2
	exit 1
fi
nkeys=0
while IFS= read -r line; do
	case $line in '#'* | '') continue ;; esac
	key=${line%% = *}
	def=${line#* = }
	nkeys=$((nkeys + 1))
	# The row of the key: "| `key` | `default` | ..." (the default may be
	# written with or without backquotes).
	row=$(grep -F "| \`$key\` |" "$conf_md" | head -n 1)
	if [ -z "$row" ]; then
		miss "docs/configuration.md: no table row for key $key"
		continue
	fi
	# Second cell, blanks and backquotes trimmed.
	# shellcheck disable=SC2016 # the backquotes are literal
	cell=$(printf '%s\n' "$row" | awk -F'|' '{print $3}' |
		sed 's/^ *//; s/ *$//; s/^`//; s/`$//')
	[ "$cell" = "$def" ] ||
		miss "docs/configuration.md: $key: default is $def, the doc says $cell"
	grep -qF "CRONVISOR_$(printf '%s' "$key" | tr '[:lower:]' '[:upper:]')" "$conf_md" ||
		miss "docs/configuration.md: $key: its environment variable is not named"
done <"$tmp/config"
[ "$nkeys" -gt 0 ] || miss "config check printed no keys"

# 2. API routes: {"METHOD", "/path", handler, ...} rows of route_table.
sed -n '/route_table\[\] = {/,/^};/p' "$route_c" |
	sed -n 's/^ *{"\([A-Z]*\)", *"\([^"]*\)".*/\1 \2/p' >"$tmp/routes"
[ -s "$tmp/routes" ] || miss "no routes found in api/route.c"
while read -r method path; do
	grep -E '^#+ ' "$api_md" | grep -qF "\`$method $path\`" ||
		miss "docs/api.md: no heading for \`$method $path\`"
done <"$tmp/routes"

# 3. cronvisorctl commands: the indented lines of --help under "local
# commands:" and "API commands:", up to the first blank line; the command
# fills the first 18 columns after the indent, its description follows.
"$ctl" --help 2>&1 | awk '
	/^(local|API) commands:/ { on = 1; next }
	/^$/ { on = 0 }
	on && /^  [a-z]/ {
		c = substr($0, 3, 18)
		sub(/ +$/, "", c)
		print c
	}' >"$tmp/commands"
[ -s "$tmp/commands" ] || miss "cronvisorctl --help lists no commands"
while IFS= read -r cmd; do
	grep -qF "cronvisorctl $cmd" "$src/README.md" "$src/docs/cli.md" ||
		miss "README.md, docs/cli.md: command \"cronvisorctl $cmd\" is not described"
done <"$tmp/commands"

if [ "$fails" -gt 0 ]; then
	echo "docs_check: $fails problem(s)" >&2
	exit 1
fi
echo "docs_check: $nkeys keys, $(wc -l <"$tmp/routes") routes, $(wc -l <"$tmp/commands") commands documented"
