#!/usr/bin/env bash
# contrib/hiredhand.service is a valid systemd unit (`systemd-analyze verify` prints nothing:
# it reports unknown keys and bad values only as messages) and keeps what hiredhand needs:
# Type=notify, SIGTERM to the worker alone (KillMode=mixed, so handlers finish within -t),
# TimeoutStopSec longer than -t, and every --exec/--serve address family allowed.
# Its ExecStart, run as systemd would run it (%H: the host name), gives a stable identity: a
# start after a kill -9 pushes back the job the dead run held at once, not after the dead
# run's heartbeat expired (60 s), and an identity in $HIREDHAND_OPTS overrides it.
# The verify step is skipped (with a note) when systemd-analyze is not installed.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
hh_require_binary
unit="$HH_ROOT/contrib/hiredhand.service"
[ -r "$unit" ] || fail "contrib/hiredhand.service is missing"

key() { sed -n "s/^$1=//p" "$unit" | tail -n 1; }
assert_eq "$(key Type)" notify "Type="
assert_eq "$(key KillSignal)" SIGTERM "KillSignal="
assert_eq "$(key KillMode)" mixed "KillMode= (handlers must not get the TERM)"
t="$(grep -o -- ' -t [0-9]*' "$unit" | head -n 1 | awk '{print $2}')"
[ -n "$t" ] || fail "ExecStart has no -t"
stop="$(key TimeoutStopSec)"
[ "$stop" -gt $((t + 5)) ] || fail "TimeoutStopSec=$stop is not longer than -t $t plus the stop's budget"
assert_contains "$(key RestrictAddressFamilies)" "AF_UNIX" "AF_UNIX (notify socket, unix:// Redis)"
assert_contains "$(key RestrictAddressFamilies)" "AF_INET6" "AF_INET6"
[ -n "$(key WatchdogSec)" ] || fail "no WatchdogSec="
assert_eq "$(key Restart)" on-failure "Restart="
assert_eq "$(key RestartPreventExitStatus)" "2 3" "no restart after a configuration error (2) or a live identity (3)"

# ExecStart names the binary where `make install` puts it (CMake's default prefix).
prefix="$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$(dirname "$HIREDHAND")/CMakeCache.txt" 2>/dev/null)"
[ "${prefix:-/usr/local}" = /usr/local ] || hh_log "NOTE: this build installs to $prefix, the unit assumes /usr/local"
grep -q 'install(TARGETS hiredhand' "$HH_ROOT/CMakeLists.txt" || fail "CMakeLists.txt no longer installs the hiredhand binary"
# ExecStart as systemd runs it: %H expanded, $HIREDHAND_OPTS split on blanks, a free HTTP port.
exec_line="$(key ExecStart)"
case "$exec_line" in
/usr/local/bin/hiredhand\ work\ *'$HIREDHAND_OPTS') ;;
*) fail "ExecStart is not '/usr/local/bin/hiredhand work ... \$HIREDHAND_OPTS': $exec_line" ;;
esac
host="$(hostname)"
http_port="$(hh_pick_free_port)"
unit_args() {   # HIREDHAND_OPTS... -> the arguments after `hiredhand work`
    local line="${exec_line#/usr/local/bin/hiredhand work }" a out=()
    line="${line//%H/$host}"
    line="${line//127.0.0.1:7433/127.0.0.1:$http_port}"
    for a in ${line%\$HIREDHAND_OPTS}; do out+=("$a"); done
    UNIT_ARGS=("${out[@]}" "$@")
}
hh_redis_start
slow="$HH_TMP/slow.jids"; : >"$slow"
rf_push default SlowJob 1 "$slow"
rf_set_sleep slow 30
unit_args -c 2 --heartbeat-interval 1 --exec "SlowJob=$RF_HANDLER slow"
hh_start_worker "${UNIT_ARGS[@]}"
must_wait 15 '[ "$(rf_uniq "$RF_DIR/started")" -ge 1 ]' "the SlowJob did not start under the unit's ExecStart"
assert_eq "$(R llen "hiredhand:inprogress:$host|default")" 1 "the job is held under the identity $host (the host name)"
rf_kill9 "$WORKER_PID"
rf_set_sleep slow 0.2
hh_start_worker "${UNIT_ARGS[@]}"
must_wait 20 '[ "$(rf_uniq "$RF_DIR/done")" -ge 1 ]' \
    "the job held at the kill -9 did not run again within 20 s of the restart: $(grep -i recover "$WORKER_LOG" | head -n 3)"
assert_contains "$(cat "$WORKER_LOG")" "pushed back 1 jobs left by a previous run of $host" "the restart pushes back what the dead run held"
hh_stop_worker TERM 15
assert_eq "$WORKER_RC" 0 "exit status after SIGTERM"
# An --identity in HIREDHAND_OPTS comes last, so it wins.
unit_args -c 1 --heartbeat-interval 1 --identity "unit-override-$$"
hh_start_worker "${UNIT_ARGS[@]}"
must_wait 15 '[ "$(R sismember processes "unit-override-$$")" = 1 ]' "an --identity in HIREDHAND_OPTS does not override the unit's"
hh_stop_worker TERM 15
assert_eq "$WORKER_RC" 0 "exit status after SIGTERM (overridden identity)"
if ! command -v systemd-analyze >/dev/null; then
    hh_log "NOTE: systemd-analyze not installed (apt-get install systemd): unit not verified"
    pass
fi
copy="$HH_TMP/hiredhand.service"
sed "s|/usr/local/bin/hiredhand|$HIREDHAND|g" "$unit" >"$copy"
out="$(systemd-analyze verify "$copy" 2>&1)"
rc=$?
assert_eq "$rc" 0 "systemd-analyze verify exit status ($out)"
assert_eq "$out" "" "systemd-analyze verify has nothing to say about the unit"
pass
