#!/bin/sh
# list_fds.sh: writes `ls -l /proc/self/fd` as the handler's program sees it (ls's own directory
# descriptor included) to $FDS_DIR/<jid>, for the close-on-exec test. Exit 0.
cat >/dev/null
exec ls -l /proc/self/fd >"${FDS_DIR:?list_fds.sh needs FDS_DIR}/$HIREDHAND_JID"
