#!/usr/bin/env bash
# Quiet (TSTP, and the start of every stop) ends the idle threads' blocking fetches, also one that
# reaches Redis late: a thread descheduled between its last look at quiet and its BRPOP, or one
# reconnecting after an outage. Through a proxy (tests/lib/held_brpop_proxy.rb) that holds each
# BRPOP 3 s before it goes to Redis, a worker (--fetch basic, -c 4, SUBSCRIBE refused so its idle
# threads block in BRPOP) gets TSTP while BRPOPs are held: each of them, once in Redis, must end
# well before its 2 s timeout (CLIENT UNBLOCK goes on while a thread still blocks), and a TERM
# after that stops the worker.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
command -v ruby >/dev/null || fail "ruby is not installed"
hh_redis_start

d="$(hh_tmp)"
: >"$d/log"
port="$(hh_pick_free_port)"
setsid ruby "$HH_LIB_DIR/held_brpop_proxy.rb" "$port" "$REDIS_PORT" "$d/hold" 3 "$d/log" >"$d/proxy.out" 2>&1 &
proxy=$!
hh_track_pid "$proxy"
must_wait 10 "hh_port_in_use $port" "the proxy did not listen ($(cat "$d/proxy.out"))"

HH_NO_URL=1 hh_start_worker -r "redis://127.0.0.1:$port/0" --fetch basic -c 4 -q default
hh_worker_wait_ready 20
# the idle threads' BRPOPs (2 s each) come one after the other: hold the next ones
touch "$d/hold"
must_wait 10 "grep -q '^held' '$d/log'" "no BRPOP reached the proxy within 10 s (log: $(tail -3 "$WORKER_LOG"))"
kill -TSTP "$WORKER_PID"
must_wait 10 "grep -q 'quiet: no new jobs will be fetched' '$WORKER_LOG'" "the worker did not log quiet after TSTP"
held() { grep -c '^held' "$d/log"; }
replied() { grep -c '^replied' "$d/log"; }
must_wait 20 '[ "$(replied)" -ge "$(held)" ]' \
    "held BRPOPs without a reply 20 s after quiet ($(held) held, $(replied) replied)"
hh_stop_worker TERM 30
[ "$WORKER_RC" != 124 ] || fail "the worker did not exit within 30 s of SIGTERM"
assert_eq "$(replied)" "$(held)" "held BRPOPs that got a reply"
hh_log "held BRPOPs, seconds blocked in Redis: $(awk '/^replied/ { printf "%s ", $3 }' "$d/log")"
awk '/^replied/ && $3 >= 1.5 { bad = 1 } END { exit bad }' "$d/log" ||
    fail "a BRPOP that reached Redis after quiet stayed blocked 1.5 s or more (its timeout is 2 s): $(grep '^replied' "$d/log" | tr '\n' ' ')"
pass
