#!/usr/bin/env bash
# Coexistence: the in-progress lists are never mistaken for queues, and Ruby Sidekiq
# processes (6.4.1, BasicFetch) on the same queue keep working alongside hiredhand.
# Phase 1: hiredhand (--fetch reliable, -c 3) runs 3 SlowWorker jobs (8 s each) and 2 more wait
# in queue:default. While they run, hiredhand:inprogress:* lists exist, and:
#   - SMEMBERS queues is exactly [default]; Sidekiq::Queue.all lists only "default";
#     Sidekiq::Stats#queues is {"default" => 2} and #enqueued 2 (the in-progress jobs are not
#     counted as enqueued); Sidekiq::Queue("default").latency is in [0, 60] s
#   - Sidekiq::ProcessSet shows hiredhand's identity; Sidekiq::Workers (the Busy page) shows
#     exactly the 3 running jids.
# Phase 2: the real `sidekiq` server (-c 2, BasicFetch) starts on queue default next to hiredhand;
# 300 OkWorker jobs are pushed with Sidekiq::Client.push_bulk: first 4 at a time (each batch once
# the previous one ran) until each side has run 10, then the rest at once. Both run them (hiredhand through
# handlers/rf_job.sh, Sidekiq through tests/ruby/app.rb's OkWorker, which records in test:ran).
# Expected: every jid ran exactly once (none lost, none twice), each side ran at least 10;
# the 3 SlowWorker jobs running in phase 1 completed on hiredhand (the 2 queued ones may run on
# either side); the queue and the in-progress lists end empty;
# retry and dead empty; the queues set still only [default]; both processes stop cleanly.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
hh_require_binary
command -v sidekiq >/dev/null || fail "sidekiq (Ruby, 6.4.1) is not installed"
hh_redis_start

json() {   # JSON-TEXT RUBY-EXPR-ON-j
    ruby -rjson -e 'j = JSON.parse($stdin.read); v = ('"$2"'); puts(v.is_a?(String) ? v : JSON.generate(v))' <<<"$1"
}

# ---------------------------------------------------------------- phase 1
rf_set_sleep slow 8
slow="$(hh_ruby rf_coexist.rb push SlowWorker 5 8)" || fail "Ruby push of 5 SlowWorker jobs failed: $slow"
printf '%s\n' "$slow" >"$HH_TMP/slow.jids"
hh_start_worker -c 3 -t 5 --fetch reliable --heartbeat-interval 1 \
    --exec "SlowWorker=$RF_HANDLER slow" --exec "OkWorker=$RF_HANDLER 0.02"
hh_w=$WORKER_PID
ident="$(rf_identity "$WORKER_LOG")"
must_wait 15 '[ "$(rf_uniq "$RF_DIR/started")" -ge 3 ]' "hiredhand did not start 3 SlowWorker jobs within 15 s"
must_wait 5 '[ "$(R sismember processes "$ident")" = 1 ]' "hiredhand $ident not in processes"
sleep 1.5   # one more beat: the Busy page data is written per beat
running="$(cut -d' ' -f1 "$RF_DIR/started" | sort -u)"
inprog="$(rf_inprog | tr '\n' ' ')"
[ -n "$inprog" ] || fail "no hiredhand:inprogress:* list exists while 3 jobs run with reliable fetch"
assert_eq "$(rf_inprog_len)" 3 "jobs in in-progress lists while 3 run"
assert_eq "$(R smembers queues | sort | tr '\n' ' ')" "default " "SMEMBERS queues (in-progress lists: $inprog)"
view="$(hh_ruby rf_coexist.rb inspect)" || fail "rf_coexist.rb inspect failed: $view"
hh_log "Sidekiq API view while 3 jobs run: $view"
assert_eq "$(json "$view" 'j["queues"]')" '["default"]' "Sidekiq::Queue.all names (in-progress lists: $inprog)"
assert_eq "$(json "$view" 'j["stats_queues"]')" '{"default":2}' "Sidekiq::Stats#queues"
assert_eq "$(json "$view" 'j["enqueued"]')" 2 "Sidekiq::Stats#enqueued (running jobs are not enqueued)"
assert_between "$(json "$view" 'j["latency"]')" 0 60 "Sidekiq::Queue(default).latency (s)"
assert_contains "$(json "$view" 'j["processes"]')" "\"$ident\"" "Sidekiq::ProcessSet lists hiredhand"
assert_eq "$(json "$view" 'j["busy"]')" 3 "Sidekiq::Workers#size (Busy page)"
assert_eq "$(json "$view" 'j["busy_jids"].sort.join(" ")')" "$(echo $running)" "jids on the Busy page (the 3 running)"

