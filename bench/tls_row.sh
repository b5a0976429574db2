#!/usr/bin/env bash
# bench/tls_row.sh -- the TLS row of `make bench`: jobs/s processed over rediss:// as a ratio to
# plain redis:// to the same server, in the same run (goal: >= 0.7x at -c 10).
#
#   bench/tls_row.sh [-n JOBS] [-c CONCURRENCY] [-r RUNS]
#
# Self-contained: makes a CA and a server certificate with the openssl CLI in a temp dir, starts
# its own redis-server (no persistence) with a plain and a TLS port on 127.0.0.1, and for each
# transport, RUNS times, alternating: FLUSHALL, N NoopJob payloads pushed with redis-cli --pipe,
# then `hiredhand work -c C --require example_plugin.so` (a no-op C handler, reliable fetch) over
# that transport. The clock starts when the first job leaves the queue and stops when the queue
# and every in-progress list are empty, polled every 20 ms; the worker is then stopped and stat:processed must be exactly N.
# Prints key=value lines (tls_c<C>_plain_jobs_s, tls_c<C>_tls_jobs_s, tls_c<C>_ratio: medians)
# and, last, one markdown table row. Exit status 1 when a correctness check failed, 2 on usage.
#
# Environment: HIREDHAND (default build/hiredhand), HH_PLUGIN (default next to it,
# example_plugin.so).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
N=200000 C=10 RUNS=3
while [ $# -gt 0 ]; do
    case "$1" in
        -n) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || { echo "tls_row: -n needs a positive integer" >&2; exit 2; }; N=$2; shift 2 ;;
        -c) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || { echo "tls_row: -c needs a positive integer" >&2; exit 2; }; C=$2; shift 2 ;;
        -r) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || { echo "tls_row: -r needs a positive integer" >&2; exit 2; }; RUNS=$2; shift 2 ;;
        -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "tls_row: unknown argument $1" >&2; exit 2 ;;
    esac
done
HIREDHAND="${HIREDHAND:-$ROOT/build/hiredhand}"
PLUGIN="${HH_PLUGIN:-$(dirname "$HIREDHAND")/example_plugin.so}"
for f in "$HIREDHAND" "$PLUGIN"; do
    [ -e "$f" ] || { echo "tls_row: $f not found (build first)" >&2; exit 2; }
done

