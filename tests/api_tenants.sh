#!/bin/sh
# api_tenants.sh: owners and roles through the whole stack of
# tests/api-harness.sh (docs/api.md, "Authentication and tenants").
# Enumerated: for owners alice and bob and roles editor and viewer, every
# endpoint on the other owner's schedule and run answers 404 and changes
# nothing; lists show only the owner's own; a viewer's writes are 403 and
# change nothing; an admin sees and changes both owners' and may create for
# another (?owner=); a non-admin setting target.run_as or limits above the
# configured defaults gets 403 naming the field, an admin may.
# Usage: api_tenants.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"
far='"kind": "cron", "cron": "0 0 1 1 *"'
tgt='"target": {"type": "exec", "argv": ["/bin/echo", "hi"]}'

# One schedule per owner, each with a finished (triggered) run.
mk() { # mk TOKEN NAME: prints the new schedule's id
	send POST /schedules "$1" "{\"name\": \"$2\", $far, $tgt}"
	[ "$code" = 201 ] || { ok "create $2" "$code $resp" 201; return; }
	j .id
}
runof() { # runof TOKEN ID: triggers ID, waits for the run; prints its id
	call POST "/schedules/$2/trigger" "$1"
	r=$(j .run_id)
	wait_api 20 '.status == "succeeded"' "/runs/$r" "$1" ||
		ok "run $r of $2 succeeded" "$code $resp" "200 succeeded"
	echo "$r"
}
sa=$(mk "$CV_TOKEN_ALICE_EDITOR" alice-1)
sb=$(mk "$CV_TOKEN_BOB_EDITOR" bob-1)
ra=$(runof "$CV_TOKEN_ALICE_EDITOR" "$sa")
rb=$(runof "$CV_TOKEN_BOB_EDITOR" "$sb")
ok "owners recorded" "$(sql "SELECT string_agg(owner, ',' ORDER BY owner) FROM schedules WHERE id IN ('$sa', '$sb')")" "alice,bob"

# Every endpoint on the other owner's schedule: 404 and nothing changed.
for who in ALICE_EDITOR ALICE_VIEWER BOB_EDITOR BOB_VIEWER; do
	eval "t=\$CV_TOKEN_$who"
	case $who in
	ALICE_*) own=$sa other=$sb orun=$rb ;;
	*) own=$sb other=$sa orun=$ra ;;
	esac
	before=$(snap)
	call GET "/schedules/$other" "$t"
	ok_error "$who: GET other's schedule" 404 not_found null
	send PATCH "/schedules/$other" "$t" '{"name": "stolen"}'
	ok_error "$who: PATCH other's schedule" 404 not_found null
	call DELETE "/schedules/$other" "$t"
	ok_error "$who: DELETE other's schedule" 404 not_found null
	for verb in pause resume trigger; do
		call POST "/schedules/$other/$verb" "$t"
		ok_error "$who: $verb other's schedule" 404 not_found null
	done
	call GET "/schedules/$other/runs" "$t"
	ok_error "$who: runs of other's schedule" 404 not_found null
	call GET "/runs/$orun" "$t"
	ok_error "$who: GET other's run" 404 not_found null
	send POST /schedules/batch-delete "$t" "{\"ids\": [\"$own\", \"$other\"]}"
	ok_error "$who: batch-delete including other's" 404 not_found "ids[1]"
	ok "$who: nothing changed" "$(snap)" "$before"
	call GET /schedules "$t"
	ok "$who: list shows only own" "$code $(j '[.schedules[].id] | join(" ")')" "200 $own"
	call GET "/schedules?owner=alice" "$t"
	ok "$who: ?owner= is admin only" "$code" 403
done

# A viewer reads its own and may not write: 403, nothing changed.
for who in ALICE_VIEWER BOB_VIEWER; do
	eval "t=\$CV_TOKEN_$who"
	case $who in
	ALICE_*) own=$sa orun=$ra ;;
	*) own=$sb orun=$rb ;;
	esac
	call GET "/schedules/$own" "$t"
	ok "$who: GET own" "$code" 200
	call GET "/schedules/$own/runs" "$t"
	ok "$who: runs of own" "$code $(j '.runs[0].id')" "200 $orun"
	call GET "/runs/$orun" "$t"
	ok "$who: GET own run" "$code" 200
	before=$(snap)
	send POST /schedules "$t" "{\"name\": \"viewer\", $far, $tgt}"
	ok_error "$who: create" 403 forbidden null
	send PATCH "/schedules/$own" "$t" '{"name": "viewer"}'
	ok_error "$who: PATCH own" 403 forbidden null
	call DELETE "/schedules/$own" "$t"
	ok_error "$who: DELETE own" 403 forbidden null
	for verb in pause resume trigger; do
		call POST "/schedules/$own/$verb" "$t"
		ok_error "$who: $verb own" 403 forbidden null
	done
	send POST /schedules/batch-delete "$t" "{\"ids\": [\"$own\"]}"
	ok_error "$who: batch-delete own" 403 forbidden null
	ok "$who: nothing changed" "$(snap)" "$before"
