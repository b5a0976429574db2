#!/usr/bin/env bash
# `hiredhand web`'s API against jobs Debian's Sidekiq 6.4 wrote (tests/ruby/web_data.rb):
#  - every answer carries the Content-Security-Policy and nosniff; / sets the CSRF cookie; a
#    Host that is no IP address, localhost or --allowed-host (DNS rebinding) gets 421;
#  - a POST without the token, with a wrong one, with the token in the header only, from a
#    foreign Origin or a cross-site Sec-Fetch-Site is refused with 403 and changes nothing;
#    --read-only refuses every POST; --web-auth wants basic authentication (401 without);
#  - the buttons change Redis exactly as the admin commands do: the same data copied into db 1,
#    each operation done through the API on db 0 and by `hiredhand` on db 1, the two compared;
#  - a page of a set by rank, a filter bounded per request, a job's decoded backtrace, and
#    bytes that are not UTF-8 shown as U+FFFD;
#  - periodic jobs (one added by `hiredhand cron add`, one by Debian's sidekiq-cron 1.8 from
#    Ruby, one broken entry): listed with their fields, next tick and error; one job's args and
#    jid history; Enqueue now / Disable / Enable / Delete change Redis as `hiredhand cron` does
#    (same comparison on the copy in db 1); cross-site and read-only POSTs refused.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/web_helpers.sh"
hh_require_binary
command -v curl >/dev/null || fail "curl is not installed"
hh_redis_start
web_seed 0
# periodic jobs: one saved without Ruby, one by sidekiq-cron 1.8 (1.x layout), one broken
hh_cli cron add nightly --cron '0 3 * * *' --class NightlyJob --queue cronq --args '[1,"a"]'
[ "$HH_RC" = 0 ] || fail "hiredhand cron add: $HH_ERR"
out="$(hh_ruby cron_fleet.rb define rubyjob '*/5 * * * *' rubyq 2>&1)" || fail "sidekiq-cron 1.8 define: $out"
R sadd cron_jobs:default cron_job:default:broken >/dev/null
R hset cron_job:default:broken name broken cron 'every day' klass BrokenJob status disabled message '{}' >/dev/null
web_copy_db
web_start
api() { curl -s "$WEB_URL/api/$1"; }
jq_() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }

