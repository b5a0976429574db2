#!/usr/bin/env bash
# A password-protected Redis on a unix socket (no TCP port).
#   redis-server --port 0 --unixsocket $DIR/r.sock --requirepass 'x/y@z'
#   -r 'unix://:x%2Fy%40z@$DIR/r.sock?db=2': `push` queues into db 2, `work` runs the job from
#   db 2 (nothing in db 0), `stats` reads db 2; the password, decoded or encoded, appears in no
#   output (push, stats, the worker's -v log) and neither does a wrong one in the error.
#   The same with an ACL user: unix://hhuser:p%40ss%2Fw%3Ard%2Bx@/path?db=3.
# And redis://name@host (no ':'), read as redis-rb reads it: a user name with no password, so
# no AUTH is sent (works against a Redis without a password, as redis-rb's connection does).
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
pw='x/y@z'
pw_enc='x%2Fy%40z'
d="$(hh_tmp)"
sock="$d/r.sock"
setsid redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 --requirepass "$pw" \
    --dir "$d" --save "" --appendonly no --logfile "$d/redis.log" </dev/null >/dev/null 2>&1 &
hh_track_pid $!
RS() { redis-cli -s "$sock" -a "$pw" --no-auth-warning "$@"; }
must_wait 10 '[ "$(RS ping)" = PONG ]' "redis-server on $sock did not answer"

# a handler that records the jid (no TCP port to reach Redis from a handler)
ran="$(hh_jid_recorder "$d/rec.sh")"

no_secret() {   # TEXT WHAT SECRET...
    local text="$1" what="$2" s; shift 2
    for s in "$@"; do assert_not_contains "$text" "$s" "$what shows the password"; done
}

run_case() {   # URL DB DECODED-PASSWORD ENCODED-PASSWORD LABEL
    local url="$1" db="$2" dec="$3" enc="$4" label="$5" jid
    hh_cli push OkJob "[\"$label\"]" -r "$url"
    assert_eq "$HH_RC" 0 "$label: hiredhand push (stderr: $HH_ERR)"
    no_secret "$HH_OUT$HH_ERR" "$label: push output" "$dec" "$enc"
    jid="$(printf '%s' "$HH_OUT" | tr -d '[:space:]')"
    assert_eq "$(RS -n "$db" llen queue:default)" 1 "$label: job queued in db $db"
    assert_eq "$(RS -n 0 exists queue:default)" 0 "$label: nothing queued in db 0"
    HH_NO_URL=1 hh_start_worker -v -r "$url" -c 2 --heartbeat-interval 1 --exec "OkJob=$d/rec.sh"
    must_wait 20 'grep -qx "$jid" "$ran"' \
        "$label: the job pushed to db $db did not run within 20 s (queue db $db: $(RS -n "$db" llen queue:default))"
    must_wait 10 '[ "$(RS -n "$db" get stat:processed)" -ge 1 ] 2>/dev/null' "$label: stat:processed in db $db"
    hh_cli stats --json -r "$url"
    assert_eq "$HH_RC" 0 "$label: hiredhand stats (stderr: $HH_ERR)"
    assert_contains "$HH_OUT" '"processed"' "$label: stats output"
    no_secret "$HH_OUT$HH_ERR" "$label: stats output" "$dec" "$enc"
    hh_stop_worker TERM 20
    assert_eq "$WORKER_RC" 0 "$label: worker exit status after SIGTERM"
    no_secret "$(cat "$WORKER_LOG")" "$label: worker log (-v)" "$dec" "$enc"
    assert_contains "$(cat "$WORKER_LOG")" "unix://" "$label: the log names the socket URL"
}

run_case "unix://:$pw_enc@$sock?db=2" 2 "$pw" "$pw_enc" "requirepass"

# a wrong password: refused, not echoed
hh_cli push OkJob '[]' -r "unix://:wr%2Fong@$sock?db=2"
[ "$HH_RC" != 0 ] || fail "push with a wrong password exited 0"
no_secret "$HH_OUT$HH_ERR" "wrong-password error" "wr/ong" "wr%2Fong"

# an ACL user
upw='p@ss/w:rd+x'
upw_enc='p%40ss%2Fw%3Ard%2Bx'
assert_eq "$(RS acl setuser hhuser on ">$upw" '~*' '&*' '+@all')" OK "ACL SETUSER"
run_case "unix://hhuser:$upw_enc@$sock?db=3" 3 "$upw" "$upw_enc" "ACL user"

# redis://name@host: a user name without a password (redis-rb sends no AUTH then)
hh_redis_start
hh_cli push OkJob '[]' -r "redis://someone@127.0.0.1:$REDIS_PORT/0"
assert_eq "$HH_RC" 0 "push with redis://someone@host to a Redis without a password (stderr: $HH_ERR)"
assert_eq "$(R llen queue:default)" 1 "job queued through redis://someone@host"
ruby -e 'require "redis"; Redis.new(url: ARGV[0]).ping' "redis://someone@127.0.0.1:$REDIS_PORT/0" \
    || fail "redis-rb could not use redis://someone@host either: the expectation is wrong"
pass "unix:// with a password and with an ACL user: push, work (db 2, db 3), stats; no password printed"
