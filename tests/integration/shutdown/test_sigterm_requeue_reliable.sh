#!/usr/bin/env bash
# SIGTERM with jobs longer
# than the timeout: they are back in their queue, private lists empty.
# --fetch reliable -c 4 -t 2, strict queues -q a -q b -q c. queue:a gets 3 SlowJobs (30 s),
# queue:b 1 SlowJob, queue:c 3 OkJobs. The 4 threads run the 4 SlowJobs, the 3 OkJobs wait in c
# (never started). Then 2 OkJobs are RPUSHed to queue:a (they would run next). SIGTERM.
# Expected: exit status 0 within 2 + 3 s; queue:a holds the 3 SlowJob payloads byte-identical
# (same bytes as pushed, no retry_count/error_* added), each exactly once, at the tail (they run
# next, before the 2 OkJobs pushed meanwhile); queue:b holds its SlowJob byte-identical, queue:c
# its 3 OkJobs; no
# hiredhand:inprogress:* key exists; retry and dead are empty; stat:failed unchanged; no job
# completed; the log says 4 jobs were pushed back. Run with a fixed --identity and with a dynamic
# one.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
hh_require_binary
hh_redis_start

for mode in fixed dynamic; do
    R flushall >/dev/null
    : >"$RF_DIR/started"; : >"$RF_DIR/done"
    ida=(); [ $mode = fixed ] && ida=(--identity "rf-term-$$")
    oka="$HH_TMP/$mode.oka"; sla="$HH_TMP/$mode.sla"; slb="$HH_TMP/$mode.slb"; : >"$oka"; : >"$sla"; : >"$slb"
    rf_push a SlowJob 3 "$sla" 30
    rf_push b SlowJob 1 "$slb" 30
    rf_push c OkJob 3 "$oka"
    slow_a="$(R lrange queue:a 0 -1)"
    before_b="$(R lrange queue:b 0 -1)"
    before_c="$(R lrange queue:c 0 -1)"
    hh_start_worker -c 4 -t 2 --fetch reliable -q a -q b -q c "${ida[@]}" \
        --exec "OkJob=$RF_HANDLER" --exec "SlowJob=$RF_HANDLER 30"
    must_wait 15 '[ "$(rf_uniq "$RF_DIR/started")" -ge 4 ]' "[$mode] the 4 SlowJobs did not start within 15 s (started $(rf_uniq "$RF_DIR/started"))"
    sleep 0.5
    assert_eq "$(cut -d' ' -f1 "$RF_DIR/started" | sort -u)" "$(cat "$sla" "$slb" | sort)" "[$mode] jobs started before SIGTERM (the 4 SlowJobs)"
    assert_eq "$(rf_inprog_len)" 4 "[$mode] jobs in in-progress lists before SIGTERM"
    okn="$HH_TMP/$mode.okn"; : >"$okn"
    rf_push a OkJob 2 "$okn" "" RPUSH
    new_a="$(R lrange queue:a 0 -1)"
    failed_before="$(R get stat:failed)"; failed_before="${failed_before:-0}"

    t0=$(date +%s%N)
    kill -TERM "$WORKER_PID"
    wait_until 5 "! kill -0 $WORKER_PID" || fail "[$mode] still running 5 s after SIGTERM with -t 2 (want exit within 2 + 3 s)"
    wait "$WORKER_PID"; rc=$?
    hh_log "[$mode] exit status $rc, $(( ($(date +%s%N) - t0) / 1000000 )) ms after SIGTERM"
    assert_eq "$rc" 0 "[$mode] exit status after SIGTERM"

    assert_eq "$(rf_inprog | tr '\n' ' ')" "" "[$mode] in-progress keys left after the stop"
    assert_eq "$(R llen queue:a)" 5 "[$mode] LLEN queue:a (2 OkJobs pushed meanwhile + 3 SlowJobs pushed back)"
    assert_eq "$(R llen queue:b)" 1 "[$mode] LLEN queue:b (its SlowJob pushed back)"
    assert_eq "$(R lrange queue:a 0 1)" "$new_a" "[$mode] head of queue:a: the 2 OkJobs pushed while the SlowJobs ran"
    assert_eq "$(R lrange queue:a -3 -1 | sort)" "$(printf '%s\n' "$slow_a" | sort)" "[$mode] tail of queue:a: the 3 SlowJob payloads, byte-identical, once each (run next)"
    assert_eq "$(R lrange queue:b 0 -1)" "$before_b" "[$mode] queue:b: the SlowJob payload, byte-identical"
    assert_eq "$(R lrange queue:c 0 -1)" "$before_c" "[$mode] queue:c: the 3 OkJobs, untouched"
    assert_not_contains "$(R lrange queue:a 0 -1; R lrange queue:b 0 -1; R lrange queue:c 0 -1)" '"error_' "[$mode] queued payloads carry error fields"
    assert_not_contains "$(R lrange queue:a 0 -1; R lrange queue:b 0 -1; R lrange queue:c 0 -1)" 'retry_count' "[$mode] queued payloads carry retry_count"
    assert_eq "$(R zcard retry) $(R zcard dead)" "0 0" "[$mode] ZCARD retry, dead"
    failed_after="$(R get stat:failed)"; failed_after="${failed_after:-0}"
    assert_eq "$failed_after" "$failed_before" "[$mode] stat:failed"
    assert_eq "$(grep -c . "$RF_DIR/done")" 0 "[$mode] jobs completed (none)"
    grep -q "pushed 4 unfinished jobs back" "$WORKER_LOG" || fail "[$mode] no 'pushed 4 unfinished jobs back' in the log: $(tail -n 5 "$WORKER_LOG")"
    assert_eq "$(R scard processes)" 0 "[$mode] SCARD processes after the stop"
    # the cancelled handlers got SIGTERM from the worker; make sure none is left for the next round
    for p in $(cat "$HH_PIDFILE" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
    : >"$HH_PIDFILE"
done
pass "4 running jobs pushed back byte-identical on SIGTERM, in-progress lists gone, exit 0 (fixed and dynamic identity)"
