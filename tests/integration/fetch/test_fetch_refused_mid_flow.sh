#!/usr/bin/env bash
# Redis refuses the fetch while fast jobs flow. With fast jobs, the thread that takes a job
# and leaves a batch or less buffered fetches the next batch before running its own job
# (src/fetch.c, prefetch), and most fetches of a drain are such prefetches. Here Redis starts
# refusing writes (min-replicas-to-write 1 without a replica: the fetch script gets NOREPLICAS) in
# the middle of a drain of
# 300,000 no-op jobs at -c 10 (bench/shapes_driver.c, library level, each job marking its
# index), until several fetches were refused (INFO errorstats), then accepts them again.
# Expected: the fetch errors are logged, the drain goes on once writes are accepted, every job
# runs exactly once (none twice, none lost) and nothing is left in a queue or an in-progress
# list. A prefetch that lost track of its promised jobs would leave the other threads waiting
# forever (the drain times out); one that dropped or re-ran a batch fails the per-job check.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
hh_shapes_driver

n=300000
out="$HH_TMP/driver.out" err="$HH_TMP/driver.err"
LD_LIBRARY_PATH="$SHAPES_LIB" timeout -k 5 160 "$SHAPES_DRIVER" -u "redis://127.0.0.1:$REDIS_PORT" -n "$n" \
    -c 10 --check-once --timeout 120 >"$out" 2>"$err" &
driver=$!
_hh_register "$driver"
# the drain has begun: the loaded jobs were renamed into queue:q1 and some taken
must_wait 120 'l="$(R llen queue:q1)"; [ "${l:-0}" -gt 0 ] && [ "${l:-0}" -lt '"$n"' ]' \
    "the drain did not start (queue:q1 holds $(R llen queue:q1))"
refused() { R info errorstats | tr -d '\r' | awk -F'count=' '/^errorstat_NOREPLICAS:/ { print $2 + 0 }'; }
R config set min-replicas-to-write 1 >/dev/null
queued="$(R llen queue:q1)"
[ "$queued" -gt 0 ] || fail "the drain ended before Redis refused writes (a setup race: queue:q1 empty)"
hh_log "refusing writes with $queued jobs still queued"
must_wait 60 '[ "$(refused)" -ge 3 ]' "no fetch was refused with NOREPLICAS (errorstat_NOREPLICAS: $(refused))"
R config set min-replicas-to-write 0 >/dev/null
hh_log "writes accepted again after $(refused) refused commands; $(R llen queue:q1) jobs queued"
wait "$driver"; rc=$?
hh_log "driver: $(cat "$out")"
grep -q "NOREPLICAS" "$err" || fail "the refused fetches were not logged (driver stderr: $(head -c 2000 "$err"))"
assert_eq "$rc" 0 "shapes_driver exit status (stderr: $(head -c 2000 "$err"))"
assert_contains "$(cat "$out")" "twice=0 never=0" "every job ran exactly once"
assert_contains "$(cat "$out")" "left=0 ok=1" "nothing left in a queue or an in-progress list"
pass "fetches refused (NOREPLICAS) in the middle of a fast drain: logged, then every job ran exactly once"
