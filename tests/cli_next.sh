#!/bin/sh
# cli_next.sh: drives "cronvisorctl next" and "cronvisorctl config check"
# the way a user does and checks what they print and how they exit.
# Usage: cli_next.sh PATH/TO/cronvisorctl
set -u
ctl=$1
. "$(dirname "$0")/itest-lib.sh"

check weekdays 0 "2026-03-09T13:00:00Z  Mon 2026-03-09 09:00:00-04:00 EDT" -- \
	"$ctl" next '0 9 * * 1-5' --tz America/New_York --count 5 \
	--from 2026-03-07T00:00:00Z
check count 0 "2026-03-13T13:00:00Z" -- \
	"$ctl" next '0 9 * * 1-5' --tz America/New_York --count 5 \
	--from 2026-03-07T00:00:00Z
check gap-note 0 "2026-03-08T07:00:00Z  Sun 2026-03-08 03:00:00-04:00 EDT  (02:30 wall time skipped by DST" -- \
	"$ctl" next '30 2 * * *' --tz America/New_York --count 2 \
	--from 2026-03-07T12:00:00Z
check fold-note 0 "(wall time repeated by DST: second of two fires)" -- \
	"$ctl" next '30 1 * * *' --tz America/New_York --count 3 \
	--dst-fold both --from 2026-10-31T12:00:00Z
check every 0 "2026-01-01T00:03:00Z" -- \
	"$ctl" next --every 90s --start 2026-01-01T00:00:00Z --count 3 \
	--from 2025-12-31T00:00:00Z
check at 0 "2026-12-24T17:00:00Z  Thu 2026-12-24 18:00:00+01:00 CET" -- \
	"$ctl" next --at 2026-12-24T18:00:00 --tz Europe/Berlin --from 2026-01-01
# Instants to the millisecond, as the API keeps them; finer is refused.
check at-ms 0 "2026-11-25T17:40:20.436Z  Wed 2026-11-25 18:40:20.436+01:00 CET" -- \
	"$ctl" next --at 2026-11-25T17:40:20.436Z --tz Europe/Paris --from 2026-11-25T00:00:00Z
check every-ms 0 "2026-11-25T17:42:20.250Z" -- \
	"$ctl" next --every 60s --start 2026-11-25T17:40:20.25Z --from 2026-11-25T17:41:00Z --count 2
check at-finer 1 "at: .4361: finer than milliseconds" -- \
	"$ctl" next --at 2026-11-25T17:40:20.4361Z
# The output of these is filtered; the command's own status is kept.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$ctl" next --every 90s --start 2026-01-01T00:00:00Z --count 3 \
	--format epoch --from 2025-12-31T00:00:00Z >"$tmp/out"
rc=$?
out=$(tr '\n' ' ' <"$tmp/out")
check epoch 0 "1767225600 1767225690 1767225780 " -- sh -c "echo '$out'; exit $rc"
"$ctl" next '@daily' --tz Asia/Kathmandu --count 2 --json \
	--from 2026-06-01T00:00:00Z >"$tmp/out"
rc=$?
out=$(jq -c '[.timezone, .next[0].epoch, .next[0].local, .next[1].offset]' <"$tmp/out")
check json 0 '["Asia/Kathmandu",1780337700,"2026-06-02T00:00:00+05:45",20700]' -- sh -c "echo '$out'; exit $rc"
# start_at holds for cron schedules too; a one-shot takes none
check cron-start 0 "2030-01-01T00:00:00Z" -- \
	"$ctl" next '0 0 * * *' --start 2030-01-01T00:00:00Z --count 1 --from 2026-01-01
check at-start 1 "start: a one-shot schedule takes no start" -- \
	"$ctl" next --at 2030-01-01T00:00:00Z --start 2029-01-01T00:00:00Z
check year-10000 0 "9999-12-31T23:00:00Z  Sat 10000-01-01 13:00:00+14:00" -- \
	"$ctl" next '0 * * * *' --tz Pacific/Kiritimati --from 9999-12-31T21:30:00Z --count 2
