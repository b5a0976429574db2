#!/usr/bin/env bash
# jobs scheduled with Ruby's perform_in /
# perform_at (and raw schedule members: one with "at" in the past, one already carrying a float
# enqueued_at) run in `hiredhand work --poll-interval 1` after their time and not before; a job
# due in 40 s is still scheduled at the end; the moved payload keeps every key, gets one fresh
# float enqueued_at and the same created_at token.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start

n="$(hh_ruby sched_check.rb push)" || fail "scheduling with Sidekiq's client failed"
assert_eq "$(R zcard schedule)" "$n" "schedule entries written by the Ruby client"
started="$(hh_now)"
hh_start_worker -c 2 --poll-interval 1 --exec "OkWorker=$HH_HANDLERS/record.sh"
due=$((n - 1))
must_wait 30 '[ "$(R llen test:ran)" -ge '"$due"' ]' \
    "only $(R llen test:ran) of $due due scheduled jobs ran within 30 s (schedule=$(R zcard schedule) queued=$(R llen queue:default))"
sleep 1.5
assert_alive "$WORKER_PID" "worker died"
hh_ruby sched_check.rb verify "$started" || fail "scheduled-job checks failed (see above)"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "worker exit status after SIGTERM"
pass
