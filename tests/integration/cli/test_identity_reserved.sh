#!/usr/bin/env bash
# Identities, namespaces, tags and queue names that would name or share keys Sidekiq or hiredhand
# own are refused at start with a clear message and status 2, before anything touches Redis:
# `--identity queue:default` made every heartbeat EXPIRE the queue (gone a minute after the worker
# stopped), `retry`, `dead`, `schedule` the same to those sets, and `--identity queue` deleted the
# lists queue:work / queue:workers each beat. A StatefulSet name and Sidekiq's host:pid:nonce shape
# start and beat as before.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start

job='{"class":"K","args":[],"jid":"0123456789abcdef01234567","queue":"default"}'
seed() {
    R flushall >/dev/null
    R lpush queue:default "$job" >/dev/null
    R lpush queue:work "$job" >/dev/null      # a queue named "work"
    R lpush queue:workers "$job" >/dev/null   # and one named "workers"
    R zadd retry 1 "$job" >/dev/null
    R zadd dead 1 "$job" >/dev/null
    R zadd schedule 1 "$job" >/dev/null
}
untouched() {   # WHAT: every seeded key still there, none expiring
    local k
    for k in queue:default queue:work queue:workers retry dead schedule; do
        assert_eq "$(R exists "$k")" 1 "$1: $k still exists"
        assert_eq "$(R ttl "$k")" -1 "$1: $k has no TTL"
    done
}

for id in queue:default retry dead schedule queue stat:processed hiredhand:fetchers; do
    seed
    # bounded: a worker that starts (the old behaviour) beats every 0.5 s until the timeout
    timeout -k 2 6 "$HIREDHAND" work -r "$REDIS_URL" -q other --heartbeat-interval 0.5 --identity "$id" \
        </dev/null >"$HH_TMP/out" 2>"$HH_TMP/err"
    rc=$?
    err="$(cat "$HH_TMP/err")"
    assert_eq "$rc" 2 "--identity $id: exit status (stderr: $err)"
    assert_contains "$err" "bad identity \"$id\"" "--identity $id: the message names it"
    assert_contains "$err" "own" "--identity $id: the message says whose keys they are"
    untouched "--identity $id"
    assert_ne "$(R type "$id")" hash "--identity $id: no process hash written"
done

# namespaces, tags, labels, queue names
refuse_args() {   # ARGS...: work with these options exits 2 with a message, Redis untouched
    seed
    timeout -k 2 6 "$HIREDHAND" work -r "$REDIS_URL" --heartbeat-interval 0.5 "$@" </dev/null >"$HH_TMP/out" 2>"$HH_TMP/err"
    local rc=$?
    assert_eq "$rc" 2 "work $*: exit status (stderr: $(cat "$HH_TMP/err"))"
    assert_contains "$(cat "$HH_TMP/err")" "bad " "work $*: a message says what is wrong"
    untouched "work $*"
}
refuse_args --namespace queue
refuse_args --namespace stat
refuse_args --tag "$(printf 'a\nb')"
refuse_args --label "$(printf 'a\033[2Jb')"
refuse_args -q "$(printf 'a\033b')"
hh_cli push K '[]' --namespace queue
assert_eq "$HH_RC" 2 "push --namespace queue: exit status"
assert_contains "$HH_ERR" "bad namespace" "push --namespace queue: message"

# accepted: a StatefulSet name and Sidekiq's host:pid:nonce shape beat as before
for id in worker-0 myhost:1234:0123456789ab; do
    seed
    hh_start_worker -q other --heartbeat-interval 0.5 --identity "$id"
    must_wait 15 '[ "$(R sismember processes "'"$id"'")" = 1 ] && [ "$(R exists "'"$id"'")" = 1 ]' \
        "--identity $id: no heartbeat within 15 s"
    hh_stop_worker TERM 30
    assert_eq "$WORKER_RC" 0 "--identity $id: exit status after SIGTERM"
    untouched "--identity $id"
done
pass
