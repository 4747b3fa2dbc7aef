#!/bin/sh
# api_list.sh: GET /schedules reads each schedule's kept document
# (021_schedule_doc.sql) and writes its state around it without building
# it (issue 22); this proves that every item is exactly what GET
# /schedules/{id} shows, which still builds it: for schedules of every
# kind and target, secrets (masked for a viewer, shown to an editor),
# names in other scripts and quotes, instants with and without
# milliseconds, state moved by real runs, a pause, a PATCH, an apply, and
# a document column written by hand (the kept document forgotten, the
# item built as before); and pages joined by the cursor are the list.
# Then the console's lists (issue 22): every sort and order (created_at,
# name, next_run_at; asc, desc), paged by a small limit for an editor, a
# viewer, another tenant and an admin, is the order SQL computes; ?q=
# finds a substring of the name in any case (non-ASCII too) with %, _
# and \ taken literally, with pg_trgm and without; ?target_type= each
# type; bad values and a cursor of another order refused (400 naming the
# parameter), an old cursor still read; and with 100,000 schedules
# more, every order's statement (with and without an owner) is an index
# scan without a sort, and a rare substring is found through the trigram
# index.
# Usage: api_list.sh CRONVISORD CRONVISOR_API CRONVISORCTL CONNINFO-FILE
set -u
. "$(dirname "$0")/api-lib.sh"
api_up "$1" "$2" "$3" "$4"
A=$CV_TOKEN_ALICE_EDITOR
V=$CV_TOKEN_ALICE_VIEWER
B=$CV_TOKEN_BOB_EDITOR
ADM=$CV_TOKEN_ADMIN

mk() {
	send POST /schedules "$A" "$1"
	[ "$code" = 201 ] || echo "create: $code $resp" >&2
	j .id
}
s1=$(mk '{"name": "cron in Berlin", "cron": "30 2 * * *", "timezone": "Europe/Berlin", "description": "quotes \" and \\\\ and \u00e9\u4e2d"}')
s2=$(mk "{\"name\": \"once, ms\", \"kind\": \"once\", \"at\": \"$(at_in 86400 | sed 's/Z$/.250Z/')\"}")
s3=$(mk "{\"name\": \"http secrets\", \"interval_seconds\": 86400, \"target\": {\"type\": \"http\", \"url\": \"$CV_STATIC_URL\", \"headers\": {\"Authorization\": \"Bearer sekrit\"}}}")
s4=$(mk '{"name": "exec env", "interval_seconds": 86400, "max_retries": 0, "target": {"type": "exec", "argv": ["/bin/true"], "env": {"TOKEN": "t0p"}}}')
s5=$(mk '{"name": "redis pw", "interval_seconds": 86400, "target": {"type": "redis", "url": "redis://user:pw@127.0.0.1:1/0", "command": "publish", "key": "k"}}')
s6=$(mk '{"repeat": "repeating", "interval": 86400000, "name": "seed spelling", "workflowId": "wf-1", "workflowEntityId": "n1", "organizationId": "org-1", "timeout": 30000, "retryConfig": {"maxRetries": 2, "backoff": "linear", "delay": 2000}, "trigger_payload": {"b": 1, "a": [true, null, 1.5]}}')
s7=$(mk '{"name": "runs", "interval_seconds": 1, "target": {"type": "exec", "argv": ["/bin/true"]}}')
wait_for 20 "SELECT run_count >= 2 FROM schedules WHERE id = '$s7'"
call POST "/schedules/$s7/pause" "$A"
wait_for 10 "SELECT running = 0 FROM schedules WHERE id = '$s7'"
send PATCH "/schedules/$s4" "$A" '{"description": "patched", "max_retries": 2}'
ok "every write keeps the document" \
	"$(sql "SELECT count(*) FROM schedules WHERE doc_text IS NULL")" 0
ok "a masked copy only where there are secrets to mask (3 of 7)" \
	"$(sql "SELECT count(*) FROM schedules WHERE doc_masked IS NOT NULL")" 3
sql "UPDATE schedules SET description = 'by hand' WHERE id = '$s1'" >/dev/null
ok "a document column written by hand forgets it" \
	"$(sql "SELECT (doc_text IS NULL)::text || (doc_masked IS NULL)::text FROM schedules WHERE id = '$s1'")" truetrue
