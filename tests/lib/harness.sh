# shellcheck shell=bash
# tests/lib/harness.sh -- shared library for hiredhand's integration tests.
#
# Source it from a test script:
#     . "$(dirname "$0")/../../lib/harness.sh"
#
# What it gives a test:
#   hh_redis_start [REDIS-ARGS...]   private redis-server on a free 127.0.0.1 port in a fresh temp
#                                    dir; exports REDIS_PORT, REDIS_URL, REDIS_PID, REDIS_DIR, and R()
#   hh_redis_start_on PORT [ARGS...] same, on a given port (used after hh_pick_free_port)
#   hh_redis_stop / hh_redis_restart (same port, same dir, same args)
#   hh_pick_free_port                prints a loopback port nobody listens on
#   hh_start_worker ARGS...          "$HIREDHAND work -r $REDIS_URL ARGS..." in the background;
#                                    sets WORKER_PID, WORKER_LOG (stdout+stderr of the process)
#   hh_stop_worker [SIG] [TIMEOUT]   signal the worker (default TERM) and wait for its exit;
#                                    sets WORKER_RC (124 when it did not exit in time)
#   hh_ruby FILE.rb ARGS...          ruby with tests/ruby on the load path, REDIS_URL exported
#   hh_require_peers                 sets HH_PEERS (Sidekiq 7.3/8.1 and gems runnable with Debian's
#                                    Ruby, in the folder `shared/peers` beside the checkout), or
#                                    skips the test (exit 77) with a message saying what is missing
#   hh_peer_ruby GEN FILE.rb ARGS... like hh_ruby with a peer's Sidekiq: GEN is 73, 81, 73-gems
#                                    or 81-gems (sidekiq-cron 2.3 and sidekiq-unique-jobs 8.1 too)
#   hh_sidekiq_start APPFILE ARGS... real `sidekiq -r APPFILE -q default -c 2 ARGS` in background;
#                                    sets SIDEKIQ_PID, SIDEKIQ_LOG; hh_sidekiq_wait_ready waits for
#                                    its heartbeat
#   hh_peer_sidekiq_start GEN APPFILE ARGS...  the same with the server of a peer (GEN as above;
#                                    log sidekiq<GEN>.log, so two generations can run at once)
#   wait_until TIMEOUT 'SHELL CONDITION'   poll (every 0.2 s) until true; returns 1 on timeout
#   hh_wait_for TIMEOUT 'COND'       alias of wait_until
#   must_wait TIMEOUT 'COND' MSG     wait_until or fail MSG
#   fail MSG, assert_eq ACTUAL EXPECTED MSG, assert_ne, assert_contains HAYSTACK NEEDLE MSG,
#   assert_not_contains, assert_between VALUE LOW HIGH MSG (numbers, floats allowed),
#   assert_alive PID MSG, pass
#   hh_tmp                           a new private temp dir (the test's own is $HH_TMP)
#   hh_track_pid PID                 kill this process (and its group) at exit too
#   hh_cli ARGS...                   run "$HIREDHAND ARGS..." (bounded 30 s): HH_OUT, HH_ERR, HH_RC
#   hh_require_binary                fail clearly when $HIREDHAND is missing
#   hh_worker_wait_ready [T]         wait for a member in `processes`
#   hh_sidekiq_stop                  TERM the sidekiq server and wait (its stats get flushed)
#   hh_jid, hh_now                   a fresh 24-hex jid; epoch seconds as a float
#   hh_jid_recorder PATH             an --exec handler at PATH recording jids; prints the file
#   hh_push_job CLASS ARGS [MEMBERS] a job as Sidekiq's client writes it onto queue:default; prints its jid
#   hh_retry_field JID FIELD         FIELD of JID's entry in the retry set, as Ruby's JSON reads it
#   hh_retry_backtrace JID           that entry's error_backtrace, decoded as Sidekiq's API does
#   hh_require_plugin                sets PLUGIN to the example plug-in (.so), or fails clearly
#   hh_http_code URL [CURL ARGS]     the HTTP status of a GET (000 when nothing answered in 3 s)
#   hh_http_body URL [CURL ARGS]     the body of a GET (empty when nothing answered in 3 s)
#   HH_NO_URL=1 hh_start_worker ...  do not add "-r $REDIS_URL" (pass your own -r)
#   $HH_HANDLERS                     tests/integration/handlers (record.sh, fail.sh, ...)
#   $HH_PIDFILE                      where handlers leave pids of long-running children
#
# Every process started through these helpers is killed at exit (normal end, failure, ^C or
# SIGTERM from the runner), and every temp dir is removed (kept when HH_KEEP=1, for debugging).
# A guard process also does that if the test's shell is killed with SIGKILL (no trap runs then).
# All processes are started with setsid (own process group), so a worker's handler children
# die with it.
#
# Environment honoured:
#   HIREDHAND   path of the binary (default: <repo>/build/hiredhand)
#   HH_KEEP=1   keep temp dirs and print where they are
#   HH_VERBOSE=1  print progress lines (default on; set HH_VERBOSE=0 to silence)

