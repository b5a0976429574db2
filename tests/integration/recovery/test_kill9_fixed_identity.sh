#!/usr/bin/env bash
# kill -9 a worker holding N running jobs; restart it with the same
# --identity: all N run again, every job of the run completes, none is lost.
# -c 5 --fetch reliable --identity I; 20 quick jobs LPUSHed, then 5 SlowJobs RPUSHed (taken first,
# one per thread, sleeping 30 s). When the 5 have started: every one of them is in
# hiredhand:inprogress:I|default, the 20 quick ones still in queue:default. kill -9 the worker
# (and the handlers it left). The 5 must still be in Redis (in-progress list). Restart with the
# same identity (slow jobs now sleep 0.3 s): it pushes back the 5 at boot (logged), and all 25
# jids complete; the 5 ran twice, the 20 once; queue and in-progress list end empty; each of the
# 5 has hiredhand:recoveries:<jid> = 1; SIGTERM then exits 0.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
hh_require_binary
hh_redis_start

ident="rf-fixed-$$"
inprog="hiredhand:inprogress:$ident|default"
quick="$HH_TMP/quick.jids"; slow="$HH_TMP/slow.jids"; : >"$quick"; : >"$slow"
rf_push default OkJob 20 "$quick"
rf_push default SlowJob 5 "$slow" "" RPUSH
cat "$quick" "$slow" >"$HH_TMP/all.jids"
rf_set_sleep slow 30

wargs=(-c 5 -t 5 --fetch reliable --identity "$ident" --heartbeat-interval 1
       --exec "OkJob=$RF_HANDLER" --exec "SlowJob=$RF_HANDLER slow")
hh_start_worker "${wargs[@]}"
w1=$WORKER_PID
must_wait 15 '[ "$(rf_uniq "$RF_DIR/started")" -ge 5 ]' \
    "the 5 SlowJobs did not all start within 15 s (started: $(rf_uniq "$RF_DIR/started"))"
sleep 0.5
started="$(awk '{ print $1 }' "$RF_DIR/started" | sort)"
assert_eq "$started" "$(sort "$slow")" "jobs running before the kill (exactly the 5 SlowJobs)"
assert_eq "$(R llen "$inprog")" 5 "LLEN $inprog while the 5 SlowJobs run"
assert_eq "$(R llen queue:default)" 20 "LLEN queue:default while the 5 SlowJobs run"

rf_kill9 "$w1"
assert_eq "$(R llen "$inprog")" 5 "LLEN $inprog right after kill -9 (the jobs must still be in Redis)"
assert_eq "$(grep -c . "$RF_DIR/done")" 0 "jobs recorded done before the restart"

rf_set_sleep slow 0.3
hh_start_worker "${wargs[@]}"
w2=$WORKER_PID
must_wait 60 '[ "$(rf_uniq "$RF_DIR/done")" -ge 25 ]' \
    "only $(rf_uniq "$RF_DIR/done") of 25 jobs completed within 60 s after the restart with the same identity (queue=$(R llen queue:default) inprogress=$(R llen "$inprog"))"
assert_alive "$w2" "restarted worker died"
grep -q "pushed back 5 jobs left by a previous run of $ident" "$WORKER_LOG" \
    || fail "restarted worker did not log 'pushed back 5 jobs left by a previous run of $ident': $(grep -i recover "$WORKER_LOG" | head -n 5)"

rf_compare "$HH_TMP/all.jids" "$RF_DIR/done"
assert_eq "$RF_LOST" 0 "jobs lost (pushed, never completed): $RF_LOST_JIDS"
assert_eq "$RF_COMPLETED" 25 "distinct jobs completed"
assert_eq "$RF_DUP" 0 "jobs completed more than once"
while read -r j; do
    assert_eq "$(rf_count "$RF_DIR/started" "$j")" 2 "starts of SlowJob $j (once before the kill, once after)"
    assert_eq "$(R get "hiredhand:recoveries:$j")" 1 "hiredhand:recoveries:$j"
done <"$slow"
while read -r j; do
    assert_eq "$(rf_count "$RF_DIR/started" "$j")" 1 "starts of OkJob $j (never running at the kill)"
done <"$quick"
must_wait 5 '[ "$(R llen "$inprog")" = 0 ]' "in-progress list $inprog not empty after every job completed: $(R lrange "$inprog" 0 -1 | head -c 500)"
assert_eq "$(R llen queue:default)" 0 "LLEN queue:default at the end"
assert_eq "$(R zcard retry) $(R zcard dead)" "0 0" "ZCARD retry, dead"

hh_stop_worker TERM 15
assert_eq "$WORKER_RC" 0 "exit status after SIGTERM"
assert_eq "$(rf_inprog | tr '\n' ' ')" "" "in-progress keys after the clean stop"
pass "5 running jobs survived kill -9 and ran again under the same identity; 25/25 completed"
