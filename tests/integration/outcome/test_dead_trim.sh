#!/usr/bin/env bash
# The dead set is trimmed like Sidekiq's (ZADD dead now + ZREMRANGEBYSCORE
# -inf now-15552000 + ZREMRANGEBYRANK 0 -10000, atomically). `dead` prefilled with 10,000 entries
# scored now-10000..now-1 plus one 200 days old; one job dies in hiredhand; then ZCARD dead ==
# 9999 (as Sidekiq 6.4), the new entry present, the 200-day entry and the two lowest-scored
# entries gone. Checked for a retry:0 job with the default fetch and with --fetch basic, for a
# malformed entry (same path, docs/protocol.md), and with --dead-max-jobs 100 --dead-timeout 3600.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start

round() {   # LABEL EXPECTED_SIZE MAX_AGE KIND(fail|malformed) WORKER-ARGS...
    local label="$1" size="$2" max_age="$3" kind="$4"; shift 4
    R flushall >/dev/null
    local t0 jid want
    t0="$(hh_ruby dead_check.rb prefill)" || fail "[$label] prefill failed"
    assert_eq "$(R zcard dead)" 10001 "[$label] prefilled dead set"
    jid="$(hh_jid)"
    if [ "$kind" = fail ]; then
        R lpush queue:default "{\"retry\":0,\"queue\":\"default\",\"class\":\"FailJob\",\"args\":[\"trim\"],\"jid\":\"$jid\",\"created_at\":$(hh_now),\"enqueued_at\":$(hh_now)}" >/dev/null
        want="$jid"
    else
        R lpush queue:default "not json at all $jid" >/dev/null
        want="raw:not json at all $jid"
    fi
    hh_start_worker -c 2 --exec "FailJob=$HH_HANDLERS/fail.sh" "$@"
    must_wait 20 'R zrange dead -1 -1 | grep -q '"$jid" \
        "[$label] the dying job ($jid) did not reach the dead set within 20 s (dead=$(R zcard dead) retry=$(R zcard retry) queue=$(R llen queue:default))"
    hh_stop_worker TERM 30
    assert_eq "$WORKER_RC" 0 "[$label] worker exit status after SIGTERM"
    hh_ruby dead_check.rb verify "$t0" "$want" "$size" $max_age || fail "[$label] dead-set trim checks failed (see above)"
    hh_log "[$label] dead set trimmed to $(R zcard dead)"
}

round "retry:0, default fetch" 9999 "" fail
round "retry:0, --fetch basic" 9999 "" fail --fetch basic
round "malformed entry" 9999 "" malformed
round "--dead-max-jobs 100 --dead-timeout 3600" 99 3600 fail --dead-max-jobs 100 --dead-timeout 3600
pass
