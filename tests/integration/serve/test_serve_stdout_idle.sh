#!/usr/bin/env bash
# --serve: what a process writes to stdout between jobs (out of protocol) is read while it is
# idle, so a handler that writes more than a pipe holds after its answer is not blocked until its
# next job (or forever); the lines are logged with jid=-, and the process is replaced before its
# next job, which gets its answer from the new one. --exec-log-max bounds the lines logged.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
export SERVE_DIR; SERVE_DIR="$(hh_tmp)"
H="$HH_HANDLERS/serve_test.py"

j_chatty="$(hh_push_job Chatty '[1]')"
hh_start_worker -c 1 --serve "*=$H"
# the job done, its process idle: then it writes
must_wait 15 '[ "$(R get stat:processed)" = 1 ]' "the Chatty job did not finish"
touch "$SERVE_DIR/chatty.go"
must_wait 15 '[ -s "$SERVE_DIR/chatty" ]' "the handler is still blocked writing 128 KiB to stdout after its answer"
must_wait 10 'grep -q "jid=- .*stdout: chatty line 00000" "$WORKER_LOG"' "its stdout lines between jobs are logged"
chatty_pid="$(cat "$SERVE_DIR/chatty")"
assert_eq "$(R zcard retry)" 0 "the Chatty job succeeded (its answer came first)"
j_ok="$(hh_push_job Ok '[2]')"
must_wait 15 'grep -q " $j_ok " "$SERVE_DIR/ran" && [ "$(R llen queue:default)" = 0 ] && [ "$(R get stat:processed)" = 2 ]' \
    "the next job did not run: processed=$(R get stat:processed)"
assert_eq "$(R zcard retry)" 0 "the next job succeeded"
ok_pid="$(grep " $j_ok " "$SERVE_DIR/ran" | cut -d' ' -f1)"
assert_ne "$ok_pid" "$chatty_pid" "the process that wrote between jobs is replaced before the next job"
log="$(cat "$WORKER_LOG")"
assert_contains "$log" "pid=$chatty_pid wrote to stdout between jobs; replacing it" "the replacement says why"
assert_contains "$log" "class=* jid=- pid=$chatty_pid: 73728 more bytes of output not logged" "what --exec-log-max (64 KiB) left out is counted"
: "$j_chatty"
pass
