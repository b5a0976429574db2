#!/usr/bin/env bash
# One exit status for "Redis cannot be reached", whatever the command (docs/job-management.md, "Exit status"):
# every client subcommand pointed at a closed loopback port exits 3 and says why on stderr;
# usage errors stay 2.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
url="redis://127.0.0.1:$(hh_pick_free_port)/0"
jid="$(hh_jid)"

while IFS= read -r cmd; do
    [ -n "$cmd" ] || continue
    # shellcheck disable=SC2086 # word splitting of the command line is meant
    hh_cli $cmd -r "$url" </dev/null
    assert_eq "$HH_RC" 3 "hiredhand $cmd against a closed port: exit status (stderr: $HH_ERR)"
    assert_contains "$HH_ERR" "cannot connect" "hiredhand $cmd says why"
done <<CMDS
push HardWorker
push HardWorker [1] --in 60
stats
stats --json
processes
processes --json
quiet some-identity
stop some-identity
dump some-identity
retries list
retries show $jid
retries retry --all --yes
scheduled list --json
scheduled enqueue $jid
dead list
dead clear --yes
queues
queues list
queues show default
queues clear default --yes
busy
busy --json
jobs find $jid
top --json
top --count 1
CMDS

# a usage error is still 2, before any connection
hh_cli stats --no-such-option -r "$url"
assert_eq "$HH_RC" 2 "a usage error exits 2"
# the convention is printed by --help (and so in the man page)
hh_cli --help
assert_contains "$HH_OUT" "3 Redis unreachable" "hiredhand --help documents the exit statuses"

# a Redis that accepts but does not answer (paused) times out: that is said, not blamed on TLS,
# whose hint is for a server that closed the connection before any reply
hh_redis_start
kill -STOP "$REDIS_PID"
hh_cli stats -r "$REDIS_URL"
kill -CONT "$REDIS_PID"
assert_eq "$HH_RC" 3 "stats against a paused Redis: exit status (stderr: $HH_ERR)"
assert_contains "$HH_ERR" "no reply within 5 s (Redis busy or paused?)" "stats against a paused Redis says it timed out"
assert_not_contains "$HH_ERR" "TLS" "a timeout is not blamed on TLS"
assert_not_contains "$HH_ERR" "temporarily unavailable" "a timeout is not worded as EAGAIN"
pass
