#!/bin/sh
# tenant_root.sh: a tenant is not root (issue 17, part 1), tried as a
# tenant would, through the whole stack of tests/api-harness.sh (nginx,
# cronvisor-api, a root cronvisord, PostgreSQL), and the schedule's env
# merged by name (part 5).  Owners alice and bob are mapped to users of
# their own (run_users); carol gets run_user_default (cronvisor-run).
#
#  1. an editor's exec run, inspected from inside: its uid is alice's
#     user, it holds no capability, its only descriptors are 0-2, and it
#     cannot read the configuration file, /etc/shadow, or bob's running
#     command's environment and descriptors, nor signal the supervisor,
#     bob's command or bob's runner (kill -0: EPERM, not ESRCH);
#  2. carol's run is cronvisor-run; an admin's explicit run_as "root" is
#     root with the supervisor's capabilities;
#  3. an HTTP run gives up root before its request: the runner, caught
#     while a listener holds its request, is alice's user with no
#     capability;
#  4. with run_user_default "" an owner run_users omits gets 403 naming
#     target for an exec target (editor and admin alike; run_as lifts it,
#     for an admin), an http target still goes, and its exec schedule made
#     before fails its run with the reason recorded, the supervisor alive;
#  5. env: PATH and HOME of the schedule replace the defaults (one of
#     each), and a bare command name is found in the schedule's PATH.
# Needs root (users, a supervisor that can switch): exits 77 otherwise.
# Usage: tenant_root.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
if [ "$(id -u)" != 0 ]; then
	echo "SKIP tenant_root: needs root (a supervisor that switches users)"
	exit 77
fi
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"
ctl=$3
far='"kind": "cron", "cron": "0 0 1 1 *"'
A=$CV_TOKEN_ADMIN
TA=$CV_TOKEN_ALICE_EDITOR
TB=$CV_TOKEN_BOB_EDITOR
TC=$("$ctl" token create --owner carol --role editor \
	--database "$CRONVISOR_DATABASE_URL" 2>>"$work/ctl.log")

# The users of alice and bob, made once and kept (as hostile.sh's are).
for u in cvtest-a cvtest-b; do
	getent passwd "$u" >/dev/null ||
		useradd --system --user-group --no-create-home --home-dir /nonexistent \
			--shell /usr/sbin/nologin "$u" || { echo "cannot make $u"; exit 1; }
done
ua=$(id -u cvtest-a)
ga=$(id -g cvtest-a)
ub=$(id -u cvtest-b)
ur=$(id -u cronvisor-run)

# The configuration as the packages install it: in a directory any user
# may pass through, closed by its own mode (the harness's is 0644 in a
# 0700 directory, which would prove nothing).
chmod 711 "$tmp" "$work"
chmod 640 "$CV_CONF"

reloads=0
reloaded() { [ "$(grep -c 'configuration reloaded' "$work/cvd.log")" -ge $reloads ]; }
cp "$CV_CONF" "$tmp/base.conf" && chmod 600 "$tmp/base.conf"
# reconf LINES: the harness's configuration plus LINES, read again by the
# supervisor (SIGHUP) and by a new API process (it reads it at start).
reconf() {
	{ grep -v "^run_user" "$tmp/base.conf"; printf '%s\n' "$1"; } >"$CV_CONF"
	kill -HUP "$CV_SUPERVISOR_PID"
	reloads=$((reloads + 1))
	wait_until 10 reloaded
	ok "supervisor reloaded ($1)" "$(grep -c 'configuration reloaded' "$work/cvd.log")" $reloads
	rc_p=$(cat "$work/api.pid")
	kill -TERM "$rc_p"
	wait_gone 10 "$rc_p"
	"$CRONVISOR_API" -f "$CV_CONF" </dev/null >>"$work/api.log" 2>&1 &
	echo $! >"$work/api.pid"
	wait_until 10 api_healthy
	ok "API restarted" "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$CV_API_URL/health")" 200
}
reconf 'run_users = "alice:cvtest-a, bob:cvtest-b"'

