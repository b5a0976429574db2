#!/usr/bin/env bash
# A soft limit on open files below what --exec jobs need (each running job holds four pipe ends)
# does not fail jobs: the worker raises its soft limit to the hard one at start, and the handlers
# get the limit the worker was started with back. Soft limit 128 (hard left as is), -c 40 --exec
# with jobs of 0.3 s, 120 jobs: every one succeeds, no retry entry, and a handler sees 128. Then
# with the hard limit at 128 too, the worker warns at start that the limit is too low.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
hh_require_binary
hh_redis_start

hard="$(ulimit -Hn)"
[ "$hard" = unlimited ] || [ "$hard" -ge 1024 ] || fail "hard limit on open files is $hard here (want >= 1024 to test raising the soft one)"
handler="$HH_TMP/fd_job.sh"
cat >"$handler" <<EOS
#!/bin/sh
ulimit -n >"$HH_TMP/handler_limit"
sleep 0.3
EOS
chmod +x "$handler"
n=120
jids="$HH_TMP/jids"; : >"$jids"
rf_push default FdJob "$n" "$jids"
ulimit -Sn 128 || fail "cannot lower the soft limit"
hh_start_worker -c 40 --exec "FdJob=$handler"
must_wait 120 '[ "$(grep -c "class=FdJob.*INFO: done" "$WORKER_LOG")" -ge '"$n"' ] || [ "$(R zcard retry)" != 0 ]' \
    "only $(grep -c 'class=FdJob.*INFO: done' "$WORKER_LOG") of $n jobs done within 120 s"
assert_eq "$(R zcard retry)" 0 "retry entries (jobs failed for want of file descriptors: $(R zrange retry 0 0))"
assert_eq "$(grep -c "class=FdJob.*INFO: done" "$WORKER_LOG")" "$n" "jobs done"
assert_eq "$(cat "$HH_TMP/handler_limit")" 128 "the handler's soft limit (the one the worker was started with)"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status after SIGTERM"

# The hard limit too low: said at start.
(
    ulimit -Hn 128
    exec "$HIREDHAND" work -r "$REDIS_URL" -c 40 --exec "FdJob=$handler" </dev/null >"$HH_TMP/low.log" 2>&1
) &
low=$!
_hh_register "$low"
must_wait 15 'grep -q "open files: the limit is 128" "$HH_TMP/low.log"' "no warning about the open-file limit: $(head -5 "$HH_TMP/low.log")"
kill -TERM "$low"
wait_until 30 "! kill -0 $low" || fail "the worker with a low limit did not stop"
pass "$n --exec jobs at -c 40 under a soft limit of 128 all ran; the handlers got 128 back; a low hard limit is warned about"
