#!/bin/bash
# rf_job.sh [SLEEP]: job handler for the reliable-fetch tests and the soak.
#   Appends "JID WORKER_PID EPOCH QUEUE" to $RF_DIR/started, sleeps SLEEP seconds, then -- only if the worker
#   that started it is still alive (not killed, not a zombie) -- appends "JID WORKER_PID" to
#   $RF_DIR/done and exits 0. A handler orphaned by a kill -9 of its worker records nothing as
#   done (its job is still in the dead worker's in-progress list and must run again).
#   SLEEP: a number of seconds (default 0), or a NAME: the seconds are then read from the file
#   $RF_DIR/sleep.NAME at start (0 when absent), so a test can change it between runs.
#   When it sleeps, "WORKER_PID PID SLEEP_PID" goes to $RF_DIR/children (recovery_helpers.sh
#   rf_kill9 kills the handlers of a killed worker, after checking they are still ours), and for
#   sleeps of 1 s or more "PID SLEEP_PID" to $HH_PIDFILE (the harness kills them at exit).
# Lines are shorter than PIPE_BUF, so concurrent O_APPEND writes never interleave.
# bash, with builtins only (EPOCHREALTIME, read) but for the sleep: the heavy tests run thousands
# of jobs through it, and each process started (cat, date, sed before) costs milliseconds on a
# loaded machine.
while IFS= read -r _; do :; done
: "${RF_DIR:?rf_job.sh needs RF_DIR}"
wpid=$PPID
echo "$HIREDHAND_JID $wpid $EPOCHREALTIME $HIREDHAND_QUEUE" >>"$RF_DIR/started"
secs="${1:-0}"
case "$secs" in
    ''|*[!0-9.]*) name="$secs"; secs=0; [ -r "$RF_DIR/sleep.$name" ] && read -r secs <"$RF_DIR/sleep.$name"; secs="${secs:-0}" ;;
esac
if [ "$secs" != 0 ]; then
    sleep "$secs" &
    spid=$!
    # only long sleeps go to the harness's pid file (killed unchecked at exit: with thousands of
    # short jobs, recycled pids would be in it)
    case "$secs" in 0.*|.*) ;; *) [ -n "$HH_PIDFILE" ] && echo "$$ $spid" >>"$HH_PIDFILE" ;; esac
    echo "$wpid $$ $spid" >>"$RF_DIR/children"
    wait "$spid"
fi
state=
{ while read -r key value _; do [ "$key" = State: ] && { state="$value"; break; }; done <"/proc/$wpid/status"; } 2>/dev/null
case "$state" in
    ''|Z|X) echo "$HIREDHAND_JID $wpid" >>"$RF_DIR/orphaned"; exit 0 ;;
esac
echo "$HIREDHAND_JID $wpid" >>"$RF_DIR/done"
exit 0
