#!/usr/bin/env bash
# Reconnect after Redis restarts: hiredhand idle, all threads
# blocked in fetch; redis-server is killed by PID, stays down 5 s, then starts again on the same
# port with an empty dataset. During the outage: no exit, no busy loop (worker CPU < 5 %), no log
# spam. After it: a pushed OkJob runs within 5 s and the process is back in `processes` (fresh
# hash with a TTL) within one beat.
# While Redis is down, something else on its port resets every connection at once (a proxy or NAT
# whose far side is cut): a plain connection that worked before is no TLS port, so the log names
# the reset (once) and never suggests rediss://.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start

ident="hh-reconnect-$$"
hh_start_worker -c 3 --identity "$ident" --heartbeat-interval 2 --exec "OkJob=$HH_HANDLERS/record.sh"
push_ok() {
    local jid; jid="$(hh_jid)"
    R lpush queue:default "{\"retry\":true,\"queue\":\"default\",\"class\":\"OkJob\",\"args\":[1],\"jid\":\"$jid\",\"created_at\":$(hh_now),\"enqueued_at\":$(hh_now)}" >/dev/null
    echo "$jid"
}
j1="$(push_ok)"
must_wait 15 'R lrange test:ran 0 -1 | grep -q '"$j1" "first job did not run within 15 s"
must_wait 10 '[ "$(R sismember processes "$ident")" = 1 ]' "identity $ident not in processes"
sleep 2   # idle: every thread back in its blocking fetch

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null; }
lines1="$(wc -l <"$WORKER_LOG")"
kill -KILL "$REDIS_PID"; wait "$REDIS_PID" 2>/dev/null
c1="$(cpu_ticks "$WORKER_PID")"
# accepts, then resets at once (SO_LINGER 0), as a proxy cut from Redis does
setsid ruby -rsocket -e 's = TCPServer.new("127.0.0.1", ARGV[0].to_i)
loop { c = s.accept; c.setsockopt(Socket::SOL_SOCKET, Socket::SO_LINGER, [1, 0].pack("ii")); c.close }' \
    "$REDIS_PORT" >/dev/null 2>&1 &
resetter=$!
hh_track_pid "$resetter"
must_wait 10 'grep -q "reset by" "$WORKER_LOG"' "the worker did not log the resets: $(tail -n 4 "$WORKER_LOG")"
sleep 4
assert_alive "$WORKER_PID" "worker exited while Redis was down"
c2="$(cpu_ticks "$WORKER_PID")"
hz="$(getconf CLK_TCK)"
cpu_pct="$(awk -v a="$c1" -v b="$c2" -v hz="$hz" 'BEGIN { printf "%.1f", (b - a) * 100 / hz / 5 }')"
assert_between "$cpu_pct" 0 5 "worker CPU % during the outage (no busy loop)"
lines2="$(wc -l <"$WORKER_LOG")"
[ $((lines2 - lines1)) -le 8 ] || fail "worker logged $((lines2 - lines1)) lines during a 5 s outage (log once per state change): $(tail -n 8 "$WORKER_LOG")"
assert_not_contains "$(cat "$WORKER_LOG")" "TLS port" "the log of a plain connection that worked before"
assert_eq "$(grep -c 'redis .*reset by' "$WORKER_LOG")" 1 "lines naming the resets (once per change)"
kill -KILL "$resetter"; wait "$resetter" 2>/dev/null

hh_redis_restart   # same port, empty dataset
t0=$(date +%s%N)
j2="$(push_ok)"
wait_until 5 'R lrange test:ran 0 -1 | grep -q '"$j2" \
    || fail "job pushed after the restart did not run within 5 s (queue=$(R llen queue:default)); the reconnect bound is <= 5 s"
hh_log "job ran $(( ($(date +%s%N) - t0) / 1000000 )) ms after the restart"
must_wait 4 '[ "$(R sismember processes "$ident")" = 1 ]' \
    "identity $ident not back in processes within one beat (+2 s) after the restart"
ttl="$(R ttl "$ident")"
assert_between "$ttl" 1 60 "TTL of the process hash $ident after the restart"
assert_alive "$WORKER_PID" "worker died after the restart"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "worker exit status after SIGTERM"
pass
