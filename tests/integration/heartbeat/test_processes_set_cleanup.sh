#!/usr/bin/env bash
# kill -9 leaves a member of `processes` behind: the process never removes it, and only its hash
# expires. Live workers prune such members as Sidekiq's ProcessSet cleanup does: whoever takes the
# lock `process_cleanup` (SET NX EX 60: once a minute, fleet-wide) removes the members whose hash
# has no info. Three workers; two are killed with kill -9 and their hashes made to expire at once
# (PEXPIRE, standing in for the 60 s TTL), beside a member left by a process long gone; the lock
# the survivor took at its start is dropped. Expected: within a few beats of the survivor only
# its own member is left, the removal is logged, and the lock is held again (60 s TTL); a member
# left afterwards stays while the lock holds (no second cleanup within the minute).
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start

pids=()
for i in 1 2 3; do
    hh_start_worker -c 1 --heartbeat-interval 1
    pids+=("$WORKER_PID")
    must_wait 15 '[ "$(R scard processes)" = '"$i"' ]' "worker $i did not register"
done
live_log="$WORKER_LOG"
identity() { R smembers processes | grep ":$1:"; }
live="$(identity "${pids[2]}")"
for p in "${pids[0]}" "${pids[1]}"; do
    id="$(identity "$p")"
    [ -n "$id" ] || fail "no member for worker $p"
    kill -KILL "$p"
    wait "$p" 2>/dev/null
    R pexpire "$id" 1 >/dev/null   # its hash expires as the TTL would make it, 60 s later
done
R sadd processes "ghost:1:000000000000" >/dev/null
must_wait 5 '[ "$(R exists "$(identity "${pids[0]}")" "$(identity "${pids[1]}")")" = 0 ]' "the killed workers' hashes did not expire"
assert_eq "$(R scard processes)" 4 "members before the cleanup (one live, two killed, one ghost)"
assert_eq "$(R exists process_cleanup)" 1 "the lock taken by the workers' first cleanup"
R del process_cleanup >/dev/null   # as a minute later

must_wait 10 '[ "$(R smembers processes)" = "$live" ]' "stale members not pruned: $(R smembers processes | tr '\n' ' ')"
grep -q "removed 3 dead process(es) from processes" "$live_log" || fail "the cleanup was not logged"
assert_between "$(R ttl process_cleanup)" 1 60 "TTL of the cleanup lock"

# no second cleanup while the lock holds: a member left now survives the next beats
R sadd processes "ghost:2:000000000000" >/dev/null
beat="$(R hget "$live" beat)"
must_wait 10 '[ "$(R hget "$live" beat)" != "$beat" ]' "the live worker did not beat"
beat="$(R hget "$live" beat)"
must_wait 10 '[ "$(R hget "$live" beat)" != "$beat" ]' "the live worker did not beat again"
assert_eq "$(R sismember processes ghost:2:000000000000)" 1 "a cleanup ran while the lock was held"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status"
pass
