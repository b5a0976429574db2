#!/usr/bin/env bash
# Job management does to Redis what Sidekiq 6.4's Ruby API does: for every verb of
# `hiredhand retries|scheduled|dead|queues clear` (one jid, --all, --all with --class, --queue
# and --error filters), an identical fixture in two databases, Sidekiq's API acting on one
# (SortedEntry#retry/#add_to_queue/#delete/#kill, RetrySet#retry_all/#kill_all/#clear,
# DeadSet#retry_all/#clear, Queue#clear) and hiredhand on the other, then every key compared
# parsed (retry_count, queue defaults, jid, enqueued_at "now", dead scores "now", entries that
# share a score, a payload holding an integer beyond 64 bits).
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
HH_URL0="redis://127.0.0.1:$REDIS_PORT/0" REDIS_URL="redis://127.0.0.1:$REDIS_PORT/1" \
    hh_ruby admin_compare.rb || fail "hiredhand and Sidekiq's API left different keys (see above)"
pass
