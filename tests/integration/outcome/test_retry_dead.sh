#!/usr/bin/env bash
# Failures, retries and the dead set, and unknown job classes, read
# back through Sidekiq 6.4's own API (Sidekiq::RetrySet, DeadSet, Stats).
#   retry true  -> RetrySet, retry_count 0, error_class, error_message (exit status + last stderr
#                  line), failed_at float, queue, original keys kept in order, first delay in 6.4's
#                  range (score - failed_at in [15, 24] s)
#   retry false -> neither set; retry 0 -> DeadSet; retry 0 + dead false -> neither set
#   retry 2     -> 3 executions (HIREDHAND_RETRY_COUNT -, 0, 1), then dead with retry_count 2,
#                  retried_at, failed_at unchanged (retries sped up by moving the score to now)
#   key absent  -> registered handler's default: retry true
#   fails once then succeeds -> no trace in RetrySet or DeadSet, ran once, retry_count 0 on retry;
#                  awkward args (unicode, escapes, NUL, floats incl. -0.0/5e-324/1e300, int64 limits)
#                  keep value and JSON type through the re-serialized retry member
#   unknown class, retry true -> RetrySet with error_class NameError naming the class (also
#                  Foo::Bar::Baz and foo::bar while Foo::Bar is registered -- and Foo::Bar runs)
#   unknown class, no retry key -> discarded (neither set), logged
#   stat:failed / stat:processed (and today's daily keys) count every execution exactly.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start

hh_ruby retry_check.rb push >/dev/null || fail "pushing the jobs failed"
hh_start_worker -c 4 --poll-interval 1 --heartbeat-interval 1 \
    --exec "FailJob=$HH_HANDLERS/fail.sh" --exec "FlakyJob=$HH_HANDLERS/flaky.sh" \
    --exec "Foo::Bar=$HH_HANDLERS/record.sh"

# first pass: 8 failing handler executions, Foo::Bar ran; retry: t_true t_two t_absent flaky
# flaky_args unknown_true ns_child ns_case; dead: t_zero
must_wait 30 '[ "$(R llen test:fails)" -ge 8 ] && [ "$(R llen test:ran)" -ge 1 ] && [ "$(R zcard retry)" -ge 8 ] && [ "$(R zcard dead)" -ge 1 ] && [ "$(R llen queue:default)" = 0 ]' \
    "first pass incomplete after 30 s: fails=$(R llen test:fails) retry=$(R zcard retry) dead=$(R zcard dead) queued=$(R llen queue:default)"
sleep 1
assert_alive "$WORKER_PID" "worker died during the first pass"
hh_ruby retry_check.rb phase1 || fail "checks after the first failures failed (see above)"
unknown_jid="$(R hget test:jobs unknown_absent)"
grep -qE "Gone::Away|$unknown_jid" "$WORKER_LOG" \
    || fail "the discarded unknown-class job (Gone::Away, jid $unknown_jid) was not logged"

# speed the retries up: move the score to now and let hiredhand's scheduler (poll ~1 s) enqueue it
hh_ruby retry_check.rb bump flaky >/dev/null || fail "bump flaky"
hh_ruby retry_check.rb bump flaky_args >/dev/null || fail "bump flaky_args"
hh_ruby retry_check.rb bump t_two >/dev/null || fail "bump t_two (1)"
must_wait 25 '[ "$(hh_ruby retry_check.rb state t_two)" = "retry 1" ]' \
    "t_two: expected 'retry 1' after its second execution, state is [$(hh_ruby retry_check.rb state t_two)]"
hh_ruby retry_check.rb bump t_two >/dev/null || fail "bump t_two (2)"
must_wait 25 '[ "$(hh_ruby retry_check.rb state t_two)" = "dead 2" ]' \
    "t_two: expected 'dead 2' after its third execution, state is [$(hh_ruby retry_check.rb state t_two)]"
must_wait 25 '[ "$(R llen test:ran)" -ge 3 ]' "flaky, flaky_args: did not both succeed on their retry within 25 s (ran: $(R llen test:ran))"
sleep 1

# graceful stop flushes the counters; then compare them with the executions we saw
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "worker exit status after SIGTERM"
expect="$(hh_ruby retry_check.rb phase3)" || fail "checks after the retries failed (see above)"
exp_failed="$(echo "$expect" | ruby -rjson -e 'puts JSON.parse($stdin.read)["failed"]')"
exp_processed="$(echo "$expect" | ruby -rjson -e 'puts JSON.parse($stdin.read)["processed"]')"
today="$(date -u +%Y-%m-%d)"
assert_eq "$(R get stat:failed)" "$exp_failed" "stat:failed (every failing execution, incl. retry:false and unknown classes)"
assert_eq "$(R get stat:processed)" "$exp_processed" "stat:processed (every execution)"
assert_eq "$(R get "stat:failed:$today")" "$exp_failed" "stat:failed:$today"
assert_eq "$(R get "stat:processed:$today")" "$exp_processed" "stat:processed:$today"
ttl="$(R ttl "stat:processed:$today")"
assert_between "$ttl" 1 157680000 "TTL of stat:processed:$today (Sidekiq re-applies 5 years)"
pass
