#!/usr/bin/env bash
# a job that kills its worker every time ends in the dead set after
# --max-recoveries (default 3), error_class hiredhand::PoisonPill.
# KillerJob runs handlers/rf_killer.sh, which kill -9s the worker running it.
# (1) fixed identity: -c 1 --identity I --max-recoveries 3. Start the worker; each time the job
#     kills it, start it again with the same identity (bounded: 8 starts). Each boot pushes the
#     job back (recovery 1, 2, 3) and it kills again; the 4th boot finds it recovered a 4th time
#     (> 3) and moves it to the dead set instead. Expected: the killer ran exactly 4 times, 5
#     starts, the 5th worker stays up and runs 5 OkJobs pushed afterwards; `dead` holds exactly
#     the job (same jid, class, args) with error_class "hiredhand::PoisonPill" and an
#     error_message; queue and in-progress lists empty; retry empty.
# (2) orphan path: two dynamic-identity workers (-c 1 --recovery-interval 1); whenever one dies,
#     the test DELetes its heartbeat hash (instead of waiting 60 s) and starts a replacement
#     (bounded: 10 replacements). The live ones recover the job, run it, die... Same expectations:
#     4 runs, then the dead set with hiredhand::PoisonPill.
# (3) a poison pill holding an integer beyond 64 bits (Ruby's JSON reads it, jansson cannot):
#     left in a fixed identity's in-progress list with its recovery counter at the limit, it is
#     buried at boot with the error fields set in its stored bytes; the bignum keeps its digits.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
hh_require_binary
hh_redis_start

check_dead() {   # LABEL JID
    local label="$1" jid="$2" entry
    assert_eq "$(R zcard dead)" 1 "[$label] ZCARD dead"
    entry="$(R zrange dead 0 -1)"
    assert_contains "$entry" "\"jid\":\"$jid\"" "[$label] dead entry is the KillerJob"
    assert_contains "$entry" '"class":"KillerJob"' "[$label] dead entry class"
    assert_contains "$entry" '"error_class":"hiredhand::PoisonPill"' "[$label] dead entry error_class"
    assert_contains "$entry" '"error_message":"' "[$label] dead entry has an error_message"
    assert_contains "$entry" '"args":["poison"]' "[$label] dead entry args unchanged"
    assert_eq "$(R llen queue:default)" 0 "[$label] LLEN queue:default"
    assert_eq "$(rf_inprog_len)" 0 "[$label] jobs left in in-progress lists ($(rf_inprog | tr '\n' ' '))"
    assert_eq "$(R zcard retry)" 0 "[$label] ZCARD retry"
    hh_log "[$label] dead entry: $entry"
}

# ---------------------------------------------------------------- (1) fixed identity
ident="rf-poison-$$"
kj="$HH_TMP/k1.jids"; : >"$kj"
rf_push default KillerJob 1 "$kj" '"poison"'
jid="$(cat "$kj")"
wargs=(-c 1 -t 5 --fetch reliable --identity "$ident" --max-recoveries 3
       --exec "KillerJob=$RF_KILLER" --exec "OkJob=$RF_HANDLER")
starts=0
survivor=""
while [ $starts -lt 8 ]; do
    hh_start_worker "${wargs[@]}"
    starts=$((starts + 1))
    pid=$WORKER_PID
    wait_until 15 "! kill -0 $pid || [ \"\$(R zcard dead)\" -ge 1 ]" \
        || fail "[fixed] start $starts: the worker neither died nor moved the job to the dead set within 15 s (killer runs: $(grep -c . "$RF_DIR/killer" 2>/dev/null))"
    if kill -0 "$pid" 2>/dev/null; then survivor=$pid; break; fi
    wait "$pid" 2>/dev/null   # reap it: a zombie pid would look like a live owner of the identity
    rf_forget_pid "$pid"
    hh_log "[fixed] start $starts: worker $pid was killed by the job (killer runs: $(grep -c . "$RF_DIR/killer"))"
done
[ -n "$survivor" ] || fail "[fixed] the job still kills its worker after $starts starts (killer runs: $(grep -c . "$RF_DIR/killer"), recoveries counter: $(R get "hiredhand:recoveries:$jid"), dead: $(R zcard dead))"
sleep 1
assert_alive "$survivor" "[fixed] worker $starts died after the job went to the dead set"
assert_eq "$(rf_count "$RF_DIR/killer" "$jid")" 4 "[fixed] times the KillerJob ran (1 + --max-recoveries 3)"
assert_eq "$starts" 5 "[fixed] worker starts until the job was buried"
check_dead fixed "$jid"
grep -q "jid=$jid owner=$ident: recovered 4 times, moved to the dead set" "$WORKER_LOG" \
    || fail "[fixed] no 'recovered 4 times, moved to the dead set' line in the last worker's log: $(grep recovery "$WORKER_LOG" | tail -n 3)"
