#!/usr/bin/env bash
# Readiness (`GET /readyz` on --http): 200 {"status":"ready"} once the worker is connected to
# Redis and fetching; 503 with a reason when Redis is lost (and 200 again once it is back),
# and 503 "quiet" after TSTP, while /healthz (liveness) stays 200 when quiet. The 503 on Redis
# loss comes with the first call that fails to reach it, not at the next heartbeat, and the 200
# on its return with the first call that goes through: test_readyz_between_beats.sh, with beats
# 30 s apart.
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
pass
