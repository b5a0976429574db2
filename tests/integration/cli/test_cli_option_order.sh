#!/usr/bin/env bash
# Every command takes its options, the Redis ones included, anywhere among its words, as
# getopt-permuting CLIs (git, redis-cli) do: `retries -r URL list` lists the retry set (it read
# "list" as a JID: "retries list takes no JID"), `cron -r URL show NAME`, `jobs -r URL find JID`,
# for each family of commands (the job sets and queues, jobs find, cron, push/stats/quiet, top,
# web). The default Redis is one that refuses: only the -r given among the words reaches the
# server. A word that really is wrong is named in the error. help (and --help) come after the
# Redis options too, and `help COMMAND`/`COMMAND help` print that command's help.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
url="$REDIS_URL"
REDIS_URL="redis://127.0.0.1:$(hh_pick_free_port)/0" # nothing listens there
export REDIS_URL
ns=order
now="$(hh_now)"
job() { printf '{"retry":true,"queue":"default","class":"K","args":[1],"jid":"%s","created_at":%s,"enqueued_at":%s,"retry_count":1,"error_class":"E","error_message":"m"}' "$1" "$now" "$now"; }
R zadd "$ns:retry" 100 "$(job r1)" >/dev/null
R zadd "$ns:schedule" 5000000000 "$(job s1)" >/dev/null
R zadd "$ns:dead" 100 "$(job d1)" >/dev/null

ok() { # MSG ARGS...: exit 0
    local msg="$1"
    shift
    hh_cli "$@"
    assert_eq "$HH_RC" 0 "$msg: '$*' (stderr: $HH_ERR)"
}

# the job sets and queues: the options before the verb, between verb and operand, after both
ok "retries, -r before the verb" retries -r "$url" --namespace "$ns" list --json
assert_contains "$HH_OUT" '"jid":"r1"' "retries -r URL list lists the retry set"
ok "retries, -r between verb and JID" retries show -r "$url" r1 --namespace "$ns"
assert_contains "$HH_OUT" r1 "retries show -r URL JID shows the job"
ok "scheduled" scheduled --namespace="$ns" -r "$url" list
assert_contains "$HH_OUT" s1 "scheduled -r URL list lists s1"
ok "dead, --redis=URL before the verb" dead --redis="$url" --json --namespace "$ns" list
assert_contains "$HH_OUT" '"jid":"d1"' "dead --redis=URL list lists d1"
ok "dead, a TLS option before the verb" dead --tls-server-name localhost -r "$url" --namespace "$ns" show d1
ok "queues" queues -r "$url" --namespace "$ns" list
ok "jobs find" jobs -r "$url" --namespace "$ns" find r1
assert_contains "$HH_OUT" retry "jobs -r URL find JID finds it in the retry set"
ok "busy" busy -r "$url" --json
# POSIXLY_CORRECT stops a permuting getopt at the first word: the verb's options still count
POSIXLY_CORRECT=1 ok "retries under POSIXLY_CORRECT" retries list -r "$url" --namespace "$ns" --json
assert_contains "$HH_OUT" '"jid":"r1"' "retries list -r URL under POSIXLY_CORRECT"
POSIXLY_CORRECT=1 ok "cron under POSIXLY_CORRECT" cron list -r "$url"
hh_cli retries -r "$url" --namespace "$ns" show -- -r1
assert_eq "$HH_RC" 1 "after --, a JID that starts with - is a JID (not found: 1): $HH_ERR"

# cron
ok "cron add, options first" cron -r "$url" --cron '0 3 * * *' --class Nightly add nightly
ok "cron show, -r before the verb" cron -r "$url" show nightly --json
assert_contains "$HH_OUT" Nightly "cron -r URL show NAME shows the job"
ok "cron list" cron -r "$url" list

# push, stats, processes, quiet, top
ok "push, -r before the class" push -r "$url" -q orderq K '[1]'
ok "stats" stats -r "$url" --json
ok "processes" processes -r "$url" --json
hh_cli quiet -r "$url" nosuch:1:abc
assert_eq "$HH_RC" 1 "quiet -r URL ID reaches Redis (no such process: 1, not a usage error): $HH_ERR"
ok "top" top -r "$url" --count 1 --json

