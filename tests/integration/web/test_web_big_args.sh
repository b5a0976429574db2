#!/usr/bin/env bash
# `hiredhand web` and large jobs: lists cut args at 2000 characters (as Sidekiq's Web UI
# truncates them), a job's own page shows them whole, and a queue entry over the 1 MiB body
# cap is deleted by its SHA-256 digest, exactly one copy at a time, 404 once none is left; a
# queue entry holding bytes that are not UTF-8 shows U+FFFD for them and is deleted by the digest
# of its real bytes; a retry, scheduled or dead entry holding such bytes is listed with the jid,
# class and args of that text, and deleted by its jid, exactly its bytes.
. "$(dirname "$0")/../../lib/harness.sh"
. "$(dirname "$0")/../../lib/web_helpers.sh"
hh_require_binary
command -v curl >/dev/null || fail "curl is not installed"
hh_redis_start
web_start
api() { curl -s "$WEB_URL/api/$1"; }
jq_() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }

# --- lists cut args at 2000 characters (Sidekiq's Web UI truncates them so); a job's page shows them
# whole; a queue entry over the 1 MiB body cap is deleted by its digest, exactly one copy at a time
bigjid="$(hh_jid)"
big() {   # JID CHARACTERS: a job whose one argument is that many x
    python3 -c 'import json,sys; sys.stdout.write(json.dumps({"class": "BigJob", "args": ["x" * int(sys.argv[2])],
        "queue": "bigq", "jid": sys.argv[1], "retry": True, "error_class": "E", "error_message": "big", "retry_count": 0},
        separators=(",", ":")))' "$1" "$2"
}
big "$bigjid" 5000000 | R -x zadd retry 99999999999 >/dev/null
list="$(api 'set?set=retry&count=500&class=BigJob')"
[ "${#list}" -lt 20000 ] || fail "a retry list holding a 5 MB argument is ${#list} bytes"
assert_eq "$(echo "$list" | jq_ 'len(d["entries"][0]["args"]), d["entries"][0]["args"][-4:]')" "(2003, 'x...')" \
    "a retry list's args cut at 2000 characters"
assert_eq "$(api "job?set=retry&jid=$bigjid" | jq_ 'len(d["entries"][0]["args"])')" 5000004 "a job's page shows its args whole"
R lpush queue:bigq '{"class":"Small","args":[1],"jid":"small1","queue":"bigq"}' >/dev/null
for _ in 1 2; do big "$bigjid" 2097152 | R -x lpush queue:bigq >/dev/null; done
R lpush queue:bigq '{"class":"Small","args":[2],"jid":"small2","queue":"bigq"}' >/dev/null
page="$(api 'queue?name=bigq&count=10')"
[ "${#page}" -lt 20000 ] || fail "a queue page holding 2 MiB entries is ${#page} bytes"
assert_eq "$(echo "$page" | jq_ '[len(j["args"]) for j in d["jobs"]], "payload" in d["jobs"][1]')" "([3, 2003, 2003, 3], False)" \
    "a queue page's args cut at 2000 characters, no payload"
digest="$(echo "$page" | jq_ 'd["jobs"][1]["digest"]')"
assert_eq "$digest" "$(big "$bigjid" 2097152 | sha256sum | cut -c1-64)" "a queue entry's digest is the SHA-256 of its bytes"
for want in "200 3" "200 2" "404 2"; do
    web_post queue/delete '{"name":"bigq","digest":"'"$digest"'"}'
    assert_eq "$WEB_STATUS $(R llen queue:bigq)" "$want" "delete a 2 MiB queue entry by its digest ($WEB_BODY)"
done
assert_eq "$(R lrange queue:bigq 0 -1 | python3 -c 'import json,sys; print(*[json.loads(l)["jid"] for l in sys.stdin])')" \
    "small2 small1" "a delete by digest touched another entry"
R del queue:bigq >/dev/null
R zremrangebyscore retry 99999999999 99999999999 >/dev/null

# --- a queue entry holding bytes that are not UTF-8 (JSON cannot carry them): its jid, class and
# args with U+FFFD, as the retry set shows them, and the digest of its real bytes deletes it
bad() { printf '{"class":"Ok\xff","args":["\xff"],"jid":"j\xff"}'; }
bad | R -x rpush queue:byteq >/dev/null
R rpush queue:byteq 'plain text' >/dev/null
row="$(api 'queue?name=byteq' | jq_ 'd["jobs"][1]["jid"], d["jobs"][1]["class"], d["jobs"][1]["args"], d["jobs"][1]["digest"]')"
assert_eq "$row" "('j�', 'Ok�', '[\"�\"]', '$(bad | sha256sum | cut -c1-64)')" \
    "an entry that is not UTF-8 on the queue page"
hh_cli queues show byteq -r "$REDIS_URL"
assert_contains "$HH_OUT" "(not a job: 39 bytes)" "queues show: an entry that is not UTF-8 and its real length"
web_post queue/delete '{"name":"byteq","digest":"'"$(bad | sha256sum | cut -c1-64)"'"}'
assert_eq "$WEB_STATUS $(R lrange queue:byteq 0 -1)" "200 plain text" "delete an entry that is not UTF-8 by its digest"
R del queue:byteq >/dev/null

# --- a retry entry holding bytes that are not UTF-8: listed (API and `retries list`) with the
# jid, class and args of its U+FFFD text, as the queue page shows one; found by that jid; a retry
# of it is refused (no job to push), a delete removes exactly its bytes
sbad() { printf '{"class":"Ok\xff","args":["\xff"],"jid":"bytejid1","queue":"q","error_class":"E","error_message":"m","retry_count":1}'; }
sbad | R -x zadd retry 99999999999 >/dev/null
R zadd retry 99999999999 'plain text' >/dev/null
for s in retry dead scheduled; do   # the other sets list through the same calls: one entry each
    key=$s; [ $s = scheduled ] && key=schedule
    [ $s = retry ] || sbad | R -x zadd $key 99999999999 >/dev/null
    assert_eq "$(api "set?set=$s" | jq_ '[(e["jid"], e["class"], e["args"], e["valid"]) for e in d["entries"] if e["jid"]]')" \
        "[('bytejid1', 'Ok�', '[\"�\"]', False)]" "$s: an entry that is not UTF-8 in the list"
done
assert_eq "$(api 'job?set=retry&jid=bytejid1' | jq_ 'd["entries"][0]["class"], d["entries"][0]["args"]')" "('Ok�', '[\"�\"]')" \
    "the page of an entry that is not UTF-8"
hh_cli retries list -r "$REDIS_URL"
assert_contains "$HH_OUT" "bytejid1" "retries list: the jid of an entry that is not UTF-8"
assert_contains "$HH_OUT" "Ok�" "retries list: its class"
web_post set '{"set":"retry","action":"retry","jids":["bytejid1"]}'
assert_eq "$WEB_STATUS $WEB_BODY $(R zcard retry)" '200 {"done":0,"skipped":1,"notfound":0} 2' "a retry of it is refused"
web_post set '{"set":"retry","action":"delete","jids":["bytejid1"]}'
assert_eq "$WEB_STATUS $WEB_BODY $(R zrange retry 0 -1)" '200 {"done":1,"skipped":0,"notfound":0} plain text' \
    "a delete removes exactly its bytes"
R del retry dead schedule >/dev/null

pass
