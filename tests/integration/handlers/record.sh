#!/bin/sh
# OkJob-style handler: appends the exact job payload it got on stdin to the Redis list test:ran
# (or $HH_RECORD_KEY), and "jid class queue retry_count epoch" to test:meta. Exit 0.
# The worker's environment carries REDIS_PORT (set by tests/lib/harness.sh).
set -e
redis-cli -h 127.0.0.1 -p "$REDIS_PORT" -x rpush "${HH_RECORD_KEY:-test:ran}" >/dev/null
redis-cli -h 127.0.0.1 -p "$REDIS_PORT" rpush test:meta \
    "$HIREDHAND_JID $HIREDHAND_CLASS $HIREDHAND_QUEUE ${HIREDHAND_RETRY_COUNT:--} $(date +%s.%N)" >/dev/null
