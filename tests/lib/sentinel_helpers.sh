# shellcheck shell=bash
# tests/lib/sentinel_helpers.sh -- a Sentinel setup on loopback for the --sentinel tests: one
# master, one replica and three Debian `redis-sentinel`s, each started and stopped by PID through
# the harness (killed at exit). Source after harness.sh.
#
# With SENTINEL_TLS=1 (after tls_make_certs, tests/lib/tls_helpers.sh): master and replica also
# listen on TLS ports and replicate over TLS, the sentinels listen on TLS only (port 0) and
# monitor the master's TLS port; SP then speaks TLS. The plain ports stay for R.
#
#   sentinel_start_cluster    master (hh_redis_start, AOF fsync always) and its replica, then three
#                             sentinels monitoring "mymaster" (quorum 2, down after 2 s); waits
#                             until every sentinel sees the replica and the two other sentinels.
#                             Sets MASTER_PORT/MASTER_PID, REPLICA_PORT/REPLICA_PID,
#                             SENTINEL_PORTS[], SENTINEL_PIDS[], SENTINEL_DIRS[] and
#                             SENTINEL_ARGS (--sentinel 127.0.0.1:P for each, --sentinel-master).
#   sentinel_launch I         (re)starts sentinel I (0..2) from its config
#   SP ARGS...                redis-cli to the first sentinel that answers (SP1 I ARGS: sentinel I)
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
        if [ "${SENTINEL_TLS:-0}" = 1 ]; then
            cat >"$d/sentinel.conf" <<CONF
port 0
tls-port $p
tls-cert-file $TLS_DIR/server.crt
tls-key-file $TLS_DIR/server.key
tls-ca-cert-file $TLS_DIR/ca.crt
tls-auth-clients no
tls-replication yes
CONF
        else
            echo "port $p" >"$d/sentinel.conf"
        fi
        cat >>"$d/sentinel.conf" <<CONF
bind 127.0.0.1
daemonize no
dir $d
logfile $d/sentinel.log
sentinel monitor mymaster 127.0.0.1 ${MASTER_MONITOR_PORT:-$MASTER_PORT} 2
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
    local tls_args=() rtls_args=()
    if [ "${SENTINEL_TLS:-0}" = 1 ]; then
        MASTER_TLS_PORT="$(hh_pick_free_port)" REPLICA_TLS_PORT="$(hh_pick_free_port)"
        tls_args=(--tls-cert-file "$TLS_DIR/server.crt" --tls-key-file "$TLS_DIR/server.key"
                  --tls-ca-cert-file "$TLS_DIR/ca.crt" --tls-auth-clients no --tls-replication yes)
        rtls_args=(--tls-port "$REPLICA_TLS_PORT" "${tls_args[@]}")
        tls_args=(--tls-port "$MASTER_TLS_PORT" "${tls_args[@]}")
    fi
    hh_redis_start --appendonly yes --appendfsync always "${tls_args[@]}"
    MASTER_PORT="$REDIS_PORT" MASTER_PID="$REDIS_PID"
    MASTER_MONITOR_PORT="${MASTER_TLS_PORT:-$MASTER_PORT}"
    REPLICA_PORT="$(hh_pick_free_port)"
    local rdir; rdir="$(hh_tmp)"
    setsid redis-server --port "$REPLICA_PORT" --bind 127.0.0.1 --dir "$rdir" --save "" \
        --appendonly yes --appendfsync always --replicaof 127.0.0.1 "$MASTER_MONITOR_PORT" \
        --logfile "$rdir/redis.log" "${rtls_args[@]}" </dev/null >/dev/null 2>&1 &
    REPLICA_PID=$!
    _hh_register "$REPLICA_PID"
    must_wait 30 'redis-cli -p "$REPLICA_PORT" info replication 2>/dev/null | grep -q "master_link_status:up"' \
        "the replica did not sync with the master"
    sentinel_write_configs
    local i
    for i in 0 1 2; do sentinel_launch "$i"; done
    for i in 0 1 2; do
        must_wait 60 'SP1 '"$i"' info sentinel 2>/dev/null | grep -q "status=ok,.*slaves=1,sentinels=3"' \
            "sentinel $i does not see the master, the replica and the two other sentinels"
    done
    hh_log "master :$MASTER_PORT (pid $MASTER_PID), replica :$REPLICA_PORT (pid $REPLICA_PID), sentinels ${SENTINEL_PORTS[*]}"
}

SP1() {   # I ARGS...: redis-cli to sentinel I
    local i="$1"; shift
    if [ "${SENTINEL_TLS:-0}" = 1 ]; then
        redis-cli --tls --cacert "$TLS_DIR/ca.crt" -h 127.0.0.1 -p "${SENTINEL_PORTS[$i]}" "$@"
    else
        redis-cli -h 127.0.0.1 -p "${SENTINEL_PORTS[$i]}" "$@"
    fi
}

SP() {
    local i out
    for i in "${!SENTINEL_PORTS[@]}"; do
        out="$(SP1 "$i" "$@" 2>/dev/null)" && [ -n "$out" ] && { echo "$out"; return 0; }
    done
    return 1
}

sentinel_master_port() { SP sentinel get-master-addr-by-name mymaster | tail -n 1; }

sentinel_follow_master() {
    REDIS_PORT="$(sentinel_master_port)"
    REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0"
    export REDIS_PORT REDIS_URL
}
