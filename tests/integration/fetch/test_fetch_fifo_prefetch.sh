#!/usr/bin/env bash
# Reliable fetch with prefetch keeps a queue's order: fast jobs (the C plug-in's NoopJob, so the
# fetch batch grows to its maximum) fetched in batches by several threads start in the order they
# were pushed (FIFO), give or take the few jobs other threads are starting at the same moment.
# 3000 jobs on queue:default, -c 4 (an INFO "start" line per job, in start order). A job is
# "displaced" when it starts more than 200 places away from its place in the queue. Threads take
# jobs in buffer order (the thread that fetches the next batch does so before it takes its own
# job), so a job is off by the few jobs other threads start at the same moment, more when its
# thread is preempted between taking it and logging it (a few ms on a loaded machine: a couple of
# hundred fast jobs); taken last in first out, whole batches of several threads are. Fewer than
# 1 % of the jobs may be displaced. The previous code displaced 10-25 %. Then: every job ran once and the in-progress lists are empty
# while the worker still runs (every ack landed, nothing left behind).
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
hh_require_binary
hh_require_plugin
hh_redis_start

n=3000
jids="$HH_TMP/pushed.jids"; : >"$jids"
rf_push default NoopJob "$n" "$jids"
hh_start_worker -c 4 -v --fetch reliable --require "$PLUGIN"
must_wait 120 '[ "$(grep -c "jid=.*: done" "$WORKER_LOG")" -ge '"$n"' ]' \
    "only $(grep -c 'jid=.*: done' "$WORKER_LOG") of $n jobs done within 120 s"
must_wait 10 '[ "$(rf_inprog_len)" = 0 ]' \
    "in-progress lists still hold $(rf_inprog_len) entries after every job finished (acks left behind)"
started="$HH_TMP/started"
sed -n 's/.* jid=\([0-9a-f]*\) INFO: start$/\1/p' "$WORKER_LOG" >"$started"
assert_eq "$(wc -l <"$started")" "$n" "start lines"
assert_eq "$(sort -u "$started" | wc -l)" "$n" "distinct jobs started (each once)"
displaced="$(awk -v lim=200 'NR == FNR { at[$1] = FNR; next } { d = FNR - at[$1]; if (d < 0) d = -d; if (d > lim) bad++ }
    END { print bad + 0 }' "$jids" "$started")"
worst="$(awk 'NR == FNR { at[$1] = FNR; next } { d = FNR - at[$1]; if (d < 0) d = -d; if (d > m) m = d }
    END { print m + 0 }' "$jids" "$started")"
hh_log "$displaced of $n jobs started more than 200 places from their queue position (worst $worst)"
[ "$displaced" -le $((n / 100)) ] \
    || fail "prefetched jobs do not start in queue order: $displaced of $n started more than 200 places away from their position in the queue (worst $worst); first starts: $(head -n 8 "$started" | tr '\n' ' ')"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status after SIGTERM"
pass "$n prefetched jobs started in queue order ($displaced displaced by more than 200, worst $worst); nothing left in progress"
