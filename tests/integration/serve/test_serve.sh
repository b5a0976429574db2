#!/usr/bin/env bash
# --serve CLASS=COMMAND: long-lived handler processes over the line protocol (docs/handlers.md, "Long-lived
# handlers"). One worker with a Python test handler: jobs round-trip (payload and fields on the job
# line, several jobs per process; a retry_count beyond 64 bits keeps its digits); a failure answer lands in the retry set with the handler's error
# class, message and backtrace where Sidekiq's API reads them; stderr lines are logged with jid and
# class; a crash mid-job, a garbage answer and a timeout each fail that job into the retry set (never
# lost), kill the process and the pool goes on with a new one.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
export SERVE_DIR; SERVE_DIR="$(hh_tmp)"

ran() { grep -c " $1 " "$SERVE_DIR/ran" 2>/dev/null || echo 0; }

oks=()
for i in $(seq 1 12); do oks+=("$(hh_push_job Ok "[$i,\"x\"]" '"custom":{"deep":[1,2.5,"é"]}')"); done
j_fail="$(hh_push_job Fail '["f1"]' '"backtrace":true')"
j_noisy="$(hh_push_job Noisy '[1]')"
j_bigrc="$(hh_push_job Ok '[13]' '"retry_count":100000000000000000000')"
# one handler per class: several --serve flags sharing one command
args=()
for k in Ok Fail Noisy Crash Garbage Sleep; do args+=(--serve "$k=$HH_HANDLERS/serve_test.py"); done
# the timeout counts a process's start and hello: room for a Python start on a loaded machine.
# Retries are moved by hand below: a scheduler poll would run the failed job's retry once it is
# due (15-25 s after its failure, well within this test on a loaded machine) and its retry_count
# would no longer be the first failure's.
hh_start_worker -c 2 --exec-timeout 10 --poll-interval 3600 "${args[@]}"
must_wait 60 '[ "$(R get stat:processed)" = 15 ] && [ "$(R zcard retry)" = 1 ]' \
    "round trip: processed=$(R get stat:processed) retry=$(R zcard retry)"

# round trip: every Ok job ran once, with its payload and fields on the line
for j in "${oks[@]}"; do assert_eq "$(ran "$j")" 1 "Ok job $j runs exactly once"; done
line="$(grep "${oks[0]}" "$SERVE_DIR/lines")"
for want in "\"jid\":\"${oks[0]}\"" '"class":"Ok"' '"queue":"default"' '"retry_count":null' \
            '"custom":{"deep":[1,2.5,"\u00e9"]}' '"args":[1,"x"]'; do
    assert_contains "$(printf '%s' "$line" | python3 -c 'import json,sys; print(json.dumps(json.loads(sys.stdin.read()), separators=(",",":")))')" \
        "$want" "job line carries $want"
done
printf '%s' "$line" | python3 -c 'import json,sys; m=json.loads(sys.stdin.read()); assert m["job"]["jid"]==m["jid"] and m["job"]["class"]=="Ok"' \
    || fail "job line's \"job\" is not the payload: $line"
# a retry_count beyond 64 bits goes on the line digit for digit (it was clamped to 2147483647)
assert_contains "$(grep "$j_bigrc" "$SERVE_DIR/lines")" '"retry_count":100000000000000000000,"job":' \
    "the job line's retry_count beyond 64 bits"
pids="$(grep ' Ok ' "$SERVE_DIR/ran" | cut -d' ' -f1 | sort -u | wc -l)"
assert_between "$pids" 1 2 "distinct processes for 12 Ok jobs at -c 2 (long-lived, not one per job)"

# failure answer -> retry set, as Sidekiq's API reads it
assert_eq "$(hh_retry_field "$j_fail" error_class)" "Custom::Error" "error_class of a failure answer"
assert_eq "$(hh_retry_field "$j_fail" error_message)" "failed: f1" "error_message of a failure answer"
assert_eq "$(hh_retry_field "$j_fail" retry_count)" 0 "retry_count after the first failure"
bt="$(hh_retry_backtrace "$j_fail")"
assert_eq "$(echo "$bt" | head -1)" "handler.py:10:in \`perform'" "error_backtrace line 1"
assert_eq "$(echo "$bt" | wc -l)" 2 "error_backtrace lines"

# stderr lines are logged with jid and class
must_wait 10 'grep -q "class=Noisy jid=$j_noisy .*stderr: noisy line two" "$WORKER_LOG"' "stderr line logged with class and jid"

# crash mid-job: the job fails into the retry set (not lost), the next job runs in a new process
crash_pid_before="$(grep ' Ok ' "$SERVE_DIR/ran" | tail -1 | cut -d' ' -f1)"
j_crash="$(hh_push_job Crash '[1]')"
must_wait 30 '[ -n "$(hh_retry_field "$j_crash" error_class)" ]' "crashed job not in the retry set"
assert_eq "$(hh_retry_field "$j_crash" error_class)" "hiredhand::ExecFailed" "crash: error_class"
assert_contains "$(hh_retry_field "$j_crash" error_message)" "exited with status 7" "crash: error_message has the exit status"
assert_contains "$(hh_retry_field "$j_crash" error_message)" "about to crash" "crash: error_message has its last stderr line"
crashed_pid="$(grep " $j_crash " "$SERVE_DIR/ran" | cut -d' ' -f1)"
must_wait 10 '! kill -0 '"$crashed_pid"' 2>/dev/null || [ "$(ps -o stat= -p '"$crashed_pid"' | cut -c1)" = Z ]' "crashed process still there"
j_after="$(hh_push_job Ok '["after crash"]')"
must_wait 30 '[ "$(ran "$j_after")" = 1 ]' "pool did not recover after a crash"
# the retry itself runs (Web UI's "retry now": the member moved back to its queue)
m="$(R zrange retry 0 -1 | grep "$j_crash")"
R zrem retry "$m" >/dev/null && R lpush queue:default "$m" >/dev/null
must_wait 30 '[ "$(ran "$j_crash")" = 2 ]' "crashed job's retry did not run"
must_wait 10 'grep " $j_crash " "$SERVE_DIR/ran" | tail -1 | grep -q " 0$"' "retry ran with retry_count 0"
[ "$(R zrange retry 0 -1 | grep -c "$j_crash")" = 0 ] || fail "crashed job's retry succeeded but is still in the retry set"

# garbage answer: fails the job, kills the process
j_garbage="$(hh_push_job Garbage '[1]')"
must_wait 30 '[ -n "$(hh_retry_field "$j_garbage" error_class)" ]' "garbage-answer job not in the retry set"
assert_eq "$(hh_retry_field "$j_garbage" error_class)" "hiredhand::ServeProtocolError" "garbage: error_class"
assert_contains "$(hh_retry_field "$j_garbage" error_message)" "this is not json" "garbage: error_message quotes it"
gpid="$(grep " $j_garbage " "$SERVE_DIR/ran" | cut -d' ' -f1)"
must_wait 10 '! kill -0 '"$gpid"' 2>/dev/null || [ "$(ps -o stat= -p '"$gpid"' | cut -c1)" = Z ]' "garbage process not killed"

# timeout: --exec-timeout 10 against a 60 s job
t0=$SECONDS
j_slow="$(hh_push_job Sleep '[60]')"
must_wait 40 '[ -n "$(hh_retry_field "$j_slow" error_class)" ]' "timed-out job not in the retry set"
assert_contains "$(hh_retry_field "$j_slow" error_message)" "timed out" "timeout: error_message"
[ $((SECONDS - t0)) -le 30 ] || fail "timeout took $((SECONDS - t0)) s for --exec-timeout 10"
spid="$(grep " $j_slow " "$SERVE_DIR/ran" | cut -d' ' -f1)"
must_wait 10 '! kill -0 '"$spid"' 2>/dev/null || [ "$(ps -o stat= -p '"$spid"' | cut -c1)" = Z ]' "timed-out process not killed"
j_last="$(hh_push_job Ok '["last"]')"
must_wait 30 '[ "$(ran "$j_last")" = 1 ]' "pool did not recover after a timeout"
grep -c 'said no hello\|bad hello' "$WORKER_LOG" >/dev/null && fail "a replacement process failed its hello"

assert_eq "$(R llen queue:default)" 0 "queue empty"
assert_eq "$(R zcard dead)" 0 "nothing dead"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "worker exit status after TERM"
for p in $(cut -d' ' -f1 "$SERVE_DIR/started"); do
    kill -0 "$p" 2>/dev/null && [ "$(ps -o stat= -p "$p" | cut -c1)" != Z ] && fail "handler process $p outlived the worker"
done
pass
