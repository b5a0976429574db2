#!/usr/bin/env bash
# --serve-pool starts its processes in the background: a handler that never says hello delays
# neither the worker's start nor another class's jobs; past --serve-hello-timeout it is killed
# and started again with backoff, and a job of its class fails as a start that gets no hello
# always did (hiredhand::ServeFailed, to the retry set); a TERM while a process is still mute is
# logged and stops the worker cleanly (exit 0, grace honoured), its processes gone. A program
# that keeps failing makes the worker unready (/readyz 503 naming the class) until a process of it
# says hello.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
command -v jq >/dev/null || fail "jq is not installed (apt-get install jq)"
hh_redis_start
export SERVE_DIR
H="$HH_HANDLERS/serve_test.py"
mute="$HH_TMP/mute.sh" # never writes its hello line
printf '#!/bin/sh\nsleep 600\n' >"$mute"
chmod +x "$mute"
mutes() { pgrep -f "$mute" | sort -u; }

# --- a mute class and a working one, default hello timeout (30 s): the worker starts and the
# working class runs its job well before the mute process's hello deadline
SERVE_DIR="$(hh_tmp)"
jid_ok="$(hh_push_job Ok '[1]')"
t0=$SECONDS
hh_start_worker -c 2 --serve-pool 1 --serve "Mute=$mute" --serve "Ok=$H"
hh_worker_wait_ready 20
must_wait 20 '[ "$(R get stat:processed)" = 1 ]' \
    "the Ok job did not run within 20 s of start while a Mute process was silent (processed=$(R get stat:processed))"
grep -q "$jid_ok" "$SERVE_DIR/ran" || fail "the Ok handler did not see the job"
[ $((SECONDS - t0)) -lt 30 ] || fail "the Ok job waited for the mute process's 30 s hello deadline"
[ -n "$(mutes)" ] || fail "the Mute process was not started"
# TERM while the mute process still has not said hello: logged, clean exit, no process left
kill -TERM "$WORKER_PID"
must_wait 30 '! kill -0 '"$WORKER_PID"' 2>/dev/null' "the worker did not stop within 30 s of TERM"
hh_stop_worker TERM 5
assert_eq "$WORKER_RC" 0 "exit status of a TERM while a --serve process is starting"
assert_contains "$(cat "$WORKER_LOG")" "stopping" "the stop is logged"
assert_contains "$(cat "$WORKER_LOG")" "stopped:" "the end of the stop is logged"
must_wait 10 '[ -z "$(mutes)" ]' "mute processes outlived the worker: $(mutes)"

# --- a short hello deadline: the mute process is killed and replaced with backoff; its class's
# job fails through the retry path; the other class keeps working meanwhile
R flushdb >/dev/null
SERVE_DIR="$(hh_tmp)"
hh_start_worker -c 2 --serve-pool 1 --serve-hello-timeout 2 --serve "Mute=$mute" --serve "Ok=$H"
hh_worker_wait_ready 20
must_wait 30 '[ "$(grep -c "said no hello within 2 s; killed" "$WORKER_LOG")" -ge 2 ]' \
    "two mute processes were not killed at their 2 s hello deadline within 30 s"
killed="$(grep "said no hello within 2 s; killed" "$WORKER_LOG" | grep -o 'pid=[0-9]*' | sort -u | wc -l)"
[ "$killed" -ge 2 ] || fail "the mute process was not replaced by a new one (pids killed: $killed)"
jid_mute="$(hh_push_job Mute '[2]')"
jid_ok="$(hh_push_job Ok '[3]')"
must_wait 30 'grep -q "$jid_ok" "$SERVE_DIR/ran" 2>/dev/null' "the Ok job did not run while Mute processes were failing"
must_wait 30 '[ "$(R zcard retry)" = 1 ]' "the Mute job did not fail into the retry set within 30 s"
entry="$(R zrange retry 0 -1)"
assert_eq "$(jq -r .jid <<<"$entry")" "$jid_mute" "the retried job is the Mute one"
assert_eq "$(jq -r .error_class <<<"$entry")" "hiredhand::ServeFailed" "its error class"
assert_contains "$(jq -r .error_message <<<"$entry")" "no hello" "its error says why"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status after TERM"
must_wait 10 '[ -z "$(mutes)" ]' "mute processes outlived the worker: $(mutes)"

# --- a program that cannot start (it exits at once, no hello) makes the worker unready: /readyz
# answers 503 naming the class after three abnormal ends in a row, /stats shows it, and the
# worker is ready again once a process of that class says hello
R flushdb >/dev/null
SERVE_DIR="$(hh_tmp)"
flag="$HH_TMP/flaky.ok" flaky="$HH_TMP/flaky.sh"
printf '#!/bin/sh\n[ -f "%s" ] && exec "%s"\necho "cannot reach my database" >&2\nexit 1\n' "$flag" "$H" >"$flaky"
chmod +x "$flaky"
port="$(hh_pick_free_port)"
hh_start_worker -c 2 --serve-pool 1 --serve "Flaky=$flaky" --serve "Ok=$H" --http "$port"
must_wait 30 '[ "$(hh_http_code "http://127.0.0.1:$port/readyz")" = 503 ]' \
    "/readyz did not answer 503 while every Flaky process failed: $(hh_http_body "http://127.0.0.1:$port/readyz")"
assert_contains "$(hh_http_body "http://127.0.0.1:$port/readyz")" "--serve Flaky: $flaky ended abnormally" "/readyz's reason"
assert_contains "$(hh_http_body "http://127.0.0.1:$port/stats" | jq -r .unready)" "--serve Flaky" "/stats unready"
grep -q "ERROR: --serve Flaky: not ready (/readyz)" "$WORKER_LOG" || fail "no ERROR line saying the worker is not ready"
jid_ok="$(hh_push_job Ok '[4]')"
must_wait 30 'grep -q "$jid_ok" "$SERVE_DIR/ran" 2>/dev/null' "the Ok job did not run while the worker was unready"
touch "$flag"
must_wait 30 '[ "$(hh_http_code "http://127.0.0.1:$port/readyz")" = 200 ]' \
    "/readyz did not answer 200 once a Flaky process said hello: $(hh_http_body "http://127.0.0.1:$port/readyz")"
assert_eq "$(hh_http_body "http://127.0.0.1:$port/stats" | jq -r .unready)" null "/stats unready once ready"
grep -q "INFO: --serve Flaky: ready again" "$WORKER_LOG" || fail "no INFO line saying the worker is ready again"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status after TERM (unready section)"
pass
