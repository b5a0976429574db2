#!/bin/sh
# env_dump.sh: writes its environment (`env -0`, NUL-separated) to $ENV_DIR/<jid>, for the
# --exec-env test. Exit 0. ENV_DIR must reach it: the test passes it in the worker's environment.
cat >/dev/null
env -0 >"${ENV_DIR:?env_dump.sh needs ENV_DIR}/$HIREDHAND_JID"
