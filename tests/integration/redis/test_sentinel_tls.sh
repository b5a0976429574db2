#!/usr/bin/env bash
# --sentinel with a rediss:// URL: TLS to the sentinels and to the master. Master and replica
# replicate over TLS; the three sentinels listen on TLS only (port 0) and monitor the master's
# TLS port, so every byte the worker exchanges with them and with the master is TLS (the plain
# ports exist for the test's own checks). Jobs run before and after a SENTINEL FAILOVER: none
# lost, and the worker beats on the new master.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
. "$(dirname "$0")/../../lib/tls_helpers.sh"
. "$(dirname "$0")/../../lib/sentinel_helpers.sh"
hh_require_binary
tls_make_certs "$(hh_tmp)"
SENTINEL_TLS=1 sentinel_start_cluster
export SENTINEL_TLS=1

# R talks to whichever server the sentinels name, on its plain port
follow() {
    case "$(sentinel_master_port)" in
        "$MASTER_TLS_PORT") REDIS_PORT="$MASTER_PORT" ;;
        "$REPLICA_TLS_PORT") REDIS_PORT="$REPLICA_PORT" ;;
        *) fail "the sentinels name an unexpected master: $(SP sentinel get-master-addr-by-name mymaster | tr '\n' ' ')" ;;
    esac
}
assert_eq "$(sentinel_master_port)" "$MASTER_TLS_PORT" "the sentinels monitor the master's TLS port"

jids="$HH_TMP/all.jids"; : >"$jids"
rf_push default SentJob 1000 "$jids"
HH_NO_URL=1 hh_start_worker -r "rediss://127.0.0.1/0" --tls-ca-file "$TLS_DIR/ca.crt" "${SENTINEL_ARGS[@]}" \
    -c 5 --fetch reliable --heartbeat-interval 1 --recovery-interval 5 --exec "SentJob=$RF_HANDLER"
ident="$(rf_identity "$WORKER_LOG")"
must_wait 60 '[ "$(rf_uniq "$RF_DIR/done")" -ge 300 ]' "fewer than 300 jobs ran over TLS through the sentinels"
t_switch="$(date +%s)"
SP sentinel failover mymaster | grep -q OK || fail "SENTINEL FAILOVER refused"
must_wait 60 '[ "$(sentinel_master_port)" = "$REPLICA_TLS_PORT" ]' "the sentinels did not promote the replica"
follow
must_wait 30 '[ "$(R hget "'"$ident"'" beat | cut -d. -f1)" -gt '"$t_switch"' ] 2>/dev/null' \
    "the worker does not beat on the new master"
jids2="$HH_TMP/after.jids"; : >"$jids2"
rf_push default SentJob 200 "$jids2"
cat "$jids2" >>"$jids"
must_wait 90 '[ "$(R llen queue:default)" = 0 ] && [ "$(rf_inprog_len)" = 0 ]' \
    "jobs left: queue=$(R llen queue:default), in progress=$(rf_inprog_len)"
must_wait 30 '[ "$(rf_uniq "$RF_DIR/done")" -ge 1200 ]' "not every job ran"
rf_compare "$jids" "$RF_DIR/done"
hh_log "TLS + Sentinel failover: pushed $RF_PUSHED completed $RF_COMPLETED lost $RF_LOST duplicated $RF_DUP"
assert_eq "$RF_LOST" 0 "jobs lost: $RF_LOST_JIDS"
assert_not_contains "$(cat "$WORKER_LOG")" "TLS handshake" "TLS errors in the worker's log"
hh_stop_worker TERM 20
assert_eq "$WORKER_RC" 0 "exit status after SIGTERM"
pass "TLS to the sentinels and the master, across a failover: lost $RF_LOST duplicated $RF_DUP of $RF_PUSHED"
