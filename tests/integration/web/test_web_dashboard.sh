#!/usr/bin/env bash
# `hiredhand web` in a real browser (Debian's chromium, headless) over jobs Debian's Sidekiq 6.4
# wrote (tests/ruby/web_data.rb) and a running hiredhand worker: each page's DOM shows the right
# figures and rows (dashboard totals, history and Redis info; the worker and its running job on
# Busy; queues; a queue's jobs; retries, scheduled and dead; per-class metrics; one job's decoded
# backtrace; periodic jobs, one of them saved by Debian's sidekiq-cron 1.8 from Ruby, and one
# periodic job's args and jid history), and
# the hostile entries (markup in class, args, error and backtrace, a javascript: jid, a periodic
# job whose name, class and args hold markup, bytes that are not UTF-8) are text: no element they describe exists and the title is untouched. A
# screenshot of each page goes to <build>/web-screenshots/ (docs/web-dashboard.md shows them).
# SKIP (exit 77) only when chromium is missing.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/heartbeat_helpers.sh"
. "$(dirname "$0")/../../lib/web_helpers.sh"
web_require_chromium
shots="$(dirname "$HIREDHAND")/web-screenshots"
mkdir -p "$shots" || fail "cannot create $shots"
hh_redis_start
web_seed 0
R set stat:processed 1234 >/dev/null
R set stat:failed 56 >/dev/null
R set "stat:processed:$(date -u +%F)" 77 >/dev/null
R hset "$(date -u +'j|%y%m%d|%-H:%M')" 'MetricJob|p' 12 'MetricJob|f' 2 'MetricJob|ms' 500 >/dev/null   # Sidekiq 8.x's layout
hh_cli push SlowJob '["busy-arg"]' -q busyq
hh_start_worker -c 2 -q busyq --tag webtag --exec "SlowJob=$HH_HANDLERS/sleep.sh 60"
must_wait 15 '[ "$(R hget "$(R smembers processes | head -n1)" busy)" = 1 ]' "the worker did not run SlowJob within 15 s"
# periodic jobs: a plain one run once (a jid history), one sidekiq-cron 1.8 saved from Ruby,
# one whose name, class and args are markup, one whose fields are not UTF-8 (those two never
# tick during the test: the worker polls periodic jobs, and queue default must keep its 5 jobs)
hh_cli cron add nightly --cron '0 3 * * *' --class NightlyJob --queue cronq --args '[7,"seven"]'
[ "$HH_RC" = 0 ] || fail "cron add: $HH_ERR"
hh_cli cron enqueue nightly
cron_jid="${HH_OUT##*jid=}"
out="$(hh_ruby cron_fleet.rb define rubyjob '*/5 * * * *' rubyq 2>&1)" || fail "sidekiq-cron 1.8 define: $out"
evil_name="<script>document.title='pwned-cron'</script>"
hh_cli cron add "$evil_name" --cron '0 4 1 1 *' --class '"><img src=x onerror="document.title='"'pwned-img'"'">' \
    --args '["<script>document.title=\u0027pwned-args\u0027</script>","\"><img src=x onerror=alert(1)>"]'
[ "$HH_RC" = 0 ] || fail "cron add (markup): $HH_ERR"
R sadd cron_jobs:default $'cron_job:default:bad\xffname' >/dev/null
R hset $'cron_job:default:bad\xffname' name $'bad\xffname' cron '* * * * *' klass $'Bad\xfe\xffClass' status disabled \
    message '{"class":"X","args":[]}' args $'["\xff"]' >/dev/null
web_start

