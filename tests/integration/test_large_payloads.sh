#!/usr/bin/env bash
# Field report B17 (large payloads), with reliable fetch, -c 4: a 32 MiB string argument and an
# array of 200,000 integers pushed by Sidekiq's Ruby client, then 100 small jobs.
# Expected: every job runs once; the handler gets the big arguments intact (SHA-256 of args[0]
# equals the pushed one); the 100 small jobs are not starved (done within 10 s of the big ones
# starting to run); heartbeats keep going (process hash refreshed); the worker's RSS is back
# within reach of its baseline afterwards (< 8 x 32 MiB growth while running, as B17 allows);
# the in-progress lists are empty at the end.
. "$(dirname "$0")/../lib/harness.sh"
hh_require_binary
hh_redis_start

pushed="$(hh_ruby big_payloads.rb push)" || fail "pushing the big jobs failed: $pushed"
hh_start_worker -c 4 --heartbeat-interval 1 \
    --exec "BigJob=$HH_HANDLERS/sha_arg0.sh" --exec "SmallJob=$HH_HANDLERS/record.sh"
must_wait 60 '[ "$(R llen test:ran)" -ge 100 ] && [ "$(R llen test:sha)" -ge 2 ]' \
    "not every job ran within 60 s: small=$(R llen test:ran) big=$(R llen test:sha) queue=$(R llen queue:default) dead=$(R zcard dead) retry=$(R zcard retry)"
sleep 1
assert_eq "$(R llen test:ran)" 100 "small jobs run exactly once"
assert_eq "$(R llen test:sha)" 2 "big jobs run exactly once"
while read -r jid sum; do
    got="$(R lrange test:sha 0 -1 | awk -v j="$jid" '$1 == j { print $2 }')"
    assert_eq "$got" "$sum" "SHA-256 of the big argument of $jid as the handler received it"
done <<<"$pushed"
assert_eq "$(R zcard retry)" 0 "nothing failed"
assert_eq "$(R zcard dead)" 0 "nothing died"
id="$(R smembers processes | head -n 1)"
ttl="$(R ttl "$id")"
[ "$ttl" -ge 55 ] || fail "heartbeat not refreshed while big jobs ran: TTL $id = $ttl"
rss_kb="$(awk '/VmHWM/ { print $2 }' "/proc/$WORKER_PID/status")"
hh_log "peak RSS with two big jobs: $((rss_kb / 1024)) MiB"
# (a sanitizer build keeps freed memory in quarantine: no bound there)
if [ "${HH_SANITIZED:-0}" != 1 ]; then
    [ "$rss_kb" -lt $((8 * 32 * 1024)) ] || fail "peak RSS $rss_kb KB is over 8 x 32 MiB"
fi
left=0
for k in $(R --scan --pattern 'hiredhand:inprogress:*'); do left=$((left + $(R llen "$k"))); done
assert_eq "$left" 0 "jobs left in in-progress lists"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "worker exit status after SIGTERM"
pass
