#!/usr/bin/env bash
# hiredhand against the two later Sidekiq generations, 7.3 and 8.1 (the peers), one pass each;
# every row of the Compatibility table of docs/compatibility.md that says "verified" for 7.x / 8.x rests on this:
#   - jobs pushed by that Ruby client (Client.push, push_bulk, perform_in; 8.x's integer-ms
#     stamps) run in `hiredhand work`: ruby_push.rb, and perform_in moved by hiredhand's scheduler;
#   - jobs pushed by `hiredhand push` (now, other queue, --in, --retry) and by the C client
#     (examples/client.c) run in that generation's `sidekiq` server, for 8.1 with float and with
#     `--timestamps millis` payloads (push_check.rb; in Redis db 1, beside the rest in db 0);
#   - jobs hiredhand failed are read by that RetrySet / DeadSet (retry_count, error_class,
#     error_message, failed_at and retried_at in hiredhand's layout, 8.x's JobRecord times),
#     ScheduledSet reads a perform_in(3600), Sidekiq::Stats counts processed / failed;
#   - Busy: that ProcessSet lists the hiredhand process (identity, busy, concurrency, queues, tag),
#     WorkSet its running job, and Sidekiq::Web's /busy page renders both (and its Retries, Dead
#     and Scheduled pages the jobs above);
#   - the page's Quiet and Stop buttons (POST /busy, which calls Sidekiq::Process#quiet! /
#     #stop!) quiet the worker, then stop it (exit 0).
# The worker runs with `--timestamps millis` for 8.1, the float default for 7.3.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/heartbeat_helpers.sh"
hh_require_binary
hh_require_peers
CLIENT="$(dirname "$HIREDHAND")/example_client"
[ -x "$CLIENT" ] || fail "examples/client.c not built beside $HIREDHAND ($CLIENT)"
hh_redis_start
SK_URL="redis://127.0.0.1:$REDIS_PORT/1"   # the Sidekiq server's part, beside the worker's db 0

# sk_push KIND EXTRA_SPEC ARGS QUEUE RETRY TIMESTAMPS -- hiredhand push args: adds to SPEC_JOBS
sk_push() {
    local kind="$1" extra="$2" args="$3" queue="$4" retry="$5" ts="$6" t0
    shift 7
    t0="$(hh_now)"
    hh_cli push "$@" -r "$SK_URL" --timestamps "$ts"
    [ "$HH_RC" = 0 ] || fail "hiredhand push $* exited $HH_RC: $HH_ERR"
    SPEC_JOBS+=("{\"jid\":\"$HH_OUT\",\"kind\":\"$kind\",\"args\":$args,\"queue\":\"$queue\",\"retry\":$retry,\"timestamps\":\"$ts\",\"now\":$t0$extra}")
}

