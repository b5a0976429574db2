#!/usr/bin/env bash
# --serve pools: --serve-max-jobs N replaces a process after N jobs (pids change, the old ones
# exit); a pool of N runs N jobs at once and never gives one process two jobs; --serve-pool caps
# the processes below --concurrency; a stop (TERM) lets a running job finish within the grace period
# (no retry, nothing left in Redis), then the processes are gone; a job still running when the
# grace period ends is pushed back to its queue (not lost) and its process killed.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
export SERVE_DIR
H="$HH_HANDLERS/serve_test.py"

gone() { ! kill -0 "$1" 2>/dev/null || [ "$(ps -o stat= -p "$1" | cut -c1)" = Z ]; }
in_lists() {   # JID: the lists holding it
    R --scan | while read -r k; do
        [ "$(R type "$k")" = list ] && R lrange "$k" 0 -1 | grep -q "$1" && echo "$k"
    done
}
fresh() { SERVE_DIR="$(hh_tmp)"; R flushdb >/dev/null; }

# --- recycling: 9 jobs, --serve-max-jobs 2, one thread: pids change every 2 jobs
fresh
for i in $(seq 1 9); do hh_push_job Ok "[$i]" >/dev/null; done
hh_start_worker -c 1 --serve-max-jobs 2 --serve "Ok=$H"
must_wait 60 '[ "$(R get stat:processed)" = 9 ]' "recycling: processed=$(R get stat:processed)"
per_pid="$(cut -d' ' -f1 "$SERVE_DIR/ran" | uniq -c | awk '{print $1}' | sort -u | tr '\n' ' ')"
assert_eq "$per_pid" "1 2 " "jobs per process with --serve-max-jobs 2 (runs of 2, the last 1)"
assert_eq "$(cut -d' ' -f1 "$SERVE_DIR/ran" | sort -u | wc -l)" 5 "distinct processes for 9 jobs"
# the first 4 processes in the order they ran (the 5th still serves): not `sort -u`, which puts
# pid 10171 before 9944 when the pids cross a power of ten
for p in $(cut -d' ' -f1 "$SERVE_DIR/ran" | uniq | head -4); do
    must_wait 10 "gone $p" "recycled process $p still running"
done
assert_eq "$(R zcard retry)" 0 "recycling fails nothing"
hh_stop_worker TERM 30

# --- concurrency: a pool of 4 runs 4 jobs at once, one job per process
fresh
for i in 1 2 3 4; do hh_push_job Gate '[4]' >/dev/null; done
hh_start_worker -c 4 --serve "Gate=$H"
must_wait 60 '[ "$(R get stat:processed)" = 4 ]' "concurrency: processed=$(R get stat:processed)"
assert_eq "$(awk '{print $2}' "$SERVE_DIR/gate" | sort -u)" 4 "each job saw 4 running at once"
assert_eq "$(cut -d' ' -f1 "$SERVE_DIR/gate" | sort -u | wc -l)" 4 "4 processes ran the 4 jobs"
[ -s "$SERVE_DIR/double" ] && fail "a process was sent a job while running one: $(cat "$SERVE_DIR/double")"
hh_stop_worker TERM 30

# --- --serve-pool 2 under -c 4: never more than 2 processes, 2 jobs at once
fresh
for i in $(seq 1 6); do hh_push_job Gate '[2]' >/dev/null; done
hh_start_worker -c 4 --serve-pool 2 --serve "Gate=$H"
must_wait 90 '[ "$(R get stat:processed)" = 6 ]' "pool 2: processed=$(R get stat:processed)"
assert_eq "$(wc -l <"$SERVE_DIR/started")" 2 "processes started with --serve-pool 2"
assert_eq "$(awk '{print $2}' "$SERVE_DIR/gate" | sort -u)" 2 "jobs at once with --serve-pool 2"
[ -s "$SERVE_DIR/double" ] && fail "a process was sent a job while running one: $(cat "$SERVE_DIR/double")"
hh_stop_worker TERM 30

# --- --serve-pool 5 under -c 2: clamped to 2, and the log says so
fresh
hh_start_worker -c 2 --serve-pool 5 --serve "Gate=$H"
must_wait 30 'grep -q "serve-pool 5 is clamped to --concurrency 2" "$WORKER_LOG"' "no WARN that --serve-pool 5 is clamped: $(cat "$WORKER_LOG")"
assert_contains "$(grep 'is clamped' "$WORKER_LOG")" "WARN" "the clamp is logged as a WARN"
hh_stop_worker TERM 30

# --- TERM during a job: it finishes within the grace period, then the process is gone
fresh
j="$(hh_push_job Sleep '[3]')"
hh_start_worker -c 2 -t 20 --serve "Sleep=$H"
must_wait 30 'grep -q sleeping "$SERVE_DIR/sleep" 2>/dev/null' "the Sleep job did not start"
spid="$(awk '/sleeping/ {print $2}' "$SERVE_DIR/sleep")"
t0=$SECONDS
kill -TERM "$WORKER_PID"
must_wait 30 '! kill -0 '"$WORKER_PID"' 2>/dev/null' "worker did not stop"
hh_stop_worker TERM 5
assert_eq "$WORKER_RC" 0 "exit status after TERM"
grep -q "slept $spid" "$SERVE_DIR/sleep" || fail "the running job was not let finish"
[ $((SECONDS - t0)) -le 20 ] || fail "stop took $((SECONDS - t0)) s"
assert_eq "$(R get stat:processed)" 1 "the job counted once"
assert_eq "$(R zcard retry)$(R llen queue:default)" "00" "the finished job is neither retried nor pushed back"
assert_eq "$(in_lists "$j")" "" "the finished job is in no list (queue or in-progress)"
must_wait 10 "gone $spid" "handler process $spid outlived the stop"

# --- TERM with a job longer than the grace period: pushed back, process killed
fresh
j="$(hh_push_job Sleep '[120]')"
hh_start_worker -c 1 -t 2 --serve "Sleep=$H"
must_wait 30 'grep -q sleeping "$SERVE_DIR/sleep" 2>/dev/null' "the long Sleep job did not start"
spid="$(awk '/sleeping/ {print $2}' "$SERVE_DIR/sleep")"
hh_stop_worker TERM 30
assert_ne "$WORKER_RC" 124 "worker did not stop"
assert_eq "$(R lrange queue:default 0 -1 | grep -c "$j")" 1 "the unfinished job is back in its queue"
assert_eq "$(R zcard retry)" 0 "the unfinished job is not a failure"
must_wait 10 "gone $spid" "handler process $spid outlived the stop"
grep -q "slept $spid" "$SERVE_DIR/sleep" && fail "the 120 s job cannot have finished"
pass
