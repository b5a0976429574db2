#!/usr/bin/env bash
# Bad input: an unknown command, a word after a command that takes none, options before the
# command (the Redis ones work there), bad flags, a bad URL, a missing handler program and shell syntax in a handler's COMMAND (which no
# shell reads) give a clear message on
# stderr and exit status 2 (checked for `work` and `push`); Redis unreachable at start does NOT
# make the worker exit: it stays up, logs the outage once per state change (no log spam), and when
# a redis-server appears on that port it processes a pushed job. An explicit queue weight 0 gets a
# warning that says what it means. A class two plug-ins register (or one plug-in given twice)
# is refused with exit status 2 and an error naming the class and the files, also when the second
# plug-in ignores the error and returns 0.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary

expect_usage_error() {   # DESCRIPTION NEEDLE-IN-STDERR(optional) -- ARGS...
    local what="$1" needle="$2"; shift 3
    hh_cli "$@"
    [ "$HH_RC" = 124 ] && fail "$what: 'hiredhand $*' still running after 30 s (expected exit 2)"
    assert_eq "$HH_RC" 2 "$what: exit status of 'hiredhand $*' (stderr: $HH_ERR)"
    [ -n "$HH_ERR" ] || fail "$what: 'hiredhand $*' exited 2 without a message on stderr"
    [ -z "$needle" ] || assert_contains "$HH_ERR" "$needle" "$what: stderr of 'hiredhand $*' names the problem"
}

port="$(hh_pick_free_port)"   # nothing listens there (yet)
url="redis://127.0.0.1:$port/0"
# --help prints the usage and exits 0 at once: it never starts a worker
# (which, with nothing on the port, would wait for Redis until killed)
hh_cli work --help -r "$url"
assert_eq "$HH_RC" 0 "'hiredhand work --help' exit status (124: it started a worker)"
assert_contains "$HH_OUT" "--serve-max-jobs" "'hiredhand work --help' prints the options"
expect_usage_error "unknown flag" "bogus-flag" -- work --bogus-flag -r "$url"
# An unknown command says so in one line with a pointer to the list, not the whole usage.
expect_usage_error "unknown command" "hiredhand: unknown command 'bogus' (the commands: hiredhand help)" -- bogus
[ "$(printf '%s\n' "$HH_ERR" | wc -l)" -eq 1 ] || fail "unknown command: want one line on stderr, got: $HH_ERR"
# The Redis options may come before the command, as git allows: they reach the command
# (the refused connection names the port given, not the default 6379) ...
for args in "-r $url retries list" "--namespace ns -r $url stats" "--redis=$url queues" "-r $url push OkJob []"; do
    # shellcheck disable=SC2086
    hh_cli $args
    assert_eq "$HH_RC" 3 "'hiredhand $args': exit status (Redis unreachable); stderr: $HH_ERR"
    assert_contains "$HH_ERR" "127.0.0.1:$port" "'hiredhand $args' uses the -r given before the command"
done
# ... and any other option there gets the reason, in one line.
expect_usage_error "a command's option before the command" "-c before the command: only the Redis options" -- -c 5 work
[ "$(printf '%s\n' "$HH_ERR" | wc -l)" -eq 1 ] || fail "option before the command: want one line on stderr, got: $HH_ERR"
expect_usage_error "unknown flag (push)" "bogus-flag" -- push OkJob '[]' --bogus-flag -r "$url"
expect_usage_error "bad URL scheme" "" -- work -r "notaurl://x" --exec "OkJob=$HH_HANDLERS/record.sh"
# -r "$URL" with URL unset must not mean the default Redis (127.0.0.1:6379) in any command
for cmd in work stats processes "push OkJob []" "retries list" "queues" "jobs find x" top; do
    # shellcheck disable=SC2086
    expect_usage_error "empty -r ($cmd)" "the URL is empty" -- $cmd -r ""
done
# A command that takes no word refuses one, naming it, before it connects: `stats foo` is no `stats`
for cmd in stats processes busy top web version work; do
    expect_usage_error "a word after $cmd" "'foo'" -- "$cmd" foo -r "$url"
done
hh_cli -r "$url" version # the Redis options before it are no word of its own
assert_eq "$HH_RC" 0 "'hiredhand -r URL version': $HH_ERR"
expect_usage_error "bad URL port" "" -- work -r "redis://127.0.0.1:99999999/0" --exec "OkJob=$HH_HANDLERS/record.sh"
expect_usage_error "bad URL db" "" -- work -r "redis://127.0.0.1:$port/notadb" --exec "OkJob=$HH_HANDLERS/record.sh"
# A class registered twice by plug-ins: the error names the class and the files, not only that
# hh_plugin_init() failed (two copies of one plug-in; one given twice; a plug-in and an --exec).
hh_require_plugin
plugin2="$HH_TMP/second_plugin.so"
cp "$PLUGIN" "$plugin2"
expect_usage_error "two plug-ins, one class" "register HardWorker: that class has a handler already, registered from $PLUGIN (this one is from $plugin2)" \
    -- work -r "$url" --require "$PLUGIN" --require "$plugin2"
