#!/usr/bin/env bash
# Slow clients must not starve the liveness probe (`--http`, docs/security.md):
#   A. 260 clients from one address (127.0.0.2) sending a header byte a second: /healthz, polled
#      from 127.0.0.1 with a 1 s timeout, answers 200 every time (the per-address limit);
#   B. 40 such clients spread over ten addresses (under the per-address limit): the server cuts
#      every one of them within the header deadline (3 s) plus slack, although each sends a byte
#      a second (which the idle timeout alone never cuts);
#   C. a worker with 256 descriptors (total limit 64) under 260 clients from 26 addresses:
#      it never holds more than the total limit of client connections, and keeps beating.
# Every client runs on lo (127.0.0.0/8); the probe is the only one from 127.0.0.1.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
command -v curl >/dev/null || fail "curl is not installed (apt-get install curl)"
command -v ruby >/dev/null || fail "ruby is not installed (apt-get install ruby)"
command -v ss >/dev/null || fail "ss is not installed (apt-get install iproute2)"
hh_redis_start
SLOW="$HH_LIB_DIR/slowloris.rb"

# ips FIRST COUNT: 127.0.0.FIRST,... COUNT addresses
ips() { local i out=""; for ((i = $1; i < $1 + $2; i++)); do out+="${out:+,}127.0.0.$i"; done; echo "$out"; }

# slow SECONDS IPS PER_IP: starts the clients in the background (SLOW_PID, SLOW_OUT), waits
# until each was tried once
slow() {
    SLOW_OUT="$HH_TMP/slow.$RANDOM.out"
    local ready="$SLOW_OUT.ready"
    ruby "$SLOW" 127.0.0.1 "$port" "$1" "$2" "$3" "$ready" >"$SLOW_OUT" 2>&1 &
    SLOW_PID=$!
    hh_track_pid "$SLOW_PID"
    must_wait 30 '[ -e "$ready" ]' "the slow clients did not start: $(cat "$SLOW_OUT")"
}

# probe SECONDS: GET /healthz every 0.2 s, 1 s timeout each; fails unless every one is a 200
probe() {
    local end=$(( $(date +%s) + $1 )) n=0 bad=0 worst=0 out code t ms
    while [ "$(date +%s)" -lt "$end" ]; do
        out="$(curl -s -o /dev/null --max-time 1 -w '%{http_code} %{time_total}' "http://127.0.0.1:$port/healthz" 2>/dev/null)"
        code="${out%% *}"; t="${out##* }"
        ms="$(awk -v t="$t" 'BEGIN { printf "%d", t * 1000 }')"
        n=$((n + 1))
        [ "$ms" -gt "$worst" ] && worst=$ms
        [ "$code" = 200 ] || { bad=$((bad + 1)); hh_log "probe $n: code ${code:-none} after ${ms} ms"; }
        sleep 0.2
    done
    hh_log "$n probes, $bad failed, slowest ${worst} ms"
    [ "$bad" -eq 0 ] || fail "$bad of $n /healthz probes did not answer 200 within 1 s"
}

port="$(hh_pick_free_port)"
hh_start_worker -c 1 --heartbeat-interval 1 --http "127.0.0.1:$port"
must_wait 10 '[ "$(curl -s -o /dev/null --max-time 1 -w "%{http_code}" "http://127.0.0.1:$port/healthz")" = 200 ]' \
    "/healthz did not answer 200 within 10 s of start"

# ------------------------------------------------------------------ A: one address, 260 clients
slow 14 127.0.0.2 260
probe 8
wait "$SLOW_PID"
hh_log "A: $(cat "$SLOW_OUT")"

# ------------------------------------------------------------------ B: the header deadline
slow 12 "$(ips 10 10)" 4
probe 3
wait "$SLOW_PID"
hh_log "B: $(cat "$SLOW_OUT")"
read -r _ cut life <<<"$(tr '=' ' ' <"$SLOW_OUT" | awk '{ print $2, $4, $6 }')"
assert_between "$life" 0 6 "the longest slow connection lived $life s (header deadline 3 s)"
[ "$cut" -ge 40 ] || fail "the server cut only $cut slow connections in 12 s (40 clients, deadline 3 s)"
assert_alive "$WORKER_PID" "the worker died under slow clients"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "worker exit status"

# ------------------------------------------------------------------ C: the total limit
wrap="$HH_TMP/hiredhand-256fd"
printf '#!/bin/sh\nulimit -n 256 || exit 99\nexec "%s" "$@"\n' "$HIREDHAND" >"$wrap"
chmod +x "$wrap"
HIREDHAND="$wrap" hh_start_worker -c 1 --heartbeat-interval 1 --http "127.0.0.1:$port"
must_wait 10 '[ "$(curl -s -o /dev/null --max-time 1 -w "%{http_code}" "http://127.0.0.1:$port/healthz")" = 200 ]' \
    "/healthz (256 descriptors) did not answer 200 within 10 s of start"
assert_contains "$(cat "$WORKER_LOG")" "at most 64 connections" "a quarter of 256 descriptors"
# this worker's own identity, once its first beat is in Redis (/healthz answers before that)
must_wait 10 'grep -q " starting: identity=" "$WORKER_LOG"' "the worker logged no start line within 10 s"
identity="$(sed -n 's/.* starting: identity=\([^ ]*\) .*/\1/p' "$WORKER_LOG" | head -n 1)"
must_wait 10 '[ -n "$(R hget "$identity" beat)" ]' "the worker ($identity) did not beat within 10 s of start"
beat0="$(R hget "$identity" beat)"
slow 10 "$(ips 20 26)" 10
most=0
for _ in $(seq 1 12); do
    # the worker's own sockets: ones waiting in the listen backlog are the kernel's
    n="$(ss -Htnp state established "( sport = :$port )" 2>/dev/null | grep -c "pid=$WORKER_PID,")"
    [ "$n" -gt "$most" ] && most=$n
    sleep 0.5
done
wait "$SLOW_PID"
hh_log "C: $(cat "$SLOW_OUT"); at most $most client connections held"
[ "$most" -le 68 ] || fail "the worker held $most client connections (total limit 64)"
[ "$most" -ge 32 ] || fail "only $most connections held: the clients did not load the worker"
assert_alive "$WORKER_PID" "the worker died under 260 clients with 256 descriptors"
must_wait 5 '[ "$(R hget "$identity" beat)" != "$beat0" ]' "the worker stopped beating under load"
must_wait 10 '[ "$(curl -s -o /dev/null --max-time 1 -w "%{http_code}" "http://127.0.0.1:$port/healthz")" = 200 ]' \
    "/healthz did not come back after the clients left"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "worker exit status"
pass
