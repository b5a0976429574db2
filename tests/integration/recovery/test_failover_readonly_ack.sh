#!/usr/bin/env bash
# Failover with --fetch reliable: READONLY and UNBLOCKED replies are
# connection errors, not job failures, and the pending ack is retried, not dropped.
# Worker --identity I -c 2 --heartbeat-interval 1 --poll-interval 1 (the scheduler reads about
# every second) runs SlowJob J (5 s). R REPLICAOF 127.0.0.1
# <a port where nothing listens> (data kept, writes refused) while J runs; 20 s later
# R REPLICAOF NO ONE.
# Expected: the worker never exits; READONLY/UNBLOCKED are logged as connection-level errors
# (connection lost ... reconnecting), never as job errors; J ran once and is neither retried nor
# failed (retry empty, stat:failed unchanged); within 10 s after NO ONE the in-progress list
# hiredhand:inprogress:I|default is empty, stat:processed has grown by exactly 1, the heartbeat
# hash I exists, and a new job pushed then runs.
# Last (checked after all of the above): during the 20 s of refused writes the worker does not
# reconnect in a tight loop -- the reconnect bound for an outage, reconnect attempts back off to <= 1/s
# per connection, applied to READONLY, which hiredhand treats as a connection error: at most
# 5 connections (2 fetchers, heartbeat, scheduler, recovery) x 20 s x 1/s + 10 new connections
# (INFO stats total_connections_received) and at most 100 log lines in the window.
# The state is logged once per change: one "connection lost" naming READONLY (or UNBLOCKED) when
# the writes are first refused, no "connection restored" while they are (the reads a replica
# still answers say nothing of the writes), and one "connection restored" after NO ONE.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
hh_require_binary
hh_redis_start

ident="rf-readonly-$$"
inprog="hiredhand:inprogress:$ident|default"
j="$HH_TMP/j.jids"; : >"$j"
rf_push default SlowJob 1 "$j"
jid="$(cat "$j")"
hh_start_worker -c 2 -t 5 --fetch reliable --identity "$ident" --heartbeat-interval 1 --poll-interval 1 \
    --exec "SlowJob=$RF_HANDLER 5" --exec "OkJob=$RF_HANDLER"
must_wait 10 '[ "$(rf_count "$RF_DIR/started" "$jid")" -ge 1 ]' "SlowJob did not start within 10 s"
must_wait 5 '[ "$(R exists "$ident")" = 1 ]' "no heartbeat hash $ident"
sleep 1.5   # a beat: counters flushed
processed0="$(R get stat:processed)"; processed0="${processed0:-0}"
failed0="$(R get stat:failed)"; failed0="${failed0:-0}"
assert_eq "$(R llen "$inprog")" 1 "LLEN $inprog while J runs"

deadport="$(hh_pick_free_port)"
conns0="$(R info stats | tr -d '\r' | sed -n 's/^total_connections_received://p')"
lines0="$(wc -l <"$WORKER_LOG")"
cpu0="$(rf_cpu_ticks "$WORKER_PID")"
R replicaof 127.0.0.1 "$deadport" >/dev/null || fail "REPLICAOF failed"
hh_log "Redis is now a replica of 127.0.0.1:$deadport (nothing listens): writes refused for 20 s"
sleep 20
assert_alive "$WORKER_PID" "worker exited while Redis refused writes"
conns1="$(R info stats | tr -d '\r' | sed -n 's/^total_connections_received://p')"
lines1="$(wc -l <"$WORKER_LOG")"
cpu1="$(rf_cpu_ticks "$WORKER_PID")"
R replicaof no one >/dev/null || fail "REPLICAOF NO ONE failed"
new_conns=$((conns1 - conns0 - 2))   # our own two redis-cli connections
window_log="$(sed -n "$((lines0 + 1)),${lines1}p" "$WORKER_LOG")"
lost_lines="$(grep -cE 'redis .*: (connection lost|cannot connect) \(' <<<"$window_log")"
restored_lines="$(grep -c 'connection restored' <<<"$window_log")"
new_lines=$((lines1 - lines0))
cpu="$(awk -v a="$cpu0" -v b="$cpu1" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", (b - a) * 100 / hz / 20 }')"
hh_log "during 20 s of READONLY: $new_conns new connections, $new_lines log lines, worker CPU $cpu %"
t0=$SECONDS
must_wait 10 '[ "$(R llen "$inprog")" = 0 ]' \
    "$inprog still holds $(R llen "$inprog") job(s) 10 s after REPLICAOF NO ONE: the ack of J was dropped, not retried (J would run again after a restart)"
