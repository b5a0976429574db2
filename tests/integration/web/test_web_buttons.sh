#!/usr/bin/env bash
# The dashboard's buttons pressed in a real browser: headless chromium (driven over the DevTools
# pipe, tests/lib/cdp.py) shows the pages `hiredhand web` serves over jobs Debian's Sidekiq 6.4
# wrote (tests/ruby/web_data.rb), and each button is clicked with real mouse events at its place
# on the rendered page (a confirm() the page asks is accepted and recorded). After each click,
# Redis (db 0) must hold what the matching `hiredhand` admin command leaves on a copy of the same
# data (db 1):
#  - a retry entry's own page: Retry, Delete, Kill (`hiredhand retries retry|delete|kill JID`);
#    the retry list: a checkbox and "kill selected";
#  - a scheduled entry's page: Delete and Enqueue (Add to queue); a dead entry's page: Retry;
#  - Queues: Clear (after a confirmation, `hiredhand queues clear`); a queue's page: Delete of
#    one job (the Web UI's LREM 1 of that entry), and of an entry that is no job (plain text);
#  - an entry without a jid is listed without a link (no page to link to);
#  - Cron: a job saved in both sidekiq-cron layouts: each row notes the other copy, its Disable
#    changes its own copy only, its link shows its own copy;
#  - Busy: Quiet on a running `hiredhand work` makes it quiet (its heartbeat says so and the page
#    shows it), Stop (after a confirmation) makes it exit.
# A button whose handler does nothing or posts the wrong request fails here: the page never
# re-renders after a successful POST, or Redis differs from the copy.
# SKIP (exit 77) only when chromium is missing.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/heartbeat_helpers.sh"
. "$(dirname "$0")/../../lib/web_helpers.sh"
web_require_chromium
hh_redis_start
web_seed 0
R zadd dead "$(hh_now)" '{"class":"NoJidJob","args":[],"queue":"default"}' >/dev/null   # an entry without a jid
R rpush queue:default 'plain text' >/dev/null   # an entry that is no job: it has a Delete too
web_copy_db
# a worker of its own queue: it takes none of the jobs compared, and its heartbeat is quick
hh_start_worker -c 1 -q buttonsq --heartbeat-interval 1
hb_wait_identity "$WORKER_PID"
web_start
jq_() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
jids() { curl -s "$WEB_URL/api/set?set=$1&count=100" | jq_ '" ".join(e["jid"] for e in d["entries"] if e["class"] == "'"$2"'")'; }

hb_cdp_open "$WEB_URL/#/retry"
hb_cdp_eval 30 "document.body.getAttribute('data-ready') === 'retry'" >/dev/null \
    || fail "the retry page did not render in chromium: $HB_CDP_OUT $(tail -n 3 "$HH_TMP/chromium.err")"
# confirm() accepted, each question kept for the checks below
hb_cdp_eval 5 "window.asked = []; window.confirm = function (m) { window.asked.push(m); return true; }; true" >/dev/null \
    || fail "cannot replace window.confirm: $HB_CDP_OUT"

goto() {   # HASH READY: show page #/HASH and wait until it rendered as READY (one round trip)
    hb_cdp_eval 15 "(function () {
        if (window.goingTo !== '#/$1') {
            window.goingTo = '#/$1';
            document.body.removeAttribute('data-ready');
            if (location.hash === '#/$1') route(); else location.hash = '#/$1';
            return false;
        }
        return document.body.getAttribute('data-ready') === '$2' && !(window.goingTo = null);
    })()" >/dev/null || fail "#/$1 did not render: $HB_CDP_OUT"
}

press() {   # WHAT READY ELEMENT-JS: click the element, then wait for the page READY rendered anew
    hb_cdp_click 10 "(document.body.setAttribute('data-ready', 'pressing'), $3)" >/dev/null \
        || fail "$1: cannot click: $HB_CDP_OUT"
    hb_cdp_eval 15 "document.body.getAttribute('data-ready') === '$2' ? 'rendered'
        : document.getElementById('error') ? 'error: ' + document.getElementById('error').textContent : ''" >/dev/null \
        || fail "$1: the page did not render $2 again after the click (no request, or no answer): $HB_CDP_OUT"
    assert_contains "$HB_CDP_OUT" '"value": "rendered"' "$1: the page shows an error"
}

button() {   # TEXT: JS naming the page's button labelled TEXT
    printf "Array.prototype.find.call(document.querySelectorAll('#main button'), function (b) { return b.textContent === '%s'; })" "$1"
}
row_button() {   # TEXT ROW-TEXT: the button TEXT in the table row holding a cell ROW-TEXT
    printf "(function () { var r = Array.prototype.find.call(document.querySelectorAll('#main tr'), function (r) {
        return Array.prototype.some.call(r.cells, function (c) { return c.textContent === '%s'; }); });
        return r && Array.prototype.find.call(r.querySelectorAll('button'), function (b) { return b.textContent === '%s'; }); })()" "$2" "$1"
}
asked() {   # how many questions confirm() was asked
    hb_cdp_eval 1 "String(window.asked.length)" >/dev/null || fail "cannot read window.asked: $HB_CDP_OUT"
    python3 -c 'import json,sys; print(json.loads(sys.argv[1])["value"])' "$HB_CDP_OUT"
}

# --- retries: one entry's page, each of its buttons
read -r j0 j1 j2 j3 _ <<<"$(jids retry PlainJob)"
[ -n "$j3" ] || fail "no four PlainJob retry entries: $(curl -s "$WEB_URL/api/set?set=retry")"
for a in retry:"$j0" delete:"$j1" kill:"$j2"; do
    goto "job/retry/${a#*:}" job
    press "retry entry: $a" retry "$(button "${a%%:*}")"
    web_cli1 retries "${a%%:*}" "${a#*:}"
    web_same "retry entry: ${a%%:*}"