done

# run_as and limits above the defaults: admin only, 403 naming the field.
for who in ALICE_EDITOR BOB_EDITOR; do
	eval "t=\$CV_TOKEN_$who"
	before=$(snap)
	send POST /schedules "$t" "{\"name\": \"ra\", $far, \"target\": {\"type\": \"exec\", \"argv\": [\"/bin/true\"], \"run_as\": \"nobody\"}}"
	ok_error "$who: create with target.run_as" 403 forbidden target.run_as
	send POST /schedules "$t" "{\"name\": \"lim\", $far, $tgt, \"limits\": {\"memory_mb\": 4096}}"
	ok_error "$who: create with limits.memory_mb above the default" 403 forbidden limits.memory_mb
	send POST /schedules "$t" "{\"name\": \"lim\", $far, $tgt, \"limits\": {\"cpu_seconds\": 601}}"
	ok_error "$who: create with limits.cpu_seconds above the default" 403 forbidden limits.cpu_seconds
	case $who in ALICE_*) own=$sa ;; *) own=$sb ;; esac
	send PATCH "/schedules/$own" "$t" '{"target": {"type": "exec", "argv": ["/bin/true"], "run_as": "nobody"}}'
	ok_error "$who: PATCH target.run_as" 403 forbidden target.run_as
	send PATCH "/schedules/$own" "$t" '{"limits": {"nofile": 1048576}}'
	ok_error "$who: PATCH limits.nofile above the default" 403 forbidden limits.nofile
	ok "$who: nothing changed" "$(snap)" "$before"
	send POST /schedules "$t" "{\"name\": \"lim-ok\", $far, $tgt, \"limits\": {\"memory_mb\": 512}}"
	ok "$who: limits within the defaults" "$code $(j .limits.memory_mb)" "201 512"
	call DELETE "/schedules/$(j .id)" "$t"
done

# The admin sees and changes both owners'.
T=$CV_TOKEN_ADMIN
call GET /schedules "$T"
ok "admin: list has both owners" "$code $(j '[.schedules[] | select(.id == "'"$sa"'" or .id == "'"$sb"'") | .owner] | sort | join(",")')" "200 alice,bob"
call GET "/schedules?owner=bob" "$T"
ok "admin: ?owner=bob" "$code $(j '[.schedules[].owner] | unique | join(",")')" "200 bob"
for s in "$sa" "$sb"; do
	call GET "/schedules/$s" "$T"
	ok "admin: GET $s" "$code" 200
	send PATCH "/schedules/$s" "$T" '{"description": "seen by admin"}'
	ok "admin: PATCH $s" "$code $(j .description)" "200 seen by admin"
	call POST "/schedules/$s/pause" "$T"
	ok "admin: pause $s" "$code $(j .status)" "200 paused"
	call POST "/schedules/$s/resume" "$T"
	ok "admin: resume $s" "$code $(j .status)" "200 active"
done
call GET "/runs/$rb" "$T"
ok "admin: GET bob's run" "$code" 200
call GET "/schedules/$sa/runs" "$T"
ok "admin: alice's runs" "$code $(j '.runs[0].id')" "200 $ra"
send POST "/schedules?owner=bob" "$T" "{\"name\": \"for-bob\", $far, \"target\": {\"type\": \"exec\", \"argv\": [\"/bin/true\"], \"run_as\": \"nobody\"}, \"limits\": {\"memory_mb\": 4096}}"
ok "admin: create for bob with run_as and high limits" \
	"$code $(j '[.owner, .target.run_as, .limits.memory_mb] | map(tostring) | join(",")')" "201 bob,nobody,4096"
fb=$(j .id)
call GET "/schedules/$fb" "$CV_TOKEN_BOB_VIEWER"
ok "bob sees what admin made for him" "$code" 200
call GET "/schedules/$fb" "$CV_TOKEN_ALICE_EDITOR"
ok "alice does not" "$code" 404
send POST /schedules/batch-delete "$T" "{\"ids\": [\"$sa\", \"$sb\", \"$fb\"]}"
ok "admin: batch-delete across owners" "$code $(j .count)" "200 3"
ok "admin: gone" "$(sql "SELECT count(*) FROM schedules WHERE deleted_at IS NULL AND id IN ('$sa', '$sb', '$fb')")" 0

api_finish
summary api_tenants
