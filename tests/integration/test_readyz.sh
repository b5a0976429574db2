#!/usr/bin/env bash
# Readiness (`GET /readyz` on --http): 200 {"status":"ready"} once the worker is connected to
# Redis and fetching; 503 with a reason when Redis is lost (and 200 again once it is back),
# and 503 "quiet" after TSTP, while /healthz (liveness) stays 200 when quiet.
. "$(dirname "$0")/../lib/harness.sh"
hh_require_binary
command -v curl >/dev/null || fail "curl is not installed (apt-get install curl)"
command -v jq >/dev/null || fail "jq is not installed (apt-get install jq)"
hh_redis_start

code_of() { curl -s -g --max-time 3 -o /dev/null -w '%{http_code}' "$@" 2>/dev/null; }
body_of() { curl -s -g --max-time 3 "$@" 2>/dev/null; }

port="$(hh_pick_free_port)"
base="http://127.0.0.1:$port"
hh_start_worker -c 2 --heartbeat-interval 1 --liveness-max-age 30 --http "$port"

must_wait 15 '[ "$(code_of "$base/readyz")" = 200 ]' "/readyz did not answer 200 within 15 s of start"
assert_eq "$(body_of "$base/readyz" | jq -r .status)" ready "/readyz body when ready"

# Redis lost: not ready (liveness keeps 200: --liveness-max-age is 30 s)
hh_redis_stop
must_wait 15 '[ "$(code_of "$base/readyz")" = 503 ]' "/readyz did not turn 503 within 15 s of losing Redis"
body="$(body_of "$base/readyz")"
assert_eq "$(jq -r .status <<<"$body")" "not ready" "/readyz status without Redis ($body)"
assert_contains "$(jq -r .reason <<<"$body")" "Redis" "/readyz says why ($body)"
assert_eq "$(code_of "$base/healthz")" 200 "/healthz (liveness) stays 200 during a short Redis outage"
assert_alive "$WORKER_PID" "the worker survives the Redis outage"

# Redis back: ready again
hh_redis_restart
must_wait 20 '[ "$(code_of "$base/readyz")" = 200 ]' "/readyz did not come back to 200 within 20 s of Redis' return"

# Quiet (TSTP): not ready for good, still alive
kill -TSTP "$WORKER_PID"
must_wait 10 '[ "$(code_of "$base/readyz")" = 503 ]' "/readyz did not turn 503 within 10 s of TSTP"
assert_contains "$(body_of "$base/readyz" | jq -r .reason)" "quiet" "/readyz reason when quiet"
assert_eq "$(code_of "$base/healthz")" 200 "/healthz stays 200 when quiet"

hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "the worker exits 0 after TERM"
pass
