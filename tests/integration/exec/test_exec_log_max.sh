#!/usr/bin/env bash
# Handler output in the log has a cap per job (--exec-log-max, default 64 KiB): an --exec job that
# prints one 20 MB stderr line logs 64 KiB of it (16 pieces, not 5,120) and one WARN line with
# the bytes not logged, runs to its end (the pipe is still read) and keeps its last stderr line as
# the error message; a cap cuts the line that crosses it; the config file's exec_log_max sets
# it; 0 is no cap; a bad value is a usage error. A --serve process's stderr has the same cap, and
# is read between jobs too: an idle process writing 330 KiB to stderr after its answer (a background
# thread's logging) finishes without waiting for another job (it blocked once the pipe was full).
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start

flood="$HH_TMP/flood.sh"
cat >"$flood" <<'SH'
#!/bin/sh
cat >/dev/null
head -c "${FLOOD_BYTES:-20971520}" /dev/zero | tr '\0' x >&2
printf '\nthe last line\n' >&2
exit 3
SH
three="$HH_TMP/three.sh" # three 60-byte stderr lines
cat >"$three" <<'SH'
#!/bin/sh
cat >/dev/null
for c in a b c; do head -c 60 /dev/zero | tr '\0' "$c" >&2; echo >&2; done
SH
serve="$HH_TMP/serve_flood.sh" # a --serve handler writing 1 MiB to stderr per job; after a
cat >"$serve" <<'SH'               # "between" job's answer, 330 KiB more, then $0.between
#!/bin/sh
echo '{"hiredhand":1}'
while read -r line; do
    head -c 1048576 /dev/zero | tr '\0' y >&2
    echo '{"ok":true}'
    case "$line" in *between*)
        head -c 337920 /dev/zero | tr '\0' z >&2
        touch "$0.between" ;;
    esac
done
SH
chmod +x "$flood" "$three" "$serve"

logged() {   # JID STREAM: the bytes of JID's STREAM lines in the log
    grep -E "jid=$1 pid=[0-9]+ $2: " "$WORKER_LOG" | sed "s/.* $2: //" | tr -d '\n' | wc -c
}
pieces() { grep -cE "jid=$1 pid=[0-9]+ stderr: " "$WORKER_LOG"; }
not_logged() {   # JID: the count of its "more bytes of output not logged" line, or nothing
    grep -E "jid=$1 pid=[0-9]+: [0-9]+ more bytes of output not logged" "$WORKER_LOG" |
        sed -E 's/.*: ([0-9]+) more bytes.*/\1/'
}

# --- the default cap: 64 KiB of a 20 MB line, one line for the rest, the job runs to its end
hh_start_worker -c 1 --exec "Flood=$flood"
hh_worker_wait_ready 20
j1="$(hh_push_job Flood '[1]')"
must_wait 60 '[ "$(R zcard retry)" = 1 ]' "the Flood job did not fail into the retry set"
assert_contains "$(hh_retry_field "$j1" error_message)" "the last line" "the last stderr line is the error message"
assert_eq "$(logged "$j1" stderr)" 65536 "stderr bytes logged for a 20 MB line"
assert_eq "$(pieces "$j1")" 16 "log lines for a 20 MB line"
assert_eq "$(not_logged "$j1")" $((20971520 + 13 - 65536)) "bytes not logged (the rest of the line and the last one)"
assert_contains "$(cat "$WORKER_LOG")" "(--exec-log-max 65536)" "the notice names the option"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status after TERM"

# --- a cap from the config file cuts the line that crosses it; stdout logged shares it
R flushdb >/dev/null
printf 'exec_log_max: 100\n' >"$HH_TMP/cap.yml"
hh_start_worker -c 1 -C "$HH_TMP/cap.yml" --exec "Three=$three"
hh_worker_wait_ready 20
j2="$(hh_push_job Three '[2]')"
must_wait 30 'grep -q "jid=$j2 .*INFO: done" "$WORKER_LOG"' "the Three job is not done"
assert_eq "$(logged "$j2" stderr)" 100 "stderr bytes logged under a 100-byte cap"
grep -qE "jid=$j2 pid=[0-9]+ stderr: a{60}\$" "$WORKER_LOG" || fail "the first line is not logged whole"
grep -qE "jid=$j2 pid=[0-9]+ stderr: b{40}\$" "$WORKER_LOG" || fail "the line that crosses the cap is not cut at it"
assert_eq "$(not_logged "$j2")" 80 "bytes not logged under a 100-byte cap"
hh_stop_worker TERM 30

# --- 0: no cap
R flushdb >/dev/null
export FLOOD_BYTES=204800 # the handler inherits the worker's environment
hh_start_worker -c 1 --exec-log-max 0 --exec "Flood=$flood"
hh_worker_wait_ready 20
j3="$(hh_push_job Flood '[3]')"
must_wait 60 '[ "$(R zcard retry)" = 1 ]' "the Flood job did not fail into the retry set"
assert_eq "$(logged "$j3" stderr)" $((204800 + 13)) "every stderr byte logged with --exec-log-max 0"
assert_eq "$(not_logged "$j3")" "" "no notice with --exec-log-max 0"
hh_stop_worker TERM 30
unset FLOOD_BYTES

# --- --serve: the same cap on a process's stderr
R flushdb >/dev/null
hh_start_worker -c 1 --serve "Flood=$serve"
hh_worker_wait_ready 20
j4="$(hh_push_job Flood '[4]')"
must_wait 60 'grep -q "jid=$j4 .*INFO: done" "$WORKER_LOG"' "the --serve Flood job is not done"
assert_eq "$(logged "$j4" stderr)" 65536 "--serve: stderr bytes logged for 1 MiB"
# the pipe holds 64 KiB at most: the answer may come before the last of it is read
n="$(not_logged "$j4")"
assert_between "${n:-0}" $((1048576 - 2 * 65536)) $((1048576 - 65536)) "--serve: bytes not logged for the job"
j5="$(hh_push_job Flood '["between"]')"
must_wait 30 '[ -e "$serve.between" ]' \
    "an idle --serve process is still blocked writing 330 KiB to stderr after its answer (no job since)"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status after TERM"

for bad in -1 x 1073741825; do
    hh_cli work -r "$REDIS_URL" --exec-log-max "$bad"
    assert_eq "$HH_RC" 2 "exit status for --exec-log-max $bad"
    assert_contains "$HH_ERR" "--exec-log-max" "the error names the option ($bad)"
done
pass
