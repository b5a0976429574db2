#!/usr/bin/env bash
# A stop pushes a running job back only once its handler has ended: a peer idle on the same queue
# must never start the job while the stopping worker's handler still runs it. The handler ignores
# SIGTERM (as a program busy in a C extension or a shell wrapper may), so it ends only at its
# SIGKILL, 2 s after the cancel. Worker A (-t 1) runs it; worker B waits idle on the queue; TERM
# to A. Before, A pushed the job back at its cancel and B ran it next to A's handler for ~2 s.
# Expected: the handler records every start; B's start finds no earlier handler process alive;
# the job ran twice in all (A's cancelled run, B's), A exited 0 within docs/running-workers.md's bound.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start

dir="$(hh_tmp)"
job="$dir/stubborn.sh"
cat >"$job" <<EOF
#!/bin/sh
cat >/dev/null
# a start while an earlier run's handler is still alive is an overlap
for p in \$(cat "$dir/pids" 2>/dev/null); do
    kill -0 "\$p" 2>/dev/null && echo "\$HIREDHAND_JID \$\$ overlaps \$p" >>"$dir/overlap"
done
echo \$\$ >>"$dir/pids"
echo "\$HIREDHAND_JID \$\$" >>"$dir/started"
trap '' TERM
i=0
while [ \$i -lt 40 ]; do sleep 0.2; i=\$((i + 1)); done
echo "\$HIREDHAND_JID \$\$" >>"$dir/done"
EOF
chmod +x "$job"
: >"$dir/started"

jid="$(hh_push_job Stubborn '[1]')"
hh_start_worker -c 1 -t 1 --identity stop-a --exec "Stubborn=$job"
wa=$WORKER_PID
must_wait 20 '[ "$(grep -c "^$jid " "$dir/started")" = 1 ]' "A did not start the job"
hh_start_worker -c 1 -t 1 --identity stop-b --exec "Stubborn=$job"
wb=$WORKER_PID
hh_worker_wait_ready 20
t0="$(hh_now)"
kill -TERM "$wa"
must_wait 30 '[ "$(grep -c "^$jid " "$dir/started")" = 2 ]' "B did not run the job A pushed back"
must_wait 30 '! kill -0 '"$wa"' 2>/dev/null' "A did not exit"
wait "$wa"; rc=$?
t1="$(hh_now)"
assert_eq "$rc" 0 "A's exit status"
assert_between "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" 0 6 "seconds from TERM to A's exit (docs/running-workers.md: -t 1 + 3 + 1)"
[ ! -s "$dir/overlap" ] || fail "B started the job while A's handler still ran it: $(cat "$dir/overlap")"
grep -q "class=Stubborn jid=$jid: still running at the shutdown timeout; pushed back" "${HH_WORKER_LOGS[0]}" ||
    fail "A did not log the push back: $(grep -E 'WARN|ERROR' "${HH_WORKER_LOGS[0]}" | tail -n 3)"
assert_eq "$(grep -c . "$dir/done" 2>/dev/null || echo 0)" 0 "handler runs that reached their end"
hh_stop_worker TERM 30
pass "a stop pushes a running job back only after its handler ended: no peer runs it meanwhile"
