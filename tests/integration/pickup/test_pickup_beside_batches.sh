#!/usr/bin/env bash
# an idle process still picks up a new job within milliseconds against the batched
# reliable fetch (fetch.c: a thread may take up to 32 fast jobs at once; processor.c: "a thread
# must not sit on jobs that idle threads could run").
# queue:default, FIFO: 200 NoopJobs (C plug-in, microseconds: the batch grows), 1 SlowJob
# (10 s), 31 OkJobs (handlers/rf_job.sh, a few ms). --fetch reliable -c 4.
# Expected, 4 s after the SlowJob started (3 of the 4 threads idle meanwhile):
#   - all 31 OkJobs have completed (none is held, unstarted, in the slow thread's batch)
#   - the in-progress lists hold only the SlowJob (the jobs completed in its batch are acked)
# Then everything completes, once each, and SIGTERM exits 0.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
hh_require_binary
hh_require_plugin
hh_redis_start

noop="$HH_TMP/noop.jids"; slow="$HH_TMP/slow.jids"; ok="$HH_TMP/ok.jids"; : >"$noop"; : >"$slow"; : >"$ok"
rf_push default NoopJob 200 "$noop"
rf_push default SlowJob 1 "$slow"
rf_push default OkJob 31 "$ok"
hh_start_worker -c 4 -t 5 --fetch reliable --require "$PLUGIN" \
    --exec "SlowJob=$RF_HANDLER 10" --exec "OkJob=$RF_HANDLER"
sj="$(cat "$slow")"
must_wait 15 '[ "$(rf_count "$RF_DIR/started" "$sj")" -ge 1 ]' "the SlowJob did not start within 15 s (queue $(R llen queue:default))"
t_slow="$(awk -v j="$sj" '($1 "") == (j "") { print $3; exit }' "$RF_DIR/started")"
sleep 4
ok_done="$(awk '{ print $1 }' "$RF_DIR/done" | sort -u | comm -12 - <(sort -u "$ok") | grep -c .)"
inprog_n="$(rf_inprog_len)"
queued="$(R llen queue:default)"
hh_log "4 s after the SlowJob started: $ok_done/31 OkJobs done, $inprog_n jobs in in-progress lists, $queued queued"
must_wait 30 '[ "$(awk "{ print \$1 }" "$RF_DIR/done" | sort -u | comm -12 - <(sort -u "$ok") | grep -c .)" -ge 31 ] && [ "$(rf_count "$RF_DIR/done" "$sj")" -ge 1 ]' \
    "the OkJobs and the SlowJob did not all complete within 30 s"
last_ok="$(awk -v t="$t_slow" 'NR == FNR { want[$1 ""] = 1; next } ($1 "") in want { d = $3 - t; if (d > m) m = d } END { printf "%.2f", m }' "$ok" "$RF_DIR/started")"
hh_log "last OkJob started $last_ok s after the SlowJob"
cat "$ok" "$slow" >"$HH_TMP/all.jids"
rf_compare "$HH_TMP/all.jids" "$RF_DIR/done"
assert_eq "$RF_LOST $RF_DUP" "0 0" "lost and duplicated jobs"
must_wait 5 '[ "$(rf_inprog_len)" = 0 ]' "jobs left in in-progress lists at the end"
hh_stop_worker TERM 15
assert_eq "$WORKER_RC" 0 "exit status after SIGTERM"
[ "$ok_done" = 31 ] || fail "jobs held hostage by a batch: 4 s after a 10 s SlowJob started, only $ok_done of the 31 OkJobs queued behind it had completed although 3 of 4 threads were idle; the last one started $last_ok s after the SlowJob (it waited in the slow thread's batch, fetched but not started, in that thread's in-progress list); in-progress lists then held $inprog_n jobs (want 1: the SlowJob), queue:default $queued"
[ "$inprog_n" = 1 ] || fail "4 s after the SlowJob started, the in-progress lists held $inprog_n jobs (want 1: the SlowJob); jobs completed earlier in its batch stay unacknowledged while it runs, so a kill -9 then runs them again"
pass "no job waited behind a slow job in a batch (last OkJob $last_ok s after the SlowJob)"
