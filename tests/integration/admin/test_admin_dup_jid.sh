#!/usr/bin/env bash
# Entries sharing one jid: a single-JID action (retry, enqueue, kill, delete) acts on the entry
# list shows first -- the lowest score in the retry and scheduled sets, the highest in the dead
# set (listed newest first) -- not on whichever ZSCAN returns first; `show JID` prints them all in
# that order.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
# long payloads: past zset-max-listpack-value the set is a hash table and ZSCAN's order is not
# the scores' order
pad="$(printf 'p%.0s' $(seq 1 100))"
entry() { printf '{"retry":true,"queue":"default","class":"K","args":["%s","%s"],"jid":"dup1","retry_count":1,"error_class":"E","error_message":"m"}' "$1" "$pad"; }
# the "score" arg of the entries left in KEY, in list order
left() { R zrange "$1" 0 -1 | sed -n 's/.*"args":\["\([a-z0-9]*\)".*/\1/p' | tr '\n' ' '; }
# the "score" arg of the job at the head of queue:default
pushed() { R lpop queue:default | sed -n 's/.*"args":\["\([a-z0-9]*\)".*/\1/p'; }

for verb in retry delete kill; do
    R del retry dead queue:default >/dev/null
    for s in 300 200 400 500 600 700 800 900; do R zadd retry "$s" "$(entry "s$s")" >/dev/null; done
    hh_cli retries list --json
    assert_eq "$(printf '%s' "$HH_OUT" | ruby -rjson -e 'puts JSON.parse($stdin.read)[0]["score"].to_i')" 200 "list shows score 200 first"
    hh_cli retries "$verb" dup1
    assert_eq "$HH_RC" 0 "retries $verb dup1 (stderr: $HH_ERR)"
    assert_eq "$(left retry)" "s300 s400 s500 s600 s700 s800 s900 " "retries $verb dup1 acts on the entry list shows first (score 200)"
    case $verb in
    retry) assert_eq "$(pushed)" s200 "the entry retried is the score 200 one" ;;
    kill) assert_eq "$(left dead)" "s200 " "the entry killed is the score 200 one" ;;
    esac
done

R del schedule queue:default >/dev/null
for s in 3000000000 2000000000 4000000000 5000000000 6000000000 7000000000 8000000000; do R zadd schedule "$s" "$(entry "s$s")" >/dev/null; done
hh_cli scheduled enqueue dup1
assert_eq "$HH_RC" 0 "scheduled enqueue dup1 (stderr: $HH_ERR)"
assert_eq "$(pushed)" s2000000000 "scheduled enqueue acts on the next one to run"

# the dead set lists newest first: its action takes the highest score
for verb in retry delete; do
    R del dead queue:default >/dev/null
    for s in 300 200 400 150 250 350 120 130; do R zadd dead "$s" "$(entry "s$s")" >/dev/null; done
    hh_cli dead "$verb" dup1
    assert_eq "$HH_RC" 0 "dead $verb dup1 (stderr: $HH_ERR)"
    assert_eq "$(left dead)" "s120 s130 s150 s200 s250 s300 s350 " "dead $verb dup1 acts on the newest entry (score 400)"
done
# show prints every entry with the jid in the order list shows them (equal scores included),
# not ZSCAN's; with --json and as text
json_order() { ruby -rjson -e 'puts JSON.parse($stdin.read).map { |e| e["item"]["args"][0] }.join(" ")'; }
text_order() { sed -n 's/^payload: .*"args":\["\([a-z0-9]*\)".*/\1/p' | tr '\n' ' ' | sed 's/ $//'; }
for set in retries scheduled dead; do
    key=retry want="s200 s300 s400 s500 s500x s600 s700 s800 s900"
    [ $set = scheduled ] && key=schedule
    [ $set = dead ] && key=dead want="s900 s800 s700 s600 s500x s500 s400 s300 s200"
    R del "$key" >/dev/null
    for s in 300 200 400 500 600 700 800 900; do R zadd "$key" "$s" "$(entry "s$s")" >/dev/null; done
    R zadd "$key" 500 "$(entry s500x)" >/dev/null
    hh_cli $set list --json
    assert_eq "$(printf '%s' "$HH_OUT" | json_order)" "$want" "$set list order"
    hh_cli $set show dup1 --json
    assert_eq "$HH_RC" 0 "$set show dup1 --json (stderr: $HH_ERR)"
    assert_eq "$(printf '%s' "$HH_OUT" | json_order)" "$want" "$set show dup1 --json prints the entries in list's order"
    hh_cli $set show dup1
    assert_eq "$(printf '%s\n' "$HH_OUT" | text_order)" "$want" "$set show dup1 prints the entries in list's order"
    R del "$key" >/dev/null
done

R del retry >/dev/null
R zadd retry 100 "$(entry s100)" >/dev/null
hh_cli retries delete dup1
assert_eq "$HH_RC" 0 "the last entry with that jid"
hh_cli retries delete dup1
assert_eq "$HH_RC" 1 "no entry left with that jid: not found"
pass
