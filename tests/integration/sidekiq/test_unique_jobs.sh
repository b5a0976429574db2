#!/usr/bin/env bash
# sidekiq-unique-jobs 8.x (with Sidekiq 7.3, then with 8.1): jobs pushed through the gem's client middleware
# and run by hiredhand leave the uniquejobs:* keys exactly as the gem's own server middleware
# (and its death handler) leaves them, key by key with TTLs, for every lock type:
#   until_executed (success: released; failure: kept; retry: false: the death handler deletes it),
#   until_executing (success; failure takes it back), while_executing, until_and_while_executing
#   (success; failure), until_expired (kept, with its TTL)
# then a second push of until_executed's job is accepted (the lock was released), and two
# while_executing jobs of one digest never run at the same time.
# The gem's logic is pinned without Ruby by tests/unit/test_unique.c.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_require_peers
hh_redis_start

for gen in 73 81; do
    hh_log "sidekiq-unique-jobs with Sidekiq $gen"
    R flushall >/dev/null
    ref="$HH_TMP/ref$gen.json" pushed="$HH_TMP/pushed$gen.json"
    hh_peer_ruby $gen-gems unique_jobs.rb reference "$ref" || fail "[Sidekiq $gen] the gem's reference run failed"
    hh_peer_ruby $gen-gems unique_jobs.rb push "$pushed" || fail "[Sidekiq $gen] pushing through the gem's client failed"
    hh_peer_ruby $gen-gems unique_jobs.rb push_pair >/dev/null || fail "[Sidekiq $gen] pushing the while_executing pair failed"

    ok="$HH_HANDLERS/record.sh" ko="$HH_HANDLERS/fail.sh"
    hh_start_worker -c 4 --poll-interval 1 \
        --exec "UqUntilExecuted=$ok" --exec "UqUntilExecutedFail=$ko" --exec "UqUntilExecutedDead=$ko" \
        --exec "UqUntilExecuting=$ok" --exec "UqUntilExecutingFail=$ko" --exec "UqWhileExecuting=$ok" \
        --exec "UqUntilAndWhile=$ok" --exec "UqUntilAndWhileFail=$ko" --exec "UqUntilExpired=$ok" \
        --exec "UqOverlap=$HH_HANDLERS/span.sh 1"

    hh_peer_ruby $gen-gems unique_jobs.rb compare "$ref" "$pushed" \
        || fail "[Sidekiq $gen] hiredhand left the gem's keys otherwise than the gem's server (above)"

    # the pair: one ran; the other either found the :RUN lock taken (not run, the gem's default) or
    # ran after it -- never both at once
    must_wait 15 '[ "$(R llen test:spans)" -ge 1 ] && [ "$(R llen queue:default)" = 0 ]' "[Sidekiq $gen] the while_executing pair did not run"
    must_wait 10 '[ -z "$(R keys "uniquejobs:*:RUN:LOCKED")" ]' "[Sidekiq $gen] the :RUN lock of the pair was not released"
    R lrange test:spans 0 -1 | sort -k2 -n | awk 'NR > 1 && $2 < end { bad = 1 } { end = $3 } END { exit bad }' \
        || fail "[Sidekiq $gen] two while_executing jobs of one digest overlapped: $(R lrange test:spans 0 -1 | tr '\n' ';')"
    hh_stop_worker
    assert_eq "$WORKER_RC" 0 "[Sidekiq $gen] worker exit status"
done
pass
