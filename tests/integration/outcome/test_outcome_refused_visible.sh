#!/usr/bin/env bash
# A retry set Redis refuses (a `retry` key of the wrong type) holds each failed job's thread,
# since its outcome is retried until written (nothing lost); the worker must show it rather than
# look idle and healthy: /stats counts those threads as busy with outcomes_refused, /metrics has
# hiredhand_outcomes_refused, /readyz answers 503 naming the refused outcomes. Once the key is
# fixed (DEL retry) the outcomes are written, /readyz is 200 again and the jobs waiting in the
# queue run. -c 2, two FailingJobs (retry: 3) then three NoopJobs.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_require_plugin
command -v curl >/dev/null || fail "curl is not installed (apt-get install curl)"
command -v jq >/dev/null || fail "jq is not installed (apt-get install jq)"
hh_redis_start

R set retry oops >/dev/null
for i in 1 2; do "$HIREDHAND" push FailingJob "[$i]" -r "$REDIS_URL" --retry 3 >/dev/null || fail "push FailingJob"; done
for i in 1 2 3; do "$HIREDHAND" push NoopJob "[$i]" -r "$REDIS_URL" >/dev/null || fail "push NoopJob"; done
port="$(hh_pick_free_port)"
base="http://127.0.0.1:$port"
hh_start_worker -c 2 --heartbeat-interval 1 --http "$port" --require "$PLUGIN"
must_wait 30 '[ "$(hh_http_body "$base/stats" | jq -r .outcomes_refused)" = 2 ]' \
    "/stats did not count 2 refused outcomes within 30 s: $(hh_http_body "$base/stats")"
stats="$(hh_http_body "$base/stats")"
assert_eq "$(jq -r .busy <<<"$stats")" 2 "/stats busy while both threads retry a refused outcome ($stats)"
must_wait 10 '[ "$(hh_http_code "$base/readyz")" = 503 ]' "/readyz stayed 200 while Redis refused every outcome"
assert_contains "$(hh_http_body "$base/readyz" | jq -r .reason)" "outcomes" "/readyz says why"
assert_contains "$(hh_http_body "$base/metrics")" "hiredhand_outcomes_refused 2" "/metrics gauge"
assert_eq "$(R llen queue:default)" 3 "the NoopJobs wait in the queue while both threads are held"
must_wait 10 'grep -q "retry entry not written, retrying until Redis takes it: WRONGTYPE" "$WORKER_LOG"' \
    "no WARN naming the refusal in the log"

R del retry >/dev/null
must_wait 30 '[ "$(R zcard retry)" = 2 ]' "the 2 retry entries were not written once the key was fixed"
must_wait 30 '[ "$(grep -c "class=NoopJob.*INFO: done" "$WORKER_LOG")" -ge 3 ]' "the NoopJobs did not run once the threads were free"
must_wait 15 '[ "$(hh_http_code "$base/readyz")" = 200 ]' "/readyz did not come back to 200"
stats="$(hh_http_body "$base/stats")"
assert_eq "$(jq -r .outcomes_refused <<<"$stats")" 0 "/stats outcomes_refused once written ($stats)"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status after SIGTERM"
pass "refused outcomes show as busy, outcomes_refused and not ready, and clear once written"
