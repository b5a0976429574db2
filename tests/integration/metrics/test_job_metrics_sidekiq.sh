#!/usr/bin/env bash
# Sidekiq 7.x/8.x's Metrics tab shows the jobs hiredhand runs, as it shows Sidekiq's own: one
# Redis, a Sidekiq 7.3 server (queue q73), a Sidekiq 8.1 server (q81) and a hiredhand worker
# (qhh, writing both generations' keys, the default) each run 3 jobs of 2.6 s and 1 failing
# job of a class: MxRuby on each Sidekiq, MxHiredhand on hiredhand, MxShared on all three. Then
# 7.3's and 8.1's Sidekiq::Metrics::Query (top_jobs, for_job) and Web UI (/metrics,
# /metrics/MxShared) show MxHiredhand as they show MxRuby (runs, failures, ms, histogram), and
# MxShared as the sum of its Sidekiq and hiredhand runs. With --job-metrics 8 the 7.x keys are
# left alone.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/job_metrics_helpers.sh"
hh_require_binary
hh_require_peers
hh_redis_start

hh_peer_ruby 73 job_metrics_check.rb push q73:MxRuby:3:1 q73:MxShared:3:1 q81:MxRuby:3:1 q81:MxShared:3:1 \
    qhh:MxHiredhand:3:1 qhh:MxShared:3:1 >/dev/null || fail "push failed"
hh_peer_sidekiq_start 73 job_metrics_app.rb -q q73 -c 8
hh_peer_sidekiq_start 81 job_metrics_app.rb -q q81 -c 8
# the Ruby servers' boot first: it loads both cores, and the runs are timed
must_wait 40 '[ "$(R llen queue:q73)" = 0 ] && [ "$(R llen queue:q81)" = 0 ]' "the Sidekiq servers did not start"
hh_start_worker -q qhh -c 8 --heartbeat-interval 1 \
    --exec "MxHiredhand=$HH_HANDLERS/mx_job.sh" --exec "MxShared=$HH_HANDLERS/mx_job.sh"

must_wait 40 '[ "$(jm_sum "$JM7" MxShared\|p)" = 8 ] && [ "$(jm_sum "$JM8" MxShared\|p)" = 8 ] &&
    [ "$(jm_sum "$JM7" MxRuby\|p)" = 4 ] && [ "$(jm_sum "$JM8" MxRuby\|p)" = 4 ] &&
    [ "$(jm_sum "$JM8" MxHiredhand\|p)" = 4 ]' \
    "every run in the metrics keys of both generations"

for gen in 73 81; do
    out=$(hh_peer_ruby "$gen" job_metrics_check.rb check 2>&1) || fail "Sidekiq $gen shows other metrics (status $?): $out"
done

# one layout only: the other generation's keys untouched
hh_stop_worker
assert_eq "$WORKER_RC" 0 "the worker's exit status"
before=$(jm_sum "$JM7" 'MxHiredhand|p')
hh_peer_ruby 73 job_metrics_check.rb push qhh:MxHiredhand:0:2 >/dev/null || fail "push failed"
hh_start_worker -q qhh -c 2 --job-metrics 8 --exec "MxHiredhand=$HH_HANDLERS/mx_job.sh"
must_wait 20 '[ "$(R llen queue:qhh)" = 0 ]' "the worker did not run the jobs"
hh_stop_worker # the stop writes what the last beat did not
assert_eq "$(jm_sum "$JM8" 'MxHiredhand|f')" 3 "8.x's failures after the stop's flush"
assert_eq "$(jm_sum "$JM7" 'MxHiredhand|p')" "$before" "7.x's keys with --job-metrics 8"
pass
