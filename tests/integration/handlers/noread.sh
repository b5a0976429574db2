#!/bin/sh
# Exits 0 at once without reading its stdin (the worker must survive EPIPE on a big payload);
# records its jid in test:noread.
redis-cli -h 127.0.0.1 -p "$REDIS_PORT" rpush test:noread "$HIREDHAND_JID" >/dev/null
exit 0
