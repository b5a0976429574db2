#!/usr/bin/env bash
# Periodic jobs beside sidekiq-cron 1.8 (Debian's, with Sidekiq 6.4): its
# 1.x layout (cron_jobs, cron_job:<name>), read by hiredhand whatever the
# namespaces polled. A job saved by 1.8, 1.8's poller and a hiredhand
# worker whose clock is 1.5 s ahead (HH_TEST_CLOCK_SKEW_MS, test-only) so
# that it wins ticks: each tick is enqueued once, and 1.8 reads back the
# last_enqueue_time and jid_history hiredhand wrote. `hiredhand cron add`
# there saves 1.x's layout, updating a 1.8 job of the same name.
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
hh_stop_worker

# `hiredhand cron add` on a 1.x fleet's Redis writes the 1.x layout (1.8
# reads nothing else), and re-adding a job 1.8 defined updates it rather
# than saving a second job of that name (both would run each tick)
hh_cli cron add hhadded --cron '0 3 * * *' --class AddedJob -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "cron add: $HH_ERR"
hh_cli cron add minutely --cron '* * * * *' --class MinutelyAgain --queue cronmin -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "cron add over 1.8's job: $HH_ERR"
assert_eq "$(R EXISTS cron_jobs:default cron_job:default:hhadded cron_job:default:minutely)" 0 "no 2.x keys beside 1.x"
names="$(REDIS_URL="$REDIS_URL" ruby -e 'require "sidekiq"; require "sidekiq-cron"
  puts Sidekiq::Cron::Job.all.map { |j| "#{j.name}=#{j.klass}" }.sort.join(",")')"
assert_contains "$names" "hhadded=AddedJob" "sidekiq-cron 1.8 lists the job hiredhand added ($names)"
assert_contains "$names" "minutely=MinutelyAgain" "and reads the updated job ($names)"
assert_eq "$(echo "$names" | tr , '\n' | grep -c '^minutely=')" 1 "one job of that name"
# a 1.8 fleet whose Redis holds no job yet: the rule saves 2.x's layout, which 1.8 never
# reads; --layout 1 saves the one it does
R flushall >/dev/null
hh_cli cron add fresh --cron '0 4 * * *' --class FreshJob --layout 1 -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "cron add --layout 1 on an empty Redis: $HH_ERR"
names="$(REDIS_URL="$REDIS_URL" ruby -e 'require "sidekiq"; require "sidekiq-cron"
  puts Sidekiq::Cron::Job.all.map { |j| "#{j.name}=#{j.klass}" }.sort.join(",")')"
assert_eq "$names" "fresh=FreshJob" "sidekiq-cron 1.8 lists the job saved with --layout 1 on an empty Redis"
hh_cli cron add fresh --cron '0 4 * * *' --class FreshJob --layout 2 -r "$REDIS_URL"
assert_eq "$HH_RC" 2 "--layout 2 beside a 1.x job of that name is refused (both would run): $HH_ERR"
hh_log "pushed $n ticks, each once"
pass