# mk TOKEN NAME TARGET [OWNER]: a schedule, 201 checked; prints its id.
mk() {
	send POST "/schedules${4:+?owner=$4}" "$1" "{\"name\": \"$2\", $far, \"timeout_seconds\": 60, \"max_retries\": 0, \"target\": $3}"
	[ "$code" = 201 ] || ok "create $2" "$code $resp" 201
	j .id
}
sh_target() { jq -cn --arg c "$1" '{type: "exec", argv: ["/bin/sh", "-c", $c]}'; }
# run_of ID TOKEN: triggers ID, waits for its run to end; prints its output
# (the run document is left in $tmp/run).
run_of() {
	call POST "/schedules/$1/trigger" "$2"
	ro_r=$(j .run_id)
	wait_api 30 '.status != null and .status != "running"' "/runs/$ro_r" "$2" ||
		ok "run $ro_r ended" "$code $resp" "200 ended"
	printf '%s' "$resp" >"$tmp/run"
	jq -r '.output // ""' <"$tmp/run"
}
# pid_of ID: the pid of schedule ID's running command (found by its
# CRONVISOR_SCHEDULE_ID), once it runs.
pid_of() {
	wait_until 10 sh -c "[ -n \"\$(grep -lsa -- 'CRONVISOR_SCHEDULE_ID=$1' /proc/[0-9]*/environ)\" ]"
	grep -lsa -- "CRONVISOR_SCHEDULE_ID=$1" /proc/[0-9]*/environ | head -n 1 | cut -d/ -f3
}

# --- 1. an editor's run, from inside ------------------------------------
bob=$(mk "$TB" bob-sleeps "$(sh_target 'echo bob-secret; exec sleep 20')")
call POST "/schedules/$bob/trigger" "$TB"
bpid=$(pid_of "$bob")
brunner=$(awk '{print $4}' /proc/"$bpid"/stat)
ok "bob's command runs as bob's user" "$(awk '$1 == "Uid:" {print $2}' /proc/"$bpid"/status)" "$ub"
probe='echo "uid $(id -u) groups $(id -G)"
grep -E "^Cap(Inh|Prm|Eff|Amb)" /proc/self/status | tr -s "\t" " "
echo "fds $(ls /proc/self/fd | wc -l)"
for f in CONF /etc/shadow /proc/BOB/environ; do
	head -c 1 "$f" >/dev/null 2>&1 && echo "read $f" || echo "no-read $f"
done
ls /proc/BOB/fd >/dev/null 2>&1 && echo "list bob fds" || echo "no-list bob fds"
for p in SUP BOB RUNNER; do
	kill -0 "$p" 2>&1 | grep -q "not permitted" && echo "eperm $p" || echo "signal? $p"
done'
probe=$(printf '%s' "$probe" | sed -e "s|CONF|$CV_CONF|" -e "s|BOB|$bpid|g" \
	-e "s|SUP|$CV_SUPERVISOR_PID|" -e "s|RUNNER|$brunner|")
al=$(mk "$TA" alice-probe "$(sh_target "$probe")")
out=$(run_of "$al" "$TA")
zero=0000000000000000
ok "alice's run: her user, no capability, fds 0-2 (and ls's own)" "$out" "uid $ua groups $ga
CapInh: $zero
CapPrm: $zero
CapEff: $zero
CapAmb: $zero
fds 4
no-read $CV_CONF
no-read /etc/shadow
no-read /proc/$bpid/environ
no-list bob fds
eperm $CV_SUPERVISOR_PID
eperm $bpid
eperm $brunner"
ok "alice's run succeeded" "$(jq -r .status <"$tmp/run")" succeeded
ok "bob's command still runs" "$(kill -0 "$bpid" && echo alive)" alive

# --- 2. the default user; an admin's explicit root ----------------------
c1=$(mk "$TC" carol-id "$(sh_target 'id -u; grep ^CapEff /proc/self/status')")
ok "carol's run: run_user_default, no capability" "$(run_of "$c1" "$TC")" "$ur
CapEff:	$zero"
rt=$(mk "$A" root-id '{"type": "exec", "argv": ["/bin/sh", "-c", "id -u; grep ^CapEff /proc/self/status"], "run_as": "root"}')
ok "an admin's run_as root: root, the supervisor's capabilities" "$(run_of "$rt" "$A")" "0
CapEff:	$(awk '$1 == "CapEff:" {print $2}' /proc/"$CV_SUPERVISOR_PID"/status)"
send POST /schedules "$TA" "{\"name\": \"x\", $far, \"target\": {\"type\": \"exec\", \"argv\": [\"/bin/true\"], \"run_as\": \"root\"}}"
ok_error "an editor's run_as root" 403 forbidden target.run_as

