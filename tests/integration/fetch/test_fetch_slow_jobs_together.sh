#!/usr/bin/env bash
# Jobs that wait (1.5 ms each, as a job waiting on a remote call) at -c 50 are not fetched one
# round trip per job: a fetch while jobs flow brings a job for every idle thread, so the fetch
# script runs far fewer times than once per job (Redis' INFO commandstats, counted by
# bench/shapes_driver.c, built here against this build's library; nothing is timed). A fetcher
# that takes one job per round trip for slow jobs, one fetch in flight at a time, runs it once
# per job: then that round trip caps the throughput of all 50 threads together, and the test
# fails. The driver checks every job ran exactly once and nothing is left in a queue or an
# in-progress list; weighted order too (each job's queue still drawn on its own).
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
hh_shapes_driver

n=4000
for shape in "-q 1" "-q 4 --weighted"; do
    # shellcheck disable=SC2086
    out="$(SHAPES_COMMANDS=1 LD_LIBRARY_PATH="$SHAPES_LIB" timeout -k 5 120 "$SHAPES_DRIVER" \
        -u "redis://127.0.0.1:$REDIS_PORT" -n "$n" -c 50 --sleep-us 1500 --timeout 100 $shape)" ||
        fail "shapes_driver $shape failed: $out"
    hh_log "$shape: $out"
    assert_contains "$out" "ok=1" "every job ran once, nothing left ($shape)"
    per_job="$(sed -n 's/^ *evalsha \([0-9.]*\)\/job$/\1/p' <<<"$out")"
    [ -n "$per_job" ] || per_job=0
    awk -v x="$per_job" 'BEGIN { exit !(x > 0 && x <= 0.5) }' ||
        fail "fetch script calls per job $per_job for slow jobs at -c 50 ($shape; at most 0.5 expected: one fetch serves every idle thread)"
done
pass "slow jobs at -c 50: a fetch serves every idle thread (strict and weighted), every job ran once"
