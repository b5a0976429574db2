#!/usr/bin/env bash
# Pickup latency with few threads and several queues: `-c 3 -q default -q low -q bulk`, one job
# running 30 s, then 20 jobs pushed one by one to `default` with redis-cli LPUSH (each after the
# previous one started): each must start within PK_LIMIT (1 s, pickup_helpers.sh) of its
# push, since two threads are idle.
# Run with reliable and basic fetch, strict and weighted order.
# Before the pickup design, reliable fetch's idle threads sat in 10 s blocking waits on other
# queues: pickups took 8-10 s.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
. "$(dirname "$0")/../../lib/pickup_helpers.sh"
hh_require_binary
hh_redis_start

LIMIT=$PK_LIMIT
problems=()
summaries=()
run_case() {   # FETCH ORDER
    local fetch="$1" order="$2" qs slow i l lat=() slow_seen=0
    if [ "$order" = weighted ]; then qs=(-q default,3 -q low,2 -q bulk,1); else qs=(-q default -q low -q bulk); fi
    R flushall >/dev/null
    : >"$RF_DIR/started"; : >"$RF_DIR/done"
    hh_start_worker -c 3 -t 1 --fetch "$fetch" "${qs[@]}" \
        --exec "SlowJob=$RF_HANDLER 30" --exec "OkJob=$RF_HANDLER"
    hh_worker_wait_ready 15
    slow="$(hh_jid)"
    R lpush queue:default "$(rf_payload SlowJob "$slow" default)" >/dev/null
    must_wait 10 'grep -q "^'"$slow"' " "$RF_DIR/started"' "$fetch/$order: the 30 s job did not start"
    sleep 1   # the two other threads go idle
    for ((i = 0; i < 20; i++)); do
        l="$(pk_pickup default OkJob)"
        lat+=("$l")
        pk_all_under 1 "$l" || slow_seen=$((slow_seen + 1))
        [ "$slow_seen" -ge 3 ] && break   # clearly broken: do not wait 20 times
        sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", (r % 300) / 1000 }')"
    done
    assert_alive "$WORKER_PID" "$fetch/$order: worker died"
    must_wait 10 '[ "$(rf_uniq "$RF_DIR/done")" -ge "${#lat[@]}" ]' "$fetch/$order: not every OkJob finished"
    hh_stop_worker TERM 15
    assert_eq "$WORKER_RC" 0 "$fetch/$order: exit status after SIGTERM"
    local s; s="$(pk_summary "${lat[@]}")"
    summaries+=("$fetch/$order: $s")
    hh_log "$fetch/$order pickups (s): ${lat[*]} -- $s"
    pk_all_under "$LIMIT" "${lat[@]}" && [ "${#lat[@]}" = 20 ] ||
        problems+=("$fetch fetch, $order order: pickups ${lat[*]} s ($s; want each < $LIMIT s)")
}

run_case reliable strict
run_case reliable weighted
run_case basic strict
run_case basic weighted

if [ ${#problems[@]} -gt 0 ]; then
    msg="pickup latency, -c 3, 3 queues, one thread busy:"
    for p in "${problems[@]}"; do msg="$msg
  - $p"; done
    fail "$msg"
fi
pass "every pickup under ${LIMIT} s: ${summaries[*]}"
