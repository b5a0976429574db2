#!/usr/bin/env bash
# Checks the reference peer itself (no hiredhand involved): the harness starts Redis, the Ruby
# helpers push with Sidekiq's client, the real `sidekiq` server runs tests/ruby/app.rb's workers,
# and Sidekiq's API reads the retry set. If this fails, the other tests' verdicts mean nothing.
. "$(dirname "$0")/../../lib/harness.sh"

hh_redis_start
out="$(hh_ruby reference_check.rb push)" || fail "ruby push failed: $out"
ok=$(echo "$out" | ruby -rjson -e 'puts JSON.parse($stdin.read)["ok"]')
bad=$(echo "$out" | ruby -rjson -e 'puts JSON.parse($stdin.read)["fail"]')
sched=$(echo "$out" | ruby -rjson -e 'puts JSON.parse($stdin.read)["sched"]')
assert_eq "$(R zcard schedule)" 1 "perform_in(1) wrote one schedule entry"

export HH_SK_POLL=1   # Sidekiq polls schedule/retry every 0.5-1.5 s (first poll within 5 s)
hh_sidekiq_start app.rb
hh_sidekiq_wait_ready 40
must_wait 30 '[ "$(R llen test:ran)" -ge 2 ] && [ "$(R zcard retry)" -ge 1 ]' \
    "sidekiq did not run OkWorker x2 and fail FailWorker within 30 s (test:ran=$(R llen test:ran), retry=$(R zcard retry))"
hh_ruby reference_check.rb verify "$ok" "$bad" "$sched" || fail "Sidekiq API checks failed (see above)"
hh_sidekiq_stop
pass
