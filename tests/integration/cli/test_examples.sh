#!/usr/bin/env bash
# examples/client.c and examples/worker.c, the programs people copy: together they run every
# job the client pushes and leave nothing behind (no retry, no dead job, no queued job, no
# process entry after the worker's TERM), and their errors are the library's reasons
# (hh_last_error()), not only the code's name ("Redis error", "invalid argument").
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
bin="$(dirname "$HIREDHAND")"
[ -x "$bin/example_worker" ] && [ -x "$bin/example_client" ] || fail "example_worker/example_client not built in $bin"
hh_redis_start

log="$HH_TMP/example_worker.log"
setsid "$bin/example_worker" "$REDIS_URL" </dev/null >"$log" 2>&1 &
pid=$!
hh_track_pid "$pid"
hh_worker_wait_ready 15
out="$("$bin/example_client" "$REDIS_URL" 2>&1)" || fail "example_client failed: $out"
assert_eq "$(grep -o "[0-9a-f]\{24\}" <<<"$out" | wc -l)" 4 "example_client prints the jids of its 4 jobs ($out)"
must_wait 15 '[ "$(R get stat:processed)" = 4 ]' \
    "the example worker did not run the client's 4 jobs (processed: $(R get stat:processed); log: $(tail -3 "$log"))"
kill -TERM "$pid"
must_wait 15 '! kill -0 "$pid" 2>/dev/null' "example_worker did not exit within 15 s of TERM"
wait "$pid" 2>/dev/null
assert_eq "$?" 0 "example_worker exit status after TERM"
assert_eq "$(R get stat:failed)" 0 "no job of the examples failed (log: $(grep -i fail "$log"))"
assert_eq "$(R zcard retry)" 0 "the examples leave no retry"
assert_eq "$(R zcard dead)" 0 "the examples leave no dead job"
assert_eq "$(R llen queue:default)" 0 "the examples leave no job queued"
assert_eq "$(R scard processes)" 0 "the example worker leaves the processes set at TERM"

# errors name the reason
port="$(hh_pick_free_port)"
out="$("$bin/example_client" "redis://127.0.0.1:$port/0" 2>&1)" && fail "example_client succeeded with no Redis"
assert_contains "$out" "example_client: cannot connect to redis redis://127.0.0.1:$port/0: Connection refused" \
    "example_client says why it cannot connect"
out="$(timeout 10 "$bin/example_worker" "notaurl://x" 2>&1)"
assert_eq "$?" 2 "example_worker exit status for a bad URL"
assert_contains "$out" "example_worker: invalid Redis URL" "example_worker says what is wrong with the URL"
pass
