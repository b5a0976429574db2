#!/usr/bin/env bash
# SIGTERM while Redis hangs. The stop must keep its deadline whatever Redis does.
# Each round: SlowJob(10)s running (some rounds with every thread busy, some with idle threads in
# their blocking fetch), -t 3; Redis paused (kill -STOP: it accepts connections but never answers)
# or refusing connections (shut down, its data kept in an AOF); then SIGTERM to the worker.
# Expected, per round:
#   - "stopping" logged within 1 s of the SIGTERM;
#   - every handler told to stop at about t + 3 s (an --exec handler's process group gets SIGTERM,
#     a C handler sees hh_job_cancelled()), none left to run its 10 s;
#   - exit status 0 within 3 + 5 + 1 s (+ 2 s of slack for a loaded machine: 11 s), and within
#     docs/running-workers.md's bound, -t + min(command timeout, 3 s) + 1 s = 7 s;
#   - nothing lost: with reliable fetch each job is, once Redis is back, exactly once in the
#     worker's in-progress list or its queue, and a restart with the same --identity runs it;
#     with basic fetch a job that could not be pushed back is in the log at ERROR with its payload,
#     and the worker exits with status 4 saying how many.
# C handlers: CancellableJob of the example plug-in (it polls hh_job_cancelled and logs when cancelled).
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_require_plugin
SHUT_DIR="$HH_TMP/shut"
mkdir -p "$SHUT_DIR" || fail "mkdir $SHUT_DIR"
export SHUT_DIR
hh_redis_start --appendonly yes --appendfsync always

fsub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }

# log_time LINE -> the epoch seconds of a worker log line ("2026-11-30T16:19:35.123Z pid=...")
log_time() { date -d "${1%% *}" +%s.%N; }

# all_copies -> every payload in queue:default and in every in-progress list (Redis must answer)
all_copies() {
    local k
    R lrange queue:default 0 -1
    for k in $(R --scan --pattern 'hiredhand:inprogress:*'); do R lrange "$k" 0 -1; done
}

