#!/usr/bin/env bash
# kill -9 in the middle of batched reliable fetches loses nothing and runs again only jobs that
# were still in the in-progress list: fetched but not started, running, or finished with the ack
# not sent yet. A job whose ack landed never runs twice.
# 20000 NoopJobs (C plug-in, fast: batches grow to their maximum) with a KillerJob
# (handlers/rf_killer.sh: kill -9s its worker) after the first 3000, -c 4 -v --identity I (a
# "start" and a "done" line per job in the log, written before the ack). The kill comes while
# the other threads run batches; the in-progress list is read (the jids there); restart with the
# same identity, without the killer's handler (its boot pushes them back; the KillerJob then
# fails to the retry set). Then: every NoopJob done at least once over both runs; every job
# started twice is one of those in the list at the kill.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
hh_require_binary
hh_require_plugin
hh_redis_start

n=20000 ident="crash-batch-$$"
inprog="hiredhand:inprogress:$ident|default"
jids="$HH_TMP/pushed.jids"; : >"$jids"
rf_push default NoopJob 3000 "$jids"
rf_push default KillerJob 1 "$HH_TMP/killer.jids"
rf_push default NoopJob $((n - 3000)) "$jids"
wargs=(-c 4 -v --fetch reliable --identity "$ident" --heartbeat-interval 1 --require "$PLUGIN")
hh_start_worker "${wargs[@]}" --exec "KillerJob=$HH_HANDLERS/rf_killer.sh"
w1=$WORKER_PID log1=$WORKER_LOG
must_wait 60 '[ -s "$RF_DIR/killer" ]' "the KillerJob did not run within 60 s"
rf_kill9 "$w1"
R lrange "$inprog" 0 -1 | sed -n 's/.*"jid":"\([0-9a-f]*\)".*/\1/p' | sort >"$HH_TMP/stranded"
stranded="$(grep -c . "$HH_TMP/stranded")"
done1="$(grep -c "jid=.*: done" "$log1")"
hh_log "killed after $done1 jobs done; $stranded entries in $inprog"
[ "$stranded" -gt 0 ] || hh_log "note: nothing was in progress at the kill (the check below is then trivial)"

hh_start_worker "${wargs[@]}"
log2=$WORKER_LOG
must_wait 120 '[ "$(cat "$log1" "$log2" | sed -n "s/.*jid=\([0-9a-f]*\): done.*/\1/p" | sort -u | wc -l)" -ge '"$n"' ]' \
    "only $(cat "$log1" "$log2" | sed -n 's/.*jid=\([0-9a-f]*\): done.*/\1/p' | sort -u | wc -l) of $n jobs done after the restart (queue $(R llen queue:default), in progress $(R llen "$inprog"))"
grep -q "pushed back $stranded jobs left by a previous run of $ident" "$log2" \
    || [ "$stranded" = 0 ] || fail "the restart did not push back the $stranded jobs left: $(grep -i 'pushed back' "$log2" | head -n 3)"
cat "$log1" "$log2" | sed -n 's/.* jid=\([0-9a-f]*\) INFO: start$/\1/p' | sort | uniq -d >"$HH_TMP/twice"
twice="$(grep -c . "$HH_TMP/twice")"
extra="$(comm -23 "$HH_TMP/twice" "$HH_TMP/stranded" | head -n 5 | tr '\n' ' ')"
hh_log "$twice jobs started twice; all of them in progress at the kill: $([ -z "$extra" ] && echo yes || echo no)"
[ -z "$extra" ] || fail "jobs that were no longer in progress at the kill (their ack had landed) ran again: $extra"
lost="$(cat "$log1" "$log2" | sed -n 's/.*jid=\([0-9a-f]*\): done.*/\1/p' | sort -u | comm -13 - <(sort "$jids") | wc -l)"
assert_eq "$lost" 0 "jobs never done"
must_wait 10 '[ "$(R llen "$inprog")" = 0 ]' "$inprog not empty at the end"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status after SIGTERM"
pass "kill -9 after $done1 of $n jobs: none lost; $twice ran twice, each of them in progress at the kill ($stranded were)"
