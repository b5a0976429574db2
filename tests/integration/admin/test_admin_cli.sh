#!/usr/bin/env bash
# The job management CLI's contract: exit status 0 done, 1 not found, 2 usage (and a destructive
# action on many jobs refused without --yes when stdin is not a terminal: nothing changes),
# 3 Redis error; at a terminal the prompt takes "y"; --namespace reaches the namespaced keys
# only; --json output parses, its reals without binary noise; scheduled enqueue pushes the job now.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
now="$(hh_now)"
job() { printf '{"retry":true,"queue":"%s","class":"K","args":[1],"jid":"%s","created_at":%s,"enqueued_at":%s,"retry_count":1,"error_class":"E","error_message":"m"}' "$2" "$1" "$now" "$now"; }
R zadd retry 100 "$(job r1 default)" >/dev/null
R zadd retry 101 "$(job r2 default)" >/dev/null
R zadd dead 100 "$(job d1 default)" >/dev/null
R zadd schedule 5000000000 "$(job s1 later)" >/dev/null
R lpush queue:default "$(job q1 default)" >/dev/null
R sadd queues default >/dev/null
snap() { R zcard retry; R zcard dead; R zcard schedule; R llen queue:default; }
before="$(snap)"

for args in "retries retry --all" "retries delete --all" "retries kill --all" "dead clear" "dead retry --all" \
            "scheduled enqueue --all" "queues clear default"; do
    # shellcheck disable=SC2086
    hh_cli $args
    assert_eq "$HH_RC" 2 "'$args' without --yes, stdin not a terminal"
    assert_contains "$HH_ERR" "--yes" "'$args' says to pass --yes"
done
assert_eq "$(snap)" "$before" "nothing changed without --yes"

for args in "retries bogus" "retries retry" "retries retry r1 --all" "dead kill d1" "scheduled retry s1" \
            "retries show" "retries list r1" "retries retry r1 --class K" "queues show" "queues clear" \
            "queues show a\xZZ" "jobs" "jobs find" "retries list --limit 0" "dead clear --class K"; do
    # shellcheck disable=SC2086
    hh_cli $args
    assert_eq "$HH_RC" 2 "usage error: '$args' (stderr: $HH_ERR)"
done
assert_eq "$(snap)" "$before" "nothing changed by usage errors"

hh_cli retries retry nope
assert_eq "$HH_RC" 1 "retry of an unknown jid"
hh_cli retries show nope
assert_eq "$HH_RC" 1 "show of an unknown jid"
hh_cli jobs find nope
assert_eq "$HH_RC" 1 "jobs find of an unknown jid"
# a job left in a dead process's in-progress list (reliable fetch) is found there, not "not found"
R lpush 'hiredhand:inprogress:deadhost:1:0a1b|default' '{"class":"Left","args":[],"jid":"left1","queue":"default"}' >/dev/null
hh_cli jobs find left1 --json
assert_eq "$HH_RC" 0 "jobs find of a job held in an in-progress list"
assert_contains "$HH_OUT" '"where":"in progress"' "where it is"
assert_contains "$HH_OUT" '"identity":"deadhost:1:0a1b"' "whose list holds it"
hh_cli jobs find left1
assert_contains "$HH_OUT" "in progress in deadhost:1:0a1b's list for queue default" "the text form"
R del 'hiredhand:inprogress:deadhost:1:0a1b|default' >/dev/null
hh_cli retries list -r "redis://127.0.0.1:$(hh_pick_free_port)/0"
assert_eq "$HH_RC" 3 "Redis unreachable"

# --json output parses
for args in "retries list --json" "dead list --json" "scheduled list --json" "queues --json" "queues show default --json" "busy --json" "jobs find r1 --json" "retries show r1 --json"; do
    # shellcheck disable=SC2086
    hh_cli $args
    assert_eq "$HH_RC" 0 "'$args' (stderr: $HH_ERR)"
    printf '%s' "$HH_OUT" | ruby -rjson -e 'JSON.parse($stdin.read)' || fail "'$args' printed no JSON: $HH_OUT"
