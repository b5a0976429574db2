#!/usr/bin/env bash
# Queue order (strict, equal weights, weighted) on real queues, concurrency 1,
# a fast --exec handler that appends "queue jid" to a file (jids encode queue and FIFO position):
#   (B) strict  -q a -q b -q c, 300 jobs each pushed before start: every a job (FIFO order), then
#       every b job, then every c job -- no c job starts while a or b is non-empty.
#   (A) -q a,1 -q b,1 -q c,1 (equal weights = random order in 6.4), 300 each: among the first 150
#       processed, each queue has >= 25.
#   (C) -q a,3 -q b,1, 4000 each: among the first 2000 processed, done(a)/done(b) in [2.4, 3.6],
#       and each job's queue is an independent draw as with Sidekiq's per-fetch shuffle
#       (P(b after b) in [15 %, 35 %], expected 25 %).
# Each part runs with the default fetch and with --fetch basic. The idle cost (CPU, Redis
# commands per second) is checked with reliable fetch by test_fetch_reliable_idle_cost.sh.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
export HH_ORDER_FILE="$HH_TMP/order.txt"

push_jobs() {   # QUEUE COUNT INDEX
    local got
    got="$(hh_ruby order_push.rb "$1" "$2" "$3")" || fail "pushing $2 jobs to $1 failed"
    assert_eq "$got" "$2" "jobs in queue:$1 after pushing"
}

run_until() {   # N_LINES TIMEOUT WORKER-ARGS...  -> runs a worker until the order file has N lines
    local want="$1" timeout="$2"; shift 2
    : >"$HH_ORDER_FILE"
    hh_start_worker -c 1 --exec "OrderJob=$HH_HANDLERS/order.sh" "$@"
    wait_until "$timeout" '[ "$(wc -l <"$HH_ORDER_FILE")" -ge '"$want"' ]' \
        || fail "only $(wc -l <"$HH_ORDER_FILE") of $want jobs processed within $timeout s with: $*"
    hh_stop_worker TERM 30
    assert_eq "$WORKER_RC" 0 "worker exit status after SIGTERM ($*)"
}

for mode in ${HH_FETCH_MODES:-default basic}; do   # HH_FETCH_MODES=basic to run one mode
    fetch_args=()
    [ "$mode" = default ] || fetch_args=(--fetch "$mode")
    R flushall >/dev/null

    # ---- (B) strict order
    push_jobs a 300 1; push_jobs b 300 2; push_jobs c 300 3
    run_until 900 90 "${fetch_args[@]}" -q a -q b -q c
    expected="$(for q in 1 2 3; do for ((i = 0; i < 300; i++)); do
        printf '%s %02x%022x\n' "$(echo a b c | cut -d' ' -f$q)" "$q" "$i"; done; done)"
    actual="$(head -n 900 "$HH_ORDER_FILE")"
    if [ "$actual" != "$expected" ]; then
        first_diff="$(diff <(echo "$expected") <(echo "$actual") | head -n 6)"
        fail "[$mode] (B) strict order broken: expected all of a (FIFO), then b, then c; first differences: $first_diff"
    fi
    hh_log "[$mode] (B) strict order held for 900 jobs"
    R flushall >/dev/null

    # ---- (A) equal weights
    push_jobs a 300 1; push_jobs b 300 2; push_jobs c 300 3
    run_until 150 60 "${fetch_args[@]}" -q a,1 -q b,1 -q c,1
    counts="$(head -n 150 "$HH_ORDER_FILE" | cut -d' ' -f1 | sort | uniq -c | tr '\n' ' ')"
    for q in a b c; do
        n="$(head -n 150 "$HH_ORDER_FILE" | grep -c "^$q ")"
        [ "$n" -ge 25 ] || fail "[$mode] (A) weights a,1 b,1 c,1: only $n of the first 150 jobs came from $q (want >= 25); counts: $counts"
    done
    # FIFO within each queue even in random mode
    qi=1
    for q in a b c; do
        got="$(grep "^$q " "$HH_ORDER_FILE" | cut -d' ' -f2)"
        k="$(printf '%s\n' "$got" | grep -c .)"
        exp="$(for ((i = 0; i < k; i++)); do printf '%02x%022x\n' "$qi" "$i"; done)"
        [ "$got" = "$exp" ] || fail "[$mode] (A) queue $q was not consumed in FIFO order (or a job ran twice)"
        qi=$((qi + 1))
    done
    hh_log "[$mode] (A) equal weights: $counts"
    R flushall >/dev/null

    # ---- (C) weighted 3:1
    push_jobs a 4000 1; push_jobs b 4000 2
    run_until 2000 120 "${fetch_args[@]}" -q a,3 -q b,1
    na="$(head -n 2000 "$HH_ORDER_FILE" | grep -c '^a ')"
    nb="$(head -n 2000 "$HH_ORDER_FILE" | grep -c '^b ')"
    [ "$nb" -gt 0 ] || fail "[$mode] (C) weights a,3 b,1: no b job among the first 2000 (a=$na) -- b starved"
    # % of b jobs directly followed by another b job
    bb="$(head -n 2000 "$HH_ORDER_FILE" | cut -c1 | awk 'NR > 1 && p == "b" { n++; if ($1 == "b") s++ } { p = $1 } END { if (n) printf "%d", 100 * s / n; else print -1 }')"
    ratio="$(awk -v a="$na" -v b="$nb" 'BEGIN { printf "%.3f", a / b }')"
    hh_log "[$mode] (C) a=$na b=$nb ratio=$ratio b->b=$bb%"
    assert_between "$ratio" 2.4 3.6 "[$mode] (C) weights a,3 b,1: done(a)/done(b) among the first 2000 (a=$na b=$nb; a b job was followed by another b job in $bb% of cases, 25% for independent per-job draws)"
    # Sidekiq shuffles for every fetch, so each job's queue is an independent weighted draw: after a
    # b job the next one is b with probability 1/4. Fetching batches from one queue shows up here
    # (and makes the ratio above swing far more than binomial noise would).
    assert_between "$bb" 15 35 "[$mode] (C) weights a,3 b,1: % of b jobs followed by a b job (independent per-job draws: 25%; a=$na b=$nb)"
done
pass
