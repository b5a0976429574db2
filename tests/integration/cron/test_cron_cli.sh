#!/usr/bin/env bash
# `hiredhand cron`: a job added without Ruby is saved as sidekiq-cron saves
# it (source dynamic, JSON args and message, the guard of the tick just
# past), an expression the parser refuses is refused at add time with its
# reason, and so is an empty --cron-namespace in every verb, and auto
# or '*' in a one-job verb; a namespace's
# set key of another type is named by the poller and by `cron list` (exit 1);
# enqueue/disable/enable/delete act on it; a job saved in both layouts
# runs once and is named; a worker logs a job it
# cannot run once per poll with its name and reason, and `cron list` shows
# it, /metrics, /stats and `hiredhand stats` count it. The config file's cron: section
# loads as sidekiq-cron's schedule file (layout: 1 saves 1.x's keys; an
# unknown key in an entry is refused at start). Then sidekiq-cron's Web UI (Cron tab, peers' 7.3) lists the job and
# its enqueue/disable/enable buttons act on it.
. "$(dirname "$0")/../../lib/harness.sh"
hh_require_binary
hh_redis_start
HK=cron_job:default:nightly

hh_cli cron add nightly --cron '0 3 * * *' --class NightlyJob --queue low --args '[1,"a"]' -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "cron add: $HH_ERR"
assert_eq "$(R HGET $HK source)" dynamic "source"
assert_eq "$(R HGET $HK status)" enabled "status"
assert_eq "$(R HGET $HK args)" '[1,"a"]' "args as JSON"
assert_eq "$(R SISMEMBER cron_jobs:default $HK)" 1 "in cron_jobs:default"
assert_eq "$(R ZCARD $HK:enqueued)" 1 "the tick just past is guarded"
hh_cli cron add bad --cron '61 * * * *' --class X -r "$REDIS_URL"
assert_eq "$HH_RC" 2 "a bad expression is refused"
assert_contains "$HH_ERR" 'minute field "61"' "with the parser's reason"
assert_eq "$(R EXISTS cron_job:default:bad)" 0 "and nothing saved"
# a retry Sidekiq would read otherwise ("abc": 25 retries, -5: none) is refused
for r in '"abc"' -5; do
    hh_cli cron add r --cron '0 3 * * *' --class X --retry "$r" -r "$REDIS_URL"
    assert_eq "$HH_RC" 2 "--retry $r refused"
    assert_contains "$HH_ERR" "want true, false or a count" "--retry $r: the reason"
done
assert_eq "$(R EXISTS cron_job:default:r)" 0 "no job saved with a bad retry"
for o in queue class cron; do # an empty one (an unset variable) is not read as default
    hh_cli cron add r --cron '0 3 * * *' --class X --$o '' -r "$REDIS_URL"
    assert_eq "$HH_RC" 2 "--$o '' refused: $HH_ERR"
    assert_contains "$HH_ERR" "--$o '': empty" "--$o '': the reason"
done
assert_eq "$(R EXISTS cron_job:default:r)" 0 "no job saved with an empty queue"
# an empty --cron-namespace (an unset variable) is refused by every verb, not read as default
for verb in "add e --cron @daily --class X" list "show nightly" "enable nightly" "disable nightly" \
    "delete nightly" "enqueue nightly"; do
    # shellcheck disable=SC2086
    hh_cli cron $verb --cron-namespace '' -r "$REDIS_URL"
    assert_eq "$HH_RC" 2 "cron $verb --cron-namespace '': $HH_ERR"
    assert_contains "$HH_ERR" "the namespace is empty" "cron $verb --cron-namespace '': the reason"
done
assert_eq "$(R EXISTS cron_job:default:e)$(R HGET $HK status)$(R LLEN queue:low)" 0enabled0 "nothing written"
# auto (work's "every namespace found") and '*' name no namespace of one job;
# list reads auto as '*'
for verb in "add e --cron @daily --class X" "show nightly" "enable nightly" "delete nightly" "enqueue nightly"; do
    # shellcheck disable=SC2086
    hh_cli cron $verb --cron-namespace auto -r "$REDIS_URL"
    assert_eq "$HH_RC" 2 "cron $verb --cron-namespace auto: $HH_ERR"
    assert_contains "$HH_ERR" "means every namespace" "cron $verb --cron-namespace auto: the reason"