set -o pipefail

HH_LIB_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
HH_ROOT="$(cd "$HH_LIB_DIR/../.." && pwd)"
HH_TESTS_DIR="$HH_ROOT/tests"
HH_HANDLERS="$HH_TESTS_DIR/integration/handlers"
HH_RUBY_DIR="$HH_TESTS_DIR/ruby"
HIREDHAND="${HIREDHAND:-$HH_ROOT/build/hiredhand}"
case "$HIREDHAND" in /*) ;; */*) HIREDHAND="$PWD/$HIREDHAND" ;; esac
HH_TEST_NAME="$(basename "${0:-test}" .sh)"
HH_VERBOSE="${HH_VERBOSE:-1}"
export HIREDHAND HH_HANDLERS

HH_PIDS=()        # every background process we started (each is its own process group leader)
HH_TMPDIRS=()     # every temp dir we made
HH_PIDFILES=()    # files into which handlers write the pids of long-running children
HH_WORKER_LOGS=() # every worker log, for failure diagnostics
SIDEKIQ_LOG=""
REDIS_PID=""
REDIS_PORT=""   # never inherit a test Redis from the caller's environment
REDIS_URL=""

# ------------------------------------------------------------------ messages

hh_log() {
    [ "$HH_VERBOSE" = 0 ] && return 0
    printf '[%s %s] %s\n' "$HH_TEST_NAME" "$(date +%H:%M:%S)" "$*" >&2
}

hh_dump_diagnostics() {
    local f
    for f in "${HH_WORKER_LOGS[@]}"; do
        [ -s "$f" ] || continue
        echo "----- last 40 lines of worker log $f -----" >&2
        tail -n 40 "$f" >&2
    done
    if [ -n "$SIDEKIQ_LOG" ] && [ -s "$SIDEKIQ_LOG" ]; then
        echo "----- last 30 lines of sidekiq log $SIDEKIQ_LOG -----" >&2
        tail -n 30 "$SIDEKIQ_LOG" >&2
    fi
}

fail() {
    echo "FAIL: $HH_TEST_NAME: $*" >&2
    hh_dump_diagnostics
    exit 1
}

pass() {
    echo "PASS: $HH_TEST_NAME${1:+: $1}"
    exit 0
}

assert_eq() {   # ACTUAL EXPECTED MSG
    [ "$1" == "$2" ] || fail "${3:-assert_eq}: expected [$2], got [$1]"
}

assert_ne() {   # ACTUAL UNEXPECTED MSG
    [ "$1" != "$2" ] || fail "${3:-assert_ne}: got the unexpected value [$1]"
}

