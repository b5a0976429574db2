#!/usr/bin/env bash
# Readiness (`GET /readyz` on --http) between two heartbeats: with beats 30 s apart, /readyz turns
# 503 with the first call (an idle fetch) that fails to reach Redis, before the next beat and
# before any beat has failed, and 200 again with the first call that goes through once Redis is
# back, before the next beat and before the log says "connection restored".
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
command -v curl >/dev/null || fail "curl is not installed (apt-get install curl)"
command -v jq >/dev/null || fail "jq is not installed (apt-get install jq)"
hh_redis_start

# Redis lost between two beats: /readyz turns 503 as soon as a call (an idle fetch) fails to
# reach Redis, not at the next beat. Beats 30 s apart; Redis is stopped right after one, and the
# 503 must show while that beat is still the last one and no beat has failed yet.
port="$(hh_pick_free_port)"
base="http://127.0.0.1:$port"
hh_start_worker -c 2 --heartbeat-interval 30 --liveness-max-age 120 --http "$port"
must_wait 15 '[ "$(hh_http_code "$base/readyz")" = 200 ]' "/readyz did not answer 200 within 15 s of start (slow beats)"
beat="$(hh_http_body "$base/stats" | jq -r .heartbeat_last_pushed_at)"
must_wait 60 '[ "$(hh_http_body "$base/stats" | jq -r .heartbeat_last_pushed_at)" != "$beat" ]' "no second beat within 60 s"
beat="$(hh_http_body "$base/stats" | jq -r .heartbeat_last_pushed_at)"
hh_redis_stop
must_wait 20 '[ "$(hh_http_code "$base/readyz")" = 503 ]' "/readyz did not turn 503 within 20 s of losing Redis (beats 30 s apart)"
st="$(hh_http_body "$base/stats")"
assert_eq "$(jq -r .heartbeat_last_pushed_at <<<"$st")" "$beat" "503 came before the next beat ($st)"
assert_eq "$(jq -r .heartbeat_last_error <<<"$st")" "" "503 came before any beat failed ($st)"
assert_contains "$(hh_http_body "$base/readyz" | jq -r .reason)" "Redis" "/readyz says why"
# Redis back: 200 with the first call that goes through (a fetch), before the next beat and
# before "connection restored" is logged: that line waits for a call on a connection that has
# lasted a second (an idle fetcher's next one, or the beat), and readiness once waited for it too
restored="$(grep -c "connection restored" "$WORKER_LOG")"
hh_redis_restart
must_wait 30 '[ "$(hh_http_code "$base/readyz")" = 200 ]' "/readyz did not come back to 200 within 30 s of Redis' return"
assert_eq "$(grep -c "connection restored" "$WORKER_LOG")" "$restored" \
    "/readyz turned 200 before the log said \"connection restored\" (it waited for that line)"
st="$(hh_http_body "$base/stats")"
assert_eq "$(jq -r .heartbeat_last_pushed_at <<<"$st")" "$beat" "200 came back before the next beat ($st)"
must_wait 30 'grep -q "connection restored" "$WORKER_LOG"' "no \"connection restored\" within 30 s of /readyz's 200"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "the worker exits 0 after TERM"
pass
