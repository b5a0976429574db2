#!/usr/bin/env bash
# Periodic jobs in a mixed fleet: sidekiq-cron 2.x (Sidekiq 7.3) defines an
# every-2-seconds job and runs its poller beside two hiredhand workers, one
# of them with its clock 1.5 s ahead (HH_TEST_CLOCK_SKEW_MS, a test-only
# setting), so hiredhand wins ticks. Then a worker is killed with -9
# while polling and Redis (append-only file) restarts between ticks. Each
# tick is enqueued exactly once (the ZADD guard's member bytes are Ruby's),
# and sidekiq-cron reads back last_enqueue_time and jid_history.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/cron_helpers.sh"
hh_require_binary
hh_require_peers
hh_redis_start --appendonly yes --appendfsync always
HK="cron_job:default:tick"

out="$(hh_peer_ruby 73-gems cron_fleet.rb define tick '*/2 * * * * *' crontick)" || fail "define: $out"
# sidekiq-cron's save guards the tick before it (no run right after a save):
# hiredhand, polling within that minute, must find its own guard member
# taken, byte for byte, or it would enqueue that tick once more.
out="$(hh_peer_ruby 73-gems cron_fleet.rb define minutely '* * * * *' cronmin)" || fail "define: $out"
hh_peer_ruby 73-gems cron_fleet.rb poll >"$HH_TMP/ruby.log" 2>&1 &
hh_track_pid $!
must_wait 20 'grep -q polling "$HH_TMP/ruby.log"' "ruby poller did not start"

hh_start_worker -q default -c 1 --cron-poll-interval 0.3
A=$WORKER_PID A_LOG=$WORKER_LOG
HH_TEST_CLOCK_SKEW_MS=1500 hh_start_worker -q default -c 1 --cron-poll-interval 0.3
B_LOG=$WORKER_LOG
must_wait 12 '[ "$(R LLEN queue:crontick)" -ge 3 ]' "three ticks enqueued"
must_wait 5 'grep -q "cron: enqueued tick" "$B_LOG"' "the hiredhand worker ahead enqueued a tick"
cron_check_once "$HK" crontick >/dev/null

# kill -9 mid-poll (it polls every ~0.3 s), restart it; then Redis restarts
kill -9 "$A"
hh_start_worker -q default -c 1 --cron-poll-interval 0.3
before=$(R LLEN queue:crontick)
hh_redis_restart
must_wait 10 '[ "$(R LLEN queue:crontick)" -ge $((before + 2)) ]' "two more ticks after the kill and the restart"
n=$(cron_check_once "$HK" crontick)

out="$(hh_peer_ruby 73-gems cron_fleet.rb check tick crontick)" || fail "check: $out"
last=${out#last=}; last=${last%% *}
assert_between "$last" "$(($(date +%s) - 30))" "$(($(date +%s) + 5))" "last_enqueue_time read by sidekiq-cron ($out)"
assert_contains "$out" "jids_ok=1" "jid_history entries read by sidekiq-cron name queued jobs ($out)"
cron_check_once cron_job:default:minutely cronmin >/dev/null
hh_log "pushed $n ticks, each once"
pass