done

# an integer beyond 64 bits keeps its digits in --json
R zadd retry 300 '{"retry":true,"queue":"default","class":"K","args":[123456789012345678901234567890],"jid":"big1"}' >/dev/null
hh_cli retries list --json
assert_contains "$HH_OUT" '"args":[123456789012345678901234567890]' "retries list --json keeps a big integer's digits"
R zrem retry '{"retry":true,"queue":"default","class":"K","args":[123456789012345678901234567890],"jid":"big1"}' >/dev/null

# reals in --json have at most 15 significant digits: a score 1764620000.123 (17 digits would
# print 1764620000.1229999) and a Sidekiq 8 enqueued_at in ms (1764620000123, read as seconds);
# the payload's own numbers ("item") stay byte for byte
prec='{"retry":true,"queue":"default","class":"K","args":[0.1],"jid":"prec1","enqueued_at":1764620000123,"failed_at":1764620000.123}'
R zadd retry 1764620000.123 "$prec" >/dev/null
for args in "retries list --json" "retries show prec1 --json"; do
    # shellcheck disable=SC2086
    hh_cli $args
    assert_eq "$HH_RC" 0 "'$args' (stderr: $HH_ERR)"
    line="$(printf '%s\n' "$HH_OUT" | grep '"jid":"prec1"')"
    assert_contains "$line" '"score":1764620000.123,' "'$args': the score with no binary noise"
    assert_contains "$line" '"enqueued_at":1764620000.123,' "'$args': enqueued_at in ms, as seconds"
    assert_contains "$line" '"failed_at":1764620000.123,' "'$args': failed_at"
    assert_contains "$line" '"item":'"$prec" "'$args': the payload as stored"
done
R zrem retry "$prec" >/dev/null

# text output never passes a payload's control characters to the terminal
esc='{"retry":true,"queue":"default","class":"\u001b[31mRed","args":[],"jid":"esc1","error_class":"E","error_message":"a\u001b]0;title\u0007"}'
R zadd retry 301 "$esc" >/dev/null
for args in "retries list" "retries show esc1"; do
    # shellcheck disable=SC2086
    hh_cli $args
    assert_eq "$HH_RC" 0 "'$args'"
    case "$HH_OUT" in *$'\e'*|*$'\a'*) fail "'$args' printed a control character: $(printf '%s' "$HH_OUT" | cat -v)" ;; esac
    assert_contains "$HH_OUT" '\x1b[31mRed' "'$args' shows the class with ESC as \\x1b, as the logs do"
done
R zrem retry "$esc" >/dev/null

# the human lists open with a header row (--json does not change); a retry_count stored as a
# string (some Ruby clients do) shows its value, as the Web UI's entry['retry_count'] does
for set in retries scheduled dead; do
    hh_cli $set list
    assert_eq "$HH_RC" 0 "$set list"
    header="$(head -n 1 <<<"$HH_OUT")"
    for col in JID CLASS QUEUE RETRIES ERROR; do
        assert_contains "$header" "$col" "$set list: header row names $col"
    done
    assert_eq "$(wc -l <<<"$HH_OUT")" "$(( $(R zcard "$(case $set in retries) echo retry ;; scheduled) echo schedule ;; dead) echo dead ;; esac)") + 1 ))" \
        "$set list: one header plus one line per entry"
    hh_cli $set list --json
    assert_eq "${HH_OUT:0:1}" "[" "$set list --json has no header"
done
# an empty set, or filters that match nothing, still print the header row (as queues and busy do)
# and --json an empty array: no output at all reads as a failure
for set in retries scheduled dead; do
    for args in "--namespace emptyns" "--class NoSuchClass"; do
        # shellcheck disable=SC2086
        hh_cli $set list $args
        assert_eq "$HH_RC" 0 "$set list $args"
        assert_eq "$(wc -l <<<"$HH_OUT")" 1 "$set list $args: the header row alone (got: $HH_OUT)"
        assert_contains "$HH_OUT" "JID" "$set list $args: the header row"
        # shellcheck disable=SC2086
        hh_cli $set list $args --json
        assert_eq "$HH_OUT" "[]" "$set list $args --json: an empty array"
    done
