#!/usr/bin/env bash
# Jobs of Sidekiq Pro batches (a "bid" in the payload), whose batch books hiredhand cannot keep:
#   --batch-jobs run (default): they run; one WARN line per batch, however many of its jobs;
#                  counted in /stats (batch_jobs) and /metrics (hiredhand_batch_jobs_total);
#                  a job without a bid is not counted
#   --batch-jobs skip: not run; the payload, byte for byte, goes into the schedule set about 5 s
#                  ahead (back to its queue then, for a Ruby process), its in-progress entry gone
# The decision and the once-per-batch rule are pinned by tests/unit/test_batch.c.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
command -v curl >/dev/null || fail "curl is not installed (apt-get install curl)"
hh_redis_start

hh_push_job BatchJob '[1]' '"bid":"b-one"' >/dev/null
hh_push_job BatchJob '[2]' '"bid":"b-one"' >/dev/null
hh_push_job BatchJob '[3]' '"bid":"b-two"' >/dev/null
hh_push_job PlainJob '[4]' >/dev/null
port="$(hh_pick_free_port)"
hh_start_worker -c 2 --http "$port" --exec "BatchJob=$HH_HANDLERS/record.sh" --exec "PlainJob=$HH_HANDLERS/record.sh"
must_wait 15 '[ "$(R llen test:ran)" = 4 ]' "the four jobs did not all run (ran: $(R llen test:ran))"
assert_eq "$(grep -c 'Sidekiq Pro batch b-one' "$WORKER_LOG")" 1 "WARN lines for batch b-one (two jobs)"
assert_eq "$(grep -c 'Sidekiq Pro batch b-two' "$WORKER_LOG")" 1 "WARN lines for batch b-two"
assert_contains "$(hh_http_body "http://127.0.0.1:$port/stats")" '"batch_jobs":3' "/stats batch_jobs"
assert_contains "$(hh_http_body "http://127.0.0.1:$port/metrics")" 'hiredhand_batch_jobs_total 3' "/metrics"
hh_stop_worker TERM 20

R del test:ran >/dev/null
jid="$(hh_push_job BatchJob '[5]' '"bid":"b-three"')"
payload="$(R lindex queue:default 0)"
t0="$(hh_now)"
hh_start_worker -c 1 --batch-jobs skip --exec "BatchJob=$HH_HANDLERS/record.sh"
must_wait 10 '[ "$(R zcard schedule)" = 1 ]' "the skipped batch job did not reach the schedule set"
assert_eq "$(R llen test:ran)" 0 "batch jobs run with --batch-jobs skip"
assert_eq "$(R zrange schedule 0 0)" "$payload" "the schedule member (the payload unchanged)"
assert_between "$(R zscore schedule "$payload")" "$(echo "$t0 + 4" | bc)" "$(echo "$t0 + 15" | bc)" "its score (about 5 s ahead)"
assert_eq "$(R eval "local n = 0 for _, k in ipairs(redis.call('keys', 'hiredhand:inprogress:*')) do n = n + redis.call('llen', k) end return n" 0)" 0 "in-progress entries left"
grep -q "Sidekiq Pro batch b-three.*--batch-jobs skip" "$WORKER_LOG" || fail "no WARN line for the skipped batch ($jid)"
pass
