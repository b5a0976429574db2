#!/usr/bin/env bash
# jobs pushed with Sidekiq's Ruby client (Sidekiq::Client.push and
# push_bulk; args with unicode, emoji, escapes, NUL, nested objects, null, floats, int64 limits,
# bignums, a 200 KB string, unknown payload keys) run exactly once each in
# `hiredhand work --exec OkWorker=record.sh`; the handler's stdin is byte-identical to the stored
# payload (so args are identical); HIREDHAND_* env vars are right; Sidekiq::Stats#processed counts
# them after a heartbeat (default interval) and #failed stays 0.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start

n="$(hh_ruby ruby_push.rb push)" || fail "pushing with Sidekiq::Client failed: $n"
stored="$(hh_ruby ruby_push.rb snapshot)" || fail "snapshot failed"
assert_eq "$stored" "$n" "queue:default holds every pushed job before the worker starts"
hh_log "pushed $n jobs with Sidekiq::Client"

hh_start_worker -c 4 --exec "OkWorker=$HH_HANDLERS/record.sh"
# every job decided: ran, or (wrongly) in the retry or dead set
wait_until 60 '[ $(( $(R llen test:ran) + $(R zcard retry) + $(R zcard dead) )) -ge '"$n"' ]' \
    || fail "after 60 s only $(R llen test:ran) of $n jobs ran; queue:default=$(R llen queue:default) retry=$(R zcard retry) dead=$(R zcard dead)"
sleep 1   # a duplicate execution would show up now
assert_alive "$WORKER_PID" "worker died while running the jobs"
# stats are flushed at each heartbeat (default every 5 s)
wait_until 20 '[ "$(R get stat:processed)" = "'"$n"'" ]'
if ! hh_ruby ruby_push.rb verify; then
    fail "payload / Sidekiq::Stats checks failed (see above); retry=$(R zcard retry) dead=$(R zcard dead); dead entries: $(R zrange dead 0 -1 | cut -c1-200)"
fi

hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "worker exit status after SIGTERM"
pass
