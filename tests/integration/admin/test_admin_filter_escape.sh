#!/usr/bin/env bash
# retries/scheduled/dead --queue and --class take a name in the form list prints it (a
# control character as \xNN, a backslash as \\), as queues show does: a queue a client named
# a<ESC>b is --queue 'a\x1bb'. The raw bytes still match; a bad escape is a usage error.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
ESC=$'\e'
entry() { printf '{"retry":true,"queue":"%s","class":"%s","args":[],"jid":"%s","retry_count":1,"error_class":"E","error_message":"m"}' "$1" "$2" "$3"; }
R zadd retry 100 "$(entry 'a\u001bb' 'K\u001bX' esc1)" >/dev/null
R zadd retry 101 "$(entry 'a\\b' K bs1)" >/dev/null
R zadd retry 102 "$(entry default K plain1)" >/dev/null
R zadd dead 100 "$(entry 'a\u001bb' 'K\u001bX' esc2)" >/dev/null
R zadd schedule 5000000000 "$(entry 'a\u001bb' 'K\u001bX' esc3)" >/dev/null

# jids a list shows, in order, one per line
jids() { hh_cli "$@" --json; printf '%s' "$HH_OUT" | ruby -rjson -e 'JSON.parse($stdin.read).each { |e| puts e["jid"] }'; }

hh_cli retries list
assert_contains "$HH_OUT" 'a\x1bb' "list shows the queue escaped"
assert_contains "$HH_OUT" 'a\\b' "list shows a backslash doubled"

assert_eq "$(jids retries list --queue 'a\x1bb')" esc1 "--queue as list prints it"
assert_eq "$(jids retries list --queue "a${ESC}b")" esc1 "--queue as raw bytes"
assert_eq "$(jids retries list --class 'K\x1bX')" esc1 "--class as list prints it"
assert_eq "$(jids retries list --class "K${ESC}X")" esc1 "--class as raw bytes"
assert_eq "$(jids retries list --queue 'a\\b')" bs1 "--queue with a backslash as list prints it"
assert_eq "$(jids retries list --queue 'a\b')" bs1 "--queue with a raw backslash (not an escape: itself)"
assert_eq "$(jids dead list --queue 'a\x1bb' --class 'K\x1bX')" esc2 "dead list --queue/--class escaped"
assert_eq "$(jids scheduled list --queue 'a\x1bb')" esc3 "scheduled list --queue escaped"

hh_cli retries list --queue 'a\x00'
assert_eq "$HH_RC" 2 "a bad escape is a usage error (stderr: $HH_ERR)"

# actions take the filters the same way
hh_cli retries delete --all --queue 'a\x1bb' --yes
assert_eq "$HH_RC" 0 "delete --all --queue escaped (stderr: $HH_ERR)"
assert_contains "$HH_OUT" "1 done" "one entry deleted"
assert_eq "$(jids retries list)" "$(printf 'bs1\nplain1')" "the entry in queue a<ESC>b is gone, the others stay"
hh_cli dead delete --all --class 'K\x1bX' --yes
assert_eq "$(R zcard dead)" 0 "dead delete --all --class escaped"
pass
