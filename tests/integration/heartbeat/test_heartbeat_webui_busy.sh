#!/usr/bin/env bash
# Sidekiq 6.4's Web UI
# (Sidekiq::Web under rackup/webrick on loopback) rendered by headless Chromium. The Busy page shows
# the hiredhand process (hostname:pid, tag, threads, busy, identity) and its running job (class,
# jid, queue, args). Screenshots go to <build>/test-artifacts/. Then the page's own Quiet button (a CSRF
# POST, as a browser sends it): within one beat the row carries the "quiet" label and loses its
# Quiet button; then the Stop button: the process exits within its timeout, its job is back in the
# queue, and the Busy page no longer shows the process or its job.
# SKIP (exit 0) only when chromium is missing and cannot be installed.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/heartbeat_helpers.sh"
hh_require_binary
command -v rackup >/dev/null || fail "rackup (ruby-rack) is not installed"
command -v curl >/dev/null || fail "curl is not installed"
if ! hb_chromium_ensure; then
    echo "SKIP: $HH_TEST_NAME: chromium is not installed and 'apt-get install -y chromium' failed ($(tail -n 3 "$HH_TMP/apt.log" 2>/dev/null | tr '\n' ' '))"
    exit 0
fi
mkdir -p "$HB_ARTIFACTS" || fail "cannot create $HB_ARTIFACTS"
hh_redis_start

host="$(hostname)"
jid="$(hh_jid)"
hb_push SlowJob "$jid" '["web-arg-1",42]' default
hh_start_worker -c 2 -t 3 --tag webtag --exec "SlowJob=$HH_HANDLERS/sleep.sh 60"
hb_wait_identity "$WORKER_PID" 15
id="$HB_ID"
must_wait 10 '[ "$(R lrange test:started 0 -1)" = "'"$jid"'" ]' "the SlowJob did not start within 10 s"
must_wait 8 '[ "$(R hget "$id" busy)" = 1 ]' "busy did not become 1 within one beat"

hb_webui_start
dom="$HH_TMP/busy.dom.html"
hb_chromium --dump-dom "$WEBUI_URL/busy" >"$dom" || fail "chromium --dump-dom $WEBUI_URL/busy failed: $(tail -n 5 "$HH_TMP/chromium.err")"
[ -s "$dom" ] || fail "chromium --dump-dom printed nothing: $(tail -n 5 "$HH_TMP/chromium.err")"
cp "$dom" "$HB_ARTIFACTS/hb_webui_busy.dom.html"
assert_contains "$(cat "$dom")" "$host:$WORKER_PID" "rendered Busy page shows hostname:pid"
assert_contains "$(cat "$dom")" "$jid" "rendered Busy page shows the running job's jid"
assert_contains "$(cat "$dom")" "SlowJob" "rendered Busy page shows the running job's class"
hh_ruby hb_busy_dom.rb "$dom" running "$id" "$host:$WORKER_PID" webtag 2 1 "$jid" SlowJob web-arg-1 default \
    || fail "Busy page DOM checks while the job runs (DOM kept in $HB_ARTIFACTS/hb_webui_busy.dom.html)"

png="$HB_ARTIFACTS/hb_webui_busy.png"
rm -f "$png"
( cd "$HH_TMP" && hb_chromium --screenshot="$png" --window-size=1280,1000 "$WEBUI_URL/busy" >/dev/null )
[ -s "$png" ] || fail "chromium did not save the screenshot $png: $(tail -n 5 "$HH_TMP/chromium.err")"
assert_eq "$(head -c 4 "$png" | od -An -c | tr -d ' ')" '211PNG' "screenshot is a PNG"
hh_log "screenshot: $png ($(stat -c %s "$png") bytes)"

# --- the Web UI's Quiet button: a form POST with the CSRF token of the session
jar="$HH_TMP/cookies.txt"
webui_post() {   # ACTION (quiet|stop)  -> HTTP status
    local page token
    page="$(curl -s --max-time 10 -c "$jar" -b "$jar" "$WEBUI_URL/busy")" || fail "GET /busy failed"
    assert_contains "$page" "value=\"$id\"" "Busy page has a form for $id before pressing $1"
    token="$(printf '%s' "$page" | grep -o "name='authenticity_token' value='[^']*'" | head -n 1 | sed "s/.*value='//; s/'\$//")"
    [ -n "$token" ] || fail "no authenticity_token on the Busy page"
    curl -s --max-time 10 -o /dev/null -w '%{http_code}' -c "$jar" -b "$jar" \
        --data-urlencode "authenticity_token=$token" --data-urlencode "identity=$id" --data "$1=1" \
        "$WEBUI_URL/busy"
}
t0=$(date +%s.%N)
code="$(webui_post quiet)"
assert_eq "$code" 302 "POST /busy quiet=1 (Web UI Quiet button) status"
# The signal is popped by the next beat; the strict "within one beat" timing of quiet is checked by
# test_quiet_stop_sidekiq_api.sh; here allow the popping beat plus the one that writes quiet (2 x 5 s + 1).
must_wait 11 '[ "$(R hget "$id" quiet)" = true ] && [ "$(R llen "$id-signals")" = 0 ]' \
    "11 s after the Quiet button: quiet=[$(R hget "$id" quiet)], signals left=[$(R llen "$id-signals")]"
hh_log "quiet after $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s"
hb_chromium --dump-dom "$WEBUI_URL/busy" >"$dom" || fail "chromium --dump-dom failed after Quiet"
cp "$dom" "$HB_ARTIFACTS/hb_webui_busy_quiet.dom.html"
hh_ruby hb_busy_dom.rb "$dom" quiet "$id" "$host:$WORKER_PID" || fail "Busy page DOM after the Quiet button"
( cd "$HH_TMP" && hb_chromium --screenshot="$HB_ARTIFACTS/hb_webui_busy_quiet.png" --window-size=1280,1000 "$WEBUI_URL/busy" >/dev/null )
assert_alive "$WORKER_PID" "worker exited after Quiet (it must keep running its job)"
assert_eq "$(R hget "$id" busy)" 1 "busy after Quiet (the running job keeps running)"

# --- the Stop button: exits within -t 3 (+ one beat to see the signal + slack), job back in queue
code="$(webui_post stop)"
assert_eq "$code" 302 "POST /busy stop=1 (Web UI Stop button) status"
wait_until 15 "! kill -0 $WORKER_PID" || fail "worker still running 15 s after the Stop button (-t 3, beat 5 s)"
wait "$WORKER_PID"; rc=$?
assert_eq "$rc" 0 "exit status after the Stop button"
assert_eq "$(R sismember processes "$id")" 0 "SISMEMBER processes $id after Stop"
assert_eq "$(R lrange queue:default 0 -1 | grep -c "$jid")" 1 "the unfinished SlowJob is back in queue:default once"
hb_chromium --dump-dom "$WEBUI_URL/busy" >"$dom" || fail "chromium --dump-dom failed after Stop"
cp "$dom" "$HB_ARTIFACTS/hb_webui_busy_stopped.dom.html"
hh_ruby hb_busy_dom.rb "$dom" gone "$id" "$host:$WORKER_PID" || fail "Busy page DOM after the Stop button"
pass
