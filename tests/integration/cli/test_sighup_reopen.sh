#!/usr/bin/env bash
# SIGHUP reopens the -l log file (for logrotate) and the worker keeps running jobs; without -l,
# SIGHUP is ignored with an INFO line. Today's fault: SIGHUP killed the worker.
# With -l: start, run a job, rename the file (as logrotate does), send HUP: a new file appears at the
# old path, the lines after the HUP (the reopen line, the next job's lines, the stop) go there and
# not to the renamed file, and the worker still runs jobs and stops with status 0. A reopen that
# fails (the log's folder removed) is said on stderr too.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start

push_ok() {   # -> the jid
    local jid now
    jid="$(hh_jid)"; now="$(hh_now)"
    R lpush queue:default "$(printf '{"retry":true,"queue":"default","class":"OkJob","args":[],"jid":"%s","created_at":%s,"enqueued_at":%s}' "$jid" "$now" "$now")" >/dev/null
    echo "$jid"
}

# ---- with -l
LOGF="$HH_TMP/worker.log"
hh_start_worker -v -c 2 -t 3 -l "$LOGF" --exec "OkJob=$HH_HANDLERS/record.sh"
j1="$(push_ok)"
must_wait 15 'grep -q "jid=$j1: done" "$LOGF"' "first job not run (log: $(tail -n 3 "$LOGF" 2>/dev/null))"
mv "$LOGF" "$LOGF.1" || fail "mv"
kill -HUP "$WORKER_PID"
must_wait 5 '[ -f "$LOGF" ] && grep -q "log file $LOGF reopened" "$LOGF"' \
    "no new log file with the reopen line at $LOGF after SIGHUP (worker alive: $(kill -0 "$WORKER_PID" 2>/dev/null && echo yes || echo no); old file: $(tail -n 3 "$LOGF.1"))"
assert_alive "$WORKER_PID" "worker died on SIGHUP"
j2="$(push_ok)"
must_wait 15 'grep -q "jid=$j2: done" "$LOGF"' "job pushed after the HUP not logged as done in the new file"
assert_eq "$(R lrange test:ran 0 -1 | grep -c "$j2")" 1 "job pushed after the HUP ran"
assert_not_contains "$(cat "$LOGF.1")" "$j2" "the renamed (old) file got lines after the HUP"
assert_not_contains "$(cat "$LOGF.1")" "reopened" "the renamed (old) file got the reopen line"
# a second rotation works too
mv "$LOGF" "$LOGF.2" || fail "mv 2"
kill -HUP "$WORKER_PID"
must_wait 5 '[ -f "$LOGF" ] && grep -q "reopened" "$LOGF"' "second SIGHUP: no new log file"
hh_stop_worker TERM 15
assert_eq "$WORKER_RC" 0 "exit status after TERM"
grep -q "INFO: stopped:" "$LOGF" || fail "the stop's lines are not in the new file: $(tail -n 3 "$LOGF")"
assert_not_contains "$(cat "$LOGF.1" "$LOGF.2")" "stopped:" "old files got the stop's lines"

# ---- the log's folder gone: a reopen that fails says so on stderr too, where it is seen
LOGD="$HH_TMP/logs"; mkdir -p "$LOGD"
hh_start_worker -v -c 2 -t 3 -l "$LOGD/worker.log" --exec "OkJob=$HH_HANDLERS/record.sh"
must_wait 15 'grep -q "starting" "$LOGD/worker.log"' "no log file in $LOGD"
rm -rf "$LOGD"
kill -HUP "$WORKER_PID"
must_wait 5 'grep -q "cannot reopen log file $LOGD/worker.log" "$WORKER_LOG"' \
    "a failed reopen was not said on stderr: $(tail -n 3 "$WORKER_LOG")"
assert_alive "$WORKER_PID" "worker died on a failed reopen"
hh_stop_worker TERM 15
assert_eq "$WORKER_RC" 0 "exit status after TERM (failed reopen)"

# ---- without -l: ignored, logged at INFO, the worker keeps running jobs
hh_start_worker -v -c 2 -t 3 --exec "OkJob=$HH_HANDLERS/record.sh"
j3="$(push_ok)"
must_wait 15 'grep -q "jid=$j3: done" "$WORKER_LOG"' "job not run (no -l)"
kill -HUP "$WORKER_PID"
must_wait 5 'grep -q "INFO: SIGHUP ignored" "$WORKER_LOG"' "no 'SIGHUP ignored' INFO line without -l"
assert_alive "$WORKER_PID" "worker without -l died on SIGHUP"
j4="$(push_ok)"
must_wait 15 'grep -q "jid=$j4: done" "$WORKER_LOG"' "job pushed after the HUP (no -l) not run"
hh_stop_worker TERM 15
assert_eq "$WORKER_RC" 0 "exit status after TERM (no -l)"
pass "SIGHUP reopens the -l file at its path; ignored (INFO) without -l; jobs keep running"
