#!/usr/bin/env bash
# Connections killed every second (CLIENT KILL TYPE normal, as a flaky proxy or NAT does) while a
# worker drains a queue of cheap --exec jobs: jobs keep completing between kills, at a fair share
# of the pace before the kills (each 1 s window, and in all), and none is lost. Before, each
# thread found its own killed connection only when its turn to fetch came, one after another,
# each costing a backoff (one that grew: it was reset only by a command on a connection a second
# old) and often a second's pause, while every other thread waited for that fetch: a fraction of the
# pace, windows with nothing done.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
hh_require_binary
hh_redis_start

n=8000 windows=8 gap=1
jids="$HH_TMP/pushed.jids"; : >"$jids"
rf_push default NoopJob "$n" "$jids"
hh_start_worker -c 20 --heartbeat-interval 1 --exec "NoopJob=/bin/true"
done_count() { grep -c ' INFO: done$' "$WORKER_LOG"; }
must_wait 20 '[ "$(done_count)" -ge 50 ]' "the worker did not start draining the queue within 20 s"

# the pace before any kill: the better of two 1 s windows (a loaded machine's dips aside)
pace=0
for ((w = 0; w < 2; w++)); do
    t0="$(hh_now)" d0="$(done_count)"
    sleep 1
    t1="$(hh_now)" d1="$(done_count)"
    pace="$(awk -v p="$pace" -v d=$((d1 - d0)) -v a="$t0" -v b="$t1" 'BEGIN { r = d / (b - a); if (p > r) r = p; printf "%.1f", r }')"
done
hh_log "pace before the kills: $pace jobs/s"

per="" total=0 worst=""
start="$(hh_now)" prev="$d1"
for ((w = 1; w <= windows; w++)); do
    R client kill type normal >/dev/null || fail "CLIENT KILL failed"
    sleep "$gap"
    now="$(done_count)"
    per="$per $((now - prev))"
    [ -z "$worst" ] || [ $((now - prev)) -lt "$worst" ] && worst=$((now - prev))
    total=$((total + now - prev))
    prev="$now"
done
secs="$(awk -v a="$start" -v b="$(hh_now)" 'BEGIN { printf "%.1f", b - a }')"
hh_log "jobs done per ${gap} s window with a kill at the start of each:$per (in $secs s)"
assert_alive "$WORKER_PID" "the worker died under the kills"
[ "$(R llen queue:default)" -gt 0 ] || fail "the queue ran dry: push more jobs for a meaningful pace"

# Judged against the pace before: a connection lost costs a reconnect, not the window.
want_total="$(awk -v p="$pace" -v s="$secs" 'BEGIN { printf "%d", p * s * 0.4 }')"
want_each="$(awk -v p="$pace" -v g="$gap" 'BEGIN { w = p * g * 0.1; printf "%d", w < 1 ? 1 : w }')"
[ "$total" -ge "$want_total" ] ||
    fail "only $total jobs done in $secs s of kills (per window:$per); want >= $want_total (40 % of the pace before, $pace jobs/s)"
[ "$worst" -ge "$want_each" ] ||
    fail "a ${gap} s window between kills did only $worst jobs (per window:$per); want >= $want_each (10 % of the pace before)"

# Nothing lost: after a stop (which pushes back what it fetched), every job is done or listed.
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status after SIGTERM"
ran="$HH_TMP/ran"
grep ' INFO: done$' "$WORKER_LOG" | grep -o 'jid=[0-9a-f]*' | cut -d= -f2 >"$ran"
for k in queue:default $(rf_inprog); do   # an in-progress entry is recovered by the next start
    R lrange "$k" 0 -1 | grep -o '"jid":"[0-9a-f]*"' | cut -d'"' -f4 >>"$ran"
done
rf_compare "$jids" "$ran"
assert_eq "$RF_LOST" 0 "jobs neither done nor in a list after the kills: $RF_LOST_JIDS"
pass "kills every ${gap} s: $total jobs done in $secs s (per window:$per; pace before $pace/s), none lost"
