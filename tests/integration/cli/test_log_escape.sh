#!/usr/bin/env bash
# A payload cannot forge log lines: class, jid and error text are logged with control characters
# escaped (newline as \n, ESC as \x1b), so the injection job below gives exactly its three log
# lines (start, fail, the failure), no line that starts with its forged timestamp, and no ESC
# byte, on stderr and in an -l file. A class with a NUL byte is never cut at it: not in the log, not
# for a catch-all --exec program (NameError), not in a catch-all --serve job line.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
command -v jq >/dev/null || fail "jq is not installed (apt-get install jq)"
hh_redis_start

inj='{"class":"Nope\n2026-01-01T00:00:00.000Z pid=1 ERROR: forged line\u001b[31m","args":[],"jid":"inj\ninj","retry":true,"queue":"default"}'
R lpush queue:default "$inj" >/dev/null
logfile="$HH_TMP/worker.log"
hh_start_worker -c 1 -l "$logfile"
wait_until 30 '[ "$(R zcard retry)" = 1 ]' || fail "the injection job did not reach the retry set within 30 s (queue=$(R llen queue:default) retry=$(R zcard retry))"
wait_until 10 'grep -q "forged line" "$logfile"' || fail "the job's failure was not logged: $(cat "$logfile")"
assert_eq "$(grep -c 'forged line' "$logfile")" 3 "three log lines for the job: start, fail, the failure"
assert_eq "$(grep 'forged line' "$logfile" | grep -c 'INFO: start$\|INFO: fail$')" 2 "the job's start and fail lines end where they should"
line="$(grep 'forged line' "$logfile" | grep 'WARN: ')"
assert_contains "$line" 'jid=inj\ninj' "the jid's newline is escaped"
assert_contains "$line" 'Nope\n2026-01-01T00:00:00.000Z pid=1 ERROR: forged line\x1b[31m' "the class's newline and ESC are escaped"
if grep -q '^2026-01-01T00:00:00.000Z' "$logfile"; then fail "a forged line starts a log line: $(cat "$logfile")"; fi
if grep -q $'\x1b' "$logfile"; then fail "an ESC byte reached the log"; fi
if grep -q $'\r' "$logfile"; then fail "a CR reached the log"; fi
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "worker exit status after SIGTERM"

# the same on stderr (the default sink), with -v: every line about the job is one line
R del retry >/dev/null
R lpush queue:default "$inj" >/dev/null
hh_start_worker -c 1 -v
wait_until 30 '[ "$(R zcard retry)" = 1 ]' || fail "the injection job did not reach the retry set within 30 s (stderr run)"
wait_until 10 'grep -q "forged line" "$WORKER_LOG"' || fail "the job's failure was not logged on stderr"
hh_stop_worker TERM 30
if grep -q '^2026-01-01T00:00:00.000Z' "$WORKER_LOG"; then fail "a forged line starts a stderr line"; fi
if grep -q $'\x1b' "$WORKER_LOG"; then fail "an ESC byte reached stderr"; fi
n_jid="$(grep -c 'jid=inj\\ninj' "$WORKER_LOG")"
n_forged="$(grep -c 'forged line' "$WORKER_LOG")"
assert_eq "$n_forged" "$n_jid" "every line naming the class is a line about the job (start, failure)"
[ "$n_jid" -ge 2 ] || fail "expected a start and a failure line with -v, got $n_jid"

# a class with a NUL byte is named whole on every line ("T\u0000Evil" is not T): the start and
# fail lines too, not cut at the NUL
R lpush queue:default '{"class":"T\u0000Evil","args":[],"jid":"nul1","retry":false,"queue":"default"}' >/dev/null
hh_start_worker -c 1
must_wait 30 '[ "$(grep -c "jid=nul1 .*INFO: \(start\|fail\)" "$WORKER_LOG")" = 2 ]' "no start and fail lines for the NUL class"
assert_eq "$(grep 'jid=nul1 ' "$WORKER_LOG" | grep -c 'class=T\\x00Evil jid=nul1 ')" 2 "start and fail name the whole class"
hh_stop_worker TERM 30
# a catch-all --exec program cannot be told that class (HIREDHAND_CLASS would end at the NUL and
# name T): the job fails with NameError, as Ruby's constantize refuses the name, and the program
# never runs; a catch-all --serve program gets the class whole in its job line
ran="$(hh_jid_recorder "$HH_TMP/all.sh")"
R lpush queue:default '{"class":"T\u0000Evil","args":[],"jid":"nul2","retry":0,"queue":"default"}' >/dev/null
hh_start_worker -c 1 --exec "*=$HH_TMP/all.sh"
must_wait 30 '[ "$(R zcard dead)" = 1 ]' "the NUL-class job did not fail into the dead set: $(grep jid=nul2 "$WORKER_LOG" | tail -n 2)"
assert_eq "$(R zrange dead 0 -1 | jq -r .error_class)" NameError "the error class"
assert_contains "$(R zrange dead 0 -1 | jq -r .error_message)" 'wrong constant name "T\u0000Evil"' "the error names the whole class"
assert_eq "$(grep -c . "$ran")" 0 "runs of the catch-all program"
hh_stop_worker TERM 30
R del dead >/dev/null
got="$HH_TMP/serve.got"
cat >"$HH_TMP/all.py" <<EOF
import json, sys
print(json.dumps({"hiredhand": 1}), flush=True)
for line in sys.stdin:
    with open("$got", "a") as f:
        f.write(json.dumps(json.loads(line)["class"]) + "\n")
    print(json.dumps({"ok": True}), flush=True)
EOF
R lpush queue:default '{"class":"T\u0000Evil","args":[],"jid":"nul3","retry":0,"queue":"default"}' >/dev/null
hh_start_worker -c 1 --serve "*=python3 $HH_TMP/all.py"
must_wait 30 '[ -s "$got" ]' "the catch-all --serve program got no job: $(grep -E 'ERROR|WARN|fail' "$WORKER_LOG" | tail -n 2)"
assert_eq "$(cat "$got")" '"T\u0000Evil"' "the class in the --serve job line"
assert_eq "$(R zcard dead)" 0 "dead entries (the --serve run succeeds)"
hh_stop_worker TERM 30
pass
