#!/usr/bin/env bash
# retry_for (Sidekiq 7.1+): a failing job whose retry window (failed_at + retry_for) ended two
# hours ago goes to the dead set at once, with retry_count 4, where Sidekiq 7.3's own retry
# handler puts the same payload -- not back to the retry set for another 21 tries.
# The rule (7.x and 8.x forms) is pinned without Ruby by tests/unit/test_retry.c.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_require_peers
hh_redis_start

ref_jid="$(hh_jid)" jid="$(hh_jid)"
want="$(hh_peer_ruby 73 retry_for.rb sidekiq "$(hh_peer_ruby 73 retry_for.rb payload "$ref_jid")")" \
    || fail "Sidekiq 7.3's retry handler did not run"
assert_eq "$want" "dead 4" "where Sidekiq 7.3 puts the job"

R lpush queue:default "$(hh_peer_ruby 73 retry_for.rb payload "$jid")" >/dev/null
hh_start_worker -c 1 --exec "RetryForJob=$HH_HANDLERS/fail.sh"
must_wait 15 '[ "$(R llen test:fails)" = 1 ] && [ "$(R zcard dead)" = 2 ]' \
    "the job did not reach the dead set (retry: $(R zcard retry), dead: $(R zcard dead))"
assert_eq "$(hh_peer_ruby 73 retry_for.rb where "$jid")" "$want" "where hiredhand puts the job"
pass