ok "a state write by the supervisor keeps it" \
	"$(sql "SELECT doc_text IS NOT NULL FROM schedules WHERE id = '$s7'")" t
ok "the kept document holds no state" \
	"$(sql "SELECT count(*) FROM schedules WHERE doc_text ~ '\"(status|run_count|id|owner)\"'")" 0

# same TOKEN: every item of the list equals GET /schedules/ID, byte for
# byte once keys are sorted.
same() {
	call GET "/schedules?limit=100" "$1"
	printf '%s' "$resp" >"$tmp/list.json"
	n=$(jq '.schedules | length' "$tmp/list.json")
	bad=0
	for id in $(jq -r '.schedules[].id' "$tmp/list.json"); do
		call GET "/schedules/$id" "$1"
		a=$(printf '%s' "$resp" | jq -cS 'del(.next_fire_times)')
		b=$(jq -cS --arg id "$id" '.schedules[] | select(.id == $id)' "$tmp/list.json")
		if [ "$a" != "$b" ]; then
			bad=$((bad + 1))
			echo "differs: $id" >&2
			echo "  get:  $a" >&2
			echo "  list: $b" >&2
		fi
	done
	echo "$n $bad"
}
ok "an editor's list is what GET shows, item by item" "$(same "$A")" "7 0"
ok "a viewer's list is what GET shows, item by item" "$(same "$V")" "7 0"
ok "the viewer's list masks the secrets" \
	"$(jq -r '[.schedules[] | .target.headers.Authorization, .target.env.TOKEN, .target.url] | map(select(. != null)) | join(" ")' "$tmp/list.json" | grep -c -e sekrit -e t0p -e ':pw@')" 0
call GET "/schedules?limit=100" "$A"
ok "the editor's shows them" "$(printf '%s' "$resp" | grep -c -e 'Bearer sekrit')" 1
ok "an instant with milliseconds keeps them" "$(j ".schedules[] | select(.id == \"$s2\") | .at" | grep -c '\.250Z$')" 1
ok "the run counts and last run come from the state" \
	"$(j ".schedules[] | select(.id == \"$s7\") | [.status, (.run_count >= 2), (.last_run_at != null)] | map(tostring) | join(\",\")")" "paused,true,true"
ok "the row written by hand shows its new value" "$(j ".schedules[] | select(.id == \"$s1\") | .description")" "by hand"

# pages by the cursor: the same schedules, in the same order
call GET "/schedules?limit=100" "$A"
all=$(j '[.schedules[].id] | join(" ")')
got="" cur=""
for i in 1 2 3 4 5; do
	call GET "/schedules?limit=2${cur:+&cursor=$cur}" "$A"
	got="$got $(j '[.schedules[].id] | join(" ")')"
	cur=$(j '.next_cursor // empty')
	[ -z "$cur" ] && break
done
ok "pages of 2 joined by the cursor are the list" "$(echo $got)" "$all"

# --- sorts, search and target types (issue 22) ---------------------------------
stub_agent_up
stub_agent la /ok
send POST /pipelines "$A" '{"pipeline_id": "lp", "name": "LP", "steps": [{"step_id": "a", "agent_id": "la"}]}'
[ "$code" = 201 ] || echo "pipeline: $code $resp" >&2
EX='"target": {"type": "exec", "argv": ["/bin/true"]}'
# (paused ones have no next run: they sort as if at +infinity; the
# others run in a day or more, so nothing moves while the pages are read)
for spec in "alpha|$EX" "Alpha|$EX, \"enabled\": false" "ALPHA beta|\"target\": {\"type\": \"http\", \"url\": \"$CV_STATIC_URL\"}" \
	"100% sure|\"target\": {\"type\": \"redis\", \"url\": \"redis://127.0.0.1:1/0\", \"command\": \"publish\", \"key\": \"k\"}" \
	"a_b|$EX, \"enabled\": false" "axb|\"enabled\": false" 'back\\slash|"enabled": false' \
	"\u00c9mile|\"target\": {\"type\": \"agent\", \"agent\": \"la\"}, \"enabled\": false" \
	"\u00e9mile t\u00e2che|\"target\": {\"type\": \"pipeline\", \"pipeline\": \"lp\"}, \"enabled\": false" \
	"\u00df stra\u00dfe|$EX" "\u4e2d\u6587\u4efb\u52a1|$EX" "dup|$EX" "dup|$EX, \"enabled\": false" "dup|$EX, \"enabled\": false" \
	"zeta|$EX, \"start_at\": \"$(at_in 172800)\""; do
	mk "{\"name\": \"${spec%%|*}\", \"interval_seconds\": 86400, ${spec#*|}}" >/dev/null
