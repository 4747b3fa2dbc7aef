#!/bin/sh
# security.sh: the security checks of issue 6, part 5, through the whole
# stack of tests/api-harness.sh (nginx, cronvisor-api, cronvisord,
# PostgreSQL), each enumerated rather than sampled:
#  1. tenant isolation: owners alice and bob x roles admin, editor, viewer
#     x every endpoint of docs/api.md, the exact status of each, and
#     nothing changed by a refused request;
#  2. hostile strings in every string field of a schedule (quotes,
#     semicolons, "'); DROP TABLE schedules; --", backslashes, $1, %, _,
#     multi-byte, emoji, RTL): stored and returned byte for byte, or
#     refused with 400 (NUL, bad timezone, bad cron); the tables intact;
#     the name prefix filter taking % and _ literally;
#  3. exec targets never go through a shell unless argv names one;
#  4. run_as and limits above the defaults: admin only, 403 naming the
#     field;
#  5. http_allow_hosts, http_deny_hosts and http_max_redirects end to end:
#     a denied host, a name resolving to a denied address, the receiver, a
#     redirect to a denied host and an allowed redirect, with nginx's
#     access log showing which requests arrived;
#  6. last: no token appears in any log of the stack or in any response
#     body after its creation, and `cronvisorctl token list` shows only
#     prefixes.
# Usage: security.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"
ctl=$3
bodies=$tmp/bodies # every response body of the test, for part 6
: >"$bodies"

# c METHOD PATH TOKEN [CURL-ARGS], s METHOD PATH TOKEN BODY: call and send
# of api-lib.sh, keeping the response for the token check.
c() {
	call "$@"
	printf '%s\n' "$resp" >>"$bodies"
	cat "$tmp/headers" >>"$bodies" 2>/dev/null
}
s() {
	send "$@"
	printf '%s\n' "$resp" >>"$bodies"
	cat "$tmp/headers" >>"$bodies" 2>/dev/null
}

# token OWNER ROLE: a new token, made as an operator makes one.
token() {
	"$ctl" token create --owner "$1" --role "$2" \
		--database "$CRONVISOR_DATABASE_URL" 2>>"$work/ctl.log"
}
T_alice_admin=$(token alice admin)
T_bob_admin=$(token bob admin)
T_alice_editor=$CV_TOKEN_ALICE_EDITOR
T_alice_viewer=$CV_TOKEN_ALICE_VIEWER
T_bob_editor=$CV_TOKEN_BOB_EDITOR
T_bob_viewer=$CV_TOKEN_BOB_VIEWER
T_sql=$(token sqlt editor)
A=$CV_TOKEN_ADMIN
far='"kind": "cron", "cron": "0 0 1 1 *"'
tgt='"target": {"type": "exec", "argv": ["/bin/true"]}'

# mk OWNER NAME: a schedule of OWNER made by the admin; prints its id.
mk() {
	s POST "/schedules?owner=$1" "$A" "{\"name\": \"$2\", $far, $tgt}"
	[ "$code" = 201 ] || ok "create $2 for $1" "$code $resp" 201
	j .id
}

# run_of ID TOKEN: triggers ID and waits for its run to end; prints the
# run's id (the run document is left in $tmp/run).
run_of() {
	c POST "/schedules/$1/trigger" "$2"
	ro_r=$(j .run_id)
	wait_api 30 '.status != null and .status != "running"' "/runs/$ro_r" "$2" ||
		ok "run $ro_r ended" "$code $resp" "200 ended"
	printf '%s' "$resp" >"$tmp/run"
	echo "$ro_r"
}

# --- 1. Tenant isolation ---------------------------------------------------

# One schedule with a finished run per owner, for GET /runs/{id}.
for o in alice bob; do
	id=$(mk "$o" "$o-runs")
	r=$(run_of "$id" "$A")
	eval "R_$o=\$r"
done

