#!/usr/bin/env bash
# An outcome Redis refuses is retried until Redis takes it, and the job is never lost meanwhile:
#   1. reliable fetch, Redis at maxmemory (OOM) while a failing job runs: the job stays in its
#      in-progress list (a peer with a 1 s recovery interval does not re-run it), the OOM error is
#      logged once, and within seconds of memory being freed the job is in `retry` with
#      retry_count 0, its error_class and error_message; it ran once.
#   2. the same with basic fetch: the job is held in memory and written once Redis accepts it.
#   3. a wrong-typed `retry` key (an error inside the write): the job stays in its in-progress
#      list, the WRONGTYPE error is logged, and it lands in `retry` once the key is fixed.
#   4. a wrong-typed stat:processed: the beat logs the error and keeps the count, which reaches
#      stat:processed once the key is fixed.
#   5. the scheduler under OOM: a due job stays in `schedule` and is enqueued and run once memory
#      is freed.
#   6. basic fetch, an outcome still refused when the stop's time is up: the job is logged whole
#      at ERROR and the worker exits 4 (jobs taken from Redis and not written back).
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start

starts="$HH_TMP/starts"
: >"$starts"
inprogress_len() { local n=0 k; for k in $(R --scan --pattern 'hiredhand:inprogress:*'); do n=$((n + $(R llen "$k"))); done; echo $n; }
push_fail() { "$HIREDHAND" push -r "$REDIS_URL" FailJob '[1]' --retry 3 "$@"; }
retry_field() { R zrange retry 0 0 | ruby -rjson -e 'j = JSON.parse($stdin.read); puts j[ARGV[0]].inspect' "$1"; }

run_oom_case() {   # FETCH-MODE
    local mode="$1" jid
    R del retry >/dev/null
    : >"$starts"
    jid="$(push_fail)" || fail "$mode: push failed"
    must_wait 20 "grep -q $jid '$starts'" "$mode: the job did not start"
    R config set maxmemory 1 >/dev/null
    must_wait 20 "grep -q 'jid=$jid: retry entry not written, retrying until Redis takes it: OOM' '$WORKER_LOG'" \
        "$mode: the refused retry write was not logged with Redis' OOM message"
    assert_eq "$(R zcard retry)" 0 "$mode: retry set while Redis refuses writes"
    if [ "$mode" = reliable ]; then
        assert_eq "$(inprogress_len)" 1 "$mode: the job must stay in its in-progress list while its outcome is refused"
    fi
    sleep 4   # Redis keeps refusing for a while: the worker keeps retrying, quietly
    assert_eq "$(grep -c "jid=$jid: retry entry not written" "$WORKER_LOG")" 1 "$mode: the refusal must be logged once, not per attempt"
    R config set maxmemory 0 >/dev/null
    must_wait 10 '[ "$(R zcard retry)" = 1 ]' "$mode: the job did not reach the retry set after memory was freed"
    assert_eq "$(retry_field jid)" "\"$jid\"" "$mode: jid in retry"
    assert_eq "$(retry_field retry_count)" 0 "$mode: retry_count"
    assert_eq "$(retry_field error_class)" '"hiredhand::ExecFailed"' "$mode: error_class"
    assert_contains "$(retry_field error_message)" "slow failure of FailJob" "$mode: error_message"
    assert_eq "$(grep -c "$jid" "$starts")" 1 "$mode: the job ran more than once (a recoverer re-ran it?)"
    assert_eq "$(inprogress_len)" 0 "$mode: in-progress lists after the write"
    grep -q "jid=$jid: retry entry written after" "$WORKER_LOG" || fail "$mode: the recovery of the write was not logged"
}

# 1. reliable fetch, with a peer that scans for orphans every second
hh_start_worker -c 2 --heartbeat-interval 1 --recovery-interval 1 --exec "FailJob=$HH_HANDLERS/slow_fail.sh $starts 3"
peer_log="$WORKER_LOG"; peer_pid="$WORKER_PID"
hh_start_worker -c 2 --heartbeat-interval 1 --recovery-interval 1 -q other --exec "FailJob=$HH_HANDLERS/slow_fail.sh $starts 3"
other_pid="$WORKER_PID"
WORKER_LOG="$peer_log"; WORKER_PID="$peer_pid"   # the worker on `default` runs the job
hh_worker_wait_ready
run_oom_case reliable
hh_stop_worker TERM 30
WORKER_PID="$other_pid"   # the peer goes too: its scheduler would meet the OOM of the cases below
hh_stop_worker TERM 30

# 2. basic fetch
hh_start_worker -c 2 --fetch basic --heartbeat-interval 1 --exec "FailJob=$HH_HANDLERS/slow_fail.sh $starts 3"
run_oom_case basic
hh_stop_worker TERM 30

