#!/usr/bin/env bash
# A burst landing on an idle process with many threads costs Redis about one fetch per batch, not
# one per thread: the threads woken for it join the flow of batches once one of them has found
# jobs, instead of each running its own "are the queues still empty?" fetch (the fetch script with
# its EXISTS check) first. -c 200, reliable fetch, 6000 NoopJobs (C plug-in: fast, batched)
# renamed into queue:default at once while every thread is idle. Fetch script calls (EVALSHA)
# while they drain must stay under n/96 (full batches) + 100, and EXISTS calls inside the script
# (an empty-queue check each) under 100; before this, each of the 200 threads fetched on its own
# at the start and again as the queue ran dry, about 2 x 200 to 3 x 200 calls more.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
hh_require_binary
hh_require_plugin
hh_redis_start

n=6000 c=200
# Every thread's first fetch (and the waits after it) settle: no script call for a second.
settled() {
    local a b
    a="$(rf_cmd_calls evalsha)"
    sleep 1
    b="$(rf_cmd_calls evalsha)"
    [ "$a" = "$b" ]
}
limit=$((n / 96 + 100))
judged=1
case "${HH_SANITIZED:-0}" in 1 | ON | TRUE) judged=0 ;; esac
hh_start_worker -c "$c" -v --fetch reliable --require "$PLUGIN" -q default
hh_worker_wait_ready 30
# Up to three bursts on the same idle worker, the best one judged: the count depends on how soon
# 200 threads get a core, and a machine loaded by other tests can delay them past a wake-up (the
# old code took about 573 calls every time, so one burst within the limit still tells them apart).
counts="" ok=0
for round in 1 2 3; do
    jids="$HH_TMP/pushed.$round.jids"; : >"$jids"
    rf_push default NoopJob "$n" "$jids" '[]' LPUSH "hiredhand:test:aside"
    must_wait 60 settled "the idle worker kept calling the fetch script"
    R config resetstat >/dev/null
    R rename hiredhand:test:aside queue:default >/dev/null
    want=$((n * round))
    must_wait 120 '[ "$(grep -c " INFO: done$" "$WORKER_LOG")" -ge '"$want"' ] && [ "$(R llen queue:default)" = 0 ]' \
        "only $(grep -c ' INFO: done$' "$WORKER_LOG") of $want jobs done within 120 s"
    must_wait 20 '[ "$(rf_inprog_len)" = 0 ]' "in-progress lists still hold $(rf_inprog_len) entries"
    must_wait 60 settled "the worker kept calling the fetch script after the burst"
    scripts="$(rf_cmd_calls evalsha)" exists="$(rf_cmd_calls exists)"
    hh_log "burst $round: commands: $(R info commandstats | tr -d "\r" | grep -E "lmove|lrange|evalsha|exists|lrem" | cut -d, -f1 | tr "\n" " ")"
    counts="$counts burst $round: $scripts script calls, $exists checks;"
    # Under a sanitizer 200 threads reach the check several times slower, and those that come
    # after a wake-up bumped the generation check again: the counts measure scheduling there
    # (350-520 calls, against 573 before in a normal build), so only the drains are checked.
    [ "$judged" = 0 ] && { ok=1; break; }
    if [ "$scripts" -le "$limit" ] && [ "$exists" -le 100 ]; then ok=1; break; fi
done
[ "$ok" = 1 ] || fail "every burst of $n jobs at -c $c took too many fetch script calls (want <= $limit) or empty-queue checks (EXISTS, want <= 100):$counts"
[ "$judged" = 1 ] || hh_log "sanitizer build: counts not judged:$counts"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status after SIGTERM"
pass "$counts within the limits ($limit script calls, 100 checks) for a burst of $n jobs at -c $c"
