#!/usr/bin/env bash
# --exec-timeout under --serve covers the whole job, the wait for a process's hello included: a
# job whose process has not said hello when the timeout comes fails then (hiredhand::ExecFailed,
# "timed out ... waiting for its hello"), not at the 30 s hello deadline; the process keeps its
# own deadline and the next job runs on it once it says hello. With --serve-pool a job waiting
# for a process that never says hello fails at its timeout too.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
export SERVE_DIR
H="$HH_HANDLERS/serve_test.py"
late="$HH_TMP/late.sh" # says hello once the gate file exists
printf '#!/bin/sh\necho "$$" >>"$SERVE_DIR/late"\nwhile [ ! -e "$SERVE_DIR/open" ]; do sleep 0.1; done\nexec %s\n' \
    "$H" >"$late"
mute="$HH_TMP/mute.sh" # never says hello
printf '#!/bin/sh\nsleep 600\n' >"$mute"
chmod +x "$late" "$mute"

# --- started for a job: the job fails at its timeout; the process is not killed
SERVE_DIR="$(hh_tmp)"
hh_start_worker -c 1 --exec-timeout 2 --serve "Late=$late"
hh_worker_wait_ready 20
t0=$SECONDS
j1="$(hh_push_job Late '[1]')"
must_wait 15 '[ "$(R zcard retry)" = 1 ]' "the job waiting for a hello did not fail at its 2 s timeout"
[ $((SECONDS - t0)) -lt 15 ] || fail "the job failed after $((SECONDS - t0)) s, not at its 2 s timeout"
assert_eq "$(hh_retry_field "$j1" error_class)" hiredhand::ExecFailed "error_class"
assert_contains "$(hh_retry_field "$j1" error_message)" "timed out after" "error_message"
assert_contains "$(hh_retry_field "$j1" error_message)" "waiting for its hello" "error_message says what it waited for"
pid="$(head -1 "$SERVE_DIR/late")"
kill -0 "$pid" 2>/dev/null || fail "the process was killed with the job: its hello deadline is its own"
touch "$SERVE_DIR/open"
# its hello follows the "started" line at once: the next job need not wait for Python's start
must_wait 30 'grep -q "^$pid " "$SERVE_DIR/started" 2>/dev/null' "the process did not go on to say hello"
j2="$(hh_push_job Late '[2]')"
must_wait 30 'grep -q "$j2" "$SERVE_DIR/ran" 2>/dev/null' "the next job did not run once the process said hello"
assert_eq "$(grep " $j2 " "$SERVE_DIR/ran" | cut -d' ' -f1)" "$pid" "the next job ran on the same process"
assert_eq "$(wc -l <"$SERVE_DIR/late")" 1 "one process started"
assert_not_contains "$(cat "$WORKER_LOG")" "said no hello" "no hello deadline passed"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status after TERM"

# --- --serve-pool: a job waiting for a process that never says hello fails at its timeout
R flushdb >/dev/null
SERVE_DIR="$(hh_tmp)"
hh_start_worker -c 1 --serve-pool 1 --exec-timeout 2 --serve "Mute=$mute"
hh_worker_wait_ready 20
t0=$SECONDS
j3="$(hh_push_job Mute '[3]')"
must_wait 15 '[ "$(R zcard retry)" = 1 ]' "the job waiting for a mute process did not fail at its 2 s timeout"
[ $((SECONDS - t0)) -lt 15 ] || fail "the job failed after $((SECONDS - t0)) s, not at its 2 s timeout"
assert_eq "$(hh_retry_field "$j3" error_class)" hiredhand::ExecFailed "pool: error_class"
assert_contains "$(hh_retry_field "$j3" error_message)" "timed out after" "pool: error_message"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status after TERM"
must_wait 10 '[ -z "$(pgrep -f "$mute")" ]' "mute processes outlived the worker"
pass