done
assert_eq "$(R EXISTS cron_jobs:auto cron_job:auto:e)$(R LLEN queue:low)" 00 "nothing written (auto)"
hh_cli cron list --cron-namespace auto -r "$REDIS_URL"
assert_contains "$HH_OUT" "NAMESPACE" "cron list --cron-namespace auto lists every namespace"

hh_cli cron enqueue nightly -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "cron enqueue: $HH_ERR"
assert_eq "$(R LLEN queue:low)" 1 "run now pushed one job"
assert_contains "$(R LINDEX queue:low 0)" '"class":"NightlyJob","args":[1,"a"]' "the job pushed"
assert_eq "$(R LLEN $HK:jid_history)" 1 "jid_history written"
hh_cli cron disable nightly -r "$REDIS_URL"
assert_eq "$(R HGET $HK status)" disabled "disabled"
hh_cli cron enable nightly -r "$REDIS_URL"
assert_eq "$(R HGET $HK status)" enabled "enabled"

# a job hiredhand cannot run: logged with its name and reason, listed;
# so is a set member whose key is a string (sidekiq-cron fails its whole
# poll on it): the other jobs still run, here one of namespace nsb that
# `--cron-namespace auto` finds in Redis; a member naming no key lists
# as broken and the poller passes it over (a save may be in flight)
R HSET cron_job:default:broken name broken cron '0 0 31 2 * *x' klass X message '{"class":"X","args":[]}' >/dev/null
R SADD cron_jobs:default cron_job:default:broken cron_job:default:str cron_job:default:gone >/dev/null
R SET cron_job:default:str x >/dev/null
hh_cli cron add tick --cron '* * * * * *' --class TickJob --queue ticks --cron-namespace nsb -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "cron add tick: $HH_ERR"
hh_cli work --cron-namespace '*' -r "$REDIS_URL"
assert_eq "$HH_RC" 2 "the poller refuses --cron-namespace '*'"
assert_contains "$HH_ERR" "auto for every one found in Redis" "and says what to use"
hport=$(hh_pick_free_port)
hh_start_worker -q default -c 1 --cron-poll-interval 0.2 --cron-namespace auto --http "$hport"
must_wait 10 'grep -q "cron: 2 periodic jobs not run: .*broken (" "$WORKER_LOG"' "the broken job logged"
assert_contains "$(cat "$WORKER_LOG")" "cron_job:default:str: its key is not a hash" "the string member logged"
must_wait 10 '[ "$(R LLEN queue:ticks)" -ge 1 ]' "the job of namespace nsb runs (auto)"
must_wait 5 'hh_http_body "http://127.0.0.1:$hport/metrics" | grep -qx "hiredhand_cron_jobs_broken 2"' "/metrics counts it"
metrics="$(hh_http_body "http://127.0.0.1:$hport/metrics")"
assert_contains "$metrics" "hiredhand_cron_jobs 4" "/metrics: periodic jobs"
assert_contains "$metrics" "hiredhand_cron_jobs_disabled 0" "/metrics: disabled"
assert_contains "$(hh_http_body "http://127.0.0.1:$hport/stats")" '"broken":2' "/stats: cron.broken"
assert_not_contains "$(cat "$WORKER_LOG")" "poll failed" "no poll failed"
hh_cli cron list -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "cron list with broken members: $HH_ERR"
assert_contains "$HH_OUT" "! cannot run" "cron list shows the broken job"
assert_contains "$HH_OUT" "cron_job:default:str of cron_jobs:default is a string, not a job's hash" "and the string member"
assert_contains "$HH_OUT" "cron_job:default:gone of cron_jobs:default names no key" "and the member with no key"
hh_cli stats -r "$REDIS_URL"
assert_contains "$HH_OUT" "Periodic   4 (0 disabled, 3 broken)" "stats counts the periodic jobs"
hh_cli cron list --cron-namespace '*' -r "$REDIS_URL"
assert_contains "$HH_OUT" "NAMESPACE" "cron list '*': a namespace column"
assert_contains "$(printf '%s\n' "$HH_OUT" | grep ' tick ')" "nsb" "cron list '*': the job of nsb"
hh_cli cron show tick --cron-namespace '*' -r "$REDIS_URL"
assert_eq "$HH_RC" 2 "'*' names no one job"
# a namespace's set key of another type (sidekiq-cron fails on it): the poller
# (auto finds it) names it in its WARN line; cron list names it and its type, exit 1
R SET cron_jobs:nsbad x >/dev/null
must_wait 10 'grep -q "cron_jobs:nsbad: its key is a string, not a set" "$WORKER_LOG"' "the poller names the bad set"
hh_cli cron list --cron-namespace nsbad -r "$REDIS_URL"
assert_eq "$HH_RC" 1 "cron list of a set of another type: $HH_ERR"
assert_contains "$HH_ERR" "key cron_jobs:nsbad is a string, not a set" "cron list names the key and its type"
R DEL cron_jobs:nsbad >/dev/null
hh_stop_worker
R SREM cron_jobs:default cron_job:default:str cron_job:default:gone >/dev/null
R DEL cron_job:default:str >/dev/null
hh_cli cron delete tick --cron-namespace nsb -r "$REDIS_URL"