okj="$HH_TMP/ok1.jids"; : >"$okj"
rf_push default OkJob 5 "$okj"
must_wait 15 '[ "$(rf_uniq "$RF_DIR/done")" -ge 5 ]' "[fixed] the surviving worker did not run 5 OkJobs within 15 s"
hh_stop_worker TERM 15
assert_eq "$WORKER_RC" 0 "[fixed] exit status after SIGTERM"

# ---------------------------------------------------------------- (2) orphan path, dynamic identities
R flushall >/dev/null
: >"$RF_DIR/killer"; : >"$RF_DIR/done"; : >"$RF_DIR/started"
kj="$HH_TMP/k2.jids"; : >"$kj"
rf_push default KillerJob 1 "$kj" '"poison"'
jid="$(cat "$kj")"
wargs=(-c 1 -t 5 --fetch reliable --recovery-interval 1 --max-recoveries 3
       --exec "KillerJob=$RF_KILLER" --exec "OkJob=$RF_HANDLER")
declare -A ident_of=()
live=()
start_dyn() {
    hh_start_worker "${wargs[@]}"
    ident_of[$WORKER_PID]="$(rf_identity "$WORKER_LOG")"
    live+=("$WORKER_PID")
}
start_dyn; start_dyn
replacements=0
t0=$SECONDS
while [ "$(R zcard dead)" = 0 ]; do
    [ $((SECONDS - t0)) -le 90 ] || fail "[orphan] the job did not reach the dead set within 90 s (killer runs: $(grep -c . "$RF_DIR/killer"), counter: $(R get "hiredhand:recoveries:$jid"))"
    still=()
    for p in "${live[@]}"; do
        if kill -0 "$p" 2>/dev/null; then still+=("$p"); continue; fi
        wait "$p" 2>/dev/null
        rf_forget_pid "$p"
        R del "${ident_of[$p]}" >/dev/null   # instead of waiting for the 60 s TTL
        hh_log "[orphan] worker $p (${ident_of[$p]}) was killed by the job; deleted its heartbeat hash"
        replacements=$((replacements + 1))
        [ $replacements -le 10 ] || fail "[orphan] more than 10 workers killed (killer runs: $(grep -c . "$RF_DIR/killer"), counter: $(R get "hiredhand:recoveries:$jid"))"
    done
    live=("${still[@]}")
    while [ ${#live[@]} -lt 2 ]; do start_dyn; done
    sleep 0.3
done
sleep 1.5   # let any further scan run: the job must stay buried
assert_eq "$(rf_count "$RF_DIR/killer" "$jid")" 4 "[orphan] times the KillerJob ran (1 + --max-recoveries 3)"
check_dead orphan "$jid"
for p in "${live[@]}"; do assert_alive "$p" "[orphan] worker $p died after the job was buried"; done
okj="$HH_TMP/ok2.jids"; : >"$okj"
rf_push default OkJob 5 "$okj"
must_wait 15 '[ "$(rf_uniq "$RF_DIR/done")" -ge 5 ]' "[orphan] the live workers did not run 5 OkJobs within 15 s"
# stopped before (3): their orphan scans (every 1 s) would take (3)'s list for a dead process's
# and recover it between its LPUSH and the SET of its recovery count, and run the job
for p in "${live[@]}"; do
    WORKER_PID="$p"
    hh_stop_worker TERM 15
    assert_eq "$WORKER_RC" 0 "[orphan] worker $p exit status after SIGTERM"
done

# ---------------------------------------------------------------- (3) a bignum poison pill
R flushall >/dev/null
ident="rf-poison-big-$$"
bjid="0123456789abcdef01234567"
big='{"class":"KillerJob","args":[100000000000000000000],"retry":true,"queue":"default","jid":"'$bjid'"}'
R set "hiredhand:recoveries:$bjid" 3 >/dev/null   # recovered 3 times already: the next is one too many
R lpush "hiredhand:inprogress:$ident|default" "$big" >/dev/null
hh_start_worker -c 1 -t 5 --fetch reliable --identity "$ident" --max-recoveries 3 --exec "KillerJob=$RF_KILLER"
must_wait 15 '[ "$(R zcard dead)" = 1 ]' "[bignum] the job was not moved to the dead set at boot"
entry="$(R zrange dead 0 -1)"
assert_contains "$entry" '"args":[100000000000000000000]' "[bignum] the dead entry keeps the bignum's digits"
assert_contains "$entry" '"error_class":"hiredhand::PoisonPill"' "[bignum] dead entry error_class"
assert_contains "$entry" '"error_message":"job was running when its process died 4 times' "[bignum] dead entry error_message"
assert_contains "$entry" '"failed_at":' "[bignum] dead entry failed_at"
assert_eq "$(rf_count "$RF_DIR/killer" "$bjid")" 0 "[bignum] the buried job did not run"
hh_stop_worker TERM 15
assert_eq "$WORKER_RC" 0 "[bignum] exit status after SIGTERM"
pass "a worker-killing job was buried as hiredhand::PoisonPill after 4 runs (fixed identity and orphan scan)"
