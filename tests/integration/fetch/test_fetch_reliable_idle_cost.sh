#!/usr/bin/env bash
# Idle cost with --fetch reliable: idle is cheap, and an idle process still picks up a
# job on any of its queues.
# -q a,3 -q b,1 -q c,1 (weights set), all three queues empty, -c 2 (2 fetchers). After a 6 s
# settle: CONFIG RESETSTAT, 20 s idle, then INFO commandstats and /proc/PID/stat.
# Expected (the idle budget: CPU < 2 % and about 2 Redis commands/s per fetcher while idle, as
# INFO commandstats deltas; "about 2" is taken as <= 2.2):
#   - CPU (utime+stime) < 2 %
#   - fetch commands sent by the fetchers (EVALSHA, BLMOVE/BRPOPLPUSH, LMOVE/RPOPLPUSH/BRPOP
#     outside scripts) <= 2.2 per second per fetcher
#   - fetch commands as INFO commandstats counts them (LMOVE calls made inside the fetch script
#     included) <= 2.2 per second per fetcher
#   - every command in INFO commandstats (heartbeat, scheduler, recovery included; our own INFO,
#     CONFIG, MONITOR excluded) <= 6 per second for the whole process ("no more than a
#     few Redis commands per second per process"); the heartbeat and scheduler are per process,
#     not per fetcher, so they are not divided among the fetchers
#   - 6 single jobs pushed to c (the 3rd queue) at random moments each start within 2 s
#     (the third queue is the worst case for pickup); p50 and max are printed.
# Every figure is measured before any is judged, so a failure lists all of them.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
hh_require_binary
hh_redis_start

R sadd queues a b c >/dev/null
FETCHERS=2
hh_start_worker -c "$FETCHERS" --fetch reliable -q a,3 -q b,1 -q c,1 --exec "OrderJob=$RF_HANDLER"
hh_worker_wait_ready 15
sleep 6   # boot, first heartbeat, first recovery scan
hz="$(getconf CLK_TCK)"
c0="$(rf_cpu_ticks "$WORKER_PID")"
t0="$(hh_now)"
R config resetstat >/dev/null
# Count what clients send (MONITOR shows commands run inside scripts as "[0 lua]": left out).
timeout 21 redis-cli -h 127.0.0.1 -p "$REDIS_PORT" monitor >"$HH_TMP/monitor.txt" 2>/dev/null &
mon=$!
hh_track_pid "$mon"
sleep 20
stats="$(R info commandstats | tr -d '\r')"
c1="$(rf_cpu_ticks "$WORKER_PID")"
t1="$(hh_now)"
kill "$mon" 2>/dev/null; wait "$mon" 2>/dev/null
assert_alive "$WORKER_PID" "worker died while idle"

calls() {   # CMD... -> calls in $stats
    printf '%s\n' "$stats" | awk -F'[:=,]' -v f=" $* " '/^cmdstat_/ { c = substr($1, 9); if (f == "  " || index(f, " " c " ")) n += $3 } END { print n + 0 }'
}
dur="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')"
per() { awk -v n="$1" -v d="$dur" -v f="$FETCHERS" 'BEGIN { printf "%.2f", n / d / f }'; }
cpu="$(awk -v c0="$c0" -v c1="$c1" -v hz="$hz" -v d="$dur" 'BEGIN { printf "%.2f", (c1 - c0) * 100 / hz / d }')"
fetch_list="evalsha eval blmove brpoplpush lmove rpoplpush brpop exists"   # exists: the script's idle check
client_fetch="$(grep -v '\[[0-9]* lua\]' "$HH_TMP/monitor.txt" | grep -ciE '"(evalsha|eval|blmove|brpoplpush|lmove|rpoplpush|brpop)"')"
stats_fetch="$(calls $fetch_list)"
stats_all=$(( $(calls) - $(calls info config monitor) ))
client_fetch_ps="$(per "$client_fetch")"; stats_fetch_ps="$(per "$stats_fetch")"
stats_all_ps="$(awk -v n="$stats_all" -v d="$dur" 'BEGIN { printf "%.2f", n / d }')"
breakdown="$(printf '%s\n' "$stats" | grep -o '^cmdstat_[a-z]*:calls=[0-9]*' | sed 's/^cmdstat_//; s/:calls=/=/' | tr '\n' ' ')"
hh_log "idle ${dur} s, -c $FETCHERS, 3 empty weighted queues: CPU $cpu %"
hh_log "  fetch commands sent by clients: $client_fetch ($client_fetch_ps /s per fetcher)"
hh_log "  fetch commands in commandstats (incl. LMOVEs inside the script): $stats_fetch ($stats_fetch_ps /s per fetcher)"
hh_log "  all commands in commandstats: $stats_all ($stats_all_ps /s for the process): $breakdown"

lat=()
for i in 1 2 3 4 5 6; do
    sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", 0.3 + (r % 1700) / 1000 }')"
    j="$(hh_jid)"
    p="$(rf_payload OrderJob "$j" c)"
    tp="$(hh_now)"
    R lpush queue:c "$p" >/dev/null
    wait_until 6 'grep -q "^'"$j"' " "$RF_DIR/started"' || { lat+=("timeout"); continue; }
    ts="$(awk -v j="$j" '($1 "") == (j "") { print $3; exit }' "$RF_DIR/started")"
    lat+=("$(awk -v a="$tp" -v b="$ts" 'BEGIN { printf "%.3f", b - a }')")
done
sorted="$(printf '%s\n' "${lat[@]}" | sed 's/timeout/999/' | sort -g)"
p50="$(printf '%s\n' "$sorted" | sed -n 3p)"; max="$(printf '%s\n' "$sorted" | tail -n 1)"
hh_log "pickup latency of a job pushed to the idle 3rd queue (s): ${lat[*]} -- p50 $p50, max $max"
assert_alive "$WORKER_PID" "worker died"

problems=()
ok() { awk -v v="$1" -v hi="$2" 'BEGIN { exit !(v + 0 <= hi + 0) }'; }
ok "$cpu" 2 || problems+=("CPU $cpu % while idle (want < 2 %)")
ok "$client_fetch_ps" 2.2 || problems+=("fetch commands sent: $client_fetch_ps /s per fetcher (want <= ~2)")
ok "$stats_fetch_ps" 2.2 || problems+=("fetch commands in INFO commandstats (LMOVEs inside the fetch script count): $stats_fetch_ps /s per fetcher (want <= ~2)")
ok "$stats_all_ps" 6 || problems+=("all commands in INFO commandstats: $stats_all_ps /s for the process (want <= 6): $breakdown")
for l in "${lat[@]}"; do
    ok "$l" 2 2>/dev/null && [ "$l" != timeout ] || { problems+=("pickup latency on the 3rd queue: ${lat[*]} s (want each <= 2 s)"); break; }
done
if [ ${#problems[@]} -gt 0 ]; then
    msg="idle cost with reliable fetch, -c $FETCHERS, -q a,3 -q b,1 -q c,1, ${dur} s:"
    for p in "${problems[@]}"; do msg="$msg
  - $p"; done
    fail "$msg"
fi
hh_stop_worker TERM 15
assert_eq "$WORKER_RC" 0 "exit status after SIGTERM"
pass "idle: CPU $cpu %, $stats_fetch_ps fetch commands/s per fetcher, $stats_all_ps commands/s in all; pickup p50 $p50 s max $max s"
