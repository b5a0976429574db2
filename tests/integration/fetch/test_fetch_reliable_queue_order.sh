#!/usr/bin/env bash
# Queue weights and strict order keep their meaning with
# --fetch reliable (explicit), concurrency 1 unless said, fast jobs (handlers/rf_job.sh records
# "jid worker time queue" at start, in start order):
#   (B) strict -q a -q b -q c, 300 jobs each pushed before the start: the start order is every a
#       job (FIFO), then every b job, then every c job -- no c job starts while a or b is non-empty.
#   (C) -q a,3 -q b,1, 4000 each: among the first 2000 started, done(a)/done(b) in [2.4, 3.6].
# (Equal weights, part A, are in test_queue_order.sh; the idle cost is test_fetch_reliable_idle_cost.sh.)
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
hh_require_binary
hh_redis_start

run_until() {   # N_STARTED TIMEOUT WORKER-ARGS...
    local want="$1" timeout="$2"; shift 2
    : >"$RF_DIR/started"
    hh_start_worker -c 1 --fetch reliable --exec "OrderJob=$RF_HANDLER" "$@"
    wait_until "$timeout" '[ "$(grep -c . "$RF_DIR/started")" -ge '"$want"' ]' \
        || fail "only $(grep -c . "$RF_DIR/started") of $want jobs started within $timeout s with: $*"
    hh_stop_worker TERM 30
    assert_eq "$WORKER_RC" 0 "worker exit status after SIGTERM ($*)"
}

# ---------------------------------------------------------------- (B) strict order
ja="$HH_TMP/a.jids"; jb="$HH_TMP/b.jids"; jc="$HH_TMP/c.jids"; : >"$ja"; : >"$jb"; : >"$jc"
rf_push a OrderJob 300 "$ja"; rf_push b OrderJob 300 "$jb"; rf_push c OrderJob 300 "$jc"
run_until 900 120 -q a -q b -q c
expected="$(cat "$ja" "$jb" "$jc")"
actual="$(head -n 900 "$RF_DIR/started" | cut -d' ' -f1)"
if [ "$actual" != "$expected" ]; then
    first_c="$(grep -n ' c$' "$RF_DIR/started" | head -n 1 | cut -d: -f1)"
    fail "(B) strict order broken with reliable fetch: expected every a job (FIFO), then b, then c; first c job started as job #$first_c; first differences: $(diff <(echo "$expected") <(echo "$actual") | head -n 6 | tr '\n' ' ')"
fi
hh_log "(B) strict order held for 900 jobs"
R flushall >/dev/null

# ---------------------------------------------------------------- (C) weights 3:1
: >"$ja"; : >"$jb"
rf_push a OrderJob 4000 "$ja"; rf_push b OrderJob 4000 "$jb"
run_until 2000 180 -q a,3 -q b,1
na="$(head -n 2000 "$RF_DIR/started" | grep -c ' a$')"
nb="$(head -n 2000 "$RF_DIR/started" | grep -c ' b$')"
[ "$nb" -gt 0 ] || fail "(C) weights a,3 b,1: no b job among the first 2000 (a=$na): b starved"
ratio="$(awk -v a="$na" -v b="$nb" 'BEGIN { printf "%.3f", a / b }')"
hh_log "(C) first 2000: a=$na b=$nb ratio=$ratio"
assert_between "$ratio" 2.4 3.6 "(C) weights a,3 b,1 with reliable fetch: done(a)/done(b) among the first 2000 (a=$na b=$nb)"
pass "strict order held for 900 jobs; weights a,3 b,1 gave a/b = $ratio among the first 2000"
