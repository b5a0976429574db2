#!/usr/bin/env bash
# contrib/hiredhand.service is a valid systemd unit (`systemd-analyze verify` prints nothing:
# it reports unknown keys and bad values only as messages) and keeps what hiredhand needs:
# Type=notify, SIGTERM to the worker alone (KillMode=mixed, so handlers finish within -t),
# TimeoutStopSec longer than -t, and every --exec/--serve address family allowed.
# Skipped (with a note) when systemd-analyze is not installed.
. "$(dirname "$0")/../lib/harness.sh"
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
if ! command -v systemd-analyze >/dev/null; then
    hh_log "NOTE: systemd-analyze not installed (apt-get install systemd): unit not verified"
    pass
fi
copy="$HH_TMP/hiredhand.service"
sed "s|/usr/bin/hiredhand|$HIREDHAND|g" "$unit" >"$copy"
out="$(systemd-analyze verify "$copy" 2>&1)"
rc=$?
assert_eq "$rc" 0 "systemd-analyze verify exit status ($out)"
assert_eq "$out" "" "systemd-analyze verify has nothing to say about the unit"
pass