done
for n in "alpha bob" "bob's zeta"; do
	send POST /schedules "$B" "{\"name\": \"$n\", \"interval_seconds\": 86400, $EX}"
	[ "$code" = 201 ] || echo "create (bob): $code $resp" >&2
done
ok "the schedules of the sorts made" "$(sql "SELECT count(*) FROM schedules WHERE deleted_at IS NULL")" 24

# pages TOKEN QUERY: the ids of every page of GET /schedules?QUERY&limit=3
# joined by next_cursor (at most 30 pages).
pages() {
	p_got="" p_cur=""
	for p_i in $(seq 30); do
		call GET "/schedules?$2&limit=3${p_cur:+&cursor=$p_cur}" "$1"
		[ "$code" = 200 ] || { echo "page $p_i of $2: $code $resp"; return; }
		p_got="$p_got $(j '[.schedules[].id] | join(" ")')"
		p_cur=$(j '.next_cursor // empty | @uri')
		[ -z "$p_cur" ] && break
	done
	echo $p_got
}
# expect WHERE ORDER: the ids SQL lists.
expect() { sql "SELECT coalesce(string_agg(id::text, ' ' ORDER BY $2), '') FROM schedules WHERE deleted_at IS NULL AND $1"; }
key_created_at=created_at key_name=name key_next_run_at="coalesce(next_run_at, 'infinity')"
for sort in created_at name next_run_at; do
	eval "k=\$key_$sort"
	for order in asc desc; do
		by="$k $order, id $order"
		ok "sort=$sort&order=$order: an editor's pages" "$(pages "$A" "sort=$sort&order=$order")" "$(expect "owner = 'alice'" "$by")"
		ok "sort=$sort&order=$order: a viewer's pages" "$(pages "$V" "sort=$sort&order=$order")" "$(expect "owner = 'alice'" "$by")"
		ok "sort=$sort&order=$order: bob's pages, his only" "$(pages "$B" "sort=$sort&order=$order")" "$(expect "owner = 'bob'" "$by")"
		ok "sort=$sort&order=$order: an admin's pages, every owner's" "$(pages "$ADM" "sort=$sort&order=$order")" "$(expect true "$by")"
		ok "sort=$sort&order=$order: an admin's ?owner=alice" "$(pages "$ADM" "sort=$sort&order=$order&owner=alice")" "$(expect "owner = 'alice'" "$by")"
		ok "sort=$sort&order=$order: with a filter" "$(pages "$A" "sort=$sort&order=$order&status=paused")" "$(expect "owner = 'alice' AND status = 'paused'" "$by")"
	done
done
ok "no sort is creation order" "$(pages "$A" "")" "$(expect "owner = 'alice'" "created_at, id")"
ok "order=desc alone: the newest first" "$(pages "$A" "order=desc")" "$(expect "owner = 'alice'" "created_at DESC, id DESC")"
ok "ties in name and next run: by id" "$(pages "$A" "sort=name&q=dup")" "$(expect "owner = 'alice' AND name = 'dup'" "id")"
call GET "/schedules?limit=2" "$A"
old=$(j .next_cursor)
ok "the default order's cursor keeps its old form" "$(printf '%s' "$old" | grep -cE '^[0-9]+_[0-9a-f-]{36}$')" 1
call GET "/schedules?limit=2&cursor=$old" "$A"
ok "and is read" "$code $(j '.schedules | length')" "200 2"
call GET "/schedules?sort=name&limit=2" "$A"
ncur=$(j '.next_cursor | @uri')
call GET "/schedules?sort=next_run_at&cursor=$ncur" "$A"
ok_error "a name cursor given to sort=next_run_at" 400 invalid_query cursor
call GET "/schedules?sort=name&order=desc&cursor=$ncur" "$A"
ok_error "a name cursor given to order=desc" 400 invalid_query cursor
call GET "/schedules?cursor=$ncur" "$A"
ok_error "a name cursor given to the default order" 400 invalid_query cursor
call GET "/schedules?sort=name&cursor=$old" "$A"
ok_error "an old cursor given to sort=name" 400 invalid_query cursor
call GET "/schedules?sort=name&cursor=na.zz_$(sql "SELECT gen_random_uuid()")" "$A"
ok_error "a cursor this API did not give" 400 invalid_query cursor
call GET "/schedules?sort=name&cursor=na.00_$(sql "SELECT gen_random_uuid()")" "$A"
ok_error "a name cursor holding a NUL" 400 invalid_query cursor
call GET "/schedules?sort=name&cursor=na.ff_$(sql "SELECT gen_random_uuid()")" "$A"
ok_error "a name cursor that is not UTF-8" 400 invalid_query cursor
call GET "/schedules?cursor=.$old" "$A"
ok_error "a default order's cursor behind an empty tag (.<key>_<id>)" 400 invalid_query cursor

