#!/usr/bin/env bash
# Heartbeat keys expire after kill -9 (kill loop, compressed): a process killed with
# kill -9 disappears from Sidekiq::ProcessSet and Sidekiq::Workers by TTL alone (no cleanup by
# anyone): its <id> hash and work hashes expire within 60 s of its last beat, no key of a killed
# identity is left without a TTL, and no identity hash anywhere has TTL -1.
#   1. kill loop: 6 workers, each started and killed with kill -9 after a random 0-2 s (some die
#      before or during their first beat), with MONITOR running: every heartbeat transaction of
#      every killed identity passes the heartbeat atomicity check (hb_check_atomic).
#   2. one worker with a SlowJob running, seen by Sidekiq::Workers, killed with kill -9.
#   3. 66 s later: `processes` pruned by ProcessSet.new, ProcessSet and Workers empty, no key
#      named after a killed identity (the reliable-fetch in-progress list is the one exception: it
#      must still hold the killed job, byte-identical, so that recovery can requeue it).
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/heartbeat_helpers.sh"
hh_require_binary
hh_redis_start
mon="$HH_TMP/monitor.txt"
hb_monitor_start "$mon"

# ---------------------------------------------------------------- 1. kill loop
killed_pids=()
for i in 1 2 3 4 5 6; do
    hh_start_worker -c 3
    d=$(awk -v r="$RANDOM" 'BEGIN { printf "%.1f", (r % 21) / 10 }')
    sleep "$d"
    kill -KILL "$WORKER_PID"
    wait "$WORKER_PID" 2>/dev/null
    killed_pids+=("$WORKER_PID")
    hh_log "loop $i: killed $WORKER_PID after $d s"
done

# ---------------------------------------------------------------- 2. kill -9 with a running job
jid="$(hh_jid)"
payload="$(hb_payload SlowJob "$jid" '[120,"k9"]' default)"
R sadd queues default >/dev/null
R lpush queue:default "$payload" >/dev/null
hh_start_worker -c 2 --exec "SlowJob=$HH_HANDLERS/sleep.sh 120"
hb_wait_identity "$WORKER_PID" 15
id="$HB_ID"
must_wait 10 '[ "$(R lrange test:started 0 -1)" = "'"$jid"'" ]' "the SlowJob did not start"
must_wait 8 '[ "$(R hget "$id" busy)" = 1 ]' "busy did not become 1 within one beat"
w="$(hh_ruby hb_api.rb workers)" || fail "hb_api.rb workers failed"
assert_contains "$w" "$jid" "Sidekiq::Workers lists the running job before the kill"
assert_contains "$w" "$id" "Sidekiq::Workers lists the process before the kill"
kill -KILL "$WORKER_PID"
wait "$WORKER_PID" 2>/dev/null
killed_pids+=("$WORKER_PID")
t_kill=$SECONDS
ttl_at_kill=$(R ttl "$id")
hh_log "killed $WORKER_PID ($id); TTL $id = $ttl_at_kill, $id:workers = $(R ttl "$id:workers")"
assert_between "$ttl_at_kill" 1 60 "TTL $id right after kill -9"
assert_between "$(R ttl "$id:workers")" 1 60 "TTL $id:workers right after kill -9"
assert_between "$(R ttl "$id:work")" 1 60 "TTL $id:work right after kill -9"
# the handler (sleep.sh) survives its worker: kill it now so it does not write test:ran later
for p in $(cat "$HH_PIDFILE" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done

# ---------------------------------------------------------------- heartbeat atomicity of every killed identity
ids="$(grep -o '"SADD" "processes" "[^"]*"' "$mon" | sed 's/.*"processes" "//; s/"$//' | sort -u)"
hh_log "identities seen in MONITOR: $(echo $ids)"
for i in $ids; do
    hb_check_atomic "$mon" "$i" >/dev/null || fail "heartbeat atomicity violation for $i (above)"
done

# ---------------------------------------------------------------- 3. wait for the TTLs
must_wait 66 '[ "$(R exists "$id" "$id:work" "$id:workers")" = 0 ]' \
    "the hashes of $id still exist $((SECONDS - t_kill)) s after kill -9 (TTL now $(R ttl "$id"))"
gone_after=$((SECONDS - t_kill))
hh_log "hashes of $id gone $gone_after s after kill -9"
assert_between "$gone_after" 0 61 "seconds until the killed process's hashes expired"
# all loop identities beat before the main worker started: they are gone too (bounded extra wait)
must_wait 5 '[ -z "$(for p in '"${killed_pids[*]}"'; do R --scan --pattern "*:$p:*" | grep -v "^hiredhand:inprogress:"; done)" ]' \
    "keys of killed identities still present: $(for p in "${killed_pids[@]}"; do R --scan --pattern "*:$p:*"; done | tr '\n' ' ')"

procs="$(hh_ruby hb_api.rb processes)" || fail "hb_api.rb processes failed"
assert_eq "$(hb_ruby_field "$procs" list)" "[]" "Sidekiq::ProcessSet after the TTL"
assert_eq "$(hb_ruby_field "$procs" size)" 0 "Sidekiq::ProcessSet#size after ProcessSet.new pruned"
assert_eq "$(R scard processes)" 0 "SCARD processes after the prune"
w="$(hh_ruby hb_api.rb workers)" || fail "hb_api.rb workers failed"
assert_eq "$(hb_ruby_field "$w" list)" "[]" "Sidekiq::Workers after the TTL"
assert_eq "$(hb_ruby_field "$w" size)" 0 "Sidekiq::Workers#size after the TTL"

# no key without TTL left by a killed identity, no identity hash without TTL anywhere
for k in $(R --scan); do
    ttl=$(R ttl "$k")
    for p in "${killed_pids[@]}"; do
        case "$k" in
            hiredhand:inprogress:*":$p:"*) ;;      # reliable fetch: checked below
            *":$p:"*) fail "key $k of a killed process (pid $p) still exists (TTL $ttl)" ;;
        esac
    done
    if [ "$(R type "$k")" = hash ] && [ "$(R hexists "$k" info)" = 1 ] && [ "$ttl" = -1 ]; then
        fail "process hash $k has no TTL (a ghost on the Busy page forever)"
    fi
done
inprog="$(R --scan --pattern 'hiredhand:inprogress:*' | grep -F ":$(echo "$id" | cut -d: -f2):" || true)"
if [ -n "$inprog" ]; then
    assert_eq "$(R lrange "$inprog" 0 -1)" "$payload" "in-progress list $inprog holds the killed job, byte-identical"
else
    # basic fetch would lose it (as Sidekiq does); with the default reliable fetch it must be kept
    fail "the killed SlowJob $jid is in no in-progress list (keys: $(R --scan | tr '\n' ' '))"
fi
pass
