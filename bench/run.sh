#!/usr/bin/env bash
# bench/run.sh -- `make bench`: hiredhand against its peers on the same machine, in the same run:
# Debian's Sidekiq 6.4, Sidekiq 7.3, BullMQ (Node) and gocraft/work (Go), each one row. Machines
# here are shared and noisy: the ratios measured together are what holds, the absolute figures
# are not.
#
#   bench/run.sh [--quick] [-r RUNS] [-n JOBS] [-c CONC,CONC...] [options]     (see --help)
#
# What it does, all on 127.0.0.1 and bounded in time:
#   1. starts a private redis-server on a free port (no persistence), stopped at the end;
#   2. finds the systems (a system that is not there is skipped with a note, except hiredhand);
#   3. run by run, systems interleaved: for every concurrency and every system, FLUSHALL, enqueue
#      N jobs in bulk, then drain them with the system's worker in a process of its own. The job
#      is the same everywhere: a no-op that does one counter increment and marks its index, so
#      every driver checks that each job ran exactly once;
#   4. hiredhand alone, run by run: the shapes (queues, worker processes, concurrency, basic
#      fetch) with Redis CPU per job and the fraction of the Redis-bound limit;
#   5. run by run too, per system: pickup latency on three queues at a fixed rate, then idle
#      cost; for hiredhand and Sidekiq also pickup of jobs pushed one at a time to an idle worker,
#      and Redis's cost of a trickle (50 jobs/s to an idle worker on 5,000 strict queues, and on
#      one queue for reference);
#   6. prints medians (min-max over -r runs) with the ratios hiredhand/peer, and writes the same
#      as markdown to bench/results.md (-o to change).
# With --against REF, hiredhand as it was at git commit REF is one more row, "hiredhand@<sha>",
# interleaved with the others in the drains, the shapes and the pickup runs: its hh_bench is built
# out of tree (git archive into build-bench/against-<sha>/, RelWithDebInfo, kept for the next run)
# from REF's library and this tree's driver (bench/bench.c), so both rows run the same driver code
# and the same checks, and the ratio hiredhand / hiredhand@<sha> says what changed since REF.
# Speed figures are printed, never asserted. The exit status is 1 only when a correctness check
# failed (a job that ran twice or never, a counter that does not match, a failed job, a crashed
# or timed-out step), 2 on bad usage.
#
# A row is one system: a sys_<id> function (find it, say its label, set the driver command in
# CMD and EXTRA) and one add_system call; every driver takes the same modes and flags (enqueue,
# process, latency; -u -n -b -c --timeout -j --rate --idle) and prints key=value lines.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
N=100000
CONCS=10,25,100
BATCH=1000
LAT_JOBS=1000
RATE=200
IDLE=10
RUNS=1
PICK_JOBS=100
TRICKLE_JOBS=500
TRICKLE_QUEUES=5000
TRICKLE_RATE=50
SETTLE=0.5
OUT="$ROOT/bench/results.md"
QUICK=0
EXTRAS=1
SHAPES=1
INSTALL=1
ONLY=""
SKIP=""
AGAINST=""
CMDLINE="bench/run.sh${*:+ $*}"
PEERS="${HH_PEERS_DIR:-/work/shared/peers}"
NODE_DIR="${HH_BENCH_NODE_DIR:-$ROOT/build-bench/node}"
GO_DIR="${HH_BENCH_GO_DIR:-$ROOT/build-bench/go}"

usage() {
    cat <<USAGE
usage: bench/run.sh [options]
  -q, --quick             small and short (< 5 min): N=5000, c=10, fewer shapes, short idle and trickles;
                          options after --quick override its values
  -n, --jobs N            jobs to enqueue and drain per run (default $N)
  -c, --concurrency LIST  comma-separated worker concurrencies for every system (default $CONCS)
  -r, --runs K            repeat the drains and shapes K times, systems interleaved run by run;
                          medians with min-max (default $RUNS)
  -b, --batch N           jobs per bulk enqueue call (default $BATCH)
  -j, --pickup-jobs N     jobs in the pickup-latency run (default $LAT_JOBS)
      --rate R            pickup-latency push rate, jobs/s (default $RATE)
      --idle S            idle measurement window, seconds (default $IDLE)
      --pickups N         jobs in each one-at-a-time pickup run (default $PICK_JOBS)
      --trickle-jobs N    jobs in each trickle run ($TRICKLE_RATE/s, $TRICKLE_QUEUES queues and 1; default $TRICKLE_JOBS)
  -s, --systems LIST      only these systems (hiredhand,sidekiq64,sidekiq73,bullmq,gocraft)
      --no-sidekiq        without Sidekiq (6.4 and 7.3)
      --no-peers          hiredhand alone
      --no-shapes         without hiredhand's shapes
      --no-install        never npm ci / go build; a peer not ready is skipped
      --no-extras         without the TLS and any-language rows (bench/tls_row.sh,
                          bench/serve_rows.sh; off in --quick)
      --against REF       one more row: hiredhand at git commit REF (built once into
                          build-bench/against-<sha>/ with this tree's driver), interleaved with
                          the others; the ratio column hh / hiredhand@<sha> is current / REF
  -o, --output FILE       markdown results file (default bench/results.md)
  -h, --help
Environment:
  HH_PEERS_DIR      folder with the peers' unmodified sources: ruby73 (Sidekiq 7.3.10 on Debian's
                    Ruby) and gocraft-work/ (default /work/shared/peers); absent: those rows are
                    skipped with a note. Nothing of it is copied into the repo.
  HH_BENCH_NODE_DIR where BullMQ is installed from bench/package-lock.json (default build-bench/node)
  HH_BENCH_GO_DIR   GOPATH where gocraft_bench is built (default build-bench/go)
  HH_BENCH          hh_bench to measure (default build/hh_bench when optimized, else build-bench/)
  HH_BENCH_AGAINST  with --against: this hh_bench is the REF row's driver, nothing is built
  HH_BENCH_KEEP=1   keep the temp dir with the logs of every step
  BENCH_FAULT=drop  (hh_bench) acknowledge job [0] without running it: the checks must fail
USAGE
}