# q: a substring of the name, any case, nothing a pattern
qids() { pages "$1" "q=$2&sort=name"; }
# want OWNER TEXT: the ids of OWNER whose name holds TEXT in any case
# (strpos: no pattern).
want() { expect "owner = '$1' AND strpos(lower(name), lower(\$q\$$2\$q\$)) > 0" "name, id"; }
ok "q=%: the names with a % only" "$(qids "$A" %25)" "$(want alice %)"
ok "q=%: one" "$(want alice % | wc -w)" 1
ok "q=_: the names with a _ only" "$(qids "$A" _)" "$(want alice _)"
ok "q=a_b: not axb" "$(qids "$A" a_b)" "$(want alice a_b)"
ok "q=a_b: one" "$(want alice a_b | wc -w)" 1
ok "q=\\: the name with a backslash" "$(qids "$A" %5C)" "$(want alice '\')"
ok "q=\\: one" "$(want alice '\' | wc -w)" 1
ok "q=ALPHA: any case" "$(qids "$A" ALPHA)" "$(want alice alpha)"
ok "q=ALPHA: three of alice's" "$(want alice alpha | wc -w)" 3
ok "q=ALPHA: bob's own only" "$(qids "$B" ALPHA)" "$(want bob alpha)"
ok "q=ALPHA: an admin's, every owner's" "$(qids "$ADM" ALPHA)" "$(expect "strpos(lower(name), 'alpha') > 0" "name, id")"
ok "q=ALPHA: a viewer's" "$(qids "$V" ALPHA)" "$(want alice alpha)"
ok "q=ÉMILE: non-ASCII in any case" "$(qids "$A" %C3%89MILE)" "$(want alice émile)"
ok "q=ÉMILE: two" "$(want alice émile | wc -w)" 2
ok "q=ß" "$(qids "$A" %C3%9F)" "$(want alice ß)"
ok "q=中文" "$(qids "$A" %E4%B8%AD%E6%96%87)" "$(want alice 中文)"
ok "q=zzz: none" "$(qids "$A" zzz)" ""
ok "q with a filter and another order" "$(pages "$A" "q=a&sort=next_run_at&order=desc&status=active")" \
	"$(expect "owner = 'alice' AND status = 'active' AND strpos(lower(name), 'a') > 0" "coalesce(next_run_at, 'infinity') DESC, id DESC")"
# without pg_trgm (022 goes on without it when it cannot be created): the
# same answers; then made again as docs/operations.md says
if [ "$(sql "SELECT count(*) FROM pg_extension WHERE extname = 'pg_trgm'")" = 1 ]; then
	sql "DROP EXTENSION pg_trgm CASCADE" >/dev/null
	ok "no pg_trgm: q=%" "$(qids "$A" %25)" "$(want alice %)"
	ok "no pg_trgm: q=a_b" "$(qids "$A" a_b)" "$(want alice a_b)"
	ok "no pg_trgm: q=ALPHA, an admin's" "$(qids "$ADM" ALPHA)" "$(expect "strpos(lower(name), 'alpha') > 0" "name, id")"
	ok "no pg_trgm: q=ÉMILE" "$(qids "$A" %C3%89MILE)" "$(want alice émile)"
	sed -n '/^    CREATE EXTENSION pg_trgm;/,/WHERE deleted_at IS NULL;/p' "$here/../docs/operations.md" >"$tmp/trgm.sql"
	psql "$base dbname=$name" -X -q -v ON_ERROR_STOP=1 -f "$tmp/trgm.sql" >/dev/null
	ok "pg_trgm and the index made again as docs/operations.md says" \
		"$(sql "SELECT count(*) FROM pg_indexes WHERE indexname = 'schedules_name_trgm'")" 1
	ok "and q=ALPHA the same" "$(qids "$A" ALPHA)" "$(want alice alpha)"
