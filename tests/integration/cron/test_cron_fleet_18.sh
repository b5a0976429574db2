#!/usr/bin/env bash
# Periodic jobs beside sidekiq-cron 1.8 (Debian's, with Sidekiq 6.4): its
# 1.x layout (cron_jobs, cron_job:<name>), read by hiredhand whatever the
# namespaces polled. A job saved by 1.8, 1.8's poller and a hiredhand
# worker whose clock is 1.5 s ahead (HH_TEST_CLOCK_SKEW_MS, test-only) so
# that it wins ticks: each tick is enqueued once, and 1.8 reads back the
# last_enqueue_time and jid_history hiredhand wrote.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/cron_helpers.sh"
hh_require_binary
ruby -e 'require "sidekiq-cron"' 2>/dev/null || { echo "SKIP: Debian's ruby-sidekiq-cron is not installed"; exit 77; }
hh_redis_start

out="$(hh_ruby cron_fleet.rb define tick18 '*/2 * * * * *' cron18)" || fail "define: $out"
# sidekiq-cron's save guards the tick before it (no run right after a save):
# hiredhand, polling within that minute, must find its own guard member
# taken, byte for byte, or it would enqueue that tick once more.
out="$(hh_ruby cron_fleet.rb define minutely '* * * * *' cronmin)" || fail "define: $out"
R EXISTS cron_job:tick18 | grep -qx 1 || fail "1.8 did not save cron_job:tick18"
hh_ruby cron_fleet.rb poll >"$HH_TMP/ruby.log" 2>&1 &
hh_track_pid $!
must_wait 20 'grep -q polling "$HH_TMP/ruby.log"' "ruby poller did not start"
HH_TEST_CLOCK_SKEW_MS=1500 hh_start_worker -q default -c 1 --cron-poll-interval 0.3
must_wait 12 '[ "$(R LLEN queue:cron18)" -ge 3 ]' "three ticks enqueued"
must_wait 5 'grep -q "cron: enqueued tick18" "$WORKER_LOG"' "the hiredhand worker enqueued a tick"
n=$(cron_check_once cron_job:tick18 cron18)
out="$(hh_ruby cron_fleet.rb check tick18 cron18)" || fail "check: $out"
last=${out#last=}; last=${last%% *}
assert_between "$last" "$(($(date +%s) - 30))" "$(($(date +%s) + 5))" "last_enqueue_time read by sidekiq-cron 1.8 ($out)"
assert_contains "$out" "jids_ok=1" "jid_history entries read by 1.8 name queued jobs ($out)"
cron_check_once cron_job:minutely cronmin >/dev/null
hh_log "pushed $n ticks, each once"
pass
