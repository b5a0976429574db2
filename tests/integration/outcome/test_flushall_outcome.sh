#!/usr/bin/env bash
# Redis loses its data (FLUSHALL; a restart without persistence) while jobs run. Their
# in-progress entries are gone, but no process recovered them: that is not a lease loss. The
# failed job's retry entry is written all the same (before, it was dropped as "recovered by
# another process" and the job vanished), the successful one counts as done, and neither is
# logged or counted as a lease loss.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
dir="$(hh_tmp)"
cat >"$dir/gate.sh" <<'SH'
#!/bin/sh
# Starts, says so, waits for the test's go file, then succeeds (GateOk) or fails (GateFail).
cat >/dev/null
touch "$GATE_DIR/started.$HIREDHAND_JID"
i=0
while [ ! -e "$GATE_DIR/go" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
[ "$HIREDHAND_CLASS" = GateOk ] || { echo "gate failure" >&2; exit 1; }
SH
chmod +x "$dir/gate.sh"
export GATE_DIR="$dir"
fail_jid="$(hh_push_job GateFail '[1]')"
ok_jid="$(hh_push_job GateOk '[2]')"
hh_start_worker -c 2 --exec-env GATE_DIR --exec "GateFail=$dir/gate.sh" --exec "GateOk=$dir/gate.sh"
must_wait 30 '[ -e "$dir/started.$fail_jid" ] && [ -e "$dir/started.$ok_jid" ]' "the two jobs did not start"
assert_eq "$(R flushall)" OK "FLUSHALL"
touch "$dir/go"
must_wait 30 'R zrange retry 0 -1 | grep -q "$fail_jid"' \
    "the failed job has no retry entry after Redis lost its data (log: $(grep -i 'lease\|gone' "$WORKER_LOG" | tail -n 3))"
must_wait 30 '[ "$(R get stat:processed)" = 2 ]' "stat:processed is $(R get stat:processed), not 2"
assert_not_contains "$(cat "$WORKER_LOG")" "lease lost" "a job Redis lost is not a lease loss"
assert_contains "$(cat "$WORKER_LOG")" "no process recovered it" "the log says what happened"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "worker exit status"
pass
