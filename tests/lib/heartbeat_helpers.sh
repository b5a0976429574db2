# shellcheck shell=bash
# tests/lib/heartbeat_helpers.sh -- helpers for the heartbeat / Busy page tests.
# Source it AFTER tests/lib/harness.sh:
#     . "$(dirname "$0")/../../lib/harness.sh"
#     . "$(dirname "$0")/../../lib/heartbeat_helpers.sh"
#
#   hb_payload CLASS JID ARGS_JSON [QUEUE]   a Sidekiq 6.4 style job payload (float timestamps)
#   hb_push CLASS JID ARGS_JSON [QUEUE]      LPUSH queue:QUEUE + SADD queues QUEUE (like the client)
#   hb_wait_identity PID [TIMEOUT]           wait until a member of `processes` is HOST:PID:...;
#                                            sets HB_ID (and prints nothing)
#   hb_beat ID                               HGET ID beat
#   hb_wait_next_beat ID [TIMEOUT]           wait for a beat newer than the current one
#   hb_signal_raw ID WORD                    exactly what Sidekiq::Process#quiet! etc. send:
#                                            MULTI; LPUSH ID-signals WORD; EXPIRE ID-signals 60; EXEC
#   hb_monitor_start FILE / hb_monitor_stop  redis-cli MONITOR of the test Redis into FILE
#   hb_check_atomic FILE ID                  parse a MONITOR capture: every HSET ID / ID:work /
#                                            ID:workers inside MULTI/EXEC with its EXPIRE 60 (and
#                                            SADD processes ID with HSET ID); prints violations and
#                                            returns 1; prints "transactions=N" on stdout
#   hb_keys_of ID                            every key whose name contains ID, one a line
#   hb_chromium_ensure                       sets HB_CHROMIUM, installing Debian's chromium if needed;
#                                            returns 1 when it cannot be had
#   hb_chromium ARGS... URL                  headless chromium with the flags of
#                                            docs testing-with-real-sidekiq.md and a fresh profile
#   hb_cdp_open URL                          headless chromium (hb_chromium's flags) showing URL in
#                                            REAL time, driven over the DevTools pipe by
#                                            tests/lib/cdp.py (timers run as the clock does, unlike
#                                            --virtual-time-budget); sets CDP_PID
#   hb_cdp_eval TIMEOUT JS                   prints the JSON value of JS once it is truthy (polled
#                                            every 0.25 s); returns 1 after TIMEOUT s without
#   hb_cdp_click TIMEOUT JS                  a real mouse click (DevTools Input events) at the centre
#                                            of the element JS names, once it exists (polled every
#                                            0.25 s); returns 1 after TIMEOUT s without
#   hb_cdp_close                             closes that browser
#   hb_cdp URL SECONDS JS                    one shot: open URL, wait SECONDS real seconds, print
#                                            the JSON value of JS, close
#   hb_webui_start                           rackup/webrick serving Sidekiq::Web on loopback;
#                                            sets WEBUI_PORT, WEBUI_URL, WEBUI_PID, WEBUI_LOG
#   hb_pick_listen_port                      a free port below the ephemeral range, for servers
#   hb_ruby_field JSON KEY                   extract a top-level key of a JSON object (ruby)

# Screenshots and DOM dumps go under the build folder (ctest sets
# HH_ARTIFACTS to <build>/test-artifacts), never into the source tree.
export HB_ARTIFACTS="${HH_ARTIFACTS:-$(dirname "$HIREDHAND")/test-artifacts}"

hb_payload() {   # CLASS JID ARGS_JSON [QUEUE]
    local now
    now="$(date +%s.%N | cut -c1-17)"
    printf '{"retry":true,"queue":"%s","class":"%s","args":%s,"jid":"%s","created_at":%s,"enqueued_at":%s}' \
        "${4:-default}" "$1" "$3" "$2" "$now" "$now"
}

hb_push() {   # CLASS JID ARGS_JSON [QUEUE]
    local q="${4:-default}"
    R sadd queues "$q" >/dev/null || fail "SADD queues $q failed"
    R lpush "queue:$q" "$(hb_payload "$1" "$2" "$3" "$q")" >/dev/null || fail "LPUSH queue:$q failed"
}

hb_identity_of_pid() {   # PID -> member of `processes` whose pid part is PID (or nothing)
    R smembers processes | awk -F: -v p="$1" '$(NF-1) == p { print; exit }'
}

