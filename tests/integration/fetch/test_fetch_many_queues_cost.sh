#!/usr/bin/env bash
# The reliable fetch's Redis cost follows the queues that hold jobs, not the number of queues: a
# worker on 200 queues in strict order (-q q1 ... -q q200) with jobs only in the last one makes
# at most about one list command per job to take them, not one per queue per job (queues a fetch
# found empty are left out of the next fetches until they may hold jobs again). 3000 NoopJobs (C
# plug-in: fast, batched) in queue:q200, -c 4. The commands that take jobs from a queue or try an
# empty one (LMOVE/RPOPLPUSH for one job, BLMOVE for a thread waiting idle on it, LRANGE+LTRIM for several: INFO commandstats, counted
# inside scripts) while they drain must stay under 5 per job (trying every queue for every job
# would make 200; re-checking the empty queues every 50 ms on a slow machine costs a few more). Then one job pushed to q1, the highest
# priority, still starts: a queue known to be empty is tried again. Then a trickle (40 jobs pushed
# one at a time, 20 a second, over the 200 queues): at most 10 such calls per job, EXISTS included (passing over
# every queue for each job's follow-up fetch made about 200).
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
hh_require_binary
hh_require_plugin
hh_redis_start

n=3000 nq=200
qargs=(); for ((i = 1; i <= nq; i++)); do qargs+=(-q "q$i"); done
jids="$HH_TMP/pushed.jids"; : >"$jids"
rf_push q$nq NoopJob "$n" "$jids" '[]' LPUSH "hiredhand:test:aside"
hh_start_worker -c 4 -v --fetch reliable --require "$PLUGIN" "${qargs[@]}"
hh_worker_wait_ready 30
R config resetstat >/dev/null
R rename hiredhand:test:aside queue:q$nq >/dev/null
must_wait 120 '[ "$(grep -c "jid=.*: done" "$WORKER_LOG")" -ge '"$n"' ]' \
    "only $(grep -c 'jid=.*: done' "$WORKER_LOG") of $n jobs done within 120 s"
lmoves="$(rf_cmd_calls lmove blmove rpoplpush brpoplpush lrange ltrim)"
hh_log "commands: $(R info commandstats | tr -d "\r" | grep -E "lmove|lrange|ltrim|lpush|evalsha|exists|lrem" | cut -d, -f1 | tr "\n" " ")"
per="$(awk -v a="$lmoves" -v n="$n" 'BEGIN { printf "%.2f", a / n }')"
hh_log "$lmoves LMOVE/LRANGE/LTRIM calls for $n jobs on $nq queues ($per per job)"
assert_between "$per" 0.01 5 "queue-taking calls per job with $nq strict queues and jobs only in the last one"
j1="$HH_TMP/q1.jids"; : >"$j1"
rf_push q1 NoopJob 1 "$j1"
must_wait 20 'grep -q "jid=$(cat "$j1"): done" "$WORKER_LOG"' "a job pushed to q1 (found empty before) did not run"
must_wait 10 '[ "$(rf_inprog_len)" = 0 ]' "in-progress lists still hold $(rf_inprog_len) entries"

# A trickle on the idle worker: jobs pushed one at a time, 20 a second, spread over the queues.
# With tracking on (threads idle), a queue found empty stays known empty until a write to it is
# seen, so each job costs a few commands that take from or look at a queue (the take, and a look
# at the queue it emptied; EXISTS counted too), not a pass over every queue.
tracking_on() { [ "$(grep -c 'pickup: tracking on' "$WORKER_LOG")" -gt "$(grep -c 'pickup: tracking off' "$WORKER_LOG")" ]; }
must_wait 20 tracking_on "tracking is not on with every thread idle"
tjids="$HH_TMP/trickle.jids"
: >"$tjids"
trickle() {   # FIRST COUNT: job i to queue q((i * 37) % nq + 1), 50 ms apart (a pace, not a wait)
    local i q jid
    for ((i = $1; i < $1 + $2; i++)); do
        q=$(((i * 37) % nq + 1))
        printf -v jid 'trickle%017x' "$i"
        echo "$jid" >>"$tjids"
        # one redis-cli for them all: it runs each line as it comes
        printf "LPUSH queue:q%s '%s'\n" "$q" "{\"class\":\"NoopJob\",\"args\":[],\"queue\":\"q$q\",\"jid\":\"$jid\",\"created_at\":1,\"enqueued_at\":1}"
        sleep 0.05
    done | R >/dev/null
    must_wait 30 '[ "$(grep -c -F -f "$tjids" "$WORKER_LOG")" -ge "$(grep -c . "$tjids")" ]' \
        "only $(grep -c -F -f "$tjids" "$WORKER_LOG") of $(grep -c . "$tjids") trickle jobs ran"
}
trickle 0 3 # the marks of a worker just idle are set
R config resetstat >/dev/null
trickle 3 40
looks="$(rf_cmd_calls lmove blmove rpoplpush brpoplpush lrange ltrim exists)"
hh_log "trickle: $(R info commandstats | tr -d "\r" | grep -E "lmove|lrange|ltrim|evalsha|exists|lrem" | cut -d, -f1 | tr "\n" " ")"
tper="$(awk -v a="$looks" 'BEGIN { printf "%.2f", a / 40 }')"
hh_log "$looks LMOVE/LRANGE/LTRIM/EXISTS calls for 40 jobs pushed one at a time ($tper per job)"
assert_between "$tper" 0.01 10 "queue-taking and -looking calls per job of a trickle over $nq strict queues"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status after SIGTERM"
pass "$per queue-taking calls per job on $nq queues with jobs in one; a job in a queue seen empty still ran; a trickle costs $tper per job"
