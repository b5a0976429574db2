#!/bin/sh
# Dies from SIGKILL (a crash, as far as the worker can tell).
cat >/dev/null
echo "about to die" >&2
kill -KILL $$