# want ROLE REL ENDPOINT: the documented status of ENDPOINT for a token of
# ROLE on a schedule of its own owner (REL own) or of the other (other).
want() {
	case $1-$2-$3 in
	*-*-health | *-*-list) echo 200 ;;
	admin-*-batch-delete | editor-own-batch-delete) echo 200 ;;
	admin-*-create | editor-own-create) echo 201 ;;
	viewer-own-create) echo 403 ;;
	*-other-create) echo 403 ;; # ?owner= another: admin only
	admin-*-delete | editor-own-delete) echo 204 ;;
	admin-*-trigger | editor-own-trigger) echo 202 ;;
	admin-*-* | editor-own-*) echo 200 ;;
	viewer-own-get | viewer-own-runs | viewer-own-getrun) echo 200 ;;
	viewer-own-*) echo 403 ;;
	*-other-*) echo 404 ;;
	esac
}

# endpoint NAME TOKEN OWNER ID ID2 ID3 RUN: one request of the matrix.
endpoint() {
	case $1 in
	health) c GET /health "" ;;
	list) c GET /schedules "$2" ;;
	create) s POST "/schedules?owner=$3" "$2" "{\"name\": \"m-new\", $far, $tgt}" ;;
	get) c GET "/schedules/$4" "$2" ;;
	patch) s PATCH "/schedules/$4" "$2" '{"description": "changed"}' ;;
	pause) c POST "/schedules/$4/pause" "$2" ;;
	resume) c POST "/schedules/$4/resume" "$2" ;;
	trigger) c POST "/schedules/$4/trigger" "$2" ;;
	runs) c GET "/schedules/$4/runs" "$2" ;;
	getrun) c GET "/runs/$7" "$2" ;;
	batch-delete) s POST /schedules/batch-delete "$2" "{\"ids\": [\"$5\"]}" ;;
	delete) c DELETE "/schedules/$6" "$2" ;;
	esac
}

endpoints="health list get patch pause resume trigger runs getrun batch-delete delete create"
cells=0
for me in alice bob; do
	for role in admin editor viewer; do
		eval "t=\$T_${me}_$role"
		for o in alice bob; do
			rel=other
			[ "$o" = "$me" ] && rel=own
			eval "run=\$R_$o"
			id=$(mk "$o" "m-$me-$role")
			id2=$(mk "$o" "m2-$me-$role")
			id3=$(mk "$o" "m3-$me-$role")
			before=$(snap)
			for e in $endpoints; do
				endpoint "$e" "$t" "$o" "$id" "$id2" "$id3" "$run"
				w=$(want "$role" "$rel" "$e")
				ok "$me $role on $rel ($o) schedule: $e" "$code" "$w"
				cells=$((cells + 1))
				case $w in
				404) ok "$me $role $e: not_found" "$(j .error.code)" not_found ;;
				403) ok "$me $role $e: forbidden" "$(j .error.code)" forbidden ;;
				esac
			done
			# The list shows the schedule exactly when the token may see it.
			c GET "/schedules?limit=500" "$t"
			seen=$(j "[.schedules[].id] | any(. == \"$id\")")
			case $role-$rel in
			admin-* | *-own) ok "$me $role: list shows $o's" "$seen" true ;;
			*) ok "$me $role: list hides $o's" "$seen" false ;;
			esac
			case $role-$rel in
			admin-* | editor-own) ;;
			*) ok "$me $role on $o's: nothing changed" "$(snap)" "$before" ;;
			esac
		done
	done
done
ok "tenant matrix: every cell enumerated" "$cells" $((2 * 3 * 2 * 12))

# --- 2. Hostile strings, SQL built with parameters only ---------------------

