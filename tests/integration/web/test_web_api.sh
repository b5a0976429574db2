#!/usr/bin/env bash
# `hiredhand web`'s API against jobs Debian's Sidekiq 6.4 wrote (tests/ruby/web_data.rb):
#  - every answer carries the Content-Security-Policy and nosniff; / sets the CSRF cookie; a
#    Host that is no IP address, localhost or --allowed-host (DNS rebinding) gets 421;
#  - a POST without the token, with a wrong one, with the token in the header only, from a
#    foreign Origin or a cross-site Sec-Fetch-Site is refused with 403 and changes nothing;
#    --read-only refuses every POST; --web-auth wants basic authentication (401 without) and
#    a password that is not empty;
#  - the buttons change Redis exactly as the admin commands do: the same data copied into db 1,
#    each operation done through the API on db 0 and by `hiredhand` on db 1, the two compared;
#  - a page of a set by rank, a filter bounded per request, a job's decoded backtrace, and
#    bytes that are not UTF-8 shown as U+FFFD.
# The periodic-job API is checked by test_web_cron_api.sh, long args and large queue entries
# by test_web_big_args.sh.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/web_helpers.sh"
hh_require_binary
command -v curl >/dev/null || fail "curl is not installed"
hh_redis_start
web_seed 0
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
pass
