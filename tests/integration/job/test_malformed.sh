#!/usr/bin/env bash
# malformed queue entries (not JSON, truncated JSON, invalid UTF-8, a
# JSON array / string / null, an empty string, objects without class, with "class":"" or a
# non-string class) end in the dead set with a reason (raw bytes kept for non-objects; original
# keys + error_class/error_message for objects); the good job pushed after them runs; the worker
# keeps running and handles a second malformed entry + good job pushed while it is live.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start

good1="$(hh_ruby malformed_check.rb push 1)" || fail "push batch 1 failed"
hh_start_worker -c 2 --exec "OkJob=$HH_HANDLERS/record.sh"
must_wait 30 'R lrange test:ran 0 -1 | grep -q '"$good1" \
    "the good job behind the malformed entries did not run within 30 s (queue=$(R llen queue:default) dead=$(R zcard dead) retry=$(R zcard retry))"
sleep 0.5
assert_alive "$WORKER_PID" "worker died after the malformed entries"

good2="$(hh_ruby malformed_check.rb push 2)" || fail "push batch 2 failed"
must_wait 30 'R lrange test:ran 0 -1 | grep -q '"$good2" \
    "the second good job did not run within 30 s (queue=$(R llen queue:default) dead=$(R zcard dead))"
sleep 1
assert_alive "$WORKER_PID" "worker died after the second malformed entry"
hh_ruby malformed_check.rb verify || fail "dead-set checks failed (see above)"
[ -s "$WORKER_LOG" ] || fail "the worker logged nothing about the malformed entries"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "worker exit status after SIGTERM"

# the wrappers that keep a bad payload's exact text (class hiredhand::InvalidJob) stay in the
# dead set when retried, alone or with --all: pushed, a worker would drop them (retry false)
wraps() { R zrange dead 0 -1 | grep -c '"class":"hiredhand::InvalidJob"'; }
nwrap=$(wraps)
[ "$nwrap" -gt 0 ] || fail "no hiredhand::InvalidJob wrapper in the dead set: $(R zrange dead 0 -1)"
wjid=$(R zrange dead 0 -1 | grep '"class":"hiredhand::InvalidJob"' | head -1 | grep -o '"jid":"[^"]*"' | cut -d'"' -f4)
hh_cli dead retry "$wjid" -r "$REDIS_URL"
assert_ne "$HH_RC" 0 "dead retry of a wrapper fails (stdout: $HH_OUT)"
assert_contains "$HH_ERR" "pushing it would lose it" "dead retry of a wrapper says why"
hh_cli dead retry --all --yes -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "dead retry --all (stderr: $HH_ERR)"
assert_contains "$HH_OUT" "left in place" "dead retry --all says what it left"
assert_eq "$(wraps)" "$nwrap" "every wrapper is still in the dead set"
R lrange queue:default 0 -1 | grep -q 'hiredhand::InvalidJob' && fail "a wrapper was pushed to a queue: $(R lrange queue:default 0 -1)"
pass
