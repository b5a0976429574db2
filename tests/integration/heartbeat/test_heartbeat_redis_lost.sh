#!/usr/bin/env bash
# The heartbeat when Redis is lost under an idle
# worker (-c 2, beat 5 s, --http, --liveness-max-age 8).
#  1. Redis stopped (by pid) for ~12 s: the worker stays up, does not busy-loop (< 5 % of a CPU),
#     logs the heartbeat failure once; /stats heartbeat_last_pushed_at stops advancing; /healthz
#     turns 503 (with a JSON reason) once the last beat is older than the max age.
#  2. Redis started again on its port with an EMPTY dataset: the identity is back in `processes`
#     with a fresh hash (TTL in [1,60]) within one beat, an OkJob pushed after the restart runs
#     within 5 s, /healthz is 200 again and the heartbeat age is < beat + 1 s.
#  0. (start-up rule) a worker whose Redis is unreachable from the start: /healthz is 200 until
#     the max age has passed since start, then 503; the process stays up.
#  3. After that reconnect, `kill -STOP` Redis for ~16 s: the heartbeat call times out on the new
#     connection (heartbeat_last_error set, saying it timed out after 5 s, and so does the log;
#     the process stays up), /healthz turns 503; after
#     `kill -CONT` heartbeats resume and /healthz is 200 again.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/heartbeat_helpers.sh"
hh_require_binary
command -v curl >/dev/null || fail "curl is not installed"
hh_redis_start
BEAT=5
MAXAGE=8

code_at() { curl -s -o /dev/null -w '%{http_code}' --max-time 3 "http://127.0.0.1:$1$2"; }

# ---------------------------------------------------------------- 0. never reaches Redis
dead_port="$(hh_pick_free_port)"
# (beats every 1 s: a liveness max age must be above the heartbeat interval)
hport0="$(hb_pick_listen_port)"
t_start=$(date +%s.%N)
HH_NO_URL=1 hh_start_worker -r "redis://127.0.0.1:$dead_port/0" -c 1 --heartbeat-interval 1 --http "$hport0" --liveness-max-age 4
w0=$WORKER_PID
must_wait 3 '[ "$(code_at "$hport0" /healthz)" = 200 ]' \
    "/healthz of a worker without Redis is not 200 during start-up (got $(code_at "$hport0" /healthz))"
must_wait 6 '[ "$(code_at "$hport0" /healthz)" = 503 ]' \
    "/healthz of a worker that never reached Redis is not 503 after the max age (got $(code_at "$hport0" /healthz))"
