#!/usr/bin/env bash
# Integers beyond 64 bits (Ruby's JSON reads them, so Sidekiq runs such jobs): a job whose only
# bignum is negative runs with its exact bytes, like a positive one (it was once judged malformed
# and buried), and due schedule/retry entries holding bignums are moved to their queue with every
# byte kept but enqueued_at's (the scheduler once moved them to the dead set). An operator's
# retry of an entry whose retry_count is beyond 64 bits takes 1 from its digits, as Ruby does.
# A bignum job that fails goes to the retry set as Sidekiq's would, every digit kept (it went
# to the dead set verbatim, never retried).
# Reading such jobs: a queue's latency (`queues --json`, `stats --json`) and a retry entry's
# failed_at/enqueued_at (`retries list --json`) follow the stored encoding, integer ms or real
# seconds, as for any job (read with every integer as a real, ms were taken for seconds).
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start

neg='{"class":"T","args":[-123456789012345678901234567890],"jid":"bigneg","retry":true,"queue":"default"}'
sched='{"class":"T","args":[123456789012345678901234567890],"jid":"bigsched","retry":true,"queue":"default","created_at":1700000000.1}'
retry='{"class":"T","args":[-98765432109876543210987654321,7],"jid":"bigretry","retry":true,"queue":"default","enqueued_at":1700000000.25,"retry_count":0,"failed_at":1700000001.5}'
R lpush queue:default "$neg" >/dev/null
R zadd schedule 1 "$sched" >/dev/null
R zadd retry 2 "$retry" >/dev/null
fails='{"class":"F","args":[123456789012345678901234567890,{"n":-98765432109876543210}],"jid":"bigfail","retry":true,"queue":"default","created_at":1700000000.5,"retry_count":1}'
R lpush queue:default "$fails" >/dev/null

hh_start_worker -c 2 --poll-interval 0.5 --exec "T=$HH_HANDLERS/record.sh" --exec "F=$HH_HANDLERS/fail.sh"
wait_until 30 '[ "$(R llen test:ran)" = 3 ]' || fail \
    "the three bignum jobs did not all run within 30 s (ran=$(R llen test:ran) dead=$(R zcard dead) schedule=$(R zcard schedule) retry=$(R zcard retry))"
assert_eq "$(R zcard dead)" 0 "nothing may go to the dead set"

ran_neg="" ran_sched="" ran_retry=""
for i in 0 1 2; do
    p="$(R lindex test:ran $i)"
    case "$p" in
        *'"jid":"bigneg"'*) ran_neg="$p" ;;
        *'"jid":"bigsched"'*) ran_sched="$p" ;;
        *'"jid":"bigretry"'*) ran_retry="$p" ;;
    esac
done
assert_eq "$ran_neg" "$neg" "the negative bignum job's handler got its exact bytes"
# scheduled: the exact bytes with enqueued_at appended before the closing brace
case "$ran_sched" in
    "${sched%\}},\"enqueued_at\":"[0-9]*.[0-9]*"}") ;;
    *) fail "scheduled bignum job ran as '$ran_sched', expected '${sched%\}},\"enqueued_at\":<now>}'" ;;
esac
# retried: only enqueued_at's value changed, in place
pre="${retry%%1700000000.25*}" post="${retry#*1700000000.25}"
case "$ran_retry" in
    "$pre"[0-9]*.[0-9]*"$post") ;;
    *) fail "retried bignum job ran as '$ran_retry', expected '${pre}<now>${post}'" ;;
esac
assert_ne "$ran_retry" "$retry" "enqueued_at was refreshed"
must_wait 30 'R zrange retry 0 -1 | grep -q "\"jid\":\"bigfail\""' \
    "the failed bignum job is not in the retry set (dead=$(R zrange dead 0 -1))"
failed="$(R zrange retry 0 -1 | grep '"jid":"bigfail"')"
pre="${fails%,\"retry_count\":1\}}"
case "$failed" in
    "$pre"',"retry_count":2,'*) ;;
    *) fail "the failed bignum job's retry entry is '$failed', expected its bytes up to retry_count, then 2" ;;
esac
assert_contains "$failed" '"error_class":"hiredhand::ExecFailed"' "error_class of the failed bignum job"
assert_contains "$failed" '"retried_at":' "retried_at of the failed bignum job"
ruby -rjson -e 'j = JSON.parse(ARGV[0]); exit(j["args"] == [123456789012345678901234567890, {"n" => -98765432109876543210}] && j["retry_count"] == 2 ? 0 : 1)' "$failed" \
    || fail "Ruby does not read the failed bignum job's args and retry_count as pushed: $failed"
hh_stop_worker TERM 30
assert_eq "$WORKER_RC" 0 "worker exit status after SIGTERM"

