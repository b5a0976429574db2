#!/usr/bin/env bash
# The pickup design's fallback: when Redis refuses CLIENT TRACKING (here an ACL user without
# `client|tracking`; Redis < 6 has no such command at all), the worker says so once at start and
# idle reliable fetchers block on one queue each in 2 s waits: with `-c 3 -q default -q low
# -q bulk` and one thread busy on a 30 s job, each of 5 jobs pushed to `default` starts within
# 3 s (one 2 s block plus slack; before: 8-10 s), and nothing is lost.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
. "$(dirname "$0")/../../lib/pickup_helpers.sh"
hh_require_binary
hh_redis_start

R acl setuser worker on '>s3cret' '~*' '&*' '+@all' '-client|tracking' >/dev/null ||
    fail "ACL SETUSER failed"
HH_NO_URL=1 hh_start_worker -r "redis://worker:s3cret@127.0.0.1:$REDIS_PORT/0" -c 3 -t 1 \
    -q default -q low -q bulk --exec "SlowJob=$RF_HANDLER 30" --exec "OkJob=$RF_HANDLER"
hh_worker_wait_ready 15
must_wait 10 'grep -q "no CLIENT TRACKING" "$WORKER_LOG"' "the fallback was not logged"
slow="$(hh_jid)"
R lpush queue:default "$(rf_payload SlowJob "$slow" default)" >/dev/null
must_wait 10 'grep -q "^'"$slow"' " "$RF_DIR/started"' "the 30 s job did not start"
sleep 1
lat=()
for ((i = 0; i < 5; i++)); do
    lat+=("$(pk_pickup default OkJob)")
done
s="$(pk_summary "${lat[@]}")"
hh_log "pickups without CLIENT TRACKING (s): ${lat[*]} -- $s"
must_wait 10 '[ "$(rf_uniq "$RF_DIR/done")" -ge 5 ]' "not every OkJob finished"
assert_eq "$(grep -c "no CLIENT TRACKING" "$WORKER_LOG")" 1 "the fallback is logged once"
hh_stop_worker TERM 15
assert_eq "$WORKER_RC" 0 "exit status after SIGTERM"
pk_all_under 3 "${lat[@]}" || fail "pickups without CLIENT TRACKING: ${lat[*]} s (want each < 3 s: one 2 s block and some slack)"
pass "fallback logged once; pickups $s"