evil1="'); DROP TABLE schedules; --"
evil2="q\"uo'te; semi; back\\slash \\\\ \$1 \$\$ %s %_ \`id\`"
evil3="héllo wörld ✓ 😀 עברית مرحبا ‮RTL‬ 中文"
port=${CV_API_URL#http://127.0.0.1:}
port=${port%%/*}
n=0
for v in "$evil1" "$evil2" "$evil3"; do
	n=$((n + 1))
	body=$(jq -cn --arg v "$v" --arg n "evil-$n $v" '{
		name: $n, description: $v, workflow_id: $v, trigger_node_id: $v,
		kind: "cron", cron: "0 0 1 1 *",
		target: {type: "exec", argv: ["/bin/echo", $v, ";", $v],
		         env: {EVIL: $v}, cwd: "/"},
		trigger_payload: {($v): $v, nested: {($v): [$v, {($v): $v}]}}}')
	s POST /schedules "$T_sql" "$body"
	ok "evil $n: created" "$code" 201
	id=$(j .id)
	for f in name description workflow_id trigger_node_id target.argv target.env trigger_payload; do
		ok "evil $n: $f byte for byte" "$(printf '%s' "$resp" | jq -S -c ".$f" | od -An -tx1)" \
			"$(printf '%s' "$body" | jq -S -c ".$f" | od -An -tx1)"
	done
	c GET "/schedules/$id" "$T_sql"
	ok "evil $n: GET returns the same document" \
		"$(printf '%s' "$resp" | jq -S -c '[.name, .description, .workflow_id, .trigger_node_id, .target, .trigger_payload]')" \
		"$(printf '%s' "$body" | jq -S -c '[.name, .description, .workflow_id, .trigger_node_id, .target, .trigger_payload]')"
	ok "evil $n: stored in PostgreSQL as sent" \
		"$(sql "SELECT description FROM schedules WHERE id = '$id'" | od -An -tx1)" \
		"$(printf '%s\n' "$v" | od -An -tx1)"
	# The command gets the strings as words, unchanged.
	r=$(run_of "$id" "$T_sql")
	ok "evil $n: argv reaches the command unchanged" \
		"$(jq -j .output <"$tmp/run" | od -An -tx1)" \
		"$(printf '%s ; %s\n' "$v" "$v" | od -An -tx1)"
	# An http target: headers, URL path and query, body.
	hbody=$(jq -cn --arg v "$v" --arg u "http://127.0.0.1:$port/landing/x';--?q=%27);DROP%20TABLE%20schedules;--&v=\$1\\" '{
		name: "evil-http", kind: "cron", cron: "0 0 1 1 *",
		target: {type: "http", method: "POST", url: $u,
		         headers: {"X-Evil": $v}, body: {($v): $v}}}')
	s POST /schedules "$T_sql" "$hbody"
	ok "evil $n http: created" "$code" 201
	ok "evil $n http: target byte for byte" "$(printf '%s' "$resp" | jq -S -c .target | od -An -tx1)" \
		"$(printf '%s' "$hbody" | jq -S -c .target | od -An -tx1)"
	# A PATCH carries them too.
	s PATCH "/schedules/$id" "$T_sql" "$(jq -cn --arg v "$v" '{description: ($v + $v)}')"
	ok "evil $n: PATCH byte for byte" "$(j .description | od -An -tx1)" \
		"$(printf '%s%s\n' "$v" "$v" | od -An -tx1)"
done

# Refused cleanly: NUL anywhere, a bad timezone, a bad cron; nothing stored.
before=$(snap)
for f in name description workflow_id trigger_node_id; do
	if [ "$f" = name ]; then
		s POST /schedules "$T_sql" "{\"name\": \"a\\u0000b\", $far, $tgt}"
	else
		s POST /schedules "$T_sql" "{\"name\": \"nul\", $far, $tgt, \"$f\": \"a\\u0000b\"}"
	fi
	ok "NUL in $f: 400" "$code $(j .error.code)" "400 invalid_json"
done
s POST /schedules "$T_sql" "{\"name\": \"nul\", $far, \"target\": {\"type\": \"exec\", \"argv\": [\"/bin/echo\", \"a\\u0000b\"]}}"
ok "NUL in target.argv: 400" "$code $(j .error.code)" "400 invalid_json"
s POST /schedules "$T_sql" "{\"name\": \"nul\", $far, \"target\": {\"type\": \"exec\", \"argv\": [\"/bin/true\"], \"env\": {\"E\": \"a\\u0000b\"}}}"
ok "NUL in target.env: 400" "$code $(j .error.code)" "400 invalid_json"
s POST /schedules "$T_sql" "{\"name\": \"nul\", $far, $tgt, \"trigger_payload\": {\"k\": \"a\\u0000b\"}}"
ok "NUL in trigger_payload: 400" "$code" 400
s POST /schedules "$T_sql" "{\"name\": \"nul\", $far, $tgt, \"trigger_payload\": {\"a\\u0000b\": 1}}"
ok "NUL in a trigger_payload key: 400" "$code" 400
s POST /schedules "$T_sql" "$(jq -cn --arg v "$evil1" '{name: "tz", kind: "cron", cron: "0 0 1 1 *", timezone: $v, target: {type: "exec", argv: ["/bin/true"]}}')"
ok_error "timezone '); DROP TABLE..." 400 invalid_field timezone
s POST /schedules "$T_sql" "$(jq -cn '{name: "tz", kind: "cron", cron: "0 0 1 1 *", timezone: "../../../etc/passwd", target: {type: "exec", argv: ["/bin/true"]}}')"
ok_error "timezone ../../../etc/passwd" 400 invalid_field timezone
s POST /schedules "$T_sql" "$(jq -cn --arg v "0 0 1 1 *; $evil1" '{name: "cr", kind: "cron", cron: $v, target: {type: "exec", argv: ["/bin/true"]}}')"
ok_error "cron with SQL" 400 invalid_field cron
s POST /schedules "$T_sql" "$(jq -cn --arg v "$evil2" '{name: "h", kind: "cron", cron: "0 0 1 1 *", target: {type: "http", url: "http://127.0.0.1/", headers: {($v): "x"}}}')"
ok "header name with quotes: 400" "$code $(j .error.code)" "400 invalid_field"
ok "refused hostile documents changed nothing" "$(snap)" "$before"
ok "tables intact" "$(sql "SELECT count(*) FROM (VALUES (to_regclass('schedules')), (to_regclass('runs')), (to_regclass('tokens')), (to_regclass('triggers'))) t(r) WHERE r IS NOT NULL")" 4
ok "evil schedules all there" "$(sql "SELECT count(*) FROM schedules WHERE owner = 'sqlt'")" 6

# Query parameters are literal: % and _ in the name prefix, quotes.
for nm in "%-pct" "_-under" "a'quote" "abc" "x%y"; do
	s POST /schedules "$T_sql" "$(jq -cn --arg n "$nm" '{name: $n, kind: "cron", cron: "0 0 1 1 *", target: {type: "exec", argv: ["/bin/true"]}}')"
done
names_for() { # names_for ENCODED-PREFIX: the names the filter returns
	c GET "/schedules?limit=500&name=$1" "$T_sql"
	j '[.schedules[].name] | sort | join("|")'
}
ok "name=% matches only names starting with %" "$(names_for %25)" "%-pct"
ok "name=_ matches only names starting with _" "$(names_for _)" "_-under"
ok "name=a' matches the quote literally" "$(names_for a%27)" "a'quote"
ok "name=a matches a prefix" "$(names_for a)" "a'quote|abc"
ok "name=x% is literal" "$(names_for x%25)" "x%y"
ok "name=%' OR '1'='1" "$(names_for "%25%27%20OR%20%271%27%3D%271")" ""
c GET "/schedules?workflow_id=%27%3B%20DROP%20TABLE%20schedules%3B--" "$T_sql"
ok "workflow_id filter with SQL: 200, nothing" "$code $(j '.schedules | length')" "200 0"
c GET "/schedules?workflow_id=$(printf '%s' "$evil1" | jq -sRr @uri)" "$T_sql"
ok "workflow_id filter finds the evil one exactly" "$code $(j '.schedules | length')" "200 1"

# --- 3. Exec targets never go through a shell -------------------------------

pw=$tmp/pwned
s POST /schedules "$T_sql" "$(jq -cn --arg p "$pw" '{name: "noshell", kind: "cron", cron: "0 0 1 1 *",
	target: {type: "exec", argv: ["/bin/echo", "$(id)", ";", "rm", "-rf", "/", "`touch \($p)`", "$(touch \($p))", "&&", "touch", $p, "|", "*"]}}')"
id=$(j .id)
run_of "$id" "$T_sql" >/dev/null
ok "argv: exactly those words, no shell" "$(jq -r '.status + " " + .output' <"$tmp/run")" \
	"succeeded \$(id) ; rm -rf / \`touch $pw\` \$(touch $pw) && touch $pw | *"
ok "argv: no shell ran (no file made)" "$(test -e "$pw" && echo made || echo none)" none
s POST /schedules "$T_sql" '{"name": "shell", "kind": "cron", "cron": "0 0 1 1 *",
	"target": {"type": "exec", "argv": ["/bin/sh", "-c", "echo $((6 * 7)) $0", "named"]}}'
run_of "$(j .id)" "$T_sql" >/dev/null
ok "an explicit /bin/sh -c runs a shell" "$(jq -r .output <"$tmp/run")" "42 named"
s POST /schedules "$T_sql" '{"name": "noexpand", "kind": "cron", "cron": "0 0 1 1 *",
	"target": {"type": "exec", "argv": ["/bin/echo", "$HOME", "~", "*"], "env": {"X": "$(id)"}}}'
run_of "$(j .id)" "$T_sql" >/dev/null
ok "no expansion of \$HOME, ~ or *" "$(jq -r .output <"$tmp/run")" "\$HOME ~ *"

# --- 4. run_as and limits: admin only ----------------------------------------

for who in alice_editor bob_editor; do
	eval "t=\$T_$who"
	before=$(snap)
	s POST /schedules "$t" "{\"name\": \"ra\", $far, \"target\": {\"type\": \"exec\", \"argv\": [\"/bin/true\"], \"run_as\": \"root\"}}"
	ok_error "$who: target.run_as" 403 forbidden target.run_as
	for l in cpu_seconds:601 memory_mb:1025 nofile:1025 nproc:257 fsize_mb:1025; do
		s POST /schedules "$t" "{\"name\": \"lim\", $far, $tgt, \"limits\": {\"${l%%:*}\": ${l#*:}}}"
		ok_error "$who: limits.${l%%:*} = ${l#*:}" 403 forbidden "limits.${l%%:*}"
	done
	ok "$who: nothing changed" "$(snap)" "$before"
done
for who in alice_admin bob_admin; do
	eval "t=\$T_$who"
	s POST "/schedules?owner=alice" "$t" "{\"name\": \"ra\", $far, \"target\": {\"type\": \"exec\", \"argv\": [\"/bin/true\"], \"run_as\": \"nobody\"}, \"limits\": {\"cpu_seconds\": 601, \"memory_mb\": 4096, \"nofile\": 4096, \"nproc\": 1000, \"fsize_mb\": 2048}}"
	ok "$who: run_as and limits above the defaults" "$code $(j '[.target.run_as, .limits.memory_mb] | map(tostring) | join(",")')" "201 nobody,4096"
done

# --- 5. HTTP host lists ------------------------------------------------------

landed() { grep -c ' /landing ' "$CV_RECEIVER_LOG" 2>/dev/null || true; }
received() { grep -c ' /receiver ' "$CV_RECEIVER_LOG" 2>/dev/null || true; }
reloads=0
reloaded() { [ "$(grep -c 'configuration reloaded' "$work/cvd.log")" -ge $reloads ]; }
# reconf LINES: the harness's configuration plus LINES; SIGHUP to the
# supervisor and wait until it says it reloaded.
cp "$CV_CONF" "$tmp/base.conf"
reconf() {
	{ cat "$tmp/base.conf"; printf '%s\n' "$1"; } >"$CV_CONF"
	kill -HUP "$CV_SUPERVISOR_PID"
	reloads=$((reloads + 1))
	wait_until 10 reloaded
	ok "supervisor reloaded ($1)" "$(grep -c 'configuration reloaded' "$work/cvd.log")" $reloads
}
# restart_api: the API reads its configuration only at start.
restart_api() {
	ra_p=$(cat "$work/api.pid")
	kill -TERM "$ra_p"
	wait_gone 10 "$ra_p"
	"$CRONVISOR_API" -f "$CV_CONF" </dev/null >>"$work/api.log" 2>&1 &
	echo $! >"$work/api.pid"
	wait_until 10 api_healthy
	ok "API restarted" "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$CV_API_URL/health")" 200
}
# http_run URL: an http schedule of alice's with an allowed URL, its
# target then set to URL with SQL (the API would refuse a denied one: the
# runner must refuse it by itself), triggered; the run is in $tmp/run.
http_run() {
	s POST /schedules "$T_alice_editor" "{\"name\": \"http\", $far, \"target\": {\"type\": \"http\", \"url\": \"http://127.0.0.1:$port/landing\"}}"
	hr_id=$(j .id)
	sql "UPDATE schedules SET target = jsonb_set(target, '{url}', to_jsonb('$1'::text)) WHERE id = '$hr_id'" >/dev/null
	run_of "$hr_id" "$T_alice_editor" >/dev/null
}

# The default deny list at the API: cloud metadata addresses.
# Every other spelling libcurl reads as a denied address, too (issue 17).
for u in "http://169.254.169.254/latest/meta-data/" "http://[::ffff:169.254.169.254]/" \
	"http://user@169.254.169.254:80/x" "http://[fe80::1]/" "http://[fd00:ec2::254]/" \
	"http://2852039166/" "http://0xa9fea9fe/" "http://0251.0376.0251.0376/" \
	"http://169.254.43518/" "http://169.254.169.254./" "http://[::169.254.169.254]/" \
	"http://[64:ff9b::a9fe:a9fe]/" "http://[fe80::1%25eth0]/" "http://100.100.100.200/" \
	"http://0.0.0.0:$port/" "http://0/" "http://[::]:$port/"; do
	s POST /schedules "$T_alice_editor" "{\"name\": \"meta\", $far, \"target\": {\"type\": \"http\", \"url\": \"$u\"}}"
	ok_error "API refuses $u" 400 invalid_field target.url
	ok "API names the host and the list" "$(j .error.message | grep -c 'is denied by http_deny_hosts')" 1
done
s POST /schedules "$T_alice_editor" "{\"name\": \"ok\", $far, \"target\": {\"type\": \"http\", \"url\": \"http://127.0.0.1:$port/landing\"}}"
ok "API accepts an allowed host" "$code" 201
hid=$(j .id)
s PATCH "/schedules/$hid" "$T_alice_editor" '{"target": {"type": "http", "url": "http://169.254.169.254/"}}'
ok_error "PATCH to a denied host" 400 invalid_field target.url

# A name that resolves to a denied address: refused at connect.
reconf 'http_deny_hosts = "127.0.0.0/8,::1"'
l0=$(landed)
r0=$(received)
s POST /schedules "$T_alice_editor" "{\"name\": \"dns\", $far, \"target\": {\"type\": \"http\", \"url\": \"http://localhost:$port/landing\"}}"
ok "API lets a name through (it does not resolve)" "$code" 201
run_of "$(j .id)" "$T_alice_editor" >/dev/null
ok "localhost -> 127.0.0.1 refused by address" \
	"$(jq -r '.status + " " + (.error | test("refused: host \"localhost\" \\(address (127\\.0\\.0\\.1|::1)\\) is denied by http_deny_hosts") | tostring)' <"$tmp/run")" \
	"failed true"
# The receiver is checked too.
s POST /schedules "$T_alice_editor" "{\"name\": \"rcv\", $far}"
run_of "$(j .id)" "$T_alice_editor" >/dev/null
ok "the receiver is refused too" \
	"$(jq -r '.status + " " + (.error | test("refused: host \"127.0.0.1\" is denied") | tostring)' <"$tmp/run")" \
	"failed true"
ok "no request reached nginx" "$(landed) $(received)" "$l0 $r0"
# Other spellings of a denied address, set behind the API's back: the
# runner reads them as libcurl does and refuses them, before or at connect.
for u in "http://2130706433:$port/landing" "http://0x7f.1:$port/landing" \
	"http://0177.0.0.1:$port/landing" "http://127.1.:$port/landing" \
	"http://[::ffff:127.0.0.1]:$port/landing" "http://[::ffff:7f00:1]:$port/landing"; do
	http_run "$u"
	ok "runner refuses $u" "$(jq -r '.status + " " + (.error | test("^refused: host \".*\" (\\(address 127\\.0\\.0\\.1\\) )?is denied by http_deny_hosts$") | tostring)' <"$tmp/run")" \
		"failed true"
done
# 0.0.0.0 and :: reach this machine: denied by default, at connect too.
reconf 'http_deny_hosts = "0.0.0.0/8,::"'
for u in "http://0.0.0.0:$port/landing" "http://0:$port/landing" "http://[::]:$port/landing"; do
	http_run "$u"
	ok "runner refuses $u" "$(jq -r '.status + " " + (.error | test("^refused: host .* is denied by http_deny_hosts$") | tostring)' <"$tmp/run")" \
		"failed true"
done
ok "none of them reached nginx" "$(landed)" "$l0"

# Names and redirects; the API refuses the denied name literally.
reconf 'http_deny_hosts = "localhost,169.254.0.0/16"
http_max_redirects = 3'
restart_api
s POST /schedules "$T_alice_editor" "{\"name\": \"lh\", $far, \"target\": {\"type\": \"http\", \"url\": \"http://LocalHost.:$port/landing\"}}"
ok_error "API refuses a denied name" 400 invalid_field target.url
ok "API's message" "$(j .error.message)" 'host "LocalHost." is denied by http_deny_hosts'
l0=$(landed)
http_run "http://localhost:$port/landing"
ok "runner refuses a denied name" "$(jq -r '.status + " " + .error' <"$tmp/run")" \
	'failed refused: host "localhost" is denied by http_deny_hosts'
ok "the denied host got no request" "$(landed)" "$l0"
http_run "http://127.0.0.1:$port/redirect-to/localhost"
ok "a redirect to a denied host is refused" \
	"$(jq -r '.status + " " + (.error | test("^refused: host \"localhost\" \\(address (127\\.0\\.0\\.1|::1)\\) is denied by http_deny_hosts$") | tostring)' <"$tmp/run")" \
	"failed true"
ok "the redirect was asked, its target got no request" \
	"$(grep -c ' /redirect-to/localhost 302' "$CV_RECEIVER_LOG") $(landed)" "1 $l0"
http_run "http://127.0.0.1:$port/redirect-to/127.0.0.1"
ok "an allowed redirect is followed" "$(jq -r '.status + " " + (.http_status | tostring)' <"$tmp/run")" "succeeded 200"
ok "the allowed target got the request" "$(landed)" "$((l0 + 1))"
# Not retried: a once schedule with retries left ends dead after one run.
s POST /schedules "$T_alice_editor" "{\"name\": \"once\", \"kind\": \"once\", \"at\": \"$(at_in 3)\", \"max_retries\": 3, \"retry_delay_seconds\": 1, \"target\": {\"type\": \"http\", \"url\": \"http://127.0.0.1:$port/landing\"}}"
oid=$(j .id)
sql "UPDATE schedules SET target = jsonb_set(target, '{url}', '\"http://localhost:$port/landing\"') WHERE id = '$oid'" >/dev/null
wait_api 20 '.status == "dead"' "/schedules/$oid" "$T_alice_editor"
ok "a refused request is not retried: dead" "$(j .status)" dead
c GET "/schedules/$oid/runs" "$T_alice_editor"
ok "a refused request is not retried: one run" "$(j '[.runs[] | .status] | join(",")')" failed

# An allow list, and redirects off.
reconf 'http_allow_hosts = "localhost"
http_deny_hosts = ""'
http_run "http://127.0.0.1:$port/landing"
ok "a host outside the allow list is refused" "$(jq -r '.status + " " + .error' <"$tmp/run")" \
	'failed refused: host "127.0.0.1" is not in http_allow_hosts'
l0=$(landed)
http_run "http://localhost:$port/redirect-to/localhost"
ok "redirects off by default" "$(jq -r '.status + " " + (.error | startswith("HTTP 302 (redirects are not followed; Location: http://localhost:") | tostring)' <"$tmp/run")" "failed true"
ok "no hop taken" "$(landed)" "$l0"
reconf 'http_allow_hosts = "localhost"
http_max_redirects = 1'
http_run "http://localhost:$port/redirect-to/127.0.0.1"
ok "a redirect outside the allow list is refused" "$(jq -r '.status + " " + .error' <"$tmp/run")" \
	'failed refused: host "127.0.0.1" (address 127.0.0.1) is not in http_allow_hosts'
http_run "http://localhost:$port/redirect-to/localhost"
ok "an allowed host works" "$(jq -r '.status' <"$tmp/run")" succeeded
ok "which the landing page saw" "$(landed)" "$((l0 + 1))"

# --- 6. Tokens: never in logs or responses -----------------------------------

# The API this test restarted is stopped here, with time for requests in
# progress (SERVER_JOIN_SECS, 30 s), so that a sanitizer build writes its
# report; api_finish stops the supervisor and reads the reports.
ap=$(cat "$work/api.pid")
t0=$(date +%s)
kill -TERM "$ap"
wait_gone 40 "$ap"
echo "security: cronvisor-api stopped in $(($(date +%s) - t0)) s"
ok "cronvisor-api stopped cleanly on SIGTERM" \
	"$(kill -0 "$ap" 2>/dev/null && echo running || tail -n 1 "$work/api.log")" \
	"cronvisor-api: stopped"
api_finish
"$ctl" token list --database "$CRONVISOR_DATABASE_URL" >"$tmp/list" 2>&1
ok "token list runs" "$?" 0
ntok=0
for t in "$A" "$T_alice_admin" "$T_bob_admin" "$T_alice_editor" "$T_alice_viewer" \
	"$T_bob_editor" "$T_bob_viewer" "$T_sql"; do
	ntok=$((ntok + 1))
	b64=${t#cvt_}
	ok "token $ntok well formed" "$(printf '%s' "$t" | grep -cE '^cvt_[A-Za-z0-9_-]{43}$')" 1
	for f in "$work"/*.log "$bodies" "$tmp/list" "$tmp/headers"; do
		[ -f "$f" ] || continue
		ok "token $ntok not in $(basename "$f")" \
			"$(grep -cF -e "$b64" -e "${b64#????????}" "$f")" 0
	done
	pfx=$(printf '%s' "$t" | cut -c1-12)
	ok "token $ntok: its prefix is listed" "$(grep -cF "$pfx" "$tmp/list")" 1
done
ok "logs checked: api, cvd, nginx, receiver" \
	"$(ls "$work"/api.log "$work"/cvd.log "$work"/nginx.log "$work"/receiver.log 2>/dev/null | wc -l)" 4
echo "security: $cells matrix cells, $ntok tokens checked"
summary security
