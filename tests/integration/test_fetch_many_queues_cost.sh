#!/usr/bin/env bash
# The reliable fetch's Redis cost follows the queues that hold jobs, not the number of queues: a
# worker on 200 queues in strict order (-q q1 ... -q q200) with jobs only in the last one makes
# at most about one list command per job to take them, not one per queue per job (queues a fetch
# found empty are left out of the next fetches until they may hold jobs again). 3000 NoopJobs (C
# plug-in: fast, batched) in queue:q200, -c 4. The commands that take jobs from a queue or try an
# empty one (LMOVE/RPOPLPUSH for one job, BLMOVE for a thread waiting idle on it, LRANGE+LTRIM for several: INFO commandstats, counted
# inside scripts) while they drain must stay under 5 per job (trying every queue for every job
# would make 200; re-checking the empty queues every 50 ms on a slow machine costs a few more). Then one job pushed to q1, the highest
# priority, still starts: a queue known to be empty is tried again.
. "$(dirname "$0")/../lib/harness.sh"
. "$(dirname "$0")/../lib/recovery_helpers.sh"
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
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status after SIGTERM"
pass "$per queue-taking calls per job on $nq queues with jobs in one; a job in a queue seen empty still ran"