# --- headers
hdr="$(curl -s -D - -o /dev/null "$WEB_URL/")"
assert_contains "$hdr" "Content-Security-Policy: default-src 'none'; script-src 'self'" "no CSP on /"
assert_contains "$hdr" "X-Content-Type-Options: nosniff" "no nosniff on /"
assert_contains "$hdr" "SameSite=Strict" "the CSRF cookie is not SameSite=Strict"
assert_contains "$(curl -s -D - -o /dev/null "$WEB_URL/api/stats")" "Content-Security-Policy:" "no CSP on the API"
# DNS rebinding: a page of another name resolving to 127.0.0.1 is not this origin
assert_eq "$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: rebind.example:80' "$WEB_URL/api/stats")" 421 "a foreign Host"
assert_eq "$(curl -s -o /dev/null -w '%{http_code}' -H "Host: localhost:${WEB_URL##*:}" "$WEB_URL/api/stats")" 200 "Host localhost"

# --- reads
assert_eq "$(api stats | jq_ 'd["retry_size"], d["dead_size"], d["scheduled_size"], d["enqueued"]')" "(8, 2, 4, 5)" "stats"
assert_eq "$(api 'set?set=retry&start=2&count=3' | jq_ '[e["class"] for e in d["entries"]], d["size"]')" \
    "(['PlainJob', 'PlainJob', 'PlainJob'], 8)" "a page of the retry set by rank"
assert_eq "$(api 'set?set=retry&count=500&queue=mail' | jq_ 'len(d["entries"]), d["filtered"], d["complete"], d["scan_limit"]')" \
    "(3, True, True, 5000)" "the queue filter"
hostile="$(api 'set?set=retry&error=onerror' | jq_ 'd["entries"][0]["jid"]')"
assert_eq "$hostile" "javascript:alert(1)" "the error filter"
bt="$(api 'job?set=retry&jid=javascript%3Aalert(1)' | jq_ 'd["entries"][0]["backtrace"][0]')"
assert_eq "$bt" "<script>document.title='pwned-script'</script>" "the decoded backtrace"
bad="$(api 'set?set=retry&count=100' | jq_ '[e["payload"] for e in d["entries"] if not e["valid"]][0]')"
assert_contains "$bad" '"error_message":"bad�� bytes"' "bytes that are not UTF-8 as U+FFFD"
assert_eq "$(api 'queue?name=default&start=1&count=2' | jq_ '[j["args"] for j in d["jobs"]]')" "['[1,\"q\"]', '[2,\"q\"]']" \
    "a page of a queue by rank, the next to run first"

# a query argument holding a NUL byte: 400, not the argument cut at the NUL
assert_eq "$(curl -s -w ' %{http_code}' "$WEB_URL/api/queue?name=default%00x&count=1")" \
    '{"error":"a query argument holds a NUL byte (%00)"} 400' "a GET argument with %00"

# --- CSRF: each refused with 403, nothing changed
before="$(web_state 0)"
tok="$(web_token)"
[ ${#tok} = 64 ] || fail "no 64-hex CSRF token in the cookie: '$tok'"
body='{"set":"retry","action":"delete","all":true}'
code() { curl -s -o /dev/null -w '%{http_code}' -X POST --data-binary "$body" "$@" "$WEB_URL/api/set"; }
assert_eq "$(code)" 403 "a POST without a token"
assert_eq "$(code -H "X-CSRF-Token: $tok")" 403 "a POST with the header but no cookie"
assert_eq "$(code -H "Cookie: hh_csrf=$tok")" 403 "a POST with the cookie but no header"
other="$(echo "$tok" | tr 0-9a-f 1-9a-f0)"   # every digit another
assert_eq "$(code -H "X-CSRF-Token: $other" -H "Cookie: hh_csrf=$other")" 403 "a POST with another token"
assert_eq "$(code -H "X-CSRF-Token: $tok" -H "Cookie: hh_csrf=$tok" -H 'Origin: http://evil.example')" 403 "a foreign Origin"
assert_eq "$(code -H "X-CSRF-Token: $tok" -H "Cookie: hh_csrf=$tok" -H 'Sec-Fetch-Site: cross-site')" 403 "Sec-Fetch-Site cross-site"
assert_eq "$(code -H "X-CSRF-Token: $tok" -H "Cookie: hh_csrf=$tok" -H 'Origin: https://evil.example')" 403 "a foreign https Origin"
# this site through a TLS-terminating proxy: an https Origin of the same
# host passes (this body is then refused as a bad request, not a foreign one)
proxied="$(body='{"set":"nosuchset","action":"delete","all":true}' code -H "X-CSRF-Token: $tok" -H "Cookie: hh_csrf=$tok" \
    -H "Origin: https://${WEB_URL#http://}" -H 'Sec-Fetch-Site: same-origin')"
assert_eq "$proxied" 400 "the site's own Origin over https (a TLS proxy)"
assert_eq "$(web_state 0)" "$before" "a refused POST changed Redis"

# --- the buttons, against the admin commands on a copy
j0="$(echo "$WEB_DATA" | jq_ 'd["retry_jids"][0]')"
j1="$(echo "$WEB_DATA" | jq_ 'd["retry_jids"][1]')"
j2="$(echo "$WEB_DATA" | jq_ 'd["retry_jids"][2]')"
web_post set '{"set":"retry","action":"retry","jids":["'"$j0"'"]}'
assert_eq "$WEB_STATUS $WEB_BODY" '200 {"done":1,"skipped":0,"notfound":0}' "retry one"
web_cli1 retries retry "$j0"; web_same "retry one"
web_post set '{"set":"retry","action":"kill","jids":["'"$j1"'","'"$j2"'"]}'
assert_eq "$WEB_STATUS" 200 "kill a selection"
web_cli1 retries kill "$j1"; web_cli1 retries kill "$j2"; web_same "kill a selection"
web_post set '{"set":"retry","action":"delete","all":true,"queue":"mail"}'
web_cli1 retries delete --all --queue mail; web_same "delete all matching a filter"
web_post set '{"set":"scheduled","action":"enqueue","all":true,"class":"LaterJob"}'
web_cli1 scheduled enqueue --all --class LaterJob; web_same "enqueue all scheduled of a class"
web_post set '{"set":"dead","action":"retry","all":true}'
web_cli1 dead retry --all; web_same "retry all dead"
web_post queue/clear '{"name":"mail"}'
assert_eq "$WEB_STATUS" 200 "clear a queue"
web_cli1 queues clear mail; web_same "clear a queue"
payload="$(R lindex queue:default -1)"
web_post queue/delete "$(python3 -c 'import json,sys; print(json.dumps({"name":"default","payload":sys.argv[1]}))' "$payload")"
assert_eq "$WEB_STATUS" 200 "delete one queue job"
R -n 1 lrem queue:default 1 "$payload" >/dev/null   # the Web UI's Delete: LREM 1 of the exact entry
web_same "delete one queue job"
web_post set '{"set":"retry","action":"delete","all":true}'
web_cli1 retries delete --all; web_same "delete all"
R -n 0 sadd processes fakeproc:1 >/dev/null; R -n 0 hset fakeproc:1 info '{}' beat "$(hh_now)" >/dev/null
R -n 1 sadd processes fakeproc:1 >/dev/null; R -n 1 hset fakeproc:1 info '{}' beat "$(hh_now)" >/dev/null
web_post process '{"identity":"fakeproc:1","signal":"quiet"}'
assert_eq "$WEB_STATUS" 200 "quiet"
hh_cli quiet fakeproc:1 -r "${REDIS_URL%/*}/1"; [ "$HH_RC" = 0 ] || fail "hiredhand quiet: $HH_ERR"
assert_eq "$(R -n 0 lrange fakeproc:1-signals 0 -1)" "$(R -n 1 lrange fakeproc:1-signals 0 -1)" "quiet: the signal lists"
assert_eq "$(R -n 0 lrange fakeproc:1-signals 0 -1)" "TSTP" "quiet sends TSTP"

# --- periodic jobs: the list, one job, the buttons against `hiredhand cron` on the copy
assert_eq "$(api cron | jq_ '[(j["name"], j["status"], j["cron"], j["class"], j["queue"]) for j in d]')" \
    "[('broken', 'disabled', 'every day', 'BrokenJob', 'default'), ('nightly', 'enabled', '0 3 * * *', 'NightlyJob', 'cronq'), ('rubyjob', 'enabled', '*/5 * * * *', 'CronTick', 'rubyq')]" \
    "cron: the list (name, status, cron, class, queue)"
want_next="$(python3 -c 'import time; t=int(time.time()); print(t - t % 300 + 300)')"
got_next="$(api cron | jq_ '[j["next"] for j in d if j["name"] == "rubyjob"][0]')"
[ "$got_next" = "$want_next" ] || [ "$got_next" = $((want_next + 300)) ] \
    || fail "cron: the Ruby job's next tick is $got_next, want $want_next (or a tick later)"
assert_contains "$(api cron | jq_ '[j["error"] for j in d if j["name"] == "broken"][0]')" "every day" "cron: a broken entry's error"
assert_eq "$(api 'cron/job?name=nightly' | jq_ 'd["args"], d["history"]')" "('[1,\"a\"]', [])" "cron: one job's args and (empty) history"
assert_eq "$(curl -s -o /dev/null -w '%{http_code}' "$WEB_URL/api/cron/job?name=nosuch")" 404 "cron: no such job"
cron_same() { assert_eq "$(web_cron_state 0)" "$(web_cron_state 1)" "cron $1: the API and \`hiredhand cron\` left different data"; }
cron1() { hh_cli cron "$@" -r "${REDIS_URL%/*}/1"; [ "$HH_RC" = 0 ] || fail "hiredhand cron $*: $HH_ERR"; }
cron_same "before"
web_post cron '{"name":"nightly","action":"enqueue"}'
assert_eq "$WEB_STATUS" 200 "cron: Enqueue now ($WEB_BODY)"
jid="$(echo "$WEB_BODY" | jq_ 'd["jid"]')"
assert_eq "$(R lindex queue:cronq 0 | jq_ 'd["jid"], d["class"], d["args"]')" "('$jid', 'NightlyJob', [1, 'a'])" "cron: the job pushed"
assert_eq "$(api 'cron/job?name=nightly' | jq_ '[h["jid"] for h in d["history"]]')" "['$jid']" "cron: the jid history"
assert_ne "$(api cron | jq_ '[j["last_enqueue_time"] for j in d if j["name"] == "nightly"][0]')" "None" "cron: last enqueue time"
cron1 enqueue nightly; cron_same "enqueue"
web_post cron '{"name":"nightly","action":"disable"}'
assert_eq "$WEB_STATUS $(R hget cron_job:default:nightly status)" "200 disabled" "cron: Disable"
cron1 disable nightly; cron_same "disable"
web_post cron '{"name":"nightly","action":"enable"}'
cron1 enable nightly; cron_same "enable"
web_post cron '{"name":"rubyjob","action":"disable"}'
assert_eq "$WEB_STATUS $(R hget cron_job:rubyjob status)" "200 disabled" "cron: Disable a job sidekiq-cron 1.8 saved"
cron1 disable rubyjob; cron_same "disable (1.x layout)"
web_post cron '{"name":"rubyjob","action":"enqueue"}'
assert_eq "$WEB_STATUS $(R llen queue:rubyq)" "200 1" "cron: Enqueue now a disabled 1.x job"
cron1 enqueue rubyjob; cron_same "enqueue (1.x layout)"
web_post cron '{"name":"nightly","action":"delete"}'
assert_eq "$WEB_STATUS $(R exists cron_job:default:nightly cron_job:default:nightly:jid_history)" "200 0" "cron: Delete"
cron1 delete nightly; cron_same "delete"
web_post cron '{"name":"nightly","action":"enqueue"}'
assert_eq "$WEB_STATUS" 404 "cron: Enqueue now of a deleted job"
web_post cron '{"name":"rubyjob","action":"explode"}'
assert_eq "$WEB_STATUS" 400 "cron: an unknown action"
before="$(web_cron_state 0)"
tok="$(web_token)"
cbody='{"name":"rubyjob","action":"delete"}'
ccode() { curl -s -o /dev/null -w '%{http_code}' -X POST --data-binary "$cbody" "$@" "$WEB_URL/api/cron"; }
assert_eq "$(ccode)" 403 "cron: a POST without a token"
assert_eq "$(ccode -H "X-CSRF-Token: $tok" -H "Cookie: hh_csrf=$tok" -H 'Origin: http://evil.example')" 403 "cron: a foreign Origin"
assert_eq "$(ccode -H "X-CSRF-Token: $tok" -H "Cookie: hh_csrf=$tok" -H 'Sec-Fetch-Site: cross-site')" 403 "cron: cross-site"
assert_eq "$(web_cron_state 0)" "$before" "cron: a refused POST changed Redis"

# --- lists cut args at 2000 characters (Sidekiq's Web UI truncates them so); a job's page shows them
# whole; a queue entry over the 1 MiB body cap is deleted by its digest, exactly one copy at a time
bigjid="$(hh_jid)"
big() {   # JID CHARACTERS: a job whose one argument is that many x
    python3 -c 'import json,sys; sys.stdout.write(json.dumps({"class": "BigJob", "args": ["x" * int(sys.argv[2])],
        "queue": "bigq", "jid": sys.argv[1], "retry": True, "error_class": "E", "error_message": "big", "retry_count": 0},
        separators=(",", ":")))' "$1" "$2"
}
big "$bigjid" 5000000 | R -x zadd retry 99999999999 >/dev/null
list="$(api 'set?set=retry&count=500&class=BigJob')"
[ "${#list}" -lt 20000 ] || fail "a retry list holding a 5 MB argument is ${#list} bytes"
assert_eq "$(echo "$list" | jq_ 'len(d["entries"][0]["args"]), d["entries"][0]["args"][-4:]')" "(2003, 'x...')" \
    "a retry list's args cut at 2000 characters"
