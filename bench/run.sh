#!/usr/bin/env bash
# bench/run.sh -- `make bench`: hiredhand against the real Sidekiq 6.4 on the same machine, in
# the same run. Machines here are shared and noisy: the ratios measured together are
# what holds, the absolute figures are not.
#
#   bench/run.sh [-n JOBS] [-c CONC,CONC...] [options]     (see --help)
#
# What it does, all on 127.0.0.1 and bounded in time:
#   1. starts a private redis-server on a free port (no persistence), stopped at the end;
#   2. hiredhand, through bench/hh_bench (bench.c, public C API only), per concurrency:
#      FLUSHALL, enqueue N no-op jobs with hh_client_push_bulk (1,000 per call), then process
#      them with a manager (reliable fetch) in a separate process; then pickup latency on an idle
#      manager with three queues (1,000 jobs at 200/s) followed by 10 s idle; then two pickup
#      runs, jobs pushed one at a time to an idle manager: -c 3 with 3 queues and one thread held
#      by a long job, and -c 10 with 100 queues;
#   3. when `require "sidekiq"` works, the same through bench/sidekiq_bench.rb: push_bulk, the real
#      `sidekiq` server, a middleware-timed pickup latency, idle;
#   4. prints one table with both systems and the ratios hiredhand/Sidekiq, and writes it as
#      markdown to bench/results.md (-o to change).
# Speed figures are printed, never asserted. The exit status is 1 only when a correctness check
# failed (stat:processed not grown by exactly N, a failed job, a crashed step), 2 on bad usage.
#
# Environment: HH_BENCH=/path/to/hh_bench (default: build/hh_bench when build/ is an optimized
# build, otherwise an optimized copy is built into build-bench/), HH_BENCH_KEEP=1 keeps the temp
# dir (logs of every step).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
N=100000
CONCS=10,25
BATCH=1000
LAT_JOBS=1000
RATE=200
IDLE=10
RUNS=1
PICK_JOBS=100
SETTLE=0.5
OUT="$ROOT/bench/results.md"
WITH_HH=1
WITH_SK=auto
CMDLINE="bench/run.sh${*:+ $*}"

usage() {
    cat <<EOF
usage: bench/run.sh [options]
  -n, --jobs N            jobs to enqueue and process per run (default $N)
  -c, --concurrency LIST  comma-separated worker concurrencies (default $CONCS)
  -b, --batch N           jobs per push_bulk call (default $BATCH)
  -j, --pickup-jobs N     jobs in the pickup-latency run (default $LAT_JOBS)
      --rate R            pickup-latency push rate, jobs/s (default $RATE)
      --idle S            idle measurement window, seconds (default $IDLE)
      --pickups N         jobs in each pickup run, pushed one at a time (default $PICK_JOBS)
  -r, --runs K            repeat the enqueue+process runs K times, report medians (default $RUNS)
  -o, --output FILE       markdown results file (default bench/results.md)
      --no-sidekiq        hiredhand only
      --no-hiredhand      Sidekiq only
  -h, --help
EOF
}

die_usage() { echo "bench: $*" >&2; usage >&2; exit 2; }
is_uint() { [[ "$1" =~ ^[1-9][0-9]*$ ]]; }
is_num() { [[ "$1" =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v v="$1" 'BEGIN { exit !(v > 0) }'; }

while [ $# -gt 0 ]; do
    case "$1" in
        -n|--jobs) is_uint "${2:-}" || die_usage "-n needs a positive integer"; N=$2; shift 2 ;;
        -c|--concurrency) [[ "${2:-}" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die_usage "-c needs a list like 10,25"
                          CONCS=$2; shift 2 ;;
        -b|--batch) is_uint "${2:-}" || die_usage "-b needs a positive integer"; BATCH=$2; shift 2 ;;
        -j|--pickup-jobs) is_uint "${2:-}" || die_usage "-j needs a positive integer"; LAT_JOBS=$2; shift 2 ;;
        --rate) is_num "${2:-}" || die_usage "--rate needs a positive number"; RATE=$2; shift 2 ;;
        --idle) is_num "${2:-}" || die_usage "--idle needs a positive number"; IDLE=$2; shift 2 ;;
        --pickups) is_uint "${2:-}" || die_usage "--pickups needs a positive integer"; PICK_JOBS=$2; shift 2 ;;
        -r|--runs) is_uint "${2:-}" || die_usage "-r needs a positive integer"; RUNS=$2; shift 2 ;;
        -o|--output) [ -n "${2:-}" ] || die_usage "-o needs a file"; OUT=$2; shift 2 ;;
        --no-sidekiq) WITH_SK=0; shift ;;
        --no-hiredhand) WITH_HH=0; shift ;;
        -h|--help) usage; exit 0 ;;
        *) die_usage "unknown argument: $1" ;;
    esac
