#!/bin/sh
# slow_fail.sh STARTS_FILE SECONDS: a job that records "jid retry_count" in STARTS_FILE (a file,
# not Redis, so it works while Redis refuses writes), sleeps SECONDS, then fails with exit 3.
cat >/dev/null
echo "$HIREDHAND_JID ${HIREDHAND_RETRY_COUNT:--}" >>"$1"
sleep "${2:-3}"
echo "slow failure of $HIREDHAND_CLASS on purpose" >&2
exit 3
