#!/usr/bin/env bash
# A Redis password kept off the command line: --redis-password-file FILE (its first line, the
# line end stripped) or $REDIS_PASSWORD, used when the URL has no password, for every subcommand
# (work, push, stats, processes, quiet). Against a --requirepass redis-server: each works, the
# password appears in no output, no log and not in the worker's /proc/<pid>/cmdline; a missing or
# empty file, or a wrong password, is a clear error (status 2) that does not show it either.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
pw="pwfile-S3cret-$$"
hh_redis_start --requirepass "$pw"
RA() { REDISCLI_AUTH="$pw" R "$@"; }
d="$(hh_tmp)"
printf '%s\n' "$pw" >"$d/pw"
printf '%s\r\n' "$pw" >"$d/pw-crlf"
printf 'wrong-%s\n' "$pw" >"$d/pw-wrong"
: >"$d/empty"
chmod 600 "$d"/pw*
ran="$(hh_jid_recorder "$d/rec.sh")"

no_pw() {   # TEXT WHAT
    assert_not_contains "$1" "$pw" "$2 shows the password"
}
expect_ok() {   # LABEL
    assert_eq "$HH_RC" 0 "$1 (stderr: $HH_ERR)"
    no_pw "$HH_OUT$HH_ERR" "$1"
}

# without a password: refused, as a configuration error
hh_cli push OkJob '[0]'
assert_eq "$HH_RC" 2 "push without a password against --requirepass"

# the client commands, by file and by environment
for how in file crlf env; do
    case $how in
        file) args=(--redis-password-file "$d/pw"); envpw="" ;;
        crlf) args=(--redis-password-file "$d/pw-crlf"); envpw="" ;;
        env)  args=(); envpw="$pw" ;;
    esac
    export REDIS_PASSWORD="$envpw"
    hh_cli push OkJob "[\"$how\"]" "${args[@]}"
    expect_ok "push ($how)"
    jid="$HH_OUT"
    assert_eq "$(RA lrange queue:default 0 -1 | grep -c "$jid")" 1 "the job pushed with the password by $how"
    hh_cli stats --json "${args[@]}"
    expect_ok "stats ($how)"
    hh_cli processes "${args[@]}"
    expect_ok "processes ($how)"
    hh_cli quiet no-such-process "${args[@]}"
    assert_eq "$HH_RC" 1 "quiet ($how) reaches Redis and finds no such process (stderr: $HH_ERR)"
    no_pw "$HH_OUT$HH_ERR" "quiet ($how)"
done
unset REDIS_PASSWORD

# the worker, by file: the jobs pushed above run
hh_start_worker -v --redis-password-file "$d/pw" --exec "OkJob=$d/rec.sh"
must_wait 20 '[ "$(wc -l <"'"$ran"'")" -ge 3 ]' "the worker (password file) did not run the 3 jobs: $(tail -3 "$WORKER_LOG")"
assert_not_contains "$(tr '\0' ' ' </proc/"$WORKER_PID"/cmdline)" "$pw" "/proc/<pid>/cmdline of the worker holds the password"
assert_not_contains "$(ps -ww -o args= -p "$WORKER_PID")" "$pw" "ps shows the password"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "worker (password file) exit status"
no_pw "$(cat "$WORKER_LOG")" "the worker's log"

# the worker, by environment
hh_cli push OkJob '["env-worker"]' --redis-password-file "$d/pw"
expect_ok "push for the env worker"
REDIS_PASSWORD="$pw" hh_start_worker -v --exec "OkJob=$d/rec.sh"
must_wait 20 '[ "$(wc -l <"'"$ran"'")" -ge 4 ]' "the worker (REDIS_PASSWORD) did not run the job: $(tail -3 "$WORKER_LOG")"
assert_not_contains "$(tr '\0' ' ' </proc/"$WORKER_PID"/cmdline)" "$pw" "/proc/<pid>/cmdline of the worker holds the password"
hh_stop_worker TERM 30
no_pw "$(cat "$WORKER_LOG")" "the worker's log (REDIS_PASSWORD)"

# clear errors
hh_cli push OkJob '[1]' --redis-password-file "$d/missing"
assert_eq "$HH_RC" 2 "a missing password file"
assert_contains "$HH_ERR" "$d/missing" "the error names the file"
hh_cli stats --redis-password-file "$d/empty"
assert_eq "$HH_RC" 2 "an empty password file"
assert_contains "$HH_ERR" "empty" "the error says the file is empty"
hh_cli stats --redis-password-file "$d"
assert_eq "$HH_RC" 2 "a directory as password file"
hh_cli work --redis-password-file "$d/missing" --exec "OkJob=$d/rec.sh"
assert_eq "$HH_RC" 2 "work with a missing password file"
hh_cli stats --redis-password-file "$d/pw-wrong"
assert_eq "$HH_RC" 2 "a wrong password is a configuration error (stderr: $HH_ERR)"
assert_not_contains "$HH_ERR" "wrong-$pw" "the error shows the wrong password"
hh_cli work --redis-password-file "$d/pw-wrong" --exec "OkJob=$d/rec.sh"
assert_eq "$HH_RC" 2 "work with a wrong password"
no_pw "$HH_OUT$HH_ERR" "work with a wrong password"
pass
