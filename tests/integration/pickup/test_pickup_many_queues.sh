#!/usr/bin/env bash
# Pickup latency with many queues: `-c 10` with 20, 300 and 1,000 queues, idle, then one job
# pushed by redis-cli LPUSH (not through hiredhand) into the last queue, 20 runs: every pickup
# under PK_LIMIT (1 s, pickup_helpers.sh). Reliable fetch strict (20, 1,000 queues) and weighted (300), basic fetch (300).
# With 300 idle queues the whole process sends a few Redis commands per second at most (INFO
# commandstats over 10 s, our own INFO/CONFIG left out). /stats and /metrics list the first 64
# queues and count them all. More than 10,000 queues are refused with a message naming the limit.
# Before the pickup design: ~1.3 s pickups with 11-20 queues at -c 10, and more than 64 queues
# were refused.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
. "$(dirname "$0")/../../lib/pickup_helpers.sh"
hh_require_binary
hh_redis_start

LIMIT=$PK_LIMIT
problems=()
summaries=()
calls() {   # STATS [CMD...] -> calls in INFO commandstats text (all commands without CMD)
    local stats="$1"; shift
    printf '%s\n' "$stats" | awk -F'[:=,]' -v f=" $* " '/^cmdstat_/ { c = substr($1, 9); sub(/[|].*/, "", c); if (f == "  " || index(f, " " c " ")) n += $3 } END { print n + 0 }'
}

run_case() {   # NQUEUES FETCH ORDER [idle|http]
    local nq="$1" fetch="$2" order="$3" idle="" http="" i l lat=() qs=() slow_seen=0 last extra=()
    [ "${4:-}" = idle ] && idle=1
    if [ "${4:-}" = http ]; then http="$(hh_pick_free_port)"; extra=(--http "$http"); fi
    for ((i = 1; i <= nq; i++)); do
        if [ "$order" = weighted ]; then qs+=(-q "q$i,$((1 + i % 3))"); else qs+=(-q "q$i"); fi
    done
    last="q$nq"
    R flushall >/dev/null
    : >"$RF_DIR/started"; : >"$RF_DIR/done"
    hh_start_worker -c 10 -t 1 --fetch "$fetch" "${extra[@]}" "${qs[@]}" --exec "OkJob=$RF_HANDLER"
    hh_worker_wait_ready 15
    sleep 2   # every thread finds its queues empty and goes idle
    if [ -n "$idle" ]; then
        local t0 t1 stats all dur
        R config resetstat >/dev/null
        t0="$(hh_now)"
        sleep 10
        stats="$(R info commandstats | tr -d '\r')"
        t1="$(hh_now)"
        all=$(( $(calls "$stats") - $(calls "$stats" info config) ))
        dur="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')"
        local rate; rate="$(awk -v n="$all" -v d="$dur" 'BEGIN { printf "%.2f", n / d }')"
        local breakdown; breakdown="$(printf '%s\n' "$stats" | grep -o '^cmdstat_[a-z|]*:calls=[0-9]*' | sed 's/^cmdstat_//; s/:calls=/=/' | tr '\n' ' ')"
        hh_log "$nq queues, $fetch/$order, idle ${dur} s: $all commands ($rate /s): $breakdown"
        summaries+=("idle $nq queues: $rate cmds/s")
        awk -v v="$rate" 'BEGIN { exit !(v <= 6) }' ||
            problems+=("$nq queues idle: $rate Redis commands/s (want a few, <= 6): $breakdown")
    fi
    for ((i = 0; i < 20; i++)); do
        l="$(pk_pickup "$last" OkJob)"
        lat+=("$l")
        pk_all_under 1 "$l" || slow_seen=$((slow_seen + 1))
        [ "$slow_seen" -ge 3 ] && break
        sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", 0.05 + (r % 300) / 1000 }')"
    done
    assert_alive "$WORKER_PID" "$nq queues: worker died"
    if [ -n "$http" ]; then   # the snapshot lists the first 64 queues and counts them all
        local body; body="$(curl -sS --max-time 5 "http://127.0.0.1:$http/stats")" || fail "GET /stats failed"
        assert_eq "$(jq -r '.queues | length' <<<"$body")" 64 "/stats lists the first 64 of $nq queues"
        assert_eq "$(jq -r '.queues_total' <<<"$body")" "$nq" "/stats queues_total"
        assert_eq "$(jq -r '.queues[0].name' <<<"$body")" q1 "/stats lists queues in configuration order"
        assert_contains "$(curl -sS --max-time 5 "http://127.0.0.1:$http/metrics")" "hiredhand_queues $nq" "/metrics hiredhand_queues"
    fi
    hh_stop_worker TERM 15
    assert_eq "$WORKER_RC" 0 "$nq queues $fetch/$order: exit status after SIGTERM"
    local s; s="$(pk_summary "${lat[@]}")"
    summaries+=("$nq queues $fetch/$order: $s")
    hh_log "$nq queues $fetch/$order pickups (s): ${lat[*]} -- $s"
    pk_all_under "$LIMIT" "${lat[@]}" && [ "${#lat[@]}" = 20 ] ||
        problems+=("$nq queues, $fetch fetch, $order: pickups ${lat[*]} s ($s; want each < $LIMIT s)")
}

run_case 20 reliable strict
run_case 300 reliable weighted idle
run_case 300 basic strict http
run_case 1000 reliable strict

# More than the limit is refused with a clear message (no silent cap).
qs=()
for ((i = 1; i <= 10001; i++)); do qs+=(-q "q$i"); done
hh_cli work -r "$REDIS_URL" "${qs[@]}"
assert_ne "$HH_RC" 0 "10,001 queues must be refused"
assert_contains "$HH_ERR" "at most 10000" "10,001 queues: the error names the limit"

if [ ${#problems[@]} -gt 0 ]; then
    msg="pickup latency, -c 10, many queues:"
    for p in "${problems[@]}"; do msg="$msg
  - $p"; done
    fail "$msg"
fi
pass "${summaries[*]}"