assert_contains() {   # HAYSTACK NEEDLE MSG
    case "$1" in
        *"$2"*) ;;
        *) fail "${3:-assert_contains}: [$2] not found in [$(printf '%s' "$1" | head -c 2000)]" ;;
    esac
}

assert_not_contains() {   # HAYSTACK NEEDLE MSG
    case "$1" in
        *"$2"*) fail "${3:-assert_not_contains}: [$2] unexpectedly found in [$(printf '%s' "$1" | head -c 2000)]" ;;
        *) ;;
    esac
}

assert_between() {   # VALUE LOW HIGH MSG   (inclusive; floats allowed)
    awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { if (v == "" || v+0 < lo+0 || v+0 > hi+0) exit 1 }' \
        || fail "${4:-assert_between}: [$1] is not within [$2, $3]"
}

assert_alive() {   # PID MSG
    kill -0 "$1" 2>/dev/null || fail "${2:-process $1 is not running}"
}

# ------------------------------------------------------------------ waiting

# wait_until TIMEOUT_SECONDS 'shell condition'  -> 0 when it became true, 1 on timeout.
# Polls every 0.2 s; the number of polls is bounded by TIMEOUT*5+1.
wait_until() {
    local timeout="$1"; shift
    local cond="$*"
    local tries i
    tries=$(awk -v t="$timeout" 'BEGIN { printf "%d", t * 5 + 1 }')
    for ((i = 0; i < tries; i++)); do
        if eval "$cond" >/dev/null 2>&1; then return 0; fi
        sleep 0.2
    done
    eval "$cond" >/dev/null 2>&1
}

hh_wait_for() { wait_until "$@"; }

must_wait() {   # TIMEOUT 'COND' MSG
    wait_until "$1" "$2" || fail "${3:-timed out after $1 s waiting for: $2}"
}

# ------------------------------------------------------------------ temp dirs and cleanup

# Every temp dir of a test lives under one base dir made when the harness is sourced, so the
# cleanup removes everything even for dirs made inside $(...) subshells.
HH_BASE_TMP="$(mktemp -d "${TMPDIR:-/tmp}/hh-$HH_TEST_NAME.XXXXXX")" || { echo "mktemp -d failed" >&2; exit 1; }
HH_TMPDIRS+=("$HH_BASE_TMP")

hh_tmp() {   # prints a new private temp dir, removed at exit
    mktemp -d "$HH_BASE_TMP/d.XXXXXX" || fail "mktemp -d failed"
}

# Every background process is registered twice: in HH_PIDS (for hh_cleanup) and in the file
# $HH_PIDLIST, read by the guard below if this shell dies without running its cleanup.
_hh_register() {
    HH_PIDS+=("$1")
    echo "$1" >>"$HH_PIDLIST"
}

hh_track_pid() { _hh_register "$1"; }

