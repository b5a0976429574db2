#!/usr/bin/env bash
# Own work at boot: a process whose identity is already live (fresh heartbeat from
# another pid) refuses to start with a clear error, so two processes never share, and steal, one
# in-progress list.
# (1) Worker A --identity I (-c 2) runs 2 SlowJobs (30 s). Worker B is started with --identity I.
#     Expected: B exits non-zero within 10 s, logging that identity I is live in another process;
#     A keeps running; hiredhand:inprogress:I|default still holds A's 2 jobs; they are not pushed
#     back to the queue (B must not have drained them).
# (2) The same while Redis is down at B's start (appendonly on): redis-server stopped, B started
#     with --identity I, redis-server started again 2 s later. Expected: within 20 s of Redis
#     being back, B has exited (it must not go on running as a second I), A still runs its 2
#     jobs, and they were never pushed back or started twice.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
hh_require_binary
hh_redis_start --appendonly yes --appendfsync always

ident="rf-dup-$$"
inprog="hiredhand:inprogress:$ident|default"
slow="$HH_TMP/slow.jids"; : >"$slow"
rf_push default SlowJob 2 "$slow" 30
wargs=(-c 2 -t 3 --fetch reliable --identity "$ident" --heartbeat-interval 1 --recovery-interval 2
       --exec "SlowJob=$RF_HANDLER 30")
hh_start_worker "${wargs[@]}"
wa=$WORKER_PID
must_wait 15 '[ "$(rf_uniq "$RF_DIR/started")" -ge 2 ]' "A did not start its 2 SlowJobs within 15 s"
must_wait 5 '[ "$(R exists "$ident")" = 1 ]' "A's heartbeat hash $ident missing"

# ---------------------------------------------------------------- (1)
hh_start_worker "${wargs[@]}"
wb=$WORKER_PID; logb=$WORKER_LOG
wait_until 10 "! kill -0 $wb" || fail "(1) B (--identity $ident, already live in pid $wa) still running 10 s after start"
wait "$wb"; rc=$?
[ "$rc" != 0 ] || fail "(1) B exited with status 0; want non-zero when its identity is live elsewhere"
grep -qi "identity $ident is live" "$logb" || fail "(1) B's log does not say identity $ident is live elsewhere: $(tail -n 3 "$logb")"
assert_alive "$wa" "(1) A died"
assert_eq "$(R llen "$inprog")" 2 "(1) LLEN $inprog (A's 2 running jobs)"
assert_eq "$(R llen queue:default)" 0 "(1) LLEN queue:default (nothing pushed back)"
hh_log "(1) B exited with status $rc: $(grep -i 'identity' "$logb" | tail -n 1)"

# ---------------------------------------------------------------- (2)
hh_redis_stop
hh_start_worker "${wargs[@]}"
wb=$WORKER_PID; logb=$WORKER_LOG
sleep 2
hh_redis_restart
t0=$SECONDS
if wait_until 20 "! kill -0 $wb"; then
    wait "$wb"; rc=$?
    hh_log "(2) B exited with status $rc $((SECONDS - t0)) s after Redis came back"
    [ "$rc" != 0 ] || fail "(2) B exited with status 0; want non-zero when its identity is live elsewhere"
else
    fail "(2) B (--identity $ident, started while Redis was down) still runs 20 s after Redis came back, next to A (pid $wa) with the same identity: both use $inprog and the heartbeat hash $ident (pid in it: $(R hget "$ident" info | grep -o '"pid":[0-9]*')). B's log: $(grep -iE 'identity|redis' "$logb" | head -n 4 | tr '\n' '|')"
fi
assert_alive "$wa" "(2) A died"
assert_eq "$(R llen "$inprog")" 2 "(2) LLEN $inprog (A's 2 running jobs)"
assert_eq "$(R llen queue:default)" 0 "(2) LLEN queue:default (nothing pushed back)"
while read -r j; do assert_eq "$(rf_count "$RF_DIR/started" "$j")" 1 "(2) starts of $j"; done <"$slow"

# ---------------------------------------------------------------- (3)
# A clean stop leaves `processes` at once while its hash (fresh beat) expires later: the same
# identity starts again right away, on this host or another (DYNO names the host).
WORKER_PID="$wa"
hh_stop_worker TERM 60
assert_eq "$WORKER_RC" 0 "(3) A's exit status after TERM"
[ -n "$(R hget "$ident" beat)" ] || fail "(3) A's hash is gone already: the case below proves nothing"
# a 10 s interval: A's last beat counts as fresh for 22 s, so only the clean stop can free it
DYNO=otherhost.1 hh_start_worker "${wargs[@]}" --heartbeat-interval 10
hh_worker_wait_ready 30 || fail "(3) --identity $ident on another host refused after a clean stop: $(grep -i identity "$WORKER_LOG" | tail -n 2)"
assert_alive "$WORKER_PID" "(3) the restarted worker"
pass "a second process with a live identity refuses to run, also when Redis was down at its start; a clean stop frees it at once"