# a job saved in both layouts (sidekiq-cron 1.8 saves its own copy of one
# it cannot see in 2.x's keys): the poller runs the 1.x copy only and
# WARNs naming both keys; list marks both rows; the one-job verbs refuse
# the name without --layout, and act on the copy --layout names
hh_cli cron add twin --cron '* * * * * *' --class Rep --queue dupq -r "$REDIS_URL"
R HSET cron_job:twin name twin cron '* * * * * *' klass Rep status enabled \
    message '{"queue":"dupq","class":"Rep","args":[]}' >/dev/null
R SADD cron_jobs cron_job:twin >/dev/null
hh_start_worker -q default -c 1 --cron-poll-interval 0.2
must_wait 10 'grep -q "both sidekiq-cron layouts.*twin (cron_job:twin and cron_job:default:twin)" "$WORKER_LOG"' \
    "the poller names the job in both layouts"
must_wait 10 '[ "$(R LLEN cron_job:twin:jid_history)" -ge 2 ]' "the 1.x copy runs"
hh_stop_worker
assert_eq "$(R LLEN cron_job:default:twin:jid_history)" 0 "the 2.x copy does not run beside it"
hh_cli cron list -r "$REDIS_URL"
assert_contains "$HH_OUT" "layout 1 copy; also in layout 2" "list marks the 1.x row"
assert_contains "$HH_OUT" "layout 2 copy; also in layout 1" "list marks the 2.x row"
for verb in show enable disable enqueue delete; do
    hh_cli cron $verb twin -r "$REDIS_URL"
    assert_eq "$HH_RC" 2 "cron $verb of a job in both layouts: $HH_ERR"
    assert_contains "$HH_ERR" "--layout" "cron $verb: says to give --layout"
done
hh_cli cron disable twin --layout 2 -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "cron disable --layout 2: $HH_ERR"
assert_eq "$(R HGET cron_job:default:twin status)/$(R HGET cron_job:twin status)" disabled/enabled "only the 2.x copy"
hh_cli cron show twin --layout 1 -r "$REDIS_URL"
assert_contains "$HH_OUT" '"layout": 1' "show --layout 1"
hh_cli cron delete twin --layout 1 -r "$REDIS_URL"
assert_eq "$(R EXISTS cron_job:twin)$(R SISMEMBER cron_jobs cron_job:twin)" 00 "delete --layout 1: the 1.x copy"
hh_cli cron delete twin -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "one copy left: no --layout needed: $HH_ERR"
R DEL cron_jobs dupq queue:dupq >/dev/null

# a Redis error (an ACL user without EXISTS, and with SMEMBERS only on
# the keys stats read): add's check of the 1.x/2.x layout (or, with
# --layout, of the other layout's key) fails the add,
# saving nothing; stats print without their Periodic line
R ACL SETUSER nocron on '>pw' '~*' '&*' '+@all' '-exists' '-smembers' '(+smembers ~queues ~processes)' >/dev/null
hh_cli cron add j2 --cron '0 3 * * *' --class X -r "redis://nocron:pw@127.0.0.1:$REDIS_PORT"
assert_eq "$HH_RC" 3 "a Redis error in add's layout check"
assert_contains "$HH_ERR" "EXISTS" "names the command"
assert_eq "$(R EXISTS cron_job:default:j2)" 0 "nothing saved"
for l in 1 2; do # --layout's check of the other layout's key: the same
    hh_cli cron add j2 --cron '0 3 * * *' --class X --layout $l -r "redis://nocron:pw@127.0.0.1:$REDIS_PORT"
    assert_eq "$HH_RC" 3 "a Redis error in --layout $l's check: $HH_ERR"
    assert_contains "$HH_ERR" "EXISTS" "--layout $l: names the command"
