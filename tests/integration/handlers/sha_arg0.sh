#!/bin/sh
# Large-payload handler: records "jid sha256(args[0] as JSON) bytes" in test:sha, where args[0]
# is re-serialised compactly by jq (a string's exact text, an array's numbers). Exit 0.
set -e
f="${HH_TMP:-/tmp}/big.$$"
cat >"$f"
sum=$(jq -c '.args[0]' <"$f" | sha256sum | cut -d' ' -f1)
bytes=$(wc -c <"$f")
rm -f "$f"
redis-cli -h 127.0.0.1 -p "$REDIS_PORT" rpush test:sha "$HIREDHAND_JID $sum $bytes" >/dev/null
