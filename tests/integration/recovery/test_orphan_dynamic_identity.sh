#!/usr/bin/env bash
# kill -9 a worker with a dynamic identity while a second worker is
# live: after the dead one's heartbeat expires the second recovers and runs its jobs; none lost,
# and only the jobs that were running at the kill run twice.
# Worker A (no --identity: host:pid:random, -c 3) runs 3 SlowJobs (30 s). Then 20 OkJobs are
# pushed and worker B (-c 3 --recovery-interval 2) starts and runs them. kill -9 A.
#   main variant (no argument): the real 60 s TTL of A's heartbeat hash. While the hash exists,
#     A's in-progress list must keep its 3 jobs (an old beat is not a dead owner); once it has
#     expired, B must push them back within a few scan periods and run them.
#   `del` variant (test_orphan_dynamic_identity_del.sh): the same, but the test DELetes A's hash right
#     after the kill instead of waiting for the TTL.
# Expected: every one of the 23 jids completes; the 3 SlowJobs started twice, the 20 OkJobs once;
# B logged one recovery per SlowJob naming A as owner; hiredhand:recoveries:<jid> = 1; B's
# /metrics (--http) shows hiredhand_jobs_recovered_total 3; no job is left in a queue or an
# in-progress list; B exits 0 on SIGTERM.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
variant="${1:-ttl}"
hh_require_binary
hh_redis_start

slow="$HH_TMP/slow.jids"; quick="$HH_TMP/quick.jids"; : >"$slow"; : >"$quick"
rf_set_sleep slow 30
rf_push default SlowJob 3 "$slow" "" RPUSH
handlers=(--exec "OkJob=$RF_HANDLER" --exec "SlowJob=$RF_HANDLER slow")

hh_start_worker -c 3 -t 5 --fetch reliable "${handlers[@]}"
wa=$WORKER_PID; loga=$WORKER_LOG
ida="$(rf_identity "$loga")"
inprog_a="hiredhand:inprogress:$ida|default"
must_wait 15 '[ "$(rf_uniq "$RF_DIR/started")" -ge 3 ]' "the 3 SlowJobs did not start on worker A within 15 s"
must_wait 10 '[ "$(R exists "$ida")" = 1 ]' "worker A's heartbeat hash $ida does not exist"
assert_eq "$(R llen "$inprog_a")" 3 "LLEN $inprog_a while A runs the 3 SlowJobs"

rf_push default OkJob 20 "$quick"
cat "$slow" "$quick" >"$HH_TMP/all.jids"
hport="$(hh_pick_free_port)"
hh_start_worker -c 3 -t 5 --fetch reliable --recovery-interval 2 --http "$hport" "${handlers[@]}"
wb=$WORKER_PID; logb=$WORKER_LOG
rf_identity "$logb" >/dev/null   # waits for B's start line
must_wait 30 '[ "$(rf_uniq "$RF_DIR/done")" -ge 20 ]' \
    "worker B did not complete the 20 OkJobs within 30 s (done: $(rf_uniq "$RF_DIR/done"))"

rf_set_sleep slow 0.5
rf_kill9 "$wa"
t_kill=$SECONDS
assert_eq "$(R llen "$inprog_a")" 3 "LLEN $inprog_a right after kill -9 of A"

if [ "$variant" = del ]; then
    R del "$ida" >/dev/null
    hh_log "[del] deleted A's heartbeat hash $ida right after the kill"
else
    ttl="$(R ttl "$ida")"
    hh_log "A's heartbeat hash $ida has TTL $ttl s left; waiting for it to expire"
    # While A's hash lives, A counts as alive: B must not touch its list.
    while [ "$(R exists "$ida")" = 1 ]; do
        [ $((SECONDS - t_kill)) -le 75 ] || fail "A's heartbeat hash $ida still exists 75 s after the kill (TTL $(R ttl "$ida"))"
        n="$(R llen "$inprog_a")"
        # the hash may expire between the two reads: re-check before failing
        if [ "$n" != 3 ] && [ "$(R exists "$ida")" = 1 ]; then
            fail "B touched A's in-progress list while A's heartbeat hash still existed (TTL $(R ttl "$ida") s, $((SECONDS - t_kill)) s after the kill): LLEN $inprog_a = $n"
        fi
        sleep 0.5
    done
    hh_log "A's heartbeat hash expired $((SECONDS - t_kill)) s after the kill"
fi
t_dead=$SECONDS
must_wait 15 '[ "$(rf_uniq "$RF_DIR/done")" -ge 23 ]' \
    "[$variant] B did not recover and complete A's 3 jobs within 15 s after A's heartbeat hash was gone (done $(rf_uniq "$RF_DIR/done")/23, LLEN $inprog_a=$(R llen "$inprog_a"), queue=$(R llen queue:default))"
hh_log "[$variant] A's 3 jobs completed on B $((SECONDS - t_dead)) s after A's hash was gone"
assert_alive "$wb" "worker B died"

rf_compare "$HH_TMP/all.jids" "$RF_DIR/done"
assert_eq "$RF_LOST" 0 "[$variant] jobs lost: $RF_LOST_JIDS"
assert_eq "$RF_DUP" 0 "[$variant] jobs completed more than once"
while read -r j; do
    assert_eq "$(rf_count "$RF_DIR/started" "$j")" 2 "[$variant] starts of SlowJob $j (running at the kill: twice)"
    assert_eq "$(R get "hiredhand:recoveries:$j")" 1 "[$variant] hiredhand:recoveries:$j"
    grep -q "jid=$j owner=$ida queue=default: pushed back" "$logb" \
        || fail "[$variant] B did not log the recovery of $j from owner $ida: $(grep recovery "$logb" | head -n 5)"
done <"$slow"
while read -r j; do
    assert_eq "$(rf_count "$RF_DIR/started" "$j")" 1 "[$variant] starts of OkJob $j (not running at the kill: once)"
done <"$quick"
assert_eq "$(R exists "$inprog_a")" 0 "[$variant] A's in-progress list $inprog_a still exists"
must_wait 5 '[ "$(rf_inprog_len)" = 0 ]' "[$variant] jobs still in in-progress lists: $(rf_inprog | tr '\n' ' ')"
assert_eq "$(R llen queue:default)" 0 "[$variant] LLEN queue:default at the end"
assert_eq "$(R zcard retry) $(R zcard dead)" "0 0" "[$variant] ZCARD retry, dead"
assert_eq "$(grep -c 'jid=.*pushed back' "$loga")" 0 "[$variant] recoveries logged by A"
metrics="$(curl -s --max-time 3 "http://127.0.0.1:$hport/metrics")" || fail "[$variant] GET /metrics on B's --http $hport failed"
assert_eq "$(printf '%s\n' "$metrics" | awk '$1 == "hiredhand_jobs_recovered_total" { print $2 }')" 3 "[$variant] hiredhand_jobs_recovered_total in B's /metrics"

WORKER_PID=$wb hh_stop_worker TERM 15
assert_eq "$WORKER_RC" 0 "[$variant] B's exit status after SIGTERM"
pass "[$variant] the 3 jobs of the killed dynamic worker ran again on the survivor, 23/23 completed"