hb_wait_identity() {   # PID [TIMEOUT]  -> HB_ID
    local pid="$1" t="${2:-15}"
    must_wait "$t" '[ -n "$(hb_identity_of_pid '"$pid"')" ]' \
        "process $pid did not appear in the processes set within $t s (members: $(R smembers processes | tr '\n' ' '))"
    HB_ID="$(hb_identity_of_pid "$pid")"
    export HB_ID
}

hb_beat() { R hget "$1" beat; }

hb_wait_next_beat() {   # ID [TIMEOUT]
    local id="$1" t="${2:-8}" b0
    b0="$(hb_beat "$id")"
    wait_until "$t" '[ -n "$(hb_beat "'"$id"'")" ] && [ "$(hb_beat "'"$id"'")" != "'"$b0"'" ]' \
        || fail "no new heartbeat from $id within $t s (beat stayed [$b0])"
}

hb_signal_raw() {   # ID WORD
    local out
    out="$(printf 'MULTI\nLPUSH %s-signals %s\nEXPIRE %s-signals 60\nEXEC\n' "$1" "$2" "$1" \
        | redis-cli -h 127.0.0.1 -p "$REDIS_PORT")" || fail "could not push $2 on $1-signals"
    assert_contains "$out" "QUEUED" "MULTI/LPUSH/EXPIRE of $2 on $1-signals"
}

HB_MONITOR_PID=""
hb_monitor_start() {   # FILE
    setsid redis-cli -h 127.0.0.1 -p "$REDIS_PORT" monitor </dev/null >"$1" 2>&1 &
    HB_MONITOR_PID=$!
    hh_track_pid "$HB_MONITOR_PID"
    must_wait 5 'grep -q "^OK" "'"$1"'"' "redis-cli MONITOR did not start"
}

hb_monitor_stop() {
    [ -n "$HB_MONITOR_PID" ] || return 0
    hh_kill_tree "$HB_MONITOR_PID" 1
    HB_MONITOR_PID=""
}

