#!/bin/sh
# shut_job.sh: SlowJob handler for the shutdown tests. Records to plain files under $SHUT_DIR,
# never to Redis (Redis is paused or down while it runs):
#   $SHUT_DIR/started    "JID WORKER_PID EPOCH" when it starts
#   $SHUT_DIR/cancelled  "JID WORKER_PID EPOCH" when it gets SIGTERM (the worker's cancellation)
#   $SHUT_DIR/done       "JID WORKER_PID EPOCH" when it finished its sleep
# It sleeps the seconds in $SHUT_DIR/sleep (read at start; 10 when absent).
cat >/dev/null
: "${SHUT_DIR:?shut_job.sh needs SHUT_DIR}"
wpid=$PPID
secs="$(cat "$SHUT_DIR/sleep" 2>/dev/null)"
echo "$HIREDHAND_JID $wpid $(date +%s.%N)" >>"$SHUT_DIR/started"
trap 'echo "$HIREDHAND_JID $wpid $(date +%s.%N)" >>"$SHUT_DIR/cancelled"; kill "$spid" 2>/dev/null; exit 143' TERM
sleep "${secs:-10}" &
spid=$!
[ -n "$HH_PIDFILE" ] && echo "$$ $spid" >>"$HH_PIDFILE"
wait "$spid"
echo "$HIREDHAND_JID $wpid $(date +%s.%N)" >>"$SHUT_DIR/done"
exit 0
