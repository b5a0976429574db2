#!/bin/sh
# bg_child.sh [STATUS]: leaves a child behind (sleep 1 &, which outlives it and becomes an orphan),
# appends its jid to $PID1_DIR/ran, and exits STATUS (default 0).
cat >/dev/null
sleep 1 &
echo "$HIREDHAND_JID" >>"${PID1_DIR:?bg_child.sh needs PID1_DIR}/ran"
exit "${1:-0}"
