#!/usr/bin/env bash
# `make demo` (scripts/demo.sh) against a Redis of the user's own (REDIS_URL set): its jobs run
# and it leaves only what the README says (its stats and one dead-set entry), not its queue's
# name in the `queues` set, which the Web UI would list as an empty queue for ever.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
R sadd queues mine >/dev/null
R lpush queue:mine '{"class":"Theirs","args":[],"jid":"0123456789abcdef01234567","queue":"mine"}' >/dev/null
out="$(HH_BUILD="$(dirname "$HIREDHAND")" timeout 60 bash "$HH_ROOT/scripts/demo.sh" 2>&1)" ||
    fail "make demo failed: $out"
assert_contains "$out" "== hiredhand stats" "the demo ends with hiredhand stats"
assert_eq "$(R sismember queues hiredhand_demo)" 0 "the demo's queue is left in the queues set (SMEMBERS: $(R smembers queues | tr '\n' ' '))"
assert_eq "$(R exists queue:hiredhand_demo)" 0 "the demo's queue is empty"
assert_eq "$(R zcard dead)" 1 "the demo leaves one dead-set entry, as the README says"
assert_eq "$(R zcard retry)" 0 "the demo leaves no retry"
assert_eq "$(R smembers queues)" mine "the user's own queue is left alone"
assert_eq "$(R llen queue:mine)" 1 "the user's own queue keeps its job"
pass
