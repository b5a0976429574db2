#!/usr/bin/env bash
# The outage rule when Redis is up but refuses writes: maxmemory is cut so that every write is
# refused with OOM for 65 s (longer than the 60 s TTL of the heartbeat hashes; the peers cannot
# beat either), with long jobs running on two workers (different identities,
# --recovery-interval 1). Before, the hashes expired and the first orphan scan judged the other
# worker dead and pushed its running jobs back, so they started a second time. Now a refused
# beat keeps the lease with a bare EXPIRE (Redis allows it over maxmemory), and the outage rule
# (no peer judged dead until this process's own beats ran without a gap for a while) backs it.
# Expected: no job starts twice; every job completes; nothing left in any list; no recovery
# logged by either worker.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
hh_require_binary
hh_redis_start

jids="$HH_TMP/jids"; : >"$jids"
rf_set_sleep long 120
# a 10 s beat interval leaves a wide window after the refusal ends in which a scan (every 1 s)
# would find the other worker's hash expired before that worker beats again
common=(-c 2 -t 5 --fetch reliable --recovery-interval 1 --heartbeat-interval 10 --exec "LongJob=$RF_HANDLER long")

rf_push default LongJob 2 "$jids" "" RPUSH
hh_start_worker "${common[@]}"
wa=$WORKER_PID; loga=$WORKER_LOG
must_wait 15 '[ "$(awk -v w='"$wa"' '"'"'$2 == w'"'"' "$RF_DIR/started" | wc -l)" -ge 2 ]' "worker A did not start its 2 jobs"
rf_push default LongJob 2 "$jids" "" RPUSH
hh_start_worker "${common[@]}"
wb=$WORKER_PID; logb=$WORKER_LOG
must_wait 15 '[ "$(awk -v w='"$wb"' '"'"'$2 == w'"'"' "$RF_DIR/started" | wc -l)" -ge 2 ]' "worker B did not start its 2 jobs"
ida="$(rf_identity "$loga")"; idb="$(rf_identity "$logb")"
must_wait 10 '[ "$(R exists "$ida")" = 1 ] && [ "$(R exists "$idb")" = 1 ]' "heartbeat hashes missing"
assert_eq "$(grep -c . "$RF_DIR/started")" 4 "jobs started before the outage"

hh_log "refusing every write (OOM) for 65 s (heartbeat hashes have a 60 s TTL)"
R config set maxmemory 1 >/dev/null
must_wait 15 'grep -q "OOM\|heartbeat: transaction aborted\|EXECABORT" "$loga"' "worker A's beats were not refused"
sleep 65   # the refusal itself (the scenario), not a pass condition
# End it right after a beat was refused (EXECABORT counted in INFO errorstats), so that worker's
# next beat is a full interval away.
aborts() { R info errorstats | tr -d '\r' | awk -F'count=' '/^errorstat_EXECABORT:/ { print $2 + 0 }'; }
n0="$(aborts)"
must_wait 15 '[ "$(aborts)" -gt "${n0:-0}" ]' "no refused beat seen in INFO errorstats"
R config set maxmemory 0 >/dev/null
hh_log "writes accepted again: hashes of A: $(R exists "$ida"), B: $(R exists "$idb"); lists: $(rf_inprog_len) entries"
assert_eq "$(rf_inprog_len)" 4 "in-progress entries kept through the outage"
# Redis refused every beat, but each worker kept its lease with a bare EXPIRE (allowed over
# maxmemory): both hashes are still there, so no peer could judge the other dead. (The outage
# rule for hashes that did expire is test_outage_no_duplicates.)
assert_eq "$(R exists "$ida")" 1 "worker A's heartbeat hash after 65 s of refused writes"
assert_eq "$(R exists "$idb")" 1 "worker B's heartbeat hash after 65 s of refused writes"

rf_expect_once_on_two_workers "$jids" 120 "65 s of refused writes (OOM)"