generation() {   # GEN VERSION TIMESTAMPS
    local gen="$1" ver="$2" ts="$3" t0=$SECONDS
    hh_log "=== Sidekiq $ver (worker --timestamps $ts)"
    R flushall >/dev/null
    export HH_TIMESTAMPS="$ts"

    hh_log "$ver: hiredhand's pushes, run by this generation's server (db 1); checked at the end"
    local now c ts_list=(float) kind
    now="$(hh_now)"
    [ "$gen" = 81 ] && ts_list=(float millis)
    SPEC_JOBS=()
    for kind in "${ts_list[@]}"; do
        sk_push now "" "[1,\"$kind\"]" default true "$kind" -- OkWorker "[1,\"$kind\"]"
        sk_push now "" "[2,{\"f\":1.5,\"s\":\"é😀\"}]" critical 3 "$kind" -- OkWorker "[2,{\"f\":1.5,\"s\":\"é😀\"}]" -q critical --retry 3
        sk_push in ',"in":1' "[3,\"$kind\"]" default true "$kind" -- OkWorker "[3,\"$kind\"]" --in 1
    done
    c="$("$CLIENT" "$SK_URL")" || fail "examples/client.c failed: $c"
    local cj spec
    mapfile -t cj < <(printf '%s\n' "$c" | grep -o '[0-9a-f]\{24\}')
    [ ${#cj[@]} = 4 ] || fail "examples/client.c printed [$c], not 4 jids"
    SPEC_JOBS+=("{\"jid\":\"${cj[0]}\",\"kind\":\"now\",\"class\":\"HardWorker\",\"args\":[\"bob\",5],\"queue\":\"default\",\"retry\":true}")
    local who=(- ann cy di) # examples/client.c's bulk push: HardWorker ["ann",1], ["cy",2], ["di",3]
    for c in 1 2 3; do
        SPEC_JOBS+=("{\"jid\":\"${cj[c]}\",\"kind\":\"now\",\"class\":\"HardWorker\",\"args\":[\"${who[c]}\",$c],\"queue\":\"default\",\"retry\":true}")
    done
    spec="{\"now\":$now,\"jobs\":[$(IFS=,; echo "${SPEC_JOBS[*]}")]}"
    REDIS_URL="$SK_URL" hh_peer_ruby "$gen" push_check.rb inspect "$spec" \
        || fail "$ver: what hiredhand push / the C client wrote is not what Sidekiq's client writes"
    HH_SK_POLL=1 REDIS_URL="$SK_URL" hh_peer_sidekiq_start "$gen" app.rb -q default -q critical -c 2

    hh_log "$ver: the Ruby client's jobs, run by hiredhand (db 0)"
    local n
    n="$(hh_peer_ruby "$gen" ruby_push.rb push)" || fail "$ver: pushing with Sidekiq::Client failed: $n"
    hh_peer_ruby "$gen" ruby_push.rb snapshot >/dev/null || fail "$ver: snapshot"
    hh_start_worker -c 5 -t 1 --heartbeat-interval 1 --poll-interval 0.5 --timestamps "$ts" \
        --sidekiq-version "$ver" --tag "gen$gen" --exec "OkWorker=$HH_HANDLERS/record.sh" \
        --exec "FailWorker=$HH_HANDLERS/fail.sh" --exec "SlowWorker=$HH_HANDLERS/sleep.sh 60"
    hb_wait_identity "$WORKER_PID" 15
    local id="$HB_ID"
    must_wait 30 '[ "$(R llen test:ran)" -ge '"$n"' ] && [ "$(R get stat:processed)" = '"$n"' ]' \
        "$ver: $(R llen test:ran) of $n Ruby-pushed jobs ran, stat:processed=$(R get stat:processed)"
    hh_peer_ruby "$gen" ruby_push.rb verify || fail "$ver: Ruby-pushed jobs run by hiredhand (see above)"

    hh_log "$ver: perform_in, failures (retry, dead), ScheduledSet, and a long job for the Busy page"
    hh_peer_ruby "$gen" generations.rb push >/dev/null || fail "$ver: generations.rb push"
    must_wait 15 '[ "$(R llen test:ran)" = $((n + 1)) ] && [ "$(R llen test:fails)" = 2 ] && [ "$(R zcard retry)" = 1 ] && [ "$(R zcard dead)" = 1 ]' \
        "$ver: perform_in jobs: ran=$(R llen test:ran) (want $((n + 1))) fails=$(R llen test:fails) retry=$(R zcard retry) dead=$(R zcard dead)"
    hh_peer_ruby "$gen" generations.rb first || fail "$ver: perform_in, ScheduledSet, RetrySet / DeadSet (see above)"
    must_wait 10 '[ "$(R llen test:fails)" = 3 ] && [ "$(R zcard retry)" = 1 ]' "$ver: f2 was not retried (fails=$(R llen test:fails))"
    must_wait 5 '[ "$(R get stat:processed)" = $((n + 4)) ] && [ "$(R get stat:failed)" = 3 ]' \
        "$ver: stat:processed=$(R get stat:processed) (want $((n + 4))) stat:failed=$(R get stat:failed) (want 3)"
    hh_peer_ruby "$gen" generations.rb second \
        "{\"processed\":$((n + 4)),\"failed\":3,\"retry_size\":1,\"dead_size\":1,\"scheduled_size\":1}" \
        || fail "$ver: RetrySet after the retry, Sidekiq::Stats (see above)"

    hh_log "$ver: Busy: ProcessSet, WorkSet and the Web UI's page show the worker and its running job"
    local busy
    busy="$(R hget test:jobs busy)"
    must_wait 5 '[ "$(R hget "'"$id"'" busy)" = 1 ]' "$ver: busy of $id is $(R hget "$id" busy), want 1"
    HB_EXPECT="{\"identity\":\"$id\",\"hostname\":\"$(hostname)\",\"pid\":$WORKER_PID,\"tag\":\"gen$gen\",\"concurrency\":5,\"queues\":[\"default\"],\"busy\":1,\"quiet\":\"false\",\"jobs\":[{\"jid\":\"$busy\",\"class\":\"SlowWorker\",\"args\":[\"busy-arg\",42],\"queue\":\"default\"}]}" \
        hh_peer_ruby "$gen" hb_processset.rb || fail "$ver: ProcessSet / WorkSet of the worker (see above)"
    hh_peer_ruby "$gen" generations.rb web get /busy "$id" /busy "$busy" /busy SlowWorker \
        /retries "$(R hget test:jobs f2)" /morgue "$(R hget test:jobs f0)" /scheduled "$(R hget test:jobs later)" \
        || fail "$ver: the Web UI's Busy, Retries, Dead and Scheduled pages (see above)"

    hh_log "$ver: the Quiet button, then the Stop button"
    hh_peer_ruby "$gen" generations.rb web press "$id" quiet || fail "$ver: the Quiet button (see above)"
    must_wait 5 '[ "$(R hget "'"$id"'" quiet)" = true ]' "$ver: $id not quiet 5 s after the Quiet button"
    HB_EXPECT="{\"identity\":\"$id\",\"quiet\":\"true\"}" hh_peer_ruby "$gen" hb_processset.rb \
        || fail "$ver: ProcessSet of the quiet worker (see above)"
    assert_alive "$WORKER_PID" "$ver: worker exited on Quiet"
    hh_peer_ruby "$gen" generations.rb web press "$id" stop || fail "$ver: the Stop button (see above)"
    wait_until 10 "! kill -0 $WORKER_PID" || fail "$ver: worker still running 10 s after the Stop button (-t 1)"
    wait "$WORKER_PID"
    assert_eq "$?" 0 "$ver: worker exit status after the Stop button"
    assert_eq "$(R sismember processes "$id")" 0 "$ver: $id left processes"
    assert_eq "$(R lrange queue:default 0 -1 | grep -c "$busy")" 1 "$ver: the stopped SlowWorker is back in queue:default"

    hh_log "$ver: back to the Sidekiq server: everything ran once there"
    must_wait 20 '[ "$(R -n 1 llen test:ran)" -ge '"${#SPEC_JOBS[@]}"' ]' \
        "$ver: $(R -n 1 llen test:ran) of ${#SPEC_JOBS[@]} jobs ran in Sidekiq (schedule=$(R -n 1 zcard schedule) retry=$(R -n 1 zcard retry))"
    REDIS_URL="$SK_URL" hh_sidekiq_stop
    REDIS_URL="$SK_URL" hh_peer_ruby "$gen" push_check.rb verify "$spec" || fail "$ver: the server's runs (see above)"
    if grep -E ' (WARN|ERROR|FATAL): ' "$SIDEKIQ_LOG" | grep -v 'Signal INFO not supported' >&2; then
        fail "$ver: the Sidekiq server logged warnings or errors (above)"
    fi
    : >"$SIDEKIQ_LOG"
    hh_log "Sidekiq $ver: done in $((SECONDS - t0)) s"
}

generation 73 7.3.10 float
generation 81 8.1.7 millis
pass
