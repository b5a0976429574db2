#!/usr/bin/env bash
# A full Redis drains, in both fetch modes. Redis over maxmemory (noeviction) refuses every
# command that may grow the data set, and running jobs is what frees memory: moving a job from its
# queue to an in-progress list, acking it, pushing it back and the heartbeat's own hash must keep
# working there, while writes that grow memory (retry entries, stats) are refused and retried until
# Redis takes them. Per fetch mode (reliable, then basic), one worker (-c 5) on `default`:
#   1. 12 OkJobs and 3 FailJobs (retry 3) reach queue:default while Redis refuses every denyoom
#      write (maxmemory 1; RENAME, not denyoom, moves the backlog in);
#   2. every OkJob runs, once, under the full Redis, the queue is empty, nothing is in `retry`
#      yet, and the worker's hash keeps beating (its `beat` moves: the Busy page sees it);
#   3. once memory is back (maxmemory 0) the 3 failures reach `retry` (retry_count 0), the
#      in-progress lists are empty, and the worker stops cleanly (exit 0).
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start

inprogress_len() { local n=0 k; for k in $(R --scan --pattern 'hiredhand:inprogress:*'); do n=$((n + $(R llen "$k"))); done; echo $n; }
stage() {   # CLASS: one job onto queue:staging (as Sidekiq's client writes it, to another list)
    local jid now
    jid="$(hh_jid)" now="$(hh_now)"
    R lpush queue:staging "{\"retry\":3,\"queue\":\"default\",\"class\":\"$1\",\"args\":[],\"jid\":\"$jid\",\"created_at\":$now,\"enqueued_at\":$now}" >/dev/null
}

for mode in reliable basic; do
    R del retry queue:staging >/dev/null
    ran="$(hh_jid_recorder "$HH_TMP/ok-$mode.sh")"
    hh_start_worker -c 5 --fetch "$mode" --heartbeat-interval 1 --exec "OkJob=$HH_TMP/ok-$mode.sh" \
        --exec "FailJob=$HH_HANDLERS/fail.sh"
    hh_worker_wait_ready
    id="$(R smembers processes)"
    for i in $(seq 1 12); do stage OkJob; [ $((i % 4)) = 0 ] && stage FailJob; done

    R config set maxmemory 1 >/dev/null
    beat0="$(R hget "$id" beat)"
    R rename queue:staging queue:default >/dev/null
    must_wait 30 '[ "$(wc -l <"$ran")" -ge 12 ]' \
        "$mode: the backlog did not drain under a full Redis: $(wc -l <"$ran") of 12 OkJobs ran, $(R llen queue:default) queued; $(grep -m1 ERROR "$WORKER_LOG")"
    must_wait 10 '[ "$(R llen queue:default)" = 0 ]' "$mode: queue:default not empty under a full Redis"
    must_wait 10 'awk -v a="$(R hget "$id" beat)" -v b="$beat0" "BEGIN { exit !(a + 0 > b + 0) }"' \
        "$mode: the worker's beat did not move under a full Redis (beat $(R hget "$id" beat), before $beat0)"
    assert_eq "$(R zcard retry)" 0 "$mode: retry entries written while Redis refuses writes"
    assert_eq "$(R exists "$id")" 1 "$mode: the worker's hash under a full Redis"
    grep -q "retry entry not written, retrying until Redis takes it: OOM" "$WORKER_LOG" \
        || fail "$mode: the refused retry writes were not logged"

    R config set maxmemory 0 >/dev/null
    must_wait 15 '[ "$(R zcard retry)" = 3 ]' "$mode: the failed jobs' retries were not written once memory was back ($(R zcard retry) of 3)"
    assert_eq "$(R zrange retry 0 -1 | grep -c '"retry_count":0')" 3 "$mode: retry_count of the retries"
    assert_eq "$(sort "$ran" | uniq -d)" "" "$mode: an OkJob ran twice"
    assert_eq "$(wc -l <"$ran")" 12 "$mode: OkJobs run"
    must_wait 10 '[ "$(inprogress_len)" = 0 ]' "$mode: in-progress lists after the drain: $(inprogress_len)"
    hh_stop_worker TERM 30
    assert_eq "$WORKER_RC" 0 "$mode: exit status"
done
pass
