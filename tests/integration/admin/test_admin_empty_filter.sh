#!/usr/bin/env bash
# An empty filter never widens an action to the whole set: --class '' is the
# empty class (as --queue '' is the empty queue), and --error '' (every text
# holds the empty one) is a usage error naming the option, in every command
# that takes the filters; busy and jobs find, which filter nothing, refuse them. A filter given
# twice and an empty JID are usage errors; a listing Redis fails prints no "[]".
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
entry() { printf '{"retry":true,"queue":"%s","class":"%s","args":[],"jid":"%s","retry_count":1,"error_class":"E","error_message":"m"}' "$1" "$2" "$3"; }
now=$(date +%s) # recent: a kill trims the dead set of entries older than 180 days
for s in retry dead schedule; do
    R zadd $s $((now + 0)) "$(entry default K "${s}1")" >/dev/null
    R zadd $s $((now + 1)) "$(entry default '' "${s}2")" >/dev/null
    R zadd $s $((now + 2)) "$(printf '{"retry":true,"queue":"default","class":"W","wrapped":"Aj","args":[],"jid":"%s3","error_class":"E","error_message":"m"}' $s)" >/dev/null
done
jids() { hh_cli "$@" --json; printf '%s' "$HH_OUT" | ruby -rjson -e 'JSON.parse($stdin.read).each { |e| puts e["jid"] }'; }

assert_eq "$(jids retries list --class '')" retry2 "--class '' lists the entry with the empty class only"
assert_eq "$(jids retries list --class Aj)" retry3 "--class still finds Active Job's wrapped class"
assert_eq "$(jids dead list --class '')" dead2 "dead list --class ''"
assert_eq "$(jids scheduled list --class '')" schedule2 "scheduled list --class ''"

hh_cli dead delete --all --class '' --yes
assert_eq "$HH_RC" 0 "dead delete --all --class '' (stderr: $HH_ERR)"
assert_eq "$(R zcard dead)" 2 "dead delete --all --class '' deletes the empty class's entry only"
hh_cli retries kill --all --class '' --yes
assert_eq "$(R zcard retry)" 2 "retries kill --all --class '' moves one entry"
hh_cli scheduled delete --all --class '' --yes
assert_eq "$(R zcard schedule)" 2 "scheduled delete --all --class '' deletes one entry"

for cmd in "retries list" "retries delete --all --yes" "retries retry --all --yes" "retries kill --all --yes" \
    "scheduled list" "scheduled delete --all --yes" "scheduled enqueue --all --yes" "scheduled kill --all --yes" \
    "dead list" "dead delete --all --yes" "dead retry --all --yes"; do
    # shellcheck disable=SC2086 # the words of the command
    hh_cli $cmd --error ''
    assert_eq "$HH_RC" 2 "$cmd --error '' is a usage error"
    assert_contains "$HH_ERR" "--error" "$cmd --error '' names the option"
done
assert_eq "$(R zcard retry) $(R zcard schedule) $(R zcard dead)" "2 2 3" "nothing moved by --error ''"

for cmd in "queues" "queues show default" "busy" "jobs find retry1"; do
    for opt in "--class K" "--error E" "--queue default"; do
        # shellcheck disable=SC2086 # the words of the command
        hh_cli $cmd $opt
        assert_eq "$HH_RC" 2 "$cmd $opt is refused, not ignored (stderr: $HH_ERR)"
    done
done

# a filter given twice is refused, not the last one kept (`--class A --class B` acting on B's
# entries alone): a usage error naming the option, and nothing deleted
n="$(R zcard retry)"
for opt in class queue error; do
    hh_cli retries delete --all --$opt A --$opt B --yes
    assert_eq "$HH_RC" 2 "--$opt given twice (stderr: $HH_ERR)"
    assert_contains "$HH_ERR" "--$opt given twice" "the error names --$opt"
done
assert_eq "$(R zcard retry)" "$n" "entries after the refused deletes"
# an empty JID (an unset variable) is a usage error that says so
for cmd in "retries show" "retries delete" "dead retry" "jobs find"; do
    hh_cli $cmd '' --yes
    assert_eq "$HH_RC" 2 "$cmd '' exit status"
    assert_contains "$HH_ERR" "the JID is empty" "$cmd '' says why (stderr: $HH_ERR)"
done
# a listing Redis fails prints no JSON on stdout (not a "[]" that reads as an empty set)
R set retry oops >/dev/null
hh_cli retries list --json
assert_eq "$HH_RC" 3 "retries list --json on a wrong-typed key: exit status"
assert_eq "$HH_OUT" "" "retries list --json on a wrong-typed key: stdout"
hh_cli retries show x --json
assert_eq "$HH_RC" 3 "retries show --json on a wrong-typed key: exit status"
assert_eq "$HH_OUT" "" "retries show --json on a wrong-typed key: stdout"
R del retry >/dev/null
hh_cli retries list --json
assert_eq "$HH_OUT" "[]" "retries list --json of an empty set"
pass
