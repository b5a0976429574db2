#!/usr/bin/env bash
# --exec handlers do not get the worker's Redis credentials: REDIS_URL and REDIS_PASSWORD (and any
# --exec-env-drop NAME) are removed from their environment unless --exec-env NAME passes one;
# the rest of the worker's environment and the HIREDHAND_* variables are there, a class name
# longer than any fixed buffer whole. Bad names are refused with status 2.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
pw="exec-env-S3cret"
hh_redis_start --requirepass "$pw"
export REDISCLI_AUTH="$pw"   # for R (redis-cli)
export ENV_DIR; ENV_DIR="$(hh_tmp)"
export REDIS_URL="redis://:$pw@127.0.0.1:$REDIS_PORT/0" REDIS_PASSWORD="$pw"
export MY_TOKEN="token-$pw" KEEP_ME=kept

push() {   # CLASS -> jid
    local jid; jid="$(hh_jid)"
    R lpush queue:default "{\"retry\":false,\"queue\":\"default\",\"class\":\"$1\",\"args\":[],\"jid\":\"$jid\",\"created_at\":$(hh_now),\"enqueued_at\":$(hh_now)}" >/dev/null
    R sadd queues default >/dev/null
    echo "$jid"
}
env_of() { tr '\0' '\n' <"$ENV_DIR/$1"; }
has() { env_of "$1" | grep -q "^$2="; }

long_class="L$(printf 'x%.0s' $(seq 1 700))"
HH_NO_URL=1 hh_start_worker -c 2 --exec "Env=$HH_HANDLERS/env_dump.sh" --exec "$long_class=$HH_HANDLERS/env_dump.sh" \
    --exec-env-drop MY_TOKEN --exec-env-drop REDISCLI_AUTH
j="$(push Env)"
jl="$(push "$long_class")"
must_wait 20 "[ -s '$ENV_DIR/$j' ] && [ -s '$ENV_DIR/$jl' ]" "handlers did not run within 20 s (log: $(tail -3 "$WORKER_LOG"))"
e="$(env_of "$j")"
assert_not_contains "$e" "$pw" "a handler's environment holds the Redis password"
has "$j" REDIS_URL && fail "REDIS_URL reached the handler"
has "$j" REDIS_PASSWORD && fail "REDIS_PASSWORD reached the handler"
has "$j" MY_TOKEN && fail "MY_TOKEN (--exec-env-drop) reached the handler"
has "$j" KEEP_ME || fail "KEEP_ME (the worker's environment) missing: $e"
has "$j" REDIS_PORT || fail "REDIS_PORT (the worker's environment) missing"
assert_contains "$e" "HIREDHAND_JID=$j" "HIREDHAND_JID"
assert_contains "$e" "HIREDHAND_CLASS=Env" "HIREDHAND_CLASS"
assert_eq "$(env_of "$jl" | grep '^HIREDHAND_CLASS=' | cut -d= -f2- | wc -c)" "$(( ${#long_class} + 1 ))" \
    "HIREDHAND_CLASS of a ${#long_class}-byte class, whole"
hh_stop_worker TERM 30

# HIREDHAND_RETRY_COUNT is retry_count as stored: -1 (Sidekiq's after a manual retry of a job
# at 0) and counts beyond 32 and 64 bits alike, digit for digit; empty when there is none
# (and a script without a #! line runs through /bin/sh, as docs/handlers.md says)
nosh="$HH_TMP/nosh"
printf 'cat >/dev/null\necho "$HIREDHAND_JID" >"$ENV_DIR/nosh.ran"\n' >"$nosh"
chmod +x "$nosh"
HH_NO_URL=1 hh_start_worker -c 2 --exec "Env=$HH_HANDLERS/env_dump.sh" --exec "NoSh=$nosh"
R lpush queue:default '{"retry":false,"queue":"default","class":"NoSh","args":[],"jid":"noshjid"}' >/dev/null
must_wait 20 "[ -s '$ENV_DIR/nosh.ran' ]" "the script without #! did not run within 20 s (log: $(tail -3 "$WORKER_LOG"))"
assert_eq "$(cat "$ENV_DIR/nosh.ran")" noshjid "the script without #! ran for its job"
declare -A want=([m1]=-1 [big]=99999999999 [huge]=100000000000000000000 [z]=0 [none]=)
for k in "${!want[@]}"; do
    rcf=""; [ "$k" = none ] || rcf=",\"retry_count\":${want[$k]}"
    R lpush queue:default "{\"retry\":false,\"queue\":\"default\",\"class\":\"Env\",\"args\":[],\"jid\":\"rc$k\"$rcf}" >/dev/null
done
for k in "${!want[@]}"; do
    must_wait 20 "[ -s '$ENV_DIR/rc$k' ]" "the retry_count $k job did not run within 20 s"
    assert_eq "$(env_of "rc$k" | grep '^HIREDHAND_RETRY_COUNT=')" "HIREDHAND_RETRY_COUNT=${want[$k]}" "HIREDHAND_RETRY_COUNT for retry_count $k"
done
hh_stop_worker TERM 30

# --exec-env REDIS_URL opts in: the handler gets it, still not REDIS_PASSWORD
HH_NO_URL=1 hh_start_worker -c 2 --exec "Env=$HH_HANDLERS/env_dump.sh" --exec-env REDIS_URL \
    --exec-env-drop MY_TOKEN --exec-env-drop REDISCLI_AUTH
j="$(push Env)"
must_wait 20 "[ -s '$ENV_DIR/$j' ]" "handler did not run within 20 s"
assert_contains "$(env_of "$j")" "REDIS_URL=$REDIS_URL" "--exec-env REDIS_URL passes it"
has "$j" REDIS_PASSWORD && fail "REDIS_PASSWORD reached the handler with --exec-env REDIS_URL only"
hh_stop_worker TERM 30

for bad in "" "A=B"; do
    hh_cli work --exec-env "$bad" --exec "Env=$HH_HANDLERS/env_dump.sh"
    assert_eq "$HH_RC" 2 "--exec-env '$bad' refused"
    assert_contains "$HH_ERR" "exec-env" "the error names the option"
done
pass