# An operator's retry of a dead or retry entry whose retry_count is beyond 64 bits: Sidekiq's
# SortedEntry#retry takes 1 from it as a Ruby Integer (100000000000000000000 - 1 =
# 99999999999999999999); it was written as the float 1e+20. Every other byte stays, enqueued_at
# is appended. The lists show its digits (they showed "-", and --json null).
bigrc='{"class":"T","args":[1],"jid":"bigrc","retry":true,"queue":"bigq","retry_count":100000000000000000000,"error_class":"E","error_message":"m","failed_at":1700000001.5,"created_at":1700000000.1}'
bigrc2="${bigrc/\"bigrc\"/\"bigrc2\"}"
minrc='{"class":"T","args":[2],"jid":"minrc","retry":true,"queue":"bigq","retry_count":-9223372036854775808,"failed_at":1700000001.5}'
R zadd dead 3 "$bigrc" >/dev/null
R zadd retry 4 "$bigrc2" >/dev/null
R zadd dead 5 "$minrc" >/dev/null
hh_cli retries list
assert_eq "$HH_RC" 0 "retries list exit status ($HH_ERR)"
assert_contains "$(grep bigrc2 <<<"$HH_OUT")" " 100000000000000000000 " "retries list shows the retry_count's digits"
hh_cli retries list --json
assert_contains "$HH_OUT" '"retry_count":100000000000000000000,' "retries list --json gives the retry_count's digits"
hh_cli dead show bigrc
assert_contains "$HH_OUT" "retry_count:   100000000000000000000" "dead show gives the retry_count's digits"
hh_cli dead retry bigrc
assert_eq "$HH_RC" 0 "dead retry of the bignum retry_count ($HH_ERR)"
hh_cli retries retry bigrc2
assert_eq "$HH_RC" 0 "retries retry of the bignum retry_count ($HH_ERR)"
hh_cli dead retry minrc
assert_eq "$HH_RC" 0 "dead retry of the int64 minimum retry_count ($HH_ERR)"
assert_eq "$(R llen queue:bigq)" 3 "the three entries were pushed to their queue"
for i in 0 1 2; do
    p="$(R lindex queue:bigq $i)"
    case "$p" in
        *'"jid":"bigrc"'*) want="$bigrc" old=100000000000000000000 new=99999999999999999999 ;;
        *'"jid":"bigrc2"'*) want="$bigrc2" old=100000000000000000000 new=99999999999999999999 ;;
        *'"jid":"minrc"'*) # rebuilt as Sidekiq's client does (defaults first, created_at added)
            assert_contains "$p" '"retry_count":-9223372036854775809,' "int64 minimum minus 1 (Ruby goes to a bignum)"
            continue ;;
        *) fail "unexpected job in queue:bigq: $p" ;;
    esac
    pre="${want%%"$old"*}" post="${want#*"$old"}"
    case "$p" in
        "$pre$new${post%\}}"',"enqueued_at":'[0-9]*.[0-9]*'}') ;;
        *) fail "pushed as '$p', expected '$pre$new${post%\}},\"enqueued_at\":<now>}'" ;;
    esac
done

now_ms=$(date +%s%3N) now_s=$(date +%s)
R rpush queue:latms '{"class":"L","args":[99999999999999999999],"jid":"latms","queue":"latms","enqueued_at":'$((now_ms - 2000))'}' >/dev/null
R rpush queue:latf '{"class":"L","args":[99999999999999999999],"jid":"latf","queue":"latf","enqueued_at":'$((now_s - 2))'.5}' >/dev/null
R sadd queues latms latf >/dev/null
R del retry >/dev/null
R zadd retry 5 '{"class":"L","args":[99999999999999999999],"jid":"retms","queue":"q","retry_count":0,"failed_at":'$now_ms',"enqueued_at":'$now_ms'}' >/dev/null
in_range() { jq -e --argjson lo "$2" --argjson hi "$3" "$1 | . >= \$lo and . <= \$hi" >/dev/null; }
hh_cli queues --json -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "queues --json ($HH_ERR)"
for q in latms latf; do
    in_range ".[] | select(.name == \"$q\") | .latency" 1 60 <<<"$HH_OUT" || fail "queues --json: latency of $q (a bignum job) is not about 2 s: $HH_OUT"
done
hh_cli stats --json -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "stats --json ($HH_ERR)"
for q in latms latf; do
    in_range ".queues[] | select(.name == \"$q\") | .latency" 1 60 <<<"$HH_OUT" || fail "stats --json: latency of $q (a bignum job) is not about 2 s: $HH_OUT"
done
hh_cli retries list --json -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "retries list --json ($HH_ERR)"
for f in failed_at enqueued_at; do
    in_range ".[0].$f" $((now_s - 60)) $((now_s + 60)) <<<"$HH_OUT" || fail "retries list --json: $f of a bignum entry stored in ms is not now in seconds: $HH_OUT"
done
pass