# kill PID's process group (every process we start is a group leader via setsid), then PID itself,
# then its descendants that may have moved elsewhere; TERM first, KILL after a grace period.
hh_kill_tree() {
    local pid="$1" grace="${2:-3}" kids k i
    [ -n "$pid" ] || return 0
    # A dead leader: its pid (and group id) may already belong to another
    # test's process group, so never signal the group then.
    kill -0 "$pid" 2>/dev/null || return 0
    kids="$(hh_descendants "$pid")"
    kill -TERM -- "-$pid" 2>/dev/null
    kill -TERM "$pid" $kids 2>/dev/null
    for ((i = 0; i < grace * 10; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL -- "-$pid" 2>/dev/null
    kill -KILL "$pid" 2>/dev/null
    for k in $kids; do kill -KILL "$k" 2>/dev/null; done
    wait "$pid" 2>/dev/null
    return 0
}

hh_descendants() {   # PID -> all descendant pids (bounded depth)
    local frontier="$1" next all="" p depth
    for ((depth = 0; depth < 8; depth++)); do
        next=""
        for p in $frontier; do
            next="$next $(ps -o pid= --ppid "$p" 2>/dev/null | tr '\n' ' ')"
        done
        next="$(echo $next)"
        [ -n "$next" ] || break
        all="$all $next"
        frontier="$next"
    done
    echo $all
}

hh_cleanup() {
    local rc=$? pid f p d
    trap - EXIT INT TERM HUP
    kill -KILL "$HH_GUARD_PID" 2>/dev/null   # normal cleanup: the guard must not act
    wait "$HH_GUARD_PID" 2>/dev/null
    # workers first (their handlers), then sidekiq/ruby, then redis last
    for ((i = ${#HH_PIDS[@]} - 1; i >= 0; i--)); do
        pid="${HH_PIDS[$i]}"
        [ "$pid" = "$REDIS_PID" ] && continue
        hh_kill_tree "$pid" 2
    done
    # long-running handler children that the handlers registered (they may be orphans by now)
    for f in "${HH_PIDFILES[@]}"; do
        [ -f "$f" ] || continue
        for p in $(cat "$f"); do
            case "$p" in *[!0-9]*|'') continue ;; esac
            kill -KILL "$p" 2>/dev/null
        done
    done
    [ -n "$REDIS_PID" ] && hh_kill_tree "$REDIS_PID" 2
    if [ "${HH_KEEP:-0}" = 1 ]; then
        [ ${#HH_TMPDIRS[@]} -gt 0 ] && echo "HH_KEEP=1: kept ${HH_TMPDIRS[*]}" >&2
    else
        for d in "${HH_TMPDIRS[@]}"; do
            case "$d" in /*/hh-*) rm -rf -- "$d" ;; esac
        done
    fi
    exit "$rc"
}

# The guard: a tiny process in its own session that outlives a test killed with SIGKILL (or any
# death that skips the EXIT trap) and then kills what the test had started and removes its temp
# dir. hh_cleanup stops it first, so it never acts after a normal exit. Bounded: it polls the
# test's shell every 0.5 s and exits as soon as that shell is gone.
HH_PIDLIST="$HH_BASE_TMP/pids"
: >"$HH_PIDLIST"
setsid bash -c '
    trap "" INT TERM HUP
    while kill -0 "$1" 2>/dev/null; do sleep 0.5; done
    [ -d "$3" ] || exit 0
    for p in $(cat "$2" 2>/dev/null); do kill -KILL -- "-$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
    for p in $(cat "$3"/d.*/handler.pids 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
    case "$3" in /*/hh-*) [ "$4" = 1 ] || rm -rf -- "$3" ;; esac
' hh-guard "$$" "$HH_PIDLIST" "$HH_BASE_TMP" "${HH_KEEP:-0}" </dev/null >/dev/null 2>&1 &
HH_GUARD_PID=$!

trap hh_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

HH_TMP="$(hh_tmp)"
export HH_TMP
# handlers that start long-lived children write their pid here (see handlers/sleep.sh)
export HH_PIDFILE="$HH_TMP/handler.pids"
HH_PIDFILES+=("$HH_PIDFILE")

# ------------------------------------------------------------------ redis

command -v redis-server >/dev/null || fail "redis-server is not installed"
command -v redis-cli >/dev/null || fail "redis-cli is not installed"

hh_port_in_use() {   # PORT -> 0 when something accepts connections on 127.0.0.1:PORT
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

hh_pick_free_port() {
    local i p
    for ((i = 0; i < 50; i++)); do
        p=$((20000 + RANDOM % 12000))   # below the kernel's ephemeral range (32768+)
        hh_port_in_use "$p" || { echo "$p"; return 0; }
    done
    fail "no free port found in 50 tries"
}

R() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" "$@"; }

HH_REDIS_ARGS=()

_hh_redis_launch() {   # PORT ARGS...  -> 0 when redis answers PING, 1 when it died (port taken)
    local port="$1"; shift
    local i
    setsid redis-server --port "$port" --bind 127.0.0.1 --dir "$REDIS_DIR" \
        --save "" --appendonly no --daemonize no --protected-mode yes \
        --logfile "$REDIS_DIR/redis.log" "$@" </dev/null >>"$REDIS_DIR/redis.out" 2>&1 &
    REDIS_PID=$!
    _hh_register "$REDIS_PID"
    for ((i = 0; i < 50; i++)); do
        if ! kill -0 "$REDIS_PID" 2>/dev/null; then
            wait "$REDIS_PID" 2>/dev/null
            REDIS_PID=""
            return 1
        fi
        case "$(env -u REDISCLI_AUTH redis-cli -h 127.0.0.1 -p "$port" ping 2>&1)" in
            PONG|NOAUTH*) return 0 ;;   # NOAUTH: up, with --requirepass
        esac
        sleep 0.1
    done
    hh_kill_tree "$REDIS_PID" 1
    REDIS_PID=""
    return 1
}

_hh_redis_export() {
    REDIS_PORT="$1"
    REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0"
    export REDIS_PORT REDIS_URL REDIS_PID REDIS_DIR
}

hh_redis_start() {   # [extra redis-server args...]
    local i port
    REDIS_DIR="$(hh_tmp)"
    HH_REDIS_ARGS=("$@")
    for ((i = 0; i < 10; i++)); do
        port="$(hh_pick_free_port)"
        if _hh_redis_launch "$port" "$@"; then
            _hh_redis_export "$port"
            hh_log "redis-server pid $REDIS_PID on 127.0.0.1:$REDIS_PORT ($REDIS_DIR)"
            return 0
        fi
    done
    fail "could not start redis-server (10 tries); last log: $(tail -n 5 "$REDIS_DIR/redis.log" 2>/dev/null)"
}

hh_redis_start_on() {   # PORT [extra args...]
    local port="$1"; shift
    [ -n "${REDIS_DIR:-}" ] || REDIS_DIR="$(hh_tmp)"
    HH_REDIS_ARGS=("$@")
    _hh_redis_launch "$port" "$@" || fail "could not start redis-server on port $port: $(tail -n 5 "$REDIS_DIR/redis.log" 2>/dev/null)"
    _hh_redis_export "$port"
    hh_log "redis-server pid $REDIS_PID on 127.0.0.1:$REDIS_PORT ($REDIS_DIR)"
}

hh_redis_stop() {
    [ -n "$REDIS_PID" ] || return 0
    redis-cli -h 127.0.0.1 -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1
    local i
    for ((i = 0; i < 50; i++)); do
        kill -0 "$REDIS_PID" 2>/dev/null || break
        sleep 0.1
    done
    hh_kill_tree "$REDIS_PID" 1
    REDIS_PID=""
    export REDIS_PID
}

hh_redis_restart() {   # same port, same dir, same args (data survives only with persistence on)
    local port="$REDIS_PORT" i
    hh_redis_stop
    for ((i = 0; i < 30; i++)); do
        _hh_redis_launch "$port" "${HH_REDIS_ARGS[@]}" && { _hh_redis_export "$port"; return 0; }
        sleep 0.5
    done
    fail "could not restart redis-server on port $port"
}

# ------------------------------------------------------------------ hiredhand

hh_require_binary() {
    [ -x "$HIREDHAND" ] || { case "$HIREDHAND" in */*) false ;; *) command -v "$HIREDHAND" >/dev/null ;; esac; } || fail "hiredhand binary not found or not executable: $HIREDHAND (build it, or set HIREDHAND=...)"
}

# hh_shapes_driver: builds bench/shapes_driver.c (library-level drains with checks, see its
# head) against this build's libhiredhand into $SHAPES_DRIVER; run it with
# LD_LIBRARY_PATH="$SHAPES_LIB". A sanitized library needs its runtime in the program too.
hh_shapes_driver() {
    local build san=()
    build="$(cd "$(dirname "$HIREDHAND")" && pwd)"
    [ -f "$build/libhiredhand.so" ] || fail "no libhiredhand.so next to $HIREDHAND"
    # built as the library was: a TSan library needs a TSan driver, an ASan one an ASan driver
    # (HH_SANITIZER from ctest: off, on, address or thread; by hand, HH_SANITIZED=1 means ASan)
    local kind="${HH_SANITIZER:-}"
    [ -n "$kind" ] || case "${HH_SANITIZED:-0}" in 1 | ON | TRUE) kind=address ;; esac
    case "${kind:-off}" in
    thread) san=(-fsanitize=thread) ;;
    off | 0 | false | "") ;;
    *) san=(-fsanitize=address,undefined -ftrivial-auto-var-init=pattern) ;;
    esac
    SHAPES_DRIVER="$HH_TMP/shapes_driver" SHAPES_LIB="$build"
    cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Werror "${san[@]}" -I"$HH_ROOT/include" -I"$build/include" \
        -o "$SHAPES_DRIVER" "$HH_ROOT/bench/shapes_driver.c" -L"$build" -lhiredhand -lhiredis -pthread ||
        fail "cannot build bench/shapes_driver.c"
}