done
IFS=, read -r -a CONC_LIST <<<"$CONCS"

log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
warn() { printf '[bench %s] WARNING: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

for tool in redis-server redis-cli timeout awk; do
    command -v "$tool" >/dev/null || { echo "bench: $tool is not installed (scripts/deps.sh test)" >&2; exit 2; }
done

# ------------------------------------------------------------------ clean-up

TMP="$(mktemp -d "${TMPDIR:-/tmp}/hh-bench.XXXXXX")" || exit 2
REDIS_PID=""
STEP_PID=""
FAILED=()

pid_alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }

stop_pid() {   # PID [GROUP=1]: TERM (the group too), up to 5 s, then KILL
    local pid="$1" group="${2:-1}" i
    pid_alive "$pid" || return 0
    [ "$group" = 1 ] && kill -TERM -- "-$pid" 2>/dev/null
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < 50; i++)); do pid_alive "$pid" || break; sleep 0.1; done
    if pid_alive "$pid"; then
        [ "$group" = 1 ] && kill -KILL -- "-$pid" 2>/dev/null
        kill -KILL "$pid" 2>/dev/null
    fi
    wait "$pid" 2>/dev/null
    return 0
}

cleanup() {
    local rc=$? p
    trap - EXIT INT TERM HUP PIPE
    # a running step: `timeout` leads its own process group (hh_bench, or the Ruby driver and
    # the sidekiq server it spawned)
    [ -n "$STEP_PID" ] && stop_pid "$STEP_PID" 1
    # a sidekiq server whose driver died without stopping it
    if [ -f "$TMP/sidekiq.pid" ]; then
        p="$(cat "$TMP/sidekiq.pid" 2>/dev/null)"
        if [[ "$p" =~ ^[0-9]+$ ]] && grep -qa sidekiq "/proc/$p/cmdline" 2>/dev/null; then
            stop_pid "$p" 0
        fi
    fi
    if [ -n "$REDIS_PID" ]; then
        redis-cli -h 127.0.0.1 -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1
        stop_pid "$REDIS_PID" 1
    fi
    if [ "${HH_BENCH_KEEP:-0}" = 1 ]; then
        echo "bench: kept $TMP" >&2
    else
        rm -rf -- "$TMP"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
trap 'exit 141' PIPE

# ------------------------------------------------------------------ what to run

build_type() { sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$1/CMakeCache.txt" 2>/dev/null; }

BUILD_NOTE=""
if [ -n "${HH_BENCH:-}" ]; then
    BUILD_NOTE="HH_BENCH=$HH_BENCH"
elif [ "$WITH_HH" = 1 ]; then
    HH_BENCH="$ROOT/build/hh_bench"
    bt="$(build_type "$ROOT/build")"
    BUILD_NOTE="build/ ($bt)"
    case "$bt" in
        Release|RelWithDebInfo|MinSizeRel) ;;
        *)
            # numbers from an unoptimized library would mislead: build an optimized copy. Some
            # warnings only appear at -O2 (flow analysis); if the strict build fails on one of
            # them, retry with those (and only those) not fatal, and say so in the results.
            log "build/ is a '${bt:-unknown}' build: building an optimized hh_bench in build-bench/"
            O2_ONLY="-Wno-error=format-truncation -Wno-error=format-overflow -Wno-error=stringop-truncation"
            O2_ONLY="$O2_ONLY -Wno-error=stringop-overflow -Wno-error=maybe-uninitialized -Wno-error=array-bounds"
            O2_ONLY="$O2_ONLY -Wno-error=restrict -Wno-error=null-dereference -Wno-unknown-warning-option"
            for flags in "" "$O2_ONLY"; do
                if timeout -k 5 600 cmake -S "$ROOT" -B "$ROOT/build-bench" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
                        -DHH_TESTS=OFF -DCMAKE_C_FLAGS="$flags" >"$TMP/build-bench.log" 2>&1 &&
                   timeout -k 5 600 cmake --build "$ROOT/build-bench" -j 2 --target hh_bench >>"$TMP/build-bench.log" 2>&1; then
                    HH_BENCH="$ROOT/build-bench/hh_bench"
                    [ -z "$flags" ] && BUILD_NOTE="build-bench/ (RelWithDebInfo)"
                    break
                fi
                if [ -z "$flags" ]; then
                    warn "the optimized build fails with warnings as errors (a hiredhand bug, see below);" \
                         "retrying with the -O2-only warnings not fatal"
                    grep -E 'error:|warning:' "$TMP/build-bench.log" | head -n 10 >&2
                    BUILD_NOTE="build-bench/ (RelWithDebInfo; -O2 warnings were errors: built with them not fatal)"
                else
                    warn "the optimized build failed (last lines below); measuring the '${bt:-unknown}' build/hh_bench instead"
                    tail -n 15 "$TMP/build-bench.log" >&2
                    BUILD_NOTE="build/ (${bt:-unknown}: UNOPTIMIZED, the optimized build failed)"
                fi
            done
            ;;
    esac