# --- 3. an HTTP run gives up root before its request --------------------
python3 -c 'import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(4)
print(s.getsockname()[1], flush=True)
c, _ = s.accept()
open(sys.argv[1], "w").write("accepted")
time.sleep(15)' "$tmp/hold.accepted" >"$tmp/hold.port" 2>/dev/null &
hold=$!
extra="$extra $hold"
wait_until 5 test -s "$tmp/hold.port"
h=$(mk "$TA" alice-http "{\"type\": \"http\", \"url\": \"http://127.0.0.1:$(cat "$tmp/hold.port")/\"}")
call POST "/schedules/$h/trigger" "$TA"
# http_runner: the supervisor's child that is a cronvisord (the runner
# helper's are cronvisor-runne...) and not bob's runner: its uid and CapEff.
http_runner() {
	for p in $(cat /proc/"$CV_SUPERVISOR_PID"/task/*/children 2>/dev/null); do
		[ "$p" != "$brunner" ] || continue
		[ "$(cat /proc/"$p"/comm 2>/dev/null)" = cronvisord ] || continue
		awk '$1 == "Uid:" {u = $2} $1 == "CapEff:" {c = $2} END {print u, c}' /proc/"$p"/status
		return 0
	done
	return 1
}
wait_until 10 test -s "$tmp/hold.accepted"
ok "an HTTP runner during its request: the owner's user, no capability" "$(http_runner)" "$ua $zero"
kill "$hold" 2>/dev/null
kill "$bpid"
wait_for 30 "SELECT count(*) = 0 FROM runs WHERE status = 'running'" ||
	ok "every run ended" "$(sql "SELECT count(*) FROM runs WHERE status = 'running'")" 0

# --- 4. no default user: exec targets refused, old ones fail ------------
reconf 'run_users = "alice:cvtest-a, bob:cvtest-b"
run_user_default = ""'
before=$(snap)
send POST /schedules "$TC" "{\"name\": \"c\", $far, \"target\": {\"type\": \"exec\", \"argv\": [\"/bin/true\"]}}"
ok_error "an owner with no user: exec target refused" 403 forbidden target
send POST /schedules?owner=carol "$A" "{\"name\": \"c\", $far, \"target\": {\"type\": \"exec\", \"argv\": [\"/bin/true\"]}}"
ok_error "the admin too, for that owner, without run_as" 403 forbidden target
send PATCH "/schedules/$c1" "$TC" '{"target": {"type": "exec", "argv": ["/bin/true"]}}'
ok_error "PATCH of the target too" 403 forbidden target
ok "nothing changed" "$(snap)" "$before"
send POST /schedules?owner=carol "$A" "{\"name\": \"c-as\", $far, \"target\": {\"type\": \"exec\", \"argv\": [\"/bin/true\"], \"run_as\": \"cvtest-b\"}}"
ok_status "an admin's run_as for that owner: 201" 201
send POST /schedules "$TC" "{\"name\": \"c-http\", $far, \"target\": {\"type\": \"http\", \"url\": \"http://127.0.0.1:1/\"}}"
ok_status "an http target of that owner: 201" 201
send POST /schedules "$TA" "{\"name\": \"a\", $far, \"target\": {\"type\": \"exec\", \"argv\": [\"/bin/true\"]}}"
ok_status "a mapped owner's exec target: 201" 201
run_of "$c1" "$TC" >/dev/null
ok "carol's older exec schedule: its run fails, the reason recorded" \
	"$(jq -r '.status + ": " + .error' <"$tmp/run")" \
	'failed: target: owner "carol" has no user to run as (run_users names none and run_user_default is empty); only an admin'"'"'s target.run_as can give one'
ok "the supervisor is alive" "$(kill -0 "$CV_SUPERVISOR_PID" && echo alive)" alive

# --- 5. env merged by name ---------------------------------------------
bin=$(mktemp -d /tmp/cvtr.XXXXXX) && chmod 755 "$bin"
printf '#!/bin/sh\necho found in $0\n' >"$bin/cvtr-hello"
chmod 755 "$bin/cvtr-hello"
# No shell between: one would keep the last of two PATHs and hide the
# bug; env(1) shows every entry the command got, the runner's PATH search
# finds a bare name.
env_of() {
	jq -cn --arg p "$bin:/usr/bin:/bin" --arg c "$1" \
		'{type: "exec", argv: [$c], env: {PATH: $p, HOME: "/tmp"}}'
}
e=$(mk "$TA" env-env "$(env_of /usr/bin/env)")
ok "the schedule's PATH and HOME win, once each" \
	"$(run_of "$e" "$TA" | grep -E '^(PATH|HOME)=' | sort)" "HOME=/tmp
PATH=$bin:/usr/bin:/bin"
e=$(mk "$TA" env-path "$(env_of cvtr-hello)")
ok "a bare name is found in the schedule's PATH" \
	"$(run_of "$e" "$TA"):$(jq -r .status <"$tmp/run")" "found in $bin/cvtr-hello:succeeded"
rm -rf "$bin"

api_finish
summary tenant_root