# a word that is wrong is named, wherever it was
hh_cli retries -r "$url" list extra
assert_eq "$HH_RC" 2 "retries list with a JID"
assert_contains "$HH_ERR" "'extra'" "the JID list does not take is named"
hh_cli retries -r "$url" show r1 extra
assert_eq "$HH_RC" 2 "retries show with two JIDs"
assert_contains "$HH_ERR" "'extra'" "the word too many is named"
hh_cli queues list -r "$url" extra
assert_contains "$HH_ERR" "'extra'" "queues list names the NAME it does not take"
hh_cli cron -r "$url" list extra
assert_contains "$HH_ERR" "'extra'" "cron list names the NAME it does not take"
hh_cli jobs -r "$url" lookup r1
assert_eq "$HH_RC" 2 "jobs with another verb"
assert_contains "$HH_ERR" "'lookup'" "jobs names the verb it does not know"

# web: its options and the Redis ones in any order (it listens); an operand is named
port="$(hh_pick_free_port)"
weblog="$(hh_tmp)/web.log"
setsid "$HIREDHAND" web --read-only -r "$url" --http "127.0.0.1:$port" --namespace "$ns" >"$weblog" 2>&1 &
webpid=$!
hh_track_pid "$webpid"
must_wait 10 'grep -q listening "$weblog" || ! kill -0 "$webpid"' "hiredhand web did not listen"
assert_contains "$(hh_http_body "http://127.0.0.1:$port/api/set?set=retry")" r1 "web -r URL --namespace NS serves that retry set"
hh_cli web --read-only stray -r "$url"
assert_eq "$HH_RC" 2 "web with an operand"
assert_contains "$HH_ERR" "'stray'" "web names the operand"

# main.c: the Redis options before the command still work
ok "options before the command" -r "$url" --namespace "$ns" retries list
assert_contains "$HH_OUT" r1 "hiredhand -r URL retries list lists r1"
# an option given before the command and again after it: the last value wins, as everywhere
# (an alias `hh='hiredhand -r prod'` then `hh queues clear x -r staging` clears staging)
ok "the later --namespace wins" --namespace nosuch -r "$url" retries list --json --namespace "$ns"
assert_contains "$HH_OUT" '"jid":"r1"' "--namespace after the command overrides the one before it"
R lpush "$ns:queue:twice" '{"class":"K","args":[],"jid":"t1","queue":"twice"}' >/dev/null
R lpush "other:queue:twice" '{"class":"K","args":[],"jid":"t2","queue":"twice"}' >/dev/null
ok "clear with two namespaces" --namespace "$ns" -r "$url" queues clear twice --yes --namespace other
assert_eq "$(R llen "$ns:queue:twice")" 1 "the namespace given before the command is left alone"
assert_eq "$(R llen other:queue:twice)" 0 "the one given after it is cleared"
# a trailing option missing its value is refused, not fed the leading option
hh_cli -r "$url" retries list --limit
assert_eq "$HH_RC" 2 "a trailing --limit without a value"
assert_not_contains "$HH_ERR" "'-r'" "--limit did not take the leading -r as its value: $HH_ERR"
ok "help after the Redis options" -r "$url" help
assert_contains "$HH_OUT" "usage: hiredhand" "hiredhand -r URL help prints the usage"
ok "--help after the Redis options" -r "$url" --help
assert_contains "$HH_OUT" "usage: hiredhand <command>" "hiredhand -r URL --help prints the usage"
# help COMMAND, COMMAND help and COMMAND --help print the command's help
for words in "help cron" "cron help" "cron --help" "-r $url help cron"; do
    # shellcheck disable=SC2086
    ok "$words" $words
    assert_contains "$HH_OUT" "usage: hiredhand cron" "'hiredhand $words' prints cron's help"
done
ok "help version" help version
hh_cli help bogus
assert_eq "$HH_RC" 2 "help of an unknown command: $HH_ERR"
assert_contains "$HH_ERR" "unknown command 'bogus'" "help bogus names it"
# the general help's exit statuses are those the commands use: cron's not found is 4
hh_cli help
assert_contains "$HH_OUT" "cron: 4" "help says cron exits 4 for not found"
hh_cli cron show nosuch -r "$url"
assert_eq "$HH_RC" 4 "cron show of no job exits 4, as help says"
pass
