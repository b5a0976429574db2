# shellcheck shell=bash
# tests/lib/sentinel_helpers.sh -- a Sentinel setup on loopback for the --sentinel tests: one
# master, one replica and three Debian `redis-sentinel`s, each started and stopped by PID through
# the harness (killed at exit). Source after harness.sh.
#
#   sentinel_start_cluster    master (hh_redis_start, AOF fsync always) and its replica, then three
#                             sentinels monitoring "mymaster" (quorum 2, down after 2 s); waits
#                             until every sentinel sees the replica and the two other sentinels.
#                             Sets MASTER_PORT/MASTER_PID, REPLICA_PORT/REPLICA_PID,
#                             SENTINEL_PORTS[], SENTINEL_PIDS[], SENTINEL_DIRS[] and
#                             SENTINEL_ARGS (--sentinel 127.0.0.1:P for each, --sentinel-master).
#   sentinel_launch I         (re)starts sentinel I (0..2) from its config
#   SP ARGS...                redis-cli to the first sentinel that answers
#   sentinel_master_port      the master's port as the sentinels say it now
#   sentinel_follow_master    points REDIS_PORT (so R and the rf_* helpers) at that master

sentinel_launch() {
    local i="$1"
    setsid redis-sentinel "${SENTINEL_DIRS[$i]}/sentinel.conf" </dev/null >>"${SENTINEL_DIRS[$i]}/out" 2>&1 &
    SENTINEL_PIDS[$i]=$!
    _hh_register "${SENTINEL_PIDS[$i]}"
}

sentinel_write_configs() {   # writes the three configs (ports chosen now) without starting them
    local i p d
    SENTINEL_PORTS=() SENTINEL_PIDS=() SENTINEL_DIRS=() SENTINEL_ARGS=()
    for i in 0 1 2; do
        p="$(hh_pick_free_port)"
        d="$(hh_tmp)"
        cat >"$d/sentinel.conf" <<CONF
port $p
bind 127.0.0.1
daemonize no
dir $d
logfile $d/sentinel.log
sentinel monitor mymaster 127.0.0.1 $MASTER_PORT 2
sentinel down-after-milliseconds mymaster 2000
sentinel failover-timeout mymaster 10000
sentinel parallel-syncs mymaster 1
CONF
        SENTINEL_PORTS+=("$p") SENTINEL_DIRS+=("$d")
        SENTINEL_ARGS+=(--sentinel "127.0.0.1:$p")
    done
    SENTINEL_ARGS+=(--sentinel-master mymaster)
}

sentinel_start_cluster() {
    command -v redis-sentinel >/dev/null || fail "redis-sentinel is not installed (scripts/deps.sh test)"
    hh_redis_start --appendonly yes --appendfsync always
    MASTER_PORT="$REDIS_PORT" MASTER_PID="$REDIS_PID"
    REPLICA_PORT="$(hh_pick_free_port)"
    local rdir; rdir="$(hh_tmp)"
    setsid redis-server --port "$REPLICA_PORT" --bind 127.0.0.1 --dir "$rdir" --save "" \
        --appendonly yes --appendfsync always --replicaof 127.0.0.1 "$MASTER_PORT" \
        --logfile "$rdir/redis.log" </dev/null >/dev/null 2>&1 &
    REPLICA_PID=$!
    _hh_register "$REPLICA_PID"
    must_wait 30 'redis-cli -p "$REPLICA_PORT" info replication 2>/dev/null | grep -q "master_link_status:up"' \
        "the replica did not sync with the master"
    sentinel_write_configs
    local i
    for i in 0 1 2; do sentinel_launch "$i"; done
    for i in 0 1 2; do
        must_wait 60 'redis-cli -p "${SENTINEL_PORTS['"$i"']}" info sentinel 2>/dev/null | grep -q "status=ok,.*slaves=1,sentinels=3"' \
            "sentinel $i does not see the master, the replica and the two other sentinels"
    done
    hh_log "master :$MASTER_PORT (pid $MASTER_PID), replica :$REPLICA_PORT (pid $REPLICA_PID), sentinels ${SENTINEL_PORTS[*]}"
}

SP() {
    local p out
    for p in "${SENTINEL_PORTS[@]}"; do
        out="$(redis-cli -h 127.0.0.1 -p "$p" "$@" 2>/dev/null)" && [ -n "$out" ] && { echo "$out"; return 0; }
    done
    return 1
}

sentinel_master_port() { SP sentinel get-master-addr-by-name mymaster | tail -n 1; }

sentinel_follow_master() {
    REDIS_PORT="$(sentinel_master_port)"
    REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0"
    export REDIS_PORT REDIS_URL
}
