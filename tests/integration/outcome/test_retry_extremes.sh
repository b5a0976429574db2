#!/usr/bin/env bash
# Retry counts and limits at their extremes, hiredhand beside real Sidekiq 6.4.
# The same four failing jobs are LPUSHed raw into two databases of one Redis: db 0 is worked by
# the real `sidekiq` server (tests/ruby/app.rb's FailWorker), db 1 by hiredhand (fail.sh).
#   "retry_count": 3.0                                  -> 6.4 writes 4.0 (a float), retried_at
#   "retry": 9e18, "retry_count": 4294967295            -> 4294967296, delay ~3.4e38 s (finite)
#   "retry": 9e18, "retry_count": 9e18                  -> dead, 9000000000000000001
#   "retry_count": "3"                                  -> 6.4 raises TypeError in its retry code:
#       nothing in retry (the job is lost); hiredhand writes no retry either and keeps the job in
#       the dead set with the reason (a deliberate difference: it loses nothing)
# Compared: the set each failure went to, the exact retry_count token, retried_at vs failed_at,
# and that hiredhand's delay is what 6.4's formula gives for that count.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
command -v sidekiq >/dev/null || fail "sidekiq (Ruby, 6.4.1) is not installed"
hh_redis_start
SK_URL="redis://127.0.0.1:$REDIS_PORT/0"
HH_URL="redis://127.0.0.1:$REDIS_PORT/1"
n="$(REDIS_URL=$SK_URL hh_ruby retry_extremes.rb count)" || fail "retry_extremes.rb count"
R1() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" -n 1 "$@"; }

# ---- real Sidekiq 6.4 on db 0
REDIS_URL=$SK_URL hh_ruby retry_extremes.rb push >/dev/null || fail "push (db 0) failed"
REDIS_URL=$SK_URL hh_sidekiq_start app.rb -q default -c 2
# three failures land in retry/dead; the "3" one ends in a TypeError Sidekiq logs
must_wait 90 '[ "$(R llen queue:default)" = 0 ] && [ $(( $(R zcard retry) + $(R zcard dead) )) -ge $((n - 1)) ] && grep -q "no implicit conversion" "$SIDEKIQ_LOG"' \
    "Sidekiq did not handle the $n jobs within 90 s: queue=$(R llen queue:default) retry=$(R zcard retry) dead=$(R zcard dead)"
hh_sidekiq_stop
sk="$(REDIS_URL=$SK_URL hh_ruby retry_extremes.rb dump)" || fail "dump (db 0) failed: $sk"
hh_log "Sidekiq 6.4 wrote: $sk"

# ---- hiredhand on db 1
REDIS_URL=$HH_URL hh_ruby retry_extremes.rb push >/dev/null || fail "push (db 1) failed"
HH_NO_URL=1 hh_start_worker -r "$HH_URL" -c 2 --exec "FailWorker=$HH_HANDLERS/fail.sh"
must_wait 30 '[ "$(R1 llen queue:default)" = 0 ] && [ $(( $(R1 zcard retry) + $(R1 zcard dead) )) -ge "$n" ]' \
    "hiredhand did not handle the $n jobs within 30 s: queue=$(R1 llen queue:default) retry=$(R1 zcard retry) dead=$(R1 zcard dead)"
hh_stop_worker TERM 15
assert_eq "$WORKER_RC" 0 "hiredhand exit status after SIGTERM"
hh="$(REDIS_URL=$HH_URL hh_ruby retry_extremes.rb dump)" || fail "dump (db 1) failed: $hh"
hh_log "hiredhand wrote: $hh"
REDIS_URL=$HH_URL hh_ruby retry_extremes.rb compare "$hh" "$sk" || fail "hiredhand and Sidekiq 6.4 differ (see above)"
if grep -qiE "runtime error|undefined behavior" "$WORKER_LOG"; then fail "sanitizer report in the worker log"; fi
pass "retry_count \"3\", 3.0, 4294967295 and 9e18 handled as Sidekiq 6.4 handles them"
