#!/usr/bin/env bash
# A worker writes Sidekiq 7.x/8.x's Metrics tab data for the jobs it runs (how the Ruby side
# reads it: test_job_metrics_sidekiq): per class ("wrapped" for Active Job), at each heartbeat,
# both generations' keys by default: runs, failures, the ms and histogram of successful runs
# (NoopJob: every run under 20 ms, bucket 0), a failing class untimed, a class without a handler
# not counted (Sidekiq's NameError comes before its metrics), Active Job's wrapper counted under
# the wrapped class even when that has no handler; TTLs 8 h and 3 days. With --job-metrics 7 and
# a heartbeat too slow to come, the stop writes the runs, in 7.x's keys only.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/job_metrics_helpers.sh"
hh_require_binary
hh_require_plugin
hh_redis_start

# one LPUSH, as Sidekiq's client writes them (fewer processes: the test runs on busy machines)
job() { printf '{"retry":%s,"queue":"default","class":"%s","args":%s,"jid":"jm%s"%s}' "$2" "$1" "${4:-[]}" "$3" "${5:-}"; }
R lpush queue:default "$(job NoopJob true 1)" "$(job NoopJob true 2)" "$(job NoopJob true 3)" \
    "$(job FailingJob false 4)" "$(job FailingJob false 5)" "$(job NoSuchJob false 6)" \
    "$(job Sidekiq::ActiveJob::Wrapper true 7 '[{}]' ',"wrapped":"NoopJob"')" \
    "$(job Sidekiq::ActiveJob::Wrapper false 8 '[{}]' ',"wrapped":"MissingJob"')" >/dev/null
hh_start_worker --require "$PLUGIN" -c 2 --heartbeat-interval 1

must_wait 20 '[ "$(jm_sum "$JM7" "NoopJob|p")" = 4 ] && [ "$(jm_sum "$JM8" "MissingJob|p")" = 1 ] &&
    [ "$(jm_sum "$JM8_ROLLUP" "FailingJob|p")" = 2 ]' "the runs in both generations' metrics keys"
for pat in "$JM7" "$JM8" "$JM8_ROLLUP"; do
    # NoopJob's ms vary; no FailingJob|ms (failures are untimed), no NoSuchJob, no wrapper class
    assert_eq "$(jm_fields "$pat" | sed 's/|ms=.*/|ms/' | tr '\n' ' ')" \
        "FailingJob|f=2 FailingJob|p=2 MissingJob|f=1 MissingJob|p=1 NoopJob|ms NoopJob|p=4 " "fields of $pat"
    k=$(R --scan --pattern "$pat" | head -1)
    ttl=$(R ttl "$k")
    if [ "$pat" = "$JM8_ROLLUP" ]; then assert_between "$ttl" 259100 259200 "TTL of $k"
    else assert_between "$ttl" 28700 28800 "TTL of $k"; fi
done
assert_eq "$(jm_hist 'NoopJob-*' 0)/$(jm_hist 'h|NoopJob-*' 0)" "4/4" "NoopJob's histogram bucket 0, 7.x/8.x"
assert_between "$(R ttl "$(R --scan --pattern 'h|NoopJob-*' | head -1)")" 28700 28800 "TTL of 8.x's histogram"
assert_eq "$(R --scan --pattern '*FailingJob-*' | wc -l)" 0 "no histogram of a class that only failed"

# --job-metrics 7, no beat before the stop: the stop writes them, 7.x's layout only
hh_stop_worker
n8=$(jm_sum "$JM8" 'NoopJob|p')
R lpush queue:default "$(job NoopJob true 9)" "$(job NoopJob true 10)" >/dev/null
hh_start_worker --require "$PLUGIN" -c 2 --heartbeat-interval 30 --job-metrics 7
must_wait 20 '[ "$(grep -c "class=NoopJob.* INFO: done" "$WORKER_LOG")" = 2 ]' "the two jobs did not run"
hh_stop_worker
assert_eq "$WORKER_RC" 0 "the worker's exit status"
assert_eq "$(jm_sum "$JM7" 'NoopJob|p')" 6 "7.x's runs after the stop"
assert_eq "$(jm_sum "$JM8" 'NoopJob|p')" "$n8" "8.x's runs with --job-metrics 7"
pass
