#!/usr/bin/env bash
# A worker paused longer than the heartbeat TTL (SIGSTOP here; a VM freeze or a long stall
# alike). Worker A (-c 2) runs an 80 s job and a 20 s job and is stopped with SIGSTOP (its
# handlers, in their own process groups, keep running; the 20 s one ends during the pause).
# Its heartbeat hash expires after 60 s, so peer B (--recovery-interval 1) recovers both jobs
# and runs them. Then A gets SIGCONT. Before, A noticed nothing: its handler ran on and its
# acks removed entries that were no longer its own. Now A's first beat finds its hash had
# expired and checks its running jobs against its list (an ack that removes nothing tells the
# same), and:
#   - logs "lease lost: the job was recovered by another process" with class and jid (WARN),
#     for the running job and for the one that finished during the pause,
#   - counts them: /stats "lease_lost": 2, /metrics hiredhand_lease_lost_total 2,
#   - with --lease-lost stop (default; this test with no argument) stops the running handler
#     (its process group gets SIGTERM) within a beat; with `finish`
#     (test_paused_worker_lease_lost_finish.sh) lets it run to its end,
#   - writes no outcome for them either way (no retry or dead entry, nothing left in any list).
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
policy="${1:-stop}"
hh_require_binary
hh_redis_start

jids="$HH_TMP/jids"; : >"$jids"
mjids="$HH_TMP/mid.jids"; : >"$mjids"
rf_set_sleep long 80
rf_set_sleep mid 20
rf_push default LongJob 1 "$jids" "" RPUSH
rf_push default MidJob 1 "$mjids" "" RPUSH
jid="$(cat "$jids")"; mjid="$(cat "$mjids")"
hport="$(hh_pick_free_port)"
handlers=(--exec "LongJob=$RF_HANDLER long" --exec "MidJob=$RF_HANDLER mid")
args=(-c 2 -t 5 --fetch reliable "${handlers[@]}")
[ "$policy" = stop ] || args+=(--lease-lost "$policy")
hh_start_worker "${args[@]}" --http "$hport"
wa=$WORKER_PID; loga=$WORKER_LOG
ida="$(rf_identity "$loga")"
must_wait 15 '[ "$(rf_count "$RF_DIR/started" "$jid")" = 1 ] && [ "$(rf_count "$RF_DIR/started" "$mjid")" = 1 ]' \
    "worker A did not start the 2 jobs"
must_wait 10 '[ "$(R exists "$ida")" = 1 ]' "worker A's heartbeat hash missing"
# rf_job.sh records "WORKER HANDLER SLEEP" per sleeping handler: find A's 80 s sleep
must_wait 5 '[ "$(awk -v w="$wa" '"'"'$1 == w'"'"' "$RF_DIR/children" | wc -l)" -ge 2 ]' "A's handlers not recorded"
sleep_a=""
for s_pid in $(awk -v w="$wa" '$1 == w { print $3 }' "$RF_DIR/children"); do
    tr '\0' ' ' <"/proc/$s_pid/cmdline" 2>/dev/null | grep -q 'sleep 80' && sleep_a=$s_pid
done
[ -n "$sleep_a" ] || fail "A's 80 s handler not found in $RF_DIR/children"
# The reruns on B need not take long.
rf_set_sleep long 3
rf_set_sleep mid 3

hh_start_worker -c 2 -t 5 --fetch reliable --recovery-interval 1 "${handlers[@]}"
wb=$WORKER_PID; logb=$WORKER_LOG
rf_identity "$logb" >/dev/null
kill -STOP "$wa"
hh_log "worker A ($wa) stopped with SIGSTOP; waiting for its hash to expire and B to take the jobs"
must_wait 90 '[ "$(awk -v w='"$wb"' '"'"'$2 == w'"'"' "$RF_DIR/started" | wc -l)" -ge 2 ]' \
    "B did not recover and start A's 2 jobs while A was paused (A's hash exists: $(R exists "$ida"))"
kill -0 "$sleep_a" 2>/dev/null || fail "A's 80 s handler ended during the pause (it should still run)"
kill -CONT "$wa"
t_cont=$SECONDS
hh_log "B started the jobs; worker A continued"

must_wait 15 'grep -q "class=LongJob jid=$jid: lease lost: the job was recovered by another process" "$loga"' \
    "A did not log the lease loss of $jid within 15 s of SIGCONT: $(tail -n 5 "$loga")"
hh_log "A logged the lease loss $((SECONDS - t_cont)) s after SIGCONT"
must_wait 10 'grep -q "class=MidJob jid=$mjid: lease lost: the job was recovered by another process" "$loga"' \
    "A did not log the lease loss of the job that finished during the pause ($mjid)"
stats="$(curl -s --max-time 3 "http://127.0.0.1:$hport/stats")" || fail "GET /stats on A failed"
assert_eq "$(printf '%s' "$stats" | sed -n 's/.*"lease_lost": *\([0-9]*\).*/\1/p')" 2 "/stats lease_lost on A"
metrics="$(curl -s --max-time 3 "http://127.0.0.1:$hport/metrics")" || fail "GET /metrics on A failed"
assert_eq "$(printf '%s\n' "$metrics" | awk '$1 == "hiredhand_lease_lost_total" { print $2 }')" 2 "hiredhand_lease_lost_total on A"

if [ "$policy" = stop ]; then
    must_wait 7 '! kill -0 '"$sleep_a"' 2>/dev/null' "A's handler (sleep pid $sleep_a) still runs 7 s after the lease loss with --lease-lost stop"
    must_wait 10 'grep -q "jid=$jid: handler ended (failure) after the lease was lost; outcome not written" "$loga"' \
        "A did not report the stopped handler"
else
    kill -0 "$sleep_a" 2>/dev/null || fail "A's handler was stopped with --lease-lost finish"
    must_wait 30 'grep -q "jid=$jid: handler ended (success) after the lease was lost; outcome not written" "$loga"' \
        "A's handler did not run to its end with --lease-lost finish"
fi
must_wait 30 '[ "$(awk -v w='"$wb"' '"'"'$2 == w'"'"' "$RF_DIR/done" | wc -l)" -ge 2 ]' "B did not complete the 2 jobs"
must_wait 10 '[ "$(rf_inprog_len)" = 0 ]' "entries left in in-progress lists: $(rf_inprog | tr '\n' ' ')"
assert_eq "$(R zcard retry) $(R zcard dead)" "0 0" "ZCARD retry, dead (no outcome written for the lost job)"
assert_eq "$(R llen queue:default)" 0 "LLEN queue:default"
assert_alive "$wa" "worker A died"
WORKER_PID=$wa hh_stop_worker TERM 20
assert_eq "$WORKER_RC" 0 "A's exit status"
pass "[$policy] A noticed on waking that B recovered its job: logged, counted, handler $([ "$policy" = stop ] && echo stopped || echo let finish), no outcome written"
