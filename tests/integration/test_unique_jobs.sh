#!/usr/bin/env bash
# sidekiq-unique-jobs 8.x (with Sidekiq 7.3): jobs pushed through the gem's client middleware
# and run by hiredhand leave the uniquejobs:* keys exactly as the gem's own server middleware
# (and its death handler) leaves them, key by key with TTLs, for every lock type:
#   until_executed (success: released; failure: kept; retry: false: the death handler deletes it),
#   until_executing (success; failure takes it back), while_executing, until_and_while_executing
#   (success; failure), until_expired (kept, with its TTL)
# then a second push of until_executed's job is accepted (the lock was released), and two
# while_executing jobs of one digest never run at the same time.
# The gem's logic is pinned without Ruby by tests/unit/test_unique.c.
. "$(dirname "$0")/../lib/harness.sh"
hh_require_binary
hh_require_peers
hh_redis_start

ref="$HH_TMP/ref.json" pushed="$HH_TMP/pushed.json"
hh_peer_ruby 73-gems unique_jobs.rb reference "$ref" || fail "the gem's reference run failed"
hh_peer_ruby 73-gems unique_jobs.rb push "$pushed" || fail "pushing through the gem's client failed"
hh_peer_ruby 73-gems unique_jobs.rb push_pair >/dev/null || fail "pushing the while_executing pair failed"

ok="$HH_HANDLERS/record.sh" ko="$HH_HANDLERS/fail.sh"
hh_start_worker -c 4 --poll-interval 1 \
    --exec "UqUntilExecuted=$ok" --exec "UqUntilExecutedFail=$ko" --exec "UqUntilExecutedDead=$ko" \
    --exec "UqUntilExecuting=$ok" --exec "UqUntilExecutingFail=$ko" --exec "UqWhileExecuting=$ok" \
    --exec "UqUntilAndWhile=$ok" --exec "UqUntilAndWhileFail=$ko" --exec "UqUntilExpired=$ok" \
    --exec "UqOverlap=$HH_HANDLERS/span.sh 1"

hh_peer_ruby 73-gems unique_jobs.rb compare "$ref" "$pushed" \
    || fail "hiredhand left the gem's keys otherwise than the gem's server (above)"

# the pair: one ran; the other either found the :RUN lock taken (not run, the gem's default) or
# ran after it -- never both at once
must_wait 15 '[ "$(R llen test:spans)" -ge 1 ] && [ "$(R llen queue:default)" = 0 ]' "the while_executing pair did not run"
must_wait 10 '[ -z "$(R keys "uniquejobs:*:RUN:LOCKED")" ]' "the :RUN lock of the pair was not released"
R lrange test:spans 0 -1 | sort -k2 -n | awk 'NR > 1 && $2 < end { bad = 1 } { end = $3 } END { exit bad }' \
    || fail "two while_executing jobs of one digest overlapped: $(R lrange test:spans 0 -1 | tr '\n' ';')"
pass