fi
if [ "$WITH_HH" = 1 ] && [ ! -x "$HH_BENCH" ]; then
    echo "bench: $HH_BENCH not found: run 'make build' (or make bench)" >&2
    exit 2
fi

SK_VERSION=""
if [ "$WITH_SK" != 0 ]; then
    if command -v ruby >/dev/null && command -v sidekiq >/dev/null &&
       SK_VERSION="$(ruby -e 'require "sidekiq"; print Sidekiq::VERSION' 2>/dev/null)"; then
        WITH_SK=1
    else
        log "ruby-sidekiq is not installed: hiredhand only"
        WITH_SK=0
        SK_VERSION=""
    fi
fi
if [ "$WITH_HH" != 1 ] && [ "$WITH_SK" != 1 ]; then echo "bench: nothing to run" >&2; exit 2; fi

# ------------------------------------------------------------------ redis

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
R() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" "$@"; }

start_redis() {
    local try i port
    for ((try = 0; try < 10; try++)); do
        port=$((20000 + RANDOM % 12000))
        port_in_use "$port" && continue
        setsid redis-server --port "$port" --bind 127.0.0.1 --protected-mode yes --save "" \
            --appendonly no --dir "$TMP" --daemonize no --logfile "$TMP/redis.log" \
            </dev/null >>"$TMP/redis.out" 2>&1 &
        REDIS_PID=$!
        REDIS_PORT=$port
        for ((i = 0; i < 50; i++)); do
            pid_alive "$REDIS_PID" || break
            [ "$(R ping 2>/dev/null)" = PONG ] && return 0
            sleep 0.1
        done
        stop_pid "$REDIS_PID" 1
        REDIS_PID=""
    done
    echo "bench: could not start redis-server: $(tail -n 5 "$TMP/redis.log" 2>/dev/null)" >&2
    exit 2
}

start_redis
REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0"
export REDIS_URL
log "redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') pid $REDIS_PID on 127.0.0.1:$REDIS_PORT"

