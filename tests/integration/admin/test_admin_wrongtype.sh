#!/usr/bin/env bash
# A key a client wrote with another type (a queue key that is a string, a
# schedule that is a string, a processes key that is no set) is named with
# its type where its figure would be; the other queues and figures are shown.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
R sadd queues wt default >/dev/null
R set queue:wt x >/dev/null
R lpush queue:default '{"class":"K","args":[],"jid":"j1","queue":"default"}' >/dev/null
R set schedule x >/dev/null
R zadd retry 100 '{"class":"K","args":[],"jid":"r1","queue":"default"}' >/dev/null

hh_cli queues
assert_eq "$HH_RC" 0 "queues lists what it can read: done (stderr: $HH_ERR)"
assert_contains "$HH_OUT" "default" "the readable queue is listed"
assert_contains "$HH_OUT" "key queue:wt holds a string, not a list" "the wrong-typed queue key is named with its type"
hh_cli queues --json
assert_eq "$(printf '%s' "$HH_OUT" | ruby -rjson -e 'q = JSON.parse($stdin.read); puts q.map { |x| "#{x["name"]}=#{x["size"].inspect}" }.join(" ")')" \
    "default=1 wt=nil" "--json: the readable size, null for the wrong-typed queue"
assert_contains "$HH_OUT" '"error":"key queue:wt holds a string, not a list"' "--json names the problem"

hh_cli stats
assert_eq "$HH_RC" 0 "stats shows what it can read (stderr: $HH_ERR)"
assert_contains "$HH_OUT" "Scheduled  ? (key schedule holds a string, not a zset)" "no silent Scheduled 0"
assert_contains "$HH_OUT" "Retries    1" "the other figures stay"
assert_contains "$HH_OUT" "Enqueued   1" "the readable queue is counted"
assert_contains "$HH_OUT" "key queue:wt holds a string, not a list" "the wrong-typed queue in stats' table"
hh_cli stats --json
assert_contains "$HH_OUT" '"scheduled_size":null' "--json: null, not 0"
assert_contains "$HH_OUT" '"errors":{"scheduled_size":"key schedule holds a string, not a zset"}' "--json: the problem by field"

R del processes >/dev/null
R set processes x >/dev/null
for cmd in stats processes; do
    hh_cli $cmd
    assert_eq "$HH_RC" 3 "$cmd with a processes key of another type"
    assert_contains "$HH_ERR" "SMEMBERS processes: WRONGTYPE" "$cmd says which key and Redis's words"
done

# A clear of a key of another type deletes it, as Sidekiq's Queue#clear and
# SortedSet#clear do (a transaction runs every command: the count fails,
# UNLINK does not), and says so: done, with what the key held.
R del processes >/dev/null
hh_cli queues clear wt --yes
assert_eq "$HH_RC" 0 "queues clear of a string key is done (stderr: $HH_ERR)"
assert_contains "$HH_OUT" "removed queue wt: key queue:wt held a string, not a list" "clear says what went"
assert_eq "$(R exists queue:wt) $(R sismember queues wt)" "0 0" "the key and its queues member are gone"
R set queue:wt x >/dev/null
hh_cli queues clear wt --yes --json
assert_eq "$HH_OUT" '{"removed":0,"deleted":"key queue:wt held a string, not a list"}' "clear --json"
hh_cli queues clear default --yes
assert_eq "$HH_OUT" "removed queue default (1 jobs)" "a list clears as before"
R set dead x >/dev/null
hh_cli dead clear --yes
assert_eq "$HH_RC" 0 "dead clear of a string key is done (stderr: $HH_ERR)"
assert_contains "$HH_OUT" "key dead held a string, not a zset" "dead clear says what went"
assert_eq "$(R exists dead)" 0 "the dead key is gone"
R set retry x >/dev/null
hh_cli retries delete --all --yes
assert_eq "$HH_RC" 0 "retries delete --all of a string key is done"
assert_contains "$HH_ERR" "key retry held a string, not a zset: deleted" "delete --all says what went"

# Listing or finding in a set of another type fails (nothing to list), naming the key.
R set schedule x >/dev/null
for cmd in "scheduled list" "scheduled show nosuchjid" "jobs find nosuchjid"; do
    hh_cli $cmd
    assert_eq "$HH_RC" 3 "$cmd with a schedule key of another type"
    assert_contains "$HH_ERR" "key schedule holds a string, not a zset" "$cmd names the key"
done
# top shows such a figure as ? (stats names the key), not 0
R set queue:wt2 x >/dev/null
R sadd queues wt2 >/dev/null
hh_cli top -r "$REDIS_URL" --interval 0.2
assert_eq "$HH_RC" 0 "top with keys of another type (stderr: $HH_ERR)"
assert_contains "$HH_OUT" "Scheduled ?" "top's scheduled figure"
assert_eq "$(printf '%s\n' "$HH_OUT" | grep -cE '^wt2 +\? ')" 1 "top's size of the wrong-typed queue in [$HH_OUT]"
R del schedule queue:wt2 >/dev/null
R srem queues wt2 >/dev/null
pass