if [ -w /dev/full ]; then
	check write-error 1 "writing the output" -- sh -c "'$ctl' next '* * * * *' --count 100000 >/dev/full"
fi

# errors name the problem and exit 1; usage errors exit 2
check bad-hour 1 "hour: 24 is out of range 0-23" -- "$ctl" next '0 24 * * *'
check reversed 1 "day-of-week: reversed range FRI-MON" -- "$ctl" next '0 0 * * FRI-MON'
check never 1 "never fires" -- "$ctl" next '0 0 30 2 *'
check bad-zone 1 '--tz: unknown time zone "Mars/Olympus"' -- "$ctl" next '* * * * *' --tz Mars/Olympus
check bad-from 1 "--from:" -- "$ctl" next '* * * * *' --from tomorrow
check bad-every 1 "not a duration" -- "$ctl" next --every soon
check two-kinds 1 "exactly one of" -- "$ctl" next '* * * * *' --every 5m
check bad-count 2 "--count" -- "$ctl" next '* * * * *' --count 0
check unquoted 2 "quote the cron expression" -- "$ctl" next 0 9 '*' '*' '*'
check bad-cmd 2 'unknown command "nxet"' -- "$ctl" nxet
check help 0 "--dst-fold" -- "$ctl" next --help

# batch: one reply per line, in order, errors inline
replies=$(printf '%s\n' \
	'{"id": 1, "cron": "0 9 * * 1-5", "tz": "America/New_York", "from": 1772841600, "count": 2}' \
	'' \
	'{"id": "b", "cron": "0 24 * * *", "from": 0, "count": 1}' \
	'not json' \
	'{"id": [3], "every": 90, "start": "2026-01-01T00:00:00Z", "from": 1767225600, "count": 2}' \
	'{"id": 4, "cron": "* * * * *", "tz": "Nowhere/Land"}' \
	'{"id": 5, "cron": "* * * * *", "color": "red"}' |
	"$ctl" next --batch | tr '\n' '|')
check batch 0 '{"id":1,"next":[1773061200,1773147600]}|{"id":"b","error":"hour: 24 is out of range 0-23"}|{"id":null,"error":' -- echo "$replies"
check batch-every 0 '{"id":[3],"next":[1767225690,1767225780]}|{"id":4,"error":"unknown time zone \"Nowhere/Land\""}|{"id":5,"error":' -- echo "$replies"

# config check prints the effective configuration, env overrides applied
empty=$tmp/empty
: >"$empty"
check config 0 "max_concurrent_runs = 7" -- \
	env CRONVISOR_MAX_CONCURRENT_RUNS=7 "$ctl" config check -f "$empty"
check config-bad 1 "CRONVISOR_MAX_CONCURRENT_RUNS: 0 is out of range" -- \
	env CRONVISOR_MAX_CONCURRENT_RUNS=0 "$ctl" config check -f "$empty"
check config-missing 1 "No such file" -- "$ctl" config check -f /nonexistent/cronvisor.conf
# ... safe to paste: no password of any URL, no secret key's value
printf '%s\n' 'database_url = "host=db user=cv password=pw-db-1"' \
	'redis_url = redis://:pw-redis-2@127.0.0.1:6379/0' \
	'receiver_url = https://hook:pw-rcv-3@rcv.example/in' >"$tmp/secret.conf"
check config-mask 0 "redis_url = redis://:***@127.0.0.1:6379/0" -- \
	"$ctl" config check -f "$tmp/secret.conf"
check config-mask-rcv 0 "receiver_url = https://hook:***@rcv.example/in" -- \
	"$ctl" config check -f "$tmp/secret.conf"
lacks config-mask-none "pw-"
check config-mask-uri 0 "database_url = postgresql://cv:***@db/x" -- \
	env CRONVISOR_DATABASE_URL=postgresql://cv:pw-4@db/x "$ctl" config check -f "$empty"
lacks config-mask-uri-none "pw-"

summary cli_next