die_usage() { echo "bench: $*" >&2; usage >&2; exit 2; }
is_uint() { [[ "$1" =~ ^[1-9][0-9]*$ ]]; }
is_num() { [[ "$1" =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v v="$1" 'BEGIN { exit !(v > 0) }'; }
ALL_SYSTEMS="hiredhand,sidekiq64,sidekiq73,bullmq,gocraft"

while [ $# -gt 0 ]; do
    case "$1" in
        -q|--quick) QUICK=1; EXTRAS=0; N=5000; CONCS=10; RUNS=1; LAT_JOBS=200; IDLE=2; PICK_JOBS=20; TRICKLE_JOBS=50; shift ;;
        -n|--jobs) is_uint "${2:-}" || die_usage "-n needs a positive integer"; N=$2; shift 2 ;;
        -c|--concurrency) [[ "${2:-}" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die_usage "-c needs a list like 10,25"
                          CONCS=$2; shift 2 ;;
        -b|--batch) is_uint "${2:-}" || die_usage "-b needs a positive integer"; BATCH=$2; shift 2 ;;
        -j|--pickup-jobs) is_uint "${2:-}" || die_usage "-j needs a positive integer"; LAT_JOBS=$2; shift 2 ;;
        --rate) is_num "${2:-}" || die_usage "--rate needs a positive number"; RATE=$2; shift 2 ;;
        --idle) is_num "${2:-}" || die_usage "--idle needs a positive number"; IDLE=$2; shift 2 ;;
        --pickups) is_uint "${2:-}" || die_usage "--pickups needs a positive integer"; PICK_JOBS=$2; shift 2 ;;
        --trickle-jobs) is_uint "${2:-}" || die_usage "--trickle-jobs needs a positive integer"; TRICKLE_JOBS=$2; shift 2 ;;
        -r|--runs) is_uint "${2:-}" || die_usage "-r needs a positive integer"; RUNS=$2; shift 2 ;;
        -o|--output) [ -n "${2:-}" ] || die_usage "-o needs a file"; OUT=$2; shift 2 ;;
        -s|--systems) [[ "${2:-}" =~ ^[a-z0-9]+(,[a-z0-9]+)*$ ]] || die_usage "-s needs a list like hiredhand,bullmq"
                      for x in ${2//,/ }; do [[ ",$ALL_SYSTEMS," == *",$x,"* ]] || die_usage "unknown system $x"; done
                      ONLY=",$2,"; shift 2 ;;
        --no-sidekiq) SKIP="$SKIP,sidekiq64,sidekiq73,"; shift ;;
        --no-hiredhand) die_usage "hiredhand is the reference of every ratio: it always runs" ;;
        --no-peers) ONLY=",hiredhand,"; shift ;;
        --no-shapes) SHAPES=0; shift ;;
        --no-install) INSTALL=0; shift ;;
        --no-extras) EXTRAS=0; shift ;;
        --against) [ -n "${2:-}" ] || die_usage "--against needs a git commit"; AGAINST=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) die_usage "unknown argument: $1" ;;
    esac
done
IFS=, read -r -a CONC_LIST <<<"$CONCS"
WITH_HH=1
wanted() { [[ ",$SKIP," != *",$1,"* ]] && { [ -z "$ONLY" ] || [[ "$ONLY" == *",$1,"* ]]; }; }

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

# Some warnings only appear at -O2 (flow analysis): an optimized build that fails on one of them
# is retried with those (and only those) not fatal, and the results say so.
O2_ONLY="-Wno-error=format-truncation -Wno-error=format-overflow -Wno-error=stringop-truncation"
O2_ONLY="$O2_ONLY -Wno-error=stringop-overflow -Wno-error=maybe-uninitialized -Wno-error=array-bounds"
O2_ONLY="$O2_ONLY -Wno-error=restrict -Wno-error=null-dereference -Wno-unknown-warning-option"

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
            # numbers from an unoptimized library would mislead: build an optimized copy
            log "build/ is a '${bt:-unknown}' build: building an optimized hh_bench in build-bench/"
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