t503=$(awk -v a="$t_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
hh_log "worker without Redis: /healthz 503 after $t503 s (max age 4)"
assert_between "$t503" 3.5 7 "seconds until /healthz failed for a worker that never reached Redis"
assert_alive "$w0" "the worker without Redis exited"
WORKER_PID=$w0 hh_stop_worker TERM 15
[ "$WORKER_RC" != 124 ] || fail "the worker without Redis did not exit within 15 s of SIGTERM"

hport="$(hb_pick_listen_port)"
hh_start_worker -c 2 --http "$hport" --liveness-max-age "$MAXAGE" --exec "OkJob=$HH_HANDLERS/record.sh"
hb_wait_identity "$WORKER_PID" 15
id="$HB_ID"
base="http://127.0.0.1:$hport"
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 3 "$base$1"; }
hstat() { curl -s --max-time 3 "$base/stats" | ruby -rjson -e 'v = JSON.parse($stdin.read)[ARGV[0]]; puts v' "$1"; }
age_of_last_push() { awk -v t="$(hstat heartbeat_last_pushed_at)" -v n="$(date +%s.%N)" 'BEGIN { printf "%.2f", (t > 0 ? n - t : 9999) }'; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$WORKER_PID/stat"; }

must_wait 10 '[ "$(code /healthz)" = 200 ]' "/healthz not 200 while healthy (got $(code /healthz))"
assert_between "$(age_of_last_push)" 0 $((BEAT + 1)) "heartbeat age while healthy"

# ---------------------------------------------------------------- 1. Redis down
hb_wait_next_beat "$id" $((BEAT + 2))
lines0=$(wc -l <"$WORKER_LOG")
ticks0=$(cpu_ticks); t0=$(date +%s.%N)
R set test:before-outage 1 >/dev/null
hh_redis_stop
pushed1="$(hstat heartbeat_last_pushed_at)"
must_wait $((MAXAGE + BEAT + 2)) '[ "$(code /healthz)" = 503 ]' \
    "/healthz still $(code /healthz) $((MAXAGE + BEAT + 2)) s into the Redis outage (max age $MAXAGE)"
body="$(curl -s --max-time 3 "$base/healthz")"
assert_contains "$body" '"reason"' "503 /healthz body has a reason"
sleep 1
assert_eq "$(hstat heartbeat_last_pushed_at)" "$pushed1" "heartbeat_last_pushed_at advanced while Redis was down"
[ -n "$(hstat heartbeat_last_error)" ] || fail "heartbeat_last_error empty during the outage"
assert_alive "$WORKER_PID" "worker exited while Redis was down"
ticks1=$(cpu_ticks)
cpu=$(awk -v a="$ticks0" -v b="$ticks1" -v t0="$t0" -v t1="$(date +%s.%N)" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { printf "%.1f", 100 * (b - a) / hz / (t1 - t0) }')
hh_log "outage: CPU ${cpu} %, $(($(wc -l <"$WORKER_LOG") - lines0)) log lines"
assert_between "$cpu" 0 5 "worker CPU % while Redis was down"
# One line per change of error, not one per beat: the first beat after the stop finds its
# connection closed, the next ones are refused (a second line only when one of those falls
# inside this window), and no text comes twice.
hb_lines="$(tail -n +"$((lines0 + 1))" "$WORKER_LOG" | grep 'heartbeat:' | sed 's/^.*heartbeat: //' || true)"
hb_fail_lines=$(printf '%s' "$hb_lines" | grep -c . || true)
assert_between "$hb_fail_lines" 1 2 "heartbeat failure lines logged during one outage ($hb_lines)"
assert_eq "$(printf '%s\n' "$hb_lines" | sort | uniq -d)" "" "a heartbeat failure text logged twice in one outage"

# ---------------------------------------------------------------- 2. Redis back, empty
hh_redis_restart
# a key of the test's, not DBSIZE: the worker may write its own keys as soon as the port opens
assert_eq "$(R exists test:before-outage)" 0 "the restarted Redis is empty (a key set before the outage)"
t_up=$SECONDS
ok="$(hh_jid)"
hb_push OkJob "$ok" '["after-restart"]' default
must_wait 5 'R lrange test:meta 0 -1 | grep -q "$ok"' "the OkJob pushed after the restart did not run within 5 s"
must_wait $((BEAT + 1)) '[ "$(R sismember processes "$id")" = 1 ] && [ "$(R hexists "$id" info)" = 1 ]' \
    "$id not back in processes with a hash within one beat of the restart"
assert_between "$(R ttl "$id")" 1 60 "TTL of the re-registered hash"
hh_log "re-registered $((SECONDS - t_up)) s after the restart"
must_wait $((BEAT + 1)) '[ "$(code /healthz)" = 200 ]' "/healthz not 200 again within one beat of Redis coming back"
assert_between "$(age_of_last_push)" 0 $((BEAT + 1)) "heartbeat age after recovery"
procs="$(hh_ruby hb_api.rb processes)" || fail "hb_api.rb processes failed"
assert_contains "$procs" "$id" "Sidekiq::ProcessSet lists the worker after the restart"

# ---------------------------------------------------------------- 3. Redis frozen (STOP)
hb_wait_next_beat "$id" $((BEAT + 2))
err0="$(hstat heartbeat_last_error)"
assert_eq "$err0" "" "heartbeat_last_error before the freeze"
kill -STOP "$REDIS_PID"
frozen=1
trap_cont() { [ "${frozen:-0}" = 1 ] && kill -CONT "$REDIS_PID" 2>/dev/null; }
t_stop=$SECONDS
# a beat starts within BEAT s and its PING must time out (command timeout 5 s): error within ~12 s
wait_until $((BEAT + 5 + 4)) '[ -n "$(hstat heartbeat_last_error)" ]' \
    || { trap_cont; fail "no heartbeat error $((BEAT + 5 + 4)) s into the freeze: the heartbeat call hangs (timeouts not re-applied after the reconnect?)"; }
hb_err="$(hstat heartbeat_last_error)"
hh_log "heartbeat error after $((SECONDS - t_stop)) s of freeze: $hb_err"
wait_until $((MAXAGE + 2)) '[ "$(code /healthz)" = 503 ]' || { trap_cont; fail "/healthz not 503 during the freeze"; }
assert_alive "$WORKER_PID" "worker exited during the freeze"
kill -CONT "$REDIS_PID"; frozen=0
# a timeout is said as one, with the time waited, not as hiredis' EAGAIN text
assert_contains "$hb_err" "timed out: no reply within 5 s" "heartbeat_last_error during the freeze"
assert_not_contains "$hb_err" "temporarily unavailable" "heartbeat_last_error during the freeze"
assert_contains "$(grep 'heartbeat: ' "$WORKER_LOG")" "timed out: no reply within 5 s" "the heartbeat's log line during the freeze"
assert_not_contains "$(cat "$WORKER_LOG")" "temporarily unavailable" "the worker log"
must_wait $((BEAT + 5 + 4)) '[ "$(code /healthz)" = 200 ]' "/healthz not 200 again after kill -CONT"
must_wait $((BEAT + 2)) '[ -z "$(hstat heartbeat_last_error)" ]' "heartbeat_last_error not cleared after recovery"
hb_wait_next_beat "$id" $((BEAT + 2))
assert_between "$(R ttl "$id")" 1 60 "TTL after the freeze"
ok2="$(hh_jid)"
hb_push OkJob "$ok2" '["after-freeze"]' default
must_wait 8 'R lrange test:meta 0 -1 | grep -q "$ok2"' "an OkJob pushed after the freeze did not run within 8 s"
pass