TMP="$(mktemp -d /tmp/hh-tls-bench.XXXXXX)"
REDIS_PID="" WORKER_PID=""
cleanup() {
    [ -n "$WORKER_PID" ] && kill -KILL "$WORKER_PID" 2>/dev/null
    [ -n "$REDIS_PID" ] && kill -KILL "$REDIS_PID" 2>/dev/null
    wait 2>/dev/null
    [ "${HH_BENCH_KEEP:-0}" = 1 ] && echo "tls_row: kept $TMP" >&2 || rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
note() { echo "tls_row: $*" >&2; }

free_port() {
    local p
    while :; do
        p=$((20000 + RANDOM % 20000))
        (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
    done
}

# --- certificates and the server
(
    cd "$TMP" && set -e
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=bench-ca
    openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=localhost
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >server.ext
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 -extfile server.ext
) >"$TMP/openssl.log" 2>&1 || { note "openssl failed: $(tail -n 3 "$TMP/openssl.log")"; exit 1; }
PORT="$(free_port)" TPORT="$(free_port)"
redis-server --port "$PORT" --tls-port "$TPORT" --bind 127.0.0.1 --dir "$TMP" --save "" --appendonly no \
    --tls-cert-file "$TMP/server.crt" --tls-key-file "$TMP/server.key" --tls-ca-cert-file "$TMP/ca.crt" \
    --tls-auth-clients no --logfile "$TMP/redis.log" </dev/null >/dev/null 2>&1 &
REDIS_PID=$!
R() { redis-cli -h 127.0.0.1 -p "$PORT" "$@"; }
for _ in $(seq 100); do [ "$(R ping 2>/dev/null)" = PONG ] && break; sleep 0.1; done
[ "$(R ping 2>/dev/null)" = PONG ] || { note "redis-server did not start: $(tail -n 3 "$TMP/redis.log")"; exit 1; }

# --- the jobs, pushed once into a file and replayed for every run
now="$(date +%s.%N)"
awk -v n="$N" -v now="$now" 'BEGIN {
    for (i = 0; i < n; i++) {
        p = sprintf("{\"retry\":true,\"queue\":\"default\",\"class\":\"NoopJob\",\"args\":[%d],\"jid\":\"%024x\",\"created_at\":%s,\"enqueued_at\":%s}", i, i, now, now)
        printf "*3\r\n$5\r\nLPUSH\r\n$13\r\nqueue:default\r\n$%d\r\n%s\r\n", length(p), p
    }
}' >"$TMP/jobs.resp"

# jobs not done yet: queued, or fetched and in a worker's in-progress list
LEFT="local n = redis.call('llen', 'queue:default')
for _, k in ipairs(redis.call('keys', 'hiredhand:inprogress:*')) do n = n + redis.call('llen', k) end
return n"
mono() { date +%s.%N; }
run_once() {   # URL [ARGS...] -> prints jobs/s; returns 1 on a correctness failure
    local url="$1"; shift
    R flushall >/dev/null
    R sadd queues default >/dev/null
    R --pipe <"$TMP/jobs.resp" >"$TMP/pipe.log" 2>&1 || { note "push failed: $(cat "$TMP/pipe.log")"; return 1; }
    [ "$(R llen queue:default)" = "$N" ] || { note "queue holds $(R llen queue:default), not $N"; return 1; }
    "$HIREDHAND" work -r "$url" "$@" -c "$C" --require "$PLUGIN" >"$TMP/worker.log" 2>&1 </dev/null &
    WORKER_PID=$!
    local t0="" t1="" len deadline=$((SECONDS + 600))
    while [ $SECONDS -lt $deadline ]; do
        len="$(R eval "$LEFT" 0)"
        [ -z "$t0" ] && [ "$len" -lt "$N" ] && t0="$(mono)"
        [ "$len" = 0 ] && { t1="$(mono)"; break; }
        kill -0 "$WORKER_PID" 2>/dev/null || { note "worker exited: $(tail -n 3 "$TMP/worker.log")"; return 1; }
        sleep 0.02
    done
    kill -TERM "$WORKER_PID"; wait "$WORKER_PID"; WORKER_PID=""
    [ -n "$t1" ] || { note "queue not drained within 600 s"; return 1; }
    local processed; processed="$(R get stat:processed)"
    [ "$processed" = "$N" ] || { note "stat:processed=$processed, expected $N"; return 1; }
    awk -v n="$N" -v c="$C" -v a="$t0" -v b="$t1" 'BEGIN { d = b - a; if (d < 0.01) d = 0.01; printf "%.0f\n", (n - c) / d }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

plain=() tls=()
for ((i = 0; i < RUNS; i++)); do
    r="$(run_once "redis://127.0.0.1:$PORT/0")" || exit 1; plain+=("$r"); note "run $((i + 1)): plain $r jobs/s"
    r="$(run_once "rediss://127.0.0.1:$TPORT/0" --tls-ca-file "$TMP/ca.crt")" || exit 1; tls+=("$r"); note "run $((i + 1)): TLS $r jobs/s"
done
p="$(printf '%s\n' "${plain[@]}" | median)"
t="$(printf '%s\n' "${tls[@]}" | median)"
ratio="$(awk -v t="$t" -v p="$p" 'BEGIN { printf "%.2f", t / p }')"
echo "tls_c${C}_plain_jobs_s=$p"
echo "tls_c${C}_tls_jobs_s=$t"
echo "tls_c${C}_ratio=$ratio"
echo "| processing over TLS (rediss://), c=$C, $N jobs | $t jobs/s | plain TCP: $p jobs/s | ${ratio}x (goal >= 0.7x) |"
