#!/usr/bin/env bash
# Quiet and stop from Sidekiq's API (with the push-back of unfinished jobs on stop):
#  A. Sidekiq::Process#quiet! (Ruby API, the Web UI's Quiet) on a worker (-c 2, beat 5 s) with 2
#     SlowJobs in flight, sent right after a beat (the worst case): within one beat the signal is
#     popped (LLEN <id>-signals == 0) and HGET <id> quiet == "true"; 5 OkJobs pushed after
#     the quiet stay queued (no new job fetched) while the 2 in-flight jobs finish and are
#     acknowledged; at least 3 consecutive beats carry quiet == "true" (quiet is sticky).
#  B. Sidekiq::Process#stop! on a worker (-c 2 -t 3) with 2 SlowJob(60)s in flight: it exits with
#     status 0 within one beat + 3 s + slack, both jobs are back in their queue byte-identical and
#     once, nothing in retry/dead, and the process left `processes`, Sidekiq::ProcessSet and
#     Sidekiq::Workers at once (its work hashes deleted). stop! on the quiet worker A exits it too.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/heartbeat_helpers.sh"
hh_require_binary
hh_redis_start
BEAT=5

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# ---------------------------------------------------------------- A: quiet
s1="$(hh_jid)"; s2="$(hh_jid)"
hb_push SlowJob "$s1" '[20]' default
hb_push SlowJob "$s2" '[20]' default
hh_start_worker -c 2 -t 5 --exec "SlowJob=$HH_HANDLERS/sleep.sh 20" --exec "OkJob=$HH_HANDLERS/record.sh"
wa_pid=$WORKER_PID; wa_log=$WORKER_LOG
hb_wait_identity "$wa_pid" 15
ida="$HB_ID"
must_wait 10 '[ "$(R llen test:started)" = 2 ]' "the 2 SlowJobs did not start within 10 s"
must_wait $((BEAT + 2)) '[ "$(R hget "$ida" busy)" = 2 ]' "busy did not become 2 within one beat"
hb_wait_next_beat "$ida" $((BEAT + 2))            # align: the signal arrives just after a beat
hh_ruby hb_api.rb signal "$ida" quiet >/dev/null || fail "Sidekiq::Process#quiet! failed"
t_sig=$(now)
for i in 1 2 3 4 5; do hb_push OkJob "$(hh_jid)" "[$i]" default; done
assert_eq "$(R llen queue:default)" 5 "OkJobs queued right after quiet!"