# round MODE(hung|down) CONCURRENCY JOBS HANDLER(exec|c) FETCH(reliable|basic)
round() {
    local mode="$1" c="$2" njobs="$3" kind="$4" fetch="$5"
    local tag="[$mode -c $c, $njobs jobs, $kind handler, $fetch fetch]"
    local ident="hh-shut-$mode-$c-$kind-$fetch-$$" jids=() payloads=() i jid p now
    R flushall >/dev/null
    : >"$SHUT_DIR/started"; : >"$SHUT_DIR/cancelled"; : >"$SHUT_DIR/done"
    echo 10 >"$SHUT_DIR/sleep"
    now="$(hh_now)"
    local klass=SlowJob
    [ "$kind" = c ] && klass=CancellableJob   # the example plug-in's C handler
    for ((i = 0; i < njobs; i++)); do
        jid="$(hh_jid)"
        p="$(printf '{"retry":true,"queue":"default","class":"'"$klass"'","args":[10],"jid":"%s","created_at":%s,"enqueued_at":%s}' "$jid" "$now" "$now")"
        jids+=("$jid"); payloads+=("$p")
        R lpush queue:default "$p" >/dev/null
    done
    R sadd queues default >/dev/null
    local handler=(--exec "SlowJob=$HH_HANDLERS/shut_job.sh")
    [ "$kind" = c ] && handler=(--require "$PLUGIN")
    hh_start_worker -v -c "$c" -t 3 --identity "$ident" --fetch "$fetch" "${handler[@]}"
    must_wait 20 '[ "$(grep -c "class=$klass jid=.*: start" "$WORKER_LOG")" -ge '"$njobs"' ]' \
        "$tag the $njobs SlowJobs did not all start within 20 s"
    [ "$kind" = exec ] && must_wait 10 '[ "$(grep -c . "$SHUT_DIR/started")" -ge '"$njobs"' ]' \
        "$tag the $njobs --exec handlers did not all start"
    sleep 0.5   # not a pass condition: lets idle threads settle into their blocking fetch
    if [ "$mode" = hung ]; then
        kill -STOP "$REDIS_PID" || fail "$tag kill -STOP redis"
    else
        hh_redis_stop
    fi

    local t_term t_exit rc line t
    t_term="$(date +%s.%N)"
    kill -TERM "$WORKER_PID"
    # polled every 50 ms (not wait_until's 200 ms): the exit time is checked to a tenth of a second
    while kill -0 "$WORKER_PID" 2>/dev/null; do
        if awk -v d="$(fsub "$(date +%s.%N)" "$t_term")" 'BEGIN { exit !(d > 11) }'; then
            [ "$mode" = hung ] && kill -CONT "$REDIS_PID"
            fail "$tag worker still running 11 s after SIGTERM (want exit within -t 3 + 5 + 1 s)"
        fi
        sleep 0.05
    done
    t_exit="$(date +%s.%N)"
    wait "$WORKER_PID"; rc=$?
    rf_forget "$WORKER_PID"
    hh_log "$tag exit status $rc, $(fsub "$t_exit" "$t_term") s after SIGTERM"
    # 4 with basic fetch: its jobs are gone from Redis, and a supervisor must see that
    local want_rc=0
    [ "$fetch" = basic ] && want_rc=4
    assert_eq "$rc" "$want_rc" "$tag exit status after SIGTERM"
    # docs/running-workers.md's bound: -t + min(command timeout, 3 s) + 1 s (29 s for -t 25: no SIGKILL at 30)
    assert_between "$(fsub "$t_exit" "$t_term")" 0 7.0 "$tag seconds from SIGTERM to exit (docs/running-workers.md: at most -t 3 + 3 + 1)"

    line="$(grep -m1 'INFO: stopping:' "$WORKER_LOG")" || fail "$tag no 'stopping' line in the log"
    t="$(fsub "$(log_time "$line")" "$t_term")"
    assert_between "$t" -0.5 1.0 "$tag seconds from SIGTERM to the 'stopping' line"

    # every handler told to stop at about t + 3 s, none finished its 10 s
    local cancels=()
    if [ "$kind" = exec ]; then
        for jid in "${jids[@]}"; do
            line="$(grep -m1 "^$jid " "$SHUT_DIR/cancelled")" || fail "$tag the handler of $jid never got its SIGTERM"
            cancels+=("$(fsub "$(echo "$line" | cut -d' ' -f3)" "$t_term")")
        done
    else
        for jid in "${jids[@]}"; do
            line="$(grep -m1 "CancellableJob jid=$jid: cancelled after" "$WORKER_LOG")" || fail "$tag the C handler of $jid never saw hh_job_cancelled()"
            cancels+=("$(fsub "$(log_time "$line")" "$t_term")")
        done
    fi
    for t in "${cancels[@]}"; do assert_between "$t" 2.8 5.0 "$tag seconds from SIGTERM to a handler's cancellation"; done
    hh_log "$tag handlers cancelled at t + ${cancels[*]} s"
    assert_eq "$(grep -c . "$SHUT_DIR/done")" 0 "$tag handlers that ran to the end"

    # Redis back
    if [ "$mode" = hung ]; then
        kill -CONT "$REDIS_PID" || fail "$tag kill -CONT redis"
    else
        hh_redis_restart
    fi
    must_wait 10 '[ "$(R ping)" = PONG ]' "$tag Redis does not answer after it came back"

    if [ "$fetch" = basic ]; then
        # BRPOP took it out of Redis: a push back that failed must leave the payload in the log
        for i in "${!jids[@]}"; do
            grep 'ERROR: ' "$WORKER_LOG" | grep -qF -- "${payloads[$i]}" \
                || fail "$tag no ERROR line with the full payload of ${jids[$i]}: $(grep ERROR "$WORKER_LOG" | head -n 3)"
        done
        grep -q "hiredhand: ${#jids[@]} job(s) taken from Redis by basic fetch were not pushed back" "$WORKER_LOG" ||
            fail "$tag no closing line counting the jobs not pushed back: $(tail -n 2 "$WORKER_LOG")"
        return 0
    fi
    # the log says where each job is (Redis never answered: none could be pushed back)
    for jid in "${jids[@]}"; do
        grep "WARN: class=$klass jid=$jid: not pushed back" "$WORKER_LOG" | grep -qF "stays in hiredhand:inprogress:$ident|default" \
            || fail "$tag no WARN line saying $jid stays in hiredhand:inprogress:$ident|default: $(grep WARN "$WORKER_LOG" | tail -n 3)"
    done
    local copies
    copies="$(all_copies)"
    for jid in "${jids[@]}"; do
        assert_eq "$(grep -c "\"jid\":\"$jid\"" <<<"$copies")" 1 \
            "$tag copies of $jid in queue:default + in-progress lists after the stop (never lost, never doubled)"
    done
    # the next start with the same identity runs them
    echo 0.2 >"$SHUT_DIR/sleep"
    hh_start_worker -c 2 -t 3 --identity "$ident" --exec "$klass=$HH_HANDLERS/shut_job.sh"
    local wpid="$WORKER_PID"
    for jid in "${jids[@]}"; do
        must_wait 30 'grep -q "^'"$jid"' '"$wpid"' " "$SHUT_DIR/done"' "$tag $jid did not run after a restart with --identity $ident"
    done
    hh_stop_worker TERM 15
    assert_eq "$WORKER_RC" 0 "$tag exit status of the restarted worker"
    rf_forget "$wpid"
}

# drop a reaped worker from the harness's kill-at-exit list (its pid may be recycled)
rf_forget() {
    local keep=() p
    for p in "${HH_PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
    HH_PIDS=("${keep[@]}")
}

round hung 2 2 exec reliable     # every thread busy
round hung 4 1 c reliable        # idle threads blocked in Redis too
round hung 16 16 exec reliable
round down 2 1 exec reliable
round down 4 4 c reliable
round down 16 3 exec reliable
round hung 2 1 exec basic
pass "stop within grace + budget with Redis paused or down, at -c 2, 4, 16; handlers cancelled at t + 3 s; nothing lost"
