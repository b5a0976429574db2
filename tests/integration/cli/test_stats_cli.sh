#!/usr/bin/env bash
# `hiredhand stats` prints what Sidekiq::Stats shows: with a known state (counters, scheduled,
# retries, dead, a process, three queues incl. an empty one), `stats --json` matches
# Sidekiq::Stats (processed, failed, scheduled_size, retry_size, dead_size, processes_size,
# enqueued, queue sizes and latencies within 5 s of Sidekiq::Queue#latency); the text form
# shows the numbers; with REDIS_URL in the environment no -r is needed.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
hh_ruby stats_check.rb setup || fail "setup failed"

hh_cli stats --json -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "exit status of 'hiredhand stats --json' (stderr: $HH_ERR)"
printf '%s' "$HH_OUT" >"$HH_TMP/stats.json"
hh_ruby stats_check.rb compare "$HH_TMP/stats.json" || fail "stats --json differs from Sidekiq::Stats (see above); output: $HH_OUT"

hh_cli stats -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "exit status of 'hiredhand stats' (stderr: $HH_ERR)"
assert_contains "$HH_OUT" "123" "text stats show processed"
assert_contains "$HH_OUT" "default" "text stats list the default queue"
assert_contains "$HH_OUT" "critical" "text stats list the critical queue"

# REDIS_URL from the environment (the default when -r is absent)
hh_cli stats --json
assert_eq "$HH_RC" 0 "exit status of 'hiredhand stats --json' with REDIS_URL from the environment (stderr: $HH_ERR)"
assert_contains "$HH_OUT" "123" "stats via \$REDIS_URL read the test Redis"
pass