# ---------------------------------------------------------------- phase 2
hh_sidekiq_start app.rb -q default -c 2
hh_sidekiq_wait_ready 60
# Both sides must get work whatever the machine's load: jobs first trickle in small batches until
# each side has run 10 of them (an event, with a deadline), then the rest go in one push_bulk.
trickled="$(hh_ruby rf_coexist.rb trickle OkWorker "$RF_DIR/done" 10 250 120)" \
    || fail "Ruby trickle push of OkWorker jobs failed: $trickled"
printf '%s\n' "$trickled" >"$HH_TMP/ok.jids"
n_trickled="$(grep -c . "$HH_TMP/ok.jids")"
hh_log "trickled $n_trickled OkWorker jobs until both sides had run 10"
jids="$(hh_ruby rf_coexist.rb push OkWorker "$((300 - n_trickled))")" \
    || fail "Ruby push_bulk of the other $((300 - n_trickled)) OkWorker jobs failed: $jids"
printf '%s\n' "$jids" >>"$HH_TMP/ok.jids"
assert_eq "$(grep -c . "$HH_TMP/ok.jids")" 300 "jids returned by push_bulk"
sk_ran() { hh_ruby rf_coexist.rb ran_jids >"$HH_TMP/sk.jids" 2>/dev/null; cat "$HH_TMP/sk.jids"; }
total() { { cut -d' ' -f1 "$RF_DIR/done"; sk_ran; } | sort -u | grep -c .; }
must_wait 120 '[ "$(total)" -ge 305 ]' \
    "only $(total) of 305 jobs ran within 120 s with hiredhand and Sidekiq side by side (queue=$(R llen queue:default), in progress=$(rf_inprog_len))"
sleep 1
sk_ran >/dev/null
hh_n="$(grep -c . "$RF_DIR/done")"
sk_n="$(grep -c . "$HH_TMP/sk.jids")"
hh_log "hiredhand ran $hh_n jobs, Sidekiq ran $sk_n (305 = 300 OkWorker + 5 SlowWorker)"
cat "$HH_TMP/slow.jids" "$HH_TMP/ok.jids" >"$HH_TMP/all.jids"
{ cat "$RF_DIR/done"; sed 's/$/ sidekiq/' "$HH_TMP/sk.jids"; } >"$HH_TMP/both.done"
rf_compare "$HH_TMP/all.jids" "$HH_TMP/both.done"
assert_eq "$RF_LOST" 0 "jobs lost: $RF_LOST_JIDS"
assert_eq "$RF_DUP" 0 "jobs run more than once (hiredhand + Sidekiq)"
assert_eq "$RF_COMPLETED" 305 "distinct jobs run"
for j in $running; do
    assert_eq "$(rf_count "$RF_DIR/done" "$j")" 1 "SlowWorker $j (running on hiredhand in phase 1) completed by hiredhand"
done
hh_ok="$(cut -d' ' -f1 "$RF_DIR/done" | sort -u | comm -12 - <(sort -u "$HH_TMP/ok.jids") | grep -c .)"
sk_ok="$(sort -u "$HH_TMP/sk.jids" | comm -12 - <(sort -u "$HH_TMP/ok.jids") | grep -c .)"
[ "$hh_ok" -ge 10 ] || fail "hiredhand ran only $hh_ok of the 300 OkWorker jobs next to Sidekiq (want >= 10)"
[ "$sk_ok" -ge 10 ] || fail "Ruby Sidekiq ran only $sk_ok of the 300 OkWorker jobs next to hiredhand (want >= 10): $(tail -n 5 "$SIDEKIQ_LOG")"
assert_eq "$(R llen queue:default)" 0 "LLEN queue:default at the end"
must_wait 5 '[ "$(rf_inprog_len)" = 0 ]' "jobs left in in-progress lists: $(rf_inprog | tr '\n' ' ')"
assert_eq "$(R zcard retry) $(R zcard dead)" "0 0" "ZCARD retry, dead"
assert_eq "$(R smembers queues | sort | tr '\n' ' ')" "default " "SMEMBERS queues at the end"
hh_sidekiq_stop
WORKER_PID=$hh_w hh_stop_worker TERM 15
assert_eq "$WORKER_RC" 0 "hiredhand exit status after SIGTERM"
pass "in-progress lists invisible to Sidekiq's API; hiredhand ran $hh_ok and Sidekiq $sk_ok of 300 jobs, none lost or doubled"
