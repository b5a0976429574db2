#!/usr/bin/env bash
# --serve protocol edges (docs/handlers.md): a failure answer without details is
# StandardError; a second answer line gets the job its answer but the process replaced; a wrong
# hello version fails the job with ServeProtocolError; a process that dies before its hello fails
# the job and restarts are backed off (0.1 s doubling: a handful in 3 s, not hundreds); a payload
# with integers beyond 64 bits arrives with its exact text in "payload", and only those integers
# are reals in "job" (every other number stays as written: one bignum once made them all reals);
# such a job that fails keeps every digit in the retry set. A failure whose error_class is a number,
# error_message a list or a backtrace line a number keeps them as JSON text (it was StandardError
# with an empty message), with a warning; an answer over 16 MiB fails the job saying that is the
# protocol's limit.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
export SERVE_DIR; SERVE_DIR="$(hh_tmp)"
H="$HH_HANDLERS/serve_test.py"

pid_of() { grep " $1 " "$SERVE_DIR/ran" | tail -1 | cut -d' ' -f1; }

j_bare="$(hh_push_job FailBare '[1]')"
j_two="$(hh_push_job TwoLines '[1]')"
big="$(hh_push_job Ok '[123456789012345678901234567890,1]')"
mixed="$(hh_push_job Ok '[42,{"user_id":7,"amount_cents":1180591620717411303424,"s":"9223372036854775808 \"-99999999999999999999\"","f":1.5}]' '"retry":3,"retry_count":0')"
bigfail="$(hh_push_job Fail '[-123456789012345678901234567890,7]')"
j_odd="$(hh_push_job OddFail '[1]' '"backtrace":true')"
j_huge="$(hh_push_job Huge '[1]')"
# the catch-all takes Fail, OddFail and Huge: one process start for the three
j_bad="$(hh_push_job BadHello '[1]')"
hh_start_worker -c 1 --serve "FailBare=$H" --serve "*=$H" --serve "TwoLines=$H" --serve "Ok=$H" --serve "BadHello=$H" --serve "NoHello=$H"
must_wait 60 '[ "$(R llen queue:default)" = 0 ] && [ "$(R zcard retry)" = 5 ]' "retry=$(R zcard retry) queue=$(R llen queue:default)"
assert_eq "$(hh_retry_field "$j_bare" error_class)" StandardError "{\"ok\":false}: error_class"
assert_eq "$(hh_retry_field "$j_odd" error_class)" 42 "error_class a number: its JSON text"
assert_eq "$(hh_retry_field "$j_odd" error_message)" '["a",{"b":1}]' "error_message a list: its JSON text"
assert_eq "$(hh_retry_backtrace "$j_odd" | tr '\n' ' ')" "x.py:1 7 " "a backtrace line that is a number: its JSON text"
assert_contains "$(grep "jid=$j_odd: error_message is a list" "$WORKER_LOG")" "not a string: kept as its JSON text" \
    "error_message a list: a warning"
assert_eq "$(hh_retry_field "$j_huge" error_class)" hiredhand::ServeProtocolError "an answer over 16 MiB: error_class"
assert_contains "$(hh_retry_field "$j_huge" error_message)" \
    "answered a line longer than 16 MiB (16777216 bytes), the --serve protocol's limit" "an answer over 16 MiB: message"
assert_eq "$(R zrange retry 0 -1 | grep -c "$j_two")" 0 "two answer lines: the job's answer (ok) counts"
must_wait 10 'grep -q "wrote more than one answer line" "$WORKER_LOG"' "two answer lines: not logged"
p1="$(pid_of "$j_two")"
j_two2="$(hh_push_job TwoLines '[2]')"
must_wait 30 '[ -n "$(pid_of "$j_two2")" ]' "second TwoLines job did not run"
assert_ne "$(pid_of "$j_two2")" "$p1" "two answer lines: the process is replaced"
assert_eq "$(hh_retry_field "$j_bad" error_class)" hiredhand::ServeProtocolError "bad hello: error_class"
assert_contains "$(hh_retry_field "$j_bad" error_message)" "bad hello" "bad hello: error_message"
line="$(grep "$big" "$SERVE_DIR/lines")"
assert_contains "$line" '"payload":"{' "bignum payload: the exact text is on the job line"
exact="$(printf '%s' "$line" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["payload"])')"
assert_contains "$exact" '"args":[123456789012345678901234567890,1]' "bignum payload: exact text"
line="$(grep "$mixed" "$SERVE_DIR/lines")"
printf '%s' "$line" | python3 -c '
import json, sys
m = json.loads(sys.stdin.read()); j = m["job"]; a = j["args"]
want = [(a[0], 42, int), (a[1]["user_id"], 7, int), (j["retry"], 3, int), (j["retry_count"], 0, int),
        (m["retry_count"], 0, int), (a[1]["f"], 1.5, float), (a[1]["amount_cents"], 2**70, float)]
bad = [(v, w, t.__name__) for v, w, t in want if type(v) is not t or v != w]
bad += [] if a[1]["s"] == "9223372036854775808 \"-99999999999999999999\"" else [a[1]["s"]]
bad += [] if json.loads(m["payload"])["args"][1]["amount_cents"] == 2**70 else ["payload"]
sys.exit("%s" % bad if bad else 0)' || fail "a payload with one bignum: the other numbers changed on the job line: $line"
failed="$(R zrange retry 0 -1 | grep "$bigfail")"
assert_contains "$failed" '"args":[-123456789012345678901234567890,7]' "a failed bignum job keeps its digits in the retry set"
assert_eq "$(hh_retry_field "$bigfail" error_message)" "failed: -1.2345678901234568e+29" \
    "the bignum reached the handler as a real"

# a process that dies before its hello: jobs fail, starts are backed off
for i in $(seq 1 40); do hh_push_job NoHello "[$i]" >/dev/null; done
must_wait 30 '[ "$(grep -c " NoHello " "$SERVE_DIR/started")" -ge 2 ]' "NoHello processes not started"
t0=$SECONDS; n0="$(grep -c " NoHello " "$SERVE_DIR/started")"
must_wait 30 '[ $((SECONDS - t0)) -ge 3 ]' "clock"
n1="$(grep -c " NoHello " "$SERVE_DIR/started")"
assert_between "$((n1 - n0))" 0 8 "starts of a process that never says hello within 3 s (backoff)"
assert_contains "$(R zrange retry 0 -1 | grep NoHello | head -1)" "exited with status 1: no hello: missing config" \
    "no hello: error_message with the process's last words on stderr (the blank line after them is no error)"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status"
pass
