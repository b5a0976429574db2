#!/usr/bin/env bash
# bench/serve_rows.sh -- no-op job throughput at c=10 with a Python handler, through --serve
# (long-lived processes running examples/serve/handler.py) and through --exec (one python3 per job), beside Sidekiq 6.4 running the same jobs as native Ruby (bench/sidekiq_bench.rb's NoopJob)
# in the same run, on a private Redis. Prints key=value lines, then a table:
#   serve_py_pool<N>_jobs_per_s (N: $SERVE_POOLS, default "<cores> 10"), exec_py_jobs_per_s,
#   sidekiq_ruby_jobs_per_s (and _seconds, _ok). Exit status 0 when every row ran and checked out.
# Usage: bench/serve_rows.sh [-n JOBS] [--exec-jobs N] [--hiredhand PATH]
#   -n JOBS        jobs for the --serve and Sidekiq rows (default 20000)
#   --exec-jobs N  jobs for the --exec row, which starts an interpreter per job (default 200)
# Needs redis-server, python3, ruby with the sidekiq gem, and a built hiredhand (build/hiredhand).
# --serve-pool starts the Python processes with the worker, as Sidekiq boots before its clock
# starts. Each hiredhand row: jobs enqueued (by the same Ruby client), moved aside while the worker starts
# and beats, moved back; the clock runs until stat:processed (flushed every 0.1 s here) grew by N.
set -u -o pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
N=20000
EXEC_N=200
HH="$ROOT/build/hiredhand"
while [ $# -gt 0 ]; do
    case "$1" in
    -n) N="$2"; shift 2 ;;
    --exec-jobs) EXEC_N="$2"; shift 2 ;;
    --hiredhand) HH="$2"; shift 2 ;;
    *) echo "usage: $0 [-n JOBS] [--exec-jobs N] [--hiredhand PATH]" >&2; exit 2 ;;
    esac
done
[ -x "$HH" ] || { echo "serve_rows: $HH not built" >&2; exit 2; }
# the interpreter itself, not a version-manager shim (a shell script in front of every --exec job)
PY="$(python3 -c 'import sys; print(sys.executable)')" || { echo "serve_rows: no python3" >&2; exit 2; }

TMP="$(mktemp -d "${TMPDIR:-/tmp}/hh-serve-rows.XXXXXX")"
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do
        kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    [ -f "$TMP/sidekiq.pid" ] && kill -KILL "$(cat "$TMP/sidekiq.pid")" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

