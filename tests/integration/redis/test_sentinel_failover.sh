#!/usr/bin/env bash
# --sentinel against Debian's redis-sentinel: one master, one replica, three sentinels on
# loopback (tests/lib/sentinel_helpers.sh), two workers with reliable fetch finding the master
# through the sentinels (-r redis:///0 gives only the db).
#   1. SENTINEL FAILOVER while 5,000 jobs flow (the replica becomes the master, the old master its
#      replica): every job completes (lost 0; duplicates counted and reported), both workers
#      beat on the new master, and 500 jobs that Sidekiq's Ruby client (redis-rb configured with the
#      same sentinels) pushes after the switch run too.
#   2. The (new) master killed with SIGKILL mid-run: the sentinels promote the other server and
#      the workers follow; asynchronous replication may lose the last writes, so jobs lost and
#      duplicated are measured and printed (docs/redis.md reports them), not asserted to be 0; the
#      jobs still queued on the promoted master all complete.
#   Both workers stay alive throughout and exit 0 on SIGTERM; worker 1's /healthz (--http) is 200
#   again after each event.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
. "$(dirname "$0")/../../lib/sentinel_helpers.sh"
. "$(dirname "$0")/../../lib/heartbeat_helpers.sh"
hh_require_binary
command -v curl >/dev/null || fail "curl is not installed"
sentinel_start_cluster

N=5000
jids="$HH_TMP/all.jids"; : >"$jids"
rf_push default SentJob "$N" "$jids"
start_worker() {
    HH_NO_URL=1 hh_start_worker -r "redis://127.0.0.1/0" "${SENTINEL_ARGS[@]}" -c 5 -t 5 --fetch reliable \
        --heartbeat-interval 1 --recovery-interval 5 --exec "SentJob=$RF_HANDLER" "$@"
}
HPORT="$(hb_pick_listen_port)"
healthz() { curl -s -o /dev/null -w '%{http_code}' --max-time 3 "http://127.0.0.1:$HPORT/healthz"; }
start_worker --http "127.0.0.1:$HPORT" --liveness-max-age 4; W1="$WORKER_PID"; ID1="$(rf_identity "$WORKER_LOG")"; LOG1="$WORKER_LOG"
must_wait 20 '[ "$(healthz)" = 200 ]' "/healthz of worker 1 is not 200 at start"
start_worker; W2="$WORKER_PID"; ID2="$(rf_identity "$WORKER_LOG")"; LOG2="$WORKER_LOG"

# --- 1. SENTINEL FAILOVER mid-run
must_wait 300 '[ "$(rf_uniq "$RF_DIR/done")" -ge 1000 ]' "fewer than 1000 jobs done within 300 s through Sentinel"
hh_log "$(rf_uniq "$RF_DIR/done") jobs done: SENTINEL FAILOVER mymaster"
t_switch="$(date +%s)"
SP sentinel failover mymaster | grep -q OK || fail "SENTINEL FAILOVER refused: $(SP sentinel failover mymaster)"
must_wait 60 '[ "$(sentinel_master_port)" = "$REPLICA_PORT" ]' "the sentinels did not promote the replica"
sentinel_follow_master
must_wait 60 'redis-cli -p "$MASTER_PORT" role 2>/dev/null | head -n 1 | grep -q slave' "the old master did not become a replica"
hh_log "failover done: master now :$REDIS_PORT"
# both workers beat on the new master after the switch (the beat field is epoch seconds)
for id in "$ID1" "$ID2"; do
    must_wait 30 '[ "$(R hget "'"$id"'" beat | cut -d. -f1)" -gt '"$t_switch"' ] 2>/dev/null' \
        "worker $id does not beat on the new master within 30 s"