assert_eq "$(api "job?set=retry&jid=$bigjid" | jq_ 'len(d["entries"][0]["args"])')" 5000004 "a job's page shows its args whole"
R lpush queue:bigq '{"class":"Small","args":[1],"jid":"small1","queue":"bigq"}' >/dev/null
for _ in 1 2; do big "$bigjid" 2097152 | R -x lpush queue:bigq >/dev/null; done
R lpush queue:bigq '{"class":"Small","args":[2],"jid":"small2","queue":"bigq"}' >/dev/null
page="$(api 'queue?name=bigq&count=10')"
[ "${#page}" -lt 20000 ] || fail "a queue page holding 2 MiB entries is ${#page} bytes"
assert_eq "$(echo "$page" | jq_ '[len(j["args"]) for j in d["jobs"]], "payload" in d["jobs"][1]')" "([3, 2003, 2003, 3], False)" \
    "a queue page's args cut at 2000 characters, no payload"
digest="$(echo "$page" | jq_ 'd["jobs"][1]["digest"]')"
assert_eq "$digest" "$(big "$bigjid" 2097152 | sha256sum | cut -c1-64)" "a queue entry's digest is the SHA-256 of its bytes"
for want in "200 3" "200 2" "404 2"; do
    web_post queue/delete '{"name":"bigq","digest":"'"$digest"'"}'
    assert_eq "$WEB_STATUS $(R llen queue:bigq)" "$want" "delete a 2 MiB queue entry by its digest ($WEB_BODY)"
