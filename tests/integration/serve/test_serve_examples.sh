#!/usr/bin/env bash
# The reference --serve handlers in examples/serve (Python, Node, Ruby, C) each speak the protocol:
# an OkJob succeeds, a FailJob lands in the retry set with the language's error class, message and
# backtrace, a CrashJob (the process exits mid-job) fails into the retry set and the next job runs.
# Each runs as the catch-all ('*'), so the class comes from the job line.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
EX="$HH_ROOT/examples/serve"
C_HANDLER="$(dirname "$HIREDHAND")/example_serve_handler"
[ -x "$C_HANDLER" ] || fail "$C_HANDLER not built (target example_serve_handler)"

push() { hh_push_job "$1" "$2" '"backtrace":true'; }   # CLASS ARGS_JSON -> jid
backtrace_lines() {
    R zrange retry 0 -1 | grep "$1" | ruby -rjson -rzlib -rbase64 -e \
        'puts JSON.parse(Zlib::Inflate.inflate(Base64.decode64(JSON.parse($stdin.read)["error_backtrace"]))).size'
}

for spec in "python:$EX/handler.py:ValueError" "node:$EX/handler.js:TypeError" \
            "ruby:$EX/handler.rb:ArgumentError" "c:$C_HANDLER:RuntimeError"; do
    IFS=: read -r lang cmd want <<<"$spec"
    R flushdb >/dev/null
    j_ok="$(push OkJob '[1]')"
    j_fail="$(push FailJob '["x"]')"
    hh_start_worker -c 1 --serve "*=$cmd"
    must_wait 60 '[ "$(R get stat:processed)" = 2 ]' "$lang: processed=$(R get stat:processed)"
    j_crash="$(push CrashJob '[1]')"
    must_wait 60 '[ "$(R zcard retry)" = 2 ]' "$lang: crash not in the retry set (retry=$(R zcard retry))"
    j_next="$(push OkJob '[2]')"
    must_wait 60 '[ "$(R get stat:processed)" = 4 ] && [ "$(R llen queue:default)" = 0 ]' "$lang: no job after the crash"
    assert_eq "$(R get stat:failed)" 2 "$lang: failures"
    assert_eq "$(hh_retry_field "$j_fail" error_class)" "$want" "$lang: error class"
    assert_contains "$(hh_retry_field "$j_fail" error_message)" "failed on purpose" "$lang: error message"
    assert_between "$(backtrace_lines "$j_fail")" 1 1000 "$lang: backtrace lines"
    assert_eq "$(hh_retry_field "$j_crash" error_class)" "hiredhand::ExecFailed" "$lang: a crash's error class"
    assert_contains "$(hh_retry_field "$j_crash" error_message)" "exited with status 3" "$lang: a crash's error message"
    [ -z "$(hh_retry_field "$j_ok" error_class)$(hh_retry_field "$j_next" error_class)" ] || fail "$lang: an OkJob failed"
    hh_stop_worker TERM 30
    assert_eq "$WORKER_RC" 0 "$lang: exit status"
done
pass