# 3. a wrong-typed retry key: an error inside the write
R del retry >/dev/null
R set retry not-a-sorted-set >/dev/null
: >"$starts"
hh_start_worker -c 2 --heartbeat-interval 1 --exec "FailJob=$HH_HANDLERS/slow_fail.sh $starts 0"
jid="$(push_fail)" || fail "push failed"
must_wait 20 "grep -q 'jid=$jid: retry entry not written, retrying until Redis takes it: WRONGTYPE' '$WORKER_LOG'" \
    "the WRONGTYPE refusal was not logged"
assert_eq "$(inprogress_len)" 1 "wrong-typed retry key: the job must stay in its in-progress list"
assert_eq "$(R get retry)" not-a-sorted-set "the retry key must be untouched"
R del retry >/dev/null
must_wait 10 '[ "$(R zcard retry)" = 1 ]' "the job did not reach the retry set after the key was fixed"
assert_eq "$(retry_field jid)" "\"$jid\"" "jid in retry after the fix"
assert_eq "$(inprogress_len)" 0 "in-progress lists after the fix"
assert_eq "$(grep -c "$jid" "$starts")" 1 "the job ran more than once"

# 4. a wrong-typed stat:processed: counts kept for the next beat (once the three jobs above are
#    counted, so no earlier count is in flight)
must_wait 10 '[ "$(R get stat:processed)" = 3 ]' "stat:processed before the wrong-typed key: $(R get stat:processed), want 3"
R del stat:processed >/dev/null
R hset stat:processed not a-counter >/dev/null
"$HIREDHAND" push -r "$REDIS_URL" NoSuchJob '[]' --retry 0 >/dev/null
must_wait 20 "grep -q 'heartbeat: stats not written (kept for the next beat): WRONGTYPE' '$WORKER_LOG'" \
    "the refused stats write was not logged"
R del stat:processed >/dev/null
must_wait 10 '[ -n "$(R get stat:processed)" ]' "the kept counts never reached stat:processed"
assert_eq "$(R get stat:processed)" 1 "stat:processed after the fix (the one job run while the key was wrong)"
assert_alive "$WORKER_PID" "worker"
hh_stop_worker TERM 30

# 5. the scheduler under OOM. The retries written above fall due 15-25 s after their failure: the
# scheduler moves due retries first, and one refused ends that poll before the schedule's turn.
R del retry >/dev/null
hh_start_worker -c 2 --poll-interval 1 --heartbeat-interval 1 --exec "OkJob=$HH_HANDLERS/record.sh"
# booted first: a worker registers with a write before its scheduler runs, and a slow start (a
# loaded machine, ASan) would otherwise meet the OOM in its boot, not in the scheduler
hh_worker_wait_ready 30
R config set maxmemory 1 >/dev/null
now="$(date +%s)"
R config set maxmemory 0 >/dev/null
sjid="$(hh_jid)"
R zadd schedule "$now" "{\"class\":\"OkJob\",\"args\":[],\"queue\":\"default\",\"jid\":\"$sjid\",\"retry\":true}" >/dev/null
R config set maxmemory 1 >/dev/null
must_wait 20 "grep -q 'scheduler: schedule: due jobs stay where they are until Redis takes the write: OOM' '$WORKER_LOG'" \
    "the refused scheduler write was not logged"
assert_eq "$(R zcard schedule)" 1 "the due job must stay in the schedule while Redis refuses"
R config set maxmemory 0 >/dev/null
must_wait 15 '[ "$(R llen test:ran)" = 1 ]' "the scheduled job did not run after memory was freed"
assert_eq "$(R zcard schedule)" 0 "schedule after the job ran"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status"

# 6. basic fetch, an outcome still refused at the stop's deadline: the job is held only in this
# process's memory, so the stop logs it whole at ERROR and the worker exits 4, not 0.
R set retry not-a-sorted-set >/dev/null
: >"$starts"
hh_start_worker -c 2 -t 1 --fetch basic --heartbeat-interval 1 --exec "FailJob=$HH_HANDLERS/slow_fail.sh $starts 0"
jid="$(push_fail)" || fail "push failed"
must_wait 20 "grep -q 'jid=$jid: retry entry not written, retrying until Redis takes it: WRONGTYPE' '$WORKER_LOG'" \
    "basic fetch: the WRONGTYPE refusal was not logged"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 4 "exit status when a basic-fetch job's outcome was never written"
grep "ERROR: class=FailJob jid=$jid: " "$WORKER_LOG" | grep -q "the job is lost unless re-pushed: .*\"jid\":\"$jid\"" \
    || fail "the lost job is not logged at ERROR with its payload: $(grep ERROR "$WORKER_LOG" | tail -n 3)"
grep -q "hiredhand: 1 job(s) taken from Redis by basic fetch were not pushed back" "$WORKER_LOG" \
    || fail "no closing line counting the job: $(tail -n 2 "$WORKER_LOG")"
R del retry >/dev/null
pass
