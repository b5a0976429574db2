#!/usr/bin/env bash
# `-r/--redis URL`: redis://:password@host:port/db and unix:///path?db=N both work, and
# the password is never printed in logs. A redis-server with requirepass and a unix socket; a
# worker on redis://:PW@127.0.0.1:PORT/3 runs a job pushed into db 3 (and nothing appears in
# db 0); `hiredhand push` with the same URL writes to db 3; the worker's log (with -v) and the
# output of push/stats never contain the password; a wrong password is reported without echoing
# it. Then a worker on unix://SOCKET?db=5 runs a job pushed into db 5.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
pw="s3cret-$(hh_jid)"
sock="$HH_TMP/redis.sock"
hh_redis_start --requirepass "$pw" --unixsocket "$sock" --unixsocketperm 700
R() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" -a "$pw" --no-auth-warning "$@"; }

url3="redis://:$pw@127.0.0.1:$REDIS_PORT/3"
# the handler records into db 3 through REDIS_PORT; give it the password through REDISCLI_AUTH
export REDISCLI_AUTH="$pw"
HH_NO_URL=1 hh_start_worker -v -r "$url3" -c 2 --exec "OkJob=$HH_HANDLERS/record.sh"
hh_cli push OkJob '["db3"]' -r "$url3"
assert_eq "$HH_RC" 0 "hiredhand push with a password URL (stderr: $HH_ERR)"
jid="$(printf '%s' "$HH_OUT" | tr -d '[:space:]')"
assert_not_contains "$HH_OUT$HH_ERR" "$pw" "push output contains the password"
# record.sh writes test:ran into db 0 (redis-cli default), so look there for the jid
must_wait 20 'R -n 0 lrange test:ran 0 -1 | grep -q '"$jid" \
    "job pushed to db 3 did not run within 20 s (db3 queue=$(R -n 3 llen queue:default), db0 queue=$(R -n 0 llen queue:default))"
assert_eq "$(R -n 0 exists queue:default)" 0 "nothing queued in db 0"
assert_eq "$(R -n 3 llen queue:default)" 0 "db 3 queue drained"
hh_cli stats --json -r "$url3"
assert_eq "$HH_RC" 0 "stats with a password URL (stderr: $HH_ERR)"
assert_not_contains "$HH_OUT$HH_ERR" "$pw" "stats output contains the password"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "worker exit status after SIGTERM"
if grep -q "$pw" "$WORKER_LOG"; then fail "worker log (-v) contains the password: $(grep -m1 "$pw" "$WORKER_LOG")"; fi

# wrong password: reported, not echoed
bad="wrong-$(hh_jid)"
hh_cli push OkJob '[]' -r "redis://:$bad@127.0.0.1:$REDIS_PORT/0"
[ "$HH_RC" != 0 ] || fail "push with a wrong password exited 0"
assert_not_contains "$HH_OUT$HH_ERR" "$bad" "push error output echoes the wrong password"

# unix socket URL without a password, db 5 (with a password: test_redis_unix_auth.sh)

hh_redis_stop
sock="$HH_TMP/redis2.sock"
unset REDISCLI_AUTH
hh_redis_start --unixsocket "$sock" --unixsocketperm 700
R() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" "$@"; }
HH_NO_URL=1 hh_start_worker -r "unix://$sock?db=5" -c 2 --exec "OkJob=$HH_HANDLERS/record.sh"
jid5="$(hh_jid)"
R -n 5 lpush queue:default "{\"retry\":true,\"queue\":\"default\",\"class\":\"OkJob\",\"args\":[5],\"jid\":\"$jid5\",\"created_at\":$(hh_now),\"enqueued_at\":$(hh_now)}" >/dev/null
must_wait 20 'R -n 0 lrange test:ran 0 -1 | grep -q '"$jid5" \
    "job pushed to db 5 did not run via unix://$sock?db=5 within 20 s (db5 queue=$(R -n 5 llen queue:default))"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "worker exit status after SIGTERM (unix socket)"
# a bad URL is shown as given, with only real user info masked, and a db that is not a
# number says so
hh_cli stats -r 'unix:///tmp/hh/r.sock?db=abc'
assert_eq "$HH_RC" 2 "a unix:// URL with db=abc is a usage error (stderr: $HH_ERR)"
assert_contains "$HH_ERR" "db must be a number 0-1048576" "a non-numeric unix:// db says what a db is"
assert_contains "$HH_ERR" "unix:///tmp/hh/r.sock?db=abc" "a unix:// URL without user info is shown unmasked"
hh_cli stats -r 'unix://u:sekrit@/tmp/r.sock?db=x'
assert_contains "$HH_ERR" "unix://u:***@/tmp/r.sock?db=x" "unix:// password is masked, the user name shown"
assert_not_contains "$HH_ERR" "sekrit" "the unix:// password is not shown"
hh_cli stats -r 'redis://127.0.0.1:1/abc?x=a@b'
assert_contains "$HH_ERR" "db must be a number 0-1048576" "a non-numeric redis:// db says what a db is"
assert_contains "$HH_ERR" "redis://127.0.0.1:1/abc?x=a@b" "an '@' in the query is not user info"
hh_cli stats -r 'redis://:pa/sekrit@127.0.0.1:x'
assert_not_contains "$HH_ERR" "sekrit" "a password holding '/' stays masked"
# a port that is not a number is named, and only a password is masked
hh_cli stats -r 'redis://127.0.0.1:notaport/0'
assert_eq "$HH_RC" 2 "a bad port is a usage error (stderr: $HH_ERR)"
assert_contains "$HH_ERR" "bad port 'notaport': want a number from 1 to 65535): redis://127.0.0.1:notaport/0" \
    "a bad port is named and the URL shown unmasked"
hh_cli stats -r 'rediss://app:sekrit@127.0.0.1:notaport/0'
assert_contains "$HH_ERR" "bad port 'notaport': want a number from 1 to 65535): rediss://app:***@127.0.0.1:notaport/0" \
    "rediss://: only the password is masked"
assert_not_contains "$HH_ERR" "sekrit" "the rediss:// password is not shown"
pass