expect_usage_error "one plug-in given twice" "--require $(dirname "$PLUGIN")/./$(basename "$PLUGIN"): the same plug-in as --require $PLUGIN, given twice" \
    -- work -r "$url" --require "$PLUGIN" --require "$(dirname "$PLUGIN")/./$(basename "$PLUGIN")"
expect_usage_error "a plug-in and an --exec, one class" "register HardWorker: that class has a handler already, registered from the program itself (this one is from $PLUGIN)" \
    -- work -r "$url" --exec "HardWorker=$HH_HANDLERS/record.sh" --require "$PLUGIN"
# a plug-in that goes on after hh_manager_register() failed, and returns 0, does not start the
# worker with the other plug-in's handler for its class: the start is refused with that reason
cat >"$HH_TMP/ignoring.c" <<'EOF'
#include <hiredhand.h>
static int mine(hh_job *job, void *udata) { (void)job, (void)udata; return 0; }
int hh_plugin_init(hh_manager *m);
int hh_plugin_init(hh_manager *m) {
    hh_manager_register(m, "HardWorker", mine, NULL); /* the example plug-in's class: refused, ignored */
    return 0;
}
EOF
build_include="$(cd "$(dirname "$HIREDHAND")" && pwd)/include"
cc -std=c11 -Wall -shared -fPIC -I"$HH_ROOT/include" -I"$build_include" -o "$HH_TMP/ignoring.so" "$HH_TMP/ignoring.c" ||
    fail "cannot build the test plug-in"
expect_usage_error "a plug-in that ignores a failed register" "not starting: a handler registration failed: register HardWorker: that class has a handler already, registered from $PLUGIN (this one is from $HH_TMP/ignoring.so)" \
    -- work -r "$url" --require "$PLUGIN" --require "$HH_TMP/ignoring.so"
expect_usage_error "bad URL (push)" "" -- push OkJob '[]' -r "notaurl://x"
expect_usage_error "liveness max age not above the heartbeat interval" "set --liveness-max-age to 90 or more" -- \
    work -r "$url" --heartbeat-interval 30 --liveness-max-age 10 --http "$(hh_pick_free_port)" --exec "OkJob=$HH_HANDLERS/record.sh"
expect_usage_error "the default liveness max age (30) with a 30 s heartbeat" "liveness max age 30 s is not above" -- \
    work -r "$url" --heartbeat-interval 30 --http "$(hh_pick_free_port)" --exec "OkJob=$HH_HANDLERS/record.sh"
expect_usage_error "a queue given twice" "queue a given twice" -- work -r "$url" -q a -q a --exec "OkJob=$HH_HANDLERS/record.sh"
expect_usage_error "a log file that cannot be opened" "cannot open log file /nonexistent/dir/log: No such file or directory" -- \
    work -r "$url" --logfile /nonexistent/dir/log --exec "OkJob=$HH_HANDLERS/record.sh"
expect_usage_error "dead delete without JID or --all" "dead delete needs a JID or --all" -- dead delete -r "$url"
assert_not_contains "$HH_ERR" "not both" "dead delete with neither does not say 'not both'"
expect_usage_error "dead delete with a JID and --all" "not both" -- dead delete abc --all -r "$url"
expect_usage_error "push --in that is not a number" "--in: 'soon' is not a number, want -999999999 to 999999999 seconds" \
    -- push OkJob '[]' --in soon -r "$url"
# push and the job management commands state the range of each number too; an absurd
# delay or time (a job centuries away, inf, nan) is a usage error before Redis is asked
expect_push_range() {   # EXPECTED-MESSAGE -- ARGS...
    local needle="$1"; shift 2
    expect_usage_error "push $*" "$needle" -- push OkJob '[]' "$@" -r "$url"
}
expect_push_range "--in: 1e20 is out of range, want -999999999 to 999999999 seconds" -- --in 1e20
expect_push_range "--in: -1e300 is out of range, want -999999999 to 999999999 seconds" -- --in -1e300
expect_push_range "--in: 1000000000 is out of range" -- --in 1000000000
expect_push_range "--in: inf is out of range" -- --in inf
expect_push_range "--in: 'nan' is not a number" -- --in nan
expect_push_range "--at: 1e20 is out of range, want 0 to 10000000000 seconds" -- --at 1e20
expect_push_range "--at: -1 is out of range, want 0 to 10000000000 seconds" -- --at -1
expect_push_range "--at: 'nan' is not a number, want 0 to 10000000000 seconds" -- --at nan
expect_push_range "--retry: '1000001' is not true, false or a count from 0 to 1000000" -- --retry 1000001
expect_push_range "--retry: '-1' is not true, false or a count from 0 to 1000000" -- --retry -1
printf '%s\n' '{"class":"A","args":[],"at":1e20}' >"$HH_TMP/far.jsonl"
expect_usage_error "push --bulk: a job's at out of range" \
    'line 1: "at" is out of range, want a Unix time from 0 to 10000000000 seconds; nothing pushed' \
    -- push --bulk "$HH_TMP/far.jsonl" -r "$url"
