#!/usr/bin/env bash
# hiredhand:fetchers (the registry of processes that own in-progress lists) is written at start;
# when Redis loses its data (FLUSHALL here; a restart without persistence alike) a live worker
# must put itself back, within a beat or two: its heartbeat finds its hash had expired and
# registers again. Redis losing a running job's entry is not a lease loss (no process recovered
# it): the job keeps running to its end, nothing is counted in lease_lost.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
hh_require_binary
hh_redis_start

jids="$HH_TMP/jids"; : >"$jids"
rf_set_sleep slow 8
rf_push default SlowJob 1 "$jids" "" RPUSH
jid="$(cat "$jids")"
hport="$(hh_pick_free_port)"
hh_start_worker -c 2 -t 5 --heartbeat-interval 1 --recovery-interval 2 --http "$hport" --exec "SlowJob=$RF_HANDLER slow"
id="$(rf_identity "$WORKER_LOG")"
must_wait 10 '[ "$(R sismember hiredhand:fetchers "$id")" = 1 ]' "$id not in hiredhand:fetchers after start"
must_wait 10 '[ "$(rf_count "$RF_DIR/started" "$jid")" = 1 ]' "the job did not start"

R flushall >/dev/null
hh_log "FLUSHALL done"
# Not asserted here that the key is gone: a beat may put it back between two commands on a
# loaded machine. The "registered ... again" line below says the worker found it gone.
# heartbeat interval 1 s: a beat or two, plus a command timeout of slack on a loaded machine
must_wait 5 '[ "$(R sismember hiredhand:fetchers "$id")" = 1 ]' \
    "$id not back in hiredhand:fetchers within 5 s of FLUSHALL (heartbeat interval 1 s)"
grep -q "registered $id in hiredhand:fetchers again" "$WORKER_LOG" || fail "no log line for the re-registration"
must_wait 5 'grep -q "jid=$jid: its in-progress entry is gone but no process recovered it" "$WORKER_LOG"' \
    "the vanished entry of the running job was not reported"
must_wait 20 '[ "$(rf_count "$RF_DIR/done" "$jid")" = 1 ]' "the running job did not complete after FLUSHALL"
stats="$(curl -s --max-time 3 "http://127.0.0.1:$hport/stats")" || fail "GET /stats failed"
assert_eq "$(printf '%s' "$stats" | sed -n 's/.*"lease_lost": *\([0-9]*\).*/\1/p')" 0 "/stats lease_lost (data lost by Redis is no lease loss)"
assert_not_contains "$(cat "$WORKER_LOG")" "lease lost" "worker log"
hh_stop_worker TERM 20
assert_eq "$WORKER_RC" 0 "exit status after SIGTERM"
pass "$id back in hiredhand:fetchers after FLUSHALL; the running job finished"
