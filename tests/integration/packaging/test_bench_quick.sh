#!/usr/bin/env bash
# `make bench --quick` keeps its correctness promises with only what CI has: bench/run.sh --quick
# with the peers that need HH_PEERS_DIR or an npm install made absent (skipped with a note), so
# hiredhand and, when ruby-sidekiq is installed, Sidekiq 6.4. Nothing here is timed: the test
# asserts only that the harness's checks pass -- every job of every drain ran exactly once, the
# counters match, nothing failed or was left -- and that they fail when a job is lost
# (BENCH_FAULT=drop: hh_bench acknowledges job [0] without running it). --against REF adds a row
# for hiredhand at commit REF, checked as the current one; here HH_BENCH_AGAINST stands in for the
# build of REF, which is the same C build as any other.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
HH_BENCH_BIN="$(dirname "$HIREDHAND")/hh_bench"
[ -x "$HH_BENCH_BIN" ] || fail "no hh_bench next to $HIREDHAND (the build makes both)"

bench() {   # OUTPUT-FILE ARGS...: runs bench/run.sh (bounded), sets BENCH_RC and BENCH_OUT
    local out="$1"
    shift
    HH_BENCH="$HH_BENCH_BIN" HH_PEERS_DIR="$HH_TMP/no-peers" HH_BENCH_NODE_DIR="$HH_TMP/no-node" \
        timeout -k 5 240 bash "$HH_ROOT/bench/run.sh" --quick --no-install -o "$out" "$@" \
        >"$HH_TMP/bench.log" 2>&1
    BENCH_RC=$?
    BENCH_OUT="$(cat "$HH_TMP/bench.log")"
}

# 1. the quick run passes its checks
bench "$HH_TMP/results.md"
[ "$BENCH_RC" = 0 ] || { tail -n 60 "$HH_TMP/bench.log" >&2; fail "bench/run.sh --quick exited $BENCH_RC"; }
assert_contains "$BENCH_OUT" "- hiredhand: correctness: ok" "hiredhand's exactly-once checks"
if ruby -e 'require "sidekiq"' 2>/dev/null && command -v sidekiq >/dev/null; then
    assert_contains "$BENCH_OUT" "- Sidekiq 6.4" "a Sidekiq 6.4 row"
    assert_not_contains "$BENCH_OUT" "correctness: FAILED" "every system's checks"
fi
assert_contains "$BENCH_OUT" "sidekiq73 skipped: no $HH_TMP/no-peers/ruby73" "Sidekiq 7.3 skipped with a note"
assert_contains "$BENCH_OUT" "gocraft skipped" "gocraft/work skipped with a note"
assert_contains "$BENCH_OUT" "bullmq skipped" "BullMQ skipped with a note"
assert_contains "$(cat "$HH_TMP/results.md")" "| drain jobs/s, c=10 |" "the table in the results file"
assert_contains "$(cat "$HH_TMP/results.md")" "| c=100 |" "hiredhand's shapes in the results file"
assert_contains "$(cat "$HH_TMP/results.md")" "| trickle Redis CPU µs/job (50/s, c=10, 5000 strict queues) |" \
    "the trickle rows in the results file"

# 2. a lost job makes the run fail, and says which check caught it, for the --against row too
against=()
if ref="$(git -C "$HH_ROOT" rev-parse --short HEAD 2>/dev/null)"; then against=(--against HEAD); fi
HH_BENCH_AGAINST="$HH_BENCH_BIN" BENCH_FAULT=drop bench "$HH_TMP/results-drop.md" --no-peers --no-shapes "${against[@]}"
assert_eq "$BENCH_RC" 1 "exit status of a run whose system lost a job"
assert_contains "$BENCH_OUT" "CHECK FAILED: 1 job(s) never ran" "the per-job check names the lost job"
assert_contains "$BENCH_OUT" "- hiredhand: correctness: FAILED" "the summary line"
if [ ${#against[@]} -gt 0 ]; then
    assert_contains "$BENCH_OUT" "| drain jobs/s, c=10 |" "the drain row"
    assert_contains "$BENCH_OUT" "| hiredhand | hiredhand@$ref | hh / hiredhand@$ref |" "REF's row and the ratio current / REF"
    assert_contains "$BENCH_OUT" "- hiredhand@$ref: correctness: FAILED" "REF's row is checked too"
    # a REF that is no commit is refused before anything runs
    bench "$HH_TMP/results-bad.md" --no-peers --against no-such-commit-anywhere
    assert_eq "$BENCH_RC" 2 "exit status of --against a ref that does not exist"
    assert_contains "$BENCH_OUT" "--against no-such-commit-anywhere: not a commit" "why"
else
    echo "note: not a git checkout: --against is not exercised"
fi
pass
