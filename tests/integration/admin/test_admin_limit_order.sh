#!/usr/bin/env bash
# An action with --all --limit N acts on the first N entries that list with the same filters and
# --limit N shows: the next to run in the retry and scheduled sets, the newest in the dead set --
# not on the first N ZSCAN returns. Entries that cannot be pushed count among the N.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
# long payloads: past zset-max-listpack-value ZSCAN's order is the hash table's, not the scores'
pad="$(printf 'p%.0s' $(seq 1 100))"
entry() { printf '{"retry":true,"queue":"default","class":"%s","args":["%s"],"jid":"%s","retry_count":1,"error_class":"E","error_message":"m"}' "$2" "$pad" "$1"; }
fill() { # KEY BASE: eight entries j1..j8 with scores BASE+1..BASE+8, j2 j4 j6 j8 of class Other
    R del "$1" >/dev/null
    for i in 1 2 3 4 5 6 7 8; do R zadd "$1" "$(( $2 + i ))" "$(entry "j$i" "$( (( i % 2 )) && echo K || echo Other)")" >/dev/null; done
}
# jids a list shows (SET ARGS...), sorted, one line
listed() { hh_cli "$@" --json; printf '%s' "$HH_OUT" | ruby -rjson -e 'puts JSON.parse($stdin.read).map { |e| e["jid"] }.sort.join(" ")'; }
# jids left in KEY, sorted, one line
left() { R zrange "$1" 0 -1 | sed -n 's/.*"jid":"\([^"]*\)".*/\1/p' | sort | tr '\n' ' ' | sed 's/ $//'; }
# jids in queue:default, sorted, one line (emptied)
queued() { R lrange queue:default 0 -1 | sed -n 's/.*"jid":"\([^"]*\)".*/\1/p' | sort | tr '\n' ' ' | sed 's/ $//'; R del queue:default >/dev/null; }

# retry set: next retry first
fill retry 100
want="$(listed retries list --limit 3)"
assert_eq "$want" "j1 j2 j3" "retries list --limit 3 shows the next three"
hh_cli retries retry --all --limit 3 --yes
assert_eq "$HH_RC" 0 "retries retry --all --limit 3 (stderr: $HH_ERR)"
assert_eq "$(queued)" "$want" "retries retry --all --limit 3 retries the entries list shows"
assert_eq "$(left retry)" "j4 j5 j6 j7 j8" "the others stay"

fill retry 100
want="$(listed retries list --class K --limit 2)"
assert_eq "$want" "j1 j3" "retries list --class K --limit 2"
hh_cli retries kill --all --class K --limit 2 --yes
assert_eq "$(left dead)" "$want" "retries kill --all --class K --limit 2 kills the entries list shows"
R del dead >/dev/null

fill retry 100
hh_cli retries delete --all --limit 2 --yes
assert_eq "$(left retry)" "j3 j4 j5 j6 j7 j8" "retries delete --all --limit 2 deletes the next two"

# scheduled set: next to run first
fill schedule 4000000000
want="$(listed scheduled list --limit 2)"
hh_cli scheduled enqueue --all --limit 2 --yes
assert_eq "$(queued)" "$want" "scheduled enqueue --all --limit 2 enqueues the entries list shows"
assert_eq "$want" "j1 j2" "... the next two to run"

# dead set: newest first
fill dead 100
want="$(listed dead list --limit 3)"
assert_eq "$want" "j6 j7 j8" "dead list --limit 3 shows the newest three"
hh_cli dead retry --all --limit 3 --yes
assert_eq "$(queued)" "$want" "dead retry --all --limit 3 retries the entries list shows"
fill dead 100
want="$(listed dead list --class Other --limit 2)"
hh_cli dead delete --all --class Other --limit 2 --yes
assert_eq "$(left dead)" "j1 j2 j3 j4 j5 j7" "dead delete --all --class Other --limit 2 deletes $want, the newest two"

# an entry that cannot be pushed is one of the N list shows: left in place, counted as skipped
fill retry 100
R zadd retry 50 'not a job' >/dev/null
hh_cli retries retry --all --limit 2 --yes --json
assert_eq "$HH_OUT" '{"done":1,"skipped":1}' "the first two listed: one not a job, one retried"
assert_eq "$(queued)" "j1" "the entry retried is the first job listed"

# past one page (500 entries read at a time): ranks shift as entries leave
R del retry >/dev/null
args=()
for i in $(seq 1 700); do args+=("$i" "$(entry "k$i" K)"); done
R zadd retry "${args[@]}" >/dev/null
hh_cli retries delete --all --limit 600 --yes --json
assert_eq "$HH_OUT" '{"done":600,"skipped":0}' "delete --all --limit 600 over two pages"
assert_eq "$(R zrange retry 0 0 | sed -n 's/.*"jid":"\([^"]*\)".*/\1/p')" k601 "the 600 next retries went, the last 100 stay"
assert_eq "$(R zcard retry)" 100 "100 left"
pass