flush() { [ "$(R flushall 2>/dev/null)" = OK ] || { warn "FLUSHALL failed"; return 1; }; }

# ------------------------------------------------------------------ steps

# run_step NAME TIMEOUT KVFILE CMD...: runs CMD bounded by TIMEOUT seconds in the background
# (so a signal to this script is handled at once), appends its key=value lines to KVFILE.
run_step() {
    local name="$1" t="$2" kv="$3" rc
    shift 3
    log "$name"
    timeout -k 5 "$t" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" </dev/null &
    STEP_PID=$!
    wait "$STEP_PID"
    rc=$?
    STEP_PID=""
    grep -E '^[a-z0-9_]+=' "$TMP/$name.out" >>"$kv"
    if [ "$rc" -ne 0 ]; then
        if [ "$rc" = 124 ]; then warn "$name timed out after $t s"; else warn "$name failed (exit $rc)"; fi
        tail -n 25 "$TMP/$name.err" >&2
        FAILED+=("$name")
    elif [ -s "$TMP/$name.err" ]; then
        warn "$name wrote to stderr:"
        tail -n 10 "$TMP/$name.err" >&2
    fi
    return "$rc"
}

HH_KV="$TMP/hiredhand.kv"
SK_KV="$TMP/sidekiq.kv"
: >"$HH_KV"
: >"$SK_KV"
SK_DRIVER=(ruby -W0 "$ROOT/bench/sidekiq_bench.rb")
SK_COMMON=(--url "$REDIS_URL" --tmp "$TMP" --pidfile "$TMP/sidekiq.pid" --settle "$SETTLE")
ENQ_T=$((60 + N / 2000))
PROC_T=$((30 + N / 1000))          # the wait for the last job, inside the step
STEP_T=$((PROC_T + 120))           # boot + settle + stop on top
LAT_T=$(awk -v j="$LAT_JOBS" -v r="$RATE" -v i="$IDLE" 'BEGIN { printf "%d", j / r + i + 120 }')
T_START=$(date +%s)

for ((run = 1; run <= RUNS; run++)); do
    for c in "${CONC_LIST[@]}"; do
        tag="run$run.c$c"
        if [ "$WITH_HH" = 1 ]; then
            flush &&
            run_step "hiredhand.enqueue.$tag" "$ENQ_T" "$HH_KV" "$HH_BENCH" enqueue -u "$REDIS_URL" -n "$N" -b "$BATCH" &&
            run_step "hiredhand.process.$tag" "$STEP_T" "$HH_KV" "$HH_BENCH" process -u "$REDIS_URL" -n "$N" -c "$c" \
                --settle "$SETTLE" --timeout "$PROC_T"
        fi
        if [ "$WITH_SK" = 1 ]; then
            flush &&
            run_step "sidekiq.enqueue.$tag" "$ENQ_T" "$SK_KV" "${SK_DRIVER[@]}" enqueue "${SK_COMMON[@]}" -n "$N" -b "$BATCH" &&
            run_step "sidekiq.process.$tag" "$STEP_T" "$SK_KV" "${SK_DRIVER[@]}" process "${SK_COMMON[@]}" -n "$N" -c "$c" \
                --timeout "$PROC_T"
        fi
    done
done
if [ "$WITH_HH" = 1 ]; then
    flush && run_step "hiredhand.latency" "$LAT_T" "$HH_KV" "$HH_BENCH" latency -u "$REDIS_URL" -c 10 \
        -j "$LAT_JOBS" --rate "$RATE" --idle "$IDLE" --settle "$SETTLE" --dump "$TMP/hiredhand.latency.dump"
fi
if [ "$WITH_SK" = 1 ]; then
    flush && run_step "sidekiq.latency" "$LAT_T" "$SK_KV" "${SK_DRIVER[@]}" latency "${SK_COMMON[@]}" -c 10 \
        -j "$LAT_JOBS" --rate "$RATE" --idle "$IDLE"