expect_usage_error "retries --limit 0" "--limit: 0 is out of range, want 1 to 1000000000" -- retries list --limit 0 -r "$url"
expect_usage_error "queues --limit" "--limit: 99999999999999999999 is out of range, want 1 to 1000000000" -- \
    queues show q --limit 99999999999999999999 -r "$url"
expect_usage_error "dead --dead-max-jobs" "--dead-max-jobs: 100000001 is out of range, want 1 to 100000000" -- \
    retries kill --all --yes --dead-max-jobs 100000001 -r "$url"
expect_usage_error "retries --dead-timeout" "--dead-timeout: 1e300 is out of range, want more than 0" -- \
    retries kill --all --yes --dead-timeout 1e300 -r "$url"
expect_usage_error "top --interval" "--interval: inf is out of range, want 0.1 to 86400 seconds" -- top --interval inf -r "$url"
expect_usage_error "top --count" "--count: 'x' is not a number, want 1 to 1000000000" -- top --count x -r "$url"
expect_usage_error "missing --exec program" "/nonexistent/handler-prog" -- work -r "$url" --exec "X=/nonexistent/handler-prog"
expect_usage_error "--exec without CLASS=" "" -- work -r "$url" --exec "/bin/true"
# COMMAND is split on blanks and no shell reads it: shell syntax in it is refused at start (every
# job would fail: `sh -c "echo` is a syntax error), with what to do instead
expect_usage_error "--exec with shell quotes" \
    "--exec Q: '\"echo' holds a quote, but COMMAND is split on blanks and run without a shell" \
    -- work -r "$url" --exec 'Q=sh -c "echo hi; exit 0"'
expect_usage_error "--serve with a shell redirect" "--serve Q: '2>&1' holds an operator" \
    -- work -r "$url" --serve "Q=$HH_HANDLERS/serve_test.py 2>&1"
expect_usage_error "non-numeric concurrency" "" -- work -r "$url" -c abc --exec "OkJob=$HH_HANDLERS/record.sh"
expect_usage_error "non-numeric timeout" "" -- work -r "$url" -t soon --exec "OkJob=$HH_HANDLERS/record.sh"
# every numeric option states its accepted range, the same way, before anything starts
expect_range_error() {   # OPTION VALUE EXPECTED-MESSAGE
    expect_usage_error "$1 $2" "$3" -- work -r "$url" "$1" "$2" --exec "OkJob=$HH_HANDLERS/record.sh"
}
expect_range_error -c 0 "--concurrency: 0 is out of range, want 1 to 1000"
expect_range_error --concurrency 1001 "--concurrency: 1001 is out of range, want 1 to 1000"
expect_range_error -c 99999999999999999999 "--concurrency: 99999999999999999999 is out of range, want 1 to 1000"
expect_range_error -c abc "--concurrency: 'abc' is not a number, want 1 to 1000"
expect_range_error -t -1 "--timeout: -1 is out of range, want 0 to 10000000000 seconds"
expect_range_error -t soon "--timeout: 'soon' is not a number, want 0 to 10000000000 seconds"
expect_range_error --heartbeat-interval 0 "--heartbeat-interval: 0 is out of range, want 0.1 to 30 seconds"
expect_range_error --heartbeat-interval 31 "--heartbeat-interval: 31 is out of range, want 0.1 to 30 seconds"
expect_range_error --poll-interval 0 "--poll-interval: 0 is out of range, want 0.1 to 10000000000 seconds"
expect_range_error --poll-interval 1e-9 "--poll-interval: 1e-9 is out of range, want 0.1 to 10000000000 seconds"
expect_range_error --average-scheduled-poll-interval -1 "--average-scheduled-poll-interval: -1 is out of range, want 0.1 to 10000000000 seconds"
expect_range_error --recovery-interval nan "--recovery-interval: 'nan' is not a number, want more than 0"
expect_range_error --dead-timeout -5 "--dead-timeout: -5 is out of range, want more than 0"
expect_range_error --liveness-max-age 0 "--liveness-max-age: 0 is out of range, want more than 0"
expect_range_error --exec-timeout -1 "--exec-timeout: -1 is out of range, want 0 to 10000000000 seconds"
expect_range_error --serve-hello-timeout 0 "--serve-hello-timeout: 0 is out of range, want more than 0"
expect_range_error --max-retries -1 "--max-retries: -1 is out of range, want 0 to 1000000"
expect_range_error --max-recoveries 1000001 "--max-recoveries: 1000001 is out of range, want 0 to 1000000"
expect_range_error --dead-max-jobs 0 "--dead-max-jobs: 0 is out of range, want 1 to 100000000"
expect_range_error --serve-pool 0 "--serve-pool: 0 is out of range, want 1 to 1000"
expect_range_error --serve-max-jobs 1.5 "--serve-max-jobs: '1.5' is not a number, want 1 to 1000000000"
expect_range_error -q critical,-1 "--queue critical weight: -1 is out of range, want 0 to 1000000"
expect_range_error -q critical,heavy "--queue critical weight: 'heavy' is not a number, want 0 to 1000000"
expect_usage_error "bad --fetch" "" -- work -r "$url" --fetch sometimes --exec "OkJob=$HH_HANDLERS/record.sh"
expect_usage_error "push: --in and --at together" "" -- push OkJob '[]' --in 5 --at 2000000000 -r "$url"
expect_usage_error "push: --retry not true/false/N" "" -- push OkJob '[]' --retry maybe -r "$url"
hh_cli frobnicate
[ "$HH_RC" != 0 ] || fail "unknown subcommand 'frobnicate' exited 0"
hh_log "usage errors: all exit 2 with a message"

