#!/bin/sh
# Fast handler for the queue-order test: appends "queue jid" to $HH_ORDER_FILE.
echo "$HIREDHAND_QUEUE $HIREDHAND_JID" >>"$HH_ORDER_FILE"