fi
call GET "/schedules?q=" "$A"
ok_error "q empty" 400 invalid_query q
call GET "/schedules?q=$(printf 'x%.0s' $(seq 201))" "$A"
ok_error "q of 201 characters" 400 invalid_query q
call GET "/schedules?q=$(printf '%%C3%%A9%.0s' $(seq 200))" "$A"
ok "q of 200 characters (400 bytes)" "$code $(j '.schedules | length')" "200 0"

# target_type
for t in exec http redis agent pipeline receiver; do
	ok "target_type=$t" "$(pages "$A" "target_type=$t&sort=name")" \
		"$(expect "owner = 'alice' AND coalesce(target ->> 'type', 'receiver') = '$t'" "name, id")"
done
ok "every target type has a schedule" \
	"$(sql "SELECT count(DISTINCT coalesce(target ->> 'type', 'receiver')) FROM schedules WHERE owner = 'alice'")" 6
ok "target_type=receiver: bob has none" "$(pages "$B" "target_type=receiver")" ""

# bad values change nothing
before=$(snap)
for bad in "sort=size sort" "order=up order" "sort=name&order=DESC order" "target_type=ftp target_type" \
	"target_type= target_type" "sort= sort"; do
	call GET "/schedules?${bad% *}" "$A"
	ok_error "?${bad% *}" 400 invalid_query "${bad#* }"
done
call GET "/schedules?owner=bob&sort=name" "$A"
ok_error "?owner= of a non-admin" 403 forbidden owner
ok "refusals changed nothing" "$(snap)" "$before"

# --- 100,000 schedules more: each order is an index scan ---------------------
sql "INSERT INTO schedules (id, name, owner, kind, interval_seconds, status, next_run_at, target)
     SELECT format('%s-0000-4000-8000-000000000000', lpad(to_hex(g + 2147483648), 8, '0'))::uuid,
            (ARRAY['backup ', 'Report ', 'sync ', 'Été '])[1 + g % 4] || md5(g::text),
            'bulk' || (g % 100), 'interval', 3600,
            CASE WHEN g % 3 = 0 THEN 'paused' ELSE 'active' END,
            CASE WHEN g % 3 = 0 THEN NULL ELSE now() + interval '2 days' + g * interval '1 second' END,
            CASE WHEN g % 2 = 0 THEN '{\"type\": \"exec\", \"argv\": [\"/bin/true\"]}'::jsonb END
     FROM generate_series(1, 100000) g" >/dev/null