page() {   # NAME HASH: the rendered DOM in $HH_TMP/NAME.html, a screenshot in $shots/NAME.png
    local dom="$HH_TMP/$1.html"
    hb_chromium --virtual-time-budget=4000 --dump-dom "$WEB_URL/#/$2" >"$dom" || fail "chromium --dump-dom #/$2 failed"
    grep -q "data-ready=\"$3\"" "$dom" || fail "page #/$2 did not render: $(grep -o 'id="error"[^<]*<' "$dom"; tail -n 3 "$HH_TMP/chromium.err")"
    ( cd "$HH_TMP" && hb_chromium --virtual-time-budget=4000 --screenshot="$shots/$1.png" --window-size=1280,900 "$WEB_URL/#/$2" >/dev/null )
    [ -s "$shots/$1.png" ] || fail "no screenshot $shots/$1.png"
    DOM="$(cat "$dom")"
    # hostile data stays text: no element from it, no script ran, no javascript: link
    assert_contains "$DOM" "<title>hiredhand</title>" "#/$2: the title changed (a payload's script ran)"
    assert_not_contains "$DOM" '<img src="x"' "#/$2: an <img> from job data"
    assert_not_contains "$DOM" "<script>document" "#/$2: a <script> from job data"
    assert_not_contains "$DOM" 'href="javascript:' "#/$2: a javascript: link"
}

page dashboard "" dashboard
assert_contains "$DOM" 'id="stat-processed">1234<' "dashboard: processed"
assert_contains "$DOM" 'id="stat-failed">56<' "dashboard: failed"
assert_contains "$DOM" 'id="stat-retries">8<' "dashboard: retries"
assert_contains "$DOM" "<td class=\"\">$(date -u +%F)</td><td class=\"num\">77</td>" "dashboard: today's history"
assert_contains "$DOM" "$(R info server | tr -d '\r' | sed -n 's/^redis_version://p')" "dashboard: the Redis version"
assert_contains "$DOM" '<svg class="graph"' "dashboard: the graphs"
# the live graph: two polls later (virtual time) it has points, the page not reloaded
R incrby stat:processed 10 >/dev/null
hb_chromium --virtual-time-budget=12000 --dump-dom "$WEB_URL/#/" >"$HH_TMP/live.html" || fail "chromium --dump-dom (live) failed"
grep -q '<div id="live"><svg class="graph"[^>]*><polyline class="p" points="[0-9]' "$HH_TMP/live.html" \
    || fail "the live graph has no points after two polls: $(grep -o '<div id="live">.\{0,200\}' "$HH_TMP/live.html")"

page busy busy busy
assert_contains "$DOM" "webtag" "busy: the worker's tag"
assert_contains "$DOM" ">SlowJob<" "busy: the running job"
assert_contains "$DOM" ">busyq<" "busy: the running job's queue"
assert_contains "$DOM" ">Quiet</button>" "busy: the Quiet button"

page queues queues queues
assert_contains "$DOM" '<a href="#/queue/default">default</a></td><td class="num">5<' "queues: default holds 5"

page queue queue/default queue
assert_contains "$DOM" "&lt;script&gt;document.title='pwned-script'&lt;/script&gt;" "queue: hostile args shown as text"
assert_contains "$DOM" '"&gt;&lt;img src=x onerror' "queue: the hostile class shown as text"
assert_contains "$DOM" '[0,"q"]' "queue: a job's args"

page retry retry retry
assert_contains "$DOM" "Retries (8)" "retry: the size"
assert_contains "$DOM" "plain failure 0" "retry: an error message"
assert_contains "$DOM" "&lt;script&gt;document.title=" "retry: the hostile class as text"
assert_contains "$DOM" 'bad�� bytes' "retry: bytes that are not UTF-8 as U+FFFD"
# that entry's row: the jid (a link), class and args of its U+FFFD text, as the queue page shows one
assert_eq "$(echo "$DOM" | python3 -c 'import re,sys; r=[r for r in re.findall(r"<tr[^>]*>.*?</tr>", sys.stdin.read()) if "bad\ufffd\ufffd bytes" in r]
print(len(r), [x for x in ("<a href=\"#/job/retry/", "<td class=\"\">BinaryJob</td>", "<td class=\"args\">[\"x\"]</td>") if r and x not in r[0]])')" \
    "1 []" "retry: an entry that is not UTF-8 with its jid, class and args"

