#!/usr/bin/env bash
# Own work at boot when Redis is down at that moment (the Redis-restart case
# applied to a fixed identity): a process started with a stable --identity pushes back whatever
# its previous incarnation left -- also when Redis only becomes reachable after it started
# (recovery.h: with Redis down at start, the recovery thread retries the boot before any fetch).
# redis-server --appendonly yes. Worker I (--identity I, -c 3) runs 3 SlowJobs (30 s); kill -9.
# redis-server is stopped; worker I is started again (--recovery-interval 2) while Redis is down;
# 2 s later redis-server starts again on the same port and dir (the AOF brings back the 3 jobs
# in hiredhand:inprogress:I|default). 3 OkJobs are pushed.
# Expected: the restarted worker reconnects and runs the 3 OkJobs, and the 3 SlowJobs of its
# previous incarnation run again and complete within 75 s (longer than the old heartbeat's TTL
# and many recovery periods); none is lost, the in-progress list ends empty.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
hh_require_binary
hh_redis_start --appendonly yes --appendfsync always

ident="rf-bootdown-$$"
inprog="hiredhand:inprogress:$ident|default"
slow="$HH_TMP/slow.jids"; ok="$HH_TMP/ok.jids"; : >"$slow"; : >"$ok"
rf_set_sleep slow 30
rf_push default SlowJob 3 "$slow"
wargs=(-c 3 -t 5 --fetch reliable --identity "$ident" --recovery-interval 2
       --exec "OkJob=$RF_HANDLER" --exec "SlowJob=$RF_HANDLER slow")
hh_start_worker "${wargs[@]}"
must_wait 15 '[ "$(rf_uniq "$RF_DIR/started")" -ge 3 ]' "the 3 SlowJobs did not start within 15 s"
rf_kill9 "$WORKER_PID"
assert_eq "$(R llen "$inprog")" 3 "LLEN $inprog after kill -9"
rf_set_sleep slow 0.3

hh_redis_stop
hh_start_worker "${wargs[@]}"
w2=$WORKER_PID
sleep 2
assert_alive "$w2" "worker exited when started with Redis down"
hh_redis_restart
assert_eq "$(R llen "$inprog")" 3 "LLEN $inprog after the Redis restart (AOF)"
rf_push default OkJob 3 "$ok"
must_wait 20 '[ "$(awk "{ print \$1 }" "$RF_DIR/done" | sort -u | comm -12 - <(sort -u "$ok") | grep -c .)" -ge 3 ]' \
    "the restarted worker did not run 3 new OkJobs within 20 s after Redis came back"
t0=$SECONDS
if ! wait_until 75 '[ "$(awk "{ print \$1 }" "$RF_DIR/done" | sort -u | comm -12 - <(sort -u "$slow") | grep -c .)" -ge 3 ]'; then
    fail "the 3 jobs left by the previous incarnation of $ident never ran again: $((SECONDS - t0)) s after Redis came back they are still in $inprog (LLEN $(R llen "$inprog")) while $ident is live and working (heartbeat exists: $(R exists "$ident"); OkJobs done: 3). Boot recovery was skipped because Redis was down at start, and the periodic scan skips the process's own lists. Log: $(grep -iE 'recover|redis' "$WORKER_LOG" | head -n 6 | tr '\n' '|')"
fi
cat "$slow" "$ok" >"$HH_TMP/all.jids"
rf_compare "$HH_TMP/all.jids" "$RF_DIR/done"
assert_eq "$RF_LOST" 0 "jobs lost: $RF_LOST_JIDS"
must_wait 5 '[ "$(R llen "$inprog")" = 0 ]' "$inprog not empty at the end"
hh_stop_worker TERM 15
assert_eq "$WORKER_RC" 0 "exit status after SIGTERM"
pass "the jobs of the previous incarnation ran again although Redis was down when the worker started"
