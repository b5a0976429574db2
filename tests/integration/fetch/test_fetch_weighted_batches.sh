#!/usr/bin/env bash
# Weights keep their meaning when fast jobs are fetched in batches: with -q a,3 -q b,1 over two
# queues that stay non-empty (8000 NoopJobs each, C plug-in: fast, so fetched in batches whose
# parts are drawn by weight), a's share among the first 6000 jobs done is 3/4 within a tolerance
# (counted from the jids in the log, not by time). Expected 0.75; the batch parts make the share
# noisier than per-job draws, [0.68, 0.82] is more than 4 standard deviations either side. Equal
# treatment (0.5), strict order (1.0) or inverted weights (0.25) fail. Then every job ran once and
# no queue or in-progress list holds anything.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/recovery_helpers.sh"
hh_require_binary
hh_require_plugin
hh_redis_start

n=8000 first=6000
ja="$HH_TMP/a.jids" jb="$HH_TMP/b.jids"
: >"$ja"; : >"$jb"
rf_push a NoopJob "$n" "$ja"
rf_push b NoopJob "$n" "$jb"
pa="$(head -1 "$ja" | cut -c1-8)" pb="$(head -1 "$jb" | cut -c1-8)"
[ "$pa" != "$pb" ] || fail "the two pushes drew the same jid prefix: run again"
hh_start_worker -c 4 -v --fetch reliable --require "$PLUGIN" -q a,3 -q b,1
must_wait 120 '[ "$(grep -c "jid=.*: done" "$WORKER_LOG")" -ge '"$((2 * n))"' ]' \
    "only $(grep -c 'jid=.*: done' "$WORKER_LOG") of $((2 * n)) jobs done within 120 s"
must_wait 10 '[ "$(rf_inprog_len)" = 0 ]' "in-progress lists still hold $(rf_inprog_len) entries"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status after SIGTERM"
assert_eq "$(R llen queue:a)/$(R llen queue:b)" "0/0" "jobs left in queue:a/queue:b"
done_jids="$HH_TMP/done.jids"
grep -o 'jid=[0-9a-f]*: done' "$WORKER_LOG" | sed 's/^jid=//; s/: done$//' >"$done_jids"
assert_eq "$(sort "$done_jids" | uniq -d | wc -l)" 0 "jobs done more than once"
assert_eq "$(sort -u "$done_jids" | wc -l)" "$((2 * n))" "distinct jobs done"
na="$(head -n "$first" "$done_jids" | grep -c "^$pa")"
nb="$(head -n "$first" "$done_jids" | grep -c "^$pb")"
share="$(awk -v a="$na" -v b="$nb" 'BEGIN { printf "%.3f", a / (a + b) }')"
hh_log "among the first $first jobs done: a=$na b=$nb, a's share $share (weights 3:1: 0.75)"
assert_eq "$((na + nb))" "$first" "jobs among the first $first from a or b"
assert_between "$share" 0.68 0.82 "a's share among the first $first jobs done with -q a,3 -q b,1 (a=$na b=$nb)"
pass "weights 3:1 with batched fast jobs: a's share $share among the first $first (a=$na b=$nb); all $((2 * n)) ran once"