fi
PICK_T=$((PICK_JOBS / 5 + 120))
if [ "$WITH_HH" = 1 ]; then
    flush && run_step "hiredhand.pickup.busy" "$PICK_T" "$HH_KV" "$HH_BENCH" pickup -u "$REDIS_URL" -c 3 --queues 3 \
        --busy -j "$PICK_JOBS" --settle "$SETTLE" --prefix pickup_busy
    flush && run_step "hiredhand.pickup.many" "$PICK_T" "$HH_KV" "$HH_BENCH" pickup -u "$REDIS_URL" -c 10 --queues 100 \
        -j "$PICK_JOBS" --settle "$SETTLE" --prefix pickup_many
fi
if [ "$WITH_SK" = 1 ]; then
    flush && run_step "sidekiq.pickup.busy" "$PICK_T" "$SK_KV" "${SK_DRIVER[@]}" pickup "${SK_COMMON[@]}" -c 3 --queues 3 \
        --busy 1 -j "$PICK_JOBS" --prefix pickup_busy
    flush && run_step "sidekiq.pickup.many" "$PICK_T" "$SK_KV" "${SK_DRIVER[@]}" pickup "${SK_COMMON[@]}" -c 10 --queues 100 \
        -j "$PICK_JOBS" --prefix pickup_many
fi
ELAPSED=$(($(date +%s) - T_START))

# ------------------------------------------------------------------ results

# median per numeric key (min for *_ok), last value for the rest
aggregate() {
    awk -F= '
        { k = $1; v = substr($0, length($1) + 2)
          if (!(k in n)) order[++nk] = k
          vals[k, ++n[k]] = v; last[k] = v }
        END {
          for (i = 1; i <= nk; i++) {
            k = order[i]; m = n[k]
            if (last[k] !~ /^-?[0-9]+(\.[0-9]+)?$/) { print k "=" last[k]; continue }
            for (a = 1; a <= m; a++) x[a] = vals[k, a] + 0
            for (a = 2; a <= m; a++) { t = x[a]; for (b = a - 1; b >= 1 && x[b] > t; b--) x[b + 1] = x[b]; x[b + 1] = t }
            if (k ~ /_ok$/) med = x[1]
            else med = (m % 2) ? x[(m + 1) / 2] : (x[m / 2] + x[m / 2 + 1]) / 2
            print k "=" med
          }
        }' "$1"
}
aggregate "$HH_KV" >"$TMP/hh.med"
aggregate "$SK_KV" >"$TMP/sk.med"
get() { sed -n "s/^$2=//p" "$1" | tail -n 1; }   # FILE KEY

# fmt VALUE PRINTF-FORMAT [DIVISOR]
fmt() { awk -v v="$1" -v f="$2" -v d="${3:-1}" 'BEGIN { if (v == "") print "n/a"; else printf f "\n", v / d }'; }

# ratio HH SK: hh / sk
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        if (a == "" || b == "" || b + 0 == 0) { print "n/a"; exit }
        r = a / b
        if (r >= 100) printf "%.0fx\n", r; else if (r >= 10) printf "%.1fx\n", r
        else if (r >= 1) printf "%.2fx\n", r; else printf "%.3gx\n", r }'
}

# verdict KIND LIMIT HH SK -> "met"/"missed"/"" (targets; shown, never asserted)
verdict() {
    awk -v k="$1" -v l="$2" -v a="$3" -v b="$4" 'BEGIN {
        if (a == "") { print ""; exit }
        if (k == "ratio_ge") { if (b == "" || b + 0 == 0) { print ""; exit }; ok = (a / b >= l) }
        else if (k == "ratio_le") { if (b == "" || b + 0 == 0) { print ""; exit }; ok = (a / b <= l) }
        else if (k == "abs_lt") ok = (a + 0 < l)
        else if (k == "abs_le") ok = (a + 0 <= l)
        else { print ""; exit }
        print ok ? "met" : "MISSED" }'
}

