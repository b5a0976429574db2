#!/usr/bin/env bash
# jobs pushed with `hiredhand push` (now, -q, --retry false/N,
# --in, --at, no args) are what Sidekiq's client writes (24-hex jid printed on stdout, explicit
# "retry" with the right JSON type, created_at/enqueued_at as float seconds, the queues set, the
# schedule zset with the right score and no "at" key), and all of them run in the real `sidekiq`
# server exactly once with their args, without errors, retries or dead jobs.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start

now="$(hh_now)"
jobs=()
push() {   # KIND EXTRA_SPEC_FIELDS ARGS_JSON QUEUE RETRY_JSON -- hiredhand push args...
    local kind="$1" extra="$2" args="$3" queue="$4" retry="$5"; shift 6
    hh_cli push "$@" -r "$REDIS_URL"
    [ "$HH_RC" = 0 ] || fail "hiredhand push $* exited $HH_RC: $HH_ERR"
    local jid
    jid="$(printf '%s' "$HH_OUT" | tr -d '[:space:]')"
    [[ "$jid" =~ ^[0-9a-f]{24}$ ]] || fail "hiredhand push $* printed [$HH_OUT], not a 24-hex jid"
    jobs+=("{\"jid\":\"$jid\",\"kind\":\"$kind\",\"args\":$args,\"queue\":\"$queue\",\"retry\":$retry$extra}")
}
at=$(awk -v n="$now" 'BEGIN { printf "%.3f", n + 4.5 }')
push now "" '[1,"a"]' default true -- OkWorker '[1,"a"]'
push now "" '[3,{"n":null,"f":1.5,"s":"é😀\"\\"}]' critical true -- OkWorker '[3,{"n":null,"f":1.5,"s":"é😀\"\\"}]' -q critical
push now "" '[4]' default false -- OkWorker '[4]' --retry false
push now "" '[5]' default 3 -- OkWorker '[5]' --retry 3
push now "" '[]' default true -- OkWorker
push in ',"in":2' '[2,"b"]' default true -- OkWorker '[2,"b"]' --in 2
push at ",\"at\":$at" '[6]' default true -- OkWorker '[6]' --at "$at"
spec="{\"now\":$now,\"jobs\":[$(IFS=,; echo "${jobs[*]}")]}"

hh_ruby push_check.rb inspect "$spec" || fail "payloads written by hiredhand push differ from Sidekiq's (see above)"
assert_eq "$(R llen queue:default)" 4 "jobs in queue:default"
assert_eq "$(R llen queue:critical)" 1 "jobs in queue:critical"
assert_eq "$(R zcard schedule)" 2 "jobs in schedule"

export HH_SK_POLL=1   # app.rb: Sidekiq's scheduler polls every 0.5-1.5 s, first poll within 5 s
hh_sidekiq_start app.rb -q default -q critical -c 2
hh_sidekiq_wait_ready 40
must_wait 40 '[ "$(R llen test:ran)" -ge 7 ]' \
    "only $(R llen test:ran) of 7 jobs ran in sidekiq within 40 s (retry=$(R zcard retry) dead=$(R zcard dead) schedule=$(R zcard schedule))"
sleep 1
hh_sidekiq_stop   # flushes Sidekiq's stats
hh_ruby push_check.rb verify "$spec" || fail "sidekiq run checks failed (see above)"
if grep -E ' (WARN|ERROR|FATAL): ' "$SIDEKIQ_LOG" >/dev/null; then
    fail "sidekiq logged warnings/errors: $(grep -E ' (WARN|ERROR|FATAL): ' "$SIDEKIQ_LOG" | head -5)"
fi
pass
