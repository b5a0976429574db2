#!/usr/bin/env bash
# systemd's notification protocol (Type=notify units), seen on a NOTIFY_SOCKET the test makes
# (a unix datagram socket in its temp dir, read by python3):
#   - READY=1 arrives once the worker fetches (after its first heartbeat reached Redis), with a
#     STATUS= "fetching ..." line; STATUS= lines keep coming at heartbeats;
#   - with WATCHDOG_USEC=4000000 the worker sends WATCHDOG=1 (every ~2 s) while beats succeed;
#   - Redis lost: a "waiting for Redis" STATUS, and no WATCHDOG=1 once the last beat that reached
#     Redis is older than WATCHDOG_USEC (so systemd would restart a worker cut off that long);
#     pings resume once Redis is back;
#   - TSTP makes the STATUS "quiet"; TERM sends STOPPING=1 and the worker exits 0.
# Skipped when this hiredhand was built without libsystemd (it logs so at start).
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
command -v python3 >/dev/null || fail "python3 is not installed"
hh_redis_start

sock="$HH_TMP/notify.sock"
msgs="$HH_TMP/notify.log"
: >"$msgs"
# One line per notification field; each datagram ends with a "--" line.
python3 - "$sock" "$msgs" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as out:
    while True:
        data = s.recv(65536).decode("utf-8", "replace")
        out.write(data.rstrip("\n") + "\n--\n")
PY
hh_track_pid $!
must_wait 10 '[ -S "$sock" ]' "the test's notify socket did not appear"

export NOTIFY_SOCKET="$sock" WATCHDOG_USEC=4000000
hh_start_worker -c 3 --heartbeat-interval 1 -q critical -q default
unset NOTIFY_SOCKET WATCHDOG_USEC

# that warning comes before the start line
must_wait 20 'grep -q "starting: identity" "$WORKER_LOG"' "the worker did not start within 20 s"
if grep -q "built without libsystemd" "$WORKER_LOG"; then
    hh_log "SKIP: hiredhand built without libsystemd (apt-get install libsystemd-dev)"
    pass
fi
must_wait 20 'grep -qx "READY=1" "$msgs"' "no READY=1 on NOTIFY_SOCKET within 20 s of start"
# READY=1 comes with the first "fetching" status, in the same datagram
assert_contains "$(grep -x -A1 "READY=1" "$msgs" | head -n 2)" "STATUS=fetching 2 queues, 3 threads, 0 busy" \
    "READY=1 carries the fetching status"
n="$(grep -c '^STATUS=fetching' "$msgs")"
must_wait 15 '[ "$(grep -c "^STATUS=fetching" "$msgs")" -ge $((n + 2)) ]' "no STATUS= lines at heartbeats"
must_wait 15 '[ "$(grep -cx "WATCHDOG=1" "$msgs")" -ge 2 ]' "no WATCHDOG=1 pings with WATCHDOG_USEC set"
assert_not_contains "$(cat "$msgs")" "STOPPING=1" "no STOPPING=1 before a stop"

# Redis lost: pings stop once the last acknowledged beat is 4 s old
hh_redis_stop
t0="$(hh_now)"
must_wait 15 'grep -q "^STATUS=waiting for Redis" "$msgs"' "no 'waiting for Redis' STATUS after losing Redis"
must_wait 20 'awk -v a="$(hh_now)" -v b="$t0" "BEGIN { exit !(a - b > 5) }"' "clock"
pings="$(grep -cx "WATCHDOG=1" "$msgs")"
waits="$(grep -c "^STATUS=waiting for Redis" "$msgs")"
must_wait 30 '[ "$(grep -c "^STATUS=waiting for Redis" "$msgs")" -ge $((waits + 3)) ]' "no STATUS at failed heartbeats"
must_wait 20 'awk -v a="$(hh_now)" -v b="$t0" "BEGIN { exit !(a - b > 9) }"' "clock"
assert_eq "$(grep -cx "WATCHDOG=1" "$msgs")" "$pings" "no WATCHDOG=1 while heartbeats do not reach Redis"
hh_redis_restart
must_wait 30 '[ "$(grep -cx "WATCHDOG=1" "$msgs")" -gt "$pings" ]' "WATCHDOG=1 did not resume once Redis was back"

kill -TSTP "$WORKER_PID"
must_wait 15 'grep -q "^STATUS=quiet" "$msgs"' "no quiet STATUS after TSTP"

[ -n "${HH_SHOW:-}" ] && cat "$msgs" >&2
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "the worker exits 0 after TERM"
must_wait 5 'grep -qx "STOPPING=1" "$msgs"' "no STOPPING=1 at TERM"
assert_contains "$(cat "$msgs")" "STATUS=stopping" "a stopping STATUS at TERM"
pass