done
assert_eq "$(R lrange queue:bigq 0 -1 | python3 -c 'import json,sys; print(*[json.loads(l)["jid"] for l in sys.stdin])')" \
    "small2 small1" "a delete by digest touched another entry"
R del queue:bigq >/dev/null
R zremrangebyscore retry 99999999999 99999999999 >/dev/null

# --web-auth with an empty password is refused at start
printf 'admin:\n' >"$HH_TMP/auth-empty"
hh_cli web -r "$REDIS_URL" --http "127.0.0.1:$(hh_pick_free_port)" --web-auth "$HH_TMP/auth-empty"
assert_eq "$HH_RC" 2 "--web-auth user: (an empty password) must be refused at start"
assert_contains "$HH_ERR" "the password (after ':') is empty" "--web-auth user: says why"

# --- read-only and basic auth
kill "$WEB_PID"
printf 'admin:s3cret\n' >"$HH_TMP/auth"
web_start --read-only --web-auth "$HH_TMP/auth"
assert_eq "$(curl -s -o /dev/null -w '%{http_code}' "$WEB_URL/api/stats")" 401 "no credentials"
assert_eq "$(curl -s -o /dev/null -w '%{http_code}' -u admin:wrong "$WEB_URL/api/stats")" 401 "a wrong password"
assert_eq "$(curl -s -o /dev/null -w '%{http_code}' -u admin:s3cret "$WEB_URL/api/stats")" 200 "the right password"
web_post queue/clear '{"name":"default"}' -u admin:s3cret
assert_eq "$WEB_STATUS" 403 "--read-only refuses a POST"
before="$(web_cron_state 0)"
for a in enqueue enable disable delete; do
    web_post cron '{"name":"rubyjob","action":"'$a'"}' -u admin:s3cret
    assert_eq "$WEB_STATUS" 403 "--read-only refuses cron $a"
done
assert_eq "$(web_cron_state 0)" "$before" "cron: --read-only changed Redis"
pass
