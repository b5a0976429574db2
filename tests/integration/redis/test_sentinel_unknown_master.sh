#!/usr/bin/env bash
# A master name no sentinel knows (a mistyped --sentinel-master: SENTINEL get-master-addr-by-name
# answers nil): before anything connected, `work`, `stats`, `push` and the job commands exit 2, a
# setting to fix, with an error naming the master and the sentinels asked, instead of retrying
# forever. A sentinel that gives no answer does not count (one of the three is down here); one
# that knows the name still wins. After a start that worked, the same answer (the master removed
# from the sentinels) is an outage: the worker logs it, keeps retrying and runs jobs again once the
# sentinels know the master again.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
. "$(dirname "$0")/../../lib/sentinel_helpers.sh"
hh_require_binary
command -v redis-sentinel >/dev/null || fail "redis-sentinel is not installed (scripts/deps.sh test)"
hh_redis_start
MASTER_PORT="$REDIS_PORT"
sentinel_write_configs   # three ports; sentinel 2 is never started
for i in 0 1; do
    sentinel_launch "$i"
    must_wait 30 '[ "$(SP1 '"$i"' sentinel get-master-addr-by-name mymaster 2>/dev/null | tail -n 1)" = "$MASTER_PORT" ]' \
        "sentinel $i does not name the master"
done
sentinels=(--sentinel "127.0.0.1:${SENTINEL_PORTS[0]}" --sentinel "127.0.0.1:${SENTINEL_PORTS[1]}"
           --sentinel "127.0.0.1:${SENTINEL_PORTS[2]}")
url="redis://127.0.0.1/0"

# the error: exit 2, the name, the sentinels that said so, the one that gave no answer
expect_unknown() {   # WHAT -- ARGS...
    local what="$1"; shift 2
    hh_cli "$@"
    [ "$HH_RC" = 124 ] && fail "$what: still running after 30 s (retrying forever?)"
    assert_eq "$HH_RC" 2 "$what: exit status (stderr: $HH_ERR)"
    assert_contains "$HH_ERR" "no sentinel knows a master named mymastr" "$what: the error names the master"
    assert_contains "$HH_ERR" "asked 127.0.0.1:${SENTINEL_PORTS[0]}, 127.0.0.1:${SENTINEL_PORTS[1]}" \
        "$what: the error names the sentinels asked"
    assert_contains "$HH_ERR" "no answer from 127.0.0.1:${SENTINEL_PORTS[2]}" "$what: and the one that gave no answer"
}
expect_unknown "work" -- work -r "$url" "${sentinels[@]}" --sentinel-master mymastr --exec "SentJob=$RF_HANDLER"
assert_contains "$HH_ERR" "check the master's name" "work: says what to fix"
assert_contains "$HH_ERR" "giving up (a configuration error, not retried)" "work: says it gives up"
expect_unknown "stats" -- stats -r "$url" "${sentinels[@]}" --sentinel-master mymastr
expect_unknown "push" -- push SentJob '[1]' -r "$url" "${sentinels[@]}" --sentinel-master mymastr
expect_unknown "retries list" -- retries list -r "$url" "${sentinels[@]}" --sentinel-master mymastr
expect_unknown "the URL's host as the name" -- stats -r "redis://mymastr/0" "${sentinels[@]}"
# the right name works through the same sentinels
hh_cli stats -r "$url" "${sentinels[@]}" --sentinel-master mymaster
assert_eq "$HH_RC" 0 "stats with the master's name (stderr: $HH_ERR)"

# after a start that worked: an outage, retried
jids="$HH_TMP/all.jids"; : >"$jids"
rf_push default SentJob 5 "$jids"
HH_NO_URL=1 hh_start_worker -r "$url" "${sentinels[@]}" --sentinel-master mymaster -c 2 --exec "SentJob=$RF_HANDLER"
must_wait 30 '[ "$(rf_uniq "$RF_DIR/done")" -ge 5 ]' "the worker did not run the first jobs"
for i in 0 1; do SP1 "$i" sentinel remove mymaster >/dev/null; done
R client kill type normal >/dev/null
R client kill type pubsub >/dev/null
must_wait 30 'grep -q "no sentinel knows a master named mymaster" "$WORKER_LOG"' \
    "no log line saying the sentinels no longer know the master"
sleep 2   # the outage itself: the worker must not exit during it (checked right after)
assert_alive "$WORKER_PID" "the worker exited when the sentinels forgot the master after a start"
assert_not_contains "$(cat "$WORKER_LOG")" "not retried" "an outage after a start is retried"
for i in 0 1; do SP1 "$i" sentinel monitor mymaster 127.0.0.1 "$MASTER_PORT" 2 >/dev/null; done
rf_push default SentJob 5 "$jids"
must_wait 60 '[ "$(rf_uniq "$RF_DIR/done")" -ge 10 ]' "the worker did not run jobs once the sentinels knew the master again"
hh_stop_worker TERM 15
assert_eq "$WORKER_RC" 0 "exit status after SIGTERM"
pass "an unknown master name: exit 2 at start, retried after one"
