#!/bin/sh
# SlowJob handler: sleep.sh SECONDS. Records its jid in test:started, leaves its pids in
# $HH_PIDFILE (so the harness can kill them even if the worker abandons them), sleeps, then
# records the payload in test:ran like record.sh.
payload_file="${HH_TMP:-/tmp}/slow.$$"
cat >"$payload_file"
redis-cli -h 127.0.0.1 -p "$REDIS_PORT" rpush test:started "$HIREDHAND_JID" >/dev/null
sleep "${1:-30}" &
spid=$!
[ -n "$HH_PIDFILE" ] && echo "$$ $spid" >>"$HH_PIDFILE"
wait "$spid"
redis-cli -h 127.0.0.1 -p "$REDIS_PORT" -x rpush test:ran <"$payload_file" >/dev/null
rm -f "$payload_file"