sql "ANALYZE schedules" >/dev/null
# tests/CMakeLists.txt names the helper; by hand, it is beside the API
CV_LISTSQL=${CV_LISTSQL:-$(dirname "$2")/tests/listsql}
# plan MODE ROLE OWNER QUERY: PostgreSQL's plan of the statement GET
# /schedules?QUERY runs for a token of ROLE and OWNER (tests/helpers/
# listsql.c prints it), on one line: MODE generic is the plan a connection
# keeps for the statement after its fifth run, made without the
# parameters' values; custom, the plan made for them.
plan() {
	{
		echo "SET plan_cache_mode = force_$1_plan;"
		"$CV_LISTSQL" "$2" "$3" "/api/v1/schedules?$4" || echo "SELECT 'listsql refused';"
	} | psql "$base dbname=$name" -X -qAt -v ON_ERROR_STOP=1 2>&1 | tr '\n' ' '
}
# scan PLAN: "INDEX/SORTS/KEYSET" of PLAN: the index its one index scan
# reads ("none" or "several" else), how many sorts, and whether a row
# comparison (the cursor's keyset condition) is an Index Cond of it, not
# a filter applied to every row from the index's start.
scan() {
	ix=$(printf '%s' "$1" | grep -oE 'Index (Only )?Scan( Backward)? using [a-z_]+' | sed 's/.* //')
	case $(printf '%s\n' "$ix" | grep -c .) in 0) ix=none ;; 1) ;; *) ix=several ;; esac
	kc=-
	if printf '%s' "$1" | grep -q 'Index Cond: ' &&
		printf '%s' "$1" | sed 's/.*Index Cond: //; s/ Filter: .*//' | grep -q 'ROW('; then
		kc=keyset
	fi
	echo "$ix/$(printf '%s' "$1" | grep -o 'Sort' | wc -l)/$kc"
}
for sort in created_at name next_run_at; do
	case $sort in
	created_at) ixall=schedules_created ixown=schedules_owner ;;
	name) ixall=schedules_name ixown=schedules_owner_name ;;
	*) ixall=schedules_next ixown=schedules_owner_next ;;
	esac
	for order in asc desc; do
		for who in admin:admin editor:bulk7; do
			role=${who%%:*}
			own=${who#*:}
			oq=$([ "$role" = admin ] || echo "&owner=$own")
			ix=$([ "$role" = admin ] && echo $ixall || echo $ixown)
			# a cursor 500 rows in, as the API gives it out
			call GET "/schedules?sort=$sort&order=$order&limit=500$oq" "$ADM"
			cur=$(j '.next_cursor | @uri')
			for page in "" "&cursor=$cur"; do
				for mode in generic custom; do
					pl=$(plan "$mode" "$role" "$own" "sort=$sort&order=$order&limit=100$page")
					got=$(scan "$pl")
					# one owner's page may read the order's index of
					# every owner, the owner a filter (the planner's
					# choice, by where the cursor is): in the order too
					[ "$role" = admin ] || got=$(printf '%s' "$got" | sed "s|^$ixall/|$ixown/|")
					ok "sort=$sort&order=$order, $role's, $([ -n "$page" ] && echo "a next page" || echo "the first page"), a $mode plan: the scan of $ix from the cursor, no sort ($pl)" \
						"$got" "$ix/0/$([ -n "$page" ] && echo keyset || echo -)"
				done
			done
		done
	done
done
# with a filter: the owner's index still, in the generic plan too
for f in status=paused kind=interval target_type=exec name=Report; do
	pl=$(plan generic editor bulk7 "$f&limit=100")
	ok "$f, bulk7's, a generic plan: the owner's index, no sort ($pl)" "$(scan "$pl")" schedules_owner/0/-
done
if [ "$(sql "SELECT count(*) FROM pg_indexes WHERE indexname = 'schedules_name_trgm'")" = 1 ]; then
	rare=$(sql "SELECT upper(substr(md5('77777'), 5, 9))")
	pl=$(plan custom admin admin "q=$rare")
	ok "q of a rare substring: the trigram index ($pl)" "$(printf '%s' "$pl" | grep -c schedules_name_trgm)" 1
	ok "q of a rare substring: found, in any case" "$(pages "$ADM" "q=$rare")" \
		"$(expect "strpos(lower(name), lower('$rare')) > 0" "created_at, id")"
else
	echo "api_list: pg_trgm is not installed: the trigram index is not checked"
fi
# each order's first and next page, and one owner's, over the API
for sort in created_at name next_run_at; do
	for order in asc desc; do
		t0=$(date +%s%3N)
		call GET "/schedules?sort=$sort&order=$order&limit=100" "$ADM"
		call GET "/schedules?sort=$sort&order=$order&limit=100&cursor=$(j '.next_cursor | @uri')" "$ADM"
		n2=$(j '.schedules | length')
		call GET "/schedules?sort=$sort&order=$order&limit=100&owner=bulk7" "$ADM"
		t1=$(date +%s%3N)
		ok "100,000 more, sort=$sort&order=$order: pages of 100" "$code $n2 $(j '.schedules | length')" "200 100 100"
		echo "sort=$sort&order=$order: three pages of 100 of 100,000 in $((t1 - t0)) ms"
	done
done

api_finish
summary api_list
