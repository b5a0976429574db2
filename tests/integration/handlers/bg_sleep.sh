#!/bin/sh
# bg_sleep.sh: leaves `sleep 60` running in the background (its pid in $HH_PIDFILE, so the harness
# kills it), notes the jid in $FDS_DIR/bg, and exits 0 at once.
cat >/dev/null
sleep 60 </dev/null >/dev/null 2>&1 &
echo $! >>"$HH_PIDFILE"
echo "$HIREDHAND_JID" >>"${FDS_DIR:?bg_sleep.sh needs FDS_DIR}/bg"
