#!/usr/bin/env bash
# A fixed --identity and a paused process (SIGSTOP here; a VM freeze alike).
# (1) Worker A (--identity I, -c 1) runs a 60 s job and is stopped with SIGSTOP until its last
#     beat is far older than 2 x interval + 2 s, while its hash (TTL 60 s) still exists. Worker B
#     is started with --identity I. Before, B judged I free by the beat's age alone: it pushed
#     back A's running job and ran it while A's handler still ran. Now A's pid is alive on this
#     host and started before its hash's started_at: B refuses to start (exit 3), naming A's
#     pid, and A's job is neither pushed back nor started twice.
# (2) The hash is deleted (standing in for its 60 s TTL running out during the pause), so a new
#     B takes I over and runs the job. Then A gets SIGCONT. Before, A found its entry in the
#     (shared) in-progress list and ran on under I next to B. Now A's first beat reads the hash
#     naming the newer B: A logs that I was taken over, stops its handler (--lease-lost stop),
#     stops beating and exits with status 3 (as a refused start) without touching the list or
#     unregistering; B runs on.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
hh_require_binary
hh_redis_start

ident="rf-paused-$$"
inprog="hiredhand:inprogress:$ident|default"
jids="$HH_TMP/jids"; : >"$jids"
rf_set_sleep slow 60
rf_push default SlowJob 1 "$jids" "" RPUSH
jid="$(cat "$jids")"
wargs=(-c 1 -t 5 --fetch reliable --identity "$ident" --heartbeat-interval 1 --recovery-interval 2
       --exec "SlowJob=$RF_HANDLER slow")
hh_start_worker "${wargs[@]}"
wa=$WORKER_PID; loga=$WORKER_LOG
must_wait 15 '[ "$(rf_count "$RF_DIR/started" "$jid")" = 1 ]' "A did not start the job"
must_wait 10 '[ "$(R exists "$ident")" = 1 ]' "A's heartbeat hash $ident missing"
must_wait 10 'grep -q "^$wa " "$RF_DIR/children"' "A's handler did not record its sleep"
read -r _ ahandler asleep < <(grep "^$wa " "$RF_DIR/children" | head -n 1)

kill -STOP "$wa"
beat_age() { awk -v b="$(R hget "$ident" beat)" -v n="$(hh_now)" 'BEGIN { printf "%d", n - b }'; }
# 2 x 1 s + 2 s made the old check call the identity free; wait well past it
must_wait 40 '[ "$(beat_age)" -ge 8 ]' "A's last beat did not age (beat $(R hget "$ident" beat))"
[ "$(R exists "$ident")" = 1 ] || fail "A's hash expired already: the case below proves nothing"

# ---------------------------------------------------------------- (1)
hh_start_worker "${wargs[@]}"
wb=$WORKER_PID; logb=$WORKER_LOG
wait_until 20 "! kill -0 $wb" ||
    fail "(1) B (--identity $ident) still runs next to paused A (pid $wa, handler alive): starts of the job: $(rf_count "$RF_DIR/started" "$jid"); B's log: $(grep -iE 'identity|pushed back' "$logb" | head -n 3 | tr '\n' '|')"
wait "$wb"; rc=$?
assert_eq "$rc" 3 "(1) B's exit status (identity live elsewhere)"
grep -q "identity $ident is live in another process: pid $wa on this host" "$logb" ||
    fail "(1) B's log does not name A's pid $wa: $(grep -i identity "$logb" | head -n 2)"
assert_eq "$(rf_count "$RF_DIR/started" "$jid")" 1 "(1) starts of the job"
assert_eq "$(R llen "$inprog")" 1 "(1) LLEN $inprog (A's running job)"
assert_eq "$(R llen queue:default)" 0 "(1) LLEN queue:default (nothing pushed back)"
rf_forget_pid "$wb"
hh_log "(1) B refused: $(grep -i 'is live' "$logb" | head -n 1)"

# ---------------------------------------------------------------- (2)
R del "$ident" >/dev/null
hh_start_worker "${wargs[@]}"
wb=$WORKER_PID; logb=$WORKER_LOG
must_wait 20 '[ "$(rf_count "$RF_DIR/started" "$jid")" = 2 ]' \
    "(2) B did not take over $ident and run the job: $(tail -n 3 "$logb")"
must_wait 10 '[ "$(R hget "$ident" info | grep -o "\"pid\":[0-9]*")" = "\"pid\":$wb" ]' "(2) B's hash missing"
kill -CONT "$wa"
must_wait 20 'grep -q "identity $ident was taken over" "$loga"' \
    "(2) A, woken, did not notice that B took $ident over: $(tail -n 3 "$loga")"
must_wait 20 '! kill -0 $asleep 2>/dev/null' "(2) A's handler (sleep $asleep) still runs next to B's run of the job"
must_wait 30 '! kill -0 $wa 2>/dev/null || grep -q "^Z" <(sed -n "s/^State:[[:space:]]*//p" /proc/$wa/status 2>/dev/null)' \
    "(2) A did not stop after losing $ident: $(tail -n 3 "$loga")"
wait "$wa"; arc=$?
assert_eq "$arc" 3 "(2) A's exit status after its stop (3: the identity is live elsewhere)"
rf_forget_pid "$wa"
grep -q "lease lost" "$loga" || fail "(2) A's log has no lease-lost line for the job"
if grep -q "^$jid $wa" "$RF_DIR/done"; then fail "(2) A's handler finished the job after the takeover"; fi
assert_alive "$wb" "(2) B"
assert_eq "$(R llen "$inprog")" 1 "(2) LLEN $inprog (B's running job: A neither acked nor pushed it back)"
assert_eq "$(R llen queue:default)" 0 "(2) LLEN queue:default"
assert_eq "$(R sismember processes "$ident")" 1 "(2) $ident in processes (A must not unregister B)"
must_wait 10 '[ "$(R hget "$ident" info | grep -o "\"pid\":[0-9]*")" = "\"pid\":$wb" ]' "(2) the hash is not B's"
assert_eq "$(rf_count "$RF_DIR/started" "$jid")" 2 "(2) starts of the job"
pass "a paused process's fixed identity is refused while its pid lives; a process whose identity was taken over stops at once"