done
goto retry retry
hb_cdp_click 10 "document.querySelector('#entries input[value=\"$j3\"]')" >/dev/null || fail "cannot tick $j3: $HB_CDP_OUT"
press "retry list: kill selected" retry "$(button 'kill selected')"
web_cli1 retries kill "$j3"
web_same "retry list: kill selected"

# --- scheduled: Delete, Enqueue (Add to queue); dead: Retry
read -r s0 s1 _ <<<"$(jids scheduled LaterJob)"
[ -n "$s1" ] || fail "no two LaterJob scheduled entries"
goto "job/scheduled/$s0" job
press "scheduled entry: delete" scheduled "$(button delete)"
web_cli1 scheduled delete "$s0"
web_same "scheduled entry: delete"
goto "job/scheduled/$s1" job
press "scheduled entry: enqueue" scheduled "$(button enqueue)"
web_cli1 scheduled enqueue "$s1"
web_same "scheduled entry: enqueue"
goto dead dead   # an entry without a jid: a row without a link (there is no page to link to)
hb_cdp_eval 5 "(function () { var r = Array.prototype.find.call(document.querySelectorAll('#entries tr'), function (r) {
    return r.textContent.indexOf('NoJidJob') >= 0; }); return !!r && !r.querySelector('a') && r.textContent.indexOf('(no jid)') >= 0; })()" \
    >/dev/null || fail "dead: an entry without a jid is a link, or not shown: $HB_CDP_OUT"
read -r d0 _ <<<"$(jids dead DeadJob)"
goto "job/dead/$d0" job
press "dead entry: retry" dead "$(button retry)"
web_cli1 dead retry "$d0"
web_same "dead entry: retry"

# --- queues: Delete of one job, then Clear of its queue (confirmed)
payload="$(R lrange queue:default 0 -1 | grep -F '"args":[2,"q"]')"
qjid="$(echo "$payload" | jq_ 'd["jid"]')"
goto queue/default queue
press "queue: delete an entry that is no job" queue "$(row_button Delete 'plain text')"
R -n 1 lrem queue:default 1 'plain text' >/dev/null
web_same "queue: delete an entry that is no job"
press "queue: delete one job" queue "$(row_button Delete "$qjid")"
R -n 1 lrem queue:default 1 "$payload" >/dev/null   # the Web UI's Delete: LREM 1 of that entry
web_same "queue: delete one job"
goto queues queues
n="$(asked)"
press "queues: clear" queues "$(row_button Clear default)"
assert_eq "$(asked)" $((n + 1)) "queues: Clear asked no confirmation"
web_cli1 queues clear default
web_same "queues: clear"

# --- cron: a job saved in both sidekiq-cron layouts: each row notes the other copy; its Disable
# and its link act on / show that row's own copy (without its layout both are refused)
hh_cli cron add twin --cron '0 5 * * *' --class Rep --queue dupq -r "$REDIS_URL"
[ "$HH_RC" = 0 ] || fail "hiredhand cron add twin: $HH_ERR"
R HSET cron_job:twin name twin cron '0 5 * * *' klass Rep status enabled message '{"queue":"dupq","class":"Rep","args":[]}' >/dev/null
R SADD cron_jobs cron_job:twin >/dev/null
goto cron cron
twin_row() {   # LAYOUT: JS naming the twin's row of that layout (by its note)
    printf "Array.prototype.find.call(document.querySelectorAll('#main tr'), function (r) {
        return r.textContent.indexOf('layout %s copy; also in layout %s') >= 0; })" "$1" $((3 - $1))
}
hb_cdp_eval 5 "!!$(twin_row 1) && !!$(twin_row 2)" >/dev/null || fail "cron: no note on both copies: $HB_CDP_OUT"
press "cron: disable the 1.x copy" cron "$(twin_row 1).querySelector('button[data-action=disable]')"
assert_eq "$(R hget cron_job:twin status)/$(R hget cron_job:default:twin status)" disabled/enabled "cron: Disable of the 1.x row"
hb_cdp_click 10 "$(twin_row 2).querySelector('a')" >/dev/null || fail "cron: cannot follow the 2.x row's link: $HB_CDP_OUT"
hb_cdp_eval 15 "document.body.getAttribute('data-ready') === 'cron-job' && Array.prototype.some.call(document.querySelectorAll('#main tr'),
    function (r) { return r.cells[0].textContent === 'Status' && r.cells[1].textContent === 'enabled'; })" >/dev/null || fail "cron: the 2.x row's link does not show its copy: $HB_CDP_OUT"

# --- busy: Quiet and Stop on a running worker
goto busy busy
press "busy: quiet" busy "$(row_button Quiet "$HB_ID")"
must_wait 10 '[ "$(R hget "$HB_ID" quiet)" = true ]' "busy: the worker did not go quiet after Quiet (heartbeat quiet=$(R hget "$HB_ID" quiet))"
goto busy busy
hb_cdp_eval 5 "(function () { var r = Array.prototype.find.call(document.querySelectorAll('#processes tr'), function (r) {
    return r.cells[0].textContent === '$HB_ID'; }); return r.cells[7].textContent === 'quiet'; })()" >/dev/null \
    || fail "busy: the page does not show the worker quiet: $HB_CDP_OUT"
n="$(asked)"
press "busy: stop" busy "$(row_button Stop "$HB_ID")"
assert_eq "$(asked)" $((n + 1)) "busy: Stop asked no confirmation"
must_wait 15 '! kill -0 "$WORKER_PID" 2>/dev/null' "busy: the worker did not exit after Stop"
hb_cdp_close
pass