PORT=""
for _ in $(seq 1 50); do
    p=$((20000 + RANDOM % 30000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { PORT=$p; break; }
done
[ -n "$PORT" ] || { echo "serve_rows: no free port" >&2; exit 1; }
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$TMP" >"$TMP/redis.log" 2>&1 &
PIDS+=($!)
R() { redis-cli -h 127.0.0.1 -p "$PORT" "$@"; }
for _ in $(seq 1 300); do [ "$(R ping 2>/dev/null)" = PONG ] && break; sleep 0.1; done
[ "$(R ping 2>/dev/null)" = PONG ] || { echo "serve_rows: redis-server on port $PORT did not start:" >&2; tail -5 "$TMP/redis.log" >&2; exit 1; }
export REDIS_URL="redis://127.0.0.1:$PORT/0"
SK=(ruby -W0 "$ROOT/bench/sidekiq_bench.rb")

kv() { echo "$1=$2"; eval "KV_$1=\$2"; }
ALL_OK=1
# --serve rows: a pool of one process per core (what a CPU-bound handler wants), and one per thread
POOLS="${SERVE_POOLS:-$(nproc) 10}"

# hiredhand_row NAME JOBS HANDLER-OPTIONS...: jobs/s of a no-op NoopJob through `hiredhand work -c 10`
hiredhand_row() {
    local name="$1" n="$2"; shift 2
    R flushall >/dev/null
    "${SK[@]}" enqueue --url "$REDIS_URL" -n "$n" >/dev/null || { kv "${name}_ok" 0; return; }
    R rename queue:default bench:staging >/dev/null
    setsid "$HH" work -r "$REDIS_URL" -c 10 --heartbeat-interval 0.1 "$@" >"$TMP/$name.log" 2>&1 &
    local wpid=$!
    PIDS+=("$wpid")
    local i
    for i in $(seq 1 300); do [ "$(R scard processes)" = 1 ] && break; sleep 0.05; done
    sleep 1 # settle, as the Sidekiq row
    local p0; p0="$(R get stat:processed)"; p0=${p0:-0}
    local t0; t0="$(date +%s.%N)"
    R rename bench:staging queue:default >/dev/null
    local deadline=$((SECONDS + 60 + n)) p=0
    while [ $SECONDS -lt $deadline ]; do
        p="$(R get stat:processed)"; p=$(( ${p:-0} - p0 ))
        [ "$p" -ge "$n" ] && break
        sleep 0.02
    done
    local t1; t1="$(date +%s.%N)"
    kill -TERM "$wpid"; wait "$wpid" 2>/dev/null
    local failed; failed="$(R get stat:failed)"
    if [ "$p" -ge "$n" ] && [ "${failed:-0}" = 0 ]; then
        kv "${name}_seconds" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')"
        kv "${name}_jobs_per_s" "$(awk -v a="$t0" -v b="$t1" -v n="$n" 'BEGIN { printf "%.0f", n / (b - a) }')"
        kv "${name}_ok" 1
    else
        echo "serve_rows: $name: $p of $n processed, $failed failed; log $TMP/$name.log:" >&2
        tail -5 "$TMP/$name.log" >&2
        kv "${name}_ok" 0
    fi
}

for pool in $POOLS; do
    hiredhand_row "serve_py_pool$pool" "$N" --serve-pool "$pool" --serve "NoopJob=$PY $ROOT/examples/serve/handler.py"
done
hiredhand_row exec_py "$EXEC_N" --exec "NoopJob=$PY -c pass"

R flushall >/dev/null
"${SK[@]}" enqueue --url "$REDIS_URL" -n "$N" >/dev/null &&
    "${SK[@]}" process --url "$REDIS_URL" -n "$N" -c 10 --tmp "$TMP" --pidfile "$TMP/sidekiq.pid" >"$TMP/sk.kv" 2>"$TMP/sk.err"
sk="$(sed -n 's/^proc_c10_jobs_per_s=//p' "$TMP/sk.kv")"
if [ -n "$sk" ]; then
    kv sidekiq_ruby_jobs_per_s "$sk"
    kv sidekiq_ruby_seconds "$(sed -n 's/^proc_c10_seconds=//p' "$TMP/sk.kv")"
    kv sidekiq_ruby_ok "$(sed -n 's/^proc_c10_ok=//p' "$TMP/sk.kv")"
else
    echo "serve_rows: the Sidekiq row failed:" >&2
    tail -5 "$TMP/sk.err" >&2
    kv sidekiq_ruby_ok 0
fi

printf '\n| no-op jobs/s, c=10 | jobs | jobs/s |\n|---|---|---|\n'
for pool in $POOLS; do
    eval "v=\${KV_serve_py_pool${pool}_jobs_per_s:-failed}"
    printf '| hiredhand --serve, Python (examples/serve/handler.py), --serve-pool %s | %s | %s |\n' "$pool" "$N" "$v"
    eval "ok=\${KV_serve_py_pool${pool}_ok:-0}"
    [ "$ok" = 1 ] || ALL_OK=0
done
printf '| hiredhand --exec, Python (python3 -c pass per job) | %s | %s |\n' "$EXEC_N" "${KV_exec_py_jobs_per_s:-failed}"
printf '| Sidekiq 6.4, native Ruby NoopJob | %s | %s |\n' "$N" "${KV_sidekiq_ruby_jobs_per_s:-failed}"
[ "$ALL_OK${KV_exec_py_ok:-0}${KV_sidekiq_ruby_ok:-0}" = 111 ]