ROWS=()   # "label|hh|sk|ratio|target"
add_row() {   # LABEL KEY FORMAT DIVISOR TARGET-TEXT KIND LIMIT
    local label="$1" key="$2" f="$3" div="$4" ttext="${5:-}" kind="${6:-}" limit="${7:-}" h s hv sv v=""
    h="$(get "$TMP/hh.med" "$key")"
    s="$(get "$TMP/sk.med" "$key")"
    [ -z "$h" ] && [ -z "$s" ] && return 0
    hv="$(fmt "$h" "$f" "$div")"
    sv="$(fmt "$s" "$f" "$div")"
    [ -n "$kind" ] && v="$(verdict "$kind" "$limit" "$h" "$s")"
    [ "$WITH_SK" = 1 ] || { sv="-"; }
    ROWS+=("$label|$hv|$sv|$( [ "$WITH_SK" = 1 ] && ratio "$h" "$s" || echo -)|${ttext}${v:+ ($v)}")
}

add_row "enqueue jobs/s (bulk, $BATCH per call)" enqueue_jobs_per_s "%.0f" 1 "ratio >= 3" ratio_ge 3
for c in "${CONC_LIST[@]}"; do
    if [ "$c" = 10 ]; then add_row "processing jobs/s, c=$c" "proc_c${c}_jobs_per_s" "%.0f" 1 "ratio >= 10" ratio_ge 10
    else add_row "processing jobs/s, c=$c" "proc_c${c}_jobs_per_s" "%.0f" 1; fi
done
for c in "${CONC_LIST[@]}"; do
    if [ "$c" = 10 ]; then add_row "worker CPU µs/job, c=$c" "proc_c${c}_cpu_us_per_job" "%.1f" 1 "ratio <= 0.1" ratio_le 0.1
    else add_row "worker CPU µs/job, c=$c" "proc_c${c}_cpu_us_per_job" "%.1f" 1; fi
done
for c in "${CONC_LIST[@]}"; do
    if [ "$c" = 10 ]; then add_row "peak RSS MiB, c=$c" "proc_c${c}_peak_rss_kib" "%.1f" 1024 "ratio <= 0.1" ratio_le 0.1
    else add_row "peak RSS MiB, c=$c" "proc_c${c}_peak_rss_kib" "%.1f" 1024; fi
done
add_row "pickup latency p50 ms (3 queues, ${RATE}/s)" lat_p50_ms "%.2f" 1
add_row "pickup latency p99 ms" lat_p99_ms "%.2f" 1 "ratio <= 1" ratio_le 1
add_row "pickup latency max ms" lat_max_ms "%.2f" 1
add_row "pickup p50 ms, c=3, 3 queues, 1 busy" pickup_busy_p50_ms "%.2f" 1
add_row "pickup p99 ms, c=3, 3 queues, 1 busy" pickup_busy_p99_ms "%.2f" 1 "hiredhand < 100" abs_lt 100
add_row "pickup max ms, c=3, 3 queues, 1 busy" pickup_busy_max_ms "%.2f" 1
add_row "pickup p50 ms, c=10, 100 queues" pickup_many_p50_ms "%.2f" 1
add_row "pickup p99 ms, c=10, 100 queues" pickup_many_p99_ms "%.2f" 1 "hiredhand < 100" abs_lt 100
add_row "pickup max ms, c=10, 100 queues" pickup_many_max_ms "%.2f" 1
add_row "Redis cmds/job, enqueue" enqueue_cmds_per_job "%.4f" 1
for c in "${CONC_LIST[@]}"; do
    add_row "Redis cmds/job, processing c=$c" "proc_c${c}_cmds_per_job" "%.2f" 1
done
add_row "idle CPU % (${IDLE} s, c=10, 3 queues)" idle_cpu_pct "%.2f" 1 "hiredhand < 1" abs_lt 1
add_row "idle Redis cmds/s" idle_cmds_per_s "%.1f" 1 "hiredhand a few (<= 5)" abs_le 5