# ---- Redis unreachable at start
export REDIS_PORT="$port"   # the handler (record.sh) reaches Redis through REDIS_PORT
HH_NO_URL=1 hh_start_worker -r "$url" -c 2 --exec "OkJob=$HH_HANDLERS/record.sh"
sleep 1.5
assert_alive "$WORKER_PID" "worker exited when Redis was unreachable at start (must stay up and retry)"
lines1="$(wc -l <"$WORKER_LOG")"
sleep 4
assert_alive "$WORKER_PID" "worker exited after 5.5 s without Redis"
lines2="$(wc -l <"$WORKER_LOG")"
[ "$lines2" -ge 1 ] || fail "worker logged nothing while Redis was unreachable"
[ $((lines2 - lines1)) -le 3 ] || fail "worker log grew by $((lines2 - lines1)) lines in 4 s of the same outage (log once per state change): $(tail -n 5 "$WORKER_LOG")"

hh_redis_start_on "$port"
jid="$(hh_jid)"
R lpush queue:default "{\"retry\":true,\"queue\":\"default\",\"class\":\"OkJob\",\"args\":[1],\"jid\":\"$jid\",\"created_at\":$(hh_now),\"enqueued_at\":$(hh_now)}" >/dev/null
must_wait 30 'R lrange test:ran 0 -1 | grep -q '"$jid" \
    "job pushed after Redis came up did not run within 30 s (queue=$(R llen queue:default))"
assert_alive "$WORKER_PID" "worker died after Redis came up"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "worker exit status after SIGTERM"

# ---- an explicit weight 0 reads as "never fetch" but is no weight, as in Sidekiq: a warning says so
HH_NO_URL=1 hh_start_worker -r "$url" -c 1 -q critical,0 -q default --exec "OkJob=$HH_HANDLERS/record.sh"
must_wait 10 'grep -q "queue critical: weight 0 means no weight" "$WORKER_LOG"' \
    "no warning for -q critical,0 within 10 s (log: $WORKER_LOG)"
assert_contains "$(cat "$WORKER_LOG")" "not a paused queue: with no queue weighted, every queue is fetched in strict order" \
    "the weight 0 warning says what it means among unweighted queues"
assert_not_contains "$(cat "$WORKER_LOG")" "queue default: weight 0" "a queue given without a weight is not warned about"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status of the -q critical,0 worker after SIGTERM"
HH_NO_URL=1 hh_start_worker -r "$url" -c 1 -q critical,0 -q default,2 --exec "OkJob=$HH_HANDLERS/record.sh"
must_wait 10 'grep -q "queue critical has no weight while others do: it gets weight 1" "$WORKER_LOG"' \
    "no warning for -q critical,0 among weighted queues within 10 s (log: $WORKER_LOG)"
assert_contains "$(cat "$WORKER_LOG")" "(weight 0 is no weight, not a paused queue)" \
    "the weight 0 warning among weighted queues says what 0 means"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "exit status of the -q critical,0 -q default,2 worker after SIGTERM"
pass
