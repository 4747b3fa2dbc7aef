#!/bin/sh
# cli_mcp.sh: `cronvisorctl mcp` (docs/cli.md, "mcp"), the scheduling
# tools for AI agents over the Model Context Protocol, driven by a scripted
# MCP client session (tests/helpers/mcpclient.py) against the real API
# through nginx: initialize and the tools with their input schemas; each
# tool doing what it says, checked in the database (a schedule created,
# listed, previewed, paused, resumed, its runs listed, deleted); bad
# arguments as tool errors naming the argument, the API's refusals as tool
# errors with its words; protocol errors (not JSON, not JSON-RPC, an
# unknown method or tool); and roles and tenants holding (a viewer cannot
# create, bob cannot pause alice's schedule).
# Usage: cli_mcp.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"

CRONVISOR_URL=${CV_API_URL%/api/v1} python3 "$here/helpers/mcpclient.py" \
	"$CRONVISORCTL" "$CV_TOKEN_ALICE_EDITOR" "$CV_TOKEN_ALICE_VIEWER" \
	"$CV_TOKEN_BOB_EDITOR" >"$tmp/mcp.out" 2>"$work/mcp.log"
rc=$?
cat "$tmp/mcp.out"
ok "the scripted session ran to its end" "$rc:$(tail -n 1 "$tmp/mcp.out" | grep -c '^mcp: [0-9]* passed, 0 failed$')" "0:1"
id=$(sed -n 's/^created //p' "$tmp/mcp.out")
ok "the schedule it deleted is gone" "$(sql "SELECT count(*) FROM schedules WHERE id = '$id'")" 0
ok "no token in any log" "$(cat "$work"/*.log | grep -c -e "$CV_TOKEN_ALICE_EDITOR" -e "$CV_TOKEN_BOB_EDITOR")" 0

api_finish
summary cli_mcp
