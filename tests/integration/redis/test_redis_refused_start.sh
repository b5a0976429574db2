#!/usr/bin/env bash
# A permanent error at start ends the CLI with a clear message and exit status 2 instead of
# retrying forever; transient errors keep the backoff.
#   work -r .../99999 on a 16-db Redis        -> exit 2 within 5 s, "DB index is out of range"
#   a wrong password (work, push, stats)      -> exit 2, WRONGPASS text, no password printed
#   no password for a requirepass Redis       -> exit 2, NOAUTH
#   an unknown ACL user                       -> exit 2, WRONGPASS
#   Redis down at start                       -> the worker stays up, then runs a job once a
#                                                Redis appears on that port
#   Redis down at start, then up with a password the worker does not have -> exit 2 then
#                                                (no connection had ever worked)
#   a password changed after the worker connected (rotation) -> the worker keeps running with
#                                                backoff, and works again once the password is back
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
d="$(hh_tmp)"
ran="$(hh_jid_recorder "$d/rec.sh")"

refused() {   # WHAT NEEDLE SECRET -- ARGS...   expect exit 2 within 5 s, NEEDLE in stderr
    local what="$1" needle="$2" secret="$3" t0 t1; shift 4
    t0="$(date +%s.%N)"
    hh_cli "$@"
    t1="$(date +%s.%N)"
    [ "$HH_RC" = 124 ] && fail "$what: 'hiredhand $1' still running after 30 s (expected exit 2)"
    assert_eq "$HH_RC" 2 "$what: exit status (stderr: $HH_ERR)"
    assert_between "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" 0 5 "$what: seconds to exit"
    assert_contains "$HH_ERR" "$needle" "$what: stderr gives Redis' reason"
    if [ -n "$secret" ]; then assert_not_contains "$HH_OUT$HH_ERR" "$secret" "$what: output shows the password"; fi
}

hh_redis_start
url="redis://127.0.0.1:$REDIS_PORT"
refused "db out of range (work)" "DB index is out of range" "" -- work -r "$url/99999" -c 2 --exec "OkJob=$d/rec.sh"
refused "db out of range (push)" "DB index is out of range" "" -- push OkJob '[]' -r "$url/99999"
refused "db out of range (stats)" "DB index is out of range" "" -- stats -r "$url/99999"
hh_redis_stop

pw="right-$(hh_jid)"
bad="wrong-$(hh_jid)"
hh_redis_start --requirepass "$pw"
url="redis://127.0.0.1:$REDIS_PORT"
refused "wrong password (work)" "WRONGPASS" "$bad" -- work -r "redis://:$bad@127.0.0.1:$REDIS_PORT/0" -c 2 --exec "OkJob=$d/rec.sh"
assert_not_contains "$HH_ERR" "$pw" "wrong password (work): stderr shows the real password"
refused "wrong password (push)" "WRONGPASS" "$bad" -- push OkJob '[]' -r "redis://:$bad@127.0.0.1:$REDIS_PORT/0"
refused "wrong password (stats)" "WRONGPASS" "$bad" -- stats -r "redis://:$bad@127.0.0.1:$REDIS_PORT/0"
refused "no password (work)" "NOAUTH" "" -- work -r "$url/0" -c 2 --exec "OkJob=$d/rec.sh"
refused "unknown ACL user (work)" "WRONGPASS" "$pw" -- work -r "redis://ghost:$pw@127.0.0.1:$REDIS_PORT/0" -c 2 --exec "OkJob=$d/rec.sh"

# a password rotated after the worker connected: backoff, never an exit
RA() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" -a "$1" --no-auth-warning "${@:2}"; }
HH_NO_URL=1 hh_start_worker -r "redis://:$pw@127.0.0.1:$REDIS_PORT/0" -c 2 --heartbeat-interval 1 --exec "OkJob=$d/rec.sh"
must_wait 15 '[ "$(RA "$pw" scard processes)" -ge 1 ]' "worker did not beat with the right password"
pw2="rotated-$(hh_jid)"
RA "$pw" config set requirepass "$pw2" >/dev/null
RA "$pw2" client kill type normal >/dev/null
must_wait 15 'grep -q "WRONGPASS" "$WORKER_LOG"' "the worker did not log the refused reconnect"
sleep 3   # a few backoff rounds: the worker must still be up
assert_alive "$WORKER_PID" "the worker exited when its password was rotated after it had connected"
RA "$pw2" config set requirepass "$pw" >/dev/null
jid="$(hh_jid)"
RA "$pw" lpush queue:default "{\"class\":\"OkJob\",\"args\":[],\"jid\":\"$jid\",\"queue\":\"default\",\"retry\":true,\"created_at\":$(hh_now),\"enqueued_at\":$(hh_now)}" >/dev/null
must_wait 20 'grep -qx "$jid" "$ran"' "the worker did not run a job once the password was back"
hh_stop_worker TERM 20
assert_eq "$WORKER_RC" 0 "worker exit status after the rotation"
if grep -q -e "$pw" -e "$pw2" "$WORKER_LOG"; then fail "the worker log shows a password"; fi
hh_redis_stop

# Redis down at start: transient, the worker waits and then works
port="$(hh_pick_free_port)"
HH_NO_URL=1 hh_start_worker -r "redis://127.0.0.1:$port/0" -c 2 --exec "OkJob=$d/rec.sh"
must_wait 10 'grep -q "cannot connect" "$WORKER_LOG"' "the worker did not log that Redis is down"
sleep 2
assert_alive "$WORKER_PID" "the worker exited while Redis was down at start"
hh_redis_start_on "$port"
jid="$(hh_jid)"
R lpush queue:default "{\"class\":\"OkJob\",\"args\":[],\"jid\":\"$jid\",\"queue\":\"default\",\"retry\":true,\"created_at\":$(hh_now),\"enqueued_at\":$(hh_now)}" >/dev/null
must_wait 20 'grep -qx "$jid" "$ran"' "the worker did not run a job once Redis came up"
hh_stop_worker TERM 20
assert_eq "$WORKER_RC" 0 "worker exit status (Redis down at start, then up)"
hh_redis_stop

# Redis down at start, then up with a password the worker lacks: no connection ever worked, so
# this is still a refusal at start: exit 2
port="$(hh_pick_free_port)"
HH_NO_URL=1 hh_start_worker -r "redis://:$bad@127.0.0.1:$port/0" -c 2 --exec "OkJob=$d/rec.sh"
must_wait 10 'grep -q "cannot connect" "$WORKER_LOG"' "the worker did not log that Redis is down"
hh_redis_start_on "$port" --requirepass "$pw"
must_wait 15 '! kill -0 "$WORKER_PID"' "the worker kept running after Redis refused its password (no connection had worked)"
wait "$WORKER_PID"; rc=$?
assert_eq "$rc" 2 "exit status after a refusal once Redis came up"
assert_contains "$(cat "$WORKER_LOG")" "WRONGPASS" "the log gives Redis' reason"
assert_not_contains "$(cat "$WORKER_LOG")" "$bad" "the log shows the password"
pass "permanent refusals at start exit 2 with Redis' reason; outages and rotations keep the backoff"