done
assert_eq "$(R EXISTS cron_job:default:j2 cron_job:j2)" 0 "nothing saved (--layout)"
hh_cli stats -r "redis://nocron:pw@127.0.0.1:$REDIS_PORT"
assert_eq "$HH_RC" 0 "stats despite the cron listing's error: $HH_ERR"
assert_contains "$HH_OUT" "Processed" "the stats print"
assert_not_contains "$HH_OUT" "Periodic" "without the Periodic line"
R ACL DELUSER nocron >/dev/null
# a class and queue holding control bytes (any client may write them) list
# escaped, one row each: they cannot drive the terminal
hh_cli cron add esc --cron '0 0 1 1 *' --class "$(printf '\033[31mRed')" --queue "$(printf 'q\nx')" -r "$REDIS_URL"
assert_eq "$HH_RC" 0 "cron add esc: $HH_ERR"
hh_cli cron list -r "$REDIS_URL"
case "$HH_OUT" in *$'\033'*) fail "cron list printed a raw ESC" ;; esac
assert_eq "$(printf '%s\n' "$HH_OUT" | grep -c '^esc ')" 1 "the row of esc"
assert_contains "$HH_OUT" 'q\nx' "the queue's newline escaped"
hh_cli cron delete esc -r "$REDIS_URL"
hh_cli cron delete broken -r "$REDIS_URL"
assert_eq "$(R EXISTS cron_job:default:broken)" 0 "deleted"

# the config file's cron: section, sidekiq-cron's schedule-file shape:
# saved with source schedule; a schedule job that left the file goes, a
# dynamic one (nightly) stays
hh_cli cron add old --cron '0 4 * * *' --class OldJob -r "$REDIS_URL"
R HSET cron_job:default:old source schedule >/dev/null
cat >"$HH_TMP/hh.yml" <<'YML'
concurrency: 1
queues: [default]
cron:
  poll_interval: 0.2
  report:
    cron: "0 6 * * 1"
    class: ReportJob
    queue: reports
    args: [1, "x"]
    description: weekly report
  legacy:
    cron: "0 7 * * *"
    class: LegacyJob
    layout: 1
YML
hh_start_worker -C "$HH_TMP/hh.yml"
must_wait 10 '[ "$(R HGET cron_job:default:report source)" = schedule ]' "the config's job saved"
assert_eq "$(R SISMEMBER cron_jobs cron_job:legacy)$(R EXISTS cron_job:default:legacy)" 10 "layout: 1 saves 1.x's keys"
assert_eq "$(R HGET cron_job:default:report args)" '[1,"x"]' "its args"
assert_contains "$(R HGET cron_job:default:report message)" '"queue":"reports"' "its queue"
must_wait 5 '[ "$(R EXISTS cron_job:default:old)" = 0 ]' "the schedule job that left the file is deleted"
assert_eq "$(R EXISTS cron_job:default:nightly)" 1 "the dynamic job stays"
hh_stop_worker
R DEL cron_jobs cron_job:legacy >/dev/null
# a key a job entry does not take is refused at start, named, not ignored
printf 'cron:\n  typo:\n    cron: "@daily"\n    class: X\n    bogus_key: true\n' >"$HH_TMP/bad.yml"
hh_cli work -C "$HH_TMP/bad.yml" -r "$REDIS_URL"
assert_eq "$HH_RC" 2 "an unknown key in a cron: entry: $HH_ERR"
assert_contains "$HH_ERR" "unknown key 'bogus_key'" "names the key"
hh_cli work --cron-job '{"name":"j","cron":"@daily","class":"X","layout":3}' -r "$REDIS_URL"
assert_eq "$HH_RC" 2 "--cron-job layout 3: $HH_ERR"
assert_contains "$HH_ERR" "layout: want 1" "says what layout takes"
assert_eq "$(R EXISTS cron_job:default:typo cron_job:default:j)" 0 "nothing saved"

hh_require_peers
out="$(hh_peer_ruby 73-gems cron_web.rb list nightly)" || fail "Web UI: $out"
assert_contains "$out" "status=enabled source=dynamic history=1" "sidekiq-cron reads the job"
hh_peer_ruby 73-gems cron_web.rb press nightly enqueue >/dev/null || fail "enqueue button"
assert_eq "$(R LLEN queue:low)" 2 "the enqueue button pushed the job"
hh_peer_ruby 73-gems cron_web.rb press nightly disable >/dev/null || fail "disable button"
assert_eq "$(R HGET $HK status)" disabled "the disable button"
hh_peer_ruby 73-gems cron_web.rb press nightly enable >/dev/null || fail "enable button"
assert_eq "$(R HGET $HK status)" enabled "the enable button"
pass
