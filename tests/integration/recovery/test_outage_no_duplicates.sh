#!/usr/bin/env bash
# Recovery racing heartbeats after an outage: Redis is down for 65 s, longer than the 60 s TTL
# of every heartbeat hash, with long jobs running on two workers (different identities,
# --recovery-interval 1). When Redis comes back (with its data: AOF, fsync always) every hash
# has expired. Before the outage rule the first orphan scan judged the other worker dead and
# pushed its running jobs back, so they started a second time (and counted towards the
# poison-pill limit). Now no process judges peers dead until its own beats have run without a
# gap for max(2 x interval, 10 s) + 3 s, by when the peers have beaten again.
# Expected: no job starts twice; every job completes; nothing left in any list; no recovery
# logged by either worker.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
hh_require_binary
hh_redis_start --appendonly yes --appendfsync always

jids="$HH_TMP/jids"; : >"$jids"
rf_set_sleep long 80
common=(-c 2 -t 5 --fetch reliable --recovery-interval 1 --exec "LongJob=$RF_HANDLER long")

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

hh_log "stopping Redis for 65 s (heartbeat hashes have a 60 s TTL)"
hh_redis_stop
sleep 65   # the outage itself (the scenario), not a pass condition
hh_redis_restart
hh_log "Redis is back: hashes of A: $(R exists "$ida"), B: $(R exists "$idb"); lists: $(rf_inprog_len) entries"
assert_eq "$(rf_inprog_len)" 4 "in-progress entries kept through the outage"
# Both hashes expired during the outage: each worker says so when it registers again.
must_wait 30 'grep -q "process hash had expired" "$loga" && grep -q "process hash had expired" "$logb"' \
    "the workers did not report their expired heartbeat hashes after the outage"

rf_expect_once_on_two_workers "$jids" 90 "a 65 s outage"