done
strjob='{"retry":true,"queue":"default","class":"K","args":[],"jid":"str1","retry_count":"7","error_class":"E","error_message":"m"}'
R zadd dead 99 "$strjob" >/dev/null
hh_cli dead list
row="$(grep ' str1 ' <<<"$HH_OUT")"
assert_eq "$(awk '{ print $5 }' <<<"$row")" 7 "dead list shows a string retry_count \"7\" as 7 (row: $row)"
hh_cli dead show str1
assert_contains "$HH_OUT" "retry_count:   7" "dead show shows a string retry_count"
R zrem dead "$strjob" >/dev/null

# a terminal: the prompt
if command -v script >/dev/null; then
    printf 'n\n' | script -qec "$HIREDHAND dead clear -r $REDIS_URL" /dev/null >/dev/null 2>&1
    assert_eq "$(R zcard dead)" 1 "answering n at the prompt keeps the dead set"
    printf 'y\n' | script -qec "$HIREDHAND dead clear -r $REDIS_URL" /dev/null >"$HH_TMP/tty" 2>&1
    assert_eq "$(R zcard dead)" 0 "answering y at the prompt empties the dead set"
    assert_contains "$(cat "$HH_TMP/tty")" "empty the dead set (1 entry)? [y/N]" "the prompt counts what it would remove"
    # the count a prompt gives is what the action would reach: filters apply, a queue counts its jobs
    R zadd dead 1 "$(job c1 default)" 2 "$(job c2 default)" 3 "$(job c3 other)" >/dev/null
    printf 'n\n' | script -qec "$HIREDHAND dead delete --all --queue default -r $REDIS_URL" /dev/null >"$HH_TMP/tty" 2>&1
    assert_contains "$(cat "$HH_TMP/tty")" "matching the filters (2 entries)? [y/N]" "a filtered prompt counts the matching entries"
    assert_eq "$(R zcard dead)" 3 "answering n keeps them"
    R del dead >/dev/null
    R rpush queue:counted "$(job q1 counted)" "$(job q2 counted)" "$(job q3 counted)" >/dev/null
    printf 'n\n' | script -qec "$HIREDHAND queues clear counted -r $REDIS_URL" /dev/null >"$HH_TMP/tty" 2>&1
    assert_contains "$(cat "$HH_TMP/tty")" "every job in it (3 jobs)? [y/N]" "queues clear counts the queue's jobs"
    assert_eq "$(R llen queue:counted)" 3 "answering n keeps the queue"
    R del queue:counted >/dev/null
fi

# scheduled enqueue: to its own queue now
hh_cli scheduled enqueue s1
assert_eq "$HH_RC" 0 "scheduled enqueue (stderr: $HH_ERR)"
assert_eq "$(R zcard schedule)" 0 "schedule emptied"
assert_contains "$(R lindex queue:later 0)" '"jid":"s1"' "the job is in queue:later"
assert_eq "$(R sismember queues later)" 1 "queues holds later"

# namespaces
R zadd myapp:retry 100 "$(job n1 default)" >/dev/null
hh_cli retries list --namespace myapp --json
assert_contains "$HH_OUT" '"jid":"n1"' "namespaced list"
assert_not_contains "$HH_OUT" '"jid":"r1"' "namespaced list leaves other keys"
hh_cli retries retry n1 --namespace myapp
assert_eq "$HH_RC" 0 "namespaced retry"
assert_contains "$(R lindex myapp:queue:default 0)" '"jid":"n1"' "namespaced queue"
assert_eq "$(R zcard retry)" 2 "the retry set outside the namespace is untouched"
pass
