#!/usr/bin/env bash
# --exec handlers' output: stderr lines of a successful job are logged, each tagged with the
# job's class and jid (and the handler's pid), as --serve does; stdout follows --exec-stdout:
# inherit (default: the worker's own stdout, untagged, as before), log (tagged lines like
# stderr; also as the config file's exec_stdout key) or discard. A line longer than 4096 bytes
# is logged in whole pieces of 4096 (not cut short by the log line), and the newline that ends
# it right after a piece adds no empty line.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/heartbeat_helpers.sh"
hh_require_binary
hh_redis_start

h="$HH_TMP/noisy.sh"
cat >"$h" <<'SH'
#!/bin/sh
cat >/dev/null
echo "err line one" >&2
printf 'err line two\r\n' >&2
echo "out line for $HIREDHAND_JID"
head -c 8192 /dev/zero | tr '\0' x >&2; echo >&2
printf 'err no newline' >&2
redis-cli -h 127.0.0.1 -p "$REDIS_PORT" rpush test:done "$HIREDHAND_JID" >/dev/null
SH
chmod +x "$h"

run_one() {   # MODE-ARGS... ; sets JID and leaves the worker stopped, its log in WORKER_LOG
    JID="$(hh_jid)"
    hb_push Noisy "$JID" '[]' default
    hh_start_worker -c 1 --exec "Noisy=$h" "$@"
    must_wait 20 '[ "$(R lrange test:done 0 -1 | grep -c "$JID")" = 1 ]' "the Noisy job $JID did not run"
    must_wait 10 'grep -q "jid=$JID .*INFO: done" "$WORKER_LOG"' "the Noisy job $JID is not done"
    hh_stop_worker TERM 20
    LOG="$(cat "$WORKER_LOG")"
}

# 1. default: stderr logged and tagged; stdout inherited as it is
run_one
for l in "err line one" "err line two" "err no newline"; do
    assert_contains "$LOG" "class=Noisy jid=$JID pid=" "stderr line [$l] tagged with class and jid (default)"
    grep -qE "class=Noisy jid=$JID pid=[0-9]+ stderr: $l\$" <<<"$LOG" || fail "stderr line [$l] not logged as 'class=Noisy jid=$JID pid=N stderr: $l' (log: $LOG)"
done
long="$(grep -E "class=Noisy jid=$JID pid=[0-9]+ stderr: x+\$" <<<"$LOG" | sed 's/.* stderr: //')"
assert_eq "$(wc -l <<<"$long") $(tr -d '\n' <<<"$long" | wc -c)" "2 8192" "an 8192-byte stderr line: log lines and bytes"
assert_eq "$(awk '{ print length($0) }' <<<"$long" | sort -u)" 4096 "length of each piece of a long stderr line"
grep -qE "jid=$JID pid=[0-9]+ stderr: ?\$" <<<"$LOG" && fail "an empty stderr line was logged after a long line cut at its end"
grep -q $'\r' <<<"$LOG" && fail "a \\r of a \\r\\n line end reached the log"
grep -qx "out line for $JID" <<<"$LOG" || fail "default --exec-stdout: the handler's stdout line is not on the worker's stdout"
assert_not_contains "$LOG" "stdout: out line" "default --exec-stdout: stdout is not logged as tagged lines"

# 2. log, from the config file (exec_stdout: log): stdout lines tagged like stderr's
printf 'exec_stdout: log\n' >"$HH_TMP/out.yml"
run_one -C "$HH_TMP/out.yml"
grep -qE "class=Noisy jid=$JID pid=[0-9]+ stdout: out line for $JID\$" <<<"$LOG" || fail "--exec-stdout log: stdout line not logged with class and jid (log: $LOG)"
grep -qx "out line for $JID" <<<"$LOG" && fail "--exec-stdout log: the stdout line also went to the worker's stdout"
grep -qE "class=Noisy jid=$JID pid=[0-9]+ stderr: err line one\$" <<<"$LOG" || fail "--exec-stdout log: stderr not logged"

# 3. discard: no stdout anywhere, stderr still logged
run_one --exec-stdout discard
assert_not_contains "$LOG" "out line for $JID" "--exec-stdout discard: the stdout line shows up"
grep -qE "class=Noisy jid=$JID pid=[0-9]+ stderr: err line two\$" <<<"$LOG" || fail "--exec-stdout discard: stderr not logged"

hh_cli work -r "$REDIS_URL" --exec-stdout loud
assert_eq "$HH_RC" 2 "exit status for a bad --exec-stdout"
assert_contains "$HH_ERR" "--exec-stdout is inherit, log or discard, not 'loud'" "error for a bad --exec-stdout"
pass
