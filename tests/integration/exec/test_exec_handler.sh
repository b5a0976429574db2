#!/usr/bin/env bash
# The --exec contract: a handler that exits 0 without reading a 1 MB payload
# from stdin succeeds (no EPIPE crash); one killed by a signal fails with an error that says so;
# one running past --exec-timeout fails within the timeout (+ a few s) and is not left running, and
# its error_message gives the timeout, not the TERM grace on top (one that ignores SIGTERM says
# so); one
# writing 1 MB to stderr fails with a bounded error_message (<= 10,000 chars, as Sidekiq truncates)
# that still carries its last stderr line and exit status; HIREDHAND_QUEUE names the queue the job
# came from. Failures land in the retry set (retry: true).
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start

push() {   # CLASS QUEUE ARGS_JSON -> jid   (payload through stdin: it may exceed ARG_MAX)
    local jid; jid="$(hh_jid)"
    printf '{"retry":true,"queue":"%s","class":"%s","args":%s,"jid":"%s","created_at":%s,"enqueued_at":%s}' \
        "$2" "$1" "$3" "$jid" "$(hh_now)" "$(hh_now)" | R -x lpush "queue:$2" >/dev/null
    R sadd queues "$2" >/dev/null
    echo "$jid"
}
big="$(head -c 1000000 /dev/zero | tr '\0' 'x')"
j_noread="$(push NoRead default "[\"$big\"]")"
j_kill="$(push SelfKill default '[1]')"
j_slow="$(push Slow default '[2]')"
j_noisy="$(push Noisy default '[3]')"
j_other="$(push Ok other '[4]')"
j_stubborn="$(push Stubborn default '[5]')"

started=$SECONDS
hh_start_worker -c 5 -q default -q other --exec-timeout 2 \
    --exec "NoRead=$HH_HANDLERS/noread.sh" --exec "SelfKill=$HH_HANDLERS/selfkill.sh" \
    --exec "Slow=$HH_HANDLERS/sleep.sh 30" --exec "Noisy=$HH_HANDLERS/noisy.sh" --exec "Ok=$HH_HANDLERS/record.sh" \
    --exec "Stubborn=$HH_HANDLERS/ignore_term.sh 30"
must_wait 30 '[ "$(R zcard retry)" -ge 4 ] && [ "$(R llen test:noread)" -ge 1 ] && [ "$(R llen test:ran)" -ge 1 ]' \
    "not done within 30 s: retry=$(R zcard retry) noread=$(R llen test:noread) ran=$(R llen test:ran) dead=$(R zcard dead)"
sleep 0.5
assert_alive "$WORKER_PID" "worker died (EPIPE on the unread 1 MB payload?)"

member() { R zrange retry 0 -1 | grep "$1"; }
assert_eq "$(R zrange retry 0 -1 | grep -c "$j_noread")" 0 "NoRead (exit 0 without reading stdin) must succeed, not be retried"
assert_eq "$(R zrange dead 0 -1 | grep -c "$j_noread")" 0 "NoRead must not be dead"

m="$(member "$j_kill")"
[ -n "$m" ] || fail "SelfKill (killed by SIGKILL) is not in the retry set"
msg="$(printf '%s' "$m" | ruby -rjson -e 'puts JSON.parse($stdin.read)["error_message"]')"
printf '%s' "$msg" | grep -Eqi 'signal|sigkill|killed' || fail "SelfKill: error_message does not say it died from a signal: [$msg]"

m="$(member "$j_slow")"
[ -n "$m" ] || fail "Slow (sleep 30, --exec-timeout 2) is not in the retry set"
msg="$(printf '%s' "$m" | ruby -rjson -e 'puts JSON.parse($stdin.read)["error_message"]')"
printf '%s' "$msg" | grep -Eqi 'time' || fail "Slow: error_message does not mention the timeout: [$msg]"
[ $((SECONDS - started)) -le 15 ] || fail "Slow: the --exec-timeout 2 failure took $((SECONDS - started)) s"
sleep 1
for p in $(cat "$HH_PIDFILE" 2>/dev/null); do
    # a zombie is dead (PID 1 here may reap late): only a live process fails
    kill -0 "$p" 2>/dev/null && [ "$(ps -o stat= -p "$p" | cut -c1)" != Z ] && fail "Slow: handler process $p ($(ps -o args= -p "$p")) still running after its --exec-timeout failure"
done

m="$(member "$j_stubborn")"
[ -n "$m" ] || fail "Stubborn (ignores SIGTERM, --exec-timeout 2) is not in the retry set"
msg="$(printf '%s' "$m" | ruby -rjson -e 'puts JSON.parse($stdin.read)["error_message"]')"
printf '%s' "$msg" | grep -Eq 'timed out after 2\.[0-9] s \(it ignored SIGTERM' ||
    fail "Stubborn: error_message should give the 2 s timeout and say SIGTERM was ignored: [$msg]"

m="$(member "$j_noisy")"
[ -n "$m" ] || fail "Noisy (1 MB of stderr, exit 5) is not in the retry set"
len="$(printf '%s' "$m" | ruby -rjson -e 'puts JSON.parse($stdin.read)["error_message"].length')"
assert_between "$len" 1 10000 "Noisy: error_message length (bounded like Sidekiq's 10,000 chars)"
msg="$(printf '%s' "$m" | ruby -rjson -e 'puts JSON.parse($stdin.read)["error_message"]')"
assert_contains "$msg" "the very last line" "Noisy: error_message carries the last stderr line"
assert_contains "$msg" "5" "Noisy: error_message carries the exit status"

meta="$(R lrange test:meta 0 -1 | grep "$j_other")"
assert_eq "$(echo "$meta" | cut -d' ' -f3)" other "HIREDHAND_QUEUE of a job from queue 'other'"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "worker exit status after SIGTERM"
pass
