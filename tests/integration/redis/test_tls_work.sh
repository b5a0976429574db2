#!/usr/bin/env bash
# `hiredhand work` over rediss:// only, against Debian's redis-server with a TLS port
# (appendonly, fsync always), certificates by the openssl CLI:
#   1. Sidekiq's Ruby client (redis-rb, ssl: true + ssl_params ca_file) pushes 150 jobs over TLS;
#      a worker with basic fetch (BRPOP) and the CA from HIREDHAND_TLS_CA_FILE runs each once;
#      its heartbeat shows in `processes`, and Sidekiq::Stats read over TLS counts them.
#   2. 400 more jobs; a worker with reliable fetch (BLMOVE, Lua scripts, pipelines) over TLS with
#      mutual TLS (--tls-cert/--tls-key); redis-server is stopped and started again twice mid-run.
#      The worker never exits and reconnects with its backoff; every jid runs (lost 0;
#      duplicates reported); queue and in-progress lists end empty; retry and dead stay empty;
#      the worker is back in `processes`; SIGTERM exits 0.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
. "$(dirname "$0")/../../lib/tls_helpers.sh"
hh_require_binary
hh_redis_start_tls --appendonly yes --appendfsync always

# --- 1. Sidekiq pushes over TLS, hiredhand runs over TLS
N1=150
ruby_jids="$HH_TMP/ruby.jids"
TLS_CA_FILE="$TLS_DIR/ca.crt" hh_ruby tls_push.rb push "$N1" TlsJob >"$ruby_jids" ||
    fail "Sidekiq::Client could not push over TLS"
assert_eq "$(wc -l <"$ruby_jids")" "$N1" "jids printed by the Ruby client"
assert_eq "$(R llen queue:default)" "$N1" "jobs Sidekiq pushed over TLS"
HIREDHAND_TLS_CA_FILE="$TLS_DIR/ca.crt" HH_NO_URL=1 hh_start_worker -r "$TLS_URL" -c 5 --fetch basic \
    --heartbeat-interval 1 --exec "TlsJob=$RF_HANDLER 0.01"
must_wait 60 '[ "$(rf_uniq "$RF_DIR/done")" -ge '"$N1"' ]' \
    "only $(rf_uniq "$RF_DIR/done") of $N1 jobs ran over TLS within 60 s; log: $(tail -n 5 "$WORKER_LOG")"
rf_compare "$ruby_jids" "$RF_DIR/done"
assert_eq "$RF_LOST $RF_DUP" "0 0" "jobs lost, duplicated (lost: $RF_LOST_JIDS)"
must_wait 15 '[ "$(R scard processes)" = 1 ]' "the worker's heartbeat over TLS is not in processes"
must_wait 15 '[ "$(TLS_CA_FILE="$TLS_DIR/ca.crt" hh_ruby tls_push.rb processed)" = '"$N1"' ]' \
    "Sidekiq::Stats#processed over TLS does not count the $N1 jobs"
hh_stop_worker TERM 15
assert_eq "$WORKER_RC" 0 "exit status after SIGTERM (basic fetch over TLS)"
assert_not_contains "$(cat "$WORKER_LOG")" "ERROR" "errors logged by the TLS worker"

# --- 2. reliable fetch over mutual TLS, Redis restarted mid-run
R config set tls-auth-clients yes >/dev/null
: >"$RF_DIR/done"
N=400
jids="$HH_TMP/all.jids"; : >"$jids"
rf_push default TlsJob "$N" "$jids"
HH_NO_URL=1 hh_start_worker -r "$TLS_URL" --tls-ca-file "$TLS_DIR/ca.crt" --tls-cert "$TLS_DIR/client.crt" \
    --tls-key "$TLS_DIR/client.key" -c 5 -t 5 --fetch reliable --heartbeat-interval 2 \
    --exec "TlsJob=$RF_HANDLER 0.05"
ident="$(rf_identity "$WORKER_LOG")"

restart_at() {   # DONE_THRESHOLD DOWN_SECONDS
    must_wait 60 '[ "$(rf_uniq "$RF_DIR/done")" -ge '"$1"' ]' "fewer than $1 jobs completed within 60 s (done $(rf_uniq "$RF_DIR/done"))"
    hh_log "$(rf_uniq "$RF_DIR/done") jobs done: stopping redis-server for $2 s"
    hh_redis_stop
    sleep "$2"   # the outage itself; nothing is asserted on time
    assert_alive "$WORKER_PID" "worker exited while Redis was down"
    hh_redis_restart
    R config set tls-auth-clients yes >/dev/null
    [ "$(R exists queue:default)" = 1 ] || [ "$(rf_uniq "$RF_DIR/done")" -ge "$N" ] ||
        fail "queue:default is gone after the restart: the AOF did not keep the data (test setup problem)"
}
restart_at 80 2
restart_at 250 1

must_wait 90 '[ "$(rf_uniq "$RF_DIR/done")" -ge '"$N"' ]' \
    "only $(rf_uniq "$RF_DIR/done") of $N jobs completed within 90 s after the restarts (queue=$(R llen queue:default), in progress=$(rf_inprog_len)); log: $(tail -n 5 "$WORKER_LOG")"
rf_compare "$jids" "$RF_DIR/done"
hh_log "over TLS: pushed $RF_PUSHED completed $RF_COMPLETED lost $RF_LOST duplicated $RF_DUP"
assert_eq "$RF_LOST" 0 "jobs lost: $RF_LOST_JIDS"
must_wait 10 '[ "$(rf_inprog_len)" = 0 ] && [ "$(R llen queue:default)" = 0 ]' \
    "jobs left: queue=$(R llen queue:default), in progress=$(rf_inprog_len)"
assert_eq "$(R zcard retry) $(R zcard dead)" "0 0" "ZCARD retry, dead (an outage is not a job failure)"
assert_contains "$(cat "$WORKER_LOG")" "connection restored" "the worker logged its reconnect"
must_wait 10 '[ "$(R sismember processes "$ident")" = 1 ] && [ "$(R exists "$ident")" = 1 ]' "worker $ident not back in processes"
hh_stop_worker TERM 15
assert_eq "$WORKER_RC" 0 "exit status after SIGTERM"
pass "over TLS: Sidekiq-pushed jobs ran; two restarts: pushed $RF_PUSHED completed $RF_COMPLETED lost $RF_LOST duplicated $RF_DUP"