# hh_start_worker ARGS...   (add -r yourself with HH_NO_URL=1)
hh_start_worker() {
    hh_require_binary
    local n=${#HH_WORKER_LOGS[@]}
    WORKER_LOG="$HH_TMP/worker.$n.log"
    HH_WORKER_LOGS+=("$WORKER_LOG")
    if [ "${HH_NO_URL:-0}" = 1 ]; then
        setsid "$HIREDHAND" work "$@" </dev/null >"$WORKER_LOG" 2>&1 &
    else
        setsid "$HIREDHAND" work -r "$REDIS_URL" "$@" </dev/null >"$WORKER_LOG" 2>&1 &
    fi
    WORKER_PID=$!
    _hh_register "$WORKER_PID"
    hh_log "worker pid $WORKER_PID: hiredhand work $* (log $WORKER_LOG)"
    export WORKER_PID WORKER_LOG
}

# hh_stop_worker [SIGNAL] [TIMEOUT]: send SIGNAL (default TERM), wait up to TIMEOUT (default 30) s.
# Sets WORKER_RC to the exit status, or 124 when the process was still running at the deadline.
hh_stop_worker() {
    local sig="${1:-TERM}" timeout="${2:-30}" pid="$WORKER_PID"
    WORKER_RC=124
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; WORKER_RC=$?; return 0; }
    kill -"$sig" "$pid" 2>/dev/null
    if wait_until "$timeout" "! kill -0 $pid"; then
        wait "$pid" 2>/dev/null
        WORKER_RC=$?
    fi
    export WORKER_RC
}

