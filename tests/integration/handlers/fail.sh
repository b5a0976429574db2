#!/bin/sh
# FailJob handler: records "jid retry_count" in test:fails, writes two stderr lines and exits 3.
cat >/dev/null
redis-cli -h 127.0.0.1 -p "$REDIS_PORT" rpush test:fails "$HIREDHAND_JID ${HIREDHAND_RETRY_COUNT:--}" >/dev/null
echo "some earlier noise" >&2
echo "boom: $HIREDHAND_CLASS failed on purpose" >&2
exit 3