# --against REF: hiredhand's library at commit REF with this tree's driver. The sources come from
# `git archive` (REF as committed, whatever the work tree holds) into build-bench/against-<sha>/src,
# the build goes to .../build; both stay for the next run against the same commit, where only a
# changed driver is rebuilt. When this tree's bench/bench.c does not build against REF's library
# (a public API it uses came later), REF's own bench/bench.c is the driver, and the results say so.
AGAINST_BENCH=""
AGAINST_NOTE=""
build_against() {   # sets AGAINST_BENCH and AGAINST_NOTE, or prints why not and returns 1
    local dir="$ROOT/build-bench/against-$AGAINST_SHA" src bld f flags driver
    src="$dir/src"; bld="$dir/build"
    if [ ! -f "$src/CMakeLists.txt" ]; then
        log "extracting $AGAINST_SHORT into ${src#"$ROOT"/} (git archive)"
        rm -rf "$src" && mkdir -p "$src" &&
            git -C "$ROOT" archive --format=tar "$AGAINST_SHA" | tar -x -C "$src" ||
            { echo "git archive $AGAINST_SHA failed"; rm -rf "$src"; return 1; }
        cp -p "$src/bench/bench.c" "$dir/own-bench.c" 2>/dev/null
    fi
    for driver in current own; do
        if [ "$driver" = current ]; then
            for f in bench.c bench_util.h; do
                [ -f "$ROOT/bench/$f" ] && ! cmp -s "$ROOT/bench/$f" "$src/bench/$f" && cp "$ROOT/bench/$f" "$src/bench/$f"
            done
        else
            [ -f "$dir/own-bench.c" ] || break
            warn "this tree's bench/bench.c does not build against $AGAINST_SHORT's library: using its own"
            git -C "$ROOT" show "$AGAINST_SHA:bench/bench_util.h" >"$src/bench/bench_util.h" 2>/dev/null
            cp -p "$dir/own-bench.c" "$src/bench/bench.c"
        fi
        for flags in "" "$O2_ONLY"; do
            log "building hh_bench at $AGAINST_SHORT in ${bld#"$ROOT"/} (driver: $driver bench.c${flags:+, -O2 warnings not fatal})"
            if timeout -k 5 900 cmake -S "$src" -B "$bld" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHH_TESTS=OFF \
                    -DCMAKE_C_FLAGS="$flags" >"$TMP/build-against.log" 2>&1 &&
               timeout -k 5 900 nice cmake --build "$bld" -j 2 --target hh_bench >>"$TMP/build-against.log" 2>&1; then
                AGAINST_BENCH="$bld/hh_bench"
                AGAINST_NOTE="hiredhand@$AGAINST_SHORT is commit $AGAINST_SHA built into ${dir#"$ROOT"/} (RelWithDebInfo$( [ -n "$flags" ] && echo '; -O2 warnings not fatal')), driven by $( [ "$driver" = current ] && echo "this tree's bench/bench.c" || echo "its own bench/bench.c") through the same steps as the hiredhand row."
                return 0
            fi
            tail -n 15 "$TMP/build-against.log" >&2
        done
    done
    echo "hh_bench at $AGAINST_SHORT does not build (log above)"
    return 1
}
if [ -n "$AGAINST" ]; then
    AGAINST_SHA="$(git -C "$ROOT" rev-parse --verify --quiet "$AGAINST^{commit}")" ||
        { echo "bench: --against $AGAINST: not a commit of this repository" >&2; exit 2; }
    AGAINST_SHORT="$(git -C "$ROOT" rev-parse --short "$AGAINST_SHA")"
    if [ -n "${HH_BENCH_AGAINST:-}" ]; then
        [ -x "$HH_BENCH_AGAINST" ] || { echo "bench: HH_BENCH_AGAINST=$HH_BENCH_AGAINST is not executable" >&2; exit 2; }
        AGAINST_BENCH="$HH_BENCH_AGAINST"
        AGAINST_NOTE="hiredhand@$AGAINST_SHORT is HH_BENCH_AGAINST=$HH_BENCH_AGAINST, driven through the same steps as the hiredhand row."
    elif ! build_against >"$TMP/why.against"; then
        echo "bench: --against $AGAINST: $(cat "$TMP/why.against")" >&2
        exit 2
    fi
fi

# ------------------------------------------------------------------ systems (one row each)

SYSTEMS=()              # ids, in column order
declare -A LABEL PICKUP # column label; 1 when the driver has the one-at-a-time pickup mode
NOTES=()                # said under the table: skipped systems, measurement differences

# sys_ID: 0 when the system can run (sets LABEL[ID], and when called with "cmd", CMD and EXTRA:
# the driver command and the flags it takes after the mode), else prints why not.
sys_hiredhand() {
    [ "${1:-}" = cmd ] && { CMD=("$HH_BENCH"); EXTRA=(--settle "$SETTLE"); return 0; }
    LABEL[hiredhand]="hiredhand"
    PICKUP[hiredhand]=1
}

# hiredhand at --against REF: the same driver modes and flags as the row above
sys_against() {
    [ "${1:-}" = cmd ] && { CMD=("$AGAINST_BENCH"); EXTRA=(--settle "$SETTLE"); return 0; }
    LABEL[against]="hiredhand@$AGAINST_SHORT"
    PICKUP[against]=1
}
is_hh() { [ "$1" = hiredhand ] || [ "$1" = against ]; }

SK_COMMON=()            # set once redis runs
sys_sidekiq64() {
    [ "${1:-}" = cmd ] && { CMD=(ruby -W0 "$ROOT/bench/sidekiq_bench.rb"); EXTRA=("${SK_COMMON[@]}"); return 0; }
    local v
    command -v ruby >/dev/null && command -v sidekiq >/dev/null &&
        v="$(ruby -e 'require "sidekiq"; print Sidekiq::VERSION' 2>/dev/null)" ||
        { echo "ruby-sidekiq is not installed"; return 1; }
    LABEL[sidekiq64]="Sidekiq $v"
    PICKUP[sidekiq64]=1
}

sys_sidekiq73() {
    if [ "${1:-}" = cmd ]; then
        CMD=(env "BENCH_SIDEKIQ_SERVER=$PEERS/ruby73 $PEERS/sidekiq-7.3.10/bin/sidekiq" "$PEERS/ruby73" -W0
             "$ROOT/bench/sidekiq_bench.rb")
        EXTRA=("${SK_COMMON[@]}")
        return 0
    fi
    local v
    [ -x "$PEERS/ruby73" ] && [ -f "$PEERS/sidekiq-7.3.10/bin/sidekiq" ] ||
        { echo "no $PEERS/ruby73 (set HH_PEERS_DIR)"; return 1; }
    v="$("$PEERS/ruby73" -e 'require "sidekiq"; require "redis"; print Sidekiq::VERSION' 2>/dev/null)" ||
        { echo "$PEERS/ruby73 cannot load Sidekiq and the redis gem"; return 1; }
    LABEL[sidekiq73]="Sidekiq $v"
    PICKUP[sidekiq73]=1
}