# hh_cli ARGS...: run a short-lived hiredhand command (bounded at 30 s) capturing
# HH_OUT, HH_ERR and HH_RC.
hh_cli() {
    hh_require_binary
    local out="$HH_TMP/cli.out" err="$HH_TMP/cli.err"
    timeout --foreground -k 2 30 "$HIREDHAND" "$@" </dev/null >"$out" 2>"$err"
    HH_RC=$?
    HH_OUT="$(cat "$out")"
    HH_ERR="$(cat "$err")"
}

# Wait until the worker has announced itself in the `processes` set (its first heartbeat).
hh_worker_wait_ready() {
    must_wait "${1:-15}" '[ "$(R scard processes)" -ge 1 ]' \
        "worker did not write a heartbeat (processes set empty) within ${1:-15} s"
}

# ------------------------------------------------------------------ ruby and sidekiq

hh_ruby() {   # FILE.rb ARGS...   (bounded at HH_RUBY_TIMEOUT, default 120 s)
    local f="$1"; shift
    case "$f" in /*) ;; *) [ -f "$f" ] || f="$HH_RUBY_DIR/$f" ;; esac
    # --foreground: stay in the test's process group, so a TERM/INT sent to the group (run.sh's
    # timeout, ^C) reaches ruby at once and the test's cleanup trap runs right away
    REDIS_URL="$REDIS_URL" timeout --foreground -k 2 "${HH_RUBY_TIMEOUT:-120}" \
        ruby -W0 -I "$HH_RUBY_DIR" "$f" "$@"
}

hh_require_peers() {
    local d="${HH_PEERS:-$(cd "$HH_ROOT/.." && pwd)/shared/peers}"
    if [ ! -x "$d/ruby73" ] || [ ! -x "$d/ruby81" ]; then
        echo "SKIP: $HH_TEST_NAME needs Sidekiq 7.3/8.1 peers in $d (ruby73, ruby81); not found" >&2
        exit 77
    fi
    HH_PEERS="$(cd "$d" && pwd)"
    export HH_PEERS
}

hh_peer_ruby() {   # GEN FILE.rb ARGS...   (GEN: 73, 81, 73-gems, 81-gems; bounded as hh_ruby)
    local gen="$1" f="$2"; shift 2
    [ -n "${HH_PEERS:-}" ] || hh_require_peers
    case "$f" in /*) ;; *) [ -f "$f" ] || f="$HH_RUBY_DIR/$f" ;; esac
    REDIS_URL="$REDIS_URL" timeout --foreground -k 2 "${HH_RUBY_TIMEOUT:-120}" \
        "$HH_PEERS/ruby$gen" -W0 -I "$HH_RUBY_DIR" "$f" "$@"
}

hh_sidekiq_start() {   # APPFILE [extra sidekiq args...]   (-q default -c 2 unless you pass -q / -c)
    _hh_sidekiq_launch "" "$@"
}

# hh_peer_sidekiq_start GEN APPFILE [ARGS...]: the same with a peer's server (GEN 73 or 81, also
# 73-gems / 81-gems): `ruby<GEN> sidekiq-<that version>/bin/sidekiq -r APPFILE ...`
hh_peer_sidekiq_start() {
    local gen="$1"; shift
    [ -n "${HH_PEERS:-}" ] || hh_require_peers
    _hh_sidekiq_launch "$gen" "$@"
}

_hh_sidekiq_launch() {   # GEN ("" for Debian's sidekiq) APPFILE [extra sidekiq args...]
    local gen="$1" app="$2" bin
    shift 2
    local cmd=(sidekiq)
    if [ -n "$gen" ]; then
        bin="$(printf '%s\n' "$HH_PEERS/sidekiq-${gen:0:1}.${gen:1:1}."*/bin/sidekiq | head -n 1)"
        [ -f "$bin" ] || fail "no Sidekiq ${gen:0:1}.${gen:1:1} server in $HH_PEERS"
        cmd=("$HH_PEERS/ruby$gen" -W0 "$bin")
    fi
    case "$app" in /*) ;; *) [ -f "$app" ] || app="$HH_RUBY_DIR/$app"; app="$(cd "$(dirname "$app")" && pwd)/$(basename "$app")" ;; esac
    local extra=("$@") has_q=0 has_c=0 a
    for a in "${extra[@]}"; do
        case "$a" in -q|--queue) has_q=1 ;; -c|--concurrency) has_c=1 ;; esac
    done
    [ $has_q = 1 ] || extra+=(-q default)
    [ $has_c = 1 ] || extra+=(-c 2)
    SIDEKIQ_LOG="$HH_TMP/sidekiq$gen.log"
    # sidekiq chdirs nowhere; run from the temp dir so nothing is written into the tree
    (cd "$HH_TMP" && REDIS_URL="$REDIS_URL" exec setsid "${cmd[@]}" -r "$app" "${extra[@]}") \
        </dev/null >>"$SIDEKIQ_LOG" 2>&1 &
    SIDEKIQ_PID=$!
    _hh_register "$SIDEKIQ_PID"
    hh_log "sidekiq pid $SIDEKIQ_PID: ${cmd[*]} -r $app ${extra[*]} (log $SIDEKIQ_LOG)"
    export SIDEKIQ_PID SIDEKIQ_LOG
}

# Wait until the sidekiq process we started is in the `processes` set.
hh_sidekiq_wait_ready() {
    must_wait "${1:-40}" 'R smembers processes | grep -q ":$SIDEKIQ_PID:"' \
        "sidekiq (pid $SIDEKIQ_PID) did not register in 'processes' within ${1:-40} s"
}

hh_sidekiq_stop() {
    [ -n "${SIDEKIQ_PID:-}" ] || return 0
    kill -TERM "$SIDEKIQ_PID" 2>/dev/null
    wait_until 30 "! kill -0 $SIDEKIQ_PID" || hh_kill_tree "$SIDEKIQ_PID" 1
    wait "$SIDEKIQ_PID" 2>/dev/null
    SIDEKIQ_PID=""
}

# ------------------------------------------------------------------ job helpers

# hh_jid: a fresh 24-hex-character jid
# hh_jid_recorder PATH: writes an --exec handler at PATH that appends each job's jid to a file
# beside it, and prints that file's path (empty at first).
hh_jid_recorder() {
    local script="$1" ran="$1.ran"
    : >"$ran"
    printf '#!/bin/sh\ncat >/dev/null\necho "$HIREDHAND_JID" >>"%s"\n' "$ran" >"$script"
    chmod +x "$script"
    echo "$ran"
}

# hh_push_job CLASS ARGS_JSON [MEMBERS]: pushes a job as Sidekiq's client writes
# it (retry true, queue default, created_at and enqueued_at now) onto
# queue:default and prints its jid; MEMBERS ('"backtrace":true') are added.
hh_push_job() {
    local jid now
    jid="$(hh_jid)" now="$(hh_now)"
    R lpush queue:default "{\"retry\":true,\"queue\":\"default\",\"class\":\"$1\",\"args\":$2,\"jid\":\"$jid\"${3:+,$3},\"created_at\":$now,\"enqueued_at\":$now}" >/dev/null
    R sadd queues default >/dev/null
    echo "$jid"
}

# hh_retry_field JID FIELD: FIELD of JID's entry in the retry set, as Ruby's
# JSON (what Sidekiq's API reads) prints it.
hh_retry_field() {
    R zrange retry 0 -1 | grep "$1" | ruby -rjson -e 'puts JSON.parse($stdin.read)[ARGV[0]]' "$2"
}

# hh_retry_backtrace JID: the error_backtrace of JID's entry in the retry set
# (base64 of zlib-compressed JSON), one line per line, as Sidekiq's API reads it.
hh_retry_backtrace() {
    R zrange retry 0 -1 | grep "$1" | ruby -rjson -rzlib -rbase64 -e \
        'puts JSON.parse(Zlib::Inflate.inflate(Base64.decode64(JSON.parse($stdin.read)["error_backtrace"])))'
}

# hh_require_plugin: PLUGIN is the example plug-in ($HH_PLUGIN, set by ctest,
# else the build tree's), or the test fails saying so.
hh_require_plugin() {
    PLUGIN="${HH_PLUGIN:-$HH_ROOT/build/example_plugin.so}"
    [ -f "$PLUGIN" ] || fail "example plug-in not found: $PLUGIN (build it, or set HH_PLUGIN)"
}

hh_jid() { od -An -N12 -tx1 /dev/urandom | tr -d ' \n'; }

# hh_now: epoch seconds as a float
hh_now() { date +%s.%N; }
hh_http_code() { curl -s -g --max-time 3 -o /dev/null -w '%{http_code}' "$@" 2>/dev/null; }
hh_http_body() { curl -s -g --max-time 3 "$@" 2>/dev/null; }