done
# Sidekiq's own client, configured for the same sentinels, pushes to whichever is master now
must_wait 30 '[ "$(healthz)" = 200 ]' "/healthz of worker 1 is not 200 after the failover"
jids2="$HH_TMP/after.jids"
SENTINELS="$(IFS=,; echo "${SENTINEL_PORTS[*]/#/127.0.0.1:}")" hh_ruby sentinel_push.rb 500 SentJob >"$jids2" ||
    fail "Sidekiq::Client could not push through the sentinels"
assert_eq "$(wc -l <"$jids2")" 500 "jids Sidekiq pushed through the sentinels"
cat "$jids2" >>"$jids"
N=$((N + 500))
must_wait 400 '[ "$(rf_uniq "$RF_DIR/done")" -ge '"$N"' ]' \
    "only $(rf_uniq "$RF_DIR/done") of $N jobs completed after the failover (queue=$(R llen queue:default), in progress=$(rf_inprog_len))"
# Acks the old master took after the promotion are lost with its data: those jobs are still in
# the in-progress lists on the new master, and the workers' reconciliation (every 5 s here) runs
# them again. They count as duplicates.
must_wait 90 '[ "$(rf_inprog_len)" = 0 ] && [ "$(R llen queue:default)" = 0 ]' \
    "jobs left after the failover: queue=$(R llen queue:default), in progress=$(rf_inprog_len)"
must_wait 30 '[ "$(rf_uniq "$RF_DIR/done")" -ge '"$N"' ]' "jobs requeued by the reconciliation did not run"
rf_compare "$jids" "$RF_DIR/done"
hh_log "SENTINEL FAILOVER: pushed $RF_PUSHED completed $RF_COMPLETED lost $RF_LOST duplicated $RF_DUP"
assert_eq "$RF_LOST" 0 "jobs lost across SENTINEL FAILOVER: $RF_LOST_JIDS"
assert_eq "$(R zcard retry) $(R zcard dead)" "0 0" "retry, dead after the failover"
assert_alive "$W1" "worker 1 died in the failover"
assert_alive "$W2" "worker 2 died in the failover"
FAILOVER_LOST="$RF_LOST" FAILOVER_DUP="$RF_DUP"

# --- 2. SIGKILL of the master mid-run
: >"$RF_DIR/done"
jids3="$HH_TMP/kill.jids"; : >"$jids3"
rf_push default SentJob 3000 "$jids3"
must_wait 300 '[ "$(rf_uniq "$RF_DIR/done")" -ge 500 ]' "fewer than 500 jobs done before the kill"
hh_log "$(rf_uniq "$RF_DIR/done") done: kill -9 the master (pid $REPLICA_PID, :$REPLICA_PORT)"
kill -KILL "$REPLICA_PID"
must_wait 60 '[ "$(sentinel_master_port)" = "$MASTER_PORT" ]' "the sentinels did not promote the replica after the kill"
sentinel_follow_master
must_wait 400 '[ "$(R llen queue:default)" = 0 ] && [ "$(rf_inprog_len)" = 0 ]' \
    "jobs left on the promoted master: queue=$(R llen queue:default), in progress=$(rf_inprog_len)"
sleep 1   # a late duplicate would show now; nothing is asserted on it
rf_compare "$jids3" "$RF_DIR/done"
hh_log "SIGKILL of the master: pushed $RF_PUSHED completed $RF_COMPLETED lost $RF_LOST duplicated $RF_DUP"
assert_alive "$W1" "worker 1 died after the kill"
assert_alive "$W2" "worker 2 died after the kill"
for id in "$ID1" "$ID2"; do
    t_now="$(date +%s)"
    must_wait 30 '[ "$(R hget "'"$id"'" beat | cut -d. -f1)" -ge '"$t_now"' ] 2>/dev/null' \
        "worker $id does not beat on the promoted master"
done
must_wait 30 '[ "$(healthz)" = 200 ]' "/healthz of worker 1 did not recover after the kill"
hh_stop_worker TERM 20; assert_eq "$WORKER_RC" 0 "worker 2 exit status"
WORKER_PID="$W1"; hh_stop_worker TERM 20; assert_eq "$WORKER_RC" 0 "worker 1 exit status"
grep -q "sentinel: +\(switch-master\|promoted-slave\) .*mymaster" "$LOG1" || fail "worker 1 did not log the sentinels' event"
pass "SENTINEL FAILOVER: lost $FAILOVER_LOST duplicated $FAILOVER_DUP of 5500; master SIGKILLed: lost $RF_LOST duplicated $RF_DUP of 3000"
