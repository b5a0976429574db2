#!/usr/bin/env bash
# Signals, TTIN and unknown words included: words pushed on
# <id>-signals exactly as Sidekiq's API does (MULTI; LPUSH; EXPIRE 60; EXEC):
#   - TTIN: within one beat it is popped and the log lists the running job (tid, class, jid,
#     queue) of each busy thread; nothing else changes (quiet stays "false", busy stays 1, the
#     process keeps fetching: an OkJob pushed afterwards runs);
#   - Sidekiq::Process#dump_threads (Ruby API) and `hiredhand dump ID` do the same;
#   - FOO (a word that is no signal): popped, logged as unknown/ignored, the process keeps
#     running, quiet stays "false", it keeps beating and fetching;
#   - USR1 and KILL (real signal names Sidekiq never sends): the process must not die from them
#     (docs/protocol.md: anything else is logged and ignored).
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/heartbeat_helpers.sh"
hh_require_binary
hh_redis_start
BEAT=5

slow="$(hh_jid)"
hb_push SlowJob "$slow" '[60,"ttin"]' default
hh_start_worker -c 2 --exec "SlowJob=$HH_HANDLERS/sleep.sh 60" --exec "OkJob=$HH_HANDLERS/record.sh"
hb_wait_identity "$WORKER_PID" 15
id="$HB_ID"
must_wait 10 '[ "$(R lrange test:started 0 -1)" = "'"$slow"'" ]' "the SlowJob did not start"
must_wait $((BEAT + 2)) '[ "$(R hget "$id" busy)" = 1 ]' "busy did not become 1 within one beat"
tid="$(R hkeys "$id:workers" | head -n 1)"
[ -n "$tid" ] || fail "no tid in $id:workers"

# count_in_log PATTERN -> number of log lines matching (fixed string)
count_in_log() { grep -cF -- "$1" "$WORKER_LOG" || true; }

expect_dump() {   # CONTEXT BEFORE_COUNT
    must_wait $((BEAT + 2)) '[ "$(count_in_log "jid=$slow")" -gt '"$2"' ]' \
        "$1: no thread dump line with jid=$slow within one beat; log: $(tail -n 5 "$WORKER_LOG")"
    local line
    line="$(grep -F -- "jid=$slow" "$WORKER_LOG" | tail -n 1)"
    assert_contains "$line" "SlowJob" "$1: dump line names the class"
    assert_contains "$line" "default" "$1: dump line names the queue"
    assert_contains "$line" "$tid" "$1: dump line names the thread id shown on the Busy page"
    assert_eq "$(R llen "$id-signals")" 0 "$1: signals list drained"
    assert_alive "$WORKER_PID" "$1: worker exited"
}

n0=$(count_in_log "jid=$slow")
hb_signal_raw "$id" TTIN
expect_dump "TTIN via redis-cli" "$n0"

n0=$(count_in_log "jid=$slow")
hh_ruby hb_api.rb signal "$id" dump >/dev/null || fail "Sidekiq::Process#dump_threads failed"
expect_dump "Sidekiq::Process#dump_threads" "$n0"

n0=$(count_in_log "jid=$slow")
hh_cli dump "$id" -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "hiredhand dump $id exit status (stderr: $HH_ERR)"
expect_dump "hiredhand dump" "$n0"

# FOO: logged and ignored
hb_signal_raw "$id" FOO
must_wait $((BEAT + 2)) '[ "$(R llen "$id-signals")" = 0 ]' "FOO was not popped within one beat"
must_wait 2 'grep -q "FOO" "$WORKER_LOG"' "FOO is not logged"
foo_line="$(grep -F FOO "$WORKER_LOG" | tail -n 1)"
hh_log "FOO logged as: $foo_line"
case "$foo_line" in *[Ii]gnor*|*[Uu]nknown*) ;; *) fail "the FOO log line does not say it is unknown/ignored: $foo_line" ;; esac

# USR1 and KILL: must not end the process
hb_signal_raw "$id" USR1
hb_signal_raw "$id" KILL
must_wait $((2 * BEAT + 3)) '[ "$(R llen "$id-signals")" = 0 ]' "USR1/KILL not popped within two beats"
sleep 1
assert_alive "$WORKER_PID" "worker died after the words USR1/KILL arrived on its signals list"

# nothing changed: still running, not quiet, same job, still beating and fetching
hb_wait_next_beat "$id" $((BEAT + 2))
assert_eq "$(R hget "$id" quiet)" false "quiet after TTIN/FOO/USR1/KILL"
assert_eq "$(R hget "$id" busy)" 1 "busy after TTIN/FOO/USR1/KILL"
assert_contains "$(R hvals "$id:workers")" "$slow" "the SlowJob still runs"
ok="$(hh_jid)"
hb_push OkJob "$ok" '[1]' default
must_wait 10 'R lrange test:meta 0 -1 | grep -q "$ok"' "an OkJob pushed after the signals did not run (the worker stopped fetching?)"
assert_between "$(R ttl "$id")" 1 60 "TTL $id"
pass