t_pop=""; t_quiet=""
for ((k = 0; k < 60 && (${#t_pop} == 0 || ${#t_quiet} == 0); k++)); do
    [ -z "$t_pop" ] && [ "$(R llen "$ida-signals")" = 0 ] && t_pop=$(since "$t_sig")
    [ -z "$t_quiet" ] && [ "$(R hget "$ida" quiet)" = true ] && t_quiet=$(since "$t_sig")
    sleep 0.2
done
hh_log "quiet!: signal popped after ${t_pop:-never} s, quiet=\"true\" in the hash after ${t_quiet:-never} s"
[ -n "$t_pop" ] || fail "the TSTP signal was not popped from $ida-signals within 12 s"
[ -n "$t_quiet" ] || fail "HGET $ida quiet never became \"true\" within 12 s of quiet!"
assert_between "$t_pop" 0 $((BEAT + 1)) "seconds until LLEN $ida-signals == 0 (within one beat)"
awk -v t="$t_quiet" -v lim=$((BEAT + 1)) 'BEGIN { exit !(t <= lim) }' \
    || hb_soft_fail "quiet within one beat: HGET $ida quiet became \"true\" only ${t_quiet} s after quiet! (sent right after a beat); expected within one beat (${BEAT} s + 1 s): the quiet state is written by the beat after the one that popped TSTP"
assert_contains "$(cat "$wa_log")" "TSTP" "worker log mentions the TSTP it received"

# watch: queue stays 5, beats keep quiet == "true", in-flight jobs finish and are acknowledged
declare -a beats=() quiets=()
last=""
deadline=$((SECONDS + 4 * BEAT + 4))
while [ $SECONDS -lt $deadline ]; do
    n=$(R llen queue:default)
    [ "$n" = 5 ] || fail "queue:default has $n jobs $(since "$t_sig") s after quiet! (expected 5: a quiet worker fetches nothing); test:meta: $(R lrange test:meta 0 -1 | tr '\n' ';')"
    b=$(R hget "$ida" beat)
    if [ -n "$b" ] && [ "$b" != "$last" ]; then
        beats+=("$b"); quiets+=("$(R hget "$ida" quiet)"); last="$b"
    fi
    sleep 0.25
done
hh_log "beats after quiet!: ${#beats[@]}, quiet values: ${quiets[*]}"
run=0; best=0
for q in "${quiets[@]}"; do
    if [ "$q" = true ]; then run=$((run + 1)); else run=0; fi
    [ $run -gt $best ] && best=$run
done
[ "$best" -ge 3 ] || fail "only $best consecutive beats with quiet == \"true\" after quiet! (values: ${quiets[*]}): quiet is not sticky"
[ "${quiets[-1]}" = true ] || fail "the last beat has quiet == \"${quiets[-1]}\": quiet reverted"
must_wait 8 '[ "$(R llen test:ran)" = 2 ]' "the 2 in-flight SlowJobs did not finish after quiet (test:ran has $(R llen test:ran))"
ran="$(R lrange test:ran 0 -1)"
assert_contains "$ran" "$s1" "SlowJob $s1 finished"
assert_contains "$ran" "$s2" "SlowJob $s2 finished"
assert_eq "$(R llen test:meta)" 0 "OkJobs run after quiet (none)"
must_wait $((BEAT + 2)) '[ "$(R hget "$ida" busy)" = 0 ]' "busy did not go back to 0 after the in-flight jobs ended"
inprog="$(R --scan --pattern 'hiredhand:inprogress:*' | while read -r k; do R lrange "$k" 0 -1; done)"
assert_eq "$inprog" "" "in-progress lists after the jobs were acknowledged"
assert_alive "$wa_pid" "the quiet worker exited (quiet must not stop it)"
assert_eq "$(R hget "$ida" quiet)" true "quiet still true before stop"

# ---------------------------------------------------------------- B: stop
p1="$(hb_payload SlowJob "$(hh_jid)" '[60,"b1"]' stopq)"
p2="$(hb_payload SlowJob "$(hh_jid)" '[60,"b2"]' stopq)"
R sadd queues stopq >/dev/null
R lpush queue:stopq "$p1" >/dev/null
R lpush queue:stopq "$p2" >/dev/null
hh_start_worker -c 2 -t 3 -q stopq --exec "SlowJob=$HH_HANDLERS/sleep.sh 60"
wb_pid=$WORKER_PID
hb_wait_identity "$wb_pid" 15
idb="$HB_ID"
must_wait 10 '[ "$(R llen test:started)" = 4 ]' "the 2 stopq SlowJobs did not start within 10 s"
must_wait $((BEAT + 2)) '[ "$(R hget "$idb" busy)" = 2 ]' "busy of $idb did not become 2 within one beat"
retry0=$(R zcard retry); dead0=$(R zcard dead)
hh_ruby hb_api.rb signal "$idb" stop >/dev/null || fail "Sidekiq::Process#stop! failed"
t_stop=$(now)
limit=$((BEAT + 3 + 4))
wait_until "$limit" "! kill -0 $wb_pid" || fail "worker still running $limit s after stop! (one beat + -t 3 + 4 s slack)"
wait "$wb_pid"; rc=$?
took=$(since "$t_stop")
hh_log "stop!: exited with $rc after $took s"
assert_eq "$rc" 0 "exit status after stop!"
# at once: no waiting for a TTL
assert_eq "$(R sismember processes "$idb")" 0 "SISMEMBER processes $idb right after exit"
assert_eq "$(R exists "$idb:work" "$idb:workers")" 0 "$idb:work / :workers right after exit"
procs="$(hh_ruby hb_api.rb processes)" || fail "hb_api.rb processes failed"
assert_not_contains "$procs" "$idb" "Sidekiq::ProcessSet right after the stop"
assert_contains "$procs" "$ida" "Sidekiq::ProcessSet still lists the quiet worker"
workers="$(hh_ruby hb_api.rb workers)" || fail "hb_api.rb workers failed"
assert_not_contains "$workers" "$idb" "Sidekiq::Workers right after the stop"
q="$(R lrange queue:stopq 0 -1)"
assert_eq "$(R llen queue:stopq)" 2 "jobs back in queue:stopq"
assert_eq "$(printf '%s\n' "$q" | grep -cxF -- "$p1")" 1 "SlowJob b1 back in queue:stopq once, byte-identical"
assert_eq "$(printf '%s\n' "$q" | grep -cxF -- "$p2")" 1 "SlowJob b2 back in queue:stopq once, byte-identical"
assert_eq "$(R zcard retry)" "$retry0" "ZCARD retry after stop!"
assert_eq "$(R zcard dead)" "$dead0" "ZCARD dead after stop!"
assert_eq "$(R --scan --pattern "hiredhand:inprogress:$idb*" | while read -r k; do R llen "$k"; done | grep -v '^0$')" "" \
    "in-progress lists of $idb after stop!"

# stop! on the quiet worker A (no running job): exits within one beat + slack; OkJobs untouched
hh_ruby hb_api.rb signal "$ida" stop >/dev/null || fail "Sidekiq::Process#stop! on the quiet worker failed"
wait_until $((BEAT + 4)) "! kill -0 $wa_pid" || fail "quiet worker still running $((BEAT + 4)) s after stop!"
wait "$wa_pid"; rc=$?
assert_eq "$rc" 0 "exit status of the quiet worker after stop!"
assert_eq "$(R sismember processes "$ida")" 0 "SISMEMBER processes $ida after its stop"
assert_eq "$(R llen queue:default)" 5 "OkJobs still queued after the quiet worker stopped"
procs="$(hh_ruby hb_api.rb processes)"
assert_eq "$(hb_ruby_field "$procs" list)" "[]" "Sidekiq::ProcessSet after both stops"
hb_finish
