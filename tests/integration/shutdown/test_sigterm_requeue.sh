#!/usr/bin/env bash
# Graceful shutdown pushes unfinished jobs back,
# once, before the deadline. -t 2 -c 1; LPUSH OkJob(A), LPUSH OkJob(B), RPUSH SlowJob(30) (taken
# first); SIGTERM 3 s after start. Expected: exit status 0 within 2 + 3 s; the SlowJob payload is
# back at the tail of queue:default byte-identical; A and B still queued, never started; retry
# and dead empty; stat:failed unchanged (a pushed-back job is no failure); the process left `processes`; no
# <identity>:work(ers) hash; no other key (in-progress list or otherwise) still holds the job.
# Run once per fetch mode: the default, --fetch basic and --fetch reliable.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start

payload() {   # CLASS JID ARG
    printf '{"retry":true,"queue":"default","class":"%s","args":[%s],"jid":"%s","created_at":%s,"enqueued_at":%s}' \
        "$1" "$3" "$2" "$(hh_now)" "$(hh_now)"
}

# jid_keys JID -> names of keys whose value (any type) contains JID
jid_keys() {
    local k t
    for k in $(R --scan); do
        case "$k" in test:*) continue ;; esac   # the test's own bookkeeping
        t="$(R type "$k")"
        case "$t" in
            list) R lrange "$k" 0 -1 ;;
            zset) R zrange "$k" 0 -1 ;;
            set) R smembers "$k" ;;
            hash) R hgetall "$k" ;;
            string) R get "$k" ;;
            *) true ;;
        esac | grep -q "$1" && echo "$k"
    done
}

for mode in default basic reliable; do
    R flushall >/dev/null
    fetch_args=()
    [ "$mode" = default ] || fetch_args=(--fetch "$mode")
    ident="hh-sigterm-$mode-$$"
    ja="$(hh_jid)"; jb="$(hh_jid)"; js="$(hh_jid)"
    pa="$(payload OkJob "$ja" '"A"')"
    pb="$(payload OkJob "$jb" '"B"')"
    ps="$(payload SlowJob "$js" 30)"
    R lpush queue:default "$pa" >/dev/null
    R lpush queue:default "$pb" >/dev/null
    R rpush queue:default "$ps" >/dev/null
    R sadd queues default >/dev/null

    t0=$SECONDS
    hh_start_worker -c 1 -t 2 --identity "$ident" "${fetch_args[@]}" \
        --exec "OkJob=$HH_HANDLERS/record.sh" --exec "SlowJob=$HH_HANDLERS/sleep.sh 30"
    must_wait 10 '[ "$(R lrange test:started 0 -1)" = "'"$js"'" ]' \
        "[$mode] the SlowJob did not start within 10 s (started: $(R lrange test:started 0 -1 | tr '\n' ' '))"
    failed_before="$(R get stat:failed)"; failed_before="${failed_before:-0}"
    while [ $((SECONDS - t0)) -lt 3 ]; do sleep 0.2; done
    assert_alive "$WORKER_PID" "[$mode] worker died before SIGTERM"

    start_ns=$(date +%s%N)
    kill -TERM "$WORKER_PID"
    wait_until 5 "! kill -0 $WORKER_PID" \
        || fail "[$mode] worker still running 5 s after SIGTERM with -t 2 (expected exit within 2 + 3 s)"
    wait "$WORKER_PID"; rc=$?
    took=$(( ($(date +%s%N) - start_ns) / 1000000 ))
    hh_log "[$mode] exited with $rc ${took} ms after SIGTERM"
    assert_eq "$rc" 0 "[$mode] exit status after SIGTERM"

    assert_eq "$(R lindex queue:default -1)" "$ps" "[$mode] tail of queue:default is the SlowJob payload, byte-identical"
    assert_eq "$(R llen queue:default)" 3 "[$mode] jobs in queue:default (A, B and the requeued SlowJob)"
    q="$(R lrange queue:default 0 -1)"
    assert_contains "$q" "$pa" "[$mode] OkJob(A) still queued unchanged"
    assert_contains "$q" "$pb" "[$mode] OkJob(B) still queued unchanged"
    assert_eq "$(R lrange test:started 0 -1)" "$js" "[$mode] jobs started (only the SlowJob)"
    assert_eq "$(R llen test:ran)" 0 "[$mode] jobs completed (none: A and B never started)"
    assert_eq "$(R zcard retry)" 0 "[$mode] ZCARD retry"
    assert_eq "$(R zcard dead)" 0 "[$mode] ZCARD dead"
    failed_after="$(R get stat:failed)"; failed_after="${failed_after:-0}"
    assert_eq "$failed_after" "$failed_before" "[$mode] stat:failed (a pushed-back job is no failure: unchanged)"
    assert_eq "$(R sismember processes "$ident")" 0 "[$mode] SISMEMBER processes $ident"
    assert_eq "$(R scard processes)" 0 "[$mode] SCARD processes"
    assert_eq "$(R exists "$ident:work" "$ident:workers")" 0 "[$mode] $ident:work / :workers removed"
    others="$(jid_keys "$js" | grep -vx 'queue:default' | tr '\n' ' ')"
    assert_eq "$others" "" "[$mode] keys other than queue:default still holding the SlowJob (in-progress lists etc.)"
    # the worker's handler child may still be sleeping; kill it now so the next round starts clean
    for p in $(cat "$HH_PIDFILE" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
    : >"$HH_PIDFILE"
done
pass
