#!/bin/sh
# Stubborn handler: ignores SIGTERM (its sleep inherits that), leaves its pids in $HH_PIDFILE,
# sleeps ${1:-30} s: only the SIGKILL after the TERM grace ends it.
trap '' TERM
cat >/dev/null
sleep "${1:-30}" &
spid=$!
[ -n "$HH_PIDFILE" ] && echo "$$ $spid" >>"$HH_PIDFILE"
wait "$spid"
