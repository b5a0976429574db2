#!/usr/bin/env bash
# Stranded fetches: Redis runs a fetch but its reply never reaches the worker. Here Redis sleeps
# (DEBUG SLEEP 7, past the 5 s command timeout) while jobs flow at -c 4: the fetch commands
# sent during the sleep time out on the worker's side (it drops those connections), then Redis
# wakes up and runs them, moving jobs into the worker's in-progress list that no thread holds.
# Before reconciliation those jobs sat there until the process exited. Now the live worker
# pushes back what its lists hold and no thread has.
# Expected: every pushed job completes; once the worker is idle its in-progress list is empty
# within one reconciliation period (--recovery-interval 2, plus the time for in-flight blocking
# fetches to end: a few seconds); the worker logged the push backs ("reconcile: ...") and
# /stats counts them; a job may run twice only if its outcome was lost (counted and reported;
# none expected here, as acks are retried).
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
hh_require_binary
hh_redis_start --enable-debug-command local

jids="$HH_TMP/jids"; : >"$jids"
rf_set_sleep quick 0.05
hport="$(hh_pick_free_port)"
hh_start_worker -c 4 -t 5 --recovery-interval 2 --http "$hport" --exec "OkJob=$RF_HANDLER quick"
id="$(rf_identity "$WORKER_LOG")"
list="hiredhand:inprogress:$id|default"
hh_worker_wait_ready

sleeps=0
for round in 1 2 3; do
    rf_push default OkJob 150 "$jids"
    must_wait 20 '[ "$(grep -c . "$RF_DIR/started")" -ge $((round * 150 - 120)) ]' "jobs did not flow (round $round)"
    # Redis sleeps while the 4 threads keep fetching; the sleep outlasts the command timeout.
    R debug sleep 7 >/dev/null
    sleeps=$((sleeps + 1))
    hh_log "round $round: DEBUG SLEEP 7 done; started $(grep -c . "$RF_DIR/started"), LLEN $list = $(R llen "$list")"
done
total="$(sort -u "$jids" | grep -c .)"
must_wait 90 '[ "$(rf_uniq "$RF_DIR/done")" -ge "$total" ]' \
    "not every job completed: done $(rf_uniq "$RF_DIR/done")/$total, LLEN $list = $(R llen "$list"), queue $(R llen queue:default)"
hh_log "all $total jobs completed"
# The worker is idle now: its list must be empty within one reconciliation period (2 s) plus
# the end of the fetches in flight (at most a blocking wait ended by CLIENT UNBLOCK, or one
# command timeout).
t0=$SECONDS
must_wait 12 '[ "$(R llen "$list")" = 0 ]' \
    "entries left in the idle worker's in-progress list $list: $(R lrange "$list" 0 -1 | head -c 600)"
hh_log "list empty $((SECONDS - t0)) s after the last job completed"
assert_alive "$WORKER_PID" "the worker died"

rf_compare "$jids" "$RF_DIR/done"
assert_eq "$RF_LOST" 0 "jobs never completed: $RF_LOST_JIDS"
pushed_back="$(grep -c 'reconcile: class=OkJob .*pushed back to the queue' "$WORKER_LOG")"
hh_log "stranded entries pushed back by reconciliation: $pushed_back; jobs completed twice: $RF_DUP"
[ "$pushed_back" -ge 1 ] || fail "no reconciliation push back logged: the $sleeps DEBUG SLEEPs stranded nothing? (log: $(grep -i 'reconcile\|connection' "$WORKER_LOG" | head -n 5))"
assert_eq "$RF_DUP" 0 "jobs completed twice (an outcome lost, or a held job pushed back)"
stats="$(curl -s --max-time 3 "http://127.0.0.1:$hport/stats")" || fail "GET /stats failed"
reconciled="$(printf '%s' "$stats" | sed -n 's/.*"reconciled": *\([0-9]*\).*/\1/p')"
assert_eq "$reconciled" "$pushed_back" "/stats reconciled vs the push backs logged"
assert_eq "$(R llen queue:default)" 0 "LLEN queue:default at the end"
hh_stop_worker TERM 20
assert_eq "$WORKER_RC" 0 "exit status after SIGTERM"
assert_eq "$(rf_inprog_len)" 0 "jobs left in in-progress lists after the stop"
pass "$total jobs, $sleeps DEBUG SLEEPs: $pushed_back stranded entries pushed back, none left, none lost, $RF_DUP duplicates"
