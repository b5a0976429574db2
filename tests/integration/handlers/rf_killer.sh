#!/bin/sh
# rf_killer.sh: a poison pill. Appends "JID WORKER_PID" to $RF_DIR/killer, then kill -9s the
# worker running it (its parent: --exec spawns the handler directly) and exits.
cat >/dev/null
: "${RF_DIR:?rf_killer.sh needs RF_DIR}"
echo "$HIREDHAND_JID $PPID" >>"$RF_DIR/killer"
kill -9 "$PPID"
exit 0