must_wait 10 '[ "$(R get stat:processed)" = $((processed0 + 1)) ]' \
    "stat:processed is $(R get stat:processed) 10 s after NO ONE; want $((processed0 + 1)) (was $processed0 before the failover)"
hh_log "ack written and stat:processed +1 within $((SECONDS - t0)) s after NO ONE"
assert_eq "$(rf_count "$RF_DIR/started" "$jid")" 1 "starts of J"
assert_eq "$(rf_count "$RF_DIR/done" "$jid")" 1 "completions of J"
assert_eq "$(R zcard retry)" 0 "ZCARD retry (J must not be retried)"
failed1="$(R get stat:failed)"; failed1="${failed1:-0}"
assert_eq "$failed1" "$failed0" "stat:failed"
assert_eq "$(R llen queue:default)" 0 "LLEN queue:default (J not pushed back)"
must_wait 5 '[ "$(R exists "$ident")" = 1 ]' "heartbeat hash $ident missing after NO ONE"
if grep -E 'READONLY|UNBLOCKED' "$WORKER_LOG" | grep -qE 'jid=|failed in|ExecFailed'; then
    fail "READONLY/UNBLOCKED logged as a job error: $(grep -E 'READONLY|UNBLOCKED' "$WORKER_LOG" | grep -E 'jid=|failed in' | head -n 3)"
fi
grep -qE 'connection lost \([a-z]+\): (READONLY|UNBLOCKED|EXECABORT)' "$WORKER_LOG" \
    || fail "no connection-level READONLY/UNBLOCKED line in the log: $(grep -iE 'readonly|unblocked|error' "$WORKER_LOG" | head -n 5)"
assert_eq "$lost_lines" 1 "lines saying the connection was lost during the 20 s of READONLY (once per change: $(grep -E 'connection lost|cannot connect|still unavailable|restored' <<<"$window_log" | cut -c1-160 | head -n 6 | tr '\n' '|'))"
assert_eq "$restored_lines" 0 "\"connection restored\" lines while Redis still refused writes ($(grep -E 'connection lost|restored' <<<"$window_log" | cut -c1-160 | head -n 6 | tr '\n' '|'))"
must_wait 10 '[ "$(sed -n "$((lines1 + 1)),\$p" "$WORKER_LOG" | grep -c "connection restored")" -ge 1 ]' "no \"connection restored\" within 10 s after NO ONE"
ok="$HH_TMP/ok.jids"; : >"$ok"
rf_push default OkJob 1 "$ok"
must_wait 10 '[ "$(rf_count "$RF_DIR/done" "$(cat "$ok")")" = 1 ]' "a job pushed after NO ONE did not run within 10 s"
assert_eq "$(sed -n "$((lines1 + 1)),\$p" "$WORKER_LOG" | grep -c 'connection restored')" 1 "\"connection restored\" lines after NO ONE"
hh_stop_worker TERM 15
assert_eq "$WORKER_RC" 0 "exit status after SIGTERM"
if [ "$new_conns" -gt 110 ] || [ "$new_lines" -gt 100 ]; then
    fail "the failover itself was handled (J once, ack retried, processed +1, no job error), but during the 20 s of READONLY the worker reconnected in a tight loop: $new_conns new connections (want <= 110: <= 1/s per connection), $new_lines log lines (want <= 100), worker CPU $cpu %; reconnects per connection: $(sed -n "$((lines0 + 1)),${lines1}p" "$WORKER_LOG" | grep -o 'connected ([a-z]*)' | sort | uniq -c | tr -s ' \n' ' '); sample: $(sed -n "$((lines0 + 1)),${lines1}p" "$WORKER_LOG" | grep '(fetch)' | sed -n '3,6p' | cut -c1-200 | tr '\n' '|')"
fi
pass "failover: J ran once, its ack was retried, processed +1, no job error"
