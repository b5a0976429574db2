#!/usr/bin/env bash
# --serve hands a job only to a process that takes it, and times a job from its own start:
#   1. a process that answers and then exits (a handler limiting its own jobs, a crash on the way
#      out) while the next job line waits unread in its stdin: that job never reached a handler,
#      so it goes to a new process instead of failing ("exited with status 0"); with retry: false
#      it was lost. Alternating ExitAfter and Ok (retry: false) jobs on one thread: every job runs
#      once, nothing lands in the retry or dead set, and the log says a new process got the job.
#   2. --serve-pool 1 under -c 3 with --exec-timeout 3: three 1.2 s jobs queue for the one process;
#      the third waits 2.4 s, then runs 1.2 s. The wait behind other jobs is not its run: all
#      three succeed (the timeout used to count the wait and killed the third mid-run).
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
export SERVE_DIR
H="$HH_HANDLERS/serve_test.py"
ran() { grep -c " $1 " "$SERVE_DIR/ran" 2>/dev/null || echo 0; }

# 1. a process that exits after its answer, the next job line already written
SERVE_DIR="$(hh_tmp)"
jobs=()
for i in 1 2 3 4; do
    jobs+=("$(hh_push_job ExitAfter "[$i]")")
    jobs+=("$(hh_push_job Ok "[$i]" '"retry":false')")
done
hh_start_worker -c 1 --serve "ExitAfter=$H" --serve "Ok=$H"
must_wait 60 '[ "$(R get stat:processed 2>/dev/null || echo 0)" = 8 ]' \
    "8 jobs did not all succeed (processed=$(R get stat:processed), retry=$(R zcard retry), dead=$(R zcard dead)): $(grep WARN "$WORKER_LOG" | tail -n 3)"
for j in "${jobs[@]}"; do assert_eq "$(ran "$j")" 1 "runs of $j"; done
assert_eq "$(R zcard retry) $(R zcard dead) $(R get stat:failed)" "0 0 0" "retry, dead, stat:failed"
assert_contains "$(cat "$WORKER_LOG")" "ended before it read jid=" "the log says the job went to a new process"
assert_not_contains "$(cat "$WORKER_LOG")" "exited with status 0 (retry is false)" "no job failed for another's exit"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status after TERM"

# 2. a pool smaller than the threads: the wait for a busy process does not count
R flushdb >/dev/null
SERVE_DIR="$(hh_tmp)"
hh_start_worker -c 3 --serve-pool 1 --exec-timeout 3 --serve "Sleep=$H"
must_wait 30 '[ -s "$SERVE_DIR/started" ]' "the pool's process did not start"
hh_worker_wait_ready 20
sleeps=()
for i in 1 2 3; do sleeps+=("$(hh_push_job Sleep '[1.2]')"); done
must_wait 30 '[ "$(R get stat:processed 2>/dev/null || echo 0)" = 3 ] || [ "$(R zcard retry)" != 0 ]' \
    "the three jobs did not end (processed=$(R get stat:processed), retry=$(R zcard retry))"
assert_eq "$(R zcard retry)" 0 "jobs that waited for the busy process failed: $(R zrange retry 0 -1 | head -c 400)"
assert_eq "$(R get stat:processed)" 3 "stat:processed"
assert_eq "$(wc -l <"$SERVE_DIR/started")" 1 "one process ran them all"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status after TERM"
pass
