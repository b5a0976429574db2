#!/usr/bin/env bash
# An entry whose "queue" is a name `work -q` refuses, but Sidekiq's client (and the scheduler)
# push to, is pushed back by `scheduled enqueue` and `retries retry` too: "" lands in `queue:`,
# a name with ESC in `queue:a<ESC>b`, one with '|' in `queue:a|b`; an entry whose "queue" holds
# a NUL (no C string carries it) is refused, named, and stays in its set.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start

R zadd schedule 100 '{"class":"K","args":[],"queue":"","jid":"emptyq000000000000000001"}' >/dev/null
R zadd retry 100 '{"class":"K","args":[],"queue":"a\u001bb","jid":"escq00000000000000000001","retry_count":1}' >/dev/null
R zadd retry 101 '{"class":"K","args":[],"queue":"a|b","jid":"pipeq0000000000000000001","retry_count":1}' >/dev/null
R zadd retry 102 '{"class":"K","args":[],"queue":"a\u0000b","jid":"nulq00000000000000000001","retry_count":1}' >/dev/null

hh_cli scheduled enqueue emptyq000000000000000001 -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "scheduled enqueue of a job for the queue named '' (stderr: $HH_ERR)"
assert_eq "$(R llen queue:)" 1 "the job is in queue: (the empty name)"
assert_eq "$(R zcard schedule)" 0 "it left the scheduled set"

hh_cli retries retry escq00000000000000000001 -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "retries retry of a job for a queue named a<ESC>b (stderr: $HH_ERR)"
assert_eq "$(R llen "queue:$(printf 'a\033b')")" 1 "the job is in queue:a<ESC>b"

hh_cli retries retry pipeq0000000000000000001 -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "retries retry of a job for a queue named a|b (stderr: $HH_ERR)"
assert_eq "$(R llen 'queue:a|b')" 1 "the job is in queue:a|b"

hh_cli retries retry nulq00000000000000000001 -r "$REDIS_URL"
assert_ne "$HH_RC" 0 "an entry whose queue holds a NUL is refused"
assert_contains "$HH_ERR" "holds a NUL" "the refusal says why"
assert_eq "$(R zcard retry)" 1 "the refused entry stays in the retry set"
pass
