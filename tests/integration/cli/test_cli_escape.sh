#!/usr/bin/env bash
# Names read from Redis reach the terminal escaped, never raw: an escape sequence stored
# in a queue, class, JID, identity or error message (Sidekiq's clients write any bytes)
# shows as \xNN in stats, processes, queues list/show, retries/dead/scheduled list/show,
# busy and jobs find -- as `top` and the logs show them -- so it cannot drive the terminal.
# --json stays JSON (its escapes are JSON's).
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
ESC=$'\e'
now=$(date +%s)
jid=e5c0e5c0e5c0e5c0e5c0e5c0
R sadd queues "evil${ESC}]0;x"$'\a' >/dev/null
R lpush "queue:evil${ESC}]0;x"$'\a' \
    "{\"class\":\"Q\\u001b[31m\",\"args\":[],\"jid\":\"$jid\",\"queue\":\"evil\\u001b]0;x\\u0007\",\"enqueued_at\":$now}" >/dev/null
R zadd retry "$now" "{\"class\":\"K\\u001b[2J\",\"args\":[],\"jid\":\"r1\",\"queue\":\"q\\u001bq\",\"retry_count\":1,\"error_class\":\"E\\u001b[5m\",\"error_message\":\"m\\u001b]0;t\\u0007\",\"failed_at\":$now}" >/dev/null
R zadd dead "$now" "{\"class\":\"D\\u001b[2J\",\"args\":[],\"jid\":\"d1\",\"queue\":\"q\",\"error_class\":\"E\",\"error_message\":\"x\"}" >/dev/null
R zadd schedule "$((now + 3600))" "{\"class\":\"S\\u001b[2J\",\"args\":[],\"jid\":\"s1\",\"queue\":\"q\"}" >/dev/null
ident="host${ESC}[1m:1:abc"
R sadd processes "$ident" >/dev/null
R hset "$ident" info "{\"hostname\":\"host\",\"pid\":1,\"tag\":\"t\\u001bg\",\"concurrency\":2,\"queues\":[\"q\"],\"identity\":\"host\\u001b[1m:1:abc\",\"started_at\":$now}" \
    beat "$now" busy 1 quiet false rss 1 >/dev/null
R hset "$ident:work" "tid${ESC}1" "{\"queue\":\"q\\u001bw\",\"payload\":\"{\\\"class\\\":\\\"W\\\\u001b[2J\\\",\\\"args\\\":[],\\\"jid\\\":\\\"w1\\\"}\",\"run_at\":$now}" >/dev/null

check() {   # WHAT NEEDLE -- HH_OUT must hold NEEDLE (escaped) and no ESC byte
    assert_eq "$HH_RC" 0 "exit status of $1 (stderr: $HH_ERR)"
    assert_not_contains "$HH_OUT" "$ESC" "$1 prints an ESC byte raw: $(printf '%s' "$HH_OUT" | cat -v)"
    assert_contains "$HH_OUT" "$2" "$1 shows the name escaped"
}
hh_cli stats -r "$REDIS_URL";                       check stats 'evil\x1b]0;x\x07'
hh_cli processes -r "$REDIS_URL";                   check processes 'host\x1b[1m:1:abc'
assert_contains "$HH_OUT" 't\x1bg' "processes shows the tag escaped"
hh_cli queues list -r "$REDIS_URL";                 check "queues list" 'Q\x1b[31m'
hh_cli queues show 'evil\x1b]0;x\x07' -r "$REDIS_URL"; check "queues show" 'Q\x1b[31m'
hh_cli retries list -r "$REDIS_URL";                check "retries list" 'K\x1b[2J'
assert_contains "$HH_OUT" 'm\x1b]0;t\x07' "retries list shows the error escaped"
hh_cli retries show r1 -r "$REDIS_URL";             check "retries show" 'K\x1b[2J'
assert_contains "$HH_OUT" 'q\x1bq' "retries show shows the queue escaped"
hh_cli dead list -r "$REDIS_URL";                   check "dead list" 'D\x1b[2J'
hh_cli scheduled show s1 -r "$REDIS_URL";           check "scheduled show" 'S\x1b[2J'
hh_cli busy -r "$REDIS_URL";                        check busy 'tid\x1b1'
assert_contains "$HH_OUT" 'q\x1bw' "busy shows the queue escaped"
hh_cli jobs find "$jid" -r "$REDIS_URL";            check "jobs find" 'evil\x1b]0;x\x07'
# --json: JSON's escapes, no raw ESC either
hh_cli stats --json -r "$REDIS_URL";                check "stats --json" 'evil\u001B]0;x\u0007'
hh_cli retries list --json -r "$REDIS_URL";         check "retries list --json" 'K\u001B[2J'
pass
