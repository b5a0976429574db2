#!/usr/bin/env bash
# The error message of a failed --exec job is its exit status and the last stderr line that says
# something, whatever bytes the output holds:
#   - a NUL byte does not end the text: "err-before\x00err-after" in error_message, the log line
#     and the backtrace (it was cut at the NUL);
#   - blank or whitespace-only lines after the real reason are skipped (a line of three spaces
#     became the whole message);
#   - a line redrawn with \r (progress output) gives what a terminal shows: the text after its
#     last \r;
#   - a \r\n line end is not part of the message.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start

h="$HH_TMP/fail.sh"
cat >"$h" <<'SH'
#!/bin/sh
cat >/dev/null
case "$1" in
nul) printf 'err-before\000err-after\n' >&2 ;;
blank) printf 'Error: real reason here\n\n   \n\t\n' >&2 ;;
progress) printf 'progress 10%%\rprogress 100%%\rError: boom at the end\n' >&2 ;;
crlf) printf 'Error: windows line\r\n' >&2 ;;
esac
exit 4
SH
chmod +x "$h"
args=()
for k in nul blank progress crlf; do args+=(--exec "Fail_$k=$h $k"); done
declare -A jid
for k in nul blank progress crlf; do jid[$k]="$(hh_push_job "Fail_$k" '[1]' '"backtrace":true')"; done
hh_start_worker -c 2 "${args[@]}"
must_wait 30 '[ "$(R zcard retry)" = 4 ]' "the four failing jobs did not all reach the retry set ($(R zcard retry))"
msg() { hh_retry_field "${jid[$1]}" error_message; }
assert_eq "$(msg nul)" "$h exited with status 4: err-before\\x00err-after" "a NUL byte in the last stderr line"
grep -F "jid=${jid[nul]} pid=" "$WORKER_LOG" | grep -qF 'stderr: err-before\x00err-after' ||
    fail "the log line of a stderr line with a NUL byte is cut: $(grep -F "${jid[nul]}" "$WORKER_LOG" | head -n 3)"
assert_eq "$(msg blank)" "$h exited with status 4: Error: real reason here" "blank lines after the reason"
assert_eq "$(msg progress)" "$h exited with status 4: Error: boom at the end" "a line redrawn with \\r"
assert_eq "$(msg crlf)" "$h exited with status 4: Error: windows line" "a \\r\\n line end"
bt="$(R zrange retry 0 -1 | grep -F "${jid[nul]}" | ruby -rjson -rzlib -rbase64 -e \
    'puts JSON.parse(Zlib::Inflate.inflate(Base64.decode64(JSON.parse($stdin.read)["error_backtrace"])))')"
assert_eq "$bt" 'err-before\x00err-after' "the backtrace keeps the text after the NUL byte"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status after TERM"
pass
