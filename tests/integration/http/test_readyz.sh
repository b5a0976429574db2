#!/usr/bin/env bash
# Readiness (`GET /readyz` on --http): 200 {"status":"ready"} once the worker is connected to
# Redis and fetching; 503 with a reason when Redis is lost (and 200 again once it is back),
# and 503 "quiet" after TSTP, while /healthz (liveness) stays 200 when quiet. The 503 on Redis
# loss comes with the first call that fails to reach it, not at the next heartbeat, and the 200
# on its return with the first call that goes through.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
command -v curl >/dev/null || fail "curl is not installed (apt-get install curl)"
command -v jq >/dev/null || fail "jq is not installed (apt-get install jq)"
hh_redis_start

port="$(hh_pick_free_port)"
base="http://127.0.0.1:$port"
hh_start_worker -c 2 --heartbeat-interval 1 --liveness-max-age 30 --http "$port"

must_wait 15 '[ "$(hh_http_code "$base/readyz")" = 200 ]' "/readyz did not answer 200 within 15 s of start"
assert_eq "$(hh_http_body "$base/readyz" | jq -r .status)" ready "/readyz body when ready"

# Redis lost: not ready (liveness keeps 200: --liveness-max-age is 30 s)
hh_redis_stop
must_wait 15 '[ "$(hh_http_code "$base/readyz")" = 503 ]' "/readyz did not turn 503 within 15 s of losing Redis"
body="$(hh_http_body "$base/readyz")"
assert_eq "$(jq -r .status <<<"$body")" "not ready" "/readyz status without Redis ($body)"
assert_contains "$(jq -r .reason <<<"$body")" "Redis" "/readyz says why ($body)"
assert_eq "$(hh_http_code "$base/healthz")" 200 "/healthz (liveness) stays 200 during a short Redis outage"
assert_alive "$WORKER_PID" "the worker survives the Redis outage"

# Redis back: ready again
hh_redis_restart
must_wait 20 '[ "$(hh_http_code "$base/readyz")" = 200 ]' "/readyz did not come back to 200 within 20 s of Redis' return"

# Quiet (TSTP): not ready for good, still alive
kill -TSTP "$WORKER_PID"
must_wait 10 '[ "$(hh_http_code "$base/readyz")" = 503 ]' "/readyz did not turn 503 within 10 s of TSTP"
assert_contains "$(hh_http_body "$base/readyz" | jq -r .reason)" "quiet" "/readyz reason when quiet"
assert_eq "$(hh_http_code "$base/healthz")" 200 "/healthz stays 200 when quiet"

hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "the worker exits 0 after TERM"

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