page scheduled scheduled scheduled
assert_contains "$DOM" "Scheduled (4)" "scheduled: the size"
assert_contains "$DOM" ">LaterJob<" "scheduled: a job"

page dead dead dead
assert_contains "$DOM" "Dead (2)" "dead: the size"
assert_contains "$DOM" "died 1" "dead: an error message"

page metrics metrics metrics
assert_contains "$DOM" '<td class="">MetricJob</td><td class="num">12</td><td class="num">2</td><td class="num">0.50</td><td class="num">50.0</td>' \
    "metrics: the class's runs, failures, time and average"

ruby_next="$(python3 -c 'import time; t=int(time.time()); print(t - t % 300 + 300)')"   # before: a tick may pass
page cron cron cron
assert_contains "$DOM" "Cron (4)" "cron: the number of periodic jobs"
nightly_next="$(date -u -d "$(date -u -d tomorrow +%F) 03:00" +%s)"
[ "$(date -u +%H)" -lt 3 ] && nightly_next="$(date -u -d "$(date -u +%F) 03:00" +%s)"
assert_contains "$DOM" "<td class=\"\">enabled</td><td class=\"\">0 3 * * *</td><td class=\"\">NightlyJob</td><td class=\"\">cronq</td><td class=\"\">$(date -u +%F)" \
    "cron: the plain job's row (status, cron, class, queue, last enqueue today)"
assert_contains "$DOM" "$(date -u -d "@$nightly_next" '+%F %T UTC')" "cron: the plain job's next tick"
assert_contains "$DOM" ">rubyjob</a></td><td class=\"\">enabled</td><td class=\"\">*/5 * * * *</td><td class=\"\">CronTick</td><td class=\"\">rubyq</td>" \
    "cron: the job sidekiq-cron 1.8 saved"
case "$DOM" in
*"$(date -u -d "@$ruby_next" '+%F %T UTC')"* | *"$(date -u -d "@$((ruby_next + 300))" '+%F %T UTC')"*) ;;
*) fail "cron: the Ruby job's next tick is not $(date -u -d "@$ruby_next" '+%F %T UTC') (or 5 min later)" ;;
esac
assert_contains "$DOM" "&lt;script&gt;document.title='pwned-cron'&lt;/script&gt;</a>" "cron: a markup name as text"
assert_contains "$DOM" '"&gt;&lt;img src=x onerror=' "cron: a markup class as text"
assert_contains "$DOM" 'Bad\xfe\xffClass' "cron: bytes that are not UTF-8 as \\xNN"
assert_contains "$DOM" '>Enqueue now</button>' "cron: the Enqueue now button"
# its name is the text bad\xffname, which names another job: no link, no buttons on its row
assert_eq "$(echo "$DOM" | python3 -c 'import re,sys; r=[r for r in re.findall(r"<tr[^>]*>.*?</tr>", sys.stdin.read()) if "bad\\xffname" in r]
print(len(r), [x for x in r if "<a " in x or "<button" in x])')" "1 []" "cron: a name that is not UTF-8 is not actionable"
page cronjob cron/nightly cron-job
assert_contains "$DOM" '[7,"seven"]' "cron job: its args"
assert_contains "$DOM" "<td class=\"\">$cron_jid</td>" "cron job: the jid history"
page cronevil "cron/$(python3 -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$evil_name")" cron-job
assert_contains "$DOM" "&lt;script&gt;document.title='pwned-args'&lt;/script&gt;" "cron job: markup args as text"

page job 'job/retry/javascript%3Aalert(1)' job
assert_contains "$DOM" '<pre id="backtrace">&lt;script&gt;document.title=' "job: the decoded backtrace as text"
assert_contains "$DOM" "javascript:document.title='pwned-url'" "job: the javascript: URL as text"
pass
