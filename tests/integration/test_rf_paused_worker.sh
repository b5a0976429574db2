#!/usr/bin/env bash
# A worker paused longer than the heartbeat TTL (SIGSTOP here; a VM freeze or a long stall
# alike). Worker A runs an 80 s job and is stopped with SIGSTOP (its handler, in its own
# process group, keeps running). Its heartbeat hash expires after 60 s, so peer B
# (--recovery-interval 1) recovers the job and runs it. Then A gets SIGCONT. Before, A noticed
# nothing: its handler ran on and its ack removed an entry that was no longer its own. Now A's
# first beat finds its hash had expired, checks its running jobs against its list, and:
#   - logs "lease lost: the job was recovered by another process" with the class and jid (WARN),
#   - counts it: /stats "lease_lost": 1, /metrics hiredhand_lease_lost_total 1,
#   - with --lease-lost stop (default; this test with no argument) stops the handler (its process
#     group gets SIGTERM) within a beat; with `finish` (test_rf_paused_worker_finish.sh) lets it
#     run to its end,
#   - writes no outcome for it either way (no retry or dead entry, nothing left in any list).
. "$(dirname "$0")/../lib/harness.sh"
. "$(dirname "$0")/../lib/recovery_helpers.sh"
policy="${1:-stop}"
hh_require_binary
hh_redis_start

jids="$HH_TMP/jids"; : >"$jids"
rf_set_sleep long 80
rf_push default LongJob 1 "$jids" "" RPUSH
jid="$(cat "$jids")"
hport="$(hh_pick_free_port)"
args=(-c 1 -t 5 --fetch reliable --exec "LongJob=$RF_HANDLER long")
[ "$policy" = stop ] || args+=(--lease-lost "$policy")
hh_start_worker "${args[@]}" --http "$hport"
wa=$WORKER_PID; loga=$WORKER_LOG
ida="$(rf_identity "$loga")"
must_wait 15 '[ "$(rf_count "$RF_DIR/started" "$jid")" = 1 ]' "worker A did not start the job"
must_wait 10 '[ "$(R exists "$ida")" = 1 ]' "worker A's heartbeat hash missing"
handler_a="$(awk -v w="$wa" '$1 == w { print $2 " " $3 }' "$RF_DIR/children" | head -n 1)"
[ -n "$handler_a" ] || fail "no handler recorded for A in $RF_DIR/children"
sleep_a="${handler_a#* }"
# The rerun on B need not take long.
rf_set_sleep long 3

hh_start_worker -c 1 -t 5 --fetch reliable --recovery-interval 1 --exec "LongJob=$RF_HANDLER long"
wb=$WORKER_PID; logb=$WORKER_LOG
rf_identity "$logb" >/dev/null
kill -STOP "$wa"
hh_log "worker A ($wa) stopped with SIGSTOP; waiting for its hash to expire and B to take the job"
must_wait 90 '[ "$(awk -v w='"$wb"' '"'"'$2 == w'"'"' "$RF_DIR/started" | wc -l)" -ge 1 ]' \
    "B did not recover and start A's job while A was paused (A's hash exists: $(R exists "$ida"))"
kill -0 "$sleep_a" 2>/dev/null || fail "A's handler ended during the pause (it should still run)"
kill -CONT "$wa"
t_cont=$SECONDS
hh_log "B started the job; worker A continued"

must_wait 15 'grep -q "class=LongJob jid=$jid: lease lost: the job was recovered by another process" "$loga"' \
    "A did not log the lease loss of $jid within 15 s of SIGCONT: $(tail -n 5 "$loga")"
hh_log "A logged the lease loss $((SECONDS - t_cont)) s after SIGCONT"
stats="$(curl -s --max-time 3 "http://127.0.0.1:$hport/stats")" || fail "GET /stats on A failed"
assert_eq "$(printf '%s' "$stats" | sed -n 's/.*"lease_lost": *\([0-9]*\).*/\1/p')" 1 "/stats lease_lost on A"
metrics="$(curl -s --max-time 3 "http://127.0.0.1:$hport/metrics")" || fail "GET /metrics on A failed"
assert_eq "$(printf '%s\n' "$metrics" | awk '$1 == "hiredhand_lease_lost_total" { print $2 }')" 1 "hiredhand_lease_lost_total on A"

if [ "$policy" = stop ]; then
    must_wait 7 '! kill -0 '"$sleep_a"' 2>/dev/null' "A's handler (sleep pid $sleep_a) still runs 7 s after the lease loss with --lease-lost stop"
    must_wait 10 'grep -q "jid=$jid: handler ended (failure) after the lease was lost; outcome not written" "$loga"' \
        "A did not report the stopped handler"
else
    kill -0 "$sleep_a" 2>/dev/null || fail "A's handler was stopped with --lease-lost finish"
    must_wait 30 'grep -q "jid=$jid: handler ended (success) after the lease was lost; outcome not written" "$loga"' \
        "A's handler did not run to its end with --lease-lost finish"
fi
must_wait 30 '[ "$(awk -v w='"$wb"' '"'"'$2 == w'"'"' "$RF_DIR/done" | wc -l)" -ge 1 ]' "B did not complete the job"
must_wait 10 '[ "$(rf_inprog_len)" = 0 ]' "entries left in in-progress lists: $(rf_inprog | tr '\n' ' ')"
assert_eq "$(R zcard retry) $(R zcard dead)" "0 0" "ZCARD retry, dead (no outcome written for the lost job)"
assert_eq "$(R llen queue:default)" 0 "LLEN queue:default"
assert_alive "$wa" "worker A died"
WORKER_PID=$wa hh_stop_worker TERM 20
assert_eq "$WORKER_RC" 0 "A's exit status"
pass "[$policy] A noticed on waking that B recovered its job: logged, counted, handler $([ "$policy" = stop ] && echo stopped || echo let finish), no outcome written"