BULLMQ_PIN="$(sed -n 's/^ *"bullmq": "\([^"]*\)".*/\1/p' "$ROOT/bench/package.json" | head -n 1)"
sys_bullmq() {
    [ "${1:-}" = cmd ] && { CMD=(env "NODE_PATH=$NODE_DIR/node_modules" node "$ROOT/bench/bullmq_bench.js"); EXTRA=(); return 0; }
    command -v node >/dev/null || { echo "node is not installed"; return 1; }
    local have
    have="$(sed -n 's/^ *"version": "\([^"]*\)".*/\1/p' "$NODE_DIR/node_modules/bullmq/package.json" 2>/dev/null | head -n 1)"
    if [ "$have" != "$BULLMQ_PIN" ] || ! cmp -s "$ROOT/bench/package-lock.json" "$NODE_DIR/package-lock.json"; then
        [ "$INSTALL" = 1 ] || { echo "BullMQ $BULLMQ_PIN is not installed in $NODE_DIR (--no-install)"; return 1; }
        command -v npm >/dev/null || { echo "npm is not installed"; return 1; }
        log "installing BullMQ $BULLMQ_PIN into ${NODE_DIR#"$ROOT"/} (npm ci, bench/package-lock.json)"
        mkdir -p "$NODE_DIR" && cp "$ROOT/bench/package.json" "$ROOT/bench/package-lock.json" "$NODE_DIR/" &&
            timeout -k 5 300 npm ci --prefix "$NODE_DIR" --no-audit --no-fund >"$TMP/npm.log" 2>&1 ||
            { echo "npm ci failed: $(tail -n 3 "$TMP/npm.log" | tr '\n' ' ')"; return 1; }
    fi
    node -e 'require("bullmq"); require("ioredis")' 2>/dev/null || NODE_PATH="$NODE_DIR/node_modules" \
        node -e 'require("bullmq"); require("ioredis")' 2>/dev/null || { echo "BullMQ does not load from $NODE_DIR"; return 1; }
    LABEL[bullmq]="BullMQ $BULLMQ_PIN (Node $(node --version | tr -d v))"
}

GOCRAFT_BIN="$GO_DIR/gocraft_bench"
sys_gocraft() {
    [ "${1:-}" = cmd ] && { CMD=("$GOCRAFT_BIN"); EXTRA=(-settle "$SETTLE"); return 0; }
    [ -f "$PEERS/gocraft-work/worker_pool.go" ] || { echo "no $PEERS/gocraft-work (set HH_PEERS_DIR)"; return 1; }
    if [ ! -x "$GOCRAFT_BIN" ] || [ "$ROOT/bench/gocraft_bench.go" -nt "$GOCRAFT_BIN" ]; then
        [ "$INSTALL" = 1 ] || { echo "gocraft_bench is not built in $GO_DIR (--no-install)"; return 1; }
        command -v go >/dev/null ||
            { echo "go is not installed (scripts/deps.sh bench: golang-go and Debian's redigo and cron)"; return 1; }
        log "building gocraft_bench in ${GO_DIR#"$ROOT"/} (GOPATH mode, offline)"
        # a GOPATH of symlinks: the peers' gocraft/work as it is, our one file as package main
        mkdir -p "$GO_DIR/src/github.com/gocraft" "$GO_DIR/src/hhbench_gocraft" &&
            ln -sfn "$PEERS/gocraft-work" "$GO_DIR/src/github.com/gocraft/work" &&
            ln -sfn "$ROOT/bench/gocraft_bench.go" "$GO_DIR/src/hhbench_gocraft/main.go" &&
            (cd "$GO_DIR/src/hhbench_gocraft" && GO111MODULE=off GOFLAGS='' GOPATH="$GO_DIR:/usr/share/gocode" \
                GOCACHE="$GO_DIR/cache" timeout -k 5 600 nice go build -o "$GOCRAFT_BIN" .) >"$TMP/go.log" 2>&1 ||
            { echo "go build failed: $(tail -n 3 "$TMP/go.log" | tr '\n' ' ')"; return 1; }
    fi
    LABEL[gocraft]="gocraft/work (Go $(go env GOVERSION 2>/dev/null | sed 's/^go//'))"
    NOTES+=("gocraft/work has no bulk enqueue (one Enqueue per job), and its idle workers poll with a back-off of up to 5 s: its drain clock runs from the first job picked up (the others' from the release), its pickup latency is about the back-off by design.")
}

add_system() {   # ID: a row when the system is there, else a note
    local why
    wanted "$1" || return 0
    if "sys_$1" >"$TMP/why.$1"; then
        SYSTEMS+=("$1")
        log "system: ${LABEL[$1]}"
    else
        why="$(cat "$TMP/why.$1")"
        NOTES+=("$1 skipped: $why")
        log "skipping $1: $why"
    fi
}

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
    # the fraction of the Redis-bound limit: jobs/s / (1e6 / Redis CPU us per job)
    awk -F= '$1 ~ /_jobs_per_s$/ { j[substr($1, 1, length($1) - 11)] = $2 }
             $1 ~ /_redis_cpu_us_per_job$/ { r[substr($1, 1, length($1) - 21)] = $2 }
             END { for (k in j) if ((k in r) && r[k] > 0) printf "%s_limit_frac=%.3f\n", k, j[k] / (1e6 / r[k]) }' \
        "$TMP/$name.out" >>"$kv"
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

SK_COMMON=(--tmp "$TMP" --pidfile "$TMP/sidekiq.pid" --settle "$SETTLE")
for id in ${ALL_SYSTEMS//,/ }; do
    add_system "$id"
    # REF's row right after the current one: it is not a peer, -s and --no-peers keep it
    if [ "$id" = hiredhand ] && [ -n "$AGAINST" ]; then
        sys_against
        SYSTEMS+=(against)
        NOTES+=("$AGAINST_NOTE")
        log "system: ${LABEL[against]} ($AGAINST_BENCH)"
    fi
done

# ------------------------------------------------------------------ the runs

declare -A KV
for id in "${SYSTEMS[@]}"; do KV[$id]="$TMP/$id.kv"; : >"${KV[$id]}"; done
ENQ_T=$((60 + N / 500))
PROC_T=$((30 + N / 500))           # the wait for the last job, inside the step
STEP_T=$((PROC_T + 120))           # boot + settle + stop on top
LAT_T=$(awk -v j="$LAT_JOBS" -v r="$RATE" -v i="$IDLE" 'BEGIN { printf "%d", j / r + i + 120 }')
PICK_T=$((PICK_JOBS / 5 + 120))
TRICKLE_T=$((TRICKLE_JOBS / TRICKLE_RATE + 150))
T_START=$(date +%s)

drv() {   # ID MODE ARGS...: the driver command line of system ID
    local id="$1" mode="$2"
    shift 2
    "sys_$id" cmd
    DRV=("${CMD[@]}" "$mode" -u "$REDIS_URL" "${EXTRA[@]}" "$@")
}

drain() {   # ID TAG C: enqueue N jobs, drain them at concurrency C
    local id="$1" tag="$2" c="$3"
    flush || return 1
    drv "$id" enqueue -n "$N" -b "$BATCH"
    run_step "$id.enqueue.$tag" "$ENQ_T" "${KV[$id]}" "${DRV[@]}" || return 1
    drv "$id" process -n "$N" -c "$c" --timeout "$PROC_T"
    run_step "$id.process.$tag" "$STEP_T" "${KV[$id]}" "${DRV[@]}"
}

# hiredhand's shapes: ID LABEL hh_bench-process-args...; -c is part of the args
SHAPE_IDS=()
declare -A SHAPE_LABEL SHAPE_ARGS
add_shape() { SHAPE_IDS+=("$1"); SHAPE_LABEL[$1]="$2"; SHAPE_ARGS[$1]="${*:3}"; }
if [ "$SHAPES" = 1 ]; then
    add_shape q1     "1 queue, c=10, 1 process, reliable"          -c 10 --queues 1
    add_shape q10    "10 queues (strict), c=10"                    -c 10 --queues 10
    [ "$QUICK" = 1 ] || add_shape q10w "10 queues (weighted), c=10" -c 10 --queues 10 --weighted
    add_shape q100   "100 queues (strict), c=10"                   -c 10 --queues 100
    [ "$QUICK" = 1 ] || add_shape q100w "100 queues (weighted), c=10" -c 10 --queues 100 --weighted
    [ "$QUICK" = 1 ] || add_shape q1000 "1,000 queues (strict), c=10" -c 10 --queues 1000
    [ "$QUICK" = 1 ] || add_shape q1000w "1,000 queues (weighted), c=10" -c 10 --queues 1000 --weighted
    add_shape p2     "2 processes, c=10 each"                      -c 10 --procs 2
    [ "$QUICK" = 1 ] || add_shape p4 "4 processes, c=10 each"      -c 10 --procs 4
    add_shape c1     "c=1"                                         -c 1
    add_shape c100   "c=100"                                       -c 100
    [ "$QUICK" = 1 ] || add_shape c500 "c=500"                     -c 500
    add_shape basic  "basic fetch, c=10"                           -c 10 --fetch basic
    [ "$QUICK" = 1 ] || add_shape basic100 "basic fetch, c=100"    -c 100 --fetch basic
fi

shape() {   # SYSTEM ID TAG: SYSTEM is hiredhand, or against (its steps are named against.shape.*)
    local sys="$1" id="$2" tag="$3" q args bin="$HH_BENCH" step="shape"
    [ "$sys" = against ] && { bin="$AGAINST_BENCH"; step="against.shape"; }
    read -r -a args <<<"${SHAPE_ARGS[$id]}"
    q=1
    [[ " ${SHAPE_ARGS[$id]} " =~ \ --queues\ ([0-9]+)\  ]] && q="${BASH_REMATCH[1]}"
    flush || return 1
    run_step "$step.$id.enqueue.$tag" "$ENQ_T" "$TMP/shapes.enq.kv" "$bin" enqueue -u "$REDIS_URL" -n "$N" \
        -b "$BATCH" --queues "$q" || return 1
    run_step "$step.$id.process.$tag" "$STEP_T" "${KV[$sys]}" "$bin" process -u "$REDIS_URL" -n "$N" \
        "${args[@]}" --prefix "shape_$id" --settle "$SETTLE" --timeout "$PROC_T"
}

latency() {   # ID TAG: pickup latency at a fixed rate, then idle; one-at-a-time pickups
    local id="$1" tag="$2" busy
    flush && drv "$id" latency -c 10 -j "$LAT_JOBS" --rate "$RATE" --idle "$IDLE" &&
        run_step "$id.latency.$tag" "$LAT_T" "${KV[$id]}" "${DRV[@]}"
    [ "${PICKUP[$id]:-0}" = 1 ] || return 0
    busy=(--busy); is_hh "$id" || busy=(--busy 1)
    flush && drv "$id" pickup -c 3 --queues 3 "${busy[@]}" -j "$PICK_JOBS" --prefix pickup_busy &&
        run_step "$id.pickup.busy.$tag" "$PICK_T" "${KV[$id]}" "${DRV[@]}"
    flush && drv "$id" pickup -c 10 --queues 100 -j "$PICK_JOBS" --prefix pickup_many &&
        run_step "$id.pickup.many.$tag" "$PICK_T" "${KV[$id]}" "${DRV[@]}"
    # what a trickle costs Redis on an idle worker with many strict queues, and with one
    flush && drv "$id" trickle -c 10 --queues "$TRICKLE_QUEUES" -j "$TRICKLE_JOBS" --rate "$TRICKLE_RATE" \
        --prefix trickle_many && run_step "$id.trickle.many.$tag" "$TRICKLE_T" "${KV[$id]}" "${DRV[@]}"
    flush && drv "$id" trickle -c 10 --queues 1 -j "$TRICKLE_JOBS" --rate "$TRICKLE_RATE" --prefix trickle_one &&
        run_step "$id.trickle.one.$tag" "$TRICKLE_T" "${KV[$id]}" "${DRV[@]}"
}

# Odd runs go in column order, even runs in reverse: whatever the first
# system of a step pays (a cold cache, a Redis that just flushed, a burst of
# another process's load) falls on each system in turn, so a ratio of
# medians over an even number of runs does not lean on the order.
for ((run = 1; run <= RUNS; run++)); do
    ORDER=("${SYSTEMS[@]}")
    if ((run % 2 == 0)); then
        ORDER=()
        for ((i = ${#SYSTEMS[@]} - 1; i >= 0; i--)); do ORDER+=("${SYSTEMS[$i]}"); done
    fi
    for c in "${CONC_LIST[@]}"; do
        for id in "${ORDER[@]}"; do drain "$id" "run$run.c$c" "$c"; done
    done
    for id in "${SHAPE_IDS[@]}"; do
        if [ -n "$AGAINST" ] && ((run % 2 == 0)); then
            shape against "$id" "run$run"
            shape hiredhand "$id" "run$run"
        else
            shape hiredhand "$id" "run$run"
            [ -n "$AGAINST" ] && shape against "$id" "run$run"
        fi
    done
    for id in "${ORDER[@]}"; do latency "$id" "run$run"; done
done
ELAPSED=$(($(date +%s) - T_START))

# ------------------------------------------------------------------ results

# per numeric key: the median, KEY__min and KEY__max (for *_ok the min); last value for the rest
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
            print k "=" med; print k "__min=" x[1]; print k "__max=" x[m]; print k "__n=" m
          }
        }' "$1"
}
declare -A MED
for id in "${SYSTEMS[@]}"; do MED[$id]="$TMP/$id.med"; aggregate "${KV[$id]}" >"${MED[$id]}"; done
get() { sed -n "s/^$2=//p" "$1" 2>/dev/null | tail -n 1; }   # FILE KEY

# cell FILE KEY FORMAT DIVISOR: "median" or "median (min-max)" over the runs; "n/a" when absent
cell() {
    local v lo hi k
    v="$(get "$1" "$2")"
    [ -z "$v" ] && { echo "n/a"; return; }
    lo="$(get "$1" "$2__min")"; hi="$(get "$1" "$2__max")"; k="$(get "$1" "$2__n")"
    awk -v v="$v" -v lo="$lo" -v hi="$hi" -v k="${k:-1}" -v f="$3" -v d="${4:-1}" 'BEGIN {
        s = sprintf(f, v / d)
        if (k > 1) s = s sprintf(" (" f "–" f ")", lo / d, hi / d)
        print s }'
}

# ratio A B: a / b
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        if (a == "" || b == "" || b + 0 == 0 || a + 0 == 0) { print "n/a"; exit }
        r = a / b
        if (r >= 100) printf "%.0fx\n", r; else if (r >= 10) printf "%.1fx\n", r
        else if (r >= 1) printf "%.2fx\n", r; else printf "%.3gx\n", r }'
}

PEER_IDS=()
for id in "${SYSTEMS[@]}"; do [ "$id" = hiredhand ] || PEER_IDS+=("$id"); done

# one row of the systems table: LABEL KEY FORMAT DIVISOR; ratios hiredhand/peer
row() {
    local label="$1" key="$2" f="$3" div="${4:-1}" line id h any=0
    line="| $label |"
    for id in "${SYSTEMS[@]}"; do
        [ -n "$(get "${MED[$id]}" "$key")" ] && any=1
        line="$line $(cell "${MED[$id]}" "$key" "$f" "$div") |"
    done
    [ "$any" = 1 ] || return 0
    h="$(get "${MED[hiredhand]}" "$key")"
    for id in "${PEER_IDS[@]}"; do line="$line $(ratio "$h" "$(get "${MED[$id]}" "$key")") |"; done
    echo "$line"
}

systems_table() {
    local id c
    printf '| metric |'
    for id in "${SYSTEMS[@]}"; do printf ' %s |' "${LABEL[$id]}"; done
    for id in "${PEER_IDS[@]}"; do printf ' hh / %s |' "${LABEL[$id]%% (*}"; done
    printf '\n|---|'
    for id in "${SYSTEMS[@]}" "${PEER_IDS[@]}"; do printf -- '---:|'; done
    echo
    row "enqueue jobs/s (bulk, $BATCH per call)" enqueue_jobs_per_s "%.0f"
    for c in "${CONC_LIST[@]}"; do row "drain jobs/s, c=$c" "proc_c${c}_jobs_per_s" "%.0f"; done
    for c in "${CONC_LIST[@]}"; do row "worker CPU µs/job, c=$c" "proc_c${c}_cpu_us_per_job" "%.1f"; done
    for c in "${CONC_LIST[@]}"; do row "Redis CPU µs/job, c=$c" "proc_c${c}_redis_cpu_us_per_job" "%.1f"; done
    for c in "${CONC_LIST[@]}"; do row "fraction of the Redis-bound limit, c=$c" "proc_c${c}_limit_frac" "%.2f"; done
    for c in "${CONC_LIST[@]}"; do row "peak RSS MiB, c=$c" "proc_c${c}_peak_rss_kib" "%.1f" 1024; done
    for c in "${CONC_LIST[@]}"; do row "Redis cmds/job, c=$c" "proc_c${c}_cmds_per_job" "%.2f"; done
    row "pickup latency p50 ms (3 queues, ${RATE}/s, c=10)" lat_p50_ms "%.2f"
    row "pickup latency p99 ms" lat_p99_ms "%.2f"
    row "pickup latency max ms" lat_max_ms "%.2f"
    row "pickup p99 ms, one at a time, c=3, 3 queues, 1 busy" pickup_busy_p99_ms "%.2f"
    row "pickup p99 ms, one at a time, c=10, 100 queues" pickup_many_p99_ms "%.2f"
    row "trickle Redis CPU µs/job (${TRICKLE_RATE}/s, c=10, $TRICKLE_QUEUES strict queues)" trickle_many_redis_cpu_us_per_job "%.0f"
    row "trickle Redis CPU µs/job (${TRICKLE_RATE}/s, c=10, 1 queue)" trickle_one_redis_cpu_us_per_job "%.0f"
    row "trickle Redis cmds/job ($TRICKLE_QUEUES strict queues)" trickle_many_cmds_per_job "%.2f"
    row "trickle pickup p99 ms ($TRICKLE_QUEUES strict queues)" trickle_many_p99_ms "%.2f"
    row "idle worker CPU % (${IDLE} s)" idle_cpu_pct "%.2f"
    row "idle Redis CPU %" idle_redis_cpu_pct "%.2f"
    row "idle Redis cmds/s" idle_cmds_per_s "%.1f"
}

# hiredhand's shapes: throughput, CPU, and how close to what Redis alone allows
shapes_table() {
    local id f="${MED[hiredhand]}" g="" k rus m a
    # with --against: REF's jobs/s, worker and Redis CPU per job, and the ratios current / REF
    if [ -n "$AGAINST" ]; then
        g="${MED[against]}"
        a="hiredhand@$AGAINST_SHORT"
        printf '| hiredhand shape (%s jobs) | jobs/s | worker CPU µs/job | Redis CPU µs/job | Redis-bound limit jobs/s | fraction of the limit | peak RSS MiB | Redis cmds/job | %s |\n' \
            "$N" "jobs/s $a | worker CPU µs/job $a | Redis CPU µs/job $a | jobs/s hh / $a | worker CPU hh / $a | Redis CPU hh / $a"
        echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    else
        echo "| hiredhand shape ($N jobs) | jobs/s | worker CPU µs/job | Redis CPU µs/job | Redis-bound limit jobs/s | fraction of the limit | peak RSS MiB | Redis cmds/job |"
        echo "|---|---:|---:|---:|---:|---:|---:|---:|"
    fi
    for id in "${SHAPE_IDS[@]}"; do
        k="shape_$id"
        rus="$(get "$f" "${k}_redis_cpu_us_per_job")"
        printf '| %s | %s | %s | %s | %s | %s | %s | %s |' "${SHAPE_LABEL[$id]}" \
            "$(cell "$f" "${k}_jobs_per_s" "%.0f")" "$(cell "$f" "${k}_cpu_us_per_job" "%.1f")" \
            "$(cell "$f" "${k}_redis_cpu_us_per_job" "%.2f")" \
            "$(awk -v r="$rus" 'BEGIN { if (r > 0) printf "%.0f", 1e6 / r; else print "n/a" }')" \
            "$(cell "$f" "${k}_limit_frac" "%.2f")" \
            "$(cell "$f" "${k}_peak_rss_kib" "%.1f" 1024)" "$(cell "$f" "${k}_cmds_per_job" "%.2f")"
        if [ -n "$g" ]; then
            printf ' %s | %s | %s |' "$(cell "$g" "${k}_jobs_per_s" "%.0f")" "$(cell "$g" "${k}_cpu_us_per_job" "%.1f")" \
                "$(cell "$g" "${k}_redis_cpu_us_per_job" "%.2f")"
            for m in jobs_per_s cpu_us_per_job redis_cpu_us_per_job; do
                printf ' %s |' "$(ratio "$(get "$f" "${k}_$m")" "$(get "$g" "${k}_$m")")"
            done
        fi
        echo
    done
    shape_ratio() {   # LABEL A B GOAL
        local a b
        a="$(get "$f" "shape_${2}_jobs_per_s")"; b="$(get "$f" "shape_${3}_jobs_per_s")"
        [ -n "$a" ] && [ -n "$b" ] && echo "- $1: $(ratio "$a" "$b") (goal $4)"
    }
    echo
    shape_ratio "c=100 / c=10 throughput" c100 q1 "≥ 0.9"
    shape_ratio "c=500 / c=10 throughput" c500 q1 "≥ 0.9"
    shape_ratio "100 queues / 1 queue throughput" q100 q1 "≥ 0.8"
    shape_ratio "1,000 queues (weighted) / 1 queue throughput" q1000w q1 "≥ 0.8"
    shape_ratio "2 processes / 1 process throughput" p2 q1 "more is better"
    shape_ratio "basic / reliable fetch throughput" basic q1 "-"
}

# correctness, per system: every *_ok of every step, and no failed step
declare -A CORRECT
for id in "${SYSTEMS[@]}"; do
    oks="$(sed -n 's/^[a-z0-9_]*_ok=//p' "${KV[$id]}" | sort -u | tr '\n' ' ')"
    steps="$(grep -c '_ok=' "${KV[$id]}")"
    bad=0
    for f in "${FAILED[@]}"; do [[ "$f" == "$id."* || ( "$id" = hiredhand && "$f" == shape.* ) ]] && bad=1; done
    if [ "$bad" = 1 ] || [[ "$oks" == *0* ]] || [ "$steps" = 0 ]; then
        CORRECT[$id]="FAILED (see the CHECK FAILED lines above)"
    else
        CORRECT[$id]="ok ($steps checked steps: every job ran exactly once, the counters match, nothing failed or left)"
    fi
done

HOST_CPU="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)"
REDIS_V="$(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')"
GIT_REV="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet HEAD -- src include 2>/dev/null || echo '+dirty src')"
HEADER="$(date -u +%Y-%m-%d), \`$CMDLINE\`: N=$N jobs, c=$CONCS, $RUNS run(s), systems interleaved run by run$( [ "$RUNS" -gt 1 ] && echo ', medians (min–max)'); pickup $LAT_JOBS jobs at ${RATE}/s, idle ${IDLE} s, trickles of $TRICKLE_JOBS jobs. Machine: $(nproc) CPUs (${HOST_CPU:-?}), load average $(cut -d' ' -f1-3 /proc/loadavg) at the end, Redis $REDIS_V on loopback; hiredhand ${GIT_REV:-?} from $BUILD_NOTE; ${ELAPSED} s."

report() {
    local id n
    echo "$HEADER"
    echo
    echo "This machine is shared and noisy: absolute figures move by ±25 % or more from run to run; the"
    echo "ratios measured side by side in one run are what holds."
    echo
    systems_table
    if [ ${#SHAPE_IDS[@]} -gt 0 ]; then
        echo
        shapes_table
    fi
    echo
    echo "Drain: the N jobs are released at once (RENAME, or BullMQ's resume) to a worker that has"
    echo "booted and settled, in a process of its own; the clock stops at the last job's counter"
    echo "increment. Worker CPU is that process's user+sys (all of them with several), Redis CPU"
    echo "redis-server's used_cpu_user+sys (INFO cpu), both over the same window, per job; the"
    echo "Redis-bound limit is 1e6 / Redis µs per job. Peak RSS is VmHWM (summed over processes)."
    echo "Trickle: $TRICKLE_JOBS jobs pushed at ${TRICKLE_RATE}/s (job i to queue (i x 37) mod the queues) to an"
    echo "idle c=10 worker; Redis CPU and commands from the first push to the last job's start, per"
    echo "job, the pushes included (the same for every system)."
    for n in "${NOTES[@]}"; do echo "- $n"; done
    echo
    echo "Correctness:"
    for id in "${SYSTEMS[@]}"; do echo "- ${LABEL[$id]}: correctness: ${CORRECT[$id]}"; done
}

# Rows measured by scripts of their own (their own Redis), after the rest:
# processing over TLS as a ratio to plain TCP, and handlers in Python
# (--serve, --exec) beside Sidekiq's native Ruby. Only their table lines
# are kept; their logs stay in the temp dir.
EXTRA_LINES=()
if [ "$EXTRAS" = 1 ]; then
    HH_CLI="$(dirname "$HH_BENCH")/hiredhand"
    log "extra rows: TLS (bench/tls_row.sh)"
    if HIREDHAND="$HH_CLI" "$ROOT/bench/tls_row.sh" -c 10 >"$TMP/tls_row.out" 2>"$TMP/tls_row.err"; then
        EXTRA_LINES+=("| metric | hiredhand | reference | ratio |" "|---|---:|---:|---:|")
        mapfile -t -O "${#EXTRA_LINES[@]}" EXTRA_LINES < <(grep '^|' "$TMP/tls_row.out")
    else
        NOTES+=("TLS row failed (its log: tls_row.err, kept with HH_BENCH_KEEP=1)")
    fi
    log "extra rows: Python handlers (bench/serve_rows.sh)"
    if "$ROOT/bench/serve_rows.sh" --hiredhand "$HH_CLI" >"$TMP/serve_rows.out" 2>"$TMP/serve_rows.err"; then
        EXTRA_LINES+=("")
        mapfile -t -O "${#EXTRA_LINES[@]}" EXTRA_LINES < <(grep '^|' "$TMP/serve_rows.out")
    else
        NOTES+=("any-language rows failed (its log: serve_rows.err, kept with HH_BENCH_KEEP=1)")
    fi
fi
extras() {
    [ ${#EXTRA_LINES[@]} -gt 0 ] || return 0
    echo
    echo "TLS and handlers in other languages (no-op jobs, c=10, separate runs of their own):"
    echo
    printf '%s\n' "${EXTRA_LINES[@]}"
}

echo
report
extras
{
    echo "# hiredhand vs its peers: \`make bench\`"
    echo
    report
    extras
} >"$OUT.tmp" && mv -f "$OUT.tmp" "$OUT"
log "results written to ${OUT#"$ROOT"/}"

if [ ${#FAILED[@]} -gt 0 ]; then
    warn "failed: ${FAILED[*]}"
    exit 1
fi
exit 0
