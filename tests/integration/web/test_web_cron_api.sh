#!/usr/bin/env bash
# `hiredhand web`'s periodic-job API: one job added by `hiredhand cron add`, one by Debian's
# sidekiq-cron 1.8 from Ruby, one broken entry, listed with their fields, next tick and error;
# one job's args and jid history; Enqueue now / Disable / Enable / Delete change Redis as
# `hiredhand cron` does (the same data copied into db 1, each operation done through the API on
# db 0 and by `hiredhand cron` on db 1, the two compared); cross-site and --read-only POSTs are
# refused and change nothing; a job whose name is not UTF-8 is listed, never taken for the job
# whose name is its \xNN text; a job saved in both sidekiq-cron layouts is acted on and shown
# by the copy a request's layout names, and refused without one.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/web_helpers.sh"
hh_require_binary
command -v curl >/dev/null || fail "curl is not installed"
hh_redis_start
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

# --- a name that is not UTF-8 shows as the text \xff, the name of another job: listed with its
# bytes (name_base64), never resolved to that job; `cron list` escapes a backslash as \\
R eval "redis.call('sadd','cron_jobs:default',ARGV[1]); redis.call('hset',ARGV[1],'name',ARGV[2],'cron','*/5 * * * *',
    'klass','K','status','enabled','message','{\"class\":\"K\",\"args\":[]}')" 0 \
    "$(printf 'cron_job:default:bad\xffname')" "$(printf 'bad\xffname')" >/dev/null
hh_cli cron add 'bad\xffname' --cron '0 1 * * *' --class LiteralOne -r "$REDIS_URL"
assert_eq "$(api cron | jq_ 'sorted((j["class"], j.get("name_base64")) for j in d if j["name"] == "bad\\xffname")')" \
    "[('K', 'YmFk/25hbWU='), ('LiteralOne', None)]" "cron: a name that is not UTF-8 and the job of its text"
assert_eq "$(api 'cron/job?name=bad%5Cxffname' | jq_ 'd["class"]')" LiteralOne "cron: the text names its own job only"
hh_cli cron list -r "$REDIS_URL"
shown() { echo "$HH_OUT" | awk -v k="$1" '$0 ~ " " k " " { print $1 }'; }   # CLASS: the name on its row
assert_eq "$(shown K) $(shown LiteralOne)" 'bad\xffname bad\\xffname' "cron list: a byte and a backslash escaped apart"

# --- a job saved in both sidekiq-cron layouts (sidekiq-cron 1.8 saves its own copy of one it
# cannot see in 2.x's keys): each row names the other copy; a button or the job page without a
# layout is refused and changes nothing; with layout N it acts on / shows that copy only
hh_cli cron add twin --cron '0 5 * * *' --class Rep --queue dupq -r "$REDIS_URL"
[ "$HH_RC" = 0 ] || fail "hiredhand cron add twin: $HH_ERR"
R HSET cron_job:twin name twin cron '0 5 * * *' klass Rep status enabled \
    message '{"queue":"dupq","class":"Rep","args":[]}' >/dev/null
R SADD cron_jobs cron_job:twin >/dev/null
assert_eq "$(api cron | jq_ 'sorted((j["layout"], j.get("also_in_layout")) for j in d if j["name"] == "twin")')" \
    "[(1, 2), (2, 1)]" "cron: both copies listed, each naming the other"
twin_status() { echo "$(R hget cron_job:twin status)/$(R hget cron_job:default:twin status)"; }
web_post cron '{"name":"twin","action":"disable"}'
assert_eq "$WEB_STATUS $(twin_status)" "400 enabled/enabled" "cron: Disable without a layout is refused"
assert_contains "$WEB_BODY" "both sidekiq-cron layouts" "cron: the refusal says why"
assert_contains "$WEB_BODY" "layout 1 or 2" "cron: the refusal says what to give"
web_post cron '{"name":"twin","action":"disable","layout":3}'
assert_eq "$WEB_STATUS $(twin_status)" "400 enabled/enabled" "cron: layout 3 is refused"
web_post cron '{"name":"twin","action":"disable","layout":1}'
assert_eq "$WEB_STATUS $(twin_status)" "200 disabled/enabled" "cron: Disable with layout 1: the 1.x copy only"
assert_eq "$(curl -s -o /dev/null -w '%{http_code}' "$WEB_URL/api/cron/job?name=twin")" 400 "cron: the job page without a layout"
assert_eq "$(api 'cron/job?name=twin&layout=1' | jq_ 'd["layout"], d["status"], d["also_in_layout"]')" \
    "(1, 'disabled', 2)" "cron: the job page of the 1.x copy"
assert_eq "$(api 'cron/job?name=twin&layout=2' | jq_ 'd["layout"], d["status"]')" "(2, 'enabled')" "cron: the job page of the 2.x copy"
web_post cron '{"name":"twin","action":"delete","layout":2}'
assert_eq "$WEB_STATUS $(R exists cron_job:default:twin) $(R hget cron_job:twin status)" "200 0 disabled" \
    "cron: Delete with layout 2: the 2.x copy only"
web_post cron '{"name":"twin","action":"enable"}'
assert_eq "$WEB_STATUS $(R hget cron_job:twin status)" "200 enabled" "cron: one copy left, no layout needed"

# --- --read-only refuses every button
kill "$WEB_PID"
web_start --read-only
before="$(web_cron_state 0)"
for a in enqueue enable disable delete; do
    web_post cron '{"name":"rubyjob","action":"'$a'"}'
    assert_eq "$WEB_STATUS" 403 "--read-only refuses cron $a"
done
assert_eq "$(web_cron_state 0)" "$before" "cron: --read-only changed Redis"
pass
