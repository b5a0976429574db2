#!/bin/sh
# Fails on the first execution (HIREDHAND_RETRY_COUNT empty or unset), succeeds on a retry
# (then records like record.sh).
if [ -z "$HIREDHAND_RETRY_COUNT" ]; then
    cat >/dev/null
    redis-cli -h 127.0.0.1 -p "$REDIS_PORT" rpush test:fails "$HIREDHAND_JID -" >/dev/null
    echo "flaky: first attempt fails" >&2
    exit 1
fi
exec "$(dirname "$0")/record.sh"
