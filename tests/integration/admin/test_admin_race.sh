#!/usr/bin/env bash
# Two operators and a scheduler at once: 3,000 retry entries, a hiredhand worker whose scheduler
# polls every ~0.2 s (once it is seen polling, half the entries are made due, so it enqueues them
# while the commands run) and two `hiredhand retries retry --all` started together. Every job ends in its queue exactly once:
# the retry set empties, the queue holds 3,000 entries, 3,000 distinct jids, none twice, and the
# two commands' counts add up to what the scheduler left them.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
N=3000
now="$(hh_now)"
R eval "
for i = 1, $N do
  local score = tonumber(ARGV[1]) + 3600 + i
  redis.call('ZADD', 'retry', score, string.format('{\"retry\":true,\"queue\":\"race\",\"class\":\"RaceJob\",\"args\":[%d],\"jid\":\"%024x\",\"created_at\":%s,\"enqueued_at\":%s,\"error_class\":\"E\",\"error_message\":\"m\",\"failed_at\":%s,\"retry_count\":1}', i, i, ARGV[1], ARGV[1], ARGV[1]))
end
return redis.call('ZCARD', 'retry')" 0 "$now" >/dev/null
assert_eq "$(R zcard retry)" "$N" "fixture"
# a due entry of its own, to see the scheduler poll
R zadd retry 1 '{"retry":true,"queue":"probe","class":"RaceJob","args":[],"jid":"probe","retry_count":1}' >/dev/null

hh_start_worker -q other -c 1 --poll-interval 0.2
must_wait 30 '[ "$(R llen queue:probe)" = 1 ]' "the worker's scheduler did not enqueue the probe"
R eval "
local n = 0
for i = 2, $N, 2 do
  local m = redis.call('ZRANGEBYSCORE', 'retry', tonumber(ARGV[1]) + 3600 + i, tonumber(ARGV[1]) + 3600 + i)
  for _, v in ipairs(m) do redis.call('ZADD', 'retry', 'XX', tonumber(ARGV[1]) - i, v); n = n + 1 end
end
return n" 0 "$now" >/dev/null
"$HIREDHAND" retries retry --all --yes --json -r "$REDIS_URL" </dev/null >"$HH_TMP/a.out" 2>"$HH_TMP/a.err" &
pa=$!
"$HIREDHAND" retries retry --all --yes --json -r "$REDIS_URL" </dev/null >"$HH_TMP/b.out" 2>"$HH_TMP/b.err" &
pb=$!
hh_track_pid "$pa"
hh_track_pid "$pb"
wait "$pa"; ra=$?
wait "$pb"; rb=$?
assert_eq "$ra" 0 "first retries retry --all (stderr: $(cat "$HH_TMP/a.err"))"
assert_eq "$rb" 0 "second retries retry --all (stderr: $(cat "$HH_TMP/b.err"))"
must_wait 30 '[ "$(R zcard retry)" = 0 ]' "the retry set did not empty: $(R zcard retry) left"
assert_eq "$(R llen queue:race)" "$N" "every job is in its queue once (LLEN queue:race)"
R lrange queue:race 0 -1 | grep -o '"jid":"[0-9a-f]*"' | sort >"$HH_TMP/jids"
assert_eq "$(wc -l <"$HH_TMP/jids")" "$N" "jids in the queue"
assert_eq "$(uniq -d "$HH_TMP/jids" | wc -l)" 0 "jids found twice in the queue: $(uniq -d "$HH_TMP/jids" | head -3)"
da="$(grep -o '"done":[0-9]*' "$HH_TMP/a.out" | cut -d: -f2)"
db="$(grep -o '"done":[0-9]*' "$HH_TMP/b.out" | cut -d: -f2)"
assert_between "$((da + db))" $((N / 2)) "$N" "the two commands moved between half (the scheduler may take the due half) and all of the jobs ($da + $db)"
retried="$(R lrange queue:race 0 -1 | grep -c '"retry_count":0')"
assert_eq "$retried" "$((da + db))" "jobs retried by the commands (retry_count 1 -> 0) = their counts"
hh_log "commands moved $da + $db, the scheduler $((N - da - db))"
pass