SK_LABEL="Sidekiq ${SK_VERSION:-6.4}"
render() {   # FORMAT: text | md
    local r label hv sv rt tt w
    if [ "$1" = md ]; then
        printf '| metric | hiredhand | %s | ratio | target |\n|---|---:|---:|---:|---|\n' "$SK_LABEL"
    else
        printf '| %-44s | %12s | %13s | %8s | %s\n' "metric" "hiredhand" "$SK_LABEL" "ratio" "target"
        printf '|%s\n' "$(printf -- '-%.0s' {1..111})"
    fi
    for r in "${ROWS[@]}"; do
        IFS='|' read -r label hv sv rt tt <<<"$r"
        if [ "$1" = md ]; then
            printf '| %s | %s | %s | %s | %s |\n' "$label" "$hv" "$sv" "$rt" "$tt"
        else
            w=44
            case "$label" in *µ*) w=45 ;; esac   # printf pads bytes, µ is two
            printf "| %-${w}s | %12s | %13s | %8s | %s\n" "$label" "$hv" "$sv" "$rt" "$tt"
        fi
    done
}

details() {   # the per-command breakdowns and raw timings, for whoever optimizes
    local f sys k
    for sys in hiredhand sidekiq; do
        f="$TMP/hh.med"; [ "$sys" = sidekiq ] && f="$TMP/sk.med"
        [ -s "$f" ] || continue
        echo "$sys:"
        for k in $(sed -n 's/^\(.*_cmd_breakdown\)=.*/\1/p;s/^\(proc_c[0-9]*_seconds\)=.*/\1/p;s/^\(proc_c[0-9]*_cpu_pct\)=.*/\1/p;s/^\(enqueue_client_cpu_us_per_job\)=.*/\1/p;s/^\(lat_mean_ms\)=.*/\1/p;s/^\(lat_jobs\)=.*/\1/p' "$f"); do
            printf '  %s = %s\n' "$k" "$(get "$f" "$k")"
        done
    done
}

OKS="$(cat "$TMP/hh.med" "$TMP/sk.med" | sed -n 's/^[a-z0-9_]*_ok=//p' | sort -u | tr '\n' ' ')"
case "$OKS" in *0*) FAILED+=("a correctness check (see the CHECK FAILED lines above)") ;; esac

HOST_CPU="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)"
GIT_REV="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet HEAD -- src include 2>/dev/null || echo '+dirty src')"
HEADER="N=$N jobs, concurrency $CONCS, $RUNS run(s)$( [ "$RUNS" -gt 1 ] && echo ' (medians)'), pickup $LAT_JOBS jobs at ${RATE}/s and $PICK_JOBS one at a time, idle ${IDLE} s; $(nproc) CPUs (${HOST_CPU:-?}); redis $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p'); hiredhand ${GIT_REV:-?} from $BUILD_NOTE${SK_VERSION:+; Sidekiq $SK_VERSION on $(ruby -e 'print RUBY_DESCRIPTION.split(" ")[0..1].join(" ")')}; ${ELAPSED} s"

echo
echo "$HEADER"
render text
echo
details
{
    echo "# hiredhand vs Sidekiq benchmark"
    echo
    echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) — \`$CMDLINE\`"
    echo
    echo "$HEADER"
    echo
    render md
    echo
    echo "Ratios are hiredhand / Sidekiq, measured in the same run. Processing time runs from the moment"
    echo "the N jobs are released (RENAME) to a worker that has beaten once and settled, to the last job"
    echo "done; CPU is the worker process's user+sys over that window; commands are INFO commandstats"
    echo "deltas (commands run inside Lua scripts count too) from the release to after the stop."
    echo
    echo '```'
    details
    echo '```'
} >"$OUT.tmp" && mv -f "$OUT.tmp" "$OUT"
log "results written to ${OUT#"$ROOT"/}"

if [ ${#FAILED[@]} -gt 0 ]; then
    warn "failed: ${FAILED[*]}"
    exit 1
fi
exit 0
