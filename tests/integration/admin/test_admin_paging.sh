#!/usr/bin/env bash
# Large sets are paged, never loaded whole: 20,000 retry entries of ~2 KB each (40 MB in Redis).
# `retries list --json` streams all 20,000 in score order, `--limit` and `--class` cut them,
# `jobs find` finds the last one, `retries kill --all --class` moves half to the dead set and
# `retries retry --all` the other half to the queue, each keeping the CLI's peak RSS under
# 25 MB (a whole-set read would hold 40 MB of replies alone; skipped in sanitizer builds, whose
# shadow memory changes the baseline), and `queues show` / `jobs find` page the queue too.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
N=20000
now="$(hh_now)"
R eval "
local pad = string.rep('x', 2000)
for i = 1, $N do
  local k = (i % 2 == 0) and 'EvenJob' or 'OddJob'
  redis.call('ZADD', 'retry', tonumber(ARGV[1]) + 600 + i, string.format('{\"retry\":true,\"queue\":\"default\",\"class\":\"%s\",\"args\":[%d,\"%s\"],\"jid\":\"%024x\",\"created_at\":%s,\"enqueued_at\":%s,\"error_class\":\"E\",\"error_message\":\"m%d\",\"failed_at\":%s,\"retry_count\":2}', k, i, pad, i, ARGV[1], ARGV[1], i, ARGV[1]))
end
return 1" 0 "$now" >/dev/null
assert_eq "$(R zcard retry)" "$N" "fixture"
LIMIT_KB=25600

# peak RSS (KB) of one hiredhand run; output in $HH_TMP/out
rss_run() {
    /usr/bin/time -f '%M' -o "$HH_TMP/rss" "$HIREDHAND" "$@" -r "$REDIS_URL" </dev/null >"$HH_TMP/out" 2>"$HH_TMP/err"
    RUN_RC=$?
    RUN_RSS="$(tail -n 1 "$HH_TMP/rss")"
}
check_rss() {
    if [ "${HH_SANITIZED:-}" = 1 ] || [ "${HH_SANITIZED:-}" = ON ] || [ "${HH_SANITIZED:-}" = TRUE ]; then return 0; fi
    [ "$RUN_RSS" -lt "$LIMIT_KB" ] || fail "$1: peak RSS $RUN_RSS KB, not under $LIMIT_KB KB"
}

rss_run retries list --json
assert_eq "$RUN_RC" 0 "retries list --json over $N entries ($(cat "$HH_TMP/err"))"
check_rss "retries list --json"
assert_eq "$(grep -c '"jid":' "$HH_TMP/out")" "$N" "entries listed"
assert_eq "$(grep -o '"args":\[[0-9]*' "$HH_TMP/out" | cut -d[ -f2 | head -3 | tr '\n' ' ')" "1 2 3 " "the first ones in score order"
assert_eq "$(grep -o '"args":\[[0-9]*' "$HH_TMP/out" | cut -d[ -f2 | tail -1)" "$N" "the last one last"
ruby -rjson -e 'a = JSON.parse(File.read(ARGV[0])); exit(a.size == Integer(ARGV[1]) ? 0 : 1)' "$HH_TMP/out" "$N" \
    || fail "retries list --json is not one JSON array of $N entries"
hh_log "list: peak RSS $RUN_RSS KB"

hh_cli retries list --limit 3 --class OddJob --json
assert_eq "$(printf '%s' "$HH_OUT" | grep -c '"class":"OddJob"')" 3 "--limit 3 --class OddJob"
last="$(printf '%024x' "$N")"
hh_cli jobs find "$last" --json
assert_contains "$HH_OUT" '"where":"retry"' "jobs find pages the retry set to the last entry"

rss_run retries kill --all --yes --class OddJob --json
assert_eq "$RUN_RC" 0 "kill --all --class OddJob ($(cat "$HH_TMP/err"))"
check_rss "retries kill --all"
assert_contains "$(cat "$HH_TMP/out")" "\"done\":$((N / 2))" "kill --all count"
# DeadSet#kill trims with ZREMRANGEBYRANK 0 -dead_max_jobs: 10,000 kills leave 9,999, as in Sidekiq
assert_eq "$(R zcard dead)" "$((N / 2 - 1))" "dead set trimmed as Sidekiq trims it"
assert_eq "$(R zcard retry)" "$((N / 2))" "retry set keeps the EvenJobs"
hh_log "kill --all: peak RSS $RUN_RSS KB"

rss_run retries retry --all --yes --json
assert_eq "$RUN_RC" 0 "retry --all ($(cat "$HH_TMP/err"))"
check_rss "retries retry --all"
assert_eq "$(R llen queue:default)" "$((N / 2))" "queue after retry --all"
assert_eq "$(R zcard retry)" 0 "retry set after retry --all"
hh_log "retry --all: peak RSS $RUN_RSS KB"

rss_run jobs find "$(printf '%024x' 2)"
assert_eq "$RUN_RC" 0 "jobs find in a queue of $((N / 2)) ($(cat "$HH_TMP/err"))"
check_rss "jobs find"
assert_contains "$(cat "$HH_TMP/out")" "queue default, position" "jobs find pages the queue"
rss_run queues show default --limit 5 --json
check_rss "queues show"
assert_eq "$(grep -o '{"jid":' "$HH_TMP/out" | wc -l)" 5 "queues show --limit 5"
pass
