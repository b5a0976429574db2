#!/usr/bin/env bash
# Redis restarted (appendonly on)
# mid-run: the worker reconnects, nothing is lost.
# redis-server --appendonly yes --appendfsync always. 400 jobs (each sleeps 0.05 s and records to
# a file, not to Redis), worker --fetch reliable -c 5. After >= 80 jobs completed: redis-server is
# stopped (SHUTDOWN NOSAVE: the AOF keeps everything), stays down 3 s, and starts again on the
# same port and dir; again after >= 250 completed (down 1 s).
# Expected: the worker never exits; every one of the 400 jids completes at least once (lost 0);
# at the end the queue and every in-progress list are empty; retry and dead are empty (an outage
# is not a job failure); the worker is back in `processes`; SIGTERM exits 0. Duplicates (jobs
# finished while Redis was down and run again) are allowed and reported.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
hh_require_binary
hh_redis_start --appendonly yes --appendfsync always

N=400
jids="$HH_TMP/all.jids"; : >"$jids"
rf_push default OkJob "$N" "$jids"
hh_start_worker -c 5 -t 5 --fetch reliable --heartbeat-interval 2 --exec "OkJob=$RF_HANDLER 0.05"
ident="$(rf_identity "$WORKER_LOG")"

restart_at() {   # DONE_THRESHOLD DOWN_SECONDS
    must_wait 60 '[ "$(rf_uniq "$RF_DIR/done")" -ge '"$1"' ]' "fewer than $1 jobs completed within 60 s (done $(rf_uniq "$RF_DIR/done"))"
    hh_log "$(rf_uniq "$RF_DIR/done") jobs done, $(R llen queue:default) queued, $(rf_inprog_len) in progress: stopping redis-server for $2 s"
    hh_redis_stop
    sleep "$2"
    assert_alive "$WORKER_PID" "worker exited while Redis was down"
    hh_redis_restart
    hh_log "redis-server back (pid $REDIS_PID): $(R llen queue:default) queued, $(rf_inprog_len) in progress, $(rf_uniq "$RF_DIR/done") done"
    [ "$(R exists queue:default)" = 1 ] || [ "$(rf_uniq "$RF_DIR/done")" -ge "$N" ] \
        || fail "queue:default is gone after the restart: the AOF did not keep the data (test setup problem)"
}
restart_at 80 3
restart_at 250 1

must_wait 90 '[ "$(rf_uniq "$RF_DIR/done")" -ge '"$N"' ]' \
    "only $(rf_uniq "$RF_DIR/done") of $N jobs completed within 90 s after the restarts (queue=$(R llen queue:default), in progress=$(rf_inprog_len), retry=$(R zcard retry), dead=$(R zcard dead))"
rf_compare "$jids" "$RF_DIR/done"
hh_log "pushed $RF_PUSHED completed $RF_COMPLETED lost $RF_LOST duplicated $RF_DUP"
assert_eq "$RF_LOST" 0 "jobs lost: $RF_LOST_JIDS"
must_wait 10 '[ "$(rf_inprog_len)" = 0 ] && [ "$(R llen queue:default)" = 0 ]' \
    "jobs left after all completed: queue=$(R llen queue:default), in progress=$(rf_inprog_len) ($(rf_inprog | tr '\n' ' '))"
assert_eq "$(R zcard retry) $(R zcard dead)" "0 0" "ZCARD retry, dead (a Redis outage is not a job failure)"
assert_alive "$WORKER_PID" "worker died"
must_wait 5 '[ "$(R sismember processes "$ident")" = 1 ] && [ "$(R exists "$ident")" = 1 ]' "worker $ident not back in processes"
hh_stop_worker TERM 15
assert_eq "$WORKER_RC" 0 "exit status after SIGTERM"
pass "Redis restarted twice mid-run: pushed $RF_PUSHED completed $RF_COMPLETED lost $RF_LOST duplicated $RF_DUP"
