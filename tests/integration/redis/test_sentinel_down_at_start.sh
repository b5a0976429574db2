#!/usr/bin/env bash
# --sentinel with every sentinel down when the worker starts: one clear log line naming each
# sentinel and why it failed, retries with backoff, the worker never exits; once the sentinels
# up (only the last one, at first: they are tried in turn) it finds the master (checked with ROLE),
# runs the queued jobs and beats there. Also
# `push` through the sentinels, and a bad --sentinel address refused as a usage error.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
. "$(dirname "$0")/../../lib/sentinel_helpers.sh"
hh_require_binary
command -v redis-sentinel >/dev/null || fail "redis-sentinel is not installed (scripts/deps.sh test)"
hh_redis_start
MASTER_PORT="$REDIS_PORT"
sentinel_write_configs   # ports chosen, nothing started

jids="$HH_TMP/all.jids"; : >"$jids"
rf_push default SentJob 50 "$jids"
HH_NO_URL=1 hh_start_worker -r "redis://127.0.0.1/0" "${SENTINEL_ARGS[@]}" -c 2 --heartbeat-interval 1 \
    --exec "SentJob=$RF_HANDLER"
must_wait 20 'grep -q "cannot connect.*no sentinel gave the master mymaster" "$WORKER_LOG"' "no log line saying the sentinels cannot be reached"
line="$(grep -m1 "cannot connect.*no sentinel gave the master mymaster" "$WORKER_LOG")"
for p in "${SENTINEL_PORTS[@]}"; do
    assert_contains "$line" "127.0.0.1:$p" "the log line names sentinel :$p"
done
assert_contains "$line" "retrying with backoff" "the log line says it retries"
# it keeps retrying, with backoff: still alive and nothing ran while a few attempts fail
must_wait 20 '[ "$(grep -c "" "$WORKER_LOG")" -ge 1 ] && ! [ -s "$RF_DIR/done" ]' "jobs ran without a master"
sleep 3   # the outage itself: the worker must not exit during it (checked right after)
assert_alive "$WORKER_PID" "worker exited while every sentinel was down"
assert_eq "$(grep -c "cannot connect.*no sentinel gave the master" "$WORKER_LOG")" 1 "the outage is logged once, not per attempt"

# only the last sentinel comes up: the worker must try them in turn to find it
sentinel_launch 2
must_wait 60 '[ "$(rf_uniq "$RF_DIR/done")" -ge 50 ]' "the worker did not run the jobs through the one sentinel up"
sentinel_launch 0; sentinel_launch 1
rf_compare "$jids" "$RF_DIR/done"
assert_eq "$RF_LOST $RF_DUP" "0 0" "lost, duplicated"
must_wait 20 '[ "$(R scard processes)" = 1 ]' "the worker does not beat on the master"

# push through the sentinels; a bad address is a usage error
hh_cli push SentJob '[1]' -q elsewhere -r "redis://127.0.0.1/0" "${SENTINEL_ARGS[@]}"
assert_eq "$HH_RC" 0 "push through the sentinels: $HH_ERR"
assert_contains "$(R lrange queue:elsewhere 0 -1)" "$HH_OUT" "the job pushed through the sentinels is on the master"
hh_cli stats -r "redis://127.0.0.1/0" --sentinel "127.0.0.1:notaport"
assert_eq "$HH_RC" 2 "exit status of a bad --sentinel"
assert_contains "$HH_ERR" "bad sentinel address" "the error names the bad address"
hh_cli stats -r "redis://127.0.0.1/0" "${SENTINEL_ARGS[@]:0:2}" --sentinel-master nosuchmaster
assert_eq "$HH_RC" 2 "stats with an unknown master name: a setting to fix"
assert_contains "$HH_ERR" "no sentinel knows a master named nosuchmaster" "the error says the sentinels do not know the name"
hh_stop_worker TERM 15
assert_eq "$WORKER_RC" 0 "exit status after SIGTERM"
pass "sentinels down at start: logged once, retried, jobs ran once they came up"