# hb_check_atomic FILE ID: reads a MONITOR capture. Per client connection it tracks MULTI ... EXEC
# (or DISCARD). Violations (printed on stderr, return 1):
#   - HSET/HMSET on ID, ID:work or ID:workers outside a transaction;
#   - a transaction with HSET ID but without EXPIRE ID 60, or without SADD processes ID;
#   - a transaction with HSET ID:work(ers) but without EXPIRE ID:work(ers) 60;
#   - EXPIRE ID with a TTL other than 60.
# Prints on stdout: "transactions=N beats=M" (M = transactions that wrote HSET ID).
hb_check_atomic() {   # FILE ID
    awk -v id="$2" '
    function tok(s,   m) {   # first "..." token of s (keys and command names never contain quotes)
        if (match(s, /^"[^"]*"/)) { m = substr(s, 2, RLENGTH - 2); rest = substr(s, RLENGTH + 2); return m }
        rest = ""; return ""
    }
    function isours(k) { return k == id || k == id ":work" || k == id ":workers" }
    function report(msg) { print "atomicity: " msg > "/dev/stderr"; bad++ }
    BEGIN { bad = 0; ntx = 0; nbeats = 0 }
    {
        i = index($0, "] ")
        if (i == 0) next
        client = substr($0, 1, i)
        sub(/^[^[]*\[/, "", client)
        line = substr($0, i + 2)
        cmd = toupper(tok(line)); line = rest
        a1 = tok(line); line = rest
        a2 = tok(line); line = rest
        if (cmd == "MULTI") { inmulti[client] = 1; tx[client] = ""; next }
        if (cmd == "EXEC" || cmd == "DISCARD") {
            if (inmulti[client]) {
                ntx++
                t = tx[client]
                if (index(t, "|HSET " id "|")) {
                    nbeats++
                    if (!index(t, "|EXPIRE " id " 60|")) report("HSET " id " without EXPIRE " id " 60 in transaction #" ntx ": " t)
                    if (!index(t, "|SADD processes " id "|")) report("HSET " id " without SADD processes in transaction #" ntx ": " t)
                }
                if (index(t, "|HSET " id ":work|") && !index(t, "|EXPIRE " id ":work 60|")) report("HSET " id ":work without its EXPIRE 60 in transaction #" ntx)
                if (index(t, "|HSET " id ":workers|") && !index(t, "|EXPIRE " id ":workers 60|")) report("HSET " id ":workers without its EXPIRE 60 in transaction #" ntx)
            }
            inmulti[client] = 0; tx[client] = ""; next
        }
        if ((cmd == "HSET" || cmd == "HMSET") && isours(a1) && !inmulti[client])
            report(cmd " " a1 " outside MULTI/EXEC (client " client "): " substr($0, 1, 160))
        if (cmd == "EXPIRE" && a1 == id && a2 != "60") report("EXPIRE " id " " a2 " (TTL is not 60)")
        if (inmulti[client]) {
            k = (cmd == "HMSET") ? "HSET" : cmd
            tx[client] = tx[client] "|" k " " a1 (k == "EXPIRE" ? " " a2 : "") "|"
            if (cmd == "SADD") tx[client] = tx[client] "|SADD " a1 " " a2 "|"
        }
    }
    END { printf "transactions=%d beats=%d\n", ntx, nbeats; exit(bad ? 1 : 0) }
    ' "$1"
}

hb_keys_of() {   # ID -> keys whose name contains ID
    R --scan | grep -F -- "$1" || true
}

hb_ruby_field() {   # JSON KEY
    printf '%s' "$1" | ruby -rjson -e 'v = JSON.parse($stdin.read)[ARGV[0]]; puts(v.is_a?(String) ? v : JSON.generate(v))' "$2"
}

# hb_pick_listen_port: a loopback port for a server we start (hiredhand --http, rackup). Below the
# kernel's ephemeral range, and not held by any socket at all (a client socket in TIME_WAIT on
# an ephemeral port makes bind() fail with EADDRINUSE even with SO_REUSEADDR).
hb_pick_listen_port() {
    local lo i p
    read -r lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=32768
    [ "$lo" -gt 21000 ] 2>/dev/null || lo=32768
    for ((i = 0; i < 50; i++)); do
        p=$((20000 + RANDOM % (lo - 20000)))
        hh_port_in_use "$p" && continue
        [ -n "$(ss -Htan "( sport = :$p )" 2>/dev/null)" ] && continue
        echo "$p"; return 0
    done
    fail "no free listening port found in 50 tries"
}

# ------------------------------------------------------------------ chromium

HB_CHROMIUM=""
hb_chromium_ensure() {
    local c
    for c in /usr/bin/chromium chromium chromium-browser; do
        if command -v "$c" >/dev/null 2>&1; then HB_CHROMIUM="$(command -v "$c")"; return 0; fi
    done
    hh_log "chromium missing: apt-get install -y chromium"
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        timeout 600 apt-get install -y chromium >"$HH_TMP/apt.log" 2>&1 \
            || { timeout 300 apt-get update >>"$HH_TMP/apt.log" 2>&1 && timeout 600 apt-get install -y chromium >>"$HH_TMP/apt.log" 2>&1; }
    fi
    [ -x /usr/bin/chromium ] && { HB_CHROMIUM=/usr/bin/chromium; return 0; }
    return 1
}

hb_chromium() {   # ARGS... (last one the URL); stdout = chromium's stdout; bounded at 60 s
    local prof
    prof="$(hh_tmp)"
    timeout -k 5 60 "$HB_CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$prof" "$@" 2>>"$HH_TMP/chromium.err"
}

hb_cdp_open() {   # URL
    local prof
    prof="$(hh_tmp)"
    coproc CDP { exec setsid python3 "$HH_ROOT/tests/lib/cdp.py" "$1" "$HB_CHROMIUM" --headless --no-sandbox \
        --disable-gpu --disable-quic --no-first-run --disable-background-networking --disable-component-update \
        --disable-sync --disable-background-timer-throttling --disable-renderer-backgrounding \
        --user-data-dir="$prof" about:blank 2>>"$HH_TMP/chromium.err"; }
    hh_track_pid "$CDP_PID"
}

hb_cdp_cmd() {   # JSON-COMMAND READ-TIMEOUT: one command to cdp.py, its answer in HB_CDP_OUT
    HB_CDP_OUT=""
    printf '%s\n' "$1" >&"${CDP[1]}" || return 1
    IFS= read -r -t "$2" HB_CDP_OUT <&"${CDP[0]}"
}

hb_cdp_eval() {   # TIMEOUT JS
    local cmd
    cmd="$(python3 -c 'import json,sys; print(json.dumps({"expr": sys.argv[2], "until": True, "timeout": float(sys.argv[1])}))' "$1" "$2")"
    hb_cdp_cmd "$cmd" "$(($1 + 30))" || return 1
    python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print(json.dumps(r.get("value", r.get("error")))); sys.exit(0 if r["ok"] else 1)' "$HB_CDP_OUT"
}

hb_cdp_click() {   # TIMEOUT JS
    local cmd
    cmd="$(python3 -c 'import json,sys; print(json.dumps({"click": sys.argv[2], "timeout": float(sys.argv[1])}))' "$1" "$2")"
    hb_cdp_cmd "$cmd" "$(($1 + 30))" || return 1
    python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print(json.dumps(r.get("value", r.get("error")))); sys.exit(0 if r["ok"] else 1)' "$HB_CDP_OUT"
}

hb_cdp_close() {
    [ -n "${CDP_PID:-}" ] || return 0
    local fd="${CDP[1]}"
    exec {fd}>&-
    wait "$CDP_PID" 2>/dev/null
    CDP_PID=""
}

hb_cdp() {   # URL SECONDS JS
    hb_cdp_open "$1"
    hb_cdp_cmd "{\"sleep\": $2}" "$(($2 + 60))" || { hb_cdp_close; return 1; }
    local cmd rc
    cmd="$(python3 -c 'import json,sys; print(json.dumps({"expr": sys.argv[1]}))' "$3")"
    hb_cdp_cmd "$cmd" 60 && python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print(json.dumps(r.get("value", r.get("error")))); sys.exit(0 if r["ok"] else 1)' "$HB_CDP_OUT"
    rc=$?
    hb_cdp_close
    return $rc
}

# ------------------------------------------------------------------ Web UI

hb_webui_start() {
    local dir secret
    dir="$(hh_tmp)"
    secret="$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')"
    cat >"$dir/config.ru" <<EOF
require "redis"
Redis.silence_deprecations = true if Redis.respond_to?(:silence_deprecations=)
require "sidekiq"
require "sidekiq/web"
require "rack/session/cookie" rescue nil
Sidekiq.configure_client { |c| c.redis = { url: ENV.fetch("REDIS_URL") } }
Sidekiq.logger.level = Logger::WARN
use Rack::Session::Cookie, secret: "$secret", same_site: true
run Sidekiq::Web
EOF
    WEBUI_PORT="$(hb_pick_listen_port)"
    WEBUI_URL="http://127.0.0.1:$WEBUI_PORT"
    WEBUI_LOG="$dir/rackup.log"
    (cd "$dir" && REDIS_URL="$REDIS_URL" exec setsid rackup -s webrick -o 127.0.0.1 -p "$WEBUI_PORT" \
        -E deployment config.ru) </dev/null >"$WEBUI_LOG" 2>&1 &
    WEBUI_PID=$!
    hh_track_pid "$WEBUI_PID"
    hh_log "Sidekiq::Web pid $WEBUI_PID on $WEBUI_URL (log $WEBUI_LOG)"
    wait_until 40 '[ "$(curl -s -o /dev/null -w "%{http_code}" --max-time 5 "$WEBUI_URL/busy")" = 200 ]' \
        || fail "Sidekiq::Web did not answer 200 on $WEBUI_URL/busy within 40 s: $(tail -n 20 "$WEBUI_LOG")"
    export WEBUI_PORT WEBUI_URL WEBUI_PID WEBUI_LOG
}

# ------------------------------------------------------------------ soft failures
# hb_check_soft COND_STATUS MSG: record a failure but keep going (so one test reports every
# broken expectation of a scenario); hb_finish fails with all of them, or passes.
HB_SOFT_FAILS=()
hb_soft_fail() {
    HB_SOFT_FAILS+=("$*")
    echo "CHECK FAILED: $HH_TEST_NAME: $*" >&2
}
hb_finish() {
    if [ ${#HB_SOFT_FAILS[@]} -gt 0 ]; then
        local m all=""
        for m in "${HB_SOFT_FAILS[@]}"; do all="$all
  - $m"; done
        fail "${#HB_SOFT_FAILS[@]} check(s) failed:$all"
    fi
    pass "$@"
}
