#!/usr/bin/env bash
# The pickup design survives losing its connections: after CLIENT KILL of the subscriber
# (__redis__:invalidate), of the connection with CLIENT TRACKING on, and a Redis restart, the
# worker subscribes and tracks again by itself, and jobs pushed with redis-cli LPUSH to an idle
# worker (-c 3, three queues, one thread busy on a 30 s job; --namespace set, so the tracked
# prefix is ns:queue:) start within PK_LIMIT (1 s, pickup_helpers.sh) again.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
. "$(dirname "$0")/../../lib/pickup_helpers.sh"
hh_require_binary
hh_redis_start

NS=ns
LIMIT=$PK_LIMIT
hh_start_worker -c 3 -t 1 --namespace "$NS" -q default -q low -q bulk \
    --exec "SlowJob=$RF_HANDLER 60" --exec "OkJob=$RF_HANDLER"
must_wait 15 '[ "$(R scard "$NS:processes")" -ge 1 ]' "no heartbeat in $NS:processes"
slow="$(hh_jid)"
R lpush "$NS:queue:default" "$(rf_payload SlowJob "$slow" default)" >/dev/null
must_wait 10 'grep -q "^'"$slow"' " "$RF_DIR/started"' "the slow job did not start"

pickups() {   # LABEL: 5 pickups on ns:queue:default, each under LIMIT
    local lat=() i
    for ((i = 0; i < 5; i++)); do
        lat+=("$(pk_pickup default OkJob "$NS:queue:default")")
        sleep 0.1
    done
    hh_log "$1: pickups ${lat[*]} s"
    pk_all_under "$LIMIT" "${lat[@]}" || problems+=("$1: pickups ${lat[*]} s (want each < $LIMIT s)")
}
# Clients with ids above $1 that track (flags t) and that subscribe (sub=1): "1 1" once both
# connections are new.
fresh() {
    R client list | awk -v after="$1" '{ id = substr($1, 4) + 0 } id > after && / flags=t/ { t++ }
        id > after && / sub=1 / { s++ } END { print t + 0, s + 0 }'
}
last_id() { R client list | awk '{ id = substr($1, 4) + 0; if (id > m) m = id } END { print m + 0 }'; }

problems=()
sleep 1
must_wait 10 '[ "$(fresh 0)" = "1 1" ]' "no tracking connection and subscriber while idle"
pickups "at start"

before="$(last_id)"
R client kill type pubsub >/dev/null
must_wait 10 '[ "$(fresh "$before")" = "1 1" ]' "no new subscriber and tracking after CLIENT KILL TYPE pubsub"
pickups "after the subscriber was killed"

before="$(last_id)"
id="$(R client list | awk '/ flags=t/ { print substr($1, 4) }' | sort -n | tail -n 1)"   # the newest
[ -n "$id" ] || fail "no tracking connection found"
R client kill id "$id" >/dev/null
must_wait 10 '[ "$(fresh "$before")" = "1 1" ]' "tracking not on again after its connection was killed"
pickups "after the tracking connection was killed"

hh_redis_restart
must_wait 20 '[ "$(fresh 0)" = "1 1" ]' "no tracking after a Redis restart"
# the running job's handler lives on; its in-progress entry is gone with the restart (no
# persistence): only pickups are judged here
sleep 1
pickups "after a Redis restart"
assert_alive "$WORKER_PID" "worker died"
hh_stop_worker TERM 15
if [ ${#problems[@]} -gt 0 ]; then
    msg="pickup after losing connections:"
    for p in "${problems[@]}"; do msg="$msg
  - $p"; done
    fail "$msg"
fi
pass "tracking and subscriber came back each time; pickups under $LIMIT s"
